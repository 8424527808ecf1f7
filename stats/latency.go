package stats

import (
	"slices"

	"github.com/montanaflynn/stats"
)

// Latency holds latency figures in milliseconds.
type Latency struct {
	Mean   float64 `json:"mean"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
	Jitter float64 `json:"jitter"` // stddev
}

// Latencies summarizes durations given in nanoseconds (nil for none).
func Latencies(ns []float64) *Latency {
	if len(ns) == 0 {
		return nil
	}
	ms := make([]float64, len(ns))
	for i, v := range ns {
		ms[i] = v / 1e6
	}
	slices.Sort(ms)
	d := stats.Float64Data(ms)
	var l Latency
	l.Mean, _ = d.Mean()
	l.P50, l.P90, l.P99, l.Max = rank(ms, 50), rank(ms, 90), rank(ms, 99), ms[len(ms)-1]
	if len(ms) > 1 {
		l.Jitter, _ = d.StandardDeviationSample()
	}
	return &l
}

// Percentiles of one metric, nearest-rank (all 0 when N is).
type Percentiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// PercentilesOf computes the Percentiles of xs.
func PercentilesOf(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Percentiles{len(s), rank(s, 50), rank(s, 90), rank(s, 95), rank(s, 99), s[len(s)-1]}
}
