package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// Refused is an output tokbench will not write, or a folder another
// writer holds: the user's to change (a command exits 2 for it).
type Refused struct{ msg string }

func (e *Refused) Error() string { return e.msg }

func refused(format string, a ...any) error { return &Refused{fmt.Sprintf(format, a...)} }

// CheckOut says, before anything is measured or read, whether path may
// be an output: a new name or a regular file (replaced whole); with
// through, a character device (/dev/null, a terminal) or a pipe a program
// reads (/dev/stdout into a pipe, a FIFO with its reader), written
// through as it is, never renamed over or locked. Anything else (a block
// device, a folder, a socket, a FIFO no program reads: opening it would
// wait for one) is an error that says what it is (a Refused: the user's
// to change).
func CheckOut(path string, through bool) error {
	t, err := kindOf(path)
	switch {
	case err != nil:
		return err
	case t && !through:
		return refused("%s is %s: this output (results written as they come and read back, or a model) goes only to a regular file; give a file's path", path, kindName(path))
	case t:
		// A pipe is opened now and kept open until it is written: its
		// reader must not see an end before the output comes.
		f, err := openThrough(path)
		if err != nil {
			return err
		}
		held.Store(path, f)
	}
	return nil
}

// held are the pipes CheckOut opened, by path, for Create and Write.
var held sync.Map

// kindOf says whether path is written through (a character device or a
// pipe), replaced (false, nil: a regular file, a link, or nothing yet),
// or neither (an error).
func kindOf(path string) (through bool, err error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // a new file (or a dangling link, replaced)
	}
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	switch m := st.Mode(); {
	case m.IsRegular():
		return false, nil
	case m&fs.ModeCharDevice != 0, m&fs.ModeNamedPipe != 0:
		return true, nil
	default:
		return false, refused("%s is %s: tokbench writes an output to a regular file (or through to a character device or a pipe), "+
			"never over anything else; give a file's path", path, kindName(path))
	}
}

func kindName(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "unreadable"
	}
	switch m := st.Mode(); {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// openThrough opens a device or a pipe for writing, without waiting: a
// FIFO no program reads is an error, not a wait deaf to signals.
func openThrough(path string) (*os.File, error) {
	if f, ok := held.LoadAndDelete(path); ok {
		return f.(*os.File), nil
	}
	flags := os.O_WRONLY
	if st, err := os.Stat(path); err == nil && st.Mode()&fs.ModeNamedPipe != 0 {
		flags |= syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(path, flags, 0)
	if errors.Is(err, syscall.ENXIO) {
		return nil, refused("%s is a pipe that no program reads: start its reader first, or give a file's path", path)
	}
	return f, err
}

// LockDir takes dir's lock for one writer (made if absent): a second
// process writing the same folder (two baseline create into one --dir)
// is refused at once, not interleaved. The lock is the folder's own, an
// advisory lock on it (no file is made there), held until release or
// the process ends, however it ends. A folder made for it and left
// empty is removed on release.
func LockDir(dir string) (release func(), err error) {
	_, statErr := os.Stat(dir)
	made := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, refused("%s is being written by another tokbench (baseline create): wait for it to end, or give another folder", dir)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() {
		f.Close()
		if made {
			os.Remove(dir) // made for the lock, and left empty: not left behind
		}
	}, nil
}
