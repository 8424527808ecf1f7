package record

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tokbench/tokbench/internal/infile"
	"github.com/tokbench/tokbench/internal/sqlite"
)

// Tables of llama-bench's SQL, and tokbench's beside it: one row of
// tokbench's per row of llama-bench's, keyed by that row's rowid, with
// the whole record.
const (
	BenchTable = "llama_bench"
	OwnTable   = "tokbench"
	OwnLink    = "llama_bench_rowid"
	OwnRecord  = "record"
)

// readTable reads the rows of llama-bench's CSV, its SQL text, or a
// SQLite database: each row a record (FromLlamaBench), or tokbench's own
// record where its table holds one for the row.
func readTable(path string, kind int) ([]Record, error) {
	var rows []sqlite.Row
	var err error
	switch kind {
	case kindCSV:
		rows, err = csvRows(path)
	default:
		rows, err = sqlRows(path, kind)
	}
	if err != nil {
		return nil, err
	}
	return readRows(path, rows)
}

// readRows makes records of a table's rows.
func readRows(path string, rows []sqlite.Row) ([]Record, error) {
	var err error
	recs := make([]Record, 0, len(rows))
	for i, row := range rows {
		var r Record
		if own, ok := row[OwnRecord].(string); ok && own != "" {
			if err = json.Unmarshal([]byte(own), &r); err == nil {
				err = complete(&r)
			}
		} else {
			r, err = FromLlamaBench(row)
		}
		if err != nil {
			return nil, fmt.Errorf("%s row %d: %w", path, i+1, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

func csvRows(path string) ([]sqlite.Row, error) {
	f, err := infile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: not CSV: %w", path, err)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	all[0][0] = strings.TrimPrefix(all[0][0], utf8BOM)
	var rows []sqlite.Row
	for _, rec := range all[1:] {
		r := sqlite.Row{}
		for j, name := range all[0] {
			r[name] = rec[j]
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// sqlRows are llama_bench's rows, each with tokbench's record where its
// table holds one: SQL text parsed as data (sqlTextRows), a database read
// through queries of tokbench's own (sqlite.ReadTable).
func sqlRows(path string, kind int) ([]sqlite.Row, error) {
	if kind == kindSQL {
		f, err := infile.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r := bufio.NewReader(f)
		if b, _ := r.Peek(len(utf8BOM)); string(b) == utf8BOM {
			r.Discard(len(utf8BOM))
		}
		return sqlTextRows(path, r)
	}
	db, err := sqlite.OpenReadOnly(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer db.Close()
	rows, err := db.ReadTable(BenchTable)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !db.HasTable(OwnTable) {
		return rows, nil
	}
	own, err := db.ReadTable(OwnTable)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	attachOwn(rows, own)
	return rows, nil
}

// attachOwn puts tokbench's record of each row of its table onto the
// llama_bench row it links to (by rowid).
func attachOwn(rows, own []sqlite.Row) {
	byRow := map[int64]string{}
	for _, o := range own {
		// The link is an integer, or a number as text (SQL text's
		// literals: the column's INTEGER type makes it one in SQLite).
		id, ok := o[OwnLink].(int64)
		if s, isText := o[OwnLink].(string); isText {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			id, ok = n, err == nil
		}
		if ok {
			byRow[id], _ = o[OwnRecord].(string)
		}
	}
	for _, r := range rows {
		if id, ok := r["rowid"].(int64); ok && byRow[id] != "" && sameTest(r, byRow[id]) {
			r[OwnRecord] = byRow[id]
		}
	}
}

// sameTest says whether tokbench's record own is of llama-bench's row r:
// the same sizes and mean time. A link by rowid alone can name another
// row: sqlite3 goes on past an INSERT that failed (a table of another
// llama-bench version), and the tokbench row after it then names the row
// inserted before; unmatched, llama-bench's row is read as its own.
func sameTest(r sqlite.Row, own string) bool {
	var rec struct {
		NPrompt int64 `json:"n_prompt"`
		NGen    int64 `json:"n_gen"`
		AvgNs   int64 `json:"avg_ns"`
	}
	if json.Unmarshal([]byte(own), &rec) != nil {
		return true // a damaged record is refused, naming its row, when read
	}
	num := func(v any) (int64, bool) {
		switch x := v.(type) {
		case int64:
			return x, true
		case float64:
			return int64(x), true
		case string:
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			return n, err == nil
		}
		return 0, false
	}
	for name, want := range map[string]int64{"n_prompt": rec.NPrompt, "n_gen": rec.NGen, "avg_ns": rec.AvgNs} {
		if got, ok := num(r[name]); ok && got != want {
			return false
		}
	}
	return true
}
