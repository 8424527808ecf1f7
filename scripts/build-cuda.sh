#!/usr/bin/env bash
# Build ggml's CUDA backend from the pinned llama.cpp (github.com/ollama/ollama,
# see third_party/README.md) as shared libraries, libggml-base.so and
# libggml-cuda.so, and install them in DEST (default: bin, beside
# bin/tokbench, where tokbench looks first). With VULKAN=1 it builds the Vulkan
# backend instead.
#
#   scripts/build-cuda.sh [DEST]
#   CUDA_ARCHITECTURES=90 scripts/build-cuda.sh       # H100/H200 only
#   CUDA_ARCHITECTURES="80;86;89;90" scripts/build-cuda.sh
#
# Environment: CUDA_ARCHITECTURES (default "native": the GPUs of this
# machine), OLLAMA_DIR (default: from the Go module cache), BUILD_DIR
# (default build/cuda), JOBS (default: all cores), VULKAN=1.
# It only compiles: it never touches the GPU's clocks, power limit,
# persistence or MIG mode.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "build-cuda: $*" >&2; exit 1; }

dest=${1:-bin}
src=${OLLAMA_DIR:-}
if [ -z "$src" ]; then
  command -v go >/dev/null || die "go not found and OLLAMA_DIR not set: point OLLAMA_DIR at a copy of the github.com/ollama/ollama module"
  src=$(go mod download -json github.com/ollama/ollama | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
fi
[ -f "$src/CMakeLists.txt" ] || die "no CMakeLists.txt in $src: set OLLAMA_DIR to the ollama module's folder"
command -v cmake >/dev/null || die "cmake not found: install cmake 3.24 or newer"

backend=cuda
flags=()
if [ "${VULKAN:-0}" = 1 ]; then
  backend=vulkan
else
  if ! command -v nvcc >/dev/null; then
    [ -x /usr/local/cuda/bin/nvcc ] || die "nvcc not found: install the CUDA toolkit or add /usr/local/cuda/bin to PATH"
    export PATH=/usr/local/cuda/bin:$PATH
  fi
  flags+=("-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES:-native}")
fi

build=${BUILD_DIR:-build/$backend}
jobs=${JOBS:-$(getconf _NPROCESSORS_ONLN)}

# $ORIGIN: the libraries find each other wherever they are installed.
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON -DCMAKE_INSTALL_RPATH='$ORIGIN' \
  -DGGML_CCACHE=OFF "${flags[@]}"
cmake --build "$build" --target "ggml-$backend" -j "$jobs"

mkdir -p "$dest"
found=0
while IFS= read -r lib; do
  cp -P "$lib" "$dest/"
  found=1
done < <(find "$build" \( -name "libggml-base.so*" -o -name "libggml-$backend.so*" -o -name "ggml-base.dll" -o -name "ggml-$backend.dll" \) -print)
[ "$found" = 1 ] || die "the build produced no libggml-$backend library under $build"
echo "installed the $backend backend in $dest:"
ls -l "$dest"/*ggml-*
