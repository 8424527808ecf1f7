package sweep

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tokbench/tokbench/isolate"
	"github.com/tokbench/tokbench/measure"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/telemetry"
)

// A sweep measures each model's points in a worker: tokbench re-executed
// with the hidden command "sweep-worker". llama.cpp aborts the process on
// some errors and an OOM kill takes the whole process; in a worker either
// costs one failed point, and the sweep goes on.

type workerRequest struct {
	Version       string        `json:"version"`
	Fault         string        `json:"fault,omitempty"`
	TelemetryRate int           `json:"telemetry_rate,omitempty"` // Hz; 0: off
	TelemetryOut  string        `json:"telemetry_out,omitempty"`  // raw samples, appended per point
	Points        []point.Point `json:"points"`
}

type workerEvent struct {
	Start   *point.Key     `json:"start,omitempty"`
	Record  *record.Record `json:"record,omitempty"`
	Stopped bool           `json:"stopped,omitempty"`
}

// WorkerExitStopped is the worker's exit status after a graceful stop.
const WorkerExitStopped = 130

// ServeWorker is the worker side: it reads a request from r, measures its
// points in order and writes one event per line to w. SIGINT or SIGTERM
// stop it after the current repetition (exit status 130).
func ServeWorker(r io.Reader, w io.Writer) int {
	var req workerRequest
	if err := json.NewDecoder(r).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "tokbench sweep-worker: bad request:", err)
		return 2
	}
	var stop atomic.Bool
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		stop.Store(true)
	}()
	out := bufio.NewWriter(w)
	send := func(ev workerEvent) error {
		b, _ := json.Marshal(ev)
		out.Write(append(b, '\n'))
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
			send(workerEvent{Start: &k})
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
	err := ex.Run(context.Background(), req.Points, func(rec record.Record, _ error) error {
		if ex.Sampler != nil && req.TelemetryOut != "" {
			if err := ex.Sampler.WriteFile(req.TelemetryOut, began, time.Now(), true); err != nil {
				return err
			}
		}
		return send(workerEvent{Record: &rec})
	})
	switch {
	case errors.Is(err, measure.ErrStopped):
		send(workerEvent{Stopped: true})
		return WorkerExitStopped
	case err != nil:
		fmt.Fprintln(os.Stderr, "tokbench sweep-worker:", err)
		return 1
	}
	return 0
}

// workerCmd says how to start a worker: this executable and the global
// flags it needs (backend folders), then "sweep-worker".
type workerCmd struct {
	Exe  string
	Args []string
}

// runWorker measures points in one worker process. It returns the keys it
// got records for, the key of the point that was running when the worker
// ended ("" if none), and how the worker ended.
func (wc workerCmd) run(ctx context.Context, req workerRequest, started func(point.Point), got func(record.Record) error) (done map[point.Key]bool, current point.Key, exit error) {
	done = map[point.Key]bool{}
	cmd := isolate.Exec(context.Background(), wc.Exe, append(append([]string{}, wc.Args...), "sweep-worker")...)
	cmd.SysProcAttr = isolate.SysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return done, point.Key{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return done, point.Key{}, err
	}
	var errLog isolate.Log
	cmd.Stderr = &errLog
	if err := cmd.Start(); err != nil {
		return done, point.Key{}, fmt.Errorf("start worker %s: %w", wc.Exe, err)
	}
	go func() {
		json.NewEncoder(stdin).Encode(req)
		stdin.Close()
	}()
	stopForward := context.AfterFunc(ctx, func() { cmd.Process.Signal(os.Interrupt) })
	defer stopForward()

	byKey := map[point.Key]point.Point{}
	for _, p := range req.Points {
		byKey[p.Key()] = p
	}
	var watchdog *time.Timer
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var writeErr error
	for sc.Scan() {
		var ev workerEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch {
		case ev.Start != nil:
			current = *ev.Start
			p := byKey[current]
			if watchdog != nil {
				watchdog.Stop()
			}
			if p.Timeout > 0 {
				// The worker enforces the timeout itself; this catches a
				// worker stuck where that check cannot run.
				watchdog = time.AfterFunc(2*p.Timeout+2*time.Minute, func() { cmd.Process.Kill() })
			}
			if started != nil {
				started(p)
			}
		case ev.Record != nil:
			done[ev.Record.Key] = true
			current = point.Key{}
			if err := got(*ev.Record); err != nil && writeErr == nil {
				writeErr = err
				cmd.Process.Signal(os.Interrupt)
			}
		}
	}
	if watchdog != nil {
		watchdog.Stop()
	}
	err = cmd.Wait()
	if writeErr != nil {
		return done, current, writeErr
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == WorkerExitStopped {
			return done, current, measure.ErrStopped
		}
		msg := "worker " + cmd.ProcessState.String()
		if strings.Contains(msg, "killed") {
			msg += " (out of memory? see dmesg)"
		}
		if t := errLog.String(); t != "" {
			msg += ": " + t
		}
		return done, current, &workerDied{msg}
	}
	return done, current, nil
}

// workerDied is a worker that ended without finishing: a crash, a kill.
type workerDied struct{ msg string }

func (w *workerDied) Error() string { return w.msg }
