#!/usr/bin/env bash
# make bench-quality: what one quality evaluation costs. A synthetic
# Llama-1B shape in F16 (made once in the cache) is quantized to Q4_K_M and
# both are evaluated over 4096 tokens in chunks of 512; the line of the
# Q4_K_M pass gives its wall time (first chunk to last; the load is not in
# it) and the share of it inside llama_decode. Target: under 5% outside.
# The F16 pass fills the cache of the base's distributions: it is timed
# the first time only. PRESET=, TYPE=, TOKENS=, CTX=, THREADS= change it.
set -euo pipefail
cd "$(dirname "$0")/.."
QTYPE=${TYPE:-q4_k_m}
TOKENS=${TOKENS:-4096} CTX=${CTX:-512}
THREADS=${THREADS:-$(bin/tokbench devices -o json | sed -n 's/.*"cores": *\([0-9]*\).*/\1/p' | head -n 1)}
THREADS=${THREADS:-2}
PRESET=${PRESET:-llama-1b} TYPE=f16
# shellcheck source=bench-model.sh
. scripts/bench-model.sh
bin/tokbench quality --quantize-from "$MODEL" --types "$QTYPE" --tokens "$TOKENS" --ctx "$CTX" -t "$THREADS" 2>&1 >/dev/null |
  grep -E '(f16|'"$QTYPE"').*: KLD .* in [0-9.]+s' | sed "s/^/$PRESET /"
