package measure

import (
	"context"
	"fmt"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/roofline"
)

// Profile times every graph node of p's real steps (its pp test: the
// prompt; its tg test: n_gen decode steps), beside the same steps
// unobserved, on the model loaded as run loads it.
func Profile(ctx context.Context, p point.Point, env Env) ([]roofline.OpProfile, error) {
	m, err := loadChecked(p)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	backend := env.Backend(p.NGPULayers)
	var out []roofline.OpProfile
	for _, t := range p.Tests() {
		if t.Sampled() || ctx.Err() != nil {
			continue
		}
		op, err := profileTest(m, t)
		if err != nil {
			return out, fmt.Errorf("profile %s: %w", t.TestName(), err)
		}
		op.Model, op.Backend = m.Meta.Desc, backend
		out = append(out, op)
	}
	return out, ctx.Err()
}

// profileTest runs t's steps on a plain context (the unprofiled time, the
// fastest of three runs after a warm-up), then on a profiled one.
func profileTest(m *model, t point.Point) (roofline.OpProfile, error) {
	var op roofline.OpProfile
	run := func(s *session) (*engine.StepProfile, time.Duration, error) {
		if err := s.setDepth(t.Parallel, t.NDepth); err != nil {
			return nil, 0, err
		}
		t0 := time.Now()
		var sp *engine.StepProfile
		var err error
		switch {
		case t.NGen == 0 && s.c.Profiled():
			sp, err = s.c.ProfilePrefill(t.Parallel, t.NPrompt, t.NDepth)
		case t.NGen == 0:
			err = s.c.Prefill(t.Parallel, t.NPrompt, t.NDepth)
		case s.c.Profiled():
			sp, err = s.c.ProfileSteps(t.Parallel, t.NDepth, t.NGen)
		default:
			for i := 0; i < t.NGen && err == nil; i++ {
				err = s.c.Step(t.Parallel, t.NDepth+i, nil)
			}
		}
		d := time.Since(t0)
		s.depth = -1
		return sp, d, err
	}
	plain, err := newSession(m, t, t.NCtx())
	if err != nil {
		return op, err
	}
	best := time.Duration(0)
	for i := 0; i < 4 && err == nil; i++ { // run 0 warms up
		var d time.Duration
		if _, d, err = run(plain); i > 0 && (best == 0 || d < best) {
			best = d
		}
	}
	plain.c.Close()
	if err != nil {
		return op, err
	}
	sp, err := profiled(m, t, func(s *session) (*engine.StepProfile, error) { sp, _, err := run(s); return sp, err })
	if err != nil {
		return op, err
	}
	steps := sp.Steps
	op = roofline.OpProfile{Test: t.TestName(), Steps: steps, UnprofiledMs: ms(best) / float64(steps),
		ProfiledMs: float64(sp.StepNs) / 1e6 / float64(steps), BuildMs: float64(sp.BuildNs) / 1e6 / float64(steps),
		BetweenMs: float64(sp.BetweenNs) / 1e6 / float64(steps), TailMs: float64(sp.TailNs) / 1e6 / float64(steps),
		Groups: roofline.Group(sp.Nodes, steps)}
	for _, g := range op.Groups {
		op.NodesMs += g.Ms
	}
	return op, nil
}

// profiled runs t's steps with run on a profiled context, once to warm up
// and once observed.
func profiled(m *model, t point.Point, run func(*session) (*engine.StepProfile, error)) (*engine.StepProfile, error) {
	prof, err := newSessionOf(m.NewProfiledContext, t, t.NCtx())
	if err != nil {
		return nil, err
	}
	defer prof.c.Close()
	if _, err := run(prof); err != nil {
		return nil, err
	}
	return run(prof)
}

// outsideSteps is how many decode steps observe watches (a prefill: one
// ubatch): enough to average, few enough to cost little next to the test.
const outsideSteps = 4

// observed is what a short profiled run of a test's steps saw.
type observed struct {
	// OutsideMs is the time per step outside the graph's nodes: graph
	// build, allocation and inputs before the first node, outputs after
	// the last (not the time between nodes, which observing each node
	// adds). What the step takes beyond its kernels timed alone and this
	// is the kernels running slower in the step than alone.
	OutsideMs float64
	Steps     *engine.StepProfile // the experts' routing and the weights' placement
}
