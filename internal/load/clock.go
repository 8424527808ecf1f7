package load

import "time"

// clock is the time a load run is measured and paced in: the real one by
// default. Tests give the scheduler a fake clock that their fake engine
// advances by its modelled step time, so that they assert the scheduler's
// logic, not the speed of the machine they run on.
type clock interface {
	Now() time.Time
	Sleep(time.Duration)
}

type realClock struct{}

func (realClock) Now() time.Time        { return time.Now() }
func (realClock) Sleep(d time.Duration) { time.Sleep(d) }

func clockOr(c clock) clock {
	if c == nil {
		return realClock{}
	}
	return c
}
