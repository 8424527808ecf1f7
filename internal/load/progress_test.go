package load

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	f := newFake(t)
	var b strings.Builder
	s := &Session{Workload: small(), Server: func(int) (Engine, func(), error) { return f, func() {}, nil },
		Progress: &Progress{W: &b, Every: 20 * time.Millisecond, Clock: f.clock}}
	sc := scenarios(small(), 40, 1, Options{Slots: 2, Concurrency: 2, Clock: f.clock}, arrival{}, Abuse{}, Guards{})
	if _, err := s.Run(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) < 3 || !strings.Contains(lines[0], "of 40 requests done") || !strings.Contains(lines[0], "ETA") ||
		!strings.HasPrefix(lines[len(lines)-1], "load [load]: 40 of 40 requests done in ") {
		t.Errorf("progress:\n%s", b.String())
	}
}
