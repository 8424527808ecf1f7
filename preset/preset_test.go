package preset

import "testing"

// The presets must be the real models' shapes: their parameter counts match
// the published ones.
func TestPresetsMatchRealModels(t *testing.T) {
	published := map[string]float64{
		"smollm-135m": 134.5e6, "llama-1b": 1.236e9, "llama-3b": 3.213e9,
		"llama2-7b": 6.738e9, "llama-8b": 8.030e9, "llama-70b": 70.554e9,
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
