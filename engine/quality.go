package engine

/*
#include <stdlib.h>
#include "quality.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/tokbench/tokbench/gguf"
)

// LoadVocab loads only a model's vocabulary, no weights: enough to
// tokenize a text. Its Info has only the path and the vocabulary size.
func LoadVocab(path string) (*Model, error) {
	if _, _, err := gguf.Inspect(path); err != nil {
		return nil, err
	}
	p := C.llama_model_default_params()
	p.vocab_only = true
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	clearError()
	m := C.llama_model_load_from_file(cpath, p)
	if m == nil {
		return nil, cerr("load the vocabulary of "+path, "check that the file is a complete model")
	}
	return &Model{m: m, Info: Info{Path: path, NVocab: int(C.llama_vocab_n_tokens(C.llama_model_get_vocab(m)))}}, nil
}

// Tokenize turns text into the model's tokens with llama.cpp's tokenizer,
// without BOS or other added tokens (the caller places them).
func (md *Model) Tokenize(text string) ([]int32, error) {
	if text == "" {
		return nil, nil
	}
	vocab := C.llama_model_get_vocab(md.m)
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	// Most texts need fewer tokens than bytes; llama.cpp says how many
	// when they need more (byte pieces of a space-prefixed word).
	n := len(text) + 16
	for {
		buf := (*C.llama_token)(C.malloc(C.size_t(n) * 4))
		got := C.llama_tokenize(vocab, ctext, C.int32_t(len(text)), buf, C.int32_t(n), false, false)
		if got >= 0 {
			out := make([]int32, got)
			for i, t := range unsafe.Slice(buf, int(got)) {
				out[i] = int32(t)
			}
			C.free(unsafe.Pointer(buf))
			return out, nil
		}
		C.free(unsafe.Pointer(buf))
		if int(-got) <= n {
			return nil, fmt.Errorf("tokenize: %d bytes of text: llama.cpp failed (%d)", len(text), got)
		}
		n = int(-got)
	}
}

// Rows are a chunk's scored rows, in C memory that EvalChunk fills: the
// base's most probable tokens per row (the fewest that leave at most Tail
// of the probability out, at most k), or a comparison with them. Free
// releases them.
type Rows struct {
	q    *C.tb_qrows
	n, k int
	// Slices over the C memory, valid until Free.
	N       []int32   // n: base tokens kept in each row
	IDs     []int32   // n*K: each row's most probable tokens under the base
	LogP    []float32 // n*K: their log-probabilities
	Tail    []float64 // n: the base's probability outside the kept tokens
	LogNext []float32 // n: log-probability of the token that follows
	KLD     []float64 // n: KL(base || model), compare mode
	Top     []int8    // n: 1 where both models' most probable tokens agree
	DP      []float32 // n: change of the base's top token's probability
}

// NewRows allocates n rows of at most k base tokens leaving out at most
// tail of the probability, for comparing when compare is set (else for a
// base).
func NewRows(n, k int, tail float64, compare bool) *Rows {
	q := (*C.tb_qrows)(C.calloc(1, C.size_t(unsafe.Sizeof(C.tb_qrows{}))))
	q.k, q.tail = C.int32_t(k), C.float(tail)
	alloc := func(count, size int) unsafe.Pointer { return C.calloc(C.size_t(max(count, 1)), C.size_t(size)) }
	q.n = (*C.int32_t)(alloc(n, 4))
	q.ids = (*C.int32_t)(alloc(n*k, 4))
	q.lps = (*C.float)(alloc(n*k, 4))
	q.tail_p = (*C.double)(alloc(n, 8))
	q.lp_next = (*C.float)(alloc(n, 4))
	r := &Rows{q: q, n: n, k: k}
	r.N = unsafe.Slice((*int32)(unsafe.Pointer(q.n)), n)
	r.IDs = unsafe.Slice((*int32)(unsafe.Pointer(q.ids)), n*k)
	r.LogP = unsafe.Slice((*float32)(unsafe.Pointer(q.lps)), n*k)
	r.Tail = unsafe.Slice((*float64)(unsafe.Pointer(q.tail_p)), n)
	r.LogNext = unsafe.Slice((*float32)(unsafe.Pointer(q.lp_next)), n)
	if compare {
		q.kld = (*C.double)(alloc(n, 8))
		q.top = (*C.int8_t)(alloc(n, 1))
		q.dp = (*C.float)(alloc(n, 4))
		r.KLD = unsafe.Slice((*float64)(unsafe.Pointer(q.kld)), n)
		r.Top = unsafe.Slice((*int8)(unsafe.Pointer(q.top)), n)
		r.DP = unsafe.Slice((*float32)(unsafe.Pointer(q.dp)), n)
	}
	return r
}

// K is the base tokens kept per row.
func (r *Rows) K() int { return r.k }

// Len is the number of rows.
func (r *Rows) Len() int { return r.n }

// DecodeTime is the time spent in llama_decode (and synchronize) by the
// EvalChunk calls that filled these rows, all together.
func (r *Rows) DecodeTime() time.Duration { return time.Duration(r.q.decode_ns) }

// Free releases the rows' memory.
func (r *Rows) Free() {
	if r == nil || r.q == nil {
		return
	}
	for _, p := range []unsafe.Pointer{unsafe.Pointer(r.q.n), unsafe.Pointer(r.q.ids), unsafe.Pointer(r.q.lps), unsafe.Pointer(r.q.tail_p), unsafe.Pointer(r.q.lp_next),
		unsafe.Pointer(r.q.kld), unsafe.Pointer(r.q.top), unsafe.Pointer(r.q.dp), unsafe.Pointer(r.q)} {
		C.free(p)
	}
	r.q = nil
	r.N, r.IDs, r.LogP, r.Tail, r.LogNext, r.KLD, r.Top, r.DP = nil, nil, nil, nil, nil, nil, nil, nil
}

// EvalChunk decodes tokens (a fresh sequence from position 0, in pieces of
// the context's batch) and fills rows for positions first .. len-2, each
// predicting the token after it: the base's top tokens, or (rows made for
// comparing, their IDs and LogP holding the base's) this model's
// divergence from them.
func (c *Context) EvalChunk(tokens []int32, first int, rows *Rows) error {
	n := len(tokens)
	if first < 0 || n-1-first != rows.n {
		return fmt.Errorf("evaluate: %d tokens scored from %d do not fill %d rows", n, first, rows.n)
	}
	if n > c.Opts.NCtx {
		return fmt.Errorf("evaluate: a chunk of %d tokens exceeds the context of %d", n, c.Opts.NCtx)
	}
	if rows.KLD != nil {
		for r, k := range rows.N {
			if k < 1 || int(k) > rows.k {
				return fmt.Errorf("evaluate: row %d keeps %d base tokens, not 1 to %d", r, k, rows.k)
			}
			for _, id := range rows.IDs[r*rows.k : r*rows.k+int(k)] {
				if id < 0 || int(id) >= c.model.Info.NVocab {
					return fmt.Errorf("evaluate: base token %d is outside the vocabulary of %d", id, c.model.Info.NVocab)
				}
			}
		}
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= c.model.Info.NVocab {
			return fmt.Errorf("evaluate: token %d at %d is outside the vocabulary of %d", t, i, c.model.Info.NVocab)
		}
	}
	ct := (*C.int32_t)(C.malloc(C.size_t(n) * 4))
	defer C.free(unsafe.Pointer(ct))
	copy(unsafe.Slice((*int32)(unsafe.Pointer(ct)), n), tokens)
	rc := C.tb_eval_chunk(c.c, ct, C.int32_t(n), C.int32_t(first), C.int32_t(c.Opts.NBatch), rows.q)
	return c.decodeErr("evaluate", rc)
}
