package plan

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// Env describes where tests run; it is the same for every record of a
// process. measure.DescribeEnv reads it from llama.cpp and NVML.
type Env struct {
	Version     string
	Host        host.Host
	Devices     []gpu.Device
	CPUFeatures string
	GPUs        []gpu.GPU // what NVML says of each GPU; empty without NVML
	CacheDir    string    // where model digests are kept ("": nowhere)
}

// CacheDir is $TOKBENCH_CACHE, else the user's cache folder + /tokbench.
func CacheDir() (string, error) {
	if dir := os.Getenv("TOKBENCH_CACHE"); dir != "" {
		return dir, nil
	}
	if testing.Testing() {
		// A test binary never reads or writes the user's cache: a timing
		// cached there on a busy day would decide its verdicts.
		return testCache()
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder: set TOKBENCH_CACHE: %w", err)
	}
	return filepath.Join(base, "tokbench"), nil
}

var testCache = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "tokbench-test-cache-")
	if err != nil {
		return "", fmt.Errorf("a cache folder for tests: %w", err)
	}
	return dir, nil
})

// Free is the memory free on env's GPUs as they were described, and in
// the host now.
func (env Env) Free() Free {
	var f Free
	for _, d := range env.Devices {
		if d.Type != "cpu" {
			f.GPUs, f.HasGPU = f.GPUs+int64(d.MemoryFree), true
		}
	}
	f.Host = int64(host.MemAvailable())
	return f
}

// backends names the backends found, the one doing the work (a GPU's
// when layers are offloaded to it, else the CPU) and the GPUs.
func (env Env) backends(ngl int) (all, working, gpus string) {
	var backends, gpuBackends, names []string
	for _, d := range env.Devices {
		backends = appendNew(backends, d.Backend)
		if d.Type != "cpu" {
			names = append(names, d.Description)
			gpuBackends = appendNew(gpuBackends, d.Backend)
		}
	}
	working = "CPU"
	if len(gpuBackends) > 0 && ngl != 0 {
		working = strings.Join(gpuBackends, ",")
	}
	return strings.Join(backends, ","), working, strings.Join(names, ", ")
}

// Backend is the backend doing the work of a point with ngl layers
// offloaded.
func (env Env) Backend(ngl int) string {
	_, b, _ := env.backends(ngl)
	return b
}

func appendNew(xs []string, s string) []string {
	if slices.Contains(xs, s) {
		return xs
	}
	return append(xs, s)
}

// Device is what p runs on, for choosing its ceilings.
func (env Env) Device(p point.Point) roofline.Device {
	_, backend, gpus := env.backends(p.NGPULayers)
	d := roofline.Device{Backend: backend, GPU: gpus, Threads: p.Threads, Build: env.CPUFeatures}
	if len(env.GPUs) > 0 {
		d.NVML = &env.GPUs[0]
	}
	d.Class = gpu.ClassOf(backend, gpus, d.NVML, env.Host.CPUModel)
	return d
}

// WorkingDevice is the device doing p's work: the main GPU when layers
// are offloaded to one, else the CPU.
func (env Env) WorkingDevice(p point.Point) (gpu.Device, bool) {
	var cpu, gpus []gpu.Device
	for _, d := range env.Devices {
		if d.Type == "cpu" {
			cpu = append(cpu, d)
		} else {
			gpus = append(gpus, d)
		}
	}
	switch {
	case p.NGPULayers != 0 && len(gpus) > 0:
		return gpus[min(max(p.MainGPU, 0), len(gpus)-1)], true
	case len(cpu) > 0:
		return cpu[0], true
	}
	return gpu.Device{}, false
}

// Build names the software that runs the kernels: tokbench, llama.cpp and
// the CPU features it was compiled for.
func (env Env) Build() string {
	return fmt.Sprintf("tokbench %s, llama.cpp %s (ollama %s), %s", env.Version, llamaCommit, ollamaVersion, env.CPUFeatures)
}

