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
// speedup b/a (as compare-llama-bench.py prints it), the change from the
// runs' medians with its interval at the gate's level, its p-value and
// the verdict; below the table, why a test could not be tested, then the
// gate (writeGate).
func Diffs(out io.Writer, format, a, b string, diffs []baseline.Diff, gate baseline.Gate, alpha float64) error {
	w := bufio.NewWriter(out)
	defer w.Flush()
	if format == "json" {
		rows := make([]map[string]any, len(diffs))
		for i, d := range diffs {
			rows[i] = map[string]any{"model": d.Model, "test": d.Test, "settings": d.Settings, "a_ts": d.A, "b_ts": d.B,
				"a_samples": d.NA, "b_samples": d.NB, "speedup": d.Speedup, "ratio": finite(d.Ratio.Est), "ratio_lo": finite(d.Ratio.Lo),
				"ratio_hi": finite(d.Ratio.Hi), "p": finite(d.P), "verdict": d.Verdict, "warning": d.Warning, "a_runs": d.RunsA, "b_runs": d.RunsB}
		}
		g := map[string]any{"tests": gate.Tests, "not_testable": gate.NotTestable, "geomean": finite(gate.GeoMean.Est), "geomean_lo": finite(gate.GeoMean.Lo),
			"geomean_hi": finite(gate.GeoMean.Hi), "p": finite(gate.P), "spread": gate.Spread, "spread_from": gate.SpreadFrom, "resolves": finite(gate.Resolves),
			"regression": gate.Regression, "slower": gate.SlowerTests, "faster": gate.FasterTests, "method": gate.Method, "advice": gate.Advice}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"a": a, "b": b, "alpha": alpha, "gate": g, "tests": rows})
	}
	head := []string{"model", "test", "settings", "t/s " + a, "t/s " + b, "speedup", "change", "CI", "p", "verdict"}
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
		change := "-"
		if !math.IsNaN(d.Ratio.Lo) {
			change = fmt.Sprintf("%.3f", d.Ratio.Est)
		}
		return []string{d.Model, d.Test, d.Settings, fmt.Sprintf("%.2f", d.A), fmt.Sprintf("%.2f", d.B), fmt.Sprintf("%.3f", d.Speedup), change, ci, p, v}
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
		fmt.Fprintln(w, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
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
	if format != "csv" {
		writeGate(w, gate)
	}
	return w.Flush()
}

// writeGate says the comparison's verdict as a whole and how it was
// reached.
func writeGate(w io.Writer, g baseline.Gate) {
	fmt.Fprintln(w)
	if g.Tests == 0 {
		fmt.Fprintf(w, "gate: %s\n", g.Method)
		return
	}
	verdict := "no regression"
	if g.Regression {
		verdict = "REGRESSION"
	}
	fmt.Fprintf(w, "gate: %s. Geometric mean of the %d tests' changes %.3f (%.3f-%.3f)", verdict, g.Tests, g.GeoMean.Est, g.GeoMean.Lo, g.GeoMean.Hi)
	if len(g.SlowerTests) > 0 {
		fmt.Fprintf(w, "; slower: %s", strings.Join(g.SlowerTests, ", "))
	}
	if len(g.FasterTests) > 0 {
		fmt.Fprintf(w, "; faster: %s", strings.Join(g.FasterTests, ", "))
	}
	fmt.Fprintf(w, ".\nHow: %s. speedup is the means' ratio (compare-llama-bench.py's); change and its CI are the runs' medians', at the level the gate needs.\n", g.Method)
	if g.Advice != "" {
		fmt.Fprintf(w, "(!) %s\n", g.Advice)
	}
}

// finite is f, or nil (JSON null) when it is not a number.
func finite(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}
