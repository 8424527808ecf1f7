// Package halt is how a signal ends the process in a phase that cannot
// stop in order: making a model (llama.cpp's quantizer has no way to be
// stopped), probing the hardware. Outside such phases the first signal
// asks the work to stop after what it is doing, keeping what it
// measured; inside one, there is nothing measured to keep, and the
// process ends at once, its temporary files removed, so that nothing
// half made is left under a final name.
package halt

import (
	"errors"
	"os"
	"sync"
)

var (
	mu     sync.Mutex
	temps  = map[string]struct{}{}
	atOnce int
	asked  bool
	exit   = os.Exit
)

// ExitCode is the status of a process a signal ended.
const ExitCode = 130

// ErrStopped is work stopped in order, as a first signal asks (Ctrl-C in
// a run or a sweep): the test in progress is dropped after its current
// repetition, what was measured is kept.
var ErrStopped = errors.New("stopped")

// Temp registers a file to remove if a signal ends the process before
// done is called (done does not remove it).
func Temp(path string) (done func()) {
	mu.Lock()
	temps[path] = struct{}{}
	mu.Unlock()
	return func() {
		mu.Lock()
		delete(temps, path)
		mu.Unlock()
	}
}

// AtOnce marks a phase that a signal ends at once, until end is called.
// A signal already received ends the process now.
func AtOnce() (end func()) {
	mu.Lock()
	if asked {
		removeTemps()
		mu.Unlock()
		exit(ExitCode)
		return func() {}
	}
	atOnce++
	mu.Unlock()
	return func() {
		mu.Lock()
		atOnce--
		mu.Unlock()
	}
}

// InOrder marks a part of an AtOnce phase that stops in order instead (a
// database transaction, rolled back when the command's context is
// canceled), until end is called.
func InOrder() (end func()) {
	mu.Lock()
	saved := atOnce
	atOnce = 0
	mu.Unlock()
	return func() {
		mu.Lock()
		atOnce += saved
		mu.Unlock()
	}
}

// Signal notes a signal; inside an AtOnce phase it removes the
// temporary files and says to end the process now.
func Signal() (now bool) {
	mu.Lock()
	defer mu.Unlock()
	asked = true
	if atOnce > 0 {
		removeTemps()
		return true
	}
	return false
}

// RemoveTemps removes the temporary files still registered: for a
// process about to end on a second signal.
func RemoveTemps() {
	mu.Lock()
	removeTemps()
	mu.Unlock()
}

func removeTemps() {
	for p := range temps {
		os.Remove(p)
		delete(temps, p)
	}
}
