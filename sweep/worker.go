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
	"github.com/tokbench/tokbench/roofline"
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
	Stamp         Stamp         `json:"stamp"`
}

// WorkerEvent is one line of a worker's stdout: a point started, a
// record measured (its line as the results file will hold it), or a
// graceful stop.
type WorkerEvent struct {
	Start   *point.Key      `json:"start,omitempty"`
	Record  json.RawMessage `json:"record,omitempty"`
	Stopped bool            `json:"stopped,omitempty"`
}

// Stamp is what a sweep adds to each of its records before it is
// written: the round, the spec and shard, the roofline. A worker stamps
// its own records, so that each is encoded once, there, and written to
// the results file as it came.
type Stamp struct {
	Round, Rounds int    `json:",omitempty"`
	SpecSHA256    string `json:",omitempty"`
	Shard         string `json:",omitempty"`
	PeaksDir      string `json:",omitempty"` // the probe cache whose ceilings set each roofline ("": none)
	peaks         *roofline.Cache
}

// Apply stamps r.
func (s *Stamp) Apply(r *record.Record) {
	if s.Rounds > 1 && r.Rounds == 0 {
		r.Round, r.Rounds = s.Round, s.Rounds
	}
	r.SpecSHA256, r.Shard = s.SpecSHA256, s.Shard
	if s.peaks == nil && s.PeaksDir != "" {
		s.peaks = &roofline.Cache{Dir: s.PeaksDir}
	}
	if s.peaks != nil {
		// A probe file that cannot be read leaves the record without a
		// roofline; report sets it again once the file is mended.
		_ = r.SetRoofline(s.peaks)
	}
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
func (wc workerCmd) run(ctx context.Context, req WorkerRequest, started func(point.Point), got func(record.Record, record.Line) error) (done map[point.Key]bool, current point.Key, exit error) {
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
		case len(ev.Record) > 0:
			var r record.Record
			if json.Unmarshal(ev.Record, &r) != nil {
				continue
			}
			done[r.Key] = true
			current = point.Key{}
			if err := got(r, append(record.Line(ev.Record), '\n')); err != nil && writeErr == nil {
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
