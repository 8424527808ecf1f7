package roofline

import "math"

// UniformExperts is how many distinct experts of n a step of tokens
// tokens reads in one layer when each token picks k of them at random,
// evenly and independently of the others: an expert is missed by one
// token with probability 1 - k/n, so E = n(1 - (1 - k/n)^tokens).
func UniformExperts(n, k, tokens float64) float64 {
	if n <= 0 || k <= 0 {
		return 0
	}
	return n * (1 - math.Pow(1-min(k, n)/n, max(tokens, 1)))
}
