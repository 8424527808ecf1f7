package sweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
)

// Env describes where measurements run; it is the same for every record
// of a process.
type Env struct {
	Version     string
	Host        gpu.Host
	Devices     []engine.Device
	CPUFeatures string
}

// DescribeEnv reads the environment (engine.Init first).
func DescribeEnv(version string) Env {
	return Env{Version: version, Host: gpu.ReadHost(), Devices: engine.Devices(), CPUFeatures: engine.CPUFeatures()}
}

// Measure runs one point: a pp test and a tg test as llama-bench does
// (plus a sampled tg test when the point asks for sampling), each with an
// uncounted warm-up and p.Reps timed repetitions. Each record is passed to
// done (if not nil) as soon as it is measured; records measured before an
// error or cancellation are returned with the error.
func Measure(ctx context.Context, p Point, env Env, done func(Record)) ([]Record, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	f, h, err := engine.Inspect(p.Model)
	if err != nil {
		return nil, err
	}
	if err := checkContext(h, p); err != nil {
		return nil, err
	}
	if err := checkMemory(EstimateMemory(h, f.TensorBytes(), p), p); err != nil {
		return nil, err
	}
	model, err := engine.LoadModel(p.Model, engine.ModelOptions{NGPULayers: p.NGPULayers, NoMmap: p.NoMmap, MainGPU: p.MainGPU, Split: p.Split})
	if err != nil {
		return nil, err
	}
	defer model.Close()
	c, err := model.NewContext(engine.ContextOptions{
		NCtx: p.NCtx(), NBatch: p.NBatch, NUBatch: p.UBatch(), NSeqMax: p.Parallel, Threads: p.Threads,
		FlashAttn: p.FlashAttn, TypeK: p.TypeK, TypeV: p.TypeV, Seed: p.Seed,
	})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if p.Timeout > 0 {
		c.SetDeadline(time.Now().Add(p.Timeout))
	}
	stop := context.AfterFunc(ctx, c.Cancel)
	defer stop()

	m := &measurer{p: p, c: c, model: model}
	var recs []Record
	add := func(r *Record, err error) error {
		if r != nil {
			recs = append(recs, fill(*r, p, model.Meta, env))
			if done != nil {
				done(recs[len(recs)-1])
			}
		}
		return err
	}
	if !p.NoWarmup {
		if err := m.warmup(); err != nil {
			return nil, m.wrap(err)
		}
	}
	if p.NDepth > 0 {
		// Fill once; every repetition trims back to it.
		if err := c.Prefill(p.Parallel, p.NDepth, 0); err != nil {
			return nil, m.wrap(fmt.Errorf("fill depth %d: %w", p.NDepth, err))
		}
	}
	if p.NPrompt > 0 {
		if err := add(m.prompt()); err != nil {
			return recs, m.wrap(err)
		}
	}
	if p.NGen > 0 {
		raw, err := m.generate(nil, "none")
		if err := add(raw, err); err != nil {
			return recs, m.wrap(err)
		}
		if cfg, ok := p.Sampler(); ok {
			s := model.NewSamplers(cfg, p.Parallel)
			defer s.Close()
			sampled, err := m.generate(s, p.Sampling+" ("+cfg.Name()+")")
			if sampled != nil {
				cost := 100 * (1 - sampled.AvgTs/raw.AvgTs)
				sampled.SamplingCostPct = &cost
			}
			if err := add(sampled, err); err != nil {
				return recs, m.wrap(err)
			}
		}
	}
	return recs, nil
}

type measurer struct {
	p     Point
	c     *engine.Context
	model *engine.Model
}

func (m *measurer) wrap(err error) error {
	if errors.Is(err, engine.ErrDeadline) {
		return fmt.Errorf("%w (--timeout %s)", err, m.p.Timeout)
	}
	return err
}

