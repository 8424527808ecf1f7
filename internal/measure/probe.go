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
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/roofline"
	"github.com/tokbench/tokbench/stats"
)

// probeOptions say what a probe measures, and how long.
type probeOptions struct {
	types     []string // the weight types whose products are timed
	reps      int      // each figure's repetitions (their median)
	bandwidth bool     // the bandwidths too, not the types' products alone
	curve     []int64  // the working sets of a CPU's read curve
	budget    time.Duration
}

// A full probe (tokbench probe) measures each figure three times, for up
// to a second each; a first run's quick one once, for a tenth of that
// (its fastest of a few runs), and its read curve without the GiB (the
// copy's 256 MiB are past most caches already), so a first run costs
// about its own tests.
func fullProbe(types []string, reps int) probeOptions {
	return probeOptions{types: types, reps: reps, bandwidth: true, curve: curveSets, budget: time.Second}
}

func quickProbe(types []string, bandwidth bool) probeOptions {
	return probeOptions{types: types, reps: 1, bandwidth: bandwidth, curve: curveSets[:len(curveSets)-1], budget: 100 * time.Millisecond}
}

// probe measures device dev (one of engine.Devices()) as o says, keeping
// each figure's median.
func probe(dev gpu.Device, class string, threads int, o probeOptions, log func(string)) (*roofline.Probe, error) {
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
		s, err := engine.ProbeMatMul(dev.Index, threads, "f16", 2048, 512, 2048, 1, 0)
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
	if o.bandwidth {
		if err := probeBandwidth(p, dev.Index, threads, copyBytes, iters, o, !gpu, log); err != nil {
			return nil, err
		}
	}
	for _, t := range o.types {
		var gemm, gemv []float64
		for r := 0; r < o.reps; r++ {
			s, err := engine.ProbeMatMul(dev.Index, threads, t, m, 512, k, gemmIters, o.budget)
			if err != nil {
				return nil, err
			}
			gemm = append(gemm, 2*float64(m*512*k)/s/1e9)
			s, err = engine.ProbeMatMul(dev.Index, threads, t, m, 1, k, gemvIters, o.budget)
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

// probeBandwidth measures a device's copy and read bandwidth into p,
// and on a CPU (curve) its read bandwidth by working set.
func probeBandwidth(p *roofline.Probe, dev, threads int, copyBytes int64, iters int, o probeOptions, curve bool, log func(string)) error {
	for r := 0; r < o.reps; r++ {
		s, err := engine.ProbeCopy(dev, threads, copyBytes, iters, o.budget)
		if err != nil {
			return err
		}
		p.BWRuns = append(p.BWRuns, 2*float64(copyBytes)/s/1e9)
	}
	p.BWGBs = stats.Median(p.BWRuns)
	log(fmt.Sprintf("memory bandwidth: %.1f GB/s (copy of %d MiB)", p.BWGBs, copyBytes>>20))
	// Reading alone: an F32 matrix of copyBytes times a vector.
	var reads []float64
	rk := int64(4096)
	rm := copyBytes / 4 / rk
	for r := 0; r < o.reps; r++ {
		s, err := engine.ProbeMatMul(dev, threads, "f32", rm, 1, rk, iters, o.budget)
		if err != nil {
			return err
		}
		reads = append(reads, float64(rm*rk*4)/s/1e9)
	}
	p.ReadBWGBs = stats.Median(reads)
	log(fmt.Sprintf("read bandwidth: %.1f GB/s (f32 matrix-vector product over %d MiB)", p.ReadBWGBs, copyBytes>>20))
	if curve {
		sets, err := readCurve(dev, threads, o.curve, copyBytes, p.ReadBWGBs, o.budget)
		if err != nil {
			return err
		}
		p.ReadCurve = sets
		var b strings.Builder
		for _, c := range sets {
			fmt.Fprintf(&b, " %d MiB %.0f,", c.Bytes>>20, c.GBs)
		}
		log(fmt.Sprintf("read bandwidth by working set (GB/s):%s", strings.TrimSuffix(b.String(), ",")))
	}
	return nil
}

// curveSets are the working sets of the read curve: from what a core's
// caches hold to past any last-level cache. A CPU's reported cache sizes
// are no guide (a VM is told of a whole socket's L3, and may reach a slice
// of it), so the curve measures where reading gets slower.
var curveSets = []int64{4 << 20, 16 << 20, 64 << 20, 1 << 30}

// readCurve times the probe's read (an F32 matrix-vector product, again
// and again over the same matrix) over each working set of sets, plus
// the one already measured (at, gbs), smallest first.
func readCurve(dev, threads int, sets []int64, at int64, gbs float64, budget time.Duration) ([]roofline.WorkingSetBW, error) {
	const k = 4096
	var out []roofline.WorkingSetBW
	for _, ws := range sets {
		m := ws / 4 / k
		s, err := engine.ProbeMatMul(dev, threads, "f32", m, 1, k, 1000, budget)
		if err != nil {
			return nil, err
		}
		out = append(out, roofline.WorkingSetBW{Bytes: m * k * 4, GBs: float64(m*k*4) / s / 1e9})
	}
	out = append(out, roofline.WorkingSetBW{Bytes: at, GBs: gbs})
	slices.SortFunc(out, func(a, b roofline.WorkingSetBW) int { return cmp.Compare(a.Bytes, b.Bytes) })
	return out, nil
}

// ProbeDevice probes device idx of env (-1: the first GPU, else the CPU)
// with threads and the weight types, and stores the result in dir under
// the device's hardware class: the class a record of it gets.
func ProbeDevice(env Env, idx, threads int, types []string, reps int, dir string, log func(string)) (*roofline.Probe, string, error) {
	return probeDevice(env, idx, threads, fullProbe(types, reps), dir, log)
}

// probeDevice is ProbeDevice; without bandwidth, it times the types'
// products alone, beside a probe's other figures.
func probeDevice(env Env, idx, threads int, o probeOptions, dir string, log func(string)) (*roofline.Probe, string, error) {
	if idx < 0 {
		idx = 0
		if g := engine.GPUs(); len(g) > 0 {
			idx = g[0].Index
		}
	}
	if idx >= len(env.Devices) {
		return nil, "", point.Inputf("--device %d: there are %d devices (tokbench devices lists them)", idx, len(env.Devices))
	}
	if o.reps < 1 || threads < 1 {
		return nil, "", point.Inputf("-r and -t must be at least 1")
	}
	for _, t := range o.types {
		if !probeable(t) {
			return nil, "", point.Inputf("--types: %q: use f16, bf16, f32, q8_0, q5_0, q5_1, q4_0, q4_1, iq4_nl, q4_k, q5_k, q6_k", t)
		}
	}
	d := env.Devices[idx]
	on := point.Point{Shape: point.Shape{Threads: threads}}
	if d.Type != "cpu" {
		on.NGPULayers = -1
	}
	class := env.Device(on).Class
	log(fmt.Sprintf("probing %s (%s), class %s", d.Description, d.Backend, class))
	p, err := probe(d, class, threads, o, func(s string) { log("  " + s) })
	if err != nil {
		return nil, "", err
	}
	p.Build = env.CPUFeatures
	// A busy probe keeps the better figures of the one it replaces; a
	// probe of some types keeps the others' figures (and, timing the
	// types alone, the bandwidth).
	if old, _ := roofline.LoadProbe(dir, roofline.ProbeName(class, threads)); old != nil && old.Build == p.Build {
		if !o.bandwidth {
			p.BWGBs, p.BWRuns, p.ReadBWGBs, p.ReadCurve, p.Busy = old.BWGBs, old.BWRuns, old.ReadBWGBs, old.ReadCurve, cmp.Or(p.Busy, old.Busy)
		}
		if p.Busy != "" {
			p.Merge(old)
		}
		// (A busy probe's other types are not carried into a quiet one:
		// they would lose their mark; the next run that needs them
		// times them again.)
		for t, m := range old.MatMul {
			if _, ok := p.MatMul[t]; !ok && (old.Busy == "" || p.Busy != "") {
				p.MatMul[t] = m
			}
		}
	}
	path, err := p.Save(dir)
	return p, path, err
}

// probeable says whether the probe can time products of weight type t.
func probeable(t string) bool {
	_, err := point.ParseKVType(t)
	return err == nil || t == "q4_k" || t == "q6_k" || t == "q5_k"
}

// ProbeTypes are the weight types a run's models need ceilings of: f16
// (the compute ceiling a CPU is judged by) and each model's main type,
// the one most of its weights are in.
func ProbeTypes(models []plan.File) []string {
	types := []string{"f16"}
	for _, f := range models {
		main, most := "", int64(0)
		for t, b := range f.TensorBytes {
			if t = strings.ToLower(t); probeable(t) && b > most {
				main, most = t, b
			}
		}
		if main != "" && !slices.Contains(types, main) {
			types = append(types, main)
		}
	}
	return types
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

// A quick probe's cost on a CPU, measured: about 1.5 s for the
// bandwidths and 0.15 s a weight type on a 2-core EPYC VM (huge pages;
// 6 s without them, or with the GiB read). A GPU's sizes take longer.
const (
	quickBandwidthCost = 2 * time.Second
	quickTypeCost      = 300 * time.Millisecond
	gpuProbeFactor     = 4
)

// EnsureProbe probes, once, the device a point runs on when its hardware
// class has no probe in dir at the point's threads yet, or one without
// some of types (the run's: ProbeTypes), so that the point's roofline has
// ceilings; log says so. A first probe is quick (one repetition, the
// types the run needs: a second or two on a CPU, not a run's worth);
// tokbench probe measures all of it three times. Nothing when the probe
// holds what the run needs, or when it would take longer than within (a
// run's own tests: a short run is not made many times longer by its
// ceilings); then it returns false.
func EnsureProbe(env Env, p point.Point, types []string, dir string, within time.Duration, log func(string)) (bool, error) {
	d := env.Device(p)
	name := d.ProbeName()
	old, err := roofline.LoadProbe(dir, name)
	if old != nil && old.Build != d.Build {
		// Another build's kernels (or one that did not say): probed again
		// whole, not carried over.
		log(fmt.Sprintf("the ceilings of %s were probed with another build (%s; this one is %s): probing again", name, cmp.Or(old.Build, "one that did not say"), d.Build))
		old = nil
	}
	var missing []string
	if old != nil {
		for _, t := range types {
			if _, ok := old.MatMul[t]; !ok {
				missing = append(missing, t)
			}
		}
		// A probe taken on a busy machine is taken again once the
		// machine is quiet: one bad minute must not set every later
		// verdict.
		if old.Busy != "" && machineQuiet() {
			missing = nil
		} else if len(missing) == 0 {
			return true, nil
		}
	}
	dev, ok := env.WorkingDevice(p)
	if !ok {
		return true, err
	}
	cost := quickBandwidthCost + time.Duration(len(types))*quickTypeCost
	if len(missing) > 0 {
		cost = time.Duration(len(missing)) * quickTypeCost
	}
	if dev.Type != "cpu" {
		cost *= gpuProbeFactor
	}
	if cost > within {
		return old != nil && len(missing) == 0, nil
	}
	// More threads than cores read and compute no faster: their ceilings
	// are the cores' (probed once), not a probe of the oversubscription.
	if cores := runtime.NumCPU(); dev.Type == "cpu" && p.Threads > cores {
		q := p
		q.Threads = cores
		if ok, err := EnsureProbe(env, q, types, dir, within, log); !ok || err != nil {
			return ok, err
		}
		base, err := roofline.LoadProbe(dir, env.Device(q).ProbeName())
		if base == nil {
			return true, err
		}
		at := *base
		at.Class, at.Threads = d.Class, p.Threads
		_, err = at.Save(dir)
		return true, err
	}
	switch {
	case err != nil:
		// A damaged probe is made again, not trusted.
		log(fmt.Sprintf("%v; probing %s again", err, name))
	case len(missing) > 0:
		// Only the types the probe lacks: the rest stand.
		log(fmt.Sprintf("no %s ceilings known for %s yet: probing them once (cached)", strings.Join(missing, ", "), name))
		_, _, err = probeDevice(env, dev.Index, p.Threads, quickProbe(missing, false), dir, log)
		return true, err
	case old != nil:
		log(fmt.Sprintf("the ceilings of %s were probed while %s: the machine is quiet now, probing it again", name, old.Busy))
	default:
		log(fmt.Sprintf("no ceilings known for %s yet: a quick probe, once (cached; tokbench probe measures it three times, --no-probe skips this)", name))
	}
	_, _, err = probeDevice(env, dev.Index, p.Threads, quickProbe(types, true), dir, log)
	return true, err
}
