package load

import (
	"encoding/json"
	"fmt"

	"github.com/tokbench/tokbench/record"
)

// Result is one scenario's run, as written to a results file.
type Result struct {
	Scenario string    `json:"scenario"`
	Loop     Loop      `json:"loop"`
	Slots    int       `json:"slots"`
	Clients  int       `json:"concurrency,omitempty"`
	Rate     float64   `json:"rate,omitempty"`
	Guards   Guards    `json:"guards"`
	Summary  Figures   `json:"summary"`           // the legitimate requests
	Abusive  *Figures  `json:"abusive,omitempty"` // the abusive ones
	Timeline []Second  `json:"timeline"`
	Requests []*Served `json:"requests,omitempty"`
}

// Loop is how requests arrive.
type Loop string

// Loops.
const (
	ClosedLoop Loop = "closed" // each client sends its next request when the last is done
	OpenLoop   Loop = "open"   // requests arrive at their times, whatever is in flight
)

// Kind says what a line of a load results file holds.
type Kind string

// Line kinds.
const (
	KindRequest  Kind = "request"
	KindLoad     Kind = "load"
	KindCapacity Kind = "capacity"
)

// Line is one line of a load results file: a request's outcome, a run's
// result, or a capacity search.
type Line struct {
	Kind     Kind            `json:"kind"`
	Workload *Workload       `json:"workload,omitempty"`
	Scenario string          `json:"scenario,omitempty"`
	Request  *Served         `json:"request,omitempty"`
	Run      *Result         `json:"run,omitempty"`
	Capacity *CapacityResult `json:"capacity,omitempty"`
	Provenance
}

// IsResults says whether a file's first line is a load results line.
func IsResults(path string) bool {
	is := false
	record.Lines(path, "JSON", func(n int, b []byte) error {
		var l struct{ Kind Kind }
		is = json.Unmarshal(b, &l) == nil && (l.Kind == KindRequest || l.Kind == KindLoad || l.Kind == KindCapacity)
		return errStop
	})
	return is
}

var errStop = fmt.Errorf("stop")

// ReadResults reads the runs and capacity searches of a load results
// file (request lines are counted, not kept); a torn last line, as a
// killed run leaves, is skipped and reported.
func ReadResults(path string) (lines []Line, requests int, torn bool, err error) {
	_, torn, err = record.Lines(path, "a JSON line of tokbench load or capacity", func(n int, b []byte) error {
		var l Line
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("%s line %d is not a line of tokbench load or capacity: %v", path, n, err)
		}
		switch {
		case l.Kind == KindRequest:
			requests++
		case l.Kind == KindLoad && l.Run != nil, l.Kind == KindCapacity && l.Capacity != nil:
			lines = append(lines, l)
		default:
			return fmt.Errorf("%s line %d: kind %q is not a load, capacity or request line", path, n, l.Kind)
		}
		return nil
	})
	if err != nil {
		return nil, 0, false, err
	}
	return lines, requests, torn, nil
}
