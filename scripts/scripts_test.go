// Package scripts holds the shell scripts of the build (GPU backends, the
// GPU run and its bundle, benchmarks); its tests check they parse, and
// rehearse the GPU run from its bundle.
package scripts

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

// rehearse runs the bundle's gpu-run.sh (or script, a changed copy of it,
// from a copy of the bundle) as CI's rehearsal does, with budget seconds.
func rehearse(t *testing.T, dir, vulkan, script string, budget int) (string, int) {
	t.Helper()
	run := filepath.Join(dir, "scripts", "gpu-run.sh")
	if script != "" {
		// A copy of the bundle whose binary and sources are the bundle's.
		copyDir := t.TempDir()
		for _, d := range []string{"bin", "ggml"} {
			if err := os.Symlink(filepath.Join(dir, d), filepath.Join(copyDir, d)); err != nil {
				t.Fatal(err)
			}
		}
		os.MkdirAll(filepath.Join(copyDir, "scripts"), 0o755)
		run = filepath.Join(copyDir, "scripts", "gpu-run.sh")
		if err := os.WriteFile(run, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	cmd := exec.Command(run)
	cmd.Env = append(os.Environ(), "REHEARSE=1", "REHEARSE_BACKEND="+vulkan, "OUT="+out, "WORK="+t.TempDir(), "BUDGET_S="+strconv.Itoa(budget))
	b, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%s: %v", run, err)
		}
		code = ee.ExitCode()
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatalf("no summary (exit %d): %v\n%s", code, err, b)
	}
	return string(summary), code
}

// A budget too short for the run ends early, exit 0, with a summary that
// names what it skipped and why.
func TestGPURunBudget(t *testing.T) {
	dir, vulkan := bundle(t)
	start := time.Now()
	summary, code := rehearse(t, dir, vulkan, "", 5)
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
	summary, code := rehearse(t, dir, vulkan, broken, 60)
	if code == 0 || !strings.Contains(summary, "failed   backend") {
		t.Fatalf("exit %d:\n%s", code, summary)
	}
}
