#!/usr/bin/env bash
# make bench: tokbench run against the C reference loop (bench/cref) on a
# synthetic model, alternately, and the ratio of their t/s per test.
# Override with MODEL=..., PRESET=..., TYPE=..., P=..., N=..., ROUNDS=..., THREADS=...
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET=${PRESET:-smollm-135m}
TYPE=${TYPE:-q8_0}
CACHE=${TOKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tokbench}
MODEL=${MODEL:-$CACHE/bench-$PRESET-$TYPE.gguf}
THREADS=${THREADS:-$(getconf _NPROCESSORS_ONLN)}
if [ ! -f "$MODEL" ]; then
  mkdir -p "$(dirname "$MODEL")"
  bin/tokbench synth --preset "$PRESET" --type "$TYPE" -o "$MODEL"
fi
exec go run ./bench/compare -tokbench bin/tokbench -cref bin/cref -m "$MODEL" \
  -p "${P:-256}" -n "${N:-64}" -r "${REPS:-5}" -rounds "${ROUNDS:-4}" -t "$THREADS"
