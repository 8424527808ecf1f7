package gpu

import "testing"

func TestLookupPartMatchesWholeNames(t *testing.T) {
	for name, want := range map[string]float64{
		"NVIDIA L4":               300,
		"NVIDIA L40S":             864,
		"NVIDIA H100 80GB HBM3":   3350,
		"NVIDIA H100 PCIe":        2000,
		"NVIDIA H200":             4800,
		"NVIDIA A100-SXM4-80GB":   2039,
		"NVIDIA A100-SXM4-40GB":   1555,
		"NVIDIA GeForce RTX 4090": 1008,
		"Apple M2 Max":            400,
		"Apple M2":                100,
	} {
		p, ok := LookupPart(name)
		if !ok || p.BWGBs != want {
			t.Errorf("%s: %v %v GB/s, want %v", name, ok, p.BWGBs, want)
		}
	}
	// L40 (not S) is not in the table: it must not pass for an L4.
	for _, name := range []string{"NVIDIA L40", "NVIDIA H1000", "Apple M20"} {
		if p, ok := LookupPart(name); ok {
			t.Errorf("%s matched %s", name, p.Match)
		}
	}
}
