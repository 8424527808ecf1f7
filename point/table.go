package point

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Switches are llama-bench's settings of the model and context that
// records write as a point holds them, under llama-bench's names (a JSON
// tag each), after its older ones. A setting added here needs only its
// entry in Settings (Field, and the record's value from Get) and its
// effect in engine: the point, its key, the model's options, the record
// and the report's files and tables all take it from here.
type Switches struct {
	NoOpOffload Bit  `json:"no_op_offload"` // keep ops on the CPU whose weights are in host memory (llama.cpp's op_offload off)
	NoHost      bool `json:"no_host"`       // bypass the host buffer, so that extra buffer types (repacked weights) can be used
}

// Bit is a switch that llama-bench's JSON writes as 0 or 1. It reads
// either spelling, and any other number as set.
type Bit bool

// MarshalJSON writes 0 or 1.
func (b Bit) MarshalJSON() ([]byte, error) {
	if b {
		return []byte("1"), nil
	}
	return []byte("0"), nil
}

// UnmarshalJSON reads 0, 1, a number, true or false.
func (b *Bit) UnmarshalJSON(text []byte) error {
	switch s := string(text); s {
	case "null":
	case "true", "false":
		*b = s == "true"
	default:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%s: give 0 or 1", s)
		}
		*b = f != 0
	}
	return nil
}

// Kind is how a setting's value is written on the command line.
type Kind int

// Kinds of settings.
const (
	// List is an axis or a test size: a comma list, a range (1-8,
	// 64-512*2, 128-1024+128) or the flag repeated; every value is
	// measured.
	List Kind = iota
	String
	Int
	Uint
	Float
	Bool
	Duration
)

// Setting is one setting of run and sweep, declared once: the flags that
// give it, the key a sweep spec gives it by, its default, how a value is
// read and checked, how it is set on a point and read back, and, for an
// axis, where it nests in llama-bench's loops. Flags, spec keys, the
// sweep's hash, the planner's order and the point key's text all come
// from Settings.
type Setting struct {
	Key     string   // the spec's YAML key; "" for a flag that only refuses a value
	Flag    string   // run and sweep's flag; "" for none
	Aliases []string // its other names (llama-bench's short ones)
	Not     string   // a Bool's negating flag (--no-warmup), listed before Flag
	NotHelp string   // Not's usage
	Hidden  bool     // Flag is llama-bench's spelling, kept out of the help
	Kind    Kind
	Usage   string
	Default string // the value when not given, as Parse reads it
	// Shown says the flag carries Default as its value (help shows it);
	// else the usage says it.
	Shown bool
	// Ints: a List of integers in [Min, Max] (ranges allowed), or an
	// Int in it (none given: any); Words are numbers by other names.
	Ints     bool
	Min, Max int
	Words    map[string]string
	// Nest orders the axes as llama-bench's loops nest them, outermost
	// first (models come before all); 0: not an axis (a test size, or one
	// value for every point).
	Nest int
	// Parse checks one value as given and returns it as Set reads it;
	// nil: any (Ints: in range).
	Parse func(v string) (string, error)
	// Set puts a value Parse returned on a point.
	Set func(p *Point, v string)
	// Get is the point's value as Set reads it (a knob's key text).
	Get func(p *Point) string
	// KeyName names the setting in a point key's text: the key's fixed
	// part (keyOrder) writes it always, a knob only when it is not its
	// default ("": not in the key).
	KeyName string
	// Example is a value of a key's setting other than its default, as
	// Check returns it: what the tests that walk the table give it.
	Example string
	// Field is the setting's name in records (a Switches or Shape
	// setting's: its JSON tag) and in llama-bench's files; Column is its
	// head in the compact table, where a Switches or Shape setting shows
	// when it varies or is not its default; a Switches setting's Type is
	// its type in llama-bench's files: 'b' a bool, 'i' an integer, 's'
	// text.
	Field, Column string
	Type          byte
	// Size marks a test's size (its name says it: pp512, tg128@d4096,
	// x4); Method how a test is measured, not what it measures
	// (repetitions, warm-up, seed): a comparison pairs tests that differ
	// in it, and a baseline leaves it out of a point's identity.
	Size, Method bool
	// Switch marks a List of 0 and 1 (llama-bench's -nkvo 0,1) whose
	// flag given alone means 1 (--no-kv-offload).
	Switch bool
}

// syntax marks a parser's error as one of form (SyntaxError).
func syntax(err error) error {
	if err == nil {
		return nil
	}
	return SyntaxError{err}
}

// parseSwitch reads one value of a Switch: 0, 1, true or false.
func parseSwitch(v string) (string, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return "", SyntaxError{fmt.Errorf("%q: give 0 or 1", v)}
	}
	return strconv.FormatBool(b), nil
}

// IsSwitch says whether a flag name (-nkvo, --no-kv-offload) is a
// Switch's.
func IsSwitch(name string) bool {
	name = strings.TrimLeft(name, "-")
	for _, st := range Settings {
		if st.Switch && (st.Flag == name || slices.Contains(st.Aliases, name)) {
			return true
		}
	}
	return false
}

// Settings are run's and sweep's settings in the order their flags are
// listed; the test sizes and axes come first.
var Settings = []Setting{
	{Key: "n_prompt", KeyName: "p", Example: "7", Size: true, Field: "n_prompt", Flag: "n-prompt", Aliases: []string{"p"}, Kind: List, Ints: true, Min: 0, Max: MaxTokens, Default: "512",
		Usage: "prompt tokens of the pp tests; 0: none (default 512)", Set: func(p *Point, v string) { p.NPrompt = atoi(v) }, Get: func(p *Point) string { return strconv.Itoa(p.NPrompt) }},
	{Key: "n_gen", KeyName: "n", Example: "3", Size: true, Field: "n_gen", Flag: "n-gen", Aliases: []string{"n"}, Kind: List, Ints: true, Min: 0, Max: MaxTokens, Default: "128",
		Usage: "generated tokens of the tg tests; 0: none (default 128)", Set: func(p *Point, v string) { p.NGen = atoi(v) }, Get: func(p *Point) string { return strconv.Itoa(p.NGen) }},
	{Key: "n_depth", KeyName: "d", Example: "5", Size: true, Field: "n_depth", Flag: "n-depth", Aliases: []string{"d"}, Kind: List, Ints: true, Min: 0, Max: MaxDepth, Default: "0", Nest: 100,
		Usage: "tokens already in the KV cache (default 0)", Set: func(p *Point, v string) { p.NDepth = atoi(v) }, Get: func(p *Point) string { return strconv.Itoa(p.NDepth) }},
	{Key: "parallel", KeyName: "np", Example: "2", Size: true, Field: "n_parallel", Flag: "parallel", Aliases: []string{"np"}, Kind: List, Ints: true, Min: 1, Max: MaxParallel, Default: "1", Nest: 120,
		Usage: "sequences decoding together (default 1)", Set: func(p *Point, v string) { p.Parallel = atoi(v) }, Get: func(p *Point) string { return strconv.Itoa(p.Parallel) }},
	{Key: "n_batch", KeyName: "b", Example: "64", Field: "n_batch", Column: "n_batch", Flag: "batch-size", Aliases: []string{"b"}, Kind: List, Ints: true, Min: 1, Max: MaxTokens, Default: "2048", Nest: 40,
		Usage: "logical batch (default 2048)", Set: func(p *Point, v string) { p.NBatch = atoi(v) }, Get: func(p *Point) string { return strconv.Itoa(p.NBatch) }},
	{Key: "n_ubatch", KeyName: "ub", Example: "32", Field: "n_ubatch", Column: "n_ubatch", Flag: "ubatch-size", Aliases: []string{"ub"}, Kind: List, Ints: true, Min: 1, Max: MaxTokens, Default: "512", Nest: 50,
		Usage: "physical batch (default 512)", Set: func(p *Point, v string) { p.NUBatch = atoi(v) }, Get: func(p *Point) string { return strconv.Itoa(p.NUBatch) }},
	{Key: "threads", KeyName: "t", Example: "3", Field: "n_threads", Flag: "threads", Aliases: []string{"t"}, Kind: List, Ints: true, Min: 1, Max: MaxThreads, Nest: 90,
		Usage: "CPU threads (default: the physical cores)", Set: func(p *Point, v string) { p.Threads = atoi(v) }, Get: func(p *Point) string { return strconv.Itoa(p.Threads) }},
	{Key: "n_gpu_layers", KeyName: "ngl", Example: "5", Field: "n_gpu_layers", Flag: "n-gpu-layers", Aliases: []string{"ngl"}, Kind: List, Ints: true, Min: -1, Max: 1 << 16, Default: "99", Nest: 20,
		Usage: "layers on the GPU; 99 (llama-bench's default) is all of a model of up to 98 layers, -1 all of any (default 99)", Set: func(p *Point, v string) { p.NGPULayers = atoi(v) }, Get: func(p *Point) string { return strconv.Itoa(p.NGPULayers) }},
	{Key: "flash_attn", KeyName: "fa", Example: "on", Field: "flash_attn", Flag: "flash-attn", Aliases: []string{"fa"}, Kind: List, Default: "off", Nest: 80,
		Usage: "flash attention: off, on, auto (default off, as the pinned llama-bench's; auto, which it lacks, leaves it to llama.cpp)",
		Parse: func(v string) (string, error) { _, err := ParseFlashAttn(v); return strings.ToLower(v), syntax(err) },
		Set:   func(p *Point, v string) { p.FlashAttn, _ = ParseFlashAttn(v) }, Get: func(p *Point) string { return p.FlashAttn.String() }},
	{Key: "cache_type_k", KeyName: "ctk", Example: "q8_0", Field: "type_k", Column: "type_k", Flag: "cache-type-k", Aliases: []string{"ctk"}, Kind: List, Default: "f16", Nest: 60,
		Usage: "K cache type: f16, bf16, f32, q8_0, q5_1, q5_0, q4_1, q4_0, iq4_nl (default f16)",
		Parse: ParseKVType, Set: func(p *Point, v string) { p.TypeK = v }, Get: func(p *Point) string { return p.TypeK }},
	{Key: "cache_type_v", KeyName: "ctv", Example: "q4_0", Field: "type_v", Column: "type_v", Flag: "cache-type-v", Aliases: []string{"ctv"}, Kind: List, Default: "f16", Nest: 70,
		Usage: "V cache type; quantized needs -fa on (default f16)",
		Parse: ParseKVType, Set: func(p *Point, v string) { p.TypeV = v }, Get: func(p *Point) string { return p.TypeV }},
	{Key: "n_cpu_moe", Flag: "n-cpu-moe", Aliases: []string{"ncmoe"}, Kind: List, Ints: true, Min: 0, Max: 4096, Default: "0", Nest: 30,
		Usage: "keep the MoE experts of the first N layers on the CPU (default 0)", KeyName: "ncmoe", Example: "4",
		Set: func(p *Point, v string) { p.NCPUMoE = atoi(v) }, Get: func(p *Point) string { return strconv.Itoa(p.NCPUMoE) }},
	{Key: "no_op_offload", Flag: "no-op-offload", Aliases: []string{"nopo"}, Kind: List, Switch: true, Default: "false", Nest: 37, Parse: parseSwitch,
		Usage: "run on the CPU the ops whose weights are in host memory, instead of offloading them to the GPU: alone or 1; 0,1 measures both",
		Field: "no_op_offload", Type: 'i', Column: "nopo", KeyName: "nopo", Example: "true",
		Set: func(p *Point, v string) { p.NoOpOffload = v == "true" }, Get: func(p *Point) string { return strconv.FormatBool(bool(p.NoOpOffload)) }},
	{Key: "no_host", Flag: "no-host", Kind: List, Default: "false", Nest: 35, Field: "no_host", Type: 'b', Column: "noh", KeyName: "noh", Example: "true",
		Usage: "bypass the host buffer so that extra buffer types (repacked weights) can be used: 0, 1 (default 0)", Parse: parseSwitch,
		Set: func(p *Point, v string) { p.NoHost = v == "true" }, Get: func(p *Point) string { return strconv.FormatBool(p.NoHost) }},
	{Key: "poll", Flag: "poll", Kind: List, Ints: true, Words: map[string]string{NoPool: "-1"}, Default: "50", Nest: 110,
		Usage: "thread pool busy-wait 0-100; -1 or none: no pool (default 50)", KeyName: "poll", Example: "none",
		Parse: func(v string) (string, error) {
			if v == NoPool {
				return v, nil
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return "", SyntaxError{fmt.Errorf("%q is not a number, nor %s", v, NoPool)}
			}
			if n < -1 || n > 100 {
				return "", fmt.Errorf("%d is out of range (0 to 100, or -1 for no thread pool)", n)
			}
			if n < 0 {
				return NoPool, nil
			}
			return strconv.Itoa(n), nil
		},
		Set: func(p *Point, v string) { p.Poll = pollOf(v) }, Get: func(p *Point) string { return p.Poll }},
	{Key: "sampling", KeyName: "sampling", Example: "typical", Field: "sampling", Flag: "sampling", Kind: List, Default: "off",
		Usage: "tg through a sampler chain too: off, greedy, typical (default off)",
		Parse: func(v string) (string, error) {
			if v = strings.ToLower(v); v != "off" && v != "greedy" && v != "typical" {
				return "", fmt.Errorf("%q: use off, greedy or typical", v)
			}
			return v, nil
		},
		Set: func(p *Point, v string) { p.Sampling = Sampling(v) }, Get: func(p *Point) string { return string(p.Sampling) }},
	{Key: "split_mode", KeyName: "sm", Example: "row", Flag: "split-mode", Aliases: []string{"sm"}, Kind: List, Default: "layer", Nest: 32,
		Usage: "multi-GPU split: none, layer, row (default layer)",
		Parse: func(v string) (string, error) { m, err := ParseSplitMode(v); return m.String(), syntax(err) },
		Set:   func(p *Point, v string) { p.Split, _ = ParseSplitMode(v) }, Get: func(p *Point) string { return p.Split.String() }},
	{Key: "main_gpu", KeyName: "mg", Example: "1", Flag: "main-gpu", Aliases: []string{"mg"}, Kind: Int, Default: "0",
		Usage: "GPU for split-mode none", Set: func(p *Point, v string) { p.MainGPU = atoi(v) }, Get: func(p *Point) string { return strconv.Itoa(p.MainGPU) }},
	{Key: "mmap", KeyName: "mmap", Example: "false", Not: "no-mmap", NotHelp: "read the model into memory instead of mapping it", Flag: "mmap", Aliases: []string{"mmp"}, Hidden: true, Kind: List, Switch: true, Default: "true", Nest: 33,
		Usage: "llama-bench's -mmp 0,1", Parse: parseSwitch,
		Set: func(p *Point, v string) { p.NoMmap = v != "true" }, Get: func(p *Point) string { return strconv.FormatBool(!p.NoMmap) }},
	{Key: "repetitions", KeyName: "r", Example: "7", Method: true, Flag: "repetitions", Aliases: []string{"r"}, Kind: String, Default: "auto",
		Usage: "timed repetitions of each test, or auto: until the mean is within --target-ci",
		Parse: func(v string) (string, error) {
			n, err := parseReps(v)
			switch {
			case err != nil:
				return "", SyntaxError{err}
			case n > MaxReps:
				return "", fmt.Errorf("%d is out of range (1 to %d, or auto)", n, MaxReps)
			}
			return RepsName(n), nil
		},
		Set: func(p *Point, v string) { p.Reps, _ = parseReps(v) }, Get: func(p *Point) string { return RepsName(p.Reps) }},
	{Key: "target_ci", Flag: "target-ci", Kind: Float, Default: strconv.FormatFloat(100*DefaultTargetCI, 'g', -1, 64), Shown: true,
		Usage: "-r auto: the 95% CI half-width to reach, % of the mean",
		Parse: func(v string) (string, error) {
			f, err := strconv.ParseFloat(v, 64)
			switch {
			case err != nil:
				return "", SyntaxError{fmt.Errorf("%q is not a number", v)}
			case !(f > 0 && f < 100): // NaN too
				return "", fmt.Errorf("%g%% must be above 0 and below 100", f)
			}
			return strconv.FormatFloat(f, 'g', -1, 64), nil
		},
		Set: func(p *Point, v string) { f, _ := strconv.ParseFloat(v, 64); p.TargetCI = f / 100 }},
	{Key: "max_reps", Flag: "max-reps", Kind: Int, Default: strconv.Itoa(DefaultMaxReps), Shown: true, Ints: true, Min: MinAutoReps, Max: MaxReps,
		Usage: "-r auto: at most this many repetitions", Set: func(p *Point, v string) { p.MaxReps = atoi(v) }},
	{Key: "drop_outliers", Flag: "drop-outliers", Kind: Bool, Default: "false",
		Usage: "leave repetitions beyond 3 robust sigmas out of the figures", Set: func(p *Point, v string) { p.DropOutliers = v == "true" }},
	{Key: "warmup", KeyName: "warmup", Example: "false", Method: true, Not: "no-warmup", NotHelp: "skip the uncounted warm-up run", Kind: Bool, Default: "true",
		Set: func(p *Point, v string) { p.NoWarmup = v != "true" }, Get: func(p *Point) string { return strconv.FormatBool(!p.NoWarmup) }},
	{Key: "kernels", Not: "no-kernels", NotHelp: "do not time each step's ops alone (no hardware/kernel/software split)", Kind: Bool, Default: "true",
		Set: func(p *Point, v string) { p.Kernels = v == "true" }},
	{Key: "timeout", Flag: "timeout", Kind: Duration, Default: "10m0s",
		Usage: "time limit per test (default 10m)",
		Parse: func(v string) (string, error) {
			d, err := time.ParseDuration(v)
			if err != nil {
				return "", SyntaxError{fmt.Errorf("%q is not a duration like 90s or 10m", v)}
			}
			if d < 0 {
				return "", fmt.Errorf("%s is negative", d)
			}
			return d.String(), nil
		},
		Set: func(p *Point, v string) { p.Timeout, _ = time.ParseDuration(v) }},
	{Key: "seed", KeyName: "seed", Example: "9", Method: true, Flag: "seed", Kind: Uint, Default: "42",
		Usage: "seed of the random tokens and synthetic weights (default 42)",
		Set:   func(p *Point, v string) { p.Seed, _ = strconv.ParseUint(v, 10, 64) }, Get: func(p *Point) string { return strconv.FormatUint(p.Seed, 10) }},
	{Key: "override_tensor", Flag: "override-tensor", Aliases: []string{"ot", "override-tensors"}, Kind: String,
		Usage: "tensors matching a regex in a buffer type: PATTERN=BUFFER_TYPE;...", KeyName: "ot", Example: "exps=CPU",
		Set: func(p *Point, v string) { p.Overrides = v }, Get: func(p *Point) string { return p.Overrides }},
	{Key: "tensor_split", Flag: "tensor-split", Aliases: []string{"ts"}, Kind: String,
		Usage: "each device's share of the layers, e.g. 3/1", KeyName: "ts", Example: "3/1",
		Set: func(p *Point, v string) { p.TensorSplit = v }, Get: func(p *Point) string { return p.TensorSplit }},
	{Key: "devices", Flag: "device", Aliases: []string{"dev"}, Kind: String,
		Usage: "devices, e.g. CUDA0/CUDA1, or none for the CPU alone", KeyName: "dev", Example: "CUDA1",
		Set: func(p *Point, v string) { p.Devices = v }, Get: func(p *Point) string { return p.Devices }},
	{Key: "no_kv_offload", Flag: "no-kv-offload", Aliases: []string{"nkvo"}, Kind: List, Switch: true, Default: "false", Nest: 75, Parse: parseSwitch,
		Usage: "keep the KV cache and attention on the CPU: alone or 1; 0,1 measures both", KeyName: "nkvo", Example: "true",
		Set: func(p *Point, v string) { p.NoKVOffload = v == "true" }, Get: func(p *Point) string { return strconv.FormatBool(p.NoKVOffload) }},
	{Key: "cpu_mask", Flag: "cpu-mask", Aliases: []string{"C"}, Kind: List, Nest: 92,
		Usage: "hex masks of the CPUs the threads may use, e.g. 0xF or 0x1,0x3", KeyName: "C", Example: "0xF",
		Parse: func(v string) (string, error) { _, err := ParseCPUMask(v); return v, err },
		Set:   func(p *Point, v string) { p.CPUMask = v }, Get: func(p *Point) string { return p.CPUMask }},
	{Key: "cpu_strict", Flag: "cpu-strict", Kind: List, Switch: true, Default: "false", Nest: 94, Parse: parseSwitch,
		Usage: "pin each thread to one CPU of --cpu-mask: alone or 1; 0,1 measures both", KeyName: "strict", Example: "true",
		Set: func(p *Point, v string) { p.CPUStrict = v == "true" }, Get: func(p *Point) string { return strconv.FormatBool(p.CPUStrict) }},
	{Key: "prio", Flag: "prio", Kind: Int, Default: "0",
		Usage: "thread priority: -1 low, 0 normal, 1 medium, 2 high, 3 realtime", KeyName: "prio", Example: "2",
		Set: func(p *Point, v string) { p.Prio = atoi(v) }, Get: func(p *Point) string { return strconv.Itoa(p.Prio) }},
	{Key: "delay", Flag: "delay", Kind: String,
		Usage: "pause before each test: seconds, or a duration (5, 30s)",
		Parse: func(v string) (string, error) { d, err := parseDelay(v); return d.String(), err },
		Set:   func(p *Point, v string) { p.Delay, _ = time.ParseDuration(v) }},
	{Key: "pg", Flag: "pg", Kind: String,
		Usage: "also a pp+tg test, e.g. 512,128",
		Parse: func(v string) (string, error) { _, err := parsePG(v); return v, err },
		Set:   func(p *Point, v string) { p.PG, _ = parsePG(v) }},
	{Flag: "embeddings", Aliases: []string{"embd"}, Hidden: true, Kind: Bool, Usage: "llama-bench's -embd: only 0",
		Parse: refuse("tokbench measures generation, not embeddings: leave out -embd 1")},
}

