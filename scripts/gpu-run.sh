#!/usr/bin/env bash
# The GPU run, one command: on a machine with an NVIDIA GPU, its driver and
# the CUDA toolkit (nvcc, CMake, Ninja), from the bundle `make gpu-bundle`
# makes (no Go, no network needed) or from a checkout with bin/tokbench
# built. A GPU box comes rarely and briefly, so nothing important waits on
# the CUDA build alone, and every figure is in OUT as soon as it is
# measured (docs/gpu.md):
#
#   at 0 s, side by side: the CUDA backend built for this GPU on all cores;
#      PyTorch's device-to-device copy (one Python process: a bandwidth
#      figure in the first minute, and PyTorch's versions); the main model
#      (a Llama-3-8B shape in Q4_0, written directly: no F16, no quantizer;
#      smaller where the disk is short) at normal priority;
#   as soon as the backend loads (its CUDA libraries found with ldd): the
#      probe (the quick one when the main run would not fit after the full
#      one), the main model's pp512/tg128 at -ngl 99, -fa 0,1 with the step
#      split and telemetry;
#   after those figures: the Q4_K_M and the mixture are made at the lowest
#      priority while the op profile of a decode step and the sweep over
#      depth, sequences and -fa run; then the Q4_K_M's pp512/tg128, the
#      mixture at three -ncmoe and a short load run, as time allows.
#
# It knows when it started: a step that would not finish in what is left is
# skipped, one still running at the end is stopped (what it measured is
# kept), a failing one is reported with its whole reason and the next one
# runs. After every step OUT holds that step's figures and a provisional
# summary (what ran, what was skipped and why, what was still to come), so
# a call killed at any second keeps everything measured before it. Exit 0
# unless a step failed.
#
# OUT: where the files go (at most 8, each under 16 MiB, 64 MiB in all).
# Unset: a new folder in /tmp. An empty or absent folder: that one. A
# folder with files in it, or one that cannot be listed: a new folder is
# made inside it, and nothing already there is touched. WORK: the scratch
# folder; the run keeps all it makes there in WORK/tokbench-gpu (the
# models, the build, each run's own files), so that a second call on the
# same machine reuses the build and the models, and no file of the user's
# in WORK is taken by its name. A relative OUT, WORK or TOKBENCH is the
# caller's.
#
# REHEARSE=1 is the same run on a machine without a GPU (CI), at tiny sizes:
# with REHEARSE_BACKEND (a folder with libggml-vulkan.so, for mesa's
# llvmpipe) the backend is taken ready-made; without it the CUDA branch
# runs as on the box, against the stand-ins for nvidia-smi, nvcc, CMake and
# PyTorch that scripts/testdata/standin puts on the PATH. REHEARSE_NEEDS=gpu
# gives a rehearsal the GPU run's own step times and caps (to see, with a
# stand-in build of a given length, which figures a real call returns).
#
# It reads the GPU, never changes it: no clocks, power limits, persistence
# or MIG mode, no reset.
#
#   scripts/gpu-run.sh                                  # from build/gpu-bundle or a checkout
#   BUDGET_S=900 OUT=/data/run WORK=/data/tmp scripts/gpu-run.sh
#   REHEARSE=1 REHEARSE_BACKEND=build/vulkan-lib scripts/gpu-run.sh
#
# Environment: BUDGET_S (default 560: the end of a 600 s call, less the
# closing), OUT, WORK, TOKBENCH (the binary; default bin/tokbench),
# OLLAMA_DIR (the pinned sources; default ggml/ in a bundle, else Go's
# module cache), CUDA_ARCHITECTURES (default: the GPU's compute capability).
set -uo pipefail # not -e: a failing step is reported and the next one runs
caller=$PWD
abs() { case $1 in /*) echo "$1" ;; *) echo "$caller/$1" ;; esac; }
cd "$(dirname "$0")/.." || exit 1
root=$PWD
t0=$SECONDS
budget=${BUDGET_S:-560}
rehearse=${REHEARSE:-0}
case $budget in '' | *[!0-9]*)
  echo "gpu-run: BUDGET_S=$budget: give whole seconds" >&2
  exit 2
  ;;
esac
stamp=$(date -u +%Y%m%dT%H%M%SZ)

# OUT is never a place of loss: a folder holding anything, or one whose
# contents cannot be read, gets a new folder inside it for this run.
if [ -z "${OUT:-}" ]; then
  out=$(mktemp -d /tmp/tokbench-gpu-out.XXXXXX) || exit 1
else
  out=$(abs "$OUT")
  if [ -e "$out" ] && [ ! -d "$out" ]; then
    echo "gpu-run: OUT=$OUT is a file, not a folder: name a folder (or leave OUT unset)" >&2
    exit 2
  fi
  if [ -d "$out" ]; then
    if ! listing=$(ls -A "$out" 2>/dev/null) || [ ! -r "$out" ] || [ -n "$listing" ]; then
      out=$(mktemp -d "$out/tokbench-gpu-$stamp.XXXX") || exit 1
    fi
  fi
  mkdir -p "$out" || exit 1
fi

# WORK is the caller's folder: this script keeps what it makes in a folder
# of its own inside it, marked as its own, and takes no other name there.
work=$(abs "${WORK:-/tmp/tokbench-gpu-work}")
state=$work/tokbench-gpu
mark=$state/.made-by-tokbench-gpu-run
if [ -L "$state" ] || { [ -e "$state" ] && [ ! -f "$mark" ]; }; then
  echo "gpu-run: $state was not made by gpu-run.sh: give another WORK (nothing in it was touched)" >&2
  exit 2
fi
mkdir -p "$state" && touch "$mark" || exit 1
run=$state/runs/$stamp-$$ # this run's own files: results are never another run's
mkdir -p "$run/res" "$run/tel" "$run/steps" || exit 1
exec 9>>"$state/lock"
if command -v flock >/dev/null && ! flock -n 9; then
  echo "gpu-run: another gpu-run is using WORK=$work: wait for it, or give another WORK" >&2
  exit 2
fi
log=$out/log.txt
summary=$out/summary.txt
: >"$log"
tb=$(abs "${TOKBENCH:-$root/bin/tokbench}")
lib=$state/lib
export TOKBENCH_CACHE=$state/cache

# What the run does, at the GPU box's sizes or the rehearsal's. need_*:
# the seconds a step needs at the least; disk_*: GB on disk.
gpu_needs() {
  reserve=6 need_probe=30 need_quick_probe=6 need_core=45 need_profile=15 need_grid=60 need_core2=45 need_moe=60 need_load=30
}
if [ "$rehearse" = 1 ]; then
  mode="REHEARSAL: tiny sizes"
  models=(tiny) model_type=q4_0 model2_type=q4_k_m moe=tiny-moe moe_type=q4_0 ncmoe=0,1,2
  P=16 N=8 depths=0,16,32 parallel=1,2,4 reps=2 grid_filter='n_depth>16 && parallel>2'
  load_args=(--requests 8 --concurrency 4 --prompt-len 16 --output-len 8)
  probe_args=(--types q4_0 -r 1) quick_probe_args=(--types q4_0 -r 1)
  copy_args=(64 5)
  reserve=3 need_probe=8 need_quick_probe=8 need_core=3 need_profile=2 need_grid=3 need_core2=3 need_moe=3 need_load=3
  [ "${REHEARSE_NEEDS:-}" = gpu ] && gpu_needs
  disk_build=1 disk_model=(1) disk_model2=1 disk_moe=1
  export GGML_VK_VISIBLE_DEVICES=0 # ggml hides CPU-type Vulkan devices otherwise
else
  mode="GPU run"
  # The main model, largest first: the one the disk holds beside the build.
  models=(llama-8b llama-3b llama-1b) model_type=q4_0 model2_type=q4_k_m moe=qwen3-30b-a3b moe_type=q4_0 ncmoe=0,24,48
  P=512 N=128 depths=0,4096,16384 parallel=1,8,32 reps=3 grid_filter='n_depth>4096 && parallel>8'
  load_args=(--workload short --concurrency 8 --requests 32)
  probe_args=() quick_probe_args=(--types q4_0 -r 1)
  copy_args=(4096 20)
  gpu_needs
  # Q4_0 is written directly (4.6 GB for the 8B); the Q4_K_M goes through
  # an F16 intermediate (16 GB beside its 4.9 GB); the mixture 18 GB.
  disk_build=3 disk_model=(5 2 1) disk_model2=22 disk_moe=18
fi
backend=CUDA
[ "$rehearse" = 1 ] && backend=Vulkan # the ready-made backend, or the stand-in build's

now() { echo $((SECONDS - t0)); }
left() { echo $((budget - (SECONDS - t0))); }
say() { echo "$*" | tee -a "$log"; }
# logfile FILE: a step's own output into the log, at most its last MiB,
# so that the log stays within what comes back.
logfile() {
  [ -f "$1" ] || return 0
  if [ "$(stat -c %s "$1")" -gt $((1 << 20)) ]; then
    echo "[$(basename "$1"): $(stat -c %s "$1") bytes, its last MiB follows]" >>"$log"
    tail -c $((1 << 20)) "$1" >>"$log"
  else
    cat "$1" >>"$log"
  fi
}

# The steps still to come, in order: a provisional summary names them, so
# a call ended early says what it never reached. A step's line (note,
# skip, fail) takes its name off the list.
pending=()
results=() # summary lines: one per step, with when it started and ended
settle() {
  local i
  for i in "${!pending[@]}"; do
    case $1 in "${pending[$i]}"*)
      unset 'pending[i]'
      pending=("${pending[@]}")
      return
      ;;
    esac
  done
}
note() { # note STATUS NAME START DETAIL
  results+=("$(printf '%-8s %-44s %4ss-%4ss  %s' "$1" "$2" "$3" "$(now)" "$4")")
  settle "$2"
}
failures=0
skip() {
  results+=("$(printf '%-8s %-44s %4ss        %s' skipped "$1" "$(now)" "$2")")
  settle "$1"
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
# closing reserve aside), stopped after CAP seconds ("all": what is left;
# a cap below NEED skips it), its output in its own file and the log.
# SIGTERM first: tokbench keeps what it measured. Then OUT is brought up
# to date.
nstep=0
step() {
  local name=$1 need=$2 cap=$3
  shift 3
  local l=$(($(left) - reserve))
  if [ "$cap" != all ] && [ "$cap" -lt "$l" ]; then l=$cap; fi
  if [ "$l" -lt "$need" ]; then
    skip "$name" "needs about ${need}s, ${l}s left for it"
    publish
    return 1
  fi
  nstep=$((nstep + 1))
  local f=$run/steps/$nstep.log s rc=0
  s=$(now)
  say "== $name (at ${s}s, up to ${l}s): $*"
  timeout -k 15 "$l" "$@" >"$f" 2>&1 9>&- || rc=$?
  logfile "$f"
  case $rc in
    0) note ok "$name" "$s" "" ;;
    124 | 137) note stopped "$name" "$s" "at the budget's end (what it measured is kept)" ;;
    *) fail "$name" "$s" "exit $rc" "$f" ;;
  esac
  publish
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

# publish [final]: OUT as of now. Each of this run's files is copied in
# whole under a temporary name and renamed (a reader never sees half of
# one); the summary is rewritten, provisional until the end; the files
# are kept within what a device call brings back.
results_n=-1
publish() {
  local f n
  cat "$run"/res/*.jsonl >"$run/results.jsonl" 2>/dev/null
  cat "$run"/tel/*.jsonl >"$run/telemetry.jsonl" 2>/dev/null
  for f in results.jsonl telemetry.jsonl probe.json profile.md load.jsonl; do
    if [ -s "$run/$f" ] && ! cmp -s "$run/$f" "$out/$f"; then
      cp "$run/$f" "$out/.$f.part" && mv -f "$out/.$f.part" "$out/$f"
      rm -f "$out/$f.gz"
    fi
  done
  n=$(wc -l <"$run/results.jsonl" 2>/dev/null || echo 0)
  if [ "$n" -gt 0 ] && [ "$n" != "$results_n" ]; then
    "$tb" report "$run/results.jsonl" -o html --out "$out/report.html" >>"$log" 2>&1 ||
      say "-- the HTML report failed (see the log)"
    results_n=$n
  fi
  write_summary "${1:-provisional}" >"$out/.summary.txt.part" && mv -f "$out/.summary.txt.part" "$summary"
  fit_out
}

# write_summary STATE: the summary as of now (STATE: provisional, final,
# or why it stopped).
write_summary() {
  local table='' sheet
  [ -s "$run/results.jsonl" ] && table=$("$tb" report "$run/results.jsonl" --wide 2>&1)
  sheet=$(python3 "$root/scripts/gpu-figures.py" --datasheet "$gpu_name" 2>/dev/null || echo unknown)
  echo "tokbench $mode: $("$tb" --version 2>/dev/null)"
  echo "started $(date -u -d "@$(($(date +%s) - SECONDS + t0))" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null), budget ${budget}s, used $(now)s"
  if [ "$1" = final ]; then
    echo "summary: final"
  else
    echo "summary: $1, written at $(now)s; still to come then: $(printf '%s; ' "${pending[@]}")"
  fi
  echo "gpu: ${gpu_name:-none}; $(versions)"
  echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(getconf _NPROCESSORS_ONLN) cores"
  [ -s "$run/ldd.txt" ] && echo "backend libraries: $(awk '/=>/ && /cuda|cublas|vulkan/ {printf "%s %s; ", $1, $3}' "$run/ldd.txt")"
  echo
  echo "steps (status, name, started-ended in seconds from the start, detail):"
  printf '  %s\n' "${results[@]}"
  [ "$1" = final ] || printf '  %-8s %s\n' "${pending[@]/#/to come }"
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
}

# fit_out: each file under 16 MiB (a larger one compressed, or cut with a
# note) and all of them under 64 MiB (the telemetry cut first, then the
# log). Only this run's eight names are touched.
mine=(summary.txt results.jsonl telemetry.jsonl report.html probe.json profile.md load.jsonl log.txt)
fit_out() {
  local name f total cut
  for name in "${mine[@]}"; do
    f=$out/$name
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt $((16 << 20)) ] || continue
    [ "$name" = log.txt ] && continue # still written: cut below, at the end
    if gzip -6 -f "$f" && [ "$(stat -c %s "$f.gz")" -le $((16 << 20)) ]; then
      echo "$name was over 16 MiB: compressed to $name.gz" >>"$summary"
    else
      [ -f "$f.gz" ] && gunzip -f "$f.gz"
      truncate -s $((15 << 20)) "$f"
      echo "$name was over 16 MiB: cut to its first 15 MiB" >>"$summary"
    fi
  done
  for name in telemetry.jsonl log.txt; do
    total=$(du -cb "$out"/* 2>/dev/null | tail -1 | cut -f1)
    [ "${total:-0}" -gt $((63 << 20)) ] || break
    for f in "$out/$name" "$out/$name.gz"; do
      [ -f "$f" ] || continue
      cut=$(($(stat -c %s "$f") - (total - (63 << 20))))
      [ "$cut" -lt 0 ] && cut=0
      truncate -s "$cut" "$f"
      echo "$(basename "$f") cut to $cut bytes: the files back are 64 MiB at most" >>"$summary"
    done
  done
  [ "$(stat -c %s "$log" 2>/dev/null || echo 0)" -gt $((16 << 20)) ] && truncate -s $((16 << 20)) "$log"
  return 0
}

say "tokbench $mode: budget ${budget}s, out $out, work $state, this run's files $run"
gpu_name=''
if command -v nvidia-smi >/dev/null; then
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
fi
[ -x "$tb" ] || fail "tokbench" "$(now)" "no binary at $tb: make gpu-bundle (or make build) first"

# The disk first: it decides the models' sizes. A model already in WORK
# needs no room (its bytes are counted in what is free).
have() { ls "$TOKBENCH_CACHE/$1-$2-s"*.gguf >/dev/null 2>&1; }
avail_gb=$(df -Pk "$state" 2>/dev/null | awk 'NR == 2 {print int($4 / 1048576)}')
avail_gb=${avail_gb:-0}
model='' room=$avail_gb
for i in "${!models[@]}"; do
  need=$((disk_build + disk_model[i]))
  if have "${models[$i]}" "$model_type"; then need=$disk_build; fi
  if [ "$need" -le "$avail_gb" ]; then
    model=${models[$i]} room=$((avail_gb - need))
    break
  fi
done
want_model2=0 want_moe=0
if [ -n "$model" ]; then
  d=$disk_model2
  have "$model" "$model2_type" && d=0
  [ "$d" -le "$room" ] && want_model2=1
  # The Q4_K_M's intermediate is gone once it is made: the mixture needs
  # its own room beside the Q4_K_M itself.
  d2=$disk_moe
  have "$moe" "$moe_type" && d2=0
  [ $((d2 + want_model2 * ${disk_model[0]})) -le "$room" ] && want_moe=1
fi
say "disk: $avail_gb GB free on $state; main model ${model:-none} $model_type (the Q4_K_M: $([ $want_model2 = 1 ] && echo made || echo 'no room'), the mixture: $([ $want_moe = 1 ] && echo made || echo 'no room'))"
M=(--synth "$model" --synth-type "$model_type")
M2=(--synth "$model" --synth-type "$model2_type")
MOE=(--synth "$moe" --synth-type "$moe_type")
fits=1
[ -n "$model" ] || fits=0 model=${models[0]}
core_name="run $model $model_type pp$P tg$N -fa 0,1"
core2_name="run $model $model2_type pp$P tg$N -fa 0,1"
pending=("PyTorch device copy" "synth $model $model_type" "CUDA backend" "build CUDA backend" "backend" "devices" "probe"
  "$core_name" "profile one decode step" "sweep" "synth $model $model2_type" "$core2_name" "synth $moe" "run $moe" "load")

# Background jobs (the copy, the build, the models): bg NAME FILE CMD...
# starts one, its output in FILE; reap notes those that ended.
declare -A bg_pid bg_start bg_file
bg() {
  local name=$1 file=$2
  shift 2
  "$@" >"$file" 2>&1 9>&- & # the lock stays this script's: a job left dying holds nothing
  bg_pid[$name]=$! bg_start[$name]=$(now) bg_file[$name]=$file
}
# bg_wait NAME SECONDS: waits for a background job at most SECONDS; its
# exit status, or 124 when it was still running.
bg_wait() {
  local p=${bg_pid[$1]:-} until=$(($(now) + $2))
  [ -n "$p" ] || return 127
  while kill -0 "$p" 2>/dev/null && [ "$(now)" -lt "$until" ]; do sleep 1; done
  kill -0 "$p" 2>/dev/null && return 124
  wait "$p"
}
cleanup() {
  local p
  for p in "${bg_pid[@]}"; do
    kill -CONT -- "-$p" 2>/dev/null
    kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null
  done
}
trap cleanup EXIT
# A signal to the script (a call's own limit, Ctrl-C) still leaves a
# summary that says so.
trap 'say "== stopped by a signal at $(now)s"; publish "stopped by a signal"; exit 143' TERM INT HUP

# 1. At 0 s, side by side: the build, the copy and the main model.
build_key='' build_running=0
if [ "$rehearse" = 1 ] && [ -n "${REHEARSE_BACKEND:-}" ]; then
  settle "build CUDA backend"
  step "backend (Vulkan, ready-made)" 1 all bash -c 'mkdir -p "$2" && cp -P "$1"/libggml-base.so* "$1"/libggml-vulkan.so* "$2"/' _ "$(abs "$REHEARSE_BACKEND")" "$lib"
else
  settle "backend"
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
  build_key="$(basename "${src:-none}") sm_${arch:-native}"
  build_name="build CUDA backend (sm_${arch:-native})"
  if [ -f "$lib/built" ] && [ "$(cat "$lib/built")" = "$build_key" ] && ls "$lib"/libggml-cuda.so* >/dev/null 2>&1; then
    note ok "CUDA backend (reused)" "$(now)" "built by an earlier run in $state: $build_key"
    settle "build CUDA backend"
    echo "reused $build_key" >"$run/build.txt"
  else
    settle "CUDA backend"
    say "== $build_name at $(now)s: $heavy slow and $light other files on $jobs cores, about ${est_build}s"
    bg build "$run/build.log" setsid env OLLAMA_DIR="$src" CUDA_ARCHITECTURES="${arch:-native}" BUILD_DIR="$state/build" \
      "$root/scripts/build-backend.sh" "$lib"
    build_running=1
  fi
fi

# One Python process: the copy, and PyTorch's and CUDA's versions with it.
if python3 -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torch") is None)' 2>/dev/null; then
  bg copy "$run/copy.log" timeout -k 5 60 python3 "$root/scripts/gpu-copy.py" "${copy_args[@]}" --out "$run/torch.json"
else
  skip "PyTorch device copy" "PyTorch is not installed here"
fi

if [ "$fits" = 0 ]; then
  skip "synth $model $model_type" "no room for any model beside the build: $avail_gb GB free on $state (give WORK on a larger disk)"
elif [ -x "$tb" ]; then
  say "== synth $model $model_type at $(now)s, at normal priority, beside the build"
  bg model "$run/synth-model.log" "$tb" synth --preset "$model" --type "$model_type" --cache
fi

# The machine's facts and the tools' versions (no Python: its versions
# come with the copy).
{
  echo "== machine"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,compute_mode,persistence_mode,mig.mode.current --format=csv
  fi
  lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\)|Flags)' | cut -c1-400
  free -g 2>/dev/null | head -2
  df -h "$state" 2>/dev/null | tail -1
  echo "== versions"
  "$tb" --version
  command -v nvcc >/dev/null && nvcc --version | tail -n 2
  command -v cmake >/dev/null && cmake --version | head -1
  command -v ninja >/dev/null && echo "ninja $(ninja --version)"
} >>"$log" 2>&1
tools_versions=$(
  v=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
  echo "driver ${v:-none}"
  v=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')
  echo "nvcc ${v:-none}"
  v=$(cmake --version 2>/dev/null | head -1 | awk '{print $3}')
  echo "cmake ${v:-none}"
)
tools_versions=$(echo "$tools_versions" | paste -sd, - | sed 's/,/, /g')
versions() { # the tools', and PyTorch's once the copy has said it
  local v
  v=$(sed -n 's/.*"torch": "\([^"]*\)".*/\1/p' "$run/torch.json" 2>/dev/null)
  echo "$tools_versions, torch ${v:-none}"
}
say "versions: $tools_versions"

