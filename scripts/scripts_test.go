// Package scripts holds the shell scripts of the build (GPU backends, the
// GPU run and its bundle, benchmarks); its tests check they parse, and
// rehearse the GPU run from its bundle.
package scripts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestScriptsParse(t *testing.T) {
	files, _ := filepath.Glob("*.sh")
	if len(files) < 4 {
		t.Fatalf("found %d scripts", len(files))
	}
	shellcheck, _ := exec.LookPath("shellcheck")
	for _, f := range files {
		if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", f, err, out)
		}
		if shellcheck != "" {
			if out, err := exec.Command(shellcheck, "-x", "-S", "warning", f).CombinedOutput(); err != nil {
				t.Errorf("shellcheck %s: %v\n%s", f, err, out)
			}
		}
	}
	if shellcheck == "" {
		t.Log("shellcheck not installed: only bash -n ran")
	}
}

// check-symbols.sh fails, and removes the binary, when a llama.cpp/ggml
// symbol is left undefined the way go-nvml's linker flag lets it (the AMX
// case names AMX=1); a binary with only other undefined symbols passes.
func TestCheckSymbols(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	build := func(name, src string) string {
		c := filepath.Join(dir, name+".c")
		os.WriteFile(c, []byte(src), 0o644)
		bin := filepath.Join(dir, name)
		if out, err := exec.Command(cc, "-rdynamic", "-o", bin, c, "-Wl,--unresolved-symbols=ignore-in-object-files").CombinedOutput(); err != nil {
			t.Skipf("cc cannot link with unresolved symbols here: %v\n%s", err, out)
		}
		return bin
	}
	bad := build("amx", "void *_Z28ggml_backend_amx_buffer_typev(void);\nint main(int c, char **v) { if (c > 5) return !_Z28ggml_backend_amx_buffer_typev(); return 0; }\n")
	out, err := exec.Command("bash", "check-symbols.sh", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "_Z28ggml_backend_amx_buffer_typev") || !strings.Contains(string(out), "AMX=1") {
		t.Errorf("undefined AMX symbol: %v\n%s", err, out)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("the broken binary was left in place")
	}
	good := build("nvml", "int nvmlInit_v2(void);\nint main(int c, char **v) { if (c > 5) return nvmlInit_v2(); return 0; }\n")
	if out, err := exec.Command("bash", "check-symbols.sh", good).CombinedOutput(); err != nil {
		t.Errorf("NVML's symbols only: %v\n%s", err, out)
	}
}

// bundle is the folder make gpu-bundle made (TOKBENCH_TEST_BUNDLE) and the
// Vulkan backend its rehearsal takes (TOKBENCH_TEST_VULKAN); .ci/run sets
// both, and there a missing one fails the test.
func bundle(t *testing.T) (dir, vulkan string) {
	t.Helper()
	dir, vulkan = os.Getenv("TOKBENCH_TEST_BUNDLE"), os.Getenv("TOKBENCH_TEST_VULKAN")
	if dir == "" || vulkan == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("TOKBENCH_TEST_BUNDLE and TOKBENCH_TEST_VULKAN must be set in CI (.ci/run sets them)")
		}
		t.Skip("TOKBENCH_TEST_BUNDLE (make gpu-bundle) and TOKBENCH_TEST_VULKAN (a Vulkan backend) are not set")
	}
	return dir, vulkan
}

// rehearsal is one rehearsal of the GPU run: the bundle's gpu-run.sh (or
// script, a changed copy of it, run from a copy of the bundle), with env
// added to REHEARSE=1's.
type rehearsal struct {
	script   string
	budget   int
	out      string // OUT (default: a new temporary folder)
	work     string // WORK (default: a new temporary folder)
	cwd      string
	cuda     bool // the CUDA branch, against the stand-ins, not the ready-made backend
	buildSec float64
}

