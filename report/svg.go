package report

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
)

// A small SVG plotter: enough for line and bar charts drawn in Go, with no
// script, font or file from outside the page.

type series struct {
	name   string
	xs, ys []float64
	// errs, if set, are each point's 95% confidence half-widths: drawn as
	// error bars.
	errs []float64
	// tags, if set, label each point (a scatter's loads).
	tags []string
}

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

const (
	chartW, chartH = 760, 320
	padL, padR     = 64, 230
	padT, padB     = 30, 44
)

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Floor(lo/step) * step; v <= hi+step/2; v += step {
		out = append(out, v)
	}
	return out
}

func fmtTick(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}

type frame struct {
	b          strings.Builder
	x0, x1     float64 // in axis units (log2 on a doubling axis)
	y0, y1     float64
	standalone bool
	xaxis      func(float64) float64 // data to axis units; nil: identity
	legendRows int                   // lines the legend's names take so far
}

func newFrame(title, xlabel, ylabel string, x0, x1, y0, y1 float64, standalone bool) *frame {
	return newFrameTicks(title, xlabel, ylabel, x0, x1, y0, y1, standalone, niceTicks(y0, y1, 5), fmtTick)
}

// newFrameTicks is newFrame with the y axis's ticks and their labels given
// (a log axis's decades).
func newFrameTicks(title, xlabel, ylabel string, x0, x1, y0, y1 float64, standalone bool, yticks []float64, ylabel1 func(float64) string) *frame {
	f := &frame{x0: x0, x1: x1, y0: y0, y1: y1, standalone: standalone}
	ns := ""
	if standalone {
		// Only a file on its own needs the namespace; inline SVG in HTML does not.
		ns = ` xmlns="http://www.w3.org/2000/svg"`
	}
	// Inline, a chart follows the page's width (its viewBox keeps the
	// proportions); a file on its own keeps its size.
	size := fmt.Sprintf(`width="%d" height="%d"`, chartW, chartH)
	if !standalone {
		size = `width="100%" style="max-width:1000px;height:auto"`
	}
	fmt.Fprintf(&f.b, `<svg%s %s viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, ns, size, chartW, chartH)
	fmt.Fprintf(&f.b, `<rect width="%d" height="%d" fill="white"/>`, chartW, chartH)
	fmt.Fprintf(&f.b, `<text x="%d" y="18" font-size="13" font-weight="bold">%s</text>`, padL, esc(title))
	pw, ph := chartW-padL-padR, chartH-padT-padB
	fmt.Fprintf(&f.b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`, padL, padT, pw, ph)
	for _, t := range yticks {
		if t < y0 || t > y1 {
			continue
		}
		y := f.py(t)
		fmt.Fprintf(&f.b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`, padL, padL+pw, y, y, padL-4, y+4, ylabel1(t))
	}
	fmt.Fprintf(&f.b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, padL+pw/2, chartH-6, esc(xlabel))
	fmt.Fprintf(&f.b, `<text transform="translate(14,%d) rotate(-90)" text-anchor="middle">%s</text>`, padT+ph/2, esc(ylabel))
	return f
}

func (f *frame) px(x float64) float64 {
	if f.xaxis != nil {
		x = f.xaxis(x)
	}
	return padL + (x-f.x0)/(f.x1-f.x0)*float64(chartW-padL-padR)
}

func (f *frame) py(y float64) float64 {
	return float64(chartH-padB) - (y-f.y0)/(f.y1-f.y0)*float64(chartH-padT-padB)
}

// legendChars is about how many characters of 11px text fit beside the
// plot on one line; legendLines how many lines one name may take.
const (
	legendChars = 34
	legendLines = 3
)

// legend names series i, its name wrapped at words over up to
// legendLines lines below the names before it (a longer one ends in "…"
// after a whole word, and the whole of it shows on hover); names past the
// plot's bottom are left to the hover of their series.
func (f *frame) legend(i int, name string) {
	lines := wrap(name, legendChars, "")
	if len(lines) > legendLines {
		lines = append(lines[:legendLines-1], strings.Join(lines[legendLines-1:], " "))
		if last := []rune(lines[legendLines-1]); len(last) > legendChars {
			cut := string(last[:legendChars-1])
			if sp := strings.LastIndex(cut, " "); sp > 0 {
				cut = cut[:sp]
			}
			lines[legendLines-1] = cut + "…"
		}
	}
	y := padT + 14*f.legendRows + 8
	if y+14*(len(lines)-1) > chartH-padB {
		return
	}
	f.legendRows += len(lines)
	// Past the palette a colour comes again, dashed: its mark is a
	// dashed line, as its series is drawn.
	mark := fmt.Sprintf(`<rect x="%d" y="%d" width="10" height="10" fill="%s"/>`, chartW-padR+8, y-8, palette[i%len(palette)])
	if i >= len(palette) {
		mark = fmt.Sprintf(`<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`, chartW-padR+6, chartW-padR+19, y-3, y-3, palette[i%len(palette)], dash(i))
	}
	fmt.Fprintf(&f.b, `<g><title>%s</title>%s<text x="%d" y="%d">`, esc(name), mark, chartW-padR+22, y+1)
	if len(lines) == 1 {
		fmt.Fprintf(&f.b, `%s</text></g>`, esc(name))
		return
	}
	for j, l := range lines {
		fmt.Fprintf(&f.b, `<tspan x="%d" dy="%d">%s</tspan>`, chartW-padR+22, min(j, 1)*14, esc(l))
	}
	f.b.WriteString(`</text></g>`)
}

// dash is series i's line style: solid for the palette's first round of
// colours, then dashed, then dotted, so that no two series look alike.
func dash(i int) string {
	switch i / len(palette) {
	case 0:
		return ""
	case 1:
		return ` stroke-dasharray="6 3"`
	}
	return ` stroke-dasharray="2 2"`
}

// xLabels writes the x axis's labels at the given values, leaving out any
// that would overlap the one before it.
func (f *frame) xLabels(xs []float64, text func(float64) string) {
	right := math.Inf(-1)
	for _, x := range slices.Sorted(slices.Values(xs)) {
		t := text(x)
		half := 3.2*float64(len(t)) + 2
		if px := f.px(x); px-half >= right {
			fmt.Fprintf(&f.b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, px, chartH-padB+14, esc(t))
			right = px + half + 4
		}
	}
}

// doubling says whether an axis's values grow by factors (depths 0, 512,
// 1024 ... 32768; 1, 2, 4 ... 256 sequences): spread over more than an
// order of magnitude, they are drawn on a log2 axis, with 0 one step
// left of the smallest positive value.
func doubling(xs []float64) (func(float64) float64, bool) {
	lo, hi := math.Inf(1), 0.0
	for _, x := range xs {
		if x < 0 {
			return nil, false
		}
		if x > 0 {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
	}
	if hi == 0 || hi/lo < 16 || evenly(xs) {
		return nil, false
	}
	zero := math.Log2(lo) - 1
	return func(x float64) float64 {
		if x <= 0 {
			return zero
		}
		return math.Log2(x)
	}, true
}

// evenly says whether xs, set aside their order and repeats, are evenly
// spaced (repetitions 1, 2, 3 ...): a linear axis shows them best, however
// many.
func evenly(xs []float64) bool {
	u := slices.Compact(slices.Sorted(slices.Values(xs)))
	if len(u) < 3 {
		return false
	}
	step := u[1] - u[0]
	for i := 2; i < len(u); i++ {
		if math.Abs(u[i]-u[i-1]-step) > 1e-9*math.Max(1, math.Abs(step)) {
			return false
		}
	}
	return true
}

func (f *frame) end() string { return f.b.String() + "</svg>" }

func esc(s string) string { return html.EscapeString(s) }

// lineChart draws series as lines with points (and error bars where the
// series has them); x labels at the data's x values (depths, parallel
// counts), on a log2 axis when they double.
func lineChart(title, xlabel, ylabel string, ss []series, standalone bool) string {
	var all []float64
	y1 := 0.0
	xset := map[float64]bool{}
	for _, s := range ss {
		for i := range s.xs {
			y1 = math.Max(y1, s.ys[i]+errAt(s, i))
			if !xset[s.xs[i]] {
				all = append(all, s.xs[i])
			}
			xset[s.xs[i]] = true
		}
	}
	axis, logx := doubling(all)
	if logx {
		xlabel += " (log scale)"
	} else {
		axis = func(x float64) float64 { return x }
	}
	x0, x1 := math.Inf(1), math.Inf(-1)
	for _, x := range all {
		x0, x1 = math.Min(x0, axis(x)), math.Max(x1, axis(x))
	}
	if x1 <= x0 {
		x0, x1 = x0-1, x0+1
	}
	// A margin on each side keeps the end points and their labels inside.
	m := (x1 - x0) * 0.04
	f := newFrame(title, xlabel, ylabel, x0-m, x1+m, 0, y1*1.1, standalone)
	f.xaxis = axis
	f.xLabels(all, fmtTick)
	for i, s := range ss {
		c := palette[i%len(palette)]
		var pts []string
		for j := range s.xs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.px(s.xs[j]), f.py(s.ys[j])))
		}
		fmt.Fprintf(&f.b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`, c, dash(i), strings.Join(pts, " "))
		for j := range s.xs {
			x, y := f.px(s.xs[j]), f.py(s.ys[j])
			ci := ""
			if e := errAt(s, j); e > 0 {
				lo, hi := f.py(math.Max(s.ys[j]-e, 0)), f.py(s.ys[j]+e)
				fmt.Fprintf(&f.b, `<path d="M%.1f %.1fV%.1fM%.1f %.1fh8M%.1f %.1fh8" stroke="%s" stroke-width="1.2" fill="none"/>`, x, lo, hi, x-4, lo, x-4, hi, c)
				ci = fmt.Sprintf(" ± %.2f (95%% CI)", e)
			}
			fmt.Fprintf(&f.b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s, %.2f%s</title></circle>`, x, y, c, esc(s.name), fmtTick(s.xs[j]), s.ys[j], ci)
		}
		f.legend(i, s.name)
	}
	return f.end()
}

func errAt(s series, i int) float64 {
	if i < len(s.errs) && !math.IsNaN(s.errs[i]) {
		return s.errs[i]
	}
	return 0
}

// frontChart plots each series' points (tagged with their load) as
// per-user against aggregate throughput, and joins each series' Pareto
// front: the points no other point of the series beats on both.
func frontChart(title, xlabel, ylabel string, ss []series, standalone bool) string {
	x1, y1 := 0.0, 0.0
	for _, s := range ss {
		for i := range s.xs {
			x1, y1 = math.Max(x1, s.xs[i]), math.Max(y1, s.ys[i])
		}
	}
	f := newFrame(title, xlabel, ylabel, 0, math.Max(x1*1.1, 1), 0, math.Max(y1*1.15, 1), standalone)
	f.xLabels(niceTicks(0, x1*1.1, 6), fmtTick)
	for i, s := range ss {
		c := palette[i%len(palette)]
		var front []string
		for _, j := range paretoFront(s) {
			front = append(front, fmt.Sprintf("%.1f,%.1f", f.px(s.xs[j]), f.py(s.ys[j])))
		}
		fmt.Fprintf(&f.b, `<polyline fill="none" stroke="%s" stroke-width="1.5" stroke-dasharray="5 3" points="%s"/>`, c, strings.Join(front, " "))
		for j := range s.xs {
			x, y := f.px(s.xs[j]), f.py(s.ys[j])
			tag := ""
			if j < len(s.tags) {
				tag = s.tags[j]
				fmt.Fprintf(&f.b, `<text x="%.1f" y="%.1f" font-size="10" fill="%s">%s</text>`, x+5, y-5, c, esc(tag))
			}
			fmt.Fprintf(&f.b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s %s: %.1f per user, %.1f in all</title></circle>`, x, y, c, esc(s.name), esc(tag), s.xs[j], s.ys[j])
		}
		f.legend(i, s.name)
	}
	return f.end()
}

