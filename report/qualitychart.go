package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// qualityCharts are the trade-off's figures: the Pareto front of decode
// speed against mean KLD, and bits per weight against mean KLD. KLD is on
// a log axis, so the base (KLD 0) is a reference line, not a point.
func qualityCharts(ts []Tradeoff) []chart {
	var out []chart
	if c, ok := paretoChart(ts); ok {
		out = append(out, c)
	}
	if c, ok := bpwChart(ts); ok {
		out = append(out, c)
	}
	return out
}

// decades is a log axis covering [lo, hi] (positive): its ends and ticks
// as powers of ten, at least one decade wide.
func decades(lo, hi float64) (l0, l1 float64, ticks []float64) {
	l0, l1 = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if l1 <= l0 {
		l1 = l0 + 1
	}
	for v := l0; v <= l1; v++ {
		ticks = append(ticks, v)
	}
	return l0, l1, ticks
}

func pow10(v float64) string { return fmt.Sprintf("%.0e", math.Pow(10, v)) }

func tradeoffName(t *Tradeoff) string { return cmp.Or(t.Q.ModelFileType, t.Q.ModelID) }

func paretoChart(ts []Tradeoff) (chart, bool) {
	var pts []Tradeoff
	var base *Tradeoff
	lo, hi, top := math.Inf(1), 0.0, 0.0
	for i := range ts {
		t := &ts[i]
		if t.TG == nil {
			continue
		}
		if t.Q.Figures.KLD.Mean <= 0 {
			base = t
			top = math.Max(top, t.TG.AvgTs+t.TG.CI95Ts)
			continue
		}
		pts = append(pts, *t)
		k := t.Q.Figures.KLD
		lo, hi = math.Min(lo, math.Max(k.Mean-k.Stderr, k.Mean/2)), math.Max(hi, k.Mean+k.Stderr)
		top = math.Max(top, t.TG.AvgTs+t.TG.CI95Ts)
	}
	if len(pts) == 0 {
		return chart{}, false
	}
	l0, l1, ticks := decades(lo, hi)
	title := "Decode speed against quality: the Pareto front"
	svg := func(sa bool) string {
		// x is log10 KLD: the frame's y ticks are linear, so its axes are
		// drawn here with the x labels.
		f := newFrame(title, "mean KL divergence from the base (nats, log; lower is better)", "tg tokens/s", l0, l1, 0, top*1.1, sa)
		for _, v := range ticks {
			fmt.Fprintf(&f.b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, f.px(v), chartH-padB+14, pow10(v))
		}
		if base != nil {
			y := f.py(base.TG.AvgTs)
			fmt.Fprintf(&f.b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#555" stroke-dasharray="4 3"/><text x="%d" y="%.1f">base %s (KLD 0)</text>`,
				padL, chartW-padR, y, y, padL+4, y-4, esc(tradeoffName(base)))
		}
		// The front, from the most faithful to the fastest.
		front := slices.DeleteFunc(slices.Clone(pts), func(t Tradeoff) bool { return t.Dominated })
		slices.SortFunc(front, func(a, b Tradeoff) int { return cmp.Compare(a.Q.Figures.KLD.Mean, b.Q.Figures.KLD.Mean) })
		var line string
		for _, t := range front {
			line += fmt.Sprintf("%.1f,%.1f ", f.px(math.Log10(t.Q.Figures.KLD.Mean)), f.py(t.TG.AvgTs))
		}
		fmt.Fprintf(&f.b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, palette[0], line)
		for _, t := range pts {
			k := t.Q.Figures.KLD
			x, y := f.px(math.Log10(k.Mean)), f.py(t.TG.AvgTs)
			// Error bars: one standard error of the KLD, the 95% CI of the rate.
			x0, x1 := f.px(math.Log10(math.Max(k.Mean-k.Stderr, math.Pow(10, l0)))), f.px(math.Log10(k.Mean+k.Stderr))
			fmt.Fprintf(&f.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#777"/><line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#777"/>`,
				x0, x1, y, y, x, x, f.py(t.TG.AvgTs-t.TG.CI95Ts), f.py(t.TG.AvgTs+t.TG.CI95Ts))
			fill, what := palette[0], "on the front"
			if t.Dominated {
				fill, what = "white", "dominated"
			}
			fmt.Fprintf(&f.b, `<circle cx="%.1f" cy="%.1f" r="4.5" fill="%s" stroke="%s" stroke-width="1.5"><title>%s: KLD %.3g ± %.2g, %.2f t/s, %s</title></circle><text x="%.1f" y="%.1f">%s</text>`,
				x, y, fill, palette[0], esc(cmp.Or(t.Q.ModelID, t.Q.ModelFile)), k.Mean, k.Stderr, t.TG.AvgTs, what, x+6, y-6, esc(tradeoffName(&t)))
		}
		f.legend(0, "on the front (filled)")
		fmt.Fprintf(&f.b, `<circle cx="%d" cy="%d" r="4.5" fill="white" stroke="%s" stroke-width="1.5"/><text x="%d" y="%d">dominated (hollow)</text>`,
			chartW-padR+13, padT+19, palette[0], chartW-padR+22, padT+23)
		return f.end()
	}
	return chart{title, svg}, true
}

func bpwChart(ts []Tradeoff) (chart, bool) {
	var pts []Tradeoff
	lo, hi, b0, b1 := math.Inf(1), 0.0, math.Inf(1), 0.0
	for _, t := range ts {
		if t.Q.Figures.KLD.Mean <= 0 || t.Q.BitsPerWeight <= 0 {
			continue
		}
		pts = append(pts, t)
		lo, hi = math.Min(lo, t.Q.Figures.KLD.Mean), math.Max(hi, t.Q.Figures.KLD.Mean)
		b0, b1 = math.Min(b0, t.Q.BitsPerWeight), math.Max(b1, t.Q.BitsPerWeight)
	}
	if len(pts) == 0 {
		return chart{}, false
	}
	l0, l1, ticks := decades(lo, hi)
	b0, b1 = math.Floor(b0-0.5), math.Ceil(b1+0.5)
	title := "Quality against size: mean KLD by bits per weight"
	svg := func(sa bool) string {
		f := newFrameTicks(title, "bits per weight", "mean KLD (nats, log)", b0, b1, l0, l1, sa, ticks, pow10)
		for _, v := range niceTicks(b0, b1, 8) {
			if v >= b0 && v <= b1 {
				fmt.Fprintf(&f.b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, f.px(v), chartH-padB+14, fmtTick(v))
			}
		}
		for _, t := range pts {
			x, y := f.px(t.Q.BitsPerWeight), f.py(math.Log10(t.Q.Figures.KLD.Mean))
			fmt.Fprintf(&f.b, `<circle cx="%.1f" cy="%.1f" r="4.5" fill="%s"><title>%s: %.2f bpw, KLD %.3g</title></circle><text x="%.1f" y="%.1f">%s</text>`,
				x, y, palette[0], esc(cmp.Or(t.Q.ModelID, t.Q.ModelFile)), t.Q.BitsPerWeight, t.Q.Figures.KLD.Mean, x+6, y-6, esc(tradeoffName(&t)))
		}
		f.legend(0, "models (base: KLD 0, not drawn)")
		return f.end()
	}
	return chart{title, svg}, true
}
