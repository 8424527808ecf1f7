#!/usr/bin/env bash
# make bench-compare: how often tokbench compare calls a difference
# significant. TRIES times (default 10): RUNS processes (default 1) of the
# same build twice (A, B) and RUNS made 5% slower per decode step (C,
# --test-step-delay of 5% of A's tg step), each tg64 -r 5 of a
# 56M-parameter Llama in Q4_0 on this machine; then compare A B (a false
# alarm if significant) and A C (found if significant), each side the
# comma list of its runs. Prints the two counts. Override with TRIES=,
# RUNS=, REPS=, SLOW= (the slowdown, 0.05).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${TOKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tokbench}
small=$CACHE/bench-llama56m-q4_0.gguf
[ -f "$small" ] || bin/tokbench synth --n-vocab 32000 --n-embd 512 --n-layer 8 --n-ff 1408 --n-head 8 --n-head-kv 4 --type q4_0 --out "$small"
tries=${TRIES:-10} runs=${RUNS:-1} reps=${REPS:-5} slow=${SLOW:-0.05}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { bin/tokbench run -m "$small" -p 0 -n 64 -r "$reps" --no-kernels -o jsonl "$@" 2>/dev/null; }
# The delay: the slowdown's share of a step as A measures it.
run >"$dir/first.jsonl"
ts=$(sed -n 's/.*"avg_ts":\([0-9.e+]*\).*/\1/p' "$dir/first.jsonl" | head -1)
delay=$(awk -v ts="$ts" -v s="$slow" 'BEGIN { printf "%dus", 1e6 / ts * s / (1 - s) }')
echo "tg64 at $ts t/s: $delay per step makes it $(awk -v s="$slow" 'BEGIN{print 100*s}')% slower"
same=0 found=0
side() { # side NAME: the comma list of its runs' files
  local out=""
  for r in $(seq "$runs"); do out="$out${out:+,}$dir/$1$r.jsonl"; done
  echo "$out"
}
for i in $(seq "$tries"); do
  for r in $(seq "$runs"); do
    run >"$dir/a$r.jsonl"; run >"$dir/b$r.jsonl"; run --test-step-delay "$delay" >"$dir/c$r.jsonl"
  done
  ab=$(bin/tokbench compare "$(side a)" "$(side b)" -o csv 2>/dev/null | awk -F, 'NR==2 {print $6, $7, $8, $9, $10}') || true
  ac=$(bin/tokbench compare "$(side a)" "$(side c)" -o csv 2>/dev/null | awk -F, 'NR==2 {print $6, $7, $8, $9, $10}') || true
  case $ab in *" ~"*) ;; *) same=$((same + 1)) ;; esac
  case $ac in *slower*) found=$((found + 1)) ;; esac
  echo "try $i: same build: speedup, change, CI, p, verdict $ab; ${slow} slower: $ac"
done
echo "$runs run(s) a side: same build called different: $same of $tries; the slowdown found: $found of $tries"
