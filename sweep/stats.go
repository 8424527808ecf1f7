package sweep

import (
	"math"

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

// Latency holds latency percentiles in milliseconds.
type Latency struct {
	Mean   float64 `json:"mean"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
	Jitter float64 `json:"jitter"` // stddev
}

// Latencies summarizes durations given in nanoseconds.
func Latencies(ns []float64) *Latency {
	if len(ns) == 0 {
		return nil
	}
	ms := make(stats.Float64Data, len(ns))
	for i, v := range ns {
		ms[i] = v / 1e6
	}
	var l Latency
	l.Mean, _ = ms.Mean()
	l.P50 = percentile(ms, 50)
	l.P90 = percentile(ms, 90)
	l.P99 = percentile(ms, 99)
	l.Max, _ = ms.Max()
	if len(ms) > 1 {
		l.Jitter, _ = ms.StandardDeviationSample()
	}
	return &l
}

// percentile uses the nearest-rank method: the value reported was really
// observed, as latency tooling expects.
func percentile(d stats.Float64Data, p float64) float64 {
	v, err := d.PercentileNearestRank(p)
	if err != nil {
		return math.NaN()
	}
	return v
}
