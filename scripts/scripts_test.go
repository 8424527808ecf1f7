// Package scripts holds the shell scripts of the build (GPU backends, the
// GPU smoke check, benchmarks); its test checks they parse.
package scripts

import (
	"os/exec"
	"path/filepath"
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
