package record

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/tokbench/tokbench/internal/sqlite"
)

// WriteSQL writes the measured records as the pinned llama-bench's -o sql
// does, statement for statement: a CREATE TABLE IF NOT EXISTS
// llama_bench of its fields, then one INSERT per test, every value
// quoted. tokbench's own fields go to a table of their own, tokbench,
// one row per test keyed to llama_bench's by its rowid: a database
// llama-bench made takes the lines, and llama-bench's own lines go to a
// database made from them. Tests that failed are left out, each with an
// SQL comment saying why.
func WriteSQL(w io.Writer, recs []Record) error { return WriteSQLOf(w, Slice(recs)) }

// WriteSQLOf is WriteSQL of src's records, read twice: for the columns
// their extra fields need, then for their rows, written one at a time.
func WriteSQLOf(w io.Writer, src Source) error {
	extra, err := extraFields(src, LlamaBenchFields, currentFields, ownFields)
	if err != nil {
		return err
	}
	lb := append(append([]LBField{}, LlamaBenchFields...), extra...)
	var b strings.Builder
	createTable(&b, BenchTable, lb)
	b.WriteString("\n")
	createTable(&b, OwnTable, append([]LBField{{OwnLink, 'i', nil}}, ownFields...))
	b.WriteString("\n")
	bw := bufio.NewWriter(w)
	err = src(func(r *Record) error {
		if !r.OK() {
			fmt.Fprintf(&b, "-- %s %s: %s, not written: %s\n", cmp.Or(r.ModelID, r.ModelFile), r.Test, r.Status, strings.ReplaceAll(r.Reason, "\n", " "))
		} else {
			insert(&b, BenchTable, present(lb, r), r)
			insertLinked(&b, OwnTable, ownFields, r)
		}
		_, err := bw.WriteString(b.String())
		b.Reset()
		return err
	})
	if err != nil {
		return err
	}
	if _, err := bw.WriteString(b.String()); err != nil {
		return err
	}
	return bw.Flush()
}

func createTable(b *strings.Builder, table string, fields []LBField) {
	fmt.Fprintf(b, "CREATE TABLE IF NOT EXISTS %s (\n", table)
	for i, f := range fields {
		sep := ",\n"
		if i == len(fields)-1 {
			sep = "\n"
		}
		fmt.Fprintf(b, "  %s %s%s", f.name, f.sqlType(), sep)
	}
	b.WriteString(");\n")
}

// insert writes one INSERT of r's fields.
func insert(b *strings.Builder, table string, fields []LBField, r *Record) {
	names, vals := namesValues(fields, r)
	fmt.Fprintf(b, "INSERT INTO %s (%s) VALUES (%s);\n", table, strings.Join(names, ", "), strings.Join(vals, ", "))
}

// insertLinked writes tokbench's row of r, linked to llama-bench's row
// inserted just before (its rowid) only if that row is r's: an INSERT
// into a llama_bench table of another version fails, sqlite3 goes on, and
// a plain link would then name the row inserted before it. The row is
// then not inserted at all.
func insertLinked(b *strings.Builder, table string, fields []LBField, r *Record) {
	names, vals := namesValues(fields, r)
	fmt.Fprintf(b, "INSERT INTO %s (%s, %s) SELECT last_insert_rowid(), %s WHERE EXISTS (SELECT 1 FROM %s WHERE rowid = last_insert_rowid()"+
		" AND n_prompt = %s AND n_gen = %s AND avg_ns = %s);\n", table, OwnLink, strings.Join(names, ", "), strings.Join(vals, ", "),
		BenchTable, sqlValue(r.NPrompt), sqlValue(r.NGen), sqlValue(r.AvgNs))
}

func namesValues(fields []LBField, r *Record) (names, vals []string) {
	for _, f := range fields {
		v := f.value(r)
		if x, ok := v.(float64); ok && f.kind == 'f' {
			v = strconv.FormatFloat(x, 'f', 6, 64) // llama-bench's rates: std::to_string
		}
		names, vals = append(names, f.name), append(vals, sqlValue(v))
	}
	return names, vals
}

// present are the fields of fs r has a value of: llama-bench's all, of
// the extra ones those r's row carried (an INSERT into another version's
// table names no column it need not).
func present(fs []LBField, r *Record) []LBField {
	out := fs[:len(LlamaBenchFields):len(LlamaBenchFields)]
	for _, f := range fs[len(LlamaBenchFields):] {
		if _, ok := r.Extra[f.name]; ok {
			out = append(out, f)
		}
	}
	return out
}

