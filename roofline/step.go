package roofline

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tokbench/tokbench/gguf"
)

// OpKind is a kind of op a transformer step runs (engine/ops.h mirrors it).
type OpKind int

// The op kinds. A..D are the shape; N the step's tokens.
const (
	OpMatMul  OpKind = iota // weight [A=k, B=m] of Type times [k, N]
	OpGetRows               // N rows of a table [A, B] of Type
	OpAttn                  // N queries over C cached tokens: head size A, B heads, D KV heads; K Type, V Type2
	OpFlash                 // the same through flash attention
	OpKVStore               // N rows of width A into a cache of Type
	OpNorm                  // rms_norm of [A, N] times a weight
	OpRope                  // rope of [A=head size, B=heads, N]
	OpGLU                   // swiglu of [A, N]
	OpAdd                   // residual add of [A, N]
	// OpMatMulID is a mixture's experts: weights [A=k, B=m] of Type, E of
	// them read, times N tokens' inputs of C rows each (1: the same row
	// for every expert, D: one per expert), each token through D experts.
	OpMatMulID
	// OpRoute is a mixture's routing in a layer: softmax over A experts,
	// each of N tokens' top D, and its D experts' outputs (B wide)
	// weighted and summed.
	OpRoute
)

// Op is one op of a step at a model's shapes, run Count times per step
// (once per layer, ...), with the bytes it moves and the FLOPs it
// computes over all Count.
type Op struct {
	Name  string  `json:"name"`
	Kind  OpKind  `json:"kind"`
	Type  string  `json:"type,omitempty"`
	Type2 string  `json:"type2,omitempty"`
	A     int64   `json:"a"`
	B     int64   `json:"b,omitempty"`
	C     int64   `json:"c,omitempty"`
	D     int64   `json:"d,omitempty"`
	E     int64   `json:"e,omitempty"`
	N     int64   `json:"n"`
	Count int     `json:"count"`
	Bytes float64 `json:"bytes"`
	Flops float64 `json:"flops"`
}

// Tensor is one weight of a model: its name, ggml type and dimensions.
type Tensor struct {
	Name string
	Type string
	Dims []int64
}

// Shape is what a step's ops depend on: the model's weights and
// dimensions, and the KV cache's settings.
type Shape struct {
	Tensors            []Tensor
	NLayer, NEmbd, NFF int64
	NHead, NHeadKV     int64
	HeadK, HeadV       int64 // per-head K and V sizes
	TypeK, TypeV       string
	FlashAttn          bool
	// A mixture of experts: experts used per token, and the distinct
	// experts a layer's step reads (measured, else expected); its
	// experts are the 3-D tensors.
	NExpertUsed    int64
	ExpertsPerStep float64
	// ExpertsLastLayer is what a prefill step's last layer reads: it
	// routes only the tokens whose logits are wanted (0: as the others).
	ExpertsLastLayer float64
}

