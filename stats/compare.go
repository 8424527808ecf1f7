package stats

import (
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// MannWhitney is the two-sided Mann–Whitney U test of whether xs and ys
// come from the same distribution, as benchstat runs it (benchmath's
// AssumeNothing): the p-value, exact for small samples (ties included)
// and from the normal approximation for large ones. It makes no
// assumption of normality, which benchmark timings rarely meet. warning
// says when the samples are too few for any difference to reach alpha.
func MannWhitney(xs, ys []float64, alpha float64) (p float64, warning string) {
	if len(xs) == 0 || len(ys) == 0 {
		return 1, "no samples"
	}
	th := benchmath.DefaultThresholds
	th.CompareAlpha = alpha
	c := benchmath.AssumeNothing.Compare(benchmath.NewSample(slices.Clone(xs), &th), benchmath.NewSample(slices.Clone(ys), &th))
	if len(c.Warnings) > 0 {
		warning = c.Warnings[0].Error()
	}
	return c.P, warning
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
// must be positive (rates).
func RatioOf(xs, ys []float64, level float64) Ratio {
	if len(xs) == 0 || len(ys) == 0 {
		return Ratio{math.NaN(), math.NaN(), math.NaN()}
	}
	r := make([]float64, 0, len(xs)*len(ys))
	for _, x := range xs {
		for _, y := range ys {
			r = append(r, y/x)
		}
	}
	slices.Sort(r)
	out := Ratio{Est: Median(r), Lo: math.NaN(), Hi: math.NaN()}
	if k := uCritical(len(xs), len(ys), (1-level)/2); k >= 0 {
		out.Lo, out.Hi = r[k], r[len(r)-1-k]
	}
	return out
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
