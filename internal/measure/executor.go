// Package measure is the executor over the engine: it checks a point
// against the model and the memory free, loads models and builds contexts
// only when a setting changes, fills and trims the KV cache to each
// test's depth, runs the warm-up and the timed repetitions with
// llama-bench's method, takes telemetry windows per phase, and turns it
// all into records (plan.Env.Fill). It also probes the device's ceilings
// for the roofline, times a step's ops alone and profiles real steps,
// evaluates quality, serves load tests, and makes the synthetic models a
// benchmark names.
package measure

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/internal/halt"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/internal/rerun"
	"github.com/tokbench/tokbench/internal/telemetry"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// Tests measures tests in the order given (as `tokbench run` does, in one
// process: a model is loaded once for the tests in a row that share it,
// a context made once for those that share it). Each record is passed to
// done (if not nil) as soon as it is measured; records measured before an
// error or cancellation are returned with the error.
func Tests(ctx context.Context, tests []point.Point, env Env, sampler *telemetry.Sampler, done func(record.Record), progress func(point.Point, string)) ([]record.Record, error) {
	// A context is made once for the tests that share it, sized for the
	// largest of them (Executor.Run): that test is the one to check.
	largest := map[point.ContextKey]int{}
	for i, p := range tests {
		if j, ok := largest[p.ContextKey()]; !ok || p.NCtx() > tests[j].NCtx() {
			largest[p.ContextKey()] = i
		}
	}
	ex := &Executor{Env: env, Sampler: sampler, Progress: progress}
	for i, p := range tests {
		if largest[p.ContextKey()] == i {
			f, err := ex.read(p.Model)
			if err != nil {
				return nil, err
			}
			if err := f.Check(p, free()); err != nil {
				return nil, err
			}
		}
	}
	var recs []record.Record
	err := ex.Run(ctx, tests, func(r record.Record, _ record.Line, failure error) error {
		if failure != nil {
			return failure
		}
		recs = append(recs, r)
		if done != nil {
			done(r)
		}
		return nil
	})
	return recs, err
}

// Executor measures ordered tests in this process, loading each model once,
// building a context only when a context setting changes, and reusing the
// KV cache's depth from one test to the next.
type Executor struct {
	Env Env
	// Stop, when it returns true, ends the run after the current
	// repetition with halt.ErrStopped (Ctrl-C in a sweep).
	Stop func() bool
	// Fault makes the process abort (as llama.cpp does on a fatal error)
	// when the test with this key starts; tests of the failure path use it.
	Fault string
	// Started, if set, is told of each test as it starts.
	Started func(point.Point)
	// Progress, if set, is told of each warm-up and repetition as it
	// starts ("warm-up", "repetition 2"), as llama-bench's --progress.
	Progress func(p point.Point, what string)
	// Sampler, if set, is running: each record gets telemetry windows.
	Sampler *telemetry.Sampler
	// Finish, if set, completes each record before it is encoded (a
	// sweep's round, spec and roofline).
	Finish func(*record.Record)

	model    *model
	modelKey point.ModelKey
	digest   string // the loaded model file's SHA-256
	sess     *session
	rawTs    map[point.Key]float64 // raw tg t/s, for sampling cost
	files    map[string]plan.File  // model files read, by path: each header is parsed once
	reruns   map[string]*rerun.History
}

// read is the model file at path, read once per executor.
func (e *Executor) read(path string) (plan.File, error) {
	if f, ok := e.files[path]; ok {
		return f, nil
	}
	f, err := plan.Read(path)
	if err != nil {
		return f, err
	}
	if e.files == nil {
		e.files = map[string]plan.File{}
	}
	e.files[path] = f
	return f, nil
}

