package report

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// Each setting the table gives a record field (point.Fields) is the same
// setting everywhere it goes: set on a point, it is the record's JSON
// field of its name and llama-bench kind, the llama-bench field of that
// name and kind (SQL, CSV), read back from llama-bench's JSON as the
// same value, a column of the compact table when it varies, and its key
// text reads back as the point it came from.
func TestSettingsAgreeWithFiles(t *testing.T) {
	for _, st := range point.Fields() {
		vals, err := st.Read(map[byte]string{'b': "1", 'i': "1", 's': "x"}[st.Type])
		if err != nil || len(vals) != 1 {
			t.Errorf("%s: %v", st.Field, err)
			continue
		}
		var p point.Point
		st.Set(&p, vals[0])
		if st.Of(p.Switches) == st.Default {
			t.Errorf("%s: set to %s, still its default %s", st.Field, vals[0], st.Default)
		}
		on, off := record.Record{Status: record.StatusOK, Test: "pp8"}, record.Record{Status: record.StatusOK, Test: "pp8"}
		on.NPrompt, off.NPrompt = 8, 8
		on.Switches = p.Switches

		// The record's JSON field, and llama-bench's of the same kind.
		b, _ := on.MarshalJSON()
		var obj map[string]any
		json.Unmarshal(b, &obj)
		want := map[byte]any{'b': true, 'i': float64(1), 's': "x"}[st.Type]
		if obj[st.Field] != want {
			t.Errorf("%s: record JSON holds %v, want %v", st.Field, obj[st.Field], want)
		}
		i := slices.IndexFunc(record.LlamaBenchFields, func(f record.LBField) bool { return f.Name() == st.Field })
		if i < 0 {
			t.Errorf("%s: not one of llama-bench's fields", st.Field)
			continue
		}
		if got := record.LlamaBenchFields[i].Value(&on); got != st.Typed(p.Switches) {
			t.Errorf("%s: llama-bench's field holds %v, want %v", st.Field, got, st.Typed(p.Switches))
		}
		back, err := record.FromLlamaBench(map[string]any{st.Field: want, "n_prompt": float64(8), "avg_ts": 1.0, "avg_ns": float64(1)})
		if err != nil || back.Switches != p.Switches {
			t.Errorf("%s: llama-bench's %v reads back as %+v (%v)", st.Field, want, back.Switches, err)
		}

		// A column when it varies.
		cols := compactColumns([]record.Record{off, on})
		if !slices.ContainsFunc(cols, func(c column) bool { return c.head == st.Column }) {
			t.Errorf("%s: no column %q when it varies", st.Field, st.Column)
		}

		// Its key text.
		p.Model, p.NPrompt, p.NBatch, p.NUBatch, p.Threads, p.Parallel = "m", 8, 8, 8, 1, 1
		var k point.Key
		if err := k.UnmarshalText([]byte(p.Key().String())); err != nil || k != p.Key() {
			t.Errorf("%s: key %s reads back as %s (%v)", st.Field, p.Key(), k, err)
		}
	}
}
