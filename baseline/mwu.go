package baseline

import (
	"math"
	"sort"
)

// MannWhitney is the two-sided Mann–Whitney U test of whether xs and ys
// come from the same distribution: the p-value, exact (by counting rank
// sums) for small samples without ties, else from the normal
// approximation with tie and continuity corrections. It makes no
// assumption of normality, which benchmark timings rarely meet; benchstat
// uses the same test.
func MannWhitney(xs, ys []float64) float64 {
	n1, n2 := len(xs), len(ys)
	if n1 == 0 || n2 == 0 {
		return 1
	}
	type obs struct {
		v float64
		x bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range xs {
		all = append(all, obs{v, true})
	}
	for _, v := range ys {
		all = append(all, obs{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	// Midranks; ties add to the variance correction.
	var r1, tieTerm float64
	ties := false
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // ranks i+1..j
		for k := i; k < j; k++ {
			if all[k].x {
				r1 += rank
			}
		}
		if t := float64(j - i); t > 1 {
			ties = true
			tieTerm += t*t*t - t
		}
		i = j
	}
	u1 := r1 - float64(n1*(n1+1))/2
	u := math.Min(u1, float64(n1*n2)-u1)
	if !ties && n1*n2 <= 400 {
		return math.Min(1, 2*exactCDF(n1, n2, u))
	}
	n := float64(n1 + n2)
	mean := float64(n1*n2) / 2
	sd := math.Sqrt(float64(n1*n2) / 12 * ((n + 1) - tieTerm/(n*(n-1))))
	if sd == 0 {
		return 1
	}
	z := (mean - u - 0.5) / sd
	if z < 0 {
		z = 0
	}
	return math.Min(1, math.Erfc(z/math.Sqrt2))
}

// exactCDF is P(U <= u) for samples of n1 and n2 without ties: the number
// of ways to split ranks so that U is at most u, over all splits.
func exactCDF(n1, n2 int, u float64) float64 {
	// count[i][j][k]: arrangements of i x's and j y's with U = k (x's
	// counted as beating the y's placed before them).
	maxU := n1 * n2
	prev := make([][]float64, n2+1)
	for j := range prev {
		prev[j] = make([]float64, maxU+1)
		prev[j][0] = 1 // no x's: U = 0
	}
	for i := 1; i <= n1; i++ {
		cur := make([][]float64, n2+1)
		for j := 0; j <= n2; j++ {
			cur[j] = make([]float64, maxU+1)
			for k := 0; k <= maxU; k++ {
				// the last element is an x (beating all j y's) or a y.
				if k >= j {
					cur[j][k] += prev[j][k-j]
				}
				if j > 0 {
					cur[j][k] += cur[j-1][k]
				}
			}
		}
		prev = cur
	}
	var below, total float64
	for k, c := range prev[n2] {
		total += c
		if float64(k) <= u {
			below += c
		}
	}
	return below / total
}
