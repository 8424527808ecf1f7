package infile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A regular file reads; a named pipe with no writer, a directory and a
// missing file are refused at once, never blocking.
func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	os.WriteFile(file, []byte("hello"), 0o644)
	if b, err := ReadFile(file); err != nil || string(b) != "hello" {
		t.Fatalf("regular file: %q %v", b, err)
	}
	fifo := filepath.Join(dir, "f.gguf")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no mkfifo:", err)
	}
	for path, want := range map[string]string{fifo: "a named pipe", dir: "a directory", filepath.Join(dir, "none"): "no such file"} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the read blocked", path)
		}
	}
}
