// Package roofline sets a measured token rate against what the hardware
// allows: the bytes a step must move and the FLOPs it must compute, over
// the device's peak bandwidth and throughput, give a ceiling; efficiency
// is measured / ceiling, and a verdict says what limited the run.
package roofline

import (
	"fmt"
	"strings"

	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/point"
)

// Peaks are a device's ceilings.
type Peaks struct {
	Source string  `json:"source"` // probe, datasheet
	BWGBs  float64 `json:"bw_gbs"` // bytes per second / 1e9
	TFLOPS float64 `json:"tflops"` // FLOP per second / 1e12
	// ReadBWGBs is the bandwidth of reading alone (the probe's
	// reduction), what a decode step mostly does; 0 if unknown.
	ReadBWGBs float64 `json:"read_bw_gbs,omitempty"`
	// ReadCurve is reading alone over working sets of several sizes,
	// smallest first: where a step's bytes fit in one read faster than
	// memory, they come from a cache (see ForWorkingSet).
	ReadCurve []WorkingSetBW `json:"read_curve,omitempty"`
	// Busy says the probe ran while other work used the machine: its
	// ceilings may be low.
	Busy string `json:"busy,omitempty"`
}

// WorkingSetBW is the read bandwidth over one working set, read again and
// again as back-to-back decode steps read their weights.
type WorkingSetBW struct {
	Bytes int64   `json:"bytes"`
	GBs   float64 `json:"gbs"`
}

// cacheFaster is how much faster than memory a working set must read to
// be taken as served by a cache.
const cacheFaster = 1.25

// ForWorkingSet is pk for a step that reads bytes again every step: when
// a probed working set that holds them was read faster than memory (a
// cache holds them between steps), the fastest such bandwidth is the
// ceiling (a larger set read at a rate, a smaller one can be too), and
// why says so; else pk as it is. A CPU's reported cache size is no guide
// (a VM may be told of a whole socket's L3 while it reaches one slice of
// it): only what was measured counts.
func (pk Peaks) ForWorkingSet(bytes float64) (_ Peaks, why string) {
	var best WorkingSetBW
	for _, c := range pk.ReadCurve {
		if float64(c.Bytes) >= bytes && c.GBs > best.GBs {
			best = c
		}
	}
	if mem := max(pk.BWGBs, pk.ReadBWGBs); best.GBs > cacheFaster*mem {
		why = fmt.Sprintf("a step's %.1f MiB fit in a working set of %d MiB, which the probe read at %.0f GB/s (memory: %.0f GB/s): a cache serves them",
			bytes/(1<<20), best.Bytes>>20, best.GBs, mem)
		pk.BWGBs, pk.ReadBWGBs = best.GBs, best.GBs
	}
	return pk, why
}

// readBW is the read bandwidth if known, else the copy bandwidth.
func (pk Peaks) readBW() float64 {
	if pk.ReadBWGBs > 0 {
		return pk.ReadBWGBs
	}
	return pk.BWGBs
}

// Inputs describe one measured test.
type Inputs struct {
	Prompt          bool    // a pp (prefill) test, else tg (decode)
	Tokens          int     // n_prompt or n_gen per sequence
	Depth           int     // KV cache depth before the test
	Parallel        int     // sequences
	UBatch          int     // physical batch (prefill reads the weights once per ubatch)
	WeightsBytes    float64 // weight bytes a decode step reads (all but the embedding lookup and the experts)
	KVBytesPerToken float64 // K+V bytes per token and sequence, all layers
	Params          float64 // weights that take part in a step's matrix products
	NLayer, NEmbd   int
	MeasuredTs      float64 // aggregate tokens per second

	// A mixture of experts: the bytes of all NExpert experts of every
	// layer, of which a step reads ExpertsPerStep per layer (measured,
	// else the uniform expectation). Params counts the experts a token
	// uses.
	ExpertBytes    float64
	NExpert        int
	ExpertsPerStep float64
	// Host is the experts a GPU step reads from host memory (-ncmoe,
	// -ot exps=CPU): computed by the CPU at its own ceiling (nil: none).
	Host *HostPart

	// Telemetry over the measured repetitions, where known (percent).
	MemBusy, DRAMBW, SMActive *float64
	Throttled                 bool

	// Kernels are the step's ops timed alone, StepMs the measured step
	// (both empty: no decomposition); OutsideMs the time per step measured
	// outside the graph's nodes (0: not measured).
	Kernels   []KernelTime
	StepMs    float64
	OutsideMs float64
	Mapped    bool // the weights are mapped from the model file (mmap)
}

// HostPart is what of a GPU's step lives in host memory: the bytes of
// those experts (all of them; a step reads its share) and the CPU's
// peaks.
type HostPart struct {
	ExpertBytes float64
	Peaks       Peaks
}

// Analysis is the roofline of one test.
type Analysis struct {
	BytesPerStep   float64 `json:"bytes_per_step"`
	FlopsPerStep   float64 `json:"flops_per_step"`
	BWCeilingTs    float64 `json:"bw_ceiling_ts"`
	FlopCeilingTs  float64 `json:"compute_ceiling_ts"`
	CeilingTs      float64 `json:"ceiling_ts"`
	Bound          string  `json:"bound"` // bandwidth, compute
	Efficiency     float64 `json:"efficiency"`
	AchievedGBs    float64 `json:"achieved_gbs"`
	AchievedTFLOPS float64 `json:"achieved_tflops"`
	Verdict        string  `json:"verdict"`
	Why            string  `json:"why"`
	PeakSource     string  `json:"peak_source"`
	PeakBWGBs      float64 `json:"peak_bw_gbs"`
	PeakTFLOPS     float64 `json:"peak_tflops"`
	// CacheBW says why PeakBWGBs is a cache's bandwidth, not memory's
	// (empty: memory's).
	CacheBW string `json:"cache_bw,omitempty"`
	// ProbeLow says that the measured rate beat the probe's ceiling,
	// which is then raised to it (empty: it did not).
	ProbeLow string `json:"probe_low,omitempty"`
	// ProbeBusy says the probe behind the ceilings ran on a busy machine.
	ProbeBusy string `json:"probe_busy,omitempty"`
	// ExpertBytesPerStep is the part of BytesPerStep that is experts: the
	// distinct experts a step reads per layer (ExpertsPerStep) of all.
	ExpertBytesPerStep float64 `json:"expert_bytes_per_step,omitempty"`
	ExpertsPerStep     float64 `json:"experts_per_step,omitempty"`
	// HostBytesPerStep is the part read from host memory by the CPU (its
	// ceiling HostBWGBs) while the rest is the GPU's: the bandwidth
	// ceiling is then the two parts' times added.
	HostBytesPerStep float64 `json:"host_bytes_per_step,omitempty"`
	HostBWGBs        float64 `json:"host_bw_gbs,omitempty"`
	// Decomp splits the measured step into hardware, kernels and
	// software, when the kernels were timed.
	Decomp *Decomposition `json:"decomposition,omitempty"`
}

// Verdicts.
const (
	MemoryBound     = "memory-bound"
	ComputeBound    = "compute-bound"
	KernelBound     = "kernel-bound"     // kernels dominate the step, below the hardware's ceiling
	SoftwareLimited = "software-limited" // the step spends much time outside its kernels
	Throttled       = "throttled"
	// BelowCeiling is a run below the ceiling whose kernels were not
	// timed: kernels or software, tokbench cannot tell which.
	BelowCeiling = "below ceiling"
	// Unvouched is a decomposition that does not add up.
	Unvouched = "not vouched for"
	NoCeiling = "no ceiling" // no peak known: the efficiency cannot be said
)

// Meaning says what each verdict means, for a table's legend.
var Meaning = map[string]string{
	MemoryBound:     "at the memory bandwidth's ceiling",
	ComputeBound:    "at the compute ceiling",
	KernelBound:     "the kernels are below the hardware's ceiling, not the software around them",
	SoftwareLimited: "much of the step is spent outside its kernels",
	Throttled:       "the GPU's clocks were held down (power or heat)",
	BelowCeiling:    "kernels not timed (--no-kernels, or threads past the cores): kernels or software",
	Unvouched:       "the kernels timed alone do not add up to the step",
	NoCeiling:       "no ceiling known for this hardware (tokbench probe)",
}

// Efficient is the share of the ceiling above which a run is taken to be
// at the hardware's limit.
const Efficient = 0.6

