package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tokbench/tokbench/engine"
)

// Options are how a sweep runs, as opposed to what it measures.
type Options struct {
	Out         string // JSONL results file
	Resume      bool   // continue Out, skipping recorded points
	RetryFailed bool   // with Resume, measure failed points again
	Exe         string // tokbench executable for workers (default: this one)
	ExeArgs     []string
	Fault       string        // test-only: make the worker abort at this point
	Telemetry   int           // sample rate in Hz; 0: off
	TelemetryTo string        // raw samples (JSONL)
	Log         io.Writer     // progress and notes (stderr)
	TTY         bool          // Log is a terminal
	Dropped     int           // points removed by filters, for the plan
	Annotate    func(*Record) // adds derived figures (the roofline) before a record is written
	Watch       *Watch        // anomaly events
}

// Outcome is what a sweep did.
type Outcome struct {
	Records     []Record // all of Out's records, old and new
	New         int
	Skipped     int
	Failed      int
	Total       int // points in the plan
	Phases      Phases
	Wall        time.Duration
	Interrupted bool
	Anomalies   int
}

// Run measures a sweep's points, appending each record to Out (fsynced) as
// soon as it is measured, each model's points in a worker process.
func Run(ctx context.Context, points []Point, env Env, o Options) (*Outcome, error) {
	start := time.Now()
	res, old, err := OpenResults(o.Out, o.Resume, env)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	done := map[string]bool{}
	for _, r := range old {
		done[r.Key] = r.Status != StatusFailed || !o.RetryFailed
	}
	plan, err := MakePlan(points, done, env)
	if err != nil {
		return nil, err
	}
	plan.Dropped = o.Dropped
	sum := &Outcome{Records: old, Total: len(plan.Points) + len(plan.Skipped)}
	record := func(r Record) error {
		if o.Annotate != nil {
			o.Annotate(&r)
		}
		if err := res.Append(r); err != nil {
			return err
		}
		sum.Anomalies += o.Watch.Check(&r)
		sum.Records = append(sum.Records, r)
		sum.New++
		switch r.Status {
		case StatusSkipped:
			sum.Skipped++
		case StatusFailed:
			sum.Failed++
		}
		if ph := r.Phases; ph != nil {
			sum.Phases.LoadMs += ph.LoadMs
			sum.Phases.WarmupMs += ph.WarmupMs
			sum.Phases.DepthMs += ph.DepthMs
			sum.Phases.MeasureMs += ph.MeasureMs
		}
		return nil
	}
	if plan.Done > 0 {
		fmt.Fprintf(o.Log, "resuming %s: %d points already recorded, %d to go\n", o.Out, plan.Done, len(plan.Points)+len(plan.Skipped))
	}
	for _, r := range plan.Skipped {
		if err := record(r); err != nil {
			return sum, err
		}
		fmt.Fprintf(o.Log, "skipped %s %s: %s\n", r.ModelID, r.Test, r.Reason)
	}
	if o.Exe == "" {
		if o.Exe, err = os.Executable(); err != nil {
			return sum, err
		}
	}
	pr := NewProgress(o.Log, o.TTY, len(plan.Points), plan.Total())
	defer pr.Finish()
	wc := workerCmd{Exe: o.Exe, Args: o.ExeArgs}
	for _, group := range byModel(plan.Points) {
		err := runGroup(ctx, wc, workerRequest{Version: env.Version, Fault: o.Fault, TelemetryRate: o.Telemetry, TelemetryOut: o.TelemetryTo, Points: group}, env, pr, plan, record)
		if errors.Is(err, ErrStopped) {
			sum.Interrupted = true
			break
		}
		if err != nil {
			return sum, err
		}
	}
	sum.Wall = time.Since(start)
	return sum, nil
}

// byModel cuts ordered points into runs of one model.
func byModel(points []Point) [][]Point {
	var groups [][]Point
	for i, p := range points {
		if i == 0 || p.modelKey() != points[i-1].modelKey() {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], p)
	}
	return groups
}

// runGroup runs one model's points in workers until all are recorded: a
// worker that dies costs the point it was measuring (recorded as failed
// with how it died) and a new worker takes the rest.
func runGroup(ctx context.Context, wc workerCmd, req workerRequest, env Env, pr *Progress, plan *Plan, record func(Record) error) error {
	rest := req.Points
	for len(rest) > 0 {
		req.Points = rest
		done, current, exit := wc.run(ctx, req, pr.Begin, func(r Record) error {
			pr.End(r, plan.Est[r.Key])
			return record(r)
		})
		var next []Point
		for _, p := range rest {
			if !done[p.Key()] {
				next = append(next, p)
			}
		}
		rest = next
		switch {
		case exit == nil:
			if len(rest) > 0 {
				return fmt.Errorf("worker ended with %d points unmeasured", len(rest))
			}
			return nil
		case errors.Is(exit, ErrStopped) || ctx.Err() != nil:
			return ErrStopped
		case len(rest) == 0:
			return nil
		}
		var died *workerDied
		if !errors.As(exit, &died) {
			return exit // could not start a worker, or could not write a record
		}
		// The point that was running, or the first left if the worker died
		// before starting one, is charged with the failure.
		failed := rest[0]
		for _, p := range rest {
			if p.Key() == current {
				failed = p
			}
		}
		r := fill(Record{Status: StatusFailed, Reason: exit.Error()}, failed, engine.Meta{}, env)
		pr.End(r, plan.Est[r.Key])
		if err := record(r); err != nil {
			return err
		}
		next = next[:0]
		for _, p := range rest {
			if p.Key() != failed.Key() {
				next = append(next, p)
			}
		}
		rest = next
	}
	return nil
}
