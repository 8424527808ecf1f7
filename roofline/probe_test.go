package roofline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A probe read back with a figure no device has (1e308 GB/s, NaN) is an
// error that says to probe again, never ceilings of infinity.
func TestDamagedProbeRefused(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "probe"), 0o755)
	for _, bad := range []string{`{"bw_gbs": 1e308}`, `{"bw_gbs": 50, "matmul": {"q4_0": {"gemm_gflops": -1}}}`, `{"bw_gbs": 50, "read_curve": [{"bytes": 1, "gbs": 1e300}]}`} {
		os.WriteFile(filepath.Join(dir, "probe", "c.json"), []byte(bad), 0o644)
		if _, err := LoadProbe(dir, "c"); err == nil || !strings.Contains(err.Error(), "out of range") || !strings.Contains(err.Error(), "probe again") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	os.WriteFile(filepath.Join(dir, "probe", "c.json"), []byte(`{"bw_gbs": 50, "matmul": {"q4_0": {"gemm_gflops": 300, "gemv_gflops": 60}}}`), 0o644)
	if p, err := LoadProbe(dir, "c"); err != nil || p.BWGBs != 50 {
		t.Errorf("a good probe: %v %v", p, err)
	}
}
