package roofline

import (
	"cmp"
	"fmt"
	"slices"
)

// KernelTime is one op of a step timed in isolation on the record's
// backend and threads: milliseconds per step, all Count instances.
type KernelTime struct {
	Op
	Ms float64 `json:"ms"`
}

// Decomposition splits a measured step three ways: the kernels (the
// step's ops timed alone at its shapes: the fastest the step can run with
// these kernels), the software around them (the measured step less the
// kernels: graph build, scheduling, synchronisation, thread wake-up, the
// decode loop) and the hardware (each op's bytes and FLOPs over the
// device's peaks: the fastest any kernel could be).
type Decomposition struct {
	StepMs     float64 `json:"step_ms"`
	KernelMs   float64 `json:"kernel_ms"`
	OverheadMs float64 `json:"overhead_ms"`
	HardwareMs float64 `json:"hardware_ms,omitempty"` // 0: no peaks known
	StepTs     float64 `json:"step_ts"`
	KernelTs   float64 `json:"kernel_ts"`
	HardwareTs float64 `json:"hardware_ts,omitempty"`
	// Shares of the measured step.
	KernelShare   float64 `json:"kernel_share"`
	OverheadShare float64 `json:"overhead_share"`
	HardwareShare float64 `json:"hardware_share,omitempty"`
	// OpsPerStep is how many ops the kernels are (overhead per op is
	// OverheadMs / OpsPerStep).
	OpsPerStep int `json:"ops_per_step"`
	// KernelBW is the kernels' bytes over their time, as a fraction of
	// the peak bandwidth; KernelFlops likewise of the peak FLOP/s.
	KernelBW    float64 `json:"kernel_bw_frac,omitempty"`
	KernelFlops float64 `json:"kernel_flops_frac,omitempty"`
	// The op that took longest: its name, its share of the step, and how
	// close it came to its own hardware ceiling (the fraction of peak
	// bandwidth or of peak FLOP/s, whichever bounds it: TopBound).
	Top      string  `json:"top"`
	TopShare float64 `json:"top_share"`
	TopPeak  float64 `json:"top_peak_frac,omitempty"`
	TopBound string  `json:"top_bound,omitempty"`
	// Unvouched says why the split cannot be trusted, if it cannot (the
	// kernels alone took longer than the measured step).
	Unvouched string `json:"unvouched,omitempty"`
	// Where the step's time beyond its kernels alone (OverheadMs) went,
	// when the time outside the graph's nodes was measured: OutsideMs
	// outside them (graph build, inputs, outputs), SlowerMs inside them,
	// the kernels running slower in the step than alone (caches, the
	// nodes around them).
	Measured  bool    `json:"outside_measured,omitempty"`
	OutsideMs float64 `json:"outside_ms,omitempty"`
	SlowerMs  float64 `json:"slower_ms,omitempty"`
	// SoftwareMs is the time the software around the kernels took, as
	// every view of the split shows it: what was measured outside the
	// graph's nodes, or all the time beyond the kernels alone when that
	// was not measured; SoftwareShare its share of the step.
	SoftwareMs    float64 `json:"software_ms"`
	SoftwareShare float64 `json:"software_share"`
}

// Parts are the step's shares as a chart stacks them: the hardware's time
// (bytes and FLOPs at peak), the kernels beyond it (timed alone), the
// kernels slower in the step than alone, and the software; they add up to
// at least the step (more when the kernels alone took longer).
func (d *Decomposition) Parts() [4]float64 {
	hw := min(d.HardwareShare, d.KernelShare)
	slower := 0.0
	if d.Measured {
		slower = d.SlowerMs / d.StepMs
	}
	return [4]float64{hw, max(d.KernelShare-hw, 0), slower, d.SoftwareShare}
}

// setOutside splits the time beyond the kernels with the time measured
// outside the nodes (ms per step; 0: not measured, the split stays as it
// was).
func (d *Decomposition) setOutside(ms float64) {
	if ms <= 0 {
		return
	}
	d.Measured = true
	d.OutsideMs = min(ms, d.OverheadMs)
	d.SlowerMs = d.OverheadMs - d.OutsideMs
	d.SoftwareMs, d.SoftwareShare = d.OutsideMs, d.OutsideMs/d.StepMs
}

// Thresholds of the verdicts from a decomposition.
const (
	// OverheadLimit is the share of the step outside the kernels from
	// which the software is what limits.
	OverheadLimit = 0.30
	// AtPeak is the share of the hardware's ceiling from which kernels
	// are taken to run at it.
	AtPeak = 0.80
	// kernelSlack is how far the kernels alone may exceed the measured
	// step (they run with cold caches and without overlap) before the
	// split is not vouched for.
	kernelSlack = 1.15
)

