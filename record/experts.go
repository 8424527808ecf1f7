package record

import (
	"strings"

	"github.com/tokbench/tokbench/roofline"
)

// Experts are a mixture of experts in a measured test: how many there
// are, where their bytes sit, and how the router spread the test's
// tokens over them, as measured.
type Experts struct {
	Count  int   `json:"n_expert"`
	Used   int   `json:"n_expert_used"` // per token
	Bytes  int64 `json:"bytes"`         // every expert of every layer
	Params int64 `json:"params"`
	// TokensPerStep is what one layer routes in a step: a decode step's
	// sequences, a prefill step's ubatch.
	TokensPerStep float64 `json:"tokens_per_step"`
	// Uniform is the distinct experts a layer would read in a step if
	// its tokens chose evenly and independently: n(1 - (1 - k/n)^tokens),
	// averaged over the layers as observed (a prefill's last layer routes
	// only the tokens whose logits are wanted).
	Uniform float64 `json:"uniform_per_step"`
	// Distinct is the distinct experts a layer read per step, measured
	// from the router's top-k over a short profiled run of the test (0:
	// not measured, Note says why); HotShare the most chosen expert's
	// share of all choices (1/n when even).
	Distinct float64 `json:"distinct_per_step,omitempty"`
	HotShare float64 `json:"hot_share,omitempty"`
	// DistinctLastLayer is, for a prefill, what its last layer read: it
	// routes only the tokens whose logits are wanted (0: no such layer
	// was seen; Distinct averages it in).
	DistinctLastLayer float64 `json:"distinct_last_layer,omitempty"`
	Note              string  `json:"note,omitempty"`
	// OnDevice is the experts' bytes by the buffer type they are in
	// (CPU, CUDA0, Vulkan0, ...), from the placement llama.cpp loaded.
	OnDevice map[string]int64 `json:"on_device,omitempty"`
}

// PerStep is what the roofline takes a layer's step to read: the
// measured distinct experts, else the uniform expectation.
func (x *Experts) PerStep() float64 {
	if x.Distinct > 0 {
		return x.Distinct
	}
	return x.Uniform
}

// SetInputs puts the experts into a roofline's inputs: all their bytes,
// and the distinct ones a layer's step reads (PerStep).
func (x *Experts) SetInputs(in *roofline.Inputs) {
	if x != nil {
		in.ExpertBytes, in.NExpert, in.ExpertsPerStep = float64(x.Bytes), x.Count, x.PerStep()
	}
}

// ByLayer is what a step's layers read, for its kernels: those that
// route the whole step, and a prefill's last layer (0: as the others).
// Measured, the whole-step layers' mean is the mean of all without the
// last; else the uniform expectation for both.
func (x *Experts) ByLayer(layers int) (full, last float64) {
	if x.Distinct == 0 || x.DistinctLastLayer == 0 || layers < 2 {
		return x.PerStep(), 0
	}
	return (x.Distinct*float64(layers) - x.DistinctLastLayer) / float64(layers-1), x.DistinctLastLayer
}

// HostBuffer says whether a buffer type is host memory: the CPU's
// (CPU, CPU_Mapped, CPU_REPACK, ...) or a GPU backend's pinned host
// buffers (CUDA_Host, Vulkan_Host).
func HostBuffer(name string) bool {
	return strings.HasPrefix(name, "CPU") || strings.HasSuffix(name, "_Host")
}

// HostBytes is the experts' bytes in host memory.
func (x *Experts) HostBytes() int64 {
	var n int64
	for buf, b := range x.OnDevice {
		if HostBuffer(buf) {
			n += b
		}
	}
	return n
}
