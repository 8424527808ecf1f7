package measure

import (
	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/record"
)

// setRouting puts what a profiled run saw of the experts into x: how
// many a layer's step read, how even the choices were, and where llama.cpp
// placed the experts.
func setRouting(x *record.Experts, sp *engine.StepProfile) {
	if x == nil || sp == nil {
		return
	}
	if sp.Experts.Nodes == 0 {
		x.Note = "the router's choices were not seen: no ffn_moe_topk node in the step's graph"
	} else {
		// Uniform for the tokens the layers routed: a prefill's last
		// layer routes only the tokens whose logits are wanted.
		x.Distinct, x.HotShare, x.Uniform = sp.Experts.PerStep(), sp.Experts.HotShare(), sp.Experts.UniformPerStep()
		_, x.DistinctLastLayer = sp.Experts.Layers()
	}
	if on := sp.ExpertBytesOn(); len(on) > 0 {
		x.OnDevice = on
	}
}
