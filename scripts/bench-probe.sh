#!/usr/bin/env bash
# make bench-probe: how repeatable the roofline's ceilings are on this
# machine. Runs `tokbench probe` ROUNDS times (default 4) and prints each
# run's memory bandwidth and f16 GEMM, and the spread (max/min) of each.
# A spread above 1.3 means the machine is too noisy for ceilings to be
# trusted: probe again on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-4}
bw=() gemm=()
for i in $(seq "$ROUNDS"); do
  # "class C: memory B GB/s, ..." then "  f16    GEMM G GFLOP/s ..."
  line=$(bin/tokbench probe --types f16 -r 3 2>/dev/null |
    awk '/^class/ {for (i = 1; i < NF; i++) if ($i == "memory") b = $(i+1)} $1 == "f16" {g = $3} END {print b, g}')
  read -r b g <<<"$line"
  echo "probe $i: memory $b GB/s, f16 GEMM $g GFLOP/s"
  bw+=("$b") gemm+=("$g")
done
spread() { printf '%s\n' "$@" | sort -g | awk 'NR==1{lo=$1} {hi=$1} END{printf "%.3f", hi/lo}'; }
echo "spread (max/min) over $ROUNDS probes: bandwidth $(spread "${bw[@]}"), GEMM $(spread "${gemm[@]}") (target <= 1.3)"
