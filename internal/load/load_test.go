package load

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fake is an engine whose step takes 1 ms plus 5 µs per token, and that
// checks the scheduler's use of sequences.
type fake struct {
	t       *testing.T
	clock   *fakeClock
	pending int
	live    map[int]int // seq -> next position expected
	maxLive int
	steps   int
}

func newFake(t *testing.T) *fake { return &fake{t: t, clock: newClock(), live: map[int]int{}} }

func (f *fake) clk() *fakeClock { return f.clock }

func (f *fake) BatchCapacity() int { return 256 }

func (f *fake) Add(seq, pos, n int) error {
	if next, ok := f.live[seq]; ok && next != pos {
		f.t.Errorf("seq %d: tokens at %d, expected %d", seq, pos, next)
	} else if !ok && pos != 0 {
		f.t.Errorf("new seq %d starts at %d", seq, pos)
	}
	f.live[seq] = pos + n
	f.maxLive = max(f.maxLive, len(f.live))
	f.pending += n
	return nil
}

func (f *fake) Decode() error {
	if f.pending > f.BatchCapacity() {
		f.t.Errorf("batch of %d tokens", f.pending)
	}
	f.clock.Sleep(time.Millisecond + time.Duration(f.pending)*5*time.Microsecond)
	f.pending = 0
	f.steps++
	return nil
}

func (f *fake) Remove(seq int) { delete(f.live, seq) }

func small() Workload {
	return Workload{Name: "t", Prompt: dist{Kind: "uniform", A: 8, B: 300}, Output: dist{Kind: "uniform", A: 2, B: 12}}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, b := small().Generate(50, 7), small().Generate(50, 7)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different requests")
	}
	if reflect.DeepEqual(a, small().Generate(50, 8)) {
		t.Error("different seeds, same requests")
	}
	for _, r := range a {
		if r.Prompt < 8 || r.Prompt > 300 || r.Output < 2 || r.Output > 12 {
			t.Fatalf("request %+v outside the workload", r)
		}
	}
}

