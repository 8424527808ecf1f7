package sweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tokbench/tokbench/telemetry"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/gpu"
)

// Env describes where measurements run; it is the same for every record
// of a process.
type Env struct {
	Version     string
	Host        gpu.Host
	Devices     []engine.Device
	CPUFeatures string
	GPUs        []gpu.GPU // NVML's profiles; empty without NVML
}

// DescribeEnv reads the environment (engine.Init first). The GPU profile
// comes from NVML when it is there; without it the profile is empty.
func DescribeEnv(version string) Env {
	env := Env{Version: version, Host: gpu.ReadHost(), Devices: engine.Devices(), CPUFeatures: engine.CPUFeatures()}
	env.GPUs, _ = telemetry.ReadProfiles()
	return env
}

// ErrStopped is returned when a graceful stop was asked for: the point in
// progress is dropped after its current repetition.
var ErrStopped = errors.New("stopped")

// Measure runs one point as `tokbench run` does: its pp test and its tg
// test (and, with sampling, the tg test through the sampler chain), each
// after one uncounted warm-up. Each record is passed to done (if not nil)
// as soon as it is measured; records measured before an error or
// cancellation are returned with the error.
func Measure(ctx context.Context, p Point, env Env, sampler *telemetry.Sampler, done func(Record)) ([]Record, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := Check(p); err != nil {
		return nil, err
	}
	tests := p.Tests()
	var recs []Record
	ex := &Executor{Env: env, Sampler: sampler}
	err := ex.Run(ctx, Order(tests), func(r Record) error {
		if r.Status != StatusOK {
			return errors.New(r.Reason)
		}
		recs = append(recs, r)
		if done != nil {
			done(r)
		}
		return nil
	})
	// Report in llama-bench's order (pp, tg), whatever order ran best.
	rank := map[string]int{}
	for i, t := range tests {
		rank[t.Key()] = i
	}
	slices.SortStableFunc(recs, func(a, b Record) int { return rank[a.Key] - rank[b.Key] })
	return recs, err
}

// Tests splits a point into its tests as llama-bench does: a pp test
// (n_gen 0) and a tg test (n_prompt 0), and with sampling on, the raw tg
// test first so the sampled one can say what sampling costs.
func (p Point) Tests() []Point {
	var out []Point
	if p.NPrompt > 0 {
		t := p
		t.NGen, t.Sampling = 0, "off"
		out = append(out, t)
	}
	if p.NGen > 0 {
		t := p
		t.NPrompt, t.Sampling = 0, "off"
		out = append(out, t)
		if _, ok := p.Sampler(); ok {
			t.Sampling = p.Sampling
			out = append(out, t)
		}
	}
	return out
}

// Check refuses, before anything is loaded, a point whose context is longer
// than the model was trained for or that cannot fit in memory.
func Check(p Point) error {
	f, h, err := engine.Inspect(p.Model)
	if err != nil {
		return err
	}
	if err := checkContext(h, p); err != nil {
		return err
	}
	return checkMemory(EstimateMemory(h, f.TensorBytes(), p), p)
}

// Executor measures ordered tests in this process, loading each model once,
// building a context only when a context setting changes, and reusing the
// KV cache's depth from one test to the next.
type Executor struct {
	Env Env
	// Stop, when it returns true, ends the run after the current
	// repetition with ErrStopped (Ctrl-C in a sweep).
	Stop func() bool
	// Fault makes the process abort (as llama.cpp does on a fatal error)
	// when the test with this key starts; tests of the failure path use it.
	Fault string
	// Started, if set, is told of each test as it starts.
	Started func(Point)
	// Sampler, if set, is running: each record gets telemetry windows.
	Sampler *telemetry.Sampler

	model    *engine.Model
	modelKey string
	sess     *session
	rawTs    map[string]float64 // raw tg t/s by key, for sampling cost
}

// Run measures tests in the given order (see Order) and passes every
// result, ok or failed, to emit. A failed test does not stop the run; an
// error from emit, a cancellation or a stop does.
func (e *Executor) Run(ctx context.Context, tests []Point, emit func(Record) error) error {
	defer e.close()
	if e.rawTs == nil {
		e.rawTs = map[string]float64{}
	}
	// One context serves every test sharing its settings: size it for
	// the largest of them.
	nctx := map[string]int{}
	for _, p := range tests {
		nctx[p.contextKey()] = max(nctx[p.contextKey()], p.NCtx())
	}
	for _, p := range tests {
		if ctx.Err() != nil {
			return engine.ErrCanceled
		}
		if e.Started != nil {
			e.Started(p)
		}
		if e.Fault != "" && strings.Contains(p.Key(), e.Fault) {
			engine.Abort("tokbench test fault at " + p.Key())
		}
		rec, err := e.one(ctx, p, nctx[p.contextKey()])
		switch {
		case errors.Is(err, engine.ErrCanceled), errors.Is(err, ErrStopped):
			return err
		case err != nil:
			rec = &Record{Status: StatusFailed, Reason: err.Error()}
			// State after a failure is unknown: start the next test afresh.
			e.closeSession()
		}
		r := fill(*rec, p, e.meta(), e.Env)
		if err := emit(r); err != nil {
			return err
		}
	}
	return nil
}

