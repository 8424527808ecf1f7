package baseline

import (
	"slices"

	"golang.org/x/perf/benchmath"
)

// mannWhitney is the two-sided Mann–Whitney U test of whether xs and ys
// come from the same distribution, as benchstat runs it (benchmath's
// AssumeNothing): the p-value, exact for small samples (ties included)
// and from the normal approximation for large ones. It makes no
// assumption of normality, which benchmark timings rarely meet. warning
// says when the samples are too few for any difference to reach alpha.
func mannWhitney(xs, ys []float64, alpha float64) (p float64, warning string) {
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
