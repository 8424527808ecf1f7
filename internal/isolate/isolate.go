// Package isolate runs the steps that hand a file to llama.cpp in a child
// process of tokbench. llama.cpp ends the process on many inconsistencies
// its parser lets through (GGML_ASSERT); in a child, such an end is one
// clear error, and nothing the parent has measured is lost.
package isolate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// CheckCommand is the hidden command a child runs to load a model.
const CheckCommand = "check-model"

// checkTimeout bounds a check: a mapped load and a small context take
// seconds even for the largest models.
const checkTimeout = 5 * time.Minute

// Cmd starts tokbench again: Exe with the global flags Args (backend
// folders, ...) before the command. Timeout bounds a check (0:
// checkTimeout).
type Cmd struct {
	Exe     string
	Args    []string
	Timeout time.Duration
}

// Self is this executable with the global flags args.
func Self(args ...string) (Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return Cmd{}, fmt.Errorf("find tokbench's own executable to start a child: %w", err)
	}
	return Cmd{Exe: exe, Args: args}, nil
}

// Command is the child "tokbench ARGS... name cmdArgs...": in its own
// process group, killed with its parent, and told to print a llama.cpp
// abort as one line rather than a debugger's backtrace.
func (c Cmd) Command(ctx context.Context, name string, cmdArgs ...string) *exec.Cmd {
	args := append(append(append([]string{}, c.Args...), name), cmdArgs...)
	cmd := Exec(ctx, c.Exe, args...)
	cmd.SysProcAttr = SysProcAttr()
	cmd.Env = append(os.Environ(), "GGML_NO_BACKTRACE=1", "GOTRACEBACK=single")
	return cmd
}

// childPrefixEnv names a command that tokbench's children (model checks,
// sweep workers) are started under, split on spaces: an emulator for a
// binary of another architecture ("qemu-aarch64 -L /usr/aarch64-linux-gnu",
// how CI runs the arm64 build), or numactl/taskset to place them.
const childPrefixEnv = "TOKBENCH_CHILD_PREFIX"

// Exec is the command exe args, under $TOKBENCH_CHILD_PREFIX if set,
// killed when ctx ends.
func Exec(ctx context.Context, exe string, args ...string) *exec.Cmd {
	if prefix := strings.Fields(os.Getenv(childPrefixEnv)); len(prefix) > 0 {
		exe, args = prefix[0], append(append(prefix[1:], exe), args...)
	}
	return exec.CommandContext(ctx, exe, args...)
}

// CrashError is a child that died loading a model: a llama.cpp assertion
// (Aborted), a signal, a time limit.
type CrashError struct {
	Path    string
	Aborted bool
	Reason  string
}

func (e *CrashError) Error() string {
	how := "crashed"
	if e.Aborted {
		how = "aborted"
	}
	return fmt.Sprintf("llama.cpp %s while loading %s: %s (the file is corrupt or of a kind this llama.cpp cannot load)", how, e.Path, e.Reason)
}

// CheckModel loads a model file in a child process (CheckCommand, which
// validates it in Go, then loads it with llama.cpp). A file either
// refuses gives its error; one llama.cpp aborts or crashes on gives a
// *CrashError.
func (c Cmd) CheckModel(ctx context.Context, path string) error {
	limit := cmp.Or(c.Timeout, checkTimeout)
	child, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := c.Command(child, CheckCommand, path)
	// A check holds nothing worth stopping gracefully: on Ctrl-C or its
	// time limit the child is killed with its process group.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var log Log
	cmd.Stderr = &log
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil { // interrupted
		return ctx.Err()
	}
	if child.Err() != nil {
		return &CrashError{Path: path, Reason: fmt.Sprintf("no answer in %s", limit)}
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return fmt.Errorf("check %s in a child process: %w", path, err)
	}
	if msg := log.Aborted(); msg != "" {
		return &CrashError{Path: path, Aborted: true, Reason: msg}
	}
	if ws, _ := ee.Sys().(syscall.WaitStatus); log.Crash() != "" || ws.Signaled() {
		return &CrashError{Path: path, Reason: cmp.Or(log.Crash(), ee.String())}
	}
	// A clean error of the child's (llama.cpp refused the file): its
	// last line says why.
	return errors.New(strings.TrimPrefix(log.Last(), "tokbench: "))
}
