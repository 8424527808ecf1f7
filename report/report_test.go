package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
	"github.com/tokbench/tokbench/stats"
)

func records() []record.Record {
	cost := 7.5
	return []record.Record{
		{Test: "pp512", Machine: record.Machine{Backend: "CPU"}, Model: record.Model{ModelType: "llama 8B Q4_0", ModelSize: 4 << 30, ModelParams: 8e9}, Settings: record.Settings{Shape: point.Shape{Threads: 2}, FlashAttn: 1, NPrompt: 512, Sampling: "none"}, Result: record.Result{AvgTs: 1234.5, StddevTs: 10, AvgTsPerSeq: 1234.5, CV: 0.01, TTFT: &stats.Latency{P50: 414.7}, SamplesTs: []float64{1230, 1239}, TestTime: time.Unix(0, 0)}},
		{Test: "tg128", Machine: record.Machine{Backend: "CPU"}, Model: record.Model{ModelType: "llama 8B Q4_0", ModelSize: 4 << 30, ModelParams: 8e9}, Settings: record.Settings{Shape: point.Shape{Threads: 2}, FlashAttn: -1, NGen: 128, Sampling: "typical (x)"}, Result: record.Result{AvgTs: 20.25, StddevTs: 0.5, AvgTsPerSeq: 20.25, SamplingCostPct: &cost, ITL: &stats.Latency{P50: 49.4, P99: 60.1}}},
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	if err := wide(&b, records()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"t/s", "1234.50 ± 10.00", "20.25 ± 0.50", "4.00 GiB", "8.00 B", "414.70", "49.40", "60.10", "costs 7.5%"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(out, "\n")
	w := utf8.RuneCountInString
	if w(lines[0]) != w(lines[1]) || w(lines[1]) != w(lines[2]) {
		t.Errorf("rows are not aligned:\n%s", out)
	}
}

func TestMarkdown(t *testing.T) {
	var b bytes.Buffer
	Write(&b, "md", records())
	lines := strings.Split(b.String(), "\n")
	// llama-bench's: cells padded to their column, its rule as wide.
	if !strings.HasPrefix(lines[0], "| model         |     size |") || !strings.HasPrefix(lines[1], "| ------------- | -------: |") ||
		strings.Count(lines[2], "|") != strings.Count(lines[0], "|") || len(lines[0]) != len(lines[1]) {
		t.Errorf("bad markdown:\n%s", b.String())
	}
}

func TestCSVAndJSON(t *testing.T) {
	var b bytes.Buffer
	Write(&b, "csv", records())
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 3 || len(rows[0]) != len(rows[1]) {
		t.Fatalf("csv: %v %v", err, rows)
	}
	b.Reset()
	Write(&b, "json", records())
	var back []record.Record
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back) != 2 || back[1].ITL.P99 != 60.1 {
		t.Errorf("json round trip: %v %+v", err, back)
	}
	b.Reset()
	Write(&b, "json", nil)
	if strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("no records should print [], got %q", b.String())
	}
	if err := Write(&b, "yaml", nil); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestGPUColumns(t *testing.T) {
	recs := records()
	var b bytes.Buffer
	wide(&b, recs)
	if strings.Contains(b.String(), "J/tok") {
		t.Error("GPU columns without GPU telemetry")
	}
	tpj := 4.0
	recs[1].TokensPerJ, recs[1].Throttled = &tpj, true
	recs[1].Telemetry = &record.Telemetry{Measure: &gpu.Window{Devices: []gpu.DeviceWindow{
		{Dev: -1, Metrics: map[string]gpu.Stat{"cpu_pct": {Mean: 99}}},
		{Dev: 0, Metrics: map[string]gpu.Stat{"gpu_util": {Mean: 90}, "mem_util": {Mean: 70}, "power_w": {Mean: 400}}},
		{Dev: 1, Metrics: map[string]gpu.Stat{"gpu_util": {Mean: 80}, "mem_util": {Mean: 50}, "power_w": {Mean: 300}}},
	}}}
	recs[1].Roofline = &roofline.Analysis{AchievedGBs: 3168, PeakBWGBs: 4800, CeilingTs: 1, Verdict: roofline.MemoryBound}
	b.Reset()
	wide(&b, recs)
	out := b.String()
	// The GPU columns are the means of the two GPUs: utilisation 85,
	// memory controller 60, 350 W; 4 tokens per joule is 0.25 J/token;
	// the step's bytes moved at 3168 of 4800 GB/s, 66% of the peak.
	for _, want := range []string{"gpu %", "J/tok", " 85 ", " 60 ", " 350 ", "0.25 (throttled)", "step bw %", " 66 "} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// A figure tokbench cannot vouch for says so: a missed CI target and a
// machine that was not quiet are marked (!) with what to do.
func TestUnvouchedFiguresAreMarked(t *testing.T) {
	recs := records()
	met := false
	recs[0].CITarget, recs[0].CITargetMet, recs[0].Reps, recs[0].CI95RepsTs = 0.02, &met, 20, 61.7
	recs[1].Noise = &host.Noise{OtherCPUPct: 180, Warnings: []string{"other processes used 180% CPU (of one core) during this test"}}
	var b bytes.Buffer
	if err := wide(&b, recs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"1234.50 ± 10.00 (!)", "20.25 ± 0.50 (!)", "target of ±2.0% (±5.0% after 20 repetitions)", "(!) llama 8B Q4_0 tg128: other processes used 180% CPU"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	recs[0].CITargetMet, recs[1].Noise = nil, &host.Noise{Quiet: true}
	b.Reset()
	wide(&b, recs)
	if strings.Contains(b.String(), "(!)") {
		t.Errorf("vouched-for figures marked:\n%s", b.String())
	}
}

// The JSON array is written item by item, byte for byte as one
// json.MarshalIndent of the whole would write it.
func TestJSONArrayStreamed(t *testing.T) {
	recs := []record.Record{{Test: "pp8", Result: record.Result{AvgTs: 1, SamplesTs: []float64{1, 2}}}, {Test: "tg<8>", Result: record.Result{AvgTs: 2}}}
	for _, items := range [][]record.Record{recs, recs[:1], nil} {
		var got bytes.Buffer
		if err := writeJSON(&got, false, items); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		enc.Encode(append([]record.Record{}, items...))
		if got.String() != want.String() {
			t.Errorf("%d items:\n%s\nwant\n%s", len(items), got.String(), want.String())
		}
	}
}

// wide is the table with every column, as --wide writes it.
func wide(w io.Writer, recs []record.Record) error {
	return WriteWith(w, "table", recs, Options{Wide: true})
}
