#!/usr/bin/env bash
# make bench-scale: a fleet's results at 10^4, 10^5 and 10^6 records
# (bench/scalegen: 40 hardware classes and 3 builds running a sweep of
# 500 points, 25 models x 10 tests x 2 thread counts, in rounds: the
# records grow as a fleet's do with its boxes, the points stay; about 950
# bytes a record), and what report (table and html), merge of
# 100 shard files, compare, baseline create and report --sqlite take of
# each: seconds and peak memory, then how each grows from 10^5 to 10^6.
# SIZES="10000 100000" runs fewer; WRITTEN=1 writes each record's line
# as tokbench writes it (every field: about 1,550 bytes a record, and
# merge copies such lines as they are).
set -euo pipefail
cd "$(dirname "$0")/.."
tb=${TOKBENCH:-bin/tokbench}
go build -o bin/scalegen ./bench/scalegen
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TOKBENCH_CACHE="$work/cache"
sizes=${SIZES:-"10000 100000 1000000"}
form=()
[ -n "${WRITTEN:-}" ] && form=(-written)
declare -A secs mem
names=("report" "report-html" "merge-100" "compare" "baseline-create" "report-sqlite")
printf '%-16s %9s %9s %10s\n' command records seconds "peak MB"
for n in $sizes; do
  d="$work/$n"
  mkdir -p "$d"
  bin/scalegen "${form[@]}" -n "$n" -out "$d/all.jsonl"
  bin/scalegen "${form[@]}" -n "$n" -shards 100 -out "$d/shards"
  bin/scalegen "${form[@]}" -n $((n / 2)) -classes 1 -build 0 -out "$d/a.jsonl"
  bin/scalegen "${form[@]}" -n $((n / 2)) -classes 1 -build 1 -out "$d/b.jsonl"
  cmds=(
    "report $d/all.jsonl --out $d/r.txt"
    "report $d/all.jsonl -o html --out $d/r.html"
    "merge $d/shards/shard-*.jsonl --out $d/merged.jsonl"
    "compare $d/a.jsonl $d/b.jsonl"
    "baseline create $d/all.jsonl --dir $d/baselines"
    "report $d/all.jsonl --sqlite $d/db.sqlite"
  )
  for i in "${!cmds[@]}"; do
    rc=0
    # shellcheck disable=SC2086 # the command's words
    /usr/bin/time -o "$d/time" -f '%e %M' "$tb" ${cmds[$i]} >"$d/out" 2>"$d/err" || rc=$?
    # compare exits 1 on a regression (build 1 is slower): that is its answer.
    if [ "$rc" -gt 1 ]; then
      echo "${names[$i]} at $n records failed (exit $rc):" >&2
      tail -5 "$d/err" >&2
      exit 1
    fi
    read -r s kb <"$d/time"
    secs[${names[$i]},$n]=$s
    mem[${names[$i]},$n]=$((kb / 1024))
    printf '%-16s %9d %9.2f %10d\n' "${names[$i]}" "$n" "$s" $((kb / 1024))
  done
  rm -rf "$d"
done
if [[ " $sizes " == *" 100000 "* && " $sizes " == *" 1000000 "* ]]; then
  echo
  echo "growth from 10^5 to 10^6 records (targets at 10^6: under 300 MB, 30 s; memory growth under 1.5x)"
  for c in "${names[@]}"; do
    awk -v c="$c" -v s1="${secs[$c,100000]}" -v s2="${secs[$c,1000000]}" -v m1="${mem[$c,100000]}" -v m2="${mem[$c,1000000]}" \
      'BEGIN { printf "%-16s time %5.1fx  memory %5.1fx  (%d MB, %.1f s at 10^6)\n", c, s2 / s1, m2 / m1, m2, s2 }'
  done
fi
