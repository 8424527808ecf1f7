package load

import (
	"context"
	"fmt"
	"time"

	"github.com/tokbench/tokbench/gpu"
)

// windows gives what the hardware did over a span of time
// (telemetry.Sampler has it).
type windows interface {
	Window(start, end time.Time) gpu.Window
}

// Provenance says what measured a results line.
type Provenance struct {
	Host          string `json:"host,omitempty"`
	Tool          string `json:"tool,omitempty"`
	BuildCommit   string `json:"build_commit,omitempty"`
	OllamaVersion string `json:"ollama_version,omitempty"`
}

// A Session runs a load test's scenarios one after another, each on a
// fresh context, watching each for anomalies and handing each result on
// as soon as it is complete.
type Session struct {
	Workload Workload
	SLOs     []SLO
	Server   Server
	Rate     float64 // open loop's arrival rate (for the results)
	Windows  windows // telemetry per second (nil: none)
	// Watch is how each scenario's monitor is set up (Scenario is set per
	// run); Events counts the anomalies logged.
	Watch  Monitor
	Events int
	// Live, if set, also observes each scenario (the metrics exporter);
	// Scenario tells it which one starts.
	Live interface {
		Observer
		Scenario(workload, scenario string)
	}
	// Progress, if set, shows each scenario's progress.
	Progress *Progress
	// Request, if set, is given each request of a scenario as soon as it
	// is served or rejected (written to the results file, so that a
	// killed run keeps them), and at the scenario's end those it left
	// unserved, before Done.
	Request func(scenario string, o *Served) error
	// Done, if set, is given each result as soon as it is complete
	// (written to the results file).
	Done func(*Result) error
}

// requestSink hands each request on as it ends; the first error stops
// it (the run goes on, and is printed).
type requestSink struct {
	scenario string
	put      func(string, *Served) error
	err      error
}

func (k *requestSink) Step(StepStats) {}
func (k *requestSink) Second(Second)  {}
func (k *requestSink) Done(o *Served) {
	if k.err == nil {
		k.err = k.put(k.scenario, o)
	}
}

// written hands on a finished scenario: the requests it left unserved,
// then its result.
func (s *Session) written(k *requestSink, run *Result) error {
	if k != nil {
		for _, o := range run.Requests {
			if o.Status == statusUnfinished || o.Status == statusUnsent {
				k.Done(o)
			}
		}
		if k.err != nil {
			return k.err
		}
	}
	if s.Done != nil {
		return s.Done(run)
	}
	return nil
}

// run serves the scenarios until all are done or ctx ends. The results
// of the scenarios that ran are returned with any error.
func (s *Session) Run(ctx context.Context, scenarios []Scenario) ([]Result, error) {
	var runs []Result
	for _, sc := range scenarios {
		mon := s.Watch
		mon.Scenario, mon.secs, mon.Events = sc.Name, nil, 0
		obs := observers{&mon}
		if s.Live != nil {
			s.Live.Scenario(s.Workload.Name, sc.Name)
			obs = append(obs, s.Live)
		}
		if s.Progress != nil {
			legit := 0
			for _, r := range sc.Requests {
				if !r.Abusive {
					legit++
				}
			}
			s.Progress.Begin(sc.Name, legit)
			obs = append(obs, s.Progress)
		}
		var sink *requestSink
		if s.Request != nil {
			sink = &requestSink{scenario: sc.Name, put: s.Request}
			obs = append(obs, sink)
		}
		sc.Options.Observer = obs
		run, err := runScenario(ctx, s.Server, sc, s.SLOs, s.Windows)
		mon.Finish()
		if s.Progress != nil {
			s.Progress.End(run)
		}
		s.Events += mon.Events
		if run != nil {
			run.Rate = s.Rate
			if s.Workload.Name == "localscore" {
				run.LocalScore = localScoreOf(run.Requests, run.Loop == ClosedLoop, run.Clients)
			}
			// Kept before it is written: a file that fails loses nothing
			// of what is printed.
			runs = append(runs, *run)
			if werr := s.written(sink, run); werr != nil {
				return runs, fmt.Errorf("%w; the runs are printed below: rerun with another --out to keep them in a file", werr)
			}
		}
		if err != nil {
			return runs, fmt.Errorf("load %s: %w", sc.Name, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return runs, nil
}

// runScenario serves one scenario on a fresh context from srv and sums it
// up: the legitimate requests' figures against the SLOs, the abusive
// ones' apart, and the per-second timeline with what the hardware did in
// each second (win nil: no telemetry).
func runScenario(ctx context.Context, srv Server, sc Scenario, slos []SLO, win windows) (*Result, error) {
	eng, closeCtx, err := srv(sc.Options.Slots)
	if err != nil {
		return nil, err
	}
	defer closeCtx()
	clock := clockOr(sc.Options.Clock)
	start := clock.Now()
	outs, timeline, overhead, runErr := run(ctx, eng, sc.Requests, sc.Options)
	secs := clock.Now().Sub(start).Seconds()
	if win != nil {
		for i := range timeline {
			t := start.Add(time.Duration(i) * time.Second)
			w := win.Window(t, t.Add(time.Second))
			timeline[i].Telemetry = &w
		}
	}
	legit, abusive := split(outs)
	run := &Result{Scenario: sc.Name, Loop: ClosedLoop, Slots: sc.Options.Slots, Clients: sc.Options.Concurrency, Guards: sc.Options.Guards,
		Summary: tally(legit, secs, overhead, slos), Timeline: timeline, Requests: outs}
	if sc.Options.Concurrency == 0 {
		run.Loop = OpenLoop
	}
	if len(abusive) > 0 {
		a := tally(abusive, secs, overhead, nil)
		run.Abusive = &a
	}
	return run, runErr
}

// RequestLine is a request's line of a results file.
func RequestLine(scenario string, o *Served) Line {
	return Line{Kind: kindRequest, Scenario: scenario, Request: o}
}

// Line is a run's own line of a results file (its requests have lines of
// their own).
func (r *Result) Line(w Workload, p Provenance) Line {
	run := *r
	run.Requests = nil
	return Line{Kind: kindLoad, Workload: &w, Run: &run, Provenance: p}
}

// Line is a capacity search's line of a results file.
func (c *CapacityResult) Line(w Workload, p Provenance) Line {
	return Line{Kind: kindCapacity, Workload: &w, Capacity: c, Provenance: p}
}
