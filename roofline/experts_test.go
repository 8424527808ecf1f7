package roofline

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func exact(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestUniformExperts(t *testing.T) {
	for _, c := range []struct{ n, k, b, want float64 }{
		{8, 2, 1, 2},                                 // one token reads its k
		{8, 2, 8, 8 * (1 - math.Pow(0.75, 8))},       // 7.199
		{128, 8, 8, 128 * (1 - math.Pow(0.9375, 8))}, // 51.6
		{8, 8, 3, 8},                                 // every expert
		{0, 0, 8, 0},                                 // dense
	} {
		if got := UniformExperts(c.n, c.k, c.b); !exact(got, c.want) {
			t.Errorf("E(n=%v, k=%v, B=%v) = %v, want %v", c.n, c.k, c.b, got, c.want)
		}
	}
}

// A mixture's decode step reads its other weights and the distinct
// experts it was routed to, not every expert: by hand.
func TestMoEBytesPerStep(t *testing.T) {
	pk := Peaks{Source: "test", BWGBs: 100, TFLOPS: 10}
	in := Inputs{Tokens: 16, Parallel: 8, WeightsBytes: 1e9, ExpertBytes: 8e9, NExpert: 8, ExpertsPerStep: 7.2,
		Params: 2e9, NLayer: 2, NEmbd: 256, MeasuredTs: 10}
	a := Analyze(in, pk)
	if want := 1e9 + 8e9*7.2/8; !exact(a.BytesPerStep, want) || !exact(a.ExpertBytesPerStep, 7.2e9) || a.ExpertsPerStep != 7.2 {
		t.Errorf("bytes %v (experts %v over %v per step), want %v", a.BytesPerStep, a.ExpertBytesPerStep, a.ExpertsPerStep, want)
	}
	// The ceiling follows the experts read: 2 of 8 at B=1.
	in.Parallel, in.ExpertsPerStep = 1, 2
	a = Analyze(in, pk)
	if want := 1e9 + 2e9; !exact(a.BytesPerStep, want) || !exact(a.BWCeilingTs, 100e9/want) {
		t.Errorf("B=1: bytes %v, ceiling %v t/s; want %v and %v", a.BytesPerStep, a.BWCeilingTs, want, 100e9/want)
	}
	// FLOPs are per token over the active parameters (2 per weight),
	// plus attention: 4 * layers * embd * (depth + n/2).
	if want := 2*2e9 + 4*2*256*8.0; !exact(a.FlopsPerStep, want) {
		t.Errorf("flops %v, want %v", a.FlopsPerStep, want)
	}
	// A dense model (no experts) is as before.
	in.ExpertBytes, in.NExpert = 0, 0
	if a := Analyze(in, pk); a.BytesPerStep != 1e9 || a.ExpertsPerStep != 0 {
		t.Errorf("dense: %v bytes, %v experts", a.BytesPerStep, a.ExpertsPerStep)
	}
}

// The experts' ops: the distinct experts read (rounded, at least the k a
// token uses, at most all and the tokens' k each), their bytes and FLOPs
// by hand.
func TestMoEStepOps(t *testing.T) {
	s := Shape{NLayer: 1, NEmbd: 256, NFF: 384, NHead: 4, NHeadKV: 2, HeadK: 64, HeadV: 64, TypeK: "f16", TypeV: "f16",
		NExpertUsed: 2, ExpertsPerStep: 5.4, Tensors: []Tensor{
			{"blk.0.ffn_gate_inp.weight", "f32", []int64{256, 8}},
			{"blk.0.ffn_gate_exps.weight", "q8_0", []int64{256, 384, 8}},
			{"blk.0.ffn_up_exps.weight", "q8_0", []int64{256, 384, 8}},
			{"blk.0.ffn_down_exps.weight", "q8_0", []int64{384, 256, 8}},
		}}
	ops := map[string]Op{}
	for _, op := range StepOps(s, 8, 16, 8) {
		ops[op.Name] = op
	}
	up, ok := ops["mul_mat_id q8_0 256x384, 5 experts read, 2 per token (ffn_gate_exps,ffn_up_exps)"]
	down, ok2 := ops["mul_mat_id q8_0 384x256, 5 experts read, 2 per token (ffn_down_exps)"]
	router, ok3 := ops["mul_mat f32 256x8 (ffn_gate_inp)"]
	glu, ok4 := ops["swiglu (2 experts per token)"]
	if !ok || !ok2 || !ok3 || !ok4 {
		t.Fatalf("ops: %v", ops)
	}
	// q8_0 rows: 34 bytes per 32. Gate and up: 5 experts x 384 rows x
	// 272 bytes, inputs 8 tokens x 1 row x 256, outputs 8 x 2 x 384 (f32).
	if wantB, wantF := 2*(5*384*272+4*8*(256+2*384.0)), 2*(2*256*384*8*2.0); up.Count != 2 || !exact(up.Bytes, wantB) || !exact(up.Flops, wantF) {
		t.Errorf("gate+up: %d of them, %v bytes, %v flops; want 2, %v, %v", up.Count, up.Bytes, up.Flops, wantB, wantF)
	}
	// Down: each token's 2 rows of 384 in, 2 x 256 out.
	if wantB, wantF := 5*256*408+4*8*(2*384+2*256.0), 2*384*256*8*2.0; !exact(down.Bytes, wantB) || !exact(down.Flops, wantF) {
		t.Errorf("down: %v bytes, %v flops; want %v, %v", down.Bytes, down.Flops, wantB, wantF)
	}
	if router.Kind != OpMatMul || glu.A != 384 || glu.N != 16 {
		t.Errorf("router %+v, swiglu %+v", router, glu)
	}
	// One token reads its 2, whatever was measured.
	s.ExpertsPerStep = 7
	for _, op := range StepOps(s, 1, 16, 1) {
		if op.Kind == OpMatMulID && op.E != 2 {
			t.Errorf("B=1: %s", op.Name)
		}
	}
}

// Experts kept in host memory are read by the CPU at its ceiling while
// the GPU reads the rest at its own: the two times add. By hand: the GPU
// reads 1 GB of weights and 1 GB of experts at 1000 GB/s (2 ms), the CPU
// 1 GB of experts at 100 GB/s (10 ms): 83.3 t/s at B=1.
func TestMoEHostPart(t *testing.T) {
	gpuPk, cpuPk := Peaks{Source: "test", BWGBs: 1000, TFLOPS: 100}, Peaks{Source: "test", BWGBs: 100, TFLOPS: 1}
	in := Inputs{Tokens: 16, Parallel: 1, WeightsBytes: 1e9, ExpertBytes: 8e9, NExpert: 8, ExpertsPerStep: 2,
		Params: 1e9, NLayer: 2, NEmbd: 256, MeasuredTs: 50, Host: &HostPart{ExpertBytes: 4e9, Peaks: cpuPk}}
	a := Analyze(in, gpuPk)
	if !exact(a.HostBytesPerStep, 1e9) || !exact(a.BWCeilingTs, 1/0.012) || a.HostBWGBs != 100 || !strings.Contains(a.Why, "83% of the ceiling's time") {
		t.Errorf("host %v bytes at %v GB/s, ceiling %v t/s (%s); want 1e9, 100, %v", a.HostBytesPerStep, a.HostBWGBs, a.BWCeilingTs, a.Why, 1/0.012)
	}
	// A CPU without a known ceiling leaves the GPU's alone.
	in.Host.Peaks = Peaks{}
	if a := Analyze(in, gpuPk); a.HostBytesPerStep != 0 || !exact(a.BWCeilingTs, 1000e9/3e9) {
		t.Errorf("no CPU peaks: %+v", a)
	}
}

// A prefill's last layer runs its feed-forward side on its outputs alone
// (llama.cpp keeps only their rows after the last attention): those ops
// move to the outputs, the attention's stay; a decode step is untouched.
func TestPrefillLastLayer(t *testing.T) {
	s := Shape{NLayer: 2, NEmbd: 256, NFF: 768, NHead: 4, NHeadKV: 2, HeadK: 64, HeadV: 64, TypeK: "f16", TypeV: "f16",
		NExpertUsed: 2, ExpertsPerStep: 8, ExpertsLastLayer: 2, Tensors: []Tensor{
			{"blk.0.attn_q.weight", "q8_0", []int64{256, 256}}, {"blk.1.attn_q.weight", "q8_0", []int64{256, 256}},
			{"blk.0.ffn_up_exps.weight", "q8_0", []int64{256, 384, 8}}, {"blk.1.ffn_up_exps.weight", "q8_0", []int64{256, 384, 8}},
		}}
	count := func(ops []Op) map[string]int {
		out := map[string]int{}
		for _, o := range ops {
			out[fmt.Sprintf("%s n=%d e=%d", o.Name, o.N, o.E)] = o.Count
		}
		return out
	}
	got := count(StepOps(s, 32, 16, 1))
	for name, want := range map[string]int{
		"mul_mat q8_0 256x256 (attn_q) n=32 e=0":                                                             2,
		"mul_mat_id q8_0 256x384, 8 experts read, 2 per token (ffn_up_exps) n=32 e=8":                        1,
		"mul_mat_id q8_0 256x384, 2 experts read, 2 per token (ffn_up_exps) [last layer: 1 outputs] n=1 e=2": 1,
		"rms_norm n=32 e=0":                                            3,
		"rms_norm [last layer: 1 outputs] n=1 e=0":                     2,
		"add n=32 e=0":                                                 2,
		"add [last layer: 1 outputs] n=1 e=0":                          2,
		"swiglu (2 experts per token) [last layer: 1 outputs] n=2 e=0": 1,
		"moe routing (top 2 of 8) [last layer: 1 outputs] n=1 e=0":     1,
	} {
		if got[name] != want {
			t.Errorf("%s: %d of them, want %d (ops %v)", name, got[name], want, got)
		}
	}
	for name := range count(StepOps(s, 8, 16, 8)) {
		if strings.Contains(name, "last layer") {
			t.Errorf("decode: %s", name)
		}
	}
}
