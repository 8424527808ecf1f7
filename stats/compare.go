package stats

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// MannWhitney is the two-sided Mann–Whitney U test of whether xs and ys
// come from the same distribution: the p-value, exact (ties included,
// with midranks) while the samples number 50 or fewer together, from
// the normal approximation with the tie correction beyond. It is
// symmetric in its arguments and never above 1, and makes no assumption
// of normality, which benchmark timings rarely meet. warning says when
// the samples are too few for any difference to reach alpha.
func MannWhitney(xs, ys []float64, alpha float64) (p float64, warning string) {
	m, n := len(xs), len(ys)
	if m == 0 || n == 0 {
		return 1, "no samples"
	}
	r2, ties := doubledRanks(xs, ys)
	s := 0 // the doubled rank sum of xs
	for _, r := range r2[:m] {
		s += r
	}
	if m+n <= exactMax {
		dist, lo := rankSumDist(r2, m)
		var below, above, total float64
		for i, c := range dist {
			total += c
			if lo+i <= s {
				below += c
			}
			if lo+i >= s {
				above += c
			}
		}
		p = math.Min(1, 2*math.Min(below, above)/total)
		first, last := dist[0], dist[len(dist)-1]
		if pmin := math.Min(1, 2*math.Min(first, last)/total); pmin > alpha {
			warning = fmt.Sprintf("%d and %d samples cannot reach p < %g whatever they hold: give more repetitions", m, n, alpha)
		}
		return p, warning
	}
	fm, fn, fN := float64(m), float64(n), float64(m+n)
	u := float64(s)/2 - fm*(fm+1)/2
	v := fm * fn / 12 * (fN + 1 - ties/(fN*(fN-1)))
	if v <= 0 {
		return 1, ""
	}
	z := (math.Abs(u-fm*fn/2) - 0.5) / math.Sqrt(v)
	return math.Min(1, math.Erfc(z/math.Sqrt2)), ""
}

// exactMax is the most samples, both sides together, whose p-value is
// counted exactly.
const exactMax = 50

// doubledRanks are the midranks of xs then ys in their pooled order,
// doubled so that they are whole numbers, and the ties' sum of t³-t.
func doubledRanks(xs, ys []float64) (r2 []int, ties float64) {
	all := append(slices.Clone(xs), ys...)
	idx := make([]int, len(all))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(all[a], all[b]) })
	r2 = make([]int, len(all))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && all[idx[j]] == all[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			r2[idx[k]] = i + j + 1 // (i+1 + j) is twice the midrank
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	return r2, ties
}

// rankSumDist is how many ways m of the doubled ranks r2 can be chosen
// for each sum, from the smallest sum (lo) up: the rank sum's exact
// distribution under the null, ties included.
func rankSumDist(r2 []int, m int) (dist []float64, lo int) {
	sorted := slices.Sorted(slices.Values(r2))
	hi := 0
	for i := range m {
		lo += sorted[i]
		hi += sorted[len(sorted)-1-i]
	}
	// dp[k][s]: the ways to choose k of the ranks seen so far with sum s.
	dp := make([][]float64, m+1)
	for k := range dp {
		dp[k] = make([]float64, hi+1)
	}
	dp[0][0] = 1
	for i, r := range r2 {
		for k := min(i+1, m); k >= 1; k-- {
			prev, cur := dp[k-1], dp[k]
			for s := hi; s >= r; s-- {
				cur[s] += prev[s-r]
			}
		}
	}
	return dp[m][lo : hi+1], lo
}

// Ratio is how much larger one set of rates is than another, as a
// factor, with the interval of a comparison (NaN where it has none).
type Ratio struct {
	Est, Lo, Hi float64
}

// normalQuantile is the standard normal's quantile of p (0 < p < 1).
func normalQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }
