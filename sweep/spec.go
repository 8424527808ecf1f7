package sweep

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/infile"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/preset"
	"gopkg.in/yaml.v3"
)

// IntAxis is an integer axis: in YAML a number, a range string
// ("0-4096*2", "1-8+1") or a list of those.
type IntAxis struct {
	Values []int
	set    bool
}

// StrAxis is a string axis: in YAML a string (comma list) or a list.
type StrAxis struct {
	Values []string
	set    bool
}

// Ints makes an axis from values.
func Ints(v ...int) IntAxis { return IntAxis{Values: v, set: true} }

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

func (a *IntAxis) UnmarshalYAML(n *yaml.Node) error {
	items, err := scalars(n, "numbers or ranges")
	a.set, a.Values = true, nil
	for _, it := range items {
		vals, err := ParseInts(it.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", it.Line, err)
		}
		a.Values = append(a.Values, vals...)
	}
	return err
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
		a.Values = append(a.Values, SplitList(it.Value)...)
	}
	return err
}

// Reps is a repetition count in YAML: a number, or auto (point.AutoReps).
type Reps int

func (r *Reps) UnmarshalYAML(n *yaml.Node) error {
	v, err := point.ParseReps(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	*r = Reps(v)
	return nil
}

// Duration reads "90s", "10m" from YAML.
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration like 90s or 10m", n.Line, n.Value)
	}
	d.Duration = v
	return nil
}

// Spec is a sweep: the axes whose product is the grid, and the settings
// every point shares. Flags and YAML files (--spec) fill the same struct;
// the YAML keys are the yaml tags below.
type Spec struct {
	Models       StrAxis  `yaml:"models"`
	Synth        StrAxis  `yaml:"synth"`
	QuantizeFrom string   `yaml:"quantize_from"`
	Types        StrAxis  `yaml:"types"`
	NPrompt      IntAxis  `yaml:"n_prompt"`
	NGen         IntAxis  `yaml:"n_gen"`
	NDepth       IntAxis  `yaml:"n_depth"`
	Parallel     IntAxis  `yaml:"parallel"`
	NBatch       IntAxis  `yaml:"n_batch"`
	NUBatch      IntAxis  `yaml:"n_ubatch"`
	Threads      IntAxis  `yaml:"threads"`
	NGPULayers   IntAxis  `yaml:"n_gpu_layers"`
	FlashAttn    StrAxis  `yaml:"flash_attn"`
	TypeK        StrAxis  `yaml:"cache_type_k"`
	TypeV        StrAxis  `yaml:"cache_type_v"`
	Sampling     StrAxis  `yaml:"sampling"`
	SplitMode    string   `yaml:"split_mode"`
	MainGPU      int      `yaml:"main_gpu"`
	Mmap         bool     `yaml:"mmap"`
	Repetitions  Reps     `yaml:"repetitions"` // a count, or auto
	TargetCI     float64  `yaml:"target_ci"`   // percent, for auto
	MaxReps      int      `yaml:"max_reps"`    // for auto
	DropOutliers bool     `yaml:"drop_outliers"`
	Warmup       bool     `yaml:"warmup"`
	Kernels      bool     `yaml:"kernels"` // time each step's ops alone (the roofline's decomposition)
	Timeout      Duration `yaml:"timeout"`
	Seed         uint64   `yaml:"seed"`
	// MaxPoints bounds the grid (0: DefaultMaxPoints): a larger one is
	// refused before it is laid out, in bounded time and memory.
	MaxPoints int     `yaml:"max_points"`
	Filter    StrAxis `yaml:"filter"`
	// llama-bench's placement and threading knobs, as run's flags of the
	// same names; n_cpu_moe and poll are axes (poll unset: llama-bench's 50,
	// -1: no thread pool).
	NCPUMoE        IntAxis  `yaml:"n_cpu_moe"`
	Poll           IntAxis  `yaml:"poll"`
	OverrideTensor string   `yaml:"override_tensor"` // PATTERN=BUFFER_TYPE;...
	TensorSplit    string   `yaml:"tensor_split"`    // 3/1
	Devices        string   `yaml:"devices"`         // CUDA0/CUDA1, none
	NoKVOffload    bool     `yaml:"no_kv_offload"`
	CPUMask        string   `yaml:"cpu_mask"`
	CPUStrict      bool     `yaml:"cpu_strict"`
	Prio           int      `yaml:"prio"`
	Delay          Duration `yaml:"delay"`
	PG             string   `yaml:"pg"` // a pp+tg test per point too: "512,128"
	// Quality, when set, also evaluates each model's quality against its
	// family's base after the speed points (QualityGroups).
	Quality *QualitySpec `yaml:"quality"`
}

