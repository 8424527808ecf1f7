package measure

import (
	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/roofline"
)

// DecodeRoofline is the roofline of decoding p.Parallel sequences of
// model meta at once, each with depth tokens of context and gen to
// generate, measured at ts aggregate tokens per second (a load test's
// steady state), with what the hardware did meanwhile (tel, if known),
// against the peaks of this hardware class in dir.
func DecodeRoofline(p point.Point, meta engine.Meta, env Env, depth, gen int, ts float64, tel *gpu.Window, dir string) (roofline.Analysis, error) {
	pk, err := roofline.PeaksFor(env.Device(p), dir)
	if err != nil {
		return roofline.Analysis{}, err
	}
	weights, kv, params := StepCost(meta, p.TypeK, p.TypeV)
	in := roofline.Inputs{Tokens: gen, Depth: depth, Parallel: p.Parallel, UBatch: p.UBatch(),
		WeightsBytes: float64(weights), KVBytesPerToken: float64(kv), Params: float64(params),
		NLayer: meta.NLayer, NEmbd: meta.NEmbd, MeasuredTs: ts}
	if x := expertsOf(meta, p); x != nil {
		// Not observed under load: an even router's expectation.
		in.ExpertBytes, in.NExpert, in.ExpertsPerStep = float64(x.Bytes), x.Count, x.Uniform
	}
	in.SetTelemetry(tel)
	return roofline.Analyze(in, pk), nil
}
