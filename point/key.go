package point

import (
	"fmt"
	"strconv"
	"strings"
)

// Key identifies what a point measures: every setting that changes the
// result, nothing that does not. It is comparable (a map key) and is
// written as text in results files, where resuming a sweep matches on it.
type Key struct {
	Model                 string // the model as the sweep named it
	NPrompt, NGen, NDepth int
	Parallel              int
	NBatch, NUBatch       int // NUBatch as used: at most NBatch
	Threads, NGPULayers   int
	Split                 SplitMode
	MainGPU               int
	Mmap                  bool
	FlashAttn             FlashAttn
	TypeK, TypeV          string
	Sampling              Sampling
	Reps                  int // AutoReps: auto
	Warmup                bool
	Seed                  uint64
	// llama-bench's placement and threading knobs: written only when
	// set, so that keys of files from before them still match. (A -pg
	// test is a test of its own: NPrompt and NGen both set.)
	Placement
	Threading
	NoKVOffload bool
}

// escapeKey keeps a free-form value (a regular expression) from breaking
// the key's "|" separated form.
var (
	escapeKey   = strings.NewReplacer("%", "%25", "|", "%7C")
	unescapeKey = strings.NewReplacer("%7C", "|", "%25", "%")
)

// knobs is the key's text for the knobs that are set.
func (k Key) knobs() string {
	p := k.knobPoint()
	return knobText(&p, escapeKey.Replace)
}

// knobPoint is a point of the key's knobs.
func (k Key) knobPoint() Point {
	return Point{Placement: k.Placement, Threading: k.Threading, NoKVOffload: k.NoKVOffload}
}

// Knob is a knob's value as the key writes it (unescaped), "" at its
// default.
func (k Key) Knob(s *Setting) string {
	p := k.knobPoint()
	if v := s.Get(&p); v != s.Default {
		return v
	}
	return ""
}

// String is the key's text form:
// MODEL|p=512|n=0|d=0|np=1|b=2048|ub=512|t=4|ngl=-1|sm=layer|mg=0|mmap=true|fa=auto|ctk=f16|ctv=f16|sampling=off|r=5|warmup=true|seed=42
func (k Key) String() string {
	return fmt.Sprintf("%s|p=%d|n=%d|d=%d|np=%d|b=%d|ub=%d|t=%d|ngl=%d|sm=%s|mg=%d|mmap=%t|fa=%s|ctk=%s|ctv=%s|sampling=%s|r=%s|warmup=%t|seed=%d",
		k.Model, k.NPrompt, k.NGen, k.NDepth, k.Parallel, k.NBatch, k.NUBatch, k.Threads, k.NGPULayers, k.Split, k.MainGPU,
		k.Mmap, k.FlashAttn, k.TypeK, k.TypeV, k.Sampling, RepsName(k.Reps), k.Warmup, k.Seed) + k.knobs()
}

// MarshalText writes String.
func (k Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (k *Key) UnmarshalText(b []byte) error {
	s := string(b)
	if s == "" {
		*k = Key{}
		return nil
	}
	i := strings.Index(s, "|p=")
	if i < 0 {
		return fmt.Errorf("point key %q: no settings after the model", s)
	}
	var out Key
	out.Model = s[:i]
	var knobs Point
	// A key is read for every record of a file: no maps, no split, no
	// replacing where nothing is escaped.
	for rest, more := s[i+1:], true; more; {
		var kv string
		kv, rest, more = strings.Cut(rest, "|")
		name, v, _ := strings.Cut(kv, "=")
		if strings.IndexByte(v, '%') >= 0 {
			v = unescapeKey.Replace(v)
		}
		var err error
		if ok, err := setKnob(&knobs, name, v); ok {
			if err != nil {
				return fmt.Errorf("point key %q: %s: %w", s, name, err)
			}
			continue
		}
		switch name {
		case "ctk":
			out.TypeK = v
		case "ctv":
			out.TypeV = v
		case "sm":
			out.Split, err = ParseSplitMode(v)
		case "fa":
			out.FlashAttn, err = ParseFlashAttn(v)
		case "mmap":
			out.Mmap, err = strconv.ParseBool(v)
		case "warmup":
			out.Warmup, err = strconv.ParseBool(v)
		case "sampling":
			out.Sampling = Sampling(v)
		case "r":
			if v == "auto" {
				out.Reps = AutoReps
			} else {
				out.Reps, err = strconv.Atoi(v)
			}
		case "seed":
			out.Seed, err = strconv.ParseUint(v, 10, 64)
		default:
			dst := out.intField(name)
			if dst == nil {
				return fmt.Errorf("point key %q: unknown setting %q", s, name)
			}
			*dst, err = strconv.Atoi(v)
		}
		if err != nil {
			return fmt.Errorf("point key %q: %s: %w", s, name, err)
		}
	}
	out.Placement, out.Threading, out.NoKVOffload = knobs.Placement, knobs.Threading, knobs.NoKVOffload
	*k = out
	return nil
}

// Varying names, for each point, the settings of its key that differ
// among the points ("t=2 b=128"), as a table's columns tell rows apart;
// the test's own sizes (p, n, d, np) are left to its name.
func Varying(points []Point) []string {
	split := func(p Point) []string { return strings.Split(p.Key().String(), "|")[1:] }
	first := map[string]string{}
	for _, s := range split(points[0]) {
		k, _, _ := strings.Cut(s, "=")
		first[k] = s
	}
	varies := map[string]bool{}
	for _, p := range points {
		seen := map[string]bool{}
		for _, s := range split(p) {
			k, _, _ := strings.Cut(s, "=")
			seen[k] = true
			if first[k] != s {
				varies[k] = true
			}
		}
		// A setting some keys lack (written only when set) varies too.
		for k := range first {
			if !seen[k] {
				varies[k] = true
			}
		}
	}
	out := make([]string, len(points))
	for i, p := range points {
		var parts []string
		for _, s := range split(p) {
			k, _, _ := strings.Cut(s, "=")
			if k != "p" && k != "n" && k != "d" && k != "np" && varies[k] {
				parts = append(parts, s)
			}
		}
		out[i] = strings.Join(parts, " ")
	}
	return out
}

// intField is the integer a key's text names (nil: none).
func (k *Key) intField(name string) *int {
	switch name {
	case "p":
		return &k.NPrompt
	case "n":
		return &k.NGen
	case "d":
		return &k.NDepth
	case "np":
		return &k.Parallel
	case "b":
		return &k.NBatch
	case "ub":
		return &k.NUBatch
	case "t":
		return &k.Threads
	case "ngl":
		return &k.NGPULayers
	case "mg":
		return &k.MainGPU
	}
	return nil
}
