// Package point holds a benchmark point: one combination of settings (the
// model, the test sizes, the context and its KV cache, threads, offload,
// sampling), its identity (Key), its validation, and its llama-bench test
// names; and the table of settings (Settings) that run's and sweep's
// flags, spec keys, point keys and records come from. It is plain Go: the
// planner, the measuring executor, the records and the reports share it.
package point

import (
	"fmt"
	"strconv"
	"time"

	"github.com/tokbench/tokbench/stats"
)

// Point is one benchmark configuration.
type Point struct {
	Model   string // file path
	ModelID string // how the sweep named it: the path, synth:PRESET:TYPE, ...
	Quant   string // the model's file type (q4_0, f16, ...), for filters and grouping
	NPrompt int    // pp test size; 0: no pp test
	NGen    int    // tg test size; 0: no tg test
	NDepth  int    // KV cache filled to this depth before each test
	Shape
	MainGPU   int
	Split     SplitMode
	NoMmap    bool
	FlashAttn FlashAttn
	Parallel  int     // sequences decoding together
	Reps      int     // measured repetitions; AutoReps: until the mean is precise (TargetCI)
	TargetCI  float64 // AutoReps: the 95% CI half-width of the mean t/s to reach, a fraction of it
	MaxReps   int     // AutoReps: at most this many
	// DropOutliers takes repetitions more than 3 robust sigmas from the
	// median out of the figures (they are always reported).
	DropOutliers bool
	NoWarmup     bool     // skip the uncounted warm-up run
	Sampling     Sampling // "" or off: random tokens; else also run tg through that sampler chain
	Seed         uint64
	Timeout      time.Duration // whole point; 0: none
	// Kernels also times the step's ops alone at the model's shapes, to
	// split the step into hardware, kernels and software (roofline).
	Kernels bool
	// StepDelay makes each decode step slower on purpose: tests of that
	// split use it.
	StepDelay time.Duration
	Placement
	Threading
	NoKVOffload bool          // keep the KV cache and attention on the CPU (-nkvo)
	Delay       time.Duration // pause before each test (--delay), to let the hardware cool
	PG          [2]int        // a pp+tg test of these sizes too (-pg); zero: none
	// Combined marks a one-test point that is a pp+tg test: the prompt,
	// then the generation, timed together (Tests makes it from PG).
	Combined bool
}

// Shape is the context a point's steps run in, as llama.cpp is told it:
// the batch sizes, the threads, the KV cache's types and the layers on
// the GPU. A point, its key and its records hold it alike (a JSON tag
// each, llama-bench's names), so it goes from one to the other whole.
type Shape struct {
	NBatch     int    `json:"n_batch"`
	NUBatch    int    `json:"n_ubatch"` // a point's as given; its key's and tokbench's records' as used (UBatch)
	Threads    int    `json:"n_threads"`
	TypeK      string `json:"type_k"`
	TypeV      string `json:"type_v"`
	NGPULayers int    `json:"n_gpu_layers"` // -1: all
}

// UBatch is the physical batch llama.cpp uses: the one given, capped at
// the logical batch (a llama-bench record may lack that).
func (s Shape) UBatch() int {
	if s.NBatch > 0 {
		return min(s.NUBatch, s.NBatch)
	}
	return s.NUBatch
}

// Used is the shape as llama.cpp uses it (UBatch).
func (s Shape) Used() Shape {
	s.NUBatch = s.UBatch()
	return s
}

// Within is the shape for a context of n cells: batches of at most n
// tokens.
func (s Shape) Within(n int) Shape {
	s.NBatch, s.NUBatch = min(s.NBatch, n), min(s.NUBatch, n)
	return s
}

// Whole is the shape whose steps compute up to n tokens at once: both
// batches n.
func (s Shape) Whole(n int) Shape {
	s.NBatch, s.NUBatch = n, n
	return s
}

// Defaults are llama-bench's defaults where they exist.
func Defaults(threads int) Point {
	return Point{NPrompt: 512, NGen: 128, Shape: Shape{NBatch: 2048, NUBatch: 512, Threads: threads, NGPULayers: 99, TypeK: "f16", TypeV: "f16"},
		Split: SplitLayer, FlashAttn: FlashOff, Sampling: SamplingOff, Parallel: 1, Reps: 5,
		TargetCI: DefaultTargetCI, MaxReps: DefaultMaxReps, Seed: 42, Timeout: 10 * time.Minute, Kernels: true}
}

// Limits on what one point may ask for: far above any real benchmark, low
// enough that a typo cannot allocate the machine away.
const (
	MaxTokens  = 1 << 20
	MaxDepth   = 1 << 22
	MaxReps    = 1000
	MaxThreads = 512
)

