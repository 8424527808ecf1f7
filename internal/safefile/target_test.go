package safefile

import (
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A character device is written through, never renamed over: a null
// device and a zero device (nodes of the test's own, so that a regression
// replaces them, not the machine's) stay devices.
func TestDeviceWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	for name, minor := range map[string]int{"null": 3, "zero": 5} {
		dev := filepath.Join(dir, name)
		if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|minor); err != nil {
			t.Skipf("no device nodes here (%v)", err)
		}
		if err := CheckOut(dev, true); err != nil {
			t.Fatalf("%s: %v", dev, err)
		}
		f, err := Create(dev)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("report\n")
		if err := f.Commit(0o644); err != nil {
			t.Fatal(err)
		}
		if err := Write(dev, []byte("svg"), 0o644); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(dev); err != nil || st.Mode()&fs.ModeCharDevice == 0 {
			t.Fatalf("%s is no longer a device: %v %v", dev, st.Mode(), err)
		}
		// A results file or a model is never a device.
		if err := CheckOut(dev, false); err == nil || !strings.Contains(err.Error(), "character device") {
			t.Errorf("%s as a results file: %v", dev, err)
		}
	}
}

// A FIFO with a reader gets the output; one without is refused at once,
// not waited on.
func TestPipe(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() {
		if err := CheckOut(fifo, true); err != nil {
			done <- err
			return
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no program reads") {
			t.Errorf("a FIFO without a reader: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a FIFO without a reader blocked")
	}
	got := make(chan string, 1)
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		syscall.SetNonblock(int(r.Fd()), false)
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	if err := CheckOut(fifo, true); err != nil {
		t.Fatal(err)
	}
	f, err := Create(fifo)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("table\n")
	if err := f.Commit(0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "table\n" {
			t.Errorf("the reader got %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reader saw no end")
	}
	if st, _ := os.Stat(fifo); st.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v", st.Mode())
	}
}

// A folder, a socket and a block device are refused, and none is
// replaced (Create and Write check as CheckOut does).
func TestNeverOverOthers(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	paths := map[string]string{dir: "a directory", sock: "a socket"}
	for _, b := range []string{"/dev/loop0", "/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/ram0"} {
		if st, err := os.Stat(b); err == nil && st.Mode()&fs.ModeDevice != 0 && st.Mode()&fs.ModeCharDevice == 0 {
			paths[b] = "a block device"
			break
		}
	}
	for p, kind := range paths {
		for _, through := range []bool{true, false} {
			if err := CheckOut(p, through); err == nil || !strings.Contains(err.Error(), kind) {
				t.Errorf("%s (through %v): %v", p, through, err)
			}
		}
		if kind == "a block device" {
			continue // never written, even to test: a regression would write the disk
		}
		if _, err := Create(p); err == nil {
			t.Errorf("%s created over", p)
		}
		if err := Write(p, []byte("x"), 0o644); err == nil {
			t.Errorf("%s written over", p)
		}
		if st, _ := os.Stat(p); st.Mode().IsRegular() {
			t.Errorf("%s replaced by a file", p)
		}
	}
}

// One writer a folder: a second lock is refused at once, the first's
// release lets the next in, and a folder made for the lock and left empty
// is removed.
func TestLockDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "baselines")
	release, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockDir(dir); err == nil || !strings.Contains(err.Error(), "another tokbench") {
		t.Errorf("a second writer: %v", err)
	}
	release()
	if _, err := os.Stat(dir); err == nil {
		t.Error("the folder made for the lock was left behind")
	}
	os.Mkdir(dir, 0o755)
	again, err := LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	again()
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("a folder the user had was removed: %v", err)
	}
}
