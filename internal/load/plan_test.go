package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMultiTurn(t *testing.T) {
	w := Workload{Name: "chat", Prompt: dist{Kind: "uniform", A: 4, B: 20}, Output: dist{Kind: "uniform", A: 2, B: 6}, Turns: dist{Kind: "uniform", A: 2, B: 4}}
	reqs := w.Generate(40, 5)
	for i, r := range reqs {
		if r.Turn == 0 {
			if r.Prefix != 0 {
				t.Fatalf("first turn %+v has a prefix", r)
			}
			continue
		}
		p := reqs[i-1]
		if p.Conv != r.Conv || p.Turn != r.Turn-1 || r.Prefix != p.Prompt+p.Output || r.Prompt <= r.Prefix {
			t.Fatalf("turn %+v after %+v", r, p)
		}
	}
	f := newFake(t) // checks that every sequence continues where its cells end
	outs, _, _, err := simulate(f, reqs, Options{Slots: 3, Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int]time.Time{}
	client := map[int]int{}
	for _, o := range outs {
		if o.Status != "ok" {
			t.Fatalf("%+v", o)
		}
		if o.Turn > 0 {
			// The turn came from the same client after the last one ended,
			// and its history was still in the slot (3 clients, 3 slots).
			if o.arrived.Before(ends[o.Conv]) || client[o.Conv] != o.Client || o.Reused != o.Prefix-1 {
				t.Errorf("turn %+v: arrived %v, previous ended %v, client %d", o.Request, o.arrived, ends[o.Conv], client[o.Conv])
			}
		}
		ends[o.Conv], client[o.Conv] = o.arrived.Add(time.Duration(o.E2EMs*1e6)), o.Client
	}
	s := tally(outs, 1, 0, nil)
	if s.PrefixShare <= 0.3 || s.PrefixReused < 0.8 {
		t.Errorf("prefix share %.2f, reused %.2f", s.PrefixShare, s.PrefixReused)
	}
	// Fewer slots than conversations: kept cells are dropped for others,
	// and positions still line up (the fake checks).
	if _, _, _, err := simulate(newFake(t), reqs, Options{Slots: 2, Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	// A rejected turn ends its conversation: the turns after it are not sent.
	conv := []Request{{ID: 0, Prompt: 10, Output: 4}, {ID: 1, Turn: 1, Prefix: 14, Prompt: 40, Output: 4}, {ID: 2, Turn: 2, Prefix: 44, Prompt: 50, Output: 4}}
	outs, _, _, err = simulate(newFake(t), conv, Options{Slots: 1, Concurrency: 1, Guards: Guards{MaxPrompt: 30}})
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].Status != "ok" || outs[1].Status != "rejected" || !strings.Contains(outs[1].Reason, "caps") ||
		outs[2].Status != "rejected" || outs[2].Reason != "turn 1 of the conversation was rejected" {
		t.Errorf("%+v\n%+v\n%+v", outs[0], outs[1], outs[2])
	}
}

func TestLocalScoreAndYAML(t *testing.T) {
	reqs := presets["localscore"].Generate(18, 1)
	if reqs[0].Prompt != 1024 || reqs[0].Output != 16 || reqs[8].Prompt != 16 || reqs[8].Output != 1536 || reqs[9] != (Request{ID: 9, Conv: 9, Prompt: 1024, Output: 16}) {
		t.Errorf("localscore requests %+v", reqs[:10])
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "support.yaml")
	os.WriteFile(good, []byte("prompt: uniform:32-64\noutput: {kind: normal, a: 50, b: 5}\nturns: 3\n"), 0o644)
	w, err := readWorkload(good)
	if err != nil || w.Name != "support" || w.Prompt.B != 64 || w.Output.Kind != "normal" || w.Turns.A != 3 {
		t.Fatalf("%+v %v", w, err)
	}
	for body, want := range map[string]string{
		"prompt: 32\noutput: 8\nburst: 2\n":   "field burst not found",
		"prompt: zipf:1\noutput: 8\n":         "use N, uniform",
		"prompt: 32\n":                        "output",
		"tests: [{pp: 0, tg: 4}]\n":           "at least 1",
		"prompt: {kind: uniform, a: 9, b: 3}": "need 1 <= a <= b",
	} {
		p := filepath.Join(dir, "bad.yaml")
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := readWorkload(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

// step is an engine whose step takes 0.5 ms plus 20 µs per token: a long
// prefill chunk makes everyone's next token late.
type step struct{ fake }

func (s *step) Decode() error {
	s.clock.Sleep(500*time.Microsecond + time.Duration(s.pending)*20*time.Microsecond)
	s.pending = 0
	return nil
}

func TestAbuseAndGuards(t *testing.T) {
	w := Workload{Name: "t", Prompt: dist{Kind: "uniform", A: 8, B: 32}, Output: dist{Kind: "fixed", A: 24}}
	plan := scenarios(w, 24, 3, Options{Slots: 4, Concurrency: 4}, arrival{}, Abuse{Fraction: 0.25, Shape: "long-prompt", Tokens: 4000}, Guards{})
	if len(plan) != 3 || plan[0].Options.Concurrency != 3 || plan[1].Options.AbusiveClients != 1 || !plan[2].Options.Fair || plan[2].Options.MaxPrompt != 32 {
		t.Fatalf("plan %+v", plan)
	}
	itl := map[string]float64{}
	for _, sc := range plan {
		outs, _, _, err := simulate(&step{*newFake(t)}, sc.Requests, sc.Options)
		if err != nil {
			t.Fatal(err)
		}
		legit, abusive := split(outs)
		s := tally(legit, 1, 0, nil)
		if s.Completed != 24 {
			t.Fatalf("%s: %d legitimate requests completed", sc.Name, s.Completed)
		}
		itl[sc.Name] = s.ITLMs.P90
		for _, a := range abusive {
			if a.Client != 0 || (sc.Name == "abuse + guards" && a.Status != "rejected" && a.Status != "unsent") {
				t.Errorf("%s: abusive %+v", sc.Name, a)
			}
		}
	}
	// A 4000-token prompt in 256-token chunks: legitimate tokens wait
	// about 5.6 ms instead of about 0.6 ms; the cap rejects it.
	if itl["abuse"] < 2*itl["no abuse"] || itl["abuse + guards"] > itl["abuse"]/2 {
		t.Errorf("legitimate ITL p90: %v", itl)
	}
}

func TestFairShareOfPrefill(t *testing.T) {
	// Fair scheduling alone (no caps): the long prompt, admitted first,
	// gets an even share of each step instead of all of it, so the others
	// start at once rather than after its 12 full steps (about 67 ms).
	reqs := []Request{{ID: 0, Prompt: 3000, Output: 2, Abusive: true}, {ID: 1, Prompt: 4, Output: 40}, {ID: 2, Conv: 1, Prompt: 4, Output: 40}}
	for _, fair := range []bool{false, true} {
		f := &step{*newFake(t)}
		outs, _, _, err := simulate(f, reqs, Options{Slots: 3, Concurrency: 3, AbusiveClients: 1, Guards: Guards{Fair: fair}})
		if err != nil {
			t.Fatal(err)
		}
		if got := outs[1].TTFTMs; fair && got > 30 || !fair && got < 50 {
			t.Errorf("fair %v: legitimate TTFT %.2f ms", fair, got)
		}
	}
}

func TestClientBudget(t *testing.T) {
	// 1000 tokens per minute: the client's first two 400-token requests
	// pass, the third is refused with the reason.
	reqs := []Request{{ID: 0, Prompt: 300, Output: 100}, {ID: 1, Conv: 1, Prompt: 300, Output: 100}, {ID: 2, Conv: 2, Prompt: 300, Output: 100}}
	outs, _, _, err := simulate(newFake(t), reqs, Options{Slots: 1, Concurrency: 1, Guards: Guards{ClientBudget: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].Status != "ok" || outs[1].Status != "ok" || outs[2].Status != "rejected" || !strings.Contains(outs[2].Reason, "budget of 1000 tokens per minute") {
		t.Errorf("%+v\n%+v\n%+v", outs[0], outs[1], outs[2])
	}
	// 600 tokens per minute (10 a second), requests of 10: the bucket
	// empties after about 60; the next is told when to retry, and the
	// client waits that long before it sends again.
	reqs = nil
	for i := 0; i < 62; i++ {
		reqs = append(reqs, Request{ID: i, Conv: i, Prompt: 5, Output: 5})
	}
	outs, _, _, err = simulate(newFake(t), reqs, Options{Slots: 1, Concurrency: 1, Guards: Guards{ClientBudget: 600}})
	if err != nil {
		t.Fatal(err)
	}
	r := 0
	for r < len(outs) && outs[r].Status == "ok" {
		r++
	}
	if r < 55 || r >= len(outs)-1 || !strings.Contains(outs[r].Reason, "retry after") {
		t.Fatalf("first rejection at %d of %d: %+v", r, len(outs), outs[min(r, len(outs)-1)])
	}
	var wait float64
	fmt.Sscanf(outs[r].Reason[strings.Index(outs[r].Reason, "retry after")+12:], "%gs", &wait)
	if gap := outs[r+1].arrived.Sub(outs[r].arrived).Seconds(); wait <= 0 || gap < 0.9*wait || outs[r+1].Status != "ok" {
		t.Errorf("after a rejection asking %.2fs: the next request %.2fs later, %s", wait, gap, outs[r+1].Status)
	}
}

func TestMonitor(t *testing.T) {
	var buf bytes.Buffer
	m := &Monitor{Log: slog.New(slog.NewJSONHandler(&buf, nil)), Scenario: "s", Floor: 50, DropPct: 30, DriftPct: 10, Warmup: 2}
	for i := 0; i < 40; i++ {
		ts := 100.0
		switch {
		case i == 20:
			ts = 40 // a drop, below the floor too
		case i >= 30:
			ts = 80 // the last quarter slower: drift
		}
		m.Second(Second{T: i, Active: 4, OutputTps: ts})
	}
	m.Second(Second{T: 40, Active: 1, OutputTps: 10}) // ramp-down: not a drop
	m.Finish()
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev["kind"].(string))
	}
	// Seconds at 80 after the steady level of 100 are 20% below it: not
	// drops at a 30% threshold, but a drift at 10%.
	if strings.Join(kinds, ",") != "below_expected,output_drop,output_drift" || m.Events != 3 {
		t.Errorf("events %v (%d)", kinds, m.Events)
	}
}

func TestLocalScoreFormula(t *testing.T) {
	// Prompt 1000 tokens prefilled in 0.5 s (2000 t/s), 100 t/s after the
	// first token, TTFT 500 ms: 10 * cbrt(2000 * 100 * 1000 / 500) = 737.
	outs := []*Served{
		{Request: Request{Prompt: 1000}, Status: StatusOK, TTFTMs: 500, OutputTs: 100},
		{Request: Request{Prompt: 1000}, Status: StatusOK, TTFTMs: 600, QueueMs: 100, OutputTs: 100},
	}
	ls := localScoreOf(outs, true, 1)
	if ls == nil || math.Abs(ls.Score-10*math.Cbrt(2000*100*1000/550.0)) > 1e-9 || !ls.Comparable || ls.PromptTs != 2000 {
		t.Errorf("%+v", ls)
	}
	if ls := localScoreOf(outs, true, 4); ls.Comparable || !strings.Contains(ls.Note, "--concurrency 1") {
		t.Errorf("4 clients: %+v", ls)
	}
	if localScoreOf(nil, true, 1) != nil {
		t.Error("a score from no requests")
	}
}
