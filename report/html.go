package report

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tokbench/tokbench/record"
)

// chart is one figure of a report.
type chart struct {
	title string
	svg   func(standalone bool) string
}

func label(r *record.Record) string { return cmp.Or(r.ModelID, r.ModelType) }

// charts are the figures the records allow: tg t/s against depth per model
// and quantization, aggregate t/s against parallel sequences, efficiency
// against the ceiling per point, and telemetry per repetition.
func charts(recs []record.Record) []chart {
	var out []chart
	// A fleet's records of several classes: each series is one class's.
	label := label
	if len(Classes(recs)) > 1 {
		label = func(r *record.Record) string { return cmp.Or(r.ModelID, r.ModelType) + " @ " + r.Class() }
	}
	lines := func(title, xlabel string, key func(r *record.Record) string, x func(r *record.Record) float64) {
		bySeries := map[string]*series{}
		var order []string
		for i := range recs {
			r := &recs[i]
			if r.Status != record.StatusOK || r.IsPrompt() || (r.Sampling != "none" && r.Sampling != "") {
				continue
			}
			k := key(r)
			s := bySeries[k]
			if s == nil {
				s = &series{name: k}
				bySeries[k] = s
				order = append(order, k)
			}
			s.xs, s.ys = append(s.xs, x(r)), append(s.ys, r.AvgTs)
		}
		var ss []series
		distinct := map[float64]bool{}
		for _, k := range order {
			s := *bySeries[k]
			idx := make([]int, len(s.xs))
			for i := range idx {
				idx[i] = i
				distinct[s.xs[i]] = true
			}
			sort.Slice(idx, func(a, b int) bool { return s.xs[idx[a]] < s.xs[idx[b]] })
			sorted := series{name: s.name}
			for _, i := range idx {
				sorted.xs, sorted.ys = append(sorted.xs, s.xs[i]), append(sorted.ys, s.ys[i])
			}
			ss = append(ss, sorted)
		}
		if len(distinct) >= 2 {
			out = append(out, chart{title, func(sa bool) string { return lineChart(title, xlabel, "tokens/s", ss, sa) }})
		}
	}
	lines("Decode t/s against context depth", "KV cache depth (tokens)",
		func(r *record.Record) string { return fmt.Sprintf("%s tg%d x%d", label(r), r.NGen, r.NParallel) },
		func(r *record.Record) float64 { return float64(r.NDepth) })
	lines("Aggregate decode t/s against parallel sequences", "parallel sequences",
		func(r *record.Record) string { return fmt.Sprintf("%s tg%d @d%d", label(r), r.NGen, r.NDepth) },
		func(r *record.Record) float64 { return float64(r.NParallel) })

	var labels, verdicts []string
	var effs []float64
	var groups []int
	vIndex := map[string]int{}
	for i := range recs {
		r := &recs[i]
		if r.Roofline == nil || r.Roofline.CeilingTs == 0 {
			continue
		}
		v := r.Roofline.Verdict
		if _, ok := vIndex[v]; !ok {
			vIndex[v] = len(verdicts)
			verdicts = append(verdicts, v)
		}
		labels = append(labels, label(r)+" "+r.Test)
		effs = append(effs, 100*r.Roofline.Efficiency)
		groups = append(groups, vIndex[v])
	}
	if len(effs) > 0 {
		t := "Efficiency against the roofline ceiling (%), by verdict"
		out = append(out, chart{t, func(sa bool) string { return barChart(t, "% of ceiling", labels, effs, groups, verdicts, 100, sa) }})
	}
	out = append(out, decompCharts(recs)...)

	for _, m := range []struct{ metric, title, unit string }{
		{"power_w", "GPU power per repetition", "W"},
		{"gpu_util", "GPU utilisation per repetition", "%"},
		{"mem_util", "GPU memory-controller utilisation per repetition", "%"},
		{"cpu_pct", "Host CPU use per repetition (% of one core)", "%"},
	} {
		var s series
		s.name = m.metric
		for i := range recs {
			if tel := recs[i].Telemetry; tel != nil {
				for _, w := range tel.Reps {
					for _, d := range w.Devices {
						if st, ok := d.Metrics[m.metric]; ok && (d.Dev >= 0) == (m.metric != "cpu_pct") {
							s.xs, s.ys = append(s.xs, float64(len(s.xs)+1)), append(s.ys, st.Mean)
						}
					}
				}
			}
		}
		if len(s.xs) >= 2 {
			title, unit := m.title, m.unit
			out = append(out, chart{title, func(sa bool) string {
				return lineChart(title, "repetition (in the order measured)", unit, []series{s}, sa)
			}})
		}
	}
	return out
}

const css = `body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;font-size:12px;margin:1em 0}` +
	`td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}td.l,th.l{text-align:left}h2{margin-top:1.6em}figure{margin:1em 0}`

// pageStart begins a self-contained page: its head with the style sheet
// inline, and its title as the first heading.
func pageStart(b *strings.Builder, title string) {
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>%s</title><style>%s</style></head><body>\n<h1>%s</h1>\n", esc(title), css, esc(title))
}

// HTML writes one self-contained page: hardware profile, charts as inline
// SVG, the verdict table and every result. Nothing in it is fetched from
// anywhere.
func HTML(w io.Writer, recs []record.Record) error { return HTMLWith(w, recs, nil, nil) }

