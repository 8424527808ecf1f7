package roofline

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/tokbench/tokbench/gpu"
)

// Probe is what ggml achieved on one device: memory bandwidth (a large
// copy, bytes read + written over time) and matrix products per weight
// type, as a prefill runs them (GEMM, n=512) and as a decode step does
// (GEMV, n=1). A repetition keeps its fastest iteration; each figure is
// the median of its repetitions.
type Probe struct {
	Class   string    `json:"class"`
	Device  string    `json:"device"`
	Backend string    `json:"backend"`
	Threads int       `json:"threads"`
	BWGBs   float64   `json:"bw_gbs"`
	BWRuns  []float64 `json:"bw_runs"`
	// ReadBWGBs is reading alone: an F32 matrix-vector product (a
	// reduction of the matrix), as decode reads its weights.
	ReadBWGBs float64 `json:"read_bw_gbs,omitempty"`
	// ReadCurve is the same read over working sets from a few MiB to
	// past any cache (CPU only), smallest first.
	ReadCurve []WorkingSetBW    `json:"read_curve,omitempty"`
	MatMul    map[string]MatMul `json:"matmul"`
	When      time.Time         `json:"when"`
	// Busy says other work used the machine while the probe ran (what
	// and how much): its ceilings may be low. The next run on a quiet
	// machine probes again.
	Busy string `json:"busy,omitempty"`
	// Build is the build whose kernels were timed (its cpu_features: the
	// ISA and the options, REPACK and OPENMP among them): another build's
	// products run other kernels, and are probed again.
	Build string `json:"build,omitempty"`
}

// Of says whether the probe may be build's: it is, or either is unknown
// (a probe made before probes said their build is read as it is; a run
// probes it again, EnsureProbe).
func (p *Probe) Of(build string) bool { return build == "" || p.Build == "" || p.Build == build }

// Merge keeps the better of two probes of one class, figure by figure: a
// ceiling is the most the machine was seen to reach, and a busy machine
// only ever reads lower.
func (p *Probe) Merge(old *Probe) {
	if old == nil || old.Class != p.Class || old.Threads != p.Threads {
		return
	}
	p.BWGBs, p.ReadBWGBs = max(p.BWGBs, old.BWGBs), max(p.ReadBWGBs, old.ReadBWGBs)
	for t, m := range old.MatMul {
		if n, ok := p.MatMul[t]; ok {
			p.MatMul[t] = MatMul{GEMM: max(n.GEMM, m.GEMM), GEMV: max(n.GEMV, m.GEMV)}
		}
	}
}

// MatMul is one weight type's throughput, GFLOP/s.
type MatMul struct {
	GEMM float64 `json:"gemm_gflops"` // m x 512 x k
	GEMV float64 `json:"gemv_gflops"` // m x 1 x k: bandwidth-bound, as decode
}

// Peaks are the probe's ceilings: its bandwidth and its best GEMM.
func (p *Probe) Peaks() Peaks {
	best := 0.0
	for _, m := range p.MatMul {
		best = max(best, m.GEMM)
	}
	return Peaks{Source: "probe", BWGBs: p.BWGBs, TFLOPS: best / 1000, ReadBWGBs: p.ReadBWGBs, ReadCurve: p.ReadCurve, Busy: p.Busy}
}

// probeDir is where probes are kept: dir/probe/NAME.json (ProbeName).
func probeDir(dir string) string { return filepath.Join(dir, "probe") }

// Save stores the probe in dir/probe/NAME.json.
func (p *Probe) Save(dir string) (string, error) {
	return gpu.SaveClass(probeDir(dir), ProbeName(p.Class, p.Threads), p)
}

// LoadProbe reads the probe kept under name (ProbeName); nil if there
// is none.
func LoadProbe(dir, name string) (*Probe, error) {
	var p Probe
	class := name
	found, err := gpu.LoadClass(probeDir(dir), name, &p)
	switch {
	case err != nil:
		return nil, fmt.Errorf("probe file for %s: %w (run tokbench probe again)", class, err)
	case !found:
		return nil, nil
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("probe file for %s: %w: run tokbench probe again", class, err)
	}
	// A CPU probe written when the class named the thread count too
	// (cpu-MODEL-2t) is its class's probe at that count.
	if ProbeName(p.Class, p.Threads) != name {
		if c, ok := strings.CutSuffix(p.Class, fmt.Sprintf("-%dt", p.Threads)); ok && ProbeName(c, p.Threads) == name {
			p.Class = c
		}
	}
	return &p, nil
}

// Limits of a probe's figures: past any device's (100 TB/s, 10 PFLOP/s).
const (
	maxGBs    = 1e5
	maxGFLOPS = 1e7
)

// check says which figure of a probe read back is not a device's: not a
// number, or out of range.
func (p *Probe) check() error {
	in := func(name string, v, most float64) error {
		if math.IsNaN(v) || v < 0 || v > most {
			return fmt.Errorf("%s %g is out of range (0 to %g)", name, v, most)
		}
		return nil
	}
	errs := []error{in("bw_gbs", p.BWGBs, maxGBs), in("read_bw_gbs", p.ReadBWGBs, maxGBs)}
	for _, w := range p.ReadCurve {
		errs = append(errs, in("read_curve", w.GBs, maxGBs))
	}
	for t, m := range p.MatMul {
		errs = append(errs, in(t+" gemm_gflops", m.GEMM, maxGFLOPS), in(t+" gemv_gflops", m.GEMV, maxGFLOPS))
	}
	return errors.Join(errs...)
}
