#!/usr/bin/env bash
# make bench: tokbench run against the C reference loop (bench/cref) on a
# synthetic model, alternately, and the ratio of their t/s per test.
# Override with MODEL=..., PRESET=..., TYPE=..., P=..., N=..., ROUNDS=..., THREADS=...
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-model.sh
THREADS=${THREADS:-$(getconf _NPROCESSORS_ONLN)}
exec go run ./bench/compare -tokbench bin/tokbench -cref bin/cref -m "$MODEL" \
  -p "${P:-256}" -n "${N:-64}" -r "${REPS:-5}" -rounds "${ROUNDS:-4}" -t "$THREADS"
