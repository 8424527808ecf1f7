// Package sweep plans and runs grids of benchmark points, in plain Go (no
// cgo): the spec (flags or YAML, from point.Settings) and its axes,
// filters, the plan (points ordered to load each model once and reuse the
// KV cache's depth, memory and time estimates from package plan, what
// cannot fit), shards and their partition, worker processes that measure
// each model's points (so that an abort or an OOM kill costs one point),
// progress, and resuming a results file. It writes records as they are
// measured (package record); making models and measuring are package
// sweep/work's and measure's, in the processes that load llama.cpp.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/tokbench/tokbench/internal/halt"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// Options are how a sweep runs, as opposed to what it measures.
type Options struct {
	Out         string // JSONL results file
	Resume      bool   // continue Out, skipping recorded points
	RetryFailed bool   // with Resume, measure failed points again
	Exe         string // tokbench executable for workers (default: this one)
	ExeArgs     []string
	Fault       string          // test-only: make the worker abort at this point
	Telemetry   int             // sample rate in Hz; 0: off
	TelemetryTo string          // raw samples (JSONL)
	Log         io.Writer       // progress and notes (stderr)
	TTY         bool            // Log is a terminal
	Dropped     int             // points removed by filters, for the plan
	Peaks       *roofline.Cache // the ceilings each record's roofline is set against before it is written (nil: none)
	Watch       *Watch          // anomaly events
	// Rounds measures the grid this many times (interleaved rounds; 0 or
	// 1: once), each round in another order (RoundOrder), and then merges
	// each point's rounds into one record.
	Rounds  int
	Shuffle bool   // each round in a random order instead of a rotated one
	Seed    uint64 // of the shuffle
	// SpecHash and Shard go into every record (Spec.Hash; "I/N" or "").
	SpecHash, Shard string
}

// Result is what a sweep did.
type Result struct {
	Records     []record.Record // all of Out's records, old and new
	New         int
	Skipped     int
	Failed      int
	Total       int // points in the plan
	Phases      record.Phases
	Wall        time.Duration
	Interrupted bool
	Anomalies   int
}

// Run measures a sweep's points, appending each record to Out (fsynced) as
// soon as it is measured, each model's points in a worker process.
func Run(ctx context.Context, points []point.Point, env plan.Env, o Options) (*Result, error) {
	start := time.Now()
	res, old, err := openResults(o.Out, o.Resume, env, o.SpecHash)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	rounds := max(o.Rounds, 1)
	full, done := recorded(old, rounds, o.RetryFailed)
	grid, err := MakePlan(points, full, env)
	if err != nil {
		return nil, err
	}
	grid.Dropped = o.Dropped
	sum := &Result{Records: old, Total: len(grid.Points) + len(grid.Skipped)}
	stamp := Stamp{Rounds: rounds, SpecSHA256: o.SpecHash, Shard: o.Shard, peaks: o.Peaks}
	if o.Peaks != nil {
		stamp.PeaksDir = o.Peaks.Dir
	}
	// emit writes a record: a worker's as it encoded it (stamped there),
	// one made here stamped and encoded now.
	emit := func(r record.Record, line record.Line) error {
		if line == nil {
			stamp.Apply(&r)
			r, line = record.Encode(r)
		}
		if err := res.Append(line); err != nil {
			return err
		}
		sum.Anomalies += o.Watch.Check(&r)
		sum.Records = append(sum.Records, r)
		sum.New++
		switch r.Status {
		case record.StatusSkipped:
			sum.Skipped++
		case record.StatusFailed:
			sum.Failed++
		}
		if ph := r.Phases; ph != nil {
			sum.Phases.Add(*ph)
		}
		return nil
	}
	if grid.Done > 0 {
		fmt.Fprintf(o.Log, "resuming %s: %d points already recorded, %d to go\n", o.Out, grid.Done, len(grid.Points)+len(grid.Skipped))
	}
	for _, r := range grid.Skipped {
		if err := emit(r, nil); err != nil {
			return sum, err
		}
		fmt.Fprintf(o.Log, "skipped %s %s: %s\n", r.ModelID, r.Test, r.Reason)
	}
	if o.Exe == "" {
		if o.Exe, err = os.Executable(); err != nil {
			return sum, err
		}
	}
	pr := newProgress(o.Log, o.TTY, len(grid.Points)*rounds, time.Duration(rounds)*grid.Total())
	defer pr.Finish()
	wc := workerCmd{Exe: o.Exe, Args: o.ExeArgs}
	for stamp.Round = 1; stamp.Round <= rounds && !sum.Interrupted; stamp.Round++ {
		round := stamp.Round
		order := grid.Points
		if rounds > 1 {
			order = roundOrder(grid.Points, round, rounds, o.Shuffle, o.Seed)
			order = slices.DeleteFunc(order, func(p point.Point) bool { return done[roundKey{p.Key(), round}] })
		}
		for _, group := range byModel(order) {
			err := runGroup(ctx, wc, WorkerRequest{Version: env.Version, Fault: o.Fault, TelemetryRate: o.Telemetry, TelemetryOut: o.TelemetryTo, Points: group, Stamp: stamp}, env, pr, grid, emit)
			if errors.Is(err, halt.ErrStopped) {
				sum.Interrupted = true
				break
			}
			if err != nil {
				return sum, err
			}
		}
	}
	if rounds > 1 && !sum.Interrupted {
		for _, m := range mergeRounds(sum.Records, rounds) {
			if err := emit(m, nil); err != nil {
				return sum, err
			}
		}
	}
	sum.Wall = time.Since(start)
	return sum, nil
}

