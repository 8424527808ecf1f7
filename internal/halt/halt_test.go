package halt

import (
	"os"
	"path/filepath"
	"testing"
)

// Outside an AtOnce phase a signal is only noted; inside one it removes
// the registered files and ends the process; a phase begun after a
// signal ends it at once.
func TestPhases(t *testing.T) {
	t.Cleanup(func() { asked, atOnce, exit = false, 0, os.Exit })
	var code int
	exit = func(c int) { code = c }
	dir := t.TempDir()
	kept, made := filepath.Join(dir, "kept"), filepath.Join(dir, "part")
	for _, p := range []string{kept, made} {
		os.WriteFile(p, []byte("x"), 0o644)
	}
	Temp(kept)()
	Temp(made)
	end := AtOnce()
	end()
	if Signal() {
		t.Fatal("a signal outside the phase ends the process")
	}
	if _, err := os.Stat(made); err != nil {
		t.Fatal("removed outside the phase")
	}
	AtOnce()
	if code != ExitCode {
		t.Fatalf("a phase begun after the signal: exit %d", code)
	}
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Error("the temporary file is still there")
	}
	if _, err := os.Stat(kept); err != nil {
		t.Error("a file done with was removed")
	}
	asked, atOnce = false, 0
	AtOnce()
	if !Signal() {
		t.Error("a signal inside the phase does not end the process")
	}
}