// Machine is where env measures with ngl layers offloaded.
func (env Env) Machine(ngl int) record.Machine {
	m := record.Machine{CPUInfo: env.Host.CPUModel, CPUFeatures: env.CPUFeatures, HostThreads: env.Host.Threads,
		HostMemory: env.Host.MemTotal, HostName: env.Host.Name, GPUProfile: env.GPUs}
	for _, d := range env.Devices {
		m.DeviceList = append(m.DeviceList, d.Description)
	}
	m.Backends, m.Backend, m.GPUInfo = env.backends(ngl)
	return m
}

// Fill adds the point's settings, the model and the environment to r.
func (env Env) Fill(r record.Record, p point.Point, m Model) record.Record {
	r.Key, r.ModelID = p.Key(), p.ModelID
	r.BuildCommit, r.BuildNumber, r.OllamaVersion = llamaCommit, llamaBuild, ollamaVersion
	r.Tool = "tokbench " + env.Version
	r.Machine = env.Machine(p.NGPULayers)
	r.ModelFile, r.ModelType, r.ModelSize, r.ModelParams = p.Model, m.Desc, m.Size, m.NParams
	r.ModelFileType, r.ModelFileSize = m.FileType, m.FileSize
	r.WeightsStepBytes, r.KVBytesPerToken, r.FlopParams = m.stepCost(p.KVTypes())
	if r.Experts == nil { // else measured
		r.Experts = m.Experts(p)
	}
	r.ModelNLayer, r.ModelNEmbd = m.NLayer, m.NEmbd
	r.NPrompt, r.NGen = p.NPrompt, p.NGen
	if r.Test == "" {
		r.Test = p.TestName()
	}
	if r.Sampling == "" {
		r.Sampling = string(p.SamplingName())
	}
	r.Shape = p.Used() // the layers as given, as llama-bench writes them
	r.SplitMode = p.Split.String()
	r.MainGPU, r.UseMmap = p.MainGPU, !p.NoMmap
	// Flash attention as the test ran it (the measurement says what an
	// auto became); auto is said apart, as the pinned llama-bench lacks it.
	used := r.FlashAttn
	r.FlashAttn, r.FlashAttnType = p.FlashAttn, ""
	if p.FlashAttn == point.FlashAuto {
		r.FlashAttnType = "auto"
		if r.Status == record.StatusOK && used != point.FlashAuto {
			r.FlashAttn = used
		}
	}
	r.NDepth, r.NParallel = p.NDepth, p.Parallel
	if r.NCtx == 0 {
		r.NCtx = p.NCtx()
	}
	if r.Reps == 0 {
		r.Reps = p.Reps
	}
	r.Warmup = !p.NoWarmup
	r.NCPUMoE, r.DeviceSelect, r.NoKVOffload, r.CPUStrict, r.Prio = p.NCPUMoE, p.Devices, p.NoKVOffload, p.CPUStrict, p.Prio
	r.Devices = record.DeviceNames(cmp.Or(p.Devices, "auto"))
	r.TensorSplit, r.TensorOverrides, r.CPUMask = point.LlamaBenchSplit(p.TensorSplit), cmp.Or(p.Overrides, "none"), cmp.Or(p.CPUMask, "0x0")
	r.Poll = p.PollLevel()
	r.Switches = p.Switches
	r.TestTime = time.Now().UTC().Truncate(time.Second)
	return r
}

// Fingerprint is the fingerprint records made in env have.
func (env Env) Fingerprint() string {
	r := env.Fill(record.Record{}, point.Point{}, Model{})
	return r.Fingerprint()
}

// Unmeasured is the record of a point that was not measured (skipped, or
// failed before it could be), with the point's settings and the
// environment.
func (env Env) Unmeasured(p point.Point, status record.Status, reason string) record.Record {
	return env.Fill(record.Record{Status: status, Reason: reason}, p, Model{})
}
