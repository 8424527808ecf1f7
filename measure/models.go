package measure

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/preset"
)

// SynthPath is where a synthetic model lives in the cache folder.
func SynthPath(cacheDir, presetName, typ string, seed uint64) (string, error) {
	s, err := preset.Lookup(presetName)
	if err != nil {
		return "", &point.InputError{Err: err}
	}
	name, _, err := gguf.ParseFileType(typ)
	if err != nil {
		return "", &point.InputError{Err: err}
	}
	return filepath.Join(cacheDir, fmt.Sprintf("%s-%s-s%d.gguf", s.Name, name, seed)), nil
}

// SynthModel returns the path of a synthetic model in the cache folder,
// making it first if absent.
func SynthModel(cacheDir, presetName, typ string, seed uint64, log io.Writer) (string, error) {
	path, err := SynthPath(cacheDir, presetName, typ, seed)
	if err != nil {
		return "", err
	}
	s, _ := preset.Lookup(presetName)
	name, _, _ := gguf.ParseFileType(typ)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("cache folder: %w", err)
	}
	fmt.Fprintf(log, "synthesizing %s %s (%d params) into %s, once\n", s.Name, name, s.Params(), path)
	return path, engine.Synthesize(s, path, engine.SynthOptions{Type: name, Seed: seed})
}

// CacheDir is $TOKBENCH_CACHE, else the user's cache folder + /tokbench.
func CacheDir() (string, error) {
	if dir := os.Getenv("TOKBENCH_CACHE"); dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder: set TOKBENCH_CACHE: %w", err)
	}
	return filepath.Join(base, "tokbench"), nil
}

// loadChecked validates p, checks that it fits (Check) and loads its model
// as p says (offload, split, mmap).
func loadChecked(p point.Point) (*engine.Model, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := Check(p); err != nil {
		return nil, err
	}
	return engine.LoadModel(p.Model, modelOptions(p))
}

// modelOptions are the model settings of p.
func modelOptions(p point.Point) engine.ModelOptions {
	return engine.ModelOptions{NGPULayers: p.NGPULayers, NoMmap: p.NoMmap, MainGPU: p.MainGPU, Split: p.Split, Placement: p.Placement}
}
