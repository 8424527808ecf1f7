package report

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tokbench/tokbench/internal/safefile"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// chart is one figure of a report.
type chart struct {
	title string
	svg   func(standalone bool) string
}

func label(r *record.Record) string { return cmp.Or(r.ModelID, r.ModelType) }

// facets are what the records of a chart's series can differ by, each as
// a legend says it; a series is named by the facets that differ between
// the chart's series, so that two runs of one model read "x1" and "x4",
// not its path twice.
var facets = append([]func(r *record.Record) string{
	modelName,
	func(r *record.Record) string { return r.ModelFileType },
	func(r *record.Record) string {
		if r.IsPrompt() {
			return fmt.Sprintf("%d-token prompt", r.NPrompt)
		}
		return fmt.Sprintf("%d tokens generated", r.NGen)
	},
	func(r *record.Record) string { return plural(max(r.NParallel, 1), "sequence") },
	func(r *record.Record) string { return fmt.Sprintf("depth %d", r.NDepth) },
	func(r *record.Record) string { return plural(r.Threads, "thread") },
	func(r *record.Record) string { return "flash attention " + r.FlashAttnSetting().String() },
	func(r *record.Record) string { return "KV cache " + r.TypeK + "/" + r.TypeV },
	func(r *record.Record) string { return plural(r.NGPULayers, "GPU layer") },
	func(r *record.Record) string { return fmt.Sprintf("-ncmoe %d", r.NCPUMoE) },
	func(r *record.Record) string { return fmt.Sprintf("batch %d/%d", r.NBatch, r.NUBatch) },
	func(r *record.Record) string { return r.Class() },
}, knobFacets()...)

// knobFacets are a facet for each knob of the settings table (a setting
// a key writes when it is not its default) that no facet above says
// (-ncmoe's does): "nopo=true", "poll=0". A knob the table adds tells
// series apart with no facet written for it.
func knobFacets() []func(r *record.Record) string {
	var out []func(r *record.Record) string
	for i := range point.Settings {
		if st := &point.Settings[i]; st.IsKnob() && st.KeyName != "ncmoe" {
			out = append(out, func(r *record.Record) string {
				if v := r.Key.Knob(st); v != "" {
					return st.KeyName + "=" + v
				}
				return ""
			})
		}
	}
	return out
}

// plural is "1 thread", "2 threads".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Facets a chart puts on its x axis.
const (
	facetParallel = 3
	facetDepth    = 4
	facetCPUMoE   = 9
)

// modelName is a model as a legend names it: the sweep's name, or the
// file's name without its folder and extension.
// shownModel is a model as the charts name it (modelName, then its type
// when the name lacks it), for the report's lists and tables: the name
// the user gave, never the cache's hashed file name.
func shownModel(r *record.Record) string {
	name := modelName(r)
	if t := r.ModelFileType; t != "" && !strings.Contains(strings.ToLower(name), strings.ToLower(t)) {
		name += " " + t
	}
	return name
}

func modelName(r *record.Record) string {
	id := cmp.Or(r.ModelID, r.ModelFile, r.ModelType)
	if strings.ContainsRune(id, '/') || strings.HasSuffix(id, ".gguf") {
		return strings.TrimSuffix(filepath.Base(id), ".gguf")
	}
	return id
}