// Analyze computes the roofline of a test.
//
// A decode step reads every weight once (shared by the step's sequences;
// of a mixture's experts, the distinct ones its tokens were routed to)
// and each sequence's KV cache up to its position, on average depth +
// n_gen/2: bytes = W + B*KV(d + n/2). It computes about 2*params FLOPs per
// token plus attention, 4*n_layer*n_embd FLOPs per token of context. A
// prefill reads the weights once per ubatch and the KV cache of the
// context so far, and computes the same per token. The ceiling is the
// lower of bandwidth/bytes and compute/FLOPs, in tokens per second.
func Analyze(in Inputs, pk Peaks) Analysis {
	ctx := float64(in.Depth) + float64(in.Tokens)/2
	attn := 4 * float64(in.NLayer) * float64(in.NEmbd) * ctx
	flopsPerToken := 2*in.Params + attn
	B := float64(max(in.Parallel, 1))
	// A step is one token per sequence when decoding, one ubatch when
	// prefilling; either way it reads the weights and the KV caches once.
	tokensPerStep := B
	if in.Prompt {
		t, _ := point.PrefillChunks(in.Parallel, in.Tokens, in.UBatch)
		tokensPerStep = float64(t)
	}
	experts := 0.0
	if in.NExpert > 0 {
		experts = in.ExpertBytes * min(in.ExpertsPerStep/float64(in.NExpert), 1)
	}
	bytes := in.WeightsBytes + experts + B*in.KVBytesPerToken*ctx
	pk, cached := pk.ForWorkingSet(bytes)
	a := Analysis{PeakSource: pk.Source, PeakBWGBs: pk.BWGBs, PeakTFLOPS: pk.TFLOPS, CacheBW: cached, ProbeBusy: pk.Busy}
	a.BytesPerStep, a.ExpertBytesPerStep = bytes, experts
	if experts > 0 {
		a.ExpertsPerStep = in.ExpertsPerStep
	}
	a.FlopsPerStep = tokensPerStep * flopsPerToken
	if len(in.Kernels) > 0 && in.StepMs > 0 {
		a.Decomp = decompose(in.Kernels, in.StepMs, tokensPerStep, pk)
		a.Decomp.setOutside(in.OutsideMs)
	}
	if pk.BWGBs > 0 && a.BytesPerStep > 0 {
		a.BWCeilingTs = tokensPerStep * pk.BWGBs * 1e9 / a.BytesPerStep
	}
	host := ""
	if h := in.Host; h != nil && in.NExpert > 0 && h.Peaks.readBW() > 0 && pk.BWGBs > 0 {
		// The layers run one after another, each on the device that
		// holds its weights: the two parts' times add.
		a.HostBytesPerStep = h.ExpertBytes * min(in.ExpertsPerStep/float64(in.NExpert), 1)
		a.HostBWGBs = h.Peaks.readBW()
		devS, hostS := (bytes-a.HostBytesPerStep)/(pk.BWGBs*1e9), a.HostBytesPerStep/(a.HostBWGBs*1e9)
		a.BWCeilingTs = tokensPerStep / (devS + hostS)
		host = fmt.Sprintf("; %.1f of the step's %.1f MiB are experts in host memory, read by the CPU at its %.0f GB/s: %.0f%% of the ceiling's time",
			a.HostBytesPerStep/(1<<20), bytes/(1<<20), a.HostBWGBs, 100*hostS/(devS+hostS))
	}
	if pk.TFLOPS > 0 && a.FlopsPerStep > 0 {
		a.FlopCeilingTs = tokensPerStep * pk.TFLOPS * 1e12 / a.FlopsPerStep
	}
	switch {
	case a.BWCeilingTs > 0 && (a.FlopCeilingTs == 0 || a.BWCeilingTs <= a.FlopCeilingTs):
		a.CeilingTs, a.Bound = a.BWCeilingTs, "bandwidth"
	case a.FlopCeilingTs > 0:
		a.CeilingTs, a.Bound = a.FlopCeilingTs, "compute"
	case a.Decomp != nil:
		a.Verdict, a.Why = verdictOf(a.Decomp, in.Throttled, telemetryNote(in))
		return a
	default:
		a.Verdict, a.Why = NoCeiling, "no peak bandwidth or throughput known for this device: run tokbench probe"
		return a
	}
	// A ceiling below what was measured is a wrong ceiling: the probe
	// underestimated the peak. The measured rate is then the ceiling, and
	// the record says so.
	if in.MeasuredTs > a.CeilingTs {
		a.ProbeLow = fmt.Sprintf("measured %.1f t/s, above the probe's %s ceiling of %.1f: the probe underestimated this machine's peak (rerun tokbench probe on a quiet machine); the ceiling is the measured rate", in.MeasuredTs, a.Bound, a.CeilingTs)
		a.CeilingTs = in.MeasuredTs
	}
	a.Efficiency = in.MeasuredTs / a.CeilingTs
	steps := in.MeasuredTs / tokensPerStep
	a.AchievedGBs = steps * a.BytesPerStep / 1e9
	a.AchievedTFLOPS = steps * a.FlopsPerStep / 1e12
	a.Verdict, a.Why = verdict(a, in)
	if experts > 0 {
		a.Why += fmt.Sprintf("; experts: %.1f of %d per layer read per step, %.1f of the step's %.1f MiB", in.ExpertsPerStep, in.NExpert, experts/(1<<20), bytes/(1<<20))
	}
	a.Why += host
	if a.ProbeLow != "" {
		a.Why += "; " + a.ProbeLow
	}
	if d := a.Decomp; d != nil && d.Measured && in.Mapped && d.SlowerMs >= mappedHint*d.KernelMs {
		a.Why += "; the model's weights are mapped from its file while the kernels alone run on memory of their own: compare with --no-mmap"
	}
	return a
}

