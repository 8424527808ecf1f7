package record

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tokbench/tokbench/point"
)

// readArray reads a JSON array of records, as llama-bench's -o json
// writes them, completing what llama-bench's records lack: status, test
// name, key and backend. Older llama-bench writes flash_attn as a bool
// (point.FlashAttn reads both), and -ngl -1 (all layers) or any positive
// count means a GPU did the work when the build has a GPU backend.
func readArray(path string, data []byte) ([]Record, error) {
	var recs []Record
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("%s: not a JSON array of benchmark records: %v", path, err)
	}
	for i := range recs {
		r := &recs[i]
		if r.Status == "" {
			r.Status = StatusOK
		}
		if r.NParallel == 0 {
			r.NParallel = 1
		}
		if r.Test == "" {
			r.Test = point.TestName(r.NPrompt, r.NGen, r.NDepth, r.NParallel)
		}
		if r.Backend == "" {
			r.Backend = backendOf(r.Backends, r.NGPULayers)
		}
		if r.Key == (point.Key{}) {
			r.Key = r.pointKey()
		}
		if len(r.SamplesTs) == 0 {
			return nil, fmt.Errorf("%s record %d (%s) has no samples_ts", path, i+1, r.Test)
		}
		if err := r.checkRates(); err != nil {
			return nil, fmt.Errorf("%s record %d: %v", path, i+1, err)
		}
	}
	return recs, nil
}

// backendOf is the backend that did the work of a llama-bench record:
// its GPU backend when layers were offloaded (-ngl -1 is all of them),
// else the CPU.
func backendOf(backends string, ngl int) string {
	var gpus []string
	for _, b := range strings.Split(backends, ",") {
		if b = strings.TrimSpace(b); b != "" && !strings.EqualFold(b, "CPU") {
			gpus = append(gpus, b)
		}
	}
	if len(gpus) == 0 || ngl == 0 {
		return "CPU"
	}
	return strings.Join(gpus, ",")
}

// pointKey is the identity of an imported record's point, from its
// settings (llama-bench does not write the seed; its tests use none).
func (r *Record) pointKey() point.Key {
	split, _ := point.ParseSplitMode(r.SplitMode)
	return point.Key{Model: r.Name(), NPrompt: r.NPrompt, NGen: r.NGen, NDepth: r.NDepth, Parallel: r.NParallel,
		NBatch: r.NBatch, NUBatch: r.NUBatch, Threads: r.NThreads, NGPULayers: r.NGPULayers, Split: split,
		MainGPU: r.MainGPU, Mmap: r.UseMmap, FlashAttn: r.FlashAttn, TypeK: r.TypeK, TypeV: r.TypeV,
		Sampling: point.SamplingOff, Reps: len(r.SamplesTs), Warmup: true}
}
