package isolate

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
)

// Log keeps what explains a child's death from its stderr: the first
// lines that name an error (llama.cpp's GGML_ASSERT, Go's "SIGABRT:
// abort" before its register dump, ...), the abort line of tokbench's
// own handler, and the last bytes. It is an io.Writer for exec.Cmd.Stderr.
type Log struct {
	mu      sync.Mutex
	partial []byte
	notable []string
	aborted string
	crash   string
	tail    []byte
}

var notableLine = regexp.MustCompile(`(?i)(GGML_ASSERT|GGML_ABORT|error|abort|SIG[A-Z]+|fatal|panic|out of memory|killed|terminate)`)

// crashLine starts the Go runtime's report of a fault or a panic (with
// GOTRACEBACK=single, the lines before a stack dump).
var crashLine = regexp.MustCompile(`^(fatal error: |panic: |SIG[A-Z]+: |\[signal )`)

// abortPrefix starts the line engine's abort handler prints.
const abortPrefix = "tokbench: llama.cpp aborted: "

func (c *Log) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tail = append(c.tail, p...)
	if len(c.tail) > 1024 {
		c.tail = c.tail[len(c.tail)-1024:]
	}
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(c.partial[:i]))
		c.partial = c.partial[i+1:]
		if rest, ok := strings.CutPrefix(line, abortPrefix); ok && c.aborted == "" {
			c.aborted = rest
		}
		if crashLine.MatchString(line) && strings.Count(c.crash, " | ") < 2 {
			c.crash = strings.TrimPrefix(c.crash+" | "+line, " | ")
		}
		if len(c.notable) < 4 && notableLine.MatchString(line) {
			c.notable = append(c.notable, line)
		}
	}
	if len(c.partial) > 4096 {
		c.partial = c.partial[len(c.partial)-4096:]
	}
	return len(p), nil
}

// String is the notable lines, else the last three lines.
func (c *Log) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.notable) > 0 {
		return strings.Join(c.notable, " | ")
	}
	return c.last(3)
}

// Aborted is the message of a llama.cpp assertion the child died of, or "".
func (c *Log) Aborted() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.aborted
}

// Crash is the Go runtime's report of the fault or panic the child died
// of (at most three lines), or "".
func (c *Log) Crash() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crash
}

// Last is the last line written.
func (c *Log) Last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last(1)
}

func (c *Log) last(n int) string {
	lines := strings.Split(strings.TrimSpace(string(c.tail)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
