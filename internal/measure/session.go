package measure

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/halt"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/stats"
)

// session is one context and what its KV cache holds: every sequence
// filled to the same depth with random tokens.
type session struct {
	c     *engine.Context
	key   point.ContextKey
	opts  engine.ContextOptions
	depth int // tokens held per sequence; -1 when unknown
	stop  func() bool
	reps  [][2]time.Time // start and end of each timed repetition of the last test
	// progress, if set, is told of each repetition as it starts.
	progress func(what string)
	// budget, when set, bounds a test's timed work: its threads outnumber
	// the cores (oversubscribed), where a step waits for the OS to give
	// every thread a core at each of its barriers and a decode can take
	// seconds a token. The test stops at the budget (after one
	// repetition, or one decode step), and its record says so.
	budget time.Duration
}

// oversubBudget is the budget of an oversubscribed test: enough steps for
// a rate that shows the oversubscription (its point), not a precise one.
const oversubBudget = time.Second

func (s *session) tell(what string) {
	if s.progress != nil {
		s.progress(what)
	}
}

func newSession(m *model, p point.Point, nctx int) (*session, error) {
	return newSessionOf(m.NewContext, p, nctx)
}

// newObservedSession is newSession with a context whose steps can be
// observed after they are timed (observe): a point that splits its step
// or counts a mixture's experts is observed in its own context, at its
// own depth, not in a second one filled again.
func newObservedSession(m *model, p point.Point, nctx int) (*session, error) {
	if !p.Kernels && m.Meta.NExpert == 0 {
		return newSession(m, p, nctx)
	}
	return newSessionOf(m.NewProfiledContext, p, nctx)
}

// observe runs a few of p's steps (a prefill: one ubatch) at p's depth,
// observed at their first and last nodes (the rest computed together, as
// measured): the time outside the graph's nodes, a mixture's routing and
// where its weights live.
func (s *session) observe(p point.Point) (observed, error) {
	if err := s.setDepth(p.Parallel, p.NDepth); err != nil {
		return observed{}, err
	}
	s.depth = -1
	var sp *engine.StepProfile
	var err error
	if p.NGen > 0 {
		n := min(p.NGen, outsideSteps)
		sp, err = s.c.ObserveSteps(p.Parallel, p.NDepth, n)
		s.depth = p.NDepth + n
	} else {
		n := min(p.NPrompt, max(1, p.UBatch()/max(p.Parallel, 1))) // one prefill step
		sp, err = s.c.ObservePrefill(p.Parallel, n, p.NDepth)
		s.depth = p.NDepth + n
	}
	if err != nil {
		s.depth = -1
		return observed{}, err
	}
	return observed{OutsideMs: float64(sp.BuildNs+sp.TailNs) / 1e6 / float64(max(sp.Steps, 1)), Steps: sp}, nil
}

// contextOptions are a context's for p's steps: nctx cells, slots
// sequences at once.
func contextOptions(p point.Point, nctx, slots int) engine.ContextOptions {
	return engine.ContextOptions{NCtx: nctx, Shape: p.Used(), NSeqMax: slots, FlashAttn: p.FlashAttn, Seed: p.Seed,
		NoKVOffload: p.NoKVOffload, Threading: p.Threading}
}

// newSessionOf is newSession with a context made by make (a profiled one).
func newSessionOf(make func(engine.ContextOptions) (*engine.Context, error), p point.Point, nctx int) (*session, error) {
	o := contextOptions(p, max(nctx, p.NCtx()), p.Parallel)
	c, err := make(o)
	if err != nil {
		return nil, err
	}
	return &session{c: c, key: p.ContextKey(), opts: o}, nil
}

// warmup runs each kind of test once, small and uncounted: first-use
// allocations, graph building and page faults happen here, not in
// repetition 1.
func (s *session) warmup(p point.Point) error {
	s.c.Clear()
	if err := s.c.Prefill(p.Parallel, min(max(p.NPrompt, 1), p.NBatch), 0); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	s.c.Clear()
	if err := s.c.Step(p.Parallel, 0, nil); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	s.c.Clear()
	s.depth = 0
	return nil
}