// StepOps lists the ops of one step that processes tokens tokens (one per
// sequence when decoding, a ubatch when prefilling) at a KV context of
// ctx tokens, producing logits for outputs of them. Weights of the same
// type and shape (a layer's q and o, every layer's ffn_up) are one op.
func StepOps(s Shape, tokens, ctx, outputs int64) []Op {
	var ops []Op
	type key struct {
		typ    string
		k, m   int64
		expert bool
		down   bool // an expert's input is its own row, not the token's
	}
	groups := map[key]*Op{}
	var order []key
	roles := map[key][]string{}
	var embd, out *Tensor
	ffExp, nExpert := int64(0), int64(0)
	k := max(s.NExpertUsed, 1)
	for i := range s.Tensors {
		t := &s.Tensors[i]
		matrix := len(t.Dims) == 2 || len(t.Dims) == 3 && t.Dims[2] > 1
		switch {
		case t.Name == "token_embd.weight":
			embd = t
		case t.Name == "output.weight":
			out = t
		case matrix && strings.HasPrefix(t.Name, "blk."):
			role := strings.TrimSuffix(t.Name[strings.Index(t.Name[4:], ".")+5:], ".weight")
			g := key{typ: t.Type, k: t.Dims[0], m: t.Dims[1], expert: len(t.Dims) == 3, down: strings.Contains(role, "down")}
			if groups[g] == nil {
				groups[g] = &Op{Kind: OpMatMul, Type: t.Type, A: g.k, B: g.m, N: tokens}
				if g.expert {
					groups[g].Kind, groups[g].C, groups[g].D, groups[g].E = OpMatMulID, 1, k, experts(s.ExpertsPerStep, k, t.Dims[2], tokens)
					if g.down {
						groups[g].C = k
					} else {
						ffExp = g.m
					}
					nExpert = t.Dims[2]
				}
				order = append(order, g)
			}
			groups[g].Count++
			if !slices.Contains(roles[g], role) {
				roles[g] = append(roles[g], role)
			}
		}
	}
	// The ops of the feed-forward side of a layer, and how many of each
	// a layer has: a prefill's last layer runs them on its outputs alone.
	ffn := map[int]int64{}
	L := int(s.NLayer)
	for _, g := range order {
		op := groups[g]
		op.Name = fmt.Sprintf("mul_mat %s %dx%d (%s)", op.Type, op.A, op.B, strings.Join(roles[g], ","))
		if op.Kind == OpMatMulID {
			op.Name = fmt.Sprintf("mul_mat_id %s %dx%d, %d experts read, %d per token (%s)", op.Type, op.A, op.B, op.E, op.D, strings.Join(roles[g], ","))
		}
		if ffnRoles(roles[g]) && L > 0 {
			ffn[len(ops)] = int64(op.Count / L)
		}
		ops = append(ops, *op)
	}
	if embd != nil {
		ops = append(ops, Op{Name: "get_rows " + embd.Type + " (token_embd)", Kind: OpGetRows, Type: embd.Type, A: embd.Dims[0], B: embd.Dims[1], N: tokens, Count: 1})
		if out == nil {
			out = embd // tied: the embedding is the output projection
		}
	}
	if out != nil && outputs > 0 {
		ops = append(ops, Op{Name: fmt.Sprintf("mul_mat %s %dx%d (output)", out.Type, out.Dims[0], out.Dims[1]), Kind: OpMatMul, Type: out.Type,
			A: out.Dims[0], B: out.Dims[1], N: outputs, Count: 1})
	}
	attn := Op{Name: fmt.Sprintf("attention %s/%s over %d", s.TypeK, s.TypeV, ctx), Kind: OpAttn, Type: s.TypeK, Type2: s.TypeV,
		A: s.HeadK, B: s.NHead, C: max(ctx, 1), D: s.NHeadKV, N: tokens, Count: L}
	if s.FlashAttn {
		attn.Kind, attn.Name = OpFlash, "flash_attn "+attn.Name[len("attention "):]
	}
	ops = append(ops, attn,
		Op{Name: "kv store K " + s.TypeK, Kind: OpKVStore, Type: s.TypeK, A: s.NHeadKV * s.HeadK, N: tokens, Count: L},
		Op{Name: "kv store V " + s.TypeV, Kind: OpKVStore, Type: s.TypeV, A: s.NHeadKV * s.HeadV, N: tokens, Count: L},
		Op{Name: "rope Q", Kind: OpRope, A: s.HeadK, B: s.NHead, N: tokens, Count: L},
		Op{Name: "rope K", Kind: OpRope, A: s.HeadK, B: s.NHeadKV, N: tokens, Count: L},
	)
	// The last layer's ffn_norm and the output norm; its two residual adds.
	ffn[len(ops)], ffn[len(ops)+1], ffn[len(ops)+2] = 2, 1, 2
	ops = append(ops,
		Op{Name: "rms_norm", Kind: OpNorm, A: s.NEmbd, N: tokens, Count: 2*L + 1},
		glu(s.NFF, ffExp, k, tokens, L),
		Op{Name: "add", Kind: OpAdd, A: s.NEmbd, N: tokens, Count: 2 * L},
	)
	if nExpert > 0 {
		ffn[len(ops)] = 1
		ops = append(ops, Op{Name: fmt.Sprintf("moe routing (top %d of %d)", k, nExpert), Kind: OpRoute, A: nExpert, B: s.NEmbd, D: k, N: tokens, Count: L})
	}
	if outputs < tokens && L > 0 {
		ops = lastLayer(ops, ffn, s, tokens, outputs, k, nExpert)
	}
	for i := range ops {
		ops[i].Bytes, ops[i].Flops = ops[i].Cost()
	}
	return ops
}

// ffnRoles says whether a layer's weights are of its feed-forward side
// (ffn_gate, ffn_up, ffn_down, the router and the experts).
func ffnRoles(roles []string) bool {
	for _, r := range roles {
		if !strings.HasPrefix(r, "ffn_") {
			return false
		}
	}
	return true
}

