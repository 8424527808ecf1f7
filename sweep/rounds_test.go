package sweep

import (
	"math"
	"testing"

	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// drifting is a fake engine whose speed falls linearly with time: each
// repetition is one tick, and at tick t every point runs at 100 - t/2 t/s.
type drifting struct{ tick int }

func (d *drifting) measure(p point.Point, round, rounds int) record.Record {
	r := record.Record{Key: p.Key(), Status: record.StatusOK, Round: round, Rounds: rounds}
	r.NGen, r.NParallel = p.NGen, 1
	var ns []float64
	for i := 0; i < p.Reps; i++ {
		ts := 100 - float64(d.tick)/2
		ns = append(ns, float64(p.NGen)*1e9/ts)
		d.tick++
	}
	r.SetRates(ns, p.NGen, 1)
	return r
}

// Two equal points, first and last of a sweep of six, on a machine that
// slows down: measured once each, the last looks far slower; measured in
// four rounds, each is early in one round and late in another, and their
// merged medians agree.
func TestRoundsCancelDrift(t *testing.T) {
	var points []point.Point
	for i := 0; i < 6; i++ {
		p := point.Point{ModelID: string(rune('a' + i)), NGen: 16, Reps: 3, Parallel: 1}
		points = append(points, p)
	}
	first, last := points[0].Key(), points[5].Key()
	spread := func(rounds int) float64 {
		eng := &drifting{}
		var recs []record.Record
		for r := 1; r <= rounds; r++ {
			for _, p := range roundOrder(points, r, rounds, false, 0) {
				recs = append(recs, eng.measure(p, r, rounds))
			}
		}
		if rounds > 1 {
			recs = append(recs, mergeRounds(recs, rounds)...)
		}
		median := map[point.Key]float64{}
		for _, r := range record.Final(recs) {
			median[r.Key] = r.MedianTs
		}
		return math.Abs(median[first]-median[last]) / median[first]
	}
	once, four := spread(1), spread(4)
	t.Logf("first vs last point: %.1f%% apart measured once, %.1f%% in 4 rounds", 100*once, 100*four)
	if once < 0.05 || four > 1e-9 {
		t.Errorf("equal points %.1f%% apart once, %.1f%% with rounds: rounds must cancel the drift", 100*once, 100*four)
	}
}

func TestRoundOrder(t *testing.T) {
	var ps []point.Point
	for i := 0; i < 4; i++ {
		ps = append(ps, point.Point{NGen: i + 1})
	}
	names := func(o []point.Point) (s []int) {
		for _, p := range o {
			s = append(s, p.NGen)
		}
		return s
	}
	// Round 2 reverses round 1; round 3 is round 1 again.
	if got := names(roundOrder(ps, 2, 4, false, 0)); got[0] != 4 || got[3] != 1 {
		t.Errorf("round 2 of 4: %v", got)
	}
	if got := names(roundOrder(ps, 3, 4, false, 0)); got[0] != 1 || got[3] != 4 {
		t.Errorf("round 3 of 4: %v", got)
	}
	a, b := names(roundOrder(ps, 1, 2, true, 7)), names(roundOrder(ps, 1, 2, true, 7))
	if len(a) != 4 || a[0] != b[0] || a[3] != b[3] {
		t.Errorf("a shuffle is the seed's: %v %v", a, b)
	}
}

// A point's rounds merge into one record with every round's samples;
// Final keeps the merged record in their place.
func TestMergeRounds(t *testing.T) {
	p := point.Point{ModelID: "m", NGen: 10, Reps: 2, Parallel: 1}
	eng := &drifting{}
	r1, r2 := eng.measure(p, 1, 2), eng.measure(p, 2, 2)
	r1.Noise, r2.Noise = &host.Noise{OtherCPUPct: 3, Quiet: true}, &host.Noise{OtherCPUPct: 90, Warnings: []string{"busy"}}
	m := mergeRounds([]record.Record{r2, r1}, 2)
	if len(m) != 1 || m[0].Rounds != 2 || m[0].Round != 0 || len(m[0].SamplesTs) != 4 || m[0].Reps != 4 ||
		m[0].SamplesRound[0] != 1 || m[0].SamplesRound[3] != 2 || m[0].MaxTs != 100 {
		t.Fatalf("merged %+v", m)
	}
	if n := m[0].Noise; n == nil || n.OtherCPUPct != 90 || n.Quiet || len(n.Warnings) != 1 || n.Warnings[0] != "round 2: busy" {
		t.Errorf("merged noise %+v", n)
	}
	if got := record.Final([]record.Record{r1, r2, m[0]}); len(got) != 1 || got[0].Rounds != 2 || got[0].Round != 0 {
		t.Errorf("final %+v", got)
	}
	if got := mergeRounds([]record.Record{r1}, 2); len(got) != 0 {
		t.Error("merged a point with a round missing")
	}
}
