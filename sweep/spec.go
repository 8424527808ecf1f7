package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/internal/infile"
	"github.com/tokbench/tokbench/internal/preset"
	"github.com/tokbench/tokbench/point"
	"gopkg.in/yaml.v3"
)

// StrAxis is a list of names: in YAML a string (comma list) or a list.
type StrAxis struct {
	Values []string
	set    bool
}

// Strs makes an axis from values.
func Strs(v ...string) StrAxis { return StrAxis{Values: v, set: true} }

// scalars returns the scalar items of a YAML value: itself, or a list's.
func scalars(n *yaml.Node, what string) ([]*yaml.Node, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	for _, it := range items {
		if it.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: want %s", it.Line, what)
		}
	}
	return items, nil
}

func (a *StrAxis) UnmarshalYAML(n *yaml.Node) error {
	items, err := scalars(n, "strings")
	a.set, a.Values = true, nil
	for _, it := range items {
		// A list's items are whole names (a file may hold a comma); a
		// single string is a comma list, as on the command line.
		if n.Kind == yaml.SequenceNode {
			if v := strings.TrimSpace(it.Value); v != "" {
				a.Values = append(a.Values, v)
			}
			continue
		}
		a.Values = append(a.Values, point.SplitList(it.Value)...)
	}
	return err
}

// Spec is a sweep: its models, and the settings (point.Settings) whose
// axes' product is the grid. Flags and YAML files (--spec) fill it: the
// YAML keys are the Inputs' tags and the settings' keys.
type Spec struct {
	Inputs
	// Values are the settings by key: an axis' values, or a setting's
	// one value, each as its Set reads it.
	Values map[string][]string
	// Repeats measures a point given twice twice (run, as llama-bench:
	// -m a,a); a sweep's points are unique (--resume finds them by key).
	Repeats bool `yaml:"-"`
}

// Inputs are what a spec holds beside the settings: the models, what to
// leave out, and the quality evaluation.
type Inputs struct {
	Models       StrAxis `yaml:"models"`
	Synth        StrAxis `yaml:"synth"`
	QuantizeFrom string  `yaml:"quantize_from"`
	Types        StrAxis `yaml:"types"`
	// MaxPoints bounds the grid (0: DefaultMaxPoints): a larger one is
	// refused before it is laid out, in bounded time and memory.
	MaxPoints int     `yaml:"max_points"`
	Filter    StrAxis `yaml:"filter"`
	// Quality, when set, also evaluates each model's quality against its
	// family's base after the speed points (QualityGroups).
	Quality *qualitySpec `yaml:"quality"`
}

// DefaultSpec has llama-bench's defaults, with threads threads.
func DefaultSpec(threads int) *Spec {
	s := &Spec{Values: map[string][]string{}}
	for _, st := range point.Settings {
		if st.Key != "" {
			s.Values[st.Key] = []string{st.Default}
		}
	}
	s.Values["threads"] = []string{strconv.Itoa(threads)}
	return s
}

// Get is a setting's values; One its first (a setting of one value).
func (s *Spec) Get(key string) []string { return s.Values[key] }

