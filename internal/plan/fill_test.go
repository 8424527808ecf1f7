package plan

import (
	"testing"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// A record holds every setting of its point's key: what Fill writes,
// Record.Point reads back as the point had it (-ts in llama-bench's
// spelling), so that whatever tells records apart by their settings
// (compare, baselines, the tables) sees each one, a setting the table
// adds included.
func TestFillReadsBack(t *testing.T) {
	for _, s := range append(point.Fixed(), point.Knobs()...) {
		p := point.Defaults(4)
		p.Model = "m.gguf"
		s.Set(&p, s.Example)
		r := Env{}.Fill(record.Record{}, p, Model{})
		back := r.Point()
		want, got := s.Get(&p), s.Get(&back)
		if s.KeyName == "ts" {
			want = point.LlamaBenchSplit(want)
		}
		if got != want || want != s.Example && s.KeyName != "ts" {
			t.Errorf("%s=%s: the record reads back %q, want %q", s.KeyName, s.Example, got, want)
		}
	}
}
