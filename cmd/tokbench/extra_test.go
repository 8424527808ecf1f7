package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/internal/sqlite"
)

// A llama-bench row's load_mode and the fields tokbench has no place for
// pass through report, merge and report --sqlite whole: load_mode "dio"
// stays "dio" (use_mmap false), an unknown number and text stay theirs.
func TestLlamaBenchFieldsKeptWhole(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../record/testdata/llama-bench-current.json")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), `"load_mode": "mmap",`, `"load_mode": "dio", "kv_unified": 1, "newer_note": "a, \"b\"",`, 1)
	in := filepath.Join(dir, "lb.json")
	os.WriteFile(in, []byte(text), 0o644)
	check := func(what string, row map[string]any) {
		t.Helper()
		if row["load_mode"] != "dio" || row["newer_note"] != `a, "b"` || (row["kv_unified"] != 1.0 && row["kv_unified"] != "1" && row["kv_unified"] != int64(1)) {
			t.Errorf("%s: load_mode %v, kv_unified %v (%T), newer_note %v", what, row["load_mode"], row["kv_unified"], row["kv_unified"], row["newer_note"])
		}
	}
	jsonRows := func(what, out string, lines bool) {
		t.Helper()
		var rows []map[string]any
		if lines {
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				var m map[string]any
				json.Unmarshal([]byte(l), &m)
				rows = append(rows, m)
			}
		} else if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		if len(rows) != 1 || rows[0]["use_mmap"] != false {
			t.Fatalf("%s: %d rows, use_mmap %v", what, len(rows), rows)
		}
		check(what, rows[0])
	}
	r := tokbench(t, "report", in, "-o", "json")
	jsonRows("report -o json", r.stdout, false)

	merged := filepath.Join(dir, "m.jsonl")
	if r := tokbench(t, "merge", in, "--out", merged); r.code != 0 {
		t.Fatalf("merge: %s", r.stderr)
	}
	r = tokbench(t, "report", merged, "-o", "jsonl")
	jsonRows("merge, then report -o jsonl", r.stdout, true)

	r = tokbench(t, "report", merged, "-o", "csv")
	all, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil || len(all) != 2 {
		t.Fatalf("csv: %v\n%s", err, r.stdout)
	}
	row := map[string]any{}
	for i, h := range all[0] {
		if _, dup := row[h]; dup {
			t.Errorf("csv: column %s twice", h)
		}
		row[h] = all[1][i]
	}
	check("report -o csv", row)

	db := filepath.Join(dir, "r.sqlite")
	if r := tokbench(t, "report", merged, "--sqlite", db); r.code != 0 {
		t.Fatalf("--sqlite: %s", r.stderr)
	}
	d, err := sqlite.OpenReadOnly(db)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := d.ReadTable("llama_bench")
	d.Close()
	if err != nil || len(rows) != 1 {
		t.Fatalf("the database: %d rows, %v", len(rows), err)
	}
	check("report --sqlite", rows[0])
	r = tokbench(t, "report", db, "-o", "json")
	jsonRows("the database, read back", r.stdout, false)

	// -o sql names its extra columns, and reads back.
	r = tokbench(t, "report", merged, "-o", "sql")
	sqlText := filepath.Join(dir, "r.sql")
	os.WriteFile(sqlText, []byte(r.stdout), 0o644)
	if !slices.ContainsFunc(strings.Split(r.stdout, "\n"), func(l string) bool { return strings.Contains(l, "kv_unified") }) {
		t.Errorf("-o sql lacks the extra column:\n%s", r.stdout)
	}
	r = tokbench(t, "report", sqlText, "-o", "json")
	jsonRows("-o sql, read back", r.stdout, false)
}
