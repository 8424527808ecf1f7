package measure

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/halt"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/roofline"
	"github.com/tokbench/tokbench/stats"
)

// Probe measures device dev (one of engine.Devices()) with the
// given weight types, reps times each, keeping medians.
func Probe(dev gpu.Device, class string, threads int, types []string, reps int, log func(string)) (*roofline.Probe, error) {
	// Its C loops cannot stop in order, and nothing is measured yet: a
	// signal ends the process at once (halt).
	defer halt.AtOnce()()
	gpu := dev.Type != "cpu"
	copyBytes, iters := int64(256<<20), 5
	m, k, gemmIters, gemvIters := int64(2048), int64(2048), 3, 10
	if gpu {
		// A GPU gets sizes that fill it, unless one small product shows
		// it is no faster than a CPU (a software device such as mesa's
		// llvmpipe, for tests): then a CPU's sizes, or the probe would
		// take an hour.
		s, err := engine.ProbeMatMul(dev.Index, threads, "f16", 2048, 512, 2048, 1)
		if err != nil {
			return nil, err
		}
		if s < 0.05 {
			copyBytes, iters = min(int64(1<<30), max(int64(64<<20), int64(dev.MemoryFree)/8)), 20
			m, k, gemmIters, gemvIters = 8192, 8192, 20, 50
		} else {
			log(fmt.Sprintf("a %.0f GFLOP/s device: probed with a CPU's sizes", 2*2048*512*2048/s/1e9))
			copyBytes = 64 << 20
		}
	}
	p := &roofline.Probe{Class: class, Device: dev.Description, Backend: dev.Backend, Threads: threads, MatMul: map[string]roofline.MatMul{}, When: time.Now().UTC()}
	// Other work on the machine (or stolen time) while the probe runs
	// makes every ceiling low: the probe says so, and is not trusted.
	before := host.ReadCPUCounters("/", "self")
	defer func() {
		if n := host.NoiseBetween(before, host.ReadCPUCounters("/", "self")); n.OtherCPUPct > host.MaxOtherCPUPct || n.StealPct > host.MaxStealPct {
			p.Busy = fmt.Sprintf("other processes used %.0f%% CPU (of one core), %.0f%% of the time stolen", n.OtherCPUPct, n.StealPct)
			log("the machine was busy: " + p.Busy + "; these ceilings may be low (the next run on a quiet machine probes again)")
		}
	}()
	for r := 0; r < reps; r++ {
		s, err := budgeted(iters, func(n int) (float64, error) { return engine.ProbeCopy(dev.Index, threads, copyBytes, n) })
		if err != nil {
			return nil, err
		}
		p.BWRuns = append(p.BWRuns, 2*float64(copyBytes)/s/1e9)
	}
	p.BWGBs = stats.Median(p.BWRuns)
	log(fmt.Sprintf("memory bandwidth: %.1f GB/s (copy of %d MiB)", p.BWGBs, copyBytes>>20))
	// Reading alone: an F32 matrix of copyBytes times a vector.
	var reads []float64
	rk := int64(4096)
	rm := copyBytes / 4 / rk
	for r := 0; r < reps; r++ {
		s, err := budgeted(iters, func(n int) (float64, error) { return engine.ProbeMatMul(dev.Index, threads, "f32", rm, 1, rk, n) })
		if err != nil {
			return nil, err
		}
		reads = append(reads, float64(rm*rk*4)/s/1e9)
	}
	p.ReadBWGBs = stats.Median(reads)
	log(fmt.Sprintf("read bandwidth: %.1f GB/s (f32 matrix-vector product over %d MiB)", p.ReadBWGBs, copyBytes>>20))
	if !gpu {
		curve, err := readCurve(dev.Index, threads, copyBytes, p.ReadBWGBs)
		if err != nil {
			return nil, err
		}
		p.ReadCurve = curve
		var b strings.Builder
		for _, c := range curve {
			fmt.Fprintf(&b, " %d MiB %.0f,", c.Bytes>>20, c.GBs)
		}
		log(fmt.Sprintf("read bandwidth by working set (GB/s):%s", strings.TrimSuffix(b.String(), ",")))
	}
	for _, t := range types {
		var gemm, gemv []float64
		for r := 0; r < reps; r++ {
			s, err := budgeted(gemmIters, func(n int) (float64, error) { return engine.ProbeMatMul(dev.Index, threads, t, m, 512, k, n) })
			if err != nil {
				return nil, err
			}
			gemm = append(gemm, 2*float64(m*512*k)/s/1e9)
			s, err = budgeted(gemvIters, func(n int) (float64, error) { return engine.ProbeMatMul(dev.Index, threads, t, m, 1, k, n) })
			if err != nil {
				return nil, err
			}
			gemv = append(gemv, 2*float64(m*k)/s/1e9)
		}
		p.MatMul[t] = roofline.MatMul{GEMM: stats.Median(gemm), GEMV: stats.Median(gemv)}
		log(fmt.Sprintf("%s: GEMM %.1f GFLOP/s, GEMV %.1f GFLOP/s (%dx%d weights)", t, p.MatMul[t].GEMM, p.MatMul[t].GEMV, m, k))
	}
	return p, nil
}

// curveSets are the working sets of the read curve: from what a core's
// caches hold to past any last-level cache. A CPU's reported cache sizes
// are no guide (a VM is told of a whole socket's L3, and may reach a slice
// of it), so the curve measures where reading gets slower.
var curveSets = []int64{4 << 20, 16 << 20, 64 << 20, 1 << 30}

