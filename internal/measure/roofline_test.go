package measure

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// The tiny Q8_0 model's bytes are known from its shape: a decode step reads
// every matrix but the embedding (Q8_0: 34 bytes per 32 weights) and the
// norms (F32); its KV cache holds, per token, 2 layers x (K + V) x 128
// F16 values.
func TestRooflineOnAKnownModel(t *testing.T) {
	p := tinyPoint()
	p.NPrompt, p.NGen, p.Reps = 0, 16, 2
	recs, err := measure1(context.Background(), p, DescribeEnv("test"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &recs[0]
	const e, kv, ff, layers, vocab = 256, 128, 768, 2, 1024
	matrices := float64(layers*(e*e*2+e*kv*2+3*e*ff) + vocab*e)
	weights := matrices*34/32 + float64((2*layers+1)*e*4)
	if float64(r.WeightsStepBytes) != weights {
		t.Errorf("weights read per step %d, want %.0f", r.WeightsStepBytes, weights)
	}
	if r.KVBytesPerToken != layers*(kv*2+kv*2) {
		t.Errorf("KV bytes per token %d, want %d", r.KVBytesPerToken, layers*(kv*2+kv*2))
	}
	dir := t.TempDir()
	probe := &roofline.Probe{Class: r.Class(), Threads: r.Threads, BWGBs: 10, MatMul: map[string]roofline.MatMul{"f16": {GEMM: 100}}}
	if _, err := probe.Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := record.Annotate(recs, &roofline.Cache{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	a := r.Roofline
	// 16 tokens from depth 0: on average 8 tokens of context.
	bytes := weights + 8*float64(r.KVBytesPerToken)
	ceiling := 10e9 / bytes
	// A machine faster than the hand's 10 GB/s beats that ceiling: the
	// ceiling is then the measured rate, and the record says so.
	want := max(ceiling, r.AvgTs)
	if a == nil || a.PeakSource != "probe" || math.Abs(a.BWCeilingTs/ceiling-1) > 0.01 || math.Abs(a.CeilingTs/want-1) > 0.01 ||
		math.Abs(a.Efficiency/(r.AvgTs/want)-1) > 0.01 || (r.AvgTs > ceiling) != (a.ProbeLow != "") {
		t.Fatalf("roofline %+v, want ceiling %.1f t/s and efficiency %.3f", a, want, r.AvgTs/want)
	}
	if a.Verdict == "" || a.Why == "" {
		t.Errorf("no verdict: %+v", a)
	}
	// Without a probe, a CPU record has no ceiling and no roofline is made
	// up: its kernels still split the step from the software around them,
	// but no hardware time is claimed (on a busy machine, kernels timed
	// alone can take longer than the step: then the split is not vouched
	// for, and says so).
	recs[0].Roofline = nil
	if err := record.Annotate(recs, &roofline.Cache{Dir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if a := recs[0].Roofline; a.CeilingTs != 0 || a.Decomp == nil || a.Decomp.HardwareMs != 0 ||
		!slices.Contains([]string{roofline.SoftwareLimited, roofline.KernelBound, roofline.Unvouched}, a.Verdict) {
		t.Errorf("no probe: %+v", a)
	}
	recs[0].Roofline, recs[0].Kernels = nil, nil
	if err := record.Annotate(recs, &roofline.Cache{Dir: t.TempDir()}); err != nil || recs[0].Roofline.Verdict != roofline.NoCeiling {
		t.Errorf("no probe, no kernels: %v %+v", err, recs[0].Roofline)
	}
}

// A GPU record whose memory system was saturated is at the bandwidth
// ceiling even when the datasheet promised more; one whose memory idled
// is below it, kernels or software: without kernel timings tokbench
// cannot say which.
func TestVerdictFromTelemetryWindows(t *testing.T) {
	rec := func(dram float64) record.Record {
		w := gpu.Window{Devices: []gpu.DeviceWindow{{Dev: 0, Metrics: map[string]gpu.Stat{"dram_bw_util": {Mean: dram}, "mem_util": {Mean: dram}}}}}
		return record.Record{Status: record.StatusOK, Machine: record.Machine{Backend: "CUDA", GPUInfo: "NVIDIA H200"}, Model: record.Model{WeightsStepBytes: 4e9, KVBytesPerToken: 131072, FlopParams: 8e9, ModelNLayer: 32, ModelNEmbd: 4096}, Settings: record.Settings{Shape: point.Shape{NUBatch: 512}, NGen: 128, NParallel: 1}, Result: record.Result{AvgTs: 400}, Hardware: record.Hardware{Telemetry: &record.Telemetry{Measure: &w}}}
	}
	recs := []record.Record{rec(92), rec(12)}
	if err := record.Annotate(recs, &roofline.Cache{Dir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	// 4 GB per step on a 4.8 TB/s datasheet: ceiling ~1190 t/s; 400 t/s is 34%.
	for i, want := range []string{roofline.MemoryBound, roofline.BelowCeiling} {
		a := recs[i].Roofline
		if a == nil || a.PeakSource != "datasheet" || a.Verdict != want || a.Efficiency > 0.4 {
			t.Errorf("record %d: %+v, want %s", i, a, want)
		}
	}
}
