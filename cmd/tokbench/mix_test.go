package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// llamaBenchOf is llama-bench's -o json of the same tests as tokbench's
// JSON: only llama-bench's fields (the pinned ones), another build.
func llamaBenchOf(t *testing.T, tbJSON, commit string) []byte {
	var recs []map[string]any
	if err := json.Unmarshal([]byte(tbJSON), &recs); err != nil || len(recs) == 0 {
		t.Fatalf("tokbench's json: %v", err)
	}
	keep := map[string]bool{"samples_ns": true, "samples_ts": true}
	for _, f := range record.LlamaBenchFields {
		keep[f.Name()] = true
	}
	for _, r := range recs {
		for k := range r {
			if !keep[k] {
				delete(r, k)
			}
		}
		r["build_commit"] = commit
	}
	b, _ := json.MarshalIndent(recs, "", "  ")
	return b
}

// tokbench's files and llama-bench's mix both ways: compare pairs a
// llama-bench file with tokbench's of the same tests, one row per test;
// report --sqlite appends tokbench's records to a database made from
// llama-bench's SQL; and, when TOKBENCH_COMPARE_SCRIPT names llama.cpp's
// scripts/compare-llama-bench.py (with python3's GitPython and tabulate),
// the real script finds the two as builds with a speedup row per test, in
// the JSON files and in the mixed database.
func TestFilesMixWithLlamaBench(t *testing.T) {
	dir := t.TempDir()
	r := tokbench(t, "run", "-m", tinyModel(t), "-p", "16", "-n", "8", "-r", "5", "--no-kernels", "-o", "json")
	if r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	tb, lb := filepath.Join(dir, "tb.json"), filepath.Join(dir, "lb.json")
	os.WriteFile(tb, []byte(r.stdout), 0o644)
	os.WriteFile(lb, llamaBenchOf(t, r.stdout, "abcd1234"), 0o644)

	c := tokbench(t, "compare", lb, tb, "-o", "csv")
	if c.code != 0 || strings.Count(c.stdout, "\n") != 3 || !strings.Contains(c.stdout, ",pp16,") || !strings.Contains(c.stdout, ",tg8,") ||
		!strings.Contains(c.stdout, ",1.000,") {
		t.Errorf("compare: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}

	// A side of two runs: both pooled, the side named by its first; one
	// file given twice is not two runs.
	lb2 := filepath.Join(dir, "lb2.json")
	os.WriteFile(lb2, llamaBenchOf(t, r.stdout, "abcd1234"), 0o644)
	if c := tokbench(t, "compare", lb+","+lb2, tb, "-o", "json"); c.code != 0 || !strings.Contains(c.stdout, `"a": "lb.json +1"`) || !strings.Contains(c.stdout, `"a_runs": 2`) {
		t.Errorf("compare of runs: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	if c := tokbench(t, "compare", lb+","+lb, tb); c.code != 2 || !strings.Contains(c.stderr, "names one file twice") {
		t.Errorf("compare of one file twice: exit %d\n%s", c.code, c.stderr)
	}
	// CSV keeps a test's mean alone: two of them test nothing, and say so
	// (exit 3), however far apart.
	lbCSV, tbCSV := filepath.Join(dir, "lb.csv"), filepath.Join(dir, "tb.csv")
	tokbench(t, "report", lb, "-o", "csv", "--out", lbCSV)
	tokbench(t, "report", tb, "-o", "csv", "--out", tbCSV)
	if c := tokbench(t, "compare", lbCSV, tbCSV); c.code != 3 || !strings.Contains(c.stderr, "could be tested") {
		t.Errorf("compare of two CSV files: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}

	// llama-bench's SQL (tokbench writes it from llama-bench's file) made
	// into a database, tokbench's records appended beside.
	db := filepath.Join(dir, "mixed.sqlite")
	sql := tokbench(t, "report", lb, "-o", "sql")
	if sql.code != 0 {
		t.Fatalf("report -o sql: %s", sql.stderr)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	load := exec.Command(py, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.stdin.read()); c.commit()", db)
	load.Stdin = strings.NewReader(sql.stdout)
	if out, err := load.CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v %s", err, out)
	}
	if a := tokbench(t, "report", tb, "--sqlite", db); a.code != 0 || !strings.Contains(a.stderr, "2 tests appended") {
		t.Fatalf("--sqlite: exit %d: %s", a.code, a.stderr)
	}
	if back := tokbench(t, "report", db, "-o", "csv"); back.code != 0 || strings.Count(back.stdout, "\n") != 5 {
		t.Errorf("the mixed database read back: exit %d\n%s%s", back.code, back.stdout, back.stderr)
	}
	if own := tokbench(t, "report", db, "--sqlite", db); own.code != 2 {
		t.Errorf("a database appended to itself: exit %d: %s", own.code, own.stderr)
	}

	script := os.Getenv("TOKBENCH_COMPARE_SCRIPT")
	if script == "" {
		t.Log("TOKBENCH_COMPARE_SCRIPT unset: llama.cpp's compare-llama-bench.py not run (no registry carries it)")
		return
	}
	// The script guesses the tool only of a database: files need -t.
	for name, inputs := range map[string][]string{"json files": {"-t", "llama-bench", "-i", lb, "-i", tb}, "mixed database": {"-i", db}} {
		cmd := exec.Command(py, append(append([]string{script}, inputs...), "-b", "abcd1234", "-c", "ec98e200")...)
		cmd.Dir = dir // no git repository: builds by their commits
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "pp16") || !strings.Contains(string(out), "tg8") || !strings.Contains(string(out), "1.00") {
			t.Errorf("%s: compare-llama-bench.py: %v\n%s", name, err, out)
		}
		t.Logf("%s:\n%s", name, out)
	}
}

// llama-bench's last flags, as its users type them, and what a typo or
// one of its flags tokbench lacks says.
func TestLlamaBenchLastFlags(t *testing.T) {
	m := tinyModel(t)
	quick := []string{"run", "-m", m, "-r", "2", "--no-kernels"}
	run := func(args ...string) result { return tokbench(t, append(append([]string{}, quick...), args...)...) }

	if r := run("-p", "0", "-n", "0", "-pg", "16,8", "-o", "jsonl"); r.code != 0 || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, `"test":"pp16+tg8"`) {
		t.Errorf("-p 0 -n 0 -pg: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run("-p", "16", "-n", "0", "--cpu-strict", "1", "-o", "jsonl"); r.code != 0 || !strings.Contains(r.stdout, `"cpu_strict":true`) {
		t.Errorf("--cpu-strict without -C: exit %d\n%s", r.code, r.stderr)
	}
	r := run("-p", "16", "-n", "8", "--progress", "-oe", "json", "-o", "md")
	for _, want := range []string{"tokbench: benchmark 1/2 pp16: warm-up\n", "tokbench: benchmark 2/2 tg8: repetition 2\n", "1/2 pp16: ", `"avg_ts":`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("--progress -oe json: no %q on stderr:\n%s", want, r.stderr)
		}
	}
	if r.code != 0 || !strings.HasSuffix(r.stdout, "\nbuild: ec98e200 (7437)\n") || strings.Contains(r.stdout, "\n(!) ") || strings.Contains(r.stdout, "limit:") {
		t.Errorf("-o md: exit %d, stdout is llama-bench's Markdown alone:\n%s", r.code, r.stdout)
	}
	// Without --progress, -oe's output is stderr's alone: a JSON array.
	r = run("-p", "16", "-n", "4", "-oe", "json", "-o", "md")
	var oe []map[string]any
	if err := json.Unmarshal([]byte(r.stderr), &oe); r.code != 0 || err != nil || len(oe) != 2 {
		t.Errorf("-o md -oe json: exit %d, stderr is not the JSON alone (%v):\n%s", r.code, err, r.stderr)
	}
	if r := run("-p", "16", "-n", "0", "-v"); r.code != 0 || !strings.Contains(r.stderr, "print_info") {
		t.Errorf("-v after run: exit %d\n%.400s", r.code, r.stderr)
	}
	if r := tokbench(t, "run", "--list-devices"); r.code != 0 || !strings.HasPrefix(r.stdout, "Available devices:\n") {
		t.Errorf("--list-devices: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for args, want := range map[string]string{
		"--progres":         "run has no flag --progres: did you mean --progress?",
		"-fitt 1":           "run has no flag -fitt (llama-bench's): tokbench measures the settings given",
		"--numa distribute": "run has no flag --numa (llama-bench's): tokbench leaves NUMA placement to the system",
		"-sm none -mg 0":    "-sm none -mg 0: this build sees 0 GPUs",
	} {
		r := run(append([]string{"-p", "16", "-n", "0"}, strings.Fields(args)...)...)
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d: %s, want %q", args, r.code, r.stderr, want)
		}
	}
}

// The stderr lines name each test by what varies, whatever settings only
// some of the tests' keys carry (-ncmoe 0 is not in a key, 1 is).
func TestTestLabels(t *testing.T) {
	base := point.Defaults(2)
	base.Model = "m.gguf"
	a, b, c := base, base, base
	b.NCPUMoE, c.NCPUMoE, c.NBatch = 1, 2, 64
	labels := testLabels([]point.Point{a, b, c})
	if !strings.HasPrefix(labels[a.Key()], "1/3 b=2048 ") || !strings.Contains(labels[b.Key()], " ncmoe=1 ") ||
		!strings.Contains(labels[c.Key()], " b=64 ") || !strings.Contains(labels[c.Key()], " ncmoe=2 ") {
		t.Errorf("%v", labels)
	}
}