func (s *Spec) one(key string) string {
	if v := s.Values[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Ints is an integer setting's values.
func (s *Spec) Ints(key string) []int {
	out := make([]int, 0, len(s.Values[key]))
	for _, v := range s.Values[key] {
		n, _ := strconv.Atoi(v)
		out = append(out, n)
	}
	return out
}

// Seed is the seed of the random tokens and synthetic weights.
func (s *Spec) Seed() uint64 { n, _ := strconv.ParseUint(s.one("seed"), 10, 64); return n }

// SetText sets a setting from text as a flag gives it, checking each value.
func (s *Spec) SetText(st *point.Setting, text string) error {
	vals, err := st.Read(text)
	if err != nil {
		return err
	}
	if len(vals) == 0 {
		return fmt.Errorf("%s is empty: give at least one value, or leave it out for the default", st.Key)
	}
	s.Values[st.Key] = vals
	return nil
}

// setNode sets a setting from its YAML value: a List from a scalar as a
// flag gives it, or a list of those (a list's names are whole), else one
// value of its kind. A value not of the setting's form is named by its
// line, one the setting does not take by the key.
func (s *Spec) setNode(st *point.Setting, n *yaml.Node) error {
	var vals []string
	check := func(line int, v string) error {
		v, err := st.Check(v)
		if err != nil {
			return at(st.Key, line, err)
		}
		vals = append(vals, v)
		return nil
	}
	if st.Kind != point.List {
		text, err := scalarText(st.Kind, n)
		if err != nil {
			return err
		}
		if err := check(n.Line, text); err != nil {
			return err
		}
		s.Values[st.Key] = vals
		return nil
	}
	items, err := scalars(n, map[bool]string{true: "numbers or ranges", false: "strings"}[st.Ints])
	if err != nil {
		return err
	}
	for _, it := range items {
		vs := []string{it.Value}
		if n.Kind != yaml.SequenceNode || st.Ints {
			if vs, err = st.Items(it.Value); err != nil {
				return at(st.Key, it.Line, err)
			}
		} else if strings.TrimSpace(it.Value) == "" {
			continue
		}
		for _, v := range vs {
			if err := check(it.Line, v); err != nil {
				return err
			}
		}
	}
	if len(vals) == 0 {
		return fmt.Errorf("%s is empty: give at least one value, or leave the key out for the default", st.Key)
	}
	s.Values[st.Key] = vals
	return nil
}

// at places an error of a spec's value: its line for one not of the
// setting's form, its key for one the setting does not take.
// (%v, not %w: the error is placed here, and a SyntaxError it held must
// not be placed again by a caller.)
func at(key string, line int, err error) error {
	var se point.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("line %d: %v", line, err)
	}
	return fmt.Errorf("%s: %v", key, err)
}

// scalarText reads a setting's one YAML value as its kind does (YAML's
// numbers and booleans: .nan, yes), as text for its Check.
func scalarText(k point.Kind, n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("line %d: want one value", n.Line)
	}
	var err error
	text := n.Value
	switch k {
	case point.Int:
		var v int
		err = n.Decode(&v)
		text = strconv.Itoa(v)
	case point.Uint:
		var v uint64
		err = n.Decode(&v)
		text = strconv.FormatUint(v, 10)
	case point.Float:
		var v float64
		err = n.Decode(&v)
		text = strconv.FormatFloat(v, 'g', -1, 64)
	case point.Bool:
		var v bool
		err = n.Decode(&v)
		text = strconv.FormatBool(v)
	}
	return text, err
}

var unknownField = regexp.MustCompile(`line (\d+): field (\S+) not found`)

// LoadSpec reads a YAML spec over the defaults.
func LoadSpec(path string, threads int) (*Spec, error) {
	data, err := infile.ReadFile(path)
	if err != nil {
		return nil, &point.InputError{Err: fmt.Errorf("spec: %w", err)}
	}
	s := DefaultSpec(threads)
	file := struct {
		Inputs   `yaml:",inline"`
		Settings map[string]yaml.Node `yaml:",inline"`
	}{Inputs: s.Inputs}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err = dec.Decode(&file)
	if err == nil {
		s.Inputs = file.Inputs
		err = s.setSettings(data, file.Settings)
	}
	if err != nil {
		if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
			return nil, point.Inputf("spec %s line %s: unknown key %q: the keys are %s", path, m[1], m[2], strings.Join(specKeys(), ", "))
		}
		if strings.Contains(err.Error(), "EOF") {
			return nil, point.Inputf("spec %s is empty", path)
		}
		if m := lineRef.FindStringSubmatch(err.Error()); m != nil {
			if key := keyAtLine(data, m[1]); key != "" {
				return nil, point.Inputf("spec %s: %s: %v", path, key, err)
			}
		}
		return nil, point.Inputf("spec %s: %v", path, err)
	}
	if err := s.Validate(); err != nil {
		return nil, point.Inputf("spec %s: %v", path, err)
	}
	return s, nil
}

// setSettings sets the settings a spec's keys give, in the file's order;
// a key that is neither an input nor a setting is unknown.
func (s *Spec) setSettings(data []byte, nodes map[string]yaml.Node) error {
	keys := make([]string, 0, len(nodes))
	for k := range nodes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return nodes[a].Line - nodes[b].Line })
	for _, k := range keys {
		n := nodes[k]
		st := point.SettingOf(k)
		if st == nil {
			return fmt.Errorf("line %d: field %s not found", keyLine(data, k, n.Line), k)
		}
		if err := s.setNode(st, &n); err != nil {
			return err
		}
	}
	return nil
}

// keyLine is the line a top-level key is written on (its value may start
// below it), at or above line at.
func keyLine(data []byte, key string, at int) int {
	lines := strings.Split(string(data), "\n")
	for i := min(at, len(lines)); i >= 1; i-- {
		if strings.HasPrefix(lines[i-1], key+":") {
			return i
		}
	}
	return at
}

var lineRef = regexp.MustCompile(`line (\d+)`)

