package load

import (
	"context"
	"fmt"
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
	w := Workload{Name: "t", Prompt: Dist{Kind: "fixed", A: 4}, Output: Dist{Kind: "fixed", A: 16}}
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
	w := Workload{Name: "t", Prompt: Dist{Kind: "fixed", A: 4}, Output: Dist{Kind: "fixed", A: 16}}
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
