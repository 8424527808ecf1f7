package fleet

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func rec(model string, n int, status record.Status, cpu, shard string) record.Record {
	r := record.Record{Key: point.Key{Shape: point.Shape{Threads: 2}, Model: model, NGen: n}, ModelID: model, Test: "tg", Status: status, SpecSHA256: "aaaa1111bbbb2222", Shard: shard}
	r.Backend, r.CPUInfo, r.Threads, r.NGen = "CPU", cpu, 2, n
	return r
}

// file writes records to a results file in dir, and returns its path.
func file(t *testing.T, dir, name string, recs ...record.Record) string {
	t.Helper()
	p := filepath.Join(dir, name)
	w, err := record.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := w.Append(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// merged merges the files and reads back what Write writes.
func merged(t *testing.T, out string, paths ...string) (*Merged, []record.Record) {
	t.Helper()
	m, err := Merge(paths)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if err := m.Write(out); err != nil {
		t.Fatal(err)
	}
	recs, _, _, err := record.Read(out)
	if err != nil || len(recs) != m.Records {
		t.Fatalf("merged file: %d records of %d, %v", len(recs), m.Records, err)
	}
	return m, recs
}

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	a := file(t, dir, "a", rec("m1", 8, record.StatusOK, "X", "0/2"), rec("m1", 16, record.StatusFailed, "X", "0/2"))
	// Shard 0 requeued: its second run measured the failed point; shard 1
	// measured m1 tg8 again by mistake; another class measured it too.
	b := file(t, dir, "b", rec("m1", 16, record.StatusOK, "X", "0/2"), rec("m1", 8, record.StatusOK, "X", "1/2"), rec("m1", 8, record.StatusOK, "Y", "0/2"))
	out := filepath.Join(dir, "merged.jsonl")
	m, recs := merged(t, out, a, b)
	if len(recs) != 3 || len(m.Duplicates) != 2 || len(m.Classes) != 2 || m.SpecHash != "aaaa1111bbbb2222" {
		t.Fatalf("%d records, %d duplicates, classes %v", len(recs), len(m.Duplicates), m.Classes)
	}
	// Each point at its first place; the complete record of m1 tg16 (b's)
	// where a's failed one was.
	if recs[0].NGen != 8 || recs[0].Shard != "0/2" || recs[1].NGen != 16 || recs[1].Status != record.StatusOK || recs[2].CPUInfo != "Y" ||
		m.Duplicates[0].Kept != b || m.Duplicates[0].Drop != a {
		t.Errorf("the complete record of m1 tg16 was not kept in its place: %+v, %+v", recs, m.Duplicates[0])
	}
	if m.ShardCount() != 2 || m.Threads(m.Classes[0]) != 2 {
		t.Errorf("shards %d threads %d", m.ShardCount(), m.Threads(m.Classes[0]))
	}
	want := func(string) ([]Owed, error) {
		return []Owed{{point.Key{Shape: point.Shape{Threads: 2}, Model: "m1", NGen: 8}, "0/2"}, {point.Key{Shape: point.Shape{Threads: 2}, Model: "m1", NGen: 16}, "0/2"}}, nil
	}
	missing, _ := m.Check(want)
	if len(missing) != 1 || missing[0].Class != m.Classes[1] || missing[0].Owed.Key.NGen != 16 || missing[0].Status != "" {
		t.Errorf("missing %+v: want class Y's tg16", missing)
	}
	// Merging the merged file with its parts, into itself, changes
	// nothing.
	first, _ := os.ReadFile(out)
	merged(t, out, out, a, b)
	if again, _ := os.ReadFile(out); string(again) != string(first) {
		t.Errorf("merging again changed the file:\n%s\nthen\n%s", first, again)
	}
	// Another sweep's file is refused, naming both.
	other := rec("m2", 8, record.StatusOK, "X", "")
	other.SpecSHA256 = "ffff0000ffff0000"
	c := file(t, dir, "c", other)
	if _, err := Merge([]string{a, c}); err == nil || !strings.Contains(err.Error(), "different sweeps") || !strings.Contains(err.Error(), "in "+c) {
		t.Errorf("two specs: %v", err)
	}
	// A torn last line is ignored.
	torn := filepath.Join(dir, "torn.jsonl")
	writeFile(t, torn, string(first)+`{"key":{"Model":"m9"`)
	if m, err := Merge([]string{torn}); err != nil || !m.Torn[0] || m.Records != 3 {
		t.Errorf("torn file: %+v, %v", m, err)
	}
}

// The same test of two builds is two measurements, not a duplicate: both
// are kept; so are two runs of one llama-bench build at two times; a
// requeued tokbench shard's second measurement of a point is a duplicate.
func TestMergeKeepsBuilds(t *testing.T) {
	lb := func(build string, at time.Time) record.Record {
		r := rec("m1", 8, record.StatusOK, "X", "")
		r.BuildCommit, r.TestTime = build, at
		return r
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	m, err := Merge([]string{file(t, dir, "a", lb("aaaa", t0)), file(t, dir, "b", lb("bbbb", t0), lb("aaaa", t0.Add(time.Hour)))})
	if err != nil || m.Records != 3 || len(m.Duplicates) != 0 {
		t.Fatalf("%v: %d records, %d duplicates", err, m.Records, len(m.Duplicates))
	}
	tb := func(at time.Time) record.Record {
		r := lb("ec98e2002", at)
		r.Tool = "tokbench 0.2.0"
		return r
	}
	m, err = Merge([]string{file(t, dir, "c", tb(t0)), file(t, dir, "d", tb(t0.Add(time.Hour)))})
	if err != nil || m.Records != 1 || len(m.Duplicates) != 1 {
		t.Fatalf("a requeued point: %v: %d records, %d duplicates", err, m.Records, len(m.Duplicates))
	}
}

// What a merge keeps of each record is sorted on disk when it is more
// than a run: the same answer as sorted in memory, whatever the runs.
func TestMergeSortsOnDisk(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	statuses := []record.Status{record.StatusOK, record.StatusFailed, record.StatusSkipped}
	for f := range 4 {
		var recs []record.Record
		for i := range 60 {
			// Points repeat across files and within them, in all three
			// statuses; two classes.
			n := (i*7 + f*13) % 41
			recs = append(recs, rec("m", n, statuses[(i+f)%3], []string{"X", "Y"}[(i/5)%2], "0/1"))
		}
		paths = append(paths, file(t, dir, fmt.Sprint("s", f), recs...))
	}
	want := func(string) ([]Owed, error) {
		var out []Owed
		for n := range 45 {
			out = append(out, Owed{Key: point.Key{Shape: point.Shape{Threads: 2}, Model: "m", NGen: n}})
		}
		return out, nil
	}
	answer := func(run int) (string, []Duplicate, []Missing) {
		defer func(old int) { spillRun = old }(spillRun)
		spillRun = run
		out := filepath.Join(dir, fmt.Sprint("merged-", run))
		m, _ := merged(t, out, paths...)
		missing, err := m.Check(want)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(out)
		return string(b), m.Duplicates, missing
	}
	file0, dups0, missing0 := answer(1 << 16)
	if len(dups0) == 0 || len(missing0) == 0 {
		t.Fatalf("%d duplicates, %d missing: the test needs both", len(dups0), len(missing0))
	}
	for _, run := range []int{1, 7, 64} {
		f, dups, missing := answer(run)
		if f != file0 || !slices.Equal(dups, dups0) || !slices.Equal(missing, missing0) {
			t.Errorf("runs of %d: a different answer (%d duplicates, %d missing; in memory %d, %d)", run, len(dups), len(missing), len(dups0), len(missing0))
		}
	}
}

// A merged file holds each tokbench record's line as its writer wrote
// it (in tokbench's order of fields or another's, spaces and all: read
// again, it is the same record; and the second reading does not decode
// it), llama-bench's -o jsonl line converted to tokbench's form; one
// record per point as ever, past a quality block and blank lines.
func TestMergeKeepsTokbenchLines(t *testing.T) {
	dir := t.TempDir()
	recs := []record.Record{rec("m1", 8, record.StatusOK, "X", "0/2"), rec("m1", 16, record.StatusOK, "X", "0/2"), rec("m2", 8, record.StatusFailed, "X", "1/2"), rec("m2", 8, record.StatusOK, "X", "1/2")}
	recs[0].SamplesTs = []float64{1.5, 2.25}
	lines := make([]string, len(recs))
	for i := range recs {
		l, err := record.EncodeLine(&recs[i])
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = strings.TrimSuffix(string(l), "\n")
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(lines[3]), &fields); err != nil {
		t.Fatal(err)
	}
	sorted, _ := json.Marshal(fields) // keys sorted, as jq -S leaves them
	spaced := strings.Replace(lines[1], `,"test":`, `, "test" : `, 1)
	lb, err := os.ReadFile("../../record/testdata/llama-bench-current.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "a.jsonl")
	writeFile(t, a, lines[0]+"\n"+spaced+"\n"+string(lb))
	b := filepath.Join(dir, "b.jsonl")
	writeFile(t, b, `{"kind":"quality","class":"cpu-x","quality":{"tokens":8}}`+"\n\n"+lines[2]+"\n"+string(sorted)+"\n")
	out := filepath.Join(dir, "merged.jsonl")
	m, got := merged(t, out, a, b)
	text, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	outLines := strings.Split(string(text), "\n")
	// m2's measurement takes its failure's place.
	if len(outLines) < 4 || outLines[0] != lines[0] || outLines[1] != spaced || outLines[3] != string(sorted) {
		t.Errorf("merged:\n%s\nwant a.jsonl's first two lines, llama-bench's record, then b.jsonl's last line", text)
	}
	var want record.Record
	if r, _, _, err := record.Read("../../record/testdata/llama-bench-current.jsonl"); err != nil || len(r) != 1 {
		t.Fatal(r, err)
	} else {
		want = r[0]
	}
	if l, _ := record.EncodeLine(&want); len(outLines) < 3 || outLines[2]+"\n" != string(l) {
		t.Errorf("llama-bench's line merged as\n%s\nwant tokbench's form\n%s", outLines[2], l)
	}
	if len(got) != 4 || got[1].NGen != 16 || got[3].Status != record.StatusOK || len(m.Duplicates) != 1 {
		t.Errorf("%d records read back, duplicates %v", len(got), m.Duplicates)
	}
}

// An input changed between merge's two readings (replaced by another
// file, or rewritten in place with its lines swapped) is found: nothing is
// written, and the output is as it was.
func TestMergeFindsAnInputChanged(t *testing.T) {
	a := rec("m", 16, record.StatusOK, "cpu", "")
	b := rec("m", 32, record.StatusOK, "cpu", "")
	for name, change := range map[string]func(p string){
		"replaced": func(p string) {
			other := file(t, filepath.Dir(p), "other.jsonl", b, a)
			os.Rename(other, p)
		},
		"a line swapped": func(p string) {
			lines, _ := os.ReadFile(p)
			ls := strings.SplitAfter(string(lines), "\n")
			writeFile(t, p, ls[1]+ls[0])
		},
		"a line edited": func(p string) {
			lines, _ := os.ReadFile(p)
			writeFile(t, p, strings.Replace(string(lines), `"avg_ts":0`, `"avg_ts":-1e300`, 1))
		},
	} {
		dir := t.TempDir() // each case's files its own
		in := file(t, dir, "in.jsonl", a, b)
		out := filepath.Join(dir, "out.jsonl")
		writeFile(t, out, "kept\n")
		m, err := Merge([]string{in})
		if err != nil {
			t.Fatal(err)
		}
		change(in)
		// (A record made invalid may be refused as such first.)
		if err := m.Write(out); err == nil || !strings.Contains(err.Error(), "changed between") && !strings.Contains(err.Error(), "not a measurement") {
			t.Errorf("%s: %v", name, err)
		}
		if got, _ := os.ReadFile(out); string(got) != "kept\n" {
			t.Errorf("%s: the output is now %q", name, got)
		}
		m.Close()
	}
}
