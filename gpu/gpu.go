// Package gpu describes the GPUs a benchmark runs on, in plain Go values:
// each GPU's static description from NVML and its datasheet entry, the
// hardware class, and telemetry samples and their per-phase windows.
// Reading them from NVML is package telemetry's job, so that everything
// downstream of a measurement builds without cgo; package host describes
// the CPU side.
package gpu

// GPU is the static description of one NVIDIA GPU. Zero fields are what
// the driver did not report.
type GPU struct {
	Index          int     `json:"index"`
	Name           string  `json:"name"`
	UUID           string  `json:"uuid"`
	Driver         string  `json:"driver,omitempty"`
	CUDADriver     string  `json:"cuda_driver,omitempty"`
	Compute        string  `json:"compute_capability,omitempty"`
	SMs            int     `json:"sm_count,omitempty"`
	MemoryTotal    uint64  `json:"memory_total,omitempty"`
	BusWidthBits   int     `json:"memory_bus_width,omitempty"`
	MaxMemClockMHz int     `json:"max_memory_clock_mhz,omitempty"`
	MaxSMClockMHz  int     `json:"max_sm_clock_mhz,omitempty"`
	PowerLimitW    float64 `json:"power_limit_w,omitempty"`
	PCIeGen        int     `json:"pcie_gen,omitempty"`
	PCIeWidth      int     `json:"pcie_width,omitempty"`
	// PeakBWGBs is bus width x max memory clock x 2 (double data rate)
	// when the driver gives both, else the datasheet's; BWSource says which.
	PeakBWGBs float64 `json:"peak_bw_gbs,omitempty"`
	BWSource  string  `json:"peak_bw_source,omitempty"`
	Part      *Part   `json:"datasheet,omitempty"`
}

// Device is one ggml backend device, as the engine lists it: the CPU, a
// GPU (CUDA, Metal, Vulkan), an accelerator.
type Device struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Type        string `json:"type"` // cpu, gpu, igpu, accel
	Backend     string `json:"backend"`
	MemoryFree  uint64 `json:"memory_free"`
	MemoryTotal uint64 `json:"memory_total"`
}
