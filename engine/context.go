package engine

/*
#include <stdlib.h>
#include "tb.h"
#include "profile.h"
#include "ggml-cpu.h"
*/
import "C"

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/point"
)

// ContextOptions are llama_context_params a benchmark varies.
type ContextOptions struct {
	NCtx int
	// Shape is the batches, the threads and the KV cache's types ("":
	// f16); its layers are the model's, not the context's.
	point.Shape
	NSeqMax   int
	FlashAttn point.FlashAttn
	Seed      uint64 // token generator seed
	// NoKVOffload keeps the KV cache and attention on the CPU (-nkvo);
	// Threading, if custom, runs the CPU threads in a pool of its own.
	NoKVOffload bool
	Threading   point.Threading
}

// Context is a llama.cpp context plus tokbench's batch and token generator.
// It is not safe for concurrent use. Close frees it.
type Context struct {
	c     *C.tb_ctx
	model *Model
	Opts  ContextOptions
	toks  *C.int32_t // sampled tokens carried between steps
	// FlashAttn is whether the context uses flash attention (auto
	// resolved by llama.cpp, which says so only in its log).
	FlashAttn bool
	prof      *C.tb_prof // NewProfiledContext's recording, else nil
	pool      *C.struct_ggml_threadpool
	// closing guards c against Cancel from another goroutine while Close
	// frees it (a Ctrl-C that lands as a context is closed).
	closing sync.Mutex
}

// NewContext creates a context for the model.
func (md *Model) NewContext(o ContextOptions) (*Context, error) { return md.newContext(o, nil) }

// opOffload is llama.cpp's op_offload of the model's contexts: a switch
// of its placement (-nopo) that llama.cpp reads per context.
func (md *Model) opOffload() bool { return !bool(md.switches.NoOpOffload) }

// newContext creates a context; set, if not nil, changes its parameters
// last.
func (md *Model) newContext(o ContextOptions, set func(*C.struct_llama_context_params)) (*Context, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	p := C.llama_context_default_params()
	p.n_ctx = C.uint32_t(o.NCtx)
	p.n_batch = C.uint32_t(o.NBatch)
	p.n_ubatch = C.uint32_t(o.NUBatch)
	p.n_seq_max = C.uint32_t(o.NSeqMax)
	p.n_threads = C.int32_t(o.Threads)
	p.n_threads_batch = C.int32_t(o.Threads)
	p.flash_attn_type = C.enum_llama_flash_attn_type(o.FlashAttn)
	p.type_k = ggmlType(o.TypeK)
	p.type_v = ggmlType(o.TypeV)
	p.no_perf = true
	// One KV buffer shared by all sequences, as a server with continuous
	// batching uses it: n_ctx cells in all, not per sequence.
	p.kv_unified = true
	p.offload_kqv = C.bool(!o.NoKVOffload)
	p.op_offload = C.bool(md.opOffload())
	if set != nil {
		set(&p)
	}
	pool, err := threadpool(o.Threads, o.Threading)
	if err != nil {
		return nil, err
	}
	clearError()
	c := C.tb_ctx_new(md.m, p, C.uint64_t(o.Seed))
	if c == nil {
		if pool != nil {
			C.ggml_threadpool_free(pool)
		}
		return nil, cerr("create context", "lower -p/-n/-d, the batch size or --parallel, or free memory")
	}
	if pool != nil {
		C.llama_attach_threadpool(c.ctx, pool, pool)
	}
	fa := o.FlashAttn == point.FlashOn || (o.FlashAttn == point.FlashAuto && !strings.Contains(lastError(), "Flash Attention was auto, set to disabled"))
	ctx := &Context{c: c, model: md, Opts: o, FlashAttn: fa, pool: pool}
	ctx.toks = (*C.int32_t)(C.calloc(C.size_t(o.NSeqMax), 4))
	return ctx, nil
}

// ggmlType is a KV cache type's ggml type (F16 when unset).
func ggmlType(name string) C.enum_ggml_type {
	t, _ := gguf.ParseType(cmp.Or(strings.ToLower(name), "f16"))
	return C.enum_ggml_type(t)
}

func (o ContextOptions) check() error {
	switch {
	case o.NCtx <= 0:
		return fmt.Errorf("context size %d: must be positive", o.NCtx)
	case o.NBatch <= 0 || o.NUBatch <= 0:
		return fmt.Errorf("batch %d / ubatch %d: both must be positive", o.NBatch, o.NUBatch)
	case o.NSeqMax <= 0 || o.NSeqMax > maxParallelSequences():
		return fmt.Errorf("parallel sequences %d: must be 1 to %d", o.NSeqMax, maxParallelSequences())
	case o.Threads <= 0:
		return fmt.Errorf("threads %d: must be positive", o.Threads)
	}
	return point.CheckCache(cmp.Or(o.TypeK, "f16"), cmp.Or(o.TypeV, "f16"), o.FlashAttn)
}

