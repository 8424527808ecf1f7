#!/usr/bin/env bash
# The GPU run, one command: on a machine with an NVIDIA GPU, its driver and
# the CUDA toolkit (nvcc, CMake, Ninja), from the bundle `make gpu-bundle`
# makes (no Go, no network needed) or from a checkout with bin/tokbench
# built. Ordered by what a short call would most regret not having
# (docs/gpu.md):
#
#   1. the machine's facts and versions, and PyTorch's device-to-device
#      copy (no build, no model: a bandwidth figure in the first minute);
#   2. the CUDA backend built for this GPU on all cores, in the background,
#      while the models are made at the lowest CPU priority, one after the
#      other (a Llama-3-8B-shaped Q4_K_M, then a Qwen3-30B-A3B-shaped
#      mixture in Q4_0), after one check of the disk for all of it;
#   3. as soon as the backend loads (its CUDA libraries found and checked
#      with ldd): the probe, then the 8B's pp512/tg128 at -ngl 99, -fa 0,1
#      with the step split and telemetry, the op profile of a decode step,
#      the sweep over depth, sequences and -fa, the mixture at three
#      -ncmoe, and a short load run.
#
# It knows when it started: a step that would not finish in what is left is
# skipped, one still running at the end is stopped (what it measured is
# kept), a failing one is reported with its whole reason and the next one
# runs; the summary says when each step started and ended. Exit 0 unless a
# step failed.
#
# OUT: where the files go. Unset: a new folder in /tmp. An empty or absent
# folder: that one. A folder with files in it: a new folder is made inside
# it, and nothing already there is touched. WORK: the scratch folder (the
# models, the build, each run's own files); default /tmp/tokbench-gpu-work,
# so that a second call on the same machine reuses the build and the
# models. A relative OUT, WORK or TOKBENCH is the caller's.
#
# REHEARSE=1 is the same run on a machine without a GPU (CI), at tiny sizes:
# with REHEARSE_BACKEND (a folder with libggml-vulkan.so, for mesa's
# llvmpipe) the backend is taken ready-made; without it the CUDA branch
# runs as on the box, against the stand-ins for nvidia-smi, nvcc, CMake and
# PyTorch that scripts/testdata/standin puts on the PATH.
#
# It reads the GPU, never changes it: no clocks, power limits, persistence
# or MIG mode, no reset.
#
#   scripts/gpu-run.sh                                  # from build/gpu-bundle or a checkout
#   BUDGET_S=900 OUT=/data/run WORK=/data/tmp scripts/gpu-run.sh
#   REHEARSE=1 REHEARSE_BACKEND=build/vulkan-lib scripts/gpu-run.sh
#
# Environment: BUDGET_S (default 540), OUT, WORK, TOKBENCH (the binary;
# default bin/tokbench), OLLAMA_DIR (the pinned sources; default ggml/ in a
# bundle, else Go's module cache), CUDA_ARCHITECTURES (default: the GPU's
# compute capability).
set -uo pipefail # not -e: a failing step is reported and the next one runs
caller=$PWD
abs() { case $1 in /*) echo "$1" ;; *) echo "$caller/$1" ;; esac; }
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
stamp=$(date -u +%Y%m%dT%H%M%SZ)

# OUT is never a place of loss: a folder holding anything gets a new
# folder inside it for this run.
if [ -z "${OUT:-}" ]; then
  out=$(mktemp -d /tmp/tokbench-gpu-out.XXXXXX) || exit 1
else
  out=$(abs "$OUT")
  if [ -e "$out" ] && [ ! -d "$out" ]; then
    echo "gpu-run: OUT=$OUT is a file, not a folder: name a folder (or leave OUT unset)" >&2
    exit 2
  fi
  if [ -d "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
    out=$(mktemp -d "$out/tokbench-gpu-$stamp.XXXX") || exit 1
  fi
  mkdir -p "$out" || exit 1
fi
work=$(abs "${WORK:-/tmp/tokbench-gpu-work}")
run=$work/runs/$stamp-$$ # this run's own files: results are never another run's
mkdir -p "$run/res" "$run/tel" "$run/steps" || exit 1
exec 9>"$work/lock"
if command -v flock >/dev/null && ! flock -n 9; then
  echo "gpu-run: another gpu-run is using WORK=$work: wait for it, or give another WORK" >&2
  exit 2
fi
log=$out/log.txt
summary=$out/summary.txt
: >"$log"
tb=$(abs "${TOKBENCH:-$root/bin/tokbench}")
lib=$work/lib
export TOKBENCH_CACHE=$work/cache

# What the run does, at the GPU box's sizes or the rehearsal's. need_*:
# the seconds a step needs at the least; disk_*: GB on disk (the 8B's
# largest is while its F16 intermediate and its Q4_K_M coexist).
if [ "$rehearse" = 1 ]; then
  mode="REHEARSAL: tiny sizes"
  model=tiny model_type=q4_k_m moe=tiny-moe moe_type=q4_0 ncmoe=0,1,2
  P=16 N=8 depths=0,16,32 parallel=1,2,4 reps=2 grid_filter='n_depth>16 && parallel>2'
  load_args=(--requests 8 --concurrency 4 --prompt-len 16 --output-len 8)
  probe_args=(--types q4_0 -r 1) quick_probe_args=(--types q4_0 -r 1)
  copy_args=(64 5)
  reserve=3 need_copy=2 need_probe=8 need_quick_probe=8 need_core=3 need_profile=2 need_grid=3 need_moe=3 need_load=3
  disk_build=1 disk_model_peak=1 disk_model=1 disk_moe=1
  export GGML_VK_VISIBLE_DEVICES=0 # ggml hides CPU-type Vulkan devices otherwise
else
  mode="GPU run"
  model=llama-8b model_type=q4_k_m moe=qwen3-30b-a3b moe_type=q4_0 ncmoe=0,24,48
  P=512 N=128 depths=0,4096,16384 parallel=1,8,32 reps=3 grid_filter='n_depth>4096 && parallel>8'
  load_args=(--workload short --concurrency 8 --requests 32)
  probe_args=() quick_probe_args=(--types q4_0 -r 1)
  copy_args=(4096 20)
  reserve=6 need_copy=10 need_probe=30 need_quick_probe=6 need_core=45 need_profile=15 need_grid=60 need_moe=60 need_load=30
  disk_build=3 disk_model_peak=22 disk_model=5 disk_moe=18
fi
backend=CUDA
[ "$rehearse" = 1 ] && backend=Vulkan # the ready-made backend, or the stand-in build's
M=(--synth "$model" --synth-type "$model_type")
MOE=(--synth "$moe" --synth-type "$moe_type")

now() { echo $((SECONDS - t0)); }
left() { echo $((budget - (SECONDS - t0))); }
say() { echo "$*" | tee -a "$log"; }
results=() # summary lines: one per step, with when it started and ended
note() { # note STATUS NAME START DETAIL
  results+=("$(printf '%-8s %-44s %4ss-%4ss  %s' "$1" "$2" "$3" "$(now)" "$4")")
}
failures=0
skip() {
  results+=("$(printf '%-8s %-44s %4ss        %s' skipped "$1" "$(now)" "$2")")
  say "-- skipped $1: $2"
}
# excerpt FILE: a failing step's last lines, whole, indented for the summary.
excerpt() { tail -n 6 "$1" 2>/dev/null | sed 's/^/             | /'; }
fail() { # fail NAME START REASON [FILE]
  local why=$3
  [ -n "${4:-}" ] && why="$why"$'\n'"$(excerpt "$4")"
  note failed "$1" "$2" "$why"
  failures=$((failures + 1))
  say "-- FAILED $1: $3"
}

# step NAME NEED CAP CMD...: runs CMD when NEED seconds are left (the
# closing reserve aside), stopped after CAP seconds (0: what is left), its
# output in its own file and the log. SIGTERM first: tokbench keeps what
# it measured.
nstep=0
step() {
  local name=$1 need=$2 cap=$3
  shift 3
  local l=$(($(left) - reserve))
  if [ "$cap" -gt 0 ] && [ "$cap" -lt "$l" ]; then l=$cap; fi
  if [ "$l" -lt "$need" ]; then
    skip "$name" "needs about ${need}s, ${l}s left"
    return 1
  fi
  nstep=$((nstep + 1))
  local f=$run/steps/$nstep.log s rc=0
  s=$(now)
  say "== $name (at ${s}s, up to ${l}s): $*"
  timeout -k 15 "$l" "$@" >"$f" 2>&1 || rc=$?
  cat "$f" >>"$log"
  case $rc in
    0) note ok "$name" "$s" "" ;;
    124 | 137) note stopped "$name" "$s" "at the budget's end (what it measured is kept)" ;;
    *) fail "$name" "$s" "exit $rc" "$f" ;;
  esac
  [ "$rc" = 0 ]
}

gpu_ok=0
gpu_step() { # a step that needs the GPU backend
  if [ "$gpu_ok" != 1 ]; then
    skip "$1" "no $backend device (see the backend steps)"
    return 1
  fi
  step "$@"
}

say "tokbench $mode: budget ${budget}s, out $out, work $work, this run's files $run"
gpu_name=''
if command -v nvidia-smi >/dev/null; then
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
fi
{
  echo "== machine"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,compute_mode,persistence_mode,mig.mode.current --format=csv
  fi
  lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\)|Flags)' | cut -c1-400
  free -g 2>/dev/null | head -2
  df -h "$work" 2>/dev/null | tail -1
  echo "== versions"
  "$tb" --version
  command -v nvcc >/dev/null && nvcc --version | tail -n 2
  command -v cmake >/dev/null && cmake --version | head -1
  command -v ninja >/dev/null && echo "ninja $(ninja --version)"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
} >>"$log" 2>&1
versions=$(
  v=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
  echo "driver ${v:-none}"
  v=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')
  echo "nvcc ${v:-none}"
  v=$(cmake --version 2>/dev/null | head -1 | awk '{print $3}')
  echo "cmake ${v:-none}"
  v=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)
  echo "torch ${v:-none}"
)
versions=$(echo "$versions" | paste -sd, - | sed 's/,/, /g')
say "versions: $versions"
[ -x "$tb" ] || fail "tokbench" "$(now)" "no binary at $tb: make gpu-bundle (or make build) first"

# 1. A bandwidth figure before anything else: PyTorch needs no build and
# no model, and nothing else is loading the GPU yet.
if python3 -c 'import torch' 2>/dev/null; then
  step "PyTorch device copy" "$need_copy" 60 bash -c 'python3 "$1" "$2" "$3" >"$4"' _ "$root/scripts/gpu-copy.py" "${copy_args[@]}" "$run/torch.json" &&
    say "PyTorch device copy: $(cat "$run/torch.json")"
else
  skip "PyTorch device copy" "PyTorch is not installed here"
fi

# 2. The models, at the lowest CPU priority and one after the other, in
# the background while the backend builds. The disk is checked once for
# all of it; a model already in WORK's cache is reused (synth --cache
# checks it), and needs no room.
have() { ls "$TOKBENCH_CACHE/$1-$2-s"*.gguf >/dev/null 2>&1; }
avail_gb=$(df -Pk "$work" 2>/dev/null | awk 'NR == 2 {print int($4 / 1048576)}')
avail_gb=${avail_gb:-0}
# A model already made needs no room: its bytes are counted in what is free.
peak_model=$disk_model_peak final_model=$disk_model moe_gb=$disk_moe
have "$model" "$model_type" && peak_model=0 final_model=0
have "$moe" "$moe_type" && moe_gb=0
want_model=1 want_moe=1
need_gb=$((disk_build + (peak_model > final_model + moe_gb ? peak_model : final_model + moe_gb)))
say "disk: $avail_gb GB free on $work; the build and the models need about $need_gb GB at most (made one after the other)"
if [ $((disk_build + peak_model)) -gt "$avail_gb" ]; then
  want_model=0 want_moe=0
  skip "synth $model $model_type" "needs about $((disk_build + peak_model)) GB with the build, $avail_gb GB free on $work: give WORK on a larger disk"
elif [ "$need_gb" -gt "$avail_gb" ]; then
  want_moe=0
  skip "synth $moe $moe_type" "needs about $need_gb GB with the build and $model, $avail_gb GB free on $work: the mixture is not made"
fi
synth_model() { nice -n 19 "$tb" synth --preset "$model" --type "$model_type" --cache; }
synth_moe() { nice -n 19 "$tb" synth --preset "$moe" --type "$moe_type" --cache; }
# The mixture waits while the GPU is measured with the main model: a flag
# file holds it back before it starts, SIGSTOP once it runs.
pause=$run/pause-moe
s_synth=$(now)
if [ -x "$tb" ] && [ "$want_model" = 1 ]; then
  say "== synth $model $model_type, then $moe $moe_type, in the background at the lowest priority (at ${s_synth}s)"
  (
    synth_model >"$run/synth-model.log" 2>&1
    echo $? >"$run/synth-model.rc"
    [ "$want_moe" = 1 ] || exit 0
    while [ -e "$pause" ]; do sleep 1; done
    synth_moe >"$run/synth-moe.log" 2>&1 &
    echo $! >"$run/synth-moe.pid"
    wait $!
    echo $? >"$run/synth-moe.rc"
  ) &
  synth_pid=$!
else
  synth_pid=''
  want_moe=0
fi
cleanup() {
  local p
  p=$(cat "$run/synth-moe.pid" 2>/dev/null)
  [ -n "$p" ] && kill -CONT "$p" 2>/dev/null && kill "$p" 2>/dev/null
  [ -n "${build_pid:-}" ] && kill -- "-$build_pid" 2>/dev/null
  [ -n "$synth_pid" ] && pkill -P "$synth_pid" 2>/dev/null
  [ -n "$synth_pid" ] && kill "$synth_pid" 2>/dev/null
}
trap cleanup EXIT

# await_synth WHICH NAME: waits (within the budget) for a model's synth.
await_synth() {
  local which=$1 name=$2 s
  s=$(now)
  while [ ! -e "$run/synth-$which.rc" ] && [ -n "$synth_pid" ] && kill -0 "$synth_pid" 2>/dev/null && [ "$(left)" -gt "$reserve" ]; do sleep 1; done
  cat "$run/synth-$which.log" >>"$log" 2>/dev/null
  if [ ! -e "$run/synth-$which.rc" ]; then
    note stopped "$name" "$s_synth" "not done at the budget's end"
    return 1
  fi
  if [ "$(cat "$run/synth-$which.rc")" = 0 ]; then
    note ok "$name" "$s_synth" "$(tail -n 1 "$run/synth-$which.log")"
    return 0
  fi
  fail "$name" "$s_synth" "exit $(cat "$run/synth-$which.rc")" "$run/synth-$which.log"
  return 1
}

# 3. The backend: built here for this GPU on all cores (reused when WORK's
# build of the same sources and architectures is there), or in a
# rehearsal with REHEARSE_BACKEND, taken ready-made.
build_pid=''
if [ "$rehearse" = 1 ] && [ -n "${REHEARSE_BACKEND:-}" ]; then
  step "backend (Vulkan, ready-made)" 1 0 bash -c 'mkdir -p "$2" && cp -P "$1"/libggml-base.so* "$1"/libggml-vulkan.so* "$2"/' _ "$(abs "$REHEARSE_BACKEND")" "$lib"
else
  src=${OLLAMA_DIR:-}
  if [ -z "$src" ] && [ -f "$root/ggml/CMakeLists.txt" ]; then src=$root/ggml; fi
  arch=${CUDA_ARCHITECTURES:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')}
  jobs=$(getconf _NPROCESSORS_ONLN)
  cu=${src:-.}/ml/backend/ggml/ggml/src/ggml-cuda
  # What the build will take: the slow instances (mmq, mmf, mma flash
  # attention) about 60 CPU-seconds each, the rest about 15.
  heavy=$(find "$cu/template-instances" -name 'mmq*.cu' -o -name 'mmf*.cu' -o -name 'fattn-mma*.cu' 2>/dev/null | wc -l)
  light=$(($(find "$cu" -maxdepth 1 -name '*.cu' 2>/dev/null | wc -l) + $(find "$cu/template-instances" -name 'fattn-tile*.cu' 2>/dev/null | wc -l) + 3))
  est_build=$(((heavy * 60 + light * 15) / jobs + 20))
  key="$(basename "${src:-none}") sm_${arch:-native}"
  s_build=$(now)
  if [ -f "$lib/built" ] && [ "$(cat "$lib/built")" = "$key" ] && ls "$lib"/libggml-cuda.so* >/dev/null 2>&1; then
    note ok "CUDA backend (reused)" "$s_build" "built by an earlier run in $work: $key"
    echo "reused $key" >"$run/build.txt"
  else
    say "== build CUDA backend (sm_${arch:-native}) at ${s_build}s: $heavy slow and $light other files on $jobs cores, about ${est_build}s"
    setsid env OLLAMA_DIR="$src" CUDA_ARCHITECTURES="${arch:-native}" BUILD_DIR="$work/build" \
      "$root/scripts/build-backend.sh" "$lib" >"$run/build.log" 2>&1 &
    build_pid=$!
    # Waited for while a probe still fits after it, its progress logged.
    last=0
    while kill -0 "$build_pid" 2>/dev/null && [ "$(left)" -gt $((reserve + need_quick_probe)) ]; do
      sleep 2
      if [ $(($(now) - last)) -ge 30 ]; then
        last=$(now)
        p=$(grep -o '^\[[0-9]*/[0-9]*\]' "$run/build.log" | tail -1 | tr -d '[]')
        if [ -n "$p" ] && [ "${p%/*}" -gt 0 ]; then
          say "   build: $p at ${last}s, projected end at about $((s_build + (last - s_build) * ${p#*/} / ${p%/*}))s"
        fi
      fi
    done
    rc=0
    if kill -0 "$build_pid" 2>/dev/null; then
      kill -- "-$build_pid" 2>/dev/null
      wait "$build_pid" 2>/dev/null
      cat "$run/build.log" >>"$log"
      note stopped "build CUDA backend (sm_${arch:-native})" "$s_build" "not done when only a probe's time was left (estimate ${est_build}s)"
      echo "stopped after $(($(now) - s_build))s (estimate ${est_build}s)" >"$run/build.txt"
    else
      wait "$build_pid" || rc=$?
      cat "$run/build.log" >>"$log"
      if [ "$rc" = 0 ]; then
        echo "$key" >"$lib/built"
        note ok "build CUDA backend (sm_${arch:-native})" "$s_build" "estimate ${est_build}s"
        echo "$(($(now) - s_build))s (estimate ${est_build}s, $jobs cores)" >"$run/build.txt"
      else
        fail "build CUDA backend (sm_${arch:-native})" "$s_build" "exit $rc" "$run/build.log"
      fi
    fi
    build_pid=''
  fi
