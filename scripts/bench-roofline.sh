#!/usr/bin/env bash
# make bench-roofline: why a step is not faster, on this machine. Probes
# the ceilings (memory bandwidth, read bandwidth, matrix products), then
# runs a synthetic Llama-1B shape in Q4_0, Q8_0 and F16 and prints, per
# test, the three levels tokbench measures (the step, its kernels alone,
# the hardware's ceiling for their bytes and FLOPs, in ms per step and t/s
# with their shares) and the verdict. PRESET=, TYPES=, P=, N=, REPS=,
# THREADS= change it.
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET=${PRESET:-llama-1b}
TYPES=${TYPES:-q4_0 q8_0 f16}
P=${P:-64} N=${N:-32} REPS=${REPS:-3}
THREADS=${THREADS:-$(bin/tokbench devices -o json | sed -n 's/.*"cores": *\([0-9]*\).*/\1/p' | head -n 1)}
THREADS=${THREADS:-2}
bin/tokbench probe -t "$THREADS" >/dev/null
# Kernels timed in this run, beside the steps they explain: cached times
# from another hour of a machine that drifts would blur the split.
rm -rf "${TOKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tokbench}/kernels"
for t in $TYPES; do
  echo "== $PRESET $t"
  # The wide table's footer holds one line per test: its verdict and why.
  bin/tokbench run --synth "$PRESET" --synth-type "$t" -t "$THREADS" -p "$P" -n "$N" -r "$REPS" --wide 2>/dev/null |
    grep -E ': (memory-bound|kernel-bound|compute-bound|software-limited|throttled|not vouched for|below ceiling|no ceiling):' || true
done
