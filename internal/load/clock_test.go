package load

import (
	"context"
	"time"
)

// fakeClock only moves when slept on: the fake engines advance it by
// their modelled step time, so a run takes no real time and its figures
// are exact, whatever else the machine is doing.
type fakeClock struct{ now time.Time }

func newClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(d time.Duration) {
	if d > 0 {
		c.now = c.now.Add(d)
	}
}

// simEngine is a fake engine with the clock it advances.
type simEngine interface {
	Engine
	clk() *fakeClock
}

// simulate serves reqs through eng on eng's clock.
func simulate(eng simEngine, reqs []Request, o Options) ([]*Served, []Second, float64, error) {
	o.Clock = eng.clk()
	return run(context.Background(), eng, reqs, o)
}
