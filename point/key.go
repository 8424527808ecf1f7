package point

import (
	"fmt"
	"strings"
	"sync"
)

// Key identifies what a point measures: every setting that changes the
// result, nothing that does not. It is comparable (a map key) and is
// written as text in results files, where resuming a sweep matches on it.
type Key struct {
	Model                 string // the model as the sweep named it
	NPrompt, NGen, NDepth int
	Parallel              int
	Shape                 // as used (Shape.Used)
	Split                 SplitMode
	MainGPU               int
	Mmap                  bool
	FlashAttn             FlashAttn
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

// keyOrder is the key's fixed part: the settings (by KeyName) every key
// writes, in the order the files' keys have them; the knobs follow.
var keyOrder = []string{"p", "n", "d", "np", "b", "ub", "t", "ngl", "sm", "mg", "mmap", "fa", "ctk", "ctv", "sampling", "r", "warmup", "seed"}

// Fixed are keyOrder's settings: a key's fixed part.
var Fixed = sync.OnceValue(func() []*Setting {
	out := make([]*Setting, len(keyOrder))
	for i, name := range keyOrder {
		out[i] = keyNames()[name].Setting
	}
	return out
})

// Point is a point of the key's settings, for the table's Get.
func (k Key) Point() Point {
	return Point{NPrompt: k.NPrompt, NGen: k.NGen, NDepth: k.NDepth, Parallel: k.Parallel, Shape: k.Shape, Split: k.Split,
		MainGPU: k.MainGPU, NoMmap: !k.Mmap, FlashAttn: k.FlashAttn, Sampling: k.Sampling, Reps: k.Reps, NoWarmup: !k.Warmup,
		Seed: k.Seed, Placement: k.Placement, Threading: k.Threading, NoKVOffload: k.NoKVOffload}
}

// keyOf is the key of p's settings as they are (Point.Key's are as used).
func (p Point) keyOf(model string) Key {
	return Key{Model: model, NPrompt: p.NPrompt, NGen: p.NGen, NDepth: p.NDepth, Parallel: p.Parallel, Shape: p.Shape,
		Split: p.Split, MainGPU: p.MainGPU, Mmap: !p.NoMmap, FlashAttn: p.FlashAttn, Sampling: p.Sampling, Reps: p.Reps,
		Warmup: !p.NoWarmup, Seed: p.Seed, Placement: p.Placement, Threading: p.Threading, NoKVOffload: p.NoKVOffload}
}

// Knob is a knob's value as the key writes it (unescaped), "" at its
// default.
func (k Key) Knob(s *Setting) string {
	p := k.Point()
	if v := s.Get(&p); v != s.Default {
		return v
	}
	return ""
}

// KnobText is the key's text of its knobs that are not their defaults
// ("|ncmoe=4|nkvo=true"), as String ends.
func (k Key) KnobText() string {
	p := k.Point()
	return knobText(&p, escapeKey.Replace)
}

// String is the key's text form, its settings' as the table gets them:
// MODEL|p=512|n=0|d=0|np=1|b=2048|ub=512|t=4|ngl=-1|sm=layer|mg=0|mmap=true|fa=auto|ctk=f16|ctv=f16|sampling=off|r=5|warmup=true|seed=42
// then the knobs that are not their defaults.
func (k Key) String() string {
	p := k.Point()
	var b strings.Builder
	b.Grow(160)
	b.WriteString(k.Model)
	for _, s := range Fixed() {
		b.WriteByte('|')
		b.WriteString(s.KeyName)
		b.WriteByte('=')
		b.WriteString(s.Get(&p))
	}
	b.WriteString(knobText(&p, escapeKey.Replace))
	return b.String()
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
	var p Point
	// A key is read for every record of a file: no split, no replacing
	// where nothing is escaped.
	for rest, more := s[i+1:], true; more; {
		var kv string
		kv, rest, more = strings.Cut(rest, "|")
		name, v, _ := strings.Cut(kv, "=")
		if strings.IndexByte(v, '%') >= 0 {
			v = unescapeKey.Replace(v)
		}
		ok, err := setKeyValue(&p, name, v)
		if !ok {
			return fmt.Errorf("point key %q: unknown setting %q", s, name)
		}
		if err != nil {
			return fmt.Errorf("point key %q: %s: %w", s, name, err)
		}
	}
	*k = p.keyOf(s[:i])
	return nil
}

// Varying names, for each point, the settings of its key that differ
// among the points ("t=2 b=128"), as a table's columns tell rows apart;
// the test's own sizes (Setting.Size) are left to its name.
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
		for _, kv := range split(p) {
			k, _, _ := strings.Cut(kv, "=")
			if s := keyNames()[k].Setting; varies[k] && (s == nil || !s.Size) {
				parts = append(parts, kv)
			}
		}
		out[i] = strings.Join(parts, " ")
	}
	return out
}
