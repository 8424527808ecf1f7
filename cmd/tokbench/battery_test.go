package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var resultsOnce struct {
	sync.Once
	text string
}

// someResults is a results file's content: one measured test of the
// tiny model, made once.
func someResults(t *testing.T) string {
	t.Helper()
	resultsOnce.Do(func() {
		// --probe: a roofline (and its chart) whatever ran before.
		r := tokbench(t, "run", "-m", tinyModel(t), "-p", "8", "-n", "0", "-r", "1", "--no-kernels", "--probe", "-o", "jsonl")
		if r.code == 0 {
			resultsOnce.text = r.stdout
		}
	})
	if resultsOnce.text == "" {
		t.Fatal("no results to report")
	}
	return resultsOnce.text
}

// holdLock takes a results file's writer lock, as a live sweep holds it,
// until the test ends.
func holdLock(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
}

// Outputs that are their own input, or a results file another tokbench
// writes, are refused before anything is written; what was there stays.
func TestReportOutNeverItsInputOrALiveFile(t *testing.T) {
	results := someResults(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	os.WriteFile(in, []byte(results), 0o644)
	link := filepath.Join(dir, "link.csv")
	os.Symlink(in, link)
	for _, out := range []string{in, link} {
		r := tokbench(t, "report", in, "-o", "csv", "--out", out)
		if b, _ := os.ReadFile(in); r.code != 2 || string(b) != results || !strings.Contains(r.stderr, "give another --out") {
			t.Errorf("--out %s: exit %d, %s; input now %q", out, r.code, r.stderr, b)
		}
	}
	// A live sweep's file: its writer holds the lock.
	live := filepath.Join(dir, "live.jsonl")
	os.WriteFile(live, []byte(results), 0o644)
	holdLock(t, live)
	r := tokbench(t, "report", in, "-o", "csv", "--out", live)
	if b, _ := os.ReadFile(live); r.code != 2 || string(b) != results || !strings.Contains(r.stderr, "another tokbench") {
		t.Errorf("--out onto a live file: exit %d, %s; it now holds %q", r.code, r.stderr, b)
	}
}

// -o md writes its charts beside the Markdown without following a link
// planted at their names.
func TestMarkdownChartsNotThroughLinks(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	os.WriteFile(in, []byte(someResults(t)), 0o644)
	target := filepath.Join(dir, "precious")
	os.WriteFile(target, []byte("precious"), 0o644)
	os.Symlink(target, filepath.Join(dir, "rep-1.svg"))
	if r := tokbench(t, "report", in, "-o", "md", "--out", filepath.Join(dir, "rep.md")); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("written through the link: %.40q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "rep-1.svg")); !bytes.HasPrefix(b, []byte("<svg")) {
		t.Errorf("rep-1.svg: %.40q", b)
	}
}

// A quantize that fails leaves --out as it was: a file, or a folder.
func TestFailedQuantizeKeepsOut(t *testing.T) {
	dir := t.TempDir()
	q8 := filepath.Join(dir, "q8.gguf")
	if r := tokbench(t, "synth", "--preset", "tiny", "--type", "q8_0", "--out", q8); r.code != 0 {
		t.Fatalf("synth: %s", r.stderr)
	}
	keep := filepath.Join(dir, "p.txt")
	os.WriteFile(keep, []byte("mine"), 0o644)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, out := range []string{keep, empty} {
		if r := tokbench(t, "quantize", "-m", q8, "--type", "q4_0", "--out", out); r.code == 0 {
			t.Errorf("requantizing without --allow-requantize into %s succeeded", out)
		}
	}
	if b, _ := os.ReadFile(keep); string(b) != "mine" {
		t.Errorf("p.txt now %q", b)
	}
	if st, err := os.Stat(empty); err != nil || !st.IsDir() {
		t.Errorf("the folder is gone: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("left behind: %v", ents)
	}
}

// A load run its flags refuse (a sampling rate past the limit) leaves no
// empty --out behind.
func TestRefusedLoadMakesNoOut(t *testing.T) {
	out := filepath.Join(t.TempDir(), "load.jsonl")
	r := tokbench(t, "load", "--synth", "tiny", "--requests", "2", "--telemetry-rate", "100000", "--out", out)
	if r.code != 2 || !strings.Contains(r.stderr, "rate") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--out made: %v", err)
	}
}

// A quantize onto an existing model replaces the file's name, not its
// content: a process that has it open (mapped, by a run) keeps reading
// the old one.
func TestQuantizeOntoOpenModel(t *testing.T) {
	dir := t.TempDir()
	f16 := filepath.Join(dir, "f16.gguf")
	out := filepath.Join(dir, "out.gguf")
	for _, p := range []string{f16, out} {
		if r := tokbench(t, "synth", "--preset", "tiny", "--type", "f16", "--out", p); r.code != 0 {
			t.Fatalf("synth: %s", r.stderr)
		}
	}
	before, _ := os.ReadFile(out)
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if r := tokbench(t, "quantize", "-m", f16, "--type", "q4_0", "--out", out); r.code != 0 {
		t.Fatalf("quantize: %s", r.stderr)
	}
	var held bytes.Buffer
	held.ReadFrom(f)
	if !bytes.Equal(held.Bytes(), before) {
		t.Error("the open file's content changed under it")
	}
}

// Two processes making the same model in one cache: both succeed and the
// model is whole.
func TestConcurrentSynthIntoCache(t *testing.T) {
	cache := t.TempDir()
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = tokbenchEnv(t, []string{"TOKBENCH_CACHE=" + cache}, "synth", "--preset", "smollm-135m", "--type", "q8_0", "--cache")
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("process %d: exit %d: %s", i, r.code, r.stderr)
		}
	}
	models, _ := filepath.Glob(filepath.Join(cache, "*.gguf"))
	if len(models) != 1 {
		t.Fatalf("models %v", models)
	}
	if r := tokbench(t, "info", models[0]); r.code != 0 {
		t.Errorf("the model is not whole: %s", r.stderr)
	}
	if all, _ := os.ReadDir(cache); len(all) != 1 {
		t.Errorf("left in the cache: %v", all)
	}
}

