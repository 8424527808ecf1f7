package measure

import (
	"context"
	"time"

	"github.com/tokbench/tokbench/internal/load"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/point"
)

// Served is a loaded model that serves a load test: it makes contexts of
// any number of slots, each sized for slots x the longest request and
// checked against the memory free first.
type Served struct {
	Base point.Point // the settings of every context (Parallel: 1; NPrompt: the longest request)
	Meta plan.Model
	m    *model
	ctx  context.Context
	time time.Duration
}

// Serve loads base.Model for requests of at most longest tokens (prompt
// and output), each context stopping when ctx ends or after timeout.
func Serve(ctx context.Context, base point.Point, longest int, timeout time.Duration) (*Served, error) {
	f, err := plan.Read(base.Model)
	if err != nil {
		return nil, err
	}
	if int64(longest) > f.H.NCtxTrain {
		return nil, point.Inputf("the longest request holds %d tokens (prompt + output) but the model was trained for %d: shorten the workload or --abusive-tokens, or cap it with --max-prompt/--max-output", longest, f.H.NCtxTrain)
	}
	base.NPrompt, base.NGen, base.Parallel = max(longest, 1), 0, 1
	m, err := loadFile(f, base)
	if err != nil {
		return nil, err
	}
	return &Served{Base: base, Meta: m.Meta, m: m, ctx: ctx, time: timeout}, nil
}

// Slots makes a context of slots sequences (a load.Server); its closer
// frees it.
func (s *Served) Slots(slots int) (load.Engine, func(), error) {
	p := s.Base
	p.Parallel = slots
	if err := CheckSlots(p, slots); err != nil {
		return nil, nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	if err := s.m.File.Check(p, free()); err != nil {
		return nil, nil, err
	}
	c, err := s.m.NewContext(contextOptions(p, p.NCtx(), slots))
	if err != nil {
		return nil, nil, err
	}
	c.SetDeadline(time.Now().Add(s.time))
	stop := context.AfterFunc(s.ctx, c.Cancel)
	return c, func() { stop(); c.Close() }, nil
}

// CheckSlots says whether a server of p's batch can serve slots sequences
// at once: a decode step holds one token of each, and llama.cpp aborts on
// a step larger than the logical batch.
func CheckSlots(p point.Point, slots int) error {
	if slots > p.NBatch {
		return point.Inputf("-b %d is below the %d sequences served at once: a decode step holds a token of each; raise -b to at least %d, or serve fewer", p.NBatch, slots, slots)
	}
	return nil
}

// Close frees the model.
func (s *Served) Close() { s.m.Close() }