// warmTest runs p's test once, uncounted, at its depth, as llama-bench
// warms each test up: the whole prompt for pp, one step for tg. Its
// tokens are trimmed before the repetitions (free).
func (s *session) warmTest(p point.Point) error {
	if err := s.setDepth(p.Parallel, p.NDepth); err != nil {
		return err
	}
	s.depth = -1
	pos := p.NDepth
	if p.NPrompt > 0 {
		if err := s.c.Prefill(p.Parallel, p.NPrompt, pos); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		pos += p.NPrompt
	}
	if p.NGen > 0 {
		if err := s.c.Step(p.Parallel, pos, nil); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		pos++
	}
	s.depth = pos
	return nil
}

// setDepth brings every sequence to d tokens: trimming is free, so a
// cache holding more is cut back; one holding less is extended from where
// it stands rather than refilled from zero.
func (s *session) setDepth(nSeq, d int) error {
	switch {
	case s.depth == d:
		return nil
	case s.depth > d:
		if err := s.c.Trim(d); err == nil {
			s.depth = d
			return nil
		}
		s.c.Clear()
		s.depth = 0
	case s.depth < 0:
		s.c.Clear()
		s.depth = 0
	}
	if err := s.c.Prefill(nSeq, d-s.depth, s.depth); err != nil {
		s.depth = -1
		return err
	}
	s.depth = d
	return nil
}

func (s *session) stopping() bool { return s.stop != nil && s.stop() }

// beginRep readies repetition r of a test: it stops if asked to (after
// the first: a stopped test has no record), and brings the cache to the
// test's depth, outside the timing.
func (s *session) beginRep(p point.Point, r int) error {
	if r > 0 && s.stopping() {
		return halt.ErrStopped
	}
	if s.progress != nil { // formatted only when someone listens
		s.progress(fmt.Sprintf("repetition %d", r+1))
	}
	return s.setDepth(p.Parallel, p.NDepth)
}

