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
	"github.com/tokbench/tokbench/internal/halt"
	"github.com/tokbench/tokbench/internal/preset"
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

// Routers a synthetic mixture of experts can have.
const (
	// RouterRandom has random weights, like every other tensor: how
	// tokens then spread over the experts is measured, not assumed.
	RouterRandom = "random"
	// RouterSame has zero weights: every expert scores alike and every
	// token goes to the same experts, the fewest bytes a step can read.
	RouterSame = "same"
)

// SynthOptions say how to write a synthetic model.
type SynthOptions struct {
	Type     string // file type: f16 (default), q4_0, q4_k_m, ...
	Router   string // a mixture of experts' router: RouterRandom (default) or RouterSame
	Seed     uint64
	Threads  int                     // 0: all cores
	Progress func(done, total int64) // bytes of tensor data written
}

type synthTensor struct {
	name   string
	ne     [3]int64 // ne[1] == 1 for vectors, ne[2] the experts (1 for others)
	typ    C.enum_ggml_type
	norm   bool
	zero   bool // a router that sends every token to the same experts
	offset int64
}

// rows is how many rows of ne[0] the tensor has.
func (t synthTensor) rows() int64 { return t.ne[1] * t.ne[2] }

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
	switch o.Router {
	case "":
		o.Router = RouterRandom
	case RouterRandom, RouterSame:
	default:
		return fmt.Errorf("synth: router %q: use %s or %s", o.Router, RouterRandom, RouterSame)
	}
	name, ft, err := gguf.ParseFileType(o.Type)
	if err != nil {
		return err
	}
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	if _, ok := directTypes[name]; !ok {
		// The F16 intermediate and the quantized file, at the type's
		// usual bits per weight, side by side.
		f16 := synthBytes(s, C.GGML_TYPE_F16)
		if err := checkDisk(path, f16+int64(float64(s.Params())*gguf.ApproxBPW(name)/8), "synth "+s.Name+" "+name); err != nil {
			return err
		}
		tmp, done, err := tempBeside(path)
		if err != nil {
			return fmt.Errorf("synth: %w", err)
		}
		defer done()
		o2 := o
		o2.Type = "f16"
		if err := Synthesize(s, tmp, o2); err != nil {
			return err
		}
		return Quantize(tmp, path, name, QuantizeOptions{Threads: o.Threads})
	}
	base := directTypes[name]
	total := synthBytes(s, base)
	if err := checkDisk(path, total, "synth "+s.Name+" "+name); err != nil {
		return err
	}
	tensors := layout(s, base, o.Router == RouterSame)

	g := C.gguf_init_empty()
	defer C.gguf_free(g)
	setMeta(g, s, ft, o)
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
		switch {
		case t.ne[2] > 1:
			gt = C.ggml_new_tensor_3d(gctx, t.typ, C.int64_t(t.ne[0]), C.int64_t(t.ne[1]), C.int64_t(t.ne[2]))
		case t.ne[1] == 1:
			gt = C.ggml_new_tensor_1d(gctx, t.typ, C.int64_t(t.ne[0]))
		default:
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

	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// Written under a name of this process's own, renamed when whole:
	// two processes making one model never share a file, and a failure
	// or a signal leaves nothing under path.
	part, done, err := tempBeside(path)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	defer done()
	defer halt.AtOnce()()
	f, err := os.OpenFile(part, os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(meta); err != nil {
		return fmt.Errorf("synth: write %s: %w", part, err)
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
	return os.Rename(part, path)
}

// synthBytes is the tensor data of shape s written in type base.
func synthBytes(s preset.Shape, base C.enum_ggml_type) int64 {
	var n int64
	for _, t := range layout(s, base, false) {
		n += int64(C.ggml_row_size(t.typ, C.int64_t(t.ne[0]))) * t.rows()
	}
	return n
}

func layout(s preset.Shape, base C.enum_ggml_type, sameRouter bool) []synthTensor {
	e, v, ff, q, kv := int64(s.NEmbd), int64(s.NVocab), int64(s.NFF), int64(s.NHead*s.HeadDim()), int64(s.NHeadKV*s.HeadDim())
	quantized := C.ggml_is_quantized(base)
	// llama.cpp's quantizer keeps the output projection (or the tied
	// embedding that doubles as it) at Q6_K for every quantized type but
	// Q8_0: sizes then match real files.
	outType := base
	if quantized && base != C.GGML_TYPE_Q8_0 {
		outType = C.GGML_TYPE_Q6_K
	}
	typeFor := func(ne0 int64, t C.enum_ggml_type) C.enum_ggml_type {
		for ne0%int64(C.ggml_blck_size(t)) != 0 {
			fb, ok := fallback[t]
			if !ok {
				fb = C.GGML_TYPE_F16
			}
			t = fb
		}
		return t
	}
	mat := func(name string, ne0, ne1 int64, t C.enum_ggml_type) synthTensor {
		return synthTensor{name: name, ne: [3]int64{ne0, ne1, 1}, typ: typeFor(ne0, t)}
	}
	vecOf := func(name string, n int64) synthTensor {
		return synthTensor{name: name, ne: [3]int64{n, 1, 1}, typ: C.GGML_TYPE_F32, norm: true}
	}
	vec := func(name string) synthTensor { return vecOf(name, e) }
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
			mat(p+"attn_q.weight", e, q, base),
			mat(p+"attn_k.weight", e, kv, base),
			mat(p+"attn_v.weight", e, kv, base),
			mat(p+"attn_output.weight", q, e, base),
			vec(p+"ffn_norm.weight"),
		)
		if s.ArchName() == preset.Qwen3MoE {
			hd := int64(s.HeadDim())
			ts = append(ts, vecOf(p+"attn_q_norm.weight", hd), vecOf(p+"attn_k_norm.weight", hd))
		}
		if !s.MoE() {
			ts = append(ts,
				mat(p+"ffn_gate.weight", e, ff, base),
				mat(p+"ffn_up.weight", e, ff, base),
				mat(p+"ffn_down.weight", ff, e, base),
			)
			continue
		}
		// The experts are 3-D: [in, out, expert]. The router stays F32,
		// as llama.cpp's quantizer leaves it.
		x, fx := int64(s.NExpert), int64(s.ExpertFF())
		exps := func(name string, ne0, ne1 int64) synthTensor {
			return synthTensor{name: p + name, ne: [3]int64{ne0, ne1, x}, typ: typeFor(ne0, base)}
		}
		router := synthTensor{name: p + "ffn_gate_inp.weight", ne: [3]int64{e, x, 1}, typ: C.GGML_TYPE_F32, zero: sameRouter}
		ts = append(ts, router,
			exps("ffn_gate_exps.weight", e, fx),
			exps("ffn_up_exps.weight", e, fx),
			exps("ffn_down_exps.weight", fx, e),
		)
	}
	return ts
}

