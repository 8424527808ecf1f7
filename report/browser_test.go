package report

import (
	"context"
	"fmt"
	"html"
	"image"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// browser is a headless Chromium (Debian's chromium package), or the
// test is skipped; on CI it must be there (.ci/run installs it).
func browser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium: the report's charts cannot be checked in a browser (.ci/run installs it)")
	}
	t.Skip("no chromium")
	return ""
}

// trap is an HTTP proxy that answers nothing and remembers every host
// asked of it: a page opened through it that fetches anything shows up.
type trap struct {
	mu    sync.Mutex
	hosts []string
	srv   *httptest.Server
}

func newTrap(t *testing.T) *trap {
	tr := &trap{}
	tr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		tr.mu.Lock()
		tr.hosts = append(tr.hosts, host)
		tr.mu.Unlock()
		http.Error(w, "no network for reports", http.StatusForbidden)
	}))
	t.Cleanup(tr.srv.Close)
	return tr
}

// fetched are the hosts the page asked for, leaving out Chromium's own
// services (a page of ours cannot name them: TestHTMLIsSelfContained
// finds no URL in it).
func (tr *trap) fetched() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	for _, h := range tr.hosts {
		own := false
		for _, s := range []string{"google.com", "googleapis.com", "gstatic.com", "gvt1.com", "gvt2.com"} {
			own = own || h == s || strings.HasSuffix(h, "."+s)
		}
		if !own {
			out = append(out, h)
		}
	}
	return out
}

// screenshot renders a file in headless Chromium, all its traffic through
// the trap, and returns the picture.
func screenshot(t *testing.T, chromium, page string, w, h int, tr *trap) image.Image {
	t.Helper()
	out := filepath.Join(t.TempDir(), "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+t.TempDir(),
		"--proxy-server="+tr.srv.URL, "--proxy-bypass-list=<-loopback>", fmt.Sprintf("--window-size=%d,%d", w, h),
		"--screenshot="+out, "file://"+page)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, msg)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("screenshot %v, want %dx%d", b, w, h)
	}
	return img
}