// prompt is the pp test: n_prompt tokens per sequence decoded in n_batch
// chunks and synchronised once. TTFT is its duration: the first generated
// token's logits are ready when it ends. The last repetition's tokens stay
// in the cache, so the next, deeper test need not fill them again.
func (s *session) prompt(p point.Point) (*record.Record, error) {
	rec, ns, err := s.timed(p, func(r int) error {
		if err := s.c.Prefill(p.Parallel, p.NPrompt, p.NDepth); err != nil {
			return fmt.Errorf("pp%d repetition %d: %w", p.NPrompt, r+1, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rec.TTFT = stats.Latencies(ns)
	return rec, nil
}

// timed repeats a test whose repetition rep runs as one timed block (pp,
// pp+tg) until there are enough, and sums them up. Each repetition
// starts at the test's depth; its tokens stay in the cache after.
func (s *session) timed(p point.Point, rep func(r int) error) (*record.Record, []float64, error) {
	ns := make([]float64, 0, p.MaxReps)
	s.reps = s.reps[:0]
	reps := s.repetitions(p, p.Parallel*testTokens(p))
	for r := 0; !reps.enough(ns) && !reps.spent(len(ns), 0); r++ {
		if err := s.beginRep(p, r); err != nil {
			return nil, nil, err
		}
		s.depth = -1
		t0 := time.Now()
		if err := rep(r); err != nil {
			return nil, nil, err
		}
		t1 := time.Now()
		ns = append(ns, float64(t1.Sub(t0).Nanoseconds()))
		s.reps = append(s.reps, [2]time.Time{t0, t1})
		s.depth = p.NDepth + testTokens(p)
	}
	return reps.figures(ns), ns, nil
}

// generate is the tg test: n_gen steps of one token per sequence, each
// decoded and synchronised on its own; every step's time is an
// inter-token latency.
func (s *session) generate(p point.Point, smp *engine.SamplerSet, sampling string) (*record.Record, error) {
	ns := make([]float64, 0, max(p.Reps, p.MaxReps))
	steps := make([]float64, 0, max(p.Reps, point.MinAutoReps)*p.NGen)
	ends := make([]int64, p.NGen+1)
	s.reps = s.reps[:0]
	reps := s.repetitions(p, p.Parallel*p.NGen)
	for r := 0; !reps.enough(ns) && !reps.spent(len(ns), 0); r++ {
		if err := s.beginRep(p, r); err != nil {
			return nil, err
		}
		if smp != nil {
			smp.Reset()
			s.c.SeedTokens(p.Parallel)
		}
		s.depth = -1
		t0 := time.Now()
		n, err := s.decode(p, smp, ends, reps)
		if err != nil {
			return nil, fmt.Errorf("tg%d repetition %d step %d: %w", p.NGen, r+1, n+1, err)
		}
		for i := 1; i <= n; i++ {
			steps = append(steps, float64(ends[i]-ends[i-1]))
		}
		// A repetition cut at the budget stands for the whole at its
		// rate: its time is scaled to n_gen steps.
		ns = append(ns, float64(ends[n]-ends[0])*float64(p.NGen)/float64(n))
		s.reps = append(s.reps, [2]time.Time{t0, t0.Add(time.Duration(ends[n] - ends[0]))})
		s.depth = p.NDepth + n
	}
	rec := reps.figures(ns)
	rec.Sampling = sampling
	rec.ITL = stats.Latencies(steps)
	rec.DriftPct = drift(steps)
	return rec, nil
}

// decode runs one repetition's n_gen steps, and returns how many ran: all
// of them, or under a budget those that ran before it was spent (at
// least one), a step at a time.
func (s *session) decode(p point.Point, smp *engine.SamplerSet, ends []int64, reps *repetitions) (int, error) {
	if s.budget == 0 {
		return s.c.Generate(p.Parallel, p.NDepth, p.NGen, smp, ends)
	}
	var one [2]int64
	for n := 0; n < p.NGen; n++ {
		if reps.spent(0, n) {
			return n, nil
		}
		if _, err := s.c.Generate(p.Parallel, p.NDepth+n, 1, smp, one[:]); err != nil {
			return n, err
		}
		if n == 0 {
			ends[0] = one[0]
		}
		ends[n+1] = one[1]
	}
	return p.NGen, nil
}

// promptGen is the pp+tg test (-pg): the prompt, then the generation,
// timed together as llama-bench times them; its t/s counts both.
func (s *session) promptGen(p point.Point) (*record.Record, error) {
	ends := make([]int64, p.NGen+1)
	rec, _, err := s.timed(p, func(r int) error {
		if err := s.c.Prefill(p.Parallel, p.NPrompt, p.NDepth); err != nil {
			return fmt.Errorf("%s repetition %d: %w", p.TestName(), r+1, err)
		}
		if done, err := s.c.Generate(p.Parallel, p.NDepth+p.NPrompt, p.NGen, nil, ends); err != nil {
			return fmt.Errorf("%s repetition %d step %d: %w", p.TestName(), r+1, done+1, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rec.Sampling = "none"
	return rec, nil
}

// testTokens are the tokens one sequence handles in one repetition of a
// one-test point: its prompt, its generation, or both (pp+tg).
func testTokens(p point.Point) int {
	if p.Combined {
		return p.NPrompt + p.NGen
	}
	return max(p.NPrompt, p.NGen)
}

// repetitions decides when a test has enough repetitions (point.Enough)
// and marks its record with how many it took and whether an adaptive
// target was met.
type repetitions struct {
	p      point.Point
	tokens int
	start  time.Time
	met    bool
	cpu    host.CPUCounters // the machine's counters as the test began
	budget time.Duration    // the session's (0: none)
	cut    bool             // the budget ended the test early
}

func (s *session) repetitions(p point.Point, tokens int) *repetitions {
	return &repetitions{p: p, tokens: tokens, start: time.Now(), cpu: host.ReadCPUCounters("/", "self"), budget: s.budget}
}

// spent says whether the budget is spent, with reps repetitions and
// steps decode steps of the current one done: never before the first
// of either.
func (r *repetitions) spent(reps, steps int) bool {
	if r.budget == 0 || reps+steps == 0 || time.Since(r.start) < r.budget {
		return false
	}
	r.cut = true
	return true
}

// enough is asked before each repetition, with the durations so far.
func (r *repetitions) enough(ns []float64) bool {
	ts := make([]float64, len(ns))
	for i, v := range ns {
		ts[i] = float64(r.tokens) * 1e9 / v
	}
	done, met := r.p.Enough(ts, time.Since(r.start))
	r.met = met
	return done
}

// mark records the repetitions taken and, for an adaptive count, the
// target and whether it was met: a record that missed it is never
// presented as precise. It also records what else the machine did
// meanwhile and the outlying repetitions.
func (r *repetitions) mark(rec *record.Record, ns []float64, out []int) {
	noise := host.NoiseBetween(r.cpu, host.ReadCPUCounters("/", "self"))
	noise.Outliers, noise.OutliersDropped = out, r.p.DropOutliers && len(out) > 0
	if r.cut {
		// First: it says what the rate is, before how busy the machine was.
		noise.Warnings = slices.Insert(noise.Warnings, 0, fmt.Sprintf("cut at %s, no warm-up: threads past this machine's %d cores wait for a core at every step; "+
			"the rate is that of the repetitions and steps done, and shows the oversubscription, not the machine", r.budget, runtime.NumCPU()))
	}
	if len(noise.Outliers) > 0 {
		noise.Warnings = append(noise.Warnings, fmt.Sprintf("%d of %d repetitions lie beyond 3 robust sigmas of the median (%v)%s",
			len(noise.Outliers), len(ns), noise.Outliers, map[bool]string{true: ": left out (--drop-outliers)", false: ": kept; --drop-outliers leaves them out"}[r.p.DropOutliers]))
	}
	if w := dragged(rec.SamplesTs); w != "" {
		noise.Warnings = append(noise.Warnings, w)
	}
	if w := rec.Unsteady(); w != "" {
		noise.Warnings = append(noise.Warnings, w)
	}
	noise.Quiet = len(noise.Warnings) == 0
	rec.Noise = &noise
	rec.Reps = len(rec.SamplesTs)
	if r.p.Reps == point.AutoReps {
		met := r.met
		rec.CITarget, rec.CITargetMet = r.p.TargetCI, &met
	}
}

// figures are the test's record from its repetition times, without the
// outlying ones if the point asks (they are reported either way).
func (r *repetitions) figures(ns []float64) *record.Record {
	rec := rates(ns, r.tokens, r.p.Parallel)
	out := outliers(rec.SamplesTs)
	if r.p.DropOutliers && len(out) > 0 {
		kept := make([]float64, 0, len(ns))
		for i, v := range ns {
			if !slices.Contains(out, i) {
				kept = append(kept, v)
			}
		}
		rec = rates(kept, r.tokens, r.p.Parallel)
	}
	r.mark(rec, ns, out)
	return rec
}

// minOutlierReps is the fewest repetitions from which one can be called
// an outlier: with fewer, the median and MAD are the samples themselves.
const minOutlierReps = 5

// outliers are the indices of the rates more than 3 robust sigmas (MAD)
// from their median, with at least minOutlierReps repetitions.
func outliers(ts []float64) []int {
	if len(ts) < minOutlierReps {
		return nil
	}
	med, mad := stats.Median(ts), stats.MAD(ts)
	var out []int
	for i, v := range ts {
		if mad > 0 && math.Abs(v-med) > 3*mad {
			out = append(out, i)
		}
	}
	return out
}

// dragged says, from three repetitions on, when the slowest one pulls the
// mean down by more than the 95% CI of the others' mean and by more than
// dragFloor: one repetition, not the machine's rate, then sets the
// figure. (Too few repetitions for a robust outlier still show one
// slower by far; the floor keeps a few percent of run-to-run noise
// between otherwise identical repetitions from being called one.)
// dragFloor is the least drag called one: 5% of the mean.
const dragFloor = 0.05

func dragged(ts []float64) string {
	if len(ts) < 3 {
		return ""
	}
	slow := slices.Index(ts, slices.Min(ts))
	rest := slices.Delete(slices.Clone(ts), slow, slow+1)
	all, others := stats.Summarize(ts), stats.Summarize(rest)
	drag := others.Mean - all.Mean
	if drag <= max(others.CI95, dragFloor*others.Mean) {
		return ""
	}
	return fmt.Sprintf("repetition %d (%.2f t/s) pulls the mean down %.1f%%, beyond the others' ±%.1f%%: rerun, or use -r auto", slow, ts[slow], 100*drag/others.Mean, 100*others.CI95/others.Mean)
}

// rates turns repetition times into llama-bench's figures and ours.
func rates(ns []float64, tokens, parallel int) *record.Record {
	r := &record.Record{}
	r.SetRates(ns, tokens, parallel)
	return r
}

// drift compares the decode rate of the last quarter of the steps with the
// first quarter's, in percent (negative: slowing down, as a GPU that
// throttles as it heats). Nil with too few steps to say.
func drift(steps []float64) *float64 {
	q := len(steps) / 4
	if q < 4 {
		return nil
	}
	var first, last float64
	for i := 0; i < q; i++ {
		first += steps[i]
		last += steps[len(steps)-q+i]
	}
	d := 100 * (first/last - 1)
	return &d
}
