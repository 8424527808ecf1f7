#!/usr/bin/env bash
# bench-llamabench.sh: tokbench run against the real llama-bench, one
# command line, alternating the two tools round by round (ABBA), on the
# same model files: per test, the median ratio tokbench / llama-bench with
# its 95% interval, the build of each, and whether they agree within 2%.
# It is how a user knows that tokbench measures what llama-bench measures
# on their machine, and it is run for every llama.cpp pin update.
#
#   make bench-llamabench LLAMA_BENCH=/path/to/llama-bench
#   LLAMA_BENCH=... ROUNDS=10 VARIANTS='-fa 1' scripts/bench-llamabench.sh
#
# Environment: LLAMA_BENCH (required: the llama-bench binary, built as its
# users build it), TOKBENCH (default bin/tokbench), ROUNDS (default 6),
# MODELS (synthetic presets as PRESET:TYPE, made once into WORK; default
# smollm-135m:q8_0 smollm-135m:q4_0 llama-1b:q4_0), VARIANTS (command
# lines after -m, separated by ';', "defaults" for none; default
# "defaults;-fa 1"), WORK (default ~/.cache/tokbench/bench-llamabench),
# OUT (the rounds' JSONL files, default a new temporary folder).
# tokbench also gets --no-kernels --no-probe: both work outside the timed
# repetitions only, and would double the bench's time.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "bench-llamabench: $*" >&2; exit 1; }
lb=${LLAMA_BENCH:-}
[ -n "$lb" ] || die "LLAMA_BENCH: give the path of a llama-bench built from the pinned commit (docs/llama-bench.md says how)"
[ -x "$lb" ] || die "LLAMA_BENCH=$lb is not an executable"
tb=${TOKBENCH:-bin/tokbench}
[ -x "$tb" ] || die "no tokbench at $tb: make build first"
rounds=${ROUNDS:-6}
case $rounds in '' | *[!0-9]* | 0) die "ROUNDS=$rounds: give a whole number of at least 1" ;; esac
read -r -a models <<<"${MODELS:-smollm-135m:q8_0 smollm-135m:q4_0 llama-1b:q4_0}"
IFS=';' read -r -a variants <<<"${VARIANTS:-defaults;-fa 1}"
work=${WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/tokbench/bench-llamabench}
out=${OUT:-$(mktemp -d /tmp/bench-llamabench.XXXXXX)}
mkdir -p "$work" "$out"

# The models: tokbench's synthetic ones, written once, read by both tools.
files=()
for m in "${models[@]}"; do
  preset=${m%%:*} type=${m#*:}
  f=$work/$preset-$type.gguf
  [ -s "$f" ] || "$tb" synth --preset "$preset" --type "$type" --out "$f" >&2
  files+=("$f")
done

omp=without
ldd "$lb" 2>/dev/null | grep -q 'libgomp\|libomp' && omp=with
echo "llama-bench: $lb ($omp OpenMP)"
echo "tokbench:    $tb ($("$tb" --version)); cpu features: $("$tb" devices 2>/dev/null | sed -n 's/^cpu features: *//p')"
echo "rounds: $rounds, alternated (ABBA); files in $out"

for v in "${variants[@]}"; do
  args=()
  [ "$v" = defaults ] || read -r -a args <<<"$v"
  for r in $(seq 1 "$rounds"); do
    for i in "${!files[@]}"; do
      f=${files[$i]}
      name=$(basename "$f" .gguf)
      lbo=$out/lb__${v// /_}__${name}__$r.jsonl tbo=$out/tb__${v// /_}__${name}__$r.jsonl
      first=lb
      [ $(((r + i) % 2)) = 0 ] && first=tb
      for tool in $first $([ $first = lb ] && echo tb || echo lb); do
        if [ "$tool" = lb ]; then
          "$lb" -m "$f" "${args[@]}" -o jsonl >"$lbo" 2>"$lbo.err" || die "llama-bench failed: $(tail -3 "$lbo.err")"
        else
          "$tb" run -m "$f" "${args[@]}" --no-kernels --no-probe -o jsonl >"$tbo" 2>"$tbo.err" || die "tokbench failed: $(tail -3 "$tbo.err")"
        fi
      done
    done
    echo "  $v: round $r of $rounds done" >&2
  done
done

python3 - "$out" "$rounds" <<'PY'
import glob, json, math, os, re, sys
out, rounds = sys.argv[1], int(sys.argv[2])
runs = {}  # (variant, model, test) -> {"lb": {round: t/s}, "tb": {...}}
builds = {}
for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
    m = re.fullmatch(r"(lb|tb)__(.*)__(.+)__(\d+)\.jsonl", os.path.basename(path))
    tool, variant, model, rnd = m.group(1), m.group(2).replace("_", " "), m.group(3), int(m.group(4))
    for line in open(path):
        rec = json.loads(line)
        builds.setdefault(tool, f"build {rec.get('build_commit')} ({rec.get('build_number')})" +
                          (f", {rec['tool']}" if rec.get("tool") else "") + (f", {rec['cpu_features']}" if rec.get("cpu_features") else ""))
        test = f"pp{rec['n_prompt']}" if rec["n_gen"] == 0 else f"tg{rec['n_gen']}"
        runs.setdefault((variant, model, test), {}).setdefault(tool, {})[rnd] = rec["avg_ts"]

def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

def median_ci(xs):
    # The distribution-free 95% interval of a median: the order
    # statistics whose binomial coverage is at least 95% (with 6 rounds,
    # the lowest and the highest).
    xs = sorted(xs)
    n = len(xs)
    for k in range(n // 2, -1, -1):
        cover = sum(math.comb(n, i) for i in range(k + 1, n - k)) / 2 ** n if k < n - k else 0
        if cover < 0.95:
            continue
        return xs[k], xs[n - 1 - k], cover
    return xs[0], xs[-1], 1 - 2 / 2 ** n

print()
print("llama-bench:", builds.get("lb"))
print("tokbench:   ", builds.get("tb"))
w = max([10] + [len(v) for v, _, _ in runs])
print(f"{'variant':<{w}} {'model':<18} {'test':<6} {'tokbench t/s':>12} {'llama-bench':>12} {'ratio':>6}  {'95% interval':<15} agree within 2%")
bad = 0
for (variant, model, test), by in sorted(runs.items()):
    both = sorted(set(by.get("lb", {})) & set(by.get("tb", {})))
    ratios = [by["tb"][r] / by["lb"][r] for r in both]
    if not ratios:
        continue
    med = median(ratios)
    lo, hi, cover = median_ci(ratios)
    agree = 0.98 <= med <= 1.02 and 0.97 <= lo and hi <= 1.03
    bad += not agree
    if agree:
        verdict = "yes"
    elif lo > 1.0 or hi < 1.0:
        # The interval leaves 1 out: a difference, whichever way.
        verdict = "no: tokbench faster" if lo > 1.0 else "no: tokbench slower"
    else:
        # The interval holds 1 but is wider than +-3% (or the median is
        # off by more than 2% within it): the rounds differ too much here
        # to tell; more rounds, or a quieter machine.
        verdict = f"undecided: rounds vary {100 * (hi - lo) / 2:.0f}% here"
    print(f"{variant:<{w}} {model:<18} {test:<6} {median([by['tb'][r] for r in both]):>12.2f} {median([by['lb'][r] for r in both]):>12.2f} "
          f"{med:>6.3f}  {lo:.3f}-{hi:.3f} ({100 * cover:.0f}%) {verdict}")
print()
print(f"{len(runs)} tests, {rounds} rounds each; {bad} not shown to agree (median outside 0.98-1.02, or its interval outside +-3%)")
PY
