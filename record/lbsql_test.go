package record

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/point"
)

// -o sql takes any byte: a NUL goes as a blob read back as text.
func TestSQLTakesNUL(t *testing.T) {
	if got := sqlValue("a\x00b'c"); got != "CAST(X'6100622763' AS TEXT)" {
		t.Errorf("got %s", got)
	}
	if got := sqlValue("it's"); got != "'it''s'" {
		t.Errorf("got %s", got)
	}
}

// A record appended from a JSONL file keeps its line as its record
// column where the line is a tokbench record as it stands (in another
// writer's order of fields, too), not encoded again; llama-bench's line
// gets tokbench's form; the database reads back as the file does.
func TestSQLiteRecordColumnIsTheLine(t *testing.T) {
	dir := t.TempDir()
	r := Record{Key: point.Key{Model: "m.gguf", NGen: 16, Reps: 2}, Test: "tg16", Status: StatusOK}
	r.Backend, r.CPUInfo, r.ModelFile, r.NGen, r.SamplesTs = "CPU", "X", "m.gguf", 16, []float64{10, 12}
	r.AvgTs, r.StddevTs, r.AvgNs, r.NParallel = 11, 1.4, 1_454_545_454, 1
	line, err := EncodeLine(&r)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(line, &fields); err != nil {
		t.Fatal(err)
	}
	sorted, _ := json.Marshal(fields)
	lb, err := os.ReadFile("testdata/llama-bench-current.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, append(append(sorted, '\n'), lb...), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "db.sqlite")
	if _, err := AppendSQLiteEach(context.Background(), db, func(add func(*Record, SQLRow) error) error {
		_, _, err := EachFinalRow(in, add)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	fromFile, _, _, err := Read(in)
	if err != nil {
		t.Fatal(err)
	}
	lbLine, _ := EncodeLine(&fromFile[1])
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query("SELECT " + OwnRecord + " FROM " + OwnTable + " ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	var columns []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		columns = append(columns, c)
	}
	rows.Close()
	if len(columns) != 2 || columns[0] != string(sorted) || columns[1] != strings.TrimSuffix(string(lbLine), "\n") {
		t.Errorf("record columns %q, want the line %q, then llama-bench's record in tokbench's form", columns, sorted)
	}
	fromDB, _, _, err := Read(db)
	if err != nil || len(fromDB) != 2 {
		t.Fatal(fromDB, err)
	}
	for i := range fromDB {
		a, _ := EncodeLine(&fromDB[i])
		b, _ := EncodeLine(&fromFile[i])
		if string(a) != string(b) {
			t.Errorf("record %d from the database:\n%s\nfrom the file:\n%s", i, a, b)
		}
	}
}
