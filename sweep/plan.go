package sweep

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/measure"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// Plan is what a sweep will do: the points to measure in order, the ones
// that cannot fit (recorded as skipped, not attempted), and the ones a
// resumed sweep already has.
type Plan struct {
	Points  []point.Point
	Skipped []record.Record
	Done    int // already in the results file
	Dropped int // removed by filters
	Memory  map[point.Key]measure.Memory
	Est     map[point.Key]time.Duration
}

// ModelPlan is a model as the estimates see it: its sizes and experts,
// its hyperparameters and its file (nil for one not made yet).
type ModelPlan struct {
	Name string // the file, or "PRESET TYPE (planned)"
	Meta engine.Meta
	H    gguf.Hparams
	File *gguf.File
}

// PlanModel is r's model from its file when there is one, else planned
// from its shape (a synthetic preset, or a quantization of its source).
func PlanModel(r ModelRef) (ModelPlan, error) {
	if _, err := os.Stat(r.Path); err == nil || (r.Preset == "" && r.Source == "") {
		return fileModel(r.Path)
	}
	return plannedModel(r)
}

func fileModel(path string) (ModelPlan, error) {
	m, h, f, err := measure.FileMeta(path)
	return ModelPlan{Name: path, Meta: m, H: h, File: f}, err
}

// stepBytes is the weights a step of tokens reads: a mixture's experts
// at an even router's expectation.
func (mp ModelPlan) stepBytes(tokens int) float64 {
	m := mp.Meta
	if m.NExpert == 0 {
		return float64(m.WeightBytes)
	}
	e := roofline.UniformExperts(float64(m.NExpert), float64(m.NExpertUsed), float64(tokens))
	return float64(m.WeightBytes-m.ExpertBytes) + float64(m.ExpertBytes)*e/float64(m.NExpert)
}

// MakePlan checks each point against the model (trained context) and the
// memory free now, and estimates its memory and time.
func MakePlan(points []point.Point, done map[point.Key]bool, env measure.Env) (*Plan, error) {
	return makePlan(points, done, env, nil)
}

// makePlan is MakePlan; a model of planned (by ID: synthetic presets,
// quantizations) whose file is not made yet is estimated from its shape.
func makePlan(points []point.Point, done map[point.Key]bool, env measure.Env, planned map[string]ModelRef) (*Plan, error) {
	pl := &Plan{Memory: map[point.Key]measure.Memory{}, Est: map[point.Key]time.Duration{}}
	models := map[string]ModelPlan{}
	for _, p := range points {
		if done[p.Key()] {
			pl.Done++
			continue
		}
		mp, ok := models[p.Model]
		if !ok {
			var err error
			if r, ok := planned[p.ModelID]; ok {
				mp, err = PlanModel(r)
			} else {
				mp, err = fileModel(p.Model)
			}
			if err != nil {
				return nil, err
			}
			models[p.Model] = mp
		}
		mem := measure.EstimateMemory(mp.H, mp.Meta.WeightBytes, p)
		mem.HostWeights = measure.HostWeights(mp.File, p)
		pl.Memory[p.Key()] = mem
		pl.Est[p.Key()] = estimate(p, mp)
		if err := measure.Fits(mp.H, mem, p); err != nil {
			r := measure.Unmeasured(p, env, record.StatusSkipped, err.Error())
			pl.Skipped = append(pl.Skipped, r)
			continue
		}
		pl.Points = append(pl.Points, p)
	}
	return pl, nil
}

// Rough rates for time estimates before anything is measured: a CPU
// thread streams ~4 GB/s and computes ~20 GFLOP/s; a GPU ~1 TB/s and
// ~50 TFLOP/s. The progress display corrects them with measured times.
const (
	cpuBWPerThread   = 4e9
	cpuFlopPerThread = 20e9
	gpuBW            = 1e12
	gpuFlop          = 50e12
)

func estimate(p point.Point, mp ModelPlan) time.Duration {
	bw, flop := cpuBWPerThread*float64(min(p.Threads, 16)), cpuFlopPerThread*float64(p.Threads)
	if p.NGPULayers != 0 && len(engine.GPUs()) > 0 {
		bw, flop = gpuBW, gpuFlop
	}
	// A mixture computes with the experts its tokens use.
	m := mp.Meta
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
		s = reps * float64(p.NGen) * max(mp.stepBytes(p.Parallel)/bw, prefill(p.Parallel))
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

// Total is the estimated time of the points to run.
func (pl *Plan) Total() time.Duration {
	var t time.Duration
	for _, p := range pl.Points {
		t += pl.Est[p.Key()]
	}
	return t
}

// Print writes the plan for --dry-run.
func (pl *Plan) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tmodel\ttest\tb/ub\tthreads\tngl\tfa\tkv k/v\tsampling\tmemory GiB\test time")
	models, contexts := map[point.ModelKey]bool{}, map[point.ContextKey]bool{}
	for i, p := range pl.Points {
		models[p.ModelKey()], contexts[p.ContextKey()] = true, true
		m := pl.Memory[p.Key()]
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d/%d\t%d\t%d\t%s\t%s/%s\t%s\t%.2f\t%s\n", i+1, p.ModelID, p.TestName(), p.NBatch, p.UBatch(),
			p.Threads, p.NGPULayers, p.FlashAttn, p.TypeK, p.TypeV, p.SamplingName(), float64(m.Total())/(1<<30), roundDur(pl.Est[p.Key()]))
	}
	tw.Flush()
	for _, r := range pl.Skipped {
		fmt.Fprintf(w, "skip %s %s: %s\n", r.ModelID, r.Test, r.Reason)
	}
	fmt.Fprintf(w, "\n%d points to measure (%d models, %d contexts), %d skipped (cannot fit), %d already recorded, %d dropped by filters\n",
		len(pl.Points), len(models), len(contexts), len(pl.Skipped), pl.Done, pl.Dropped)
	fmt.Fprintf(w, "estimated time: %s (rough: assumes %.0f GB/s and %.0f GFLOP/s per CPU thread, or 1 TB/s and 50 TFLOP/s on a GPU)\n",
		roundDur(pl.Total()), cpuBWPerThread/1e9, cpuFlopPerThread/1e9)
}

func roundDur(d time.Duration) string {
	switch {
	case d < time.Second:
		return "<1s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}

// DryRun writes the plan of points (dropped by filters) to w, as
// --dry-run shows it.
// The synthetic models and quantizations of refs not made yet are planned
// from their shapes: a dry run makes nothing.
func DryRun(w io.Writer, points []point.Point, refs []ModelRef, dropped int, env measure.Env) error {
	planned := map[string]ModelRef{}
	for _, r := range refs {
		if r.Preset != "" || r.Source != "" {
			planned[r.ID] = r
		}
	}
	plan, err := makePlan(points, nil, env, planned)
	if err != nil {
		return err
	}
	plan.Dropped = dropped
	plan.Print(w)
	return nil
}
