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

// Ratio is how much larger ys are than xs, as a factor: the
// Hodges–Lehmann estimate (the median of all ratios y/x) and the
// distribution-free confidence interval that goes with the Mann–Whitney
// test (the k-th smallest and largest of those ratios, k from U's exact
// distribution): the interval leaves out 1 when the test finds a
// difference at 1-level. Lo and Hi are NaN when the samples are too few
// for the level (5 and 5 are needed at 95%).
type Ratio struct {
	Est, Lo, Hi float64
}

// RatioOf is ys against xs at the confidence level (0.95); the samples
// must be positive (rates): any other gives NaN. The ratios are never
// all made: each one needed is selected among them in memory linear in
// the samples (a search over the ratios' values, counting the pairs
// below a value in one pass over both sorted samples).
func RatioOf(xs, ys []float64, level float64) Ratio {
	nan := Ratio{math.NaN(), math.NaN(), math.NaN()}
	if len(xs) == 0 || len(ys) == 0 {
		return nan
	}
	xs, ys = slices.Sorted(slices.Values(xs)), slices.Sorted(slices.Values(ys))
	if !(xs[0] > 0 && ys[0] > 0) || math.IsInf(xs[len(xs)-1], 0) || math.IsInf(ys[len(ys)-1], 0) {
		return nan
	}
	total := len(xs) * len(ys)
	out := Ratio{Est: kthRatio(xs, ys, total/2), Lo: math.NaN(), Hi: math.NaN()}
	if total%2 == 0 {
		out.Est = (out.Est + kthRatio(xs, ys, total/2-1)) / 2
	}
	if k := uCritical(len(xs), len(ys), (1-level)/2); k >= 0 {
		out.Lo, out.Hi = kthRatio(xs, ys, k), kthRatio(xs, ys, total-1-k)
	}
	return out
}

// kthRatio is the k-th smallest (from 0) of the ratios y/x of the sorted
// positive samples: the smallest value, searched over the ordered bits
// of positive floats, that has more than k ratios at or below it. Exact,
// in 64 passes of len(xs)+len(ys) steps.
func kthRatio(xs, ys []float64, k int) float64 {
	atOrBelow := func(t float64) int {
		// x ascending makes y/x descending: the count of ys at or
		// below t*x only grows with i.
		c, j := 0, 0
		for _, x := range xs {
			for j < len(ys) && ys[j]/x <= t {
				j++
			}
			c += j
		}
		return c
	}
	lo, hi := uint64(0), math.Float64bits(ys[len(ys)-1]/xs[0])
	for lo < hi {
		mid := lo + (hi-lo)/2
		if atOrBelow(math.Float64frombits(mid)) > k {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return math.Float64frombits(lo)
}

// uCritical is the largest u with P(U <= u) <= tail under the null for
// samples of m and n (exact up to 50 each, the normal approximation
// beyond), -1 if even U = 0 is likelier than tail.
func uCritical(m, n int, tail float64) int {
	if m > 50 || n > 50 {
		mn := float64(m * n)
		z := -normalQuantile(tail)
		return int(math.Floor(mn/2 - z*math.Sqrt(mn*float64(m+n+1)/12) - 0.5))
	}
	// count[u] is the number of arrangements of m and n with U = u,
	// built up one sample at a time: f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u).
	f := make([][][]float64, m+1)
	for i := range f {
		f[i] = make([][]float64, n+1)
		for j := range f[i] {
			f[i][j] = make([]float64, i*j+1)
			switch {
			case i == 0 || j == 0:
				f[i][j][0] = 1
			default:
				for u := range f[i][j] {
					if u-j >= 0 && u-j < len(f[i-1][j]) {
						f[i][j][u] += f[i-1][j][u-j]
					}
					if u < len(f[i][j-1]) {
						f[i][j][u] += f[i][j-1][u]
					}
				}
			}
		}
	}
	total, cum := 0.0, 0.0
	for _, c := range f[m][n] {
		total += c
	}
	for u, c := range f[m][n] {
		if cum += c; cum/total > tail {
			return u - 1
		}
	}
	return -1
}

// normalQuantile is the standard normal's quantile of p (0 < p < 1).
func normalQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }
