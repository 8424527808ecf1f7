package sweep

import (
	"os"
	"time"

	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// modelPlan is a model as the estimates see it: its file as read, or
// as it will be (no GGUF) for one not made yet.
type modelPlan struct {
	Name string // the file, or "PRESET TYPE (planned)"
	plan.File
}

// planModel is r's model from its file when there is one, else planned
// from its shape (a synthetic preset, or a quantization of its source).
func planModel(r ModelRef) (modelPlan, error) {
	if _, err := os.Stat(r.Path); err == nil || (r.Preset == "" && r.Source == "") {
		return fileModel(r.Path)
	}
	return plannedModel(r)
}

func fileModel(path string) (modelPlan, error) {
	f, err := plan.Read(path)
	return modelPlan{Name: path, File: f}, err
}

// MakePlan checks each point against the model (trained context) and the
// memory free now, and estimates its memory and time.
func MakePlan(points []point.Point, done map[point.Key]bool, env plan.Env) (*plan.Grid, error) {
	return makePlan(points, done, env, nil)
}

// makePlan is MakePlan; a model of planned (by ID: synthetic presets,
// quantizations) whose file is not made yet is estimated from its shape.
func makePlan(points []point.Point, done map[point.Key]bool, env plan.Env, planned map[string]ModelRef) (*plan.Grid, error) {
	pl := &plan.Grid{Memory: map[point.Key]plan.Memory{}, Est: map[point.Key]time.Duration{}}
	free := env.Free()
	models := map[string]modelPlan{}
	for _, p := range points {
		if done[p.Key()] {
			pl.Done++
			continue
		}
		mp, ok := models[p.Model]
		if !ok {
			var err error
			if r, ok := planned[p.ModelID]; ok {
				mp, err = planModel(r)
			} else {
				mp, err = fileModel(p.Model)
			}
			if err != nil {
				return nil, err
			}
			models[p.Model] = mp
		}
		mem := mp.Need(p)
		pl.Memory[p.Key()] = mem
		pl.Est[p.Key()] = mp.Time(p, free.HasGPU)
		if err := mp.Fits(p, mem, free); err != nil {
			r := env.Unmeasured(p, record.StatusSkipped, err.Error())
			pl.Skipped = append(pl.Skipped, r)
			continue
		}
		pl.Points = append(pl.Points, p)
	}
	return pl, nil
}

// DryRun is the plan of points (dropped by filters), as --dry-run shows
// it (report.WriteGrid). The synthetic models and quantizations of refs
// not made yet are planned from their shapes: a dry run makes nothing.
func DryRun(points []point.Point, refs []ModelRef, dropped int, env plan.Env) (*plan.Grid, error) {
	planned := map[string]ModelRef{}
	for _, r := range refs {
		if r.Preset != "" || r.Source != "" {
			planned[r.ID] = r
		}
	}
	g, err := makePlan(points, nil, env, planned)
	if err != nil {
		return nil, err
	}
	g.Dropped = dropped
	return g, nil
}

// Estimates are what run --dry-run shows of each test (not sampled ones)
// of refs' models: memory and whether it fits, bytes and FLOPs of a step,
// the ceiling of env's hardware class.
func Estimates(tests []point.Point, refs []ModelRef, env plan.Env) ([]plan.TestEstimate, error) {
	models := map[string]modelPlan{}
	for _, r := range refs {
		mp, err := planModel(r)
		if err != nil {
			return nil, err
		}
		models[r.ID] = mp
	}
	free := env.Free()
	var out []plan.TestEstimate
	varying := point.Varying(tests)
	for i, p := range tests {
		if p.Sampled() {
			continue
		}
		mp := models[p.ModelID]
		est, err := mp.Estimate(p, env)
		if err != nil {
			return nil, err
		}
		e := plan.TestEstimate{Model: mp.Name, Test: p.TestName(), Settings: varying[i], Threads: p.Threads, NGPULayers: p.NGPULayers, NCPUMoE: p.NCPUMoE, Memory: est.Memory, Fits: true,
			Experts: est.Experts, Roofline: est.Roofline}
		if err := mp.Fits(p, est.Memory, free); err != nil {
			e.Fits, e.Refused = false, err.Error()
		}
		out = append(out, e)
	}
	return out, nil
}
