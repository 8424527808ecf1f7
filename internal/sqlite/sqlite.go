// Package sqlite reads and appends to llama-bench's SQLite tables with a
// pure-Go SQLite (modernc.org/sqlite): a database file of any llama-bench
// version, read through tokbench's own bounded queries (never a view or
// anything else the file defines), or appended to: its table gains the
// columns it lacks and never loses one.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// Magic begins every SQLite database file.
const Magic = "SQLite format 3\x00"

// Row is a table's row, its values as SQLite gives them (int64, float64,
// string, []byte or nil).
type Row map[string]any

// Limits of a read: a database handed to tokbench is data, and a query
// of it must end, in bounded memory, whatever its schema holds.
const (
	readTimeout = 2 * time.Minute
	heapLimit   = 1 << 30
	// busyWait is how long an append waits for another writer's lock.
	busyWait = 30 * time.Second
)

// DB is a database opened read-only: nothing of it runs but the queries
// tokbench makes of its tables, and those are bounded in time and memory.
type DB struct{ db *sql.DB }

// OpenReadOnly opens a database file for reading: read-only, the schema
// not trusted (functions with side effects refused in what it defines),
// queries only.
func OpenReadOnly(path string) (*DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(path, "mode=ro", "_pragma=query_only(1)", "_pragma=trusted_schema(0)",
		fmt.Sprintf("_pragma=hard_heap_limit(%d)", heapLimit)))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return &DB{db}, nil
}

// Close closes the database.
func (d *DB) Close() error { return d.db.Close() }

// querier is a database or a transaction: what tableInfo and columns ask.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// tableInfo says whether name is a table tokbench can read or link to: a
// real table (not a view, whose query would be the file's; not a virtual
// table, whose module would run), and whether its rows have rowids.
//
// It asks with PRAGMA statements, never their table-valued functions: a
// view the file defines named pragma_table_list would answer for them.
func tableInfo(ctx context.Context, q querier, name string) (kind string, withoutRowid bool, err error) {
	rows, err := q.QueryContext(ctx, "PRAGMA main.table_list("+quote(name)+")")
	if err != nil {
		return "", false, err
	}
	defer rows.Close()
	for rows.Next() {
		var schema, n string
		var ncol, strict int
		if err := rows.Scan(&schema, &n, &kind, &ncol, &withoutRowid, &strict); err != nil {
			return "", false, err
		}
	}
	return kind, withoutRowid, rows.Err()
}

// HasTable says whether the database has a table of this name.
func (d *DB) HasTable(name string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	kind, _, err := tableInfo(ctx, d.db, name)
	return err == nil && kind == "table"
}

// ReadTable reads every row of a table, its columns by name and its rowid
// under "rowid" (none for a WITHOUT ROWID table), in rowid order. A view
// or a virtual table of that name is refused: reading it would run what
// the file defines.
func (d *DB) ReadTable(name string) ([]Row, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	kind, withoutRowid, err := tableInfo(ctx, d.db, name)
	switch {
	case err != nil:
		return nil, bounded(err)
	case kind == "":
		return nil, fmt.Errorf("no %s table", name)
	case kind != "table":
		return nil, fmt.Errorf("%s is a %s, not a table: tokbench reads tables only (a %s would run what the file defines)", name, kind, kind)
	}
	cols, err := columns(ctx, d.db, name)
	if err != nil {
		return nil, bounded(err)
	}
	sel := make([]string, 0, len(cols)+1)
	order := ""
	if !withoutRowid {
		alias := rowidAlias(cols)
		if alias == "" {
			return nil, fmt.Errorf("table %s has columns named rowid, _rowid_ and oid, so its rows' ids cannot be read", name)
		}
		sel, order = append(sel, alias+` AS "rowid"`), " ORDER BY "+alias
	}
	var names []string
	for _, c := range cols {
		if !withoutRowid && strings.EqualFold(c, "rowid") {
			continue // the rowid is the table's own, under that name
		}
		sel, names = append(sel, quote(c)), append(names, c)
	}
	if !withoutRowid {
		names = append([]string{"rowid"}, names...)
	}
	rows, err := d.db.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM "+quote(name)+order)
	if err != nil {
		return nil, bounded(err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		vals := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, bounded(err)
		}
		r := make(Row, len(names))
		for i, c := range names {
			if b, ok := vals[i].([]byte); ok {
				vals[i] = string(b)
			}
			r[c] = vals[i]
		}
		out = append(out, r)
	}
	return out, bounded(rows.Err())
}

