package plan

import (
	"strings"
	"time"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// Grid is what a sweep will do: the points to measure in order, the ones
// that cannot fit (recorded as skipped, not attempted), and the ones a
// resumed sweep already has, with each point's memory and time.
type Grid struct {
	Points  []point.Point
	Skipped []record.Record
	Done    int // already in the results file
	Dropped int // removed by filters
	Memory  map[point.Key]Memory
	Est     map[point.Key]time.Duration
}

// Total is the estimated time of the points to run.
func (g *Grid) Total() time.Duration {
	var t time.Duration
	for _, p := range g.Points {
		t += g.Est[p.Key()]
	}
	return t
}

// Rough is a rough estimate of time as shown: <1s, seconds under a
// minute, else whole minutes.
func Rough(d time.Duration) string {
	switch {
	case d < time.Second:
		return "<1s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}

// Rough rates for time estimates before anything is measured: a CPU
// thread streams ~4 GB/s and computes ~20 GFLOP/s; a GPU ~1 TB/s and
// ~50 TFLOP/s. A sweep's progress display corrects them with measured
// times.
const (
	CPUBWPerThread   = 4e9
	CPUFlopPerThread = 20e9
	gpubw            = 1e12
	gpuFlop          = 50e12
)

// Time is a rough estimate of p's time on the model at the rough rates
// (gpu: a GPU does the work when p offloads).
func (m Model) Time(p point.Point, gpu bool) time.Duration {
	bw, flop := CPUBWPerThread*float64(min(p.Threads, 16)), CPUFlopPerThread*float64(p.Threads)
	if p.NGPULayers != 0 && gpu {
		bw, flop = gpubw, gpuFlop
	}
	// A mixture computes with the experts its tokens use.
	active := float64(m.NParams)
	if m.NExpert > 0 {
		active -= float64(m.ExpertParams) * (1 - float64(m.NExpertUsed)/float64(m.NExpert))
	}
	prefill := func(tokens int) float64 { return 2 * active * float64(tokens) / flop }
	reps := float64(p.Reps)
	if p.Reps == point.AutoReps {
		reps = 2 * point.MinAutoReps // a guess: quiet machines need few, noisy ones up to MaxReps
	}
	var s float64
	if p.NGen > 0 {
		s = reps * float64(p.NGen) * max(m.stepBytes(p.Parallel)/bw, prefill(p.Parallel))
		if p.Sampled() {
			s *= 2 // the raw test runs too, unless the sweep has it
		}
		if p.Combined {
			s += reps * prefill(p.Parallel*p.NPrompt)
		}
	} else {
		s = reps * prefill(p.Parallel*p.NPrompt)
	}
	return time.Duration(s * float64(time.Second))
}

// stepBytes is the weights a step of tokens reads: a mixture's experts
// at an even router's expectation.
func (m Model) stepBytes(tokens int) float64 {
	if m.NExpert == 0 {
		return float64(m.WeightBytes)
	}
	e := roofline.UniformExperts(float64(m.NExpert), float64(m.NExpertUsed), float64(tokens))
	return float64(m.WeightBytes-m.ExpertBytes) + float64(m.ExpertBytes)*e/float64(m.NExpert)
}

// Share is one shard's part of a sweep (sweep.Partition): its models,
// its points and their estimated time.
type Share struct {
	Index, Count int
	Points       int
	Est          time.Duration
	Models       []string
}

// TestEstimate is one test's estimate, as run --dry-run shows it.
type TestEstimate struct {
	Model      string            `json:"model"`
	Test       string            `json:"test"`
	Settings   string            `json:"settings,omitempty"` // those that vary among the tests ("t=2 b=128")
	Threads    int               `json:"n_threads"`
	NGPULayers int               `json:"n_gpu_layers"`
	NCPUMoE    int               `json:"n_cpu_moe"`
	Memory     Memory            `json:"memory"`
	Fits       bool              `json:"fits"`
	Refused    string            `json:"refused,omitempty"` // why it would be, if it would
	Experts    *record.Experts   `json:"experts,omitempty"`
	Roofline   roofline.Analysis `json:"roofline"`
}