// Adaptive repetitions: AutoReps repeats each test until the 95%
// confidence interval of its mean t/s is within TargetCI of the mean, at
// least MinAutoReps times and at most MaxReps, or until half the point's
// timeout is spent.
const (
	AutoReps        = 0
	MinAutoReps     = 3
	DefaultTargetCI = 0.02
	DefaultMaxReps  = 20
)

// parseReps reads -r: a count, or "auto".
func parseReps(s string) (int, error) {
	if s == "auto" {
		return AutoReps, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("-r %q: give a number of repetitions (1 to %d) or auto", s, MaxReps)
	}
	return n, nil
}

// RepsName is how -r reads: the count, or auto.
func RepsName(reps int) string {
	if reps == AutoReps {
		return "auto"
	}
	return strconv.Itoa(reps)
}

// Enough says whether the repetitions taken, whose rates are ts and which
// took spent of the point's time, suffice; met says whether the CI target
// was reached (always true for a fixed count).
func (p Point) Enough(ts []float64, spent time.Duration) (done, met bool) {
	n := len(ts)
	if p.Reps != AutoReps {
		return n >= p.Reps, true
	}
	if n < MinAutoReps {
		return false, false
	}
	s := stats.Summarize(ts)
	met = s.Mean > 0 && s.CI95 <= p.TargetCI*s.Mean
	// Another repetition would run past half the timeout: stop here.
	overBudget := p.Timeout > 0 && spent+spent/time.Duration(n) > p.Timeout/2
	return met || n >= p.MaxReps || overBudget, met
}

// Key is the point's identity in a results file.
func (p Point) Key() Key {
	id := p.ModelID
	if id == "" {
		id = p.Model
	}
	p.Shape, p.Sampling = p.Used(), p.SamplingName()
	return p.keyOf(id)
}

// ModelKey is what a loaded model depends on: points with the same one
// share it.
type ModelKey struct {
	Model      string
	NGPULayers int
	Split      SplitMode
	MainGPU    int
	Mmap       bool
	Placement
}

// ModelKey is the point's ModelKey.
func (p Point) ModelKey() ModelKey {
	return ModelKey{p.Model, p.NGPULayers, p.Split, p.MainGPU, !p.NoMmap, p.Placement}
}

// ContextKey is what a context depends on: points with the same one can
// share it (sized for the largest of them).
type ContextKey struct {
	ModelKey
	Parallel  int
	Shape     Shape // as used
	FlashAttn FlashAttn
	Seed      uint64
	Threading
	NoKVOffload bool
}

// ContextKey is the point's ContextKey.
func (p Point) ContextKey() ContextKey {
	return ContextKey{p.ModelKey(), p.Parallel, p.Used(), p.FlashAttn, p.Seed, p.Threading, p.NoKVOffload}
}

// SamplingName is the point's sampling, off when unset.
func (p Point) SamplingName() Sampling {
	if p.Sampling == "" {
		return SamplingOff
	}
	return p.Sampling
}

// Sampled says whether the point's tg test runs through a sampler chain.
func (p Point) Sampled() bool { return p.SamplingName() != SamplingOff }

// InputError is an error in what the user asked for (flags, values, spec
// files): the CLI exits 2 for it, 1 for other failures.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Inputf makes an InputError.
func Inputf(format string, a ...any) error { return &InputError{fmt.Errorf(format, a...)} }

