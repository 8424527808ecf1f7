// Package baseline keeps per-hardware-class baselines of measured points
// and compares new results with them, benchstat-style: a Mann–Whitney U
// test over the samples and a minimum effect size.
package baseline

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unique"

	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/stats"
)

// version is the baseline file format: 2 keys points by what they
// measure (Identity), 1 (unnumbered) by the model's name and every setting.
const version = 2

// File is one hardware class's baseline, pooled from every results file
// merged into it (several machines of the class, several days).
type File struct {
	Version  int               `json:"version"`
	Class    string            `json:"class"`
	Software map[string]string `json:"software"` // llama.cpp commit, ollama, tokbench: recorded beside the class
	Updated  time.Time         `json:"updated"`
	Points   map[string]*Point `json:"points"` // by Identity
	// Quality is each model's quality by QualityIdentity (tokbench
	// quality, sweep --quality).
	Quality map[string]*qualityPoint `json:"quality,omitempty"`
}

// Point is the baseline of one point: the runs merged into it, their
// samples, and what is expected of a new run.
type Point struct {
	Test      string    `json:"test"`
	Model     string    `json:"model"`
	Runs      []run     `json:"runs"`
	SamplesTs []float64 `json:"samples_ts"` // the newest, pooled over the runs
	MedianTs  float64   `json:"median_ts"`
	MADTs     float64   `json:"mad_ts"` // median absolute deviation, scaled to a normal's sigma
	Low       float64   `json:"expected_low_ts"`
	High      float64   `json:"expected_high_ts"`
	// Spread says what the range was made from: the spread of the runs'
	// medians (between-run variance, what a new run varies by) once there
	// are MinRuns runs, else the pooled samples' spread (within-run, too
	// narrow to vouch for).
	Spread string `json:"spread"`
	// stale says runs were added since the range was set, and effect is
	// their minimum effect, which settle sets it with: once per point,
	// not once per record.
	stale  bool
	effect float64
}

// run is one record merged into a point.
type run struct {
	Host     string    `json:"host,omitempty"`
	When     time.Time `json:"when"`
	MedianTs float64   `json:"median_ts"`
	Samples  int       `json:"samples"`
}

// Spreads a range is made from.
const (
	betweenRuns = "between runs"
	withinRuns  = "within runs: fewer than 3 runs, so the range may be too narrow; merge more runs (machines, days)"
)

// minRuns is how many runs a point needs before its range comes from the
// runs' medians.
const minRuns = 3

// Machines is how many hosts the point's runs came from.
func (p *Point) Machines() int {
	hosts := map[string]bool{}
	for _, r := range p.Runs {
		hosts[r.Host] = true
	}
	return len(hosts)
}

// maxSamples and maxRuns bound a point's history: the newest are kept.
const (
	maxSamples = 50
	maxRuns    = 50
)

// classOf is the one hardware class of a set of records.
func classOf(recs []record.Record) (string, error) {
	class := ""
	for i := range recs {
		if recs[i].Status != record.StatusOK {
			continue
		}
		c := recs[i].Class()
		if class != "" && c != class {
			return "", fmt.Errorf("the results mix hardware classes %s and %s: compare one class at a time", class, c)
		}
		class = c
	}
	if class == "" {
		return "", fmt.Errorf("no measured (ok) records")
	}
	return class, nil
}

func path(dir, class string) string { return gpu.ClassFile(dir, class) }

// Load reads the baseline of a class from dir; nil if absent.
func Load(dir, class string) (*File, error) {
	return load(dir, class, perThreadsFiles(dir))
}

// perThreadsFiles are the files of dir that may be a CPU class's kept per
// thread count (loadPerThreads): listed once, not once a class.
func perThreadsFiles(dir string) []string {
	names, _ := filepath.Glob(filepath.Join(dir, "cpu-*t.json"))
	return names
}

func load(dir, class string, perThreads []string) (*File, error) {
	var f File
	found, err := gpu.LoadClass(dir, class, &f)
	switch {
	case err != nil:
		return nil, fmt.Errorf("baseline %s: %w", path(dir, class), err)
	case !found:
		return loadPerThreads(dir, class, perThreads)
	case f.Class != class:
		return nil, fmt.Errorf("baseline %s is for class %s, not %s", path(dir, class), f.Class, class)
	case f.Version != version:
		return nil, fmt.Errorf("baseline %s is of format %d (this tokbench reads %d: points by what they measure, not by file name): create it again with tokbench baseline create", path(dir, class), f.Version, version)
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("baseline %s: %w: the file is damaged or edited; create it again with tokbench baseline create", path(dir, class), err)
	}
	return &f, nil
}

