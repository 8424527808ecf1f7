#!/usr/bin/env bash
# make bench-sweep: a depth sweep (-d 0,512,1024,2048 -r 3) against the same
# points run one by one with `tokbench run`: wall-time ratio and t/s per test.
# Override with PRESET=..., TYPE=..., MODEL=..., DEPTHS=..., REPS=..., ARGS="-p 512 -n 128".
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET=${PRESET:-smollm-135m}
TYPE=${TYPE:-q8_0}
CACHE=${TOKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tokbench}
MODEL=${MODEL:-$CACHE/bench-$PRESET-$TYPE.gguf}
if [ ! -f "$MODEL" ]; then
  mkdir -p "$(dirname "$MODEL")"
  bin/tokbench synth --preset "$PRESET" --type "$TYPE" -o "$MODEL"
fi
exec go run ./bench/sweepbench -tokbench bin/tokbench -m "$MODEL" -d "${DEPTHS:-0,512,1024,2048}" -r "${REPS:-3}" -args "${ARGS:-}"
