// Package preset holds the shapes of real models (from their published
// configs) that tokbench synthesizes: what decides a model's speed,
// independent of its weights' values.
package preset

import (
	"fmt"
	"sort"
	"strings"
)

// Shape is the architecture of a llama-family model: what decides its
// speed, independent of the weights' values.
type Shape struct {
	Name      string `json:"name"`
	NVocab    int    `json:"n_vocab"`
	NEmbd     int    `json:"n_embd"`
	NLayer    int    `json:"n_layer"`
	NFF       int    `json:"n_ff"`
	NHead     int    `json:"n_head"`
	NHeadKV   int    `json:"n_head_kv"`
	NCtxTrain int    `json:"n_ctx_train"`
	RopeBase  float32
	Tied      bool `json:"tied_embeddings"` // no output.weight; token_embd is reused
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
func (s Shape) HeadDim() int { return s.NEmbd / s.NHead }

// Params is the number of weights.
func (s Shape) Params() int64 {
	e, f, kv := int64(s.NEmbd), int64(s.NFF), int64(s.NHeadKV*s.HeadDim())
	layer := e*e*2 + e*kv*2 + 3*e*f + 2*e
	n := int64(s.NLayer)*layer + int64(s.NVocab)*e + e
	if !s.Tied {
		n += int64(s.NVocab) * e
	}
	return n
}

// Check says what is wrong with a shape, if anything.
func (s Shape) Check() error {
	switch {
	case s.NVocab < 259:
		return fmt.Errorf("vocabulary %d: needs at least 259 tokens (3 special and 256 bytes)", s.NVocab)
	case s.NEmbd <= 0 || s.NLayer <= 0 || s.NFF <= 0 || s.NHead <= 0 || s.NHeadKV <= 0:
		return fmt.Errorf("dimensions must be positive: embd %d, layers %d, ff %d, heads %d, kv heads %d", s.NEmbd, s.NLayer, s.NFF, s.NHead, s.NHeadKV)
	case s.NEmbd%s.NHead != 0:
		return fmt.Errorf("n_embd %d is not a multiple of n_head %d", s.NEmbd, s.NHead)
	case s.NHead%s.NHeadKV != 0:
		return fmt.Errorf("n_head %d is not a multiple of n_head_kv %d", s.NHead, s.NHeadKV)
	case s.HeadDim()%2 != 0:
		return fmt.Errorf("head size %d must be even for RoPE", s.HeadDim())
	case s.NEmbd%32 != 0 || s.NFF%32 != 0:
		return fmt.Errorf("n_embd %d and n_ff %d must be multiples of 32 (the quantization block)", s.NEmbd, s.NFF)
	case s.NCtxTrain <= 0:
		return fmt.Errorf("context length %d must be positive", s.NCtxTrain)
	}
	return nil
}
