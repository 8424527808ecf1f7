package measure

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/preset"
	"github.com/tokbench/tokbench/internal/telemetry"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

var tinyPath string

func TestMain(m *testing.M) {
	engine.Init(engine.Options{})
	dir, err := os.MkdirTemp("", "tokbench-sweep-")
	if err != nil {
		panic(err)
	}
	tinyPath = filepath.Join(dir, "tiny.gguf")
	if err := engine.Synthesize(preset.Presets["tiny"], tinyPath, engine.SynthOptions{Type: "q8_0", Seed: 1}); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func tinyPoint() point.Point {
	p := point.Defaults(2)
	p.Model, p.NPrompt, p.NGen, p.Reps = tinyPath, 48, 12, 3
	return p
}

func TestMeasurePPAndTG(t *testing.T) {
	p := tinyPoint()
	p.NDepth, p.Parallel = 40, 3
	recs, err := measure1(context.Background(), p, DescribeEnv("test"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want pp and tg", len(recs))
	}
	pp, tg := recs[0], recs[1]
	if !pp.IsPrompt() || pp.NPrompt != 48 || tg.IsPrompt() || tg.NGen != 12 {
		t.Errorf("tests %s/%s: pp %d/%d tg %d/%d", pp.Test, tg.Test, pp.NPrompt, pp.NGen, tg.NPrompt, tg.NGen)
	}
	if pp.Test != "pp48@d40x3" || tg.Test != "tg12@d40x3" {
		t.Errorf("test names %q %q", pp.Test, tg.Test)
	}
	for _, r := range recs {
		if len(r.SamplesTs) != 3 || len(r.SamplesNs) != 3 || r.AvgTs <= 0 || r.MinTs > r.MedianTs || r.MedianTs > r.MaxTs {
			t.Errorf("%s: samples %v, avg %v", r.Test, r.SamplesTs, r.AvgTs)
		}
		// t/s is tokens of all sequences over the time of a repetition.
		tokens := float64(3 * max(r.NPrompt, r.NGen))
		if got := tokens * 1e9 / float64(r.SamplesNs[0]); got < 0.999*r.SamplesTs[0] || got > 1.001*r.SamplesTs[0] {
			t.Errorf("%s: samples_ts[0] %v, samples_ns gives %v", r.Test, r.SamplesTs[0], got)
		}
		// One context serves both tests: sized for the larger (pp).
		if r.NCtx != 3*(40+48) || r.NDepth != 40 || r.BuildCommit != engine.LlamaCommit || r.CPUFeatures == "" {
			t.Errorf("%s: n_ctx %d depth %d build %q", r.Test, r.NCtx, r.NDepth, r.BuildCommit)
		}
	}
	if pp.TTFT == nil || tg.ITL == nil || tg.TTFT != nil || pp.ITL != nil {
		t.Error("TTFT belongs to pp, ITL to tg")
	}
	// 3 reps x 12 steps of inter-token latencies: p50 <= p99 <= max.
	if l := tg.ITL; !(l.P50 > 0 && l.P50 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("itl %+v", l)
	}
}

func TestMeasureSamplingCost(t *testing.T) {
	p := tinyPoint()
	p.NPrompt, p.Sampling = 0, "typical"
	recs, err := measure1(context.Background(), p, DescribeEnv("test"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Sampling != "none" || recs[1].SamplingCostPct == nil {
		t.Fatalf("want raw and sampled tg records, got %d", len(recs))
	}
	want := 100 * (1 - recs[1].AvgTs/recs[0].AvgTs)
	if *recs[1].SamplingCostPct != want {
		t.Errorf("sampling cost %v, want %v", *recs[1].SamplingCostPct, want)
	}
}

func TestMeasureCanceledKeepsFinished(t *testing.T) {
	p := tinyPoint()
	p.NPrompt, p.NGen, p.Reps = 16, 2000, 50
	ctx, cancel := context.WithCancel(context.Background())
	var seen []string
	// pp runs first (llama-bench's order); cancel once it is done: tg
	// (2000 tokens x 50) is then under way.
	recs, err := measure1(ctx, p, DescribeEnv("test"), nil, func(r record.Record) {
		seen = append(seen, r.Test)
		time.AfterFunc(100*time.Millisecond, cancel)
	})
	if len(seen) != 1 || seen[0] != "pp16" {
		t.Errorf("records reported as measured: %v, want [pp16]", seen)
	}
	if !errors.Is(err, engine.ErrCanceled) {
		t.Fatalf("error %v, want ErrCanceled", err)
	}
	if len(recs) != 1 || !recs[0].IsPrompt() {
		t.Errorf("want the finished pp record, got %d", len(recs))
	}
}

func TestMeasureWithTelemetry(t *testing.T) {
	s, note, err := telemetry.Start(200)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if note != "" && !strings.HasPrefix(note, "NVML unavailable") {
		t.Errorf("note %q", note)
	}
	p := tinyPoint()
	p.NPrompt, p.NGen, p.Reps = 256, 64, 3
	recs, err := measure1(context.Background(), p, DescribeEnv("test"), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		tel := r.Telemetry
		if tel == nil || tel.Measure == nil || len(tel.Reps) != 3 {
			t.Fatalf("%s: telemetry %+v", r.Test, tel)
		}
		var host *gpu.DeviceWindow
		for i := range tel.Measure.Devices {
			if tel.Measure.Devices[i].Dev == -1 {
				host = &tel.Measure.Devices[i]
			}
		}
		if host == nil || host.Metrics["rss"].Mean <= 0 {
			t.Errorf("%s: no host window in %+v", r.Test, tel.Measure)
		}
		if math.Abs(tel.Measure.Seconds-float64(sum(r.SamplesNs))/1e9) > tel.Measure.Seconds/2 {
			t.Errorf("%s: measure window %.3fs, repetitions took %.3fs", r.Test, tel.Measure.Seconds, float64(sum(r.SamplesNs))/1e9)
		}
	}
}

func sum(xs []uint64) (s uint64) {
	for _, x := range xs {
		s += x
	}
	return s
}

func TestDrift(t *testing.T) {
	steps := make([]float64, 40)
	for i := range steps {
		steps[i] = 10
		if i >= 30 {
			steps[i] = 20 // the last quarter at half the rate
		}
	}
	if d := drift(steps); d == nil || *d != -50 {
		t.Errorf("drift %v, want -50", d)
	}
	if drift(steps[:8]) != nil {
		t.Error("drift from 8 steps")
	}
}

// -r auto: a loose target is met before the cap (the exact count is the
// machine's: point's tests check the rule on known samples); one no
// machine meets runs to the cap and says it missed.
func TestAdaptiveRepetitions(t *testing.T) {
	p := tinyPoint()
	p.NPrompt, p.NGen, p.Reps, p.MaxReps = 0, 16, point.AutoReps, 12
	p.TargetCI = 0.99
	recs, err := measure1(context.Background(), p, DescribeEnv("test"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := recs[0]
	if r.Reps < 3 || r.Reps >= 12 || len(r.SamplesTs) != r.Reps || r.CITargetMet == nil || !*r.CITargetMet || r.CITarget != 0.99 || r.Key.Reps != point.AutoReps {
		t.Errorf("loose target: %d repetitions (cv %.2f), met %v", r.Reps, r.CV, r.CITargetMet)
	}
	p.MaxReps = 5
	p.TargetCI = 1e-9
	recs, err = measure1(context.Background(), p, DescribeEnv("test"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r = recs[0]
	if r.Reps != 5 || len(r.SamplesTs) != 5 || r.CITargetMet == nil || *r.CITargetMet {
		t.Errorf("unreachable target: %d repetitions, met %v", r.Reps, r.CITargetMet)
	}
	if !strings.Contains(r.Key.String(), "|r=auto|") {
		t.Errorf("key %s", r.Key)
	}
}

// Another process burning a core while a point is measured is seen and
// said: the other processes' CPU the record gives is at least a quarter
// core, and well above a run's without it. That no other processes are
// reported without it is checked only when there were none.
func TestContentionIsDetected(t *testing.T) {
	p := tinyPoint()
	p.NPrompt, p.NGen, p.Reps = 0, 64, 5
	measureOnce := func() *host.Noise {
		recs, err := measure1(context.Background(), p, DescribeEnv("test"), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if recs[0].Noise == nil {
			t.Fatal("no noise block")
		}
		return recs[0].Noise
	}
	quiet := measureOnce()
	// A burner per core: one alone is starved by the pool's two spinning
	// threads on a 2-core machine, and its share while the point ran can
	// fall below any threshold.
	var pids []string
	for range 2 {
		burner := exec.Command("sh", "-c", "while :; do :; done")
		if err := burner.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { burner.Process.Kill(); burner.Wait() }()
		pids = append(pids, strconv.Itoa(burner.Process.Pid))
	}
	time.Sleep(50 * time.Millisecond)
	var a, b []host.CPUCounters
	for _, pid := range pids {
		a = append(a, host.ReadCPUCounters("/", pid))
	}
	n := measureOnce()
	burnt := 0.0 // % of a core
	for i, pid := range pids {
		b = append(b, host.ReadCPUCounters("/", pid))
		burnt += 100 * float64(b[i].Self-a[i].Self) / 100 / b[i].At.Sub(a[i].At).Seconds()
	}
	t.Logf("other processes' CPU: %.0f%% quiet, %.0f%% with burners that used %.0f%%", quiet.OtherCPUPct, n.OtherCPUPct, burnt)
	// The burner's share over the whole call (model load included) is an
	// upper bound of its share while the point ran: the pool's two spinning
	// threads leave it less of this machine's two cores then.
	if n.Quiet || !strings.Contains(strings.Join(n.Warnings, " "), "other processes used") || n.OtherCPUPct < max(25, quiet.OtherCPUPct+15) || burnt < 25 {
		t.Errorf("a core burnt beside the point (%.0f%%): %+v", burnt, n)
	}
	// Without the burner, no word of other processes unless there were
	// some (steal or outliers may still be said: a VM has its own noise).
	if quiet.OtherCPUPct < 10 && strings.Contains(strings.Join(quiet.Warnings, " "), "other processes used") {
		t.Errorf("a run without other processes said there were: %+v", quiet)
	}
}

// Outlying repetitions are reported and the machine is then not called
// quiet; --drop-outliers leaves them out of the figures.
func TestOutliers(t *testing.T) {
	if got := outliers([]float64{100, 101, 99, 100, 140, 100.5}); len(got) != 1 || got[0] != 4 {
		t.Errorf("outliers %v", got)
	}
	if got := outliers([]float64{100, 100, 100}); len(got) != 0 {
		t.Errorf("no spread, no outliers: %v", got)
	}
	// Three repetitions cannot define an outlier: one of them is the
	// median, another the MAD.
	if got := outliers([]float64{100, 97, 140}); len(got) != 0 {
		t.Errorf("3 repetitions: outliers %v", got)
	}
	// From three on, a repetition that drags the mean beyond the others'
	// CI is said; one within it is not.
	if w := dragged([]float64{100, 101, 10}); !strings.Contains(w, "repetition 2 (10.00 t/s) pulls the mean down") {
		t.Errorf("a rep ten times slower: %q", w)
	}
	if w := dragged([]float64{100, 101, 99.5}); w != "" {
		t.Errorf("a rep within the others' spread: %q", w)
	}
	r := &repetitions{p: point.Point{DropOutliers: true, Parallel: 1}, tokens: 100, cpu: host.ReadCPUCounters("/", "self")}
	ns := []float64{1e9, 1.01e9, 0.99e9, 1e9, 3e9, 1.005e9}
	rec := r.figures(ns)
	if rec.Reps != 5 || len(rec.SamplesTs) != 5 || rec.Noise.Quiet || !rec.Noise.OutliersDropped || len(rec.Noise.Outliers) != 1 || rec.MinTs < 90 {
		t.Errorf("dropped: %+v %+v", rec.Result, rec.Noise)
	}
	r.p.DropOutliers = false
	rec = r.figures(ns)
	if rec.Reps != 6 || rec.Noise.OutliersDropped || !strings.Contains(strings.Join(rec.Noise.Warnings, " "), "kept") {
		t.Errorf("kept: %+v %+v", rec.Result, rec.Noise)
	}
}

// Tests that share a context are checked for the largest of them, the one
// the context is sized for: a depth past what the model was trained for
// is refused before anything is measured, even behind a test that fits.
func TestTestsCheckTheLargest(t *testing.T) {
	fits, deep := tinyPoint(), tinyPoint()
	fits.NGen, deep.NGen = 0, 0
	deep.NDepth = 8000 // the tiny model is trained for 4096
	measured := 0
	recs, err := Tests(context.Background(), []point.Point{fits, deep}, DescribeEnv("test"), nil, func(record.Record) { measured++ }, nil)
	var ie *point.InputError
	if !errors.As(err, &ie) || len(recs) != 0 || measured != 0 {
		t.Errorf("err %v, %d records, %d measured", err, len(recs), measured)
	}
}

// measure1 runs one point: its pp test and its tg test (and, with
// sampling, the tg test through the sampler chain), each after one
// uncounted warm-up, in llama-bench's order (Tests).
func measure1(ctx context.Context, p point.Point, env Env, sampler *telemetry.Sampler, done func(record.Record)) ([]record.Record, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return Tests(ctx, p.Tests(), env, sampler, done, nil)
}
