package baseline

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/stats"
)

// Diff is a test measured in two sets of results (two builds, files or
// machines; tokbench's or llama-bench's): what compare-llama-bench.py
// prints of it, the mean t/s of each and their ratio, and what it does not:
// the change as a robust estimate with its interval, and whether it is
// significant over the whole comparison.
type Diff struct {
	Model, Test string
	// Settings names the settings of this test that not every test of
	// the comparison shares ("t=4 fa=1"), as the script's extra columns.
	Settings string
	A, B     float64 // mean t/s
	NA, NB   int     // samples
	RunsA    int     // runs (files) the samples come from
	RunsB    int
	Speedup  float64 // B / A of the means, as compare-llama-bench.py prints it
	// Ratio is the change B/A from the runs' medians (robust to a slow
	// repetition; the runs, not the repetitions, are the unit), with its
	// interval at the comparison's level, corrected for the number of
	// tests (Bonferroni): the verdict is its direction when it leaves
	// out 1. Lo and Hi are NaN when the test cannot be tested.
	Ratio   stats.Ratio
	P       float64 // two-sided, for this test alone; NaN if untestable
	Verdict Verdict
	Warning string
	logD    float64 // log(Ratio.Est)
	se      float64 // its standard error
}

// notTestable is the verdict of a test with one sample on a side.
const notTestable Verdict = "not testable"

// Gate is the comparison's verdict as a whole, the one a CI acts on. Its
// false alarms are bounded at alpha over the whole comparison: half of
// alpha for the geometric mean of every test's change, half shared
// among the tests (Bonferroni); a regression is a significant slowdown
// of at least the minimum effect in either.
type Gate struct {
	Tests          int
	GeoMean        stats.Ratio // the geometric mean of the tests' changes, with its interval
	P              float64
	Spread         float64 // between runs of one build, relative (log scale)
	SpreadFrom     string  // where Spread comes from
	DF             float64 // its degrees of freedom (+Inf: taken as known)
	Resolves       float64 // the smallest change of one test the comparison can tell, relative
	Regression     bool
	SlowerTests    []string
	FasterTests    []string
	NotTestable    int
	Method, Advice string
}

// priorSpread is the run-to-run spread assumed where nothing measured it
// (llama-bench's files carry none): what this project's VMs have shown.
const priorSpread = 0.02

// minSpread is the least spread between runs the gate assumes.
const minSpread = 0.001

// diffKey is what makes two records the same test: the model (by its
// description, as llama-bench's files have no digest), the test, and
// every setting of the point's key but the test's sizes (its name has
// them) and how it was measured (point.Setting's Size and Method); not
// the build, the machine or the tool. Every key has every setting, so
// that the settings that vary line up (varying).
func diffKey(r *record.Record) []string {
	p, kp := r.Point(), r.Key.Point()
	out := []string{r.ModelType, fmt.Sprint(r.ModelParams), r.Test}
	for _, s := range point.Fixed() {
		if !s.Size && !s.Method {
			out = append(out, s.KeyName+"="+s.Get(&p))
		}
	}
	for _, s := range point.Knobs() {
		out = append(out, s.KeyName+"="+s.Get(&kp))
	}
	return out
}

// side is one test's measurements on one side: what its first record
// names it by (its model, test and key), the spread between processes
// it claims, and each run's samples.
type side struct {
	model, test, key string
	processCV        float64
	runs             []*runSamples
}

// runSamples are one run's samples of a test: their count, mean and sum
// of squared deviations (Welford's), and up to keepSamples of them, a
// uniform sample of them past that (Algorithm R), for the run's median:
// a fleet's file of many rounds is not held whole.
type runSamples struct {
	n        int
	mean, m2 float64
	kept     []float64
}

// keepSamples is the most samples of a test a run keeps: far more than
// the repetitions of its records.
const keepSamples = 1024

func (r *runSamples) add(x float64, rng *rand.Rand) {
	r.n++
	d := x - r.mean
	r.mean += d / float64(r.n)
	r.m2 += d * (x - r.mean)
	switch {
	case len(r.kept) < keepSamples:
		r.kept = append(r.kept, x)
	default:
		if j := rng.IntN(r.n); j < keepSamples {
			r.kept[j] = x
		}
	}
}

// all says whether every sample is kept (the figures are then the
// samples' own, to the last digit).
func (r *runSamples) all() bool { return r.n == len(r.kept) }

// cv is the samples' coefficient of variation.
func (r *runSamples) cv() float64 {
	if r.all() {
		return stats.Summarize(r.kept).CV
	}
	return math.Sqrt(r.m2/float64(r.n-1)) / r.mean
}

// count is the test's samples over its runs.
func (s *side) count() int {
	n := 0
	for _, r := range s.runs {
		n += r.n
	}
	return n
}

// mean is the mean of the test's samples over its runs.
func (s *side) mean() float64 {
	var all []float64
	sum, n := 0.0, 0
	for _, r := range s.runs {
		all = append(all, r.kept...)
		sum, n = sum+r.mean*float64(r.n), n+r.n
	}
	if len(all) == n {
		return stats.Summarize(all).Mean
	}
	return sum / float64(n)
}

// testable says whether a test has two samples or more on each side.
func testable(p [2]*side) bool {
	return p[0].count() >= 2 && p[1].count() >= 2
}

// values are each run's log median: a run is the unit, and a slow
// repetition moves its median little.
func (s *side) values() []float64 {
	out := make([]float64, len(s.runs))
	for i, r := range s.runs {
		out[i] = math.Log(stats.Median(slices.Sorted(slices.Values(r.kept))))
	}
	return out
}

// within is the variance of a run's log median from its repetitions
// alone (1.25 x the mean's, the median's efficiency for normal samples),
// averaged over the runs.
func (s *side) within() float64 {
	v := 0.0
	for _, r := range s.runs {
		if r.n > 1 {
			cv := r.cv()
			v += 1.25 * (cv * cv) / float64(r.n)
		}
	}
	return v / float64(len(s.runs))
}

// Side is one side of a comparison, gathered one record at a time
// (Add): each measured test's samples by run, in memory that grows with
// the tests and runs (keepSamples a test's run at most), not with the
// records.
type Side struct {
	tests map[string]*side
	order []string
	runs  int
	rng   *rand.Rand // the runs' uniform samples: the same each time
}

// Add adds a record of run (a file, from 0) to the side; a failed test
// or one without samples adds nothing.
func (g *Side) Add(run int, r *record.Record) {
	g.runs = max(g.runs, run+1)
	if !r.OK() || len(r.SamplesTs) == 0 {
		return
	}
	k := strings.Join(diffKey(r), "|")
	if g.tests == nil {
		g.tests = map[string]*side{}
	}
	s := g.tests[k]
	if s == nil {
		s = &side{model: cmp.Or(r.ModelType, filepath.Base(r.ModelFile)), test: r.Test, key: k, processCV: r.ProcessCV}
		g.tests[k] = s
		g.order = append(g.order, k)
	}
	if g.rng == nil {
		g.rng = rand.New(rand.NewPCG(1, 2))
	}
	for len(s.runs) <= run {
		s.runs = append(s.runs, &runSamples{})
	}
	for _, x := range r.SamplesTs {
		s.runs[run].add(x, g.rng)
	}
}

// Diffs pairs the measured tests of two sides, each a list of runs (a
// file each: one process, or a sweep's), and judges the changes with
// their family-wise error bounded at alpha (Gate). Tests on one side only
// are left out; unmatched counts them.
func Diffs(a, b [][]record.Record, alpha, minEffect float64) (diffs []Diff, gate Gate, unmatched int) {
	var sides [2]Side
	for i, runs := range [][][]record.Record{a, b} {
		sides[i].runs = len(runs)
		for ri, recs := range runs {
			for j := range recs {
				sides[i].Add(ri, &recs[j])
			}
		}
	}
	return DiffSides(&sides[0], &sides[1], alpha, minEffect)
}

