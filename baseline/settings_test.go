package baseline

import (
	"slices"
	"testing"

	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// Every setting of a point's key tells a comparison's tests and a
// baseline's points apart, but how a test is measured (repetitions,
// warm-up, seed: those pair) and, for a baseline, mmap; a test's sizes
// are in its name. A setting the table adds is covered with no line
// here: a sweep over -nopo 0,1 compared as one test is the fault this
// catches.
func TestSettingsTellTestsApart(t *testing.T) {
	rec := func(p point.Point) *record.Record {
		p.Model = "m.gguf"
		r := plan.Env{}.Fill(record.Record{Status: record.StatusOK}, p, plan.Model{})
		return &r
	}
	base := rec(point.Defaults(4))
	for _, s := range append(point.Fixed(), point.Knobs()...) {
		p := point.Defaults(4)
		s.Set(&p, s.Example)
		r := rec(p)
		if s.Size {
			continue // the test's name differs
		}
		apart := !slices.Equal(diffKey(r), diffKey(base))
		if apart == s.Method {
			t.Errorf("%s=%s: compared apart %v (%q against %q)", s.KeyName, s.Example, apart, diffKey(r), diffKey(base))
		}
		apart = identity(r) != identity(base)
		if apart != !(s.Method || s.KeyName == "mmap") {
			t.Errorf("%s=%s: a baseline's point apart %v (%s against %s)", s.KeyName, s.Example, apart, identity(r), identity(base))
		}
	}
}