// experts is the whole number of distinct experts an op reads: the
// measured or expected count, between the k a token uses and all n, and
// at most the tokens' k each.
func experts(perStep float64, k, n, tokens int64) int64 {
	return min(max(int64(math.Round(perStep)), k), n, tokens*k)
}

// lastLayer moves a prefill's last layer's feed-forward ops (ffn: how
// many of each op are the last layer's) onto its outputs: llama.cpp keeps
// only the rows whose logits are wanted after the last attention.
func lastLayer(ops []Op, ffn map[int]int64, s Shape, tokens, outputs, k, nExpert int64) []Op {
	var last []Op
	for i := range ops {
		n := ffn[i]
		if n == 0 {
			continue
		}
		o := ops[i]
		o.Count, o.N = int(n), outputs*(o.N/tokens) // a mixture's swiglu: each token's k experts

		if o.Kind == OpMatMulID {
			e := s.ExpertsLastLayer
			if e == 0 {
				e = s.ExpertsPerStep
			}
			o.E = experts(e, k, nExpert, outputs)
			o.Name = fmt.Sprintf("mul_mat_id %s %dx%d, %d experts read, %d per token%s", o.Type, o.A, o.B, o.E, o.D, o.Name[strings.Index(o.Name, " ("):])
		}
		o.Name += fmt.Sprintf(" [last layer: %d outputs]", outputs)
		ops[i].Count -= int(n)
		last = append(last, o)
	}
	ops = append(ops, last...)
	return slices.DeleteFunc(ops, func(o Op) bool { return o.Count <= 0 })
}

// glu is a layer's swiglu: over the dense feed-forward width, or over
// each token's k experts (ffExp wide) in a mixture.
func glu(nff, ffExp, k, tokens int64, layers int) Op {
	if ffExp > 0 {
		return Op{Name: fmt.Sprintf("swiglu (%d experts per token)", k), Kind: OpGLU, A: ffExp, N: tokens * k, Count: layers}
	}
	return Op{Name: "swiglu", Kind: OpGLU, A: nff, N: tokens, Count: layers}
}

// rowBytes is the size of n elements of a ggml type (F32 if unknown).
func rowBytes(typ string, n int64) float64 {
	if t, ok := gguf.ParseType(typ); ok && n%t.BlockSize() == 0 {
		return float64(t.RowSize(n))
	}
	return 4 * float64(n)
}

// cost is what the op moves and computes over its Count: the bytes of
// its operands and results (weights and caches in their types,
// activations F32) and its multiply-adds (2 FLOPs each).
func (o Op) Cost() (bytes, flops float64) {
	n, a, b, c, d := float64(o.N), float64(o.A), float64(o.B), float64(o.C), float64(o.D)
	switch o.Kind {
	case OpMatMul:
		bytes = float64(o.B)*rowBytes(o.Type, o.A) + 4*n*(a+b)
		flops = 2 * a * b * n
	case OpMatMulID:
		// The experts read, whole; each token's input rows and its
		// outputs, one per expert it uses.
		bytes = float64(o.E)*b*rowBytes(o.Type, o.A) + 4*n*(c*a+d*b)
		flops = 2 * a * b * n * d
	case OpRoute:
		// The router's logits in, probabilities out and read again; the
		// experts' outputs read, weighted and summed.
		bytes, flops = 4*n*(3*a+2*d*b+b), n*(5*a+3*d*b)
	case OpGetRows:
		bytes = n * (rowBytes(o.Type, o.A) + 4*a)
	case OpAttn, OpFlash:
		// The K and V caches of the context, per KV head; Q in, out.
		bytes = c*d*(rowBytes(o.Type, o.A)+rowBytes(o.Type2, o.A)) + 2*4*n*a*b
		flops = 2 * 2 * a * c * n * b
	case OpKVStore:
		bytes = n * (4*a + rowBytes(o.Type, o.A))
	case OpRope:
		bytes, flops = 2*4*n*a*b, 6*n*a*b
	case OpNorm:
		bytes, flops = 4*(2*n*a+a), 4*n*a
	case OpGLU:
		bytes, flops = 3*4*n*a, 6*n*a
	case OpAdd:
		bytes, flops = 3*4*n*a, n*a
	}
	return float64(o.Count) * bytes, float64(o.Count) * flops
}
