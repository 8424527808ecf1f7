#!/usr/bin/env bash
# make bench-moe: a mixture of experts against a dense model with the same
# active parameters and the same other shapes, decoding on this machine.
# The mixture has 8 experts of FF wide, 2 used per token; the dense model
# one feed-forward of 2*FF. At B=1 both read about the same bytes per
# step; at B=8 the mixture's tokens are routed to more experts, which it
# then reads, and its t/s drops: the table gives each test's measured
# distinct experts per layer beside the uniform expectation, and the
# roofline's bytes per step. EMBD=, LAYERS=, FF=, TYPE=, N=, REPS=,
# THREADS= change it.
set -euo pipefail
cd "$(dirname "$0")/.."
EMBD=${EMBD:-1024} LAYERS=${LAYERS:-8} FF=${FF:-1408} TYPE=${TYPE:-q8_0}
N=${N:-64} REPS=${REPS:-5}
THREADS=${THREADS:-$(bin/tokbench devices -o json | sed -n 's/.*"cores": *\([0-9]*\).*/\1/p' | head -n 1)}
THREADS=${THREADS:-2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
shape=(--n-embd "$EMBD" --n-layer "$LAYERS" --n-head 16 --n-head-kv 4 --n-vocab 32000 --type "$TYPE")
bin/tokbench synth "${shape[@]}" --n-ff "$FF" --n-expert 8 --n-expert-used 2 --out "$dir/moe.gguf"
bin/tokbench synth "${shape[@]}" --n-ff $((2 * FF)) --out "$dir/dense.gguf"
out=$dir/moe.jsonl
# Interleaved rounds: the two models alternate, so a drift of the machine
# falls on both.
bin/tokbench sweep -m "$dir/moe.gguf,$dir/dense.gguf" -p 0 -n "$N" -np 1,8 -t "$THREADS" -r "$REPS" --rounds 2 --out "$out" >/dev/null
python3 - "$out" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("status") != "ok" or r.get("round"):
        continue
    rows[(r["model_filename"].split("/")[-1], r["n_parallel"])] = r
print(f"{'model':<11} {'B':>2} {'t/s':>9} {'bytes/step MiB':>15} {'experts/layer':>13} {'uniform':>8} {'hottest':>8}")
for (m, b), r in sorted(rows.items()):
    x, rf = r.get("experts") or {}, r.get("roofline") or {}
    print(f"{m:<11} {b:>2} {r['avg_ts']:9.1f} {rf.get('bytes_per_step', 0) / 2**20:15.2f} "
          f"{x.get('distinct_per_step', 0):13.2f} {x.get('uniform_per_step', 0):8.2f} {x.get('hot_share', 0):8.2f}")
for b in (1, 8):
    moe, dense = rows.get(("moe.gguf", b)), rows.get(("dense.gguf", b))
    if moe and dense:
        print(f"B={b}: MoE/dense t/s {moe['avg_ts'] / dense['avg_ts']:.3f}, bytes per step "
              f"{moe['roofline']['bytes_per_step'] / dense['roofline']['bytes_per_step']:.3f}")
PY
