# tokbench build. llama.cpp comes from github.com/ollama/ollama's vendored
# cgo packages (see third_party/README.md); our cgo needs their headers.

GO      ?= go
BIN     ?= bin/tokbench
# PORTABLE=1 builds a CPU backend for any machine of this architecture
# (no -march=native); the default tunes it to this machine's CPU, or to
# MARCH (e.g. MARCH=sapphirerapids to build here for another machine).
PORTABLE ?= 0
MARCH   ?= native
# AMX=1 compiles ggml's AMX kernels in (Intel Xeons since Sapphire Rapids;
# see engine/amx). Without it, AMX is switched off in the compiler, since
# ollama's tree compiles no AMX source while ggml-cpu.cpp calls into it on
# an AMX target: the binary would die at the first model load.
AMX     ?= 0
CACHE   ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tokbench
# The CPU backend as llama.cpp's CMake builds it by default: weights
# repacked at load into the interleaved layouts of the CPU's SIMD
# (GGML_CPU_REPACK: Q4_0, IQ4_NL, ...; always on), and ggml's threads
# OpenMP's where the compiler has it (GGML_OPENMP). OPENMP=0 builds
# ggml's own thread pool instead, as -DGGML_OPENMP=OFF does. Both show in
# devices and in every record's cpu_features (OPENMP, REPACK).
UNAME_S := $(shell uname -s)
ifeq ($(UNAME_S),Darwin)
OPENMP  ?= 0
else
OPENMP  ?= 1
endif

OLLAMA_DIR := $(shell $(GO) mod download -json github.com/ollama/ollama 2>/dev/null | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p')
ifeq ($(OLLAMA_DIR),)
$(error cannot find github.com/ollama/ollama: run 'go mod download' with network access to the Go module proxy)
endif
GGML_SRC := $(OLLAMA_DIR)/ml/backend/ggml/ggml/src

HOST_ARCH := $(shell uname -m)
ifeq ($(PORTABLE),1)
ARCH_FLAGS :=
else ifneq ($(filter arm64 aarch64,$(HOST_ARCH)),)
ARCH_FLAGS := -mcpu=$(MARCH)
else
ARCH_FLAGS := -march=$(MARCH)
endif

GOTAGS :=
AMX_CPPFLAGS :=
ifeq ($(AMX),1)
GOTAGS := -tags amx
# After every other folder, so that no header of ours is shadowed.
AMX_CPPFLAGS := -idirafter $(GGML_SRC) -idirafter $(GGML_SRC)/ggml-cpu
else ifeq ($(HOST_ARCH),x86_64)
ARCH_FLAGS += -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
endif

# Two warnings of code we do not own, silenced so that a first build shows
# its result, not 180 lines of them: go-nvml's calls of NVML functions
# its header marks deprecated, and a false stringop-overflow in ggml-cpu's
# repack.cpp.
QUIET := -Wno-deprecated-declarations -Wno-stringop-overflow

# The defines reach every cgo package; only ggml-cpu reads them.
CPU_DEFS := -DGGML_USE_CPU_REPACK
OMP_FLAGS :=
ifeq ($(OPENMP),1)
CPU_DEFS += -DGGML_USE_OPENMP
OMP_FLAGS := -fopenmp
endif

export CGO_ENABLED  := 1
export CGO_CPPFLAGS := -I$(OLLAMA_DIR)/llama/llama.cpp/include -I$(OLLAMA_DIR)/ml/backend/ggml/ggml/include $(AMX_CPPFLAGS) $(CPU_DEFS)
export CGO_CFLAGS   := -O3 $(ARCH_FLAGS) $(OMP_FLAGS) $(QUIET)
export CGO_CXXFLAGS := -O3 $(ARCH_FLAGS) $(OMP_FLAGS) $(QUIET)
export CGO_LDFLAGS  := $(OMP_FLAGS)

# make arm64: the same binary for linux/arm64 (the Grace CPUs of GH200 and
# GB200 boxes), cross-compiled with Debian's g++-aarch64-linux-gnu, for any
# ARMv8.2 core with dot products (Neoverse N1/V1/V2, Grace).
ARM64_BIN   ?= bin/arm64/tokbench
ARM64_FLAGS ?= -O3 -march=armv8.2-a+dotprod+fp16

.PHONY: all build arm64 arm64-check demo test vet pure fuzz fuzz-load fuzz-flags fuzz-sql bench bench-amx bench-llamabench bench-sweep bench-telemetry bench-load bench-probe bench-validity bench-split bench-compare bench-scale bench-roofline bench-moe bench-quality cuda vulkan gpu-bundle clean env

all: build

# Every build ends with the symbol check: go-nvml links with
# --unresolved-symbols=ignore-in-object-files, so a llama.cpp/ggml symbol
# that nothing defines would otherwise link and die at the first model load.
build:
	$(GO) build $(GOTAGS) -o $(BIN) ./cmd/tokbench
	scripts/check-symbols.sh $(BIN)

arm64:
	CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ GOARCH=arm64 \
	CGO_CFLAGS="$(ARM64_FLAGS) $(OMP_FLAGS) $(QUIET)" CGO_CXXFLAGS="$(ARM64_FLAGS) $(OMP_FLAGS) $(QUIET)" CGO_LDFLAGS="$(OMP_FLAGS)" \
	CGO_CPPFLAGS="-I$(OLLAMA_DIR)/llama/llama.cpp/include -I$(OLLAMA_DIR)/ml/backend/ggml/ggml/include $(CPU_DEFS)" \
	$(GO) build -o $(ARM64_BIN) ./cmd/tokbench
	NM=$$(command -v aarch64-linux-gnu-nm || echo nm) scripts/check-symbols.sh $(ARM64_BIN)

# The arm64 binary runs the tiny synthetic model under qemu-aarch64.
arm64-check: arm64
	scripts/arm64-check.sh $(ARM64_BIN)

# The main job on an embedded default: a synthetic SmolLM-135M-shaped
# model (Q8_0) made once in the cache, then a short benchmark.
# The build's own output (compiler lines and warnings) goes to a log, so
# that a first demo shows its answer; a failed build prints it.
demo:
	@mkdir -p build
	@echo "building tokbench (a first build compiles llama.cpp: minutes; its output in build/demo-build.log)"
	@$(MAKE) --no-print-directory build >build/demo-build.log 2>&1 || { cat build/demo-build.log; exit 1; }
	$(BIN) run --synth smollm-135m --synth-type q8_0 -p 128 -n 32 -r 3 --probe

vet:
	$(GO) vet $(GOTAGS) ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

# -p 1: test packages run llama.cpp, whose threads spin-wait; two packages
# at once on a small machine slow each other down many times over.
# Tests own their state: none reads or writes the user's cache (a test
# binary's cache is a temporary folder of its own, internal/plan), and
# the recipe fails if anything under it changed while they ran.
test: vet pure
	@mkdir -p build && touch build/.test-start
	env -u TOKBENCH_CACHE $(GO) test $(GOTAGS) -p 1 -count=1 -timeout 30m ./...
	@if [ -d "$(CACHE)" ] && [ -n "$$(find "$(CACHE)" -newer build/.test-start -print -quit)" ]; then \
		echo "make test changed the user's cache $(CACHE): a test must use a folder of its own"; \
		find "$(CACHE)" -newer build/.test-start | head; exit 1; fi

# Planning (sweep's plan and partition, both dry runs) and everything
# downstream of the records build and pass without cgo: no llama.cpp, no
# NVML. (sweep/work, measure, engine and telemetry need cgo.)
PURE := ./point/... ./sweep ./gguf/... ./record/... ./stats/... ./roofline/... ./baseline/... ./report/... ./gpu/... \
	./internal/infile/... ./internal/plan/... ./internal/preset/... ./internal/load/... ./internal/quality/... \
	./internal/fleet/... ./internal/doctor/... ./internal/isolate/... ./internal/sqlite/...
pure:
	CGO_ENABLED=0 $(GO) test -count=1 $(PURE)

# Fuzz the GGUF validator (FUZZTIME=1m by default).
FUZZTIME ?= 1m
fuzz:
	$(GO) test ./gguf -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME)