# reap_copy: the copy's line, once it has ended.
reap_copy() {
  [ -n "${bg_pid[copy]:-}" ] || return 0
  kill -0 "${bg_pid[copy]}" 2>/dev/null && return 0
  local rc=0
  wait "${bg_pid[copy]}" || rc=$?
  logfile "$run/copy.log"
  case $rc in
    0) note ok "PyTorch device copy" "${bg_start[copy]}" "$(cat "$run/torch.json")" ;;
    3) skip "PyTorch device copy" "$(tail -n 1 "$run/copy.log")" ;;
    124 | 137) note stopped "PyTorch device copy" "${bg_start[copy]}" "not done in 60 s" ;;
    *) fail "PyTorch device copy" "${bg_start[copy]}" "exit $rc" "$run/copy.log" ;;
  esac
  unset 'bg_pid[copy]'
  publish
}

# await_model NAME SECONDS: the synth of bg job NAME, waited for at most
# SECONDS; 0 when the model is there.
await_model() {
  local job=$1 name=$2 rc=0
  [ -n "${bg_pid[$job]:-}" ] || return 1
  bg_wait "$job" "$3" || rc=$?
  if [ "$rc" = 124 ]; then
    note stopped "$name" "${bg_start[$job]}" "not done when its run had to start"
    kill -- "${bg_pid[$job]}" 2>/dev/null
    unset "bg_pid[$job]"
    publish
    return 1
  fi
  unset "bg_pid[$job]"
  logfile "${bg_file[$job]}"
  if [ "$rc" = 0 ]; then
    note ok "$name" "${bg_start[$job]}" "$(tail -n 1 "${bg_file[$job]}")"
    publish
    return 0
  fi
  fail "$name" "${bg_start[$job]}" "exit $rc" "${bg_file[$job]}"
  publish
  return 1
}

