#!/usr/bin/env bash
# check-symbols.sh BIN: fail when BIN leaves a llama.cpp/ggml/gguf symbol
# undefined. go-nvml links with --unresolved-symbols=ignore-in-object-files
# (its NVML functions are found with dlopen at run time), which also lets a
# missing C/C++ symbol of ours link, then die at the first model load with
# "symbol lookup error". NM= names another nm (cross builds).
set -euo pipefail
bin=${1:?usage: check-symbols.sh BINARY}
nm=${NM:-nm}
if ! syms=$("$nm" -u "$bin" 2>&1); then
  echo "check-symbols: $nm -u $bin failed: $syms" >&2
  exit 1
fi
bad=$(grep -E ' U (_Z.*(ggml|llama|gguf)|ggml_|llama_|gguf_)' <<<"$syms" | awk '{print $2}' | sort -u || true)
if [ -n "$bad" ]; then
  {
    echo "check-symbols: $bin leaves these llama.cpp/ggml symbols undefined; it would die at the first model load:"
    awk '{print "  " $0}' <<<"$bad" | head -20
    if grep -q amx <<<"$bad"; then
      echo "The CPU backend was compiled for AMX, whose sources ollama's tree leaves out:"
      echo "build with AMX=1 to compile them in, or without -mamx-* flags (the Makefile's default)."
    else
      echo "Build with the Makefile (make build), whose flags match the pinned sources, or add the missing sources."
    fi
  } >&2
  rm -f "$bin"
  exit 1
fi
