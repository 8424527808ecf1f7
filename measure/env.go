package measure

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
	"github.com/tokbench/tokbench/telemetry"
)

// Env describes where measurements run; it is the same for every record
// of a process.
type Env struct {
	Version     string
	Host        gpu.Host
	Devices     []gpu.Device
	CPUFeatures string
	GPUs        []gpu.GPU // NVML's profiles; empty without NVML
	CacheDir    string    // where model digests are kept ("": nowhere)
}

// DescribeEnv reads the environment (engine.Init first). The GPU profile
// comes from NVML when it is there; without it the profile is empty.
func DescribeEnv(version string) Env {
	env := Env{Version: version, Host: gpu.ReadHost(), Devices: engine.Devices(), CPUFeatures: engine.CPUFeatures()}
	env.GPUs, _ = telemetry.ReadProfiles()
	env.CacheDir, _ = CacheDir()
	return env
}

// Fingerprint is the fingerprint records made in env have.
func (env Env) Fingerprint() string {
	r := fill(record.Record{}, point.Point{}, engine.Meta{}, env)
	return r.Fingerprint()
}

// Unmeasured is the record of a point that was not measured (skipped, or
// failed before it could be), with the point's settings and the
// environment.
func Unmeasured(p point.Point, env Env, status record.Status, reason string) record.Record {
	return fill(record.Record{Status: status, Reason: reason}, p, engine.Meta{}, env)
}

// StepCost is what one step of a model moves and computes: the weight
// bytes it reads (every weight but the embedding table, a lookup of a few
// rows, unless that table is also the output projection), the K+V bytes
// per token of context (all layers, in the cache's types) and the weights
// that take part in a token's matrix products. A mixture of experts'
// experts are left out of weights (which of them a step reads is the
// Experts' part) and count in flopParams as the share a token uses.
func StepCost(meta engine.Meta, typeK, typeV string) (weights, kvPerToken, flopParams int64) {
	if meta.NLayer == 0 {
		return 0, 0, 0
	}
	weights, flopParams = meta.WeightBytes-meta.ExpertBytes, int64(meta.NParams)
	if meta.NExpert > 0 {
		flopParams -= meta.ExpertParams - meta.ExpertParams*int64(meta.NExpertUsed)/int64(meta.NExpert)
	}
	if !meta.Tied {
		weights -= meta.EmbdBytes
		flopParams -= int64(meta.NVocab) * int64(meta.NEmbd)
	}
	kt, _ := gguf.ParseType(typeK)
	vt, _ := gguf.ParseType(typeV)
	kvPerToken = int64(meta.NLayer) * (kt.RowSize(int64(meta.NEmbdKGQA)) + vt.RowSize(int64(meta.NEmbdVGQA)))
	return weights, kvPerToken, flopParams
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

// Device is what p runs on, for choosing its ceilings.
func (env Env) Device(p point.Point) roofline.Device {
	_, backend, gpus := env.backends(p.NGPULayers)
	d := roofline.Device{Backend: backend, GPU: gpus}
	if len(env.GPUs) > 0 {
		d.Profile = &env.GPUs[0]
	}
	d.Class = gpu.ClassOf(backend, gpus, d.Profile, env.Host.CPUModel, p.Threads)
	return d
}

// machine is where env measures with ngl layers offloaded.
func (env Env) machine(ngl int) record.Machine {
	m := record.Machine{CPUInfo: env.Host.CPUModel, CPUFeatures: env.CPUFeatures, HostThreads: env.Host.Threads,
		HostMemory: env.Host.MemTotal, HostName: env.Host.Name, GPUProfile: env.GPUs}
	for _, d := range env.Devices {
		m.Devices = append(m.Devices, d.Description)
	}
	m.Backends, m.Backend, m.GPUInfo = env.backends(ngl)
	return m
}

// fill adds the point's settings, the model and the environment.
func fill(r record.Record, p point.Point, meta engine.Meta, env Env) record.Record {
	r.Key, r.ModelID = p.Key(), p.ModelID
	r.BuildCommit, r.OllamaVersion = engine.LlamaCommit, engine.OllamaVersion
	r.Tool = "tokbench " + env.Version
	r.Machine = env.machine(p.NGPULayers)
	r.ModelFile, r.ModelType, r.ModelSize, r.ModelParams = p.Model, meta.Desc, meta.Size, meta.NParams
	r.ModelFileType, r.ModelFileSize = meta.FileType, meta.FileSize
	r.WeightsStepBytes, r.KVBytesPerToken, r.FlopParams = StepCost(meta, p.TypeK, p.TypeV)
	if r.Experts == nil { // else measured
		r.Experts = expertsOf(meta, p)
	}
	r.ModelNLayer, r.ModelNEmbd = meta.NLayer, meta.NEmbd
	r.NPrompt, r.NGen = p.NPrompt, p.NGen
	if r.Test == "" {
		r.Test = p.TestName()
	}
	if r.Sampling == "" {
		r.Sampling = string(p.SamplingName())
	}
	r.NBatch, r.NUBatch, r.NThreads = p.NBatch, p.UBatch(), p.Threads
	r.TypeK, r.TypeV = p.TypeK, p.TypeV
	r.NGPULayers = p.NGPULayers
	if p.NGPULayers < 0 && meta.NLayer > 0 {
		r.NGPULayers = meta.NLayer + 1
	}
	r.SplitMode = p.Split.String()
	r.MainGPU, r.FlashAttn, r.UseMmap = p.MainGPU, p.FlashAttn, !p.NoMmap
	r.NDepth, r.NParallel = p.NDepth, p.Parallel
	if r.NCtx == 0 {
		r.NCtx = p.NCtx()
	}
	if r.Reps == 0 {
		r.Reps = p.Reps
	}
	r.Warmup = !p.NoWarmup
	r.NCPUMoE, r.DeviceSelect, r.NoKVOffload, r.CPUStrict, r.Prio = p.NCPUMoE, p.Devices, p.NoKVOffload, p.CPUStrict, p.Prio
	r.TensorSplit, r.TensorOverrides, r.CPUMask = cmp.Or(p.TensorSplit, "0.00"), cmp.Or(p.Overrides, "none"), cmp.Or(p.CPUMask, "0x0")
	r.Poll = p.PollLevel()
	r.Switches = p.Switches
	r.TestTime = time.Now().UTC().Truncate(time.Second)
	return r
}

func appendNew(xs []string, s string) []string {
	if slices.Contains(xs, s) {
		return xs
	}
	return append(xs, s)
}
