#!/usr/bin/env bash
# GPU smoke check, on a machine with an NVIDIA GPU, its driver and the CUDA
# toolkit: builds the CUDA backend, synthesizes llama-1b Q4_K_M, probes the
# GPU, runs one point and a small sweep with telemetry, and prints one
# summary table (pp/tg t/s, GPU utilisation, memory-controller utilisation,
# power, energy per token, each step split into hardware, kernels and
# software with its verdict) and the op profile of the point's steps. Meant to fit in 10 minutes on a 16-core box. It reads the GPU,
# never changes it: no clocks, power limits, persistence or MIG mode, no reset.
#
#   scripts/gpu-smoke.sh            # builds bin/tokbench too if Go is there
#   TOKBENCH=path/to/tokbench CUDA_ARCHITECTURES=90 scripts/gpu-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "gpu-smoke: $*" >&2; exit 1; }
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

tb=${TOKBENCH:-bin/tokbench}
if [ ! -x "$tb" ]; then
  command -v go >/dev/null || die "no $tb and no Go to build it: build it elsewhere and set TOKBENCH"
  make build
fi
libdir=$(dirname "$tb")
if ! ls "$libdir"/libggml-cuda.so* >/dev/null 2>&1; then
  scripts/build-backend.sh "$libdir"
fi

out=${OUT:-$(mktemp -d)}
export TOKBENCH_CACHE=${TOKBENCH_CACHE:-$out/cache}
"$tb" devices

model=$TOKBENCH_CACHE/smoke-llama-1b-q4_k_m.gguf
[ -f "$model" ] || "$tb" synth --preset llama-1b --type q4_k_m --out "$model"
"$tb" probe

"$tb" run -m "$model" -ngl 99 -p 512 -n 128 -r 3 --telemetry-out "$out/run-telemetry.jsonl" -o jsonl > "$out/run.jsonl"
"$tb" sweep -m "$model" -ngl 99 -p 512 -n 128 -d 0,2048 --parallel 1,8 -r 3 \
  --out "$out/sweep.jsonl" --telemetry-out "$out/sweep-telemetry.jsonl" -o md > "$out/sweep.md"

echo
echo "== llama-1b Q4_K_M, all layers on the GPU: run, then the sweep =="
cat "$out/run.jsonl" "$out/sweep.jsonl" > "$out/all.jsonl"
# The table's footer has each test's decomposition and verdict.
"$tb" report "$out/all.jsonl" -o table
"$tb" report "$out/all.jsonl" -o html --out "$out/report.html"
echo
echo "== op profile of the point's steps (llama.cpp's eval callback) =="
"$tb" profile -m "$model" -ngl 99 -p 512 -n 32 -o table
echo
echo "files in $out: run.jsonl, sweep.jsonl, sweep.md, report.html, *-telemetry.jsonl"
