package sweep

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// progress shows a sweep's progress: on a terminal one line redrawn in
// place (bar, point k/N, current point, ETA, last t/s), elsewhere a plain
// line per finished point.
type progress struct {
	w        io.Writer
	tty      bool
	total    int
	done     int
	start    time.Time
	estTotal time.Duration
	estDone  time.Duration
	last     string
	current  string
}

// newProgress starts a display for total points whose estimated time is est.
func newProgress(w io.Writer, tty bool, total int, est time.Duration) *progress {
	return &progress{w: w, tty: tty, total: total, start: time.Now(), estTotal: est}
}

// eta scales the estimate of what is left by how the estimates of what is
// done compared with the time it really took.
func (pr *progress) eta() time.Duration {
	left := pr.estTotal - pr.estDone
	if pr.estDone > 0 {
		left = time.Duration(float64(left) * float64(time.Since(pr.start)) / float64(pr.estDone))
	}
	return max(left, 0)
}

// Begin shows the point now running.
func (pr *progress) Begin(p point.Point) {
	pr.current = p.ModelID + " " + p.TestName()
	if pr.tty {
		pr.draw()
	}
}

// End counts a finished point.
func (pr *progress) End(r record.Record, est time.Duration) {
	pr.done++
	pr.estDone += est
	switch r.Status {
	case record.StatusOK:
		pr.last = fmt.Sprintf("%.2f t/s", r.AvgTs)
	default:
		pr.last = string(r.Status)
	}
	if pr.tty {
		pr.draw()
		return
	}
	line := fmt.Sprintf("[%d/%d] %s %s: %s", pr.done, pr.total, r.ModelID, r.Test, pr.last)
	if r.Status != record.StatusOK {
		line += " (" + r.Reason + ")"
	}
	fmt.Fprintf(pr.w, "%s, ETA %s\n", line, plan.Rough(pr.eta()))
}

func (pr *progress) draw() {
	const width = 24
	filled := 0
	if pr.total > 0 {
		filled = width * pr.done / pr.total
	}
	bar := strings.Repeat("#", filled) + strings.Repeat("-", width-filled)
	fmt.Fprintf(pr.w, "\r\033[K[%s] %d/%d %s | last %s | ETA %s", bar, pr.done, pr.total, pr.current, orDash(pr.last), plan.Rough(pr.eta()))
}

// Finish ends the display.
func (pr *progress) Finish() {
	if pr.tty {
		fmt.Fprintln(pr.w)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
