package sweep

import (
	"cmp"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/record"
)

// Watch flags records whose output speed leaves what is expected: below or
// above the baseline's range for the point, or drifting down over the run
// (the last quarter of the decode steps slower than the first by more
// than DriftPct). Each finding is one structured slog event.
type Watch struct {
	Log *slog.Logger
	// Expected gives the baseline's range of t/s for a record, if any.
	Expected func(r *record.Record) (lo, hi float64, ok bool)
	DriftPct float64 // e.g. 10: flag a slowdown of more than 10%
}

// measure.Check logs the anomalies of a record and returns how many there were.
func (w *Watch) Check(r *record.Record) int {
	if w == nil || w.Log == nil || r.Status != record.StatusOK {
		return 0
	}
	n := 0
	attrs := func(extra ...any) []any {
		a := []any{"key", r.Key, "model", cmp.Or(r.ModelID, r.ModelFile), "test", r.Test, "measured_ts", r.MedianTs}
		if cause := telemetryCause(r); cause != "" {
			a = append(a, "cause", cause)
		}
		return append(a, extra...)
	}
	if w.Expected != nil {
		if lo, hi, ok := w.Expected(r); ok && (r.MedianTs < lo || r.MedianTs > hi) {
			kind := "below_baseline"
			if r.MedianTs > hi {
				kind = "above_baseline"
			}
			w.Log.Warn("tokbench anomaly", attrs("kind", kind, "expected_low_ts", lo, "expected_high_ts", hi)...)
			n++
		}
	}
	if d := r.DriftPct; d != nil && w.DriftPct > 0 && *d < -w.DriftPct {
		w.Log.Warn("tokbench anomaly", attrs("kind", "decode_drift", "drift_pct", *d, "threshold_pct", -w.DriftPct)...)
		n++
	}
	return n
}

// telemetryCause names what the hardware did that explains a slowdown,
// if the telemetry says: clock limits, a busy host.
func telemetryCause(r *record.Record) string {
	if r.Telemetry == nil || r.Telemetry.Measure == nil {
		return ""
	}
	var causes []string
	for _, d := range r.Telemetry.Measure.Devices {
		if d.Throttled {
			causes = append(causes, fmt.Sprintf("GPU %d clocks held down: %s", d.Dev, strings.Join(d.Throttle, ",")))
		}
		if d.Dev == -1 {
			if st, ok := d.Metrics[gpu.HostMemAvail.String()]; ok && st.Mean < 512<<20 {
				causes = append(causes, fmt.Sprintf("host memory nearly exhausted (%.0f MiB available)", st.Mean/(1<<20)))
			}
		}
	}
	return strings.Join(causes, "; ")
}