// refuse is the Parse of a llama-bench switch tokbench keeps off.
func refuse(why string) func(string) (string, error) {
	return func(v string) (string, error) {
		if v == "true" {
			return "", fmt.Errorf("%s", why)
		}
		return v, nil
	}
}

// Fields are the settings of Switches (their Field a JSON tag of it), in
// Settings' order.
var Fields = sync.OnceValue(func() []*Setting {
	tags := map[string]bool{}
	typ := reflect.TypeFor[Switches]()
	for i := range typ.NumField() {
		tags[strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	var out []*Setting
	for i := range Settings {
		if tags[Settings[i].Field] {
			out = append(out, &Settings[i])
		}
	}
	return out
})

// Named is the setting a name gives, as a filter or a spec names it: its
// spec key, its name in records, its flag or an alias (nil: none).
func Named(name string) *Setting {
	for i := range Settings {
		if s := &Settings[i]; name != "" && (s.Key == name || s.Field == name || s.Flag == name || slices.Contains(s.Aliases, name)) {
			return s
		}
	}
	return nil
}

// Of is a Switches setting's value in sw, as Get gives it.
func (s *Setting) Of(sw Switches) string {
	var p Point
	p.Switches = sw
	return s.Get(&p)
}

// Typed is a Switches setting's value in sw as llama-bench's files type
// it (Type): a bool, an int or a string.
func (s *Setting) Typed(sw Switches) any {
	v := s.Of(sw)
	switch {
	case s.Type == 'b':
		return v == "true"
	case s.Type == 'i' && v == "true":
		return 1
	case s.Type == 'i' && v == "false":
		return 0
	case s.Type == 'i':
		return atoi(v)
	}
	return v
}

// SettingOf is the setting of a spec key (nil: none).
func SettingOf(key string) *Setting {
	for i := range Settings {
		if Settings[i].Key == key && key != "" {
			return &Settings[i]
		}
	}
	return nil
}

// Read reads a setting's values from text as a flag gives them (Items),
// each checked and returned as Set reads it.
func (s *Setting) Read(text string) ([]string, error) {
	items, err := s.Items(text)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		v, err := s.Check(it)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Items splits text as a flag, or a spec's scalar, gives a setting's
// values: a List's comma list (numbers may be ranges, which expand; a
// word of Words stands for its number), else the one value.
func (s *Setting) Items(text string) ([]string, error) {
	switch {
	case s.Kind != List:
		return []string{text}, nil
	case !s.Ints:
		return SplitList(text), nil
	}
	parts := strings.Split(text, ",")
	for i, it := range parts {
		if n, ok := s.Words[strings.TrimSpace(it)]; ok {
			parts[i] = n
		}
	}
	vals, err := ParseInts(strings.Join(parts, ","))
	if err != nil {
		return nil, SyntaxError{err}
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = strconv.Itoa(v)
	}
	return out, nil
}

// A SyntaxError is a value not of its setting's form (not a number, not a
// duration), as opposed to one of the right form that it does not take;
// a spec names the line of the first and the key of the second.
type SyntaxError struct{ Err error }

func (e SyntaxError) Error() string { return e.Err.Error() }
func (e SyntaxError) Unwrap() error { return e.Err }

// Check reads one value of the setting as given, checks it and returns it
// as Set reads it.
func (s *Setting) Check(v string) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case s.Parse != nil:
		return s.Parse(v)
	case s.Ints || s.Kind == Int:
		n, err := strconv.Atoi(v)
		if err != nil {
			return "", SyntaxError{fmt.Errorf("%q is not a number", v)}
		}
		if (s.Min != 0 || s.Max != 0) && (n < s.Min || n > s.Max) {
			return "", fmt.Errorf("%d is out of range (%d to %d)", n, s.Min, s.Max)
		}
		return strconv.Itoa(n), nil
	case s.Kind == Uint:
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return "", SyntaxError{fmt.Errorf("%q is not a whole number", v)}
		}
		return strconv.FormatUint(n, 10), nil
	case s.Kind == Bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "", SyntaxError{fmt.Errorf("%q is not true or false", v)}
		}
		return strconv.FormatBool(b), nil
	}
	return v, nil
}

