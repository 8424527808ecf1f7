package main

import (
	"context"
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

// An output that is not a regular file: a character device is written
// through (never renamed over) where the output may be one, refused where
// it is a results file or a model; a FIFO no program reads, a folder and a
// socket are refused at once, before anything is measured; a FIFO with
// its reader gets the output.
func TestOutputsNeverOverOthers(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	os.WriteFile(in, []byte(someResults(t)), 0o644)
	isChar := func(p string) bool { st, err := os.Stat(p); return err == nil && st.Mode()&fs.ModeCharDevice != 0 }

	// A null device of the test's own (a regression replaces it, not the
	// machine's /dev/null); where nodes cannot be made, /dev/full, which
	// a regression cannot replace without root either.
	dev := filepath.Join(dir, "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, int(1<<8|3)); err != nil {
		if os.Geteuid() == 0 {
			t.Fatal(err)
		}
		dev = "/dev/full"
	}
	if dev != "/dev/full" {
		for _, f := range []string{"table", "json", "jsonl", "csv", "sql", "html"} {
			if r := tokbench(t, "report", in, "-o", f, "--out", dev); r.code != 0 || !isChar(dev) {
				t.Errorf("report -o %s --out a device: exit %d, still a device %v: %s", f, r.code, isChar(dev), r.stderr)
			}
		}
	}
	for _, c := range [][]string{
		{"report", in, "-o", "md", "--out", dev},
		{"merge", in, "--out", dev},
		{"synth", "--preset", "tiny", "--type", "q8_0", "--out", dev},
		{"sweep", "--synth", "tiny", "-p", "8", "-n", "0", "-r", "1", "--out", dev},
		{"load", "-m", tinyModel(t), "--requests", "1", "--out", dev},
	} {
		if r := tokbench(t, c...); r.code != 2 || !strings.Contains(r.stderr, "character device") || !isChar(dev) {
			t.Errorf("%s --out a device: exit %d, still a device %v: %s", c[0], r.code, isChar(dev), r.stderr)
		}
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sub := filepath.Join(dir, "folder")
	os.Mkdir(sub, 0o755)
	for out, kind := range map[string]string{fifo: "no program reads", sock: "a socket", sub: "a directory"} {
		for _, c := range [][]string{
			{"report", in, "--out", out},
			{"report", in, "-o", "md", "--out", out},
			{"merge", in, "--out", out},
			{"profile", "--synth", "tiny", "-p", "8", "-n", "0", "--out", out},
			{"sweep", "--synth", "tiny", "-p", "8", "-n", "0", "-r", "1", "--out", out},
		} {
			start := time.Now()
			r := tokbench(t, c...)
			if r.code != 2 || !strings.Contains(r.stderr, kind) && !strings.Contains(r.stderr, "pipe") || time.Since(start) > time.Minute {
				t.Errorf("%s --out %s: exit %d after %v: %s", c[0], filepath.Base(out), r.code, time.Since(start), r.stderr)
			}
			if strings.Contains(r.stderr, "pp8:") {
				t.Errorf("%s --out %s measured before it refused: %s", c[0], filepath.Base(out), r.stderr)
			}
		}
	}

	// With its reader, the FIFO gets the CSV, and stays a FIFO.
	got := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		f, err := os.OpenFile(fifo, os.O_RDONLY, 0) // waits for the writer
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		go func() { <-ctx.Done(); f.Close() }()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	// The reader opens when it is scheduled: until then the writer
	// refuses the FIFO as one no program reads, and is run again.
	var r result
	for i := 0; i < 100; i++ {
		if r = tokbench(t, "report", in, "-o", "csv", "--out", fifo); r.code != 2 || !strings.Contains(r.stderr, "no program reads") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s := <-got; r.code != 0 || !strings.HasPrefix(s, "build_commit,") {
		t.Errorf("report --out a FIFO with its reader: exit %d, read %.80q: %s", r.code, s, r.stderr)
	}
	if st, _ := os.Stat(fifo); st.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v", st.Mode())
	}
}