// inks counts, in a rectangle of the picture, the pixels of each series
// colour (within a small tolerance for antialiasing) and the ones that
// are not white.
func inks(img image.Image, r image.Rectangle) (series []int, nonWhite int) {
	series = make([]int, len(palette))
	rgb := make([][3]int, len(palette))
	for i, c := range palette {
		fmt.Sscanf(c, "#%02x%02x%02x", &rgb[i][0], &rgb[i][1], &rgb[i][2])
	}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			R, G, B := int(cr>>8), int(cg>>8), int(cb>>8)
			if R < 245 || G < 245 || B < 245 {
				nonWhite++
			}
			for i, p := range rgb {
				if abs(R-p[0]) <= 8 && abs(G-p[1]) <= 8 && abs(B-p[2]) <= 8 {
					series[i]++
				}
			}
		}
	}
	return series, nonWhite
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Every chart of the reports renders in a real browser: each is laid out
// in a tile of its own and must show its frame, text and series
// colours; the report pages themselves render with no request leaving
// the machine; and the trap is shown to catch a page that does fetch.
func TestChartsInHeadlessChromium(t *testing.T) {
	chromium := browser(t)
	tr := newTrap(t)
	dir := t.TempDir()
	recs, blocks := qualityFixture()
	all := append(append(allCharts(sweepRecords(), nil, nil), loadCharts(loadLines())...), qualityCharts(Tradeoffs(recs, blocks))...)
	// A legend of long names: wrapped whole, never cut mid-word.
	long := []series{{name: "kernels slower in the step than alone (caches, synchronisation)", xs: []float64{1, 2}, ys: []float64{1, 2}},
		{name: strings.Repeat("a long name of many words ", 8), xs: []float64{1, 2}, ys: []float64{2, 1}}}
	all = append(all, chart{title: "long legend", svg: func(standalone bool) string { return lineChart("long legend", "x", "y", long, standalone) }})
	for _, c := range all {
		checkLegend(t, c.title, c.svg(false))
	}
	const tileH = chartH + 10
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"/><style>body{margin:0}div{position:absolute;left:0;width:760px;height:320px}</style></head><body>`)
	for i, c := range all {
		fmt.Fprintf(&b, `<div style="top:%dpx">%s</div>`, i*tileH, c.svg(false))
	}
	b.WriteString("</body></html>")
	tiles := filepath.Join(dir, "tiles.html")
	os.WriteFile(tiles, []byte(b.String()), 0o644)
	img := screenshot(t, chromium, tiles, chartW, len(all)*tileH, tr)
	for i, c := range all {
		plot := image.Rect(padL, i*tileH+padT, chartW-padR, i*tileH+chartH-padB)
		colours, ink := inks(img, plot)
		_, text := inks(img, image.Rect(0, i*tileH, chartW, i*tileH+padT))
		drawn := 0
		for _, n := range colours {
			drawn += n
		}
		if drawn < 20 || ink < 200 || text < 50 {
			t.Errorf("chart %d %q did not render: %d series pixels, %d inked in the plot, %d in the title", i+1, c.title, drawn, ink, text)
		}
		// Text that reaches the chart's right edge is cut there.
		if _, edge := inks(img, image.Rect(chartW-3, i*tileH+padT, chartW, i*tileH+chartH-padB)); edge > 0 {
			t.Errorf("chart %d %q: %d pixels inked at its right edge: a legend runs past it", i+1, c.title, edge)
		}
	}

	// The pages as written: sweep (with quality) and load reports.
	for name, write := range map[string]func(*strings.Builder) error{
		"sweep.html": func(b *strings.Builder) error { return htmlWith(b, sweepRecords(), nil, Tradeoffs(recs, blocks), "") },
		"load.html":  func(b *strings.Builder) error { return WriteLoad(b, "html", loadLines()) },
	} {
		var page strings.Builder
		if err := write(&page); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(page.String()), 0o644)
		img := screenshot(t, chromium, p, 1100, 1800, tr)
		colours, ink := inks(img, img.Bounds())
		if colours[0] < 100 || colours[1] < 100 || ink < 20000 {
			t.Errorf("%s: %v series pixels, %d inked: not rendered", name, colours, ink)
		}
	}
	if got := tr.fetched(); len(got) > 0 {
		t.Errorf("the reports fetched %v: they must open with no network", got)
	}

	// The trap sees a page that fetches.
	leaky := filepath.Join(dir, "leaky.html")
	os.WriteFile(leaky, []byte(`<!DOCTYPE html><html><body><img src="http://tokbench.invalid/x.png"/></body></html>`), 0o644)
	screenshot(t, chromium, leaky, 200, 100, tr)
	if got := tr.fetched(); len(got) != 1 || got[0] != "tokbench.invalid" {
		t.Errorf("the trap saw %v, want the leaky page's tokbench.invalid", got)
	}
}

var legendRe = regexp.MustCompile(`<g><title>([^<]*)</title><rect[^>]*/><text[^>]*>(.*?)</text></g>`)

// checkLegend fails when a legend's visible text is not its name whole,
// or its start up to a whole word and "…", or a line is too long to fit.
func checkLegend(t *testing.T, title, svg string) {
	t.Helper()
	for _, m := range legendRe.FindAllStringSubmatch(svg, -1) {
		name := html.UnescapeString(m[1])
		lines := regexp.MustCompile(`<tspan[^>]*>([^<]*)</tspan>`).FindAllStringSubmatch(m[2], -1)
		var shown []string
		for _, l := range lines {
			shown = append(shown, html.UnescapeString(l[1]))
		}
		if len(lines) == 0 {
			shown = []string{html.UnescapeString(m[2])}
		}
		for _, l := range shown {
			if len([]rune(l)) > legendChars {
				t.Errorf("%s: a legend line of %d characters: %q", title, len([]rune(l)), l)
			}
		}
		vis := strings.Join(shown, " ")
		start, cut := strings.CutSuffix(vis, "…")
		norm := strings.Join(strings.Fields(name), " ")
		switch {
		case !cut && vis != norm:
			t.Errorf("%s: legend %q shows %q", title, name, vis)
		case cut && (!strings.HasPrefix(norm, start) || !strings.HasPrefix(norm[len(start):], " ")):
			t.Errorf("%s: legend %q cut mid-word: %q", title, name, vis)
		}
	}
}