// SetStepDelay makes every decode step take d longer: a slow decode loop,
// made on purpose to test that the decomposition finds it.
func (c *Context) SetStepDelay(d time.Duration) { c.c.step_delay_ns = C.int64_t(d) }

// Idle puts the context's pool threads to sleep now rather than after
// their spin (poll 50 spins some 6.5 million rounds, a tenth of a second
// or more): other work run beside an idle context (the kernels timed
// alone, another context) would otherwise share its cores with them. The
// next step wakes them (ggml resumes a paused pool).
func (c *Context) Idle() {
	if c.pool != nil {
		C.ggml_threadpool_pause(c.pool)
	}
}

// Close frees the context.
func (c *Context) Close() {
	if c == nil {
		return
	}
	c.closing.Lock()
	defer c.closing.Unlock()
	if c.c != nil {
		C.tb_ctx_free(c.c)
		if c.pool != nil {
			C.ggml_threadpool_free(c.pool) // after the context that ran on it
		}
		C.free(unsafe.Pointer(c.toks))
		C.tb_prof_free(c.prof)
		c.c, c.prof, c.pool = nil, nil, nil
	}
}

// ErrCanceled is returned by a primitive interrupted by Cancel.
var ErrCanceled = errors.New("canceled")

// ErrDeadline is returned by a primitive interrupted by the deadline.
var ErrDeadline = errors.New("time limit for the point reached")

func (c *Context) decodeErr(what string, rc C.int) error {
	switch rc {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s: no room in the KV cache (context of %d cells is too small for this batch): raise the context or lower the batch", what, c.Opts.NCtx)
	case 2:
		if c.c.cancel != 0 {
			return ErrCanceled
		}
		return ErrDeadline
	case -1:
		return cerr(what+": invalid batch", "")
	}
	return cerr(fmt.Sprintf("%s: llama_decode returned %d", what, int(rc)), "out of memory on the device? lower the batch or context")
}

// Prefill decodes nTokens random tokens (BOS first at position 0) into each
// of the first nSeq sequences from position pos, in chunks of the context's
// batch size, and synchronizes once at the end.
func (c *Context) Prefill(nSeq, nTokens, pos int) error {
	if nTokens <= 0 {
		return nil
	}
	rc := C.tb_prefill(c.c, C.int32_t(nSeq), C.int32_t(nTokens), C.int32_t(pos), C.int32_t(c.Opts.NBatch), C.int32_t(c.model.bos()))
	return c.decodeErr("prefill", rc)
}

// Step decodes one token for each of the first nSeq sequences at position
// pos and synchronizes. With a sampler set, the tokens are the ones it
// picked after the previous step; otherwise random (no sampling cost, as
// llama-bench).
func (c *Context) Step(nSeq, pos int, s *SamplerSet) error {
	var rc C.int
	if s != nil {
		if len(s.chains) < nSeq {
			return fmt.Errorf("decode: %d sequences but %d sampler chains", nSeq, len(s.chains))
		}
		rc = C.tb_step(c.c, C.int32_t(nSeq), C.int32_t(pos), &s.chains[0], c.toks)
	} else {
		rc = C.tb_step(c.c, C.int32_t(nSeq), C.int32_t(pos), nil, nil)
	}
	return c.decodeErr("decode", rc)
}

// Generate runs n Steps from position pos in one call into llama.cpp (a
// call per token would wake Go's runtime monitor, whose wake-ups take CPU
// from the decode threads on a small machine) and fills ends with the
// start (ends[0]) and the end of each step, in nanoseconds of a monotonic
// clock; len(ends) must be at least n+1. On an error, done steps finished.
func (c *Context) Generate(nSeq, pos, n int, s *SamplerSet, ends []int64) (done int, err error) {
	if len(ends) < n+1 {
		return 0, fmt.Errorf("generate: %d timestamps for %d steps", len(ends), n)
	}
	if n == 0 {
		return 0, nil
	}
	var chains **C.struct_llama_sampler
	var toks *C.int32_t
	if s != nil {
		if len(s.chains) < nSeq {
			return 0, fmt.Errorf("decode: %d sequences but %d sampler chains", nSeq, len(s.chains))
		}
		chains, toks = &s.chains[0], c.toks
	}
	var d C.int32_t
	rc := C.tb_generate(c.c, C.int32_t(nSeq), C.int32_t(pos), C.int32_t(n), chains, toks, (*C.int64_t)(unsafe.Pointer(&ends[0])), &d)
	return int(d), c.decodeErr("decode", rc)
}

