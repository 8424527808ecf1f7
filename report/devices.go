package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/host"
)

// Devices is what `tokbench devices` shows: the build, the host, the
// backends' devices and each NVIDIA GPU's profile.
type Devices struct {
	Host          host.Host    `json:"host"`
	Devices       []gpu.Device `json:"devices"`
	CPUFeatures   string       `json:"cpu_features"`
	SystemInfo    string       `json:"system_info"`
	LlamaCommit   string       `json:"llama_commit"`
	OllamaVersion string       `json:"ollama_version"`
	Tool          string       `json:"-"`
	BackendDirs   []string     `json:"backend_dirs"`
	GPUOffload    bool         `json:"gpu_offload"`
	GPUs          []gpu.GPU    `json:"gpus"`
	NVML          string       `json:"nvml"` // ok, or why NVML is not there
}

// WriteDevices writes d as JSON, or as the table `tokbench devices` prints.
func WriteDevices(w io.Writer, format string, d Devices) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	fmt.Fprintf(w, "llama.cpp %s (ollama %s), tokbench %s\n", d.LlamaCommit, d.OllamaVersion, d.Tool)
	fmt.Fprintf(w, "host: %s\n", d.Host)
	fmt.Fprintf(w, "cpu features: %s\n", d.CPUFeatures)
	if len(d.BackendDirs) > 0 {
		fmt.Fprintf(w, "backend folders: %s\n", strings.Join(d.BackendDirs, ", "))
	}
	fmt.Fprintf(w, "\n%-3s %-8s %-6s %-12s %12s %12s  %s\n", "#", "backend", "type", "name", "free MiB", "total MiB", "description")
	gpus := 0
	for _, dv := range d.Devices {
		fmt.Fprintf(w, "%-3d %-8s %-6s %-12s %12.0f %12.0f  %s\n", dv.Index, dv.Backend, dv.Type, dv.Name,
			float64(dv.MemoryFree)/(1<<20), float64(dv.MemoryTotal)/(1<<20), dv.Description)
		if dv.Type != "cpu" {
			gpus++
		}
	}
	if d.NVML != "ok" {
		fmt.Fprintf(w, "\n%s\n", d.NVML)
	}
	for _, g := range d.GPUs {
		gpuProfile(w, g)
	}
	if gpus == 0 {
		fmt.Fprintln(w, "\nno GPU backend loaded: build one (third_party/README.md) and pass --backend-dir, or benchmark on the CPU")
	}
	return nil
}

func gpuProfile(w io.Writer, g gpu.GPU) {
	fmt.Fprintf(w, "\nGPU %d: %s  %s\n", g.Index, g.Name, g.UUID)
	fmt.Fprintf(w, "  driver %s, CUDA %s, compute %s, %d SMs, %.1f GiB, %d-bit bus, max clocks %d MHz (SM) / %d MHz (memory)\n",
		g.Driver, g.CUDADriver, g.Compute, g.SMs, float64(g.MemoryTotal)/(1<<30), g.BusWidthBits, g.MaxSMClockMHz, g.MaxMemClockMHz)
	fmt.Fprintf(w, "  peak bandwidth %.0f GB/s (%s), power limit %.0f W, PCIe gen %d x%d\n", g.PeakBWGBs, g.BWSource, g.PowerLimitW, g.PCIeGen, g.PCIeWidth)
	if p := g.Part; p != nil {
		fmt.Fprintf(w, "  datasheet (%s): %.0f GB/s, FP16 %.0f, BF16 %.0f TFLOP/s, INT8 %.0f TOP/s\n", p.Match, p.BWGBs, p.FP16, p.BF16, p.INT8)
	}
}
