package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/gguf/mutate"
	"github.com/tokbench/tokbench/internal/isolate"
	"github.com/tokbench/tokbench/record"
)

// vocabModel is a synthetic F16 model with a real-size vocabulary (32000
// tokens, as Llama 2's) and tiny layers: the base every hostile file is
// made from.
var vocabModel = sync.OnceValues(func() (*mutate.File, error) {
	p := filepath.Join(workDir, "vocab32k-f16.gguf")
	out, err := runBin("synth", "--n-vocab", "32000", "--n-embd", "64", "--n-layer", "2", "--n-ff", "128",
		"--n-head", "2", "--n-head-kv", "1", "--type", "f16", "--seed", "5", "--out", p)
	if err != nil {
		return nil, fmt.Errorf("synth: %v: %s", err, out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return mutate.Decode(b)
})

// loadOutcome runs a file through what every command does before handing
// it to llama.cpp (the Go validator, then a load in a child process). A
// *isolate.CrashError means llama.cpp aborted or crashed on a file the
// validator let through: a check is missing.
func loadOutcome(path string) error {
	if _, _, err := gguf.Inspect(path); err != nil {
		return err
	}
	return isolate.Cmd{Exe: binPath}.CheckModel(context.Background(), path)
}

// FuzzLoad mutates a real synthetic model (header, metadata values and
// types, vocabulary strings, tensor infos, weight bytes) and fails on any
// mutant llama.cpp aborts or crashes on after validation passed. `make
// fuzz-load` runs it; what it finds is saved under testdata/fuzz/FuzzLoad
// and replayed by every `go test`.
func FuzzLoad(f *testing.F) {
	base, err := vocabModel()
	if err != nil {
		f.Fatal(err)
	}
	for op := range uint8(16) {
		f.Add(op, uint32(7), uint32(3), uint64(1))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, op uint8, a, b uint32, v uint64) {
		data, desc := mutate.Apply(base, mutate.Mutation{Op: mutate.Op(op), A: a, B: b, V: v})
		path := filepath.Join(dir, fmt.Sprintf("m%d.gguf", rand.Uint64()))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		var crash *isolate.CrashError
		if err := loadOutcome(path); errors.As(err, &crash) {
			t.Fatalf("%s: validation passed but %v", desc, err)
		}
	})
}

// hostileCorpus writes n mutants of the base model, each a different
// mutation drawn from a fixed seed.
func hostileCorpus(t *testing.T, n int) (paths, descs []string) {
	base, err := vocabModel()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(17, 0))
	for i := range n {
		data, desc := mutate.Apply(base, mutate.Random(r))
		p := filepath.Join(dir, fmt.Sprintf("mutant-%03d.gguf", i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths, descs = append(paths, p), append(descs, desc)
	}
	return paths, descs
}

// Every command that takes a model gives, on each of 100 hostile files,
// a normal run or a clean error: exit 1 or 2, a short message, no
// backtrace, no goroutine dump.
func TestHostileModels(t *testing.T) {
	paths, descs := hostileCorpus(t, 100)
	out := t.TempDir()
	commands := []struct {
		name string
		args func(p string) []string
	}{
		{"info", func(p string) []string { return []string{"info", "-m", p} }},
		{"run", func(p string) []string {
			return []string{"run", "-m", p, "-p", "8", "-n", "4", "-r", "1", "--no-warmup", "--no-telemetry", "-t", "1"}
		}},
		{"load", func(p string) []string {
			return []string{"load", "-m", p, "--requests", "2", "--concurrency", "1", "--prompt-len", "8", "--output-len", "4", "-t", "1", "--no-telemetry"}
		}},
		{"quantize", func(p string) []string {
			return []string{"quantize", "-m", p, "--type", "q8_0", "--out", filepath.Join(out, "q.gguf"), "-t", "1"}
		}},
	}
	counts := map[string]int{}
	for i, p := range paths {
		for _, c := range commands {
			r := tokbench(t, c.args(p)...)
			counts[fmt.Sprintf("%s exit %d", c.name, r.code)]++
			if r.code == 0 {
				continue
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			last := lines[len(lines)-1]
			bad := r.code > 2 || len(lines) > 2 || strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "gdb") ||
				strings.Contains(r.stderr, "SIGABRT") || !strings.HasPrefix(last, "tokbench: ") || len(last) > 600
			if bad {
				t.Errorf("mutant %d (%s): tokbench %s: exit %d, not a clean error:\n%s", i, descs[i], c.name, r.code, r.stderr)
			}
		}
	}
	t.Logf("outcomes: %v", counts)
	if counts["info exit 0"] == 0 || counts["info exit 1"] == 0 {
		t.Errorf("the corpus should hold both files info takes and files it refuses: %v", counts)
	}
}

// The file of the issue that started this: two identical token strings.
// info names both ids; run refuses it before llama.cpp sees it.
func TestDuplicateTokenRefused(t *testing.T) {
	base, err := vocabModel()
	if err != nil {
		t.Fatal(err)
	}
	data, desc := mutate.Apply(base, mutate.Mutation{Op: mutate.DupToken, A: 4000, B: 1200})
	p := filepath.Join(t.TempDir(), "dup.gguf")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"info", "-m", p}, {"run", "-m", p, "-p", "8", "-n", "4", "-r", "1"}} {
		r := tokbench(t, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "tokens 1200 and 4000 are both") {
			t.Errorf("%s (%s): exit %d: %s", args[0], desc, r.code, r.stderr)
		}
	}
}