func TestClosedLoop(t *testing.T) {
	f := newFake(t)
	reqs := small().Generate(40, 1)
	outs, timeline, overhead, err := simulate(f, reqs, Options{Slots: 8, Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	if f.maxLive > 3 {
		t.Errorf("%d sequences at once with 3 clients", f.maxLive)
	}
	for _, o := range outs {
		if o.Status != "ok" || o.TTFTMs <= 0 || o.E2EMs < o.TTFTMs || len(o.ITLMs) != o.Output-1 {
			t.Fatalf("request %+v", o)
		}
	}
	// Simulated time passes only in Decode, and three clients always have
	// work: the scheduler's own share of the wall time is nil.
	if len(timeline) == 0 || overhead != 0 {
		t.Errorf("timeline %d seconds, overhead %.1f%%", len(timeline), overhead)
	}
	s := tally(outs, 1, overhead, nil)
	if s.Completed != 40 || s.TTFTMs.P50 > s.TTFTMs.P99 || s.ITLMs.P99 < 1 {
		t.Errorf("summary %+v", s)
	}
}

func TestOpenLoopRate(t *testing.T) {
	for _, b := range []float64{1, 0.25, 4} {
		reqs := make([]Request, 4000)
		arrivals(reqs, 10, b, 3)
		var gaps []float64
		prev := 0.0
		for _, r := range reqs {
			gaps = append(gaps, r.At-prev)
			prev = r.At
		}
		var mean, sq float64
		for _, g := range gaps {
			mean += g
		}
		mean /= float64(len(gaps))
		for _, g := range gaps {
			sq += (g - mean) * (g - mean)
		}
		cv2 := sq / float64(len(gaps)) / (mean * mean)
		// Gamma gaps of shape b (vLLM's burstiness): CV² 1/b. 4000 gaps: the
		// mean within about 3 standard errors.
		if want := 1 / b; math.Abs(mean-0.1) > 0.005*math.Sqrt(want) || math.Abs(cv2-want) > 0.3*want {
			t.Errorf("burstiness %g: mean gap %.4f (want 0.1), CV² %.2f (want %g)", b, mean, cv2, want)
		}
	}
	f := newFake(t)
	reqs := small().Generate(20, 2)
	arrivals(reqs, 200, 1, 2)
	outs, _, _, err := simulate(f, reqs, Options{Slots: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if o.Status != "ok" {
			t.Fatalf("open loop request %+v", o)
		}
	}
}

func TestCapsReject(t *testing.T) {
	reqs := []Request{{ID: 0, Prompt: 100, Output: 4}, {ID: 1, Prompt: 5000, Output: 4}, {ID: 2, Prompt: 10, Output: 900}}
	outs, _, _, err := simulate(newFake(t), reqs, Options{Slots: 2, Concurrency: 2, Guards: Guards{MaxPrompt: 4096, MaxOutput: 512}})
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].Status != "ok" || outs[1].Status != "rejected" || outs[2].Status != "rejected" ||
		!strings.Contains(outs[1].Reason, "prompt 5000") || !strings.Contains(outs[2].Reason, "caps of 4096 / 512") {
		t.Errorf("%+v %+v %+v", outs[0], outs[1], outs[2])
	}
}

func TestPercentilesAndSLOs(t *testing.T) {
	slos, err := ParseSLOs("ttft_p99=2s,itl=50ms")
	if err != nil || len(slos) != 2 || slos[1].Percentile != 99 || slos[0].Limit != 2*time.Second {
		t.Fatalf("%v %+v", err, slos)
	}
	outs := []*Served{
		{Status: "ok", TTFTMs: 100, ITLMs: []float64{10, 20}, E2EMs: 200},
		{Status: "ok", TTFTMs: 3000, ITLMs: []float64{10}, E2EMs: 3100},
		{Status: "ok", TTFTMs: 100, ITLMs: []float64{80}, E2EMs: 300},
	}
	s := tally(outs, 2, 0, slos)
	if s.Goodput != 0.5 || math.Abs(s.GoodFraction-1.0/3) > 1e-9 || s.SLOsMet["ttft_p99<=2s"] {
		t.Errorf("goodput %v fraction %v slos %v", s.Goodput, s.GoodFraction, s.SLOsMet)
	}
	for _, bad := range []string{"ttft", "foo_p99=1s", "ttft_p0=1s", "itl=-1s"} {
		if _, err := ParseSLOs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseDist(t *testing.T) {
	for s, want := range map[string]dist{"64": {Kind: "fixed", A: 64}, "uniform:32-256": {Kind: "uniform", A: 32, B: 256},
		"normal:128,48": {Kind: "normal", A: 128, B: 48}, "list:16,64": {Kind: "empirical", Values: []int{16, 64}}} {
		got, err := parseDist(s)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v %v", s, got, err)
		}
	}
	for _, bad := range []string{"x", "uniform:9-3", "normal:0,1", "list:", "zipf:1", "normal:nan,1", "normal:128,nan", "uniform:1-inf", "normal:1e308,1"} {
		if _, err := parseDist(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The timeline is a rate in every second, the last (partial) one too: a
// steady engine gives each whole second's rate again in the last.
func TestTimelineLastSecondIsARate(t *testing.T) {
	f := newFake(t)
	// One client, 1-token prompts: every step gives one token in about
	// 1 ms, for about 2.5 s.
	reqs := make([]Request, 50)
	for i := range reqs {
		reqs[i] = Request{ID: i, Prompt: 1, Output: 50}
	}
	_, timeline, _, err := simulate(f, reqs, Options{Slots: 1, Concurrency: 1})
	if err != nil || len(timeline) != 3 {
		t.Fatalf("%v: %d seconds", err, len(timeline))
	}
	whole, last := timeline[1].OutputTps, timeline[2].OutputTps
	if math.Abs(last-whole)/whole > 0.02 {
		t.Errorf("last second %.1f t/s, a whole one %.1f", last, whole)
	}
}
