package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"

	"github.com/tokbench/tokbench/baseline"
)

// Comparison writes a baseline comparison, benchstat-like: old, new,
// delta, p and the verdict per point, and below, why a point's samples
// were too few to show a difference.
func Comparison(out io.Writer, class string, rows []baseline.Row) error {
	// Buffered: tabwriter writes cell by cell.
	w := bufio.NewWriter(out)
	defer w.Flush()
	fmt.Fprintf(w, "class %s\n", class)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\ttest\told t/s\tnew t/s\tdelta\tp\tverdict")
	var notes []string
	for _, r := range rows {
		if r.Verdict == baseline.NoBaseline {
			fmt.Fprintf(tw, "%s\t%s\t-\t%.2f\t-\t-\t%s\n", r.Model, r.Test, r.New, r.Verdict)
			continue
		}
		p := fmt.Sprintf("%.3f", r.P)
		if math.IsNaN(r.P) {
			p = "-"
		}
		v := string(r.Verdict)
		if r.Warning != "" {
			v += " (!)"
			notes = append(notes, fmt.Sprintf("(!) %s %s: %s", r.Model, r.Test, r.Warning))
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%+.1f%%\t%s\t%s\n", r.Model, r.Test, r.Old, r.New, 100*r.Delta, p, v)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	fmt.Fprintf(w, "%d of %d points matched the baseline\n", baseline.Matched(rows), len(rows))
	return w.Flush()
}

// Baseline writes a baseline file: per point its samples, median and
// expected range.
func Baseline(w io.Writer, f *baseline.File) error {
	fmt.Fprintf(w, "class %s, updated %s, %v\n", f.Class, f.Updated.Format("2006-01-02 15:04"), f.Software)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\ttest\truns\tmachines\tsamples\tmedian t/s\texpected range\trange from")
	keys := make([]string, 0, len(f.Points))
	for k := range f.Points {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := f.Points[k]
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.2f\t%.2f - %.2f\t%s\n", p.Model, p.Test, len(p.Runs), p.Machines(), len(p.SamplesTs), p.MedianTs, p.Low, p.High, p.Spread)
	}
	if err := tw.Flush(); err != nil || len(f.Quality) == 0 {
		return err
	}
	fmt.Fprintln(tw, "\nmodel\tbase\tmean KLD\ttop-1 %\tevaluated")
	keys = keys[:0]
	for k := range f.Quality {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		q := f.Quality[k]
		fmt.Fprintf(tw, "%s\t%s\t%.6f ± %.6f\t%.2f\t%s\n", q.Model, q.Base, q.Figures.KLD.Mean, q.Figures.KLD.Stderr, q.Figures.Top1Pct, q.When)
	}
	return tw.Flush()
}

// QualityComparison writes the quality rows of a baseline comparison
// (nothing when there are none).
func QualityComparison(w io.Writer, rows []baseline.QualityRow) error {
	if len(rows) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\told KLD\tnew KLD\tdelta\ttop-1 % old/new\tverdict")
	for _, r := range rows {
		if r.Old == nil {
			fmt.Fprintf(tw, "%s\t-\t%.6f ± %.6f\t-\t- / %.2f\t%s\n", r.Model, r.New.KLD.Mean, r.New.KLD.Stderr, r.New.Top1Pct, r.Verdict)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.6f ± %.6f\t%.6f ± %.6f\t%+.3g\t%.2f / %.2f\t%s\n", r.Model, r.Old.KLD.Mean, r.Old.KLD.Stderr,
			r.New.KLD.Mean, r.New.KLD.Stderr, r.Delta, r.Old.Top1Pct, r.New.Top1Pct, r.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %d quality figures matched the baseline (± is one standard error)\n", baseline.QualityMatched(rows), len(rows))
	return err
}
