package report

import (
	"cmp"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tokbench/tokbench/record"
)

// SQL writes the measured records as llama-bench's -o sql does: a CREATE
// TABLE IF NOT EXISTS llama_bench, then one INSERT per test. Tests that
// failed are left out, each with an SQL comment saying why.
func SQL(w io.Writer, recs []record.Record) error {
	names := make([]string, len(sqlFields))
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS llama_bench (\n")
	for i, f := range sqlFields {
		names[i] = f.name
		sep := ",\n"
		if i == len(sqlFields)-1 {
			sep = "\n"
		}
		fmt.Fprintf(&b, "  %s %s%s", f.name, f.typ, sep)
	}
	b.WriteString(");\n")
	for i := range recs {
		r := &recs[i]
		if !r.OK() {
			fmt.Fprintf(&b, "-- %s %s: %s, not written: %s\n", cmp.Or(r.ModelID, r.ModelFile), r.Test, r.Status, strings.ReplaceAll(r.Reason, "\n", " "))
			continue
		}
		vals := make([]string, len(sqlFields))
		for j, f := range sqlFields {
			vals[j] = sqlValue(f.value(r))
		}
		fmt.Fprintf(&b, "INSERT INTO llama_bench (%s) VALUES (%s);\n", strings.Join(names, ", "), strings.Join(vals, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sqlValue is a value as an SQL literal.
func sqlValue(v any) string {
	switch x := v.(type) {
	case string:
		if strings.ContainsRune(x, 0) {
			// A NUL ends a literal for sqlite3's shell: the bytes as a
			// blob, read back as the text they are.
			return fmt.Sprintf("CAST(X'%x' AS TEXT)", x)
		}
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case bool:
		if x {
			return "1"
		}
		return "0"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