// grouped are a chart's series: the records that agree on every facet
// but the x axis's, with each series' points sorted by x and named by
// the facets that differ between the series.
func grouped(recs []*record.Record, xFacet int, point func(r *record.Record) (x, y, err float64, tag string)) []series {
	keys := map[string]int{}
	var members [][]*record.Record
	var tuples [][]string
	for _, r := range recs {
		t := make([]string, len(facets))
		for i, f := range facets {
			if i != xFacet {
				t[i] = f(r)
			}
		}
		k := strings.Join(t, "\x00")
		i, ok := keys[k]
		if !ok {
			i = len(members)
			keys[k] = i
			members, tuples = append(members, nil), append(tuples, t)
		}
		members[i] = append(members[i], r)
	}
	differs := make([]bool, len(facets))
	for _, t := range tuples {
		for i := range t {
			differs[i] = differs[i] || t[i] != tuples[0][i]
		}
	}
	out := make([]series, len(members))
	for i, rs := range members {
		var name []string
		for j, v := range tuples[i] {
			// A facet the model's name already says (synth:mid:q4_0's
			// quantization) is not said twice.
			if differs[j] && v != "" && !strings.Contains(strings.Join(name, " "), v) {
				name = append(name, v)
			}
		}
		if len(name) == 0 {
			name = []string{modelName(rs[0])}
			if t := rs[0].ModelFileType; !strings.Contains(name[0], t) {
				name = append(name, t)
			}
		}
		type pt struct {
			x, y, err float64
			tag       string
		}
		pts := make([]pt, len(rs))
		for j, r := range rs {
			pts[j].x, pts[j].y, pts[j].err, pts[j].tag = point(r)
		}
		slices.SortStableFunc(pts, func(a, b pt) int { return cmp.Compare(a.x, b.x) })
		s := series{name: strings.TrimSpace(strings.Join(name, " "))}
		for _, p := range pts {
			s.xs, s.ys, s.errs, s.tags = append(s.xs, p.x), append(s.ys, p.y), append(s.errs, p.err), append(s.tags, p.tag)
		}
		out[i] = s
	}
	return out
}

