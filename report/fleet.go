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
// reference class (the first when ref is ""); a text table wider than
// width (0: any) is summed up per test instead. Nothing for one class.
func writeClasses(w io.Writer, md bool, recs []record.Record, ref string, width int) error {
	classes := Classes(recs)
	if len(classes) == 0 {
		classes = []string{"none"}
	}
	ref = cmp.Or(ref, classes[0])
	if err := checkReference(ref, classes); err != nil {
		return err
	}
	refAt := slices.Index(classes, ref)
	if len(classes) < 2 {
		return nil
	}
	// Builds are not pooled either: with several, a row is a test of one
	// build, named with it.
	builds := map[string]bool{}
	for i := range recs {
		builds[recs[i].BuildID()] = true
	}
	type rowKey struct {
		key   point.Key
		build string
	}
	var rows []*classRow
	at := map[rowKey]*classRow{}
	counts := map[*classRow][]int{}
	classAt := map[string]int{}
	for j, c := range classes {
		if _, dup := classAt[c]; !dup {
			classAt[c] = j
		}
	}
	for i := range recs {
		r := &recs[i]
		if !r.OK() {
			continue
		}
		k := rowKey{r.Key, r.BuildID()}
		x := at[k]
		if x == nil {
			x = &classRow{model: label(r), test: r.Test, ts: make([]float64, len(classes))}
			if len(builds) > 1 {
				x.test += " @ " + cmp.Or(r.BuildID(), "?")
			}
			at[k] = x
			rows = append(rows, x)
		}
		// A class's figure is the mean of its records, as a summary's of
		// more than listCap is: the same records say the same whatever
		// the file's size.
		if j, ok := classAt[r.Class()]; ok {
			if counts[x] == nil {
				counts[x] = make([]int, len(classes))
			}
			x.ts[j] += r.AvgTs
			counts[x][j]++
		}
	}
	for x, n := range counts {
		for j := range x.ts {
			if n[j] > 0 {
				x.ts[j] /= float64(n[j])
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
	if md {
		fmt.Fprintf(w, "\n%d hardware classes side by side (ratios to %s):\n", len(classes), ref)
		writeMarkdownTable(w, head, lines)
		return nil
	}
	// Laid out first: a table past width is summed up instead.
	var b strings.Builder
	writeAligned(&b, head, lines)
	if width > 0 && slices.ContainsFunc(strings.Split(b.String(), "\n"), func(l string) bool { return len([]rune(l)) > width }) {
		return writeClassSummary(w, rows, classes)
	}
	fmt.Fprintf(w, "\n%d hardware classes side by side (ratios to %s):\n", len(classes), ref)
	_, err := io.WriteString(w, b.String())
	return err
}

// checkReference refuses a --reference that is none of the classes.
func checkReference(ref string, classes []string) error {
	if ref != "" && !slices.Contains(classes, ref) {
		return &point.InputError{Err: fmt.Errorf("--reference %s: the records' classes are %s", ref, strings.Join(classes, ", "))}
	}
	return nil
}

// writeAligned writes a head and its rows as columns aligned right.
func writeAligned(w io.Writer, head []string, lines [][]string) error {
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

// fleetWidth is the widest a fleet's side-by-side table may be on a
// terminal; past it, a summary per test takes its place.
const fleetWidth = 120

// classRow is one test's t/s in each class (0: not measured there).
type classRow struct {
	model, test string
	ts          []float64
}

// writeClassSummary sums up a fleet too wide to set side by side: per
// test, how many classes measured it, their median, slowest and fastest
// t/s and which classes those were (numbered, the numbers listed below),
// each class its own figure: nothing is pooled into one mean.
func writeClassSummary(w io.Writer, rows []*classRow, classes []string) error {
	heading := fmt.Sprintf("%d hardware classes, too many to set side by side: each test's t/s across them (one figure a class)", len(classes))
	return writeSummaryText(w, false, heading, rows, classes)
}
