package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/tokbench/tokbench/roofline"
)

// Trial is one load tried by a capacity search.
type Trial struct {
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	Summary     Figures `json:"summary"`
	Pass        bool    `json:"pass"`
	Why         string  `json:"why"`               // the SLOs missed, or why it could not run
	Missed      []SLO   `json:"-"`                 // the SLOs missed
	NotRun      bool    `json:"not_run,omitempty"` // the load could not run (its context did not fit)
	// Cut says why the probe stopped before its last request: an SLO
	// already certain to be missed (judged, failed), or the search's end
	// (NotJudged).
	Cut       string `json:"cut,omitempty"`
	NotJudged bool   `json:"not_judged,omitempty"`
	// When it ran, for telemetry.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// CapacityResult is the largest load that met every SLO.
type CapacityResult struct {
	Concurrency int     `json:"sustainable_concurrency,omitempty"` // closed loop
	Rate        float64 `json:"sustainable_rate,omitempty"`        // open loop, requests per second
	PerUserTs   float64 `json:"per_user_ts_p50"`
	OutputTps   float64 `json:"output_ts"`
	BoundBy     string  `json:"bound_by"`
	// Stopped says why the search ended before it converged (interrupted,
	// --max-time, saturation): the answer is then the best so far, a
	// lower bound.
	Stopped string `json:"stopped,omitempty"`
	// Deciding is the probe that bound the search (the first that failed;
	// the largest, if none did); Roofline is its decode against the
	// hardware's ceiling, where the caller knows one.
	Deciding *Trial             `json:"deciding,omitempty"`
	Roofline *roofline.Analysis `json:"roofline,omitempty"`
	Trials   []Trial            `json:"probes"`
	Slots    int                `json:"slots,omitempty"` // open loop: the server's slots
}

// CapacityOptions bound the search.
type CapacityOptions struct {
	MaxConcurrency    int     // closed loop: largest concurrency tried
	RequestsPerClient int     // closed loop: requests per client in a probe
	Slots             int     // open loop (Slots > 0): the server's slots
	MaxRate           float64 // open loop: largest rate tried (requests per second)
	Requests          int     // open loop: requests per probe
	Burstiness        float64 // open loop: of the arrivals (default 1, Poisson)
	Seed              uint64
	Guards            Guards
	Clock             clock // nil: the real one
	// MaxTime bounds the whole search (0: none): no probe starts that the
	// last one's pace says cannot finish in it, and one running at the
	// limit is cut; the answer is the best so far.
	MaxTime time.Duration
	// KeepRaising turns off the saturation stop: by default the search
	// stops raising the load once a doubling gains under SaturationGain
	// output t/s while the latency climbs (guidellm's over-saturation
	// stop): past that point more load only queues.
	KeepRaising bool
	// Judged, if set, is given each trial as soon as it is judged, with
	// the search's outlook; an error ends the search.
	Judged func(Trial, Outlook) error
}

// saturationGain is the output t/s a doubled load must add (as a share)
// for the search to keep raising it; saturationLatency, the growth of
// the median end-to-end latency that, with too little gain, marks the
// server saturated.
const (
	saturationGain    = 0.10
	saturationLatency = 1.5
)

// Outlook is where a search stands after a probe.
type Outlook struct {
	Trials  int           // judged so far
	Left    int           // at most this many more
	Elapsed time.Duration // since the search began
	Last    time.Duration // the last probe's run time
}

// ETA is the time the probes left would take at the last one's pace.
func (o Outlook) ETA() time.Duration { return time.Duration(o.Left) * o.Last }

// Server makes an engine with slots sequences for one probe; its closer
// frees it. An error (a context that does not fit) fails the probe.
type Server func(slots int) (Engine, func(), error)

// errSearchEnd ends a search early with the best answer so far.
var errSearchEnd = errors.New("search ended")

// Capacity finds the largest load whose run meets every SLO: closed loop,
// the concurrency (doubling from 1 until a probe fails, then bisecting
// between the last pass and the first failure); open loop (o.Slots > 0),
// the arrival rate (doubling from MaxRate/16, then bisecting to within 5%).
// Each probe leaves out its first wave (as many requests as slots,
// started on an empty server) so that what is judged is the steady state,
// and stops as soon as an SLO is certain to be missed. An interruption
// (ctx), MaxTime or saturation ends the search early: the result says so
// (Stopped) and holds every probe judged.
func Capacity(ctx context.Context, srv Server, w Workload, slos []SLO, o CapacityOptions) (CapacityResult, error) {
	if len(slos) == 0 {
		return CapacityResult{}, fmt.Errorf("capacity needs at least one SLO (--slo ttft_p99=2s,itl_p99=60ms)")
	}
	s := &search{o: o, srv: srv, w: w, slos: slos, open: o.Slots > 0, clock: clockOr(o.Clock), tried: map[float64]*Trial{}}
	s.start = s.clock.Now()
	s.first, s.top = 1, float64(o.MaxConcurrency)
	if s.open {
		s.first, s.top = o.MaxRate/16, o.MaxRate
	}
	lo, hi, err := s.bracket(ctx)
	if err == nil {
		lo, hi, err = s.bisect(ctx, lo, hi)
	}
	if err != nil && !errors.Is(err, errSearchEnd) {
		return CapacityResult{}, err
	}
	return s.result(lo, hi), nil
}

// search is one capacity search's state.
type search struct {
	o          CapacityOptions
	srv        Server
	w          Workload
	slos       []SLO
	open       bool
	clock      clock
	start      time.Time
	first, top float64
	tried      map[float64]*Trial
	judged     int
	last       time.Duration
	cut        []Trial // probes the search's end cut short, not judged
	stopped    string
	saturated  string
}

// bracket doubles the load from the first until a probe fails (hi), the
// top is reached, or the server saturates.
func (s *search) bracket(ctx context.Context) (lo, hi float64, err error) {
	var prev *Trial
	for x := s.first; x <= s.top; x *= 2 {
		p, err := s.probe(ctx, x, lo, 0)
		if err != nil {
			return lo, 0, err
		}
		if !p.Pass {
			return lo, x, nil
		}
		lo = x
		if why := s.saturation(prev, p); why != "" {
			s.saturated, s.stopped = why, "saturated"
			return lo, 0, errSearchEnd
		}
		prev = p
	}
	if lo < s.top {
		p, err := s.probe(ctx, s.top, lo, 0)
		if err != nil {
			return lo, 0, err
		}
		if !p.Pass {
			return lo, s.top, nil
		}
		lo = s.top
	}
	return lo, 0, nil
}

// bisect narrows [lo, hi) to the search's resolution: one sequence
// closed loop, 5% open loop.
func (s *search) bisect(ctx context.Context, lo, hi float64) (float64, float64, error) {
	for hi > 0 && !s.converged(lo, hi) {
		mid := (lo + hi) / 2
		if !s.open {
			mid = math.Floor(mid)
		} else if lo == 0 {
			mid = hi / 2
		}
		p, err := s.probe(ctx, mid, lo, hi)
		if err != nil {
			return lo, hi, err
		}
		if p.Pass {
			lo = mid
		} else {
			hi = mid
		}
		if s.open && lo == 0 && hi < s.first/64 {
			break // not even a trickle meets the SLOs
		}
	}
	return lo, hi, nil
}

func (s *search) converged(lo, hi float64) bool {
	if s.open {
		return hi <= lo*1.05
	}
	return hi-lo <= 1
}

// left is at most how many more probes the search needs from [lo, hi)
// (hi 0: still doubling).
func (s *search) left(lo, hi float64) int {
	steps := func(lo, hi float64) int {
		n := 0
		for ; hi > 0 && !s.converged(lo, hi); n++ {
			lo = (lo + hi) / 2
		}
		return n
	}
	if hi > 0 {
		return steps(lo, hi)
	}
	n, x := 0, max(lo, s.first/2)
	for x*2 <= s.top {
		x, n = x*2, n+1
	}
	if x < s.top {
		n++
	}
	return n + steps(s.top/2, s.top)
}

// saturation says why the server is saturated at p, a doubling of prev
// (both passed), or "" if it is not: the doubling added under
// saturationGain output t/s and the median latency grew by
// saturationLatency or more. Off with KeepRaising.
func (s *search) saturation(prev, p *Trial) string {
	if prev == nil || s.o.KeepRaising || prev.Summary.OutputTps <= 0 || prev.Summary.E2EMs.P50 <= 0 {
		return ""
	}
	gain := p.Summary.OutputTps/prev.Summary.OutputTps - 1
	lat := p.Summary.E2EMs.P50 / prev.Summary.E2EMs.P50
	if gain >= saturationGain || lat < saturationLatency {
		return ""
	}
	return fmt.Sprintf("saturated at %s: doubling the load from %s added %+.0f%% output t/s (%.1f to %.1f) while the median end-to-end latency grew %.1fx; more load only queues, so the search stopped raising it (--keep-raising to go on)",
		p.Load(), prev.Load(), 100*gain, prev.Summary.OutputTps, p.Summary.OutputTps, lat)
}

// Load is the probe's load in words: "8 sequences", "4.5 requests/s".
func (p *Trial) Load() string {
	if p.Concurrency == 0 {
		return fmt.Sprintf("%.3g requests/s", p.Rate)
	}
	return fmt.Sprintf("%d sequences", p.Concurrency)
}

// result sums the search up: the largest load that passed (lo), what
// bound it (the failure at hi, the memory, saturation, the search's
// end), and every probe.
func (s *search) result(lo, hi float64) CapacityResult {
	res := CapacityResult{Stopped: s.stopped}
	for _, p := range s.tried {
		res.Trials = append(res.Trials, *p)
	}
	res.Trials = append(res.Trials, s.cut...)
	sort.SliceStable(res.Trials, func(i, j int) bool {
		a, b := res.Trials[i], res.Trials[j]
		if a.Concurrency != b.Concurrency {
			return a.Concurrency < b.Concurrency
		}
		return a.Rate < b.Rate
	})
	if s.open {
		res.Rate, res.Slots = lo, s.o.Slots
	} else {
		res.Concurrency = int(lo)
	}
	if p := s.tried[lo]; p != nil {
		res.PerUserTs, res.OutputTps = p.Summary.PerUserTs.P50, p.Summary.OutputTps
	}
	at := fmt.Sprintf("%g sequences", hi)
	if s.open {
		at = fmt.Sprintf("%.3g requests/s", hi)
	}
	if d := s.tried[hi]; d != nil && d.Summary.Completed > 0 {
		res.Deciding = d
	} else if d := s.tried[lo]; d != nil {
		res.Deciding = d
	}
	switch f := s.tried[hi]; {
	case s.saturated != "":
		res.BoundBy = s.saturated
	case hi == 0 && s.stopped != "" && lo == 0:
		res.BoundBy = fmt.Sprintf("not known: the search stopped (%s) before any probe was judged", s.stopped)
	case hi == 0 && s.stopped != "":
		res.BoundBy = fmt.Sprintf("not known: the search stopped (%s) with every probe up to %g passing", s.stopped, lo)
	case hi == 0:
		res.BoundBy = fmt.Sprintf("not reached: every probe up to %g met the SLOs", s.top)
	case f.NotRun:
		res.BoundBy = "memory at " + at + ": " + f.Why
	case slices.ContainsFunc(f.Missed, func(s SLO) bool { return s.Metric.Decode() }):
		res.BoundBy = fmt.Sprintf("decode at %s: %s (each step reads the weights once plus every sequence's KV cache, and computes for all of them)", at, f.Why)
	default:
		res.BoundBy = fmt.Sprintf("prefill and queueing at %s: %s", at, f.Why)
	}
	if s.stopped != "" && s.saturated == "" {
		res.BoundBy += fmt.Sprintf("; the search stopped before converging (%s): the sustainable load is at least the one given", s.stopped)
	}
	return res
}

// RoundDuration keeps two or three significant digits of a duration.
func RoundDuration(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second)
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}

// runSeconds is the span from the first arrival to the last completion.
func runSeconds(outs []*Served) float64 {
	var first, last float64
	for i, o := range outs {
		if o.Status != StatusOK {
			continue
		}
		a := float64(o.arrived.UnixNano()) / 1e9
		e := a + o.E2EMs/1000
		if i == 0 || a < first || first == 0 {
			first = a
		}
		last = max(last, e)
	}
	return max(last-first, 1e-9)
}
