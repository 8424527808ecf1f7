package baseline

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/stats"
)

// Diff is a test measured in two sets of results (two builds, files or
// machines; tokbench's or llama-bench's): what compare-llama-bench.py
// prints of it, the mean t/s of each and their ratio, and what it does not:
// whether the difference is significant, and the interval of the ratio.
type Diff struct {
	Model, Test string
	// Settings names the settings of this test that not every test of
	// the comparison shares ("t=4 fa=1"), as the script's extra columns.
	Settings string
	A, B     float64 // mean t/s
	NA, NB   int     // samples
	RunsA    int     // runs (files) the samples come from
	RunsB    int
	Speedup  float64 // B / A
	// Ratio is the Hodges–Lehmann ratio of B to A with the interval that
	// goes with the test; Lo and Hi are NaN when the samples are too few
	// (5 and 5 at 95%).
	Ratio   stats.Ratio
	P       float64
	Verdict Verdict
	Warning string // why no difference could be seen, if it could not
	// Floor is the smallest change that can be told from the spread
	// between runs of one build (95%): from the runs' own means where a
	// side has several, else the spread between processes its records
	// claim (process_cv); 0 when neither is known (llama-bench's files).
	Floor float64
}

// diffKey is what makes two records the same test: the model (by its
// description, as llama-bench's files have no digest) and every setting
// that changes the result; not the build, the machine or the tool.
func diffKey(r *record.Record) []string {
	return []string{r.ModelType, fmt.Sprint(r.ModelParams), r.Test,
		fmt.Sprintf("b=%d", r.NBatch), fmt.Sprintf("ub=%d", r.NUBatch), fmt.Sprintf("t=%d", r.NThreads),
		fmt.Sprintf("ngl=%d", r.NGPULayers), fmt.Sprintf("ncmoe=%d", r.NCPUMoE), "sm=" + r.SplitMode, fmt.Sprintf("mg=%d", r.MainGPU),
		fmt.Sprintf("fa=%d", int(r.FlashAttn)), "ctk=" + r.TypeK, "ctv=" + r.TypeV, fmt.Sprintf("nkvo=%t", r.NoKVOffload),
		fmt.Sprintf("mmap=%t", r.UseMmap), "ot=" + cmp.Or(r.TensorOverrides, "none"), "sampling=" + cmp.Or(r.Sampling, "none")}
}

// side is one test's measurements on one side: its first record, every
// sample, and each run's mean.
type side struct {
	rec     *record.Record
	samples []float64
	means   []float64
}

// spread is the relative standard deviation of this side's mean as a
// run of one build would repeat it: from its runs' means when it has
// several, else the spread between processes its record claims, over
// the square root of the runs.
func (s *side) spread() float64 {
	k := float64(len(s.means))
	if len(s.means) >= 2 {
		return stats.Summarize(s.means).CV / math.Sqrt(k)
	}
	return s.rec.ProcessCV / math.Sqrt(k)
}

// Diffs pairs the measured tests of two sides, each a list of runs (a
// file each: one process, or a sweep's), and judges each change as
// baseline comparisons do (judge: the Mann–Whitney p-value below alpha,
// the means at least minEffect apart) and, beyond that, only when the
// change is larger than runs of one build differ (Floor): the test takes
// a run's repetitions as independent, and runs differ by more than
// repetitions do. A test's samples are pooled across a side's runs.
// Tests on one side only are left out; unmatched counts them.
func Diffs(a, b [][]record.Record, alpha, minEffect float64) (diffs []Diff, unmatched int) {
	gather := func(runs [][]record.Record) (map[string]*side, []string) {
		m := map[string]*side{}
		var order []string
		for _, recs := range runs {
			run := map[string][]float64{}
			for i := range recs {
				r := &recs[i]
				if !r.OK() || len(r.SamplesTs) == 0 {
					continue
				}
				k := strings.Join(diffKey(r), "|")
				if m[k] == nil {
					m[k] = &side{rec: r}
					order = append(order, k)
				}
				m[k].samples = append(m[k].samples, r.SamplesTs...)
				run[k] = append(run[k], r.SamplesTs...)
			}
			for k, xs := range run {
				m[k].means = append(m[k].means, stats.Summarize(xs).Mean)
			}
		}
		return m, order
	}
	as, order := gather(a)
	bs, border := gather(b)
	varies := varying(order)
	z := -math.Sqrt2 * math.Erfcinv(2*(1-alpha/2)) // 1.96 at alpha 0.05
	for _, k := range order {
		x, y := as[k], bs[k]
		if y == nil {
			unmatched++
			continue
		}
		d := Diff{Model: cmp.Or(x.rec.ModelType, filepath.Base(x.rec.ModelFile)), Test: x.rec.Test, Settings: varies(x.rec),
			NA: len(x.samples), NB: len(y.samples), RunsA: len(x.means), RunsB: len(y.means)}
		d.A, d.B = stats.Summarize(x.samples).Mean, stats.Summarize(y.samples).Mean
		d.Speedup = d.B / d.A
		d.Ratio = stats.RatioOf(x.samples, y.samples, 1-alpha)
		d.P, d.Warning, d.Verdict = judge(x.samples, y.samples, d.Speedup-1, alpha, minEffect)
		d.Floor = z * math.Hypot(x.spread(), y.spread())
		if d.Verdict != Same && math.Abs(d.Speedup-1) < d.Floor {
			d.Verdict = Same
			d.Warning = fmt.Sprintf("%+.1f%% is within what runs of one build differ by here (%.1f%% at 95%%, from %s): give each side more runs (A1,A2,A3)",
				100*(d.Speedup-1), 100*d.Floor, floorSource(x, y))
		}
		diffs = append(diffs, d)
	}
	for _, k := range border {
		if as[k] == nil {
			unmatched++
		}
	}
	return diffs, unmatched
}

// floorSource says where the spread between runs came from.
func floorSource(x, y *side) string {
	if len(x.means) >= 2 || len(y.means) >= 2 {
		return fmt.Sprintf("%d and %d runs", len(x.means), len(y.means))
	}
	return "the spread between processes the records claim"
}

// varying gives, for a record, the settings of its key that differ among
// the compared tests' keys (beyond the model and the test's name).
func varying(order []string) func(*record.Record) string {
	var keys [][]string
	for _, k := range order {
		keys = append(keys, strings.Split(k, "|"))
	}
	var at []int
	for i := 3; len(keys) > 0 && i < len(keys[0]); i++ {
		for _, k := range keys[1:] {
			if k[i] != keys[0][i] {
				at = append(at, i)
				break
			}
		}
	}
	return func(r *record.Record) string {
		k := diffKey(r)
		var out []string
		for _, i := range at {
			out = append(out, k[i])
		}
		return strings.Join(out, " ")
	}
}

// Slowdowns names the tests of diffs that got significantly slower.
func Slowdowns(diffs []Diff) []string {
	var out []string
	for _, d := range diffs {
		if d.Verdict == Slower {
			out = append(out, strings.TrimSpace(d.Model+" "+d.Test+" "+d.Settings))
		}
	}
	return out
}
