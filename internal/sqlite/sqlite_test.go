package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Rows appended to a table that lacks some of their columns gain them,
// the table's own are kept (NULL in the new rows), a linked table's rows
// hold the rowids of the rows before them, and a file name with the
// characters a URI gives a meaning to is the file named.
func TestAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b#c%d.sqlite")
	old := Table{Name: "t", Cols: []Column{{"a", "INTEGER"}, {"old", "TEXT"}}, Rows: [][]any{{1, "x"}}}
	if err := Append(context.Background(), path, old); err != nil {
		t.Fatal(err)
	}
	bench := Table{Name: "t", Cols: []Column{{"a", "INTEGER"}, {"new", "TEXT"}}, Rows: [][]any{{2, "y"}, {3, "z"}}}
	own := Table{Name: "own", Cols: []Column{{"v", "TEXT"}}, Rows: [][]any{{"for 2"}, {"for 3"}}, Link: "t_rowid"}
	if err := Append(context.Background(), path, bench, own); err != nil {
		t.Fatal(err)
	}
	db, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.ReadTable("t")
	if err != nil || len(rows) != 3 || rows[0]["old"] != "x" || rows[1]["new"] != "y" || rows[1]["old"] != nil || rows[2]["a"] != int64(3) {
		t.Fatalf("%v %v", rows, err)
	}
	linked, err := db.ReadTable("own")
	if err != nil || len(linked) != 2 || linked[0]["t_rowid"] != rows[1]["rowid"] || linked[1]["v"] != "for 3" {
		t.Errorf("%v %v", linked, err)
	}
	if _, err := OpenReadOnly(filepath.Join(t.TempDir(), "none.sqlite")); err == nil {
		t.Error("a missing database opened")
	}
}

// An append whose rows could not be linked and read back is refused, and
// leaves the database as it was: a llama_bench that is a view, WITHOUT
// ROWID, or whose columns hide its rowid; one whose column is merely
// named rowid takes the rows, linked by the real rowid.
func TestAppendRefusesUnlinkable(t *testing.T) {
	bench := Table{Name: "llama_bench", Cols: []Column{{"avg_ts", "REAL"}}, Rows: [][]any{{1.5}, {2.5}}}
	own := Table{Name: "tokbench", Cols: []Column{{"record", "TEXT"}}, Rows: [][]any{{"a"}, {"b"}}, Link: "llama_bench_rowid"}
	for name, schema := range map[string]string{
		"view":          "CREATE TABLE t (avg_ts REAL); CREATE VIEW llama_bench AS SELECT * FROM t;",
		"without rowid": "CREATE TABLE llama_bench (avg_ts REAL PRIMARY KEY) WITHOUT ROWID;",
		"hidden rowid":  "CREATE TABLE llama_bench (avg_ts REAL, rowid INTEGER, _rowid_ INTEGER, oid INTEGER);",
	} {
		path := filepath.Join(t.TempDir(), "db.sqlite")
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(schema); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		db.Close()
		before, _ := os.ReadFile(path)
		if err := Append(context.Background(), path, bench, own); err == nil || !strings.Contains(err.Error(), "another database") {
			t.Errorf("%s: %v", name, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("%s: the refused append changed the database", name)
		}
	}
	path := filepath.Join(t.TempDir(), "db.sqlite")
	db, _ := sql.Open("sqlite", path)
	db.Exec("CREATE TABLE llama_bench (avg_ts REAL, rowid INTEGER); INSERT INTO llama_bench VALUES (0.5, 99);")
	db.Close()
	if err := Append(context.Background(), path, bench, own); err != nil {
		t.Fatal(err)
	}
	r, _ := OpenReadOnly(path)
	defer r.Close()
	rows, err := r.ReadTable("llama_bench")
	linked, _ := r.ReadTable("tokbench")
	if err != nil || len(rows) != 3 || len(linked) != 2 || linked[1]["llama_bench_rowid"] != rows[2]["rowid"] || rows[2]["avg_ts"] != 2.5 {
		t.Errorf("a column named rowid: %v %v %v", rows, linked, err)
	}
}

// A database's schema runs nothing on an append, and loses nothing of it:
// a trigger on either table (after or before, deleting rows or ignoring
// the insert) refuses the append; a constraint that ignores or replaces a
// row on a conflict is found when the rows are counted, and rolled back.
// The database is left as it was.
func TestAppendRunsNothingOfTheFile(t *testing.T) {
	bench := Table{Name: "llama_bench", Cols: []Column{{"avg_ts", "REAL"}}, Rows: [][]any{{1.5}, {2.5}}}
	own := Table{Name: "tokbench", Cols: []Column{{"record", "TEXT"}}, Rows: [][]any{{"a"}, {"b"}}, Link: "llama_bench_rowid"}
	base := "CREATE TABLE llama_bench (avg_ts REAL); INSERT INTO llama_bench VALUES (7), (8), (9); "
	for name, c := range map[string]struct{ schema, says string }{
		"after insert, deleting":  {base + "CREATE TRIGGER wipe AFTER INSERT ON llama_bench BEGIN DELETE FROM llama_bench WHERE rowid < new.rowid; END;", `triggers ("wipe")`},
		"before insert, ignoring": {base + "CREATE TRIGGER skip BEFORE INSERT ON llama_bench BEGIN SELECT RAISE(IGNORE); END;", `triggers ("skip")`},
		"on tokbench's table": {base + "CREATE TABLE tokbench (llama_bench_rowid INTEGER, record TEXT); " +
			"CREATE TRIGGER Elsewhere AFTER INSERT ON TokBench BEGIN DELETE FROM llama_bench; END;", "Elsewhere"},
		"ignored on a conflict":  {"CREATE TABLE llama_bench (avg_ts REAL UNIQUE ON CONFLICT IGNORE); INSERT INTO llama_bench VALUES (1.5);", "after 2 were added"},
		"replaced on a conflict": {"CREATE TABLE llama_bench (avg_ts REAL UNIQUE ON CONFLICT REPLACE); INSERT INTO llama_bench VALUES (2.5), (3);", "after 2 were added"},
	} {
		path := filepath.Join(t.TempDir(), "db.sqlite")
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(c.schema); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		db.Close()
		before, _ := os.ReadFile(path)
		if err := Append(context.Background(), path, bench, own); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v", name, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("%s: the refused append changed the database", name)
		}
	}
}

// A view the file defines under the name of a pragma's table-valued
// function answers nothing tokbench asks: the view of llama_bench is
// still a view.
func TestPragmasNotShadowed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t (avg_ts REAL); INSERT INTO t VALUES (1); CREATE VIEW llama_bench AS SELECT * FROM t; " +
		"CREATE VIEW pragma_table_list AS SELECT 'main' AS schema, 'llama_bench' AS name, 'table' AS type, 1 AS ncol, 0 AS wr, 0 AS strict;"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.ReadTable("llama_bench"); err == nil || !strings.Contains(err.Error(), "view") {
		t.Errorf("read a view as a table: %v", err)
	}
	bench := Table{Name: "llama_bench", Cols: []Column{{"avg_ts", "REAL"}}, Rows: [][]any{{1.5}}}
	if err := Append(context.Background(), path, bench); err == nil || !strings.Contains(err.Error(), "another database") {
		t.Errorf("appended to a view: %v", err)
	}
}
