#!/usr/bin/env bash
# arm64-check.sh BIN: run the linux/arm64 binary under qemu-aarch64 (Debian's
# qemu-user) on the tiny synthetic model: it must make the model, load it,
# measure pp and tg, and write a record whose build says aarch64.
set -euo pipefail
bin=${1:?usage: arm64-check.sh BINARY}
qemu=$(command -v qemu-aarch64 || command -v qemu-aarch64-static || true)
if [ -z "$qemu" ]; then
  echo "arm64-check: qemu-aarch64 not found: apt-get install qemu-user" >&2
  exit 1
fi
sysroot=${ARM64_SYSROOT:-/usr/aarch64-linux-gnu}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# tokbench starts itself again (model checks, sweep workers): under qemu too.
export TOKBENCH_CHILD_PREFIX="$qemu -L $sysroot"
run() { TOKBENCH_CACHE=$work/cache "$qemu" -L "$sysroot" "$bin" "$@"; }
run devices >"$work/devices.txt"
run run --synth tiny -p 16 -n 8 -r 2 -t 2 --no-kernels --no-probe -o json >"$work/run.json"
python3 - "$work/run.json" "$work/devices.txt" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))
tests = sorted((r["n_prompt"], r["n_gen"]) for r in recs)
assert tests == [(0, 8), (16, 0)], f"tests {tests}"
for r in recs:
    assert r["avg_ts"] > 0 and len(r["samples_ts"]) == 2, r
    assert r["poll"] == 50, f"poll {r['poll']}: llama-bench's thread pool is the default"
devices = open(sys.argv[2]).read()
assert any(l.startswith("cpu features:") and "NEON" in l.split() for l in devices.splitlines()), "devices shows no NEON:\n" + devices
print(f"arm64-check: under qemu-aarch64, pp16 {recs[0]['avg_ts']:.1f} t/s and tg8 {recs[1]['avg_ts']:.1f} t/s (emulated: only that it runs)")
PY
