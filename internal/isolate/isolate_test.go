package isolate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// As a child, the test binary plays a check that ends the way
// TB_TEST_CHILD says: each way a real child of tokbench can end.
func TestMain(m *testing.M) {
	switch os.Getenv("TB_TEST_CHILD") {
	case "":
		os.Exit(m.Run())
	case "ok":
		os.Exit(0)
	case "refused":
		fmt.Fprintln(os.Stderr, "llama.cpp log noise")
		fmt.Fprintln(os.Stderr, "tokbench: load model m.gguf: llama.cpp: missing tensor 'blk.0.attn_q.weight'")
		os.Exit(1)
	case "abort":
		fmt.Fprintln(os.Stderr, "tokbench: llama.cpp aborted: llama-vocab.cpp:2089: GGML_ASSERT(x) failed")
		os.Exit(134)
	case "segv":
		syscall.Kill(os.Getpid(), syscall.SIGSEGV)
	case "kill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case "hang":
		time.Sleep(time.Minute)
	}
	time.Sleep(time.Minute)
}

func check(t *testing.T, child string, timeout time.Duration) error {
	t.Setenv("TB_TEST_CHILD", child)
	return Cmd{Exe: os.Args[0], Timeout: timeout}.CheckModel(context.Background(), "m.gguf")
}

func TestCheckModelOutcomes(t *testing.T) {
	if err := check(t, "ok", 0); err != nil {
		t.Errorf("ok: %v", err)
	}
	if err := check(t, "refused", 0); err == nil || err.Error() != "load model m.gguf: llama.cpp: missing tensor 'blk.0.attn_q.weight'" {
		t.Errorf("refused: %v", err)
	}
	var crash *CrashError
	err := check(t, "abort", 0)
	if !errors.As(err, &crash) || !crash.Aborted || crash.Reason != "llama-vocab.cpp:2089: GGML_ASSERT(x) failed" ||
		!strings.HasPrefix(err.Error(), "llama.cpp aborted while loading m.gguf: llama-vocab.cpp:2089") {
		t.Errorf("abort: %v", err)
	}
	for _, child := range []string{"segv", "kill"} {
		if err := check(t, child, 0); !errors.As(err, &crash) || crash.Aborted || !strings.Contains(err.Error(), "crashed while loading m.gguf") {
			t.Errorf("%s: %v", child, err)
		}
	}
	start := time.Now()
	if err := check(t, "hang", 500*time.Millisecond); !errors.As(err, &crash) || !strings.Contains(err.Error(), "no answer in 500ms") {
		t.Errorf("hang: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a hung child was killed after %s", d)
	}
}

func TestCheckModelCanceled(t *testing.T) {
	t.Setenv("TB_TEST_CHILD", "hang")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := (Cmd{Exe: os.Args[0]}).CheckModel(ctx, "m.gguf"); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}

// $TOKBENCH_CHILD_PREFIX is the command children start under (an emulator
// for another architecture's binary, numactl ...).
func TestChildPrefix(t *testing.T) {
	t.Setenv(childPrefixEnv, "env TB_PREFIXED=yes")
	out, err := Exec(context.Background(), "sh", "-c", "echo $TB_PREFIXED").Output()
	if err != nil || strings.TrimSpace(string(out)) != "yes" {
		t.Errorf("under the prefix: %q %v", out, err)
	}
	t.Setenv(childPrefixEnv, "")
	if out, _ := Exec(context.Background(), "sh", "-c", "echo ${TB_PREFIXED:-none}").Output(); strings.TrimSpace(string(out)) != "none" {
		t.Errorf("without: %q", out)
	}
}
