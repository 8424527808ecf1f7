// Package scripts holds the shell scripts of the build (GPU backends, the
// GPU smoke check, benchmarks); its test checks they parse.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
