package engine

/*
#include "probe.h"
*/
import "C"

import (
	"fmt"
	"time"

	"github.com/tokbench/tokbench/gguf"
)

// ProbeCopy times up to iters copies of bytes of F32 data on device dev
// (an index of Devices), while budget lasts (at least one), and returns
// the seconds the fastest took: a copy reads and writes bytes.
func ProbeCopy(dev, threads int, bytes int64, iters int, budget time.Duration) (float64, error) {
	s := float64(C.tb_probe_copy(C.int(dev), C.int(threads), C.int64_t(bytes/4), C.int(iters), C.double(budget.Seconds())))
	if s <= 0 {
		return 0, fmt.Errorf("probe copy of %d MiB on device %d failed: %s", bytes>>20, dev, orUnknown(lastError()))
	}
	return s, nil
}

// ProbeMatMul times up to iters products of an m x k weight of type typ
// with a k x n F32 activation on device dev, while budget lasts (at
// least one), and returns the fastest one's seconds: 2*m*n*k FLOPs.
func ProbeMatMul(dev, threads int, typ string, m, n, k int64, iters int, budget time.Duration) (float64, error) {
	t, ok := gguf.ParseType(typ)
	if !ok || k%t.BlockSize() != 0 {
		return 0, fmt.Errorf("probe: weight type %q with k=%d", typ, k)
	}
	s := float64(C.tb_probe_matmul(C.int(dev), C.int(threads), C.enum_ggml_type(t), C.int64_t(m), C.int64_t(n), C.int64_t(k), C.int(iters), C.double(budget.Seconds())))
	if s <= 0 {
		return 0, fmt.Errorf("probe %s matmul %dx%dx%d on device %d failed: %s", typ, m, n, k, dev, orUnknown(lastError()))
	}
	return s, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}
