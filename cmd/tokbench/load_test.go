package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tokbench/tokbench/internal/load"
)

// A capacity search shows each probe on stderr as it is judged and
// appends it to --out; SIGTERM ends it with the probes judged so far
// printed, written, and summed up as a search that says it stopped.
func TestCapacityProgressAndSIGTERM(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cap.jsonl")
	cmd := exec.Command(binPath, "capacity", "--synth", "tiny", "--prompt-len", "16", "--output-len", "8", "--slo", "e2e_p99=10m",
		"--keep-raising", "--max-concurrency", "64", "--no-telemetry", "--out", out, "-o", "json")
	cmd.Env = append(os.Environ(), "TOKBENCH_CACHE="+filepath.Join(workDir, "cache"))
	var stdout, errb bytes.Buffer
	cmd.Stdout = &stdout
	stderr := startUntil(t, cmd, &errb, func(l string) bool { return strings.HasPrefix(l, "capacity: probe 2, 2 sequences") })
	if !strings.Contains(errb.String(), "capacity: probe 1, 1 sequences") || !strings.Contains(errb.String(), "ETA") {
		t.Fatalf("no progress:\n%s", errb.String())
	}
	// The second probe is on --out before the search ends.
	data, _ := os.ReadFile(out)
	if strings.Count(string(data), `"kind":"probe"`) != 2 {
		t.Errorf("--out while searching:\n%s", data)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { errb.ReadFrom(stderr); done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("capacity did not stop within a minute of SIGTERM")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(errb.String(), "probe(s) judged are above") {
		t.Errorf("after SIGTERM: %v\n%s", err, errb.String())
	}
	var res load.CapacityResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not the search's JSON (progress must go to stderr): %v\n%s", err, stdout.String())
	}
	if res.Stopped != "interrupted" || len(res.Trials) < 2 || res.Concurrency < 2 || !strings.Contains(res.BoundBy, "at least") {
		t.Errorf("interrupted search: %+v", res)
	}
	// The message counts the probes judged, not one cut by the signal.
	judged := 0
	for _, p := range res.Trials {
		if !p.NotJudged {
			judged++
		}
	}
	if !strings.Contains(errb.String(), fmt.Sprintf("the %d probe(s) judged are above", judged)) {
		t.Errorf("%d probes judged of %d:\n%s", judged, len(res.Trials), errb.String())
	}
	lines, _, _, err := load.ReadResults(out)
	if err != nil || len(lines) != 1 || lines[0].Capacity.Stopped != "interrupted" {
		t.Errorf("--out after SIGTERM: %v %+v", err, lines)
	}
}

// A load run killed outright (SIGKILL) keeps the requests it served: each
// is on --out as it ends, and report sums them up as a killed run.
func TestLoadSIGKILLKeepsRequests(t *testing.T) {
	out := filepath.Join(t.TempDir(), "load.jsonl")
	cmd := exec.Command(binPath, "load", "--synth", "tiny", "--workload", "short", "--concurrency", "2", "--requests", "100000",
		"--output-len", "16", "--progress-every", "50ms", "--no-telemetry", "--out", out)
	cmd.Env = append(os.Environ(), "TOKBENCH_CACHE="+filepath.Join(workDir, "cache"))
	var errb bytes.Buffer
	done := 0
	startUntil(t, cmd, &errb, func(l string) bool {
		_, err := fmt.Sscanf(l, "load [load]: %d of", &done)
		return err == nil && done >= 8
	})
	cmd.Process.Kill()
	cmd.Wait()
	data, _ := os.ReadFile(out)
	if n := strings.Count(string(data), `"kind":"request"`); n < done {
		t.Fatalf("%d requests done before SIGKILL, %d on --out:\n%s", done, n, errb.String())
	}
	lines, requests, _, err := load.ReadResults(out)
	if err != nil || len(lines) != 1 || lines[0].Run == nil {
		t.Fatalf("%v %+v", err, lines)
	}
	s := lines[0].Run.Summary
	if !strings.Contains(lines[0].Run.Scenario, "killed") || s.Completed < done || s.Completed > requests || s.OutputTps <= 0 {
		t.Errorf("killed run: %q %+v", lines[0].Run.Scenario, s)
	}
	r := tokbench(t, "report", out)
	if r.code != 0 || !strings.Contains(r.stdout, "load (killed: its requests so far)") {
		t.Errorf("report: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// --max-time ends a search that would run long with the best answer so far.
func TestCapacityMaxTime(t *testing.T) {
	start := time.Now()
	r := tokbench(t, "capacity", "--synth", "tiny", "--prompt-len", "16", "--output-len", "32", "--slo", "e2e_p99=10m",
		"--keep-raising", "--max-concurrency", "256", "--max-time", "4s", "--no-telemetry", "-o", "json")
	took := time.Since(start)
	var res load.CapacityResult
	if err := json.Unmarshal([]byte(r.stdout), &res); r.code != 0 || err != nil {
		t.Fatalf("exit %d %v: %s", r.code, err, r.stderr)
	}
	// The answer is the largest probe judged and passed before the limit
	// (none, on a machine slow enough that the first probe was cut).
	best := 0
	for _, p := range res.Trials {
		if p.Pass && !p.NotJudged {
			best = max(best, p.Concurrency)
		}
	}
	if !strings.Contains(res.Stopped, "--max-time 4s") || res.Concurrency != best || res.Concurrency >= 256 || !strings.Contains(res.BoundBy, "not known") {
		t.Errorf("%+v", res)
	}
	// Loading the model and the probe of the roofline come on top.
	if took > 90*time.Second {
		t.Errorf("a 4 s search took %s", took)
	}
}

// load shows each scenario's progress on stderr; -o json stays clean.
func TestLoadProgress(t *testing.T) {
	r := tokbench(t, "load", "--synth", "tiny", "--workload", "short", "--concurrency", "2", "--requests", "24", "--output-len", "24",
		"--progress-every", "1ms", "--no-telemetry", "-o", "json")
	var runs struct{ Scenarios []load.Result }
	if err := json.Unmarshal([]byte(r.stdout), &runs); r.code != 0 || err != nil || len(runs.Scenarios) != 1 {
		t.Fatalf("exit %d %v: %s", r.code, err, r.stderr)
	}
	if !strings.Contains(r.stderr, " of 24 requests done, ") || !strings.Contains(r.stderr, "ETA") ||
		!strings.Contains(r.stderr, "load [load]: 24 of 24 requests done in ") {
		t.Errorf("progress:\n%s", r.stderr)
	}
	// One output t/s per run: the closing line gives the summary's.
	if want := fmt.Sprintf(", %.1f output t/s\n", runs.Scenarios[0].Summary.OutputTps); !strings.Contains(r.stderr, want) {
		t.Errorf("closing line without the summary's %q:\n%s", want, r.stderr)
	}
}

// The localscore workload gives LocalScore's score, and says when it is
// not LocalScore's number.
func TestLoadLocalScore(t *testing.T) {
	r := tokbench(t, "load", "--synth", "tiny", "--workload", "localscore", "--concurrency", "1", "--requests", "2", "--max-prompt", "2048",
		"--no-telemetry", "-o", "json")
	var runs struct{ Scenarios []load.Result }
	if err := json.Unmarshal([]byte(r.stdout), &runs); r.code != 0 || err != nil || len(runs.Scenarios) != 1 {
		t.Fatalf("exit %d %v: %s", r.code, err, r.stderr)
	}
	ls := runs.Scenarios[0].LocalScore
	if ls == nil || ls.Score <= 0 || ls.PromptTs <= 0 || ls.GenTs <= 0 || ls.Comparable || !strings.Contains(ls.Note, "turned away") {
		t.Errorf("%+v", ls)
	}
}

// load --trace replays a request log open loop at its recorded times,
// --speedup times faster; a file it cannot read is the user's to fix.
func TestLoadTrace(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "azure.csv")
	os.WriteFile(trace, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.0,40,8\n2023-11-16 18:15:46.5,20,8\n2023-11-16 18:15:47.0,30,0\n2023-11-16 18:15:48.0,10,8\n"), 0o644)
	r := tokbench(t, "load", "--synth", "tiny", "--trace", trace, "--speedup", "2", "--no-telemetry", "-o", "json")
	var runs struct {
		Workload  load.Workload
		Scenarios []load.Result
	}
	if err := json.Unmarshal([]byte(r.stdout), &runs); r.code != 0 || err != nil || len(runs.Scenarios) != 1 {
		t.Fatalf("exit %d %v: %s", r.code, err, r.stderr)
	}
	s := runs.Scenarios[0]
	// Two seconds recorded, replayed twice as fast: the last request
	// arrives a second after the first.
	if runs.Workload.Name != "trace:azure.csv" || s.Loop != load.OpenLoop || s.Summary.Completed != 3 || s.Summary.Seconds < 1 ||
		!strings.Contains(r.stderr, "3 requests over 1s at --speedup 2") || !strings.Contains(r.stderr, "1 without output left out") {
		t.Errorf("%s: %+v\n%s", runs.Workload.Name, s.Summary, r.stderr)
	}
	os.WriteFile(trace, []byte("when,in,out\n1,2,3\n"), 0o644)
	if r := tokbench(t, "load", "--synth", "tiny", "--trace", trace); r.code != 2 || !strings.Contains(r.stderr, "need a time") {
		t.Errorf("bad trace: exit %d %s", r.code, r.stderr)
	}
	if r := tokbench(t, "load", "--synth", "tiny", "--trace", filepath.Join(dir, "none.csv")); r.code != 2 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("missing trace: exit %d %s", r.code, r.stderr)
	}
}

// A batch smaller than the sequences served at once is bad input, said
// before anything is measured (llama.cpp would abort at the first step
// larger than its batch).
func TestBatchBelowSlotsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"load", "--synth", "tiny", "--prompt-len", "32", "--output-len", "8", "--batch-size", "4", "--concurrency", "8", "--requests", "16", "--no-telemetry"},
		{"capacity", "--synth", "tiny", "--prompt-len", "16", "--output-len", "8", "-b", "2", "--slo", "e2e_p99=10m", "--max-concurrency", "8", "--no-telemetry"},
	} {
		if r := tokbench(t, args...); r.code != 2 || !strings.Contains(r.stderr, "raise -b to at least 8") {
			t.Errorf("%s: exit %d: %s", args[0], r.code, r.stderr)
		}
	}
}