fi

# The backend's libraries must load whatever the loader's configuration:
# what ldd does not find is looked for in nvcc's installation, then in
# the Python environment's NVIDIA wheels, and put on LD_LIBRARY_PATH.
if ls "$lib"/libggml-*.so >/dev/null 2>&1; then
  so=$(ls "$lib"/libggml-cuda.so "$lib"/libggml-vulkan.so 2>/dev/null | head -1)
  missing=$(ldd "$so" 2>&1 | awk '/not found/ {print $1}')
  if [ -n "$missing" ]; then
    dirs=()
    nv=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    for d in "$(dirname "$nv")/../lib64" "$(dirname "$nv")/../targets/x86_64-linux/lib" /usr/local/cuda/lib64; do
      [ -d "$d" ] && dirs+=("$(cd "$d" && pwd)")
    done
    site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null)
    [ -n "$site" ] && for d in "$site"/nvidia/*/lib; do [ -d "$d" ] && dirs+=("$d"); done
    add=''
    for m in $missing; do
      for d in "${dirs[@]}"; do
        if [ -e "$d/$m" ]; then
          case ":$add:" in *":$d:"*) ;; *) add=${add:+$add:}$d ;; esac
          break
        fi
      done
    done
    [ -n "$add" ] && export LD_LIBRARY_PATH=$add${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    say "libraries the loader did not find: $(echo "$missing" | tr '\n' ' ')-> LD_LIBRARY_PATH=${add:-(none found)}"
  fi
  { echo "== ldd $so"; ldd "$so"; } >"$run/ldd.txt" 2>&1
  cat "$run/ldd.txt" >>"$log"
  if grep -q 'not found' "$run/ldd.txt"; then
    fail "backend libraries" "$(now)" "still not found: $(awk '/not found/ {print $1}' "$run/ldd.txt" | tr '\n' ' ')" "$run/ldd.txt"
  fi
fi
tbg() { "$tb" --backend-dir "$lib" "$@"; }
s=$(now)
if ! ls "$lib"/libggml-*.so >/dev/null 2>&1; then
  skip "devices" "no backend to load (see the backend's step)"
elif [ -x "$tb" ] && tbg devices >>"$log" 2>&1 && tbg devices -o json 2>/dev/null | grep -q "\"backend\": \"$backend\""; then
  gpu_ok=1
  note ok "devices" "$s" "the binary built elsewhere ran unchanged: $(tbg devices 2>/dev/null | awk -v b="$backend" '$2 == b {d = $4; $1 = $2 = $3 = $4 = $5 = $6 = ""; sub(/^ +/, ""); print d ": " $0; exit}')"
else
  fail "devices" "$s" "no $backend device listed (tokbench devices, in the log)"
fi

# The probe needs no model: it runs while the 8B may still be in the making.
# A late backend gets the quick probe (the bandwidth and one type) rather
# than none.
probe_name=probe
if [ $(($(left) - reserve)) -lt "$need_probe" ]; then
  probe_args=("${quick_probe_args[@]}") need_probe=$need_quick_probe probe_name="probe (quick: ${quick_probe_args[*]})"
fi
gpu_step "$probe_name" "$need_probe" 120 bash -c '"$1" --backend-dir "$2" probe "${@:5}" -o json >"$3" 2> >(tee "$4" >&2)' _ "$tb" "$lib" "$run/probe.json" "$run/probe.txt" "${probe_args[@]}"

have_model=0
[ -n "$synth_pid" ] && : >"$pause"
[ -n "$synth_pid" ] && await_synth model "synth $model $model_type" && have_model=1
moe_stopped=''
p=$(cat "$run/synth-moe.pid" 2>/dev/null) && [ -n "$p" ] && kill -STOP "$p" 2>/dev/null && moe_stopped=$p
need_model() {
  if [ "$have_model" != 1 ]; then
    skip "$1" "no $model model (see its synth)"
    return 1
  fi
}

need_model "run $model pp$P tg$N -fa 0,1" &&
  gpu_step "run $model pp$P tg$N -fa 0,1" "$need_core" 0 bash -c '"$1" --backend-dir "$2" run "${@:8}" -ngl 99 -p "$3" -n "$4" -fa 0,1 -r "$5" --telemetry-out "$6" -o jsonl >"$7"' \
    _ "$tb" "$lib" "$P" "$N" "$reps" "$run/tel/core.jsonl" "$run/res/core.jsonl" "${M[@]}"

need_model "profile one decode step" &&
  gpu_step "profile one decode step" "$need_profile" 120 bash -c '"$1" --backend-dir "$2" profile "${@:4}" -ngl 99 -p 0 -n 1 -fa 1 -o md >"$3"' _ "$tb" "$lib" "$run/profile.md" "${M[@]}"

# The grid leaves time for the mixture and the load run after it.
later=$((need_moe * 2 + need_load))
need_model "sweep -d $depths --parallel $parallel -fa 0,1" &&
  gpu_step "sweep -d $depths --parallel $parallel -fa 0,1" "$need_grid" $(($(left) - reserve - later)) \
    "$tb" --backend-dir "$lib" sweep "${M[@]}" -ngl 99 -p "$P" -n "$N" -d "$depths" --parallel "$parallel" -fa 0,1 -r "$reps" \
    --no-kernels --filter "$grid_filter" --out "$run/res/grid.jsonl" --telemetry-out "$run/tel/grid.jsonl"

rm -f "$pause"
[ -n "$moe_stopped" ] && kill -CONT "$moe_stopped" 2>/dev/null
if [ "$want_moe" = 1 ] && await_synth moe "synth $moe $moe_type"; then
  gpu_step "run $moe -ncmoe $ncmoe" "$need_moe" 0 bash -c '"$1" --backend-dir "$2" run "${@:9}" -ngl 99 -ncmoe "$3" -p "$4" -n "$5" -r "$6" --telemetry-out "$7" -o jsonl >"$8"' \
    _ "$tb" "$lib" "$ncmoe" "$P" "$N" "$reps" "$run/tel/moe.jsonl" "$run/res/moe.jsonl" "${MOE[@]}"
else
  skip "run $moe -ncmoe $ncmoe" "no $moe model (see its synth)"
fi

need_model "load" &&
  gpu_step "load" "$need_load" 0 "$tb" --backend-dir "$lib" load "${M[@]}" -ngl 99 "${load_args[@]}" --out "$run/load.jsonl"

# The closing: this run's files only, then the summary, whatever happened.
made=() # the files this run put in OUT: the only ones it may compress
keep() { [ -s "$1" ] && cp "$1" "$out/$2" && made+=("$2"); }
cat "$run"/res/*.jsonl >"$run/results.jsonl" 2>/dev/null
cat "$run"/tel/*.jsonl >"$run/telemetry.jsonl" 2>/dev/null
keep "$run/results.jsonl" results.jsonl
keep "$run/telemetry.jsonl" telemetry.jsonl
keep "$run/probe.json" probe.json
keep "$run/profile.md" profile.md
keep "$run/load.jsonl" load.jsonl
table=
if [ -s "$run/results.jsonl" ]; then
  "$tb" report "$run/results.jsonl" -o html --out "$out/report.html" >>"$log" 2>&1 && made+=(report.html) ||
    fail "report" "$(now)" "the HTML report failed (see the log)"
  table=$("$tb" report "$run/results.jsonl" --wide 2>&1)
fi
sheet=$(python3 "$root/scripts/gpu-figures.py" --datasheet "$gpu_name" 2>/dev/null || echo unknown)

{
  echo "tokbench $mode: $("$tb" --version 2>/dev/null)"
  echo "started $(date -u -d "@$(($(date +%s) - SECONDS + t0))" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null), budget ${budget}s, used $(now)s"
  echo "gpu: ${gpu_name:-none}; $versions"
  echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(getconf _NPROCESSORS_ONLN) cores"
  [ -s "$run/ldd.txt" ] && echo "backend libraries: $(awk '/=>/ && /cuda|cublas|vulkan/ {printf "%s %s; ", $1, $3}' "$run/ldd.txt")"
  echo
  echo "steps (status, name, started-ended in seconds from the start, detail):"
  printf '  %s\n' "${results[@]}"
  echo
  echo "figures (scripts/gpu-figures.py):"
  python3 "$root/scripts/gpu-figures.py" "$run" "$gpu_name" "$model" "$moe" 2>&1 | sed 's/^/  /'
  echo
  echo "bandwidth (read + written, GB/s):"
  if [ -s "$run/probe.txt" ]; then sed 's/^/  probe: /' "$run/probe.txt"; else echo "  probe: not run"; fi
  if [ -s "$run/torch.json" ]; then echo "  PyTorch device copy: $(cat "$run/torch.json")"; else echo "  PyTorch device copy: not run"; fi
  echo "  datasheet: $sheet"
  echo
  if [ -n "$table" ]; then
    echo "results (tokbench report results.jsonl --wide):"
    echo "$table"
  else
    echo "no results"
  fi
  if [ -s "$run/load.jsonl" ]; then
    echo
    echo "load (tokbench report load.jsonl):"
    "$tb" report "$run/load.jsonl" 2>&1 | head -40
  fi
} >"$summary"
made+=(summary.txt log.txt)

# Each of this run's files under 16 MiB: a larger one is compressed, or
# cut with a note. Nothing else in OUT is touched.
for name in "${made[@]}"; do
  f=$out/$name
  [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt $((16 << 20)) ] || continue
  if gzip -9 "$f" && [ "$(stat -c %s "$f.gz")" -le $((16 << 20)) ]; then
    echo "$name was over 16 MiB: compressed to $name.gz" >>"$summary"
  else
    [ -f "$f.gz" ] && gunzip "$f.gz"
    truncate -s $((15 << 20)) "$f"
    echo "$name was over 16 MiB: cut to its first 15 MiB" >>"$summary"
  fi
done
cat "$summary"
echo "files in $out: ${made[*]}"
[ "$failures" = 0 ]