// mappedHint is how much slower than alone the kernels must run in a step
// of a mapped model before the verdict suggests --no-mmap.
const mappedHint = 0.5

func verdict(a Analysis, in Inputs) (string, string) {
	pct := fmt.Sprintf("%.0f%% of the %s ceiling (%.1f of %.1f t/s", 100*a.Efficiency, a.Bound, in.MeasuredTs, a.CeilingTs)
	if a.Bound == "bandwidth" {
		pct += fmt.Sprintf("; %.1f of %.1f GB/s)", a.AchievedGBs, a.PeakBWGBs)
		if a.CacheBW != "" {
			pct += "; " + a.CacheBW
		}
	} else {
		pct += fmt.Sprintf("; %.2f of %.2f TFLOP/s)", a.AchievedTFLOPS, a.PeakTFLOPS)
	}
	tel := telemetryNote(in)
	if a.Decomp != nil {
		return verdictOf(a.Decomp, in.Throttled, tel)
	}
	memBusy := (in.MemBusy != nil && *in.MemBusy >= 80) || (in.DRAMBW != nil && *in.DRAMBW >= 80)
	switch {
	case in.Throttled:
		return Throttled, pct + tel + "; power or thermal limits held the clocks down"
	case a.Efficiency >= Efficient && a.Bound == "bandwidth", memBusy:
		return MemoryBound, pct + tel
	case a.Efficiency >= Efficient:
		return ComputeBound, pct + tel
	}
	why := pct + tel + "; the hardware had room to spare, but the kernels were not timed, so whether they or the software around them limit cannot be told (tokbench run and sweep time them unless --no-kernels)"
	return BelowCeiling, why
}

// telemetryNote says how busy the GPUs' memory and SMs were ("" if not
// known), to corroborate a verdict.
func telemetryNote(in Inputs) string {
	var busy []string
	for _, m := range []struct {
		name string
		v    *float64
	}{{"memory controller", in.MemBusy}, {"DRAM bandwidth", in.DRAMBW}, {"SMs", in.SMActive}} {
		if m.v != nil {
			busy = append(busy, fmt.Sprintf("%s %.0f%% busy", m.name, *m.v))
		}
	}
	if len(busy) == 0 {
		return ""
	}
	return "; " + strings.Join(busy, ", ")
}

// SetTelemetry takes what the GPUs did over the measured repetitions
// from their window (nil: nothing known).
func (in *Inputs) SetTelemetry(w *gpu.Window) {
	if w == nil {
		return
	}
	in.MemBusy = GPUMean(w, "mem_util")
	in.DRAMBW = GPUMean(w, "dram_bw_util")
	in.SMActive = GPUMean(w, "sm_active")
	for _, d := range w.Devices {
		in.Throttled = in.Throttled || d.Throttled
	}
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
