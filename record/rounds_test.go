package record

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/point"
)

// The interval covers a rerun: the repetitions' interval and the spread
// between processes, for both runs.
func TestCoverReruns(t *testing.T) {
	var r Result
	r.SetRates([]float64{1e9, 1e9, 1e9}, 100, 1)
	if r.CI95RepsTs != 0 || r.CI95Ts != 0 {
		t.Fatalf("identical repetitions: %v %v", r.CI95RepsTs, r.CI95Ts)
	}
	r.CoverReruns(0.02, "assumed")
	want := math.Sqrt2 * 1.96 * 0.02 * 100
	if math.Abs(r.CI95Ts-want) > 1e-9 || r.CIBasis != "assumed" {
		t.Errorf("ci95 %v, want %v", r.CI95Ts, want)
	}
	// Recomputed rates keep the spread between processes.
	r.SetRates([]float64{1e9, 1.1e9}, 100, 1)
	if r.CI95Ts <= r.CI95RepsTs || r.ProcessCV != 0.02 {
		t.Errorf("ci95 %v, reps %v, cv %v", r.CI95Ts, r.CI95RepsTs, r.ProcessCV)
	}
}

// Two repetitions 40% apart are flagged however few they are.
func TestUnsteady(t *testing.T) {
	var r Result
	r.SetRates([]float64{1e9, 1.4e9}, 100, 1)
	if w := r.Unsteady(); !strings.Contains(w, "2 repetitions vary by") || !strings.Contains(w, "raise -r") {
		t.Errorf("%q", w)
	}
	r.SetRates([]float64{1e9, 1.01e9}, 100, 1)
	if w := r.Unsteady(); w != "" {
		t.Errorf("steady flagged: %q", w)
	}
}

// A record with a figure JSON cannot hold is written as a failed test
// saying why, not dropped.
// Its line is the one a Writer writes of it.
func TestEncode(t *testing.T) {
	r := Record{Test: "tg8", Status: StatusOK}
	r.AvgTs = math.Inf(1)
	w, line := Encode(r)
	if w.Status != StatusFailed || !strings.Contains(w.Reason, "cannot be written") || w.Test != "tg8" {
		t.Errorf("%+v", w)
	}
	var back Record
	if err := json.Unmarshal(line, &back); err != nil || back.Reason != w.Reason {
		t.Errorf("%s: %v", line, err)
	}
	ok := Record{Test: "tg8", Status: StatusOK, Settings: Settings{Shape: point.Shape{NUBatch: 7}}}
	w, line = Encode(ok)
	want, _ := jsonLine(ok)
	if w.Status != StatusOK || string(line) != string(want) {
		t.Errorf("a good record changed: %s, want %s", line, want)
	}
}

// A line whose JSON could hold a round count, in any spelling
// encoding/json reads as one, is decoded; one that cannot is skipped.
func TestMayHoldRounds(t *testing.T) {
	for line, want := range map[string]bool{
		`{"test":"tg8","rounds":3,"round":0}`: true,
		`{"test":"tg8","ROUNDS":3}`:           true,
		`{"test":"tg8","RoUnDs":3}`:           true,
		`{"test":"tg8","\u0072ounds":3}`:      true,
		`{"test":"tg8","roundſ":3}`:           true,
		`{"rounds":3}`:                        true,
		`{"test":"tg8","grounds":3}`:          false,
		`{"test":"tg8","round":2}`:            false,
		`{"test":"tg8","avg_ts":1}`:           false,
		`{"test":"rounds`:                     false,
		``:                                    false,
	} {
		if got := mayHoldRounds([]byte(line)); got != want {
			t.Errorf("%s: %v, want %v", line, got, want)
		}
	}
}
