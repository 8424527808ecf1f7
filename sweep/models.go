package sweep

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/point"
)

// ModelRef is one model of a sweep: where it is and how to name it.
type ModelRef struct {
	ID     string // -m path, synth:PRESET:TYPE or quant:SOURCE:TYPE
	Path   string // "" for a quantization not resolved (Refs)
	Type   string // file type
	Preset string // synthetic: the shape
	Source string // quantization: the file it is made from
}

// Refs names the spec's models without making any: -m files as given,
// synthetic presets and quantizations with the cache paths they are (or
// will be) made at. Without resolve, quantizations get no path (it needs
// the source's hash): enough for the points' keys and a shard's share.
func Refs(s *Spec, cacheDir string, resolve bool) ([]ModelRef, error) {
	var out []ModelRef
	for _, m := range s.Models.Values {
		f, _, err := gguf.Inspect(m)
		if err != nil {
			return nil, err
		}
		ft := "unknown"
		if v, ok := f.Int("general.file_type"); ok {
			ft = gguf.FileTypeName(int(v))
		}
		out = append(out, ModelRef{ID: m, Path: m, Type: ft})
	}
	types := s.Types.Values
	if len(types) == 0 {
		types = []string{"q8_0"}
	}
	for _, name := range s.Synth.Values {
		for _, t := range types {
			path, err := plan.SynthPath(cacheDir, name, t, s.Seed())
			if err != nil {
				return nil, err
			}
			out = append(out, ModelRef{ID: "synth:" + name + ":" + t, Path: path, Type: t, Preset: name})
		}
	}
	if src := s.QuantizeFrom; src != "" {
		if _, _, err := gguf.Inspect(src); err != nil {
			return nil, err
		}
		sum := ""
		if resolve {
			var err error
			if sum, err = plan.ModelDigest(src, cacheDir); err != nil {
				return nil, fmt.Errorf("hash %s: %w", src, err)
			}
		}
		base := strings.TrimSuffix(filepath.Base(src), ".gguf")
		for _, t := range s.Types.Values {
			ref := ModelRef{ID: "quant:" + base + ":" + t, Type: t, Source: src}
			if sum != "" {
				ref.Path = filepath.Join(cacheDir, "quant", sum[:16]+"-"+t+".gguf")
			}
			out = append(out, ref)
		}
	}
	if len(out) == 0 {
		return nil, point.Inputf("no models: give -m FILE[,FILE], --synth PRESET[,PRESET] or --quantize-from FILE --types T[,T]")
	}
	return out, nil
}
