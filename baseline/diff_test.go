package baseline

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/record"
)

func diffRec(test string, threads int, samples ...float64) record.Record {
	r := record.Record{Test: test, Status: record.StatusOK}
	r.ModelType, r.ModelParams, r.Threads, r.SamplesTs = "llama 56M Q4_0", 56e6, threads, samples
	return r
}

// Two files' tests pair by model and settings: a 5% slowdown in five
// samples each, with the records' claimed spread between processes of
// 0.5%, is significant, its interval wholly below 1 and holding 0.95;
// the same spread around the same mean is not; a test in one file only
// is counted, not compared; a side with one sample (llama-bench's CSV)
// is not testable, and says so with its ratio.
func TestDiffs(t *testing.T) {
	rec := func(test string, threads int, samples ...float64) record.Record {
		r := diffRec(test, threads, samples...)
		r.ProcessCV = 0.005
		return r
	}
	a := []record.Record{rec("tg64", 2, 100, 101, 99, 100.5, 99.5), rec("pp64", 2, 1000, 1010, 990, 1005, 995), rec("tg64", 4, 180)}
	b := []record.Record{rec("tg64", 2, 95, 96, 94, 95.5, 94.5), rec("pp64", 2, 1001, 1009, 991, 1004, 996), rec("tg64", 4, 170),
		rec("tg16", 2, 5)}
	diffs, gate, unmatched := Diffs([][]record.Record{a}, [][]record.Record{b}, 0.05, 0.02)
	if len(diffs) != 3 || unmatched != 1 {
		t.Fatalf("%d diffs, %d unmatched", len(diffs), unmatched)
	}
	tg, pp, one := diffs[0], diffs[1], diffs[2]
	if tg.Verdict != slower || tg.P >= 0.05 || math.Abs(tg.Speedup-0.95) > 1e-9 || !(tg.Ratio.Lo < 0.95 && tg.Ratio.Hi > 0.95 && tg.Ratio.Hi < 1) ||
		tg.Settings != "t=2" || tg.NA != 5 {
		t.Errorf("5%% slower: %+v", tg)
	}
	if pp.Verdict != same || pp.P < 0.5 || !(pp.Ratio.Lo < 1 && pp.Ratio.Hi > 1) {
		t.Errorf("the same: %+v", pp)
	}
	if one.Verdict != notTestable || !strings.Contains(one.Warning, "0.944") || !math.IsNaN(one.Ratio.Lo) || one.Settings != "t=4" {
		t.Errorf("one sample each: %+v", one)
	}
	if !gate.Regression || len(gate.SlowerTests) != 1 || gate.SlowerTests[0] != "llama 56M Q4_0 tg64 t=2" || gate.Tests != 2 || gate.NotTestable != 1 ||
		!strings.Contains(gate.SpreadFrom, "process_cv") {
		t.Errorf("gate %+v", gate)
	}
}

// A change smaller than runs of one build differ by is no change: with
// one run a side, the spread the records claim between processes (5%)
// hides a 5% slowdown, and the advice says what a comparison resolves;
// three runs a side whose medians agree show it.
func TestDiffsRunToRun(t *testing.T) {
	run := func(shift float64) []record.Record {
		r := diffRec("tg64", 2, 100*shift, 101*shift, 99*shift, 100.5*shift, 99.5*shift)
		r.ProcessCV = 0.05
		return []record.Record{r}
	}
	diffs, gate, _ := Diffs([][]record.Record{run(1)}, [][]record.Record{run(0.95)}, 0.05, 0.02)
	if d := diffs[0]; d.Verdict != same || gate.Regression || !strings.Contains(gate.Advice, "give 3 runs a side") || gate.Resolves < 0.1 {
		t.Errorf("one run a side: %+v, gate %+v", d, gate)
	}
	diffs, gate, _ = Diffs([][]record.Record{run(1), run(1.003), run(0.997)}, [][]record.Record{run(0.95), run(0.952), run(0.948)}, 0.05, 0.02)
	if d := diffs[0]; d.Verdict != slower || d.RunsA != 3 || d.NA != 15 || !gate.Regression || gate.DF != 4 || strings.Contains(gate.Advice, "give 3 runs") {
		t.Errorf("three runs a side: %+v, gate %+v", d, gate)
	}
}

