package stats

import (
	"math"
	"math/rand/v2"
	"runtime"
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

// The test is symmetric and a probability, ties or not: the cases a user
// found (4x100 against 5x90: 0.079 one way, 0.016 the other; 5 against
// 1,1,1: p 1.5), and random small samples against the enumeration.
func TestMannWhitneySymmetric(t *testing.T) {
	cases := [][2][]float64{
		{{100, 100, 100, 100}, {90, 90, 90, 90, 90}},
		{{5}, {1, 1, 1}},
		{{1, 1, 1}, {1, 1}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		m, n := 1+rng.IntN(7), 1+rng.IntN(7)
		var c [2][]float64
		for i := range m + n {
			v := float64(rng.IntN(4)) // many ties
			if i < m {
				c[0] = append(c[0], v)
			} else {
				c[1] = append(c[1], v)
			}
		}
		cases = append(cases, c)
	}
	for _, c := range cases {
		p1, _ := MannWhitney(c[0], c[1], 0.05)
		p2, _ := MannWhitney(c[1], c[0], 0.05)
		want := exactP(c[0], c[1])
		if math.Abs(p1-p2) > 1e-12 || p1 > 1 || math.Abs(p1-want) > 1e-9 {
			t.Errorf("%v vs %v: p %v one way, %v the other, exact %v", c[0], c[1], p1, p2, want)
		}
	}
	if p, _ := MannWhitney([]float64{100, 100, 100, 100}, []float64{90, 90, 90, 90, 90}, 0.05); math.Abs(p-2.0/126) > 1e-9 {
		t.Errorf("4x100 against 5x90: p %v, want 2/126", p)
	}
	// Large samples (the normal approximation) are symmetric too.
	a, b := make([]float64, 300), make([]float64, 200)
	for i := range a {
		a[i] = float64(rng.IntN(5))
	}
	for i := range b {
		b[i] = float64(rng.IntN(5)) + 0.5
	}
	p1, _ := MannWhitney(a, b, 0.05)
	p2, _ := MannWhitney(b, a, 0.05)
	if p1 != p2 || p1 > 1 || p1 < 0 {
		t.Errorf("large: %v and %v", p1, p2)
	}
}

// The ratio's estimate and interval are the ones from every pairwise
// ratio, found without making them: equal to the brute force on random
// samples, and in memory linear in the samples (20,000 a side, which as
// pairs would be 3.2 GB, in a few hundred KB).
func TestRatioOfLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		m, n := 1+rng.IntN(30), 1+rng.IntN(30)
		xs, ys := make([]float64, m), make([]float64, n)
		for i := range xs {
			xs[i] = 90 + float64(rng.IntN(20))
		}
		for i := range ys {
			ys[i] = 90 + float64(rng.IntN(20))
		}
		var all []float64
		for _, x := range xs {
			for _, y := range ys {
				all = append(all, y/x)
			}
		}
		sort.Float64s(all)
		want := Ratio{Est: Median(all), Lo: math.NaN(), Hi: math.NaN()}
		if k := uCritical(m, n, 0.025); k >= 0 {
			want.Lo, want.Hi = all[k], all[len(all)-1-k]
		}
		got := RatioOf(xs, ys, 0.95)
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		if !same(got.Est, want.Est) || !same(got.Lo, want.Lo) || !same(got.Hi, want.Hi) {
			t.Fatalf("%v vs %v: %+v, brute force %+v", xs, ys, got, want)
		}
	}
	xs, ys := make([]float64, 20000), make([]float64, 20000)
	for i := range xs {
		xs[i], ys[i] = 100+rng.Float64(), 95+rng.Float64()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := RatioOf(xs, ys, 0.95)
	p, _ := MannWhitney(xs, ys, 0.05)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 10<<20 {
		t.Errorf("20,000 a side allocated %d MB", alloc>>20)
	}
	if !(r.Est > 0.94 && r.Est < 0.96 && r.Lo < r.Est && r.Hi > r.Est && p < 1e-6) {
		t.Errorf("20,000 a side: %+v, p %v", r, p)
	}
	if r := RatioOf([]float64{0, 1}, []float64{1}, 0.95); !math.IsNaN(r.Est) {
		t.Errorf("a zero rate: %+v", r)
	}
}
