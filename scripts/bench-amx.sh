#!/usr/bin/env bash
# make bench-amx: ggml's AMX kernels (a make AMX=1 build) against the
# default build (AMX switched off) on an Intel Xeon with AMX: pp and tg of
# a synthetic Llama-1B in Q4_0, Q8_0 and Q4_K_M, the two binaries in turn
# (ABBA), ROUNDS rounds, medians of all repetitions. It needs no Go, so it
# also runs on a machine the binaries were carried to. AMX_BIN=, NOAMX_BIN=
# name the binaries (make bench-amx builds them); PRESET=, TYPES=, P=, N=,
# REPS=, ROUNDS=, THREADS= change the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
amx=${AMX_BIN:-bin/amx/tokbench}
noamx=${NOAMX_BIN:-bin/noamx/tokbench}
if ! grep -qw amx_int8 /proc/cpuinfo; then
  echo "bench-amx: this CPU has no AMX (no amx_int8 in /proc/cpuinfo): nothing to compare" >&2
  exit 1
fi
PRESET=${PRESET:-llama-1b}
TYPES=${TYPES:-q4_0 q8_0 q4_k_m}
CACHE=${TOKBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tokbench}
THREADS=${THREADS:-$(lscpu -p=core | grep -v '^#' | sort -u | wc -l)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$amx" devices | grep -i 'amx' || { echo "bench-amx: $amx does not report AMX: build it with make AMX=1" >&2; exit 1; }
mkdir -p "$CACHE"
for t in $TYPES; do
  m=$CACHE/bench-$PRESET-$t.gguf
  [ -f "$m" ] || "$noamx" synth --preset "$PRESET" --type "$t" --out "$m"
  # Which weights the AMX build puts in AMX buffers (llama.cpp's load log).
  "$amx" --verbose run -m "$m" -p 16 -n 0 -r 1 -t "$THREADS" --no-kernels --no-probe --no-telemetry -o json 2>&1 >/dev/null |
    grep -E 'AMX.*buffer size|buffer size.*AMX' | sed "s/^/$t AMX build: /" | head -2 || echo "$t AMX build: no AMX buffer in the load log"
done
for round in $(seq "${ROUNDS:-2}"); do
  order="noamx amx"
  [ $((round % 2)) -eq 0 ] && order="amx noamx"
  for t in $TYPES; do
    for side in $order; do
      bin=$noamx
      [ "$side" = amx ] && bin=$amx
      "$bin" run -m "$CACHE/bench-$PRESET-$t.gguf" -p "${P:-512}" -n "${N:-128}" -r "${REPS:-3}" -t "$THREADS" \
        --no-kernels --no-probe --no-telemetry -o json >"$work/$t-$side-$round.json"
    done
  done
  echo "round $round done" >&2
done
python3 - "$work" "$TYPES" "$PRESET" "$THREADS" <<'PY'
import glob, json, os, statistics, sys
work, types, preset, threads = sys.argv[1], sys.argv[2].split(), sys.argv[3], sys.argv[4]
print(f"{'type':8} {'test':7} {'no AMX t/s':>11} {'AMX t/s':>9} {'AMX/no':>7}")
for t in types:
    for test in ("pp", "tg"):
        med = {}
        for side in ("noamx", "amx"):
            xs = []
            for f in glob.glob(os.path.join(work, f"{t}-{side}-*.json")):
                for r in json.load(open(f)):
                    if (test == "pp") == (r["n_prompt"] > 0 and r["n_gen"] == 0):
                        xs += r["samples_ts"]
                        name = r["test"]
            med[side] = statistics.median(xs)
        print(f"{t:8} {name:7} {med['noamx']:11.2f} {med['amx']:9.2f} {med['amx']/med['noamx']:7.3f}")
print(f"(synthetic {preset}, {threads} threads, medians of all repetitions)")
PY