// knobText is the key text of p's knobs that are not their defaults:
// "|ncmoe=4|poll=none", in Knobs' order.
func knobText(p *Point, escape func(string) string) string {
	var b strings.Builder
	for _, s := range Knobs() {
		if v := s.Get(p); v != "" && v != s.Default {
			b.WriteString("|" + s.KeyName + "=" + escape(v))
		}
	}
	return b.String()
}

// Knobs are the knobs in the order a key writes them: the order keys of
// older files have, then the newer knobs in Settings' order.
var Knobs = sync.OnceValue(func() []*Setting {
	var out []*Setting
	for _, name := range []string{"dev", "ts", "ot", "ncmoe", "poll", "C", "strict", "prio", "nkvo"} {
		out = append(out, keyNames()[name].Setting)
	}
	for i := range Settings {
		if s := &Settings[i]; s.IsKnob() && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
})

// IsKnob says whether the setting is a knob: in a key's text only when it
// is not its default.
func (s *Setting) IsKnob() bool { return keyNames()[s.KeyName].knob }

// keyed is a setting a key's text names, and whether it is a knob.
type keyed struct {
	*Setting
	knob bool
}

// keyNames are the settings by KeyName, found once: a key's text is read
// for every record of a file.
var keyNames = sync.OnceValue(func() map[string]keyed {
	m := map[string]keyed{}
	for i := range Settings {
		if n := Settings[i].KeyName; n != "" {
			m[n] = keyed{&Settings[i], !slices.Contains(keyOrder, n)}
		}
	}
	return m
})

// setKeyValue sets on p the setting a key's text names (false: it names
// none). A knob's value is checked as a flag's; the fixed part's only for
// its form, as a key is an identity and not a request (llama-bench's
// imported keys hold np=0, which no flag takes).
func setKeyValue(p *Point, name, v string) (bool, error) {
	s := keyNames()[name]
	switch {
	case s.Setting == nil:
		return false, nil
	case s.Ints && s.Words == nil && !s.knob:
		// Most of a key, read as it is written: no copy.
		if _, err := strconv.Atoi(v); err != nil {
			return true, SyntaxError{fmt.Errorf("%q is not a number", v)}
		}
		s.Set(p, v)
		return true, nil
	}
	out, err := s.Check(v)
	if err != nil {
		if s.knob || errors.As(err, new(SyntaxError)) {
			return true, err
		}
		out = strings.TrimSpace(v)
	}
	s.Set(p, out)
	return true, nil
}

// parseDelay reads --delay as llama-bench writes it (seconds) or as a
// duration.
func parseDelay(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("--delay %q: give seconds (5) or a duration (30s)", s)
	}
	return d, nil
}

func atoi(v string) int { n, _ := strconv.Atoi(v); return n }
