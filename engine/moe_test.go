package engine

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/internal/preset"
	"github.com/tokbench/tokbench/point"
)

// tinyQwen3 is a qwen3moe of a few MB: its own keys, a head size that is
// not n_embd / n_head, per-head q/k norms.
var tinyQwen3 = preset.Shape{Name: "tiny-qwen3moe", Arch: preset.Qwen3MoE, NVocab: 1024, NEmbd: 256, NLayer: 2, NFF: 768,
	NHead: 4, NHeadKV: 2, HeadSize: 96, NCtxTrain: 4096, RopeBase: 1e6, NExpert: 16, NExpertUsed: 4, NFFExp: 128}

// Both architectures with experts synthesize, quantize (through
// llama.cpp's quantizer for k-quant mixtures) and load in llama.cpp with
// the shapes and parameter counts the presets say, and decode.
func TestSynthesizeMixturesOfExperts(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		s   preset.Shape
		typ string
	}{
		{preset.Presets["tiny-moe"], "f16"},
		{preset.Presets["tiny-moe"], "q4_k_m"},
		{tinyQwen3, "q8_0"},
		{tinyQwen3, "q4_k_m"},
	} {
		p := filepath.Join(dir, c.s.Name+"-"+c.typ+".gguf")
		if err := Synthesize(c.s, p, SynthOptions{Type: c.typ, Seed: 5}); err != nil {
			t.Fatalf("%s %s: %v", c.s.Name, c.typ, err)
		}
		f, h, err := gguf.Inspect(p)
		if err != nil {
			t.Fatal(err)
		}
		x := f.Experts(h)
		e, fx := int64(c.s.NEmbd), int64(c.s.ExpertFF())
		if h.Arch != c.s.ArchName() || x.Count != int64(c.s.NExpert) || x.Used != int64(c.s.NExpertUsed) ||
			x.Params != int64(c.s.NLayer)*int64(c.s.NExpert)*3*e*fx || expertLayers(f) != c.s.NLayer ||
			int64(len(f.Tensors)) != c.s.Tensors() {
			t.Errorf("%s: arch %s, experts %+v, %d tensors (preset says %d)", p, h.Arch, x, len(f.Tensors), c.s.Tensors())
		}
		m, err := loadFile(p, allOnGPU)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if m.Info.NParams != uint64(c.s.Params()) || m.Info.NExpert != c.s.NExpert {
			t.Errorf("%s: %d params (preset %d), %d experts (preset %d)", p, m.Info.NParams, c.s.Params(), m.Info.NExpert, c.s.NExpert)
		}
		ctx, err := m.NewContext(ContextOptions{Shape: point.Shape{NBatch: 64, NUBatch: 64, Threads: 2}, NCtx: 256, NSeqMax: 4, FlashAttn: point.FlashOff, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := ctx.Prefill(4, 40, 0); err != nil {
			t.Fatal(err)
		}
		if err := ctx.Step(4, 40, nil); err != nil {
			t.Fatal(err)
		}
		ctx.Close()
		m.Close()
	}
}

// Active parameters: tiny-moe routes each token through 2 experts of
// half tiny's width, so it computes what tiny does (and its router).
func TestActiveParams(t *testing.T) {
	moe, dense := preset.Presets["tiny-moe"], preset.Presets["tiny"]
	router := int64(moe.NLayer * moe.NEmbd * moe.NExpert)
	if moe.ActiveParams() != dense.Params()+router || dense.ActiveParams() != dense.Params() {
		t.Errorf("active %d, want tiny's %d + router %d", moe.ActiveParams(), dense.Params(), router)
	}
}

// countExperts synthesizes s with the router, then profiles decode steps
// of nSeq sequences and returns how the layers routed them.
func countExperts(t *testing.T, s preset.Shape, router string, nSeq int) expertCount {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := Synthesize(s, p, SynthOptions{Type: "q8_0", Seed: 7, Router: router}); err != nil {
		t.Fatal(err)
	}
	m, err := loadFile(p, allOnGPU)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c, err := m.NewProfiledContext(ContextOptions{Shape: point.Shape{NBatch: 64, NUBatch: 64, Threads: 2}, NCtx: 512, NSeqMax: nSeq, FlashAttn: point.FlashOff, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Prefill(nSeq, 16, 0); err != nil {
		t.Fatal(err)
	}
	sp, err := c.ProfileSteps(nSeq, 16, 8)
	if err != nil {
		t.Fatal(err)
	}
	x := sp.Experts
	if x.Nodes != int64(8*s.NLayer) || x.Tokens != x.Nodes*int64(nSeq) {
		t.Fatalf("%d top-k nodes with %d tokens, want %d with %d each", x.Nodes, x.Tokens, 8*s.NLayer, nSeq)
	}
	return x
}

// A router that sends every token to the same expert reads one expert
// per layer; a random one, about what independent even choices would.
func TestExpertsCounted(t *testing.T) {
	one := preset.Presets["tiny-moe"]
	one.NExpertUsed = 1
	if x := countExperts(t, one, RouterSame, 8); x.PerStep() != 1 || x.HotShare() != 1 {
		t.Errorf("same router, 1 used: %.2f distinct experts per layer and step, the hottest has %.2f of the choices; want 1 and 1", x.PerStep(), x.HotShare())
	}
	s := preset.Presets["tiny-moe"]
	x := countExperts(t, s, RouterRandom, 8)
	uniform := 8 * (1 - math.Pow(1-2.0/8, 8)) // 7.2
	if got := x.PerStep(); got < 0.8*uniform || got > 8 {
		t.Errorf("random router, B=8: %.2f distinct experts per layer and step, want about %.2f", got, uniform)
	}
	if x1 := countExperts(t, s, RouterRandom, 1); x1.PerStep() != 2 {
		t.Errorf("B=1: %.2f distinct experts, want exactly the 2 used", x1.PerStep())
	}
	t.Logf("B=8: %.2f distinct (uniform %.2f), hottest expert %.2f of the choices", x.PerStep(), uniform, x.HotShare())
}

// The experts' placement is read from the buffers llama.cpp put them in:
// every expert of the tiny model, on the CPU here.
func TestExpertPlacementRead(t *testing.T) {
	s := preset.Presets["tiny-moe"]
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := Synthesize(s, p, SynthOptions{Type: "q8_0", Seed: 7}); err != nil {
		t.Fatal(err)
	}
	f, h, _ := gguf.Inspect(p)
	m, err := loadFile(p, allOnGPU)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c, err := m.NewProfiledContext(ContextOptions{Shape: point.Shape{NBatch: 64, NUBatch: 64, Threads: 2}, NCtx: 256, NSeqMax: 8, FlashAttn: point.FlashOff, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sp, err := c.ProfileSteps(8, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for buf, b := range sp.ExpertBytesOn() {
		if buf[:3] != "CPU" {
			t.Errorf("%d expert bytes on %s", b, buf)
		}
		sum += b
	}
	if want := f.Experts(h).Bytes; sum != want {
		t.Errorf("experts placed: %d bytes, the file has %d (%+v)", sum, want, sp.Weights)
	}
}

// A prefill's last layer routes only the token whose logits are wanted:
// its top-k node is counted apart, with the k experts of that token.
func TestPrefillLastLayerRouting(t *testing.T) {
	m := synthLoaded(t, preset.Presets["tiny-moe"], 7)
	c, err := m.NewProfiledContext(ContextOptions{Shape: point.Shape{NBatch: 64, NUBatch: 64, Threads: 2}, NCtx: 256, NSeqMax: 1, FlashAttn: point.FlashOff, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sp, err := c.ProfilePrefill(1, 32, 0)
	if err != nil {
		t.Fatal(err)
	}
	x := sp.Experts
	full, last := x.Layers()
	if x.Nodes != 2 || x.ShortNodes != 1 || last != 2 || full < 2 || full > 8 || x.Tokens != 33 {
		t.Errorf("prefill of 32: %+v; layers read %.1f and, the last, %.1f", x, full, last)
	}
}

// A file larger than the free space is refused before a byte is written,
// with the numbers and what to do; one that fits passes, and so does a
// folder not made yet (its nearest existing parent is asked).
func TestCheckDisk(t *testing.T) {
	dir := t.TempDir()
	err := checkDisk(filepath.Join(dir, "not", "yet", "m.gguf"), 1<<62, "synth huge q8_0")
	if err == nil || !strings.Contains(err.Error(), "synth huge q8_0 needs about") || !strings.Contains(err.Error(), "GiB free") {
		t.Errorf("4 EiB: %v", err)
	}
	if err := checkDisk(filepath.Join(dir, "m.gguf"), 1<<20, "synth"); err != nil {
		t.Errorf("1 MiB: %v", err)
	}
	// A cache of a megabyte is said in MiB, not "0.0 GiB".
	for b, want := range map[int64]string{3 << 30: "3.0 GiB", 1<<20 + 1<<19: "1.5 MiB", 512 << 10: "512 KiB"} {
		if got := size(b); got != want {
			t.Errorf("size(%d) = %s, want %s", b, got, want)
		}
	}
}

// expertLayers counts the layers that hold expert tensors.
func expertLayers(f *gguf.File) int {
	layers := map[string]bool{}
	for _, t := range f.Tensors {
		if gguf.IsExpertTensor(t) {
			layers[t.Name[:strings.Index(t.Name[4:], ".")+4]] = true
		}
	}
	return len(layers)
}

// The most experts per token the preset check lets through is one llama.cpp
// builds a graph for (one more aborted the process with GGML_ASSERT), so
// the check is no looser than llama.cpp; and one more is refused.
func TestExpertGraphRoom(t *testing.T) {
	s := preset.Presets["tiny-moe"]
	s.NExpert, s.NFF = 512, 32
	for s.NExpertUsed = 1; ; s.NExpertUsed++ {
		if s.Check() != nil {
			break
		}
	}
	if s.NExpertUsed < 200 {
		t.Fatalf("refused from %d experts used; llama.cpp takes 226 for this shape", s.NExpertUsed)
	}
	s.NExpertUsed--
	m := synthLoaded(t, s, 1)
	ctx, err := m.NewContext(ContextOptions{Shape: point.Shape{NBatch: 16, NUBatch: 16, Threads: 2}, NCtx: 64, NSeqMax: 1, FlashAttn: point.FlashOff, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	if err := ctx.Prefill(1, 8, 0); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Step(1, 8, nil); err != nil {
		t.Fatal(err)
	}
}

// synthLoaded synthesizes s in Q8_0 and loads it, closed when the test
// ends.
func synthLoaded(t *testing.T, s preset.Shape, seed uint64) *Model {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := Synthesize(s, p, SynthOptions{Type: "q8_0", Seed: seed}); err != nil {
		t.Fatal(err)
	}
	m, err := loadFile(p, allOnGPU)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}
