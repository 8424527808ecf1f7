// Package quality says what quantizing a model cost in its output: the
// divergence of each token's distribution from the base model's, the
// agreement of their most probable tokens, and perplexity, from the rows
// an evaluation scored. It holds the figures and their statistics, the
// token stream (text or a seeded random stream) cut into chunks, the
// compact cache of the base's distributions, and the Pareto front of
// speed against divergence. Evaluating (llama.cpp) is package measure's.
package quality

import (
	"math"
	"slices"

	"github.com/tokbench/tokbench/stats"
)

// Figures are one model's quality against its base over the same tokens.
type Figures struct {
	Tokens int `json:"tokens"` // scored tokens
	KLD    KLD `json:"kld"`
	// Top1Pct is how often the model's most probable token is the base's,
	// in percent, with its standard error.
	Top1Pct    float64 `json:"top1_pct"`
	Top1Stderr float64 `json:"top1_stderr"`
	// RMSDPPct is the root mean square of the change in the base's most
	// probable token's probability, in percentage points.
	RMSDPPct float64 `json:"rms_dp_pct"`
	// Perplexity of the model and of the base on the scored tokens, and
	// ln(PPL/PPL base) with the standard error of the paired difference.
	PPL         float64 `json:"ppl"`
	BasePPL     float64 `json:"base_ppl"`
	LnPPLRatio  float64 `json:"ln_ppl_ratio"`
	LnPPLStderr float64 `json:"ln_ppl_ratio_stderr"`
	// TailMass is the base's mean probability outside the top tokens the
	// cache kept; the KLD leaves out the divergence inside that tail (see
	// Cache), so a large tail makes it a lower bound.
	TailMass float64 `json:"base_tail_mass"`
}

// KLD summarizes the per-token KL divergences, in nats: the mean with its
// standard error, and nearest-rank percentiles.
type KLD struct {
	Mean   float64 `json:"mean"`
	Stderr float64 `json:"stderr"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p99_9"`
	Max    float64 `json:"max"`
}

// tailLimit is the base tail mass above which the KLD is flagged as a
// lower bound (about that share of the divergence can be missing).
const tailLimit = 0.01

// Bounded says whether the KLD may miss more than TailLimit of itself
// because the cache kept too few of the base's tokens.
func (f *Figures) Bounded() bool { return f.TailMass > tailLimit }

// Tally gathers the scored rows of an evaluation, chunk by chunk.
type Tally struct {
	kld, nll, nllBase, dDiff []float64
	top                      int
	dp2, tail                float64
}

// Add adds one row: its divergence, whether the top tokens agree, the
// change of the base top token's probability, the log-probabilities of
// the next token under the model and the base, and the base's tail mass.
func (t *Tally) Add(kld float64, same bool, dp, lp, lpBase, tail float64) {
	t.kld = append(t.kld, kld)
	t.nll = append(t.nll, -lp)
	t.nllBase = append(t.nllBase, -lpBase)
	t.dDiff = append(t.dDiff, lpBase-lp)
	if same {
		t.top++
	}
	t.dp2 += dp * dp
	t.tail += tail
}

// Len is the number of rows added.
func (t *Tally) Len() int { return len(t.kld) }

// Figures computes the figures of the rows added.
func (t *Tally) Figures() Figures {
	n := len(t.kld)
	if n == 0 {
		return Figures{}
	}
	fn := float64(n)
	k := stats.Summarize(t.kld)
	sorted := slices.Clone(t.kld)
	slices.Sort(sorted)
	p := float64(t.top) / fn
	d := stats.Summarize(t.dDiff)
	return Figures{
		Tokens: n,
		KLD: KLD{Mean: k.Mean, Stderr: k.Stddev / math.Sqrt(fn), Median: k.Median,
			P90: stats.Percentile(sorted, 90), P99: stats.Percentile(sorted, 99), P999: stats.Percentile(sorted, 99.9), Max: k.Max},
		Top1Pct:     100 * p,
		Top1Stderr:  100 * math.Sqrt(p*(1-p)/fn),
		RMSDPPct:    100 * math.Sqrt(t.dp2/fn),
		PPL:         math.Exp(stats.Summarize(t.nll).Mean),
		BasePPL:     math.Exp(stats.Summarize(t.nllBase).Mean),
		LnPPLRatio:  d.Mean,
		LnPPLStderr: d.Stddev / math.Sqrt(fn),
		TailMass:    t.tail / fn,
	}
}

// Regression says whether new's mean KLD is above old's by more than the
// two measurements' uncertainty (a two-sided 95% interval of the
// difference), and by how much.
func Regression(old, new Figures) (bool, float64) {
	d := new.KLD.Mean - old.KLD.Mean
	se := math.Hypot(old.KLD.Stderr, new.KLD.Stderr)
	return d > 1.96*se && d > 0, d
}

// Dominated marks the points of a speed (higher is better) against KLD
// (lower is better) trade-off that another point beats on one and at
// least matches on the other: off the Pareto front.
func Dominated(speed, kld []float64) []bool {
	out := make([]bool, len(speed))
	for i := range speed {
		for j := range speed {
			if j != i && speed[j] >= speed[i] && kld[j] <= kld[i] && (speed[j] > speed[i] || kld[j] < kld[i]) {
				out[i] = true
				break
			}
		}
	}
	return out
}
