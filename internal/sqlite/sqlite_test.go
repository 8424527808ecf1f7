package sqlite

import (
	"context"
	"path/filepath"
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
