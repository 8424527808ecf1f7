package sweep

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tokbench/tokbench/measure"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/point"

	"github.com/tokbench/tokbench/engine"
)

// ModelRef is one model of a sweep: where it is and how to name it.
type ModelRef struct {
	ID   string // -m path, synth:PRESET:TYPE or quant:SOURCE:TYPE
	Path string
	Type string // file type
}

// Models finds or makes the models a spec names: given files as they are;
// synthetic presets and quantizations of a source once, into the cache
// folder, reused on later runs. log receives one line per model made.
// check loads a model in a child process first (isolate): the source of
// quantizations is handed to llama.cpp in this process, the others only
// in workers.
func Models(s *Spec, cacheDir string, log io.Writer, check func(path string) error) ([]ModelRef, error) {
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
	for _, preset := range s.Synth.Values {
		for _, t := range types {
			path, err := measure.SynthModel(cacheDir, preset, t, s.Seed, log)
			if err != nil {
				return nil, err
			}
			out = append(out, ModelRef{ID: "synth:" + preset + ":" + t, Path: path, Type: t})
		}
	}
	if src := s.QuantizeFrom; src != "" {
		if err := check(src); err != nil {
			return nil, err
		}
		sum, err := measure.FileSHA256(src)
		if err != nil {
			return nil, fmt.Errorf("hash %s: %w", src, err)
		}
		base := strings.TrimSuffix(filepath.Base(src), ".gguf")
		for _, t := range s.Types.Values {
			path := filepath.Join(cacheDir, "quant", sum[:16]+"-"+t+".gguf")
			if _, err := os.Stat(path); err != nil {
				fmt.Fprintf(log, "quantizing %s to %s into %s, once\n", src, t, path)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					return nil, err
				}
				if err := engine.Quantize(src, path, t, engine.QuantizeOptions{}); err != nil {
					return nil, err
				}
			}
			out = append(out, ModelRef{ID: "quant:" + base + ":" + t, Path: path, Type: t})
		}
	}
	if len(out) == 0 {
		return nil, point.Inputf("no models: give -m FILE[,FILE], --synth PRESET[,PRESET] or --quantize-from FILE --types T[,T]")
	}
	return out, nil
}
