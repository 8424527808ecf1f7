package load

import (
	"context"
	"fmt"
	"time"
)

// Engine is what the scheduler needs of a llama.cpp context
// (engine.Context has it); tests use a fake with a known latency curve.
type Engine interface {
	Add(seq, pos, n int) error
	Decode() error
	Remove(seq int)
	BatchCapacity() int
}

// Options say how requests are served.
type Options struct {
	Slots       int // sequences decoding at once (the context's n_seq_max)
	Concurrency int // closed loop: clients, each with one request in flight; 0: open loop (Request.At)
	MaxPrompt   int // guards: requests beyond these caps are rejected (0: no cap)
	MaxOutput   int
}

// Outcome is what happened to one request.
type Outcome struct {
	Request
	Status   string    `json:"status"` // ok, rejected, unfinished
	Reason   string    `json:"reason,omitempty"`
	QueueMs  float64   `json:"queue_ms"`
	TTFTMs   float64   `json:"ttft_ms"`
	E2EMs    float64   `json:"e2e_ms"`
	OutputTs float64   `json:"output_ts"` // tokens after the first over the time they took
	ITLMs    []float64 `json:"-"`
	ITLP50Ms float64   `json:"itl_p50_ms"`
	ITLP99Ms float64   `json:"itl_p99_ms"`
	arrived  time.Time
	admitted time.Time
	firstTok time.Time
	lastTok  time.Time
	pos, gen int
	seq      int
}

// Second is the state of the server over one second of the run.
type Second struct {
	T         int     `json:"t"`
	Queue     int     `json:"queue"`     // waiting requests (at the second's end)
	Active    int     `json:"active"`    // sequences in the context
	KVUsed    int     `json:"kv_used"`   // cells held by active sequences
	OutputTps float64 `json:"output_ts"` // tokens generated in the second
}

// Run serves requests through eng until all are done (or ctx ends) and
// returns each request's outcome, the per-second timeline and the
// scheduler's own share of the wall time (everything outside Decode).
func Run(ctx context.Context, eng Engine, reqs []Request, o Options) ([]*Outcome, []Second, float64, error) {
	if o.Slots < 1 {
		return nil, nil, 0, fmt.Errorf("slots %d: need at least 1", o.Slots)
	}
	outs := make([]*Outcome, len(reqs))
	for i := range reqs {
		outs[i] = &Outcome{Request: reqs[i], seq: -1}
	}
	start := time.Now()
	var queue []*Outcome
	slots := make([]*Outcome, o.Slots)
	next := 0 // next request not yet arrived
	inFlight := 0
	done := 0
	var timeline []Second
	var decodeTime time.Duration
	arrive := func(out *Outcome, now time.Time) {
		out.arrived = now
		if (o.MaxPrompt > 0 && out.Prompt > o.MaxPrompt) || (o.MaxOutput > 0 && out.Output > o.MaxOutput) {
			out.Status = "rejected"
			out.Reason = fmt.Sprintf("prompt %d / output %d tokens exceed the caps of %d / %d", out.Prompt, out.Output, o.MaxPrompt, o.MaxOutput)
			done++
			return
		}
		queue = append(queue, out)
		inFlight++
	}
	for done < len(outs) {
		if ctx.Err() != nil {
			break
		}
		now := time.Now()
		el := now.Sub(start).Seconds()
		// Arrivals: a closed loop keeps Concurrency requests in flight; an
		// open loop lets requests in at their times.
		for next < len(outs) {
			if o.Concurrency > 0 {
				if inFlight >= o.Concurrency {
					break
				}
			} else if outs[next].At > el {
				break
			}
			outs[next].Client = next % max(o.Concurrency, 1)
			arrive(outs[next], now)
			next++
		}
		for i := range slots {
			if slots[i] == nil && len(queue) > 0 {
				slots[i], queue = queue[0], queue[1:]
				slots[i].seq, slots[i].admitted = i, now
			}
		}
		// Decode tokens first (one per generating request), then prefill
		// chunks with what is left of the batch.
		budget := eng.BatchCapacity()
		type part struct {
			out *Outcome
			n   int
		}
		var parts []part
		for _, s := range slots {
			if s != nil && s.pos >= s.Prompt && budget > 0 {
				parts = append(parts, part{s, 1})
				budget--
			}
		}
		for _, s := range slots {
			if s != nil && s.pos < s.Prompt && budget > 0 {
				n := min(s.Prompt-s.pos, budget)
				parts = append(parts, part{s, n})
				budget -= n
			}
		}
		if len(parts) == 0 {
			if next < len(outs) && o.Concurrency == 0 {
				time.Sleep(min(time.Until(start.Add(time.Duration(outs[next].At*float64(time.Second)))), 50*time.Millisecond))
				continue
			}
			if inFlight == 0 {
				break
			}
		}
		for _, p := range parts {
			if err := eng.Add(p.out.seq, p.out.pos, p.n); err != nil {
				return outs, timeline, 0, err
			}
		}
		t0 := time.Now()
		if err := eng.Decode(); err != nil {
			return outs, timeline, 0, err
		}
		end := time.Now()
		decodeTime += end.Sub(t0)
		produced := 0
		for _, p := range parts {
			s := p.out
			s.pos += p.n
			switch {
			case s.pos == s.Prompt && s.gen == 0:
				// The prefill's last chunk gave the first token's logits.
				s.firstTok, s.lastTok, s.gen = end, end, 1
				produced++
			case s.gen > 0:
				s.ITLMs = append(s.ITLMs, float64(end.Sub(s.lastTok).Microseconds())/1000)
				s.lastTok = end
				s.gen++
				produced++
			}
			if s.gen >= s.Output {
				finish(s, end)
				eng.Remove(s.seq)
				slots[s.seq] = nil
				inFlight--
				done++
			}
		}
		sec := int(end.Sub(start).Seconds())
		for len(timeline) <= sec {
			timeline = append(timeline, Second{T: len(timeline)})
		}
		cur := &timeline[sec]
		cur.OutputTps += float64(produced)
		cur.Queue, cur.Active, cur.KVUsed = len(queue), 0, 0
		for _, s := range slots {
			if s != nil {
				cur.Active++
				cur.KVUsed += s.pos
			}
		}
	}
	for _, out := range outs {
		if out.Status == "" {
			out.Status, out.Reason = "unfinished", "the run ended first"
		}
	}
	wall := time.Since(start)
	overhead := 0.0
	if wall > 0 {
		overhead = 100 * (1 - decodeTime.Seconds()/wall.Seconds())
	}
	return outs, timeline, overhead, nil
}

func finish(s *Outcome, end time.Time) {
	s.Status = "ok"
	s.QueueMs = ms(s.admitted.Sub(s.arrived))
	s.TTFTMs = ms(s.firstTok.Sub(s.arrived))
	s.E2EMs = ms(end.Sub(s.arrived))
	if d := end.Sub(s.firstTok).Seconds(); d > 0 {
		s.OutputTs = float64(s.gen-1) / d
	}
	s.ITLP50Ms, s.ITLP99Ms = pct(s.ITLMs, 50), pct(s.ITLMs, 99)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