// bounded says what a query that hit a limit means.
func bounded(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(err.Error(), "interrupted"):
		return fmt.Errorf("reading took over %s: not a results database (or a damaged one)", readTimeout)
	case strings.Contains(err.Error(), "out of memory"):
		return fmt.Errorf("reading needed over %d MiB: not a results database (or a damaged one)", heapLimit>>20)
	}
	return err
}

// columns lists a table's columns, generated and hidden ones left out.
func columns(ctx context.Context, q querier, table string) ([]string, error) {
	rows, err := q.QueryContext(ctx, "PRAGMA main.table_xinfo("+quote(table)+")")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var cid, notNull, pk, hidden int
		var c, typ string
		var dflt any
		if err := rows.Scan(&cid, &c, &typ, &notNull, &dflt, &pk, &hidden); err != nil {
			return nil, err
		}
		if hidden == 0 {
			cols = append(cols, c)
		}
	}
	return cols, rows.Err()
}

// rowidAlias is a name of a table's rowid that no column of it takes.
func rowidAlias(cols []string) string {
	for _, a := range []string{"rowid", "_rowid_", "oid"} {
		taken := false
		for _, c := range cols {
			taken = taken || strings.EqualFold(c, a)
		}
		if !taken {
			return a
		}
	}
	return ""
}

// dsn is the driver's name for the file at path: a URI, the characters
// a URI gives a meaning to escaped, with the parameters given.
func dsn(path string, params ...string) string {
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path) + "?" + strings.Join(params, "&")
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
// if absent), in one transaction: all of them or, on an error or ctx's
// end (a signal), none. The transaction takes the write lock as it begins,
// waiting up to busyWait for another writer's, so that two appends to one
// database run one after the other.
func Append(ctx context.Context, path string, tables ...Table) (err error) {
	a, err := Begin(ctx, path, tables...)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			a.Rollback()
		}
	}()
	for i := 0; len(tables) > 0 && i < len(tables[0].Rows); i++ {
		row := make([][]any, len(tables))
		for j, t := range tables {
			row[j] = t.Rows[i]
		}
		if err := a.Add(row...); err != nil {
			return err
		}
	}
	return a.Commit()
}

// Appender appends rows one at a time (Add) in one transaction, which
// Commit ends, or Rollback: a million rows are never in memory at once.
type Appender struct {
	ctx    context.Context
	path   string
	db     *sql.DB
	tx     *sql.Tx
	tables []Table
	stmts  []*sql.Stmt
	ids    []string     // each table's name of its rowid (rowidAlias)
	before []tableCount // each table's rows as the append began
	added  int64        // rows added to each table
}