// rehearse runs r as CI's rehearsal does and returns the summary and the
// exit status.
func rehearse(t *testing.T, dir, vulkan string, r rehearsal) (string, int) {
	t.Helper()
	run := filepath.Join(dir, "scripts", "gpu-run.sh")
	if r.script != "" {
		// A copy of the bundle whose binary and sources are the bundle's.
		copyDir := t.TempDir()
		for _, d := range []string{"bin", "ggml"} {
			if err := os.Symlink(filepath.Join(dir, d), filepath.Join(copyDir, d)); err != nil {
				t.Fatal(err)
			}
		}
		os.MkdirAll(filepath.Join(copyDir, "scripts"), 0o755)
		for _, f := range []string{"gpu-copy.py", "gpu-figures.py", "build-backend.sh"} {
			if err := os.Symlink(filepath.Join(dir, "scripts", f), filepath.Join(copyDir, "scripts", f)); err != nil {
				t.Fatal(err)
			}
		}
		run = filepath.Join(copyDir, "scripts", "gpu-run.sh")
		if err := os.WriteFile(run, []byte(r.script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if r.out == "" {
		r.out = t.TempDir()
	}
	if r.work == "" {
		r.work = t.TempDir()
	}
	cmd := exec.Command(run)
	cmd.Dir = r.cwd
	cmd.Env = append(os.Environ(), "REHEARSE=1", "OUT="+r.out, "WORK="+r.work, "BUDGET_S="+strconv.Itoa(r.budget))
	if r.cuda {
		standin, _ := filepath.Abs(filepath.Join("testdata", "standin"))
		cmd.Env = append(cmd.Env, "PATH="+filepath.Join(standin, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
			"PYTHONPATH="+filepath.Join(standin, "python"), "STANDIN_BACKEND="+vulkan,
			"STANDIN_BUILD_S="+strconv.FormatFloat(r.buildSec, 'f', 1, 64))
	} else {
		cmd.Env = append(cmd.Env, "REHEARSE_BACKEND="+vulkan)
	}
	b, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%s: %v", run, err)
		}
		code = ee.ExitCode()
	}
	out := r.out
	if !filepath.IsAbs(out) {
		out = filepath.Join(r.cwd, out)
	}
	// The run names its folder in its last line (a new one inside a
	// folder that held files).
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if last := lines[len(lines)-1]; strings.HasPrefix(last, "files in ") {
		out = strings.TrimSpace(strings.SplitN(strings.TrimPrefix(last, "files in "), ":", 2)[0])
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatalf("no summary (exit %d): %v\n%s", code, err, b)
	}
	return string(summary), code
}

// stepTimes finds a step's line in a summary: its status and the seconds
// it started and ended at (-1 when the line has no end).
func stepTimes(summary, name string) (status string, start, end int) {
	re := regexp.MustCompile(`(?m)^  (\S+)\s+` + regexp.QuoteMeta(name) + `.*?\s(\d+)s-\s*(\d+)?s?`)
	m := re.FindStringSubmatch(summary)
	if m == nil {
		return "", -1, -1
	}
	start, _ = strconv.Atoi(m[2])
	end = -1
	if m[3] != "" {
		end, _ = strconv.Atoi(m[3])
	}
	return m[1], start, end
}

// A budget too short for the run ends early, exit 0, with a summary that
// names what it skipped and why.
func TestGPURunBudget(t *testing.T) {
	dir, vulkan := bundle(t)
	start := time.Now()
	summary, code := rehearse(t, dir, vulkan, rehearsal{budget: 5})
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, summary)
	}
	if d := time.Since(start); d > 40*time.Second {
		t.Errorf("a 5 s budget took %s", d)
	}
	for _, want := range []string{"skipped", "s left", "budget 5s"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

// A path broken in the script (the ready-made backend's, as a typo would)
// fails the rehearsal, and the summary says which step.
func TestGPURunBrokenPathFails(t *testing.T) {
	dir, vulkan := bundle(t)
	b, err := os.ReadFile(filepath.Join(dir, "scripts", "gpu-run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), `"$1"/libggml-vulkan.so*`, `"$1"/libggml-vulkn.so*`, 1)
	if broken == string(b) {
		t.Fatal("the backend's path is not in the script: update this test")
	}
	summary, code := rehearse(t, dir, vulkan, rehearsal{script: broken, budget: 60})
	if code == 0 || !strings.Contains(summary, "failed   backend") {
		t.Fatalf("exit %d:\n%s", code, summary)
	}
}

// The CUDA branch, rehearsed against the stand-ins (testdata/standin): a
// stand-in build that takes most of the budget. The copy comes before the
// build starts; with the gap a probe and the main run need after it, the
// main run with its split is measured; with a gap for a probe alone, the
// copy, the probe and the summary still come. The real run's 400 s and
// 520 s of 540 have the same shape: what is compressed here is the build,
// not what the rehearsal's steps take on llvmpipe. A second call on the
// same WORK reuses the build and the models and reports only its own
// results.
func TestGPURunCUDABranch(t *testing.T) {
	dir, vulkan := bundle(t)
	work := t.TempDir()

	// A build that leaves only a probe's time.
	summary, code := rehearse(t, dir, vulkan, rehearsal{budget: 50, buildSec: 24, work: work, cuda: true})
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, summary)
	}
	status, _, copyEnd := stepTimes(summary, "PyTorch device copy")
	bstatus, buildStart, buildEnd := stepTimes(summary, "build CUDA backend")
	if status != "ok" || bstatus != "ok" || copyEnd < 0 || buildStart > 3 || copyEnd > buildEnd {
		t.Fatalf("the build (%s) should start at once (%ds) and the copy (%s, ended %ds) beside it, before the build ends (%ds):\n%s",
			bstatus, buildStart, status, copyEnd, buildEnd, summary)
	}
	if st, start, _ := stepTimes(summary, "probe"); st != "ok" || start < buildEnd {
		t.Fatalf("the probe after the late build: %s at %ds:\n%s", st, start, summary)
	}
	for _, want := range []string{"PyTorch device copy  | ", "HBM bandwidth, probe | copy", "datasheet: 4800 (H200", "nvcc 13.0, cmake 3.31.6"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}

	// The build again (its mark removed), leaving the gap the probe and
	// the main run need: both measured, the run with its split.
	if err := os.Remove(filepath.Join(work, "tokbench-gpu", "lib", "built")); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	summary, code = rehearse(t, dir, vulkan, rehearsal{budget: 140, buildSec: 50, work: work, out: out, cuda: true})
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, summary)
	}
	if st, start, _ := stepTimes(summary, "run tiny q4_0 pp16 tg8"); st != "ok" || start < 50 {
		t.Fatalf("the main run after the build: %s at %ds:\n%s", st, start, summary)
	}
	first := records(t, filepath.Join(out, "results.jsonl"))
	split := 0
	for _, r := range first {
		if r["kernels"] != nil {
			split++
		}
	}
	if len(first) < 4 || split < 4 {
		t.Fatalf("%d records, %d with the split:\n%s", len(first), split, summary)
	}

	// A second call on the same WORK: nothing made again, results its own.
	out = t.TempDir()
	begun := time.Now().UTC()
	summary, code = rehearse(t, dir, vulkan, rehearsal{budget: 40, work: work, out: out, cuda: true})
	if code != 0 {
		t.Fatalf("second call: exit %d:\n%s", code, summary)
	}
	for _, want := range []string{"CUDA backend (reused)", "in the cache already"} {
		if !strings.Contains(summary, want) {
			t.Errorf("second call's summary lacks %q:\n%s", want, summary)
		}
	}
	for _, r := range records(t, filepath.Join(out, "results.jsonl")) {
		when, err := time.Parse(time.RFC3339, fmt.Sprint(r["test_time"]))
		if err != nil || when.Before(begun.Truncate(time.Second)) {
			t.Errorf("a record of another run (%v, %v) in the second call's results", r["test_time"], err)
		}
	}
}

