package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// A small SVG plotter: enough for line and bar charts drawn in Go, with no
// script, font or file from outside the page.

type series struct {
	name   string
	xs, ys []float64
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
	x0, x1     float64
	y0, y1     float64
	standalone bool
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
	fmt.Fprintf(&f.b, `<svg%s width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, ns, chartW, chartH, chartW, chartH)
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
	return padL + (x-f.x0)/(f.x1-f.x0)*float64(chartW-padL-padR)
}

func (f *frame) py(y float64) float64 {
	return float64(chartH-padB) - (y-f.y0)/(f.y1-f.y0)*float64(chartH-padT-padB)
}

func (f *frame) legend(i int, name string) {
	y := padT + 14*i + 8
	fmt.Fprintf(&f.b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`,
		chartW-padR+8, y-8, palette[i%len(palette)], chartW-padR+22, y+1, esc(name))
}

func (f *frame) end() string { return f.b.String() + "</svg>" }

func esc(s string) string { return html.EscapeString(s) }

// lineChart draws series as lines with points; x ticks at the data's x
// values (depths, parallel counts).
func lineChart(title, xlabel, ylabel string, ss []series, standalone bool) string {
	x0, x1, y1 := math.Inf(1), math.Inf(-1), 0.0
	xset := map[float64]bool{}
	for _, s := range ss {
		for i := range s.xs {
			x0, x1, y1 = math.Min(x0, s.xs[i]), math.Max(x1, s.xs[i]), math.Max(y1, s.ys[i])
			xset[s.xs[i]] = true
		}
	}
	if x1 <= x0 {
		x0, x1 = x0-1, x0+1
	}
	f := newFrame(title, xlabel, ylabel, x0, x1, 0, y1*1.1, standalone)
	for x := range xset {
		fmt.Fprintf(&f.b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, f.px(x), chartH-padB+14, fmtTick(x))
	}
	for i, s := range ss {
		c := palette[i%len(palette)]
		var pts []string
		for j := range s.xs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", f.px(s.xs[j]), f.py(s.ys[j])))
		}
		fmt.Fprintf(&f.b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, c, strings.Join(pts, " "))
		for j := range s.xs {
			fmt.Fprintf(&f.b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s, %.2f</title></circle>`, f.px(s.xs[j]), f.py(s.ys[j]), c, esc(s.name), fmtTick(s.xs[j]), s.ys[j])
		}
		f.legend(i, s.name)
	}
	return f.end()
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
	}
	for i, n := range groupNames {
		f.legend(i, n)
	}
	return f.end()
}
