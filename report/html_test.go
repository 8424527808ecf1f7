package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// sweepRecords is a small sweep: two quantizations x three depths x two
// parallel counts of tg, with rooflines and GPU telemetry.
func sweepRecords() []record.Record {
	var out []record.Record
	for qi, q := range []string{"q8_0", "q4_0"} {
		for _, np := range []int{1, 4} {
			for _, d := range []int{0, 1024, 4096} {
				ts := float64(100*(qi+1)*np) / (1 + float64(d)/4096)
				w := gpu.Window{Devices: []gpu.DeviceWindow{{Dev: 0, Metrics: map[string]gpu.Stat{"power_w": {Mean: 300 + ts}, "gpu_util": {Mean: 90}}},
					{Dev: -1, Metrics: map[string]gpu.Stat{"cpu_pct": {Mean: 100}}}}}
				out = append(out, record.Record{ModelID: "synth:llama-8b:" + q, Test: "tg128", Status: record.StatusOK, Roofline: &roofline.Analysis{CeilingTs: ts * 1.5, Efficiency: 1 / 1.5, Verdict: roofline.MemoryBound, Why: "because <tested> & so"}, Machine: record.Machine{CPUInfo: "Test CPU", Backend: "CUDA"}, Model: record.Model{ModelFileType: q}, Settings: record.Settings{NGen: 128, NDepth: d, NParallel: np, Sampling: "none"}, Result: record.Result{AvgTs: ts}, Hardware: record.Hardware{Telemetry: &record.Telemetry{Measure: &w, Reps: []gpu.Window{w, w}}}})
			}
		}
	}
	return out
}

func TestHTMLIsSelfContainedAndWellFormed(t *testing.T) {
	var b strings.Builder
	if err := Write(&b, "html", sweepRecords()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	wellFormed(t, page)
	for _, bad := range []string{"http://", "https://", "src=", "<script", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q: it must open with no network", bad)
		}
	}
	// depth chart, parallel chart, per-sequence against aggregate,
	// efficiency chart, power and GPU utilisation and host CPU timelines.
	if n := strings.Count(page, `<figure id="chart-`); n != 7 {
		t.Errorf("%d charts, want 7", n)
	}
	for _, want := range []string{"Decode t/s against context depth", "Aggregate decode t/s against parallel", "Efficiency against the roofline",
		"GPU power per repetition", "memory-bound", "because &lt;tested&gt; &amp; so", "Hardware and build", "synth:llama-8b:q4_0"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestMarkdownFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.md")
	if err := MarkdownFiles(p, sweepRecords(), nil, nil); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(p)
	svgs, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "r-*.svg"))
	if len(svgs) != 7 || strings.Count(string(md), "![") != 7 || !strings.Contains(string(md), "| --- |") {
		t.Fatalf("%d svg files, markdown:\n%s", len(svgs), md)
	}
	for _, s := range svgs {
		data, _ := os.ReadFile(s)
		if err := xml.Unmarshal(data, new(struct{})); err != nil || !strings.Contains(string(data), `xmlns="http://www.w3.org/2000/svg"`) {
			t.Errorf("%s: not a standalone SVG: %v", s, err)
		}
	}
}

func TestTimelineCharts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "samples.jsonl")
	var lines []string
	for i := 0; i < 20; i++ {
		lines = append(lines, fmt.Sprintf(`{"t":%g,"unix":%g,"dev":0,"power_w":%d,"gpu_util":90}`, float64(i)/20, 1e9+float64(i)/20, 300+i),
			fmt.Sprintf(`{"t":%g,"unix":%g,"dev":-1,"cpu_pct":100,"rss":1000}`, float64(i)/20, 1e9+float64(i)/20))
	}
	os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	tl, err := ReadTimeline(p)
	if err != nil {
		t.Fatal(err)
	}
	if s := tl["power_w"][0]; s == nil || len(s.xs) != 20 || s.xs[19] < 0.94 || s.ys[19] != 319 {
		t.Fatalf("power series %+v", s)
	}
	var b strings.Builder
	htmlWith(&b, sweepRecords(), tl, nil, "")
	for _, want := range []string{"GPU power over time", "GPU utilisation over time", "Host CPU over time"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q chart", want)
		}
	}
	os.WriteFile(p, []byte("not json\n"), 0o644)
	if _, err := ReadTimeline(p); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad samples file: %v", err)
	}
}

