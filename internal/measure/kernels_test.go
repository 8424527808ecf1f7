package measure

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
	"github.com/tokbench/tokbench/stats"
)

// The kernels of a step, timed op by op, add up to the same ops timed as
// one graph: the sum the decomposition rests on does not drift from what
// the ops cost together. Tolerance: the median of three ratios within
// 25% (each a few hundred microseconds on the tiny model). One thread,
// and up to three tries: another process on the machine (the other
// packages' tests) stalls a thread pool's barriers unevenly, a drift of
// the sum is there on every try.
func TestKernelsAddUp(t *testing.T) {
	f, err := plan.Read(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ tokens, ctx, outputs int64 }{{1, 16, 1}, {48, 24, 1}} {
		ops := roofline.StepOps(f.StepShape("f16", "f16", true, 0, 0), step.tokens, step.ctx, step.outputs)
		var tries []float64
		for range 3 {
			r := medianOpRatio(t, ops)
			if tries = append(tries, r); r >= 0.75 && r <= 1.33 {
				break
			}
		}
		if r := tries[len(tries)-1]; r < 0.75 || r > 1.33 {
			t.Errorf("%d tokens: the ops alone sum to %.2f x the step's graph (tries %v)", step.tokens, r, tries)
		}
	}
}

// medianOpRatio is the median of three ratios of ops' times, each alone
// and summed, to their time as one graph.
func medianOpRatio(t *testing.T, ops []roofline.Op) float64 {
	var ratios []float64
	for range 3 {
		var sum float64
		var all []engine.OpCopies
		for _, op := range ops {
			s, err := engine.TimeOps(0, 1, []engine.OpCopies{{Op: op, Copies: op.Count}}, 9, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			sum += s
			all = append(all, engine.OpCopies{Op: op, Copies: op.Count})
		}
		whole, err := engine.TimeOps(0, 1, all, 9, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ratios = append(ratios, sum/whole)
	}
	return stats.Median(ratios)
}

// A measured record carries its kernels, cached by shape: the same
// point again re-times nothing; its roofline splits the step.
func TestRecordsCarryKernels(t *testing.T) {
	p := tinyPoint()
	p.NPrompt, p.NGen, p.Reps = 32, 16, 3
	env := DescribeEnv("test")
	env.CacheDir = t.TempDir()
	recs, err := measure1(context.Background(), p, env, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		tokens := int64(1)
		if r.IsPrompt() {
			tokens = 32
		}
		if len(r.Kernels) < 10 || r.KernelsNote != "" || r.Phases.KernelsMs <= 0 {
			t.Fatalf("%s: %d kernels (%s)", r.Test, len(r.Kernels), r.KernelsNote)
		}
		for _, k := range r.Kernels {
			// A prefill's last layer runs its feed-forward side on the
			// outputs alone.
			if k.Ms <= 0 || (k.N != tokens && k.Kind != roofline.OpMatMul && !strings.Contains(k.Name, "[last layer: 1 outputs]")) {
				t.Errorf("%s: kernel %+v", r.Test, k)
			}
		}
	}
	cached := len(cachedKernels(env.CacheDir))
	again, err := measure1(context.Background(), p, env, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A timing taken while other processes ran is not cached (a shared
	// runner), and the second measurement times it again (and caches it,
	// when quiet): the reuse is tested when the first cached every op.
	if n := len(cachedKernels(env.CacheDir)); n == 0 || n != cached {
		t.Logf("the machine was busy: %d kernel timings cached by the first measurement, %d by the second; the cache's reuse is not tested", cached, n)
		again = nil
	}
	for i := range again {
		if !slices.Equal(msOf(again[i].Kernels), msOf(recs[i].Kernels)) {
			t.Errorf("%s: kernels timed again instead of read from the cache", again[i].Test)
		}
	}
	probe := &roofline.Probe{Class: recs[0].Class(), Threads: recs[0].Threads, BWGBs: 20, ReadBWGBs: 18, MatMul: map[string]roofline.MatMul{"f16": {GEMM: 100}}}
	if _, err := probe.Save(env.CacheDir); err != nil {
		t.Fatal(err)
	}
	if err := record.Annotate(recs, &roofline.Cache{Dir: env.CacheDir}); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		d := r.Roofline.Decomp
		if d == nil || d.StepMs <= 0 || d.KernelMs <= 0 || d.HardwareMs <= 0 || d.Top == "" || r.Roofline.Why == "" {
			t.Errorf("%s: decomposition %+v", r.Test, d)
		}
	}
}

func cachedKernels(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "kernels", "*", "*.json"))
	return files
}

func msOf(ks []roofline.KernelTime) []float64 {
	var out []float64
	for _, k := range ks {
		out = append(out, k.Ms)
	}
	return out
}

// A timing asked to stop ends between two ops, with nothing made up; a
// budget bounds each op's runs (at least one).
func TestKernelTimerStops(t *testing.T) {
	f, err := plan.Read(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	ops := roofline.StepOps(f.StepShape("f16", "f16", false, 0, 0), 1, 8, 1)
	calls := 0
	kt := kernelTimer{Threads: 2, Stop: func() bool { calls++; return calls > 3 }}
	if ks, err := kt.Time(ops); err != errKernelsStopped || ks != nil {
		t.Errorf("stopped timing: %d kernels, %v", len(ks), err)
	}
	start := time.Now()
	if _, err := engine.TimeOps(0, 2, []engine.OpCopies{{Op: ops[0], Copies: 1}}, 1000000, time.Millisecond); err != nil || time.Since(start) > 5*time.Second {
		t.Errorf("a million runs within a 1 ms budget took %s: %v", time.Since(start), err)
	}
}

// A kernel timed while another process keeps a core busy is used once,
// not cached (it would stand for the op on this machine from then on);
// timed on a quiet machine, it is cached.
func TestBusyKernelsNotCached(t *testing.T) {
	op := roofline.Op{Name: "mul_mat f16 2048x2048", Kind: roofline.OpMatMul, Type: "f16", A: 2048, B: 2048, N: 64, Count: 4}
	dir := t.TempDir()
	kt := kernelTimer{Dir: dir, Class: "c", Build: "b", Threads: 2}
	cached := func() int {
		m, _ := filepath.Glob(filepath.Join(dir, "kernels", "c", "*.json"))
		return len(m)
	}
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Skip("no shell:", err)
	}
	ks, err := kt.Time([]roofline.Op{op})
	busy.Process.Kill()
	busy.Wait()
	if err != nil || len(ks) != 1 || ks[0].Ms <= 0 || cached() != 0 {
		t.Fatalf("busy: %v %+v, %d cached", err, ks, cached())
	}
	// Quiet now, if other work leaves the machine alone a moment (a few
	// tries): timed in a quiet window, it is cached. On a machine busy
	// throughout (a shared runner), that half cannot be checked.
	for range 3 {
		before := host.ReadCPUCounters("/", "self")
		if _, err := kt.Time([]roofline.Op{op}); err != nil {
			t.Fatal(err)
		}
		quiet := host.NoiseBetween(before, host.ReadCPUCounters("/", "self")).OtherCPUPct <= host.MaxOtherCPUPct
		if cached() == 1 {
			return
		}
		if quiet {
			t.Fatalf("timed in a quiet window, yet not cached")
		}
	}
	t.Skip("the machine was busy through every try: caching on a quiet machine not checked")
}