func (e *Executor) meta() engine.Meta {
	if e.model == nil {
		return engine.Meta{}
	}
	return e.model.Meta
}

func (e *Executor) one(ctx context.Context, p Point, nctx int) (*Record, error) {
	var ph Phases
	var tel Telemetry
	if e.modelKey != p.modelKey() {
		e.close()
		t0 := time.Now()
		m, err := engine.LoadModel(p.Model, engine.ModelOptions{NGPULayers: p.NGPULayers, NoMmap: p.NoMmap, MainGPU: p.MainGPU, Split: p.Split})
		if err != nil {
			return nil, err
		}
		e.model, e.modelKey = m, p.modelKey()
		ph.LoadMs += ms(time.Since(t0))
	}
	if e.sess == nil || e.sess.key != p.contextKey() || e.sess.opts.NCtx < p.NCtx() {
		e.closeSession()
		t0 := time.Now()
		s, err := newSession(e.model, p, nctx)
		if err != nil {
			return nil, err
		}
		e.sess = s
		ph.LoadMs += ms(time.Since(t0))
		if !p.NoWarmup {
			t0 = time.Now()
			if err := s.warmup(p); err != nil {
				return nil, err
			}
			ph.WarmupMs = ms(time.Since(t0))
			tel.Warmup = e.window(t0, time.Now())
		}
	}
	s := e.sess
	s.stop = e.Stop
	if p.Timeout > 0 {
		s.c.SetDeadline(time.Now().Add(p.Timeout))
		defer s.c.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, s.c.Cancel)
	defer stop()
	t0 := time.Now()
	if err := s.setDepth(p.Parallel, p.NDepth); err != nil {
		return nil, wrapTimeout(fmt.Errorf("fill depth %d: %w", p.NDepth, err), p)
	}
	ph.DepthMs = ms(time.Since(t0))
	if ph.DepthMs > 0.5 {
		tel.Depth = e.window(t0, time.Now())
	}
	t0 = time.Now()
	var rec *Record
	var err error
	if p.NGen == 0 {
		rec, err = s.prompt(p)
		if rec != nil {
			rec.Sampling = "none"
		}
	} else {
		rec, err = e.generate(s, p)
	}
	if err != nil {
		return nil, wrapTimeout(err, p)
	}
	ph.MeasureMs = ms(time.Since(t0))
	rec.Phases = &ph
	rec.NCtx = s.opts.NCtx
	if e.Sampler != nil && len(s.reps) > 0 {
		e.attach(rec, &tel, s.reps, p.Parallel*max(p.NPrompt, p.NGen))
	}
	rec.Status = StatusOK
	return rec, nil
}

func (e *Executor) generate(s *session, p Point) (*Record, error) {
	cfg, sampled := p.Sampler()
	if !sampled {
		rec, err := s.generate(p, nil, "none")
		if err == nil {
			e.rawTs[p.Key()] = rec.AvgTs
		}
		return rec, err
	}
	raw := p
	raw.Sampling = "off"
	rawTs, ok := e.rawTs[raw.Key()]
	if !ok {
		// The raw test was not part of this run: measure it for the
		// comparison, without a record of its own.
		r, err := s.generate(raw, nil, "none")
		if err != nil {
			return nil, err
		}
		rawTs = r.AvgTs
		e.rawTs[raw.Key()] = rawTs
	}
	smp := e.model.NewSamplers(cfg, p.Parallel)
	defer smp.Close()
	rec, err := s.generate(p, smp, strings.ToLower(p.Sampling)+" ("+cfg.Name()+")")
	if err != nil {
		return nil, err
	}
	cost := 100 * (1 - rec.AvgTs/rawTs)
	rec.SamplingCostPct = &cost
	return rec, nil
}

func (e *Executor) window(a, b time.Time) *gpu.Window {
	if e.Sampler == nil {
		return nil
	}
	w := e.Sampler.Window(a, b)
	return &w
}

