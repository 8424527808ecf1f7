package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tokbench/tokbench/record"
)

// llama-bench's knobs reach llama.cpp and the records: -ot (llama.cpp
// logs each tensor it moves), -ncmoe, -ts, -dev none, -nkvo, a thread
// pool of its own (-C, --poll, --prio), --delay before each test, and a
// pp+tg test (-pg) with no roofline.
func TestLlamaBenchKnobs(t *testing.T) {
	model := tinyModel(t)
	start := time.Now()
	r := tokbench(t, "--debug-log", "run", "-m", model, "-p", "16", "-n", "4", "-r", "2", "-pg", "16,4", "-ot", "ffn_up=CPU", "-ncmoe", "1",
		"-ts", "1", "-dev", "none", "-nkvo", "-C", "0x1", "--poll", "0", "--prio", "0", "--delay", "0.2", "--no-telemetry", "--no-probe", "-o", "json")
	took := time.Since(start)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, tail(r.stderr))
	}
	var recs []record.Record
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil || len(recs) != 3 {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	pg := recs[2]
	if pg.Test != "pp16+tg4" || !pg.OK() || pg.AvgTs <= 0 || pg.Roofline != nil || !pg.IsCombined() {
		t.Errorf("pp+tg record: %s %s %v %+v", pg.Test, pg.Status, pg.AvgTs, pg.Roofline)
	}
	for _, rec := range recs {
		if rec.CPUMask != "0x1" || rec.Poll != 0 || rec.NCPUMoE != 1 || rec.TensorOverrides != "ffn_up=CPU" || !rec.NoKVOffload ||
			rec.TensorSplit != "1.00" || rec.DeviceSelect != "none" || !strings.Contains(rec.Key.String(), "|ot=ffn_up=CPU") {
			t.Errorf("%s settings: %+v key %s", rec.Test, rec.Settings, rec.Key)
		}
	}
	if !strings.Contains(r.stderr, "blk.0.ffn_up.weight") || !strings.Contains(r.stderr, "buffer type overridden to CPU") {
		t.Errorf("llama.cpp did not move the tensors -ot names:\n%s", tail(r.stderr))
	}
	if took < 600*time.Millisecond {
		t.Errorf("three tests with --delay 0.2 took %s", took)
	}
	// -o sql: llama-bench's table, one row per test.
	r = tokbench(t, "run", "-m", model, "-p", "16", "-n", "4", "-r", "1", "-pg", "8,2", "--no-telemetry", "--no-probe", "-o", "sql")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "CREATE TABLE IF NOT EXISTS llama_bench") || strings.Count(r.stdout, "INSERT INTO llama_bench") != 3 {
		t.Errorf("-o sql: exit %d\n%s", r.code, r.stdout)
	}
	for _, c := range []struct{ args, want string }{
		{"-ot exps", "PATTERN=BUFFER_TYPE"},
		{"-ot exps=GPU7", "no such buffer type (have: CPU"},
		{"-ot (?i)exps=CPU", "ECMAScript"},
		{"-dev CUDA7", "no such GPU device"},
		{"-ts 1/x", "-ts"},
		{"-C 0xZ", "not a hex digit"},
		{"--cpu-strict --poll none", "runs no thread pool"},
		{"--poll 101", "--poll"},
		{"--prio 9", "--prio"},
		{"-pg 8", "-pg"},
		{"--delay soon", "--delay"},
	} {
		args := append([]string{"run", "-m", model, "-p", "8", "-n", "2"}, strings.Fields(c.args)...)
		if r := tokbench(t, args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d %s, want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

func tail(s string) string {
	if len(s) > 3000 {
		return "..." + s[len(s)-3000:]
	}
	return s
}

// A sweep takes the knobs too: --poll and -ncmoe as axes, -pg a pp+tg
// test per point.
func TestSweepKnobs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "knobs.jsonl")
	r := tokbench(t, "sweep", "--synth", "tiny", "--types", "q8_0", "-p", "16", "-n", "4", "-r", "1", "-pg", "8,2", "--poll", "0,50",
		"-ot", "ffn_down=CPU", "--no-telemetry", "--no-kernels", "--out", out, "-o", "csv")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, tail(r.stderr))
	}
	recs := readResults(t, out)
	tests := map[string]int{}
	for _, rec := range recs {
		tests[fmt.Sprintf("%s poll=%d", rec.Test, rec.Poll)]++
		if rec.TensorOverrides != "ffn_down=CPU" || !rec.OK() {
			t.Errorf("%s: %s %s", rec.Test, rec.TensorOverrides, rec.Status)
		}
	}
	for _, want := range []string{"pp16 poll=0", "tg4 poll=0", "pp8+tg2 poll=0", "pp16 poll=50", "tg4 poll=50", "pp8+tg2 poll=50"} {
		if tests[want] != 1 {
			t.Errorf("records %v lack %s", tests, want)
		}
	}
	if r := tokbench(t, "sweep", "--synth", "tiny", "-p", "16", "-n", "0", "-dev", "CUDA9", "--dry-run"); r.code != 2 || !strings.Contains(r.stderr, "no such GPU device") {
		t.Errorf("-dev CUDA9: exit %d %s", r.code, r.stderr)
	}
}