// paretoFront are the indices of the series' points that no other point
// beats on both x and y, by x descending.
func paretoFront(s series) []int {
	var out []int
	for i := range s.xs {
		beaten := false
		for j := range s.xs {
			if j != i && s.xs[j] >= s.xs[i] && s.ys[j] >= s.ys[i] && (s.xs[j] > s.xs[i] || s.ys[j] > s.ys[i]) {
				beaten = true
				break
			}
		}
		if !beaten {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(a, b int) int { return cmp.Compare(s.xs[b], s.xs[a]) })
	return out
}

// barChart draws one bar per label, coloured by group, with an optional
// reference line (100% of the ceiling).
func barChart(title, ylabel string, labels []string, vals []float64, groups []int, groupNames []string, ref float64, standalone bool) string {
	y1 := ref
	for _, v := range vals {
		y1 = math.Max(y1, v)
	}
	f := newFrame(title, "", ylabel, 0, float64(len(vals)), 0, y1*1.1, standalone)
	w := float64(chartW-padL-padR) / float64(max(len(vals), 1))
	for i, v := range vals {
		x := f.px(float64(i)) + w*0.1
		fmt.Fprintf(&f.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %.1f</title></rect>`,
			x, f.py(v), w*0.8, f.py(0)-f.py(v), palette[groups[i]%len(palette)], esc(labels[i]), v)
	}
	if ref > 0 {
		fmt.Fprintf(&f.b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="black" stroke-dasharray="4 3"/>`, padL, chartW-padR, f.py(ref), f.py(ref))
		fmt.Fprintf(&f.b, `<text x="%d" y="%.1f" font-size="10" text-anchor="end">ceiling %s</text>`, chartW-padR-4, f.py(ref)-4, fmtTick(ref))
	}
	barLabels(f, labels, w)
	for i, n := range groupNames {
		f.legend(i, n)
	}
	return f.end()
}