// keyAtLine finds the top-level key a YAML error at line n belongs to: the
// nearest line at or above it that starts with "key:".
func keyAtLine(data []byte, n string) string {
	lines := strings.Split(string(data), "\n")
	i, err := strconv.Atoi(n)
	if err != nil || i < 1 || i > len(lines) {
		return ""
	}
	for ; i >= 1; i-- {
		l := lines[i-1]
		if k, _, ok := strings.Cut(l, ":"); ok && l != "" && l[0] != ' ' && l[0] != '-' && l[0] != '#' {
			return strings.TrimSpace(k)
		}
	}
	return ""
}

// specKeys are the keys a spec may hold: its inputs' and the settings'.
func specKeys() []string {
	keys := []string{"models", "synth", "quantize_from", "types"}
	for _, st := range point.Settings {
		if st.Key != "" {
			keys = append(keys, st.Key)
		}
	}
	return append(keys, "max_points", "filter", "quality")
}

// Validate checks what one value cannot show: the inputs, and the
// settings against each other.
func (s *Spec) Validate() error {
	// -p 0 -n 0 -pg 512,128 measures only the pg test, as llama-bench does.
	if !slices.ContainsFunc(s.Ints("n_prompt"), positive) && !slices.ContainsFunc(s.Ints("n_gen"), positive) && s.base().PG == [2]int{} {
		return fmt.Errorf("n_prompt and n_gen are all 0: nothing to measure; give -p, -n or -pg")
	}
	strs := []struct {
		key   string
		a     *StrAxis
		check func(string) error
	}{
		{"types", &s.Types, func(v string) error { _, _, err := gguf.ParseFileType(v); return err }},
		{"synth", &s.Synth, func(v string) error { _, err := preset.Lookup(v); return err }},
	}
	for _, ax := range strs {
		if ax.a.set && len(ax.a.Values) == 0 {
			return fmt.Errorf("%s is empty: give at least one value, or leave the key out", ax.key)
		}
		for i, v := range ax.a.Values {
			ax.a.Values[i] = strings.ToLower(v)
			if err := ax.check(ax.a.Values[i]); err != nil {
				return fmt.Errorf("%s: %v", ax.key, err)
			}
		}
	}
	if s.Models.set && len(s.Models.Values) == 0 {
		return fmt.Errorf("models is empty: give at least one file, or leave the key out")
	}
	if s.QuantizeFrom != "" && len(s.Types.Values) == 0 {
		return fmt.Errorf("quantize_from needs types: the quantizations to make")
	}
	if len(s.Types.Values) > 0 && s.QuantizeFrom == "" && len(s.Synth.Values) == 0 {
		// A model file is measured as it is: types would be ignored.
		return fmt.Errorf("types are made from --synth PRESET or --quantize-from FILE; a model file (-m) is measured as it is: give --quantize-from FILE --types %s", strings.Join(s.Types.Values, ","))
	}
	for _, f := range s.Filter.Values {
		if _, err := parseFilter(f); err != nil {
			return fmt.Errorf("filter: %v", err)
		}
	}
	if err := s.base().CheckKnobs(); err != nil {
		return err
	}
	if s.Quality != nil {
		return s.Quality.validate()
	}
	return nil
}

func positive(v int) bool { return v > 0 }

// base is the point every point of the grid starts from: the settings of
// one value set, no test yet.
func (s *Spec) base() point.Point {
	p := point.Point{Sampling: point.SamplingOff}
	for i := range point.Settings {
		st := &point.Settings[i]
		if st.Kind != point.List && st.Key != "" && st.Set != nil {
			st.Set(&p, s.one(st.Key))
		}
	}
	return p
}

// Placement is the spec's placement with its largest n_cpu_moe, for
// checking its names against the devices here.
func (s *Spec) Placement() point.Placement {
	pl := s.base().Placement
	if n := s.Ints("n_cpu_moe"); len(n) > 0 {
		pl.NCPUMoE = slices.Max(n)
	}
	return pl
}

// Points is the grid in the order a sweep measures it (point.Order: each
// model loaded once, each context made once); Tests says what it holds.
func (s *Spec) Points(models []ModelRef) ([]point.Point, int, error) {
	tests, dropped, err := s.Tests(models)
	return point.Order(tests), dropped, err
}

// axes are the settings whose values multiply the grid, outermost first
// (llama-bench's loops: GPU layers, CPU MoE layers, batch, ubatch, K and
// V cache types, flash attention, threads, depth, poll; then tokbench's
// parallel sequences).
func axes() []*point.Setting {
	var out []*point.Setting
	for i := range point.Settings {
		if point.Settings[i].Nest > 0 {
			out = append(out, &point.Settings[i])
		}
	}
	slices.SortStableFunc(out, func(a, b *point.Setting) int { return a.Nest - b.Nest })
	return out
}

