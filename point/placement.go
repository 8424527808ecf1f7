package point

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Placement is where a model's tensors go, as llama-bench's -dev, -ts, -ot
// and -ncmoe set it. The zero value is llama.cpp's default: every device,
// layers split by free memory, no override.
type Placement struct {
	// Devices are the devices to use by name, joined by "/" (CUDA0/CUDA1);
	// "none" is the CPU alone; "" every device.
	Devices string
	// TensorSplit is each device's share of the layers (or rows), joined
	// by "/" (3/1); "" splits by free memory.
	TensorSplit string
	// Overrides put the tensors whose names match a regular expression in
	// a buffer type: PATTERN=BUFFER_TYPE, joined by ";" (exps=CPU).
	Overrides string
	// NCPUMoE keeps the MoE expert tensors of the first NCPUMoE layers on
	// the CPU.
	NCPUMoE int
	Switches
}

// Threading is how the CPU threads run, as llama-bench's --poll, -C,
// --cpu-strict and --prio set them. The zero value is llama-bench's: every
// context gets a ggml thread pool of its own (poll 50), attached before the
// warm-up and kept for all its repetitions and depths.
type Threading struct {
	// Poll is the busy-wait level before sleeping, "0" to "100" ("":
	// llama-bench's 50), or NoPool.
	Poll      string
	CPUMask   string // hex mask of the CPUs the threads may run on ("": any)
	CPUStrict bool   // pin each thread to one CPU of the mask
	Prio      int    // -1 low, 0 normal, 1 medium, 2 high, 3 realtime
}

// NoPool is the Poll that attaches no thread pool: llama.cpp then starts
// and joins its threads inside every graph computation (every decode
// step), which is what a context costs without one.
const NoPool = "none"

// pollOf is a --poll value as a Threading's Poll: 50, the default, is
// written "" so that it keys a point as the default does.
func pollOf(s string) string {
	if s = strings.TrimSpace(s); s == "50" {
		return ""
	}
	return s
}

// Pool says whether the context gets a thread pool of its own.
func (t Threading) Pool() bool { return t.Poll != NoPool }

// PollLevel is the poll level as a number: 50 (llama-bench's) if unset,
// -1 with no pool (as records write it).
func (t Threading) PollLevel() int {
	switch t.Poll {
	case "":
		return 50
	case NoPool:
		return -1
	}
	n, _ := strconv.Atoi(t.Poll)
	return n
}

// Override is one -ot rule.
type Override struct{ Pattern, BufferType string }

// ParseOverrides reads -ot: PATTERN=BUFFER_TYPE rules joined by ";" (a
// pattern may hold ","). The patterns are llama.cpp's (ECMAScript):
// engine checks them.
func ParseOverrides(s string) ([]Override, error) {
	var out []Override
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' }) {
		pat, buft, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || pat == "" || buft == "" {
			return nil, fmt.Errorf("-ot %q: write PATTERN=BUFFER_TYPE, e.g. exps=CPU", part)
		}
		out = append(out, Override{pat, buft})
	}
	return out, nil
}

// MoEOverrides are the rules that keep the expert tensors of the first n
// layers on the CPU (-ncmoe), as llama.cpp names those tensors.
func MoEOverrides(n int) []Override {
	out := make([]Override, n)
	for i := range out {
		out[i] = Override{fmt.Sprintf(`blk\.%d\.ffn_(up|down|gate)_exps`, i), "CPU"}
	}
	return out
}

// maxShare bounds a device's share of -ts: past it, shares are not
// proportions anyone means (and their sum would lose the small ones).
const maxShare = 1e6

// ParseTensorSplit reads -ts: non-negative finite shares joined by "/".
func ParseTensorSplit(s string) ([]float32, error) {
	if s == "" {
		return nil, nil
	}
	var out []float32
	sum := 0.0
	for _, part := range strings.Split(s, "/") {
		v, err := strconv.ParseFloat(strings.TrimSpace(part), 32)
		if err != nil || !(v >= 0 && v <= maxShare) { // NaN and infinities fail
			return nil, fmt.Errorf("-ts %q: give each device's share, a number from 0 to %g, e.g. 3/1", s, float64(maxShare))
		}
		out, sum = append(out, float32(v)), sum+v
	}
	if sum <= 0 {
		return nil, fmt.Errorf("-ts %q: the shares add up to nothing", s)
	}
	return out, nil
}

