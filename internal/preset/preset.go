// Package preset holds the shapes of real models (from their published
// configs) that tokbench synthesizes: what decides a model's speed,
// independent of its weights' values.
package preset

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tokbench/tokbench/gguf"
)

// Architectures tokbench synthesizes.
const (
	Llama    = "llama"    // dense, or Mixtral's experts when NExpert > 0
	Qwen3MoE = "qwen3moe" // Qwen3's experts: per-head q/k norms, no shared expert
)

// Shape is the architecture of a llama-family model: what decides its
// speed, independent of the weights' values.
type Shape struct {
	Name      string `json:"name"`
	Arch      string `json:"arch,omitempty"` // "" is Llama
	NVocab    int    `json:"n_vocab"`
	NEmbd     int    `json:"n_embd"`
	NLayer    int    `json:"n_layer"`
	NFF       int    `json:"n_ff"` // a dense layer's; llama's experts have this width too
	NHead     int    `json:"n_head"`
	NHeadKV   int    `json:"n_head_kv"`
	HeadSize  int    `json:"head_dim,omitempty"` // 0: n_embd / n_head
	NCtxTrain int    `json:"n_ctx_train"`
	RopeBase  float32
	Tied      bool `json:"tied_embeddings"` // no output.weight; token_embd is reused
	// Experts (mixture of experts): NExpert per layer, NExpertUsed of
	// them per token, each NFFExp wide (qwen3moe; llama's are NFF wide).
	NExpert     int `json:"n_expert,omitempty"`
	NExpertUsed int `json:"n_expert_used,omitempty"`
	NFFExp      int `json:"n_ff_exp,omitempty"`
}

// Presets are real models' shapes (from their published configs), plus
// tiny for tests.
var Presets = map[string]Shape{
	"tiny":        {Name: "tiny", NVocab: 1024, NEmbd: 256, NLayer: 2, NFF: 768, NHead: 4, NHeadKV: 2, NCtxTrain: 4096, RopeBase: 10000},
	"smollm-135m": {Name: "smollm-135m", NVocab: 49152, NEmbd: 576, NLayer: 30, NFF: 1536, NHead: 9, NHeadKV: 3, NCtxTrain: 8192, RopeBase: 100000, Tied: true},
	"llama-1b":    {Name: "llama-1b", NVocab: 128256, NEmbd: 2048, NLayer: 16, NFF: 8192, NHead: 32, NHeadKV: 8, NCtxTrain: 131072, RopeBase: 500000, Tied: true},
	"llama-3b":    {Name: "llama-3b", NVocab: 128256, NEmbd: 3072, NLayer: 28, NFF: 8192, NHead: 24, NHeadKV: 8, NCtxTrain: 131072, RopeBase: 500000, Tied: true},
	"llama-8b":    {Name: "llama-8b", NVocab: 128256, NEmbd: 4096, NLayer: 32, NFF: 14336, NHead: 32, NHeadKV: 8, NCtxTrain: 131072, RopeBase: 500000},
	"llama2-7b":   {Name: "llama2-7b", NVocab: 32000, NEmbd: 4096, NLayer: 32, NFF: 11008, NHead: 32, NHeadKV: 32, NCtxTrain: 4096, RopeBase: 10000},
	"llama-70b":   {Name: "llama-70b", NVocab: 128256, NEmbd: 8192, NLayer: 80, NFF: 28672, NHead: 64, NHeadKV: 8, NCtxTrain: 131072, RopeBase: 500000},
	// Mixtures of experts. tiny-moe has tiny's active parameters: 2 of 8
	// experts of half tiny's feed-forward width.
	"tiny-moe": {Name: "tiny-moe", NVocab: 1024, NEmbd: 256, NLayer: 2, NFF: 384, NHead: 4, NHeadKV: 2, NCtxTrain: 4096, RopeBase: 10000,
		NExpert: 8, NExpertUsed: 2},
	"mixtral-8x7b": {Name: "mixtral-8x7b", NVocab: 32000, NEmbd: 4096, NLayer: 32, NFF: 14336, NHead: 32, NHeadKV: 8, NCtxTrain: 32768, RopeBase: 1e6,
		NExpert: 8, NExpertUsed: 2},
	"qwen3-30b-a3b": {Name: "qwen3-30b-a3b", Arch: Qwen3MoE, NVocab: 151936, NEmbd: 2048, NLayer: 48, NFF: 6144, NHead: 32, NHeadKV: 4, HeadSize: 128,
		NCtxTrain: 40960, RopeBase: 1e6, NExpert: 128, NExpertUsed: 8, NFFExp: 768},
}

// Names lists the presets, smallest first.
func Names() []string {
	var names []string
	for n := range Presets {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return Presets[names[i]].Params() < Presets[names[j]].Params() })
	return names
}

