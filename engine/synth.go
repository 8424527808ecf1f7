package engine

/*
#include <stdlib.h>
#include "tb.h"
*/
import "C"

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"unsafe"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/preset"
)

// directTypes are file types whose tensors are all one ggml type (norms
// aside), so they are generated straight into that type. Mixtures such as
// q4_k_m go through llama.cpp's quantizer from a temporary F16 file, so
// their per-tensor choices are exactly llama.cpp's.
var directTypes = map[string]C.enum_ggml_type{
	"f32": C.GGML_TYPE_F32, "f16": C.GGML_TYPE_F16, "bf16": C.GGML_TYPE_BF16,
	"q8_0": C.GGML_TYPE_Q8_0, "q4_0": C.GGML_TYPE_Q4_0, "q4_1": C.GGML_TYPE_Q4_1,
	"q5_0": C.GGML_TYPE_Q5_0, "q5_1": C.GGML_TYPE_Q5_1, "q6_k": C.GGML_TYPE_Q6_K,
	"iq4_nl": C.GGML_TYPE_IQ4_NL,
}

// fallback is the type llama.cpp's quantizer uses when a row's width is
// not a multiple of the type's block (k-quants need multiples of 256).
var fallback = map[C.enum_ggml_type]C.enum_ggml_type{
	C.GGML_TYPE_Q6_K: C.GGML_TYPE_Q8_0,
}

// SynthOptions say how to write a synthetic model.
type SynthOptions struct {
	Type     string // file type: f16 (default), q4_0, q4_k_m, ...
	Seed     uint64
	Threads  int                     // 0: all cores
	Progress func(done, total int64) // bytes of tensor data written
}

type synthTensor struct {
	name   string
	ne     [2]int64 // ne[1] == 1 for vectors
	typ    C.enum_ggml_type
	norm   bool
	offset int64
}