// LlamaBenchSplit is -ts as llama-bench writes it in its files: each
// share with two decimals up to the last that is not zero, joined by "/"
// ("3/1" is "3.00/1.00"; none is "0.00"), so that its rows and tokbench's
// meet on the same key.
func LlamaBenchSplit(s string) string {
	split, err := ParseTensorSplit(s)
	if err != nil || len(split) == 0 {
		return cmp.Or(s, "0.00")
	}
	last := 0
	for i, v := range split {
		if v > 0 {
			last = i
		}
	}
	parts := make([]string, last+1)
	for i := range parts {
		parts[i] = strconv.FormatFloat(float64(split[i]), 'f', 2, 32)
	}
	return strings.Join(parts, "/")
}

// ParseDevices reads -dev: device names joined by "/"; "none" (no
// device but the CPU) is an empty, non-nil list; "" is nil (every device).
func ParseDevices(s string) []string {
	switch s {
	case "":
		return nil
	case "none":
		return []string{}
	}
	return strings.FieldsFunc(s, func(r rune) bool { return r == '/' })
}

// MaxCPUs is the most CPUs a mask may name (GGML_MAX_N_THREADS).
const MaxCPUs = 512

// ParseCPUMask reads -C: a hex mask, lowest bit CPU 0, as llama.cpp reads it.
func ParseCPUMask(s string) ([]bool, error) {
	if s == "" {
		return nil, nil
	}
	h := strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(s), "0x"), "0X")
	if h == "" || len(h)*4 > MaxCPUs {
		return nil, fmt.Errorf("-C %q: give a hex mask of at most %d CPUs, e.g. 0xF for CPUs 0-3", s, MaxCPUs)
	}
	mask := make([]bool, len(h)*4)
	named := false
	for i := range len(h) {
		d, err := strconv.ParseUint(h[len(h)-1-i:len(h)-i], 16, 4)
		if err != nil {
			return nil, fmt.Errorf("-C %q: %q is not a hex digit", s, h[len(h)-1-i])
		}
		for b := range 4 {
			if d&(1<<b) != 0 {
				mask[4*i+b], named = true, true
			}
		}
	}
	if !named {
		return nil, fmt.Errorf("-C %q: the mask names no CPU", s)
	}
	return mask, nil
}

// CheckKnobs says what is wrong with the placement, threading and test
// knobs, if anything (engine.CheckPlacement checks the names against the
// devices here).
func (p Point) CheckKnobs() error {
	if _, err := ParseOverrides(p.Overrides); err != nil {
		return &InputError{err}
	}
	if _, err := ParseTensorSplit(p.TensorSplit); err != nil {
		return &InputError{err}
	}
	if _, err := ParseCPUMask(p.CPUMask); err != nil {
		return &InputError{err}
	}
	switch {
	case p.NCPUMoE < 0 || p.NCPUMoE > 4096:
		return Inputf("-ncmoe %d: give 0 to 4096 layers", p.NCPUMoE)
	case p.Poll == "-1":
		return Inputf("--poll -1: write --poll %s for no thread pool", NoPool)
	case p.Poll != "" && p.Poll != NoPool && (p.PollLevel() < 0 || p.PollLevel() > 100 || strconv.Itoa(p.PollLevel()) != p.Poll):
		return Inputf("--poll %q: give 0 (sleep at once) to 100 (spin), or %s (no thread pool)", p.Poll, NoPool)
	case !p.Pool() && (p.CPUMask != "" || p.CPUStrict || p.Prio != 0):
		return Inputf("--poll %s runs no thread pool, which -C, --cpu-strict and --prio set up: drop them or give a poll level", NoPool)
	case p.Prio < -1 || p.Prio > 3:
		return Inputf("--prio %d: give -1 (low), 0 (normal), 1 (medium), 2 (high) or 3 (realtime)", p.Prio)
	case p.Delay < 0 || p.Delay > time.Hour:
		return Inputf("--delay %s: give 0 to 1h", p.Delay)
	case p.PG[0] > MaxTokens || p.PG[1] > MaxTokens:
		return Inputf("-pg %d,%d: at most %d tokens each (the cap on a test's tokens)", p.PG[0], p.PG[1], MaxTokens)
	case p.PG[0] < 0 || p.PG[1] < 0 || (p.PG[0] == 0) != (p.PG[1] == 0):
		return Inputf("-pg %d,%d: give both the prompt and the generation length, e.g. -pg 512,128", p.PG[0], p.PG[1])
	}
	return nil
}

// parsePG reads -pg PP,TG ("" is none).
func parsePG(s string) ([2]int, error) {
	if s == "" {
		return [2]int{}, nil
	}
	a, b, ok := strings.Cut(s, ",")
	pp, err1 := strconv.Atoi(strings.TrimSpace(a))
	tg, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || pp < 1 || tg < 1 {
		return [2]int{}, fmt.Errorf("-pg %q: give the prompt and generation lengths, e.g. -pg 512,128", s)
	}
	return [2]int{pp, tg}, nil
}
