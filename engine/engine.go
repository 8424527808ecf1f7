// Package engine is tokbench's only cgo package: it drives llama.cpp (as
// vendored by github.com/ollama/ollama) in-process. It loads backends and
// models, creates contexts and offers the timed primitives a benchmark is
// made of: prefill, one decode step for B sequences, KV trimming, sampling.
// It also writes synthetic models and quantizes.
package engine

/*
#include <stdlib.h>
#include "tb.h"
#include "ggml-backend.h"
*/
import "C"

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	// Links libllama, ggml and the CPU backend into the binary.
	_ "github.com/ollama/ollama/llama/llama.cpp/src"
)

// Build identifies the llama.cpp this binary carries. Records name both the
// upstream commit and the ollama release that patched it, so numbers are
// never mistaken for stock llama.cpp's.
const (
	LlamaCommit   = "ec98e200" // as llama-bench writes a build: 8 hex digits
	OllamaVersion = "v0.17.4"
)

// LogLevel selects which llama.cpp log messages reach stderr.
type LogLevel int

const (
	LogDebug LogLevel = C.GGML_LOG_LEVEL_DEBUG
	LogInfo  LogLevel = C.GGML_LOG_LEVEL_INFO
	LogWarn  LogLevel = C.GGML_LOG_LEVEL_WARN
	LogError LogLevel = C.GGML_LOG_LEVEL_ERROR
)

// Options configure the process-wide backend.
type Options struct {
	// BackendDirs are searched for dynamically built ggml backends
	// (libggml-cuda.so, ...). Empty: $TOKBENCH_BACKEND_DIR, then the
	// binary's folder and ../lib/tokbench beside it.
	BackendDirs []string
	Log         LogLevel
}

var (
	initOnce sync.Once
	loaded   []string
)

// Init initialises llama.cpp once per process and loads GPU backends found
// in the backend folders. Later calls do nothing.
func Init(opts Options) {
	initOnce.Do(func() {
		if opts.Log == 0 {
			opts.Log = LogError
		}
		C.tb_log_init(C.int(opts.Log))
		C.tb_abort_init()
		C.llama_backend_init()
		for _, dir := range backendDirs(opts.BackendDirs) {
			loadErrs = append(loadErrs, loadDir(dir)...)
			loaded = append(loaded, dir)
		}
	})
}

// loadDir loads each backend library of a folder (libggml-NAME.so, not
// the shared base), one by one so that one that will not load (corrupt,
// built for another ggml, a missing driver) is named with why, instead of
// being skipped in silence.
func loadDir(dir string) []error {
	libs, _ := filepath.Glob(filepath.Join(dir, "*ggml-*"))
	var errs []error
	for _, lib := range libs {
		name := filepath.Base(lib)
		// The CPU backend is compiled in: a CPU variant library beside it
		// (an ollama lib folder) would register a second one.
		if strings.Contains(name, "ggml-base") || strings.Contains(name, "ggml-cpu") || !(strings.HasSuffix(name, ".so") || strings.HasSuffix(name, ".dylib") || strings.HasSuffix(name, ".dll")) {
			continue
		}
		clearError()
		cpath := C.CString(lib)
		reg := C.ggml_backend_load(cpath)
		C.free(unsafe.Pointer(cpath))
		if reg == nil {
			errs = append(errs, fmt.Errorf("GPU backend %s did not load: %s (rebuild it with scripts/build-backend.sh, or remove it)", lib, cmp.Or(lastError(), "no reason given")))
		}
	}
	return errs
}

// BackendErrors are the backend libraries that did not load.
func BackendErrors() []error { return loadErrs }

var loadErrs []error

// BackendDirsLoaded lists the folders searched for dynamic backends.
func BackendDirsLoaded() []string { return loaded }

