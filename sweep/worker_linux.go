package sweep

import "syscall"

// workerSysProcAttr puts the worker in its own process group (a terminal's
// Ctrl-C reaches only the parent, which stops the worker gracefully) and
// kills it if the parent dies.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
