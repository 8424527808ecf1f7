// Package load serves a stream of requests through one llama.cpp context
// with continuous batching, as a server does, and measures what users
// see: queue wait, time to first token, inter-token latency, output speed
// per request, throughput and goodput under SLOs.
package load

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
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
	Name   string `json:"name"`
	Prompt Dist   `json:"prompt"`
	Output Dist   `json:"output"`
}

// Presets are common shapes of traffic.
var Presets = map[string]Workload{
	"short":     {Name: "short", Prompt: Dist{Kind: "uniform", A: 32, B: 256}, Output: Dist{Kind: "normal", A: 128, B: 48}},
	"long-form": {Name: "long-form", Prompt: Dist{Kind: "uniform", A: 64, B: 256}, Output: Dist{Kind: "uniform", A: 512, B: 1024}},
	"rag":       {Name: "rag", Prompt: Dist{Kind: "uniform", A: 1024, B: 3072}, Output: Dist{Kind: "normal", A: 96, B: 32}},
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

// Request is one generation request.
type Request struct {
	ID     int     `json:"id"`
	Client int     `json:"client"`
	Prompt int     `json:"prompt_tokens"`
	Output int     `json:"output_tokens"`
	At     float64 `json:"arrival_s"` // open loop: seconds from the start; closed loop: 0
}

// Generate makes n requests from the workload, deterministically for a seed.
func (w Workload) Generate(n int, seed uint64) []Request {
	r := rand.New(rand.NewPCG(seed, 0x9E3779B97F4A7C15))
	out := make([]Request, n)
	for i := range out {
		out[i] = Request{ID: i, Prompt: w.Prompt.Sample(r), Output: w.Output.Sample(r)}
	}
	return out
}

// Arrivals sets open-loop arrival times: a renewal process at rate per
// second whose gaps have squared coefficient of variation burstiness (1:
// Poisson; above 1 burstier, gamma-distributed gaps), deterministic for a
// seed.
func Arrivals(reqs []Request, rate, burstiness float64, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0xD1B54A32D192ED03))
	shape := 1 / burstiness
	t := 0.0
	for i := range reqs {
		t += gamma(r, shape) / (shape * rate)
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
