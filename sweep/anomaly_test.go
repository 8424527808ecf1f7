package sweep

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/gpu"
)

func TestDrift(t *testing.T) {
	steps := make([]float64, 40)
	for i := range steps {
		steps[i] = 10
		if i >= 30 {
			steps[i] = 20 // the last quarter at half the rate
		}
	}
	if d := drift(steps); d == nil || *d != -50 {
		t.Errorf("drift %v, want -50", d)
	}
	if drift(steps[:8]) != nil {
		t.Error("drift from 8 steps")
	}
}

func TestWatch(t *testing.T) {
	var buf bytes.Buffer
	w := &Watch{Log: slog.New(slog.NewJSONHandler(&buf, nil)), DriftPct: 10,
		Expected: func(r *Record) (float64, float64, bool) { return 90, 110, true }}
	d := -25.0
	r := &Record{Key: "k", Test: "tg128", Status: StatusOK, MedianTs: 70, DriftPct: &d,
		Telemetry: &Telemetry{Measure: &gpu.Window{Devices: []gpu.DeviceWindow{{Dev: 0, Throttled: true, Throttle: []string{"hw_thermal_slowdown"}}}}}}
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
		if ev["key"] != "k" || !strings.Contains(ev["cause"].(string), "hw_thermal_slowdown") {
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
