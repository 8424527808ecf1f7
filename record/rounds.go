package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/stats"
)

// SetRates sets a test's figures from its repetitions' durations
// (nanoseconds), each of tokens tokens over parallel sequences:
// llama-bench's mean and stddev of both, and our median, extremes, 95% CI
// and CV of the rate.
func (r *Result) SetRates(ns []float64, tokens, parallel int) {
	r.SamplesNs, r.SamplesTs = make([]uint64, len(ns)), make([]float64, len(ns))
	for i, v := range ns {
		r.SamplesNs[i] = uint64(v)
		r.SamplesTs[i] = float64(tokens) * 1e9 / v
	}
	tn, tt := stats.Summarize(ns), stats.Summarize(r.SamplesTs)
	r.AvgNs, r.StddevNs = uint64(tn.Mean), uint64(tn.Stddev)
	r.AvgTs, r.StddevTs = tt.Mean, tt.Stddev
	r.MedianTs, r.MinTs, r.MaxTs, r.CI95RepsTs, r.CV = tt.Median, tt.Min, tt.Max, tt.CI95, tt.CV
	r.AvgTsPerSeq = tt.Mean / float64(max(parallel, 1))
	r.CoverReruns(r.ProcessCV, r.CIBasis)
}

// MaxCV is the spread of a test's repetitions (stddev over mean) above
// which its mean is flagged as unsteady, however few they are.
const MaxCV = 0.05

// Unsteady says, when the repetitions spread more than MaxCV, how much
// and what to do; "" otherwise.
func (r *Result) Unsteady() string {
	if r.CV <= MaxCV || len(r.SamplesTs) < 2 {
		return ""
	}
	return fmt.Sprintf("its %d repetitions vary by %.0f%% (CV): the mean is unsteady; raise -r (or -r auto), stop other work on the machine, or repeat it (sweep --rounds)",
		len(r.SamplesTs), 100*r.CV)
}

// CoverReruns sets the interval a rerun's mean falls in from the
// repetitions' interval and the spread between processes (cv, a
// fraction of the mean): both this run's mean and the rerun's carry
// both, hence the square root of 2.
func (r *Result) CoverReruns(cv float64, basis string) {
	r.ProcessCV, r.CIBasis = cv, basis
	between := 1.96 * cv * r.AvgTs
	r.CI95Ts = math.Sqrt2 * math.Hypot(r.CI95RepsTs, between)
}

// MergeRounds merges the records of one point's rounds (in round order)
// into one: every round's samples, which round each came from, the
// figures over all of them, and the noise of every round. The per-step
// figures (ITL, drift) and telemetry stay in the round records.
func MergeRounds(rounds []Record) Record {
	m := rounds[0]
	m.Round, m.Rounds, m.Phases, m.Telemetry, m.ITL, m.DriftPct, m.Roofline = 0, len(rounds), nil, nil, nil, nil, nil
	m.EnergyJ, m.TokensPerJ = nil, nil
	var ns []float64
	m.SamplesRound = nil
	var noise []string
	var worst host.Noise
	for _, r := range rounds {
		for _, v := range r.SamplesNs {
			ns = append(ns, float64(v))
			m.SamplesRound = append(m.SamplesRound, r.Round)
		}
		m.Throttled = m.Throttled || r.Throttled
		if r.Noise != nil {
			worst.OtherCPUPct = max(worst.OtherCPUPct, r.Noise.OtherCPUPct)
			worst.StealPct = max(worst.StealPct, r.Noise.StealPct)
			worst.ThrottleEvents += r.Noise.ThrottleEvents
			for _, w := range r.Noise.Warnings {
				noise = append(noise, fmt.Sprintf("round %d: %s", r.Round, w))
			}
		}
	}
	samplesRound := m.SamplesRound
	m.SetRates(ns, max(m.NParallel, 1)*max(m.NPrompt, m.NGen), m.NParallel)
	m.SamplesRound, m.Reps = samplesRound, len(ns)
	if m.IsPrompt() {
		m.TTFT = stats.Latencies(ns)
	}
	if m.CITargetMet != nil {
		met := m.CI95RepsTs <= m.CITarget*m.AvgTs
		m.CITargetMet = &met
	}
	if m.Noise != nil {
		// The worst round's CPU figures, every round's throttling and
		// warnings: a merged record is only as quiet as its noisiest round.
		n := *m.Noise
		n.OtherCPUPct, n.StealPct, n.ThrottleEvents = worst.OtherCPUPct, worst.StealPct, worst.ThrottleEvents
		if w := m.Unsteady(); w != "" {
			noise = append(noise, w)
		}
		n.Warnings, n.Quiet, n.Outliers = noise, len(noise) == 0, nil
		m.Noise = &n
	}
	return m
}

