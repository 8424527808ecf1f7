package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// decompCharts are the figures of the decomposition: the classic
// roofline (records and their kernels against the bandwidth slope and
// the compute roof) and each record's step split into hardware, kernels
// and software.
func decompCharts(recs []record.Record) []chart {
	var out []chart
	if c, ok := rooflineChart(recs); ok {
		out = append(out, c)
	}
	var labels []string
	var parts [4][]float64
	for i := range recs {
		d := decompOf(&recs[i])
		if d == nil {
			continue
		}
		// The verdict's own figures: a split that does not add up is
		// drawn, and labelled, as not vouched for.
		l := label(&recs[i]) + " " + recs[i].Test
		if d.Unvouched != "" {
			l += " (" + roofline.Unvouched + ")"
		}
		labels = append(labels, l)
		for j, v := range d.Parts() {
			parts[j] = append(parts[j], 100*v)
		}
	}
	if len(labels) > 0 {
		t := "Where a step's time goes (% of the measured step)"
		names := []string{"hardware (bytes and FLOPs at peak)", "kernels beyond the hardware", "kernels slower in the step than alone", "software (outside the graph's nodes)"}
		out = append(out, chart{t, func(sa bool) string { return stackedBars(t, "% of the step", labels, parts[:], names, sa) }})
	}
	return out
}

func decompOf(r *record.Record) *roofline.Decomposition {
	if r.Roofline == nil || r.Status != record.StatusOK {
		return nil
	}
	return r.Roofline.Decomp
}

// stackedBars draws one bar per label, its parts stacked in order.
func stackedBars(title, ylabel string, labels []string, parts [][]float64, names []string, standalone bool) string {
	top := 100.0
	for i := range labels {
		sum := 0.0
		for _, p := range parts {
			sum += p[i]
		}
		top = math.Max(top, sum)
	}
	f := newFrame(title, "", ylabel, 0, float64(len(labels)), 0, top*1.05, standalone)
	w := float64(chartW-padL-padR) / float64(max(len(labels), 1))
	for i := range labels {
		base := 0.0
		x := f.px(float64(i)) + w*0.1
		for j, p := range parts {
			fmt.Fprintf(&f.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s %.1f%%</title></rect>`,
				x, f.py(base+p[i]), w*0.8, f.py(base)-f.py(base+p[i]), palette[j%len(palette)], esc(labels[i]), esc(names[j]), p[i])
			base += p[i]
		}
	}
	barLabels(f, labels, w)
	for j, n := range names {
		f.legend(j, n)
	}
	return f.end()
}

// rooflineChart is the classic roofline: arithmetic intensity (FLOP per
// byte) on a log x axis, achieved GFLOP/s on a log y axis, the peak
// bandwidth's slope and the compute roof, a point per record and a
// smaller one per kernel that took at least 5% of its step.
func rooflineChart(recs []record.Record) (chart, bool) {
	type pt struct {
		x, y  float64
		big   bool
		label string
		short string // shown beside a record's point: its test
	}
	var pts []pt
	var bw, peak float64
	for i := range recs {
		r := &recs[i]
		a := r.Roofline
		if a == nil || r.Status != record.StatusOK || a.BytesPerStep == 0 || a.AchievedTFLOPS == 0 {
			continue
		}
		if bw == 0 {
			bw, peak = a.PeakBWGBs, 1000*a.PeakTFLOPS
		}
		pts = append(pts, pt{a.FlopsPerStep / a.BytesPerStep, 1000 * a.AchievedTFLOPS, true, label(r) + " " + r.Test + ": " + a.Verdict, r.Test})
		if d := a.Decomp; d != nil {
			for _, k := range r.Kernels {
				if k.Ms >= 0.05*d.StepMs && k.Bytes > 0 && k.Flops > 0 {
					pts = append(pts, pt{k.Flops / k.Bytes, k.Flops / (k.Ms / 1000) / 1e9, false, label(r) + " " + r.Test + ": " + k.Name, ""})
				}
			}
		}
	}
	if len(pts) == 0 || bw == 0 || peak == 0 {
		return chart{}, false
	}
	lx0, lx1, ly0, ly1 := math.Inf(1), math.Inf(-1), math.Log10(peak)+0.3, math.Log10(peak)+0.3
	for _, p := range pts {
		lx0, lx1, ly0 = math.Min(lx0, math.Log10(p.x)), math.Max(lx1, math.Log10(p.x)), math.Min(ly0, math.Log10(p.y))
	}
	lx0, lx1, ly0 = math.Floor(lx0-0.5), math.Ceil(math.Max(lx1+0.5, math.Log10(peak/bw)+0.5)), math.Floor(ly0-0.3)
	var decades []float64
	for v := ly0; v <= ly1; v++ {
		decades = append(decades, v)
	}
	pow := func(v float64) string { return fmtTick(math.Pow(10, v)) }
	title := "Roofline: achieved GFLOP/s against arithmetic intensity"
	svg := func(sa bool) string {
		f := newFrameTicks(title, "arithmetic intensity (FLOP/byte, log)", "GFLOP/s (log)", lx0, lx1, ly0, ly1, sa, decades, pow)
		for v := lx0; v <= lx1; v++ {
			fmt.Fprintf(&f.b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, f.px(v), chartH-padB+14, pow(v))
		}
		// The roof: bandwidth x intensity up to the ridge, then the peak.
		ridge := math.Log10(peak / bw)
		start := math.Max(lx0, ly0-math.Log10(bw)) // where the slope enters the frame
		fmt.Fprintf(&f.b, `<polyline fill="none" stroke="black" stroke-width="2" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f"><title>%.0f GB/s, %.0f GFLOP/s</title></polyline>`,
			f.px(start), f.py(math.Log10(bw)+start), f.px(ridge), f.py(math.Log10(peak)), f.px(lx1), f.py(math.Log10(peak)), bw, peak)
		// The roof's values, on it: the bandwidth on the slope, the
		// peak on the flat.
		fmt.Fprintf(&f.b, `<text x="%.1f" y="%.1f" font-size="10">%.0f GB/s</text>`, f.px(start)+4, f.py(math.Log10(bw)+start)-6, bw)
		fmt.Fprintf(&f.b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="end">%.0f GFLOP/s</text>`, f.px(lx1)-4, f.py(math.Log10(peak))-5, peak)
		var placed [][2]float64 // labels drawn: one that would overlap another is left to the hover
		for _, p := range pts {
			r, c := 2.5, palette[7]
			if p.big {
				r, c = 4.5, palette[0]
			}
			x, y := f.px(math.Log10(p.x)), f.py(math.Log10(p.y))
			fmt.Fprintf(&f.b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"><title>%s: %.3g FLOP/B, %.3g GFLOP/s</title></circle>`,
				x, y, r, c, esc(p.label), p.x, p.y)
			if p.short != "" && !slices.ContainsFunc(placed, func(q [2]float64) bool { return math.Abs(q[0]-x) < 40 && math.Abs(q[1]-y) < 11 }) {
				placed = append(placed, [2]float64{x, y})
				fmt.Fprintf(&f.b, `<text x="%.1f" y="%.1f" font-size="10">%s</text>`, x+6, y-6, esc(p.short))
			}
		}
		f.legend(0, "records")
		f.legend(7, "kernels (>= 5% of a step)")
		return f.end()
	}
	return chart{title, svg}, true
}