// load's and capacity's --out is opened before measuring: a folder it
// cannot write to, or a file another tokbench writes (its lock held), is
// refused at once; merge never replaces a file a writer holds.
func TestOutCheckedBeforeMeasuring(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o555)
	held := filepath.Join(dir, "held.jsonl")
	f, err := os.Create(held)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	load := []string{"load", "--synth", "tiny", "--prompt-len", "8", "--output-len", "4", "--requests", "2", "--concurrency", "1", "--no-telemetry", "--out"}
	capacity := []string{"capacity", "--synth", "tiny", "--prompt-len", "8", "--output-len", "4", "--slo", "e2e_p99=10m", "--max-concurrency", "2", "--no-telemetry", "--out"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(load, held), "being written by another tokbench"},
		{append(capacity, held), "being written by another tokbench"},
	} {
		start := time.Now()
		r := tokbench(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "probe") {
			t.Errorf("%s --out %s: exit %d after %s: %s", c.args[0], c.args[len(c.args)-1], r.code, time.Since(start), r.stderr)
		}
	}
	if os.Geteuid() != 0 { // root writes anywhere
		for _, args := range [][]string{append(load, filepath.Join(ro, "l.jsonl")), append(capacity, filepath.Join(ro, "c.jsonl"))} {
			if r := tokbench(t, args...); r.code != 2 || !strings.Contains(r.stderr, "--out") {
				t.Errorf("%s --out in a read-only folder: exit %d: %s", args[0], r.code, r.stderr)
			}
		}
	}
	other := filepath.Join(dir, "other.jsonl")
	writeRecords(t, other, 1)
	before, _ := os.ReadFile(held)
	if r := tokbench(t, "merge", other, "--out", held); r.code == 0 || !strings.Contains(r.stderr, "being written by another tokbench") {
		t.Errorf("merge over a held file: exit %d: %s", r.code, r.stderr)
	}
	if after, _ := os.ReadFile(held); string(after) != string(before) {
		t.Error("merge changed a file a writer holds")
	}
}

// --timeout bounds an open loop's waits between arrivals: at 0.02
// requests per second the next arrival is most likely tens of seconds
// away, and the run still ends near its 3 s limit, exit 1, saying why.
func TestLoadTimeoutBoundsOpenLoopWaits(t *testing.T) {
	start := time.Now()
	r := tokbench(t, "load", "--synth", "tiny", "--prompt-len", "8", "--output-len", "4", "--rate", "0.02", "--requests", "3",
		"--timeout", "3s", "--no-telemetry")
	if took := time.Since(start); took > 25*time.Second || r.code != 1 || !strings.Contains(r.stderr, "--timeout 3s reached") {
		t.Errorf("exit %d after %s: %s", r.code, took, r.stderr)
	}
}
