// Package infile opens the files tokbench reads (models, specs, workloads,
// traces, texts), refusing what is not a regular file: a named pipe would
// block the read until a writer came, deaf to Ctrl-C and SIGTERM, and a
// directory or a device is a mistake best said at once.
package infile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Open opens a regular file for reading. It opens without blocking (a
// named pipe with no writer would block the open itself), then checks what
// it opened, so that a file swapped for a pipe in between is caught too.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = notRegular(path, st.Mode())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads a regular file whole.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func notRegular(path string, m fs.FileMode) error {
	kind := "not a regular file"
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	}
	return fmt.Errorf("%s is %s: give a regular file (tokbench reads it whole, some of it more than once)", path, kind)
}
