package gguf

import (
	"fmt"
	"strings"
)

// GGMLType is a ggml tensor element type as stored in a GGUF tensor table.
type GGMLType uint32

// typeInfo is the block layout of one ggml type: blockSize elements take
// typeSize bytes. A zero typeSize marks an id that ggml has removed.
type typeInfo struct {
	name      string
	blockSize int64
	typeSize  int64
}

// types mirrors ggml's type traits (ggml.c) for ggml as pinned in
// third_party/README.md. engine's tests compare it with ggml itself.
var types = [...]typeInfo{
	0:  {"f32", 1, 4},
	1:  {"f16", 1, 2},
	2:  {"q4_0", 32, 18},
	3:  {"q4_1", 32, 20},
	6:  {"q5_0", 32, 22},
	7:  {"q5_1", 32, 24},
	8:  {"q8_0", 32, 34},
	9:  {"q8_1", 32, 36},
	10: {"q2_K", 256, 84},
	11: {"q3_K", 256, 110},
	12: {"q4_K", 256, 144},
	13: {"q5_K", 256, 176},
	14: {"q6_K", 256, 210},
	15: {"q8_K", 256, 292},
	16: {"iq2_xxs", 256, 66},
	17: {"iq2_xs", 256, 74},
	18: {"iq3_xxs", 256, 98},
	19: {"iq1_s", 256, 50},
	20: {"iq4_nl", 32, 18},
	21: {"iq3_s", 256, 110},
	22: {"iq2_s", 256, 82},
	23: {"iq4_xs", 256, 136},
	24: {"i8", 1, 1},
	25: {"i16", 1, 2},
	26: {"i32", 1, 4},
	27: {"i64", 1, 8},
	28: {"f64", 1, 8},
	29: {"iq1_m", 256, 56},
	30: {"bf16", 1, 2},
	34: {"tq1_0", 256, 54},
	35: {"tq2_0", 256, 66},
	39: {"mxfp4", 32, 17},
}

// NumTypes is ggml's GGML_TYPE_COUNT for the pinned version.
const NumTypes = 40

// Valid reports whether t is a type ggml can load today.
func (t GGMLType) Valid() bool {
	return int(t) < len(types) && types[t].typeSize > 0
}

func (t GGMLType) isInt() bool { return t >= 24 && t <= 27 }

// BlockSize is the number of elements in one block of t.
func (t GGMLType) BlockSize() int64 {
	if !t.Valid() {
		return 0
	}
	return types[t].blockSize
}

// TypeSize is the number of bytes of one block of t.
func (t GGMLType) TypeSize() int64 {
	if !t.Valid() {
		return 0
	}
	return types[t].typeSize
}

// RowSize is the number of bytes n elements of t take (n a multiple of the block size).
func (t GGMLType) RowSize(n int64) int64 {
	if !t.Valid() {
		return 0
	}
	return types[t].typeSize * (n / types[t].blockSize)
}

func (t GGMLType) String() string {
	if !t.Valid() {
		return fmt.Sprintf("type(%d)", uint32(t))
	}
	return types[t].name
}

// ParseType finds a ggml type by its name, case-insensitively ("q4_K", "Q8_0", "f16").
func ParseType(name string) (GGMLType, bool) {
	for i, ti := range types {
		if ti.typeSize > 0 && strings.EqualFold(ti.name, name) {
			return GGMLType(i), true
		}
	}
	return 0, false
}
