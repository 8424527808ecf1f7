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
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Dist is a distribution of token counts: fixed A, uniform [A, B],
// normal (mean A, sd B, at least 1) or an empirical list.
type Dist struct {
	Kind   string  `json:"kind" yaml:"kind"`
	A      float64 `json:"a,omitempty" yaml:"a"`
	B      float64 `json:"b,omitempty" yaml:"b"`
	Values []int   `json:"values,omitempty" yaml:"values"`
}

// Sample draws one count.
func (d Dist) Sample(r *rand.Rand) int {
	switch d.Kind {
	case "uniform":
		return int(d.A) + r.IntN(int(d.B-d.A)+1)
	case "normal":
		return max(1, int(math.Round(d.A+d.B*r.NormFloat64())))
	case "empirical":
		return d.Values[r.IntN(len(d.Values))]
	}
	return int(d.A)
}

// Max is the largest count the distribution gives (normal: mean + 4 sd).
func (d Dist) Max() int {
	switch d.Kind {
	case "uniform":
		return int(d.B)
	case "normal":
		return int(math.Ceil(d.A + 4*d.B))
	case "empirical":
		m := 0
		for _, v := range d.Values {
			m = max(m, v)
		}
		return m
	}
	return int(d.A)
}

func (d Dist) check(what string) error {
	switch d.Kind {
	case "fixed":
		if d.A < 1 {
			return fmt.Errorf("%s: fixed %g: must be at least 1", what, d.A)
		}
	case "uniform":
		if d.A < 1 || d.B < d.A {
			return fmt.Errorf("%s: uniform %g-%g: need 1 <= a <= b", what, d.A, d.B)
		}
	case "normal":
		if d.A < 1 || d.B < 0 {
			return fmt.Errorf("%s: normal mean %g sd %g: need mean >= 1 and sd >= 0", what, d.A, d.B)
		}
	case "empirical":
		if len(d.Values) == 0 {
			return fmt.Errorf("%s: empirical list is empty", what)
		}
		for _, v := range d.Values {
			if v < 1 {
				return fmt.Errorf("%s: empirical value %d: must be at least 1", what, v)
			}
		}
	default:
		return fmt.Errorf("%s: distribution %q: use fixed, uniform, normal or empirical", what, d.Kind)
	}
	return nil
}

// ParseDist reads "256", "uniform:32-256", "normal:128,48" or "list:16,64,256".
func ParseDist(s string) (Dist, error) {
	kind, arg, ok := strings.Cut(s, ":")
	if !ok {
		v, err := strconv.Atoi(s)
		if err != nil {
			return Dist{}, fmt.Errorf("%q: use N, uniform:A-B, normal:MEAN,SD or list:N,N,...", s)
		}
		return Dist{Kind: "fixed", A: float64(v)}, nil
	}
	d := Dist{Kind: kind}
	var err error
	switch kind {
	case "uniform":
		a, b, _ := strings.Cut(arg, "-")
		d.A, err = strconv.ParseFloat(a, 64)
		if err == nil {
			d.B, err = strconv.ParseFloat(b, 64)
		}
	case "normal":
		a, b, _ := strings.Cut(arg, ",")
		d.A, err = strconv.ParseFloat(a, 64)
		if err == nil {
			d.B, err = strconv.ParseFloat(b, 64)
		}
	case "list":
		d.Kind = "empirical"
		for _, f := range strings.Split(arg, ",") {
			v, e := strconv.Atoi(strings.TrimSpace(f))
			if e != nil {
				err = e
				break
			}
			d.Values = append(d.Values, v)
		}
	default:
		return d, fmt.Errorf("%q: use N, uniform:A-B, normal:MEAN,SD or list:N,N,...", s)
	}
	if err != nil {
		return d, fmt.Errorf("%q: %v", s, err)
	}
	return d, d.check(s)
}

// Workload is what requests look like.
type Workload struct {
	Name   string `json:"name" yaml:"name"`
	Prompt Dist   `json:"prompt" yaml:"prompt"` // new prompt tokens of each request (each turn)
	Output Dist   `json:"output" yaml:"output"`
	// Turns per conversation (default 1): each later turn resends the
	// history (the previous turn's prompt and output) before its new
	// tokens, as a chat client does, so a server that kept the
	// conversation's KV cells prefills only the new part.
	Turns Dist `json:"turns,omitzero" yaml:"turns"`
	// Tests are fixed prompt+output pairs taken in turn instead of the
	// distributions (LocalScore's nine).
	Tests []Test `json:"tests,omitempty" yaml:"tests"`
}