// wellFormed fails unless a strict XML parser reads the page to the end.
func wellFormed(t *testing.T, page string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(page))
	dec.Strict = true
	dec.Entity = xml.HTMLEntity
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("page does not parse: %v", err)
		}
	}
}

// Legends name series by what differs between them, never by a path;
// doubling x values go on a log axis whose labels do not collide; each
// point has its 95% CI as an error bar; the Pareto chart joins its front.
func TestChartLegendsAxesAndErrorBars(t *testing.T) {
	var recs []record.Record
	for _, np := range []int{1, 4} {
		for d := 0; d <= 32768; d = max(2*d, 512) {
			recs = append(recs, record.Record{ModelID: "/root/.cache/tokbench/sweep/mid-2.gguf", Test: "tg64", Status: record.StatusOK,
				Model: record.Model{ModelFileType: "q4_0"}, Settings: record.Settings{NGen: 64, NDepth: d, NParallel: np, Sampling: "none"},
				Result: record.Result{AvgTs: float64(100*np) / (1 + float64(d)/8192), AvgTsPerSeq: 100 / (1 + float64(d)/8192), CI95Ts: 3}})
		}
	}
	cs := charts(recs)
	if len(cs) != 3 {
		t.Fatalf("%d charts", len(cs))
	}
	depth := cs[0].svg(true)
	if strings.Contains(depth, "/root/") || !strings.Contains(depth, ">1 sequence</text>") || !strings.Contains(depth, ">4 sequences</text>") {
		t.Errorf("legends are not \"1 sequence\" and \"4 sequences\":\n%s", depth)
	}
	if !strings.Contains(depth, "(log scale)") || !strings.Contains(depth, "± 3.00 (95% CI)") || strings.Count(depth, `<path d="M`) != 2*8 {
		t.Errorf("no log axis or error bars:\n%s", depth)
	}
	// The x labels: each at least its own width from the last.
	type label struct {
		x    float64
		text string
	}
	var labels []label
	for _, part := range strings.Split(depth, "<text ")[1:] {
		var x float64
		var y int
		if n, _ := fmt.Sscanf(part, `x="%g" y="%d"`, &x, &y); n == 2 && y == chartH-padB+14 {
			labels = append(labels, label{x, part[strings.Index(part, ">")+1 : strings.Index(part, "<")]})
		}
	}
	if len(labels) < 5 {
		t.Fatalf("%d x labels: %v", len(labels), labels)
	}
	for i := 1; i < len(labels); i++ {
		a, b := labels[i-1], labels[i]
		if b.x-a.x < 3.2*float64(len(a.text)+len(b.text))+4 {
			t.Errorf("x labels %q and %q overlap (%.0f and %.0f)", a.text, b.text, a.x, b.x)
		}
	}
	front := cs[2].svg(true)
	if !strings.Contains(front, "stroke-dasharray=\"5 3\"") || !strings.Contains(front, ">4 seqs</text>") || !strings.Contains(cs[2].title, "Pareto") {
		t.Errorf("Pareto chart:\n%s", front)
	}
}

func TestParetoFront(t *testing.T) {
	s := series{xs: []float64{100, 90, 50, 40, 20}, ys: []float64{100, 150, 140, 300, 250}}
	if got := paretoFront(s); fmt.Sprint(got) != "[0 1 3]" {
		t.Errorf("front %v, want [0 1 3]", got)
	}
}

// A fleet's records of two classes: each efficiency bar and each series
// says its class.
func TestChartsOfTwoClasses(t *testing.T) {
	recs := sweepRecords()
	for i := range recs {
		if i%2 == 1 {
			recs[i].CPUInfo = "Other CPU"
		}
	}
	if len(Classes(recs)) != 2 {
		t.Fatalf("classes %v", Classes(recs))
	}
	var eff, depth string
	for _, c := range charts(recs) {
		switch {
		case strings.HasPrefix(c.title, "Efficiency"):
			eff = c.svg(true)
		case strings.HasPrefix(c.title, "Decode t/s against context depth"):
			depth = c.svg(true)
		}
	}
	if !strings.Contains(eff, "synth:llama-8b:q8_0 @ ") {
		t.Errorf("efficiency bars do not say their class:\n%s", eff)
	}
	if other := recs[1].Class(); !strings.Contains(depth, other) {
		t.Errorf("depth series do not say their class:\n%s", depth)
	}
}

