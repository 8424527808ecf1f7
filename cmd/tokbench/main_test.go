package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	binPath string
	workDir string
)

// TestMain builds the real binary once; the tests run it as a user would.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tokbench-cli-")
	if err != nil {
		panic(err)
	}
	workDir = dir
	// Every binary a test starts, however it starts it, uses a cache of
	// the tests' own, never the user's.
	if os.Getenv("TOKBENCH_CACHE") == "" {
		os.Setenv("TOKBENCH_CACHE", filepath.Join(dir, "cache"))
	}
	binPath = filepath.Join(dir, "tokbench")
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		panic("build tokbench: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

func tokbench(t *testing.T, args ...string) result {
	t.Helper()
	return tokbenchEnv(t, nil, args...)
}

// tokbenchEnv is tokbench with more environment variables (they win over
// the test's own and the default cache).
func tokbenchEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	// Generous: llama.cpp's threads spin-wait, so a 2-core machine busy
	// with another benchmark slows a command down many times over.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = os.Environ()
	if os.Getenv("TOKBENCH_CACHE") == "" {
		cmd.Env = append(cmd.Env, "TOKBENCH_CACHE="+filepath.Join(workDir, "cache"))
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("tokbench %v: %v", args, err)
	}
	if strings.Contains(errb.String(), "panic:") || strings.Contains(errb.String(), "SIGSEGV") {
		t.Fatalf("tokbench %v crashed:\n%s", args, errb.String())
	}
	return result{out.String(), errb.String(), code}
}

// tinyModel synthesizes the tiny preset once per test binary.
func tinyModel(t *testing.T) string {
	t.Helper()
	p := filepath.Join(workDir, "tiny-f16.gguf")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	// -o FILE, the old spelling of --out, still works and says so.
	r := tokbench(t, "synth", "--preset", "tiny", "--type", "f16", "--seed", "3", "-o", p)
	if r.code != 0 || !strings.Contains(r.stderr, "deprecated") {
		t.Fatalf("synth: %d %s", r.code, r.stderr)
	}
	return p
}

func TestRunJSON(t *testing.T) {
	model := tinyModel(t)
	r := tokbench(t, "run", "-m", model, "-p", "64", "-n", "16", "-r", "3", "-d", "32", "--parallel", "2", "--sampling", "greedy", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var recs []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("output is not a JSON array: %v\n%s", err, r.stdout)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want pp, tg and sampled tg", len(recs))
	}
	for _, k := range []string{"build_commit", "model_filename", "model_type", "model_size", "model_n_params", "n_batch", "n_ubatch",
		"n_threads", "type_k", "type_v", "n_gpu_layers", "flash_attn", "n_prompt", "n_gen", "n_depth", "avg_ns", "stddev_ns",
		"avg_ts", "stddev_ts", "samples_ns", "samples_ts", "cv", "ci95_ts", "cpu_features", "backends", "devices", "ollama_version"} {
		for i, rec := range recs {
			if _, ok := rec[k]; !ok {
				t.Errorf("record %d has no %q", i, k)
			}
		}
	}
	pp, tg, sampled := recs[0], recs[1], recs[2]
	if pp["n_gen"].(float64) != 0 || pp["n_prompt"].(float64) != 64 || tg["n_prompt"].(float64) != 0 || tg["n_gen"].(float64) != 16 {
		t.Errorf("pp/tg split wrong: pp %v/%v tg %v/%v", pp["n_prompt"], pp["n_gen"], tg["n_prompt"], tg["n_gen"])
	}
	for i, rec := range recs {
		if n := len(rec["samples_ts"].([]any)); n != 3 {
			t.Errorf("record %d: %d samples, want 3", i, n)
		}
		if rec["avg_ts"].(float64) <= 0 || rec["n_depth"].(float64) != 32 || rec["n_parallel"].(float64) != 2 {
			t.Errorf("record %d: avg_ts %v depth %v parallel %v", i, rec["avg_ts"], rec["n_depth"], rec["n_parallel"])
		}
		// aggregate = 2 sequences x per-sequence rate
		if a, s := rec["avg_ts"].(float64), rec["avg_ts_per_seq"].(float64); a < 1.999*s || a > 2.001*s {
			t.Errorf("record %d: aggregate %v is not 2 x per-sequence %v", i, a, s)
		}
	}
	if _, ok := pp["ttft_ms"].(map[string]any)["p50"]; !ok {
		t.Error("pp record has no ttft_ms.p50")
	}
	for _, k := range []string{"p50", "p90", "p99", "max"} {
		if v, ok := tg["itl_ms"].(map[string]any)[k].(float64); !ok || v <= 0 {
			t.Errorf("tg itl_ms.%s = %v", k, v)
		}
	}
	if tg["sampling"] != "none" || !strings.HasPrefix(sampled["sampling"].(string), "greedy") {
		t.Errorf("sampling fields %v / %v", tg["sampling"], sampled["sampling"])
	}
	if _, ok := sampled["sampling_cost_pct"].(float64); !ok {
		t.Error("sampled record has no sampling_cost_pct")
	}
	// No NVML on the test machines: said once, and the host is sampled.
	if strings.Count(r.stderr, "NVML unavailable") > 1 {
		t.Errorf("NVML's absence reported more than once:\n%s", r.stderr)
	}
	for i, rec := range recs {
		tel, _ := rec["telemetry"].(map[string]any)
		if tel == nil || tel["measure"] == nil || len(tel["reps"].([]any)) != 3 {
			t.Errorf("record %d: telemetry %v", i, rec["telemetry"])
		}
	}
}

