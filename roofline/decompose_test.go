package roofline

import (
	"strings"
	"testing"
)

// A step of 10 ms whose ops are known: 1 GB/s and 1 GFLOP/s peaks keep
// the arithmetic plain (a byte costs 1 ns, a FLOP 1 ns).
var unit = Peaks{Source: "test", BWGBs: 1, TFLOPS: 1e-3}

func kernels(ms ...float64) []KernelTime {
	var ks []KernelTime
	for i, m := range ms {
		// Each op moves 1e6 bytes (1 ms at peak) and computes little.
		ks = append(ks, KernelTime{Op: Op{Name: []string{"mul_mat q4_0", "flash_attn", "add"}[i%3], Count: 2, Bytes: 1e6, Flops: 1e3}, Ms: m})
	}
	return ks
}

func TestDecompositionSplitsTheStep(t *testing.T) {
	d := decompose(kernels(4, 2, 1), 10, 1, unit)
	if !near(d.KernelMs, 7) || !near(d.OverheadMs, 3) || !near(d.HardwareMs, 3) || d.OpsPerStep != 6 {
		t.Errorf("%+v", d)
	}
	if !near(d.KernelShare, 0.7) || !near(d.StepTs, 100) || !near(d.KernelTs, 1000/7.0) || !near(d.HardwareTs, 1000/3.0) {
		t.Errorf("shares and rates %+v", d)
	}
	if d.Top != "mul_mat q4_0" || !near(d.TopShare, 0.4) || !near(d.TopPeak, 0.25) || d.TopBound != "peak bandwidth" {
		t.Errorf("top %q %.2f at %.2f of %s", d.Top, d.TopShare, d.TopPeak, d.TopBound)
	}
	// Where FLOPs take longer than bytes, the top op is set against the
	// compute peak.
	ks := kernels(4)
	ks[0].Flops = 3e6 // 3 ms at 1 GFLOP/s
	if d := decompose(ks, 5, 1, unit); !near(d.TopPeak, 0.75) || d.TopBound != "peak FLOP/s" || !near(d.HardwareMs, 3) {
		t.Errorf("compute-bound top: %+v", d)
	}
}

func TestVerdictsFromTheDecomposition(t *testing.T) {
	cases := []struct {
		name  string
		ks    []KernelTime
		step  float64
		pk    Peaks
		want  string
		words string
	}{
		{"overhead 30% of the step", kernels(4, 2, 1), 10, unit, SoftwareLimited, "3.00 ms per step outside the kernels (500.0 µs for each of 6 ops)"},
		{"kernels at the bandwidth", kernels(1.1, 1.1, 1.1), 3.5, unit, MemoryBound, "at 91% of peak bandwidth"},
		{"kernels far from it", kernels(4, 2, 1), 8, unit, KernelBound, "mul_mat q4_0: 50% of the step at 25% of peak bandwidth"},
		{"kernels slower than the step", kernels(4, 4, 4), 10, unit, Unvouched, "not vouched for"},
		{"no peaks", kernels(4, 2, 1), 8, Peaks{}, KernelBound, "no hardware ceiling known"},
		{"no peaks, slow loop", kernels(1, 1, 1), 8, Peaks{}, SoftwareLimited, "outside the kernels"},
	}
	for _, c := range cases {
		in := Inputs{Tokens: 16, Parallel: 1, WeightsBytes: 3e6, Params: 1e3, NLayer: 1, NEmbd: 8, MeasuredTs: 1000 / c.step, Kernels: c.ks, StepMs: c.step}
		a := Analyze(in, c.pk)
		if a.Decomp == nil || a.Verdict != c.want || !strings.Contains(a.Why, c.words) {
			t.Errorf("%s: %s: %s, want %s mentioning %q", c.name, a.Verdict, a.Why, c.want, c.words)
		}
	}
	in := Inputs{Tokens: 16, Parallel: 1, WeightsBytes: 3e6, MeasuredTs: 100, Kernels: kernels(4, 2, 1), StepMs: 10, Throttled: true}
	if v := Analyze(in, unit).Verdict; v != Throttled {
		t.Errorf("throttled: %s", v)
	}
}