# 2. The build, waited for while a quick probe still fits after it, its
# progress logged; the copy's figure goes to OUT as soon as it is in.
if [ "$build_running" = 1 ]; then
  s_build=${bg_start[build]} last=0
  while kill -0 "${bg_pid[build]}" 2>/dev/null && [ "$(left)" -gt $((reserve + need_quick_probe)) ]; do
    sleep 1
    reap_copy
    if [ $(($(now) - last)) -ge 30 ]; then
      last=$(now)
      p=$(grep -o '^\[[0-9]*/[0-9]*\]' "$run/build.log" | tail -1 | tr -d '[]')
      if [ -n "$p" ] && [ "${p%/*}" -gt 0 ]; then
        say "   build: $p at ${last}s, projected end at about $((s_build + (last - s_build) * ${p#*/} / ${p%/*}))s"
      fi
    fi
  done
  rc=0
  if kill -0 "${bg_pid[build]}" 2>/dev/null; then
    kill -- "-${bg_pid[build]}" 2>/dev/null
    wait "${bg_pid[build]}" 2>/dev/null
    logfile "$run/build.log"
    note stopped "$build_name" "$s_build" "not done when only a probe's time was left (estimate ${est_build}s)"
    echo "stopped after $(($(now) - s_build))s (estimate ${est_build}s)" >"$run/build.txt"
  else
    wait "${bg_pid[build]}" || rc=$?
    logfile "$run/build.log"
    if [ "$rc" = 0 ]; then
      echo "$build_key" >"$lib/built"
      note ok "$build_name" "$s_build" "estimate ${est_build}s"
      echo "$(($(now) - s_build))s (estimate ${est_build}s, $jobs cores)" >"$run/build.txt"
    else
      fail "$build_name" "$s_build" "exit $rc" "$run/build.log"
    fi
  fi
  unset 'bg_pid[build]'
  publish
