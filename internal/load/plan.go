package load

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
)

// Scenario is one run of a load test.
type Scenario struct {
	Name     string    `json:"scenario"`
	Requests []Request `json:"-"`
	Options  Options   `json:"-"`
}

// arrival is an open loop's arrival process (Rate 0: closed loop).
type arrival struct {
	Rate, Burstiness float64
}

// scenarios lays out the runs of a load test: one, or with abuse three that
// measure the guards' effect on the legitimate traffic (the same requests
// from the same clients each time): without the abusive clients, with
// them, and with them against guards g (if g has none: caps at the
// largest legitimate prompt and output, and fair scheduling).
func scenarios(w Workload, n int, seed uint64, o Options, arr arrival, a Abuse, g Guards) []Scenario {
	legit := w.Generate(n, seed)
	if arr.Rate > 0 {
		arrivals(legit, arr.Rate, arr.Burstiness, seed)
	}
	if a.Fraction == 0 {
		o.Guards = g
		return []Scenario{{Name: "load", Requests: legit, Options: o}}
	}
	var abusive []Request
	clean := o
	if arr.Rate > 0 {
		share := a.Fraction / (1 - a.Fraction)
		abusive = a.Generate(w, int(math.Ceil(float64(n)*share)), n, seed)
		arrivals(abusive, arr.Rate*share, arr.Burstiness, seed+1)
		o.AbusiveClients = max(1, int(math.Round(share*float64(cmp.Or(o.Clients, o.Slots)))))
	} else {
		// Closed loop: that fraction of the clients is abusive, and they
		// send until the legitimate clients are done.
		o.AbusiveClients = min(max(1, int(math.Round(a.Fraction*float64(o.Concurrency)))), o.Concurrency-1)
		clean.Concurrency = o.Concurrency - o.AbusiveClients
		abusive = a.Generate(w, n, n, seed)
	}
	if !g.Any() {
		for _, r := range legit {
			g.MaxPrompt, g.MaxOutput = max(g.MaxPrompt, r.Prompt), max(g.MaxOutput, r.Output)
		}
		g.Fair = true
	}
	guarded := o
	guarded.Guards = g
	all := append(legit[:len(legit):len(legit)], abusive...)
	return []Scenario{
		{Name: "no abuse", Requests: legit, Options: clean},
		{Name: "abuse", Requests: all, Options: o},
		{Name: "abuse + guards", Requests: all, Options: guarded},
	}
}

// split separates the legitimate requests' outcomes from the abusive ones'.
func split(outs []*Served) (legit, abusive []*Served) {
	for _, o := range outs {
		if o.Abusive {
			abusive = append(abusive, o)
		} else {
			legit = append(legit, o)
		}
	}
	return legit, abusive
}

// Abuse is what abusive clients send: requests of the workload with the
// prompt (long-prompt) or the output (long-output) stretched to Tokens.
type Abuse struct {
	Fraction float64 `json:"fraction"` // of the clients (closed loop) or of the requests (open loop)
	Shape    string  `json:"shape"`
	Tokens   int     `json:"tokens"`
}

// Check says what is wrong with the abuse settings.
func (a Abuse) Check() error {
	if a.Fraction < 0 || a.Fraction >= 1 {
		return fmt.Errorf("abusive fraction %g: use 0 to below 1", a.Fraction)
	}
	if a.Shape != "long-prompt" && a.Shape != "long-output" {
		return fmt.Errorf("abusive shape %q: use long-prompt or long-output", a.Shape)
	}
	if a.Tokens < 1 {
		return fmt.Errorf("abusive tokens %d: must be at least 1", a.Tokens)
	}
	return nil
}

// Generate makes n abusive requests, numbered from first, each a
// conversation of its own.
func (a Abuse) Generate(w Workload, n, first int, seed uint64) []Request {
	r := rand.New(rand.NewPCG(seed, 0xA0761D6478BD642F))
	out := make([]Request, n)
	for i := range out {
		p, o := w.sample(r, i)
		if a.Shape == "long-prompt" {
			p = a.Tokens
		} else {
			o = a.Tokens
		}
		out[i] = Request{ID: first + i, Conv: i, Prompt: p, Output: o, Abusive: true}
	}
	return out
}
