package main

import "syscall"

// stdoutClosed says whether standard output was closed when tokbench
// started (`>&-`). Go's runtime then opens /dev/null read-write in its
// place, so the output would vanish with no error; a shell's `> /dev/null`
// opens it write-only, which is a choice and is left alone.
func stdoutClosed() bool {
	var st, null syscall.Stat_t
	if syscall.Fstat(1, &st) != nil {
		return true
	}
	if syscall.Stat("/dev/null", &null) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFCHR || st.Rdev != null.Rdev {
		return false
	}
	fl, _, errno := syscall.Syscall(syscall.SYS_FCNTL, 1, syscall.F_GETFL, 0)
	return errno == 0 && fl&syscall.O_ACCMODE == syscall.O_RDWR
}