fi
# The copy is short: it has ended by now, or soon.
[ -n "${bg_pid[copy]:-}" ] && bg_wait copy 30
reap_copy

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
  logfile "$run/ldd.txt"
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

# 3. The probe needs no model. The full one only when the main run still
# fits after it; else the quick one (the bandwidths and one type), whose
# figures are what the main run's efficiency is set against. A probe
# stopped half-way leaves the figures it printed (probe.txt).
probe_name=probe
if [ $(($(left) - reserve)) -lt $((need_probe + need_core)) ]; then
  probe_args=("${quick_probe_args[@]}") need_probe=$need_quick_probe probe_name="probe (quick: ${quick_probe_args[*]})"
fi
gpu_step "$probe_name" "$need_probe" 120 bash -c '"$1" --backend-dir "$2" probe "${@:5}" -o json >"$3.part" 2> >(tee "$4" >&2) && mv "$3.part" "$3"' _ "$tb" "$lib" "$run/probe.json" "$run/probe.txt" "${probe_args[@]}"

# 4. The main model's figures: waited for while its run still fits.
have_model=0
if [ -n "${bg_pid[model]:-}" ] && [ "$gpu_ok" = 1 ]; then
  await_model model "synth $model $model_type" $(($(left) - reserve - need_core)) && have_model=1
