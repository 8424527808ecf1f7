package engine

/*
#include "ops.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/roofline"
)

// ops.h's kinds are roofline's, in the same order.
var _ = [1]int{}[int(roofline.OpAdd)-int(C.TB_OP_ADD)]
var _ = [1]int{}[int(roofline.OpMatMul)-int(C.TB_OP_MATMUL)]
var _ = [1]int{}[int(roofline.OpMatMulID)-int(C.TB_OP_MATMUL_ID)]
var _ = [1]int{}[int(roofline.OpRoute)-int(C.TB_OP_ROUTE)]

// OpCopies is one op of a step, built Copies times in a graph.
type OpCopies struct {
	roofline.Op
	Copies int
}

// TimeOps builds one graph of ops on device dev (an index of Devices),
// each op Copies times on tensors of its own, and returns the median
// seconds of up to iters runs after a warm-up: fewer once three or more
// agree within 5% of their median (more would not move it), or once
// budget has passed (at least one).
func TimeOps(dev, threads int, ops []OpCopies, iters int, budget time.Duration) (float64, error) {
	if len(ops) == 0 || iters < 1 {
		return 0, fmt.Errorf("time ops: nothing to time")
	}
	cops := make([]C.tb_op, len(ops))
	for i, o := range ops {
		t, t2, err := opTypes(o.Op)
		if err != nil {
			return 0, err
		}
		cops[i] = C.tb_op{kind: C.int32_t(o.Kind), _type: C.int32_t(t), type2: C.int32_t(t2),
			a: C.int64_t(o.A), b: C.int64_t(o.B), c: C.int64_t(o.C), d: C.int64_t(o.D), e: C.int64_t(o.E), n: C.int64_t(o.N), copies: C.int32_t(o.Copies)}
	}
	var s float64
	var why string
	onTimingThread(func() {
		clearError()
		s = float64(C.tb_time_ops(C.int(dev), C.int(threads), (*C.tb_op)(unsafe.Pointer(&cops[0])), C.int(len(cops)), C.int(iters), C.int64_t(budget)))
		if s < 0 {
			why = orUnknown(lastError())
		}
	})
	if s < 0 {
		return 0, fmt.Errorf("time %s on device %d: %s", ops[0].Name, dev, why)
	}
	return s, nil
}

// KeepFreedMemory makes the memory timed ops allocate stay in the heap
// when freed, for the next ops (a fresh page costs a page fault to fill,
// on a VM a hundred times the copy), until the function it returns; what
// the heap kept is given back by GiveBackMemory.
func KeepFreedMemory() (done func()) {
	C.tb_keep_freed_memory(1)
	return func() { C.tb_keep_freed_memory(0) }
}

// timing is the one thread ops are timed on, for the process's life: a
// thread's frees serve its own heap (glibc's arena) only, so ops timed on
// whichever thread Go picks would each fill fresh pages.
var timing struct {
	once sync.Once
	work chan func()
}

// onTimingThread runs f on the timing thread and waits for it.
func onTimingThread(f func()) {
	timing.once.Do(func() {
		timing.work = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread is the timing's
			for f := range timing.work {
				f()
			}
		}()
	})
	done := make(chan struct{})
	timing.work <- func() { f(); close(done) }
	<-done
}

// GiveBackMemory returns to the system what KeepFreedMemory's heap kept.
func GiveBackMemory() { C.tb_give_back_memory() }

// opTypes are an op's ggml types (F32 where it has none).
func opTypes(o roofline.Op) (gguf.GGMLType, gguf.GGMLType, error) {
	var ts [2]gguf.GGMLType
	for i, name := range []string{o.Type, o.Type2} {
		if name == "" {
			continue
		}
		t, ok := gguf.ParseType(name)
		if !ok {
			return 0, 0, fmt.Errorf("time %s: unknown ggml type %q", o.Name, name)
		}
		ts[i] = t
	}
	return ts[0], ts[1], nil
}
