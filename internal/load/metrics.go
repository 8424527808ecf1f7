package load

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tokbench/tokbench/stats"
)

// metric is what an SLO bounds.
type metric string

// SLO metrics.
const (
	TTFT metric = "ttft" // time to first token
	ITL  metric = "itl"  // inter-token latency
	e2e  metric = "e2e"  // the whole request
)

// Decode says whether the metric is set by the decode steps (each step
// reads the weights and every sequence's KV cache) rather than by prefill
// and queueing.
func (m metric) Decode() bool { return m == ITL || m == e2e }

// SLO is one service-level objective: metric (ttft, itl, e2e) at a
// percentile (over the run; a request meets it when its own value is
// within the limit) below a limit.
type SLO struct {
	Metric     metric
	Percentile float64
	Limit      time.Duration
}

// ParseSLOs reads "ttft_p99=2s,itl_p99=60ms" (a bare name means p99).
func ParseSLOs(s string) ([]SLO, error) {
	var out []SLO
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("SLO %q: write metric_pNN=duration, e.g. ttft_p99=2s", part)
		}
		name, p, _ := strings.Cut(k, "_p")
		slo := SLO{Metric: metric(name), Percentile: 99}
		if p != "" {
			if _, err := fmt.Sscan(p, &slo.Percentile); err != nil || slo.Percentile <= 0 || slo.Percentile > 100 {
				return nil, fmt.Errorf("SLO %q: percentile %q", part, p)
			}
		}
		if m := metric(name); m != TTFT && m != ITL && m != e2e {
			return nil, fmt.Errorf("SLO %q: metric %q: use ttft, itl or e2e", part, name)
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("SLO %q: %q is not a positive duration", part, v)
		}
		slo.Limit = d
		out = append(out, slo)
	}
	return out, nil
}

func (s SLO) String() string { return fmt.Sprintf("%s_p%g<=%s", s.Metric, s.Percentile, s.Limit) }

// value is a request's own figure for the SLO's metric.
func (s SLO) value(o *Served) float64 {
	switch s.Metric {
	case TTFT:
		return o.TTFTMs
	case ITL:
		return stats.Percentile(o.ITLMs, s.Percentile)
	}
	return o.E2EMs
}

// Figures are a run's figures: requests, throughput, latency percentiles,
// goodput against the SLOs, the scheduler's overhead.
type Figures struct {
	Requests     int               `json:"requests"`
	Completed    int               `json:"completed"`
	Rejected     int               `json:"rejected"`
	Seconds      float64           `json:"seconds"`
	RequestsPerS float64           `json:"requests_per_s"`
	OutputTps    float64           `json:"output_ts"` // aggregate generated tokens per second
	QueueMs      stats.Percentiles `json:"queue_ms"`
	TTFTMs       stats.Percentiles `json:"ttft_ms"`
	ITLMs        stats.Percentiles `json:"itl_ms"`
	E2EMs        stats.Percentiles `json:"e2e_ms"`
	PerUserTs    stats.Percentiles `json:"per_user_ts"`
	Goodput      float64           `json:"goodput_per_s"` // requests meeting every SLO, per second
	GoodFraction float64           `json:"good_fraction"`
	SLOsMet      map[string]bool   `json:"slos_met,omitempty"` // each SLO over the run
	SchedulerPct float64           `json:"scheduler_overhead_pct"`
	// Multi-turn: prompt tokens that resend the conversation, their share
	// of all prompt tokens, and the share of them the server did not
	// prefill again (kept KV cells).
	PrefixTokens int     `json:"prefix_tokens,omitempty"`
	PrefixShare  float64 `json:"prefix_share,omitempty"`
	PrefixReused float64 `json:"prefix_reused,omitempty"`
}

// tally computes a run's figures against its SLOs.
func tally(outs []*Served, seconds, schedulerPct float64, slos []SLO) Figures {
	s := Figures{Requests: len(outs), Seconds: seconds, SchedulerPct: schedulerPct, SLOsMet: map[string]bool{}}
	var queue, ttft, itl, e2e, user []float64
	tokens, good, prompt, reused := 0, 0, 0, 0
	for _, o := range outs {
		switch o.Status {
		case statusRejected:
			s.Rejected++
			continue
		case StatusOK:
		default:
			continue
		}
		s.Completed++
		tokens += o.Output
		prompt, reused, s.PrefixTokens = prompt+o.Prompt, reused+o.Reused, s.PrefixTokens+o.Prefix
		queue, ttft, e2e = append(queue, o.QueueMs), append(ttft, o.TTFTMs), append(e2e, o.E2EMs)
		itl = append(itl, o.ITLMs...)
		user = append(user, o.OutputTs)
		ok := true
		for _, slo := range slos {
			if v := slo.value(o); !math.IsNaN(v) && v > float64(slo.Limit.Microseconds())/1000 {
				ok = false
			}
		}
		if ok {
			good++
		}
	}
	s.QueueMs, s.TTFTMs, s.ITLMs, s.E2EMs, s.PerUserTs = stats.PercentilesOf(queue), stats.PercentilesOf(ttft), stats.PercentilesOf(itl), stats.PercentilesOf(e2e), stats.PercentilesOf(user)
	if seconds > 0 {
		s.RequestsPerS = float64(s.Completed) / seconds
		s.OutputTps = float64(tokens) / seconds
		s.Goodput = float64(good) / seconds
	}
	if s.PrefixTokens > 0 {
		s.PrefixShare = float64(s.PrefixTokens) / float64(prompt)
		s.PrefixReused = float64(reused) / float64(s.PrefixTokens)
	}
	if s.Completed > 0 {
		s.GoodFraction = float64(good) / float64(s.Completed)
	}
	for _, slo := range slos {
		var xs []float64
		switch slo.Metric {
		case TTFT:
			xs = ttft
		case ITL:
			xs = itl
		default:
			xs = e2e
		}
		s.SLOsMet[slo.String()] = len(xs) > 0 && stats.Percentile(xs, slo.Percentile) <= float64(slo.Limit.Microseconds())/1000
	}
	return s
}
