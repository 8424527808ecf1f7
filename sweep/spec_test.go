package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tokbench/tokbench/point"
)

func TestFilter(t *testing.T) {
	f, err := parseFilter("n_depth>=1024 && np>2 && type==q4_0")
	if err != nil {
		t.Fatal(err)
	}
	p := point.Point{NDepth: 2048, Parallel: 4, Quant: "q4_0", NGen: 1}
	if !f.drops(p) {
		t.Error("matching point kept")
	}
	p.Parallel = 2
	if f.drops(p) {
		t.Error("point failing one comparison dropped")
	}
	for _, bad := range []string{"depth>1", "n_depth", "n_depth>>", "n_depth>"} {
		if _, err := parseFilter(bad); err == nil {
			t.Errorf("filter %q accepted", bad)
		}
	}
}

// A filter names a setting by any of its names (the spec's, the
// records', its flag, llama-bench's short one), and reads it as the
// point's key does (ub: the physical batch used, at most b).
func TestFilterNamesSettings(t *testing.T) {
	p := point.Defaults(4)
	p.NBatch, p.NUBatch, p.TypeK, p.Parallel = 256, 512, "q8_0", 3
	for expr, drops := range map[string]bool{
		"ub==256": true, "n_ubatch==512": false, "ubatch-size<300": true, "type_k==q8_0": true, "ctk==q8_0": true,
		"cache_type_k==f16": false, "np==3": true, "n_parallel==3": true, "parallel>3": false, "fa==off": true, "fa==auto": false, "t==4": true,
		"n_threads==4 && test==tg": true, "sampling==off": true,
	} {
		f, err := parseFilter(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if f.drops(p) != drops {
			t.Errorf("%s drops %v, want %v", expr, !drops, drops)
		}
	}
	for _, st := range point.Settings {
		for _, name := range append([]string{st.Key, st.Field, st.Flag}, st.Aliases...) {
			if _, err := parseFilter(name + "==1"); name != "" && st.Get != nil && err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

func writeSpec(t *testing.T, text string) string {
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadSpecErrorsNameTheKey(t *testing.T) {
	cases := map[string]string{
		"n_prompt: 64\nn_depht: [0]\n": `unknown key "n_depht"`,
		"n_depth: []\n":                "n_depth is empty",
		"types: []\nsynth: [tiny]\n":   "types is empty",
		"n_gen: -5\n":                  "n_gen: -5 is out of range",
		"parallel: 100000\n":           "parallel: 100000 is out of range",
		"repetitions: 0\n":             "repetitions: line 1: -r \"0\"",
		"repetitions: 2000\n":          "repetitions: 2000 is out of range",
		"target_ci: 0\n":               "target_ci",
		"target_ci: .nan\n":            "target_ci: NaN%",
		"n_depth: 0-10-20\n":           "n_depth",
		"flash_attn: [sometimes]\n":    "flash_attn",
		"cache_type_k: q3_k\n":         "cache_type_k",
		"sampling: [beam]\n":           "sampling",
		"synth: [gpt-5]\n":             "synth",
		"timeout: forever\n":           "timeout",
		"n_prompt: 0\nn_gen: 0\n":      "nothing to measure",
		"filter: ['n_depth']\n":        "filter",
		"quantize_from: x.gguf\n":      "quantize_from needs types",
		"":                             "empty",
		"n_prompt: [64\n":              "spec",
		"n_cpu_moe: -1\n":              "n_cpu_moe: -1 is out of range",
		"poll: 101\n":                  "poll: 101",
		"pg: 512\n":                    "pg",
		"cpu_mask: 0xZ\n":              "hex digit",
		"prio: 7\n":                    "--prio",
		"tensor_split: 1/x\n":          "-ts",
	}
	for text, want := range cases {
		_, err := LoadSpec(writeSpec(t, text), 2)
		var ie *point.InputError
		if err == nil || !strings.Contains(err.Error(), want) || !errorsAs(err, &ie) {
			t.Errorf("spec %q: error %v, want an input error mentioning %q", text, err, want)
		}
	}
}

func errorsAs(err error, ie **point.InputError) bool {
	e, ok := err.(*point.InputError)
	*ie = e
	return ok
}

func TestExampleSpec(t *testing.T) {
	s, err := LoadSpec("../examples/sweep.yaml", 2)
	if err != nil {
		t.Fatal(err)
	}
	models := []ModelRef{{ID: "a", Path: "a.gguf", Type: "q8_0"}, {ID: "b", Path: "b.gguf", Type: "q4_0"}}
	points, dropped, err := s.Points(models)
	if err != nil {
		t.Fatal(err)
	}
	// per model: 2 depths x 2 parallel x (1 pp + 2 tg) = 12, less the
	// typical tg at depth 128 with 2 sequences.
	if len(points) != 2*11 || dropped != 2 {
		t.Errorf("%d points, %d dropped; want 22 and 2", len(points), dropped)
	}
	keys := map[point.Key]bool{}
	for _, p := range points {
		if keys[p.Key()] {
			t.Errorf("duplicate point %s", p.Key())
		}
		keys[p.Key()] = true
		if (p.NPrompt == 0) == (p.NGen == 0) {
			t.Errorf("point %s is not a single test", p.Key())
		}
	}
}

// llama-bench's knobs in a spec: n_cpu_moe and poll are axes, the rest
// apply to every point, and pg adds a pp+tg test per point.
func TestSpecKnobs(t *testing.T) {
	s, err := LoadSpec(writeSpec(t, "n_prompt: 64\nn_gen: 16\nn_cpu_moe: [0, 2]\npoll: [0, 50]\noverride_tensor: exps=CPU\n"+
		"tensor_split: 3/1\ndevices: none\nno_kv_offload: true\ncpu_mask: 0xF\ncpu_strict: true\nprio: 1\ndelay: 2s\npg: 32,8\n"), 2)
	if err != nil {
		t.Fatal(err)
	}
	points, _, err := s.Points([]ModelRef{{ID: "a", Path: "a.gguf", Type: "q8_0"}})
	if err != nil {
		t.Fatal(err)
	}
	// 2 n_cpu_moe x 2 poll x (pp, tg, pp+tg).
	if len(points) != 12 {
		t.Fatalf("%d points", len(points))
	}
	combined, moe, polls := 0, map[int]bool{}, map[string]bool{}
	for _, p := range points {
		if p.Combined {
			combined++
			if p.TestName() != "pp32+tg8" {
				t.Errorf("pp+tg point %s", p.TestName())
			}
		}
		moe[p.NCPUMoE], polls[p.Poll] = true, true
		if p.Overrides != "exps=CPU" || p.TensorSplit != "3/1" || p.Devices != "none" || !p.NoKVOffload || p.CPUMask != "0xF" || !p.CPUStrict ||
			p.Prio != 1 || p.Delay != 2*time.Second {
			t.Errorf("point knobs %+v %+v", p.Placement, p.Threading)
		}
	}
	if combined != 4 || len(moe) != 2 || !polls["0"] || !polls[""] { // 50 is the default, keyed as unset
		t.Errorf("%d pp+tg points, n_cpu_moe %v, poll %v", combined, moe, polls)
	}
	if pl := s.Placement(); pl.NCPUMoE != 2 || pl.Overrides != "exps=CPU" {
		t.Errorf("placement to check %+v", pl)
	}
}

// A grid past --max-points is refused from its axes' lengths, before it
// is laid out (a million points used to take gigabytes and a minute to
// plan); a larger --max-points lets it through.
func TestGridBound(t *testing.T) {
	s := DefaultSpec(2)
	set := func(key, text string) {
		t.Helper()
		if err := s.SetText(point.SettingOf(key), text); err != nil {
			t.Fatal(err)
		}
	}
	set("n_prompt", "1-1000+1")
	set("n_depth", "0-999+1")
	set("n_gen", "0")
	models := []ModelRef{{ID: "a", Path: "a.gguf", Type: "q8_0"}}
	start := time.Now()
	_, _, err := s.Points(models)
	var ie *point.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "the grid has 1e+06 points, more than 100000") || time.Since(start) > time.Second {
		t.Errorf("a million points: %v after %s", err, time.Since(start))
	}
	set("n_depth", "0,1")
	s.MaxPoints = 1000
	if _, _, err := s.Points(models); err == nil || !strings.Contains(err.Error(), "2000 points, more than 1000") {
		t.Errorf("2000 points past --max-points 1000: %v", err)
	}
	s.MaxPoints = 2000
	if points, _, err := s.Points(models); err != nil || len(points) != 2000 {
		t.Errorf("2000 points within --max-points 2000: %d %v", len(points), err)
	}
}

// Lists of names: commas split a flag's value or a YAML string, "\\,"
// keeps one in a name, and a YAML list's items are whole names.
func TestNameLists(t *testing.T) {
	if got := point.SplitList(` a.gguf, b\,c.gguf ,,d|e.gguf`); !reflect.DeepEqual(got, []string{"a.gguf", "b,c.gguf", "d|e.gguf"}) {
		t.Errorf("SplitList: %q", got)
	}
	s, err := LoadSpec(writeSpec(t, "models: [\"a,b.gguf\", c.gguf]\nsynth: tiny\ntypes: \"q4_0, q8_0\"\nn_prompt: 8\n"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Models.Values, []string{"a,b.gguf", "c.gguf"}) || !reflect.DeepEqual(s.Types.Values, []string{"q4_0", "q8_0"}) {
		t.Errorf("models %q, types %q", s.Models.Values, s.Types.Values)
	}
	// Types with model files alone would be ignored: refused, saying how.
	if _, err := LoadSpec(writeSpec(t, "models: [a.gguf]\ntypes: q4_0\nn_prompt: 8\n"), 2); err == nil || !strings.Contains(err.Error(), "--quantize-from") {
		t.Errorf("types with -m only: %v", err)
	}
}
