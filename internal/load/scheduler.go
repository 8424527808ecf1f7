package load

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"
)

// slot is one sequence of the context.
type slot struct {
	cur  *Served
	conv int // the conversation whose cells it kept (-1: none)
	kept int
	used time.Time
}

type bucket struct {
	level float64
	at    time.Time
}

// idle is a closed-loop client that may send at a time: now, or when a
// rejection's retry-after has passed.
type idle struct {
	client int
	at     time.Time
}

// sched is one run's state.
type sched struct {
	o       Options
	clock   clock
	eng     Engine
	start   time.Time
	outs    []*Served
	streams [2][]*Served // legitimate, abusive: conversation starts in order
	nexts   [2]int
	idle    []idle // closed loop: clients with nothing in flight
	queue   []*Served
	slots   []slot
	served  map[int]int // tokens processed per client (fairness)
	budgets map[int]*bucket
	legit   int // legitimate requests not yet done
}

// run serves requests through eng until every legitimate request is done
// (abusive clients send until then) or ctx ends, and returns each
// request's outcome, the per-second timeline and the scheduler's own
// share of the wall time (everything outside Decode).
func run(ctx context.Context, eng Engine, reqs []Request, o Options) ([]*Served, []Second, float64, error) {
	if o.Slots < 1 {
		return nil, nil, 0, fmt.Errorf("slots %d: need at least 1", o.Slots)
	}
	if o.Concurrency > 0 && o.AbusiveClients >= o.Concurrency {
		return nil, nil, 0, fmt.Errorf("%d abusive clients of %d: leave at least one legitimate client", o.AbusiveClients, o.Concurrency)
	}
	s := &sched{o: o, clock: clockOr(o.Clock), eng: eng, slots: make([]slot, o.Slots), served: map[int]int{}, budgets: map[int]*bucket{}}
	s.setup(reqs)
	var timeline []Second
	var decodeTime time.Duration
	var err error
	for s.legit > 0 && ctx.Err() == nil {
		t0 := s.clock.Now()
		s.arrivals(t0)
		s.admit(t0)
		tokens, parts := s.batch()
		if len(parts) == 0 {
			if s.wait() {
				continue
			}
			break // nothing left to run
		}
		for _, p := range parts {
			if err = eng.Add(p.out.seq, p.out.pos, p.n); err != nil {
				break
			}
		}
		d0 := s.clock.Now()
		if err == nil {
			err = eng.Decode()
		}
		end := s.clock.Now()
		if err != nil {
			break
		}
		decodeTime += end.Sub(d0)
		produced := s.advance(parts, end)
		st := s.state()
		timeline = s.tick(timeline, end, produced, st)
		if s.o.Observer != nil {
			st.Tokens, st.Produced, st.Step, st.Decode = tokens, produced, end.Sub(t0), end.Sub(d0)
			s.o.Observer.Step(st)
		}
	}
	reason := "the run ended first"
	if s.legit == 0 {
		reason = "the legitimate traffic ended first"
	}
	for _, out := range s.outs {
		if out.Status == "" && !out.arrived.IsZero() {
			out.Status, out.Reason = statusUnfinished, reason
		} else if out.Status == "" {
			out.Status, out.Reason = statusUnsent, reason
		}
	}
	wall := s.clock.Now().Sub(s.start)
	// The last second is partial: its tokens over the time it had, so
	// that the timeline is a rate throughout.
	if n := len(timeline); n > 0 {
		if frac := wall.Seconds() - float64(timeline[n-1].T); frac > 0 && frac < 1 {
			timeline[n-1].OutputTps /= frac
		}
	}
	overhead := 0.0
	if wall > 0 {
		overhead = 100 * (1 - decodeTime.Seconds()/wall.Seconds())
	}
	return s.outs, timeline, overhead, err
}

func (s *sched) setup(reqs []Request) {
	s.start = s.clock.Now()
	s.outs = make([]*Served, len(reqs))
	var prev [2]*Served
	for i := range reqs {
		out := &Served{Request: reqs[i], seq: -1}
		s.outs[i] = out
		k := stream(out)
		if p := prev[k]; p != nil && p.Conv == out.Conv && out.Turn == p.Turn+1 {
			p.next = out
		} else {
			s.streams[k] = append(s.streams[k], out)
		}
		prev[k] = out
		if !out.Abusive {
			s.legit++
		}
	}
	for c := s.o.Concurrency - 1; c >= 0; c-- {
		s.idle = append(s.idle, idle{client: c, at: s.start})
	}
	for i := range s.slots {
		s.slots[i].conv = -1
	}
}

func stream(o *Served) int {
	if o.Abusive {
		return 1
	}
	return 0
}

// convKey names a conversation across both streams.
func convKey(o *Served) int { return o.Conv<<1 | stream(o) }

