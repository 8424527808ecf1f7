package record

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

const benchTable = "CREATE TABLE IF NOT EXISTS llama_bench (build_commit TEXT, n_prompt INTEGER, n_gen INTEGER, avg_ts REAL, stddev_ts REAL);\n"

// A SQL file is data: every statement that is not llama-bench's or
// tokbench's CREATE TABLE and INSERT of literals is refused, naming its
// line, before anything runs; nothing is created, changed or attached,
// and a statement that would run for ever ends at once.
func TestSQLTextIsNeverRun(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.sqlite")
	vdb, err := sql.Open("sqlite", victim)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vdb.Exec("CREATE TABLE llama_bench (avg_ts REAL); INSERT INTO llama_bench VALUES (1.5);"); err != nil {
		t.Fatal(err)
	}
	vdb.Close()
	before, _ := os.ReadFile(victim)
	made := filepath.Join(dir, "made.sqlite")
	cases := map[string]string{
		"attach":          "ATTACH DATABASE '" + made + "' AS x;",
		"attach victim":   "ATTACH '" + victim + "' AS v;\nDELETE FROM v.llama_bench;",
		"vacuum into":     "VACUUM INTO '" + made + "';",
		"recursive cte":   "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c;",
		"insert select":   "INSERT INTO llama_bench SELECT * FROM llama_bench;",
		"insert from cte": "INSERT INTO llama_bench (avg_ts) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c;",
		"view":            "CREATE VIEW v AS SELECT 1;",
		"trigger":         "CREATE TRIGGER t AFTER INSERT ON llama_bench BEGIN DELETE FROM llama_bench; END;",
		"drop":            "DROP TABLE llama_bench;",
		"pragma":          "PRAGMA writable_schema = 1;",
		"expression":      "INSERT INTO llama_bench (avg_ts) VALUES (1 + 1);",
		"function":        "INSERT INTO llama_bench (avg_ts) VALUES (randomblob(1000000000));",
		"subquery":        "INSERT INTO llama_bench (avg_ts) VALUES ((SELECT 1));",
		"create as":       "CREATE TABLE t2 AS SELECT 1;",
		"check":           "CREATE TABLE t3 (a INTEGER CHECK (a > 0));",
		"load_extension":  "SELECT load_extension('/tmp/x.so');",
	}
	for name, stmt := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".sql")
			text := benchTable + "INSERT INTO llama_bench VALUES ('abc', 512, 0, 100, 1);\n" + stmt + "\n"
			os.WriteFile(path, []byte(text), 0o644)
			start := time.Now()
			_, _, _, err := Read(path)
			if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "runs none of it") {
				t.Errorf("%s: %v", name, err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%s took %s", name, d)
			}
		})
	}
	if _, err := os.Stat(made); err == nil {
		t.Error("a SQL file made a database")
	}
	if after, _ := os.ReadFile(victim); !bytes.Equal(before, after) {
		t.Error("a SQL file changed another database")
	}
}