// decompose splits a step of stepMs milliseconds (tokensPerStep tokens)
// with the kernel timings ks against the peaks (zero: unknown).
func decompose(ks []KernelTime, stepMs, tokensPerStep float64, pk Peaks) *Decomposition {
	d := &Decomposition{StepMs: stepMs}
	var bytes, flops float64
	bw := pk.readBW()
	// An op's hardware time: its bytes at peak bandwidth or its FLOPs at
	// peak throughput, whichever takes longer (0 without both peaks).
	hw := func(k KernelTime) (ms float64, bound string) {
		if bw <= 0 || pk.TFLOPS <= 0 {
			return 0, ""
		}
		mem, comp := 1000*k.Bytes/(bw*1e9), 1000*k.Flops/(pk.TFLOPS*1e12)
		if comp > mem {
			return comp, "peak FLOP/s"
		}
		return mem, "peak bandwidth"
	}
	for _, k := range ks {
		d.KernelMs += k.Ms
		d.OpsPerStep += k.Count
		bytes += k.Bytes
		flops += k.Flops
		ms, _ := hw(k)
		d.HardwareMs += ms
	}
	top := slices.MaxFunc(ks, func(a, b KernelTime) int { return cmp.Compare(a.Ms, b.Ms) })
	d.Top, d.TopShare = top.Name, top.Ms/stepMs
	if ms, bound := hw(top); ms > 0 && top.Ms > 0 {
		d.TopPeak, d.TopBound = ms/top.Ms, bound
	}
	if bw > 0 {
		d.KernelBW = bytes / (d.KernelMs / 1000) / (bw * 1e9)
	}
	if pk.TFLOPS > 0 {
		d.KernelFlops = flops / (d.KernelMs / 1000) / (pk.TFLOPS * 1e12)
	}
	d.OverheadMs = max(stepMs-d.KernelMs, 0)
	d.KernelShare, d.OverheadShare, d.HardwareShare = d.KernelMs/stepMs, d.OverheadMs/stepMs, d.HardwareMs/stepMs
	d.SoftwareMs, d.SoftwareShare = d.OverheadMs, d.OverheadShare
	rate := func(ms float64) float64 {
		if ms <= 0 {
			return 0
		}
		return tokensPerStep * 1000 / ms
	}
	d.StepTs, d.KernelTs, d.HardwareTs = rate(stepMs), rate(d.KernelMs), rate(d.HardwareMs)
	if d.KernelMs > kernelSlack*stepMs {
		d.Unvouched = fmt.Sprintf("the kernels alone took %.0f%% of the measured step: timed in isolation they ran slower than in the step, so the split is not vouched for", 100*d.KernelShare)
	}
	return d
}

// verdictOf says what limits a decomposed step, with its numbers.
func verdictOf(d *Decomposition, throttled bool, tel string) (string, string) {
	// Without the time outside the nodes measured, all the time beyond
	// the kernels alone is taken as software; with it, it is split.
	beyond := "software"
	if d.Measured {
		beyond = "beyond the kernels alone"
	}
	split := fmt.Sprintf("step %.2f ms (%.4g t/s): kernels %.2f ms (%.0f%%, %.4g t/s), %s %.2f ms (%.0f%%)",
		d.StepMs, d.StepTs, d.KernelMs, 100*d.KernelShare, d.KernelTs, beyond, d.OverheadMs, 100*d.OverheadShare)
	if d.Measured && d.OverheadMs > 0 {
		split += fmt.Sprintf(" [%.2f ms outside the graph's nodes, %.2f ms the kernels slower in the step]", d.OutsideMs, d.SlowerMs)
	}
	if d.HardwareMs > 0 {
		split += fmt.Sprintf(", hardware %.2f ms (%.0f%%, %.4g t/s)", d.HardwareMs, 100*d.HardwareShare, d.HardwareTs)
	}
	split += tel
	switch {
	case throttled:
		return Throttled, split + "; power or thermal limits held the clocks down"
	case d.Unvouched != "":
		return Unvouched, split + "; " + d.Unvouched
	case d.Measured && d.OutsideMs >= OverheadLimit*d.StepMs:
		return SoftwareLimited, fmt.Sprintf("%s; %.2f ms per step measured outside the graph's nodes (graph build, allocation, inputs, outputs), %.2f ms more in the kernels than alone",
			split, d.OutsideMs, d.SlowerMs)
	case d.Measured && d.OverheadShare >= OverheadLimit:
		return KernelBound, fmt.Sprintf("%s; of the %.2f ms beyond the kernels timed alone, %.2f ms were measured outside the graph's nodes and %.2f ms inside them: the kernels ran %.0f%% slower in the step than alone (caches, the nodes around them), not the software around them",
			split, d.OverheadMs, d.OutsideMs, d.SlowerMs, 100*d.SlowerMs/d.KernelMs)
	case d.OverheadShare >= OverheadLimit:
		return SoftwareLimited, fmt.Sprintf("%s; %.2f ms per step outside the kernels (%.1f µs for each of %d ops): graph build, scheduling, synchronisation, thread wake-up, the decode loop",
			split, d.OverheadMs, 1000*d.OverheadMs/float64(max(d.OpsPerStep, 1)), d.OpsPerStep)
	case d.HardwareMs == 0:
		return KernelBound, fmt.Sprintf("%s; %s takes %.0f%% of the step; no hardware ceiling known to say how far the kernels are from it: run tokbench probe", split, d.Top, 100*d.TopShare)
	case d.HardwareMs >= AtPeak*d.KernelMs && d.KernelBW >= d.KernelFlops:
		return MemoryBound, fmt.Sprintf("%s; the kernels move their bytes at %.0f%% of peak bandwidth", split, 100*d.KernelBW)
	case d.HardwareMs >= AtPeak*d.KernelMs:
		return ComputeBound, fmt.Sprintf("%s; the kernels compute at %.0f%% of peak FLOP/s", split, 100*d.KernelFlops)
	}
	return KernelBound, fmt.Sprintf("%s; %s: %.0f%% of the step at %.0f%% of %s (the kernels, not the hardware, limit)", split, d.Top, 100*d.TopShare, 100*d.TopPeak, d.TopBound)
}
