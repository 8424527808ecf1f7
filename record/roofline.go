package record

import (
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/roofline"
)

// Device is what the record ran on, for choosing its ceilings.
func (r *Record) Device() roofline.Device {
	return roofline.Device{Class: r.Class(), Backend: r.Backend, GPU: r.GPUInfo, NVML: r.nvml(), Threads: r.Threads, Build: r.CPUFeatures}
}

// RooflineInputs describe the record's test to the roofline.
func (r *Record) RooflineInputs() roofline.Inputs {
	in := roofline.Inputs{
		Prompt: r.IsPrompt(), Tokens: max(r.NPrompt, r.NGen), Depth: r.NDepth, Parallel: r.NParallel, UBatch: r.UBatch(),
		WeightsBytes: float64(r.WeightsStepBytes), KVBytesPerToken: float64(r.KVBytesPerToken), Params: float64(r.FlopParams),
		NLayer: r.ModelNLayer, NEmbd: r.ModelNEmbd, MeasuredTs: r.AvgTs, Throttled: r.Throttled,
	}
	r.Experts.SetInputs(&in)
	if r.Telemetry != nil {
		in.SetTelemetry(r.Telemetry.Measure)
	}
	if len(r.Kernels) > 0 && r.AvgNs > 0 {
		in.Kernels, in.StepMs, in.OutsideMs = r.Kernels, float64(r.AvgNs)/1e6/float64(r.steps()), r.OutsideMs
		in.Mapped = r.UseMmap && r.Backend == "CPU"
	}
	return in
}

// steps is how many steps one repetition took: one per generated token,
// or one per ubatch of the prompts (all sequences' tokens together).
func (r *Record) steps() int {
	if !r.IsPrompt() {
		return max(r.NGen, 1)
	}
	_, n := point.PrefillChunks(r.NParallel, r.NPrompt, r.UBatch())
	return n
}

// Annotate sets the roofline of every measured record (SetRoofline).
func Annotate(recs []Record, peaks *roofline.Cache) error {
	for i := range recs {
		if err := recs[i].SetRoofline(peaks); err != nil {
			return err
		}
	}
	return nil
}

// SetRoofline sets a measured record's roofline, with the peaks of its
// class (roofline.PeaksFor); records without a measurement or a model
// shape get none, and so do pp+tg tests, whose two phases have different
// ceilings.
func (r *Record) SetRoofline(peaks *roofline.Cache) error {
	if !r.OK() || r.WeightsStepBytes == 0 || r.IsCombined() {
		return nil
	}
	pk, err := peaks.Peaks(r.Device())
	if err != nil {
		return err
	}
	in := r.RooflineInputs()
	if x := r.Experts; x != nil && x.HostBytes() > 0 && !r.Device().OnCPU() {
		// Experts kept in host memory (-ncmoe, -ot): the CPU's part of
		// the step, against the CPU's own ceiling.
		hpk, err := peaks.Peaks(roofline.CPUDevice(r.CPUInfo, r.Threads))
		if err != nil {
			return err
		}
		in.Host = &roofline.HostPart{ExpertBytes: float64(x.HostBytes()), Peaks: hpk}
	}
	a := roofline.Analyze(in, pk)
	r.Roofline = &a
	return nil
}
