package load

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// curve is an engine whose step takes 2 ms plus 1 ms per sequence in it:
// inter-token latency grows with concurrency along a known line.
type curve struct {
	seqs  map[int]bool
	clock *fakeClock
}

func (c *curve) BatchCapacity() int        { return 1024 }
func (c *curve) Add(seq, pos, n int) error { c.seqs[seq] = true; return nil }
func (c *curve) Remove(int)                {}
func (c *curve) Decode() error {
	c.clock.Sleep(2*time.Millisecond + time.Duration(len(c.seqs))*time.Millisecond)
	c.seqs = map[int]bool{}
	return nil
}

func TestCapacityFindsTheKnownAnswer(t *testing.T) {
	w := Workload{Name: "t", Prompt: dist{Kind: "fixed", A: 4}, Output: dist{Kind: "fixed", A: 16}}
	slos, _ := ParseSLOs("itl_p99=12.5ms")
	clk := newClock()
	srv := func(slots int) (Engine, func(), error) {
		if slots > 40 {
			return nil, nil, fmt.Errorf("KV cache of %d sequences does not fit", slots)
		}
		return &curve{seqs: map[int]bool{}, clock: clk}, func() {}, nil
	}
	res, err := Capacity(context.Background(), srv, w, slos, CapacityOptions{MaxConcurrency: 64, RequestsPerClient: 6, Seed: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// 2 + c <= 12.5 ms: c <= 10, exactly, on the simulated clock.
	if res.Concurrency != 10 {
		t.Errorf("capacity %d, want 10; trials %+v", res.Concurrency, res.Trials)
	}
	if res.PerUserTs <= 0 || res.BoundBy == "" || len(res.Trials) < 4 {
		t.Errorf("result %+v", res)
	}
	// A memory limit below the latency limit binds instead.
	srv2 := func(slots int) (Engine, func(), error) {
		if slots > 3 {
			return nil, nil, fmt.Errorf("KV cache of %d sequences does not fit", slots)
		}
		return &curve{seqs: map[int]bool{}, clock: clk}, func() {}, nil
	}
	res, err = Capacity(context.Background(), srv2, w, slos, CapacityOptions{MaxConcurrency: 64, RequestsPerClient: 6, Seed: 1, Clock: clk})
	if err != nil || res.Concurrency != 3 || res.BoundBy[:6] != "memory" {
		t.Errorf("memory-bound: %v %+v", err, res)
	}
	if _, err := Capacity(context.Background(), srv, w, nil, CapacityOptions{MaxConcurrency: 4}); err == nil {
		t.Error("no SLO accepted")
	}
}

func TestCapacityOpenLoop(t *testing.T) {
	// 4 slots, each request 16 steps of at most 6 ms: the server turns
	// over at most 4/0.096 s, about 42 requests per second; beyond it the
	// queue, and TTFT, grow without bound. A TTFT of 25 ms (four full
	// steps) allows little queueing: the answer lies below that rate.
	w := Workload{Name: "t", Prompt: dist{Kind: "fixed", A: 4}, Output: dist{Kind: "fixed", A: 16}}
	slos, _ := ParseSLOs("ttft_p90=25ms")
	clk := newClock()
	srv := func(slots int) (Engine, func(), error) {
		return &curve{seqs: map[int]bool{}, clock: clk}, func() {}, nil
	}
	res, err := Capacity(context.Background(), srv, w, slos, CapacityOptions{Slots: 4, MaxRate: 320, Requests: 28, Seed: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sustainable %.1f/s", res.Rate)
	if res.Rate < 15 || res.Rate > 44 || res.Concurrency != 0 || res.Deciding == nil {
		t.Errorf("sustainable rate %.1f/s, want 15..44; probes %+v", res.Rate, res.Trials)
	}
	for _, p := range res.Trials {
		if p.Rate <= 0 || (p.Pass && p.Rate > res.Rate) {
			t.Errorf("probe %+v", p)
		}
	}
}

// flat is an engine whose step takes 1 ms per sequence in it: output t/s
// is the same at any concurrency, so more load only adds latency.
type flat struct{ curve }

func (f *flat) Decode() error {
	f.clock.Sleep(time.Duration(len(f.seqs)) * time.Millisecond)
	f.seqs = map[int]bool{}
	return nil
}

func TestCapacityStopsAtSaturation(t *testing.T) {
	w := Workload{Name: "t", Prompt: dist{Kind: "fixed", A: 4}, Output: dist{Kind: "fixed", A: 16}}
	slos, _ := ParseSLOs("e2e_p99=1h")
	clk := newClock()
	srv := func(int) (Engine, func(), error) {
		return &flat{curve{seqs: map[int]bool{}, clock: clk}}, func() {}, nil
	}
	var seen []Outlook
	o := CapacityOptions{MaxConcurrency: 64, RequestsPerClient: 4, Seed: 1, Clock: clk,
		Judged: func(_ Trial, out Outlook) error { seen = append(seen, out); return nil }}
	res, err := Capacity(context.Background(), srv, w, slos, o)
	if err != nil {
		t.Fatal(err)
	}
	// 1 -> 2 sequences gains nothing and doubles the latency: stop there.
	if res.Concurrency != 2 || res.Stopped != "saturated" || !strings.Contains(res.BoundBy, "saturated at 2 sequences") || len(res.Trials) != 2 {
		t.Errorf("saturation: %+v", res)
	}
	if len(seen) != 2 || seen[0].Trials != 1 || seen[0].Left < 6 || seen[0].Last <= 0 || seen[1].Elapsed <= seen[0].Elapsed {
		t.Errorf("outlooks %+v", seen)
	}
	o.KeepRaising, o.Judged = true, nil
	if res, _ := Capacity(context.Background(), srv, w, slos, o); res.Concurrency != 64 || res.Stopped != "" {
		t.Errorf("--keep-raising: %d, stopped %q", res.Concurrency, res.Stopped)
	}
}

func TestCapacityCutsACertainMiss(t *testing.T) {
	w := Workload{Name: "t", Prompt: dist{Kind: "fixed", A: 4}, Output: dist{Kind: "fixed", A: 16}}
	slos, _ := ParseSLOs("itl_p50=4.5ms")
	clk := newClock()
	srv := func(int) (Engine, func(), error) { return &curve{seqs: map[int]bool{}, clock: clk}, func() {}, nil }
	res, err := Capacity(context.Background(), srv, w, slos, CapacityOptions{MaxConcurrency: 16, RequestsPerClient: 8, Seed: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// 2 + c <= 4.5 ms: c = 2 passes; 4 (6 ms a step) misses every token,
	// which is certain once half the steady tokens are in; so does 3.
	if res.Concurrency != 2 || len(res.Trials) != 4 {
		t.Fatalf("%+v", res)
	}
	p := res.Trials[3]
	if p.Pass || p.Cut == "" || p.NotJudged || p.Summary.Completed >= 4*7 || p.Summary.Completed == 0 {
		t.Errorf("failed probe not cut: %+v", p)
	}
	if res.Trials[1].Cut != "" {
		t.Errorf("a passing probe was cut: %+v", res.Trials[1])
	}
}

func TestCapacityMaxTimeAndInterrupt(t *testing.T) {
	w := Workload{Name: "t", Prompt: dist{Kind: "fixed", A: 4}, Output: dist{Kind: "fixed", A: 16}}
	slos, _ := ParseSLOs("itl_p99=12.5ms")
	clk := newClock()
	srv := func(int) (Engine, func(), error) { return &curve{seqs: map[int]bool{}, clock: clk}, func() {}, nil }
	o := CapacityOptions{MaxConcurrency: 64, RequestsPerClient: 6, Seed: 1, Clock: clk}
	full, _ := Capacity(context.Background(), srv, w, slos, o)
	first := full.Trials[0].End.Sub(full.Trials[0].Start)
	// The first probe's pace says a second fits, but the second takes
	// longer (twice the clients, slower steps): it is cut at the limit
	// and not judged.
	o.MaxTime = 2*first + first/5
	res, err := Capacity(context.Background(), srv, w, slos, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Concurrency != 1 || !strings.Contains(res.Stopped, "--max-time") || len(res.Trials) != 2 ||
		!res.Trials[1].NotJudged || res.Trials[1].Pass || !strings.Contains(res.BoundBy, "at least") {
		t.Errorf("max time: %+v", res)
	}
	// An interruption after the second probe: both are kept, the answer is 2.
	ctx, cancel := context.WithCancel(context.Background())
	o.MaxTime, o.Judged = 0, func(p Trial, _ Outlook) error {
		if p.Concurrency == 2 {
			cancel()
		}
		return nil
	}
	res, err = Capacity(ctx, srv, w, slos, o)
	if err != nil || res.Concurrency != 2 || res.Stopped != "interrupted" || len(res.Trials) != 2 {
		t.Errorf("interrupted: %v %+v", err, res)
	}
}
