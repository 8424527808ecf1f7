// Package work is what a sweep does with llama.cpp, which package sweep
// (planning and running a grid, in plain Go) leaves to it: making the
// models a grid names (synthetic presets and quantizations, once, into
// the cache), and the worker process's loop that measures points with
// package measure.
package work

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/internal/halt"
	"github.com/tokbench/tokbench/internal/measure"
	"github.com/tokbench/tokbench/internal/telemetry"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/sweep"
)

// Grid names the spec s's models and lays out its points (in Tests' order)
// with how many the filters dropped (a grid the filters emptied is the user's error); with a
// shard (Count > 0), keeps that shard's share of the points (Partition)
// and its models; then makes the models kept that are not made yet (log
// says what is made).
func Grid(s *sweep.Spec, cacheDir string, log io.Writer, check func(path string) error, shard sweep.Shard) ([]sweep.ModelRef, []point.Point, int, error) {
	refs, points, dropped, err := s.Layout(cacheDir, shard)
	if err != nil {
		return nil, nil, 0, err
	}
	return refs, points, dropped, Make(refs, s.Seed(), log, check)
}

// Models finds or makes the models a spec names: given files as they are;
// synthetic presets and quantizations of a source once, into the cache
// folder, reused on later runs. log receives one line per model made.
// check loads a model in a child process first (isolate): the source of
// quantizations is handed to llama.cpp in this process, the others only
// in workers.
func Models(s *sweep.Spec, cacheDir string, log io.Writer, check func(path string) error) ([]sweep.ModelRef, error) {
	refs, err := sweep.Refs(s, cacheDir, true)
	if err != nil {
		return nil, err
	}
	return refs, Make(refs, s.Seed(), log, check)
}

// Make makes the synthetic models and quantizations of refs that are not
// in the cache yet (a shard makes only its own).
func Make(refs []sweep.ModelRef, seed uint64, log io.Writer, check func(path string) error) error {
	checked := map[string]bool{}
	for _, r := range refs {
		switch {
		case r.Path == "" && r.Source != "":
			return fmt.Errorf("%s: no path (its source was not hashed)", r.ID)
		case r.Preset != "":
			if _, err := measure.SynthModel(filepath.Dir(r.Path), r.Preset, r.Type, seed, log); err != nil {
				return err
			}
		case r.Source != "":
			if _, err := os.Stat(r.Path); err == nil {
				continue
			}
			if !checked[r.Source] {
				if err := check(r.Source); err != nil {
					return err
				}
				checked[r.Source] = true
			}
			fmt.Fprintf(log, "quantizing %s to %s into %s, once\n", r.Source, r.Type, r.Path)
			if err := os.MkdirAll(filepath.Dir(r.Path), 0o755); err != nil {
				return err
			}
			if err := engine.Quantize(r.Source, r.Path, r.Type, engine.QuantizeOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// ServeWorker is a sweep's worker (tokbench sweep-worker): it reads a request from r, measures its
// points in order and writes one event per line to w. SIGINT or SIGTERM
// stop it after the current repetition (exit status 130).
func ServeWorker(r io.Reader, w io.Writer) int {
	var req sweep.WorkerRequest
	if err := json.NewDecoder(r).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "tokbench sweep-worker: bad request:", err)
		return 2
	}
	var stop atomic.Bool
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	go func() {
		<-sig
		if halt.Signal() { // making a model or probing: nothing measured yet
			os.Exit(halt.ExitCode)
		}
		stop.Store(true)
	}()
	out := bufio.NewWriter(w)
	send := func(ev sweep.WorkerEvent) error {
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("sweep-worker: %w", err)
		}
		out.Write(append(b, '\n'))
		return out.Flush()
	}
	// A record's line, encoded once by the executor, goes out as it is.
	sendLine := func(line record.Line) error {
		out.WriteString(`{"record":`)
		out.Write(bytes.TrimSuffix(line, []byte("\n")))
		out.WriteString("}\n")
		return out.Flush()
	}
	var began time.Time
	ex := &measure.Executor{
		Env:   measure.DescribeEnv(req.Version),
		Stop:  stop.Load,
		Fault: req.Fault,
		Started: func(p point.Point) {
			began = time.Now()
			k := p.Key()
			send(sweep.WorkerEvent{Start: &k})
		},
	}
	if req.TelemetryRate > 0 {
		s, _, err := telemetry.Start(req.TelemetryRate)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tokbench sweep-worker:", err)
			return 2
		}
		defer s.Stop()
		ex.Sampler = s
	}
	stamp := req.Stamp
	ex.Finish = stamp.Apply
	err := ex.Run(context.Background(), req.Points, func(_ record.Record, line record.Line, _ error) error {
		if ex.Sampler != nil && req.TelemetryOut != "" {
			if err := ex.Sampler.WriteFile(req.TelemetryOut, began, time.Now(), true); err != nil {
				return err
			}
		}
		return sendLine(line)
	})
	switch {
	case errors.Is(err, halt.ErrStopped):
		send(sweep.WorkerEvent{Stopped: true})
		return sweep.WorkerExitStopped
	case err != nil:
		fmt.Fprintln(os.Stderr, "tokbench sweep-worker:", err)
		return 1
	}
	return 0
}