elif [ -n "${bg_pid[model]:-}" ]; then
  await_model model "synth $model $model_type" 0 && have_model=1
fi
need_model() {
  if [ "$have_model" != 1 ]; then
    skip "$1" "no $model $model_type model (see its synth)"
    return 1
  fi
}
need_model "$core_name" &&
  gpu_step "$core_name" "$need_core" all bash -c '"$1" --backend-dir "$2" run "${@:8}" -ngl 99 -p "$3" -n "$4" -fa 0,1 -r "$5" --telemetry-out "$6" -o jsonl >"$7"' \
    _ "$tb" "$lib" "$P" "$N" "$reps" "$run/tel/core.jsonl" "$run/res/core.jsonl" "${M[@]}"

# 5. The main figures are in: the other models are made at the lowest
# priority, one after the other, while the GPU is measured.
if [ "$have_model" = 1 ] && [ "$gpu_ok" = 1 ]; then
  [ "$want_model2" = 1 ] || skip "synth $model $model2_type" "no room on $state beside the build and the main model"
  [ "$want_moe" = 1 ] || skip "synth $moe $moe_type" "no room on $state beside the build and the other models"
  if [ "$want_model2" = 1 ] || [ "$want_moe" = 1 ]; then
    say "== synth $([ $want_model2 = 1 ] && echo "$model $model2_type, ")$([ $want_moe = 1 ] && echo "$moe $moe_type ")at the lowest priority (at $(now)s)"
    # shellcheck disable=SC2016
    bg later "$run/synth-later.log" setsid bash -c '
      if [ "$3" = 1 ]; then nice -n 19 "$1" synth --preset "$2" --type "$4" --cache >"$7/synth-model2.log" 2>&1; echo $? >"$7/synth-model2.rc"; fi
      if [ "$5" = 1 ]; then nice -n 19 "$1" synth --preset "$6" --type "$8" --cache >"$7/synth-moe.log" 2>&1; echo $? >"$7/synth-moe.rc"; fi' \
      _ "$tb" "$model" "$want_model2" "$model2_type" "$want_moe" "$moe" "$run" "$moe_type"
  fi