func setMeta(g *C.struct_gguf_context, s preset.Shape, ft int, o SynthOptions) {
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
	arch := s.ArchName()
	str("general.architecture", arch)
	str("general.name", "tokbench synthetic "+s.Name)
	u32("general.file_type", ft)
	synthetic := fmt.Sprintf("preset=%s seed=%d", s.Name, o.Seed)
	if s.MoE() {
		synthetic += " router=" + o.Router
	}
	str("tokbench.synthetic", synthetic)
	u32(arch+".context_length", s.NCtxTrain)
	u32(arch+".embedding_length", s.NEmbd)
	u32(arch+".block_count", s.NLayer)
	u32(arch+".feed_forward_length", s.NFF)
	u32(arch+".attention.head_count", s.NHead)
	u32(arch+".attention.head_count_kv", s.NHeadKV)
	u32(arch+".rope.dimension_count", s.HeadDim())
	u32(arch+".vocab_size", s.NVocab)
	f32(arch+".attention.layer_norm_rms_epsilon", 1e-5)
	f32(arch+".rope.freq_base", s.RopeBase)
	if s.HeadSize > 0 {
		u32(arch+".attention.key_length", s.HeadDim())
		u32(arch+".attention.value_length", s.HeadDim())
	}
	if s.MoE() {
		u32(arch+".expert_count", s.NExpert)
		u32(arch+".expert_used_count", s.NExpertUsed)
		if arch != preset.Llama {
			u32(arch+".expert_feed_forward_length", s.ExpertFF())
		}
	}
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
	// A chunk is at most the tensor: a small model's buffers are not
	// 4 MiB a tensor and a thread (zeroed by make).
	rowsPer := min(max(1, chunkElems/t.ne[0]), t.rows())
	nChunks := (t.rows() + rowsPer - 1) / rowsPer
	scale := float32(math.Sqrt(3 / float64(t.ne[0])))
	constant := t.norm || t.zero
	switch {
	case t.zero:
		scale = 0
	case t.norm:
		scale = 1
	}
	type buf struct {
		scratch []float32
		out     []byte
	}
	bufs := make([]buf, min(int64(w.threads), nChunks))
	for i := range bufs {
		bufs[i] = buf{make([]float32, rowsPer*t.ne[0]), make([]byte, rowsPer*rowBytes)}
	}
	sizes := make([]int64, w.threads)
	for c0 := int64(0); c0 < nChunks; c0 += int64(len(bufs)) {
		var wg sync.WaitGroup
		n := min(int64(len(bufs)), nChunks-c0)
		for k := int64(0); k < n; k++ {
			wg.Add(1)
			go func(k int64) {
				defer wg.Done()
				c := c0 + k
				rows := min(rowsPer, t.rows()-c*rowsPer)
				seed := w.seed*0x9E3779B97F4A7C15 ^ uint64(idx)<<40 ^ uint64(c)
				b := bufs[k]
				sizes[k] = int64(C.tb_synth_rows(t.typ, C.int64_t(rows), C.int64_t(t.ne[0]), C.uint64_t(seed),
					C.float(scale), C.bool(constant), (*C.float)(unsafe.Pointer(&b.scratch[0])), unsafe.Pointer(&b.out[0])))
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