// warmup runs each test once, small, uncounted: first-use allocations,
// graph building and page faults happen here instead of in repetition 1.
func (m *measurer) warmup() error {
	if m.p.NPrompt > 0 {
		if err := m.c.Prefill(m.p.Parallel, min(m.p.NPrompt, m.p.NBatch), 0); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	if m.p.NGen > 0 {
		m.c.Clear()
		if err := m.c.Step(m.p.Parallel, 0, nil); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	m.c.Clear()
	return nil
}

// reset brings the KV cache back to the point's depth.
func (m *measurer) reset() error {
	if m.p.NDepth == 0 {
		m.c.Clear()
		return nil
	}
	return m.c.Trim(m.p.NDepth)
}

// prompt is the pp test: n_prompt tokens per sequence decoded in n_batch
// chunks, synchronised once. TTFT is its duration: the first generated
// token's logits are ready when it ends.
func (m *measurer) prompt() (*Record, error) {
	p := m.p
	ns := make([]float64, 0, p.Reps)
	for r := 0; r < p.Reps; r++ {
		if err := m.reset(); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := m.c.Prefill(p.Parallel, p.NPrompt, p.NDepth); err != nil {
			return nil, fmt.Errorf("pp%d repetition %d: %w", p.NPrompt, r+1, err)
		}
		ns = append(ns, float64(time.Since(t0).Nanoseconds()))
	}
	rec := rates(ns, p.Parallel*p.NPrompt, p.Parallel)
	rec.NPrompt, rec.Test, rec.Sampling = p.NPrompt, testName("pp", p.NPrompt, p), "none"
	rec.TTFT = Latencies(ns)
	return rec, nil
}

// generate is the tg test: n_gen steps of one token per sequence, each
// decoded and synchronised on its own; every step's time is an
// inter-token latency.
func (m *measurer) generate(s *engine.SamplerSet, sampling string) (*Record, error) {
	p := m.p
	ns := make([]float64, 0, p.Reps)
	steps := make([]float64, 0, p.Reps*p.NGen)
	for r := 0; r < p.Reps; r++ {
		if err := m.reset(); err != nil {
			return nil, err
		}
		if s != nil {
			s.Reset()
			m.c.SeedTokens(p.Parallel)
		}
		t0 := time.Now()
		prev := t0
		for i := 0; i < p.NGen; i++ {
			if err := m.c.Step(p.Parallel, p.NDepth+i, s); err != nil {
				return nil, fmt.Errorf("tg%d repetition %d step %d: %w", p.NGen, r+1, i+1, err)
			}
			now := time.Now()
			steps = append(steps, float64(now.Sub(prev).Nanoseconds()))
			prev = now
		}
		ns = append(ns, float64(prev.Sub(t0).Nanoseconds()))
	}
	rec := rates(ns, p.Parallel*p.NGen, p.Parallel)
	rec.NGen, rec.Test, rec.Sampling = p.NGen, testName("tg", p.NGen, p), sampling
	rec.ITL = Latencies(steps)
	return rec, nil
}

// rates turns repetition times into llama-bench's figures and ours.
func rates(ns []float64, tokens, parallel int) *Record {
	ts := make([]float64, len(ns))
	r := &Record{SamplesNs: make([]uint64, len(ns)), SamplesTs: ts}
	for i, v := range ns {
		r.SamplesNs[i] = uint64(v)
		ts[i] = float64(tokens) * 1e9 / v
	}
	tn, tt := Summarize(ns), Summarize(ts)
	r.AvgNs, r.StddevNs = uint64(tn.Mean), uint64(tn.Stddev)
	r.AvgTs, r.StddevTs = tt.Mean, tt.Stddev
	r.MedianTs, r.MinTs, r.MaxTs, r.CI95Ts, r.CV = tt.Median, tt.Min, tt.Max, tt.CI95, tt.CV
	r.AvgTsPerSeq = tt.Mean / float64(parallel)
	return r
}

func testName(kind string, n int, p Point) string {
	s := fmt.Sprintf("%s%d", kind, n)
	if p.NDepth > 0 {
		s += fmt.Sprintf("@d%d", p.NDepth)
	}
	if p.Parallel > 1 {
		s += fmt.Sprintf("x%d", p.Parallel)
	}
	return s
}

// fill adds the point's settings, the model and the environment.
func fill(r Record, p Point, meta engine.Meta, env Env) Record {
	r.BuildCommit, r.OllamaVersion = engine.LlamaCommit, engine.OllamaVersion
	r.Tool = "tokbench " + env.Version
	r.CPUInfo, r.CPUFeatures = env.Host.CPUModel, env.CPUFeatures
	r.HostThreads, r.HostMemory = env.Host.Threads, env.Host.MemTotal
	var backends, gpuBackends, gpus []string
	for _, d := range env.Devices {
		r.Devices = append(r.Devices, d.Description)
		backends = appendNew(backends, d.Backend)
		if d.Type != "cpu" {
			gpus = append(gpus, d.Description)
			gpuBackends = appendNew(gpuBackends, d.Backend)
		}
	}
	r.Backends = strings.Join(backends, ",")
	r.GPUInfo = strings.Join(gpus, ", ")
	// The backend doing the work: a GPU's when layers are offloaded to it.
	r.Backend = "CPU"
	if len(gpuBackends) > 0 && p.NGPULayers != 0 {
		r.Backend = strings.Join(gpuBackends, ",")
	}
	r.ModelFile, r.ModelType, r.ModelSize, r.ModelParams = meta.Path, meta.Desc, meta.Size, meta.NParams
	r.ModelFileType, r.ModelFileSize = meta.FileType, meta.FileSize
	r.NBatch, r.NUBatch, r.NThreads = p.NBatch, p.UBatch(), p.Threads
	r.TypeK, r.TypeV = p.TypeK, p.TypeV
	r.NGPULayers = p.NGPULayers
	if p.NGPULayers < 0 {
		r.NGPULayers = meta.NLayer + 1
	}
	r.SplitMode = p.Split.String()
	r.MainGPU, r.FlashAttn, r.UseMmap = p.MainGPU, int(p.FlashAttn), !p.NoMmap
	r.NDepth, r.NCtx, r.NParallel = p.NDepth, p.NCtx(), p.Parallel
	r.Reps, r.Warmup = p.Reps, !p.NoWarmup
	r.TestTime = time.Now().UTC().Truncate(time.Second)
	return r
}

func appendNew(xs []string, s string) []string {
	if slices.Contains(xs, s) {
		return xs
	}
	return append(xs, s)
}
