#!/usr/bin/env bash
# The GPU run, one command: on a machine with an NVIDIA GPU, its driver and
# the CUDA toolkit (nvcc, CMake, Ninja), from the bundle `make gpu-bundle`
# makes (no Go, no network needed) or from a checkout with bin/tokbench
# built. Within BUDGET_S seconds (default 540) it
#
#   - builds libggml-cuda.so for this machine's GPU only (all cores), and
#     meanwhile synthesizes its models: a Llama-3-8B-shaped Q4_K_M and a
#     Qwen3-30B-A3B-shaped mixture of experts in Q4_0 (about 22 GB on disk,
#     the 8B's F16 intermediate included: 38 GB at most);
#   - times a device-to-device copy with PyTorch, where it is installed, as
#     a second reference for the probe's bandwidth;
#   - probes the GPU (HBM bandwidth, GEMM/GEMV per type), then, with NVML
#     and GPM telemetry on: pp512 and tg128 of the 8B at -ngl 99, -fa 0,1
#     (the step split into hardware, kernels and software); the op profile
#     of one decode step; the sweep over -d 0,4096,16384, --parallel 1,8,32
#     and -fa 0,1; the mixture at three -ncmoe; a short load run;
#   - writes at most 8 files, each under 16 MiB, to $OUT (a new temporary
#     folder, named in the last line, when OUT is unset): summary.txt,
#     results.jsonl, telemetry.jsonl, report.html, probe.json, profile.md,
#     load.jsonl, log.txt.
#
# It knows when it started: a step that would not finish in what is left
# is skipped, a step still running at the end is stopped (what it measured
# is kept), a failing step is reported and the next one runs, and the
# summary always says what ran, failed and was skipped. Exit 0 unless a
# step failed.
#
# REHEARSE=1 is the same run on a machine without a GPU (CI): the backend
# is not built but taken from REHEARSE_BACKEND (a folder with
# libggml-vulkan.so, for mesa's llvmpipe), the models and sizes are tiny.
# Nothing else differs.
#
# It reads the GPU, never changes it: no clocks, power limits, persistence
# or MIG mode, no reset.
#
#   scripts/gpu-run.sh                                  # from build/gpu-bundle or a checkout
#   BUDGET_S=900 OUT=/data/run WORK=/data/tmp scripts/gpu-run.sh
#   REHEARSE=1 REHEARSE_BACKEND=build/vulkan-lib scripts/gpu-run.sh
#
# Environment: BUDGET_S, OUT, WORK (scratch for the models and the build;
# default a new folder in /tmp), TOKBENCH (the binary; default bin/tokbench),
# OLLAMA_DIR (the pinned sources; default ggml/ in a bundle, else Go's
# module cache), CUDA_ARCHITECTURES (default: the GPU's compute capability).
set -uo pipefail # not -e: a failing step is reported and the next one runs
cd "$(dirname "$0")/.." || exit 1
root=$PWD
t0=$SECONDS
budget=${BUDGET_S:-540}
rehearse=${REHEARSE:-0}
case $budget in '' | *[!0-9]*)
  echo "gpu-run: BUDGET_S=$budget: give whole seconds" >&2
  exit 2
  ;;
esac

out=${OUT:-}
[ -n "$out" ] || out=$(mktemp -d /tmp/tokbench-gpu-out.XXXXXX)
work=${WORK:-}
[ -n "$work" ] || work=$(mktemp -d /tmp/tokbench-gpu-work.XXXXXX)
mkdir -p "$out" "$work/res" "$work/tel" || exit 1
log=$out/log.txt
summary=$out/summary.txt
: >"$log"
tb=${TOKBENCH:-$root/bin/tokbench}
lib=$work/lib
export TOKBENCH_CACHE=$work/cache

# What the run does, at the GPU box's sizes or the rehearsal's.
if [ "$rehearse" = 1 ]; then
  mode="REHEARSAL: Vulkan on a software device, tiny sizes"
  backend=Vulkan model=tiny model_type=q4_k_m moe=tiny-moe moe_type=q4_0 ncmoe=0,1,2
  P=16 N=8 depths=0,16,32 parallel=1,2,4 reps=2 grid_filter='n_depth>16 && parallel>2'
  load_args=(--requests 8 --concurrency 4 --prompt-len 16 --output-len 8)
  probe_args=(--types q4_0 -r 1)
  copy_args=(64 5)
  reserve=2 need_build=1 need_synth=1 need_probe=1 need_core=1 need_profile=1 need_grid=1 need_moe=1 need_load=1
  export GGML_VK_VISIBLE_DEVICES=0 # ggml hides CPU-type Vulkan devices otherwise