// DefaultSpec has llama-bench's defaults.
func DefaultSpec(threads int) *Spec {
	d := point.Defaults(threads)
	return &Spec{
		NPrompt: Ints(d.NPrompt), NGen: Ints(d.NGen), NDepth: Ints(0), Parallel: Ints(1),
		NBatch: Ints(d.NBatch), NUBatch: Ints(d.NUBatch), Threads: Ints(threads), NGPULayers: Ints(-1),
		FlashAttn: Strs("auto"), TypeK: Strs("f16"), TypeV: Strs("f16"), Sampling: Strs("off"),
		NCPUMoE: Ints(0), SplitMode: "layer", Mmap: true, Repetitions: point.AutoReps, TargetCI: 100 * d.TargetCI, MaxReps: d.MaxReps, Warmup: true, Kernels: true, Timeout: Duration{d.Timeout}, Seed: d.Seed,
	}
}

var unknownField = regexp.MustCompile(`line (\d+): field (\S+) not found`)

// LoadSpec reads a YAML spec over the defaults.
func LoadSpec(path string, threads int) (*Spec, error) {
	data, err := infile.ReadFile(path)
	if err != nil {
		return nil, &point.InputError{Err: fmt.Errorf("spec: %w", err)}
	}
	s := DefaultSpec(threads)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(s); err != nil {
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

func specKeys() []string {
	return []string{"models", "synth", "quantize_from", "types", "n_prompt", "n_gen", "n_depth", "parallel", "n_batch", "n_ubatch",
		"threads", "n_gpu_layers", "flash_attn", "cache_type_k", "cache_type_v", "sampling", "split_mode", "main_gpu", "mmap",
		"repetitions", "target_ci", "max_reps", "drop_outliers", "warmup", "kernels", "timeout", "seed", "filter", "quality"}
}

// Validate checks every axis and value, naming the key at fault.
func (s *Spec) Validate() error {
	ints := []struct {
		key      string
		a        IntAxis
		min, max int
	}{
		{"n_prompt", s.NPrompt, 0, point.MaxTokens}, {"n_gen", s.NGen, 0, point.MaxTokens}, {"n_depth", s.NDepth, 0, point.MaxDepth},
		{"parallel", s.Parallel, 1, point.MaxParallel}, {"n_batch", s.NBatch, 1, point.MaxTokens},
		{"n_ubatch", s.NUBatch, 1, point.MaxTokens}, {"threads", s.Threads, 1, point.MaxThreads}, {"n_gpu_layers", s.NGPULayers, -1, 1 << 16},
		{"n_cpu_moe", s.NCPUMoE, 0, 4096},
	}
	for _, ax := range ints {
		if len(ax.a.Values) == 0 {
			return fmt.Errorf("%s is empty: give at least one value, or leave the key out for the default", ax.key)
		}
		for _, v := range ax.a.Values {
			if v < ax.min || v > ax.max {
				return fmt.Errorf("%s: %d is out of range (%d to %d)", ax.key, v, ax.min, ax.max)
			}
		}
	}
	if !slicesAny(s.NPrompt.Values, func(v int) bool { return v > 0 }) && !slicesAny(s.NGen.Values, func(v int) bool { return v > 0 }) {
		return fmt.Errorf("n_prompt and n_gen are all 0: nothing to measure")
	}
	strs := []struct {
		key   string
		a     *StrAxis
		check func(string) error
	}{
		{"flash_attn", &s.FlashAttn, func(v string) error { _, err := point.ParseFlashAttn(v); return err }},
		{"cache_type_k", &s.TypeK, func(v string) error { _, err := point.ParseKVType(v); return err }},
		{"cache_type_v", &s.TypeV, func(v string) error { _, err := point.ParseKVType(v); return err }},
		{"sampling", &s.Sampling, func(v string) error {
			if v != "off" && v != "greedy" && v != "typical" {
				return fmt.Errorf("%q: use off, greedy or typical", v)
			}
			return nil
		}},
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
	if _, err := point.ParseSplitMode(s.SplitMode); err != nil {
		return fmt.Errorf("split_mode: %v", err)
	}
	if s.Repetitions < 0 || s.Repetitions > point.MaxReps {
		return fmt.Errorf("repetitions: %d is out of range (1 to %d, or auto)", s.Repetitions, point.MaxReps)
	}
	if !(s.TargetCI > 0 && s.TargetCI < 100) { // NaN too
		return fmt.Errorf("target_ci: %g%% must be above 0 and below 100", s.TargetCI)
	}
	if s.MaxReps < point.MinAutoReps || s.MaxReps > point.MaxReps {
		return fmt.Errorf("max_reps: %d is out of range (%d to %d)", s.MaxReps, point.MinAutoReps, point.MaxReps)
	}
	if s.Timeout.Duration < 0 {
		return fmt.Errorf("timeout: %s is negative", s.Timeout)
	}
	for _, f := range s.Filter.Values {
		if _, err := ParseFilter(f); err != nil {
			return fmt.Errorf("filter: %v", err)
		}
	}
	for _, v := range s.Poll.Values {
		if v < -1 || v > 100 {
			return fmt.Errorf("poll: %d is out of range (0 to 100, or -1 for no thread pool)", v)
		}
	}
	if _, err := s.pg(); err != nil {
		return fmt.Errorf("pg: %v", err)
	}
	if err := s.knobs(point.Point{}).CheckKnobs(); err != nil {
		return err
	}
	if s.Quality != nil {
		return s.Quality.validate()
	}
	return nil
}

func (s *Spec) pg() ([2]int, error) { return point.ParsePG(s.PG) }

// knobs is p with the spec's fixed llama-bench knobs.
func (s *Spec) knobs(p point.Point) point.Point {
	p.Placement = point.Placement{Devices: s.Devices, TensorSplit: s.TensorSplit, Overrides: s.OverrideTensor}
	p.Threading = point.Threading{CPUMask: s.CPUMask, CPUStrict: s.CPUStrict, Prio: s.Prio}
	p.NoKVOffload, p.Delay = s.NoKVOffload, s.Delay.Duration
	return p
}

// Placement is the spec's placement with its first n_cpu_moe, for
// checking its names against the devices here.
func (s *Spec) Placement() point.Placement {
	pl := s.knobs(point.Point{}).Placement
	if len(s.NCPUMoE.Values) > 0 {
		pl.NCPUMoE = slices.Max(s.NCPUMoE.Values)
	}
	return pl
}

func slicesAny(xs []int, f func(int) bool) bool {
	for _, x := range xs {
		if f(x) {
			return true
		}
	}
	return false
}

// Points is the grid in the order a sweep measures it (point.Order: each
// model loaded once, each context made once); Tests says what it holds.
func (s *Spec) Points(models []ModelRef) ([]point.Point, int, error) {
	tests, dropped, err := s.Tests(models)
	return point.Order(tests), dropped, err
}

// Tests is the grid: every model times every combination of the axes,
// one point per test (pp for each n_prompt > 0, tg for each n_gen > 0 and
// sampling, a pp+tg for pg), less what the filters drop, and how many they
// dropped; in llama-bench's order: its loops nest model, GPU layers, CPU
// MoE layers, batch, ubatch, K and V cache types, flash attention,
// threads, depth and poll (then tokbench's parallel sequences), and each
// combination runs its pp tests, then its tg tests, then its pg test.
func (s *Spec) Tests(models []ModelRef) ([]point.Point, int, error) {
	var filters []Filter
	for _, f := range s.Filter.Values {
		flt, err := ParseFilter(f)
		if err != nil {
			return nil, 0, &point.InputError{Err: err}
		}
		filters = append(filters, flt)
	}
	split, _ := point.ParseSplitMode(s.SplitMode)
	base := point.Point{Split: split, MainGPU: s.MainGPU, NoMmap: !s.Mmap, Reps: int(s.Repetitions), TargetCI: s.TargetCI / 100, MaxReps: s.MaxReps, DropOutliers: s.DropOutliers, NoWarmup: !s.Warmup,
		Seed: s.Seed, Timeout: s.Timeout.Duration, Sampling: "off", Kernels: s.Kernels}
	base = s.knobs(base)
	pg, _ := s.pg()
	if err := s.checkSize(len(models), pg != [2]int{}); err != nil {
		return nil, 0, err
	}
	grid := []point.Point{}
	for _, m := range models {
		p := base
		p.Model, p.ModelID, p.Quant = m.Path, m.ID, m.Type
		grid = append(grid, p)
	}
	grid = expand(grid, s.NGPULayers.Values, func(p *point.Point, v int) { p.NGPULayers = v })
	grid = expand(grid, s.NCPUMoE.Values, func(p *point.Point, v int) { p.NCPUMoE = v })
	grid = expand(grid, s.NBatch.Values, func(p *point.Point, v int) { p.NBatch = v })
	grid = expand(grid, s.NUBatch.Values, func(p *point.Point, v int) { p.NUBatch = v })
	grid = expand(grid, s.TypeK.Values, func(p *point.Point, v string) { p.TypeK = v })
	grid = expand(grid, s.TypeV.Values, func(p *point.Point, v string) { p.TypeV = v })
	grid = expand(grid, s.FlashAttn.Values, func(p *point.Point, v string) { p.FlashAttn, _ = point.ParseFlashAttn(v) })
	grid = expand(grid, s.Threads.Values, func(p *point.Point, v int) { p.Threads = v })
	grid = expand(grid, s.NDepth.Values, func(p *point.Point, v int) { p.NDepth = v })
	if len(s.Poll.Values) > 0 {
		grid = expand(grid, s.Poll.Values, func(p *point.Point, v int) { p.Poll = pollOf(v) })
	}
	grid = expand(grid, s.Parallel.Values, func(p *point.Point, v int) { p.Parallel = v })

	seen := map[point.Key]bool{}
	var out []point.Point
	dropped := 0
	add := func(p point.Point) {
		for _, f := range filters {
			if f.Drops(p) {
				dropped++
				return
			}
		}
		if k := p.Key(); !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	for _, p := range grid {
		for _, n := range s.NPrompt.Values {
			if n > 0 {
				pp := p
				pp.NPrompt = n
				add(pp)
			}
		}
		for _, n := range s.NGen.Values {
			for _, smp := range s.Sampling.Values {
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
	for _, n := range s.NPrompt.Values {
		if n > 0 {
			tests++
		}
	}
	for _, n := range s.NGen.Values {
		if n > 0 {
			tests += len(s.Sampling.Values)
		}
	}
	if pg {
		tests++
	}
	size := float64(models) * float64(tests)
	for _, n := range []int{len(s.Parallel.Values), len(s.NBatch.Values), len(s.NUBatch.Values), len(s.Threads.Values),
		len(s.NGPULayers.Values), len(s.FlashAttn.Values), len(s.TypeK.Values), len(s.TypeV.Values), len(s.NDepth.Values),
		len(s.NCPUMoE.Values), max(len(s.Poll.Values), 1)} {
		size *= float64(n)
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
func expand[T any](grid []point.Point, vals []T, set func(*point.Point, T)) []point.Point {
	next := make([]point.Point, 0, len(grid)*len(vals))
	for _, p := range grid {
		for _, v := range vals {
			set(&p, v)
			next = append(next, p)
		}
	}
	return next
}

// Grid names the spec's models and lays out its points (in Tests' order)
// with how many the filters dropped (a grid the filters emptied is the user's error); with a
// shard (Count > 0), keeps that shard's share of the points (Partition)
// and its models; then makes the models kept that are not made yet (log
// says what is made).
func (s *Spec) Grid(cacheDir string, log io.Writer, check func(path string) error, shard Shard) ([]ModelRef, []point.Point, int, error) {
	refs, points, dropped, err := s.Layout(cacheDir, shard)
	if err != nil {
		return nil, nil, 0, err
	}
	return refs, points, dropped, Make(refs, s.Seed, log, check)
}

// Layout is Grid without making the models: the refs (their paths
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

// pollOf is a poll axis value as a point's Poll: -1 is point.NoPool.
func pollOf(v int) string {
	if v < 0 {
		return point.NoPool
	}
	return point.PollOf(strconv.Itoa(v))
}