func backendDirs(given []string) []string {
	explicit := true
	if len(given) == 0 {
		explicit = os.Getenv("TOKBENCH_BACKEND_DIR") != ""
		if env := os.Getenv("TOKBENCH_BACKEND_DIR"); env != "" {
			given = filepath.SplitList(env)
		} else if exe, err := os.Executable(); err == nil {
			d := filepath.Dir(exe)
			given = []string{d, filepath.Join(d, "..", "lib", "tokbench")}
		}
	}
	var dirs []string
	for _, d := range given {
		// Only folders that hold a ggml backend library: ggml otherwise
		// logs a search for every backend it knows. A folder named
		// (--backend-dir, $TOKBENCH_BACKEND_DIR) without one is a mistake
		// to tell, except the null device, which asks for none.
		m, _ := filepath.Glob(filepath.Join(d, "*ggml-*"))
		if len(m) > 0 {
			dirs = append(dirs, d)
		} else if explicit && d != os.DevNull {
			loadErrs = append(loadErrs, fmt.Errorf("no GPU backend library (libggml-*.so) in %s: build one there with scripts/build-backend.sh, or give the folder that has it", d))
		}
	}
	return dirs
}

// lastError returns llama.cpp's last logged error or warning, the best
// explanation of a NULL or non-zero return we can get.
func lastError() string {
	var buf [1024]C.char
	C.tb_last_error(&buf[0], C.int(len(buf)))
	return strings.TrimSpace(C.GoString(&buf[0]))
}

func clearError() { C.tb_clear_error() }

// cerr makes an error from a failed C call, adding llama.cpp's own words:
// the first error it logged (the cause) and the last (what failed). Memory
// the process could not get is said as such, whatever the hint.
func cerr(what, hint string) error {
	msg := what
	var buf [1024]C.char
	C.tb_first_error(&buf[0], C.int(len(buf)))
	first, last := strings.TrimSpace(C.GoString(&buf[0])), lastError()
	switch {
	case first != "" && first != last:
		msg += ": llama.cpp: " + first + "; " + last
	case last != "":
		msg += ": llama.cpp: " + last
	}
	if hint = memoryHint(msg, hint); hint != "" {
		msg += " (" + hint + ")"
	}
	return errors.New(msg)
}

// memoryHint is the hint for a failure llama.cpp's words say was memory
// the process could not get (under ulimit -v the load fails with
// std::bad_alloc, which reads like a damaged file otherwise); hint if not.
func memoryHint(msg, hint string) string {
	for _, s := range []string{"bad_alloc", "Cannot allocate memory", "failed to allocate"} {
		if strings.Contains(msg, s) {
			return "the process could not get the memory: check the limits it runs under (ulimit -v, a container's) and what is free"
		}
	}
	return hint
}

// SystemInfo is llama.cpp's description of the compiled-in CPU features.
func SystemInfo() string {
	return strings.TrimSpace(C.GoString(C.llama_print_system_info()))
}

// CPUFeatures lists the CPU features the backend was compiled with and
// uses, from SystemInfo ("AVX2 F16C FMA ...").
func CPUFeatures() string {
	info := SystemInfo()
	var on []string
	for _, part := range strings.Split(info, "|") {
		kv := strings.SplitN(strings.TrimSpace(part), "=", 2)
		if len(kv) != 2 {
			continue
		}
		k, v := strings.TrimSpace(kv[0]), strings.TrimSpace(kv[1])
		if i := strings.LastIndex(k, ":"); i >= 0 {
			k = strings.TrimSpace(k[i+1:])
		}
		if v == "1" {
			on = append(on, k)
		}
	}
	if len(on) == 0 {
		return "baseline"
	}
	return strings.Join(on, " ")
}

// maxParallelSequences is the most sequences one context can hold.
func maxParallelSequences() int { return int(C.llama_max_parallel_sequences()) }

// SupportsGPUOffload reports whether any loaded backend can take layers.
func SupportsGPUOffload() bool { return bool(C.llama_supports_gpu_offload()) }

// Abort ends the process the way llama.cpp does on a fatal error
// (abort(3), SIGABRT), after printing why. Tests of crash handling use it.
func Abort(why string) {
	fmt.Fprintln(os.Stderr, "tokbench: aborting:", why)
	C.abort()
}