// runBin runs the built tokbench outside a test (for shared fixtures).
func runBin(args ...string) (string, error) {
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), "TOKBENCH_CACHE="+filepath.Join(workDir, "cache"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// A named pipe given as a model, spec, workload or trace is refused at
// once (no writer ever comes: reading it would block past SIGTERM), with
// exit 1 or 2 and a message that says what it is.
func TestNamedPipesRefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "f.gguf")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no mkfifo:", err)
	}
	for _, args := range [][]string{
		{"run", "-m", fifo, "-p", "8", "-n", "0"},
		{"info", "-m", fifo},
		{"sweep", "-m", fifo, "-p", "8", "-n", "0", "--dry-run"},
		{"sweep", "--spec", fifo, "--dry-run"},
		{"load", "--synth", "tiny", "--workload", fifo, "--requests", "1"},
		{"load", "--synth", "tiny", "--trace", fifo},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, binPath, args...)
		cmd.Env = append(os.Environ(), "TOKBENCH_CACHE="+filepath.Join(workDir, "cache"))
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		timedOut := ctx.Err() != nil
		cancel()
		var ee *exec.ExitError
		if timedOut || !errors.As(err, &ee) || ee.ExitCode() < 1 || ee.ExitCode() > 2 || !strings.Contains(errb.String(), "named pipe") {
			t.Errorf("%v: %v (timed out: %v): %s", args, err, timedOut, errb.String())
		}
	}
}

// A model file whose name holds "|" or "," is measured like any other:
// by sweep's worker (points are keyed with "|") and named whole by -m.
func TestOddModelNames(t *testing.T) {
	src, err := os.ReadFile(tinyModel(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"a|b.gguf", "c,d.gguf"} {
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "s.jsonl")
	r := tokbench(t, "sweep", "-m", filepath.Join(dir, "a|b.gguf"), "-p", "8", "-n", "0", "-r", "1", "--no-telemetry", "--out", out)
	if recs, _, _, _ := record.Read(out); r.code != 0 || len(recs) != 1 || filepath.Base(recs[0].ModelFile) != "a|b.gguf" {
		t.Errorf("a|b.gguf: exit %d, %d records: %s", r.code, len(recs), r.stderr)
	}
	for _, m := range []string{filepath.Join(dir, "c,d.gguf"), filepath.Join(dir, `c\,d.gguf`) + "," + filepath.Join(dir, "a|b.gguf")} {
		r := tokbench(t, "sweep", "-m", m, "-p", "8", "-n", "0", "-r", "1", "--no-telemetry", "--dry-run")
		if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "c,d.gguf") {
			t.Errorf("-m %s: exit %d: %s%s", m, r.code, r.stdout, r.stderr)
		}
	}
}

// A corrupt results file is an unusable file, exit 1, in every command
// that reads one (a complete garbage line is corruption, not a torn one);
// a --reference that names no class of the file is bad input, exit 2.
func TestCorruptFileOneExitCode(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	if r := tokbench(t, "sweep", "-m", tinyModel(t), "-p", "8", "-n", "0", "-r", "1", "--no-telemetry", "--out", good); r.code != 0 {
		t.Fatalf("sweep: exit %d: %s", r.code, r.stderr)
	}
	data, _ := os.ReadFile(good)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, append(data, "not a record\n"...), 0o644)
	for _, args := range [][]string{
		{"report", bad},
		{"baseline", "create", bad, "--dir", filepath.Join(dir, "b")},
		{"baseline", "compare", bad, "--dir", filepath.Join(dir, "b")},
		{"merge", bad, "--out", filepath.Join(dir, "m.jsonl")},
		{"sweep", "-m", tinyModel(t), "-p", "8", "-n", "0", "-r", "1", "--no-telemetry", "--out", bad, "--resume"},
	} {
		if r := tokbench(t, args...); r.code != 1 || !strings.Contains(r.stderr, "line 2") {
			t.Errorf("%v: exit %d: %s", args[0], r.code, r.stderr)
		}
	}
	for _, args := range [][]string{{"merge", "--out", filepath.Join(dir, "m.jsonl"), filepath.Join(dir, "none.jsonl")}, {"report", filepath.Join(dir, "none.jsonl")}} {
		if r := tokbench(t, args...); r.code != 1 || !strings.Contains(r.stderr, "no such file") {
			t.Errorf("%v: exit %d: %s", args, r.code, r.stderr)
		}
	}
	if r := tokbench(t, "report", good, "--reference", "nope"); r.code != 2 || !strings.Contains(r.stderr, "--reference nope") {
		t.Errorf("report --reference nope: exit %d: %s", r.code, r.stderr)
	}
}