// The gate as a user would try it, over 200 pairs of generated
// llama-bench-format files a scenario (8 tests a pair, 5 samples a test,
// samples within a run at 1%, run means at 2%): identical sides fail the
// gate at most 5% of the time (plus sampling error) with 1 and with 3
// runs a side; a true 5% slowdown with 3 runs a side is found at least
// 80% of the time; a slow repetition in the baseline never turns a
// slowdown into "faster"; no verdict ever disagrees with its interval.
func TestGateOverManyPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	tests := []string{"pp512", "tg128", "pp128", "tg32", "pp2048", "tg512", "pp64", "tg16"}
	file := func(factor float64, outlier bool) []record.Record {
		var recs []record.Record
		for i, test := range tests {
			base := 100 * float64(i+1) * factor * (1 + 0.02*rng.NormFloat64())
			samples := make([]float64, 5)
			for j := range samples {
				samples[j] = base * (1 + 0.01*rng.NormFloat64())
			}
			if outlier {
				samples[rng.IntN(5)] *= 0.5
			}
			recs = append(recs, diffRec(test, 2, samples...))
		}
		return recs
	}
	side := func(runs int, factor float64, outlier bool) [][]record.Record {
		out := make([][]record.Record, runs)
		for i := range out {
			out[i] = file(factor, outlier && i == 0)
		}
		return out
	}
	const pairs = 200
	check := func(name string, diffs []Diff, g Gate) {
		for _, d := range diffs {
			if d.Verdict == slower && !(d.Ratio.Hi < 1) || d.Verdict == faster && !(d.Ratio.Lo > 1) {
				t.Fatalf("%s: a verdict against its interval: %+v", name, d)
			}
		}
		if g.Regression && !(g.GeoMean.Hi < 1 || len(g.SlowerTests) > 0) {
			t.Fatalf("%s: a regression nothing shows: %+v", name, g)
		}
	}
	for _, c := range []struct {
		name     string
		runs     int
		factor   float64
		outlier  bool
		min, max int // gate failures of 200
	}{
		{"A/A, 1 run a side", 1, 1, false, 0, 16},
		{"A/A, 3 runs a side", 3, 1, false, 0, 16},
		{"5% slower, 3 runs a side", 3, 0.95, false, 160, pairs},
		{"5% slower, a slow repetition in A", 3, 0.95, true, 0, pairs},
	} {
		fails, faster := 0, 0
		for range pairs {
			a := side(c.runs, 1, c.outlier)
			b := side(c.runs, c.factor, false)
			diffs, g, _ := Diffs(a, b, 0.05, 0.02)
			check(c.name, diffs, g)
			if g.Regression {
				fails++
			}
			if len(g.FasterTests) > 0 && c.factor < 1 {
				faster++
			}
		}
		t.Logf("%s: the gate failed %d of %d", c.name, fails, pairs)
		if fails < c.min || fails > c.max || faster > 0 {
			t.Errorf("%s: the gate failed %d of %d (want %d to %d); %d called a slowdown faster", c.name, fails, pairs, c.min, c.max, faster)
		}
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

// A run of more samples of a test than it keeps (a fleet's file of many
// rounds) keeps keepSamples of them, a uniform sample: its count and mean
// are every sample's, its median close to theirs.
func TestRunSamplesBounded(t *testing.T) {
	var g Side
	rng := rand.New(rand.NewPCG(3, 4))
	var all []float64
	for range 10000 {
		samples := make([]float64, 5)
		for i := range samples {
			samples[i] = 100 + 10*rng.NormFloat64()
		}
		all = append(all, samples...)
		g.Add(0, new(diffRec("tg128", 2, samples...)))
	}
	s := g.tests[g.order[0]]
	r := s.runs[0]
	mean := 0.0
	for _, x := range all {
		mean += x / float64(len(all))
	}
	median := math.Exp(s.values()[0])
	if len(r.kept) != keepSamples || s.count() != len(all) || math.Abs(s.mean()-mean) > 1e-9*mean || math.Abs(median-100) > 1.5 {
		t.Errorf("kept %d of %d samples (want %d), mean %v (want %v), median %.2f (want about 100)", len(r.kept), s.count(), keepSamples, s.mean(), mean, median)
	}
	if cv := r.cv(); math.Abs(cv-0.1) > 0.005 {
		t.Errorf("cv %.4f, want about 0.1", cv)
	}
}
