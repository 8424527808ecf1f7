package report

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/record"
)

// llama-bench's fields at the pinned llama.cpp (b7437, test::get_fields),
// written out here rather than taken from LlamaBenchFields, so that a
// change of ours shows.
var pinnedFields = strings.Fields(`build_commit build_number cpu_info gpu_info backends model_filename model_type model_size
	model_n_params n_batch n_ubatch n_threads cpu_mask cpu_strict poll type_k type_v n_gpu_layers n_cpu_moe split_mode main_gpu
	no_kv_offload flash_attn devices tensor_split tensor_buft_overrides use_mmap embeddings no_op_offload no_host
	n_prompt n_gen n_depth test_time avg_ns stddev_ns avg_ts stddev_ts`)

// currentFields' names: the current llama-bench's, load_mode in place of
// use_mmap.
var currentNames = strings.Fields(strings.Replace(strings.Join(pinnedFields, " "), "use_mmap", "load_mode", 1))

// lbSQL is llama-bench's -o sql text of one test with these fields, as
// llama-bench writes it: a CREATE TABLE, then an INSERT of quoted values.
func lbSQL(fields []string, commit string) string {
	val := map[string]string{"build_commit": commit, "build_number": "7437", "cpu_info": "AMD EPYC", "gpu_info": "", "backends": "CPU",
		"model_filename": "m.gguf", "model_type": "llama 8B Q4_0", "model_size": "4294967296", "model_n_params": "8000000000",
		"n_batch": "2048", "n_ubatch": "512", "n_threads": "2", "cpu_mask": "0x0", "poll": "50", "type_k": "f16", "type_v": "f16",
		"n_gpu_layers": "99", "split_mode": "layer", "flash_attn": "-1", "devices": "auto", "tensor_split": "0.00",
		"tensor_buft_overrides": "none", "use_mmap": "1", "load_mode": "mmap", "n_prompt": "512", "test_time": "2025-12-16T10:00:00Z",
		"avg_ns": "400000000", "stddev_ns": "1000000", "avg_ts": "1280.5", "stddev_ts": "3.2"}
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS llama_bench (\n")
	var vals []string
	for i, f := range fields {
		typ := "INTEGER"
		switch f {
		case "build_commit", "cpu_info", "gpu_info", "backends", "model_filename", "model_type", "cpu_mask", "type_k", "type_v",
			"split_mode", "devices", "tensor_split", "tensor_buft_overrides", "load_mode", "test_time":
			typ = "TEXT"
		case "avg_ts", "stddev_ts":
			typ = "REAL"
		}
		fmt.Fprintf(&b, "  %s %s%s\n", f, typ, map[bool]string{true: ",", false: ""}[i < len(fields)-1])
		vals = append(vals, "'"+cmpOr(val[f], "0")+"'")
	}
	fmt.Fprintf(&b, ");\n\nINSERT INTO llama_bench (%s) VALUES (%s);\n", strings.Join(fields, ", "), strings.Join(vals, ", "))
	return b.String()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func sqlRecords() []record.Record {
	recs := records()
	recs[0].Status, recs[1].Status = record.StatusOK, record.StatusOK
	recs[0].ModelFile, recs[0].BuildCommit = "it's a model.gguf", "ec98e2002"
	recs[0].Poll, recs[1].Poll = 50, 0 // 0 is a poll level, written as such
	recs[1].SamplesTs = []float64{20, 20.5}
	return append(recs, record.Record{Test: "tg64", Status: record.StatusFailed, Reason: "out of\nmemory"})
}

// -o sql is the pinned llama-bench's: its table and columns in its order,
// every INSERT naming exactly them; tokbench's own fields in a table of
// their own. Python's sqlite3 (the library compare-llama-bench.py uses)
// loads it into a database llama-bench made, and llama-bench's SQL into
// one tokbench's made.
func TestSQLIsLlamaBenchs(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "sql", sqlRecords()); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	var create []string
	for _, l := range strings.Split(strings.SplitN(text, ");", 2)[0], "\n")[1:] {
		if f := strings.Fields(l); len(f) == 2 {
			create = append(create, f[0])
		}
	}
	want := strings.Join(pinnedFields, ", ")
	if strings.Join(create, ", ") != want || !strings.Contains(text, "INSERT INTO llama_bench ("+want+") VALUES ('ec98e2002', ") {
		t.Errorf("not llama-bench's table:\n%s", text)
	}
	if !strings.Contains(text, "not written: out of memory") || strings.Count(text, "INSERT INTO llama_bench") != 2 {
		t.Errorf("the failed test is not noted, or written:\n%s", text)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is needed to check -o sql (.ci/run installs it)")
		}
		t.Skip("no python3")
	}
	script := `
import sqlite3, sys
first, second = sys.stdin.read().split("\n-- SECOND --\n")
c = sqlite3.connect(":memory:")
c.executescript(first)
c.executescript(second)
for row in c.execute("SELECT model_filename, n_prompt, n_gen, avg_ts, cpu_mask, poll, n_gpu_layers, devices FROM llama_bench ORDER BY rowid"):
    print("|".join(str(x) for x in row))
for row in c.execute("SELECT b.model_filename, t.test FROM tokbench t JOIN llama_bench b ON b.rowid = t.llama_bench_rowid ORDER BY t.rowid"):
    print("|".join(str(x) for x in row))
`
	for name, texts := range map[string][2]string{"tokbench into llama-bench's": {lbSQL(pinnedFields, "aaaa"), text}, "llama-bench into tokbench's": {text, lbSQL(pinnedFields, "aaaa")}} {
		cmd := exec.Command(py, "-c", script)
		cmd.Stdin = strings.NewReader(texts[0] + "\n-- SECOND --\n" + texts[1])
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: sqlite3 refused the SQL: %v\n%s", name, err, out)
		}
		for _, line := range []string{"it's a model.gguf|512|0|1234.5|0x0|50|0|auto", "|0|128|20.25|0x0|0|0|auto", "m.gguf|512|0|1280.5|0x0|50|99|auto",
			"it's a model.gguf|pp512", "|tg128"} {
			if !strings.Contains(string(out), line+"\n") {
				t.Errorf("%s: no row %q in\n%s", name, line, out)
			}
		}
	}
}

