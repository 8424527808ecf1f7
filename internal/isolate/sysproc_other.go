//go:build !linux

package isolate

import "syscall"

// SysProcAttr puts a child in its own process group, so that a terminal's
// Ctrl-C reaches only the parent, which stops it gracefully.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