func TestRunFormats(t *testing.T) {
	model := tinyModel(t)
	for format, want := range map[string]string{"table": "t/s", "md": "| ---", "csv": "avg_ts,", "jsonl": `"avg_ts":`} {
		r := tokbench(t, "run", "-m", model, "-p", "32", "-n", "8", "-r", "2", "-o", format)
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("-o %s: exit %d, output lacks %q:\n%s%s", format, r.code, want, r.stdout, r.stderr)
		}
		if format == "jsonl" && strings.Count(strings.TrimSpace(r.stdout), "\n") != 1 {
			t.Errorf("jsonl: want 2 lines, got:\n%s", r.stdout)
		}
	}
}

func TestRunSynthCached(t *testing.T) {
	t.Setenv("TOKBENCH_CACHE", t.TempDir()) // empty: the first run synthesizes
	r := tokbench(t, "run", "--synth", "tiny", "--synth-type", "q4_0", "-p", "16", "-n", "4", "-r", "1")
	if r.code != 0 || !strings.Contains(r.stderr, "synthesizing") {
		t.Fatalf("first run: exit %d, stderr %s", r.code, r.stderr)
	}
	r = tokbench(t, "run", "--synth", "tiny", "--synth-type", "q4_0", "-p", "16", "-n", "4", "-r", "1")
	if r.code != 0 || strings.Contains(r.stderr, "synthesizing") {
		t.Fatalf("second run should reuse the cached model: exit %d, stderr %s", r.code, r.stderr)
	}
}

// synth --cache makes a preset in the cache, where run --synth and sweep
// --synth find it; a changed shape is refused there.
func TestSynthIntoCache(t *testing.T) {
	t.Setenv("TOKBENCH_CACHE", t.TempDir())
	if r := tokbench(t, "synth", "--preset", "tiny", "--type", "q4_0", "--cache"); r.code != 0 || !strings.Contains(r.stderr, "wrote") {
		t.Fatalf("synth: exit %d, stderr %s", r.code, r.stderr)
	}
	r := tokbench(t, "run", "--synth", "tiny", "--synth-type", "q4_0", "-p", "16", "-n", "0", "-r", "1", "--no-kernels")
	if r.code != 0 || strings.Contains(r.stderr, "synthesizing") {
		t.Fatalf("run --synth should find synth's model: exit %d, stderr %s", r.code, r.stderr)
	}
	// Made already: reused, not made again; a damaged one is made again.
	models, _ := filepath.Glob(filepath.Join(os.Getenv("TOKBENCH_CACHE"), "*.gguf"))
	if len(models) != 1 {
		t.Fatalf("models in the cache: %v", models)
	}
	before, _ := os.Stat(models[0])
	if r := tokbench(t, "synth", "--preset", "tiny", "--type", "q4_0", "--cache"); r.code != 0 || !strings.Contains(r.stderr, "already") {
		t.Fatalf("second synth: exit %d, stderr %s", r.code, r.stderr)
	}
	if after, _ := os.Stat(models[0]); !after.ModTime().Equal(before.ModTime()) {
		t.Error("the cached model was written again")
	}
	if err := os.Truncate(models[0], 100); err != nil {
		t.Fatal(err)
	}
	if r := tokbench(t, "synth", "--preset", "tiny", "--type", "q4_0", "--cache"); r.code != 0 || !strings.Contains(r.stderr, "wrote") {
		t.Fatalf("a damaged cached model: exit %d, stderr %s", r.code, r.stderr)
	}
	if r := tokbench(t, "synth", "--preset", "tiny", "--n-layer", "3", "--cache"); r.code != 2 || !strings.Contains(r.stderr, "--out") {
		t.Fatalf("a changed shape without --out: exit %d, stderr %s", r.code, r.stderr)
	}
}

