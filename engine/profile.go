package engine

/*
#include <stdlib.h>
#include "tb.h"
#include "profile.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/tokbench/tokbench/roofline"
)

// StepProfile is what profiled steps were made of: every node's time,
// and the time outside the nodes (before the first: graph build,
// allocation, inputs; between nodes; after the last: outputs).
type StepProfile struct {
	Steps     int
	StepNs    int64 // all steps, start to end
	BuildNs   int64
	BetweenNs int64
	TailNs    int64
	Nodes     []roofline.Node
	Experts   expertCount
	// Weights are the weights the steps read, where llama.cpp placed
	// them.
	Weights []weightPlace
}

// weightPlace is a weight a step read and the buffer type it is in.
type weightPlace struct {
	Name   string
	Buffer string // buffer type: CPU, CPU_REPACK, CUDA0, Vulkan0, ...
	Bytes  int64
	Expert bool // read through mul_mat_id: experts
}

// ExpertBytesOn sums the experts' bytes by buffer type.
func (sp *StepProfile) ExpertBytesOn() map[string]int64 {
	out := map[string]int64{}
	for _, w := range sp.Weights {
		if w.Expert {
			out[w.Buffer] += w.Bytes
		}
	}
	return out
}

// expertCount is how a mixture of experts routed the profiled steps'
// tokens, read from each layer's top-k node: zero for a dense model.
type expertCount struct {
	Nodes    int64   // layers x steps
	Distinct int64   // distinct experts, summed over the nodes
	Tokens   int64   // tokens, summed over the nodes
	Hits     []int64 // times each expert was chosen, all layers
	// Uniform is the distinct experts even, independent choices of the
	// same tokens would give, summed over the nodes (a prefill's last
	// layer routes only the tokens whose logits are wanted).
	Uniform float64
	// ShortNodes routed fewer tokens than their step's first layer (a
	// prefill's last layer: its outputs alone); ShortDistinct their
	// distinct experts, summed.
	ShortNodes, ShortDistinct int64
}

// Layers are the mean distinct experts of the layers that routed the
// whole step, and of those that routed fewer tokens (0 if none did).
func (x expertCount) Layers() (full, short float64) {
	if n := x.Nodes - x.ShortNodes; n > 0 {
		full = float64(x.Distinct-x.ShortDistinct) / float64(n)
	}
	if x.ShortNodes > 0 {
		short = float64(x.ShortDistinct) / float64(x.ShortNodes)
	}
	return full, short
}

// UniformPerStep is the mean distinct experts even choices would give.
func (x expertCount) UniformPerStep() float64 {
	if x.Nodes == 0 {
		return 0
	}
	return x.Uniform / float64(x.Nodes)
}

// PerStep is the mean distinct experts a layer read in a step.
func (x expertCount) PerStep() float64 {
	if x.Nodes == 0 {
		return 0
	}
	return float64(x.Distinct) / float64(x.Nodes)
}

// HotShare is the most chosen expert's share of all choices (1/n if
// the router spread them evenly).
func (x expertCount) HotShare() float64 {
	var sum, top int64
	for _, h := range x.Hits {
		sum += h
		top = max(top, h)
	}
	if sum == 0 {
		return 0
	}
	return float64(top) / float64(sum)
}

// maxProfiledNodes bounds the nodes one profile keeps (a step of a 80-layer
// model is a few thousand).
const maxProfiledNodes = 1 << 20

// NewProfiledContext is a context whose graph nodes can be observed
// (ProfileSteps, ProfilePrefill): while they are, llama.cpp computes and
// synchronizes node by node, which makes those steps slower than an
// unprofiled context's; its other steps run as an unprofiled context's
// (the callback asks for no node). Its thread pool (newContext's, as for
// every context) is kept across the nodes.
func (md *Model) NewProfiledContext(o ContextOptions) (*Context, error) {
	prof := C.tb_prof_new(maxProfiledNodes, C.int32_t(md.Info.NExpert))
	if prof == nil {
		return nil, fmt.Errorf("profile: out of memory")
	}
	c, err := md.newContext(o, func(p *C.struct_llama_context_params) {
		p.cb_eval = C.ggml_backend_sched_eval_callback(C.tb_prof_cb)
		p.cb_eval_user_data = unsafe.Pointer(prof)
	})
	if err != nil {
		C.tb_prof_free(prof)
		return nil, err
	}
	c.prof = prof
	return c, nil
}

// How steps are observed: every node (a profile), or only what the time
// outside the nodes and a mixture's routing need, at about a step's cost.
const (
	everyNode = 2
	outside   = 1
)

// ProfileSteps runs n decode steps of nSeq sequences from position pos,
// observing every node, and returns their profile.
func (c *Context) ProfileSteps(nSeq, pos, n int) (*StepProfile, error) {
	return c.profile(everyNode, n, func(i int) error { return c.Step(nSeq, pos+i, nil) })
}

// ProfilePrefill prefills nTokens tokens into nSeq sequences from pos,
// observing every node, and returns its profile (one step per ubatch is
// not told apart: Steps is 1).
func (c *Context) ProfilePrefill(nSeq, nTokens, pos int) (*StepProfile, error) {
	return c.profile(everyNode, 1, func(int) error { return c.Prefill(nSeq, nTokens, pos) })
}

// ObserveSteps is ProfileSteps observing only each step's first node, its
// result and a mixture's routing (the rest computed together, as in an
// unobserved step): the time outside the nodes (BuildNs, TailNs), the
// experts routed to and where the weights live, not the nodes' times.
func (c *Context) ObserveSteps(nSeq, pos, n int) (*StepProfile, error) {
	return c.profile(outside, n, func(i int) error { return c.Step(nSeq, pos+i, nil) })
}

// ObservePrefill is ProfilePrefill observed as ObserveSteps observes.
func (c *Context) ObservePrefill(nSeq, nTokens, pos int) (*StepProfile, error) {
	return c.profile(outside, 1, func(int) error { return c.Prefill(nSeq, nTokens, pos) })
}

func (c *Context) profile(mode, n int, step func(i int) error) (*StepProfile, error) {
	if c.prof == nil {
		return nil, fmt.Errorf("profile: the context was not made for profiling")
	}
	p := c.prof
	p.mode, p.results = C.int32_t(mode), 0
	defer func() { p.mode = 0 }()
	p.n, p.build_ns, p.between_ns = 0, 0, 0
	p.moe_nodes, p.moe_distinct, p.moe_tokens, p.moe_uniform = 0, 0, 0, 0
	p.moe_short_nodes, p.moe_short_distinct = 0, 0
	p.n_weights = 0
	hits := unsafe.Slice(p.expert_hits, max(int(p.n_expert), 1))
	clear(hits)
	sp := &StepProfile{Steps: n}
	for i := 0; i < n; i++ {
		t0 := C.tb_prof_mark(p)
		if err := step(i); err != nil {
			return nil, err
		}
		end := C.tb_now_ns()
		sp.TailNs += int64(end - p.last_ns)
		sp.StepNs += int64(end - t0)
	}
	if mode == outside && int(p.results) < n {
		// The step's end was not seen: what came after its last node
		// cannot be told from the nodes computed together before it.
		return nil, fmt.Errorf("observe: %d of %d steps had no result_output node to end them", n-int(p.results), n)
	}
	sp.BuildNs, sp.BetweenNs = int64(p.build_ns), int64(p.between_ns)
	if p.n_expert > 0 {
		sp.Experts = expertCount{Nodes: int64(p.moe_nodes), Distinct: int64(p.moe_distinct), Tokens: int64(p.moe_tokens), Hits: make([]int64, p.n_expert), Uniform: float64(p.moe_uniform),
			ShortNodes: int64(p.moe_short_nodes), ShortDistinct: int64(p.moe_short_distinct)}
		for i, h := range hits {
			sp.Experts.Hits[i] = int64(h)
		}
	}
	for _, w := range unsafe.Slice(p.weights, int(p.n_weights)) {
		sp.Weights = append(sp.Weights, weightPlace{Name: C.GoString(&w.name[0]), Buffer: C.GoString(&w.buft[0]), Bytes: int64(w.bytes), Expert: w.expert != 0})
	}
	nodes := unsafe.Slice(p.nodes, int(p.n))
	sp.Nodes = make([]roofline.Node, len(nodes))
	for i, nt := range nodes {
		sp.Nodes[i] = roofline.Node{Op: C.GoString(&nt.op[0]), Type: C.GoString(&nt._type[0]), Name: C.GoString(&nt.name[0]), Ns: int64(nt.ns)}
	}
	return sp, nil
}

// Elapsed is the profiled steps' mean duration.
func (sp *StepProfile) Elapsed() time.Duration {
	return time.Duration(sp.StepNs / int64(max(sp.Steps, 1)))
}

// Profiled says whether the context observes its nodes.
func (c *Context) Profiled() bool { return c.prof != nil }