else
  mode="GPU run"
  backend=CUDA model=llama-8b model_type=q4_k_m moe=qwen3-30b-a3b moe_type=q4_0 ncmoe=0,24,48
  P=512 N=128 depths=0,4096,16384 parallel=1,8,32 reps=3 grid_filter='n_depth>4096 && parallel>8'
  load_args=(--workload short --concurrency 8 --requests 32)
  probe_args=()
  copy_args=(4096 20)
  reserve=20 need_build=120 need_synth=30 need_probe=30 need_core=60 need_profile=20 need_grid=60 need_moe=60 need_load=30
fi
# The models live in tokbench's cache, made there by synth in the
# background and found there by --synth: the records name them
# synth:PRESET:TYPE.
M=(--synth "$model" --synth-type "$model_type")
MOE=(--synth "$moe" --synth-type "$moe_type")

left() { echo $((budget - (SECONDS - t0))); }
say() { echo "$*" | tee -a "$log"; }
results=() # summary lines: one per step
note() { results+=("$(printf '%-8s %-44s %s' "$1" "$2" "$3")"); }
failures=0
skip() {
  note skipped "$1" "$2"
  say "-- skipped $1: $2"
}
fail() {
  note failed "$1" "$2"
  failures=$((failures + 1))
  say "-- FAILED $1: $2"
}

# step NAME NEED CAP CMD...: runs CMD when NEED seconds are left (the
# closing reserve aside), stopped after CAP seconds (0: what is left),
# output to the log. SIGTERM first: tokbench keeps what it measured.
step() {
  local name=$1 need=$2 cap=$3
  shift 3
  local l=$(($(left) - reserve))
  if [ "$cap" -gt 0 ] && [ "$cap" -lt "$l" ]; then l=$cap; fi
  if [ "$l" -lt "$need" ]; then
    skip "$name" "needs about ${need}s, ${l}s left"
    return 1
  fi
  say "== $name (at $((SECONDS - t0))s, up to ${l}s): $*"
  local s=$SECONDS rc=0
  timeout -k 15 "$l" "$@" >>"$log" 2>&1 || rc=$?
  local d=$((SECONDS - s))
  case $rc in
    0) note ok "$name" "${d}s" ;;
    124 | 137) note stopped "$name" "at the budget's end after ${d}s (what it measured is kept)" ;;
    *) fail "$name" "exit $rc after ${d}s: $(tail -n 3 "$log" | tr '\n' ' ' | cut -c1-300)" ;;
  esac
  [ "$rc" = 0 ]
}

# gpu_step is a step that needs the GPU backend.
gpu_ok=0
gpu_step() {
  if [ "$gpu_ok" != 1 ]; then
    skip "$1" "no $backend device (see the backend step)"
    return 1
  fi
  step "$@"
}

tbg() { "$tb" --backend-dir "$lib" "$@"; }

say "tokbench $mode: budget ${budget}s, out $out, work $work"
{
  echo "== machine"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm,clocks.max.mem,power.limit,persistence_mode,mig.mode.current --format=csv
  lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\)|Flags)' | cut -c1-400
  free -g 2>/dev/null | head -2
  df -h "$work" 2>/dev/null | tail -1
  "$tb" --version
} >>"$log" 2>&1
[ -x "$tb" ] || fail "tokbench" "no binary at $tb: make gpu-bundle (or make build) first"

# The models are made on the CPU while the backend builds: the main model
# first, the mixture beside it.
synth_pid='' moe_pid=''
if [ -x "$tb" ] && [ "$(($(left) - reserve))" -ge "$need_synth" ]; then
  say "== synth $model $model_type and $moe $moe_type, in the background (at $((SECONDS - t0))s)"
  s_synth=$SECONDS
  "$tb" synth --preset "$model" --type "$model_type" --cache >"$work/synth-model.log" 2>&1 &
  synth_pid=$!
  "$tb" synth --preset "$moe" --type "$moe_type" --cache >"$work/synth-moe.log" 2>&1 &
  moe_pid=$!
else
  skip "synth $model, $moe" "needs about ${need_synth}s, $(($(left) - reserve))s left"
fi

# A synthesis still going when the script ends (stopped, or past the
# budget) is ended with it.
cleanup() {
  for p in $synth_pid $moe_pid; do
    kill -CONT "$p" 2>/dev/null
    kill "$p" 2>/dev/null
  done
}
trap cleanup EXIT