// recorded says what a results file already holds: the points that need
// no more measuring (a record, or with rounds the merged record or a
// skip), and with rounds each point's rounds measured. Failed records
// count unless they are to be retried.
func recorded(old []record.Record, rounds int, retryFailed bool) (full map[point.Key]bool, done map[roundKey]bool) {
	full, done = map[point.Key]bool{}, map[roundKey]bool{}
	for _, r := range old {
		ok := r.Status != record.StatusFailed || !retryFailed
		switch {
		case rounds == 1, r.Status == record.StatusSkipped, r.Round == 0 && r.Rounds > 0:
			full[r.Key] = full[r.Key] || ok
		default:
			done[roundKey{r.Key, r.Round}] = done[roundKey{r.Key, r.Round}] || ok
		}
	}
	return full, done
}

// byModel cuts ordered points into runs of one model.
func byModel(points []point.Point) [][]point.Point {
	var groups [][]point.Point
	for i, p := range points {
		if i == 0 || p.ModelKey() != points[i-1].ModelKey() {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], p)
	}
	return groups
}

// runGroup runs one model's points in workers until all are recorded: a
// worker that dies costs the point it was measuring (recorded as failed
// with how it died) and a new worker takes the rest.
func runGroup(ctx context.Context, wc workerCmd, req WorkerRequest, env plan.Env, pr *progress, grid *plan.Grid, emit func(record.Record, record.Line) error) error {
	rest := req.Points
	for len(rest) > 0 {
		req.Points = rest
		done, current, exit := wc.run(ctx, req, pr.Begin, func(r record.Record, line record.Line) error {
			pr.End(r, grid.Est[r.Key])
			return emit(r, line)
		})
		var next []point.Point
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
		case errors.Is(exit, halt.ErrStopped) || ctx.Err() != nil:
			return halt.ErrStopped
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
		r := env.Unmeasured(failed, record.StatusFailed, exit.Error())
		pr.End(r, grid.Est[r.Key])
		if err := emit(r, nil); err != nil {
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

// String is the sweep's closing line: what was recorded, where the time
// went and where the results are.
func (r *Result) String() string {
	ph := r.Phases
	return fmt.Sprintf("%d of %d points recorded this run (%d skipped, %d failed) in %s: loading %.1fs, warm-up %.1fs, depth fill %.1fs, measuring %.1fs, timing kernels %.1fs",
		r.New, r.Total, r.Skipped, r.Failed, r.Wall.Round(100*time.Millisecond), ph.LoadMs/1000, ph.WarmupMs/1000, ph.DepthMs/1000, ph.MeasureMs/1000, ph.KernelsMs/1000)
}