// Run measures tests in the given order (see point.Order) and passes
// every result to emit, with its line as a results file holds it (encoded
// once, here): a failed test's record comes with its error. A failed test
// does not stop the run; an error from emit, a cancellation or a stop
// does.
func (e *Executor) Run(ctx context.Context, tests []point.Point, emit func(r record.Record, line record.Line, failure error) error) error {
	defer e.close()
	if e.rawTs == nil {
		e.rawTs = map[point.Key]float64{}
	}
	// One context serves every test sharing its settings: size it for
	// the largest of them.
	nctx := map[point.ContextKey]int{}
	for _, p := range tests {
		nctx[p.ContextKey()] = max(nctx[p.ContextKey()], p.NCtx())
	}
	for _, p := range tests {
		if ctx.Err() != nil {
			return engine.ErrCanceled
		}
		if e.Started != nil {
			e.Started(p)
		}
		if e.Fault != "" && strings.Contains(p.Key().String(), e.Fault) {
			engine.Abort("tokbench test fault at " + p.Key().String())
		}
		if p.Delay > 0 {
			// --delay: let the hardware cool before the test, as llama-bench does.
			select {
			case <-ctx.Done():
				return engine.ErrCanceled
			case <-time.After(p.Delay):
			}
		}
		rec, err := e.one(ctx, p, nctx[p.ContextKey()])
		switch {
		case errors.Is(err, engine.ErrCanceled), errors.Is(err, halt.ErrStopped):
			return err
		case err != nil:
			rec = &record.Record{Status: record.StatusFailed, Reason: err.Error()}
			// State after a failure is unknown: start the next test afresh.
			e.closeSession()
		}
		r := e.Env.Fill(*rec, p, e.meta())
		r.ModelSHA256 = e.digest
		e.coverReruns(&r)
		if e.Finish != nil {
			e.Finish(&r)
		}
		r, line := record.Encode(r)
		if err := emit(r, line, err); err != nil {
			return err
		}
	}
	return nil
}

func (e *Executor) meta() plan.Model {
	if e.model == nil {
		return plan.Model{}
	}
	return e.model.Meta
}

func (e *Executor) one(ctx context.Context, p point.Point, nctx int) (*record.Record, error) {
	var ph record.Phases
	var tel record.Telemetry
	if e.modelKey != p.ModelKey() {
		e.close()
		t0 := time.Now()
		f, err := e.read(p.Model)
		if err != nil {
			return nil, err
		}
		m, err := loadModel(f, p)
		if err != nil {
			return nil, err
		}
		e.model, e.modelKey = m, p.ModelKey()
		// The file's content names the model in baselines; a file that
		// cannot be hashed is measured all the same, without that name.
		e.digest, _ = plan.ModelDigest(p.Model, e.Env.CacheDir)
		ph.LoadMs += ms(time.Since(t0))
	}
	// A test whose threads outnumber the cores (oversubscribed) runs on
	// a budget, without warm-ups: each of its steps waits for the OS to
	// give every thread a core, and one decode step can take seconds.
	var budget time.Duration
	if dev, ok := e.Env.WorkingDevice(p); ok && dev.Type == "cpu" && p.Threads > runtime.NumCPU() {
		budget = oversubBudget
	}
	warm := !p.NoWarmup && budget == 0
	fresh := false
	if e.sess == nil || e.sess.key != p.ContextKey() || e.sess.opts.NCtx < p.NCtx() {
		fresh = true
		e.closeSession()
		t0 := time.Now()
		s, err := newObservedSession(e.model, p, nctx)
		if err != nil {
			return nil, err
		}
		e.sess = s
		ph.LoadMs += ms(time.Since(t0))
		if warm {
			t0 = time.Now()
			if e.Progress != nil {
				e.Progress(p, "warm-up")
			}
			if err := s.warmup(p); err != nil {
				return nil, err
			}
			ph.WarmupMs = ms(time.Since(t0))
			tel.Warmup = e.window(t0, time.Now())
		}
	}
	s := e.sess
	s.stop = e.Stop
	s.budget = budget
	s.progress = nil
	if e.Progress != nil {
		s.progress = func(what string) { e.Progress(p, what) }
	}
	s.c.SetStepDelay(p.StepDelay)
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
	if warm && !fresh {
		// Each test warms up, as llama-bench's do: the test before it
		// (its steps observed, its kernels timed) left other data in the
		// caches and the pool's threads asleep.
		t0 = time.Now()
		s.tell("warm-up")
		if err := s.warmTest(p); err != nil {
			return nil, wrapTimeout(err, p)
		}
		ph.WarmupMs += ms(time.Since(t0))
	}
	t0 = time.Now()
	var rec *record.Record
	var err error
	switch {
	case p.Combined:
		rec, err = s.promptGen(p)
	case p.NGen == 0:
		rec, err = s.prompt(p)
		if rec != nil {
			rec.Sampling = "none"
		}
	default:
		rec, err = e.generate(s, p)
	}
	if err != nil {
		return nil, wrapTimeout(err, p)
	}
	ph.MeasureMs = ms(time.Since(t0))
	switch {
	case s.budget > 0 && p.Kernels:
		// Its kernels alone would wait for cores as its steps did.
		rec.KernelsNote = fmt.Sprintf("not split: %d threads on %d cores", p.Threads, runtime.NumCPU())
	case (p.Kernels || e.model.Meta.NExpert > 0) && !p.Combined:
		// Outside the timed region; a failure costs the decomposition
		// or the experts' count, not the measurement.
		t0 = time.Now()
		e.observe(ctx, s, p, rec)
		ph.KernelsMs = ms(time.Since(t0))
	}
	rec.Phases = &ph
	rec.NCtx = s.opts.NCtx
	if e.Sampler != nil && len(s.reps) > 0 {
		e.attach(rec, &tel, s.reps, p.Parallel*testTokens(p))
	}
	rec.Status = record.StatusOK
	// What flash attention ran as: an auto is llama.cpp's choice (Fill
	// keeps it beside the setting).
	rec.FlashAttn = point.FlashOff
	if s.c.FlashAttn {
		rec.FlashAttn = point.FlashOn
	}
	return rec, nil
}

