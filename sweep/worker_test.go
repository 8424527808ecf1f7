package sweep

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tokbench/tokbench/record"
)

// A worker that writes a line past what the reader takes (64 MiB) and
// then blocks is ended with an error saying so, not waited on for ever.
func TestWorkerOverlongLine(t *testing.T) {
	wc := workerCmd{Exe: "sh", Args: []string{"-c", "head -c 70000000 /dev/zero | tr '\\0' a; sleep 60"}}
	start := time.Now()
	_, _, err := wc.run(context.Background(), WorkerRequest{}, nil, func(record.Record, record.Line) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "read worker") {
		t.Errorf("err %v", err)
	}
	if d := time.Since(start); d > 45*time.Second {
		t.Errorf("the worker was waited on for %s", d)
	}
}
