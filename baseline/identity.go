package baseline

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// identity is what a point measures, as a baseline knows it: the model by
// its content (parameters, file type and the file's SHA-256, so that the
// same file matches under any path or name and a different file never
// does) and the settings that change the result: the key's fixed part
// but how it was measured (point.Setting.Method, and mmap: baselines
// have always left it out), then its knobs that are not their defaults.
func identity(r *record.Record) string {
	model := "file=" + filepath.Base(r.ModelFile) // llama-bench's records carry no digest
	if r.ModelSHA256 != "" {
		model = fmt.Sprintf("params=%d|ftype=%s|sha256=%s", r.ModelParams, r.ModelFileType, r.ModelSHA256)
	}
	p := r.Point()
	var b strings.Builder
	b.WriteString(model)
	for _, s := range point.Fixed() {
		if s.Method || s == mmap {
			continue
		}
		v := s.Get(&p)
		if s == gpuLayers {
			v = layers(r)
		}
		b.WriteString("|" + s.KeyName + "=" + v)
	}
	b.WriteString(r.Key.KnobText())
	return b.String()
}

var mmap, gpuLayers = point.Named("mmap"), point.Named("n_gpu_layers")

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
