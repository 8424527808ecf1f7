package record

import (
	"fmt"

	"github.com/tokbench/tokbench/gpu"
)

// Class is the hardware class the record was measured on (gpu.Class).
func (r *Record) Class() string {
	return gpu.ClassOf(r.Backend, r.GPUInfo, r.nvml(), r.CPUInfo)
}

// nvml is what NVML said of the first GPU, if the record has it.
func (r *Record) nvml() *gpu.GPU {
	if len(r.GPUProfile) == 0 {
		return nil
	}
	return &r.GPUProfile[0]
}

// Fingerprint names the hardware and build a record was measured with:
// records of different fingerprints must not share a results file.
func (r *Record) Fingerprint() string {
	return fmt.Sprintf("cpu=%s features=%s gpu=%s threads=%d llama.cpp=%s ollama=%s",
		r.CPUInfo, r.CPUFeatures, r.GPUInfo, r.HostThreads, r.BuildCommit, r.OllamaVersion)
}
