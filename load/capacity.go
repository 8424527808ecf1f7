package load

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
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
	Clock             Clock // nil: the real one
}

// Server makes an engine with slots sequences for one probe; its closer
// frees it. An error (a context that does not fit) fails the probe.
type Server func(slots int) (Engine, func(), error)

// Capacity finds the largest load whose run meets every SLO: closed loop,
// the concurrency (doubling from 1 until a probe fails, then bisecting
// between the last pass and the first failure); open loop (o.Slots > 0),
// the arrival rate (doubling from MaxRate/16, then bisecting to within 5%).
// Each probe leaves out its first wave (as many requests as slots,
// started on an empty server) so that what is judged is the steady state.
func Capacity(ctx context.Context, srv Server, w Workload, slos []SLO, o CapacityOptions) (CapacityResult, error) {
	var res CapacityResult
	if len(slos) == 0 {
		return res, fmt.Errorf("capacity needs at least one SLO (--slo ttft_p99=2s,itl_p99=60ms)")
	}
	open := o.Slots > 0
	tried := map[float64]*Trial{}
	probe := func(x float64) (*Trial, error) {
		if p, ok := tried[x]; ok {
			return p, nil
		}
		p := &Trial{}
		tried[x] = p
		slots, reqs := int(x), []Request(nil)
		opts := Options{Concurrency: slots, Guards: o.Guards, Clock: o.Clock}
		if open {
			p.Rate, slots = x, o.Slots
			reqs = w.Generate(max(o.Requests, 2*slots), o.Seed)
			Arrivals(reqs, x, cmp.Or(o.Burstiness, 1), o.Seed)
			opts.Concurrency = 0
		} else {
			p.Concurrency = slots
			reqs = w.Generate(slots*max(o.RequestsPerClient, 2), o.Seed)
		}
		opts.Slots = slots
		eng, closeFn, err := srv(slots)
		if err != nil {
			p.Why, p.NotRun = err.Error(), true
			return p, nil
		}
		defer closeFn()
		clock := clockOr(o.Clock)
		p.Start = clock.Now()
		outs, _, overhead, err := Run(ctx, eng, reqs, opts)
		p.End = clock.Now()
		if err != nil {
			return nil, err
		}
		steady := outs[min(slots, len(outs)):]
		p.Summary = Tally(steady, runSeconds(steady), overhead, slos)
		var missed []string
		for _, slo := range slos {
			if !p.Summary.SLOsMet[slo.String()] {
				p.Missed = append(p.Missed, slo)
				missed = append(missed, slo.String())
			}
		}
		sort.Strings(missed)
		p.Pass = len(missed) == 0 && p.Summary.Completed > 0
		if !p.Pass {
			p.Why = "missed " + strings.Join(missed, ", ")
		}
		return p, nil
	}
	first, top, done := 1.0, float64(o.MaxConcurrency), func(lo, hi float64) bool { return hi-lo <= 1 }
	if open {
		first, top, done = o.MaxRate/16, o.MaxRate, func(lo, hi float64) bool { return hi <= lo*1.05 }
	}
	lo, hi := 0.0, 0.0
	for x := first; x <= top; x *= 2 {
		p, err := probe(x)
		if err != nil {
			return res, err
		}
		if !p.Pass {
			hi = x
			break
		}
		lo = x
	}
	if hi == 0 && lo < top {
		p, err := probe(top)
		if err != nil {
			return res, err
		}
		if p.Pass {
			lo = top
		} else {
			hi = top
		}
	}
	for hi > 0 && !done(lo, hi) && ctx.Err() == nil {
		mid := (lo + hi) / 2
		if !open {
			mid = math.Floor(mid)
		} else if lo == 0 {
			mid = hi / 2
		}
		p, err := probe(mid)
		if err != nil {
			return res, err
		}
		if p.Pass {
			lo = mid
		} else {
			hi = mid
		}
		if open && lo == 0 && hi < first/64 {
			break // not even a trickle meets the SLOs
		}
	}
	for _, p := range tried {
		res.Trials = append(res.Trials, *p)
	}
	sort.Slice(res.Trials, func(i, j int) bool {
		a, b := res.Trials[i], res.Trials[j]
		if a.Concurrency != b.Concurrency {
			return a.Concurrency < b.Concurrency
		}
		return a.Rate < b.Rate
	})
	if open {
		res.Rate, res.Slots = lo, o.Slots
	} else {
		res.Concurrency = int(lo)
	}
	if p := tried[lo]; p != nil {
		res.PerUserTs, res.OutputTps = p.Summary.PerUserTs.P50, p.Summary.OutputTps
	}
	at := fmt.Sprintf("%g sequences", hi)
	if open {
		at = fmt.Sprintf("%.3g requests/s", hi)
	}
	if d := tried[hi]; d != nil && d.Summary.Completed > 0 {
		res.Deciding = d
	} else if d := tried[lo]; d != nil {
		res.Deciding = d
	}
	switch f := tried[hi]; {
	case hi == 0:
		res.BoundBy = fmt.Sprintf("not reached: every probe up to %g met the SLOs", top)
	case f.NotRun:
		res.BoundBy = "memory at " + at + ": " + f.Why
	case slices.ContainsFunc(f.Missed, func(s SLO) bool { return s.Metric.Decode() }):
		res.BoundBy = fmt.Sprintf("decode at %s: %s (each step reads the weights once plus every sequence's KV cache, and computes for all of them)", at, f.Why)
	default:
		res.BoundBy = fmt.Sprintf("prefill and queueing at %s: %s", at, f.Why)
	}
	return res, nil
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
