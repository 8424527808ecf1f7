package baseline

import (
	"math"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/record"
)

func diffRec(test string, threads int, samples ...float64) record.Record {
	r := record.Record{Test: test, Status: record.StatusOK}
	r.ModelType, r.ModelParams, r.NThreads, r.SamplesTs = "llama 56M Q4_0", 56e6, threads, samples
	return r
}

// Two files' tests pair by model and settings: a 5% slowdown in five
// samples each is significant, with an interval of the ratio that holds
// 0.95 and leaves out 1; the same spread around the same mean is not; a
// test in one file only is counted, not compared; a side with one sample
// (llama-bench's CSV) is never called significant, and says why.
func TestDiffs(t *testing.T) {
	a := []record.Record{diffRec("tg64", 2, 100, 101, 99, 100.5, 99.5), diffRec("pp64", 2, 1000, 1010, 990, 1005, 995), diffRec("tg64", 4, 180)}
	b := []record.Record{diffRec("tg64", 2, 95, 96, 94, 95.5, 94.5), diffRec("pp64", 2, 1001, 1009, 991, 1004, 996), diffRec("tg64", 4, 170),
		diffRec("tg16", 2, 5)}
	diffs, unmatched := Diffs([][]record.Record{a}, [][]record.Record{b}, 0.05, 0.02)
	if len(diffs) != 3 || unmatched != 1 {
		t.Fatalf("%d diffs, %d unmatched", len(diffs), unmatched)
	}
	tg, pp, one := diffs[0], diffs[1], diffs[2]
	if tg.Verdict != Slower || tg.P >= 0.05 || math.Abs(tg.Speedup-0.95) > 1e-9 || !(tg.Ratio.Lo < 0.95 && tg.Ratio.Hi > 0.95 && tg.Ratio.Hi < 1) ||
		tg.Settings != "t=2" || tg.NA != 5 {
		t.Errorf("5%% slower: %+v", tg)
	}
	if pp.Verdict != Same || pp.P < 0.5 || !(pp.Ratio.Lo < 1 && pp.Ratio.Hi > 1) {
		t.Errorf("the same: %+v", pp)
	}
	if one.Verdict != Same || !strings.Contains(one.Warning, "samples") || !math.IsNaN(one.Ratio.Lo) || one.Settings != "t=4" {
		t.Errorf("one sample each: %+v", one)
	}
	if s := Slowdowns(diffs); len(s) != 1 || s[0] != "llama 56M Q4_0 tg64 t=2" {
		t.Errorf("slowdowns %v", s)
	}
}

// A change smaller than runs of one build differ by is no change: with
// one run a side, the spread the records claim between processes (5%)
// hides a 5% slowdown; three runs a side whose means agree show it.
func TestDiffsRunToRun(t *testing.T) {
	run := func(shift float64) []record.Record {
		r := diffRec("tg64", 2, 100*shift, 101*shift, 99*shift, 100.5*shift, 99.5*shift)
		r.ProcessCV = 0.05
		return []record.Record{r}
	}
	diffs, _ := Diffs([][]record.Record{run(1)}, [][]record.Record{run(0.95)}, 0.05, 0.02)
	if d := diffs[0]; d.Verdict != Same || d.P >= 0.05 || math.Abs(d.Floor-1.96*math.Sqrt2*0.05) > 1e-3 || !strings.Contains(d.Warning, "within what runs of one build differ") {
		t.Errorf("one run a side: %+v", d)
	}
	diffs, _ = Diffs([][]record.Record{run(1), run(1.003), run(0.997)}, [][]record.Record{run(0.95), run(0.952), run(0.948)}, 0.05, 0.02)
	if d := diffs[0]; d.Verdict != Slower || d.RunsA != 3 || d.NA != 15 || d.Floor > 0.01 {
		t.Errorf("three runs a side: %+v", d)
	}
}

// A baseline made when records held the resolved layer count (nlayer+1)
// matches a record that holds what was given (99, -1).
func TestLayersKey(t *testing.T) {
	r := diffRec("tg64", 2, 1)
	r.ModelNLayer = 30
	for _, ngl := range []int{31, 99, -1} {
		r.NGPULayers = ngl
		if got := layers(&r); got != "all" {
			t.Errorf("ngl %d: %s", ngl, got)
		}
	}
	r.NGPULayers = 12
	if got := layers(&r); got != "12" {
		t.Errorf("ngl 12: %s", got)
	}
}
