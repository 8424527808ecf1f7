package stats

import (
	"math"
	"sort"
	"strings"
	"testing"
)

// exactP is the two-sided p-value of the U test by enumeration: every way
// to split the pooled values into groups of len(xs) and len(ys), with
// midranks for ties, gives a U; the p-value is twice the smaller tail at
// the observed U (capped at 1), the convention of go-moremath, which
// benchstat uses. It is the definition the test must meet, ties included.
func exactP(xs, ys []float64) float64 {
	all := append(append([]float64{}, xs...), ys...)
	idx := make([]int, len(all))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return all[idx[a]] < all[idx[b]] })
	rank := make([]float64, len(all))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && all[idx[j]] == all[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			rank[idx[k]] = float64(i+j+1) / 2
		}
		i = j
	}
	n1, n := len(xs), len(all)
	u := func(mask int) float64 {
		r := 0.0
		for i := 0; i < n; i++ {
			if mask&(1<<i) != 0 {
				r += rank[i]
			}
		}
		return r - float64(n1*(n1+1))/2
	}
	obs := u(1<<n1 - 1)
	below, above, total := 0, 0, 0
	for mask := 0; mask < 1<<n; mask++ {
		if popcount(mask) != n1 {
			continue
		}
		total++
		if v := u(mask); v <= obs+1e-9 {
			below++
		}
		if v := u(mask); v >= obs-1e-9 {
			above++
		}
	}
	return math.Min(1, 2*float64(min(below, above))/float64(total))
}

func popcount(x int) int {
	c := 0
	for ; x != 0; x &= x - 1 {
		c++
	}
	return c
}

func TestMannWhitney(t *testing.T) {
	a := []float64{1, 2, 3, 4, 5}
	b := []float64{6, 7, 8, 9, 10}
	// Complete separation of 5 and 5: 2 of the C(10,5)=252 splits.
	if p, _ := MannWhitney(a, b, 0.05); math.Abs(p-2.0/252) > 1e-9 {
		t.Errorf("p = %v, want %v", p, 2.0/252)
	}
	if p, _ := MannWhitney(a, a, 0.05); p < 0.9 {
		t.Errorf("same samples: p = %v", p)
	}
	// 3 and 3 can never reach p < 0.05, and the test says so.
	if p, warn := MannWhitney([]float64{1, 2, 3}, []float64{4, 5, 6}, 0.05); math.Abs(p-0.1) > 1e-9 || !strings.Contains(warn, "samples") {
		t.Errorf("3 vs 3: p = %v, %q", p, warn)
	}
	if a[0] != 1 || b[4] != 10 {
		t.Error("the samples were reordered")
	}
}

// Benchmark rates tie often (rounded timers, identical runs): the p-value
// must be the exact one with ties, not a normal approximation.
func TestMannWhitneyExactWithTies(t *testing.T) {
	for _, c := range [][2][]float64{
		{{1, 1, 2, 2, 3}, {2, 3, 3, 4, 4}},
		{{10, 10, 10, 11}, {11, 12, 12, 12, 13}},
		{{5, 5, 5, 6, 6, 7}, {5, 6, 7, 7, 8, 8}},
	} {
		want := exactP(c[0], c[1])
		if got, _ := MannWhitney(c[0], c[1], 0.05); math.Abs(got-want) > 1e-9 {
			t.Errorf("%v vs %v: p = %v, exact %v", c[0], c[1], got, want)
		}
	}
}

// The ratio's interval goes with the test: 5 and 5 fully apart give an
// interval that leaves out 1 and holds the true factor; the same samples
// against themselves give one that holds 1; 3 and 3 give none at 95%.
func TestRatioOf(t *testing.T) {
	a := []float64{100, 101, 102, 103, 104}
	b := []float64{110, 111, 112, 113, 114.4}
	r := RatioOf(a, b, 0.95)
	if !(r.Lo > 1 && r.Lo < 1.1 && r.Hi > 1.1 && r.Est > 1.08 && r.Est < 1.12) {
		t.Errorf("10%% apart: %+v", r)
	}
	if r := RatioOf(a, a, 0.95); !(r.Lo < 1 && r.Hi > 1 && r.Est == 1) {
		t.Errorf("the same: %+v", r)
	}
	if r := RatioOf(a[:3], b[:3], 0.95); !math.IsNaN(r.Lo) || math.IsNaN(r.Est) {
		t.Errorf("3 and 3: %+v", r)
	}
	// Exact critical values of U (two-sided 5%: 2 for 5 and 5, 23 for
	// 10 and 10, from the published tables) and the normal beyond 50.
	for _, c := range [][3]int{{5, 5, 2}, {10, 10, 23}, {4, 4, 0}, {3, 3, -1}} {
		if got := uCritical(c[0], c[1], 0.025); got != c[2] {
			t.Errorf("U critical for %d and %d: %d, want %d", c[0], c[1], got, c[2])
		}
	}
	if got := uCritical(60, 60, 0.025); got < 1400 || got > 1450 { // 1800 - 1.96 x 190.5
		t.Errorf("U critical for 60 and 60: %d", got)
	}
}
