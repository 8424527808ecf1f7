package quality

import (
	"math"
	"strings"
	"testing"
)

// Figures an evaluation gives pass; each claim no evaluation makes is
// refused, naming its figure.
func TestCheck(t *testing.T) {
	good := Figures{Tokens: 512, KLD: KLD{Mean: 0.02, Stderr: 0.001, Median: 0.01, P90: 0.05, P99: 0.2, P999: 0.5, Max: 0.9},
		Top1Pct: 95, Top1Stderr: 1, RMSDPPct: 3, PPL: 12, BasePPL: 11.5, LnPPLRatio: 0.04, LnPPLStderr: 0.01, TailMass: 0.01}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	if err := (Figures{Tokens: 10, KLD: KLD{Mean: 0.5}}).Check(); err != nil {
		t.Errorf("a block without percentiles or perplexity: %v", err)
	}
	for name, edit := range map[string]func(*Figures){
		"kld.stderr":          func(f *Figures) { f.KLD.Stderr = 1e300 },
		"kld.mean":            func(f *Figures) { f.KLD.Mean = -5 },
		"top1_pct":            func(f *Figures) { f.Top1Pct = 250 },
		"kld.p99":             func(f *Figures) { f.KLD.P99 = 2 },
		"ppl":                 func(f *Figures) { f.PPL = 0.5 },
		"base_tail_mass":      func(f *Figures) { f.TailMass = math.NaN() },
		"ln_ppl_ratio":        func(f *Figures) { f.LnPPLRatio = math.Inf(-1) },
		"top1_stderr":         func(f *Figures) { f.Top1Stderr = 60 },
		"ln_ppl_ratio_stderr": func(f *Figures) { f.LnPPLStderr = math.Inf(1) },
		"tokens":              func(f *Figures) { f.Tokens = 0 },
	} {
		f := good
		edit(&f)
		if err := f.Check(); err == nil || !strings.HasPrefix(err.Error(), name+" ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
