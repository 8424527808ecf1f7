package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
)

// Timeline holds raw telemetry samples (from --telemetry-out) as series
// per metric and device, on seconds from the first sample.
type Timeline map[string]map[int]*series

// ReadTimeline reads a telemetry JSONL file.
func ReadTimeline(path string) (Timeline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tl := Timeline{}
	first := math.Inf(1)
	type point struct {
		t   float64
		dev int
		m   map[string]any
	}
	var pts []point
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("%s line %d: not a telemetry sample: %w", path, line, err)
		}
		t, _ := m["unix"].(float64)
		if t == 0 {
			t, _ = m["t"].(float64)
		}
		dev, _ := m["dev"].(float64)
		first = math.Min(first, t)
		pts = append(pts, point{t, int(dev), m})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].t < pts[j].t })
	for _, p := range pts {
		for _, metric := range timelineMetrics {
			v, ok := p.m[metric.key].(float64)
			if !ok {
				continue
			}
			if tl[metric.key] == nil {
				tl[metric.key] = map[int]*series{}
			}
			s := tl[metric.key][p.dev]
			if s == nil {
				name := fmt.Sprintf("GPU %d", p.dev)
				if p.dev < 0 {
					name = "host"
				}
				s = &series{name: name}
				tl[metric.key][p.dev] = s
			}
			s.xs, s.ys = append(s.xs, p.t-first), append(s.ys, v)
		}
	}
	return tl, nil
}

var timelineMetrics = []struct{ key, title, unit string }{
	{"power_w", "GPU power over time", "W"},
	{"gpu_util", "GPU utilisation over time", "%"},
	{"dram_bw_util", "DRAM bandwidth utilisation over time", "%"},
	{"mem_util", "Memory-controller utilisation over time", "%"},
	{"sm_clock_mhz", "SM clock over time", "MHz"},
	{"cpu_pct", "Host CPU over time (% of one core)", "%"},
}

func (tl Timeline) charts() []chart {
	var out []chart
	for _, m := range timelineMetrics {
		byDev := tl[m.key]
		if len(byDev) == 0 {
			continue
		}
		var devs []int
		for d := range byDev {
			devs = append(devs, d)
		}
		sort.Ints(devs)
		var ss []series
		for _, d := range devs {
			ss = append(ss, *byDev[d])
		}
		title, unit := m.title, m.unit
		out = append(out, chart{title, func(sa bool) string { return timeChart(title, unit, ss, sa) }})
	}
	return out
}

// timeChart is a line chart whose x axis is time (many points, no markers).
func timeChart(title, unit string, ss []series, standalone bool) string {
	x1, y1 := 0.0, 0.0
	for _, s := range ss {
		for i := range s.xs {
			x1, y1 = math.Max(x1, s.xs[i]), math.Max(y1, s.ys[i])
		}
	}
	if x1 <= 0 {
		x1 = 1
	}
	f := newFrame(title, "seconds", unit, 0, x1, 0, math.Max(y1*1.1, 1), standalone)
	for _, t := range niceTicks(0, x1, 6) {
		if t <= x1 {
			fmt.Fprintf(&f.b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, f.px(t), chartH-padB+14, fmtTick(t))
		}
	}
	for i, s := range ss {
		pts := make([]byte, 0, 16*len(s.xs))
		for j := range s.xs {
			pts = fmt.Appendf(pts, "%.1f,%.1f ", f.px(s.xs[j]), f.py(s.ys[j]))
		}
		fmt.Fprintf(&f.b, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>`, palette[i%len(palette)], dash(i), pts)
		f.legend(i, s.name)
	}
	return f.end()
}