// The first signal ends synth, quantize's model making and probe at once
// (exit 130), leaving nothing under the final name and no temporary file.
func TestSignalEndsMakingAtOnce(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.gguf")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"synth", []string{"synth", "--preset", "llama-1b", "--type", "q4_0", "--out", out}},
		{"probe", []string{"probe"}},
	} {
		cmd := exec.Command(binPath, c.args...)
		cmd.Env = append(os.Environ(), "TOKBENCH_CACHE="+filepath.Join(dir, "cache"))
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		sent := time.Now()
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%s: still running 30 s after SIGINT", c.name)
		}
		if code := cmd.ProcessState.ExitCode(); code != 130 || time.Since(sent) > 5*time.Second {
			t.Errorf("%s: exit %d %v after SIGINT: %s", c.name, code, time.Since(sent), errb.String())
		}
	}
	for _, e := range func() []os.DirEntry { ents, _ := os.ReadDir(dir); return ents }() {
		if e.Name() != "cache" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if probes, _ := filepath.Glob(filepath.Join(dir, "cache", "probe", "*")); len(probes) != 0 {
		t.Errorf("an interrupted probe was saved: %v", probes)
	}
}

// SIGHUP (the terminal closed) stops a sweep as SIGINT does: what was
// measured is kept and the resume command printed.
func TestSweepHangupKeepsResults(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.jsonl")
	stopSweep(t, out, syscall.SIGHUP)
	if recs := readResults(t, out); len(recs) == 0 {
		t.Error("nothing kept")
	}
}

// A reader of the output that goes away (| head -1) stops a run as a
// signal does, not by SIGPIPE before anything is measured.
func TestBrokenPipeStopsInOrder(t *testing.T) {
	model := tinyModel(t)
	cmd := exec.Command(binPath, "run", "-m", model, "-p", "16,32", "-n", "0", "-r", "2", "-o", "jsonl")
	stdout, _ := cmd.StdoutPipe()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	stdout.Close()
	if err != nil || !strings.Contains(line, `"n_prompt":16`) {
		t.Fatalf("first line %q, %v", line, err)
	}
	cmd.Wait()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Errorf("killed by %v: %s", ws.Signal(), errb.String())
	}
}
