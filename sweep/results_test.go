package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/engine"
)

func TestReadRecordsTornAndCorrupt(t *testing.T) {
	dir := t.TempDir()
	good := `{"key":"a","test":"tg16","status":"ok"}` + "\n" + `{"key":"b","test":"tg16","status":"ok"}` + "\n"
	p := filepath.Join(dir, "r.jsonl")
	os.WriteFile(p, []byte(good+`{"key":"c","te`), 0o644)
	recs, intact, torn, err := ReadRecords(p)
	if err != nil || !torn || len(recs) != 2 || intact != int64(len(good)) {
		t.Errorf("torn file: %d records, intact %d, torn %v, %v", len(recs), intact, torn, err)
	}
	os.WriteFile(p, []byte(`{"key":"a"`+"\n"+good), 0o644)
	if _, _, _, err := ReadRecords(p); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("corrupt first line: %v", err)
	}
}

func TestOpenResults(t *testing.T) {
	env := Env{Version: "test"}
	env.Host.CPUModel = "cpu A"
	p := filepath.Join(t.TempDir(), "r.jsonl")
	res, old, err := OpenResults(p, false, env)
	if err != nil || len(old) != 0 {
		t.Fatal(err)
	}
	rec := fill(Record{Status: StatusOK}, Point{Model: "m", NGen: 4, Parallel: 1}, engineMetaForTest(), env)
	if err := res.Append(rec); err != nil {
		t.Fatal(err)
	}
	res.Close()
	var ie *InputError
	if _, _, err := OpenResults(p, false, env); !errors.As(err, &ie) || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("existing file without --resume: %v", err)
	}
	// A torn line is cut off on resume, so appends stay line-aligned.
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"key":"x","st`)
	f.Close()
	res, old, err = OpenResults(p, true, env)
	if err != nil || len(old) != 1 || old[0].Key != rec.Key {
		t.Fatalf("resume: %v, %d records", err, len(old))
	}
	res.Append(rec)
	res.Close()
	if recs, _, torn, err := ReadRecords(p); err != nil || torn || len(recs) != 2 {
		t.Errorf("after resume: %d records, torn %v, %v", len(recs), torn, err)
	}
	other := env
	other.Host.CPUModel = "cpu B"
	if _, _, err := OpenResults(p, true, other); !errors.As(err, &ie) || !strings.Contains(err.Error(), "must not mix") {
		t.Errorf("other hardware: %v", err)
	}
}

func engineMetaForTest() engine.Meta { return engine.Meta{} }