// A prompt shorter than the ubatch is one step of its own length: the
// split's rates are the measured one's.
func TestShortPromptIsOneStep(t *testing.T) {
	in := Inputs{Prompt: true, Tokens: 128, Parallel: 1, UBatch: 512, WeightsBytes: 1e8, Params: 1e8, NLayer: 2, NEmbd: 64,
		MeasuredTs: 128 / 0.2, Kernels: kernels(150), StepMs: 200}
	a := Analyze(in, unit)
	if !near(a.Decomp.StepTs, 640) || !near(a.Decomp.KernelTs, 128/0.15) {
		t.Errorf("step %.1f t/s, kernels %.1f t/s; want 640 and %.1f", a.Decomp.StepTs, a.Decomp.KernelTs, 128/0.15)
	}
}

// With the time outside the graph's nodes measured, the time beyond the
// kernels alone is split: mostly outside the nodes is software; mostly
// inside them is the kernels running slower in the step than alone,
// which is no software verdict.
func TestMeasuredOutsideSplitsTheOverhead(t *testing.T) {
	// 10 ms steps, kernels alone 5 ms: 5 ms beyond them.
	d := decompose(kernels(3, 1, 1), 10, 1, unit)
	d.setOutside(0.5)
	if !d.Measured || !near(d.OutsideMs, 0.5) || !near(d.SlowerMs, 4.5) {
		t.Fatalf("split %+v", d)
	}
	v, why := verdictOf(d, false, "")
	if v != KernelBound || !strings.Contains(why, "0.50 ms were measured outside the graph's nodes and 4.50 ms inside them") ||
		!strings.Contains(why, "ran 90% slower in the step than alone") || strings.Contains(why, "software 5") {
		t.Errorf("mostly inside the nodes: %s: %s", v, why)
	}
	d = decompose(kernels(3, 1, 1), 10, 1, unit)
	d.setOutside(4)
	if v, why := verdictOf(d, false, ""); v != SoftwareLimited || !strings.Contains(why, "4.00 ms per step measured outside") {
		t.Errorf("mostly outside: %s: %s", v, why)
	}
	d = decompose(kernels(3, 1, 1), 10, 1, unit)
	d.setOutside(0) // not measured: as before
	if v, _ := verdictOf(d, false, ""); d.Measured || v != SoftwareLimited {
		t.Errorf("not measured: %s %+v", v, d)
	}
}

// Every view of a split says one thing: the software the chart stacks and
// the table shows is the verdict's; a verdict of kernel-bound has little
// software, one of software-limited much; the parts add up to the step.
func TestOneAnswer(t *testing.T) {
	for _, outside := range []float64{0, 0.5, 4} {
		d := decompose(kernels(3, 1, 1), 10, 1, unit)
		d.setOutside(outside)
		v, _ := verdictOf(d, false, "")
		p := d.Parts()
		if sum := p[0] + p[1] + p[2] + p[3]; !near(sum, 1) {
			t.Errorf("outside %g: parts %v add up to %g", outside, p, sum)
		}
		if (v == SoftwareLimited) != (p[3] >= OverheadLimit) || !near(p[3], d.SoftwareMs/d.StepMs) {
			t.Errorf("outside %g: verdict %s, software %.0f%% of the step", outside, v, 100*p[3])
		}
	}
}

// A mapped model whose kernels ran far slower in the step than alone is
// pointed at --no-mmap; the same step loaded into memory is not.
func TestMappedModelHint(t *testing.T) {
	in := Inputs{Tokens: 16, Parallel: 1, WeightsBytes: 1e6, Params: 1e3, NLayer: 1, NEmbd: 8, MeasuredTs: 100,
		Kernels: kernels(3, 1, 1), StepMs: 10, OutsideMs: 0.2, Mapped: true}
	if a := Analyze(in, unit); !strings.Contains(a.Why, "compare with --no-mmap") {
		t.Errorf("mapped: %s", a.Why)
	}
	in.Mapped = false
	if a := Analyze(in, unit); strings.Contains(a.Why, "--no-mmap") {
		t.Errorf("in memory: %s", a.Why)
	}
}
