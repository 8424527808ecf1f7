package report

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/tokbench/tokbench/baseline"
)

// DiffFormats are compare's output formats.
var DiffFormats = []string{"table", "md", "csv", "json"}

// Diffs writes a comparison of two sets of results (a, b: their names,
// as the column heads say them): per test the mean t/s of each, the
// speedup b/a (as compare-llama-bench.py prints it), its 95% interval,
// the Mann–Whitney p-value and the verdict; below the table, why a test's
// samples were too few to call anything, or a change within the noise
// between processes.
func Diffs(out io.Writer, format, a, b string, diffs []baseline.Diff, alpha float64) error {
	w := bufio.NewWriter(out)
	defer w.Flush()
	if format == "json" {
		rows := make([]map[string]any, len(diffs))
		for i, d := range diffs {
			rows[i] = map[string]any{"model": d.Model, "test": d.Test, "settings": d.Settings, "a_ts": d.A, "b_ts": d.B,
				"a_samples": d.NA, "b_samples": d.NB, "speedup": d.Speedup, "ratio": finite(d.Ratio.Est), "ratio_lo": finite(d.Ratio.Lo),
				"ratio_hi": finite(d.Ratio.Hi), "p": finite(d.P), "verdict": d.Verdict, "warning": d.Warning, "floor": d.Floor, "a_runs": d.RunsA, "b_runs": d.RunsB}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"a": a, "b": b, "alpha": alpha, "tests": rows})
	}
	head := []string{"model", "test", "settings", "t/s " + a, "t/s " + b, "speedup", fmt.Sprintf("%.0f%% CI", 100*(1-alpha)), "p", "verdict"}
	cells := func(d baseline.Diff) []string {
		ci, p := "-", "-"
		if !math.IsNaN(d.Ratio.Lo) {
			ci = fmt.Sprintf("%.3f-%.3f", d.Ratio.Lo, d.Ratio.Hi)
		}
		if !math.IsNaN(d.P) {
			p = fmt.Sprintf("%.3f", d.P)
		}
		v := string(d.Verdict)
		if d.Warning != "" {
			v += " (!)"
		}
		return []string{d.Model, d.Test, d.Settings, fmt.Sprintf("%.2f", d.A), fmt.Sprintf("%.2f", d.B), fmt.Sprintf("%.3f", d.Speedup), ci, p, v}
	}
	switch format {
	case "csv":
		cw := csvWriter{csv.NewWriter(w)}
		cw.Write(head)
		for _, d := range diffs {
			cw.Write(cells(d))
		}
		cw.Flush()
		return cw.Error()
	case "md":
		fmt.Fprintln(w, mdRow(head))
		fmt.Fprintln(w, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
		for _, d := range diffs {
			fmt.Fprintln(w, mdRow(cells(d)))
		}
	default:
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, d := range diffs {
			fmt.Fprintln(tw, strings.Join(cells(d), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, d := range diffs {
		if d.Warning != "" {
			fmt.Fprintf(w, "(!) %s %s: %s\n", d.Model, strings.TrimSpace(d.Test+" "+d.Settings), d.Warning)
		}
	}
	return w.Flush()
}

// finite is f, or nil (JSON null) when it is not a number.
func finite(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}
