package quality

import (
	"fmt"
	"math"
)

// Check refuses figures no evaluation gives (a hand-edited, corrupt or
// hostile file), before a baseline or a trade-off computes with them:
// each in its range (a divergence is never negative, a share within
// 0-100%, a perplexity at least 1, no percentile past the maximum),
// every one finite, and the spreads within what the figures allow (the
// standard error of a mean of non-negative values is at most the mean;
// of a share, 50 points).
func (f Figures) Check() error {
	k := f.KLD
	// A percentile or a perplexity may be absent (0: a block that did not
	// keep it); one given is in its order.
	top, pplLo := math.MaxFloat64, 0.0
	if k.Max > 0 {
		top = k.Max
	}
	if f.PPL > 0 || f.BasePPL > 0 {
		pplLo = 1
	}
	for _, c := range []struct {
		name      string
		v, lo, hi float64
	}{
		{"tokens", float64(f.Tokens), 1, math.MaxInt32}, // an evaluation scores a token at least
		{"kld.mean", k.Mean, 0, top},
		{"kld.stderr", k.Stderr, 0, k.Mean * (1 + 1e-9)},
		{"kld.median", k.Median, 0, top},
		{"kld.p90", k.P90, 0, top},
		{"kld.p99", k.P99, 0, top},
		{"kld.p99_9", k.P999, 0, top},
		{"kld.max", k.Max, 0, math.MaxFloat64},
		{"top1_pct", f.Top1Pct, 0, 100},
		{"top1_stderr", f.Top1Stderr, 0, 50},
		{"rms_dp_pct", f.RMSDPPct, 0, 100},
		{"ppl", f.PPL, pplLo, math.MaxFloat64},
		{"base_ppl", f.BasePPL, pplLo, math.MaxFloat64},
		{"ln_ppl_ratio", f.LnPPLRatio, -math.MaxFloat64, math.MaxFloat64},
		{"ln_ppl_ratio_stderr", f.LnPPLStderr, 0, math.MaxFloat64},
		{"base_tail_mass", f.TailMass, 0, 1},
	} {
		if !(c.v >= c.lo && c.v <= c.hi) { // NaN fails both; an infinity is past MaxFloat64
			return fmt.Errorf("%s %g: not a figure an evaluation gives (outside %g to %g; edited or corrupt?)", c.name, c.v, c.lo, c.hi)
		}
	}
	return nil
}