else
  want_model2=0 want_moe=0
  skip "synth $model $model2_type" "made only after the main model's figures, which are not in"
  skip "synth $moe $moe_type" "made only after the main model's figures, which are not in"
fi
# await_later WHICH NAME NEED: a model of the later synths, waited for
# while its run (NEED) still fits.
await_later() {
  local which=$1 name=$2 s
  s=${bg_start[later]:-$(now)}
  while [ ! -e "$run/synth-$which.rc" ] && [ -n "${bg_pid[later]:-}" ] && kill -0 "${bg_pid[later]}" 2>/dev/null &&
    [ "$(left)" -gt $((reserve + $3)) ]; do sleep 1; done
  logfile "$run/synth-$which.log"
  if [ ! -e "$run/synth-$which.rc" ]; then
    note stopped "$name" "$s" "not done when its run had to start"
    publish
    return 1
  fi
  if [ "$(cat "$run/synth-$which.rc")" = 0 ]; then
    note ok "$name" "$s" "$(tail -n 1 "$run/synth-$which.log")"
    publish
    return 0
  fi
  fail "$name" "$s" "exit $(cat "$run/synth-$which.rc")" "$run/synth-$which.log"
  publish
  return 1
}

need_model "profile one decode step" &&
  gpu_step "profile one decode step" "$need_profile" 120 bash -c '"$1" --backend-dir "$2" profile "${@:4}" -ngl 99 -p 0 -n 1 -fa 1 -o md >"$3"' _ "$tb" "$lib" "$run/profile.md" "${M[@]}"

