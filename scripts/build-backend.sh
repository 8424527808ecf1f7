#!/usr/bin/env bash
# Build a GPU backend of ggml from the pinned llama.cpp (github.com/ollama/ollama,
# see third_party/README.md) as shared libraries, libggml-base.so and
# libggml-BACKEND.so, and install them in DEST (default: bin, beside
# bin/tokbench, where tokbench looks first).
#
#   scripts/build-backend.sh [DEST]                     # CUDA (BACKEND=cuda)
#   CUDA_ARCHITECTURES=90 scripts/build-backend.sh      # H100/H200 only
#   BACKEND=vulkan scripts/build-backend.sh             # Vulkan (VULKAN=1 too)
#
# Environment: BACKEND (cuda or vulkan), CUDA_ARCHITECTURES (default
# "native": the GPUs of this machine), OLLAMA_DIR (default: from the Go
# module cache), BUILD_DIR (default build/BACKEND), JOBS (default: all
# cores), GENERATOR (default Ninja where installed), CACHE (default ~/.cache/tokbench): a Vulkan build is kept there,
# keyed by the ollama version and tokbench's patch, and reused.
#
# Vulkan builds from a copy of the pinned tree (never the module cache)
# with third_party/vulkan applied (see third_party/README.md): the feature
# tests of glslc the ollama module lacks, and a guard for Vulkan headers
# older than VK_EXT_layer_settings (Debian 12's).
# It only compiles: it never touches a GPU's clocks, power limit,
# persistence or MIG mode.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "build-backend: $*" >&2; exit 1; }

dest=${1:-bin}
backend=${BACKEND:-cuda}
[ "${VULKAN:-0}" = 1 ] && backend=vulkan
case $backend in cuda | vulkan) ;; *) die "BACKEND=$backend: use cuda or vulkan" ;; esac
src=${OLLAMA_DIR:-}
if [ -z "$src" ]; then
  command -v go >/dev/null || die "go not found and OLLAMA_DIR not set: point OLLAMA_DIR at a copy of the github.com/ollama/ollama module"
  src=$(go mod download -json github.com/ollama/ollama | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
fi
[ -f "$src/CMakeLists.txt" ] || die "no CMakeLists.txt in $src: set OLLAMA_DIR to the ollama module's folder"
command -v cmake >/dev/null || die "cmake not found: install cmake 3.24 or newer"

build=${BUILD_DIR:-build/$backend}
# shellcheck disable=SC2016
rpath='$ORIGIN' # the libraries find each other wherever they are installed
jobs=${JOBS:-$(getconf _NPROCESSORS_ONLN)}
flags=()
install() { # install the libraries found under $1 in $dest
  mkdir -p "$dest"
  local found=0 lib
  while IFS= read -r lib; do
    cp -P "$lib" "$dest/"
    found=1
  done < <(find "$1" \( -name "libggml-base.so*" -o -name "libggml-$backend.so*" -o -name "ggml-base.dll" -o -name "ggml-$backend.dll" \) -print)
  [ "$found" = 1 ] || return 1
  echo "installed the $backend backend in $dest:"
  ls -l "$dest"/*ggml-*
}

if [ "$backend" = vulkan ]; then
  command -v glslc >/dev/null || die "glslc not found: apt-get install glslc libvulkan-dev (mesa-vulkan-drivers for a software device)"
  # The cache's key: the pinned sources, tokbench's changes to them, and
  # the recipe's version (raise it when the cmake flags below change).
  recipe=1
  key=$(basename "$src")-$( (echo "recipe $recipe"; cat third_party/vulkan/layer-settings.patch third_party/vulkan/feature-tests/*.comp) | sha256sum | cut -c1-12)
  cache=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tokbench}/vulkan-$key
  if install "$cache" 2>/dev/null; then
    echo "(from the cache $cache)"
    exit 0
  fi
  # A writable copy of what CMake reads, mended there.
  tree=$build/src
  rm -rf "$tree"
  mkdir -p "$tree/ml/backend/ggml"
  cp "$src/CMakeLists.txt" "$tree/"
  cp -R "$src/ml/backend/ggml/ggml" "$tree/ml/backend/ggml/"
  chmod -R u+w "$tree"
  # A module of its own, so that `go test ./...` leaves the copy's Go files out.
  printf 'module tokbench.local/backend-src\n' > "$tree/go.mod"
  shaders=$tree/ml/backend/ggml/ggml/src/ggml-vulkan/vulkan-shaders
  mkdir -p "$shaders/feature-tests"
  cp third_party/vulkan/feature-tests/*.comp "$shaders/feature-tests/"
  patch -s -p1 -d "$tree" < third_party/vulkan/layer-settings.patch
  src=$tree
else
  if ! command -v nvcc >/dev/null; then
    [ -x /usr/local/cuda/bin/nvcc ] || die "nvcc not found: install the CUDA toolkit or add /usr/local/cuda/bin to PATH"
    export PATH=/usr/local/cuda/bin:$PATH
  fi
  flags+=("-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES:-native}")
  # Vulkan stays out of a CUDA build: ollama's CMakeLists adds it whenever
  # Vulkan's headers are found, and ggml-vulkan then requires glslc.
  flags+=(-DCMAKE_DISABLE_FIND_PACKAGE_Vulkan=ON)
  # The toolkit's libraries (libcudart, libcublas, libcublasLt) are found
  # where nvcc's installation keeps them, beside $ORIGIN, whatever the
  # loader's configuration says.
  nvcc_dir=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)
  for d in "$nvcc_dir/lib64" "$nvcc_dir/targets/$(uname -m)-linux/lib"; do
    [ -d "$d" ] && rpath="$rpath;$d"
  done
fi

# Ninja where it is installed (GENERATOR overrides), unless the build
# folder was configured with another generator.
gen=()
if [ -n "${GENERATOR:-}" ]; then
  gen=(-G "$GENERATOR")
elif command -v ninja >/dev/null && [ ! -f "$build/cmake/CMakeCache.txt" ]; then
  gen=(-G Ninja)
fi
cmake "${gen[@]}" -S "$src" -B "$build/cmake" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON -DCMAKE_INSTALL_RPATH="$rpath" \
  -DGGML_CCACHE=OFF "${flags[@]}"
cmake --build "$build/cmake" --target "ggml-$backend" -j "$jobs"

install "$build/cmake" || die "the build produced no libggml-$backend library under $build"
if [ "$backend" = vulkan ]; then
  mkdir -p "$cache"
  find "$build/cmake" \( -name "libggml-base.so*" -o -name "libggml-vulkan.so*" \) -exec cp -P {} "$cache/" \;
fi
