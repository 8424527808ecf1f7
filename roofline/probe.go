package roofline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tokbench/tokbench/stats"

	"github.com/tokbench/tokbench/engine"
)

// Probe is what ggml achieved on one device: memory bandwidth (a large
// copy, bytes read + written over time) and matrix products per weight
// type, as a prefill runs them (GEMM, n=512) and as a decode step does
// (GEMV, n=1). A repetition keeps its fastest iteration; each figure is
// the median of its repetitions.
type Probe struct {
	Class   string            `json:"class"`
	Device  string            `json:"device"`
	Backend string            `json:"backend"`
	Threads int               `json:"threads"`
	BWGBs   float64           `json:"bw_gbs"`
	BWRuns  []float64         `json:"bw_runs"`
	MatMul  map[string]MatMul `json:"matmul"`
	When    time.Time         `json:"when"`
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
	return Peaks{Source: "probe", BWGBs: p.BWGBs, TFLOPS: best / 1000}
}

// RunProbe measures device dev (an index of engine.Devices()) with the
// given weight types, reps times each, keeping medians.
func RunProbe(dev engine.Device, class string, threads int, types []string, reps int, log func(string)) (*Probe, error) {
	gpu := dev.Type != "cpu"
	copyBytes, iters := int64(256<<20), 5
	m, k, gemmIters, gemvIters := int64(2048), int64(2048), 3, 10
	if gpu {
		copyBytes, iters = 1<<30, 20
		m, k, gemmIters, gemvIters = 8192, 8192, 20, 50
	}
	p := &Probe{Class: class, Device: dev.Description, Backend: dev.Backend, Threads: threads, MatMul: map[string]MatMul{}, When: time.Now().UTC()}
	for r := 0; r < reps; r++ {
		s, err := engine.ProbeCopy(dev.Index, threads, copyBytes, iters)
		if err != nil {
			return nil, err
		}
		p.BWRuns = append(p.BWRuns, 2*float64(copyBytes)/s/1e9)
	}
	p.BWGBs = stats.Median(p.BWRuns)
	log(fmt.Sprintf("memory bandwidth: %.1f GB/s (copy of %d MiB)", p.BWGBs, copyBytes>>20))
	for _, t := range types {
		var gemm, gemv []float64
		for r := 0; r < reps; r++ {
			s, err := engine.ProbeMatMul(dev.Index, threads, t, m, 512, k, gemmIters)
			if err != nil {
				return nil, err
			}
			gemm = append(gemm, 2*float64(m*512*k)/s/1e9)
			s, err = engine.ProbeMatMul(dev.Index, threads, t, m, 1, k, gemvIters)
			if err != nil {
				return nil, err
			}
			gemv = append(gemv, 2*float64(m*k)/s/1e9)
		}
		p.MatMul[t] = MatMul{GEMM: stats.Median(gemm), GEMV: stats.Median(gemv)}
		log(fmt.Sprintf("%s: GEMM %.1f GFLOP/s, GEMV %.1f GFLOP/s (%dx%d weights)", t, p.MatMul[t].GEMM, p.MatMul[t].GEMV, m, k))
	}
	return p, nil
}

func probePath(dir, class string) string { return filepath.Join(dir, "probe", class+".json") }

// Save stores the probe in dir/probe/CLASS.json.
func (p *Probe) Save(dir string) (string, error) {
	path := probePath(dir, p.Class)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	b, _ := json.MarshalIndent(p, "", "  ")
	return path, os.WriteFile(path, append(b, '\n'), 0o644)
}

// LoadProbe reads the probe of a class; nil if there is none.
func LoadProbe(dir, class string) (*Probe, error) {
	b, err := os.ReadFile(probePath(dir, class))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p Probe
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("probe file for %s: %w (run tokbench probe again)", class, err)
	}
	return &p, nil
}
