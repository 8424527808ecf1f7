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
}

var filterOps = []string{">=", "<=", "!=", "==", ">", "<", "="}

// filterFields reads a point's field by the names llama-bench and the
// records use (short flag names work too).
var filterFields = map[string]func(p point.Point) string{
	"model":        func(p point.Point) string { return p.ModelID },
	"type":         func(p point.Point) string { return p.Quant },
	"test":         func(p point.Point) string { return p.TestName()[:2] },
	"n_prompt":     func(p point.Point) string { return strconv.Itoa(p.NPrompt) },
	"n_gen":        func(p point.Point) string { return strconv.Itoa(p.NGen) },
	"n_depth":      func(p point.Point) string { return strconv.Itoa(p.NDepth) },
	"parallel":     func(p point.Point) string { return strconv.Itoa(p.Parallel) },
	"n_batch":      func(p point.Point) string { return strconv.Itoa(p.NBatch) },
	"n_ubatch":     func(p point.Point) string { return strconv.Itoa(p.UBatch()) },
	"threads":      func(p point.Point) string { return strconv.Itoa(p.Threads) },
	"n_gpu_layers": func(p point.Point) string { return strconv.Itoa(p.NGPULayers) },
	"flash_attn":   func(p point.Point) string { return p.FlashAttn.String() },
	"type_k":       func(p point.Point) string { return p.TypeK },
	"type_v":       func(p point.Point) string { return p.TypeV },
	"sampling":     func(p point.Point) string { return string(p.SamplingName()) },
}

var filterAliases = map[string]string{"p": "n_prompt", "n": "n_gen", "d": "n_depth", "np": "parallel", "b": "n_batch",
	"ub": "n_ubatch", "t": "threads", "ngl": "n_gpu_layers", "fa": "flash_attn", "ctk": "type_k", "ctv": "type_v"}

// parseFilter reads a filter expression.
func parseFilter(s string) (filter, error) {
	var f filter
	for _, part := range strings.Split(s, "&&") {
		part = strings.TrimSpace(part)
		var t term
		for _, op := range filterOps {
			if i := strings.Index(part, op); i > 0 {
				t = term{strings.TrimSpace(part[:i]), op, strings.TrimSpace(part[i+len(op):])}
				break
			}
		}
		if t.op == "" || t.value == "" {
			return f, fmt.Errorf("filter %q: %q is not a comparison like n_depth>=2048", s, part)
		}
		if a, ok := filterAliases[t.field]; ok {
			t.field = a
		}
		if _, ok := filterFields[t.field]; !ok {
			return f, fmt.Errorf("filter %q: unknown field %q (use model, type, test, n_prompt, n_gen, n_depth, parallel, n_batch, n_ubatch, threads, n_gpu_layers, flash_attn, type_k, type_v, sampling)", s, t.field)
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
		if !t.holds(filterFields[t.field](p)) {
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