# await PID NAME LOG [NOTE]: waits for a background synth within the budget.
await() {
  local pid=$1 name=$2 logf=$3 rc=0
  [ -n "$pid" ] || return 1
  while kill -0 "$pid" 2>/dev/null && [ "$(left)" -gt "$reserve" ]; do sleep 1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    cat "$logf" >>"$log"
    note stopped "$name" "at the budget's end after $((SECONDS - s_synth))s"
    return 1
  fi
  wait "$pid" || rc=$?
  cat "$logf" >>"$log"
  if [ "$rc" = 0 ]; then
    note ok "$name" "done at $((SECONDS - t0))s (started at $((s_synth - t0))s${4:-})"
  else
    fail "$name" "exit $rc: $(tail -n 2 "$logf" | tr '\n' ' ' | cut -c1-300)"
  fi
  [ "$rc" = 0 ]
}

# The backend: built here for this GPU, or in a rehearsal taken ready-made.
if [ "$rehearse" = 1 ]; then
  step "backend (Vulkan, ready-made)" "$need_build" 0 bash -c 'mkdir -p "$2" && cp -P "$1"/libggml-base.so* "$1"/libggml-vulkan.so* "$2"/' _ "${REHEARSE_BACKEND:-}" "$lib"
else
  src=${OLLAMA_DIR:-}
  if [ -z "$src" ] && [ -f "$root/ggml/CMakeLists.txt" ]; then src=$root/ggml; fi
  arch=${CUDA_ARCHITECTURES:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')}
  say "CUDA architectures: ${arch:-native}, $(getconf _NPROCESSORS_ONLN) jobs"
  s_build=$SECONDS
  step "build CUDA backend (sm_${arch:-native})" "$need_build" 0 \
    env OLLAMA_DIR="$src" CUDA_ARCHITECTURES="${arch:-native}" BUILD_DIR="$work/build" \
    "$root/scripts/build-backend.sh" "$lib" && say "CUDA build: $((SECONDS - s_build))s"
fi
if [ -x "$tb" ] && tbg devices >>"$log" 2>&1 && tbg devices -o json 2>/dev/null | grep -q "\"backend\": \"$backend\""; then
  gpu_ok=1
  note ok "devices" "the binary built elsewhere ran unchanged: $(tbg devices 2>/dev/null | awk -v b="$backend" '$2 == b {d = $4; $1 = $2 = $3 = $4 = $5 = $6 = ""; sub(/^ +/, ""); print d ": " $0; exit}')"
else
  fail "devices" "no $backend device listed (tokbench devices, in the log)"
fi

have_model=0
await "$synth_pid" "synth $model $model_type" "$work/synth-model.log" && have_model=1
synth_pid=
# The mixture's synthesis waits while the GPU is measured with the main model.
[ -n "$moe_pid" ] && kill -STOP "$moe_pid" 2>/dev/null
# A second reference for the bandwidth, before anything else loads the GPU.
if command -v python3 >/dev/null && python3 -c 'import torch' 2>/dev/null; then
  step "PyTorch device copy" 5 60 bash -c 'python3 "$1" "$2" "$3" >"$4"' _ "$root/scripts/gpu-copy.py" "${copy_args[@]}" "$work/torch.json"
else
  skip "PyTorch device copy" "PyTorch is not installed here"
fi

need_model() {
  if [ "$have_model" != 1 ]; then
    skip "$1" "no $model model (see its synth)"
    return 1
  fi
}

# The probe's lines (stderr) go to the summary too.
gpu_step "probe" "$need_probe" 120 bash -c '"$1" --backend-dir "$2" probe "${@:5}" -o json >"$3" 2> >(tee "$4" >&2)' _ "$tb" "$lib" "$work/probe.json" "$work/probe.txt" "${probe_args[@]}"

need_model "run $model pp$P tg$N -fa 0,1" &&
  gpu_step "run $model pp$P tg$N -fa 0,1" "$need_core" 0 bash -c '"$1" --backend-dir "$2" run "${@:8}" -ngl 99 -p "$3" -n "$4" -fa 0,1 -r "$5" --telemetry-out "$6" -o jsonl >"$7"' \
    _ "$tb" "$lib" "$P" "$N" "$reps" "$work/tel/core.jsonl" "$work/res/core.jsonl" "${M[@]}"

need_model "profile one decode step" &&
  gpu_step "profile one decode step" "$need_profile" 120 bash -c '"$1" --backend-dir "$2" profile "${@:4}" -ngl 99 -p 0 -n 1 -fa 1 -o md >"$3"' _ "$tb" "$lib" "$work/profile.md" "${M[@]}"

# The grid leaves time for the mixture and the load run after it.
later=$((need_moe * 2 + need_load))
need_model "sweep -d $depths --parallel $parallel -fa 0,1" &&
  gpu_step "sweep -d $depths --parallel $parallel -fa 0,1" "$need_grid" $(($(left) - reserve - later)) \
    "$tb" --backend-dir "$lib" sweep "${M[@]}" -ngl 99 -p "$P" -n "$N" -d "$depths" --parallel "$parallel" -fa 0,1 -r "$reps" \
    --no-kernels --filter "$grid_filter" --out "$work/res/grid.jsonl" --telemetry-out "$work/tel/grid.jsonl"

[ -n "$moe_pid" ] && kill -CONT "$moe_pid" 2>/dev/null
moe_ok=0
await "$moe_pid" "synth $moe $moe_type" "$work/synth-moe.log" ", paused while the GPU measured $model" && moe_ok=1
moe_pid=
if [ "$moe_ok" = 1 ]; then
  gpu_step "run $moe -ncmoe $ncmoe" "$need_moe" 0 bash -c '"$1" --backend-dir "$2" run "${@:9}" -ngl 99 -ncmoe "$3" -p "$4" -n "$5" -r "$6" --telemetry-out "$7" -o jsonl >"$8"' \
    _ "$tb" "$lib" "$ncmoe" "$P" "$N" "$reps" "$work/tel/moe.jsonl" "$work/res/moe.jsonl" "${MOE[@]}"
else
  skip "run $moe -ncmoe $ncmoe" "no $moe model (see its synth)"
fi

need_model "load" &&
  gpu_step "load" "$need_load" 0 "$tb" --backend-dir "$lib" load "${M[@]}" -ngl 99 "${load_args[@]}" --out "$out/load.jsonl"

# The closing: files, then the summary, whatever happened above.
cat "$work"/res/*.jsonl >"$out/results.jsonl" 2>/dev/null
cat "$work"/tel/*.jsonl >"$out/telemetry.jsonl" 2>/dev/null
for f in probe.json profile.md; do [ -s "$work/$f" ] && cp "$work/$f" "$out/$f"; done
table=
if [ -s "$out/results.jsonl" ]; then
  "$tb" report "$out/results.jsonl" -o html --out "$out/report.html" >>"$log" 2>&1 || fail "report" "the HTML report failed (see the log)"
  table=$("$tb" report "$out/results.jsonl" --wide 2>&1)
fi
[ -s "$out/load.jsonl" ] || rm -f "$out/load.jsonl"
[ -s "$out/telemetry.jsonl" ] || rm -f "$out/telemetry.jsonl"
[ -s "$out/results.jsonl" ] || rm -f "$out/results.jsonl"

{
  echo "tokbench $mode: $($tb --version 2>/dev/null)"
  echo "started $(date -u -d "@$(($(date +%s) - SECONDS + t0))" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null), budget ${budget}s, used $((SECONDS - t0))s"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu: /'
  echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(getconf _NPROCESSORS_ONLN) cores"
  echo
  echo "steps:"
  printf '  %s\n' "${results[@]}"
  echo
  echo "bandwidth (read + written, GB/s):"
  if [ -s "$work/probe.txt" ]; then sed 's/^/  probe: /' "$work/probe.txt"; else echo "  probe: not run"; fi
  if [ -s "$work/torch.json" ]; then echo "  PyTorch device copy: $(cat "$work/torch.json")"; else echo "  PyTorch device copy: not run"; fi
  [ "$rehearse" = 1 ] || echo "  datasheet: 4800 (H200 HBM3e)"
  echo
  if [ -n "$table" ]; then
    echo "results (tokbench report results.jsonl --wide):"
    echo "$table"
  else
    echo "no results"
  fi
  if [ -s "$out/load.jsonl" ]; then
    echo
    echo "load (tokbench report load.jsonl):"
    "$tb" report "$out/load.jsonl" 2>&1 | head -40
  fi
} >"$summary"

# Each file under 16 MiB: a larger one is compressed, or cut with a note.
for f in "$out"/*; do
  [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt $((16 << 20)) ] || continue
  if gzip -9 "$f" && [ "$(stat -c %s "$f.gz")" -le $((16 << 20)) ]; then
    echo "$(basename "$f") was over 16 MiB: compressed to $(basename "$f").gz" >>"$summary"
  else
    [ -f "$f.gz" ] && gunzip "$f.gz"
    truncate -s $((15 << 20)) "$f"
    echo "$(basename "$f") was over 16 MiB: cut to its first 15 MiB" >>"$summary"
  fi
done
cat "$summary"
echo "files in $out: $(cd "$out" && ls | tr '\n' ' ')"
[ "$failures" = 0 ]
