package sweep

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tokbench/tokbench/point"
)

// A filter drops the points for which all its comparisons hold, e.g.
// "n_depth>=2048 && parallel>4" or "type==q4_0&&test==pp".
type filter struct {
	terms []term
}

type term struct {
	field, op, value string
	get              func(p point.Point) string
}

var filterOps = []string{">=", "<=", "!=", "==", ">", "<", "="}

// pointFields are a point's fields that are not settings.
var pointFields = map[string]func(p point.Point) string{
	"model": func(p point.Point) string { return p.ModelID },
	"type":  func(p point.Point) string { return p.Quant },
	"test":  func(p point.Point) string { return p.TestName()[:2] },
}

// filterField reads a point's field by its name: model, type, test, or a
// setting by any of its names (point.Named: the spec's, the records' and
// llama-bench's, its flag's, llama-bench's short ones), as the point's key
// holds it (-ub as used: at most -b).
func filterField(name string) func(p point.Point) string {
	if f := pointFields[name]; f != nil {
		return f
	}
	if st := point.Named(name); st != nil && st.Get != nil {
		return func(p point.Point) string { k := p.Key().Point(); return st.Get(&k) }
	}
	return nil
}

// filterNames are the fields a filter names, for its error.
func filterNames() string {
	names := []string{"model", "type", "test"}
	for _, st := range point.Settings {
		if st.Key != "" && st.Get != nil {
			names = append(names, st.Key)
		}
	}
	return strings.Join(names, ", ")
}

// parseFilter reads a filter expression.
func parseFilter(s string) (filter, error) {
	var f filter
	for _, part := range strings.Split(s, "&&") {
		part = strings.TrimSpace(part)
		var t term
		for _, op := range filterOps {
			if i := strings.Index(part, op); i > 0 {
				t = term{field: strings.TrimSpace(part[:i]), op: op, value: strings.TrimSpace(part[i+len(op):])}
				break
			}
		}
		if t.op == "" || t.value == "" {
			return f, fmt.Errorf("filter %q: %q is not a comparison like n_depth>=2048", s, part)
		}
		if t.get = filterField(t.field); t.get == nil {
			return f, fmt.Errorf("filter %q: unknown field %q (use %s, or a setting's flag or record name)", s, t.field, filterNames())
		}
		if t.op == "=" {
			t.op = "=="
		}
		if _, err := strconv.ParseFloat(t.value, 64); err != nil && t.op != "==" && t.op != "!=" {
			return f, fmt.Errorf("filter %q: %s %s needs a number, not %q", s, t.field, t.op, t.value)
		}
		f.terms = append(f.terms, t)
	}
	return f, nil
}

// drops reports whether the filter removes p.
func (f filter) drops(p point.Point) bool {
	for _, t := range f.terms {
		if !t.holds(t.get(p)) {
			return false
		}
	}
	return true
}

func (t term) holds(v string) bool {
	a, errA := strconv.ParseFloat(v, 64)
	b, errB := strconv.ParseFloat(t.value, 64)
	if errA != nil || errB != nil {
		switch t.op {
		case "==":
			return strings.EqualFold(v, t.value)
		case "!=":
			return !strings.EqualFold(v, t.value)
		}
		return false
	}
	switch t.op {
	case "==":
		return a == b
	case "!=":
		return a != b
	case ">":
		return a > b
	case ">=":
		return a >= b
	case "<":
		return a < b
	}
	return a <= b
}