# The grid leaves time for what comes after it: the Q4_K_M's and the
# mixture's runs (when they are being made) and the load run. A cap
# below what the grid needs skips it.
later=$need_load
[ "$want_model2" = 1 ] && later=$((later + need_core2))
[ "$want_moe" = 1 ] && later=$((later + need_moe))
need_model "sweep -d $depths --parallel $parallel -fa 0,1" &&
  gpu_step "sweep -d $depths --parallel $parallel -fa 0,1" "$need_grid" $(($(left) - reserve - later)) \
    "$tb" --backend-dir "$lib" sweep "${M[@]}" -ngl 99 -p "$P" -n "$N" -d "$depths" --parallel "$parallel" -fa 0,1 -r "$reps" \
    --no-kernels --filter "$grid_filter" --out "$run/res/grid.jsonl" --telemetry-out "$run/tel/grid.jsonl"

if [ "$want_model2" = 1 ] && [ "$have_model" = 1 ] && [ "$gpu_ok" = 1 ] && await_later model2 "synth $model $model2_type" "$need_core2"; then
  gpu_step "$core2_name" "$need_core2" "$(($(left) - reserve - need_load))" bash -c '"$1" --backend-dir "$2" run "${@:8}" -ngl 99 -p "$3" -n "$4" -fa 0,1 -r "$5" --telemetry-out "$6" -o jsonl >"$7"' \
    _ "$tb" "$lib" "$P" "$N" "$reps" "$run/tel/core2.jsonl" "$run/res/core2.jsonl" "${M2[@]}"