// What tokbench and llama-bench write reads back: tables, comments,
// transactions, quoted names and values with quotes and NULs, several
// rows a statement, and tokbench's rows linked by last_insert_rowid().
func TestSQLTextReadsOurs(t *testing.T) {
	text := "-- a comment\nBEGIN TRANSACTION;\n" + benchTable +
		"CREATE TABLE IF NOT EXISTS \"tokbench\" (llama_bench_rowid INTEGER, record TEXT);\n" +
		"/* block\ncomment */\n" +
		"INSERT INTO llama_bench (build_commit, n_prompt, n_gen, avg_ts, stddev_ts) VALUES ('it''s', '512', '0', '100.5', 1e0), (CAST(X'6100' AS TEXT), 0, 16, 50, -0.0);\n" +
		"INSERT INTO llama_bench VALUES ('c', 0, 32, 25, NULL);\n" +
		"INSERT INTO tokbench (llama_bench_rowid, record) VALUES (last_insert_rowid(), NULL);\nCOMMIT;\n"
	rows, err := sqlTextRows("t.sql", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0]["build_commit"] != "it's" || rows[1]["build_commit"] != "a\x00" || rows[2]["rowid"] != int64(3) ||
		rows[0]["avg_ts"] != "100.5" || rows[2]["stddev_ts"] != nil || rows[1]["stddev_ts"] != "-0.0" {
		t.Fatalf("%v", rows)
	}
	recs, err := readRows("t.sql", rows)
	if err != nil || len(recs) != 3 || recs[0].Test != "pp512" || recs[2].Test != "tg32" || recs[0].AvgTs != 100.5 {
		t.Fatalf("%v %+v", err, recs)
	}
	for _, bad := range []string{
		"INSERT INTO llama_bench VALUES (1);",                           // no table
		benchTable + "INSERT INTO llama_bench (nope) VALUES (1);",       // no column
		benchTable + "INSERT INTO llama_bench VALUES (1, 2);",           // too few values
		benchTable + "INSERT INTO llama_bench (avg_ts) VALUES ('open);", // a string that never ends
		"CREATE TABLE llama_bench (a);\nCREATE TABLE llama_bench (a);",  // made twice
		"\xef\xbb\xbf" + benchTable,                                     // handled by the reader, not here
	} {
		if _, err := sqlTextRows("t.sql", strings.NewReader(bad)); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}

// A database handed to tokbench runs nothing of its own: a view named
// llama_bench (one that would recurse for ever) is refused at once;
// triggers never fire on a read; a table whose column is named rowid, or
// that is WITHOUT ROWID, still reads every row; generated columns are
// not computed; nothing in the file changes.
func TestSQLiteReadRunsNothing(t *testing.T) {
	dir := t.TempDir()
	mk := func(name, schema string) string {
		path := filepath.Join(dir, name+".sqlite")
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(schema); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return path
	}
	view := mk("view", "CREATE VIEW llama_bench AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x AS avg_ts, 512 AS n_prompt FROM c;")
	start := time.Now()
	if _, _, _, err := Read(view); err == nil || !strings.Contains(err.Error(), "view") {
		t.Errorf("a view: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a recursive view took %s", d)
	}
	rows := "INSERT INTO llama_bench (n_prompt, avg_ts) VALUES (512, 100), (512, 101), (512, 102);"
	for name, schema := range map[string]string{
		"rowid column":  "CREATE TABLE llama_bench (rowid INTEGER, n_prompt INTEGER, avg_ts REAL);" + rows,
		"without rowid": "CREATE TABLE llama_bench (n_prompt INTEGER, avg_ts REAL, PRIMARY KEY (avg_ts)) WITHOUT ROWID;" + rows,
		"trigger and generated": "CREATE TABLE llama_bench (n_prompt INTEGER, avg_ts REAL, g BLOB AS (zeroblob(900000000)) VIRTUAL);" + rows +
			"CREATE TABLE log (x); CREATE TRIGGER t AFTER UPDATE ON llama_bench BEGIN INSERT INTO log VALUES (1); END;",
	} {
		path := mk(strings.ReplaceAll(name, " ", "-"), schema)
		before, _ := os.ReadFile(path)
		recs, _, _, err := Read(path)
		if err != nil || len(recs) != 3 || recs[2].AvgTs != 102 {
			t.Errorf("%s: %d records, %v", name, len(recs), err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Errorf("%s: reading changed the file", name)
		}
	}
}

// Anything at all as SQL text: an error or rows, never a panic or a hang.
func FuzzSQLText(f *testing.F) {
	seed, _ := os.ReadFile("testdata/llama-bench-current.sql")
	f.Add(seed)
	f.Add([]byte(benchTable + "INSERT INTO llama_bench VALUES ('a', 1, 2, 3, 4), ('b', 5, 6, 7, 8);"))
	f.Add([]byte("CREATE TABLE tokbench (llama_bench_rowid INTEGER, record TEXT); INSERT INTO tokbench VALUES (last_insert_rowid(), X'7b7d');"))
	f.Add([]byte("WITH RECURSIVE c(x) AS (SELECT 1) SELECT 1;"))
	f.Fuzz(func(t *testing.T, b []byte) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if rows, err := sqlTextRows("f.sql", bytes.NewReader(b)); err == nil {
				readRows("f.sql", rows)
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer in 10 s for %q", b)
		}
	})
}

// Any bytes after SQLite's header, read as a database: an error or
// records, in bounded time, never a panic.
func FuzzSQLiteFile(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.sqlite")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := db.Exec(strings.Replace(benchTable, "IF NOT EXISTS ", "", 1) + "INSERT INTO llama_bench VALUES ('a', 512, 0, 100, 1);" +
		"CREATE TABLE tokbench (llama_bench_rowid INTEGER, record TEXT); INSERT INTO tokbench VALUES (1, NULL);"); err != nil {
		f.Fatal(err)
	}
	db.Close()
	seed, _ := os.ReadFile(path)
	f.Add(seed, uint16(100), byte(0xff))
	f.Add(seed, uint16(3000), byte(0))
	f.Fuzz(func(t *testing.T, b []byte, at uint16, v byte) {
		if len(b) < 100 {
			return
		}
		b = bytes.Clone(b)
		b[int(at)%len(b)] = v
		copy(b, "SQLite format 3\x00")
		p := filepath.Join(t.TempDir(), "f.sqlite")
		os.WriteFile(p, b, 0o644)
		done := make(chan struct{})
		go func() {
			defer close(done)
			Read(p)
		}()
		select {
		case <-done:
		case <-time.After(150 * time.Second):
			t.Fatalf("no answer for a mutated database (byte %d = %#x)", at, v)
		}
	})
}

// JSON lines are appended only to a file of JSON lines: a results file of
// another format (as sweep --resume --out or load --out would be given)
// is refused with what it is, and left as it was.
func TestAppendOnlyToJSONL(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"array.json":  `[{"avg_ts": 1}]`,
		"bom.json":    "\xef\xbb\xbf[]",
		"table.csv":   "build_commit,avg_ts\na,1\n",
		"text.sql":    benchTable,
		"db.sqlite":   "SQLite format 3\x00rest",
		"utf16.jsonl": "\xff\xfe{\x00}\x00",
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(content), 0o644)
		if w, err := Create(path); err == nil || !strings.Contains(err.Error(), "appends only to a JSONL file") {
			t.Errorf("%s: %v", name, err)
			if w != nil {
				w.Close()
			}
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Errorf("%s changed", name)
		}
	}
	path := filepath.Join(dir, "ok.jsonl")
	os.WriteFile(path, []byte("\xef\xbb\xbf{\"a\":1}\n"), 0o644)
	w, err := Create(path)
	if err != nil {
		t.Fatalf("JSON lines after a BOM: %v", err)
	}
	w.Close()
}
