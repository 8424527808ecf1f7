package sweep

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

func TestWatch(t *testing.T) {
	var buf bytes.Buffer
	w := &Watch{Log: slog.New(slog.NewJSONHandler(&buf, nil)), DriftPct: 10,
		Expected: func(r *record.Record) (float64, float64, bool) { return 90, 110, true }}
	d := -25.0
	r := &record.Record{Key: point.Key{Model: "k"}, Test: "tg128", Status: record.StatusOK, Result: record.Result{MedianTs: 70, DriftPct: &d}, Hardware: record.Hardware{Telemetry: &record.Telemetry{Measure: &gpu.Window{Devices: []gpu.DeviceWindow{{Dev: 0, Throttled: true, Throttle: []string{"hw_thermal_slowdown"}}}}}}}
	if n := w.Check(r); n != 2 {
		t.Fatalf("%d anomalies, want 2 (below range, drift)", n)
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		kinds = append(kinds, ev["kind"].(string))
		if ev["key"] != r.Key.String() || !strings.Contains(ev["cause"].(string), "hw_thermal_slowdown") {
			t.Errorf("event %v", ev)
		}
	}
	if strings.Join(kinds, ",") != "below_baseline,decode_drift" {
		t.Errorf("kinds %v", kinds)
	}
	r.MedianTs, d = 100, -5
	if n := w.Check(r); n != 0 {
		t.Errorf("in range, small drift: %d anomalies", n)
	}
}
