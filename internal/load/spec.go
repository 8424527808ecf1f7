package load

import (
	"cmp"
	"os"
	"strings"

	"github.com/tokbench/tokbench/point"
)

// LookupWorkload finds a workload by preset name or YAML file, with the
// prompt, output or turns distributions given (non-empty) in place of its
// own. Errors are the user's to fix (point.InputError).
func LookupWorkload(name, prompt, output, turns string) (Workload, error) {
	w, ok := presets[name]
	if !ok {
		if _, err := os.Stat(name); err != nil {
			return w, point.Inputf("--workload %q: use one of %s, or a YAML file (name, prompt, output, turns, tests)", name, strings.Join(PresetNames(), ", "))
		}
		var err error
		if w, err = readWorkload(name); err != nil {
			return w, &point.InputError{Err: err}
		}
	}
	for _, o := range []struct {
		flag, value string
		dst         *dist
	}{{"prompt-len", prompt, &w.Prompt}, {"output-len", output, &w.Output}, {"turns", turns, &w.Turns}} {
		if o.value == "" {
			continue
		}
		d, err := parseDist(o.value)
		if err != nil {
			return w, point.Inputf("--%s %v", o.flag, err)
		}
		*o.dst, w.Name = d, w.Name+"+"+strings.TrimSuffix(o.flag, "-len")
		if o.flag != "turns" {
			w.Tests = nil
		}
	}
	if err := w.Check(); err != nil {
		return w, &point.InputError{Err: err}
	}
	return w, nil
}

// Check says what is wrong with the guards, if anything.
func (g Guards) Check() error {
	if g.MaxPrompt < 0 || g.MaxOutput < 0 || g.ClientBudget < 0 {
		return point.Inputf("--max-prompt, --max-output and --client-budget must be 0 (off) or positive")
	}
	return nil
}

// Spec is a load test as asked for: the workload, how many requests and
// how they arrive (a closed loop of Concurrency clients, or an open loop
// at Rate), the server's slots, abuse and guards.
type Spec struct {
	Workload    Workload
	Requests    int
	Concurrency int     // closed loop: clients, each with one request in flight
	Rate        float64 // open loop: requests per second (0: closed loop)
	Burstiness  float64 // open loop: of the arrivals
	Clients     int     // open loop: the clients requests come from (0: the slots)
	Slots       int     // 0: the concurrency, or 16 for an open loop
	Abuse       Abuse
	Guards      Guards
	Seed        uint64
	// trace, if set, replaces the workload and the arrivals: its requests
	// arrive open loop at their recorded times (the first Requests); Rate
	// is then its mean rate, for the results, and Concurrency must be 0.
	Trace *trace
}

// scenarios checks the spec and lays out its runs (see Scenarios).
func (s Spec) Scenarios() ([]Scenario, error) {
	if s.Trace != nil && s.Requests > 0 {
		return s.traceScenario()
	}
	switch {
	case s.Requests < 1 || s.Requests > 1_000_000:
		return nil, point.Inputf("--requests %d: use 1 to 1000000", s.Requests)
	case s.Rate < 0 || s.Burstiness <= 0:
		return nil, point.Inputf("--rate must be positive and --burstiness above 0")
	case s.Rate == 0 && s.Concurrency < 1:
		return nil, point.Inputf("--concurrency %d: need at least 1 client (or an open loop with --rate)", s.Concurrency)
	case s.Rate == 0 && s.Abuse.Fraction > 0 && s.Concurrency < 2:
		return nil, point.Inputf("--abusive-fraction needs --concurrency of at least 2: one legitimate client and one abusive")
	case s.Clients < 0:
		return nil, point.Inputf("--clients %d: must be positive", s.Clients)
	}
	if s.Abuse.Fraction != 0 {
		if err := s.Abuse.Check(); err != nil {
			return nil, &point.InputError{Err: err}
		}
	}
	if err := s.Guards.Check(); err != nil {
		return nil, err
	}
	o := Options{Slots: s.Slots, Concurrency: s.Concurrency, Clients: s.Clients}
	switch {
	case s.Rate > 0:
		o.Concurrency = 0
		if o.Slots == 0 {
			o.Slots = 16
		}
	case o.Slots == 0:
		o.Slots = s.Concurrency
	}
	if o.Slots < 1 || o.Slots > point.MaxParallel {
		return nil, point.Inputf("--slots %d: use 1 to %d", o.Slots, point.MaxParallel)
	}
	return scenarios(s.Workload, s.Requests, s.Seed, o, arrival{Rate: s.Rate, Burstiness: s.Burstiness}, s.Abuse, s.Guards), nil
}

// traceScenario replays the trace's first s.Requests open loop.
func (s Spec) traceScenario() ([]Scenario, error) {
	if s.Abuse.Fraction != 0 || s.Concurrency != 0 {
		return nil, point.Inputf("--trace sets the arrivals and the requests: leave out --rate, --concurrency and --abusive-fraction")
	}
	if err := s.Guards.Check(); err != nil {
		return nil, err
	}
	o := Options{Slots: cmp.Or(s.Slots, 16), Clients: s.Clients, Guards: s.Guards}
	if o.Slots < 1 || o.Slots > point.MaxParallel {
		return nil, point.Inputf("--slots %d: use 1 to %d", o.Slots, point.MaxParallel)
	}
	reqs := s.Trace.Requests[:min(s.Requests, len(s.Trace.Requests))]
	return []Scenario{{Name: "trace", Requests: reqs, Options: o}}, nil
}

// Check says what is wrong with a capacity search's bounds, if anything.
func (o CapacityOptions) Check() error {
	maxSlots := o.MaxSlots()
	if o.Slots > 0 {
		if o.MaxRate <= 0 || o.Requests < 2*o.Slots || o.Burstiness <= 0 {
			return point.Inputf("--max-rate must be positive, --requests at least twice --slots, --burstiness above 0")
		}
	} else if o.RequestsPerClient < 2 {
		return point.Inputf("--requests-per-client %d: at least 2 (the first is warm-up)", o.RequestsPerClient)
	}
	if maxSlots < 1 || maxSlots > point.MaxParallel {
		return point.Inputf("--max-concurrency or --slots %d: use 1 to %d", maxSlots, point.MaxParallel)
	}
	if err := o.Guards.Check(); err != nil {
		return err
	}
	return nil
}

// Largest are the requests of the search's largest trial: what a
// context must be sized for, and the workload's mean lengths.
func (o CapacityOptions) Largest(w Workload) []Request {
	return w.Generate(max(o.MaxSlots()*o.RequestsPerClient, o.Requests), o.Seed)
}

// MaxSlots is the most sequences a trial serves at once.
func (o CapacityOptions) MaxSlots() int {
	if o.Slots > 0 {
		return o.Slots
	}
	return o.MaxConcurrency
}

// MeanLengths are the requests' mean prompt and output lengths.
func MeanLengths(reqs []Request) (prompt, output int) {
	if len(reqs) == 0 {
		return 0, 0
	}
	for _, r := range reqs {
		prompt, output = prompt+r.Prompt, output+r.Output
	}
	return prompt / len(reqs), output / len(reqs)
}
