package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/internal/isolate"
	"github.com/tokbench/tokbench/internal/preset"
	"github.com/tokbench/tokbench/point"
)

func TestMain(m *testing.M) {
	Init(Options{})
	// As a child of TestAbortIsOneLine: load a file unvalidated.
	if os.Getenv("TB_TEST_CHECK_UNVALIDATED") != "" {
		if err := checkLoad(os.Args[len(os.Args)-1]); err != nil {
			fmt.Fprintln(os.Stderr, "tokbench:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var (
	tinyOnce sync.Once
	tinyDir  string
	tinyErr  error
)

// tinyModels synthesizes the tiny preset once for the package's tests: an
// F16 file and two quantizations of it.
func tinyModels(t *testing.T) (f16, q8, q4 string) {
	t.Helper()
	tinyOnce.Do(func() {
		tinyDir, tinyErr = os.MkdirTemp("", "tokbench-engine-")
		if tinyErr != nil {
			return
		}
		f16 := filepath.Join(tinyDir, "tiny-f16.gguf")
		if tinyErr = Synthesize(preset.Presets["tiny"], f16, SynthOptions{Seed: 1}); tinyErr != nil {
			return
		}
		if tinyErr = Quantize(f16, filepath.Join(tinyDir, "tiny-q8_0.gguf"), "q8_0", QuantizeOptions{}); tinyErr != nil {
			return
		}
		tinyErr = Quantize(f16, filepath.Join(tinyDir, "tiny-q4_k_m.gguf"), "q4_k_m", QuantizeOptions{})
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return filepath.Join(tinyDir, "tiny-f16.gguf"), filepath.Join(tinyDir, "tiny-q8_0.gguf"), filepath.Join(tinyDir, "tiny-q4_k_m.gguf")
}

func fileHash(t *testing.T, path string) [32]byte {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

func TestTypeTableMatchesGGML(t *testing.T) {
	for i := 0; i < gguf.NumTypes; i++ {
		gt := gguf.GGMLType(i)
		bs, ts, name := ggmlTypeInfo(i)
		if ts == 0 || bs == 0 {
			if gt.Valid() {
				t.Errorf("type %d: ggml has no size, gguf table says %s", i, gt)
			}
			continue
		}
		if !gt.Valid() {
			t.Errorf("type %d (%s) missing from gguf table", i, name)
			continue
		}
		if gt.BlockSize() != bs || gt.TypeSize() != ts || !strings.EqualFold(gt.String(), name) {
			t.Errorf("type %d: gguf table %s %d/%d, ggml %s %d/%d", i, gt, gt.BlockSize(), gt.TypeSize(), name, bs, ts)
		}
	}
}

func TestSynthesizeDeterministicAndValid(t *testing.T) {
	f16, _, _ := tinyModels(t)
	again := filepath.Join(t.TempDir(), "again.gguf")
	if err := Synthesize(preset.Presets["tiny"], again, SynthOptions{Seed: 1, Threads: 1}); err != nil {
		t.Fatal(err)
	}
	if fileHash(t, f16) != fileHash(t, again) {
		t.Error("same seed, different thread count: files differ")
	}
	other := filepath.Join(t.TempDir(), "other.gguf")
	if err := Synthesize(preset.Presets["tiny"], other, SynthOptions{Seed: 2}); err != nil {
		t.Fatal(err)
	}
	if fileHash(t, f16) == fileHash(t, other) {
		t.Error("different seeds gave the same file")
	}
	f, h, err := gguf.Inspect(f16)
	if err != nil {
		t.Fatal(err)
	}
	s := preset.Presets["tiny"]
	if h.NEmbd != int64(s.NEmbd) || h.NLayer != int64(s.NLayer) || h.NVocab != int64(s.NVocab) || h.NHeadKV != int64(s.NHeadKV) {
		t.Errorf("hparams %+v do not match preset %+v", h, s)
	}
	var params int64
	for _, tn := range f.Tensors {
		params += tn.Elements()
	}
	if params != s.Params() {
		t.Errorf("file has %d weights, preset says %d", params, s.Params())
	}
}

func TestDirectQuantTypes(t *testing.T) {
	dir := t.TempDir()
	prev := int64(1 << 62)
	for _, typ := range []string{"f32", "f16", "q8_0", "q4_0"} {
		p := filepath.Join(dir, typ+".gguf")
		if err := Synthesize(preset.Presets["tiny"], p, SynthOptions{Type: typ, Seed: 3}); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		m, err := loadFile(p, allOnGPU)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if m.Info.FileType != typ {
			t.Errorf("file type %q, want %q", m.Info.FileType, typ)
		}
		size := fileSize(t, p)
		if size >= prev {
			t.Errorf("%s: %d bytes, not smaller than the previous type's %d", typ, size, prev)
		}
		prev = size
		m.Close()
	}
}

func TestQuantizedModelsRun(t *testing.T) {
	f16, q8, q4 := tinyModels(t)
	var sizes []int64
	for _, p := range []string{f16, q8, q4} {
		m, err := loadFile(p, allOnGPU)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, fileSize(t, p))
		if m.Info.NParams != uint64(preset.Presets["tiny"].Params()) {
			t.Errorf("%s: n_params %d, want %d", p, m.Info.NParams, preset.Presets["tiny"].Params())
		}
		ctx, err := m.NewContext(ContextOptions{Shape: point.Shape{NBatch: 64, NUBatch: 64, Threads: 2}, NCtx: 256, NSeqMax: 2, FlashAttn: point.FlashOff, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := ctx.Prefill(2, 100, 0); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if got := ctx.seqPosMax(i); got != 99 {
				t.Errorf("seq %d pos max %d after 100-token prefill, want 99", i, got)
			}
		}
		for step := 0; step < 5; step++ {
			if err := ctx.Step(2, 100+step, nil); err != nil {
				t.Fatal(err)
			}
		}
		if got := ctx.seqPosMax(1); got != 104 {
			t.Errorf("pos max %d after 5 steps, want 104", got)
		}
		if err := ctx.Trim(50); err != nil {
			t.Fatal(err)
		}
		if got := ctx.seqPosMax(0); got != 49 {
			t.Errorf("pos max %d after trim to 50, want 49", got)
		}
		ctx.Clear()
		if got := ctx.seqPosMax(0); got != -1 {
			t.Errorf("pos max %d after clear, want -1", got)
		}
		ctx.Close()
		m.Close()
	}
	if !(sizes[1] < sizes[0] && sizes[2] < sizes[1]) {
		t.Errorf("sizes f16 %d, q8_0 %d, q4_k_m %d: quantized files must be smaller", sizes[0], sizes[1], sizes[2])
	}
}

func TestSamplingNeverEndsOnEOS(t *testing.T) {
	f16, _, _ := tinyModels(t)
	m, err := loadFile(f16, allOnGPU)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, err := m.NewContext(ContextOptions{Shape: point.Shape{NBatch: 32, NUBatch: 32, Threads: 2}, NCtx: 128, NSeqMax: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	for _, cfg := range []SamplerConfig{GreedySampler(), TypicalSampler(7)} {
		s := m.NewSamplers(cfg, 1)
		ctx.Clear()
		ctx.SeedTokens(1)
		for i := 0; i < 40; i++ {
			if err := ctx.Step(1, i, s); err != nil {
				t.Fatal(err)
			}
			if tok := ctx.sampledTokens(1)[0]; tok == 2 || tok < 0 || tok >= m.Info.NVocab {
				t.Fatalf("%s: step %d sampled token %d (EOS is 2)", cfg.Name(), i, tok)
			}
		}
		s.Close()
	}
}

func TestDeadlineAndCancel(t *testing.T) {
	f16, _, _ := tinyModels(t)
	m, err := loadFile(f16, allOnGPU)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, err := m.NewContext(ContextOptions{Shape: point.Shape{NBatch: 512, NUBatch: 512, Threads: 2}, NCtx: 4096, NSeqMax: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	ctx.SetDeadline(time.Now().Add(-time.Second))
	if err := ctx.Prefill(1, 2048, 0); err != ErrDeadline {
		t.Errorf("prefill past its deadline: %v, want ErrDeadline", err)
	}
	ctx.SetDeadline(time.Time{})
	ctx.Clear()
	if err := ctx.Prefill(1, 64, 0); err != nil {
		t.Errorf("prefill after removing the deadline: %v", err)
	}
	ctx.Cancel()
	if err := ctx.Step(1, 64, nil); err != ErrCanceled {
		t.Errorf("step after cancel: %v, want ErrCanceled", err)
	}
}

func TestBadInput(t *testing.T) {
	f16, _, _ := tinyModels(t)
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "x.gguf")
	os.WriteFile(notGGUF, []byte("hello, not a model"), 0o644)
	data, _ := os.ReadFile(f16)
	trunc := filepath.Join(dir, "trunc.gguf")
	os.WriteFile(trunc, data[:len(data)/2], 0o644)
	cases := map[string]struct{ path, want string }{
		"missing":   {filepath.Join(dir, "nope.gguf"), "does not exist"},
		"not gguf":  {notGGUF, "not a GGUF file"},
		"truncated": {trunc, "truncated"},
		"directory": {dir, "directory"},
	}
	for name, c := range cases {
		_, err := loadFile(c.path, allOnGPU)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to mention %q", name, err, c.want)
		}
	}
	if err := Quantize(f16, filepath.Join(dir, "o.gguf"), "q9_9", QuantizeOptions{}); err == nil || !strings.Contains(err.Error(), "unknown quantization type") {
		t.Errorf("unknown type: %v", err)
	}
	if err := Quantize(f16, filepath.Join(dir, "o.gguf"), "iq2_xxs", QuantizeOptions{}); err == nil || !strings.Contains(err.Error(), "importance matrix") {
		t.Errorf("imatrix type: %v", err)
	}
	_, q8, _ := tinyModels(t)
	out := filepath.Join(dir, "re.gguf")
	if err := Quantize(q8, out, "q4_0", QuantizeOptions{}); err == nil || !strings.Contains(err.Error(), "allow-requantize") {
		t.Errorf("requantize: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("failed quantize left its output behind")
	}
	m, err := loadFile(f16, allOnGPU)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.NewContext(ContextOptions{Shape: point.Shape{NBatch: 32, NUBatch: 32, Threads: 1, TypeV: "q4_0"}, NCtx: 64, NSeqMax: 1, FlashAttn: point.FlashOff}); err == nil || !strings.Contains(err.Error(), "flash attention") {
		t.Errorf("quantized V without flash attention: %v", err)
	}
	if _, err := m.NewContext(ContextOptions{Shape: point.Shape{NBatch: 32, NUBatch: 32, Threads: 1, TypeK: "q3_k"}, NCtx: 64, NSeqMax: 1}); err == nil || !strings.Contains(err.Error(), "KV cache type") {
		t.Errorf("bad KV type: %v", err)
	}
}

func TestDevicesAndFeatures(t *testing.T) {
	devs := Devices()
	if len(devs) == 0 || devs[0].Type != "cpu" {
		t.Fatalf("devices %+v: want the CPU first", devs)
	}
	if !strings.Contains(SystemInfo(), "CPU") {
		t.Errorf("system info %q does not describe the CPU backend", SystemInfo())
	}
	if CPUFeatures() == "" {
		t.Error("empty CPU feature string")
	}
}

func TestGenerateTimesEachStep(t *testing.T) {
	f16, _, _ := tinyModels(t)
	m, err := loadFile(f16, allOnGPU)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c, err := m.NewContext(ContextOptions{Shape: point.Shape{NBatch: 64, NUBatch: 64, Threads: 2}, NCtx: 64, NSeqMax: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ends := make([]int64, 17)
	if done, err := c.Generate(2, 0, 16, nil, ends); err != nil || done != 16 {
		t.Fatalf("done %d: %v", done, err)
	}
	for i := 1; i < len(ends); i++ {
		if ends[i] <= ends[i-1] {
			t.Fatalf("step %d ends at %d, before %d", i, ends[i], ends[i-1])
		}
	}
	if c.seqPosMax(0) != 15 || c.seqPosMax(1) != 15 {
		t.Errorf("positions held: %d, %d", c.seqPosMax(0), c.seqPosMax(1))
	}
	if _, err := c.Generate(1, 16, 8, nil, ends[:8]); err == nil {
		t.Error("too few timestamps accepted")
	}
	c.Cancel()
	if done, err := c.Generate(1, 16, 4, nil, ends); !errors.Is(err, ErrCanceled) || done != 0 {
		t.Errorf("after Cancel: done %d, %v", done, err)
	}
}

// point refuses more sequences than a context can hold without asking
// llama.cpp: the limits must be the same.
func TestMaxParallelMatchesPoint(t *testing.T) {
	if maxParallelSequences() != point.MaxParallel {
		t.Errorf("llama.cpp holds %d sequences, point.MaxParallel is %d", maxParallelSequences(), point.MaxParallel)
	}
}

// allOnGPU is llama-bench's default: every layer on the GPU where there
// is one, mmap on, layer split.
var allOnGPU = ModelOptions{NGPULayers: -1, Split: point.SplitLayer}

// -nopo: a model loaded with op offload off makes its contexts so, and
// they decode.
func TestNoOpOffload(t *testing.T) {
	_, q8, _ := tinyModels(t)
	for _, off := range []bool{false, true} {
		o := allOnGPU
		o.Placement.NoOpOffload = point.Bit(off)
		m, err := loadFile(q8, o)
		if err != nil {
			t.Fatal(err)
		}
		ctx, err := m.NewContext(ContextOptions{Shape: point.Shape{NBatch: 64, NUBatch: 64, Threads: 2}, NCtx: 128, NSeqMax: 1, FlashAttn: point.FlashOff, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if m.opOffload() == off {
			t.Errorf("no_op_offload %v: op_offload %v", off, m.opOffload())
		}
		if err := ctx.Prefill(1, 32, 0); err != nil {
			t.Errorf("no_op_offload %v: %v", off, err)
		}
		ctx.Close()
		m.Close()
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// loadFile reads a model file's header and loads it, as the executor does.
func loadFile(path string, o ModelOptions) (*Model, error) {
	_, h, err := gguf.Inspect(path)
	if err != nil {
		return nil, err
	}
	return LoadModel(path, h, o)
}

// A file llama.cpp asserts on (two identical tokens), loaded without the
// validator in a child: the child says so in one line and exits, with no
// debugger backtrace or goroutine dump, and isolate reads it as an abort
// with llama.cpp's own message.
func TestAbortIsOneLine(t *testing.T) {
	f16, _, _ := tinyModels(t)
	b, err := os.ReadFile(f16)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("<0x01>"))
	b = append(append(append([]byte(nil), b[:i]...), "<0x00>"...), b[i+6:]...)
	dup := filepath.Join(t.TempDir(), "dup.gguf")
	if err := os.WriteFile(dup, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TB_TEST_CHECK_UNVALIDATED", "1")
	self := isolate.Cmd{Exe: os.Args[0]}
	cmd := self.Command(context.Background(), isolate.CheckCommand, dup)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	want := "tokbench: llama.cpp aborted: llama-vocab.cpp:2089: GGML_ASSERT(id_to_token.size() == token_to_id.size()) failed"
	if cmd.ProcessState.ExitCode() != 134 || len(lines) != 1 || lines[0] != want {
		t.Fatalf("exit %v, stderr:\n%s", err, stderr.String())
	}
	var crash *isolate.CrashError
	if err := self.CheckModel(context.Background(), dup); !errors.As(err, &crash) || !crash.Aborted ||
		!strings.Contains(err.Error(), "llama.cpp aborted while loading "+dup+": llama-vocab.cpp:2089") {
		t.Fatalf("CheckModel: %v", err)
	}
	// The same file, validated, never reaches llama.cpp.
	if err := CheckLoad(dup); err == nil || !strings.Contains(err.Error(), "tokens 3 and 4") {
		t.Fatalf("CheckLoad: %v", err)
	}
}

// llama-bench's method is the default: a context's thread pool lives as
// long as the context, its workers kept between steps, and goes with it;
// point.NoPool attaches none, and llama.cpp's threads of a step end with
// the step.
func TestThreadPoolLivesWithTheContext(t *testing.T) {
	f16, _, _ := tinyModels(t)
	m, err := loadFile(f16, allOnGPU)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tasks := func() int {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Skip("no /proc/self/task")
		}
		return len(ents)
	}
	const threads = 4 // the pool starts threads-1 workers; the caller is the first
	// Built with OpenMP (the default, as llama.cpp's CMake builds), the
	// workers are OpenMP's: made at the first step and kept by libgomp for
	// the process, whatever the pool. Then no context may add any.
	omp := strings.Contains(CPUFeatures(), "OPENMP")
	for _, th := range []point.Threading{{}, {Poll: "0"}, {Poll: point.NoPool}} {
		before := tasks()
		c, err := m.NewContext(ContextOptions{Shape: point.Shape{NBatch: 64, NUBatch: 64, Threads: threads}, NCtx: 64, NSeqMax: 1, Threading: th})
		if err != nil {
			t.Fatal(err)
		}
		ends := make([]int64, 5)
		if _, err := c.Generate(1, 0, 4, nil, ends); err != nil {
			t.Fatal(err)
		}
		during := tasks()
		c.Close()
		after := tasks()
		if omp {
			if after-before > threads {
				t.Errorf("OpenMP: %d threads before, %d after Close: a context left threads behind", before, after)
			}
			continue
		}
		// Go may start a thread of its own meanwhile: one is allowed.
		if th.Pool() && (during-before < threads-1 || after-before > 1) {
			t.Errorf("poll %q: %d threads before, %d after steps, %d after Close: want %d more while the context lives", th.Poll, before, during, after, threads-1)
		}
		if !th.Pool() && during-before > 1 {
			t.Errorf("no pool: %d threads before, %d after steps: a pool was attached", before, during)
		}
	}
}

// A load that failed for want of memory (ulimit -v: std::bad_alloc) says
// so, not "check that the file is complete"; other failures keep their hint.
func TestMemoryHint(t *testing.T) {
	const file = "check that the file is a complete model"
	for msg, want := range map[string]string{
		"load model m.gguf: llama.cpp: llama_model_load: error loading model: std::bad_alloc; failed to load model": "ulimit -v",
		"llama.cpp: mmap failed: Cannot allocate memory":                                                            "ulimit -v",
		"load model m.gguf: llama.cpp: unknown model architecture: 'mamba9'":                                        file,
	} {
		if got := memoryHint(msg, file); !strings.Contains(got, want) {
			t.Errorf("%s: hint %q", msg, got)
		}
	}
}
