package load

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Probe is one concurrency tried by a capacity search.
type Probe struct {
	Concurrency int     `json:"concurrency"`
	Summary     Summary `json:"summary"`
	Pass        bool    `json:"pass"`
	Why         string  `json:"why"` // the SLOs missed, or why it could not run
}

// CapacityResult is the largest concurrency that met every SLO.
type CapacityResult struct {
	Concurrency int     `json:"sustainable_concurrency"`
	PerUserTs   float64 `json:"per_user_ts_p50"`
	OutputTps   float64 `json:"output_ts"`
	BoundBy     string  `json:"bound_by"`
	Probes      []Probe `json:"probes"`
}

// CapacityOptions bound the search.
type CapacityOptions struct {
	MaxConcurrency    int    // largest concurrency tried
	RequestsPerClient int    // requests per client in a probe
	Seed              uint64 // request sequence
	MaxPrompt         int
	MaxOutput         int
}

// Server makes an engine with slots sequences for one probe; its closer
// frees it. An error (a context that does not fit) fails the probe.
type Server func(slots int) (Engine, func(), error)

// Capacity finds the largest closed-loop concurrency whose run meets
// every SLO: doubling from 1 until a probe fails, then bisecting between
// the last pass and the first failure. Each probe runs RequestsPerClient
// requests per client and leaves out the first wave (one request per
// client, started together from an empty server) so that what is judged
// is the steady state.
func Capacity(ctx context.Context, srv Server, w Workload, slos []SLO, o CapacityOptions) (CapacityResult, error) {
	var res CapacityResult
	if len(slos) == 0 {
		return res, fmt.Errorf("capacity needs at least one SLO (--slo ttft_p99=2s,itl_p99=60ms)")
	}
	tried := map[int]*Probe{}
	probe := func(c int) (*Probe, error) {
		if p, ok := tried[c]; ok {
			return p, nil
		}
		p := &Probe{Concurrency: c}
		tried[c] = p
		eng, closeFn, err := srv(c)
		if err != nil {
			p.Why = err.Error()
			return p, nil
		}
		defer closeFn()
		reqs := w.Generate(c*max(o.RequestsPerClient, 2), o.Seed)
		outs, _, overhead, err := Run(ctx, eng, reqs, Options{Slots: c, Concurrency: c, MaxPrompt: o.MaxPrompt, MaxOutput: o.MaxOutput})
		if err != nil {
			return nil, err
		}
		steady := outs[min(c, len(outs)):]
		p.Summary = Summarize(steady, runSeconds(steady), overhead, slos)
		var missed []string
		for k, ok := range p.Summary.SLOsMet {
			if !ok {
				missed = append(missed, k)
			}
		}
		sort.Strings(missed)
		p.Pass = len(missed) == 0 && p.Summary.Completed > 0
		if !p.Pass {
			p.Why = "missed " + strings.Join(missed, ", ")
		}
		return p, nil
	}
	lo, hi := 0, 0
	for c := 1; c <= o.MaxConcurrency; c *= 2 {
		p, err := probe(c)
		if err != nil {
			return res, err
		}
		if !p.Pass {
			hi = c
			break
		}
		lo = c
	}
	if hi == 0 && lo < o.MaxConcurrency {
		p, err := probe(o.MaxConcurrency)
		if err != nil {
			return res, err
		}
		if p.Pass {
			lo = o.MaxConcurrency
		} else {
			hi = o.MaxConcurrency
		}
	}
	for hi > 0 && hi-lo > 1 {
		mid := (lo + hi) / 2
		p, err := probe(mid)
		if err != nil {
			return res, err
		}
		if p.Pass {
			lo = mid
		} else {
			hi = mid
		}
	}
	for _, p := range tried {
		res.Probes = append(res.Probes, *p)
	}
	sort.Slice(res.Probes, func(i, j int) bool { return res.Probes[i].Concurrency < res.Probes[j].Concurrency })
	res.Concurrency = lo
	if p := tried[lo]; p != nil {
		res.PerUserTs, res.OutputTps = p.Summary.PerUserTs.P50, p.Summary.OutputTps
	}
	switch f := tried[hi]; {
	case hi == 0:
		res.BoundBy = fmt.Sprintf("not reached: every probe up to %d met the SLOs", o.MaxConcurrency)
	case f.Why != "" && !strings.HasPrefix(f.Why, "missed"):
		res.BoundBy = "memory at " + fmt.Sprint(hi) + " sequences: " + f.Why
	case strings.Contains(f.Why, "itl") || strings.Contains(f.Why, "e2e"):
		res.BoundBy = fmt.Sprintf("decode at %d sequences: %s (each step reads the weights once plus every sequence's KV cache, and computes for all of them)", hi, f.Why)
	default:
		res.BoundBy = fmt.Sprintf("prefill and queueing at %d sequences: %s", hi, f.Why)
	}
	return res, nil
}

// runSeconds is the span from the first arrival to the last completion.
func runSeconds(outs []*Outcome) float64 {
	var first, last float64
	for i, o := range outs {
		if o.Status != "ok" {
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