func TestQuantizeCommand(t *testing.T) {
	model := tinyModel(t)
	out := filepath.Join(t.TempDir(), "q.gguf")
	r := tokbench(t, "quantize", "-m", model, "--type", "q4_k_m", "--out", out, "-t", "2")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	si, _ := os.Stat(model)
	so, err := os.Stat(out)
	if err != nil || so.Size() >= si.Size()/2 {
		t.Fatalf("q4_k_m output %v (%v) not much smaller than f16 %d", so, err, si.Size())
	}
	r = tokbench(t, "info", "-m", out)
	if r.code != 0 || !strings.Contains(r.stdout, "q4_K") {
		t.Errorf("info on the quantized model: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// As report takes its file: info FILE.
	if r2 := tokbench(t, "info", out); r2.code != 0 || r2.stdout != r.stdout {
		t.Errorf("info FILE: %d %s", r2.code, r2.stderr)
	}
}

func TestDevicesJSON(t *testing.T) {
	r := tokbench(t, "devices", "-o", "json")
	var d struct {
		Devices []struct{ Type string }
		CPU     string `json:"cpu_features"`
		Host    struct{ Threads int }
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &d) != nil {
		t.Fatalf("exit %d, output %s", r.code, r.stdout)
	}
	if len(d.Devices) == 0 || d.Devices[0].Type != "cpu" || d.CPU == "" || d.Host.Threads < 1 {
		t.Errorf("devices %+v", d)
	}
}

func corrupt(t *testing.T, src string, mutate func([]byte) []byte) string {
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "bad.gguf")
	if err := os.WriteFile(p, mutate(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBadInput(t *testing.T) {
	model := tinyModel(t)
	notGGUF := corrupt(t, model, func([]byte) []byte { return []byte("#!/bin/sh\necho not a model\n") })
	truncated := corrupt(t, model, func(b []byte) []byte { return b[:len(b)*2/3] })
	// Overwrite the header's tensor count with a huge number.
	badCount := corrupt(t, model, func(b []byte) []byte {
		for i := 8; i < 16; i++ {
			b[i] = 0xff
		}
		return b
	})
	bigCtx := filepath.Join(workDir, "bigctx.gguf")
	if r := tokbench(t, "synth", "--n-vocab", "300", "--n-embd", "256", "--n-layer", "2", "--n-ff", "256", "--n-head", "4",
		"--n-ctx-train", "2000000", "--type", "q8_0", "--out", bigCtx); r.code != 0 {
		t.Fatalf("synth: %s", r.stderr)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing file", []string{"run", "-m", filepath.Join(workDir, "nope.gguf")}, 1, "does not exist"},
		{"not gguf", []string{"run", "-m", notGGUF}, 1, "not a GGUF file"},
		{"truncated", []string{"run", "-m", truncated}, 1, "truncated"},
		{"corrupt header", []string{"run", "-m", badCount}, 1, "corrupt"},
		{"no model", []string{"run"}, 2, "no model"},
		{"nothing to measure", []string{"run", "-m", model, "-p", "0", "-n", "0"}, 2, "nothing to measure"},
		{"negative tokens", []string{"run", "-m", model, "-n", "-5"}, 2, "--n-gen: -5 is out of range"},
		{"zero reps", []string{"run", "-m", model, "-r", "0"}, 2, "repetitions"},
		{"zero threads", []string{"run", "-m", model, "-t", "0"}, 2, "threads"},
		{"beyond trained ctx", []string{"run", "-m", model, "-p", "8192"}, 2, "trained for 4096"},
		{"beyond memory", []string{"run", "-m", bigCtx, "-d", "1000000", "--parallel", "64", "-ctk", "f32", "-ctv", "f32"}, 2, "memory is available"},
		{"bad kv type", []string{"run", "-m", model, "-ctk", "q9"}, 2, "KV cache type"},
		{"quant V without fa", []string{"run", "-m", model, "-ctv", "q8_0", "-fa", "off", "-p", "8", "-n", "2", "-r", "1"}, 2, "flash attention"},
		{"bad fa", []string{"run", "-m", model, "-fa", "maybe"}, 2, "flash attention"},
		{"bad format", []string{"run", "-m", model, "-o", "xml"}, 2, "output format"},
		{"bad sampling", []string{"run", "-m", model, "--sampling", "nucleus"}, 2, "--sampling"},
		{"unknown flag", []string{"run", "--bogus"}, 2, "bogus"},
		{"m and synth", []string{"run", "-m", model, "--synth", "tiny"}, 2, "not both"},
		{"unknown quant type", []string{"quantize", "-m", model, "--type", "q4_z", "--out", filepath.Join(workDir, "x.gguf")}, 2, "unknown quantization type"},
		{"quantize bad source", []string{"quantize", "-m", truncated, "--type", "q4_0", "--out", filepath.Join(workDir, "x.gguf")}, 1, "truncated"},
		{"unknown preset", []string{"synth", "--preset", "gpt-5", "--out", filepath.Join(workDir, "x.gguf")}, 2, "unknown preset"},
		{"bad shape", []string{"synth", "--n-embd", "100", "--n-head", "3", "--n-layer", "1", "--n-ff", "64", "--out", filepath.Join(workDir, "x.gguf")}, 2, "multiple"},
		{"synth no output", []string{"synth", "--preset", "tiny"}, 2, "--out"},
	}
	for _, c := range cases {
		r := tokbench(t, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d (want %d), stderr %q (want it to mention %q)", c.name, r.code, c.code, r.stderr, c.want)
		}
	}
}

func TestInterruptKeepsFinishedTests(t *testing.T) {
	model := tinyModel(t)
	// A short pp, then a tg long enough to be interrupted in.
	cmd := exec.Command(binPath, "run", "-m", model, "-p", "16", "-n", "2000", "-r", "20", "-o", "jsonl")
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	// pp runs first (llama-bench's order); interrupt once it is reported
	// done, in the middle of tg.
	stderr := startUntil(t, cmd, &errb, func(line string) bool { return strings.HasPrefix(line, "1/2 pp16:") })
	time.Sleep(200 * time.Millisecond)
	interrupt(t, cmd, stderr, &errb)
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d after SIGINT, want 130; stderr %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("stderr %q does not say it was interrupted", errb.String())
	}
	var rec map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &rec); err != nil || rec["n_prompt"] != 16.0 {
		t.Errorf("the finished pp test was not printed: %v %q", err, out.String())
	}
}

// startUntil starts cmd and copies its stderr into errb up to the first
// line until accepts, returning the rest of it; a command still running
// 10 minutes later is killed (never leave a benchmark behind a failed test).
func startUntil(t *testing.T, cmd *exec.Cmd, errb *bytes.Buffer, until func(line string) bool) io.Reader {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	guard := time.AfterFunc(10*time.Minute, func() { cmd.Process.Kill() })
	t.Cleanup(func() { guard.Stop() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		errb.WriteString(sc.Text() + "\n")
		if until(sc.Text()) {
			break
		}
	}
	return stderr
}

// interrupt sends cmd SIGINT, copies the rest of its stderr into errb
// and waits for it to end: one still running 60 s later fails the test.
func interrupt(t *testing.T, cmd *exec.Cmd, stderr io.Reader, errb *bytes.Buffer) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() {
		io.Copy(errb, stderr) // all of it before Wait, which closes the pipe
		done <- cmd.Wait()
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("tokbench did not stop within 60s of SIGINT")
	}
}

func TestTimeout(t *testing.T) {
	model := tinyModel(t)
	start := time.Now()
	r := tokbench(t, "run", "-m", model, "-p", "4000", "-n", "4000", "-r", "100", "--timeout", "1s")
	if r.code != 1 || !strings.Contains(r.stderr, "time limit") {
		t.Errorf("exit %d, stderr %q; want 1 and a time limit message", r.code, r.stderr)
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("a 1s timeout took %s", time.Since(start))
	}
}

func TestProbe(t *testing.T) {
	var bw, gemm []float64
	for i := 0; i < 2; i++ {
		r := tokbench(t, "probe", "--types", "f16", "-r", "3", "-o", "json")
		if r.code != 0 {
			t.Fatalf("probe: exit %d: %s", r.code, r.stderr)
		}
		var p struct {
			Class  string
			BWGBs  float64 `json:"bw_gbs"`
			ReadBW float64 `json:"read_bw_gbs"`
			MatMul map[string]struct {
				GEMM float64 `json:"gemm_gflops"`
				GEMV float64 `json:"gemv_gflops"`
			} `json:"matmul"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &p); err != nil || !strings.HasPrefix(p.Class, "cpu-") {
			t.Fatalf("probe output: %v %s", err, r.stdout)
		}
		if p.BWGBs <= 0 || p.ReadBW <= 0 || p.MatMul["f16"].GEMM <= 0 || p.MatMul["f16"].GEMV <= 0 {
			t.Fatalf("probe figures not positive: %+v", p)
		}
		bw, gemm = append(bw, p.BWGBs), append(gemm, p.MatMul["f16"].GEMM)
	}
	// How repeatable the figures are is the machine's business, measured
	// by make bench-probe; a second probe of the class overwrites the first.
	t.Logf("bandwidth %v GB/s, f16 GEMM %v GFLOP/s", bw, gemm)
	// The run that follows uses the probe: it has a ceiling and a verdict.
	model := tinyModel(t)
	r := tokbench(t, "run", "-m", model, "-p", "32", "-n", "8", "-r", "2", "-o", "json")
	var recs []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		a, _ := rec["roofline"].(map[string]any)
		if a == nil || a["ceiling_ts"].(float64) <= 0 || a["peak_source"] != "probe" || a["verdict"] == "" {
			t.Errorf("%v: roofline %v", rec["test"], rec["roofline"])
			continue
		}
		// With the probe's peaks, the step has all three levels.
		if d, _ := a["decomposition"].(map[string]any); d == nil || d["hardware_ms"].(float64) <= 0 || d["kernel_ms"].(float64) <= 0 {
			t.Errorf("%v: decomposition %v", rec["test"], a["decomposition"])
		}
	}
}

// doctor reads the machine and says what it found, changing nothing.
func TestDoctor(t *testing.T) {
	r := tokbench(t, "doctor", "-m", tinyModel(t), "-o", "json")
	var fs []struct{ Check, Level, Says string }
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &fs) != nil {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	checks := map[string]string{}
	for _, f := range fs {
		checks[f.Check] = f.Says
	}
	for _, c := range []string{"cpu governor", "load average", "swap", "memory", "busy processes", "gpus"} {
		if _, ok := checks[c]; !ok {
			t.Errorf("no %q check in %v", c, checks)
		}
	}
	if !strings.Contains(checks["memory"], "the model needs about") {
		t.Errorf("memory: %s", checks["memory"])
	}
	if r := tokbench(t, "doctor"); r.code != 0 || !strings.Contains(r.stdout, "tokbench changes none of this") {
		t.Errorf("table: exit %d %s", r.code, r.stdout)
	}
}

// A first run on hardware without a probe measures at once; a short one
// (shorter than the probe) leaves the probe to tokbench probe and says
// so, with --probe it probes after its tests (cached), so its roofline
// has ceilings; the next run does not probe again; --no-probe leaves the
// class unprobed and says "no ceiling".
func TestRunProbesOnce(t *testing.T) {
	model := tinyModel(t)
	run := func(cache string, args ...string) (string, []map[string]any) {
		r := tokbenchEnv(t, []string{"TOKBENCH_CACHE=" + cache}, append([]string{"run", "-m", model, "-p", "0", "-n", "8", "-r", "2", "-t", "1", "--no-kernels", "-o", "json"}, args...)...)
		var recs []map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &recs); r.code != 0 || err != nil || len(recs) != 1 {
			t.Fatalf("run: exit %d, %v: %s%s", r.code, err, r.stdout, r.stderr)
		}
		return r.stderr, recs
	}
	cache := t.TempDir()
	stderr, recs := run(cache)
	a, _ := recs[0]["roofline"].(map[string]any)
	probes, _ := filepath.Glob(filepath.Join(cache, "probe", "*"))
	if strings.Contains(stderr, "probing") || !strings.Contains(stderr, "tokbench probe -t 1 measures them once") || a == nil || a["verdict"] != "no ceiling" || len(probes) > 0 {
		t.Errorf("a first run shorter than the probe: roofline %v, probes %v\n%s", a, probes, stderr)
	}
	stderr, recs = run(cache, "--probe")
	a, _ = recs[0]["roofline"].(map[string]any)
	if !strings.Contains(stderr, "a quick probe, once") || a == nil || a["peak_source"] != "probe" || a["verdict"] == "no ceiling" {
		t.Errorf("run --probe: roofline %v\n%s", a, stderr)
	}
	if stderr, _ := run(cache); strings.Contains(stderr, "probing") {
		t.Errorf("the second run probed again:\n%s", stderr)
	}
	stderr, recs = run(t.TempDir(), "--no-probe")
	if a, _ := recs[0]["roofline"].(map[string]any); strings.Contains(stderr, "probing") || a == nil || a["verdict"] != "no ceiling" {
		t.Errorf("--no-probe: roofline %v\n%s", a, stderr)
	}
}
