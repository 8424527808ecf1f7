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

// buildLen is how much of a commit names a build: llama-bench writes 8
// hex digits, and compare-llama-bench.py keys builds on them.
const buildLen = 8

// BuildID is the llama.cpp build the record was measured with, as
// llama-bench names it (8 hex digits): tokbench's earlier records have 9 of
// the same commit, which name the same build.
func (r *Record) BuildID() string {
	if len(r.BuildCommit) > buildLen {
		return r.BuildCommit[:buildLen]
	}
	return r.BuildCommit
}

// Fingerprint names the hardware and build a record was measured with:
// records of different fingerprints must not share a results file.
func (r *Record) Fingerprint() string {
	return fmt.Sprintf("cpu=%s features=%s gpu=%s threads=%d llama.cpp=%s ollama=%s",
		r.CPUInfo, r.CPUFeatures, r.GPUInfo, r.HostThreads, r.BuildID(), r.OllamaVersion)
}
