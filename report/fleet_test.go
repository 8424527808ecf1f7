package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/record"
)

// A fleet of 40 classes and 3 builds reads at a glance: its text fits 120
// columns, each test of each build is a row (builds not pooled), and the
// slowest class of each is named.
func TestFleetFitsAndNamesItsSlowest(t *testing.T) {
	var recs []record.Record
	for c := range 40 {
		for b, build := range []string{"aaaaaaaa", "bbbbbbbb", "cccccccc"} {
			for _, test := range []string{"pp512", "tg128"} {
				r := record.Record{Test: test, Status: record.StatusOK, ModelID: "synth:llama-8b:q4_0"}
				r.Backend, r.CPUInfo, r.BuildCommit = "CPU", fmt.Sprintf("Vendor Model %02d 96-Core Processor", c), build
				r.Key.Model, r.Key.NPrompt = "m", 512
				if test == "tg128" {
					r.Key.NPrompt, r.Key.NGen = 0, 128
				}
				r.AvgTs = float64(100 + c + 1000*b)
				if c == 17 {
					r.AvgTs = 10 // the slowest class, in every row
				}
				recs = append(recs, r)
			}
		}
	}
	var b strings.Builder
	if err := writeClasses(&b, false, recs, "", fleetWidth); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > fleetWidth {
			t.Errorf("a line of %d columns: %s", n, l)
		}
	}
	slowest := strings.Count(out, "#18  10.00")
	if !strings.Contains(out, "40 hardware classes") || slowest != 6 || !strings.Contains(out, "#18 cpu-vendor-model-17-96-core-processor") ||
		!strings.Contains(out, "pp512 @ bbbbbbbb") {
		t.Errorf("slowest named %d times of 6:\n%s", slowest, out)
	}
}
