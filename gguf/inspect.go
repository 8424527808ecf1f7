package gguf

import (
	"fmt"
	"os"
)

// Inspect opens and validates a model file: it refuses what would make
// llama.cpp abort or fault, with an error that names the file.
func Inspect(path string) (*File, Hparams, error) {
	f, err := open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, Hparams{}, fmt.Errorf("model %s does not exist: give the path of a .gguf file, or make one with 'tokbench synth'", path)
		}
		return nil, Hparams{}, fmt.Errorf("model %s: %w", path, err)
	}
	h, err := f.Validate()
	if err != nil {
		return nil, h, fmt.Errorf("model %s: %w", path, err)
	}
	return f, h, nil
}
