package roofline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
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
