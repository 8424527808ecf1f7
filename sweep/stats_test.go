package sweep

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{10, 12, 14, 16, 18})
	if s.Mean != 14 || s.Median != 14 || s.Min != 10 || s.Max != 18 {
		t.Errorf("%+v", s)
	}
	// sample stddev of 10..18 step 2 is sqrt(10)
	if !near(s.Stddev, math.Sqrt(10), 1e-9) {
		t.Errorf("stddev %v", s.Stddev)
	}
	if !near(s.CI95, 2.776*math.Sqrt(10)/math.Sqrt(5), 1e-9) {
		t.Errorf("ci95 %v", s.CI95)
	}
	if !near(s.CV, math.Sqrt(10)/14, 1e-12) {
		t.Errorf("cv %v", s.CV)
	}
	one := Summarize([]float64{7})
	if one.Mean != 7 || one.Stddev != 0 || one.CI95 != 0 {
		t.Errorf("single sample %+v", one)
	}
}

func TestLatencies(t *testing.T) {
	ns := make([]float64, 100)
	for i := range ns {
		ns[i] = float64(i+1) * 1e6 // 1..100 ms
	}
	l := Latencies(ns)
	if l.P50 != 50 || l.P90 != 90 || l.P99 != 99 || l.Max != 100 || !near(l.Mean, 50.5, 1e-9) {
		t.Errorf("%+v", l)
	}
	if Latencies(nil) != nil {
		t.Error("no samples should give no latency summary")
	}
}
