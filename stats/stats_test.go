package stats

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
	if Summarize(nil) != (Summary{}) {
		t.Error("no samples: zero summary")
	}
}

func TestTQuantile(t *testing.T) {
	if tQuantile975(1) != 12.706 || tQuantile975(30) != 2.042 || tQuantile975(1000) != 1.96 || !math.IsNaN(tQuantile975(0)) {
		t.Error("t quantiles")
	}
}

func TestLatencies(t *testing.T) {
	ns := make([]float64, 100)
	for i := range ns {
		ns[len(ns)-1-i] = float64(i+1) * 1e6 // 100..1 ms: order must not matter
	}
	l := Latencies(ns)
	if l.P50 != 50 || l.P90 != 90 || l.P99 != 99 || l.Max != 100 || !near(l.Mean, 50.5, 1e-9) {
		t.Errorf("%+v", l)
	}
	if Latencies(nil) != nil {
		t.Error("no samples should give no latency summary")
	}
	if ns[0] != 100e6 {
		t.Error("Latencies reordered its input")
	}
}

func TestPercentiles(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(100 - i)
	}
	if p := PercentilesOf(xs); p != (Percentiles{100, 50, 90, 95, 99, 100}) || PercentilesOf(nil) != (Percentiles{}) {
		t.Errorf("%+v", p)
	}
	// Nearest rank: of 4 values the p50 is the 2nd, the p90 the 4th.
	four := []float64{4, 1, 3, 2}
	if Percentile(four, 50) != 2 || Percentile(four, 90) != 4 || Percentile(four, 1) != 1 || !math.IsNaN(Percentile(nil, 50)) {
		t.Error("nearest rank")
	}
	if four[0] != 4 {
		t.Error("Percentile reordered its input")
	}
}

func TestRobust(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 100}
	if Median(xs) != 3 || Median([]float64{1, 2, 3, 4}) != 2.5 || Median(nil) != 0 {
		t.Error("median")
	}
	// |x - 3| = 2 1 0 1 97: median 1, scaled.
	if !near(MAD(xs), 1.4826, 1e-12) || MAD(nil) != 0 {
		t.Errorf("mad %v", MAD(xs))
	}
}
