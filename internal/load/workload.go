// Package load serves a stream of requests through one llama.cpp context
// with continuous batching, as a server does, and measures what users
// see: queue wait, time to first token, inter-token latency, output speed
// per request, throughput and goodput under SLOs.
package load

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tokbench/tokbench/internal/infile"
	"gopkg.in/yaml.v3"
)

// Workload is what requests look like.
type Workload struct {
	Name   string `json:"name" yaml:"name"`
	Prompt dist   `json:"prompt" yaml:"prompt"` // new prompt tokens of each request (each turn)
	Output dist   `json:"output" yaml:"output"`
	// Turns per conversation (default 1): each later turn resends the
	// history (the previous turn's prompt and output) before its new
	// tokens, as a chat client does, so a server that kept the
	// conversation's KV cells prefills only the new part.
	Turns dist `json:"turns,omitzero" yaml:"turns"`
	// Tests are fixed prompt+output pairs taken in turn instead of the
	// distributions (LocalScore's nine).
	Tests []test `json:"tests,omitempty" yaml:"tests"`
}

// test is one fixed request shape.
type test struct {
	Prompt int `json:"pp" yaml:"pp"`
	Output int `json:"tg" yaml:"tg"`
}

// presets are common shapes of traffic.
var presets = map[string]Workload{
	"short":      {Name: "short", Prompt: dist{Kind: "uniform", A: 32, B: 256}, Output: dist{Kind: "normal", A: 128, B: 48}},
	"long-form":  {Name: "long-form", Prompt: dist{Kind: "uniform", A: 64, B: 256}, Output: dist{Kind: "uniform", A: 512, B: 1024}},
	"rag":        {Name: "rag", Prompt: dist{Kind: "uniform", A: 1024, B: 3072}, Output: dist{Kind: "normal", A: 96, B: 32}},
	"multi-turn": {Name: "multi-turn", Prompt: dist{Kind: "uniform", A: 16, B: 128}, Output: dist{Kind: "normal", A: 160, B: 64}, Turns: dist{Kind: "uniform", A: 2, B: 8}},
	// localScore's tests (localscore.ai): pp1024+tg16 ... pp16+tg1536.
	"localscore": {Name: "localscore", Tests: []test{{1024, 16}, {4096, 256}, {2048, 256}, {2048, 768}, {1024, 1024}, {1280, 3072}, {384, 1152}, {64, 1024}, {16, 1536}}},
}

// PresetNames lists the presets.
func PresetNames() []string {
	var out []string
	for n := range presets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Check says what is wrong with a workload.
func (w Workload) Check() error {
	if len(w.Tests) > 0 {
		for _, t := range w.Tests {
			if t.Prompt < 1 || t.Output < 1 {
				return fmt.Errorf("workload %s: test pp%d+tg%d: both must be at least 1", w.Name, t.Prompt, t.Output)
			}
		}
	} else {
		if err := w.Prompt.check("prompt"); err != nil {
			return fmt.Errorf("workload %s: %w", w.Name, err)
		}
		if err := w.Output.check("output"); err != nil {
			return fmt.Errorf("workload %s: %w", w.Name, err)
		}
	}
	if w.Turns.Kind != "" {
		if err := w.Turns.check("turns"); err != nil {
			return fmt.Errorf("workload %s: %w", w.Name, err)
		}
	}
	return nil
}

// readWorkload reads a custom workload from YAML:
//
//	name: support-chat
//	prompt: uniform:32-512      # or {kind: normal, a: 200, b: 50}
//	output: normal:180,60
//	turns: uniform:1-6          # optional
//	tests: [{pp: 512, tg: 128}] # optional, instead of prompt/output
func readWorkload(path string) (Workload, error) {
	var w Workload
	data, err := infile.ReadFile(path)
	if err != nil {
		return w, fmt.Errorf("workload: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&w); err != nil {
		return w, fmt.Errorf("workload %s: %w (fields: name, prompt, output, turns, tests)", path, err)
	}
	if w.Name == "" {
		w.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return w, w.Check()
}

// Request is one generation request.
type Request struct {
	ID      int     `json:"id"`
	Client  int     `json:"client"`
	Conv    int     `json:"conversation"`
	Turn    int     `json:"turn"`
	Prefix  int     `json:"prefix_tokens,omitempty"` // of Prompt: the conversation so far
	Prompt  int     `json:"prompt_tokens"`
	Output  int     `json:"output_tokens"`
	Abusive bool    `json:"abusive,omitempty"`
	At      float64 `json:"arrival_s"` // open loop: seconds from the start (later turns: when the previous ends)
}

// Generate makes n requests from the workload, deterministically for a
// seed; a conversation's turns follow each other.
func (w Workload) Generate(n int, seed uint64) []Request {
	r := rand.New(rand.NewPCG(seed, 0x9E3779B97F4A7C15))
	out := make([]Request, 0, n)
	for conv := 0; len(out) < n; conv++ {
		turns := 1
		if w.Turns.Kind != "" {
			turns = w.Turns.Sample(r)
		}
		hist := 0
		for t := 0; t < turns && len(out) < n; t++ {
			p, o := w.sample(r, len(out))
			out = append(out, Request{ID: len(out), Conv: conv, Turn: t, Prefix: hist, Prompt: hist + p, Output: o})
			hist += p + o
		}
	}
	return out
}

func (w Workload) sample(r *rand.Rand, i int) (prompt, output int) {
	if len(w.Tests) > 0 {
		t := w.Tests[i%len(w.Tests)]
		return t.Prompt, t.Output
	}
	return w.Prompt.Sample(r), w.Output.Sample(r)
}

// arrivals sets open-loop arrival times of conversations: a renewal
// process at rate per second whose gaps are gamma-distributed with shape
// burstiness, as vLLM's benchmark means it (1: Poisson; below 1 burstier,
// the gaps' squared coefficient of variation being 1/burstiness; above 1
// more regular), deterministic for a seed. A later turn arrives when the
// one before it ends.
func arrivals(reqs []Request, rate, burstiness float64, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0xD1B54A32D192ED03))
	shape := burstiness
	t := 0.0
	for i := range reqs {
		if reqs[i].Turn == 0 {
			t += gamma(r, shape) / (shape * rate)
		}
		reqs[i].At = t
	}
}

// gamma draws from Gamma(shape, 1) (Marsaglia and Tsang; shape < 1 boosted).
func gamma(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return gamma(r, shape+1) * math.Pow(r.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}
