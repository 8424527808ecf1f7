package report

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/tokbench/tokbench/internal/quality"
	"github.com/tokbench/tokbench/record"
)

// QualityFormats are the output formats of tokbench quality.
var QualityFormats = []string{"table", "json", "jsonl", "csv", "md"}

// Tradeoff is one model's speed beside its quality: the quality block and
// the model's pp and tg records at the smallest depth and parallel count
// measured (the fastest of them when several settings remain), nil when
// the file has none.
type Tradeoff struct {
	Q         record.Quality
	PP, TG    *record.Record
	Dominated bool // another model is at least as fast with less KLD, or faster with as little
}

// Tradeoffs joins quality blocks (the latest of each model) to the speed
// records of the same model file content, and marks the Pareto front of
// tg t/s against mean KLD among the models with both.
func Tradeoffs(recs []record.Record, blocks []record.Quality) []Tradeoff {
	blocks = record.Latest(blocks)
	out := make([]Tradeoff, len(blocks))
	for i, q := range blocks {
		out[i].Q = q
		for j := range recs {
			r := &recs[j]
			if !r.OK() || (r.Sampling != "" && r.Sampling != "none") || !sameModel(r, &q) {
				continue
			}
			slot := &out[i].TG
			if r.IsPrompt() {
				slot = &out[i].PP
			}
			if *slot == nil || before(r, *slot) {
				*slot = r
			}
		}
	}
	var speed, kld []float64
	var idx []int
	for i, t := range out {
		if t.TG != nil {
			speed, kld, idx = append(speed, t.TG.AvgTs), append(kld, t.Q.Figures.KLD.Mean), append(idx, i)
		}
	}
	for j, d := range quality.Dominated(speed, kld) {
		out[idx[j]].Dominated = d
	}
	return out
}

func sameModel(r *record.Record, q *record.Quality) bool {
	if r.ModelSHA256 != "" && q.ModelSHA256 != "" {
		return r.ModelSHA256 == q.ModelSHA256
	}
	return r.ModelFile == q.ModelFile
}

// before orders the records of one model and test kind: the smallest
// depth, then the fewest parallel sequences, then the fastest.
func before(a, b *record.Record) bool {
	if c := cmp.Compare(a.NDepth, b.NDepth); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(a.NParallel, b.NParallel); c != 0 {
		return c < 0
	}
	return a.AvgTs > b.AvgTs
}

// WriteQuality writes quality blocks in the format.
func WriteQuality(w io.Writer, format string, blocks []record.Quality) error {
	ts := make([]Tradeoff, len(blocks))
	for i, q := range blocks {
		ts[i].Q = q
	}
	switch format {
	case "table", "md":
		return tradeoffTable(w, format == "md", ts, false)
	case "json", "jsonl":
		return writeJSON(w, format == "jsonl", blocks)
	case "csv":
		return qualityCSV(w, blocks)
	}
	return fmt.Errorf("output format %q: use one of %s", format, strings.Join(QualityFormats, ", "))
}

// tcol is a column of the trade-off table.
type tcol struct {
	head  string
	right bool
	value func(t *Tradeoff) string
}

func plusMinus(v, e float64, prec int) string {
	return fmt.Sprintf("%.*f ± %.*f", prec, v, prec, e)
}

var qualityCols = []tcol{
	{"model", false, func(t *Tradeoff) string { return cmp.Or(t.Q.ModelID, t.Q.ModelFile) }},
	{"type", false, func(t *Tradeoff) string { return t.Q.ModelFileType }},
	{"size", true, func(t *Tradeoff) string { return size(t.Q.ModelSize) }},
	{"bpw", true, func(t *Tradeoff) string { return fmt.Sprintf("%.2f", t.Q.BitsPerWeight) }},
}

var speedCols = []tcol{
	{"pp t/s", true, func(t *Tradeoff) string { return rate(t.PP) }},
	{"tg t/s", true, func(t *Tradeoff) string { return rate(t.TG) }},
}