// Validate checks the point's values, not yet the model.
func (p Point) Validate() error {
	switch {
	case p.Model == "":
		return Inputf("no model: give -m FILE.gguf, or --synth PRESET")
	case p.NPrompt < 0 || p.NGen < 0 || p.NDepth < 0:
		return Inputf("-p %d, -n %d, -d %d: token counts cannot be negative", p.NPrompt, p.NGen, p.NDepth)
	case p.NPrompt == 0 && p.NGen == 0 && p.PG == [2]int{}:
		return Inputf("-p 0 and -n 0: nothing to measure; give a prompt (-p) or generation (-n) length")
	case p.NPrompt > MaxTokens || p.NGen > MaxTokens:
		return Inputf("-p %d / -n %d: at most %d tokens per test", p.NPrompt, p.NGen, MaxTokens)
	case p.NDepth > MaxDepth:
		return Inputf("-d %d: at most %d", p.NDepth, MaxDepth)
	case p.NBatch <= 0 || p.NUBatch <= 0:
		return Inputf("-b %d / -ub %d: batch sizes must be positive", p.NBatch, p.NUBatch)
	case p.NBatch > MaxTokens || p.NUBatch > MaxTokens:
		return Inputf("-b %d / -ub %d: at most %d", p.NBatch, p.NUBatch, MaxTokens)
	case p.Threads <= 0 || p.Threads > MaxThreads:
		return Inputf("-t %d: threads must be 1 to %d", p.Threads, MaxThreads)
	case p.Parallel <= 0 || p.Parallel > MaxParallel:
		return Inputf("--parallel %d: must be 1 to %d", p.Parallel, MaxParallel)
	case p.Reps < 0 || p.Reps > MaxReps:
		return Inputf("-r %d: repetitions must be 1 to %d, or auto", p.Reps, MaxReps)
	case p.Reps == AutoReps && (p.TargetCI <= 0 || p.TargetCI >= 1):
		return Inputf("--target-ci %g%%: give a percentage above 0 and below 100", 100*p.TargetCI)
	case p.MaxReps < 0 || p.MaxReps > MaxReps || (p.Reps == AutoReps && p.MaxReps < MinAutoReps):
		return Inputf("--max-reps %d: must be %d to %d", p.MaxReps, MinAutoReps, MaxReps)
	case p.Timeout < 0:
		return Inputf("--timeout %s: cannot be negative", p.Timeout)
	}
	if err := CheckCache(p.TypeK, p.TypeV, p.FlashAttn); err != nil {
		return &InputError{err}
	}
	if err := p.CheckKnobs(); err != nil {
		return err
	}
	if _, err := parseSampling(string(p.Sampling)); err != nil {
		return Inputf("--%v", err)
	}
	return nil
}

// PerSeqCtx is the context each sequence needs: depth plus the longer test.
func (p Point) PerSeqCtx() int {
	if p.Combined {
		return p.NDepth + p.NPrompt + p.NGen
	}
	return p.NDepth + max(p.NPrompt, p.NGen, p.PG[0]+p.PG[1])
}

// NCtx is the context size of the point: all sequences share one KV cache.
func (p Point) NCtx() int { return p.Parallel * p.PerSeqCtx() }

// PrefillChunks is how a prefill of nPrompt tokens for each of parallel
// sequences (batched together) is computed: in chunks of tokens (the
// ubatch, or all of them when fewer), chunks of them.
func PrefillChunks(parallel, nPrompt, ubatch int) (tokens, chunks int) {
	total := max(parallel, 1) * nPrompt
	tokens = max(min(ubatch, total), 1)
	return tokens, (total + tokens - 1) / tokens
}

// IsPrompt says whether a one-test point is a pp (prefill) test.
func (p Point) IsPrompt() bool { return p.NGen == 0 }

// Tests splits a point into its tests as llama-bench does: a pp test
// (n_gen 0) and a tg test (n_prompt 0), and with sampling on, the raw tg
// test first so the sampled one can say what sampling costs.
func (p Point) Tests() []Point {
	var out []Point
	if p.NPrompt > 0 {
		t := p
		t.NGen, t.Sampling, t.PG = 0, SamplingOff, [2]int{}
		out = append(out, t)
	}
	if p.NGen > 0 {
		t := p
		t.NPrompt, t.Sampling, t.PG = 0, SamplingOff, [2]int{}
		out = append(out, t)
		if p.Sampled() {
			t.Sampling = p.Sampling
			out = append(out, t)
		}
	}
	if p.PG != [2]int{} {
		out = append(out, p.CombinedTest())
	}
	return out
}

// CombinedTest is the point's -pg test: its prompt, then its generation,
// timed together.
func (p Point) CombinedTest() Point {
	t := p
	t.NPrompt, t.NGen, t.PG, t.Combined, t.Sampling = p.PG[0], p.PG[1], [2]int{}, true, SamplingOff
	return t
}

// TestName is the short name of a one-test point: pp512, tg128@d1024x4.
func (p Point) TestName() string {
	if p.Combined {
		return combinedName(p.NPrompt, p.NGen, p.NDepth, p.Parallel)
	}
	return TestName(p.NPrompt, p.NGen, p.NDepth, p.Parallel)
}

// combinedName names a pp+tg test as llama-bench does: pp512+tg128, with
// the depth and sequences as TestName adds them.
func combinedName(nPrompt, nGen, depth, parallel int) string {
	return fmt.Sprintf("pp%d+", nPrompt) + TestName(0, nGen, depth, parallel)
}

// TestName names a test of nPrompt or (if nGen > 0) nGen tokens at a
// depth, for parallel sequences.
func TestName(nPrompt, nGen, depth, parallel int) string {
	kind, n := "tg", nGen
	if nGen == 0 {
		kind, n = "pp", nPrompt
	}
	s := fmt.Sprintf("%s%d", kind, n)
	if depth > 0 {
		s += fmt.Sprintf("@d%d", depth)
	}
	if parallel > 1 {
		s += fmt.Sprintf("x%d", parallel)
	}
	return s
}
