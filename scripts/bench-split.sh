#!/usr/bin/env bash
# make bench-split: what the step's split costs next to the measurement.
# tokbench run's wall time by default (kernel timing cache cold, then warm)
# against --no-kernels, at -d 0 and 2048, for a 56M-parameter Llama in Q4_0
# (embd 512, 8 layers) and SmolLM-135M in Q8_0 (targets: at most 1.5x),
# and a 12-point sweep's timing kernels against measuring (target: at
# most 0.5). Override with DEPTHS=, P=, N=, REPS=, ROUNDS=.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${TOKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tokbench}
small=$CACHE/bench-llama56m-q4_0.gguf
[ -f "$small" ] || bin/tokbench synth --n-vocab 32000 --n-embd 512 --n-layer 8 --n-ff 1408 --n-head 8 --n-head-kv 4 --type q4_0 --out "$small"
PRESET=smollm-135m TYPE=q8_0 . scripts/bench-model.sh
# The ceilings once, outside the timing (run probes a class it has none of).
TOKBENCH_CACHE=$CACHE bin/tokbench run -m "$small" -p 8 -n 0 -r 1 --no-kernels >/dev/null
exec go run ./bench/splitcost -tokbench bin/tokbench -m "$small" -m "$MODEL" -probe "$CACHE" \
  -d "${DEPTHS:-0,2048}" -p "${P:-64}" -n "${N:-32}" -r "${REPS:-3}" -rounds "${ROUNDS:-3}"