// An unknown command is bad input (exit 2; 3 is a baseline comparison
// that matched nothing).
func TestUnknownCommand(t *testing.T) {
	if r := tokbench(t, "frobnicate"); r.code != 2 || !strings.Contains(r.stderr, `no command "frobnicate"`) {
		t.Errorf("unknown command: exit %d: %s", r.code, r.stderr)
	}
}

// NaN, infinities and out-of-range numbers in flags are bad input, said
// at once (a NaN burstiness used to spin at 100% CPU past SIGTERM).
func TestNonFiniteFlagsRefused(t *testing.T) {
	load := []string{"load", "--synth", "tiny", "--requests", "2", "--no-telemetry"}
	for _, extra := range [][]string{
		append(load, "--rate", "2", "--burstiness", "nan"),
		append(load, "--rate", "2", "--burstiness", "inf"),
		append(load, "--rate", "nan"),
		append(load, "--abusive-fraction", "nan"),
		append(load, "--drop-threshold", "nan"),
		append(load, "--rate", "-1"),
		{"capacity", "--synth", "tiny", "--slo", "e2e_p99=1s", "--open-loop", "--max-rate", "nan"},
		{"capacity", "--synth", "tiny", "--slo", "e2e_p99=1s", "--max-time", "-1s"},
		{"baseline", "compare", "x.jsonl", "--alpha", "2"},
		{"baseline", "compare", "x.jsonl", "--alpha", "nan"},
		{"baseline", "compare", "x.jsonl", "--min-effect", "-1"},
		{"sweep", "--synth", "tiny", "-r", "auto", "--target-ci", "nan", "--dry-run"},
		{"run", "--synth", "tiny", "-r", "auto", "--target-ci", "-inf"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, binPath, extra...).CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--") {
			t.Errorf("%v: %v: %s", extra, err, out)
		}
	}
}

// SIGINT during planning ends a sweep before it measures, also when the
// shell started it with SIGINT ignored (a background job): exit 130,
// nothing measured.
func TestSignalDuringPlanning(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.jsonl")
	cmd := exec.Command("sh", "-c", `trap "" INT; exec "$0" "$@"`, binPath, "sweep", "--synth", "tiny", "-p", "1-1000+1", "-n", "0",
		"-d", "0-299+1", "--max-points", "300000", "-r", "2", "--no-telemetry", "--out", out)
	cmd.Env = append(os.Environ(), "TOKBENCH_CACHE="+filepath.Join(workDir, "cache"))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("exit %v: %s", err, errb.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("still running 60 s after SIGINT: %s", errb.String())
	}
	if data, _ := os.ReadFile(out); len(data) > 0 {
		t.Errorf("measured after SIGINT: %d bytes written", len(data))
	}
}

// A --telemetry-out that cannot be written is refused before anything is
// measured, by run, load and sweep alike (a sweep used to fail every point).
func TestTelemetryOutCheckedFirst(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "missing", "t.jsonl")
	out := filepath.Join(t.TempDir(), "s.jsonl")
	for _, args := range [][]string{
		{"run", "--synth", "tiny", "-p", "8", "-n", "4", "-r", "1", "--telemetry-out", bad},
		{"load", "--synth", "tiny", "--requests", "2", "--concurrency", "1", "--prompt-len", "8", "--output-len", "4", "--telemetry-out", bad},
		{"sweep", "--synth", "tiny", "-p", "8", "-n", "4", "-r", "1", "--out", out, "--telemetry-out", bad},
	} {
		r := tokbench(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--telemetry-out") || strings.Contains(r.stderr, "t/s") {
			t.Errorf("%s: exit %d: %s", args[0], r.code, r.stderr)
		}
	}
	if data, _ := os.ReadFile(out); len(data) > 0 {
		t.Errorf("the sweep measured: %s", data)
	}
}