// Test is one fixed request shape.
type Test struct {
	Prompt int `json:"pp" yaml:"pp"`
	Output int `json:"tg" yaml:"tg"`
}

// Presets are common shapes of traffic.
var Presets = map[string]Workload{
	"short":      {Name: "short", Prompt: Dist{Kind: "uniform", A: 32, B: 256}, Output: Dist{Kind: "normal", A: 128, B: 48}},
	"long-form":  {Name: "long-form", Prompt: Dist{Kind: "uniform", A: 64, B: 256}, Output: Dist{Kind: "uniform", A: 512, B: 1024}},
	"rag":        {Name: "rag", Prompt: Dist{Kind: "uniform", A: 1024, B: 3072}, Output: Dist{Kind: "normal", A: 96, B: 32}},
	"multi-turn": {Name: "multi-turn", Prompt: Dist{Kind: "uniform", A: 16, B: 128}, Output: Dist{Kind: "normal", A: 160, B: 64}, Turns: Dist{Kind: "uniform", A: 2, B: 8}},
	// LocalScore's tests (localscore.ai): pp1024+tg16 ... pp16+tg1536.
	"localscore": {Name: "localscore", Tests: []Test{{1024, 16}, {4096, 256}, {2048, 256}, {2048, 768}, {1024, 1024}, {1280, 3072}, {384, 1152}, {64, 1024}, {16, 1536}}},
}

// PresetNames lists the presets.
func PresetNames() []string {
	var out []string
	for n := range Presets {
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

// ReadWorkload reads a custom workload from YAML:
//
//	name: support-chat
//	prompt: uniform:32-512      # or {kind: normal, a: 200, b: 50}
//	output: normal:180,60
//	turns: uniform:1-6          # optional
//	tests: [{pp: 512, tg: 128}] # optional, instead of prompt/output
func ReadWorkload(path string) (Workload, error) {
	var w Workload
	data, err := os.ReadFile(path)
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

// UnmarshalYAML takes a distribution as a string ("uniform:32-256") or
// as a mapping of its fields.
func (d *Dist) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		v, err := ParseDist(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		*d = v
		return nil
	}
	type plain Dist
	if err := n.Decode((*plain)(d)); err != nil {
		return err
	}
	if err := d.check(d.Kind); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
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

// Longest is the most tokens (prompt + output) one request can hold.
func (w Workload) Longest() int {
	if len(w.Tests) > 0 {
		m := 0
		for _, t := range w.Tests {
			m = max(m, t.Prompt+t.Output)
		}
		return m
	}
	turns := 1
	if w.Turns.Kind != "" {
		turns = w.Turns.Max()
	}
	return turns * (w.Prompt.Max() + w.Output.Max())
}

// Abuse is what abusive clients send: requests of the workload with the
// prompt (long-prompt) or the output (long-output) stretched to Tokens.
type Abuse struct {
	Fraction float64 `json:"fraction"` // of the clients (closed loop) or of the requests (open loop)
	Shape    string  `json:"shape"`
	Tokens   int     `json:"tokens"`
}

// Check says what is wrong with the abuse settings.
func (a Abuse) Check() error {
	if a.Fraction < 0 || a.Fraction >= 1 {
		return fmt.Errorf("abusive fraction %g: use 0 to below 1", a.Fraction)
	}
	if a.Shape != "long-prompt" && a.Shape != "long-output" {
		return fmt.Errorf("abusive shape %q: use long-prompt or long-output", a.Shape)
	}
	if a.Tokens < 1 {
		return fmt.Errorf("abusive tokens %d: must be at least 1", a.Tokens)
	}
	return nil
}

// Generate makes n abusive requests, numbered from first, each a
// conversation of its own.
func (a Abuse) Generate(w Workload, n, first int, seed uint64) []Request {
	r := rand.New(rand.NewPCG(seed, 0xA0761D6478BD642F))
	out := make([]Request, n)
	for i := range out {
		p, o := w.sample(r, i)
		if a.Shape == "long-prompt" {
			p = a.Tokens
		} else {
			o = a.Tokens
		}
		out[i] = Request{ID: first + i, Conv: i, Prompt: p, Output: o, Abusive: true}
	}
	return out
}

// Arrivals sets open-loop arrival times of conversations: a renewal
// process at rate per second whose gaps have squared coefficient of
// variation burstiness (1: Poisson; above 1 burstier, gamma-distributed
// gaps), deterministic for a seed. A later turn arrives when the one
// before it ends.
func Arrivals(reqs []Request, rate, burstiness float64, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0xD1B54A32D192ED03))
	shape := 1 / burstiness
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
