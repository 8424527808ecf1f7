// Package sqlite reads and appends to llama-bench's SQLite tables with a
// pure-Go SQLite (modernc.org/sqlite): llama-bench's -o sql text run into
// a database in memory, or a database file of any llama-bench version,
// whose table gains the columns it lacks and never loses one.
package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// Magic begins every SQLite database file.
const Magic = "SQLite format 3\x00"

// Row is a table's row, its values as SQLite gives them (int64, float64,
// string, []byte or nil).
type Row map[string]any

// Open opens a database file.
func Open(path string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return sql.Open("sqlite", dsn(path))
}

// dsn is the driver's name for the file at path: a URI, the characters
// a URI gives a meaning to escaped, waiting up to 5 s for another
// writer's lock.
func dsn(path string) string {
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path) + "?_pragma=busy_timeout(5000)"
}

// FromText runs SQL text (llama-bench's -o sql, or tokbench's) into a
// database in memory.
func FromText(text string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // one connection: one database in memory
	if _, err := db.Exec(text); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Columns lists a table's columns (none if it does not exist).
func Columns(db *sql.DB, table string) ([]string, error) {
	rows, err := db.Query("SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

// Rows reads every row of table with its rowid (under "rowid"), in
// rowid order.
func Rows(db *sql.DB, table string) ([]Row, error) {
	rows, err := db.Query("SELECT rowid AS rowid, * FROM " + quote(table) + " ORDER BY rowid")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []Row
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		r := Row{}
		for i, c := range cols {
			if b, ok := vals[i].([]byte); ok {
				vals[i] = string(b)
			}
			r[c] = vals[i]
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Column is a column tokbench writes: its name and SQL type.
type Column struct{ Name, Type string }

// Table is the rows to append to one table: the columns each row holds
// values for (a new table is made of them), and the rows. A column the
// table lacks is added (ALTER TABLE ... ADD COLUMN); the table's other
// columns are left NULL.
type Table struct {
	Name string
	Cols []Column
	Rows [][]any
	// Link names a column of this table that takes the rowid of the
	// same-index row just appended to the table before it (one row of
	// tokbench's own fields beside each of llama-bench's).
	Link string
}

// Append appends each table's rows to the database file at path (made
// if absent), in one transaction: all of them or, on an error, none.
func Append(path string, tables ...Table) (err error) {
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	var prev []int64
	for _, t := range tables {
		ids, err := appendTable(tx, t, prev)
		if err != nil {
			return fmt.Errorf("%s table %s: %w", path, t.Name, err)
		}
		prev = ids
	}
	return tx.Commit()
}

func appendTable(tx *sql.Tx, t Table, prev []int64) ([]int64, error) {
	cols := t.Cols
	if t.Link != "" {
		cols = append([]Column{{t.Link, "INTEGER"}}, cols...)
	}
	var defs []string
	for _, c := range cols {
		defs = append(defs, quote(c.Name)+" "+c.Type)
	}
	if _, err := tx.Exec("CREATE TABLE IF NOT EXISTS " + quote(t.Name) + " (" + strings.Join(defs, ", ") + ")"); err != nil {
		return nil, err
	}
	have := map[string]bool{}
	rows, err := tx.Query("SELECT name FROM pragma_table_info(?)", t.Name)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var c string
		rows.Scan(&c)
		have[c] = true
	}
	rows.Close()
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = quote(c.Name)
		if !have[c.Name] {
			if _, err := tx.Exec("ALTER TABLE " + quote(t.Name) + " ADD COLUMN " + quote(c.Name) + " " + c.Type); err != nil {
				return nil, err
			}
		}
	}
	stmt, err := tx.Prepare("INSERT INTO " + quote(t.Name) + " (" + strings.Join(names, ", ") + ") VALUES (" +
		strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")")
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	ids := make([]int64, len(t.Rows))
	for i, r := range t.Rows {
		if t.Link != "" {
			r = append([]any{prev[i]}, r...)
		}
		res, err := stmt.Exec(r...)
		if err != nil {
			return nil, err
		}
		ids[i], _ = res.LastInsertId()
	}
	return ids, nil
}

// quote is an SQL identifier, quoted.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