// Begin starts appending to the tables of the database file at path (made
// if absent; each table made, or given the columns it lacks), taking its
// write lock (Append).
func Begin(ctx context.Context, path string, tables ...Table) (*Appender, error) {
	// A new database's pages are 32 KiB, not 4: a fleet's million rows
	// are 2.2 GB in 4 KiB pages, each written by a call of its own as the
	// cache spills (a sixth of the append's CPU), and 1.8 GB in 32 KiB.
	// (An existing database keeps its pages.)
	db, err := sql.Open("sqlite", dsn(path, fmt.Sprintf("_pragma=busy_timeout(%d)", busyWait.Milliseconds()),
		"_txlock=immediate", "_pragma=trusted_schema(0)", "_pragma=page_size(32768)"))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	a := &Appender{ctx: ctx, path: path, db: db, tables: slices.Clone(tables), stmts: make([]*sql.Stmt, len(tables)), ids: make([]string, len(tables))}
	if a.tx, err = db.BeginTx(ctx, nil); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range tables {
		if err := a.prepare(i); err != nil {
			a.Rollback()
			return nil, err
		}
	}
	if a.before, err = a.counts(); err != nil {
		a.Rollback()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

func (a *Appender) prepare(i int) error {
	if a.stmts[i] != nil {
		a.stmts[i].Close()
	}
	var err error
	if a.stmts[i], a.ids[i], err = prepare(a.ctx, a.tx, a.tables[i]); err != nil {
		return fmt.Errorf("%s table %s: %w", a.path, a.tables[i].Name, err)
	}
	return nil
}

// AddColumns adds columns to table i (of Begin's) for the rows after:
// the rows before hold NULL in them.
func (a *Appender) AddColumns(i int, cols ...Column) error {
	a.tables[i].Cols = append(slices.Clip(a.tables[i].Cols), cols...)
	return a.prepare(i)
}

// Add appends one row of each table, its values in the order of the
// table's columns (with a Link, the row before's rowid goes first).
func (a *Appender) Add(row ...[]any) error {
	// A row's statements are short: the append stops between rows, and
	// each runs without a context to watch (the driver starts a watcher
	// per statement for one: a fifth of a fleet's append).
	if err := a.ctx.Err(); err != nil {
		return err
	}
	ctx := context.WithoutCancel(a.ctx)
	var prev int64
	for i, t := range a.tables {
		r := row[i]
		if t.Link != "" {
			r = append([]any{prev}, r...)
		}
		res, err := a.stmts[i].ExecContext(ctx, r...)
		if err != nil {
			return fmt.Errorf("%s table %s: %w", a.path, t.Name, err)
		}
		prev, _ = res.LastInsertId()
	}
	a.added++
	return nil
}

// Commit ends the append, keeping every row, once the tables hold what
// was written: each as many more rows as were added, the new ones after
// the old, and each link to a new row of the table before (a constraint
// that ignores or replaces a row on a conflict would lose one, and say
// nothing). Else it rolls back.
func (a *Appender) Commit() error {
	a.closeStmts()
	if err := a.verify(); err != nil {
		a.Rollback()
		return fmt.Errorf("%s: %w: nothing was appended", a.path, err)
	}
	err := a.tx.Commit()
	return errors.Join(err, a.db.Close())
}

// Rollback ends the append, keeping none of its rows.
func (a *Appender) Rollback() {
	a.closeStmts()
	a.tx.Rollback()
	a.db.Close()
}

func (a *Appender) closeStmts() {
	for _, st := range a.stmts {
		if st != nil {
			st.Close()
		}
	}
}

// tableCount is a table's rows and its highest rowid.
type tableCount struct{ rows, last int64 }

func (a *Appender) counts() ([]tableCount, error) {
	out := make([]tableCount, len(a.tables))
	for i, t := range a.tables {
		if err := a.tx.QueryRowContext(a.ctx, "SELECT count(*), coalesce(max("+a.ids[i]+"), 0) FROM "+quote(t.Name)).Scan(&out[i].rows, &out[i].last); err != nil {
			return nil, fmt.Errorf("table %s: %w", t.Name, err)
		}
	}
	return out, nil
}

func (a *Appender) verify() error {
	now, err := a.counts()
	if err != nil {
		return err
	}
	for i, t := range a.tables {
		var fresh int64
		if err := a.tx.QueryRowContext(a.ctx, "SELECT count(*) FROM "+quote(t.Name)+" WHERE "+a.ids[i]+" > ?", a.before[i].last).Scan(&fresh); err != nil {
			return fmt.Errorf("table %s: %w", t.Name, err)
		}
		if now[i].rows != a.before[i].rows+a.added || fresh != a.added {
			return fmt.Errorf("table %s holds %d rows, %d of them new, after %d were added to its %d: its schema changed what was written",
				t.Name, now[i].rows, fresh, a.added, a.before[i].rows)
		}
		if t.Link == "" || i == 0 {
			continue
		}
		var linked int64
		prev := a.ids[i-1]
		q := "SELECT count(*) FROM " + quote(t.Name) + " WHERE " + a.ids[i] + " > ? AND " + quote(t.Link) + " IN (SELECT " + prev + " FROM " + quote(a.tables[i-1].Name) + " WHERE " + prev + " > ?)"
		if err := a.tx.QueryRowContext(a.ctx, q, a.before[i].last, a.before[i-1].last).Scan(&linked); err != nil {
			return fmt.Errorf("table %s: %w", t.Name, err)
		}
		if linked != a.added {
			return fmt.Errorf("table %s: %d of its %d new rows link to a new row of %s", t.Name, linked, a.added, a.tables[i-1].Name)
		}
	}
	return nil
}

// refuseTriggers refuses a table with triggers: they would run what the
// file defines on tokbench's inserts (delete rows, ignore them, write
// elsewhere). A database is data.
func refuseTriggers(ctx context.Context, tx *sql.Tx, table string) error {
	rows, err := tx.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE", table)
	if err != nil {
		return err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		names = append(names, quote(n))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(names) > 0 {
		return fmt.Errorf("it has triggers (%s), which would run on tokbench's inserts: tokbench does not run what a database defines; "+
			"append to another database, or drop them (DROP TRIGGER %s)", strings.Join(names, ", "), names[0])
	}
	return nil
}

// prepare makes t's table ready for its rows (made, or given the columns
// it lacks) and returns the statement that inserts one, and the table's
// name of its rowid.
func prepare(ctx context.Context, tx *sql.Tx, t Table) (*sql.Stmt, string, error) {
	cols := t.Cols
	if t.Link != "" {
		cols = append([]Column{{t.Link, "INTEGER"}}, cols...)
	}
	var defs []string
	for _, c := range cols {
		defs = append(defs, quote(c.Name)+" "+c.Type)
	}
	if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+quote(t.Name)+" ("+strings.Join(defs, ", ")+")"); err != nil {
		return nil, "", err
	}
	// The rows must be a table's with ids tokbench can link and read back.
	kind, withoutRowid, err := tableInfo(ctx, tx, t.Name)
	if err != nil {
		return nil, "", err
	}
	switch {
	case kind != "table":
		return nil, "", fmt.Errorf("it is a %s, not a table: append to another database", kind)
	case withoutRowid:
		return nil, "", fmt.Errorf("it is WITHOUT ROWID, so tokbench's rows could not be linked to its rows: append to another database")
	}
	if err := refuseTriggers(ctx, tx, t.Name); err != nil {
		return nil, "", err
	}
	existing, err := columns(ctx, tx, t.Name)
	if err != nil {
		return nil, "", err
	}
	id := rowidAlias(existing)
	if id == "" {
		return nil, "", fmt.Errorf("its columns rowid, _rowid_ and oid hide its rows' ids, which tokbench's rows link to: append to another database")
	}
	have := map[string]bool{}
	for _, c := range existing {
		have[c] = true
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = quote(c.Name)
		if !have[c.Name] {
			if _, err := tx.Exec("ALTER TABLE " + quote(t.Name) + " ADD COLUMN " + quote(c.Name) + " " + c.Type); err != nil {
				return nil, "", err
			}
		}
	}
	st, err := tx.Prepare("INSERT INTO " + quote(t.Name) + " (" + strings.Join(names, ", ") + ") VALUES (" +
		strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")")
	return st, id, err
}

// quote is an SQL identifier, quoted.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
