package load

import (
	"encoding/json"
	"fmt"

	"github.com/tokbench/tokbench/record"
)

// Result is one scenario's run, as written to a results file.
type Result struct {
	Scenario string   `json:"scenario"`
	Loop     loop     `json:"loop"`
	Slots    int      `json:"slots"`
	Clients  int      `json:"concurrency,omitempty"`
	Rate     float64  `json:"rate,omitempty"`
	Guards   Guards   `json:"guards"`
	Summary  Figures  `json:"summary"`           // the legitimate requests
	Abusive  *Figures `json:"abusive,omitempty"` // the abusive ones
	// localScore is set for the localscore workload.
	LocalScore *localScore `json:"localscore,omitempty"`
	Timeline   []Second    `json:"timeline"`
	Requests   []*Served   `json:"requests,omitempty"`
}

// loop is how requests arrive.
type loop string

// Loops.
const (
	ClosedLoop loop = "closed" // each client sends its next request when the last is done
	OpenLoop   loop = "open"   // requests arrive at their times, whatever is in flight
)

// kind says what a line of a load results file holds.
type kind string

// Line kinds.
const (
	kindRequest  kind = "request"
	kindLoad     kind = "load"
	kindCapacity kind = "capacity"
	kindTrial    kind = "probe" // one probe of a capacity search, as soon as it is judged
)

// Line is one line of a load results file: a request's outcome, a run's
// result, or a capacity search.
type Line struct {
	Kind     kind            `json:"kind"`
	Workload *Workload       `json:"workload,omitempty"`
	Scenario string          `json:"scenario,omitempty"`
	Request  *Served         `json:"request,omitempty"`
	Run      *Result         `json:"run,omitempty"`
	Capacity *CapacityResult `json:"capacity,omitempty"`
	Trial    *Trial          `json:"probe,omitempty"`
	Provenance
}

// TrialLine is a capacity probe's line of a results file, written as
// soon as it is judged so that a killed search keeps it.
func TrialLine(p Trial, w Workload, prov Provenance) Line {
	return Line{Kind: kindTrial, Workload: &w, Trial: &p, Provenance: prov}
}

// IsResults says whether a file's first line is a load results line.
func IsResults(path string) bool {
	is := false
	record.Lines(path, "JSON", func(n int, b []byte) error {
		var l struct{ Kind kind }
		is = json.Unmarshal(b, &l) == nil && (l.Kind == kindRequest || l.Kind == kindLoad || l.Kind == kindCapacity || l.Kind == kindTrial)
		return errStop
	})
	return is
}

var errStop = fmt.Errorf("stop")

// ReadResults reads the runs and capacity searches of a load results
// file (request lines are counted, not kept); a torn last line, as a
// killed run leaves, is skipped and reported. Probes that no search line
// follows (a search killed outright) are summed up as a search of their
// own that says so, and so are requests that no run line follows (a
// killed load run).
func ReadResults(path string) (lines []Line, requests int, torn bool, err error) {
	var probes, served []Line
	_, torn, err = record.Lines(path, "a JSON line of tokbench load or capacity", func(n int, b []byte) error {
		var l Line
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("%s line %d is not a line of tokbench load or capacity: %w", path, n, err)
		}
		switch {
		case l.Kind == kindRequest && l.Request != nil:
			requests++
			served = append(served, l)
		case l.Kind == kindTrial && l.Trial != nil:
			probes = append(probes, l)
		case l.Kind == kindCapacity && l.Capacity != nil:
			probes = nil
			lines = append(lines, l)
		case l.Kind == kindLoad && l.Run != nil:
			served = nil
			lines = append(lines, l)
		default:
			return fmt.Errorf("%s line %d: kind %q is not a load, capacity, probe or request line", path, n, l.Kind)
		}
		return nil
	})
	if err != nil {
		return nil, 0, false, err
	}
	if len(probes) > 0 {
		lines = append(lines, unfinished(probes))
	}
	if len(served) > 0 {
		lines = append(lines, killedRun(served))
	}
	return lines, requests, torn, nil
}

// unfinished sums up the probes of a search that wrote no result: the
// largest load that passed, as a lower bound.
func unfinished(probes []Line) Line {
	c := &CapacityResult{Stopped: "killed: the file holds its probes but no result"}
	for _, l := range probes {
		p := *l.Trial
		c.Trials = append(c.Trials, p)
		if !p.Pass || p.NotJudged {
			continue
		}
		if p.Rate > c.Rate || p.Concurrency > c.Concurrency {
			c.Rate, c.Concurrency, c.PerUserTs, c.OutputTps = p.Rate, p.Concurrency, p.Summary.PerUserTs.P50, p.Summary.OutputTps
		}
	}
	c.BoundBy = fmt.Sprintf("not known: the search was killed after %d probe(s); the sustainable load is at least the one given", len(probes))
	l := probes[len(probes)-1]
	return Line{Kind: kindCapacity, Workload: l.Workload, Capacity: c, Provenance: l.Provenance}
}

// killedRun sums up the requests of a run killed before its own line:
// over the time to the last one's end, without inter-token latencies (a
// request's line keeps only their percentiles).
func killedRun(reqs []Line) Line {
	outs := make([]*Served, len(reqs))
	secs := 0.0
	for i, l := range reqs {
		outs[i], secs = l.Request, max(secs, l.Request.EndS)
	}
	legit, abusive := split(outs)
	r := &Result{Scenario: reqs[0].Scenario + " (killed: its requests so far)", Summary: tally(legit, secs, 0, nil)}
	if len(abusive) > 0 {
		a := tally(abusive, secs, 0, nil)
		r.Abusive = &a
	}
	return Line{Kind: kindLoad, Run: r}
}
