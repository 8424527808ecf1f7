package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

func TestOpenResults(t *testing.T) {
	env := plan.Env{Version: "test"}
	env.Host.CPUModel = "cpu A"
	p := filepath.Join(t.TempDir(), "r.jsonl")
	res, old, err := openResults(p, false, env, "")
	if err != nil || len(old) != 0 {
		t.Fatal(err)
	}
	rec := env.Unmeasured(point.Point{Model: "m", NGen: 4, Parallel: 1}, record.StatusOK, "")
	if err := res.Append(rec); err != nil {
		t.Fatal(err)
	}
	res.Close()
	var ie *point.InputError
	if _, _, err := openResults(p, false, env, ""); !errors.As(err, &ie) || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("existing file without --resume: %v", err)
	}
	// A torn line is cut off on resume, so appends stay line-aligned.
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"key":"x","st`)
	f.Close()
	res, old, err = openResults(p, true, env, "")
	if err != nil || len(old) != 1 || old[0].Key != rec.Key {
		t.Fatalf("resume: %v, %d records", err, len(old))
	}
	res.Append(rec)
	res.Close()
	if recs, _, torn, err := record.Read(p); err != nil || torn || len(recs) != 2 {
		t.Errorf("after resume: %d records, torn %v, %v", len(recs), torn, err)
	}
	other := env
	other.Host.CPUModel = "cpu B"
	if _, _, err := openResults(p, true, other, ""); !errors.As(err, &ie) || !strings.Contains(err.Error(), "must not mix") {
		t.Errorf("other hardware: %v", err)
	}
}