// readCurve times the probe's read (an F32 matrix-vector product, again
// and again over the same matrix) over each working set, plus the one
// already measured (at, gbs), smallest first.
func readCurve(dev, threads int, at int64, gbs float64) ([]roofline.WorkingSetBW, error) {
	const k = 4096
	var out []roofline.WorkingSetBW
	for _, ws := range curveSets {
		m := ws / 4 / k
		s, err := budgeted(1000, func(n int) (float64, error) { return engine.ProbeMatMul(dev, threads, "f32", m, 1, k, n) })
		if err != nil {
			return nil, err
		}
		out = append(out, roofline.WorkingSetBW{Bytes: m * k * 4, GBs: float64(m*k*4) / s / 1e9})
	}
	out = append(out, roofline.WorkingSetBW{Bytes: at, GBs: gbs})
	slices.SortFunc(out, func(a, b roofline.WorkingSetBW) int { return cmp.Compare(a.Bytes, b.Bytes) })
	return out, nil
}

// probeBudget is about how long one measurement of the probe may take.
const probeBudget = time.Second

// budgeted runs a measurement (seconds per iteration of n) once with one
// iteration to learn its cost, then with as many as fit in probeBudget, at
// most most: a slow device (a software GPU, a small CPU) is probed in
// bounded time, a fast one as precisely as before.
func budgeted(most int, run func(n int) (float64, error)) (float64, error) {
	s, err := run(1)
	if err != nil || most <= 1 || s <= 0 {
		return s, err
	}
	n := min(most, int(probeBudget.Seconds()/s))
	if n <= 1 {
		return s, nil
	}
	return run(n)
}

// ProbeDevice probes device idx of env (-1: the first GPU, else the CPU)
// with threads and the weight types, and stores the result in dir under
// the device's hardware class: the class a record of it gets.
func ProbeDevice(env Env, idx, threads int, types []string, reps int, dir string, log func(string)) (*roofline.Probe, string, error) {
	if idx < 0 {
		idx = 0
		if g := engine.GPUs(); len(g) > 0 {
			idx = g[0].Index
		}
	}
	if idx >= len(env.Devices) {
		return nil, "", point.Inputf("--device %d: there are %d devices (tokbench devices lists them)", idx, len(env.Devices))
	}
	if reps < 1 || threads < 1 {
		return nil, "", point.Inputf("-r and -t must be at least 1")
	}
	for _, t := range types {
		if _, err := point.ParseKVType(t); err != nil && t != "q4_k" && t != "q6_k" && t != "q5_k" {
			return nil, "", point.Inputf("--types: %q: use f16, bf16, f32, q8_0, q5_0, q5_1, q4_0, q4_1, iq4_nl, q4_k, q5_k, q6_k", t)
		}
	}
	d := env.Devices[idx]
	on := point.Point{Threads: threads}
	if d.Type != "cpu" {
		on.NGPULayers = -1
	}
	class := env.Device(on).Class
	log(fmt.Sprintf("probing %s (%s), class %s", d.Description, d.Backend, class))
	p, err := Probe(d, class, threads, types, reps, func(s string) { log("  " + s) })
	if err != nil {
		return nil, "", err
	}
	// A busy probe keeps the better figures of the one it replaces.
	if p.Busy != "" {
		old, _ := roofline.LoadProbe(dir, class)
		p.Merge(old)
	}
	path, err := p.Save(dir)
	return p, path, err
}

// quietFor is how long EnsureProbe watches the machine before probing
// again a probe in doubt.
const quietFor = 300 * time.Millisecond

// machineQuiet says whether other work is using the machine now.
func machineQuiet() bool {
	before := host.ReadCPUCounters("/", "self")
	time.Sleep(quietFor)
	n := host.NoiseBetween(before, host.ReadCPUCounters("/", "self"))
	return n.OtherCPUPct <= host.MaxOtherCPUPct && n.StealPct <= host.MaxStealPct
}

// EnsureProbe probes, once, the device a point runs on when its hardware
// class has no probe in dir yet (a few seconds on a CPU), so that the
// point's roofline has ceilings; log says so. Nothing when one exists.
func EnsureProbe(env Env, p point.Point, dir string, log func(string)) error {
	class := env.Device(p).Class
	old, err := roofline.LoadProbe(dir, class)
	doubt := ""
	if old != nil {
		// A probe taken on a busy machine is taken again once the
		// machine is quiet: one bad minute must not set every later
		// verdict.
		if doubt = old.Busy; doubt == "" || !machineQuiet() {
			return nil
		}
	}
	dev, ok := env.WorkingDevice(p)
	if !ok {
		return err
	}
	// More threads than cores read and compute no faster: their ceilings
	// are the cores' (probed once), not a probe of the oversubscription.
	if cores := runtime.NumCPU(); dev.Type == "cpu" && p.Threads > cores {
		q := p
		q.Threads = cores
		if err := EnsureProbe(env, q, dir, log); err != nil {
			return err
		}
		base, err := roofline.LoadProbe(dir, env.Device(q).Class)
		if base == nil {
			return err
		}
		at := *base
		at.Class, at.Threads = class, p.Threads
		_, err = at.Save(dir)
		return err
	}
	switch {
	case err != nil:
		// A damaged probe is made again, not trusted.
		log(fmt.Sprintf("%v; probing %s again", err, class))
	case doubt != "":
		log(fmt.Sprintf("the ceilings of %s were probed while %s: the machine is quiet now, probing it again", class, doubt))
	default:
		log(fmt.Sprintf("no ceilings known for %s yet: probing it once (cached; tokbench probe measures it again, --no-probe skips this)", class))
	}
	_, _, err = ProbeDevice(env, dev.Index, p.Threads, []string{"f16", "q8_0", "q4_0"}, 3, dir, log)
	return err
}
