package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tokbench/tokbench/internal/load"
	"github.com/tokbench/tokbench/point"
)

// grid is a table of strings, written in any of the formats.
type grid struct {
	title string
	head  []string
	rows  [][]string
}

func (g grid) table(w io.Writer) error {
	fmt.Fprintf(w, "%s\n", g.title)
	if err := g.rowsOnly(w); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// rowsOnly writes the grid's head and rows, aligned, without its title.
func (g grid) rowsOnly(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(g.head, "\t")+"\t")
	for _, r := range g.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	return tw.Flush()
}

func (g grid) markdown(w io.Writer) error {
	fmt.Fprintf(w, "## %s\n\n| %s |\n|%s\n", g.title, strings.Join(g.head, " | "), strings.Repeat(" ---: |", len(g.head)))
	for _, r := range g.rows {
		fmt.Fprintln(w, mdRow(r))
	}
	_, err := fmt.Fprintln(w)
	return err
}

func (g grid) html(b *strings.Builder) {
	fmt.Fprintf(b, "<h2>%s</h2>\n<table><tr>", esc(g.title))
	for _, h := range g.head {
		fmt.Fprintf(b, "<th>%s</th>", esc(h))
	}
	b.WriteString("</tr>\n")
	for _, r := range g.rows {
		b.WriteString("<tr>")
		for _, v := range r {
			fmt.Fprintf(b, "<td>%s</td>", esc(v))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

func workloadName(l *load.Line) string {
	if l.Workload == nil {
		return "?"
	}
	return l.Workload.Name
}

// loadLabel names a run: workload, scenario, load.
func loadLabel(l *load.Line) string {
	r := l.Run
	at := fmt.Sprintf("c=%d", r.Clients)
	if r.Loop == load.OpenLoop {
		at = fmt.Sprintf("%g/s", r.Rate)
	}
	return fmt.Sprintf("%s %s %s", workloadName(l), r.Scenario, at)
}

func f1(x float64) string { return fmt.Sprintf("%.1f", x) }

// loadGrids are the tables of a load results file: one row per run (the
// legitimate requests' figures), one per capacity probe.
func loadGrids(lines []load.Line) []grid {
	runs := grid{title: "Load runs (legitimate requests)", head: []string{"workload", "scenario", "loop", "load", "slots", "done", "rejected",
		"req/s", "output t/s", "t/s per user p50", "ttft p50 ms", "ttft p99 ms", "itl p50 ms", "itl p99 ms", "goodput/s", "abusive ok/rejected", "sched %"}}
	caps := grid{title: "Capacity searches", head: []string{"workload", "load", "req/s", "output t/s", "t/s per user p50", "ttft p99 ms", "itl p99 ms", "result"}}
	for i := range lines {
		l := &lines[i]
		if r := l.Run; r != nil {
			s, at, abused := r.Summary, fmt.Sprint(r.Clients), "-"
			if r.Loop == load.OpenLoop {
				at = fmt.Sprintf("%g/s", r.Rate)
			}
			if r.Abusive != nil {
				abused = fmt.Sprintf("%d/%d", r.Abusive.Completed, r.Abusive.Rejected)
			}
			runs.rows = append(runs.rows, []string{workloadName(l), r.Scenario, string(r.Loop), at, fmt.Sprint(r.Slots), fmt.Sprint(s.Completed), fmt.Sprint(s.Rejected),
				fmt.Sprintf("%.2f", s.RequestsPerS), f1(s.OutputTps), f1(s.PerUserTs.P50), f1(s.TTFTMs.P50), f1(s.TTFTMs.P99), f1(s.ITLMs.P50), f1(s.ITLMs.P99),
				fmt.Sprintf("%.2f", s.Goodput), abused, fmt.Sprintf("%.2f", s.SchedulerPct)})
		}
		if c := l.Capacity; c != nil {
			for _, p := range c.Trials {
				s := p.Summary
				caps.rows = append(caps.rows, []string{workloadName(l), probeAt(p), fmt.Sprintf("%.2f", s.RequestsPerS), f1(s.OutputTps), f1(s.PerUserTs.P50),
					f1(s.TTFTMs.P99), f1(s.ITLMs.P99), trialResult(p)})
			}
			sustained := fmt.Sprintf("%d concurrent", c.Concurrency)
			if c.Rate > 0 {
				sustained = fmt.Sprintf("%.3g/s", c.Rate)
			}
			if c.Stopped != "" && !strings.HasPrefix(c.Stopped, "saturated") {
				sustained = "at least " + sustained
			}
			caps.rows = append(caps.rows, []string{workloadName(l), "sustainable: " + sustained, "", f1(c.OutputTps), f1(c.PerUserTs), "", "", "bound by " + c.BoundBy})
		}
	}
	var out []grid
	for _, g := range []grid{runs, caps} {
		if len(g.rows) > 0 {
			out = append(out, g)
		}
	}
	return out
}

func probeAt(p load.Trial) string {
	if p.Rate > 0 {
		return fmt.Sprintf("%.3g/s", p.Rate)
	}
	return fmt.Sprint(p.Concurrency)
}

// loadCharts: output t/s and queue depth over time (a line per run),
// latency percentiles against concurrency (closed-loop runs and capacity
// probes of a workload), and each capacity search's curve.
func loadCharts(lines []load.Line) []chart {
	var out []chart
	var tps, queue []series
	type point struct{ x, ttft50, ttft99, itl50, itl99 float64 }
	byWorkload := map[string][]point{}
	add := func(wl string, x float64, s load.Figures) {
		if s.Completed > 0 {
			byWorkload[wl] = append(byWorkload[wl], point{x, s.TTFTMs.P50, s.TTFTMs.P99, s.ITLMs.P50, s.ITLMs.P99})
		}
	}
	// Per-user against aggregate t/s, a series per workload: every run
	// and judged probe, tagged with its load.
	fronts := map[string]*series{}
	var frontOrder []string
	addFront := func(wl, tag string, s load.Figures) {
		if s.Completed == 0 || s.PerUserTs.P50 <= 0 {
			return
		}
		f := fronts[wl]
		if f == nil {
			f = &series{name: wl}
			fronts[wl] = f
			frontOrder = append(frontOrder, wl)
		}
		f.xs, f.ys, f.tags = append(f.xs, s.PerUserTs.P50), append(f.ys, s.OutputTps), append(f.tags, tag)
	}
	for i := range lines {
		l := &lines[i]
		if r := l.Run; r != nil && len(r.Timeline) > 0 {
			a, b := series{name: loadLabel(l)}, series{name: loadLabel(l)}
			for _, s := range r.Timeline {
				a.xs, a.ys = append(a.xs, float64(s.T)), append(a.ys, s.OutputTps)
				b.xs, b.ys = append(b.xs, float64(s.T)), append(b.ys, float64(s.Queue))
			}
			tps, queue = append(tps, a), append(queue, b)
			if r.Loop == load.ClosedLoop && r.Abusive == nil {
				add(workloadName(l), float64(r.Clients), r.Summary)
				addFront(workloadName(l), fmt.Sprint(r.Clients), r.Summary)
			} else if r.Abusive == nil {
				addFront(workloadName(l), fmt.Sprintf("%.3g/s", r.Rate), r.Summary)
			}
		}
		if c := l.Capacity; c != nil {
			tot, user := series{name: "output t/s, all users"}, series{name: "t/s per user (p50)"}
			for _, p := range c.Trials {
				x := float64(p.Concurrency)
				if p.Rate > 0 {
					x = p.Rate
				}
				if p.Summary.Completed == 0 || p.NotJudged {
					continue
				}
				tot.xs, tot.ys = append(tot.xs, x), append(tot.ys, p.Summary.OutputTps)
				user.xs, user.ys = append(user.xs, x), append(user.ys, p.Summary.PerUserTs.P50)
				if p.Rate == 0 {
					add(workloadName(l), x, p.Summary)
				}
				addFront(workloadName(l), probeAt(p), p.Summary)
			}
			xlabel, at := "concurrent generations", fmt.Sprint(c.Concurrency)
			if c.Rate > 0 {
				xlabel, at = "arrival rate (requests/s)", fmt.Sprintf("%.3g/s", c.Rate)
			}
			title := fmt.Sprintf("Capacity: %s (sustainable %s)", workloadName(l), at)
			ss := []series{tot, user}
			out = append(out, chart{title, func(sa bool) string { return lineChart(title, xlabel, "t/s", ss, sa) }})
		}
	}
	if len(tps) > 0 {
		out = append(out, chart{"Output t/s over time", func(sa bool) string { return timeChart("Output t/s over time", "t/s", tps, sa) }},
			chart{"Queue depth over time", func(sa bool) string { return timeChart("Queue depth over time", "requests", queue, sa) }})
	}
	if len(frontOrder) > 0 {
		var ss []series
		for _, wl := range frontOrder {
			if len(fronts[wl].xs) >= 2 {
				ss = append(ss, *fronts[wl])
			}
		}
		if len(ss) > 0 {
			t := "Per-user against aggregate output t/s, by load (dashed: the Pareto front)"
			out = append(out, chart{t, func(sa bool) string { return frontChart(t, "t/s per user (median)", "output t/s, all users", ss, sa) }})
		}
	}
	var names []string
	for wl := range byWorkload {
		names = append(names, wl)
	}
	sort.Strings(names)
	for _, wl := range names {
		pts := byWorkload[wl]
		sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
		if len(pts) < 2 {
			continue
		}
		ss := []series{{name: "ttft p50"}, {name: "ttft p99"}, {name: "itl p50"}, {name: "itl p99"}}
		for _, p := range pts {
			for k, y := range []float64{p.ttft50, p.ttft99, p.itl50, p.itl99} {
				ss[k].xs, ss[k].ys = append(ss[k].xs, p.x), append(ss[k].ys, y)
			}
		}
		title := "Latency percentiles vs concurrency: " + wl
		out = append(out, chart{title, func(sa bool) string { return lineChart(title, "concurrent generations", "ms", ss, sa) }})
	}
	return out
}

// WriteLoad writes a load results file's runs and capacity searches.
func WriteLoad(w io.Writer, format string, lines []load.Line) error {
	return writeLoadWith(w, format, lines, nil)
}

// writeLoadWith is WriteLoad plus, in HTML, timelines of raw telemetry
// samples.
func writeLoadWith(w io.Writer, format string, lines []load.Line, tl Timeline) error {
	grids := loadGrids(lines)
	switch format {
	case "table", "md":
		for _, g := range grids {
			write := g.table
			if format == "md" {
				write = g.markdown
			}
			if err := write(w); err != nil {
				return err
			}
		}
		return nil
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(lines)
	case "jsonl":
		enc := json.NewEncoder(w)
		for i := range lines {
			if err := enc.Encode(&lines[i]); err != nil {
				return err
			}
		}
		return nil
	case "csv":
		cw := csvWriter{csv.NewWriter(w)}
		for _, g := range grids {
			cw.Write(append([]string{"table"}, g.head...))
			for _, r := range g.rows {
				cw.Write(append([]string{g.title}, r...))
			}
		}
		cw.Flush()
		return cw.Error()
	case "html":
		var b strings.Builder
		pageStart(&b, "tokbench load report")
		if len(lines) > 0 {
			fmt.Fprintf(&b, "<p>%s; %s, llama.cpp %s (ollama %s)</p>\n", esc(lines[0].Host), esc(lines[0].Tool), esc(lines[0].BuildCommit), esc(lines[0].OllamaVersion))
		}
		for i, c := range append(loadCharts(lines), tl.charts()...) {
			fmt.Fprintf(&b, "<figure id=\"chart-%d\">%s</figure>\n", i+1, c.svg(false))
		}
		for _, g := range grids {
			g.html(&b)
		}
		b.WriteString("</body></html>\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	// -o sql is llama-bench's table of benchmark records: a load file has none.
	return point.Inputf("output format %q: a load or capacity results file is reported as table, md, csv, json, jsonl or html (sql is for benchmark records)", format)
}

// loadMarkdownFiles writes the Markdown tables to path and each chart as
// an SVG file beside it, as MarkdownFiles does for sweeps.
func loadMarkdownFiles(path string, lines []load.Line, tl Timeline) error {
	return markdownFiles(path, append(loadCharts(lines), tl.charts()...), func(w io.Writer) error { return WriteLoad(w, "md", lines) })
}
