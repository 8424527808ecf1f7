package measure

import (
	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/roofline"
)

// stepInputs are the roofline's inputs for a test of p on model meta
// (tokens to process or generate, after depth), before it is measured; a
// mixture's experts at an even router's expectation.
func stepInputs(meta engine.Meta, p point.Point, prompt bool, tokens, depth int) roofline.Inputs {
	weights, kv, params := StepCost(meta, p.TypeK, p.TypeV)
	in := roofline.Inputs{Prompt: prompt, Tokens: tokens, Depth: depth, Parallel: p.Parallel, UBatch: p.UBatch(),
		WeightsBytes: float64(weights), KVBytesPerToken: float64(kv), Params: float64(params), NLayer: meta.NLayer, NEmbd: meta.NEmbd}
	expertsOf(meta, p).SetInputs(&in)
	return in
}

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
	// A mixture's routing is not observed under load: an even router's
	// expectation.
	in := stepInputs(meta, p, false, gen, depth)
	in.MeasuredTs = ts
	in.SetTelemetry(tel)
	return roofline.Analyze(in, pk), nil
}
