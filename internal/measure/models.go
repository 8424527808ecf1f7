package measure

import (
	"fmt"
	"io"
	"os"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/internal/preset"
	"github.com/tokbench/tokbench/point"
)

// SynthModel returns the path of a synthetic model in the cache folder,
// making it first if absent.
func SynthModel(cacheDir, presetName, typ string, seed uint64, log io.Writer) (string, error) {
	path, err := plan.SynthPath(cacheDir, presetName, typ, seed)
	if err != nil {
		return "", err
	}
	s, _ := preset.Lookup(presetName)
	name, _, _ := gguf.ParseFileType(typ)
	if _, err := os.Stat(path); err == nil {
		// A cached model that does not read as one (a file from before
		// models were made whole, a damaged disk) is made again.
		if _, _, err := gguf.Inspect(path); err == nil {
			return path, nil
		}
		fmt.Fprintf(log, "the cached %s does not read as a model (%v): making it again\n", path, err)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("cache folder: %w", err)
	}
	fmt.Fprintf(log, "synthesizing %s %s (%d params) into %s, once\n", s.Name, name, s.Params(), path)
	return path, engine.Synthesize(s, path, engine.SynthOptions{Type: name, Seed: seed})
}

// loadChecked validates p, reads its model's file, checks that p fits and
// loads the model as p says (offload, split, mmap).
func loadChecked(p point.Point) (*model, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	f, err := plan.Read(p.Model)
	if err != nil {
		return nil, err
	}
	return loadFile(f, p)
}

// loadFile checks that p fits and loads the model of f, read already, as
// p says.
func loadFile(f plan.File, p point.Point) (*model, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := f.Check(p, free()); err != nil {
		return nil, err
	}
	return loadModel(f, p)
}

// model is a model llama.cpp loaded, with its file as read before (the
// header is read once, by plan.Read) and the two described together.
type model struct {
	*engine.Model
	Meta plan.Model
	File plan.File
}

// loadModel loads the model of f as p says, unchecked.
func loadModel(f plan.File, p point.Point) (*model, error) {
	m, err := engine.LoadModel(f.Path, f.H, modelOptions(p))
	if err != nil {
		return nil, err
	}
	// The file's sizes and experts, with what llama.cpp says of the rest.
	meta, i := f.Model, m.Info
	meta.Desc, meta.FileType, meta.Size, meta.NParams = i.Desc, i.FileType, i.Size, i.NParams
	meta.NLayer, meta.NEmbd, meta.NHead, meta.NHeadKV = i.NLayer, i.NEmbd, i.NHead, i.NHeadKV
	meta.NVocab, meta.NCtxTrain = i.NVocab, i.NCtxTrain
	return &model{Model: m, Meta: meta, File: f}, nil
}

// modelOptions are the model settings of p.
func modelOptions(p point.Point) engine.ModelOptions {
	return engine.ModelOptions{NGPULayers: p.NGPULayers, NoMmap: p.NoMmap, MainGPU: p.MainGPU, Split: p.Split, Placement: p.Placement}
}
