package plan

import (
	"strings"
	"testing"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/point"
)

func TestNeed(t *testing.T) {
	h := gguf.Hparams{NLayer: 2, NEmbd: 256, NHead: 4, NHeadKV: 2, KeyLength: 64, ValLength: 64, NVocab: 1000, NFF: 512}
	f := File{Model: Model{WeightBytes: 1000}, H: h}
	p := point.Point{Shape: point.Shape{NBatch: 2048, NUBatch: 512, TypeK: "f16", TypeV: "q8_0"}, NPrompt: 512, NGen: 128, Parallel: 1, FlashAttn: point.FlashOn}
	m := f.Need(p)
	// 512 cells x 2 layers x (K: 128 f16 = 256 B, V: 128 q8_0 = 4 blocks x 34 B = 136 B)
	if want := int64(512 * 2 * (256 + 136)); m.KV != want {
		t.Errorf("KV %d, want %d", m.KV, want)
	}
	if m.Weights != 1000 || m.Compute != 4*512*(1000+6*256+3*512) {
		t.Errorf("%+v", m)
	}
	p.FlashAttn = point.FlashOff
	if m2 := f.Need(p); m2.Compute != m.Compute+4*512*512*4 {
		t.Errorf("without flash attention the scores add ubatch x ctx x heads x 4: %d vs %d", m2.Compute, m.Compute)
	}
}

// The weights an offloaded point keeps in host memory: -ncmoe's layers
// of experts, -ot's tensors, the first matching rule deciding; a planned
// model (no tensor names yet) its -ncmoe layers' share of the experts.
func TestHostWeights(t *testing.T) {
	exps := func(l, name string) gguf.Tensor {
		return gguf.Tensor{Name: "blk." + l + ".ffn_" + name + "_exps.weight", Dims: []int64{256, 384, 8}, Type: gguf.GGMLType(8)}
	}
	tensors := []gguf.Tensor{{Name: "blk.0.attn_q.weight", Dims: []int64{256, 256}, Type: gguf.GGMLType(8)}}
	for _, l := range []string{"0", "1"} {
		for _, n := range []string{"up", "down", "gate"} {
			tensors = append(tensors, exps(l, n))
		}
	}
	layer := 3 * exps("0", "up").Bytes()
	f := File{Model: Model{NLayer: 2, ExpertBytes: 2 * layer}, GGUF: &gguf.File{Tensors: tensors}}
	p := point.Point{Shape: point.Shape{NGPULayers: -1}}
	for _, c := range []struct {
		ncmoe int
		ot    string
		want  int64
	}{
		{0, "", 0},
		{1, "", layer},
		{2, "", 2 * layer},
		{0, "exps=CPU", 2 * layer},
		{0, "exps=Vulkan0", 0},
		{0, `blk\.0\.=Vulkan0;exps=CPU`, layer}, // the first rule that matches decides
	} {
		p.NCPUMoE, p.Overrides = c.ncmoe, c.ot
		if got := f.Need(p).HostWeights; got != c.want {
			t.Errorf("-ncmoe %d -ot %q: %d bytes in host memory, want %d", c.ncmoe, c.ot, got, c.want)
		}
	}
	planned := File{Model: f.Model}
	p.NCPUMoE, p.Overrides = 1, "exps=CPU"
	if got := planned.Need(p).HostWeights; got != layer {
		t.Errorf("planned, -ncmoe 1: %d, want %d", got, layer)
	}
	if got := (File{}).Need(p).HostWeights; got != 0 {
		t.Errorf("no model: %d", got)
	}
}

// A context past the model's says what makes it up, in the user's flags:
// the depth and the test itself, not an expression of -p and -n.
func TestFitsContextMessage(t *testing.T) {
	f := File{H: gguf.Hparams{NLayer: 2, NEmbd: 256, NHead: 4, NHeadKV: 2, KeyLength: 64, ValLength: 64, NVocab: 1000, NFF: 512, NCtxTrain: 8}}
	p := point.Point{Shape: point.Shape{NBatch: 64, NUBatch: 64, TypeK: "f16", TypeV: "f16"}, NDepth: 100, NPrompt: 8, Parallel: 1}
	err := f.Fits(p, f.Need(p), Free{})
	if err == nil || !strings.Contains(err.Error(), "108 tokens (100 of depth, -d, and 8 of the test itself) but the model was trained for 8") {
		t.Errorf("%v", err)
	}
}
