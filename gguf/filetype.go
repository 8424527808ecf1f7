package gguf

import (
	"fmt"
	"sort"
	"strings"
)

// fileTypes are llama.cpp's llama_ftype values by the names llama-quantize
// uses (lower case).
var fileTypes = map[string]int{
	"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q5_1": 9,
	"q2_k": 10, "q3_k_s": 11, "q3_k_m": 12, "q3_k_l": 13, "q4_k_s": 14, "q4_k_m": 15,
	"q5_k_s": 16, "q5_k_m": 17, "q6_k": 18, "iq2_xxs": 19, "iq2_xs": 20, "q2_k_s": 21,
	"iq3_xs": 22, "iq3_xxs": 23, "iq1_s": 24, "iq4_nl": 25, "iq3_s": 26, "iq3_m": 27,
	"iq2_s": 28, "iq2_m": 29, "iq4_xs": 30, "iq1_m": 31, "bf16": 32, "tq1_0": 36, "tq2_0": 37,
}

// needsImatrix are the file types llama.cpp only makes well (or at all)
// with an importance matrix, which tokbench does not compute.
var needsImatrix = map[string]bool{
	"iq2_xxs": true, "iq2_xs": true, "iq2_s": true, "iq2_m": true, "iq1_s": true, "iq1_m": true, "q2_k_s": true,
}

// FileTypeName is the name of a llama_ftype value.
func FileTypeName(ft int) string {
	for n, v := range fileTypes {
		if v == ft {
			return n
		}
	}
	if ft == 1024 {
		return "guessed"
	}
	return fmt.Sprintf("ftype(%d)", ft)
}

// FileTypes lists the quantization types tokbench can produce.
func FileTypes() []string {
	var out []string
	for n := range fileTypes {
		if !needsImatrix[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// ParseFileType checks a quantization type name.
func ParseFileType(name string) (string, int, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	ft, ok := fileTypes[n]
	if !ok {
		return "", 0, fmt.Errorf("unknown quantization type %q: use one of %s", name, strings.Join(FileTypes(), ", "))
	}
	if needsImatrix[n] {
		return "", 0, fmt.Errorf("quantization type %s needs an importance matrix, which tokbench does not compute: use iq3_xxs, q2_k or larger", n)
	}
	return n, ft, nil
}

// approxBPW are the bits per weight of each file type's tensors on a
// Llama-shaped model, roughly (llama-quantize's own figures): enough to
// estimate a file's size before it is made.
var approxBPW = map[string]float64{
	"f32": 32, "f16": 16, "bf16": 16, "q8_0": 8.5, "q6_k": 6.56, "q5_k_m": 5.69, "q5_k_s": 5.54, "q5_1": 6, "q5_0": 5.5,
	"q4_k_m": 4.85, "q4_k_s": 4.58, "q4_1": 5, "q4_0": 4.5, "iq4_nl": 4.5, "iq4_xs": 4.25, "q3_k_l": 4.27, "q3_k_m": 3.91,
	"q3_k_s": 3.5, "iq3_m": 3.66, "iq3_s": 3.44, "iq3_xs": 3.3, "iq3_xxs": 3.06, "q2_k": 3.35, "tq2_0": 2.06, "tq1_0": 1.69,
}

// ApproxBPW is a file type's bits per weight, roughly (16 for a type it
// does not know).
func ApproxBPW(name string) float64 {
	if b, ok := approxBPW[strings.ToLower(name)]; ok {
		return b
	}
	return 16
}
