package main

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// lbLines writes n llama-bench JSONL records (pp512 of build b) with the
// samples given, and returns the file's path.
func lbLines(t *testing.T, dir, name, build string, n int, samples string) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"build_commit":%q,"build_number":1,"model_filename":"m%d.gguf","model_type":"llama 1B Q4_0","n_prompt":512,"n_gen":0,"n_depth":0,"n_threads":2,"n_gpu_layers":0,"avg_ts":100,"stddev_ts":1,"samples_ts":%s}`+"\n", build, i, samples)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func countRows(t *testing.T, db string) int {
	t.Helper()
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRow("SELECT count(*) FROM llama_bench").Scan(&n); err != nil {
		return 0
	}
	return n
}

// A .sql results file that would act on the machine is refused by every
// reader before anything runs: nothing is made, the exit is not 0, the
// line is named.
func TestSQLFileIsNotRun(t *testing.T) {
	dir := t.TempDir()
	made := filepath.Join(dir, "made.sqlite")
	path := filepath.Join(dir, "evil.sql")
	os.WriteFile(path, []byte("CREATE TABLE IF NOT EXISTS llama_bench (avg_ts REAL, n_prompt INTEGER);\n"+
		"INSERT INTO llama_bench VALUES (100, 512);\nATTACH DATABASE '"+made+"' AS x;\nCREATE TABLE x.t (a);\n"), 0o644)
	for _, args := range [][]string{
		{"report", path}, {"compare", path, path}, {"merge", path, "--out", filepath.Join(dir, "m.jsonl")},
		{"baseline", "create", path, "--dir", filepath.Join(dir, "b")}, {"report", path, "--sqlite", filepath.Join(dir, "db.sqlite")},
	} {
		start := time.Now()
		r := tokbench(t, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "line 3") || time.Since(start) > 30*time.Second {
			t.Errorf("%v: exit %d, %s", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(made); err == nil {
		t.Error("the SQL file made a database")
	}
}

// The first SIGTERM ends report --sqlite at once (exit 130) and appends
// nothing: the transaction commits whole or not at all.
func TestSignalStopsAppend(t *testing.T) {
	dir := t.TempDir()
	in := lbLines(t, dir, "big.jsonl", "abcdef12", 60000, "[100]")
	db := filepath.Join(dir, "db.sqlite")
	for _, delay := range []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond} {
		cmd := exec.Command(binPath, "report", in, "--sqlite", db)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("report --sqlite went on 20 s after SIGTERM (sent after %s)", delay)
		}
		code := cmd.ProcessState.ExitCode()
		if n := countRows(t, db); code == 0 && n == 60000 {
			t.Logf("after %s: it had finished (%d rows)", delay, n)
			os.Remove(db)
		} else if code != 130 || n != 0 {
			t.Errorf("SIGTERM after %s: exit %d, %d rows appended (want 130 and none)", delay, code, n)
		}
	}
}

// Appends from several processes into one database wait for each other:
// every one succeeds and every row is there once.
func TestConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "db.sqlite")
	var wg sync.WaitGroup
	results := make([]result, 4)
	for i := range results {
		in := lbLines(t, dir, fmt.Sprintf("in%d.jsonl", i), fmt.Sprintf("build%03d", i), 3000, "[100]")
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = tokbench(t, "report", in, "--sqlite", db)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("append %d: exit %d: %s", i, r.code, r.stderr)
		}
	}
	if n := countRows(t, db); n != 12000 {
		t.Errorf("%d rows, want 12000", n)
	}
}

// compare's memory is linear in the samples: 20,000 a side (as pairwise
// ratios, 3.2 GB) stays under 100 MB.
func TestCompareMemory(t *testing.T) {
	dir := t.TempDir()
	var a, b strings.Builder
	a.WriteString("[100")
	b.WriteString("[90")
	for i := 1; i < 20000; i++ {
		fmt.Fprintf(&a, ",%g", 100+float64(i%97)/50)
		fmt.Fprintf(&b, ",%g", 90+float64(i%89)/50)
	}
	a.WriteString("]")
	b.WriteString("]")
	pa, pb := lbLines(t, dir, "a.jsonl", "aaaaaaa1", 1, a.String()), lbLines(t, dir, "b.jsonl", "aaaaaaa1", 1, b.String())
	cmd := exec.Command(binPath, "compare", pa, pb)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "slower") {
		t.Errorf("a 10%% slowdown of 20,000 samples: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
	if rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss; rss > 100<<10 {
		t.Errorf("compare of 20,000 samples a side: peak %d MB", rss>>10)
	}
}

// A Markdown report's charts never replace an input; a BOM does not
// empty a file; the smaller items each say what is wrong.
func TestResultsInputsOddities(t *testing.T) {
	dir := t.TempDir()
	in := lbLines(t, dir, "X-1.svg", "abcdef12", 2, "[100,101]")
	before, _ := os.ReadFile(in)
	r := tokbench(t, "report", in, "-o", "md", "--out", filepath.Join(dir, "X.md"))
	if after, _ := os.ReadFile(in); r.code != 2 || string(after) != string(before) {
		t.Errorf("-o md --out X.md over an input X-1.svg: exit %d, %s", r.code, r.stderr)
	}
	bom := filepath.Join(dir, "bom.json")
	os.WriteFile(bom, []byte("\xef\xbb\xbf["+strings.ReplaceAll(strings.TrimSpace(string(before)), "\n", ",")+"]"), 0o644)
	if r := tokbench(t, "report", bom, "-o", "csv"); r.code != 0 || strings.Count(r.stdout, "\n") != 3 {
		t.Errorf("a JSON array after a BOM: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	utf16 := filepath.Join(dir, "u16.json")
	os.WriteFile(utf16, []byte("\xff\xfe[\x00{\x00}\x00]\x00"), 0o644)
	if r := tokbench(t, "report", utf16); r.code == 0 || !strings.Contains(r.stderr, "UTF-16") {
		t.Errorf("UTF-16: exit %d, %s", r.code, r.stderr)
	}
	zero := lbLines(t, dir, "zero.jsonl", "abcdef12", 1, "[0]")
	if r := tokbench(t, "compare", zero, zero, "-o", "json"); r.code == 0 || !strings.Contains(r.stderr, "0 t/s") {
		t.Errorf("a rate of 0: exit %d, %s", r.code, r.stderr)
	}
	neg := filepath.Join(dir, "neg.jsonl")
	os.WriteFile(neg, []byte(`{"build_commit":"a","n_prompt":-512,"n_gen":0,"avg_ts":100,"samples_ts":[100]}`+"\n"), 0o644)
	if r := tokbench(t, "report", neg); r.code == 0 || !strings.Contains(r.stderr, "n_prompt -512") {
		t.Errorf("n_prompt -512: exit %d, %s", r.code, r.stderr)
	}
	if r := tokbench(t, "compare", ",", in); r.code != 2 || !strings.Contains(r.stderr, "names no file") {
		t.Errorf("compare , b: exit %d, %s", r.code, r.stderr)
	}
	if r := tokbench(t, "report", in, "--sqlite", filepath.Join(dir, "d.sqlite"), "-o", "html", "--out", filepath.Join(dir, "r.html")); r.code != 2 {
		t.Errorf("--sqlite with -o html --out: exit %d, %s", r.code, r.stderr)
	}
	if r := tokbench(t, "run", "--x\x1b[31m\r"); r.code != 2 || strings.ContainsAny(r.stderr, "\x1b\r") {
		t.Errorf("an unknown flag with escapes: exit %d, %q", r.code, r.stderr)
	}
	if r := tokbench(t, "run", "--synth", "tiny", "-pg", "1048577,1"); r.code != 2 || !strings.Contains(r.stderr, "at most") {
		t.Errorf("-pg over the cap: exit %d, %s", r.code, r.stderr)
	}
}

// Builds are selected, never pooled: a side holding two builds is refused
// with what it holds; -b and -c pick them, from one file or two.
func TestCompareBuilds(t *testing.T) {
	dir := t.TempDir()
	one := lbLines(t, dir, "one.jsonl", "aaaaaaa1", 2, "[100,101,99,100,100]")
	two := lbLines(t, dir, "two.jsonl", "bbbbbbb2", 2, "[80,81,79,80,80]")
	both := filepath.Join(dir, "both.jsonl")
	a, _ := os.ReadFile(one)
	b, _ := os.ReadFile(two)
	os.WriteFile(both, append(a, b...), 0o644)
	if r := tokbench(t, "compare", both, one); r.code != 2 || !strings.Contains(r.stderr, "2 builds") || !strings.Contains(r.stderr, "aaaaaaa1 (2 tests)") {
		t.Errorf("a side of two builds: exit %d, %s", r.code, r.stderr)
	}
	r := tokbench(t, "compare", both, "-b", "aaaa", "-c", "bbbb", "-o", "json")
	if r.code != 1 || !strings.Contains(r.stdout, `"regression": true`) {
		t.Errorf("-b -c in one file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := tokbench(t, "compare", both, both, "-b", "aaaa", "-c", "aaaa"); r.code != 0 {
		t.Errorf("one build against itself: exit %d, %s", r.code, r.stderr)
	}
	if r := tokbench(t, "compare", one, filepath.Join(dir, "missing.jsonl")); r.code != 2 {
		t.Errorf("a missing file: exit %d, %s", r.code, r.stderr)
	}
}
