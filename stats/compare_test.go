package stats

import (
	"math"
	"math/rand/v2"
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
