package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every example of llama-bench's README runs under tokbench run, with
// the tests of every combination, in llama-bench's order (sizes made
// small for the tiny model).
func TestLlamaBenchCommandLines(t *testing.T) {
	m := tinyModel(t)
	other := filepath.Join(t.TempDir(), "other.gguf")
	if r := tokbench(t, "synth", "--preset", "tiny", "--type", "q8_0", "--out", other); r.code != 0 {
		t.Fatalf("synth: %s", r.stderr)
	}
	for _, c := range []struct {
		args  []string
		tests []string // test names, in order
	}{
		{[]string{"-m", m, "-m", other, "-p", "0", "-n", "8,16"}, []string{"tg8", "tg16", "tg8", "tg16"}},
		{[]string{"-m", m, "-n", "0", "-p", "64", "-b", "16,32"}, []string{"pp64", "pp64"}},
		{[]string{"-m", m, "-n", "0", "-n", "4", "-p", "16", "-t", "1,2"}, []string{"pp16", "tg4", "pp16", "tg4"}},
		{[]string{"-m", m, "-p", "16", "-n", "4", "-ngl", "10,20"}, []string{"pp16", "tg4", "pp16", "tg4"}},
		{[]string{"-m", m, "-p", "16", "-n", "4", "-d", "0,32"}, []string{"pp16", "tg4", "pp16@d32", "tg4@d32"}},
		{[]string{"-m", m, "-p", "8-32*2", "-n", "0"}, []string{"pp8", "pp16", "pp32"}},
		{[]string{"-m", m, "-p", "16", "-n", "4", "-nkvo", "1", "--cpu-strict", "0", "-mmp", "0"}, []string{"pp16", "tg4"}},
		{[]string{"-m", m, "-p", "16", "-n", "0", "--poll", "none,50"}, []string{"pp16", "pp16"}},
		// llama-bench's switches as lists, in its loops' order (mmap
		// outside, then nkvo, then the mask, then strict); a model given
		// twice runs twice.
		{[]string{"-m", m, "-p", "16", "-n", "0", "-mmp", "0,1", "-nkvo", "0,1"}, []string{"pp16", "pp16", "pp16", "pp16"}},
		{[]string{"-m", m, "-p", "16", "-n", "0", "-C", "0x1,0x3", "--cpu-strict", "0,1"}, []string{"pp16", "pp16", "pp16", "pp16"}},
		{[]string{"-m", m + "," + m, "-p", "0", "-n", "4", "-sm", "layer,row"}, []string{"tg4", "tg4", "tg4", "tg4"}},
		{[]string{"-m", m, "-p", "16", "-n", "0", "-nkvo"}, []string{"pp16"}}, // alone, before -r 1
		{[]string{"-m", m, "-p", "16", "-n", "0", "-nopo", "0,1", "--no-host", "1"}, []string{"pp16", "pp16"}},
	} {
		r := tokbench(t, append(append([]string{"run"}, c.args...), "-r", "1", "--no-kernels", "--no-probe", "-o", "json")...)
		var recs []struct {
			Test     string `json:"test"`
			Model    string `json:"model_filename"`
			NBatch   int    `json:"n_batch"`
			Threads  int    `json:"n_threads"`
			NGL      int    `json:"n_gpu_layers"`
			NoKV     bool   `json:"no_kv_offload"`
			Mask     string `json:"cpu_mask"`
			Strict   bool   `json:"cpu_strict"`
			Split    string `json:"split_mode"`
			UseMmap  bool   `json:"use_mmap"`
			NPrompt  int    `json:"n_prompt"`
			Poll     int    `json:"poll"`
			Backends string `json:"backends"`
			NoOpOff  any    `json:"no_op_offload"`
			NoHost   bool   `json:"no_host"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &recs) != nil {
			t.Errorf("%v: exit %d: %s", c.args, r.code, r.stderr)
			continue
		}
		var tests []string
		for _, rec := range recs {
			tests = append(tests, rec.Test)
		}
		if !slices.Equal(tests, c.tests) {
			t.Errorf("%v: tests %v, want %v", c.args, tests, c.tests)
		}
		switch c.args[2] {
		case "-m":
			if filepath.Base(recs[0].Model) == filepath.Base(recs[2].Model) {
				t.Errorf("two models: %s, %s", recs[0].Model, recs[2].Model)
			}
		}
		if slices.Contains(c.args, "-b") && (recs[0].NBatch != 16 || recs[1].NBatch != 32) {
			t.Errorf("-b 16,32: n_batch %d, %d", recs[0].NBatch, recs[1].NBatch)
		}
		if slices.Contains(c.args, "-t") && (recs[0].Threads != 1 || recs[2].Threads != 2) {
			t.Errorf("-t 1,2: threads %d, %d", recs[0].Threads, recs[2].Threads)
		}
		if slices.Contains(c.args, "-ngl") && (recs[0].NGL != 10 || recs[2].NGL != 20) {
			t.Errorf("-ngl 10,20: %d, %d", recs[0].NGL, recs[2].NGL)
		}
		if slices.Contains(c.args, "--poll") && (recs[0].Poll != -1 || recs[1].Poll != 50) {
			t.Errorf("--poll none,50: poll %d, %d", recs[0].Poll, recs[1].Poll)
		}
		switch got := func(f func(i int) any) []any {
			var out []any
			for i := range recs {
				out = append(out, f(i))
			}
			return out
		}; {
		case slices.Contains(c.args, "0,1") && slices.Contains(c.args, "-mmp"):
			if g := got(func(i int) any { return [2]bool{recs[i].UseMmap, recs[i].NoKV} }); !slices.Equal(g, []any{[2]bool{false, false}, [2]bool{false, true}, [2]bool{true, false}, [2]bool{true, true}}) {
				t.Errorf("-mmp 0,1 -nkvo 0,1: (use_mmap, no_kv_offload) %v", g)
			}
		case slices.Contains(c.args, "-C"):
			if g := got(func(i int) any { return recs[i].Mask + fmt.Sprint(recs[i].Strict) }); !slices.Equal(g, []any{"0x1false", "0x1true", "0x3false", "0x3true"}) {
				t.Errorf("-C 0x1,0x3 --cpu-strict 0,1: %v", g)
			}
		case slices.Contains(c.args, "-sm"):
			if g := got(func(i int) any { return recs[i].Split }); !slices.Equal(g, []any{"layer", "row", "layer", "row"}) {
				t.Errorf("-m a,a -sm layer,row: %v", g)
			}
		case slices.Contains(c.args, "-nopo"):
			// Written as llama-bench writes it: 0 or 1.
			if g := got(func(i int) any { return fmt.Sprint(recs[i].NoOpOff, recs[i].NoHost) }); !slices.Equal(g, []any{"0 true", "1 true"}) {
				t.Errorf("-nopo 0,1 --no-host 1: (no_op_offload, no_host) %v", g)
			}
		case slices.Contains(c.args, "-nkvo") && slices.Contains(c.args, "1") && len(recs) == 2:
			if !recs[0].NoKV || recs[0].UseMmap {
				t.Errorf("-nkvo 1 -mmp 0: no_kv_offload %v, use_mmap %v", recs[0].NoKV, recs[0].UseMmap)
			}
		case slices.Contains(c.args, "-nkvo"):
			if !recs[0].NoKV {
				t.Errorf("-nkvo alone: no_kv_offload %v", recs[0].NoKV)
			}
		}
	}
	// The default table of a two-test run fits 120 columns.
	r := tokbench(t, "run", "-m", m, "-p", "16", "-n", "4", "-r", "3", "--no-probe")
	for _, line := range strings.Split(r.stdout, "\n") {
		if n := len([]rune(line)); n > 120 {
			t.Errorf("a line of %d columns:\n%s", n, r.stdout)
		}
	}
	if r.code != 0 || !strings.Contains(r.stdout, "pp16") || !strings.Contains(r.stdout, "t/s") {
		t.Errorf("table: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A switch's value that is not 0 or 1 is named as such, not taken
	// for an argument; a sweep's plan names the switches that vary.
	if r := tokbench(t, "run", "-m", m, "-nkvo", "2"); r.code != 2 || !strings.Contains(r.stderr, `"2": give 0 or 1`) {
		t.Errorf("-nkvo 2: exit %d: %s", r.code, r.stderr)
	}
	if r := tokbench(t, "sweep", "-m", m, "-p", "0", "-n", "4", "-nkvo", "0,1", "--dry-run"); r.code != 0 || !strings.Contains(r.stdout, "settings") || !strings.Contains(r.stdout, "nkvo=true") {
		t.Errorf("sweep -nkvo 0,1 --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// llama-bench's switches tokbench keeps off are refused when on.
	if r := tokbench(t, "run", "-m", m, "-embd", "1"); r.code != 2 || !strings.Contains(r.stderr, "embeddings") {
		t.Errorf("-embd 1: exit %d: %s", r.code, r.stderr)
	}
}