// DiffSides is Diffs of two sides gathered.
func DiffSides(a, b *Side, alpha, minEffect float64) (diffs []Diff, gate Gate, unmatched int) {
	for _, g := range []*Side{a, b} {
		for _, s := range g.tests { // a run without the test is not one of its runs
			s.runs = slices.DeleteFunc(s.runs, func(r *runSamples) bool { return r.n == 0 })
		}
	}
	as, order, bs, border := a.tests, a.order, b.tests, b.order
	varies := varying(order)
	var pairs [][2]*side
	for _, k := range order {
		if bs[k] == nil {
			unmatched++
			continue
		}
		pairs = append(pairs, [2]*side{as[k], bs[k]})
	}
	for _, k := range border {
		if as[k] == nil {
			unmatched++
		}
	}
	gate.Spread, gate.DF, gate.SpreadFrom = spreadOf(a.runs, b.runs, pairs)
	tested := 0
	for _, p := range pairs {
		x, y := p[0], p[1]
		d := Diff{Model: x.model, Test: x.test, Settings: varies(x.key),
			NA: x.count(), NB: y.count(), RunsA: len(x.runs), RunsB: len(y.runs), P: math.NaN(),
			Ratio: stats.Ratio{Est: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}}
		d.A, d.B = x.mean(), y.mean()
		d.Speedup = d.B / d.A
		if !testable(p) {
			d.Verdict, d.Warning = notTestable, fmt.Sprintf("one sample on a side (%d and %d; llama-bench's CSV and SQL keep only the mean): the ratio %.3f cannot be tested", d.NA, d.NB, d.Speedup)
			d.Ratio.Est = d.Speedup
			diffs = append(diffs, d)
			continue
		}
		d.logD = mean(y.values()) - mean(x.values())
		v := gate.Spread * gate.Spread * (1/float64(len(x.runs)) + 1/float64(len(y.runs)))
		if math.IsInf(gate.DF, 1) { // a spread not measured here: the repetitions' own noise on top
			v += x.within() + y.within()
		}
		d.se = math.Sqrt(v)
		d.P = 2 * stats.StudentCDF(-math.Abs(d.logD)/d.se, gate.DF)
		d.Ratio.Est = math.Exp(d.logD)
		tested++
		diffs = append(diffs, d)
	}
	gate.Tests, gate.NotTestable = tested, len(diffs)-tested
	if tested == 0 {
		gate.Method = "no test has two samples a side: nothing can be tested"
		return diffs, gate, unmatched
	}
	// Each test at alpha/2 shared among the tests; the geometric mean at
	// alpha/2: alpha in all. One test is its own geometric mean: alpha.
	perTest := alpha / 2 / float64(tested)
	if tested == 1 {
		perTest = alpha
	}
	qTest := stats.StudentQuantile(1-perTest/2, gate.DF)
	for i := range diffs {
		d := &diffs[i]
		if d.Verdict == notTestable {
			continue
		}
		d.Ratio.Lo, d.Ratio.Hi = math.Exp(d.logD-qTest*d.se), math.Exp(d.logD+qTest*d.se)
		d.Verdict = verdictOf(d.Ratio, minEffect)
		switch d.Verdict {
		case slower:
			gate.SlowerTests = append(gate.SlowerTests, strings.TrimSpace(d.Model+" "+d.Test+" "+d.Settings))
		case faster:
			gate.FasterTests = append(gate.FasterTests, strings.TrimSpace(d.Model+" "+d.Test+" "+d.Settings))
		}
	}
	gate.geoMean(a.runs, b.runs, diffs, pairs, alpha)
	if tested == 1 {
		for _, d := range diffs {
			if d.Verdict != notTestable {
				gate.GeoMean, gate.P = d.Ratio, d.P
			}
		}
	}
	gate.Resolves = math.Exp(qTest*gate.Spread*math.Sqrt(1/float64(max(1, a.runs))+1/float64(max(1, b.runs)))) - 1
	gate.Regression = len(gate.SlowerTests) > 0 || verdictOf(gate.GeoMean, minEffect) == slower
	gate.Method = fmt.Sprintf("family-wise error at most %g: the geometric mean of %d tests at %g, and each test at %g/%d (Bonferroni); runs are the unit (each run's median), the spread between runs %s",
		alpha, tested, alpha/2, alpha/2, tested, gate.SpreadFrom)
	if tested == 1 {
		gate.Method = fmt.Sprintf("one test, at %g; runs are the unit (each run's median), the spread between runs %s", alpha, gate.SpreadFrom)
	}
	switch {
	case a.runs < 3 || b.runs < 3:
		gate.Advice = fmt.Sprintf("with %d and %d runs a side, a test's change under %.1f%% cannot be told from run-to-run spread: give 3 runs a side (A1,A2,A3 B1,B2,B3)",
			a.runs, b.runs, 100*gate.Resolves)
	case gate.Resolves > minEffect:
		gate.Advice = fmt.Sprintf("runs of one build differ by %.1f%% here: a test's change under %.1f%% cannot be told from that; give more runs a side, or measure on a quieter machine",
			100*gate.Spread, 100*gate.Resolves)
	}
	return diffs, gate, unmatched
}