// arrivals lets requests in: a closed loop gives each idle client its
// next conversation; an open loop lets conversations in at their times.
func (s *sched) arrivals(now time.Time) {
	if s.o.Concurrency > 0 {
		for i := len(s.idle) - 1; i >= 0; i = min(i-1, len(s.idle)-1) {
			if s.idle[i].at.After(now) {
				continue // told to retry later
			}
			c := s.idle[i].client
			s.idle = append(s.idle[:i], s.idle[i+1:]...)
			k := 0
			if c < s.o.AbusiveClients {
				k = 1
			}
			if s.nexts[k] == len(s.streams[k]) {
				continue // this client has nothing more to send
			}
			out := s.streams[k][s.nexts[k]]
			s.nexts[k]++
			s.arrive(out, c, now)
		}
		return
	}
	for k := range s.streams {
		for s.nexts[k] < len(s.streams[k]) && !s.arrival(s.streams[k][s.nexts[k]]).After(now) {
			out := s.streams[k][s.nexts[k]]
			s.nexts[k]++
			clients := cmp.Or(s.o.Clients, s.o.Slots)
			c := out.Conv % clients
			if out.Abusive {
				c = clients + out.Conv%max(s.o.AbusiveClients, 1)
			}
			// It arrived at its time, not when a step ended and let it in:
			// its wait counts from then (no coordinated omission).
			s.arrive(out, c, s.arrival(out))
		}
	}
}

// wait sleeps until the next open-loop arrival or the end of a closed-loop
// client's retry-after (at most 50 ms); false when nothing is coming.
func (s *sched) wait() bool {
	var next time.Time
	soonest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, c := range s.idle {
		k := 0
		if c.client < s.o.AbusiveClients {
			k = 1
		}
		if s.nexts[k] < len(s.streams[k]) {
			soonest(c.at)
		}
	}
	for k := range s.streams {
		if s.o.Concurrency == 0 && s.nexts[k] < len(s.streams[k]) {
			soonest(s.arrival(s.streams[k][s.nexts[k]]))
		}
	}
	if next.IsZero() {
		return false
	}
	if d := min(next.Sub(s.clock.Now()), 50*time.Millisecond); d > 0 {
		s.clock.Sleep(d)
	}
	return true
}

// arrival is when an open loop's request arrives: wait and arrivals must
// agree to the nanosecond, or a simulated clock never gets there.
func (s *sched) arrival(o *Served) time.Time {
	return s.start.Add(time.Duration(o.At * float64(time.Second)))
}

func (s *sched) arrive(out *Served, client int, now time.Time) {
	out.Client, out.arrived = client, now
	g := s.o.Guards
	switch {
	case !g.admits(out.Request):
		s.reject(out, fmt.Sprintf("prompt %d / output %d tokens exceed the caps of %d / %d", out.Prompt, out.Output, g.MaxPrompt, g.MaxOutput), now)
	case g.ClientBudget > 0:
		if wait, ok := s.pay(out, now); !ok {
			s.reject(out, fmt.Sprintf("client %d is over its budget of %d tokens per minute (retry after %.1fs)", client, g.ClientBudget, wait.Seconds()), now.Add(wait))
			return
		}
		s.queue = append(s.queue, out)
	default:
		s.queue = append(s.queue, out)
	}
}

// pay takes a request's tokens from its client's bucket, if it holds
// them; if not, it says how long until it would (a request larger than the
// whole budget: never, and no wait is asked).
func (s *sched) pay(out *Served, now time.Time) (time.Duration, bool) {
	b := s.budgets[out.Client]
	capacity := float64(s.o.ClientBudget)
	if b == nil {
		b = &bucket{level: capacity, at: now}
		s.budgets[out.Client] = b
	}
	b.level = min(capacity, b.level+now.Sub(b.at).Seconds()*capacity/60)
	b.at = now
	cost := float64(out.Prompt + out.Output)
	if cost > capacity {
		return 0, false
	}
	if cost > b.level {
		// Rounded up to the millisecond: a client that retries right on
		// time must find the tokens there, not a rounding error short.
		ms := math.Ceil((cost - b.level) / (capacity / 60) * 1000)
		return time.Duration(ms) * time.Millisecond, false
	}
	b.level -= cost
	return 0, true
}

// reject turns a request away; its client sends again at retry (a
// closed-loop client told to wait, as by a 429's Retry-After).
func (s *sched) reject(out *Served, reason string, retry time.Time) {
	out.Status, out.Reason = statusRejected, reason
	s.release(out, retry)
}

// release ends a request: its conversation's next turn arrives from the
// same client; otherwise (or if it was rejected, which ends the
// conversation) a closed-loop client is free again at time at: now, or
// after a retry-after.
func (s *sched) release(out *Served, at time.Time) {
	s.done(out)
	if out.Status != statusRejected && out.next != nil {
		s.arrive(out.next, out.Client, at)
		return
	}
	for n := out.next; n != nil; n = n.next {
		n.Client, n.arrived = out.Client, at
		n.Status, n.Reason = statusRejected, fmt.Sprintf("turn %d of the conversation was rejected", out.Turn)
		s.done(n)
	}
	if s.o.Concurrency > 0 {
		s.idle = append(s.idle, idle{client: out.Client, at: at})
	}
}

