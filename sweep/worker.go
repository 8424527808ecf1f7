package sweep

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/tokbench/tokbench/internal/halt"
	"github.com/tokbench/tokbench/internal/isolate"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// A sweep measures each model's points in a worker: tokbench re-executed
// with the hidden command "sweep-worker". llama.cpp aborts the process on
// some errors and an OOM kill takes the whole process; in a worker either
// costs one failed point, and the sweep goes on.

// WorkerRequest is what a worker is asked to measure, on its stdin.
type WorkerRequest struct {
	Version       string        `json:"version"`
	Fault         string        `json:"fault,omitempty"`
	TelemetryRate int           `json:"telemetry_rate,omitempty"` // Hz; 0: off
	TelemetryOut  string        `json:"telemetry_out,omitempty"`  // raw samples, appended per point
	Points        []point.Point `json:"points"`
}

// WorkerEvent is one line of a worker's stdout: a point started, a
// record measured, or a graceful stop.
type WorkerEvent struct {
	Start   *point.Key     `json:"start,omitempty"`
	Record  *record.Record `json:"record,omitempty"`
	Stopped bool           `json:"stopped,omitempty"`
}

// WorkerExitStopped is the worker's exit status after a graceful stop.
const WorkerExitStopped = 130

// workerCmd says how to start a worker: this executable and the global
// flags it needs (backend folders), then "sweep-worker".
type workerCmd struct {
	Exe  string
	Args []string
}

// runWorker measures points in one worker process. It returns the keys it
// got records for, the key of the point that was running when the worker
// ended ("" if none), and how the worker ended.
func (wc workerCmd) run(ctx context.Context, req WorkerRequest, started func(point.Point), got func(record.Record) error) (done map[point.Key]bool, current point.Key, exit error) {
	done = map[point.Key]bool{}
	cmd := isolate.Exec(context.Background(), wc.Exe, append(append([]string{}, wc.Args...), "sweep-worker")...)
	cmd.SysProcAttr = isolate.SysProcAttr()
	// A child of the worker that outlives it (holding its stderr) must
	// not hold Wait: the pipes close this long after the worker ends.
	cmd.WaitDelay = 5 * time.Second
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
		var ev WorkerEvent
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
	// A line past the scanner's 64 MiB (a damaged worker) ends the scan:
	// the worker, whose output nobody reads now, is ended, not left
	// blocked writing to a full pipe with Wait waiting on it for ever.
	if err := sc.Err(); err != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // its group: it leads one (isolate.SysProcAttr)
		if writeErr == nil {
			writeErr = fmt.Errorf("read worker %s: %w", wc.Exe, err)
		}
	}
	err = cmd.Wait()
	if writeErr != nil {
		return done, current, writeErr
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == WorkerExitStopped {
			return done, current, halt.ErrStopped
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
