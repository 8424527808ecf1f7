// Package safefile writes files so that a reader sees the old content or
// the new, never a part: the data goes to a temporary file beside the
// target, is synced and renamed over it. Only a regular file (or a link
// planted in its place) is ever renamed over: a character device or a
// pipe named as an output (/dev/null, /dev/stdout) is written through,
// and anything else is refused.
package safefile

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tokbench/tokbench/internal/halt"
)

// Write replaces path with data (perm for a new file) atomically; a
// device or a pipe at path is written through (Create, then Commit).
func Write(path string, data []byte, perm os.FileMode) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit(perm)
}

// file is an output being written under a temporary name beside its
// path: Commit puts it in place whole; Close without Commit removes it,
// leaving whatever was at path as it was.
type file struct {
	*os.File
	path    string
	done    bool
	through bool   // a device or a pipe, written as it is: Commit closes it
	unmark  func() // the temporary file, removed if a signal ends the process
}

// Create starts writing path. The temporary file is created exclusively
// (a planted file or link is never written through) with a name of this
// process's own. A character device or a pipe a program reads is written
// through instead (CheckOut).
func Create(path string) (*file, error) {
	through, err := kindOf(path)
	if err != nil {
		return nil, err
	}
	if through {
		f, err := openThrough(path)
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
		return &file{File: f, path: path, through: true, unmark: func() {}}, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &file{File: tmp, path: path, unmark: halt.Temp(tmp.Name())}, nil
}

// Commit syncs the file and renames it onto its path (closes it, for a
// device or a pipe).
func (f *file) Commit(perm os.FileMode) error {
	if f.through {
		f.done = true
		if err := f.File.Close(); err != nil {
			return fmt.Errorf("write %s: %w", f.path, err)
		}
		return nil
	}
	err := f.Chmod(perm)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), f.path)
	}
	f.done = true
	f.unmark()
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	return nil
}

// Close removes the file unless it was committed.
func (f *file) Close() error {
	if f.done {
		return nil
	}
	f.done = true
	f.File.Close()
	if f.through {
		return nil // what went out is gone; nothing is left behind
	}
	defer f.unmark()
	return os.Remove(f.Name())
}

// NotAnInput says, as an error, that out is one of inputs (the same file,
// through any link or name): writing it would replace what is being read.
func NotAnInput(out string, inputs ...string) error {
	so, err := os.Stat(out)
	if err != nil {
		return nil
	}
	for _, in := range inputs {
		if si, err := os.Stat(in); err == nil && os.SameFile(so, si) {
			return fmt.Errorf("the output %s is the input %s: give another --out", out, in)
		}
	}
	return nil
}