// Tests is the grid: every model times every combination of the axes,
// one point per test (pp for each n_prompt > 0, tg for each n_gen > 0 and
// sampling, a pp+tg for pg), less what the filters drop, and how many they
// dropped; in llama-bench's order: its loops nest model, then the axes
// (axes), and each combination runs its pp tests, then its tg tests, then
// its pg test.
func (s *Spec) Tests(models []ModelRef) ([]point.Point, int, error) {
	var filters []filter
	for _, f := range s.Filter.Values {
		flt, err := parseFilter(f)
		if err != nil {
			return nil, 0, &point.InputError{Err: err}
		}
		filters = append(filters, flt)
	}
	base := s.base()
	pg := base.PG
	base.PG = [2]int{}
	if err := s.checkSize(len(models), pg != [2]int{}); err != nil {
		return nil, 0, err
	}
	grid := []point.Point{}
	for _, m := range models {
		p := base
		p.Model, p.ModelID, p.Quant = m.Path, m.ID, m.Type
		grid = append(grid, p)
	}
	for _, ax := range axes() {
		grid = expand(grid, s.Get(ax.Key), ax.Set)
	}

	seen := map[point.Key]bool{}
	var out []point.Point
	dropped := 0
	add := func(p point.Point) {
		for _, f := range filters {
			if f.drops(p) {
				dropped++
				return
			}
		}
		if k := p.Key(); s.Repeats || !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	for _, p := range grid {
		for _, n := range s.Ints("n_prompt") {
			if n > 0 {
				pp := p
				pp.NPrompt = n
				add(pp)
			}
		}
		for _, n := range s.Ints("n_gen") {
			for _, smp := range s.Get("sampling") {
				if n > 0 {
					tg := p
					tg.NGen, tg.Sampling = n, point.Sampling(smp)
					add(tg)
				}
			}
		}
		if pg != [2]int{} {
			p.PG = pg
			add(p.CombinedTest())
		}
	}
	for _, p := range out {
		if err := p.Validate(); err != nil {
			return nil, 0, err
		}
	}
	return out, dropped, nil
}

// DefaultMaxPoints is the largest grid a sweep lays out unless told:
// at a few seconds a point, days of measuring.
const DefaultMaxPoints = 100000

// checkSize refuses a grid of more points than MaxPoints, counted from the
// axes' lengths before anything is laid out (filters may drop some later:
// they cannot be applied without laying it out).
func (s *Spec) checkSize(models int, pg bool) error {
	tests := 0
	for _, n := range s.Ints("n_prompt") {
		if n > 0 {
			tests++
		}
	}
	for _, n := range s.Ints("n_gen") {
		if n > 0 {
			tests += len(s.Get("sampling"))
		}
	}
	if pg {
		tests++
	}
	size := float64(models) * float64(tests)
	for _, ax := range axes() {
		size *= float64(len(s.Get(ax.Key)))
	}
	most := s.MaxPoints
	if most <= 0 {
		most = DefaultMaxPoints
	}
	if size > float64(most) {
		return point.Inputf("the grid has %.4g points, more than %d: narrow its axes, split it into sweeps, or raise --max-points (max_points in a spec)", size, most)
	}
	return nil
}

// expand multiplies the grid by one axis.
func expand(grid []point.Point, vals []string, set func(*point.Point, string)) []point.Point {
	next := make([]point.Point, 0, len(grid)*len(vals))
	for _, p := range grid {
		for _, v := range vals {
			set(&p, v)
			next = append(next, p)
		}
	}
	return next
}

// Layout names the spec's models without making them (work.Grid makes
// them): the refs (their paths
// resolved), the points of this shard and how many the filters dropped.
func (s *Spec) Layout(cacheDir string, shard Shard) ([]ModelRef, []point.Point, int, error) {
	refs, err := Refs(s, cacheDir, true)
	if err != nil {
		return nil, nil, 0, err
	}
	points, dropped, err := s.Tests(refs)
	if err == nil && len(points) == 0 {
		err = point.Inputf("the filters dropped all %d points", dropped)
	}
	if err != nil {
		return nil, nil, 0, err
	}
	if shard.Count > 0 {
		of, _, err := Partition(points, refs, shard.Count)
		if err != nil {
			return nil, nil, 0, err
		}
		points = slices.DeleteFunc(points, func(p point.Point) bool { return of[p.ModelID] != shard.Index })
		refs = slices.DeleteFunc(refs, func(r ModelRef) bool { i, ok := of[r.ID]; return !ok || i != shard.Index })
	}
	return refs, points, dropped, nil
}
