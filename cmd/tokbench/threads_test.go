package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/record"
)

// Threads past the cores: said once, up front; their tests run on a
// budget (no warm-up, not split) and say so, named by their threads; the
// probe is the cores', one class for the machine.
func TestThreadsPastTheCores(t *testing.T) {
	cores := runtime.NumCPU()
	over := 2 * cores
	list := fmt.Sprintf("1,%d,%d", over, 4*cores)
	// A step made slow (as ggml's own pool makes an oversubscribed one:
	// seconds a token; libgomp's threads yield, so an OpenMP build's is
	// not) makes tg32 outlast the budget at every count past the cores;
	// pp64 is one step a repetition and may finish within it.
	slow := []string{"--test-step-delay", "50ms"}
	// --no-probe: a probe taken on a busy stretch adds its doubt to some
	// tests' notes, which then differ.
	r := tokbench(t, append([]string{"run", "--synth", "tiny", "-t", list, "-p", "64", "-n", "32", "-r", "2", "--no-probe"}, slow...)...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "more threads than this machine's"); n != 1 {
		t.Errorf("warned %d times, not once:\n%s", n, r.stderr)
	}
	for _, want := range []string{fmt.Sprintf("threads %d tg32", over), fmt.Sprintf("threads %d tg32", 4*cores), "cut at 1s, no warm-up"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the table's notes lack %q:\n%s", want, r.stdout)
		}
	}
	if strings.Count(r.stdout, "cut at 1s") != 1 {
		t.Errorf("the oversubscribed tests share one note:\n%s", r.stdout)
	}
	r = tokbench(t, append([]string{"run", "--synth", "tiny", "-t", fmt.Sprint(over), "-p", "0", "-n", "32", "-r", "5", "-o", "json"}, slow...)...)
	var recs []record.Record
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil || len(recs) != 1 {
		t.Fatalf("exit %d %v: %s", r.code, err, r.stderr)
	}
	rec := recs[0]
	if !strings.Contains(rec.KernelsNote, "not split") || rec.Noise == nil || !strings.Contains(strings.Join(rec.Noise.Warnings, " "), "cut at") ||
		rec.AvgTs <= 0 || rec.Class() != "cpu-"+strings.TrimPrefix(rec.Class(), "cpu-") || strings.HasSuffix(rec.Class(), "t") {
		t.Errorf("oversubscribed record: class %s, kernels %q, noise %+v, %.2f t/s", rec.Class(), rec.KernelsNote, rec.Noise, rec.AvgTs)
	}
	r = tokbench(t, "run", "--synth", "tiny", "-t", "1,2", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "t=1") || !strings.Contains(r.stdout, "t=2") {
		t.Errorf("dry run without its threads: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if len(l) > 120 {
			t.Errorf("a dry run's line of %d columns: %s", len(l), l)
		}
	}
}