// sqlValue is a value as llama-bench writes it: quoted text (SQLite's
// column types make numbers of the numeric ones), booleans 1 and 0.
func sqlValue(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case bool:
		s = "0"
		if x {
			s = "1"
		}
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		s = fmt.Sprint(v)
	}
	if strings.ContainsRune(s, 0) {
		// A NUL ends a literal for sqlite3's shell: the bytes as a blob,
		// read back as the text they are.
		return fmt.Sprintf("CAST(X'%x' AS TEXT)", s)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// AppendSQLite appends the measured records to the llama_bench table of
// the SQLite database at path (made if absent), of any llama-bench
// version: the columns it lacks are added, none dropped, and a table
// tokbench makes has the columns of the pinned and the current
// llama-bench both, so that either's INSERTs fit. tokbench's own fields
// go to its table beside it, as in -o sql. It returns how many were
// appended; failed tests are not.
func AppendSQLite(ctx context.Context, path string, recs []Record) (int, error) {
	return AppendSQLiteEach(ctx, path, func(add func(*Record, SQLRow) error) error {
		for i := range recs {
			if err := add(&recs[i], rowOf(&recs[i], nil)); err != nil {
				return err
			}
		}
		return nil
	})
}

// benchFields are the columns of llama_bench that tokbench writes
// whatever the records hold: the pinned llama-bench's and the current's.
var benchFields = append(append([]LBField{}, LlamaBenchFields...), currentFields...)

// SQLRow is a measured record's values in benchFields' and ownFields'
// columns (nil for a record not measured): made where the record is read
// (EachFinalRow: on every core), its whole JSON the costliest.
type SQLRow struct{ bench, own []any }

// rowOf is a record's row. Its record column is the record's line where
// that is a tokbench record as it stands (eachWith), not the record
// encoded again: read back, it is the same record, and encoding it was a
// sixth of a fleet's append.
func rowOf(r *Record, line []byte) SQLRow {
	if !r.OK() {
		return SQLRow{}
	}
	own := make([]any, len(ownFields))
	for i, f := range ownFields {
		if f.name == OwnRecord && line != nil {
			own[i] = string(line)
		} else {
			own[i] = f.value(r)
		}
	}
	return SQLRow{values(benchFields, r), own}
}

// EachFinalRow is EachFinal with each record's row (rowOf).
func EachFinalRow(path string, each func(*Record, SQLRow) error) (intact int64, torn bool, err error) {
	return eachFinalWith(path, rowOf, each)
}

// AppendSQLiteEach appends the measured records each gives (with their rows,
// EachFinalRow), one row at a time, as AppendSQLite does; a record with a field
// no column holds yet adds its column (the rows before hold NULL there).
// With none measured, the database is not touched.
func AppendSQLiteEach(ctx context.Context, path string, each func(add func(*Record, SQLRow) error) error) (n int, err error) {
	var extra []LBField // the columns after benchFields, as records bring them
	x := newExtras(benchFields, ownFields)
	var a *sqlite.Appender
	defer func() {
		if a != nil && err != nil {
			a.Rollback()
		}
	}()
	err = each(func(r *Record, row SQLRow) error {
		if row.bench == nil {
			return nil
		}
		if a == nil {
			var err error
			a, err = sqlite.Begin(ctx, path, sqlite.Table{Name: BenchTable, Cols: sqlColumns(benchFields)},
				sqlite.Table{Name: OwnTable, Cols: sqlColumns(ownFields), Link: OwnLink})
			if err != nil {
				return err
			}
		}
		if more := x.add(r); len(more) > 0 {
			slices.SortFunc(more, func(a, b LBField) int { return strings.Compare(a.name, b.name) })
			if err := a.AddColumns(0, sqlColumns(more)...); err != nil {
				return err
			}
			extra = append(extra, more...)
		}
		n++
		return a.Add(append(row.bench, values(extra, r)...), row.own)
	})
	if err != nil || a == nil {
		return 0, err
	}
	return n, a.Commit()
}

func sqlColumns(fields []LBField) []sqlite.Column {
	out := make([]sqlite.Column, len(fields))
	for i, f := range fields {
		out[i] = sqlite.Column{Name: f.name, Type: f.sqlType()}
	}
	return out
}

func values(fields []LBField, r *Record) []any {
	out := make([]any, len(fields))
	for i, f := range fields {
		out[i] = f.value(r)
	}
	return out
}
