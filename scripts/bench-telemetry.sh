#!/usr/bin/env bash
# make bench-telemetry: tokbench run with the sampler at 20 Hz against the
# same run with it off, alternately: the t/s ratio per test (target >= 0.99).
# Override with MODEL=..., PRESET=..., TYPE=..., P=..., N=..., ROUNDS=..., RATE=...
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-model.sh
THREADS=${THREADS:-$(getconf _NPROCESSORS_ONLN)}
exec go run ./bench/compare -mode telemetry -rate "${RATE:-20}" -target 0.99 -tokbench bin/tokbench -m "$MODEL" \
  -p "${P:-128}" -n "${N:-64}" -r "${REPS:-5}" -rounds "${ROUNDS:-6}" -t "$THREADS"