// SeedTokens sets the tokens the next sampled Step starts from.
func (c *Context) SeedTokens(nSeq int) {
	toks := unsafe.Slice(c.toks, c.Opts.NSeqMax)
	for i := 0; i < nSeq && i < len(toks); i++ {
		toks[i] = C.int32_t(c.model.bos() + 3 + i)
	}
}

// Trim removes every sequence's tokens at positions >= pos, keeping the
// KV cache below it (how a sweep reuses a filled depth).
func (c *Context) Trim(pos int) error {
	mem := C.llama_get_memory(c.c.ctx)
	if !C.llama_memory_seq_rm(mem, -1, C.llama_pos(pos), -1) {
		return fmt.Errorf("trim KV cache to %d: this model's memory cannot remove a partial sequence", pos)
	}
	return nil
}

// Clear empties the KV cache.
func (c *Context) Clear() {
	C.llama_memory_clear(C.llama_get_memory(c.c.ctx), true)
}

// seqPosMax is the last position held for a sequence, -1 if empty.
func (c *Context) seqPosMax(seq int) int {
	return int(C.llama_memory_seq_pos_max(C.llama_get_memory(c.c.ctx), C.llama_seq_id(seq)))
}

// Cancel makes the running and every later primitive stop with
// ErrCanceled. Safe to call from another goroutine, even as or after the
// context is closed.
func (c *Context) Cancel() {
	c.closing.Lock()
	defer c.closing.Unlock()
	if c.c != nil {
		C.tb_ctx_cancel(c.c)
	}
}

// SetDeadline makes primitives running past t stop with ErrDeadline; the
// zero time removes the deadline. The check runs inside llama.cpp's graph
// computation, so a long prefill stops too.
func (c *Context) SetDeadline(t time.Time) {
	var us int64
	if !t.IsZero() {
		us = int64(C.ggml_time_us()) + time.Until(t).Microseconds()
		if us <= 0 {
			us = 1
		}
	}
	C.tb_ctx_set_deadline(c.c, C.int64_t(us))
}

// sampledTokens returns the tokens the samplers picked in the last Step.
func (c *Context) sampledTokens(nSeq int) []int {
	toks := unsafe.Slice(c.toks, c.Opts.NSeqMax)
	out := make([]int, min(nSeq, len(toks)))
	for i := range out {
		out[i] = int(toks[i])
	}
	return out
}

// BatchCapacity is how many tokens one Decode can carry.
func (c *Context) BatchCapacity() int { return int(c.c.n_batch_alloc) }

// Add queues n random tokens of sequence seq from position pos for the
// next Decode (the last one gets logits, as a server samples from it):
// a prefill chunk, or n=1 for a decode step. Tokens of several sequences
// share one Decode, as in a server's continuous batching.
func (c *Context) Add(seq, pos, n int) error {
	if C.tb_batch_add(c.c, C.int32_t(seq), C.int32_t(pos), C.int32_t(n), C.int32_t(c.model.bos())) != 0 {
		return fmt.Errorf("batch: %d more tokens exceed the batch of %d", n, c.BatchCapacity())
	}
	return nil
}

// Decode decodes the queued tokens in one llama_decode and synchronizes.
func (c *Context) Decode() error {
	return c.decodeErr("decode batch", C.tb_batch_decode(c.c))
}

// Remove drops a sequence from the KV cache (a finished request).
func (c *Context) Remove(seq int) {
	C.llama_memory_seq_rm(C.llama_get_memory(c.c.ctx), C.llama_seq_id(seq), -1, -1)
}

// point's settings carry llama.cpp's enum values: an index out
// of range here (a compile error) means they no longer match.
var (
	_ = [1]int{}[int(point.FlashAuto)-int(C.LLAMA_FLASH_ATTN_TYPE_AUTO)]
	_ = [1]int{}[int(point.FlashOff)-int(C.LLAMA_FLASH_ATTN_TYPE_DISABLED)]
	_ = [1]int{}[int(point.FlashOn)-int(C.LLAMA_FLASH_ATTN_TYPE_ENABLED)]
	_ = [1]int{}[int(point.SplitNone)-int(C.LLAMA_SPLIT_MODE_NONE)]
	_ = [1]int{}[int(point.SplitLayer)-int(C.LLAMA_SPLIT_MODE_LAYER)]
	_ = [1]int{}[int(point.SplitRow)-int(C.LLAMA_SPLIT_MODE_ROW)]
)