// records reads a JSONL file's records.
func records(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// OUT is never a place of loss: a folder of the user's files gets a new
// folder inside it and every file stays byte for byte (one over 16 MiB,
// and ones named as the run's own, included); a relative OUT is the
// caller's; a file as OUT is refused.
func TestGPURunKeepsOut(t *testing.T) {
	dir, vulkan := bundle(t)
	out := t.TempDir()
	files := map[string][]byte{
		"results.jsonl": []byte(`{"mine": true}` + "\n"),
		"log.txt":       []byte("my log\n"),
		"summary.txt":   []byte("my summary\n"),
		"big.bin":       bytes.Repeat([]byte("x"), 17<<20),
		"sub/notes.md":  []byte("# notes\n"),
	}
	for name, b := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(out, name)), 0o755)
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	summary, code := rehearse(t, dir, vulkan, rehearsal{budget: 5, out: out})
	if code != 0 || !strings.Contains(summary, "budget 5s") {
		t.Fatalf("exit %d:\n%s", code, summary)
	}
	for name, want := range files {
		if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s changed (%v)", name, err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(out, "tokbench-gpu-*", "summary.txt")); len(m) != 1 {
		t.Errorf("no new folder inside OUT: %v", m)
	}

	cwd := t.TempDir()
	if _, code := rehearse(t, dir, vulkan, rehearsal{budget: 5, out: "rel/out", cwd: cwd}); code != 0 {
		t.Fatalf("relative OUT: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(cwd, "rel", "out", "summary.txt")); err != nil {
		t.Errorf("a relative OUT is not the caller's: %v", err)
	}

	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, []byte("mine"), 0o644)
	cmd := exec.Command(filepath.Join(dir, "scripts", "gpu-run.sh"))
	cmd.Env = append(os.Environ(), "REHEARSE=1", "OUT="+file, "WORK="+t.TempDir())
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "is a file") {
		t.Errorf("OUT a file: %v\n%s", err, b)
	}
	if b, _ := os.ReadFile(file); string(b) != "mine" {
		t.Error("the file given as OUT changed")
	}
}

// No executable is committed: what travels with a device call is source
// (and small test data).
func TestNoBinaryTracked(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z", "..").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if len(b) > 8000 {
			b = b[:8000]
		}
		for _, magic := range []string{"\x7fELF", "\xcf\xfa\xed\xfe", "\xca\xfe\xba\xbe", "MZ"} {
			if bytes.HasPrefix(b, []byte(magic)) {
				t.Errorf("%s is an executable: remove it from git (and ignore it)", f)
			}
		}
	}
}
