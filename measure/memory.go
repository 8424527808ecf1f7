package measure

import (
	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/point"
)

// Memory is the estimated memory a point needs, in bytes.
type Memory struct {
	Weights int64 `json:"weights"`
	KV      int64 `json:"kv"`
	Compute int64 `json:"compute"`
}

// Total is the sum of the parts.
func (m Memory) Total() int64 { return m.Weights + m.KV + m.Compute }

// EstimateMemory estimates the weights, KV cache and compute buffers a
// point needs, from the model's real tensor sizes and the KV types.
func EstimateMemory(h gguf.Hparams, weights int64, p point.Point) Memory {
	nctx := int64(pad(p.NCtx(), 256))
	kt, _ := gguf.ParseType(p.TypeK)
	vt, _ := gguf.ParseType(p.TypeV)
	kv := nctx * h.NLayer * (kt.RowSize(h.NEmbdKGQA()) + vt.RowSize(h.NEmbdVGQA()))
	ub := int64(p.UBatch())
	// Logits, the attention scores (without flash attention: ubatch x
	// context x heads) and the widest activations, in F32.
	compute := 4 * ub * (h.NVocab + 6*h.NEmbd + 3*h.NFF)
	if p.FlashAttn != point.FlashOn {
		compute += 4 * ub * nctx * h.NHead
	}
	return Memory{Weights: weights, KV: kv, Compute: compute}
}

func pad(n, to int) int { return (n + to - 1) / to * to }

// checkMemory refuses a point that cannot fit, before anything is loaded.
func checkMemory(m Memory, p point.Point) error {
	gib := func(b int64) float64 { return float64(b) / (1 << 30) }
	gpus := engine.GPUs()
	if p.NGPULayers != 0 && len(gpus) > 0 {
		var free int64
		for _, d := range gpus {
			free += int64(d.MemoryFree)
		}
		if m.Total() > free {
			return point.Inputf("point needs about %.2f GiB (weights %.2f, KV %.2f, compute %.2f) but the GPUs have %.2f GiB free: lower -ngl, -p/-n/-d or --parallel, or use a quantized KV cache (-ctk/-ctv q8_0)",
				gib(m.Total()), gib(m.Weights), gib(m.KV), gib(m.Compute), gib(free))
		}
		return nil
	}
	avail := int64(gpu.MemAvailable())
	if avail > 0 && m.Total() > avail {
		return point.Inputf("point needs about %.2f GiB (weights %.2f, KV %.2f, compute %.2f) but only %.2f GiB of memory is available: lower -p/-n/-d or --parallel, use a quantized KV cache (-ctk/-ctv q8_0) or a smaller model",
			gib(m.Total()), gib(m.Weights), gib(m.KV), gib(m.Compute), gib(avail))
	}
	return nil
}

// checkContext refuses contexts longer than the model was trained for.
func checkContext(h gguf.Hparams, p point.Point) error {
	if int64(p.PerSeqCtx()) > h.NCtxTrain {
		return point.Inputf("each sequence needs a context of %d tokens (-d %d + max(-p %d, -n %d)) but the model was trained for %d: lower -d, -p or -n",
			p.PerSeqCtx(), p.NDepth, p.NPrompt, p.NGen, h.NCtxTrain)
	}
	return nil
}
