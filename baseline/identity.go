package baseline

import (
	"fmt"
	"path/filepath"

	"github.com/tokbench/tokbench/record"
)

// identity is what a point measures, as a baseline knows it: the model by
// its content (parameters, file type and the file's SHA-256, so that the
// same file matches under any path or name and a different file never
// does) and the settings that change the result. How it was measured
// (repetitions, warm-up, seed, mmap) is not part of it.
func identity(r *record.Record) string {
	model := "file=" + filepath.Base(r.ModelFile) // llama-bench's records carry no digest
	if r.ModelSHA256 != "" {
		model = fmt.Sprintf("params=%d|ftype=%s|sha256=%s", r.ModelParams, r.ModelFileType, r.ModelSHA256)
	}
	k := r.Key
	return fmt.Sprintf("%s|p=%d|n=%d|d=%d|np=%d|b=%d|ub=%d|t=%d|ngl=%d|sm=%s|mg=%d|fa=%s|ctk=%s|ctv=%s|sampling=%s",
		model, r.NPrompt, r.NGen, r.NDepth, r.NParallel, r.NBatch, r.NUBatch, r.NThreads, r.NGPULayers, r.SplitMode, r.MainGPU,
		r.FlashAttn, r.TypeK, r.TypeV, k.Sampling)
}
