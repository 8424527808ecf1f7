package load

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// Result is one scenario's run, as written to a results file.
type Result struct {
	Scenario string     `json:"scenario"`
	Loop     string     `json:"loop"` // closed, open
	Slots    int        `json:"slots"`
	Clients  int        `json:"concurrency,omitempty"`
	Rate     float64    `json:"rate,omitempty"`
	Guards   Guards     `json:"guards"`
	Summary  Summary    `json:"summary"`           // the legitimate requests
	Abusive  *Summary   `json:"abusive,omitempty"` // the abusive ones
	Timeline []Second   `json:"timeline"`
	Requests []*Outcome `json:"requests,omitempty"`
}

// Line is one line of a load results file: a request's outcome, a run's
// result, or a capacity search.
type Line struct {
	Kind          string          `json:"kind"` // request, load, capacity
	Workload      *Workload       `json:"workload,omitempty"`
	Scenario      string          `json:"scenario,omitempty"`
	Request       *Outcome        `json:"request,omitempty"`
	Run           *Result         `json:"run,omitempty"`
	Capacity      *CapacityResult `json:"capacity,omitempty"`
	Host          string          `json:"host,omitempty"`
	Tool          string          `json:"tool,omitempty"`
	BuildCommit   string          `json:"build_commit,omitempty"`
	OllamaVersion string          `json:"ollama_version,omitempty"`
}

// IsResults says whether a file's first line is a load results line.
func IsResults(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	if !sc.Scan() {
		return false
	}
	var l struct{ Kind string }
	return json.Unmarshal(sc.Bytes(), &l) == nil && (l.Kind == "request" || l.Kind == "load" || l.Kind == "capacity")
}

// ReadResults reads the runs and capacity searches of a load results
// file (request lines are counted, not kept); a torn last line, as a
// killed run leaves, is skipped and reported.
func ReadResults(path string) (lines []Line, requests int, torn bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	var bad error
	for n := 1; sc.Scan(); n++ {
		if bad != nil {
			return nil, 0, false, bad // a bad line before the last
		}
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			bad = fmt.Errorf("%s line %d is not a JSON line of tokbench load or capacity: %v", path, n, err)
			continue
		}
		switch {
		case l.Kind == "request":
			requests++
		case l.Kind == "load" && l.Run != nil, l.Kind == "capacity" && l.Capacity != nil:
			lines = append(lines, l)
		default:
			return nil, 0, false, fmt.Errorf("%s line %d: kind %q is not a load, capacity or request line", path, n, l.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, false, fmt.Errorf("%s: %w", path, err)
	}
	return lines, requests, bad != nil, nil
}
