// Package sweep turns benchmark settings into measurements: a point (one
// combination of settings), the runner that measures it with llama-bench's
// method, and the records it produces.
package sweep

import (
	"fmt"
	"strings"
	"time"

	"github.com/tokbench/tokbench/engine"
)

// Point is one benchmark configuration.
type Point struct {
	Model      string // file path
	ModelID    string // how the sweep named it: the path, synth:PRESET:TYPE, ...
	Quant      string // the model's file type (q4_0, f16, ...), for filters and grouping
	NPrompt    int    // pp test size; 0: no pp test
	NGen       int    // tg test size; 0: no tg test
	NDepth     int    // KV cache filled to this depth before each test
	NBatch     int
	NUBatch    int
	Threads    int
	NGPULayers int // -1: all
	MainGPU    int
	Split      engine.SplitMode
	NoMmap     bool
	FlashAttn  engine.FlashAttn
	TypeK      string
	TypeV      string
	Parallel   int    // sequences decoding together
	Reps       int    // measured repetitions
	NoWarmup   bool   // skip the uncounted warm-up run
	Sampling   string // "", "greedy" or "typical": also run tg through that sampler chain
	Seed       uint64
	Timeout    time.Duration // whole point; 0: none
}

// Key identifies a point's measurement in a results file: every setting
// that changes what is measured, nothing that does not.
func (p Point) Key() string {
	id := p.ModelID
	if id == "" {
		id = p.Model
	}
	return fmt.Sprintf("%s|p=%d|n=%d|d=%d|np=%d|b=%d|ub=%d|t=%d|ngl=%d|sm=%s|mg=%d|mmap=%t|fa=%s|ctk=%s|ctv=%s|sampling=%s|r=%d|warmup=%t|seed=%d",
		id, p.NPrompt, p.NGen, p.NDepth, p.Parallel, p.NBatch, p.UBatch(), p.Threads, p.NGPULayers, p.Split, p.MainGPU,
		!p.NoMmap, p.FlashAttn, p.TypeK, p.TypeV, p.samplingName(), p.Reps, !p.NoWarmup, p.Seed)
}

func (p Point) samplingName() string {
	if _, ok := p.Sampler(); ok {
		return strings.ToLower(p.Sampling)
	}
	return "off"
}

// modelKey: points with the same one share a loaded model.
func (p Point) modelKey() string {
	return fmt.Sprintf("%s|ngl=%d|sm=%s|mg=%d|mmap=%t", p.Model, p.NGPULayers, p.Split, p.MainGPU, !p.NoMmap)
}

// contextKey: points with the same one can share a context (its size
// is the largest they need).
func (p Point) contextKey() string {
	return fmt.Sprintf("%s|np=%d|b=%d|ub=%d|t=%d|fa=%s|ctk=%s|ctv=%s|seed=%d", p.modelKey(), p.Parallel, p.NBatch, p.UBatch(), p.Threads, p.FlashAttn, p.TypeK, p.TypeV, p.Seed)
}

// Defaults are llama-bench's defaults where they exist.
func Defaults(threads int) Point {
	return Point{NPrompt: 512, NGen: 128, NBatch: 2048, NUBatch: 512, Threads: threads, NGPULayers: -1,
		Split: engine.SplitLayer, FlashAttn: engine.FlashAuto, TypeK: "f16", TypeV: "f16", Parallel: 1, Reps: 5,
		Seed: 42, Timeout: 10 * time.Minute}
}

// Limits on what one point may ask for: far above any real benchmark, low
// enough that a typo cannot allocate the machine away.
const (
	MaxTokens  = 1 << 20
	MaxDepth   = 1 << 22
	MaxReps    = 1000
	MaxThreads = 1024
)

// InputError is an error in what the user asked for (flags, values): the
// CLI exits 2 for it, 1 for other failures.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(format string, a ...any) error { return &InputError{fmt.Errorf(format, a...)} }

// Validate checks the point's values, not yet the model.
func (p Point) Validate() error {
	switch {
	case p.Model == "":
		return inputErr("no model: give -m FILE.gguf, or --synth PRESET")
	case p.NPrompt < 0 || p.NGen < 0 || p.NDepth < 0:
		return inputErr("-p %d, -n %d, -d %d: token counts cannot be negative", p.NPrompt, p.NGen, p.NDepth)
	case p.NPrompt == 0 && p.NGen == 0:
		return inputErr("-p 0 and -n 0: nothing to measure; give a prompt (-p) or generation (-n) length")
	case p.NPrompt > MaxTokens || p.NGen > MaxTokens:
		return inputErr("-p %d / -n %d: at most %d tokens per test", p.NPrompt, p.NGen, MaxTokens)
	case p.NDepth > MaxDepth:
		return inputErr("-d %d: at most %d", p.NDepth, MaxDepth)
	case p.NBatch <= 0 || p.NUBatch <= 0:
		return inputErr("-b %d / -ub %d: batch sizes must be positive", p.NBatch, p.NUBatch)
	case p.NBatch > MaxTokens || p.NUBatch > MaxTokens:
		return inputErr("-b %d / -ub %d: at most %d", p.NBatch, p.NUBatch, MaxTokens)
	case p.Threads <= 0 || p.Threads > MaxThreads:
		return inputErr("-t %d: threads must be 1 to %d", p.Threads, MaxThreads)
	case p.Parallel <= 0 || p.Parallel > engine.MaxParallelSequences():
		return inputErr("--parallel %d: must be 1 to %d", p.Parallel, engine.MaxParallelSequences())
	case p.Reps <= 0 || p.Reps > MaxReps:
		return inputErr("-r %d: repetitions must be 1 to %d", p.Reps, MaxReps)
	case p.Timeout < 0:
		return inputErr("--timeout %s: cannot be negative", p.Timeout)
	}
	for _, t := range []string{p.TypeK, p.TypeV} {
		if _, err := engine.ParseKVType(t); err != nil {
			return &InputError{err}
		}
	}
	if v := p.TypeV; v != "f16" && v != "f32" && v != "bf16" && p.FlashAttn == engine.FlashOff {
		return inputErr("a quantized V cache (-ctv %s) needs flash attention: add -fa on, or use -ctv f16", v)
	}
	switch p.Sampling {
	case "", "off", "greedy", "typical":
	default:
		return inputErr("--sampling %q: use off, greedy or typical", p.Sampling)
	}
	return nil
}

// PerSeqCtx is the context each sequence needs: depth plus the longer test.
func (p Point) PerSeqCtx() int { return p.NDepth + max(p.NPrompt, p.NGen) }

// NCtx is the context size of the point: all sequences share one KV cache.
func (p Point) NCtx() int { return p.Parallel * p.PerSeqCtx() }

// UBatch is the physical batch actually used (llama.cpp caps it at n_batch).
func (p Point) UBatch() int { return min(p.NUBatch, p.NBatch) }

// Sampler returns the point's sampler chain, if any.
func (p Point) Sampler() (engine.SamplerConfig, bool) {
	switch strings.ToLower(p.Sampling) {
	case "greedy":
		return engine.GreedySampler(), true
	case "typical":
		return engine.TypicalSampler(uint32(p.Seed)), true
	}
	return engine.SamplerConfig{}, false
}
