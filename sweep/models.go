package sweep

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/measure"
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

// Models finds or makes the models a spec names: given files as they are;
// synthetic presets and quantizations of a source once, into the cache
// folder, reused on later runs. log receives one line per model made.
// check loads a model in a child process first (isolate): the source of
// quantizations is handed to llama.cpp in this process, the others only
// in workers.
func Models(s *Spec, cacheDir string, log io.Writer, check func(path string) error) ([]ModelRef, error) {
	refs, err := Refs(s, cacheDir, true)
	if err != nil {
		return nil, err
	}
	return refs, Make(refs, s.Seed(), log, check)
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
			path, err := measure.SynthPath(cacheDir, name, t, s.Seed())
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
			if sum, err = measure.ModelDigest(src, cacheDir); err != nil {
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

// Make makes the synthetic models and quantizations of refs that are not
// in the cache yet (a shard makes only its own).
func Make(refs []ModelRef, seed uint64, log io.Writer, check func(path string) error) error {
	checked := map[string]bool{}
	for _, r := range refs {
		switch {
		case r.Path == "" && r.Source != "":
			return fmt.Errorf("%s: no path (its source was not hashed)", r.ID)
		case r.Preset != "":
			if _, err := measure.SynthModel(filepath.Dir(r.Path), r.Preset, r.Type, seed, log); err != nil {
				return err
			}
		case r.Source != "":
			if _, err := os.Stat(r.Path); err == nil {
				continue
			}
			if !checked[r.Source] {
				if err := check(r.Source); err != nil {
					return err
				}
				checked[r.Source] = true
			}
			fmt.Fprintf(log, "quantizing %s to %s into %s, once\n", r.Source, r.Type, r.Path)
			if err := os.MkdirAll(filepath.Dir(r.Path), 0o755); err != nil {
				return err
			}
			if err := engine.Quantize(r.Source, r.Path, r.Type, engine.QuantizeOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}
