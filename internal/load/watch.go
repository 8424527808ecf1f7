package load

import (
	"log/slog"
	"sort"

	"github.com/tokbench/tokbench/stats"
)

// observers fan a run's figures out to several observers.
type observers []Observer

func (obs observers) Step(s StepStats) {
	for _, o := range obs {
		o.Step(s)
	}
}

func (obs observers) Done(out *Served) {
	for _, o := range obs {
		o.Done(out)
	}
}

func (obs observers) Second(s Second) {
	for _, o := range obs {
		o.Second(s)
	}
}

// Monitor logs structured anomaly events as the run goes: a busy second
// whose output t/s is below Floor, or below the run's own steady level by
// more than DropPct; and at the end, a drift of the steady level from the
// first quarter of the run to the last of more than DriftPct. Steady
// seconds are those after Warmup with at least the usual number of active
// sequences (so the run's ramp-down is not taken for a drop).
type Monitor struct {
	Log      *slog.Logger
	Scenario string
	Floor    float64 // t/s (0: none)
	DropPct  float64 // 0: off
	DriftPct float64 // 0: off
	Warmup   int     // seconds
	Events   int
	secs     []Second
}

func (m *Monitor) Step(StepStats) {}
func (m *Monitor) Done(*Served)   {}

// Second checks a complete second.
func (m *Monitor) Second(s Second) {
	m.secs = append(m.secs, s)
	steady := m.steady(m.secs[:len(m.secs)-1])
	if s.T < m.Warmup || s.Active == 0 || (len(steady) > 0 && s.Active < medianActive(steady)) {
		return
	}
	if m.Floor > 0 && s.OutputTps < m.Floor {
		m.event("below_expected", s, "expected_low_ts", m.Floor)
	}
	if m.DropPct > 0 && len(steady) >= 5 {
		level := median(steady)
		if s.OutputTps < level*(1-m.DropPct/100) {
			m.event("output_drop", s, "steady_ts", level, "threshold_pct", m.DropPct)
		}
	}
}

// Finish checks the drift over the run.
func (m *Monitor) Finish() {
	steady := m.steady(m.secs)
	if m.DriftPct <= 0 || len(steady) < 8 {
		return
	}
	q := len(steady) / 4
	first, last := median(steady[:q]), median(steady[len(steady)-q:])
	if d := 100 * (last - first) / first; first > 0 && d < -m.DriftPct {
		m.Log.Warn("tokbench anomaly", "kind", "output_drift", "scenario", m.Scenario, "first_quarter_ts", first,
			"last_quarter_ts", last, "drift_pct", d, "threshold_pct", -m.DriftPct)
		m.Events++
	}
}

func (m *Monitor) event(kind string, s Second, extra ...any) {
	m.Log.Warn("tokbench anomaly", append([]any{"kind", kind, "scenario", m.Scenario, "second", s.T, "output_ts", s.OutputTps,
		"active", s.Active, "queue", s.Queue, "kv_used", s.KVUsed}, extra...)...)
	m.Events++
}

// steady keeps the busy seconds after the warm-up that had at least the
// median number of active sequences.
func (m *Monitor) steady(secs []Second) []Second {
	var busy []Second
	for _, s := range secs {
		if s.T >= m.Warmup && s.Active > 0 {
			busy = append(busy, s)
		}
	}
	if len(busy) == 0 {
		return nil
	}
	act := medianActive(busy)
	out := busy[:0:0]
	for _, s := range busy {
		if s.Active >= act {
			out = append(out, s)
		}
	}
	return out
}

func medianActive(secs []Second) int {
	a := make([]int, len(secs))
	for i, s := range secs {
		a[i] = s.Active
	}
	sort.Ints(a)
	return a[len(a)/2]
}

func median(secs []Second) float64 {
	xs := make([]float64, len(secs))
	for i, s := range secs {
		xs[i] = s.OutputTps
	}
	return stats.Percentile(xs, 50)
}
