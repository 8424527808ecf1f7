package measure

import (
	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/preset"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// PlannedMeta is what a synthetic model of shape s in file type typ will
// be, before it is made (AtType). Norms are counted at the type too: a few
// KB.
func PlannedMeta(s preset.Shape, typ string) (engine.Meta, gguf.Hparams) {
	e, hd := int64(s.NEmbd), int64(s.HeadDim())
	h := gguf.Hparams{Arch: s.ArchName(), NLayer: int64(s.NLayer), NEmbd: e, NFF: int64(s.NFF), NHead: int64(s.NHead), NHeadKV: int64(s.NHeadKV),
		NCtxTrain: int64(s.NCtxTrain), NVocab: int64(s.NVocab), KeyLength: hd, ValLength: hd, TiedOutput: s.Tied,
		NExpert: int64(s.NExpert), NExpertUsed: int64(s.NExpertUsed)}
	m := engine.Meta{Desc: s.Name + " (planned)", Arch: h.Arch, NParams: uint64(s.Params()), NLayer: s.NLayer, NEmbd: s.NEmbd,
		NHead: s.NHead, NHeadKV: s.NHeadKV, NVocab: s.NVocab, NCtxTrain: s.NCtxTrain, NEmbdKGQA: int(h.NEmbdKGQA()), NEmbdVGQA: int(h.NEmbdVGQA()),
		Tied: s.Tied, NExpert: s.NExpert, NExpertUsed: s.NExpertUsed, ExpertParams: s.ExpertParams()}
	return AtType(m, typ), h
}

// AtType is a model as it will be in file type typ, before it is made
// (a synthetic one, or a quantization of m): its bytes are its weights
// at the type's usual bits per weight (a mixture such as q4_k_m is
// llama.cpp's choice per tensor, which this averages).
func AtType(m engine.Meta, typ string) engine.Meta {
	bpw := gguf.ApproxBPW(typ) / 8
	bytes := func(params int64) int64 { return int64(float64(params) * bpw) }
	m.FileType = typ
	m.WeightBytes, m.EmbdBytes, m.ExpertBytes = bytes(int64(m.NParams)), bytes(int64(m.NVocab)*int64(m.NEmbd)), bytes(m.ExpertParams)
	m.Size = uint64(m.WeightBytes)
	return m
}

// FileMeta is what a model file holds, read from its header alone.
func FileMeta(path string) (engine.Meta, gguf.Hparams, *gguf.File, error) {
	f, h, err := gguf.Inspect(path)
	if err != nil {
		return engine.Meta{}, h, nil, err
	}
	x := f.Experts(h)
	m := engine.Meta{Path: path, Desc: h.Arch, Arch: h.Arch, NParams: uint64(f.Params()), NLayer: int(h.NLayer), NEmbd: int(h.NEmbd),
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
	in := stepInputs(meta, p, p.NGen == 0, max(p.NPrompt, p.NGen), p.NDepth)
	if hostExperts > 0 && !dev.OnCPU() {
		// The experts a GPU step reads from host memory, at the CPU's
		// ceiling, as the measured roofline splits them.
		if hpk, err := roofline.PeaksFor(roofline.CPUDevice(env.Host.CPUModel, p.Threads), env.CacheDir); err == nil {
			in.Host = &roofline.HostPart{ExpertBytes: float64(hostExperts), Peaks: hpk}
		}
	}
	est.Roofline = roofline.Analyze(in, pk)
	return est, nil
}
