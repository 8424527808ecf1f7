#!/usr/bin/env bash
# make bench-sweep: a depth sweep (-d 0,512,1024,2048 -r 3) against the same
# points run one by one with `tokbench run`: wall-time ratio and t/s per test.
# Override with PRESET=..., TYPE=..., MODEL=..., DEPTHS=..., REPS=..., ARGS="-p 512 -n 128".
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-model.sh
exec go run ./bench/sweepbench -tokbench bin/tokbench -m "$MODEL" -d "${DEPTHS:-0,512,1024,2048}" -r "${REPS:-3}" -rounds "${ROUNDS:-2}" -args "--no-kernels ${ARGS:-}"
