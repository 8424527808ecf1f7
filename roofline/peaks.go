package roofline

import (
	"fmt"
	"strings"

	"github.com/tokbench/tokbench/gpu"
)

// Device says what a measurement ran on, as far as choosing its ceilings
// goes.
type Device struct {
	Class   string   // the hardware class (gpu.Class)
	Backend string   // CPU, CUDA, Metal, Vulkan, ...
	GPU     string   // the GPU's name, if a GPU did the work
	NVML    *gpu.GPU // what NVML says of it, if it was there
	Threads int      // the CPU threads that did the work
	// Build is the build that did it (its cpu_features): a probe of
	// another build's kernels is not its ceiling ("" any).
	Build string
}

// ProbeName is what the device's probe is kept under: its class, and on
// a CPU the thread count too (the ceilings a CPU reaches depend on the
// threads that reach them).
func (d Device) ProbeName() string { return ProbeName(d.Class, d.Threads) }

// ProbeName is the name of a class's probe at threads threads.
func ProbeName(class string, threads int) string {
	if strings.HasPrefix(class, "cpu-") && threads > 0 {
		return fmt.Sprintf("%s-%dt", class, threads)
	}
	return class
}

// OnCPU says whether the CPU did the work.
func (d Device) OnCPU() bool { return d.Backend == "" || strings.EqualFold(d.Backend, "CPU") }

// CPUDevice is the host CPU's device (its ceilings are those of its
// class at threads threads): where the experts kept in host memory are
// read while a GPU runs the rest.
func CPUDevice(cpuModel string, threads int) Device {
	return Device{Class: gpu.ClassOf("CPU", "", nil, cpuModel), Backend: "CPU", Threads: threads}
}

// PeaksFor finds a device's ceilings: a probe of its hardware class in dir
// if there is one, else the GPU's datasheet (with NVML's bandwidth when
// the driver gave it); none for a CPU never probed.
func PeaksFor(d Device, dir string) (Peaks, error) {
	p, err := LoadProbe(dir, d.ProbeName())
	if err != nil {
		return Peaks{}, err
	}
	if p != nil && p.Of(d.Build) {
		return p.Peaks(), nil
	}
	if d.OnCPU() {
		return Peaks{}, nil
	}
	var pk Peaks
	name := d.GPU
	if g := d.NVML; g != nil {
		name = g.Name
		if g.BWSource == "nvml" {
			pk = Peaks{Source: "nvml", BWGBs: g.PeakBWGBs}
		}
	}
	if part, ok := gpu.LookupPart(name); ok {
		if pk.BWGBs == 0 {
			pk.BWGBs = part.BWGBs
		}
		pk.TFLOPS = part.FP16
		pk.Source = strings.TrimPrefix(pk.Source+"+datasheet", "+")
	}
	return pk, nil
}

// A Cache remembers each class's peaks, so that a results file of many
// records reads each probe file once.
type Cache struct {
	Dir   string
	peaks map[string]Peaks
}

// Peaks is PeaksFor, once per class.
func (c *Cache) Peaks(d Device) (Peaks, error) {
	key := d.ProbeName() + "|" + d.Build
	if pk, ok := c.peaks[key]; ok {
		return pk, nil
	}
	pk, err := PeaksFor(d, c.Dir)
	if err != nil {
		return pk, err
	}
	if c.peaks == nil {
		c.peaks = map[string]Peaks{}
	}
	c.peaks[key] = pk
	return pk, nil
}
