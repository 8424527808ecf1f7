package report

import (
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
func Comparison(w io.Writer, class string, rows []baseline.Row) error {
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
	_, err := fmt.Fprintf(w, "%d of %d points matched the baseline\n", baseline.Matched(rows), len(rows))
	return err
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
	return tw.Flush()
}
