// Package rerun keeps, per hardware class, what separate processes
// measured for each test, so that a record's interval covers a rerun.
// Repetitions inside one process agree more closely than processes do
// (where the buffers landed in memory, what else the machine did that
// minute): only other processes show by how much, and a 95% interval
// from the repetitions alone is missed by most reruns.
package rerun

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/tokbench/tokbench/internal/safefile"
)

const (
	// maxRuns is how many processes of one test are kept (the latest).
	maxRuns = 20
	// minRuns is how many processes of a test, this one included, its
	// own spread is estimated from.
	minRuns = 3
	// priorCV is the spread between processes (a fraction of the mean)
	// assumed where this machine has rerun no test yet: what separate
	// processes of one test showed on 2-core cloud VMs (make
	// bench-validity: 1.6 to 4%). A machine's own replaces it from its
	// first test run MinRuns times.
	priorCV = 0.02
	// priorWeight is how many processes the prior (the machine's other
	// tests, else PriorCV) counts as beside a test's own: a spread from
	// three processes is too uncertain to stand alone (it is often far
	// too small), so it moves from the prior to the test's own as its
	// processes add up.
	priorWeight = 4
)

// Run is what one process measured for a test.
type Run struct {
	Mean float64 `json:"mean"`
	// VarMean is the variance of Mean from the process's repetitions
	// (stddev² / n): the part of the spread more repetitions remove.
	VarMean float64 `json:"var_mean"`
	// CV is the repetitions' own spread (stddev / mean).
	CV float64 `json:"cv"`
}

// History is one class's processes per test id.
type History struct {
	path string
	Runs map[string][]Run `json:"runs"`
}

// Open reads the history of a class kept in dir (a cache folder; "" for
// one kept in memory). A missing or unreadable file is an empty history.
func Open(dir, class string) *History {
	h := &History{Runs: map[string][]Run{}}
	if dir == "" {
		return h
	}
	h.path = filepath.Join(dir, "reruns", safeName(class)+".json")
	if b, err := os.ReadFile(h.path); err == nil {
		var read History
		if json.Unmarshal(b, &read) == nil && read.Runs != nil {
			h.Runs = read.Runs
		}
	}
	return h
}

// Spread is the spread between processes of a test (a fraction of the
// mean) with this process's run, and what it is based on.
func (h *History) Spread(id string, this Run) (cv float64, basis string) {
	prior, basis := priorCV, fmt.Sprintf("an assumed %.0f%% between processes (no test rerun on this machine yet)", 100*priorCV)
	var cvs []float64
	for other, rs := range h.Runs {
		if other != id && len(rs) >= minRuns {
			cvs = append(cvs, between(rs))
		}
	}
	if len(cvs) > 0 {
		slices.Sort(cvs)
		prior, basis = cvs[len(cvs)/2], fmt.Sprintf("the median spread between processes of %d other tests on this machine", len(cvs))
	}
	// What moves one repetition against the next (the machine's other
	// work, its clocks) moves one process against the next at least as
	// much: a noisy machine's processes are not assumed steadier than
	// its repetitions.
	if this.CV > prior {
		prior, basis = this.CV, fmt.Sprintf("processes assumed to differ as much as its repetitions do (%.1f%%)", 100*this.CV)
	}
	runs := append(slices.Clone(h.Runs[id]), this)
	if len(runs) < minRuns {
		return prior, "the repetitions and " + basis
	}
	// The test's own variance and the prior's, weighed by their degrees
	// of freedom.
	own, df := between(runs), float64(len(runs)-1)
	cv = math.Sqrt((priorWeight*prior*prior + df*own*own) / (priorWeight + df))
	return cv, fmt.Sprintf("the repetitions and %d processes of this test on this machine, with %s", len(runs), basis)
}

// between estimates the spread between processes beyond their
// repetitions': the variance of the means less what their repetitions
// explain, as a fraction of the mean.
func between(runs []Run) float64 {
	var sum, within float64
	for _, r := range runs {
		sum += r.Mean
		within += r.VarMean
	}
	n := float64(len(runs))
	mean := sum / n
	if mean <= 0 {
		return 0
	}
	var ss float64
	for _, r := range runs {
		ss += (r.Mean - mean) * (r.Mean - mean)
	}
	v := ss/(n-1) - within/n
	return math.Sqrt(max(v, 0)) / mean
}

// Add keeps a process's run of a test and writes the history (whole or
// not at all; of two processes writing at once, one's run is lost).
func (h *History) Add(id string, r Run) error {
	if r.Mean <= 0 || math.IsNaN(r.Mean) || math.IsInf(r.Mean, 0) || math.IsNaN(r.VarMean) {
		return nil
	}
	rs := append(h.Runs[id], r)
	h.Runs[id] = rs[max(0, len(rs)-maxRuns):]
	if h.path == "" {
		return nil
	}
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o755); err != nil {
		return fmt.Errorf("reruns: %w", err)
	}
	return safefile.Write(h.path, b, 0o644)
}

// safeName keeps a class name to one path element.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		return "_" + string(b)
	}
	return string(b)
}
