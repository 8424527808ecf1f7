package roofline

import (
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a/b-1) <= 0.01 }

// A model whose bytes are known: 1 GB of weights read per step, 128 KiB
// of KV per token (32 layers x 2 x 1024 x 2 B), on a 100 GB/s, 10 TFLOP/s
// device.
func base() Inputs {
	return Inputs{Tokens: 128, Depth: 1024 - 64, Parallel: 1, UBatch: 512, WeightsBytes: 1e9, KVBytesPerToken: 131072,
		Params: 1e9, NLayer: 32, NEmbd: 2048}
}

var dev = Peaks{Source: "test", BWGBs: 100, TFLOPS: 10}

func TestDecodeIsBandwidthBound(t *testing.T) {
	in := base()
	in.MeasuredTs = 60
	a := Analyze(in, dev)
	// context on average 960 + 64 = 1024 tokens: bytes = 1e9 + 1024*131072
	bytes := 1e9 + 1024*131072.0
	if !near(a.BytesPerStep, bytes) || !near(a.BWCeilingTs, 100e9/bytes) || a.Bound != "bandwidth" {
		t.Errorf("%+v", a)
	}
	if !near(a.Efficiency, 60/(100e9/bytes)) || !near(a.AchievedGBs, 60*bytes/1e9) {
		t.Errorf("efficiency %v achieved %v", a.Efficiency, a.AchievedGBs)
	}
	// 60 / 88.3 = 68%: at the ceiling.
	if a.Verdict != MemoryBound {
		t.Errorf("verdict %s (%s)", a.Verdict, a.Why)
	}
	in.MeasuredTs = 20
	if v := Analyze(in, dev).Verdict; v != BelowCeiling {
		t.Errorf("20 t/s of 88, kernels not timed: %s", v)
	}
}

func TestBatchSharesWeights(t *testing.T) {
	in := base()
	in.Parallel, in.MeasuredTs = 8, 400
	a := Analyze(in, dev)
	bytes := 1e9 + 8*1024*131072.0
	if !near(a.BWCeilingTs, 8*100e9/bytes) {
		t.Errorf("ceiling %v, want %v", a.BWCeilingTs, 8*100e9/bytes)
	}
}

func TestPrefillIsComputeBound(t *testing.T) {
	in := base()
	in.Prompt, in.Tokens, in.Depth = true, 512, 0
	in.MeasuredTs = 4000
	a := Analyze(in, dev)
	flopsPerToken := 2e9 + 4*32*2048*256.0
	if a.Bound != "compute" || !near(a.FlopCeilingTs, 10e12/flopsPerToken) {
		t.Errorf("%+v", a)
	}
	if a.Verdict != ComputeBound {
		t.Errorf("verdict %s: %s", a.Verdict, a.Why)
	}
}

func TestVerdictsFromTelemetry(t *testing.T) {
	in := base()
	in.MeasuredTs = 30
	busy := 90.0
	in.DRAMBW = &busy
	if v := Analyze(in, dev).Verdict; v != MemoryBound {
		t.Errorf("low efficiency with DRAM 90%% busy: %s (the peak is optimistic, the memory is saturated)", v)
	}
	idle := 15.0
	in.DRAMBW, in.MemBusy = &idle, &idle
	if a := Analyze(in, dev); a.Verdict != BelowCeiling || a.Why == "" {
		t.Errorf("idle memory: %s", a.Verdict)
	}
	in.Throttled = true
	if v := Analyze(in, dev).Verdict; v != Throttled {
		t.Errorf("throttled: %s", v)
	}
	if a := Analyze(in, Peaks{}); a.Verdict != NoCeiling {
		t.Errorf("no peaks: %s", a.Verdict)
	}
}

// A step whose bytes fit in a working set the probe read faster than
// memory takes that bandwidth as its ceiling, and says so; one that does
// not fit, or fits only where reading was no faster, keeps memory's.
func TestCacheResidentStepCeiling(t *testing.T) {
	curved := dev
	curved.ReadBWGBs = 80
	curved.ReadCurve = []WorkingSetBW{{4 << 20, 900}, {64 << 20, 400}, {256 << 20, 105}, {1 << 30, 80}}
	in := base()
	in.MeasuredTs = 60
	in.WeightsBytes, in.KVBytesPerToken, in.Params = 50<<20, 1024, 25e6 // 50 MiB + 1 MiB of KV: the 64 MiB set
	a := Analyze(in, curved)
	bytes := float64(50<<20) + 1024*1024
	if !near(a.PeakBWGBs, 400) || !near(a.BWCeilingTs, 400e9/bytes) || a.CacheBW == "" || !strings.Contains(a.Why, "a cache serves them") {
		t.Errorf("in cache: peak %.0f GB/s, ceiling %.0f, %q", a.PeakBWGBs, a.BWCeilingTs, a.Why)
	}
	in.WeightsBytes = 200 << 20 // the 256 MiB set read at memory's speed
	if a := Analyze(in, curved); !near(a.PeakBWGBs, 100) || a.CacheBW != "" {
		t.Errorf("no faster than memory: peak %.0f, %q", a.PeakBWGBs, a.CacheBW)
	}
	in.WeightsBytes = 2 << 30 // past the curve
	if a := Analyze(in, curved); !near(a.PeakBWGBs, 100) || a.CacheBW != "" {
		t.Errorf("past the curve: peak %.0f, %q", a.PeakBWGBs, a.CacheBW)
	}
	if a := Analyze(base(), dev); a.CacheBW != "" {
		t.Errorf("no curve: %q", a.CacheBW)
	}
	// A tiny step takes the fastest set that holds it, not the smallest
	// (a small set's read is all fixed costs).
	curved.ReadCurve[0].GBs = 40
	in.WeightsBytes, in.KVBytesPerToken = 1<<20, 0
	if a := Analyze(in, curved); !near(a.PeakBWGBs, 400) {
		t.Errorf("tiny step: peak %.0f, %q", a.PeakBWGBs, a.CacheBW)
	}
}

// No ceiling is below its measured rate: a run that beats the probe's
// peak raises the ceiling to itself, and the analysis says the probe
// underestimated.
func TestCeilingNeverBelowMeasured(t *testing.T) {
	in := base()
	in.MeasuredTs = 120 // the bandwidth ceiling is 88 t/s
	a := Analyze(in, dev)
	if a.CeilingTs != 120 || a.Efficiency != 1 || !strings.Contains(a.ProbeLow, "underestimated") || !strings.Contains(a.Why, "underestimated") {
		t.Errorf("%+v", a)
	}
	if !near(a.BWCeilingTs, 100e9/(1e9+1024*131072.0)) {
		t.Errorf("the probe's own ceiling is kept: %v", a.BWCeilingTs)
	}
	in.MeasuredTs = 60
	if a := Analyze(in, dev); a.ProbeLow != "" {
		t.Errorf("below the ceiling: %q", a.ProbeLow)
	}
}