// attach adds the telemetry of a measured test: a window over all its
// repetitions and one per repetition, the GPU energy of the repetitions
// and the tokens they produced per joule.
func (e *Executor) attach(rec *Record, tel *Telemetry, reps [][2]time.Time, tokensPerRep int) {
	tel.Measure = e.window(reps[0][0], reps[len(reps)-1][1])
	var joules float64
	haveEnergy := true
	for _, r := range reps {
		w := e.Sampler.Window(r[0], r[1])
		tel.Reps = append(tel.Reps, w)
		j, ok := w.EnergyJ()
		joules += j
		haveEnergy = haveEnergy && ok
	}
	for _, d := range tel.Measure.Devices {
		rec.Throttled = rec.Throttled || d.Throttled
	}
	if haveEnergy && joules > 0 {
		tpj := float64(tokensPerRep*len(reps)) / joules
		rec.EnergyJ, rec.TokensPerJ = &joules, &tpj
	}
	rec.Telemetry = tel
}

func wrapTimeout(err error, p Point) error {
	if errors.Is(err, engine.ErrDeadline) {
		return fmt.Errorf("%w (--timeout %s)", err, p.Timeout)
	}
	return err
}

func (e *Executor) closeSession() {
	if e.sess != nil {
		e.sess.c.Close()
		e.sess = nil
	}
}

func (e *Executor) close() {
	e.closeSession()
	if e.model != nil {
		e.model.Close()
		e.model, e.modelKey = nil, ""
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// fill adds the point's settings, the model and the environment.
func fill(r Record, p Point, meta engine.Meta, env Env) Record {
	r.Key, r.ModelID = p.Key(), p.ModelID
	r.BuildCommit, r.OllamaVersion = engine.LlamaCommit, engine.OllamaVersion
	r.Tool = "tokbench " + env.Version
	r.CPUInfo, r.CPUFeatures = env.Host.CPUModel, env.CPUFeatures
	r.HostThreads, r.HostMemory = env.Host.Threads, env.Host.MemTotal
	r.GPUProfile = env.GPUs
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
	r.ModelFile, r.ModelType, r.ModelSize, r.ModelParams = p.Model, meta.Desc, meta.Size, meta.NParams
	r.ModelFileType, r.ModelFileSize = meta.FileType, meta.FileSize
	if meta.NLayer > 0 {
		// A step reads every weight but the embedding table (a lookup of a
		// few rows), unless that table is also the output projection.
		r.WeightsStepBytes, r.FlopParams = meta.WeightBytes, int64(meta.NParams)
		if !meta.Tied {
			r.WeightsStepBytes -= meta.EmbdBytes
			r.FlopParams -= int64(meta.NVocab) * int64(meta.NEmbd)
		}
		kt, _ := gguf.ParseType(p.TypeK)
		vt, _ := gguf.ParseType(p.TypeV)
		r.KVBytesPerToken = int64(meta.NLayer) * (kt.RowSize(int64(meta.NEmbdKGQA)) + vt.RowSize(int64(meta.NEmbdVGQA)))
		r.ModelNLayer, r.ModelNEmbd = meta.NLayer, meta.NEmbd
	}
	r.NPrompt, r.NGen = p.NPrompt, p.NGen
	if r.Test == "" {
		r.Test = p.TestName()
	}
	if r.Sampling == "" {
		r.Sampling = p.samplingName()
	}
	r.NBatch, r.NUBatch, r.NThreads = p.NBatch, p.UBatch(), p.Threads
	r.TypeK, r.TypeV = p.TypeK, p.TypeV
	r.NGPULayers = p.NGPULayers
	if p.NGPULayers < 0 && meta.NLayer > 0 {
		r.NGPULayers = meta.NLayer + 1
	}
	r.SplitMode = p.Split.String()
	r.MainGPU, r.FlashAttn, r.UseMmap = p.MainGPU, int(p.FlashAttn), !p.NoMmap
	r.NDepth, r.NParallel = p.NDepth, p.Parallel
	if r.NCtx == 0 {
		r.NCtx = p.NCtx()
	}
	r.Reps, r.Warmup = p.Reps, !p.NoWarmup
	r.TestTime = time.Now().UTC().Truncate(time.Second)
	return r
}

// TestName is the short name of a one-test point: pp512, tg128@d1024x4.
func (p Point) TestName() string {
	kind, n := "tg", p.NGen
	if p.NGen == 0 {
		kind, n = "pp", p.NPrompt
	}
	s := fmt.Sprintf("%s%d", kind, n)
	if p.NDepth > 0 {
		s += fmt.Sprintf("@d%d", p.NDepth)
	}
	if p.Parallel > 1 {
		s += fmt.Sprintf("x%d", p.Parallel)
	}
	return s
}

func appendNew(xs []string, s string) []string {
	if slices.Contains(xs, s) {
		return xs
	}
	return append(xs, s)
}