// report --sqlite appends to a database of the pinned or the current
// llama-bench, adding the columns it lacks and dropping none; what is
// read back is llama-bench's row and tokbench's records whole. A table
// tokbench made takes the INSERTs of both llama-benches.
func TestAppendSQLite(t *testing.T) {
	dir := t.TempDir()
	recs := sqlRecords()
	for name, fields := range map[string][]string{"pinned": pinnedFields, "current": currentNames} {
		db := filepath.Join(dir, name+".sqlite")
		exec1(t, db, lbSQL(fields, "aaaa"))
		n, err := record.AppendSQLite(context.Background(), db, recs)
		if err != nil || n != 2 {
			t.Fatalf("%s: %d appended, %v", name, n, err)
		}
		got, _, _, err := record.Read(db)
		if err != nil || len(got) != 3 {
			t.Fatalf("%s: read back %d records, %v", name, len(got), err)
		}
		if got[0].BuildCommit != "aaaa" || !got[0].UseMmap || got[0].NGPULayers != 99 || got[0].Devices != "auto" || got[0].Test != "pp512" ||
			got[1].ModelFile != "it's a model.gguf" || got[2].Test != "tg128" || len(got[2].SamplesTs) != 2 || got[2].Sampling != "typical (x)" {
			t.Errorf("%s: read back %+v", name, got)
		}
	}
	// A table tokbench made: both llama-benches' lines go in.
	made := filepath.Join(dir, "made.sqlite")
	if _, err := record.AppendSQLite(context.Background(), made, recs); err != nil {
		t.Fatal(err)
	}
	for _, fields := range [][]string{pinnedFields, currentNames} {
		exec1(t, made, lbSQL(fields, "bbbb"))
	}
	got, _, _, err := record.Read(made)
	if err != nil || len(got) != 4 || got[2].BuildCommit != "bbbb" || got[3].BuildCommit != "bbbb" || !got[3].UseMmap {
		t.Errorf("%d records, %v", len(got), err)
	}
}

// exec1 runs SQL text into the database at path.
func exec1(t *testing.T, path, text string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(text); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// A tokbench row is linked to llama-bench's row only if that row is its
// test's: where llama-bench's INSERT failed (a table of another version;
// sqlite3 goes on), the tokbench row after it is not inserted, and the
// row inserted before is not taken for its test.
func TestSQLLinkNamesItsOwnRow(t *testing.T) {
	recs := sqlRecords()[:2]
	var b strings.Builder
	if err := record.WriteSQL(&b, recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	var kept []string
	n := 0
	for _, l := range lines {
		// The second test's llama_bench INSERT "fails".
		if strings.HasPrefix(l, "INSERT INTO llama_bench") {
			if n++; n == 2 {
				continue
			}
		}
		kept = append(kept, l)
	}
	if n != 2 || recs[0].NPrompt == recs[1].NPrompt {
		t.Fatalf("%d INSERTs into llama_bench, n_prompt %d and %d", n, recs[0].NPrompt, recs[1].NPrompt)
	}
	path := filepath.Join(t.TempDir(), "r.sql")
	os.WriteFile(path, []byte(strings.Join(kept, "\n")), 0o644)
	back, _, _, err := record.Read(path)
	if err != nil || len(back) != 1 {
		t.Fatalf("%d records, %v", len(back), err)
	}
	if back[0].Test != recs[0].Test || back[0].Tool != recs[0].Tool || back[0].AvgTs != recs[0].AvgTs {
		t.Errorf("read back %s %q %.2f, want the first test whole (%s %q %.2f)", back[0].Test, back[0].Tool, back[0].AvgTs, recs[0].Test, recs[0].Tool, recs[0].AvgTs)
	}
}