# Fuzz the whole load path (FUZZTIME, 1m by default): mutants of a real
# synthetic model through the validator and a load in a child process;
# what llama.cpp aborts on is saved under cmd/tokbench/testdata/fuzz.
fuzz-load:
	$(GO) test ./cmd/tokbench -run '^$$' -fuzz FuzzLoad -fuzztime $(FUZZTIME)

# Every numeric flag of every command and every numeric field of specs,
# workloads, traces and records with NaN, infinities, +-1e308, -1, 0, huge
# (TOKBENCH_FUZZ_ALL=1: all of them; make test runs one value per flag),
# then fuzzed further for FUZZTIME: no hang, crash, abort or exit outside
# 0, 1, 2 and 130.
fuzz-flags: build
	TOKBENCH_FUZZ_ALL=1 $(GO) test ./cmd/tokbench -run 'FuzzNumericFlags|FuzzFileNumbers|FuzzFleetStrings|TestHostilePaths' -count=1 -timeout 60m
	$(GO) test ./cmd/tokbench -run '^$$' -fuzz FuzzNumericFlags -fuzztime $(FUZZTIME)

# Fuzz the readers of llama-bench's SQL text and SQLite databases
# (FUZZTIME each): never a panic, a hang or a statement run.
fuzz-sql:
	CGO_ENABLED=0 $(GO) test ./record -run '^$$' -fuzz FuzzSQLText -fuzztime $(FUZZTIME)
	CGO_ENABLED=0 $(GO) test ./record -run '^$$' -fuzz FuzzSQLiteFile -fuzztime $(FUZZTIME)

