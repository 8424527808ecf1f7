package load

import (
	"fmt"
	"io"
	"time"
)

// Progress is an observer that shows a scenario's progress: a line every
// Every (5 s if zero) with the requests done, the output t/s since the
// last line, the queue and the time left at the pace so far.
type Progress struct {
	W        io.Writer
	Every    time.Duration
	Clock    clock // nil: the real one
	scenario string
	total    int // legitimate requests
	done     int
	tokens   int
	queue    int
	start    time.Time
	last     time.Time
	lastTok  int
}

// Begin starts a scenario of total legitimate requests.
func (p *Progress) Begin(scenario string, total int) {
	now := clockOr(p.Clock).Now()
	p.scenario, p.total, p.done, p.tokens, p.lastTok, p.start, p.last = scenario, total, 0, 0, 0, now, now
}

// Step counts the tokens a decode step gave and prints a line when one is due.
func (p *Progress) Step(s StepStats) {
	p.tokens += s.Produced
	p.queue = s.Queue
	now := clockOr(p.Clock).Now()
	every := p.Every
	if every == 0 {
		every = 5 * time.Second
	}
	if now.Sub(p.last) < every {
		return
	}
	tps := float64(p.tokens-p.lastTok) / now.Sub(p.last).Seconds()
	p.last, p.lastTok = now, p.tokens
	eta := "unknown"
	if p.done > 0 {
		eta = RoundDuration(time.Duration(float64(now.Sub(p.start)) * float64(p.total-p.done) / float64(p.done))).String()
	}
	fmt.Fprintf(p.W, "load [%s]: %d of %d requests done, %.1f output t/s, %d queued | %s so far, ETA %s\n",
		p.scenario, p.done, p.total, tps, p.queue, RoundDuration(now.Sub(p.start)), eta)
}

// Done counts a legitimate request that finished or was turned away.
func (p *Progress) Done(o *Served) {
	if !o.Abusive {
		p.done++
	}
}

func (p *Progress) Second(Second) {}

// End says the scenario is over, with its result's output t/s (the
// summary's own figure: one rate per run, not a second one of the
// progress's window); run nil: it gave no result.
func (p *Progress) End(run *Result) {
	d := clockOr(p.Clock).Now().Sub(p.start)
	if run == nil {
		fmt.Fprintf(p.W, "load [%s]: %d of %d requests done in %s\n", p.scenario, p.done, p.total, RoundDuration(d))
		return
	}
	fmt.Fprintf(p.W, "load [%s]: %d of %d requests done in %s, %.1f output t/s\n", p.scenario, p.done, p.total, RoundDuration(d), run.Summary.OutputTps)
}
