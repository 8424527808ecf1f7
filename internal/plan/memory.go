package plan

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/tokbench/tokbench/gguf"
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

// Total is the sum of the parts.
func (m Memory) Total() int64 { return m.Weights + m.KV + m.Compute }

// Need is the memory p needs on the model of f: its real tensor sizes
// (an estimate at the type's bits per weight for a planned one), the KV
// cache in its types, the compute buffers, and the weights it keeps in
// host memory while the rest is offloaded.
func (f File) Need(p point.Point) Memory {
	nctx := int64(pad(p.NCtx(), 256))
	kt, vt := p.KVTypes()
	h := f.H
	kv := nctx * h.NLayer * (kt.RowSize(h.NEmbdKGQA()) + vt.RowSize(h.NEmbdVGQA()))
	ub := int64(p.UBatch())
	// Logits, the attention scores (without flash attention: ubatch x
	// context x heads) and the widest activations, in F32.
	compute := 4 * ub * (h.NVocab + 6*h.NEmbd + 3*h.NFF)
	if p.FlashAttn != point.FlashOn {
		compute += 4 * ub * nctx * h.NHead
	}
	return Memory{Weights: f.WeightBytes, KV: kv, Compute: compute, HostWeights: f.hostBytes(p, false)}
}

func pad(n, to int) int { return (n + to - 1) / to * to }

// hostBytes is what of f's weights p keeps in host memory while the rest
// is offloaded (only the experts, if experts): the tensors whose first
// matching -ot rule (-ncmoe's after them, as engine passes them to
// llama.cpp) names the CPU. A pattern Go's regexp cannot read counts for
// nothing here (llama.cpp's ECMAScript reads it at load time). A planned
// model has no tensor names: its -ncmoe layers' experts count.
func (f File) hostBytes(p point.Point, experts bool) int64 {
	if f.GGUF == nil {
		if f.NLayer == 0 {
			return 0
		}
		return f.ExpertBytes * int64(min(p.NCPUMoE, f.NLayer)) / int64(f.NLayer)
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
	for _, t := range f.GGUF.Tensors {
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

// Free is the memory free for a point: on the GPUs together and in the
// host (0: unknown, not checked).
type Free struct {
	GPUs int64
	// HasGPU says whether there is a GPU to offload to; without one every
	// point runs in host memory.
	HasGPU bool
	Host   int64
}

// Fits refuses, before anything is loaded, a point whose context is
// longer than the model was trained for, or whose memory m exceeds what
// is free.
func (f File) Fits(p point.Point, m Memory, free Free) error {
	if int64(p.PerSeqCtx()) > f.H.NCtxTrain {
		return point.Inputf("each sequence needs a context of %d tokens (%d of depth, -d, and %d of the test itself) but the model was trained for %d: lower -d, -p or -n",
			p.PerSeqCtx(), p.NDepth, p.PerSeqCtx()-p.NDepth, f.H.NCtxTrain)
	}
	gib := func(b int64) float64 { return float64(b) / (1 << 30) }
	if p.NGPULayers != 0 && free.HasGPU {
		host := ""
		if m.HostWeights > 0 {
			host = fmt.Sprintf(", less %.2f GiB of weights kept in host memory", gib(m.HostWeights))
		}
		if need := m.Total() - m.HostWeights; need > free.GPUs {
			return point.Inputf("point needs about %.2f GiB on the GPUs (weights %.2f, KV %.2f, compute %.2f%s) but the GPUs have %.2f GiB free: lower -ngl, keep experts in host memory (-ncmoe N), lower -p/-n/-d or --parallel, or use a quantized KV cache (-ctk/-ctv q8_0)",
				gib(need), gib(m.Weights), gib(m.KV), gib(m.Compute), host, gib(free.GPUs))
		}
		if free.Host > 0 && m.HostWeights > free.Host {
			return point.Inputf("point keeps %.2f GiB of weights in host memory (-ot, -ncmoe) but only %.2f GiB is available: lower -ncmoe or offload more", gib(m.HostWeights), gib(free.Host))
		}
		return nil
	}
	if free.Host > 0 && m.Total() > free.Host {
		return point.Inputf("point needs about %.2f GiB (weights %.2f, KV %.2f, compute %.2f) but only %.2f GiB of memory is available: lower -p/-n/-d or --parallel, use a quantized KV cache (-ctk/-ctv q8_0) or a smaller model",
			gib(m.Total()), gib(m.Weights), gib(m.KV), gib(m.Compute), gib(free.Host))
	}
	return nil
}

// Check is Fits with the memory p needs.
func (f File) Check(p point.Point, free Free) error { return f.Fits(p, f.Need(p), free) }
