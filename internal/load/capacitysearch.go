package load

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// probe runs and judges one load x (cached), unless the search must end
// first. lo and hi are the bracket it is tried in, for the outlook.
func (s *search) probe(ctx context.Context, x, lo, hi float64) (*Trial, error) {
	if p, ok := s.tried[x]; ok {
		return p, nil
	}
	if err := s.mayStart(ctx); err != nil {
		return nil, err
	}
	p := &Trial{}
	s.tried[x] = p
	slots, reqs := int(x), []Request(nil)
	opts := Options{Concurrency: slots, Guards: s.o.Guards, Clock: s.o.Clock}
	if s.open {
		p.Rate, slots = x, s.o.Slots
		reqs = s.w.Generate(max(s.o.Requests, 2*slots), s.o.Seed)
		arrivals(reqs, x, cmp.Or(s.o.Burstiness, 1), s.o.Seed)
		opts.Concurrency = 0
	} else {
		p.Concurrency = slots
		reqs = s.w.Generate(slots*max(s.o.RequestsPerClient, 2), s.o.Seed)
	}
	opts.Slots = slots
	p.Start = s.clock.Now()
	eng, closeFn, err := s.srv(slots)
	if err != nil {
		p.Why, p.NotRun, p.End = err.Error(), true, p.Start
		return p, s.judged1(p, lo, hi)
	}
	defer closeFn()
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := &watch{s: s, cancel: cancel, steady: reqs[min(slots, len(reqs)):]}
	w.init()
	opts.Observer = w
	outs, _, overhead, err := run(pctx, eng, reqs, opts)
	p.End = s.clock.Now()
	if err != nil && ctx.Err() == nil {
		return nil, err
	}
	// An interruption may stop the engine mid-step (its error is the
	// interruption's): the probe is cut below.
	steady := outs[min(slots, len(outs)):]
	p.Summary = tally(steady, runSeconds(steady), overhead, s.slos)
	cause := context.Cause(pctx)
	switch {
	case ctx.Err() != nil:
		p.Cut, p.NotJudged, s.stopped = "interrupted", true, "interrupted"
	case errors.Is(cause, errMaxTime):
		p.Cut, p.NotJudged, s.stopped = "--max-time reached", true, fmt.Sprintf("--max-time %s reached", s.o.MaxTime)
	}
	if p.NotJudged {
		p.Why = fmt.Sprintf("cut (%s) after %d of %d requests: not judged", p.Cut, p.Summary.Completed, len(steady))
		delete(s.tried, x)
		s.cut = append(s.cut, *p)
		return nil, errSearchEnd
	}
	var missed []string
	for _, slo := range s.slos {
		if !p.Summary.SLOsMet[slo.String()] || slices.Contains(w.certain, slo) {
			p.Missed = append(p.Missed, slo)
			missed = append(missed, slo.String())
		}
	}
	sort.Strings(missed)
	p.Pass = len(missed) == 0 && p.Summary.Completed > 0
	if !p.Pass {
		p.Why = "missed " + strings.Join(missed, ", ")
	}
	if len(w.certain) > 0 {
		p.Cut = fmt.Sprintf("stopped after %d of %d requests: already certain to miss", p.Summary.Completed, len(steady))
	}
	return p, s.judged1(p, lo, hi)
}

// judged1 counts a judged probe and hands it on with the outlook.
func (s *search) judged1(p *Trial, lo, hi float64) error {
	s.judged++
	s.last = p.End.Sub(p.Start)
	if s.o.Judged == nil {
		return nil
	}
	x := cmp.Or(p.Rate, float64(p.Concurrency))
	if p.Pass {
		lo = x
	} else {
		hi = x
	}
	return s.o.Judged(*p, Outlook{Trials: s.judged, Left: s.left(lo, hi), Elapsed: s.clock.Now().Sub(s.start), Last: s.last})
}

// mayStart ends the search before a probe that cannot be run: the run
// was interrupted, or the last probe's pace says this one would not
// finish within MaxTime.
func (s *search) mayStart(ctx context.Context) error {
	if ctx.Err() != nil {
		s.stopped = "interrupted"
		return errSearchEnd
	}
	if s.o.MaxTime <= 0 {
		return nil
	}
	if used := s.clock.Now().Sub(s.start); used+s.last > s.o.MaxTime {
		s.stopped = fmt.Sprintf("--max-time %s: %s used, and the next probe would take about %s", s.o.MaxTime, RoundDuration(used), RoundDuration(s.last))
		return errSearchEnd
	}
	return nil
}

var (
	errMaxTime = errors.New("the search's --max-time is reached")
	errCertain = errors.New("an SLO is already certain to be missed")
)

// watch ends a capacity probe early: at the search's MaxTime, or as soon
// as one of its SLOs is certain to be missed. For a nearest-rank
// percentile p of n values, that is when more than n - ceil(p·n/100)
// of them are already over the limit, whatever the rest turn out to be;
// n counts every value the probe's steady requests can give, so the
// test errs on the side of running on.
type watch struct {
	s       *search
	cancel  context.CancelCauseFunc
	steady  []Request
	ids     map[int]bool
	n, over []int // per SLO: values expected, values over the limit
	certain []SLO
}

func (w *watch) init() {
	w.ids = make(map[int]bool, len(w.steady))
	w.n, w.over = make([]int, len(w.s.slos)), make([]int, len(w.s.slos))
	itls := 0
	for _, r := range w.steady {
		w.ids[r.ID] = true
		itls += max(r.Output-1, 0)
	}
	for i, slo := range w.s.slos {
		w.n[i] = len(w.steady)
		if slo.Metric == ITL {
			w.n[i] = itls
		}
	}
}

func (w *watch) Step(StepStats) {
	if mt := w.s.o.MaxTime; mt > 0 && w.s.clock.Now().Sub(w.s.start) > mt {
		w.cancel(errMaxTime)
	}
}

func (w *watch) Done(o *Served) {
	if !w.ids[o.ID] || o.Status != StatusOK {
		return
	}
	for i, slo := range w.s.slos {
		limit := float64(slo.Limit.Microseconds()) / 1000
		switch slo.Metric {
		case ITL:
			for _, v := range o.ITLMs {
				if v > limit {
					w.over[i]++
				}
			}
		case TTFT:
			if o.TTFTMs > limit {
				w.over[i]++
			}
		default:
			if o.E2EMs > limit {
				w.over[i]++
			}
		}
		allowed := w.n[i] - int(math.Ceil(slo.Percentile*float64(w.n[i])/100))
		if w.over[i] > allowed && !slices.Contains(w.certain, slo) {
			w.certain = append(w.certain, slo)
			w.cancel(errCertain)
		}
	}
}

func (w *watch) Second(Second) {}
