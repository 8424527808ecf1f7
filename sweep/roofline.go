package sweep

import (
	"strings"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/roofline"
)

// Class is the hardware class the record was measured on (gpu.Class).
func (r *Record) Class() string {
	if r.Backend == "CPU" || r.Backend == "" {
		return gpu.Class("cpu", "", 0, "", r.CPUInfo, r.NThreads)
	}
	if len(r.GPUProfile) > 0 {
		g := r.GPUProfile[0]
		return gpu.Class(r.Backend, g.Name, g.MemoryTotal, g.Driver, r.CPUInfo, r.NThreads)
	}
	dev, _, _ := strings.Cut(r.GPUInfo, ",")
	return gpu.Class(r.Backend, dev, 0, "", r.CPUInfo, r.NThreads)
}

// Peaks finds the ceilings for a record: a probe of its hardware class in
// dir if there is one, else the GPU's datasheet (with NVML's bandwidth when
// the driver gave it).
func Peaks(r *Record, dir string) (roofline.Peaks, error) {
	p, err := roofline.LoadProbe(dir, r.Class())
	if err != nil || p != nil {
		if p == nil {
			return roofline.Peaks{}, err
		}
		return p.Peaks(), err
	}
	if r.Backend == "CPU" || r.Backend == "" {
		return roofline.Peaks{}, nil
	}
	var pk roofline.Peaks
	name := r.GPUInfo
	if len(r.GPUProfile) > 0 {
		g := r.GPUProfile[0]
		name = g.Name
		if g.BWSource == "nvml" {
			pk = roofline.Peaks{Source: "nvml", BWGBs: g.PeakBWGBs}
		}
	}
	if part, ok := gpu.LookupPart(name); ok {
		if pk.BWGBs == 0 {
			pk.BWGBs = part.BWGBs
		}
		pk.TFLOPS = part.FP16
		pk.Source = strings.TrimPrefix(pk.Source+"+datasheet", "+")
	}
	return pk, nil
}

// Annotate sets the roofline of every measured record, with the peaks of
// its class (see Peaks).
func Annotate(recs []Record, dir string) error {
	cache := map[string]roofline.Peaks{}
	for i := range recs {
		r := &recs[i]
		if r.Status != StatusOK || r.WeightsStepBytes == 0 {
			continue
		}
		pk, ok := cache[r.Class()]
		if !ok {
			var err error
			if pk, err = Peaks(r, dir); err != nil {
				return err
			}
			cache[r.Class()] = pk
		}
		a := roofline.Analyze(r.rooflineInputs(), pk)
		r.Roofline = &a
	}
	return nil
}

func (r *Record) rooflineInputs() roofline.Inputs {
	in := roofline.Inputs{
		Prompt: r.IsPrompt(), Tokens: max(r.NPrompt, r.NGen), Depth: r.NDepth, Parallel: r.NParallel, UBatch: r.NUBatch,
		WeightsBytes: float64(r.WeightsStepBytes), KVBytesPerToken: float64(r.KVBytesPerToken), Params: float64(r.FlopParams),
		NLayer: r.ModelNLayer, NEmbd: r.ModelNEmbd, MeasuredTs: r.AvgTs, Throttled: r.Throttled,
	}
	if r.Telemetry != nil && r.Telemetry.Measure != nil {
		in.MemBusy = GPUMean(r.Telemetry.Measure, "mem_util")
		in.DRAMBW = GPUMean(r.Telemetry.Measure, "dram_bw_util")
		in.SMActive = GPUMean(r.Telemetry.Measure, "sm_active")
	}
	return in
}

// GPUMean averages a metric's mean over the GPUs of a window that report
// it; nil if none does.
func GPUMean(w *gpu.Window, metric string) *float64 {
	var sum float64
	n := 0
	for _, d := range w.Devices {
		if st, ok := d.Metrics[metric]; ok && d.Dev >= 0 {
			sum += st.Mean
			n++
		}
	}
	if n == 0 {
		return nil
	}
	v := sum / float64(n)
	return &v
}

// DecodeRoofline is the roofline of decoding p.Parallel sequences at once,
// each with depth tokens of context and gen to generate, measured at ts
// aggregate tokens per second (a load test's steady state), with what the
// hardware did meanwhile if known.
func DecodeRoofline(p Point, meta engine.Meta, env Env, depth, gen int, ts float64, tel *gpu.Window, dir string) (*roofline.Analysis, error) {
	recs := []Record{fill(Record{Status: StatusOK}, p, meta, env)}
	r := &recs[0]
	r.NPrompt, r.NGen, r.NDepth, r.NParallel, r.AvgTs = 0, gen, depth, p.Parallel, ts
	if tel != nil {
		r.Telemetry = &Telemetry{Measure: tel}
		for _, d := range tel.Devices {
			r.Throttled = r.Throttled || d.Throttled
		}
	}
	if err := Annotate(recs, dir); err != nil {
		return nil, err
	}
	return r.Roofline, nil
}
