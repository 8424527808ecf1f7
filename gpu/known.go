package gpu

import (
	"sort"
	"strings"
)

// Part is a datasheet entry: peak memory bandwidth and dense tensor
// throughput (no sparsity), for when the driver does not say.
type Part struct {
	Match  string  `json:"match"`  // words of the device name
	BWGBs  float64 `json:"bw_gbs"` // GB/s
	FP16   float64 `json:"fp16"`   // TFLOP/s
	BF16   float64 `json:"bf16"`   // TFLOP/s
	INT8   float64 `json:"int8"`   // TOP/s
	Approx bool    `json:"approx"` // vendor figures are rounded or derived
}

// knownParts are vendors' published figures. Names are matched whole and
// longest first, so "A100-SXM4-80GB" wins over "A100".
var knownParts = []Part{
	{Match: "H200", BWGBs: 4800, FP16: 989, BF16: 989, INT8: 1979},
	{Match: "H100 PCIe", BWGBs: 2000, FP16: 756, BF16: 756, INT8: 1513},
	{Match: "H100 NVL", BWGBs: 3900, FP16: 835, BF16: 835, INT8: 1671},
	{Match: "H100", BWGBs: 3350, FP16: 989, BF16: 989, INT8: 1979},
	{Match: "B200", BWGBs: 8000, FP16: 2250, BF16: 2250, INT8: 4500},
	{Match: "A100-SXM4-80GB", BWGBs: 2039, FP16: 312, BF16: 312, INT8: 624},
	{Match: "A100 80GB PCIe", BWGBs: 1935, FP16: 312, BF16: 312, INT8: 624},
	{Match: "A100", BWGBs: 1555, FP16: 312, BF16: 312, INT8: 624},
	{Match: "L40S", BWGBs: 864, FP16: 362, BF16: 362, INT8: 733},
	{Match: "L4", BWGBs: 300, FP16: 121, BF16: 121, INT8: 242},
	{Match: "RTX 3090", BWGBs: 936, FP16: 71, BF16: 71, INT8: 284},
	{Match: "RTX 4090", BWGBs: 1008, FP16: 165, BF16: 165, INT8: 661},
	{Match: "RTX 5090", BWGBs: 1792, FP16: 210, BF16: 210, INT8: 838},
	{Match: "Apple M1 Ultra", BWGBs: 800, FP16: 21, BF16: 21, Approx: true},
	{Match: "Apple M1 Max", BWGBs: 400, FP16: 10.4, BF16: 10.4, Approx: true},
	{Match: "Apple M1 Pro", BWGBs: 200, FP16: 5.2, BF16: 5.2, Approx: true},
	{Match: "Apple M1", BWGBs: 68, FP16: 2.6, BF16: 2.6, Approx: true},
	{Match: "Apple M2 Ultra", BWGBs: 800, FP16: 27.2, BF16: 27.2, Approx: true},
	{Match: "Apple M2 Max", BWGBs: 400, FP16: 13.6, BF16: 13.6, Approx: true},
	{Match: "Apple M2 Pro", BWGBs: 200, FP16: 6.8, BF16: 6.8, Approx: true},
	{Match: "Apple M2", BWGBs: 100, FP16: 3.6, BF16: 3.6, Approx: true},
	{Match: "Apple M3 Ultra", BWGBs: 819, FP16: 28, BF16: 28, Approx: true},
	{Match: "Apple M3 Max", BWGBs: 400, FP16: 16.4, BF16: 16.4, Approx: true},
	{Match: "Apple M3 Pro", BWGBs: 150, FP16: 7.4, BF16: 7.4, Approx: true},
	{Match: "Apple M3", BWGBs: 100, FP16: 4.1, BF16: 4.1, Approx: true},
	{Match: "Apple M4 Max", BWGBs: 546, FP16: 18.4, BF16: 18.4, Approx: true},
	{Match: "Apple M4 Pro", BWGBs: 273, FP16: 9.2, BF16: 9.2, Approx: true},
	{Match: "Apple M4", BWGBs: 120, FP16: 4.3, BF16: 4.3, Approx: true},
}

func init() {
	sort.SliceStable(knownParts, func(i, j int) bool { return len(knownParts[i].Match) > len(knownParts[j].Match) })
}

// LookupPart finds a device name in the table of known parts. A part's
// name must stand whole in the device's: "L4" is in "NVIDIA L4" but not
// in "NVIDIA L40".
func LookupPart(name string) (Part, bool) {
	n := strings.ToLower(name)
	for _, p := range knownParts {
		if containsWhole(n, strings.ToLower(p.Match)) {
			return p, true
		}
	}
	return Part{}, false
}

// containsWhole says whether word occurs in s with no letter or digit
// right before or after it.
func containsWhole(s, word string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], word)
		if j < 0 {
			return false
		}
		a, b := i+j, i+j+len(word)
		if (a == 0 || !alnum(s[a-1])) && (b == len(s) || !alnum(s[b])) {
			return true
		}
		i = a + 1
	}
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