// check refuses what no baseline create writes (a file is data): a null
// point or quality figure, a figure not finite or negative, a range
// upside down. A file without points has none.
func (f *File) check() error {
	if f.Points == nil {
		f.Points = map[string]*Point{}
	}
	for id, p := range f.Points {
		if p == nil {
			return fmt.Errorf("point %.60q is null", id)
		}
		vals := append([]float64{p.MedianTs, p.MADTs, p.Low, p.High}, p.SamplesTs...)
		for _, r := range p.Runs {
			vals = append(vals, r.MedianTs)
		}
		for _, v := range vals {
			if !(v >= 0 && v <= record.MaxRate) {
				return fmt.Errorf("point %.60q: a figure of %g t/s", id, v)
			}
		}
		if p.Low > p.High {
			return fmt.Errorf("point %.60q: its range %g-%g is upside down", id, p.Low, p.High)
		}
	}
	for id, q := range f.Quality {
		if q == nil {
			return fmt.Errorf("quality %.60q is null", id)
		}
		if err := q.Figures.Check(); err != nil {
			return fmt.Errorf("quality %.60q: %w", id, err)
		}
	}
	return nil
}

// loadPerThreads reads a CPU class's baseline from the files kept when a
// CPU's class named its thread count too (cpu-MODEL-8t.json): one file,
// its points told apart by their threads as they always were. The next
// Save writes it under the class; nil if there are none.
func loadPerThreads(dir, class string, names []string) (*File, error) {
	if !strings.HasPrefix(class, "cpu-") {
		return nil, nil
	}
	var all *File
	for _, name := range names {
		old := strings.TrimSuffix(filepath.Base(name), ".json")
		if !strings.HasPrefix(old, class+"-") {
			continue
		}
		if _, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(old, class+"-"), "t")); err != nil {
			continue // another class whose name begins as this one's
		}
		f, err := load(dir, old, nil)
		if err != nil || f == nil {
			return nil, err
		}
		if all == nil {
			all = NewFile(class)
			all.Software, all.Updated = f.Software, f.Updated
		}
		maps.Copy(all.Points, f.Points)
		maps.Copy(all.Quality, f.Quality)
		if f.Updated.After(all.Updated) {
			all.Updated = f.Updated
		}
	}
	return all, nil
}

// Save writes the baseline to dir/CLASS.json, its ranges set.
func (f *File) Save(dir string) (string, error) {
	f.Settle()
	return gpu.SaveClass(dir, f.Class, f)
}

// Settle sets the expected range of every point runs were added to.
func (f *File) Settle() {
	for _, p := range f.Points {
		p.settle()
	}
}

// Add adds a record's samples to the baseline, as a run of its point (a
// failed record or one without samples adds nothing); the point's
// expected range is set from them when the baseline is saved, compared
// with or settled (Settle): the median plus or minus the larger of 3
// robust sigmas and minEffect of the median, the sigma from the runs'
// medians once there are minRuns of them. One record at a time, so that
// a fleet's results are never held whole; the record must be of the
// baseline's class.
func (f *File) Add(r *record.Record, minEffect float64) {
	if !measured(r) {
		return
	}
	f.point(identity(r), r.Test, name(r)).add(r.HostName, r.TestTime, r.SamplesTs, minEffect)
	f.setSoftware(softwareOf(r))
}

// measured says a record has a run to add.
func measured(r *record.Record) bool { return r.Status == record.StatusOK && len(r.SamplesTs) > 0 }

// point is the point of an identity, made if the baseline lacks it.
func (f *File) point(identity, test, model string) *Point {
	p := f.Points[identity]
	if p == nil {
		p = &Point{Test: test, Model: model}
		f.Points[identity] = p
	}
	return p
}

// software is what a run was measured with, recorded beside the class:
// the newest run's. Its build's features (the ISA it was compiled for,
// and its options: LLAMAFILE, OPENMP, REPACK) are part of it: the same
// commit built another way runs other kernels.
type software struct{ llama, ollama, tool, features string }

func softwareOf(r *record.Record) software {
	return software{r.BuildCommit, r.OllamaVersion, r.Tool, r.CPUFeatures}
}

func (s software) fields() map[string]string {
	return map[string]string{"llama.cpp": s.llama, "ollama": s.ollama, "tokbench": s.tool, "cpu_features": s.features}
}

func (f *File) setSoftware(s software) {
	if !maps.Equal(f.Software, s.fields()) {
		f.Software = s.fields()
	}
}

// BuildChanged says how the build of recs differs from the baseline's
// ("" where it is the same): another llama.cpp, ollama or tokbench, or
// the same built with other features (a baseline made before tokbench
// recorded them has none, and differs from any build that has). Their
// differences are the build's: not regressions a baseline can call.
func BuildChanged(f *File, recs []record.Record) string {
	for i := range recs {
		if !recs[i].OK() {
			continue
		}
		now := softwareOf(&recs[i]).fields()
		var diff []string
		for _, k := range []string{"llama.cpp", "ollama", "tokbench", "cpu_features"} {
			if was := f.Software[k]; was != now[k] && (k != "llama.cpp" || !sameBuild(was, now[k])) {
				diff = append(diff, fmt.Sprintf("%s %q, now %q", k, was, now[k]))
			}
		}
		return strings.Join(diff, "; ")
	}
	return ""
}

// sameBuild says two build commits name one build (tokbench's earlier
// records have 9 hex digits where llama-bench writes 8).
func sameBuild(a, b string) bool {
	n := min(len(a), len(b), 8)
	return n > 0 && a[:n] == b[:n]
}

