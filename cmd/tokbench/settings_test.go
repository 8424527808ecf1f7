package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/sweep"
	"github.com/urfave/cli/v2"
)

// examples are a value of each setting other than its default, as a flag
// and a spec's YAML give it; a setting added to point.Settings needs one
// here.
var examples = map[string]string{
	"n_prompt": "64", "n_gen": "16", "n_depth": "0,256", "parallel": "2", "n_batch": "1024", "n_ubatch": "256", "threads": "1",
	"n_gpu_layers": "0", "flash_attn": "on", "cache_type_k": "q8_0", "cache_type_v": "q8_0", "n_cpu_moe": "1", "no_host": "0,1", "no_op_offload": "1", "poll": "0,none",
	"sampling": "greedy", "split_mode": "row", "main_gpu": "1", "mmap": "false", "repetitions": "3", "target_ci": "5", "max_reps": "7",
	"drop_outliers": "true", "warmup": "false", "kernels": "false", "timeout": "1m0s", "seed": "7", "override_tensor": "exps=CPU",
	"tensor_split": "3/1", "devices": "none", "no_kv_offload": "true", "cpu_mask": "0x3", "cpu_strict": "true", "prio": "1",
	"delay": "2s", "pg": "8,4",
}

// A setting's flag and its spec key give the same values and the same
// points: a flag, a YAML key and a point's field cannot disagree. Run and
// sweep take every setting's flags, with their aliases.
func TestFlagsAndSpecKeysAgree(t *testing.T) {
	for _, cmd := range []*cli.Command{runCommand(), sweepCommand(), profileCommand()} {
		for _, st := range point.Settings {
			for _, name := range append([]string{st.Flag, st.Not}, st.Aliases...) {
				if name != "" && !slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) }) {
					t.Errorf("%s has no flag %q (%s)", cmd.Name, name, st.Key)
				}
			}
		}
	}
	dir := t.TempDir()
	for _, st := range point.Settings {
		if st.Key == "" {
			continue
		}
		v, ok := examples[st.Key]
		if !ok {
			t.Errorf("setting %s: give it an example value in this test", st.Key)
			continue
		}
		flagArgs := []string{"--" + st.Flag, v}
		switch {
		case st.Not != "" && v == "false":
			flagArgs = []string{"--" + st.Not}
		case st.Kind == point.Bool:
			flagArgs = []string{"--" + st.Flag + "=" + v}
		}
		// A setting that needs another (--cpu-strict a mask, -ctv q8_0 flash
		// attention) gets it.
		yaml := "synth: tiny\n" + st.Key + ": " + yamlValue(st, v) + "\n"
		switch st.Key {
		case "cpu_strict":
			flagArgs, yaml = append(flagArgs, "-C", "0x3"), yaml+"cpu_mask: '0x3'\n"
		case "cache_type_v": // a quantized V cache needs flash attention
			flagArgs, yaml = append(flagArgs, "-fa", "on"), yaml+"flash_attn: 'on'\n"
		}
		fromFlags := specOf(t, flagArgs...)
		spec := filepath.Join(dir, st.Key+".yaml")
		os.WriteFile(spec, []byte(yaml), 0o644)
		fromYAML := specOf(t, "--spec", spec)
		if !slices.Equal(fromFlags.Get(st.Key), fromYAML.Get(st.Key)) || slices.Equal(fromFlags.Get(st.Key), []string{st.Default}) {
			t.Errorf("%s: flags %v gave %q, YAML %q (default %q)", st.Key, flagArgs, fromFlags.Get(st.Key), fromYAML.Get(st.Key), st.Default)
		}
		a, b := points(t, fromFlags), points(t, fromYAML)
		if !slices.EqualFunc(a, b, func(x, y point.Point) bool { return x.Key() == y.Key() && x.Kernels == y.Kernels && x.Delay == y.Delay }) {
			t.Errorf("%s: the flag's points differ from the key's", st.Key)
		}
	}
}

// yamlValue writes an example as a spec does: a list of names as a YAML
// list, a number or a boolean as one, text quoted.
func yamlValue(st point.Setting, v string) string {
	switch st.Kind {
	case point.List:
		if !st.Ints {
			return "[" + v + "]"
		}
	case point.String, point.Duration:
		return "'" + v + "'"
	}
	return v
}

// specOf is sweep's spec from its flags.
func specOf(t *testing.T, args ...string) *sweep.Spec {
	t.Helper()
	var s *sweep.Spec
	app := &cli.App{Flags: sweepCommand().Flags, Action: func(c *cli.Context) error {
		var err error
		s, _, err = specFromFlags(c)
		return err
	}}
	if err := app.Run(append([]string{"tokbench", "--synth", "tiny"}, args...)); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return s
}

func points(t *testing.T, s *sweep.Spec) []point.Point {
	t.Helper()
	ps, _, err := s.Tests([]sweep.ModelRef{{ID: "m", Path: "m.gguf", Type: "q8_0"}})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}
