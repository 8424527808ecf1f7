package baseline

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/tokbench/tokbench/internal/quality"
	"github.com/tokbench/tokbench/record"
)

// qualityPoint is a model's quality in a baseline: the newest figures of
// the same evaluation (same files, tokens and cache), which on one build
// repeat exactly; a change means the kernels or the files changed.
type qualityPoint struct {
	Model   string          `json:"model"`
	Base    string          `json:"base"`
	When    string          `json:"when"`
	Figures quality.Figures `json:"figures"`
}

// qualityIdentity is what a quality block measures: the model and base by
// content, the tokens and the cache.
func qualityIdentity(q *record.Quality) string {
	h := sha256.Sum256([]byte(q.Text))
	return fmt.Sprintf("quality|sha256=%s|base=%s|text=%s|ctx=%d|chunks=%d|k=%d|tail=%g|ngl=%d",
		cmp.Or(q.ModelSHA256, filepath.Base(q.ModelFile)), q.BaseSHA256, hex.EncodeToString(h[:8]), q.Ctx, q.Chunks, q.TopK, q.CacheTail, q.NGPULayers)
}

// ClassOfAll is the one hardware class of records and quality blocks.
func ClassOfAll(recs []record.Record, blocks []record.Quality) (string, error) {
	class, err := classOf(recs)
	if len(blocks) == 0 {
		return class, err
	}
	if err != nil {
		class = ""
	}
	for i := range blocks {
		c := blocks[i].Class()
		if class != "" && c != class {
			return "", fmt.Errorf("the results mix hardware classes %s and %s: compare one class at a time", class, c)
		}
		class = c
	}
	return class, nil
}

// NewFile is an empty baseline of a class.
func NewFile(class string) *File {
	return &File{Version: version, Class: class, Points: map[string]*Point{}}
}

// MergeQuality puts the newest of each model's quality blocks in the
// baseline.
func (f *File) MergeQuality(blocks []record.Quality) {
	for _, b := range record.Latest(blocks) {
		q := &b
		if f.Quality == nil {
			f.Quality = map[string]*qualityPoint{}
		}
		f.Quality[qualityIdentity(q)] = &qualityPoint{Model: qualityName(q), Base: filepath.Base(q.BaseFile),
			When: q.TestTime.Format("2006-01-02 15:04"), Figures: q.Figures}
	}
}

func qualityName(q *record.Quality) string { return cmp.Or(q.ModelID, filepath.Base(q.ModelFile)) }

// QualityRow is one model of a quality comparison.
type QualityRow struct {
	Model      string
	Old, New   *quality.Figures // Old nil: not in the baseline
	Delta      float64          // of the mean KLD
	Verdict    Verdict
	Regression bool
}

// Quality verdicts.
const (
	Worse  Verdict = "worse quality"
	Better Verdict = "better quality"
)

// CompareQuality sets each quality block against the baseline: a mean KLD
// above the baseline's by more than the two figures' uncertainty (95%) is
// a regression, as much as a slowdown.
func CompareQuality(f *File, blocks []record.Quality) []QualityRow {
	var rows []QualityRow
	for _, q := range record.Latest(blocks) {
		row := QualityRow{Model: qualityName(&q), New: &q.Figures, Verdict: NoBaseline}
		if p := f.Quality[qualityIdentity(&q)]; p != nil {
			row.Old = &p.Figures
			worse, d := quality.Regression(p.Figures, q.Figures)
			better, _ := quality.Regression(q.Figures, p.Figures)
			row.Delta, row.Verdict = d, same
			switch {
			case worse:
				row.Verdict, row.Regression = Worse, true
			case better:
				row.Verdict = Better
			}
		}
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Model < rows[j].Model })
	return rows
}

// QualityRegressions names the models whose quality got significantly
// worse.
func QualityRegressions(rows []QualityRow) []string {
	var bad []string
	for _, r := range rows {
		if r.Regression {
			bad = append(bad, fmt.Sprintf("%s KLD %+.3g", r.Model, r.Delta))
		}
	}
	return bad
}

// QualityMatched counts the rows that had a baseline.
func QualityMatched(rows []QualityRow) int {
	n := 0
	for _, r := range rows {
		if r.Old != nil {
			n++
		}
	}
	return n
}