// decompColumns show the split of a step, when records have one.
var decompColumns = []column{
	{"kernel %", true, func(r *record.Record) string {
		if d := decompOf(r); d != nil {
			return fmt.Sprintf("%.0f%%", 100*d.KernelShare)
		}
		return "-"
	}},
	{"sw ms/step", true, func(r *record.Record) string {
		if d := decompOf(r); d != nil {
			return fmt.Sprintf("%.2f", d.SoftwareMs)
		}
		return "-"
	}},
}

// barLabels writes each bar's label under it: level where the longest
// fits its bar (about 5 px a character at 9 px), else turned 45° (each
// cut to the 11 characters the bottom margin holds), and where bars are
// closer than a line of text, every k-th: labels never run together.
func barLabels(f *frame, labels []string, w float64) {
	ls := distinct(labels)
	longest := 0
	for _, l := range ls {
		longest = max(longest, utf8.RuneCountInString(l))
	}
	if float64(longest)*5 <= w {
		for i, l := range ls {
			fmt.Fprintf(&f.b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="9">%s</text>`, f.px(float64(i))+w/2, chartH-padB+12, esc(l))
		}
		return
	}
	step := max(1, int(math.Ceil(11/w)))
	for i := 0; i < len(ls); i += step {
		x, y := f.px(float64(i))+w/2, chartH-padB+8
		fmt.Fprintf(&f.b, `<text x="%.1f" y="%d" text-anchor="end" font-size="9" transform="rotate(-45 %.1f %d)">%s</text>`, x, y, x, y, esc(shorten(ls[i], 11)))
	}
}

// distinct drops the leading words every label shares ("synth:tiny:q8_0
// pp64", "synth:tiny:q8_0 tg16": "pp64", "tg16").
func distinct(labels []string) []string {
	if len(labels) < 2 {
		return labels
	}
	words := make([][]string, len(labels))
	for i, l := range labels {
		words[i] = strings.Fields(l)
	}
	common := 0
	for ; common < len(words[0])-1; common++ {
		same := true
		for _, w := range words[1:] {
			if len(w) <= common+1 || w[common] != words[0][common] {
				same = false
			}
		}
		if !same {
			break
		}
	}
	out := make([]string, len(labels))
	for i, w := range words {
		out[i] = strings.Join(w[common:], " ")
	}
	return out
}

func shorten(s string, n int) string {
	r := []rune(s)
	if n < 4 || len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}
