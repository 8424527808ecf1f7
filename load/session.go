package load

import (
	"context"
	"fmt"
	"time"

	"github.com/tokbench/tokbench/gpu"
)

// Windows gives what the hardware did over a span of time
// (telemetry.Sampler has it).
type Windows interface {
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
	Windows  Windows // telemetry per second (nil: none)
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
	// Done, if set, is given each result as soon as it is complete
	// (written to the results file).
	Done func(*Result) error
}

// Run serves the scenarios until all are done or ctx ends. The results
// of the scenarios that ran are returned with any error.
func (s *Session) Run(ctx context.Context, scenarios []Scenario) ([]Result, error) {
	var runs []Result
	for _, sc := range scenarios {
		mon := s.Watch
		mon.Scenario, mon.secs, mon.Events = sc.Name, nil, 0
		obs := Observers{&mon}
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
		sc.Options.Observer = obs
		run, err := RunScenario(ctx, s.Server, sc, s.SLOs, s.Windows)
		mon.Finish()
		if s.Progress != nil {
			s.Progress.End()
		}
		s.Events += mon.Events
		if run != nil {
			run.Rate = s.Rate
			if s.Workload.Name == "localscore" {
				run.LocalScore = LocalScoreOf(run.Requests, run.Loop == ClosedLoop, run.Clients)
			}
			// Kept before it is written: a file that fails loses nothing
			// of what is printed.
			runs = append(runs, *run)
			if s.Done != nil {
				if derr := s.Done(run); derr != nil {
					return runs, fmt.Errorf("%w; the runs are printed below: rerun with another --out to keep them in a file", derr)
				}
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

// RunScenario serves one scenario on a fresh context from srv and sums it
// up: the legitimate requests' figures against the SLOs, the abusive
// ones' apart, and the per-second timeline with what the hardware did in
// each second (win nil: no telemetry).
func RunScenario(ctx context.Context, srv Server, sc Scenario, slos []SLO, win Windows) (*Result, error) {
	eng, closeCtx, err := srv(sc.Options.Slots)
	if err != nil {
		return nil, err
	}
	defer closeCtx()
	clock := clockOr(sc.Options.Clock)
	start := clock.Now()
	outs, timeline, overhead, runErr := Run(ctx, eng, sc.Requests, sc.Options)
	secs := clock.Now().Sub(start).Seconds()
	if win != nil {
		for i := range timeline {
			t := start.Add(time.Duration(i) * time.Second)
			w := win.Window(t, t.Add(time.Second))
			timeline[i].Telemetry = &w
		}
	}
	legit, abusive := Split(outs)
	run := &Result{Scenario: sc.Name, Loop: ClosedLoop, Slots: sc.Options.Slots, Clients: sc.Options.Concurrency, Guards: sc.Options.Guards,
		Summary: Tally(legit, secs, overhead, slos), Timeline: timeline, Requests: outs}
	if sc.Options.Concurrency == 0 {
		run.Loop = OpenLoop
	}
	if len(abusive) > 0 {
		a := Tally(abusive, secs, overhead, nil)
		run.Abusive = &a
	}
	return run, runErr
}

// Lines are a run's lines of a results file: one per request, then the
// run's own.
func (r *Result) Lines(w Workload, p Provenance) []any {
	lines := make([]any, 0, len(r.Requests)+1)
	for _, o := range r.Requests {
		lines = append(lines, Line{Kind: KindRequest, Scenario: r.Scenario, Request: o})
	}
	run := *r
	run.Requests = nil
	return append(lines, Line{Kind: KindLoad, Workload: &w, Run: &run, Provenance: p})
}

// Line is a capacity search's line of a results file.
func (c *CapacityResult) Line(w Workload, p Provenance) Line {
	return Line{Kind: KindCapacity, Workload: &w, Capacity: c, Provenance: p}
}
