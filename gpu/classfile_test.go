//go:build linux

package gpu

import (
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A class file that cannot be written whole (a file-size limit stands in
// for a full disk) is an error that says what to do, and leaves neither a
// half-written temporary file nor a changed old file behind.
func TestSaveClassOnAFullDisk(t *testing.T) {
	dir := t.TempDir()
	if _, err := SaveClass(dir, "c", map[string]int{"old": 1}); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(ClassFile(dir, "c"))
	signal.Ignore(syscall.SIGXFSZ)
	defer signal.Reset(syscall.SIGXFSZ)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skip(err)
	}
	small := lim
	small.Cur = 16
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &small); err != nil {
		t.Skip(err)
	}
	_, err := SaveClass(dir, "c", map[string]string{"new": strings.Repeat("x", 4096)})
	syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim)
	if err == nil || !strings.Contains(err.Error(), "free space there") {
		t.Errorf("error %v", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "c.json.tmp")); serr == nil {
		t.Error("the temporary file was left behind")
	}
	if now, _ := os.ReadFile(ClassFile(dir, "c")); string(now) != string(old) {
		t.Errorf("the old file changed: %s", now)
	}
}
