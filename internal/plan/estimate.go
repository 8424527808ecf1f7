package plan

import (
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// estimate is a test's cost before it is run: the memory it needs, and
// its roofline without a measurement (the bytes and FLOPs of a step, the
// ceiling on this hardware class); a mixture's experts at the uniform
// expectation.
type estimate struct {
	Memory   Memory
	Roofline roofline.Analysis
	Experts  *record.Experts
}

// estimate estimates p on the model of f (planned, or read from its
// file) against the ceilings env's hardware class has on record.
func (f File) Estimate(p point.Point, env Env) (estimate, error) {
	est := estimate{Memory: f.Need(p), Experts: f.Experts(p)}
	dev := env.Device(p)
	pk, err := roofline.PeaksFor(dev, env.CacheDir)
	if err != nil {
		return est, err
	}
	in := f.Inputs(p, p.NGen == 0, max(p.NPrompt, p.NGen), p.NDepth)
	if host := f.hostBytes(p, true); host > 0 && !dev.OnCPU() {
		// The experts a GPU step reads from host memory, at the CPU's
		// ceiling, as the measured roofline splits them.
		if hpk, err := roofline.PeaksFor(roofline.CPUDevice(env.Host.CPUModel, p.Threads), env.CacheDir); err == nil {
			in.Host = &roofline.HostPart{ExpertBytes: float64(host), Peaks: hpk}
		}
	}
	est.Roofline = roofline.Analyze(in, pk)
	return est, nil
}

// Decode is the roofline of decoding p.Parallel sequences of the model at
// once, each with depth tokens of context and gen to generate, measured
// at ts aggregate tokens per second (a load test's steady state), with
// the GPUs' utilisation meanwhile (tel, if known), against the peaks of
// env's hardware class.
func (m Model) Decode(p point.Point, env Env, depth, gen int, ts float64, tel *gpu.Window) (roofline.Analysis, error) {
	pk, err := roofline.PeaksFor(env.Device(p), env.CacheDir)
	if err != nil {
		return roofline.Analysis{}, err
	}
	// A mixture's routing is not observed under load: an even router's
	// expectation.
	in := m.Inputs(p, false, gen, depth)
	in.MeasuredTs = ts
	in.SetTelemetry(tel)
	return roofline.Analyze(in, pk), nil
}