// The page leads with the answer (a summary of pp and tg per model),
// draws prompt processing too, and says at its foot where it came from.
func TestHTMLLeadsWithTheSummary(t *testing.T) {
	var recs []record.Record
	for _, d := range []int{0, 512, 1024} {
		for _, pp := range []bool{true, false} {
			r := record.Record{ModelID: "synth:tiny:q8_0", Status: record.StatusOK, Machine: record.Machine{Backend: "CPU"},
				Settings: record.Settings{NDepth: d, NParallel: 1, Sampling: "none"}, Result: record.Result{AvgTs: 100 - float64(d)/100, CI95Ts: 1}}
			if pp {
				r.Test, r.NPrompt, r.AvgTs = "pp64", 64, 10*r.AvgTs
			} else {
				r.Test, r.NGen = "tg16", 16
			}
			recs = append(recs, r)
		}
	}
	var b strings.Builder
	if err := htmlWith(&b, recs, nil, nil, "tokbench report x.jsonl"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	sum, fig := strings.Index(page, "<h2>Summary</h2>"), strings.Index(page, "<figure")
	if sum < 0 || fig < sum || !strings.Contains(page[sum:fig], "<b>1000.00</b>") || !strings.Contains(page[sum:fig], "<b>100.00</b>") {
		t.Errorf("no summary before the charts:\n%s", page)
	}
	if !strings.Contains(page, "Prompt processing t/s against context depth") || !strings.Contains(page, `width="100%"`) {
		t.Error("no prompt chart, or a chart of fixed width")
	}
	if !strings.Contains(page, "<small>tokbench report x.jsonl, ") {
		t.Error("the foot does not say where the page came from")
	}
}

// Bars are labelled with what tells them apart.
func TestBarLabels(t *testing.T) {
	got := distinct([]string{"synth:tiny:q8_0 pp64", "synth:tiny:q8_0 tg16 @ d32"})
	if strings.Join(got, "|") != "pp64|tg16 @ d32" {
		t.Errorf("distinct: %q", got)
	}
	svg := barChart("eff", "%", []string{"m pp64", "m tg16"}, []float64{50, 20}, []int{0, 1}, []string{"a", "b"}, 100, true)
	if !strings.Contains(svg, ">pp64</text>") || !strings.Contains(svg, ">tg16</text>") {
		t.Errorf("no bar labels:\n%s", svg)
	}
}

// A sweep over -ncmoe charts decode t/s against it, one series per model.
func TestHTMLChartsCPUMoE(t *testing.T) {
	var recs []record.Record
	for _, n := range []int{0, 8, 16} {
		recs = append(recs, record.Record{ModelID: "moe", Test: "tg128", Status: record.StatusOK,
			Settings: record.Settings{NGen: 128, NParallel: 1, Sampling: "none", NCPUMoE: n}, Result: record.Result{AvgTs: 100 - float64(n)}})
	}
	var b strings.Builder
	if err := HTML(&b, recs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Decode t/s against the layers whose experts stay in host memory") {
		t.Error("no -ncmoe chart")
	}
}

// Series that differ only in a knob no facet of its own says (-nopo,
// --poll) are told apart by it, not drawn as one.
func TestChartSeriesNamedByKnobs(t *testing.T) {
	var recs []*record.Record
	for _, nopo := range []bool{false, true} {
		for _, d := range []int{0, 1024} {
			p := point.Defaults(2)
			p.Model, p.NPrompt, p.NDepth, p.Poll = "m.gguf", 0, d, "0"
			p.NoOpOffload = point.Bit(nopo)
			r := &record.Record{Key: p.Key(), Test: "tg128", Status: record.StatusOK, Settings: record.Settings{NGen: 128, NDepth: d}, Result: record.Result{AvgTs: 10}}
			recs = append(recs, r)
		}
	}
	ss := grouped(recs, facetDepth, func(r *record.Record) (float64, float64, float64, string) { return float64(r.NDepth), r.AvgTs, 0, "" })
	if len(ss) != 2 || strings.Contains(ss[0].name, "nopo") || ss[1].name != "nopo=true" {
		var names []string
		for _, s := range ss {
			names = append(names, s.name)
		}
		t.Errorf("series %q, want two told apart by nopo alone", names)
	}
}
