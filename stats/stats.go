// Package stats holds the statistics every figure of tokbench is made
// with, in one place: summaries of repeated measurements (mean, sample
// stddev, median, extremes, Student's t confidence interval, CV),
// nearest-rank percentiles (a reported latency was really observed),
// robust location and spread (median, MAD), and the comparison of two
// sets of samples (Mann–Whitney, the ratio's interval) that baselines and
// compare both judge with.
package stats

import (
	"math"
	"slices"

	"github.com/montanaflynn/stats"
)

// Summary describes repeated measurements of a rate.
type Summary struct {
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	CI95   float64 `json:"ci95"` // half-width of the 95% confidence interval of the mean
	CV     float64 `json:"cv"`   // stddev / mean
}

// Summarize computes a Summary; the stddev is the sample (n-1) one.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	d := stats.Float64Data(xs)
	var s Summary
	s.Mean, _ = d.Mean()
	s.Median, _ = d.Median()
	s.Min, _ = d.Min()
	s.Max, _ = d.Max()
	if len(xs) > 1 {
		s.Stddev, _ = d.StandardDeviationSample()
		s.CI95 = tQuantile975(len(xs)-1) * s.Stddev / math.Sqrt(float64(len(xs)))
	}
	if s.Mean != 0 {
		s.CV = s.Stddev / s.Mean
	}
	return s
}

// t975 are Student's t 0.975 quantiles for 1..30 degrees of freedom.
var t975 = [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// tQuantile975 is Student's t 0.975 quantile for df degrees of freedom
// (NaN for none): the factor of a two-sided 95% interval.
func tQuantile975(df int) float64 {
	switch {
	case df <= 0:
		return math.NaN()
	case df <= len(t975):
		return t975[df-1]
	case df <= 60:
		return 2.000
	case df <= 120:
		return 1.980
	}
	return 1.960
}

// Percentile is the nearest-rank p-th percentile of xs (0 < p <= 100),
// NaN if xs is empty: the smallest value with at least p% of the values
// at or below it, a value that was really observed.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return rank(s, p)
}

func rank(sorted []float64, p float64) float64 {
	// The tolerance keeps a rank that is whole in decimal (99.9% of 1000)
	// from rounding up past itself in binary.
	i := int(math.Ceil(p/100*float64(len(sorted))-1e-9)) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Median is the middle value of xs (the mean of the two middle ones for
// an even count), 0 if xs is empty.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m, _ := stats.Median(xs)
	return m
}

// MAD is the median absolute deviation of xs from their median, scaled by
// 1.4826 so that it estimates a normal distribution's sigma.
func MAD(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	mad, _ := stats.MedianAbsoluteDeviationPopulation(xs)
	return 1.4826 * mad
}