// HTMLWith is HTML plus timelines of raw telemetry samples and the models'
// quality beside their speed.
func HTMLWith(w io.Writer, recs []record.Record, tl Timeline, ts []Tradeoff) error {
	var b strings.Builder
	pageStart(&b, "tokbench report")
	profileHTML(&b, recs)
	for i, c := range allCharts(recs, tl, ts) {
		fmt.Fprintf(&b, "<figure id=\"chart-%d\">%s</figure>\n", i+1, c.svg(false))
	}
	verdictsHTML(&b, recs)
	if len(ts) > 0 {
		tradeoffHTML(&b, ts)
	}
	if len(Classes(recs)) > 1 {
		var t strings.Builder
		WriteClasses(&t, false, recs, "")
		fmt.Fprintf(&b, "<h2>Hardware classes side by side</h2>\n<pre>%s</pre>\n", esc(strings.TrimSpace(t.String())))
	}
	b.WriteString("<h2>Results</h2>\n<table><tr>")
	cols := columnsFor(recs)
	for _, c := range cols {
		fmt.Fprintf(&b, "<th%s>%s</th>", align(c), esc(c.head))
	}
	b.WriteString("</tr>\n")
	for i := range recs {
		b.WriteString("<tr>")
		for _, c := range cols {
			fmt.Fprintf(&b, "<td%s>%s</td>", align(c), esc(c.value(&recs[i])))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func align(c column) string { return alignAttr(c.right) }

// alignAttr is a table cell's class: right-aligned (numbers) by default.
func alignAttr(right bool) string {
	if right {
		return ""
	}
	return ` class="l"`
}

func profileHTML(b *strings.Builder, recs []record.Record) {
	if len(recs) == 0 {
		b.WriteString("<p>No records.</p>\n")
		return
	}
	r := recs[0]
	b.WriteString("<h2>Hardware and build</h2>\n<table>")
	row := func(k, v string) {
		fmt.Fprintf(b, "<tr><th class=\"l\">%s</th><td class=\"l\">%s</td></tr>", esc(k), esc(v))
	}
	row("class", r.Class())
	row("CPU", fmt.Sprintf("%s, %d threads, %.1f GiB", r.CPUInfo, r.HostThreads, float64(r.HostMemory)/(1<<30)))
	row("CPU features", r.CPUFeatures)
	row("backends", r.Backends)
	for _, g := range r.GPUProfile {
		row(fmt.Sprintf("GPU %d", g.Index), fmt.Sprintf("%s, compute %s, %d SMs, %.0f GiB, %.0f GB/s peak (%s), %.0f W limit, driver %s",
			g.Name, g.Compute, g.SMs, float64(g.MemoryTotal)/(1<<30), g.PeakBWGBs, g.BWSource, g.PowerLimitW, g.Driver))
	}
	row("llama.cpp", fmt.Sprintf("%s (ollama %s), %s", r.BuildCommit, r.OllamaVersion, r.Tool))
	b.WriteString("</table>\n")
}

func verdictsHTML(b *strings.Builder, recs []record.Record) {
	b.WriteString("<h2>Verdicts</h2>\n<table><tr><th class=\"l\">model</th><th class=\"l\">test</th><th>t/s</th><th>ceiling t/s</th><th>efficiency</th><th class=\"l\">verdict</th><th class=\"l\">why</th></tr>\n")
	n := 0
	for i := range recs {
		a := recs[i].Roofline
		if a == nil {
			continue
		}
		n++
		fmt.Fprintf(b, "<tr><td class=\"l\">%s</td><td class=\"l\">%s</td><td>%.2f</td><td>%.2f</td><td>%.0f%%</td><td class=\"l\">%s</td><td class=\"l\">%s</td></tr>\n",
			esc(label(&recs[i])), esc(recs[i].Test), recs[i].AvgTs, a.CeilingTs, 100*a.Efficiency, esc(a.Verdict), esc(a.Why))
	}
	b.WriteString("</table>\n")
	if n == 0 {
		b.WriteString("<p>No ceilings known: run <code>tokbench probe</code> on this hardware.</p>\n")
	}
}

// MarkdownFiles writes the Markdown tables to path and each chart as an
// SVG file beside it (path without .md, then -1.svg, -2.svg, ...), linked
// from the Markdown.
func MarkdownFiles(path string, recs []record.Record, tl Timeline, ts []Tradeoff) error {
	return markdownFiles(path, allCharts(recs, tl, ts), func(w io.Writer) error {
		if err := Markdown(w, recs); err != nil || len(ts) == 0 {
			return err
		}
		fmt.Fprintln(w)
		return WriteTradeoffs(w, true, ts)
	})
}

// allCharts are a report's charts: the records', the timelines', the
// quality trade-off's.
func allCharts(recs []record.Record, tl Timeline, ts []Tradeoff) []chart {
	return append(append(charts(recs), tl.charts()...), qualityCharts(ts)...)
}

func markdownFiles(path string, charts []chart, tables func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	base := strings.TrimSuffix(path, filepath.Ext(path))
	for i, c := range charts {
		svgPath := fmt.Sprintf("%s-%d.svg", base, i+1)
		if err := os.WriteFile(svgPath, []byte(c.svg(true)+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(f, "![%s](%s)\n\n", c.title, filepath.Base(svgPath))
	}
	if err := tables(f); err != nil {
		return err
	}
	return f.Close()
}