// observe watches a few of p's steps (the time outside the graph's
// nodes; a mixture's routing and placement), then times the step's
// kernels alone with the experts the steps read.
func (e *Executor) observe(ctx context.Context, s *session, p point.Point, rec *record.Record) {
	stop := func() bool { return ctx.Err() != nil || s.stopping() }
	rec.Experts = e.model.Meta.Experts(p)
	if stop() {
		return
	}
	obs, err := s.observe(p)
	if err != nil {
		if p.Kernels {
			rec.KernelsNote = "steps not observed (the time outside the graph's nodes): " + err.Error()
		}
		if rec.Experts != nil {
			rec.Experts.Note = "not measured: " + err.Error()
		}
	} else {
		setRouting(rec.Experts, obs.Steps)
	}
	if !p.Kernels || stop() {
		return
	}
	// The test's pool would spin beside the kernels timed alone.
	s.c.Idle()
	var full, last float64
	if rec.Experts != nil {
		full, last = rec.Experts.ByLayer(e.model.Meta.NLayer)
	}
	if rec.Kernels, err = e.kernelsFor(p, s.c.FlashAttn, full, last, stop); err != nil {
		rec.Kernels, rec.KernelsNote = nil, "kernels not timed: "+err.Error()
		return
	}
	rec.OutsideMs = obs.OutsideMs
}

func (e *Executor) generate(s *session, p point.Point) (*record.Record, error) {
	cfg, sampled := samplerFor(p)
	if !sampled {
		rec, err := s.generate(p, nil, "none")
		if err == nil {
			e.rawTs[p.Key()] = rec.AvgTs
		}
		return rec, err
	}
	raw := p
	raw.Sampling = point.SamplingOff
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
	rec, err := s.generate(p, smp, string(p.Sampling)+" ("+cfg.Name()+")")
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
func (e *Executor) attach(rec *record.Record, tel *record.Telemetry, reps [][2]time.Time, tokensPerRep int) {
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
	if others := e.Sampler.OtherProcesses(); len(others) > 0 && rec.Noise != nil {
		rec.Noise.GPUProcesses = others
		rec.Noise.Warnings = append(rec.Noise.Warnings, "other processes ran on the GPU ("+strings.Join(others, ", ")+"): they share its SMs and memory bandwidth; rerun on an idle GPU")
		rec.Noise.Quiet = false
	}
}

func wrapTimeout(err error, p point.Point) error {
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
		e.model, e.modelKey, e.digest = nil, point.ModelKey{}, ""
	}
	engine.GiveBackMemory() // what timing the kernels kept
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// samplerFor is the llama.cpp sampler chain of a point's sampling, if any.
func samplerFor(p point.Point) (engine.SamplerConfig, bool) {
	switch p.SamplingName() {
	case point.SamplingGreedy:
		return engine.GreedySampler(), true
	case point.SamplingTypical:
		return engine.TypicalSampler(uint32(p.Seed)), true
	}
	return engine.SamplerConfig{}, false
}
