package baseline

import (
	"math"
	"testing"
)

func TestMannWhitney(t *testing.T) {
	a := []float64{1, 2, 3, 4, 5}
	b := []float64{6, 7, 8, 9, 10}
	// Complete separation of 5 and 5: 2 of the C(10,5)=252 splits.
	if p := MannWhitney(a, b); math.Abs(p-2.0/252) > 1e-9 {
		t.Errorf("p = %v, want %v", p, 2.0/252)
	}
	if p := MannWhitney(a, a); p < 0.9 {
		t.Errorf("same samples: p = %v", p)
	}
	// 3 and 3 can never reach p < 0.1.
	if p := MannWhitney([]float64{1, 2, 3}, []float64{4, 5, 6}); math.Abs(p-0.1) > 1e-9 {
		t.Errorf("3 vs 3: p = %v", p)
	}
	// Large samples with ties use the normal approximation.
	var x, y []float64
	for i := 0; i < 30; i++ {
		x = append(x, float64(i%10))
		y = append(y, float64(i%10)+3)
	}
	if p := MannWhitney(x, y); p > 0.01 {
		t.Errorf("shifted large samples: p = %v", p)
	}
	if p := MannWhitney(x, x); p < 0.9 {
		t.Errorf("identical large samples: p = %v", p)
	}
}
