package measure

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/preset"
)

// The weights an offloaded point keeps in host memory: -ncmoe's layers
// of experts, -ot's tensors, the first matching rule deciding.
func TestHostWeights(t *testing.T) {
	path := filepath.Join(t.TempDir(), "moe.gguf")
	if err := engine.Synthesize(preset.Presets["tiny-moe"], path, engine.SynthOptions{Type: "q8_0", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	f, h, err := gguf.Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	x := f.Experts(h)
	layer := func(l string) int64 { // one layer's experts
		var n int64
		for _, t := range f.Tensors {
			if gguf.IsExpertTensor(t) && strings.HasPrefix(t.Name, "blk."+l+".") {
				n += t.Bytes()
			}
		}
		return n
	}
	p := tinyPoint()
	for _, c := range []struct {
		ncmoe int
		ot    string
		want  int64
	}{
		{0, "", 0},
		{1, "", layer("0")},
		{2, "", x.Bytes},
		{0, "exps=CPU", x.Bytes},
		{0, "exps=Vulkan0", 0},
		{0, `blk\.0\.=Vulkan0;exps=CPU`, layer("1")}, // the first rule that matches decides
	} {
		p.NCPUMoE, p.Overrides = c.ncmoe, c.ot
		if got := HostWeights(f, p); got != c.want {
			t.Errorf("-ncmoe %d -ot %q: %d bytes in host memory, want %d", c.ncmoe, c.ot, got, c.want)
		}
	}
	if HostWeights(nil, p) != 0 {
		t.Error("no file")
	}
}