else
  skip "$core2_name" "no $model $model2_type model (see its synth)"
fi

if [ "$want_moe" = 1 ] && [ "$have_model" = 1 ] && [ "$gpu_ok" = 1 ] && await_later moe "synth $moe $moe_type" "$need_moe"; then
  gpu_step "run $moe -ncmoe $ncmoe" "$need_moe" "$(($(left) - reserve - need_load))" bash -c '"$1" --backend-dir "$2" run "${@:9}" -ngl 99 -ncmoe "$3" -p "$4" -n "$5" -r "$6" --telemetry-out "$7" -o jsonl >"$8"' \
    _ "$tb" "$lib" "$ncmoe" "$P" "$N" "$reps" "$run/tel/moe.jsonl" "$run/res/moe.jsonl" "${MOE[@]}"
else
  skip "run $moe -ncmoe $ncmoe" "no $moe model (see its synth)"
fi

need_model "load" &&
  gpu_step "load" "$need_load" all "$tb" --backend-dir "$lib" load "${M[@]}" -ngl 99 "${load_args[@]}" --out "$run/load.jsonl"

# The closing: whatever happened, the final summary.
trap - TERM INT HUP
publish final
cat "$summary"
files=()
for name in "${mine[@]}"; do
  [ -f "$out/$name" ] && files+=("$name")
  [ -f "$out/$name.gz" ] && files+=("$name.gz")
done
echo "files in $out: ${files[*]}"
[ "$failures" = 0 ]
