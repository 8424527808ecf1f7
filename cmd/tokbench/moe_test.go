package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// synth makes both mixtures from flags, and info says what they hold
// and that the router's spread is measured, not assumed.
func TestSynthMixtureFlags(t *testing.T) {
	dir := t.TempDir()
	q3 := filepath.Join(dir, "q3.gguf")
	r := tokbench(t, "synth", "--arch", "qwen3moe", "--n-embd", "256", "--n-layer", "2", "--n-ff", "512", "--n-head", "4", "--n-head-kv", "2",
		"--head-dim", "96", "--n-vocab", "1024", "--n-expert", "16", "--n-expert-used", "4", "--n-ff-exp", "128", "--type", "q4_0", "--out", q3)
	if r.code != 0 || !strings.Contains(r.stderr, "active: 4 of 16 experts") {
		t.Fatalf("synth qwen3moe: exit %d %s", r.code, r.stderr)
	}
	r = tokbench(t, "info", q3)
	if r.code != 0 || !strings.Contains(r.stdout, "arch qwen3moe") || !strings.Contains(r.stdout, "experts: 16 per layer, 4 used per token") ||
		!strings.Contains(r.stdout, "measured by tokbench run") {
		t.Errorf("info: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--preset", "tiny-moe", "--n-expert-used", "9"}, "9 experts used of 8"},
		{[]string{"--preset", "tiny-moe", "--router", "hot"}, "--router hot: use random or same"},
		{[]string{"--preset", "tiny", "--arch", "mamba"}, "tokbench synthesizes llama and qwen3moe"},
	} {
		if r := tokbench(t, append([]string{"synth", "--out", filepath.Join(dir, "x.gguf")}, c.args...)...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("synth %v: exit %d %s; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// run --dry-run estimates a mixture too large to make here from its
// shape alone: all its experts in memory, a decode step's share of them
// in its bytes, and it makes no file.
func TestDryRunMixture(t *testing.T) {
	cache := t.TempDir()
	r := tokbenchEnv(t, []string{"TOKBENCH_CACHE=" + cache}, "run", "--synth", "qwen3-30b-a3b", "--synth-type", "q4_k_m", "-p", "0", "-n", "128", "-np", "1,8", "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	if len(lines) < 3 || !strings.Contains(lines[1], "qwen3-30b-a3b q4_k_m (planned)") || !strings.Contains(lines[1], "8.0 of 128)") ||
		!strings.Contains(lines[2], "51.6 of 128)") || !strings.Contains(lines[1], "17.") {
		t.Errorf("dry run:\n%s", r.stdout)
	}
	// -o json: the same estimates for scripts; a format that is neither
	// is refused.
	r = tokbenchEnv(t, []string{"TOKBENCH_CACHE=" + cache}, "run", "--synth", "qwen3-30b-a3b", "--synth-type", "q4_k_m", "-p", "0", "-n", "128", "--dry-run", "-o", "json")
	var rows []struct {
		Fits    bool `json:"fits"`
		Experts struct {
			Uniform float64 `json:"uniform_per_step"`
		} `json:"experts"`
		Roofline struct {
			Bytes   float64 `json:"bytes_per_step"`
			Experts float64 `json:"expert_bytes_per_step"`
		} `json:"roofline"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 || rows[0].Experts.Uniform != 8 ||
		rows[0].Roofline.Experts <= 0 || rows[0].Roofline.Experts >= rows[0].Roofline.Bytes {
		t.Errorf("-o json: %v %+v\n%s", err, rows, r.stdout)
	}
	if r := tokbench(t, "run", "--synth", "tiny", "--dry-run", "-o", "csv"); r.code != 2 || !strings.Contains(r.stderr, "-o json") {
		t.Errorf("-o csv: exit %d %s", r.code, r.stderr)
	}
	// sweep's dry run plans it too, making nothing.
	r = tokbenchEnv(t, []string{"TOKBENCH_CACHE=" + cache}, "sweep", "--synth", "qwen3-30b-a3b", "--types", "q4_k_m", "-p", "0", "-n", "128", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "synth:qwen3-30b-a3b:q4_k_m") || !strings.Contains(r.stdout, "17.6") {
		t.Errorf("sweep --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if files, _ := filepath.Glob(filepath.Join(cache, "*.gguf")); len(files) > 0 {
		t.Errorf("a dry run made %v", files)
	}
}

// Quality of a mixture's quantizations works as for a dense model: the
// KL divergence against the base grows as the bits shrink.
func TestQualityMixture(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "moe-f32.gguf")
	if r := tokbench(t, "synth", "--preset", "tiny-moe", "--type", "f32", "--out", base); r.code != 0 {
		t.Fatalf("synth: %s", r.stderr)
	}
	r := tokbenchEnv(t, []string{"TOKBENCH_CACHE=" + dir}, "quality", "--quantize-from", base, "--types", "q8_0,q4_0", "--tokens", "1024", "--ctx", "256")
	if r.code != 0 {
		t.Fatalf("quality: exit %d %s", r.code, r.stderr)
	}
	kld := map[string]float64{}
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && strings.HasPrefix(f[0], "quant:") {
			kld[f[1]], _ = strconv.ParseFloat(f[5], 64) // model, type, size MiB, bpw, KLD
		}
	}
	if !(kld["q8_0"] > 0 && kld["q4_0"] > kld["q8_0"]) {
		t.Errorf("KLD %v, want 0 < q8_0 < q4_0:\n%s", kld, r.stdout)
	}
}
