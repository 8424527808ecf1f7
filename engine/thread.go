package engine

import "runtime"

// The main goroutine keeps the process's main thread, as a C program's
// work does: every graph a command computes from it (measure's loop
// runs there) starts its threads from one OS thread. OpenMP (the stock
// build's runtime, libgomp) keeps a team of worker threads per thread
// that starts a parallel region; a Go program whose calls move between
// threads accumulates teams, and past the cores libgomp's workers stop
// spinning at ggml's barriers (a futex sleep at every node) and the
// scheduler put a sleeping worker beside its waker: measured on a 2-core
// VM, tg64 of SmolLM-135M Q8_0 read 36-48 t/s in half the processes
// against llama-bench's 97-116, and 104-109 with one thread.
func init() { runtime.LockOSThread() }
