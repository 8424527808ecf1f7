#!/usr/bin/env bash
# make bench-sweep: a depth sweep (-d 0-3584+512 -p 64 -n 32 -r 3) against the same
# points run one by one with `tokbench run` (each filling its own depth),
# both as a user runs them (the step split on): wall-time ratio (target
# <= 0.5) and t/s per test.
# Override with PRESET=..., TYPE=..., MODEL=..., DEPTHS=..., REPS=..., ARGS="-p 512 -n 128".
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-model.sh
exec go run ./bench/sweepbench -tokbench bin/tokbench -m "$MODEL" -d "${DEPTHS:-0-3584+512}" -r "${REPS:-3}" -rounds "${ROUNDS:-2}" -args "${ARGS:--p 64 -n 32}"