// Lookup finds a preset by name.
func Lookup(name string) (Shape, error) {
	s, ok := Presets[strings.ToLower(name)]
	if !ok {
		return Shape{}, fmt.Errorf("unknown preset %q: use one of %s, or give the dimensions", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// HeadDim is the per-head width.
func (s Shape) HeadDim() int {
	if s.HeadSize > 0 {
		return s.HeadSize
	}
	return s.NEmbd / s.NHead
}

// ArchName is the GGUF architecture.
func (s Shape) ArchName() string {
	if s.Arch == "" {
		return Llama
	}
	return s.Arch
}

// MoE says whether the feed-forward layers are experts.
func (s Shape) MoE() bool { return s.NExpert > 0 }

// ExpertFF is one expert's feed-forward width.
func (s Shape) ExpertFF() int {
	if s.NFFExp > 0 && s.ArchName() != Llama {
		return s.NFFExp
	}
	return s.NFF
}

// Params is the number of weights.
func (s Shape) Params() int64 {
	total, _ := s.params()
	return total
}

// ActiveParams is the weights a token's matrix products use: the
// experts it is routed to, not all of them (Params for a dense model).
func (s Shape) ActiveParams() int64 {
	_, active := s.params()
	return active
}

// ExpertParams is the weights of every expert of every layer (0: dense).
func (s Shape) ExpertParams() int64 {
	if !s.MoE() {
		return 0
	}
	return int64(s.NLayer) * int64(s.NExpert) * 3 * int64(s.NEmbd) * int64(s.ExpertFF())
}

func (s Shape) params() (total, active int64) {
	e, q, kv := int64(s.NEmbd), int64(s.NHead*s.HeadDim()), int64(s.NHeadKV*s.HeadDim())
	attn := e*q*2 + e*kv*2 + 2*e
	if s.ArchName() == Qwen3MoE {
		attn += 2 * int64(s.HeadDim()) // q and k norms
	}
	L, embd := int64(s.NLayer), int64(s.NVocab)*e
	total = L*attn + embd + e
	if !s.Tied {
		total += embd
	}
	if !s.MoE() {
		total += L * 3 * e * int64(s.NFF)
		return total, total
	}
	total += L*e*int64(s.NExpert) + s.ExpertParams() // the routers and the experts
	return total, total - s.ExpertParams()*int64(s.NExpert-s.NExpertUsed)/int64(s.NExpert)
}

// Check says what is wrong with a shape, if anything.
func (s Shape) Check() error {
	switch {
	case s.NVocab < 259:
		return fmt.Errorf("vocabulary %d: needs at least 259 tokens (3 special and 256 bytes)", s.NVocab)
	case s.NEmbd <= 0 || s.NLayer <= 0 || s.NFF <= 0 || s.NHead <= 0 || s.NHeadKV <= 0:
		return fmt.Errorf("dimensions must be positive: embd %d, layers %d, ff %d, heads %d, kv heads %d", s.NEmbd, s.NLayer, s.NFF, s.NHead, s.NHeadKV)
	case s.HeadSize == 0 && s.NEmbd%s.NHead != 0:
		return fmt.Errorf("n_embd %d is not a multiple of n_head %d", s.NEmbd, s.NHead)
	case s.NHead%s.NHeadKV != 0:
		return fmt.Errorf("n_head %d is not a multiple of n_head_kv %d", s.NHead, s.NHeadKV)
	case s.HeadDim()%2 != 0:
		return fmt.Errorf("head size %d must be even for RoPE", s.HeadDim())
	case s.NEmbd%32 != 0 || s.NFF%32 != 0:
		return fmt.Errorf("n_embd %d and n_ff %d must be multiples of 32 (the quantization block)", s.NEmbd, s.NFF)
	case s.NCtxTrain <= 0:
		return fmt.Errorf("context length %d must be positive", s.NCtxTrain)
	case s.ArchName() != Llama && s.ArchName() != Qwen3MoE:
		return fmt.Errorf("architecture %q: tokbench synthesizes %s and %s", s.Arch, Llama, Qwen3MoE)
	case s.ArchName() == Qwen3MoE && !s.MoE():
		return fmt.Errorf("%s needs experts: give n_expert and n_expert_used", Qwen3MoE)
	case s.HeadSize < 0 || s.NExpert < 0 || s.NExpertUsed < 0 || s.NFFExp < 0:
		return fmt.Errorf("head size %d, experts %d, experts used %d and expert width %d must not be negative", s.HeadSize, s.NExpert, s.NExpertUsed, s.NFFExp)
	case s.MoE() && (s.NExpertUsed < 1 || s.NExpertUsed > s.NExpert):
		return fmt.Errorf("%d experts used of %d: use between 1 and n_expert", s.NExpertUsed, s.NExpert)
	case s.MoE() && !s.graphFits():
		need, room := gguf.MoEGraph(int64(s.NLayer), int64(s.NExpertUsed), s.Tensors())
		return fmt.Errorf("%d experts used in each of %d layers need about %d graph nodes, more than the %d llama.cpp makes room for (it would abort): use fewer experts per token or fewer layers",
			s.NExpertUsed, s.NLayer, need, room)
	case s.NExpert > MaxExperts:
		return fmt.Errorf("%d experts: llama.cpp takes at most %d", s.NExpert, MaxExperts)
	case !s.MoE() && s.NExpertUsed > 0:
		return fmt.Errorf("%d experts used, but no experts: give n_expert too", s.NExpertUsed)
	case s.ArchName() == Llama && s.NFFExp > 0 && s.NFFExp != s.NFF:
		return fmt.Errorf("expert width %d: llama's experts are n_ff (%d) wide; leave n_ff_exp unset", s.NFFExp, s.NFF)
	case s.ExpertFF()%32 != 0:
		return fmt.Errorf("expert width %d must be a multiple of 32 (the quantization block)", s.ExpertFF())
	}
	return nil
}

// MaxExperts is llama.cpp's LLAMA_MAX_EXPERTS.
const MaxExperts = 512

// Tensors is how many tensors a synthesized file of this shape holds (engine
// makes them; a test there holds the two together).
func (s Shape) Tensors() int64 {
	per := 6 + 3 // norms and attention, then the feed-forward
	if s.ArchName() == Qwen3MoE {
		per += 2 // q and k norms
	}
	if s.MoE() {
		per++ // the router
	}
	n := 3 // embedding, output norm, output
	if s.Tied {
		n--
	}
	return int64(n + per*s.NLayer)
}

func (s Shape) graphFits() bool {
	need, room := gguf.MoEGraph(int64(s.NLayer), int64(s.NExpertUsed), s.Tensors())
	return need <= room
}
