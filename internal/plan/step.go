package plan

import (
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// Step is the shape of one step of a test: the tokens it processes, the
// KV context they attend to on average, the logits it produces, and how
// many such steps a repetition takes.
func Step(p point.Point) (tokens, ctx, outputs, steps int64) {
	B := int64(max(p.Parallel, 1))
	if p.NGen > 0 {
		return B, int64(p.NDepth) + int64(p.NGen)/2, B, int64(p.NGen)
	}
	t, n := point.PrefillChunks(p.Parallel, p.NPrompt, p.UBatch())
	tokens, steps = int64(t), int64(n)
	return tokens, int64(p.NDepth) + int64(p.NPrompt)/2, max(B/steps, 1), steps
}

// StepShape is the model's shape for roofline.StepOps, from its file; a
// mixture of experts' step reads experts distinct experts per layer (a
// prefill's last layer last, 0: as many).
func (f File) StepShape(typeK, typeV string, flash bool, experts, last float64) roofline.Shape {
	h := f.H
	s := roofline.Shape{NLayer: h.NLayer, NEmbd: h.NEmbd, NFF: h.NFF, NHead: h.NHead, NHeadKV: h.NHeadKV,
		HeadK: h.KeyLength, HeadV: h.ValLength, TypeK: typeK, TypeV: typeV, FlashAttn: flash,
		NExpertUsed: h.NExpertUsed, ExpertsPerStep: experts, ExpertsLastLayer: last}
	if f.GGUF != nil {
		for _, t := range f.GGUF.Tensors {
			s.Tensors = append(s.Tensors, roofline.Tensor{Name: t.Name, Type: t.Type.String(), Dims: t.Dims})
		}
	}
	return s
}

// stepCost is what one step of a model moves and computes: the weight
// bytes it reads (every weight but the embedding table, a lookup of a few
// rows, unless that table is also the output projection), the K+V bytes
// per token of context (all layers, in the cache's types) and the weights
// that take part in a token's matrix products. A mixture of experts'
// experts are left out of weights (which of them a step reads is the
// Experts' part) and count in flopParams as the share a token uses.
func (m Model) stepCost(kt, vt gguf.GGMLType) (weights, kvPerToken, flopParams int64) {
	if m.NLayer == 0 {
		return 0, 0, 0
	}
	weights, flopParams = m.WeightBytes-m.ExpertBytes, int64(m.NParams)
	if m.NExpert > 0 {
		flopParams -= m.ExpertParams - m.ExpertParams*int64(m.NExpertUsed)/int64(m.NExpert)
	}
	if !m.Tied {
		weights -= m.EmbdBytes
		flopParams -= int64(m.NVocab) * int64(m.NEmbd)
	}
	kvPerToken = int64(m.NLayer) * (kt.RowSize(int64(m.NEmbdKGQA)) + vt.RowSize(int64(m.NEmbdVGQA)))
	return weights, kvPerToken, flopParams
}

// Experts is a mixture of experts' part of p's record before its routing
// is measured: its experts and what an even router would read (nil for a
// dense model).
func (m Model) Experts(p point.Point) *record.Experts {
	if m.NExpert == 0 {
		return nil
	}
	tokens, _, _, _ := Step(p)
	return &record.Experts{Count: m.NExpert, Used: m.NExpertUsed, Bytes: m.ExpertBytes, Params: m.ExpertParams,
		TokensPerStep: float64(tokens), Uniform: roofline.UniformExperts(float64(m.NExpert), float64(m.NExpertUsed), float64(tokens))}
}

// Inputs are the roofline's inputs for a test of p on the model (tokens
// to process or generate, after depth), before it is measured; a
// mixture's experts at an even router's expectation.
func (m Model) Inputs(p point.Point, prompt bool, tokens, depth int) roofline.Inputs {
	weights, kv, params := m.stepCost(p.KVTypes())
	in := roofline.Inputs{Prompt: prompt, Tokens: tokens, Depth: depth, Parallel: p.Parallel, UBatch: p.UBatch(),
		WeightsBytes: float64(weights), KVBytesPerToken: float64(kv), Params: float64(params), NLayer: m.NLayer, NEmbd: m.NEmbd}
	m.Experts(p).SetInputs(&in)
	return in
}
