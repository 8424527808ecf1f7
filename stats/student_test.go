package stats

import (
	"math"
	"testing"
)

// Student's t against published values: the two-sided 5% critical values
// (12.706 at 1 df, 2.776 at 4, 2.042 at 30, 1.960 for the normal) and the
// CDF at a few points.
func TestStudent(t *testing.T) {
	for _, c := range [][2]float64{{1, 12.706}, {4, 2.776}, {30, 2.042}, {math.Inf(1), 1.960}} {
		if q := StudentQuantile(0.975, c[0]); math.Abs(q-c[1]) > 2e-3 {
			t.Errorf("t(0.975, %v) = %v, want %v", c[0], q, c[1])
		}
	}
	if p := StudentCDF(2.0, 10); math.Abs(p-0.963306) > 1e-5 {
		t.Errorf("CDF(2, 10) = %v", p)
	}
	if p := StudentCDF(-1.5, 3); math.Abs(p-0.115293) > 1e-5 {
		t.Errorf("CDF(-1.5, 3) = %v", p)
	}
	if p := StudentCDF(0, 7); math.Abs(p-0.5) > 1e-12 {
		t.Errorf("CDF(0, 7) = %v", p)
	}
}
