package report

import (
	"fmt"
	"html"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The charts say what they show without a hover: the roofline's points
// their tests and its roof its figures, the efficiency chart its
// ceiling's value, the per-repetition telemetry one line per test.
func TestChartsLabelled(t *testing.T) {
	recs := sweepRecords()
	// A prefill beside the decodes, its roofline's figures set.
	for i, test := range []string{"pp512", "tg128"} {
		r := recs[i]
		r.Test = test
		a := *r.Roofline
		a.BytesPerStep, a.FlopsPerStep, a.AchievedTFLOPS, a.PeakBWGBs, a.PeakTFLOPS = 4e9, 8e9*float64(1+511*(1-i)), 0.5-0.4*float64(i), 3000, 900
		r.Roofline = &a
		recs = append(recs, r)
	}
	cs := allCharts(recs, nil, nil)
	found := map[string]bool{}
	for _, c := range cs {
		svg := c.svg(true)
		switch {
		case strings.HasPrefix(c.title, "Roofline"):
			found["roofline"] = true
			if !regexp.MustCompile(`font-size="10">(pp|tg)\d+</text>`).MatchString(svg) || !strings.Contains(svg, " GB/s</text>") || !strings.Contains(svg, " GFLOP/s</text>") {
				t.Errorf("roofline without its tests or its roof's figures:\n%s", svg)
			}
		case strings.HasPrefix(c.title, "Efficiency"):
			found["efficiency"] = true
			if !strings.Contains(svg, ">ceiling 100</text>") {
				t.Errorf("efficiency chart without its ceiling's value:\n%s", svg)
			}
		case strings.HasPrefix(c.title, "Host CPU use per repetition"):
			found["cpu"] = true
			if strings.Count(svg, "<polyline") < 2 {
				t.Errorf("host CPU per repetition: pp and tg in one line:\n%s", svg)
			}
		}
	}
	for _, k := range []string{"roofline", "efficiency", "cpu"} {
		if !found[k] {
			t.Errorf("no %s chart among %d: the fixture changed", k, len(cs))
		}
	}
}

// Past the palette's colours a series is dashed, line and legend mark
// alike: no two of 12 series look the same.
func TestManySeriesTellApart(t *testing.T) {
	var ss []series
	for i := range 12 {
		ss = append(ss, series{name: fmt.Sprintf("s%d", i), xs: []float64{1, 2}, ys: []float64{float64(i), float64(i + 1)}})
	}
	svg := lineChart("many", "x", "y", ss, true)
	styles := map[string]bool{}
	for _, m := range regexp.MustCompile(`<polyline fill="none" stroke="(#[0-9a-f]+)" stroke-width="2"( stroke-dasharray="[0-9 ]+")? `).FindAllStringSubmatch(svg, -1) {
		styles[m[1]+m[2]] = true
	}
	if len(styles) != 12 || strings.Count(svg, `stroke-width="3" stroke-dasharray`) != 2 {
		t.Errorf("%d distinct line styles, %d dashed legend marks:\n%s", len(styles), strings.Count(svg, `stroke-width="3" stroke-dasharray`), svg)
	}
}

// A bar chart's labels never run together: level when they fit their
// bars, else turned and, where bars are closer than a line, thinned.
func TestBarLabelsApart(t *testing.T) {
	text := regexp.MustCompile(`<text x="([0-9.]+)" y="[0-9]+" text-anchor="(middle|end)" font-size="9"( transform="rotate\(-45[^"]*")?>([^<]*)</text>`)
	for _, n := range []int{3, 12, 24, 60, 200} {
		labels := make([]string, n)
		for i := range labels {
			labels[i] = fmt.Sprintf("tiny-f16 q%d_0 pp%d @ d%d x%d", i%3+4, 64<<(i%4), 512*(i%5), 1<<(i%3))
		}
		parts := [][]float64{make([]float64, n), make([]float64, n)}
		svg := stackedBars("split", "%", labels, parts, []string{"a", "b"}, true)
		ms := text.FindAllStringSubmatch(svg, -1)
		if len(ms) == 0 {
			t.Fatalf("%d bars: no labels:\n%s", n, svg)
		}
		prev := math.Inf(-1)
		for _, m := range ms {
			x, _ := strconv.ParseFloat(m[1], 64)
			need := 11.0 // a turned label's line
			if m[3] == "" {
				need = 5 * float64(utf8.RuneCountInString(html.UnescapeString(m[4])))
			}
			if x-prev < need {
				t.Errorf("%d bars: label %q at %.1f, %.1f px after the one before (needs %.0f)", n, m[4], x, x-prev, need)
				break
			}
			prev = x
		}
	}
}
