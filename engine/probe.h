#ifndef TOKBENCH_PROBE_H
#define TOKBENCH_PROBE_H
#include <stdint.h>
#include "ggml.h"
#include "ggml-backend.h"

// The backend of device dev with threads CPU threads (NULL: none).
ggml_backend_t tb_probe_backend(int dev, int threads);

// Seconds of the fastest of iters copies of n F32 values on device dev
// (< 0: failed).
double tb_probe_copy(int dev, int threads, int64_t n, int iters, double budget);
// Seconds of the fastest of iters products of an m x k weight of wtype by
// a k x n F32 activation on device dev (< 0: failed).
double tb_probe_matmul(int dev, int threads, enum ggml_type wtype, int64_t m, int64_t n, int64_t k, int iters, double budget);
#endif
