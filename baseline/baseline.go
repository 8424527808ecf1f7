// Package baseline keeps per-hardware-class baselines of measured points
// and compares new results with them, benchstat-style: a Mann–Whitney U
// test over the samples and a minimum effect size.
package baseline

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tokbench/tokbench/record"

	"github.com/tokbench/tokbench/stats"
)

// File is one hardware class's baseline.
type File struct {
	Class    string            `json:"class"`
	Software map[string]string `json:"software"` // llama.cpp commit, ollama, tokbench: recorded beside the class
	Updated  time.Time         `json:"updated"`
	Points   map[string]*Point `json:"points"`
}

// Point is the baseline of one point: its samples and what is expected.
type Point struct {
	Test      string    `json:"test"`
	Model     string    `json:"model"`
	SamplesTs []float64 `json:"samples_ts"`
	MedianTs  float64   `json:"median_ts"`
	MADTs     float64   `json:"mad_ts"` // median absolute deviation, scaled to a normal's sigma
	Low       float64   `json:"expected_low_ts"`
	High      float64   `json:"expected_high_ts"`
}

// maxSamples bounds a point's history: the newest are kept.
const maxSamples = 50

// Key names a record's point across machines: the model as the sweep
// named it (or the file's base name) and every setting, not the path.
func Key(r *record.Record) string {
	k := r.Key
	k.Model = cmpOr(r.ModelID, filepath.Base(r.ModelFile))
	return k.String()
}

// ClassOf is the one hardware class of a set of records.
func ClassOf(recs []record.Record) (string, error) {
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

func path(dir, class string) string { return filepath.Join(dir, class+".json") }

// Load reads the baseline of a class from dir; nil if absent.
func Load(dir, class string) (*File, error) {
	b, err := os.ReadFile(path(dir, class))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path(dir, class), err)
	}
	if f.Class != class {
		return nil, fmt.Errorf("baseline %s is for class %s, not %s", path(dir, class), f.Class, class)
	}
	return &f, nil
}

// Save writes the baseline to dir/CLASS.json.
func (f *File) Save(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, _ := json.MarshalIndent(f, "", "  ")
	p := path(dir, f.Class)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return p, os.Rename(tmp, p)
}

// Merge adds records' samples to a baseline (nil: a new one) and sets
// each point's expected range: the median plus or minus the larger of 3
// robust sigmas and minEffect of the median.
func Merge(f *File, recs []record.Record, minEffect float64) (*File, error) {
	class, err := ClassOf(recs)
	if err != nil {
		return nil, err
	}
	if f == nil {
		f = &File{Class: class, Points: map[string]*Point{}}
	}
	if f.Class != class {
		return nil, fmt.Errorf("results are of class %s, the baseline of %s", class, f.Class)
	}
	for i := range recs {
		r := &recs[i]
		if r.Status != record.StatusOK || len(r.SamplesTs) == 0 {
			continue
		}
		k := Key(r)
		p := f.Points[k]
		if p == nil {
			p = &Point{Test: r.Test, Model: cmpOr(r.ModelID, filepath.Base(r.ModelFile))}
			f.Points[k] = p
		}
		p.SamplesTs = append(p.SamplesTs, r.SamplesTs...)
		if len(p.SamplesTs) > maxSamples {
			p.SamplesTs = p.SamplesTs[len(p.SamplesTs)-maxSamples:]
		}
		p.MedianTs, p.MADTs = stats.Median(p.SamplesTs), stats.MAD(p.SamplesTs)
		half := math.Max(3*p.MADTs, minEffect*p.MedianTs)
		p.Low, p.High = p.MedianTs-half, p.MedianTs+half
		f.Software = map[string]string{"llama.cpp": r.BuildCommit, "ollama": r.OllamaVersion, "tokbench": r.Tool}
	}
	f.Updated = time.Now().UTC().Truncate(time.Second)
	return f, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Verdict is what a comparison says of a point.
type Verdict string

// Verdicts.
const (
	Same       Verdict = "~" // no significant change of at least the minimum effect
	Faster     Verdict = "faster"
	Slower     Verdict = "slower"
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
	class, err := ClassOf(recs)
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
		row := Row{Key: Key(r), Test: r.Test, Model: cmpOr(r.ModelID, filepath.Base(r.ModelFile))}
		row.New = stats.Median(r.SamplesTs)
		p := f.Points[row.Key]
		if p == nil {
			row.Verdict, row.P = NoBaseline, math.NaN()
			rows = append(rows, row)
			continue
		}
		row.Old = p.MedianTs
		row.Delta = (row.New - row.Old) / row.Old
		row.P, row.Warning = MannWhitney(p.SamplesTs, r.SamplesTs, alpha)
		switch {
		case row.P >= alpha || math.Abs(row.Delta) < minEffect:
			row.Verdict = Same
		case row.Delta < 0:
			row.Verdict, row.Regression = Slower, true
		default:
			row.Verdict = Faster
		}
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Model < rows[j].Model })
	return rows, nil
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
