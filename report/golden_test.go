package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/record"
)

var madeAt = regexp.MustCompile(`tokbench report, \d{4}-\d\d-\d\d \d\d:\d\d UTC`)

var update = flag.Bool("update", false, "write the golden files of TestOutputsUnchanged anew")

// goldenRecords are the outputs' inputs: llama-bench's files of three
// eras read as records, a sweep with rooflines and telemetry, and
// tokbench's own records with samples, latencies and a failed test.
func goldenRecords(t *testing.T) []record.Record {
	var recs []record.Record
	for _, f := range []string{"llama-bench-old.json", "llama-bench-new.json", "llama-bench-current.json", "llama-bench-current.csv"} {
		rs, _, _, err := record.Read(filepath.Join("..", "record", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rs...)
	}
	return append(append(recs, sweepRecords()...), sqlRecords()...)
}

// Every output on fixed inputs, byte for byte as the golden files hold
// it: a change of the code that is not meant to change what is written
// (issue 42's refactor) must leave them; one that is meant to says so by
// writing them anew (go test ./report -run TestOutputsUnchanged -update)
// and shows the difference in its commit.
func TestOutputsUnchanged(t *testing.T) {
	recs := goldenRecords(t)
	outs := map[string]func(*bytes.Buffer) error{
		"table.txt":   func(b *bytes.Buffer) error { return WriteWith(b, "table", recs, Options{}) },
		"wide.txt":    func(b *bytes.Buffer) error { return WriteWith(b, "table", recs, Options{Wide: true}) },
		"md.md":       func(b *bytes.Buffer) error { return WriteWith(b, "md", recs, Options{}) },
		"tag.csv":     func(b *bytes.Buffer) error { return WriteWith(b, "csv", recs, Options{TagParallel: true}) },
		"compact.txt": func(b *bytes.Buffer) error { return Table(b, b, recs, false) },
		"compact.md":  func(b *bytes.Buffer) error { return Table(b, b, recs, true) },
		"report.html": func(b *bytes.Buffer) error { return HTML(b, recs) },
	}
	for _, f := range []string{"json", "jsonl", "csv", "sql"} {
		outs["out."+f] = func(b *bytes.Buffer) error { return WriteWith(b, f, recs, Options{}) }
	}
	for name, write := range outs {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The page's foot says when it was made.
		out := madeAt.ReplaceAll(b.Bytes(), []byte("tokbench report, DATE"))
		path := filepath.Join("testdata", "golden", name)
		if *update {
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (write the golden files with -update)", err)
		}
		if got := string(out); got != string(want) {
			gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
			for i := range min(len(gl), len(wl)) {
				if gl[i] != wl[i] {
					t.Errorf("%s changed at line %d:\n got  %.300s\n want %.300s", name, i+1, gl[i], wl[i])
					break
				}
			}
			if len(gl) != len(wl) {
				t.Errorf("%s: %d lines, want %d", name, len(gl), len(wl))
			}
		}
	}
}