func (p *Point) add(host string, when time.Time, samples []float64, minEffect float64) {
	// A fleet's hosts are a few thousand names over millions of runs.
	host = unique.Make(host).Value()
	p.Runs = keepNewest(append(p.Runs, run{Host: host, When: when, MedianTs: stats.Median(samples), Samples: len(samples)}), maxRuns)
	p.SamplesTs = keepNewest(append(p.SamplesTs, samples...), maxSamples)
	p.stale, p.effect = true, minEffect
}

// settle sets the point's expected range from its history, if runs were
// added since it was set.
func (p *Point) settle() {
	if !p.stale {
		return
	}
	p.stale = false
	minEffect := p.effect
	p.MedianTs, p.MADTs, p.Spread = stats.Median(p.SamplesTs), stats.MAD(p.SamplesTs), withinRuns
	if len(p.Runs) >= minRuns {
		medians := make([]float64, len(p.Runs))
		for i, run := range p.Runs {
			medians[i] = run.MedianTs
		}
		p.MedianTs, p.MADTs, p.Spread = stats.Median(medians), stats.MAD(medians), betweenRuns
	}
	half := math.Max(3*p.MADTs, minEffect*p.MedianTs)
	p.Low, p.High = p.MedianTs-half, p.MedianTs+half
}

// keepNewest is s's newest n, moved to the front of its array: a point's
// history never holds more than its bound's room (a slice of the newest
// would keep the array growing under it).
func keepNewest[T any](s []T, n int) []T {
	switch {
	case len(s) <= n:
		return s
	case cap(s) > n+1: // grown by append: room for the next one only
		return append(make([]T, 0, n+1), s[len(s)-n:]...)
	}
	return s[:copy(s, s[len(s)-n:])]
}

// name is how a point's model is shown: as the sweep named it, else the
// file's name.
func name(r *record.Record) string { return cmp.Or(r.ModelID, filepath.Base(r.ModelFile)) }

// Verdict is what a comparison says of a point.
type Verdict string

// Verdicts.
const (
	same       Verdict = "~" // no significant change of at least the minimum effect
	faster     Verdict = "faster"
	slower     Verdict = "slower"
	NoBaseline Verdict = "no baseline" // the baseline lacks the point
)

// Row is one point of a comparison.
type Row struct {
	Key, Test, Model string
	Old, New         float64 // medians, t/s
	Delta            float64 // (new - old) / old
	P                float64
	Verdict          Verdict
	Warning          string // why no difference could be seen, if the samples were too few
	Regression       bool
}

// Compare sets each measured record against its baseline point: a change
// counts when the Mann–Whitney p-value is below alpha and the medians
// differ by at least minEffect; a significant slowdown is a regression.
func Compare(f *File, recs []record.Record, alpha, minEffect float64) ([]Row, error) {
	class, err := classOf(recs)
	if err != nil {
		return nil, err
	}
	if class != f.Class {
		return nil, fmt.Errorf("results are of class %s but the baseline is of %s: compare like with like", class, f.Class)
	}
	var rows []Row
	for i := range recs {
		r := &recs[i]
		if r.Status != record.StatusOK || len(r.SamplesTs) == 0 {
			continue
		}
		row := Row{Key: identity(r), Test: r.Test, Model: name(r)}
		row.New = stats.Median(r.SamplesTs)
		p := f.Points[row.Key]
		if p == nil {
			row.Verdict, row.P = NoBaseline, math.NaN()
			rows = append(rows, row)
			continue
		}
		p.settle()
		row.Old = p.MedianTs
		row.Delta = (row.New - row.Old) / row.Old
		row.P, row.Warning, row.Verdict = judge(p.SamplesTs, r.SamplesTs, row.Delta, alpha, minEffect)
		row.Regression = row.Verdict == slower
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Model < rows[j].Model })
	return rows, nil
}

// judge is the verdict on a change of delta (relative, new against old)
// between two sets of samples: a change when the Mann–Whitney p-value is
// below alpha and the change is at least minEffect. Baselines and the
// comparison of two files both judge with it.
func judge(old, new []float64, delta, alpha, minEffect float64) (p float64, warning string, v Verdict) {
	p, warning = stats.MannWhitney(old, new, alpha)
	switch {
	case p >= alpha || math.Abs(delta) < minEffect:
		return p, warning, same
	case delta < 0:
		return p, warning, slower
	}
	return p, warning, faster
}

// Matched counts the rows that had a baseline point.
func Matched(rows []Row) int {
	n := 0
	for _, r := range rows {
		if r.Verdict != NoBaseline {
			n++
		}
	}
	return n
}

// Classes lists the classes that have baselines in dir.
func Classes(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var out []string
	for _, p := range m {
		out = append(out, strings.TrimSuffix(filepath.Base(p), ".json"))
	}
	return out
}

// Regressions names the points of rows that got significantly slower.
func Regressions(rows []Row) []string {
	var bad []string
	for _, r := range rows {
		if r.Regression {
			bad = append(bad, r.Model+" "+r.Test)
		}
	}
	return bad
}
