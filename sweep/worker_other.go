//go:build !linux

package sweep

import "syscall"

// workerSysProcAttr puts the worker in its own process group, so that a
// terminal's Ctrl-C reaches only the parent, which stops it gracefully.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