// Final keeps what a results file finally says of each point: the merged
// record of an interleaved sweep's point in place of its rounds (rounds of
// a point not merged yet, as an interrupted sweep leaves, stay). recs
// itself when there is nothing to drop, else a new slice.
func Final(recs []Record) []Record {
	merged := map[string]bool{}
	for _, r := range recs {
		if r.Rounds > 0 && r.Round == 0 {
			merged[r.Key.String()] = true
		}
	}
	if len(merged) == 0 {
		return recs
	}
	return slices.DeleteFunc(slices.Clone(recs), func(r Record) bool { return r.Round > 0 && merged[r.Key.String()] })
}

// MergedPoints are the points (Key.String) an interleaved sweep merged in
// the results file at path: what Final drops the rounds of, found without
// keeping the records (and, in JSONL, without reading more of each line
// than its round and key). A line that does not read is left to the
// reading that follows.
func MergedPoints(path string) (map[string]bool, error) {
	merged := map[string]bool{}
	kind, err := sniff(path)
	if err != nil {
		return nil, err
	}
	if kind != kindLines {
		_, _, err := Each(path, func(r *Record) error {
			if r.Rounds > 0 && r.Round == 0 {
				merged[r.Key.String()] = true
			}
			return nil
		})
		return merged, err
	}
	_, _, err = Lines(path, "a JSON record", func(_ int, line []byte) error {
		if !mayHoldRounds(line) {
			return nil // most lines: decoding each to find no round cost a tenth of a fleet's --sqlite
		}
		var r struct {
			Key           json.RawMessage
			Round, Rounds int
		}
		var k point.Key
		if json.Unmarshal(line, &r) == nil && r.Rounds > 0 && r.Round == 0 && json.Unmarshal(r.Key, &k) == nil {
			merged[k.String()] = true
		}
		return nil
	})
	return merged, err
}

// mayHoldRounds says whether a JSON line may hold a "rounds" key, as
// encoding/json matches it (any case, the long s that folds to s, or
// written with escapes): a line that cannot is no merged record. Only
// where an s and a quote end a key is the rest compared: a search for
// each quote was a tenth of a fleet's baseline create.
func mayHoldRounds(line []byte) bool {
	if bytes.Contains(line, []byte(`\u`)) {
		return true
	}
	const head = `"round`
	for _, end := range []string{`s"`, `S"`, `ſ"`} {
		for i := 0; ; {
			j := bytes.Index(line[i:], []byte(end))
			if j < 0 {
				break
			}
			i += j
			if i >= len(head) && bytes.EqualFold(line[i-len(head):i], []byte(head)) {
				return true
			}
			i++
		}
	}
	return false
}

// eachFinalWith is eachWith of the records Final keeps: an interleaved
// sweep's rounds of a point it merged are left out (MergedPoints finds
// those points first), and no file is held whole.
func eachFinalWith[T any](path string, prep func(r *Record, own []byte) T, each func(*Record, T) error) (intact int64, torn bool, err error) {
	merged, err := MergedPoints(path)
	if err != nil {
		return 0, false, err
	}
	return eachWith(path, prep, func(r *Record, v T) error {
		// A key's text is made only where a round may have been merged.
		if r.Round > 0 && len(merged) > 0 && merged[r.Key.String()] {
			return nil
		}
		return each(r, v)
	})
}

// EachFinal is Each of the records Final keeps (eachFinalWith).
func EachFinal(path string, each func(*Record) error) (intact int64, torn bool, err error) {
	return eachFinalWith(path, func(*Record, []byte) struct{} { return struct{}{} }, ignoring(each))
}
