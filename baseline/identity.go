package baseline

import (
	"fmt"
	"path/filepath"
	"strconv"

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
	return fmt.Sprintf("%s|p=%d|n=%d|d=%d|np=%d|b=%d|ub=%d|t=%d|ngl=%s|sm=%s|mg=%d|fa=%s|ctk=%s|ctv=%s|sampling=%s",
		model, r.NPrompt, r.NGen, r.NDepth, r.NParallel, r.NBatch, r.NUBatch, r.Threads, layers(r), r.SplitMode, r.MainGPU,
		r.FlashAttn, r.TypeK, r.TypeV, k.Sampling)
}

// layers is the record's GPU layers as a baseline knows them: "all" for
// every layer of the model, however it was written (-1; 99, as given; or
// the layer count plus one, as tokbench wrote it before it wrote what was
// given), so that baselines of either match.
func layers(r *record.Record) string {
	if r.NGPULayers < 0 || (r.ModelNLayer > 0 && r.NGPULayers > r.ModelNLayer) {
		return "all"
	}
	return strconv.Itoa(r.NGPULayers)
}
