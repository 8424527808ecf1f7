package record

import (
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"

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
			return nil, fmt.Errorf("%s row %d: %v", path, i+1, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

func csvRows(path string) ([]sqlite.Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: not CSV: %v", path, err)
	}
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
// table holds one.
func sqlRows(path string, kind int) ([]sqlite.Row, error) {
	var db *sql.DB
	var err error
	if kind == kindSQLite {
		db, err = sqlite.Open(path)
	} else {
		var text []byte
		if text, err = os.ReadFile(path); err == nil {
			db, err = sqlite.FromText(string(text))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	defer db.Close()
	rows, err := sqlite.Rows(db, BenchTable)
	if err != nil {
		return nil, fmt.Errorf("%s: no %s table: %v", path, BenchTable, err)
	}
	if cols, _ := sqlite.Columns(db, OwnTable); len(cols) > 0 {
		own, err := sqlite.Rows(db, OwnTable)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		byRow := map[int64]string{}
		for _, o := range own {
			if id, ok := o[OwnLink].(int64); ok {
				byRow[id], _ = o[OwnRecord].(string)
			}
		}
		for _, r := range rows {
			if id, ok := r["rowid"].(int64); ok && byRow[id] != "" {
				r[OwnRecord] = byRow[id]
			}
		}
	}
	return rows, nil
}
