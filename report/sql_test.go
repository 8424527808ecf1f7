package report

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/record"
)

// The columns compare-llama-bench.py reads from a llama-bench database
// (its LLAMA_BENCH_DB_FIELDS).
var llamaBenchColumns = []string{"build_commit", "build_number", "cpu_info", "gpu_info", "backends", "model_filename",
	"model_type", "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads", "cpu_mask", "cpu_strict", "poll", "type_k",
	"type_v", "n_gpu_layers", "split_mode", "main_gpu", "no_kv_offload", "flash_attn", "tensor_split", "tensor_buft_overrides",
	"use_mmap", "embeddings", "no_op_offload", "n_prompt", "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns", "avg_ts",
	"stddev_ts", "n_cpu_moe", "fit_target", "fit_min_ctx"}

// -o sql loads into SQLite (Python's sqlite3, the library the comparison
// script uses) with every column the script reads, one row per measured
// test, strings quoted safely.
func TestSQLLoadsIntoSQLite(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is needed to check -o sql (.ci/run installs it)")
		}
		t.Skip("no python3")
	}
	recs := records()
	recs[0].Status, recs[1].Status = record.StatusOK, record.StatusOK
	recs[0].ModelFile, recs[0].BuildCommit = "it's a model.gguf", "ec98e2002"
	recs[0].Poll, recs[1].Poll = 50, 0 // 0 is a poll level, written as such
	recs = append(recs, record.Record{Test: "tg64", Status: record.StatusFailed, Reason: "out of\nmemory"})
	var b bytes.Buffer
	if err := Write(&b, "sql", recs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "-- ") || !strings.Contains(b.String(), "not written: out of memory") {
		t.Errorf("the failed test is not noted:\n%s", b.String())
	}
	script := `
import sqlite3, sys
c = sqlite3.connect(":memory:")
c.executescript(sys.stdin.read())
cols = [r[1] for r in c.execute("PRAGMA table_info(llama_bench)")]
print(",".join(cols))
for row in c.execute("SELECT model_filename, n_prompt, n_gen, avg_ts, cpu_mask, poll, tensor_buft_overrides FROM llama_bench ORDER BY n_gen"):
    print("|".join(str(x) for x in row))
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = &b
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3 refused the SQL: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	cols := strings.Split(lines[0], ",")
	for _, c := range llamaBenchColumns {
		if !strings.Contains(","+lines[0]+",", ","+c+",") {
			t.Errorf("no column %s in %v", c, cols)
		}
	}
	if len(lines) != 3 || lines[1] != "it's a model.gguf|512|0|1234.5|0x0|50|none" || !strings.HasPrefix(lines[2], "|0|128|20.25|") {
		t.Errorf("rows:\n%s", out)
	}
}