var kldCols = []tcol{
	{"KLD mean", true, func(t *Tradeoff) string { return plusMinus(t.Q.Figures.KLD.Mean, t.Q.Figures.KLD.Stderr, 6) }},
	{"KLD p99", true, func(t *Tradeoff) string { return fmt.Sprintf("%.6f", t.Q.Figures.KLD.P99) }},
	{"top-1 %", true, func(t *Tradeoff) string { return plusMinus(t.Q.Figures.Top1Pct, t.Q.Figures.Top1Stderr, 2) }},
	{"ΔPPL %", true, func(t *Tradeoff) string { return deltaPPL(&t.Q) }},
}

var detailCols = []tcol{
	{"KLD median", true, func(t *Tradeoff) string { return fmt.Sprintf("%.6f", t.Q.Figures.KLD.Median) }},
	{"KLD max", true, func(t *Tradeoff) string { return fmt.Sprintf("%.4f", t.Q.Figures.KLD.Max) }},
	{"RMS Δp %", true, func(t *Tradeoff) string { return fmt.Sprintf("%.3f", t.Q.Figures.RMSDPPct) }},
	{"PPL", true, func(t *Tradeoff) string { return ppl(&t.Q) }},
	{"tokens", true, func(t *Tradeoff) string { return fmt.Sprint(t.Q.Figures.Tokens) }},
}

var frontCol = tcol{"Pareto", false, func(t *Tradeoff) string {
	switch {
	case t.TG == nil:
		return "-"
	case t.Dominated:
		return "dominated"
	}
	return "front"
}}

func rate(r *record.Record) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", r.AvgTs)
}

// deltaPPL is the change of perplexity against the base in percent, with
// the uncertainty of ln(PPL/PPL base) carried over; "n/a" where perplexity
// means nothing (synthetic models).
func deltaPPL(q *record.Quality) string {
	if q.Synthetic {
		return "n/a"
	}
	f := q.Figures
	return fmt.Sprintf("%+.2f ± %.2f", 100*math.Expm1(f.LnPPLRatio), 100*math.Exp(f.LnPPLRatio)*f.LnPPLStderr)
}

