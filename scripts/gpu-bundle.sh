#!/usr/bin/env bash
# Assemble the GPU run's bundle (make gpu-bundle): one folder holding all
# that scripts/gpu-run.sh needs on a GPU box without Go or a network: the
# binary (built by the Makefile for any x86-64-v3 CPU), the pinned ggml
# tree that CMake builds the CUDA backend from, and the scripts. It checks
# the bundle, with the checkout that travels beside it, against a device
# call's 64 MiB and lists what it holds.
#
#   scripts/gpu-bundle.sh BUNDLE BINARY      # OLLAMA_DIR: the ollama module
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "gpu-bundle: $*" >&2; exit 1; }
[ $# = 2 ] || die "usage: scripts/gpu-bundle.sh BUNDLE BINARY"
bundle=$1 bin=$2
src=${OLLAMA_DIR:-}
[ -f "$src/CMakeLists.txt" ] && [ -d "$src/ml/backend/ggml/ggml" ] || die "OLLAMA_DIR=$src is not the ollama module (make gpu-bundle sets it)"
[ -x "$bin" ] || die "no binary at $bin"
limit=$((64 << 20))

# The binary is built in place (bin/ of the bundle); the rest is made anew.
for d in scripts ggml; do
  if [ -d "$bundle/$d" ]; then chmod -R u+w "$bundle/$d"; fi
  rm -rf "${bundle:?}/$d"
done
mkdir -p "$bundle/scripts" "$bundle/ggml/ml/backend/ggml"
cp scripts/gpu-run.sh scripts/build-backend.sh scripts/gpu-copy.py scripts/gpu-figures.py "$bundle/scripts/"
chmod +x "$bundle"/scripts/*
cp "$src/CMakeLists.txt" "$bundle/ggml/"
cp -R "$src/ml/backend/ggml/ggml" "$bundle/ggml/ml/backend/ggml/"
chmod -R u+w "$bundle/ggml"
# Only the CUDA build is made from it: the Metal and Vulkan sources (3 MiB)
# stay home (the CUDA configure keeps Vulkan out; Metal is Apple's).
rm -rf "$bundle/ggml/ml/backend/ggml/ggml/src/ggml-metal" "$bundle/ggml/ml/backend/ggml/ggml/src/ggml-vulkan"
# The binary's symbol table and debug information (a third of it) are
# not needed to run it: the check of its symbols ran when it was built.
strip "$bin"
# A module of its own: go vet/test ./... leave the copy's Go files out.
printf 'module tokbench.local/gpu-bundle\n' >"$bundle/go.mod"

bytes() { du -sb "$1" | cut -f1; }
total=$(bytes "$bundle")
# What a device call carries besides the bundle: the checkout's files.
tree=$(git ls-files -z 2>/dev/null | xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
mib() { awk -v b="$1" 'BEGIN {if (b < 1048576) printf "%.0f KiB", b / 1024; else printf "%.1f MiB", b / 1048576}'; }
{
  echo "tokbench GPU bundle, made $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git describe --always --dirty 2>/dev/null || echo 'no git')"
  echo "run it from this folder: scripts/gpu-run.sh (BUDGET_S, OUT; see docs/gpu.md)"
  echo
  printf '%-40s %s\n' "bin/tokbench" "$(mib "$(bytes "$bundle/bin/tokbench")")  $("$bundle/bin/tokbench" --version 2>/dev/null)"
  printf '%-40s %s\n' "ggml/ (pinned, $(basename "$src"))" "$(mib "$(bytes "$bundle/ggml")")"
  for f in "$bundle"/scripts/*; do
    printf '%-40s %s\n' "scripts/$(basename "$f")" "$(mib "$(bytes "$f")")"
  done
  echo
  echo "bundle $(mib "$total"), the checkout beside it $(mib "$tree"): $(mib $((total + tree))) of a device call's 64 MiB"
} >"$bundle/MANIFEST.txt"
cat "$bundle/MANIFEST.txt"
[ $((total + tree)) -le $limit ] || die "the bundle and the checkout ($(mib $((total + tree)))) exceed a device call's 64 MiB"
