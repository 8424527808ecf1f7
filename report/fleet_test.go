package report

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/record"
)

// A fleet of 40 classes and 3 builds reads at a glance: its text fits 120
// columns, each test of each build is a row (builds not pooled), and the
// slowest class of each is named.
func TestFleetFitsAndNamesItsSlowest(t *testing.T) {
	var recs []record.Record
	for c := range 40 {
		for b, build := range []string{"aaaaaaaa", "bbbbbbbb", "cccccccc"} {
			for _, test := range []string{"pp512", "tg128"} {
				r := record.Record{Test: test, Status: record.StatusOK, ModelID: "synth:llama-8b:q4_0"}
				r.Backend, r.CPUInfo, r.BuildCommit = "CPU", fmt.Sprintf("Vendor Model %02d 96-Core Processor", c), build
				r.Key.Model, r.Key.NPrompt = "m", 512
				if test == "tg128" {
					r.Key.NPrompt, r.Key.NGen = 0, 128
				}
				r.AvgTs = float64(100 + c + 1000*b)
				if c == 17 {
					r.AvgTs = 10 // the slowest class, in every row
				}
				recs = append(recs, r)
			}
		}
	}
	var b strings.Builder
	if err := writeClasses(&b, false, recs, "", fleetWidth); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > fleetWidth {
			t.Errorf("a line of %d columns: %s", n, l)
		}
	}
	slowest := strings.Count(out, "#18  10.00")
	if !strings.Contains(out, "40 hardware classes") || slowest != 6 || !strings.Contains(out, "#18 cpu-vendor-model-17-96-core-processor") ||
		!strings.Contains(out, "pp512 @ bbbbbbbb") {
		t.Errorf("slowest named %d times of 6:\n%s", slowest, out)
	}
}

// A file of more records than a table lists (a fleet's, many rounds of
// each point on each class) is read one record at a time and summed up:
// per test and build, each class's mean over its records; the text fits
// 120 columns and names the slowest class, the HTML draws each test's
// classes, and a file of fewer is listed as before.
func TestFleetFileSummedUp(t *testing.T) {
	dir := t.TempDir()
	path, lines := fleetFile(t, dir)
	var text, page bytes.Buffer
	if err := File(&text, io.Discard, path, FileOptions{Format: "table"}); err != nil {
		t.Fatal(err)
	}
	if err := File(&page, io.Discard, path, FileOptions{Format: "html"}); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	for _, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > fleetWidth {
			t.Errorf("a line of %d columns: %s", n, l)
		}
	}
	want := fmt.Sprintf("%d measured records of 40 hardware classes", len(lines))
	if !strings.Contains(out, want) || strings.Count(out, "#18  10.00") != 2 || !strings.Contains(out, "#40  139.50") ||
		strings.Count(out, "synth:llama-8b:q4_0") != 2 {
		t.Errorf("want %q, two rows, the slowest (#18) in both, the fastest's (#40) mean 139.50:\n%s", want, out)
	}
	if h := page.String(); !strings.Contains(h, want) || strings.Count(h, "<circle") != 80 || strings.Contains(h, "<figure") {
		t.Errorf("the page: %d dots, want 80", strings.Count(h, "<circle"))
	}
	// A --reference that is none of the classes is refused, as when listed.
	if err := File(io.Discard, io.Discard, path, FileOptions{Format: "table", Reference: "cpu-nope"}); err == nil || !strings.Contains(err.Error(), "--reference cpu-nope") {
		t.Errorf("an unknown --reference: %v", err)
	}
	// One record fewer than the table lists: listed, one a row.
	small := filepath.Join(dir, "small.jsonl")
	if err := record.Append(small, lines[:listCap]...); err != nil {
		t.Fatal(err)
	}
	text.Reset()
	if err := File(&text, io.Discard, small, FileOptions{Format: "table"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "measured records of") || strings.Count(text.String(), "\n") < listCap {
		t.Errorf("%d records summed up, not listed", listCap)
	}
}

// fleetFile writes a fleet's file of more records than a table lists:
// 40 classes, two tests, a round after another; the slowest class is
// #18 (10 t/s), the fastest #40 (139.5 on average).
func fleetFile(t *testing.T, dir string) (string, []any) {
	t.Helper()
	path := filepath.Join(dir, "fleet.jsonl")
	var lines []any
	for round := 1; len(lines) <= listCap; round++ {
		for c := range 40 {
			for _, test := range []string{"pp512", "tg128"} {
				r := record.Record{Test: test, Status: record.StatusOK, ModelID: "synth:llama-8b:q4_0", Round: round}
				r.Backend, r.CPUInfo, r.BuildCommit = "CPU", fmt.Sprintf("Vendor Model %02d 96-Core Processor", c), "aaaaaaaa"
				r.Key.Model, r.Key.NPrompt = "m", 512
				if test == "tg128" {
					r.Key.NPrompt, r.Key.NGen = 0, 128
				}
				r.AvgTs = float64(100 + c + round%2) // a class's mean: 100.5 + c
				if c == 17 {
					r.AvgTs = 10
				}
				lines = append(lines, r)
			}
		}
	}
	if err := record.Append(path, lines...); err != nil {
		t.Fatal(err)
	}
	return path, lines
}

// The machine formats of a fleet's file are written as it is read, in
// its order: the same bytes as the records held whole in that order.
func TestFleetFileStreamed(t *testing.T) {
	path, _ := fleetFile(t, t.TempDir())
	recs, _, _, err := record.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"jsonl", "json", "csv", "sql"} {
		var streamed, held bytes.Buffer
		if err := File(&streamed, io.Discard, path, FileOptions{Format: format}); err != nil {
			t.Fatal(err)
		}
		if err := WriteWith(&held, format, recs, Options{}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(streamed.Bytes(), held.Bytes()) || held.Len() < len(recs)*100 {
			t.Errorf("-o %s: %d bytes streamed, %d held, not the same", format, streamed.Len(), held.Len())
		}
	}
}

// A class's figure side by side is the mean of its records, whatever the
// file's size (as the summary of a file past listCap gives it), never
// its last record's.
func TestFleetClassIsItsMean(t *testing.T) {
	var recs []record.Record
	for i, c := range []struct {
		cpu string
		ts  float64
	}{{"Alpha", 100}, {"Alpha", 1000}, {"Beta", 500}} {
		r := record.Record{Test: "tg128", Status: record.StatusOK, ModelID: "m"}
		r.Backend, r.CPUInfo, r.AvgTs, r.Key.Model, r.Key.NGen = "CPU", c.cpu, c.ts, "m", 128
		r.HostName = fmt.Sprint(i)
		recs = append(recs, r)
	}
	var b strings.Builder
	if err := writeClasses(&b, false, recs, "", fleetWidth); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "550.00") || strings.Contains(b.String(), "1000.00") {
		t.Errorf("class Alpha is not the mean of 100 and 1000:\n%s", b.String())
	}
}
