package point

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tokbench/tokbench/gguf"
)

// FlashAttn is llama.cpp's flash attention setting; the values are
// llama_flash_attn_type's (engine checks that they match).
type FlashAttn int

// Flash attention settings.
const (
	FlashAuto FlashAttn = -1
	FlashOff  FlashAttn = 0
	FlashOn   FlashAttn = 1
)

func (f FlashAttn) String() string {
	switch f {
	case FlashOn:
		return "on"
	case FlashOff:
		return "off"
	}
	return "auto"
}

// ParseFlashAttn reads on/off/auto (or 1/0, as llama-bench writes them).
func ParseFlashAttn(s string) (FlashAttn, error) {
	switch strings.ToLower(s) {
	case "on", "1", "true", "yes":
		return FlashOn, nil
	case "off", "0", "false", "no":
		return FlashOff, nil
	case "auto", "-1", "":
		return FlashAuto, nil
	}
	return 0, fmt.Errorf("flash attention %q: use on, off or auto", s)
}

// SplitMode says how a model is spread over several GPUs; the values are
// llama_split_mode's.
type SplitMode int

// Split modes.
const (
	SplitNone  SplitMode = 0
	SplitLayer SplitMode = 1
	SplitRow   SplitMode = 2
)

func (s SplitMode) String() string {
	switch s {
	case SplitNone:
		return "none"
	case SplitRow:
		return "row"
	}
	return "layer"
}

// ParseSplitMode reads none, layer or row.
func ParseSplitMode(s string) (SplitMode, error) {
	switch s {
	case "none":
		return SplitNone, nil
	case "layer", "":
		return SplitLayer, nil
	case "row":
		return SplitRow, nil
	}
	return 0, fmt.Errorf("split mode %q: use none, layer or row", s)
}

// KVTypes are the KV cache types llama.cpp's attention kernels accept.
var KVTypes = []string{"f16", "bf16", "f32", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl"}

// ParseKVType checks a KV cache type name and returns it in lower case.
func ParseKVType(s string) (string, error) {
	n := strings.ToLower(s)
	if !slices.Contains(KVTypes, n) {
		return "", fmt.Errorf("KV cache type %q: use one of %s", s, strings.Join(KVTypes, ", "))
	}
	return n, nil
}

// KVTypes are the point's KV cache types, f16 where unset; the names are
// checked where they are given (ParseKVType).
func (p Point) KVTypes() (k, v gguf.GGMLType) {
	k, _ = gguf.ParseType(cmp.Or(p.TypeK, "f16"))
	v, _ = gguf.ParseType(cmp.Or(p.TypeV, "f16"))
	return k, v
}

// CheckCache says whether llama.cpp can build a KV cache of these types:
// a quantized V cache is only read by the flash attention kernels.
func CheckCache(typeK, typeV string, fa FlashAttn) error {
	for _, t := range []string{typeK, typeV} {
		if _, err := ParseKVType(t); err != nil {
			return err
		}
	}
	if v := strings.ToLower(typeV); v != "f16" && v != "f32" && v != "bf16" && fa == FlashOff {
		return fmt.Errorf("a quantized V cache (-ctv %s) needs flash attention: add -fa on, or use -ctv f16", v)
	}
	return nil
}

// Sampling is how a tg test picks its next tokens.
type Sampling string

// Samplings: random tokens (as llama-bench, no sampling cost), or through
// a llama.cpp sampler chain.
const (
	SamplingOff     Sampling = "off"
	SamplingGreedy  Sampling = "greedy"
	SamplingTypical Sampling = "typical"
)

// Samplings lists the sampling names a flag or spec accepts.
var Samplings = []Sampling{SamplingOff, SamplingGreedy, SamplingTypical}

// parseSampling reads a sampling name ("" is off).
func parseSampling(s string) (Sampling, error) {
	v := Sampling(strings.ToLower(strings.TrimSpace(s)))
	if v == "" {
		return SamplingOff, nil
	}
	if !slices.Contains(Samplings, v) {
		return "", fmt.Errorf("sampling %q: use off, greedy or typical", s)
	}
	return v, nil
}

// MaxParallel is the most sequences one llama.cpp context decodes
// together (LLAMA_MAX_SEQ; engine checks that it matches).
const MaxParallel = 256

// UnmarshalJSON reads llama-bench's flash_attn in all its spellings: a
// number (-1, 0, 1), a bool (older llama-bench) or a name.
func (f *FlashAttn) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := ParseFlashAttn(s)
	if err != nil {
		return err
	}
	*f = v
	return nil
}
