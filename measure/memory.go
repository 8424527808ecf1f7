package measure

import (
	"fmt"
	"regexp"
	"strings"

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
	// HostWeights is the part of Weights an offloaded point keeps in host
	// memory (-ot PATTERN=CPU, -ncmoe): not the GPUs'.
	HostWeights int64 `json:"host_weights,omitempty"`
}

// HostWeights is what of f's weights p keeps in host memory while the
// rest is offloaded: the tensors whose first matching -ot rule (-ncmoe's
// after them, as engine passes them to llama.cpp) names the CPU. A
// pattern Go's regexp cannot read counts for nothing here (llama.cpp's
// ECMAScript reads it at load time).
func HostWeights(f *gguf.File, p point.Point) int64 { return hostBytes(f, p, false) }

// hostBytes is HostWeights, of the experts alone if experts.
func hostBytes(f *gguf.File, p point.Point, experts bool) int64 {
	if f == nil {
		return 0
	}
	rules, _ := point.ParseOverrides(p.Overrides)
	rules = append(rules, point.MoEOverrides(p.NCPUMoE)...)
	var res []*regexp.Regexp
	var cpu []bool
	for _, r := range rules {
		if re, err := regexp.Compile(r.Pattern); err == nil {
			res, cpu = append(res, re), append(cpu, strings.EqualFold(r.BufferType, "CPU"))
		}
	}
	var n int64
	for _, t := range f.Tensors {
		if experts && !gguf.IsExpertTensor(t) {
			continue
		}
		for i, re := range res {
			if re.MatchString(t.Name) {
				if cpu[i] {
					n += t.Bytes()
				}
				break
			}
		}
	}
	return n
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
	avail := int64(gpu.MemAvailable())
	if p.NGPULayers != 0 && len(gpus) > 0 {
		var free int64
		for _, d := range gpus {
			free += int64(d.MemoryFree)
		}
		host := ""
		if m.HostWeights > 0 {
			host = fmt.Sprintf(", less %.2f GiB of weights kept in host memory", gib(m.HostWeights))
		}
		if need := m.Total() - m.HostWeights; need > free {
			return point.Inputf("point needs about %.2f GiB on the GPUs (weights %.2f, KV %.2f, compute %.2f%s) but the GPUs have %.2f GiB free: lower -ngl, keep experts in host memory (-ncmoe N), lower -p/-n/-d or --parallel, or use a quantized KV cache (-ctk/-ctv q8_0)",
				gib(need), gib(m.Weights), gib(m.KV), gib(m.Compute), host, gib(free))
		}
		if avail > 0 && m.HostWeights > avail {
			return point.Inputf("point keeps %.2f GiB of weights in host memory (-ot, -ncmoe) but only %.2f GiB is available: lower -ncmoe or offload more", gib(m.HostWeights), gib(avail))
		}
		return nil
	}
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
