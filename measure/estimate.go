package measure

import (
	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/preset"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// PlannedMeta is what a synthetic model of shape s in file type typ will
// be, before it is made: its weights at the type's usual bits per weight
// (a mixture such as q4_k_m is llama.cpp's choice per tensor, which this
// averages). Norms are left out: a few KB.
func PlannedMeta(s preset.Shape, typ string) (engine.Meta, gguf.Hparams) {
	bpw := gguf.ApproxBPW(typ) / 8
	bytes := func(params int64) int64 { return int64(float64(params) * bpw) }
	e, hd := int64(s.NEmbd), int64(s.HeadDim())
	embd := int64(s.NVocab) * e
	var expertParams int64
	if s.MoE() {
		expertParams = int64(s.NLayer) * int64(s.NExpert) * 3 * e * int64(s.ExpertFF())
	}
	h := gguf.Hparams{Arch: s.ArchName(), NLayer: int64(s.NLayer), NEmbd: e, NFF: int64(s.NFF), NHead: int64(s.NHead), NHeadKV: int64(s.NHeadKV),
		NCtxTrain: int64(s.NCtxTrain), NVocab: int64(s.NVocab), KeyLength: hd, ValLength: hd, TiedOutput: s.Tied,
		NExpert: int64(s.NExpert), NExpertUsed: int64(s.NExpertUsed)}
	m := engine.Meta{Desc: s.Name + " (planned)", Arch: h.Arch, FileType: typ, NParams: uint64(s.Params()), NLayer: s.NLayer, NEmbd: s.NEmbd,
		NHead: s.NHead, NHeadKV: s.NHeadKV, NVocab: s.NVocab, NCtxTrain: s.NCtxTrain, NEmbdKGQA: int(h.NEmbdKGQA()), NEmbdVGQA: int(h.NEmbdVGQA()),
		WeightBytes: bytes(s.Params()), EmbdBytes: bytes(embd), Tied: s.Tied,
		NExpert: s.NExpert, NExpertUsed: s.NExpertUsed, ExpertBytes: bytes(expertParams), ExpertParams: expertParams}
	m.Size = uint64(m.WeightBytes)
	return m, h
}

// FileMeta is what a model file holds, read from its header alone.
func FileMeta(path string) (engine.Meta, gguf.Hparams, *gguf.File, error) {
	f, h, err := gguf.Inspect(path)
	if err != nil {
		return engine.Meta{}, h, nil, err
	}
	var params int64
	for _, t := range f.Tensors {
		params += t.Elements()
	}
	x := f.Experts(h)
	m := engine.Meta{Path: path, Desc: h.Arch, Arch: h.Arch, NParams: uint64(params), NLayer: int(h.NLayer), NEmbd: int(h.NEmbd),
		NHead: int(h.NHead), NHeadKV: int(h.NHeadKV), NVocab: int(h.NVocab), NCtxTrain: int(h.NCtxTrain),
		NEmbdKGQA: int(h.NEmbdKGQA()), NEmbdVGQA: int(h.NEmbdVGQA()), WeightBytes: f.TensorBytes(), Tied: h.TiedOutput, FileSize: f.Size,
		NExpert: int(x.Count), NExpertUsed: int(x.Used), ExpertBytes: x.Bytes, ExpertParams: x.Params}
	if t, ok := f.Tensor("token_embd.weight"); ok {
		m.EmbdBytes = t.Bytes()
	}
	m.Size = uint64(m.WeightBytes)
	return m, h, f, nil
}

// Estimate is a test's cost before it is run: the memory it needs, and
// its roofline without a measurement (the bytes and FLOPs of a step, the
// ceiling on this hardware class); a mixture's experts at the uniform
// expectation.
type Estimate struct {
	Memory   Memory
	Roofline roofline.Analysis
	Experts  *record.Experts
}

// EstimateTest estimates p on the model meta describes (its file f, nil
// for one not made yet), against the ceilings this hardware class has on
// record.
func EstimateTest(p point.Point, meta engine.Meta, h gguf.Hparams, f *gguf.File, env Env) (Estimate, error) {
	est := Estimate{Memory: EstimateMemory(h, meta.WeightBytes, p), Experts: expertsOf(meta, p)}
	var hostExperts int64
	switch {
	case f != nil:
		est.Memory.HostWeights, hostExperts = HostWeights(f, p), hostBytes(f, p, true)
	case meta.NLayer > 0:
		// -ncmoe's layers of a planned model (its -ot rules need the
		// tensors' names, which a plan has not).
		hostExperts = meta.ExpertBytes * int64(min(p.NCPUMoE, meta.NLayer)) / int64(meta.NLayer)
		est.Memory.HostWeights = hostExperts
	}
	dev := env.Device(p)
	pk, err := roofline.PeaksFor(dev, env.CacheDir)
	if err != nil {
		return est, err
	}
	weights, kv, params := StepCost(meta, p.TypeK, p.TypeV)
	in := roofline.Inputs{Prompt: p.NGen == 0, Tokens: max(p.NPrompt, p.NGen), Depth: p.NDepth, Parallel: p.Parallel, UBatch: p.UBatch(),
		WeightsBytes: float64(weights), KVBytesPerToken: float64(kv), Params: float64(params), NLayer: meta.NLayer, NEmbd: meta.NEmbd}
	if x := est.Experts; x != nil {
		in.ExpertBytes, in.NExpert, in.ExpertsPerStep = float64(x.Bytes), x.Count, x.Uniform
	}
	if hostExperts > 0 && dev.Backend != "CPU" {
		// The experts a GPU step reads from host memory, at the CPU's
		// ceiling, as the measured roofline splits them.
		host := roofline.Device{Class: gpu.ClassOf("CPU", "", nil, env.Host.CPUModel, p.Threads), Backend: "CPU"}
		if hpk, err := roofline.PeaksFor(host, env.CacheDir); err == nil {
			in.Host = &roofline.HostPart{ExpertBytes: float64(hostExperts), Peaks: hpk}
		}
	}
	est.Roofline = roofline.Analyze(in, pk)
	return est, nil
}
