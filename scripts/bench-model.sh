# shellcheck shell=bash
# Sourced by the bench scripts: MODEL is a synthetic PRESET/TYPE model in the
# cache, made once, unless MODEL is given.
PRESET=${PRESET:-smollm-135m}
TYPE=${TYPE:-q8_0}
CACHE=${TOKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tokbench}
MODEL=${MODEL:-$CACHE/bench-$PRESET-$TYPE.gguf}
if [ ! -f "$MODEL" ]; then
  mkdir -p "$(dirname "$MODEL")"
  bin/tokbench synth --preset "$PRESET" --type "$TYPE" --out "$MODEL"
fi
