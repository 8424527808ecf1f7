package isolate

import "syscall"

// SysProcAttr puts a child in its own process group (a terminal's Ctrl-C
// reaches only the parent, which stops the child gracefully) and kills it
// if the parent dies.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