// verdictOf is the direction of a change when its interval leaves out 1
// by at least the minimum effect's side, else no change: the verdict
// never disagrees with its interval.
func verdictOf(r stats.Ratio, minEffect float64) Verdict {
	switch {
	case r.Hi < 1 && r.Est <= 1-minEffect:
		return slower
	case r.Lo > 1 && r.Est >= 1+minEffect:
		return faster
	}
	return same
}

// spreadOf is the spread of a run's log median between runs of one
// build: pooled over every test and both sides where a side has several
// runs (its degrees of freedom the runs less one, summed); else the
// spread between processes the records claim (process_cv); else a prior.
func spreadOf(runsA, runsB int, pairs [][2]*side) (spread, df float64, from string) {
	var ss float64
	n := 0
	for _, p := range pairs {
		for _, s := range p {
			if v := s.values(); len(v) >= 2 {
				ss, n = ss+sumSq(v), n+len(v)-1
			}
		}
	}
	if n > 0 {
		// Never below minSpread: runs that agree to the last digit (one
		// file given twice) would make any difference significant.
		return max(math.Sqrt(ss/float64(n)), minSpread), float64(n), fmt.Sprintf("%.1f%%, measured from %d and %d runs (pooled over the tests, %d degrees of freedom)",
			100*math.Sqrt(ss/float64(n)), runsA, runsB, n)
	}
	cv := 0.0
	for _, p := range pairs {
		cv = max(cv, p[0].processCV, p[1].processCV)
	}
	if cv > 0 {
		return cv, math.Inf(1), fmt.Sprintf("%.1f%%, as the records claim between processes (process_cv)", 100*cv)
	}
	return priorSpread, math.Inf(1), fmt.Sprintf("%.0f%%, a prior (these files carry no spread between runs)", 100*priorSpread)
}

// geoMean sets the gate's geometric mean of the tests' changes and its
// interval at alpha/2: from each run's mean over the tests where every
// run has them all (a slow run slows every test at once, and this sees
// it), else from the tests' own errors taken as fully correlated.
func (g *Gate) geoMean(runsA, runsB int, diffs []Diff, pairs [][2]*side, alpha float64) {
	var logs []float64
	var ses []float64
	for _, d := range diffs {
		if d.Verdict != notTestable {
			logs, ses = append(logs, d.logD), append(ses, d.se)
		}
	}
	D := mean(logs)
	se := 0.0
	for _, s := range ses {
		se += s * s
	}
	se = math.Sqrt(se / float64(len(ses)))
	df := g.DF
	if ga, gb := runMeans(pairs, 0, runsA), runMeans(pairs, 1, runsB); len(ga) >= 2 && len(gb) >= 2 {
		ss := sumSq(ga) + sumSq(gb)
		df = float64(len(ga) + len(gb) - 2)
		se = math.Sqrt(ss / df * (1/float64(len(ga)) + 1/float64(len(gb))))
		D = mean(gb) - mean(ga)
	}
	q := stats.StudentQuantile(1-alpha/4, df)
	g.GeoMean = stats.Ratio{Est: math.Exp(D), Lo: math.Exp(D - q*se), Hi: math.Exp(D + q*se)}
	g.P = 2 * stats.StudentCDF(-math.Abs(D)/math.Max(se, 1e-300), df)
}

// runMeans are each run's mean over the testable tests of its log
// medians, where every run of the side has every such test; nil
// otherwise.
func runMeans(pairs [][2]*side, which, runs int) []float64 {
	out := make([]float64, runs)
	n := 0
	for _, p := range pairs {
		if !testable(p) {
			continue
		}
		if len(p[which].runs) != runs {
			return nil
		}
		for i, v := range p[which].values() {
			out[i] += v
		}
		n++
	}
	for i := range out {
		out[i] /= float64(max(n, 1))
	}
	return out
}

// varying gives, for a test's key, the settings in it that differ among
// the compared tests' keys (beyond the model and the test's name).
func varying(order []string) func(key string) string {
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
	return func(key string) string {
		k := strings.Split(key, "|")
		var out []string
		for _, i := range at {
			out = append(out, k[i])
		}
		return strings.Join(out, " ")
	}
}

// sumSq is the sum of squared deviations of xs from their mean.
func sumSq(xs []float64) float64 {
	m, ss := mean(xs), 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return ss
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
