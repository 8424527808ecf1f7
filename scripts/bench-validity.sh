#!/usr/bin/env bash
# make bench-validity: one point run RUNS times (default 10), each in its own
# process, with -r auto and with -r 10, alternately: how often a run's mean
# falls inside the others' claimed 95% CI (target >= 90% on a quiet
# machine), the repetitions -r auto needed, and its wall time against
# -r 10's (target <= 0.6). MODEL=, PRESET=, TYPE=, P=, N=, RUNS=, TARGET_CI=.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-model.sh
THREADS=${THREADS:-$(getconf _NPROCESSORS_ONLN)}
exec go run ./bench/validity -tokbench bin/tokbench -m "$MODEL" -p "${P:-0}" -n "${N:-64}" -t "$THREADS" \
  -runs "${RUNS:-10}" -target-ci "${TARGET_CI:-2}"