// Synthesize writes a llama-architecture GGUF model of the given shape with
// random weights to path. Memory stays at a few rows per thread whatever
// the model's size: the header is written first, then each tensor's rows
// are generated and converted chunk by chunk. The same shape, type and
// seed give the same file.
func Synthesize(s preset.Shape, path string, o SynthOptions) error {
	if err := s.Check(); err != nil {
		return fmt.Errorf("synth %s: %w", s.Name, err)
	}
	if o.Type == "" {
		o.Type = "f16"
	}
	name, ft, err := gguf.ParseFileType(o.Type)
	if err != nil {
		return err
	}
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	if _, ok := directTypes[name]; !ok {
		tmp := path + ".f16.tmp"
		defer os.Remove(tmp)
		o2 := o
		o2.Type = "f16"
		if err := Synthesize(s, tmp, o2); err != nil {
			return err
		}
		return Quantize(tmp, path, name, QuantizeOptions{Threads: o.Threads})
	}
	base := directTypes[name]
	tensors := layout(s, base)

	g := C.gguf_init_empty()
	defer C.gguf_free(g)
	setMeta(g, s, ft, o.Seed)
	gctx := C.ggml_init(C.struct_ggml_init_params{
		mem_size: C.size_t(len(tensors)+1) * C.ggml_tensor_overhead(),
		no_alloc: true,
	})
	if gctx == nil {
		return fmt.Errorf("synth: ggml_init failed")
	}
	defer C.ggml_free(gctx)
	for i := range tensors {
		t := &tensors[i]
		var gt *C.struct_ggml_tensor
		if t.ne[1] == 1 {
			gt = C.ggml_new_tensor_1d(gctx, t.typ, C.int64_t(t.ne[0]))
		} else {
			gt = C.ggml_new_tensor_2d(gctx, t.typ, C.int64_t(t.ne[0]), C.int64_t(t.ne[1]))
		}
		cn := C.CString(t.name)
		C.ggml_set_name(gt, cn)
		C.free(unsafe.Pointer(cn))
		C.gguf_add_tensor(g, gt)
		t.offset = int64(C.gguf_get_tensor_offset(g, C.int64_t(i)))
	}
	meta := make([]byte, int(C.gguf_get_meta_size(g)))
	C.gguf_get_meta_data(g, unsafe.Pointer(&meta[0]))

	part := path + ".part"
	f, err := os.Create(part)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	defer func() {
		f.Close()
		os.Remove(part)
	}()
	if _, err := f.Write(meta); err != nil {
		return fmt.Errorf("synth: write %s: %w", part, err)
	}
	var total int64
	for _, t := range tensors {
		total += int64(C.ggml_row_size(t.typ, C.int64_t(t.ne[0]))) * t.ne[1]
	}
	w := &synthWriter{f: f, dataStart: int64(len(meta)), threads: o.Threads, seed: o.Seed, progress: o.Progress, total: total}
	for i, t := range tensors {
		if err := w.tensor(i, t); err != nil {
			return fmt.Errorf("synth: %s: %w", t.name, err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.Rename(part, path)
}

func layout(s preset.Shape, base C.enum_ggml_type) []synthTensor {
	e, v, ff, kv := int64(s.NEmbd), int64(s.NVocab), int64(s.NFF), int64(s.NHeadKV*s.HeadDim())
	quantized := C.ggml_is_quantized(base)
	// llama.cpp's quantizer keeps the output projection (or the tied
	// embedding that doubles as it) at Q6_K for every quantized type but
	// Q8_0: sizes then match real files.
	outType := base
	if quantized && base != C.GGML_TYPE_Q8_0 {
		outType = C.GGML_TYPE_Q6_K
	}
	mat := func(name string, ne0, ne1 int64, t C.enum_ggml_type) synthTensor {
		for ne0%int64(C.ggml_blck_size(t)) != 0 {
			fb, ok := fallback[t]
			if !ok {
				fb = C.GGML_TYPE_F16
			}
			t = fb
		}
		return synthTensor{name: name, ne: [2]int64{ne0, ne1}, typ: t}
	}
	vec := func(name string) synthTensor {
		return synthTensor{name: name, ne: [2]int64{e, 1}, typ: C.GGML_TYPE_F32, norm: true}
	}
	embType := base
	if s.Tied {
		embType = outType
	}
	ts := []synthTensor{mat("token_embd.weight", e, v, embType), vec("output_norm.weight")}
	if !s.Tied {
		ts = append(ts, mat("output.weight", e, v, outType))
	}
	for l := 0; l < s.NLayer; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			vec(p+"attn_norm.weight"),
			mat(p+"attn_q.weight", e, e, base),
			mat(p+"attn_k.weight", e, kv, base),
			mat(p+"attn_v.weight", e, kv, base),
			mat(p+"attn_output.weight", e, e, base),
			vec(p+"ffn_norm.weight"),
			mat(p+"ffn_gate.weight", e, ff, base),
			mat(p+"ffn_up.weight", e, ff, base),
			mat(p+"ffn_down.weight", ff, e, base),
		)
	}
	return ts
}

func setMeta(g *C.struct_gguf_context, s preset.Shape, ft int, seed uint64) {
	str := func(k, v string) {
		ck, cv := C.CString(k), C.CString(v)
		C.gguf_set_val_str(g, ck, cv)
		C.free(unsafe.Pointer(ck))
		C.free(unsafe.Pointer(cv))
	}
	u32 := func(k string, v int) {
		ck := C.CString(k)
		C.gguf_set_val_u32(g, ck, C.uint32_t(v))
		C.free(unsafe.Pointer(ck))
	}
	f32 := func(k string, v float32) {
		ck := C.CString(k)
		C.gguf_set_val_f32(g, ck, C.float(v))
		C.free(unsafe.Pointer(ck))
	}
	str("general.architecture", "llama")
	str("general.name", "tokbench synthetic "+s.Name)
	u32("general.file_type", ft)
	str("tokbench.synthetic", fmt.Sprintf("preset=%s seed=%d", s.Name, seed))
	u32("llama.context_length", s.NCtxTrain)
	u32("llama.embedding_length", s.NEmbd)
	u32("llama.block_count", s.NLayer)
	u32("llama.feed_forward_length", s.NFF)
	u32("llama.attention.head_count", s.NHead)
	u32("llama.attention.head_count_kv", s.NHeadKV)
	u32("llama.rope.dimension_count", s.HeadDim())
	u32("llama.vocab_size", s.NVocab)
	f32("llama.attention.layer_norm_rms_epsilon", 1e-5)
	f32("llama.rope.freq_base", s.RopeBase)
	str("tokenizer.ggml.model", "llama")
	u32("tokenizer.ggml.unknown_token_id", 0)
	u32("tokenizer.ggml.bos_token_id", 1)
	u32("tokenizer.ggml.eos_token_id", 2)
	C.tb_synth_vocab(g, C.int32_t(s.NVocab))
}

type synthWriter struct {
	f         *os.File
	dataStart int64
	threads   int
	seed      uint64
	progress  func(done, total int64)
	done      int64
	total     int64
}

// chunkElems bounds the floats generated per chunk (4 MiB); the chunking
// depends only on the shape, so the output does not depend on threads.
const chunkElems = 1 << 20

func (w *synthWriter) tensor(idx int, t synthTensor) error {
	if _, err := w.f.Seek(w.dataStart+t.offset, 0); err != nil {
		return err
	}
	rowBytes := int64(C.ggml_row_size(t.typ, C.int64_t(t.ne[0])))
	rowsPer := max(1, chunkElems/t.ne[0])
	nChunks := (t.ne[1] + rowsPer - 1) / rowsPer
	scale := float32(math.Sqrt(3 / float64(t.ne[0])))
	if t.norm {
		scale = 1
	}
	type buf struct {
		scratch []float32
		out     []byte
	}
	bufs := make([]buf, w.threads)
	for i := range bufs {
		bufs[i] = buf{make([]float32, rowsPer*t.ne[0]), make([]byte, rowsPer*rowBytes)}
	}
	sizes := make([]int64, w.threads)
	for c0 := int64(0); c0 < nChunks; c0 += int64(w.threads) {
		var wg sync.WaitGroup
		n := min(int64(w.threads), nChunks-c0)
		for k := int64(0); k < n; k++ {
			wg.Add(1)
			go func(k int64) {
				defer wg.Done()
				c := c0 + k
				rows := min(rowsPer, t.ne[1]-c*rowsPer)
				seed := w.seed*0x9E3779B97F4A7C15 ^ uint64(idx)<<40 ^ uint64(c)
				b := bufs[k]
				sizes[k] = int64(C.tb_synth_rows(t.typ, C.int64_t(rows), C.int64_t(t.ne[0]), C.uint64_t(seed),
					C.float(scale), C.bool(t.norm), (*C.float)(unsafe.Pointer(&b.scratch[0])), unsafe.Pointer(&b.out[0])))
			}(k)
		}
		wg.Wait()
		for k := int64(0); k < n; k++ {
			if _, err := w.f.Write(bufs[k].out[:sizes[k]]); err != nil {
				return err
			}
			w.done += sizes[k]
		}
		if w.progress != nil {
			w.progress(w.done, w.total)
		}
	}
	return nil
}
