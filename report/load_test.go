package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/internal/load"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/stats"
)

func loadLines() []load.Line {
	w := &load.Workload{Name: "short"}
	run := func(c int, scenario string, abusive *load.Figures) load.Line {
		s := load.Figures{Completed: 10 * c, OutputTps: 100 * float64(c), TTFTMs: stats.Percentiles{N: 10, P50: float64(c), P99: 3 * float64(c)},
			PerUserTs: stats.Percentiles{N: 10, P50: 100 / float64(c)}}
		return load.Line{Kind: "load", Workload: w, Run: &load.Result{Scenario: scenario, Loop: "closed", Clients: c, Slots: c, Summary: s, Abusive: abusive,
			Timeline: []load.Second{{T: 0, Queue: 2, OutputTps: 90}, {T: 1, Queue: 0, OutputTps: 110}}}}
	}
	probe := func(c int, pass bool) load.Trial {
		return load.Trial{Concurrency: c, Pass: pass, Summary: load.Figures{Completed: 5, OutputTps: 50 * float64(c), PerUserTs: stats.Percentiles{N: 5, P50: 90 / float64(c)}}}
	}
	return []load.Line{run(1, "load", nil), run(2, "load", nil), run(4, "abuse", &load.Figures{Completed: 1, Rejected: 3}),
		{Kind: "capacity", Workload: w, Capacity: &load.CapacityResult{Concurrency: 2, BoundBy: "decode at 4 sequences",
			Trials: []load.Trial{probe(1, true), probe(2, true), probe(4, false)}}}}
}

func TestLoadReport(t *testing.T) {
	lines := loadLines()
	var b bytes.Buffer
	if err := WriteLoad(&b, "table", lines); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Load runs", "abuse", "1/3", "Capacity searches", "sustainable: 2 concurrent", "bound by decode at 4 sequences"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	// Charts: the capacity curve, t/s and queue over time, per-user
	// against aggregate t/s (runs without abuse and the probes), and
	// latency against concurrency.
	cs := loadCharts(lines)
	var titles []string
	for _, c := range cs {
		titles = append(titles, c.title)
	}
	if got := strings.Join(titles, "|"); got != "Capacity: short (sustainable 2)|Output t/s over time|Queue depth over time|Per-user against aggregate output t/s, by load (dashed: the Pareto front)|Latency percentiles vs concurrency: short" {
		t.Errorf("charts %s", got)
	}
	b.Reset()
	if err := WriteLoad(&b, "html", lines); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(strings.NewReader(strings.TrimPrefix(b.String(), "<!DOCTYPE html>\n")))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("html not well formed: %v", err)
			}
			break
		}
	}
	if front := cs[3].svg(true); strings.Count(front, "<circle") != 5 || !strings.Contains(front, ">2</text>") {
		t.Errorf("per-user against aggregate: the 2 runs and 3 probes, tagged:\n%s", front)
	}
	if n := strings.Count(b.String(), "<svg"); n != 5 {
		t.Errorf("%d charts in the page", n)
	}
	// -o sql is llama-bench's table of benchmark records: refused for a
	// load file, as the user's to fix.
	var ie *point.InputError
	if err := WriteLoad(&b, "sql", lines); !errors.As(err, &ie) || !strings.Contains(err.Error(), "sql is for benchmark records") {
		t.Errorf("-o sql of a load file: %v", err)
	}
	md := filepath.Join(t.TempDir(), "r.md")
	if err := loadMarkdownFiles(md, lines, nil); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(md)
	if !strings.Contains(string(data), "![Queue depth over time](r-3.svg)") || !strings.Contains(string(data), "| short | load | closed | 2 |") {
		t.Errorf("markdown:\n%s", data)
	}
	for _, f := range []string{"csv", "json", "jsonl"} {
		b.Reset()
		if err := WriteLoad(&b, f, lines); err != nil || b.Len() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