func (s *sched) done(out *Served) {
	out.EndS = s.clock.Now().Sub(s.start).Seconds()
	if !out.Abusive {
		s.legit--
	}
	if s.o.Observer != nil {
		s.o.Observer.Done(out)
	}
}

// admit gives free slots to queued requests: the slot that kept the
// request's conversation if it is free, else an empty one, else the one
// unused longest (its kept cells are dropped).
func (s *sched) admit(now time.Time) {
	for len(s.queue) > 0 {
		free := -1
		for i := range s.slots {
			if s.slots[i].cur == nil && (free < 0 || s.slots[i].kept < s.slots[free].kept ||
				(s.slots[i].kept == s.slots[free].kept && s.slots[i].used.Before(s.slots[free].used))) {
				free = i
			}
		}
		if free < 0 {
			return
		}
		qi := s.pick()
		out := s.queue[qi]
		s.queue = append(s.queue[:qi], s.queue[qi+1:]...)
		for i := range s.slots {
			if s.slots[i].cur == nil && s.slots[i].kept > 0 && s.slots[i].conv == convKey(out) {
				free = i
			}
		}
		sl := &s.slots[free]
		if sl.conv == convKey(out) && sl.kept <= out.Prefix {
			out.pos, out.Reused = sl.kept, sl.kept
		} else if sl.kept > 0 {
			s.eng.Remove(free)
		}
		sl.cur, sl.conv, sl.kept = out, convKey(out), 0
		out.seq, out.admitted = free, now
	}
}

// pick is the queued request to admit next: the first, or with fair
// scheduling the first of the client served least.
func (s *sched) pick() int {
	if !s.o.Fair {
		return 0
	}
	best := 0
	for i, q := range s.queue {
		if s.served[q.Client] < s.served[s.queue[best].Client] {
			best = i
		}
	}
	return best
}

type part struct {
	out *Served
	n   int
}

// batch is the next step: one token for each generating request, then
// prefill chunks of the others with what is left of the batch.
func (s *sched) batch() (int, []part) {
	budget := s.eng.BatchCapacity()
	var parts []part
	active, prefilling := 0, 0
	for i := range s.slots {
		o := s.slots[i].cur
		if o == nil {
			continue
		}
		active++
		if o.pos >= o.Prompt && budget > 0 {
			parts = append(parts, part{o, 1})
			budget--
		} else if o.pos < o.Prompt {
			prefilling++
		}
	}
	chunk := budget
	if s.o.Fair && prefilling > 0 {
		// An even share of the step per active sequence: decode tokens
		// took one each, prefill takes at most as many as that share.
		chunk = max(1, (budget+active-prefilling)/active)
	}
	tokens := len(parts)
	for i := range s.slots {
		o := s.slots[i].cur
		if o != nil && o.pos < o.Prompt && budget > 0 {
			n := min(o.Prompt-o.pos, budget, chunk)
			parts = append(parts, part{o, n})
			budget -= n
			tokens += n
		}
	}
	return tokens, parts
}

// advance books what a step did: positions, first tokens, inter-token
// latencies, finished requests.
func (s *sched) advance(parts []part, end time.Time) int {
	produced := 0
	for _, p := range parts {
		o := p.out
		o.pos += p.n
		s.served[o.Client] += p.n
		switch {
		case o.pos == o.Prompt && o.gen == 0:
			// The prefill's last chunk gave the first token's logits.
			o.firstTok, o.lastTok, o.gen = end, end, 1
			produced++
		case o.gen > 0:
			o.ITLMs = append(o.ITLMs, float64(end.Sub(o.lastTok).Microseconds())/1000)
			o.lastTok = end
			o.gen++
			produced++
		}
		if o.gen >= o.Output {
			finish(o, end)
			sl := &s.slots[o.seq]
			sl.cur, sl.used = nil, end
			if o.next != nil {
				sl.kept = o.pos // the next turn resends all of it
			} else {
				s.eng.Remove(o.seq)
			}
			s.release(o, end)
		}
	}
	return produced
}

// state is the server now.
func (s *sched) state() StepStats {
	st := StepStats{Queue: len(s.queue)}
	for i := range s.slots {
		if o := s.slots[i].cur; o != nil {
			st.Active++
			st.KVUsed += o.pos
		}
		st.KVUsed += s.slots[i].kept
	}
	return st
}

// tick adds a step to the per-second timeline.
func (s *sched) tick(timeline []Second, end time.Time, produced int, st StepStats) []Second {
	sec := int(end.Sub(s.start).Seconds())
	for len(timeline) <= sec {
		if n := len(timeline); n > 0 && s.o.Observer != nil {
			s.o.Observer.Second(timeline[n-1])
		}
		timeline = append(timeline, Second{T: len(timeline)})
	}
	cur := &timeline[sec]
	cur.OutputTps += float64(produced)
	cur.Queue, cur.Active, cur.KVUsed = st.Queue, st.Active, st.KVUsed
	cur.Steps++
	return timeline
}
