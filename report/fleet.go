package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// Classes are the hardware classes of measured records, in the order
// first seen.
func Classes(recs []record.Record) []string {
	var out []string
	seen := map[string]bool{}
	for i := range recs {
		if c := recs[i].Class(); recs[i].OK() && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// writeClasses writes a fleet's records side by side: one row per point,
// one t/s column per hardware class, and each class's ratio to the
// reference class (the first when ref is ""). Nothing for one class.
func writeClasses(w io.Writer, md bool, recs []record.Record, ref string) error {
	classes := Classes(recs)
	if len(classes) == 0 {
		classes = []string{"none"}
	}
	ref = cmp.Or(ref, classes[0])
	refAt := slices.Index(classes, ref)
	if refAt < 0 {
		return &point.InputError{Err: fmt.Errorf("--reference %s: the records' classes are %s", ref, strings.Join(classes, ", "))}
	}
	if len(classes) < 2 {
		return nil
	}
	type row struct {
		model, test string
		ts          []float64
	}
	var rows []*row
	at := map[point.Key]*row{}
	for i := range recs {
		r := &recs[i]
		if !r.OK() {
			continue
		}
		x := at[r.Key]
		if x == nil {
			x = &row{model: label(r), test: r.Test, ts: make([]float64, len(classes))}
			at[r.Key] = x
			rows = append(rows, x)
		}
		for j, c := range classes {
			if c == r.Class() {
				x.ts[j] = r.AvgTs
			}
		}
	}
	head := []string{"model", "test"}
	for _, c := range classes {
		head = append(head, c+" t/s")
	}
	for _, c := range classes {
		if c != ref {
			head = append(head, c+" / "+ref)
		}
	}
	var lines [][]string
	for _, x := range rows {
		cells := []string{x.model, x.test}
		for _, v := range x.ts {
			cells = append(cells, rateOr(v))
		}
		for j := range classes {
			if j == refAt {
				continue
			}
			if x.ts[j] > 0 && x.ts[refAt] > 0 {
				cells = append(cells, fmt.Sprintf("%.2fx", x.ts[j]/x.ts[refAt]))
			} else {
				cells = append(cells, "-")
			}
		}
		lines = append(lines, cells)
	}
	fmt.Fprintf(w, "\n%d hardware classes side by side (ratios to %s):\n", len(classes), ref)
	if md {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
		for _, l := range lines {
			fmt.Fprintln(w, mdRow(l))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, l := range append([][]string{head}, lines...) {
		fmt.Fprintln(tw, strings.Join(l, "\t")+"\t")
	}
	return tw.Flush()
}

func rateOr(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}