// charts are the figures the records allow: tg t/s against depth and
// against parallel sequences (with 95% CIs), per-sequence against
// aggregate t/s (the Pareto front of batching), efficiency against the
// ceiling per point, and telemetry per repetition.
func charts(recs []record.Record) []chart {
	var out []chart
	var decode, prompt []*record.Record
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Status != record.StatusOK || r.IsCombined():
		case r.IsPrompt():
			prompt = append(prompt, r)
		case r.Sampling == "none" || r.Sampling == "":
			decode = append(decode, r)
		}
	}
	spreadOf := func(rs []*record.Record, xFacet int) bool {
		seen := map[string]bool{}
		for _, r := range rs {
			seen[facets[xFacet](r)] = true
		}
		return len(seen) >= 2
	}
	spread := func(xFacet int) bool { return spreadOf(decode, xFacet) }
	rate := func(x func(r *record.Record) float64) func(r *record.Record) (float64, float64, float64, string) {
		return func(r *record.Record) (float64, float64, float64, string) { return x(r), r.AvgTs, r.CI95Ts, "" }
	}
	depth := func(r *record.Record) float64 { return float64(r.NDepth) }
	if spreadOf(prompt, facetDepth) {
		t := "Prompt processing t/s against context depth (bars: 95% CI)"
		ss := grouped(prompt, facetDepth, rate(depth))
		out = append(out, chart{t, func(sa bool) string { return lineChart(t, "tokens already in the KV cache", "prompt tokens/s", ss, sa) }})
	}
	if spread(facetDepth) {
		t := "Decode t/s against context depth (bars: 95% CI)"
		ss := grouped(decode, facetDepth, rate(depth))
		out = append(out, chart{t, func(sa bool) string {
			return lineChart(t, "tokens already in the KV cache", "generated tokens/s", ss, sa)
		}})
	}
	if spread(facetCPUMoE) {
		t := "Decode t/s against the layers whose experts stay in host memory (-ncmoe; bars: 95% CI)"
		ss := grouped(decode, facetCPUMoE, rate(func(r *record.Record) float64 { return float64(r.NCPUMoE) }))
		out = append(out, chart{t, func(sa bool) string {
			return lineChart(t, "layers' experts in host memory (-ncmoe)", "generated tokens/s", ss, sa)
		}})
	}
	if spread(facetParallel) {
		t := "Aggregate decode t/s against parallel sequences (bars: 95% CI)"
		ss := grouped(decode, facetParallel, rate(func(r *record.Record) float64 { return float64(max(r.NParallel, 1)) }))
		out = append(out, chart{t, func(sa bool) string { return lineChart(t, "parallel sequences", "tokens/s", ss, sa) }})
		pt := "Per-sequence against aggregate decode t/s (dashed: the Pareto front)"
		ps := grouped(decode, facetParallel, func(r *record.Record) (float64, float64, float64, string) {
			return r.AvgTsPerSeq, r.AvgTs, 0, plural(max(r.NParallel, 1), "seq")
		})
		out = append(out, chart{pt, func(sa bool) string {
			return frontChart(pt, "t/s each sequence sees", "aggregate t/s", ps, sa)
		}})
	}

	// A fleet's records of several classes: each bar says its class.
	label := label
	if len(Classes(recs)) > 1 {
		label = func(r *record.Record) string { return cmp.Or(r.ModelID, r.ModelType) + " @ " + r.Class() }
	}
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
		// One series per test (pp512, tg128): a prefill's use and a
		// decode's differ, and one line through both means neither.
		var ss []series
		index := map[string]int{}
		n := 0
		for i := range recs {
			if tel := recs[i].Telemetry; tel != nil {
				for _, w := range tel.Reps {
					for _, d := range w.Devices {
						if st, ok := d.Metrics[m.metric]; ok && (d.Dev >= 0) == (m.metric != "cpu_pct") {
							j, seen := index[recs[i].Test]
							if !seen {
								j, index[recs[i].Test] = len(ss), len(ss)
								ss = append(ss, series{name: recs[i].Test})
							}
							n++
							ss[j].xs, ss[j].ys = append(ss[j].xs, float64(len(ss[j].xs)+1)), append(ss[j].ys, st.Mean)
						}
					}
				}
			}
		}
		if n >= 2 {
			title, unit := m.title, m.unit
			out = append(out, chart{title, func(sa bool) string {
				return lineChart(title, "repetition of the test (in the order measured)", unit, ss, sa)
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
func HTML(w io.Writer, recs []record.Record) error { return htmlWith(w, recs, nil, nil, "") }

// htmlWith is HTML plus timelines of raw telemetry samples, the models'
// quality beside their speed, and where the page came from (the command
// and file, said at its foot).
func htmlWith(w io.Writer, recs []record.Record, tl Timeline, ts []Tradeoff, origin string) error {
	var b strings.Builder
	pageStart(&b, "tokbench report")
	summaryHTML(&b, recs)
	for i, c := range allCharts(recs, tl, ts) {
		fmt.Fprintf(&b, "<figure id=\"chart-%d\">%s</figure>\n", i+1, c.svg(false))
	}
	attentionHTML(&b, recs)
	profileHTML(&b, recs)
	verdictsHTML(&b, recs)
	if len(ts) > 0 {
		tradeoffHTML(&b, ts)
	}
	if len(Classes(recs)) > 1 {
		var t strings.Builder
		writeClasses(&t, false, recs, "", fleetWidth)
		fmt.Fprintf(&b, "<h2>Hardware classes</h2>\n<pre>%s</pre>\n", esc(strings.TrimSpace(t.String())))
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
	b.WriteString("</table>\n")
	fmt.Fprintf(&b, "<p><small>%s, %s</small></p>\n</body></html>\n", esc(cmp.Or(origin, "tokbench report")), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	_, err := io.WriteString(w, b.String())
	return err
}

// summaryHTML leads with the answer: per model and backend, the prompt
// and decode t/s of the first tests without depth or parallel sequences,
// and what limits each.
func summaryHTML(b *strings.Builder, recs []record.Record) {
	type row struct{ pp, tg *record.Record }
	var keys []string
	rows := map[string]*row{}
	for i := range recs {
		r := &recs[i]
		if r.Status != record.StatusOK || r.IsCombined() || r.NDepth > 0 || r.NParallel > 1 || (r.Sampling != "none" && r.Sampling != "") {
			continue
		}
		k := label(r) + "\x00" + r.Backend + "\x00" + r.Class()
		if rows[k] == nil {
			rows[k] = &row{}
			keys = append(keys, k)
		}
		switch {
		case r.IsPrompt() && rows[k].pp == nil:
			rows[k].pp = r
		case !r.IsPrompt() && rows[k].tg == nil:
			rows[k].tg = r
		}
	}
	if len(keys) == 0 {
		return
	}
	cell := func(r *record.Record) string {
		if r == nil {
			return "<td>-</td><td class=\"l\">-</td>"
		}
		limit := "-"
		if a := r.Roofline; a != nil {
			limit = a.Verdict
			if a.CeilingTs > 0 {
				limit += fmt.Sprintf(" (%.0f%% of %.0f t/s)", 100*a.Efficiency, a.CeilingTs)
			}
		}
		return fmt.Sprintf("<td><b>%.2f</b> <small>%s</small></td><td class=\"l\">%s</td>", r.AvgTs, esc(llamaTest(r)), esc(limit))
	}
	b.WriteString("<h2>Summary</h2>\n<table><tr><th class=\"l\">model</th><th class=\"l\">backend</th><th>prompt t/s</th><th class=\"l\">what limits it</th><th>decode t/s</th><th class=\"l\">what limits it</th></tr>\n")
	for _, k := range keys {
		r := rows[k]
		any := cmp.Or(r.pp, r.tg)
		fmt.Fprintf(b, "<tr><td class=\"l\">%s</td><td class=\"l\">%s</td>%s%s</tr>\n", esc(label(any)), esc(any.Backend), cell(r.pp), cell(r.tg))
	}
	b.WriteString("</table>\n")
}

// attentionHTML lists, under the summary, every test that needs
// attention and why: a failure, a noisy machine, unsteady repetitions.
func attentionHTML(b *strings.Builder, recs []record.Record) {
	first := true
	for i := range recs {
		r := &recs[i]
		whys := needsAttention(r)
		if len(whys) == 0 {
			continue
		}
		if first {
			b.WriteString("<h2>Needs attention</h2>\n<ul>\n")
			first = false
		}
		fmt.Fprintf(b, "<li><b>%s %s</b>: %s</li>\n", esc(shownModel(r)), esc(llamaTest(r)), esc(strings.Join(whys, "; ")))
	}
	if !first {
		b.WriteString("</ul>\n")
	}
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
		// No ceiling known is unknown, not 0 t/s and 0%: its why says so.
		ceiling, eff := `<td title="no ceiling known">—</td>`, `<td title="no ceiling known">—</td>`
		if a.CeilingTs > 0 {
			ceiling, eff = fmt.Sprintf("<td>%.2f</td>", a.CeilingTs), fmt.Sprintf("<td>%.0f%%</td>", 100*a.Efficiency)
		}
		fmt.Fprintf(b, "<tr><td class=\"l\">%s</td><td class=\"l\">%s</td><td>%.2f</td>%s%s<td class=\"l\">%s</td><td class=\"l\">%s</td></tr>\n",
			esc(shownModel(&recs[i])), esc(recs[i].Test), recs[i].AvgTs, ceiling, eff, esc(a.Verdict), esc(a.Why))
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
		if err := wideMarkdown(w, recs); err != nil || len(ts) == 0 {
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
	f, err := safefile.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	base := strings.TrimSuffix(path, filepath.Ext(path))
	charts = charts[:min(len(charts), maxCharts)] // the names checkMarkdownOut checked
	for i, c := range charts {
		svgPath := fmt.Sprintf("%s-%d.svg", base, i+1)
		if err := safefile.Write(svgPath, []byte(c.svg(true)+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(f, "![%s](%s)\n\n", c.title, mdReplacer.Replace(filepath.Base(svgPath)))
	}
	if err := tables(f); err != nil {
		return err
	}
	return f.Commit(0o644)
}
