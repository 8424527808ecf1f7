package preset

import (
	"strings"
	"testing"
)

// The presets must be the real models' shapes: their parameter counts match
// the published ones.
func TestPresetsMatchRealModels(t *testing.T) {
	published := map[string]float64{
		"smollm-135m": 134.5e6, "llama-1b": 1.236e9, "llama-3b": 3.213e9,
		"llama2-7b": 6.738e9, "llama-8b": 8.030e9, "llama-70b": 70.554e9,
		"mixtral-8x7b": 46.70e9, "qwen3-30b-a3b": 30.53e9,
	}
	for name, want := range published {
		got := float64(Presets[name].Params())
		if got < want*0.995 || got > want*1.005 {
			t.Errorf("%s: %.4g params, published %.4g", name, got, want)
		}
		if err := Presets[name].Check(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The mixtures' active parameters are the published ones (with the
// embeddings): Mixtral's 12.9B, Qwen3-30B-A3B's 3.3B.
func TestActiveParamsMatchRealModels(t *testing.T) {
	for name, want := range map[string]float64{"mixtral-8x7b": 12.88e9, "qwen3-30b-a3b": 3.35e9} {
		if got := float64(Presets[name].ActiveParams()); got < want*0.99 || got > want*1.01 {
			t.Errorf("%s: %.4g active params, published %.4g", name, got, want)
		}
	}
}

func TestExpertShapesChecked(t *testing.T) {
	base := Presets["tiny-moe"]
	for _, c := range []struct {
		edit func(*Shape)
		want string
	}{
		{func(s *Shape) { s.NExpertUsed = 9 }, "9 experts used of 8"},
		{func(s *Shape) { s.NExpertUsed = 0 }, "0 experts used of 8"},
		{func(s *Shape) { s.NExpert = 0 }, "no experts"},
		{func(s *Shape) { s.NExpert, s.NExpertUsed = 513, 2 }, "at most 512"},
		{func(s *Shape) { s.NExpert, s.NExpertUsed = 512, 232 }, "232 experts used in each of 2 layers need about"},
		{func(s *Shape) { s.NExpert, s.NExpertUsed, s.NLayer = 512, 40, 8 }, "40 experts used in each of 8 layers"},
		{func(s *Shape) { s.Arch = "mamba" }, "tokbench synthesizes llama and qwen3moe"},
		{func(s *Shape) { s.Arch, s.NExpert, s.NExpertUsed = Qwen3MoE, 0, 0 }, "qwen3moe needs experts"},
		{func(s *Shape) { s.NFFExp = 100 }, "leave n_ff_exp unset"},
		{func(s *Shape) { s.Arch, s.NFFExp = Qwen3MoE, 100 }, "multiple of 32"},
	} {
		s := base
		c.edit(&s)
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", s, err, c.want)
		}
	}
	if err := base.Check(); err != nil {
		t.Error(err)
	}
}