# tokbench run against a plain C loop over the same llama.cpp (bench/cref).
bench: build
	$(GO) build $(GOTAGS) -o bin/cref ./bench/cref
	scripts/check-symbols.sh bin/cref
	scripts/bench.sh

# tokbench run against the real llama-bench (LLAMA_BENCH=path, built as
# llama.cpp's CMake builds it): alternated rounds (ROUNDS, 6), per test the
# median ratio and its 95% interval, at defaults and -fa 1 (VARIANTS).
bench-llamabench: build
	LLAMA_BENCH="$(LLAMA_BENCH)" TOKBENCH=$(BIN) scripts/bench-llamabench.sh

# A depth sweep against the same points run one by one (bench/sweepbench).
bench-sweep: build
	scripts/bench-sweep.sh

# What the step's split costs: run's wall time by default against
# --no-kernels (target: at most 1.5x), a sweep's kernel timing against
# its measuring (target: at most 0.5).
bench-split: build
	scripts/bench-split.sh

# How often compare calls a 5% slowdown, and a rerun of the same build,
# significant (10 tries of tg64 -r 5).
bench-compare: build
	scripts/bench-compare.sh

# A fleet's results at 10^4, 10^5 and 10^6 records: the seconds and peak
# memory of report (table, html), merge of 100 shards, compare, baseline
# create and report --sqlite, and their growth from 10^5 to 10^6.
bench-scale: build
	scripts/bench-scale.sh

# The sampler's cost: tg/pp t/s with telemetry at 20 Hz against without.
bench-telemetry: build
	scripts/bench-telemetry.sh

# The load scheduler's own share of the wall time (target < 2%) at 64
# concurrent sequences on the tiny model.
bench-load: build
	$(BIN) load --synth tiny --workload short --concurrency 64 --requests 512

# How repeatable the probe's ceilings are here (target: spread <= 1.3).
bench-probe: build
	scripts/bench-probe.sh

# Why a step is not faster: hardware, kernels and software per test, for
# a synthetic Llama-1B in Q4_0, Q8_0 and F16.
bench-roofline: build
	scripts/bench-roofline.sh

# A mixture of experts (8 experts, 2 used) against a dense model with its
# active parameters: decode t/s and bytes per step at B=1 and B=8.
bench-moe: build
	scripts/bench-moe.sh

# ggml's AMX kernels against the default build (AMX off) on an Intel Xeon
# with AMX: pp and tg of a synthetic Llama-1B in Q4_0, Q8_0 and Q4_K_M.
bench-amx:
	$(MAKE) AMX=1 BIN=bin/amx/tokbench build
	$(MAKE) BIN=bin/noamx/tokbench build
	scripts/bench-amx.sh

# Whether records deserve the precision they claim, and -r auto's cost.
bench-validity: build
	scripts/bench-validity.sh

# One quality evaluation (KLD against the base) of a synthetic Llama-1B
# in Q4_K_M over 4096 tokens: its time and the share outside llama_decode
# (target < 5%).
bench-quality: build
	scripts/bench-quality.sh

# CUDA backend (shared libraries) from the pinned llama.cpp, beside the
# binary: CUDA_ARCHITECTURES=90 (default: this machine's GPU).
cuda: build
	OLLAMA_DIR=$(OLLAMA_DIR) scripts/build-backend.sh bin

# Vulkan backend beside the binary (glslc and libvulkan-dev; mesa's
# llvmpipe runs it without a GPU), cached per machine.
vulkan: build
	OLLAMA_DIR=$(OLLAMA_DIR) BACKEND=vulkan scripts/build-backend.sh bin

# The GPU run, prepared (docs/gpu.md): the binary for any x86-64-v3 CPU,
# the pinned ggml tree CMake builds the CUDA backend from and the scripts,
# in one ignored folder that scripts/gpu-run.sh runs from on a GPU box
# without Go or a network; checked against a device call's 64 MiB.
BUNDLE       ?= build/gpu-bundle
BUNDLE_MARCH ?= x86-64-v3
gpu-bundle:
	@test "$(HOST_ARCH)" = x86_64 || { echo "gpu-bundle: builds on x86-64 only (this is $(HOST_ARCH))"; exit 1; }
	$(MAKE) --no-print-directory BIN=$(BUNDLE)/bin/tokbench MARCH=$(BUNDLE_MARCH) PORTABLE=0 AMX=0 build
	OLLAMA_DIR=$(OLLAMA_DIR) scripts/gpu-bundle.sh $(BUNDLE) $(BUNDLE)/bin/tokbench

env:
	@echo OLLAMA_DIR=$(OLLAMA_DIR)
	@echo CGO_CPPFLAGS=$(CGO_CPPFLAGS)
	@echo CGO_CFLAGS=$(CGO_CFLAGS)
	@echo CGO_LDFLAGS=$(CGO_LDFLAGS)

clean:
	rm -rf bin
