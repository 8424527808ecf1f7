package load

import (
	"context"
	"errors"
	"math"
	"slices"
)

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