func ppl(q *record.Quality) string {
	if q.Synthetic {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", q.Figures.PPL)
}

// WriteTradeoffs writes models' speed beside their quality (aligned, or
// Markdown), with the Pareto front of tg t/s against mean KLD.
func WriteTradeoffs(w io.Writer, md bool, ts []Tradeoff) error { return tradeoffTable(w, md, ts, true) }

// tradeoffCols are the trade-off table's columns: with the speed and the
// Pareto front, or with more of the quality figures.
func tradeoffCols(withSpeed bool) []tcol {
	cols := append([]tcol{}, qualityCols...)
	if withSpeed {
		return append(append(append(cols, speedCols...), kldCols...), frontCol)
	}
	return append(append(cols, kldCols...), detailCols...)
}

// tradeoffHTML writes the trade-off table and its notes.
func tradeoffHTML(b *strings.Builder, ts []Tradeoff) {
	cols := tradeoffCols(true)
	b.WriteString("<h2>Quality and speed</h2>\n<table><tr>")
	for _, c := range cols {
		fmt.Fprintf(b, "<th%s>%s</th>", alignAttr(c.right), esc(c.head))
	}
	b.WriteString("</tr>\n")
	for i := range ts {
		b.WriteString("<tr>")
		for _, c := range cols {
			fmt.Fprintf(b, "<td%s>%s</td>", alignAttr(c.right), esc(c.value(&ts[i])))
		}
		b.WriteString("</tr>\n")
	}
	var notes strings.Builder
	qualityNotes(&notes, ts)
	fmt.Fprintf(b, "</table>\n<p>%s</p>\n", strings.ReplaceAll(esc(strings.TrimSpace(notes.String())), "\n", "<br/>"))
}

// tradeoffTable writes the table (aligned, or Markdown), then the notes:
// what was evaluated, and what the figures cannot vouch for.
func tradeoffTable(w io.Writer, md bool, ts []Tradeoff, withSpeed bool) error {
	cols := tradeoffCols(withSpeed)
	var rows [][]string
	var head []string
	for _, c := range cols {
		head = append(head, c.head)
	}
	for i := range ts {
		var cells []string
		for _, c := range cols {
			cells = append(cells, c.value(&ts[i]))
		}
		rows = append(rows, cells)
	}
	if md {
		var rule []string
		for _, c := range cols {
			rule = append(rule, map[bool]string{true: "---:", false: "---"}[c.right])
		}
		fmt.Fprintf(w, "| %s |\n| %s |\n", strings.Join(head, " | "), strings.Join(rule, " | "))
		for _, r := range rows {
			fmt.Fprintln(w, mdRow(r))
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		for _, r := range append([][]string{head}, rows...) {
			fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return qualityNotes(w, ts)
}

// qualityNotes names what was evaluated once, and each model's note.
func qualityNotes(w io.Writer, ts []Tradeoff) error {
	if len(ts) == 0 {
		return nil
	}
	q := ts[0].Q
	_, err := fmt.Fprintf(w, "\nquality against %s (%s): %s, %d chunks of %d tokens (second halves scored); the base cached as its most probable tokens at each position (up to %d, leaving out at most %g of the probability); ± is one standard error\n",
		q.BaseFile, q.BaseFileType, q.Text, q.Chunks, q.Ctx, q.TopK, q.CacheTail)
	// Each note once, with the models it is about.
	var notes []string
	who := map[string][]string{}
	for _, t := range ts {
		for _, n := range strings.Split(t.Q.Note, "; ") {
			if n == "" {
				continue
			}
			if who[n] == nil {
				notes = append(notes, n)
			}
			who[n] = append(who[n], cmp.Or(t.Q.ModelID, t.Q.ModelFile))
		}
	}
	for _, n := range notes {
		models := strings.Join(who[n], ", ")
		if len(who[n]) == len(ts) && len(ts) > 1 {
			models = "all"
		}
		fmt.Fprintf(w, "note (%s): %s\n", models, n)
	}
	return err
}

func qualityCSV(w io.Writer, blocks []record.Quality) error {
	cw := csvWriter{csv.NewWriter(w)}
	cw.Write([]string{"model_id", "model_filename", "model_file_type", "model_size", "bpw", "base_filename", "text", "ctx", "chunks", "tokens",
		"kld_mean", "kld_stderr", "kld_median", "kld_p90", "kld_p99", "kld_p99_9", "kld_max", "top1_pct", "top1_stderr", "rms_dp_pct",
		"ppl", "base_ppl", "ln_ppl_ratio", "ln_ppl_ratio_stderr", "base_tail_mass", "synthetic", "note"})
	g := func(v float64) string { return fmt.Sprintf("%g", v) }
	for _, q := range blocks {
		f := q.Figures
		cw.Write([]string{q.ModelID, q.ModelFile, q.ModelFileType, fmt.Sprint(q.ModelSize), g(q.BitsPerWeight), q.BaseFile, q.Text,
			fmt.Sprint(q.Ctx), fmt.Sprint(q.Chunks), fmt.Sprint(f.Tokens), g(f.KLD.Mean), g(f.KLD.Stderr), g(f.KLD.Median), g(f.KLD.P90),
			g(f.KLD.P99), g(f.KLD.P999), g(f.KLD.Max), g(f.Top1Pct), g(f.Top1Stderr), g(f.RMSDPPct), g(f.PPL), g(f.BasePPL),
			g(f.LnPPLRatio), g(f.LnPPLStderr), g(f.TailMass), fmt.Sprint(q.Synthetic), q.Note})
	}
	cw.Flush()
	return cw.Error()
}
