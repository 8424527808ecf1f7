package load

import (
	"time"

	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/stats"
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
	Slots int // sequences decoding at once (the context's n_seq_max)
	// Concurrency is the closed loop's clients, each with one request in
	// flight; 0: an open loop (Request.At).
	Concurrency int
	// Clients: open loop, the legitimate clients the conversations come
	// from, in turn (for budgets and fairness; default Slots).
	Clients int
	// AbusiveClients send the Abusive requests: closed loop, that many of
	// the Concurrency clients; open loop, extra clients.
	AbusiveClients int
	Guards
	Observer Observer // live figures (nil: none)
	Clock    clock    // nil: the real one
}

// Guards are what a serving stack applies against abusive clients.
type Guards struct {
	MaxPrompt int `json:"max_prompt,omitempty"` // reject longer prompts (0: no cap)
	MaxOutput int `json:"max_output,omitempty"` // reject requests asking for more output
	// ClientBudget is each client's tokens (prompt + output) per minute:
	// a token bucket that holds a minute's worth; a request it cannot pay
	// for is rejected, as a 429 would.
	ClientBudget int `json:"client_budget_per_min,omitempty"`
	// Fair admits the queued request of the least-served client first and
	// splits each step's prefill tokens evenly among the sequences, so one
	// long prompt cannot fill every step.
	Fair bool `json:"fair,omitempty"`
}

// admits says whether the caps let a request in.
func (g Guards) admits(r Request) bool {
	return (g.MaxPrompt == 0 || r.Prompt <= g.MaxPrompt) && (g.MaxOutput == 0 || r.Output <= g.MaxOutput)
}

// Longest is the longest request (prompt + output) of the scenarios that
// their guards admit: what a context must hold per sequence.
func Longest(scenarios ...Scenario) int {
	longest := 0
	for _, sc := range scenarios {
		for _, r := range sc.Requests {
			if sc.Options.Guards.admits(r) {
				longest = max(longest, r.Prompt+r.Output)
			}
		}
	}
	return longest
}

// Any says whether a guard is on.
func (g Guards) Any() bool { return g != Guards{} }

// Observer sees the run as it goes.
type Observer interface {
	Step(StepStats)    // after each decode step
	Done(*Served)      // a request finished or was rejected
	Second(sec Second) // a second of the timeline is complete
}

// StepStats is one decode step.
type StepStats struct {
	Queue, Active, KVUsed int
	Tokens, Produced      int // in the batch; output tokens it gave
	Step, Decode          time.Duration
}

// status is what became of a request.
type status string

// Request statuses.
const (
	StatusOK         status = "ok"         // served to its last token
	statusRejected   status = "rejected"   // turned away by a guard
	statusUnfinished status = "unfinished" // in the server when the run ended
	statusUnsent     status = "unsent"     // never sent: the run ended first
)

// Served is what happened to one request.
type Served struct {
	Request
	Status   status    `json:"status"`
	Reason   string    `json:"reason,omitempty"`
	Reused   int       `json:"reused_tokens,omitempty"` // prompt tokens whose KV cells the slot kept
	QueueMs  float64   `json:"queue_ms"`
	TTFTMs   float64   `json:"ttft_ms"`
	E2EMs    float64   `json:"e2e_ms"`
	OutputTs float64   `json:"output_ts"` // tokens after the first over the time they took
	ITLMs    []float64 `json:"-"`
	ITLP50Ms float64   `json:"itl_p50_ms"`
	ITLP99Ms float64   `json:"itl_p99_ms"`
	// EndS is when it ended (served or rejected), in seconds from the
	// run's start: what sums up the requests a killed run left.
	EndS     float64 `json:"end_s"`
	next     *Served // the conversation's next turn
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
	Active    int     `json:"active"`    // sequences being served
	KVUsed    int     `json:"kv_used"`   // cells held, by active sequences and kept conversations
	OutputTps float64 `json:"output_ts"` // tokens generated in the second
	Steps     int     `json:"steps"`
	// Telemetry is what the GPUs and the host did in the second.
	Telemetry *gpu.Window `json:"telemetry,omitempty"`
}

func finish(s *Served, end time.Time) {
	s.Status = StatusOK
	s.QueueMs = ms(s.admitted.Sub(s.arrived))
	s.TTFTMs = ms(s.firstTok.Sub(s.arrived))
	s.E2EMs = ms(end.Sub(s.arrived))
	if d := end.Sub(s.firstTok).Seconds(); d > 0 {
		s.OutputTs = float64(s.gen-1) / d
	}
	if len(s.ITLMs) > 0 {
		s.ITLP50Ms, s.ITLP99Ms = stats.Percentile(s.ITLMs, 50), stats.Percentile(s.ITLMs, 99)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
