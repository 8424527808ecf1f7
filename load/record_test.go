package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadResults(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "load.jsonl")
	good := `{"kind":"request","scenario":"load","request":{"id":0,"status":"ok"}}` + "\n" +
		`{"kind":"load","workload":{"name":"short"},"run":{"scenario":"load","loop":"closed","slots":2,"summary":{"completed":1},"timeline":[]}}` + "\n" +
		`{"kind":"capacity","capacity":{"sustainable_concurrency":4,"probes":[]}}` + "\n"
	os.WriteFile(p, []byte(good+`{"kind":"lo`), 0o644)
	if !IsResults(p) {
		t.Fatal("not recognised")
	}
	lines, reqs, torn, err := ReadResults(p)
	if err != nil || !torn || reqs != 1 || len(lines) != 2 || lines[0].Run.Slots != 2 || lines[1].Capacity.Concurrency != 4 {
		t.Fatalf("%+v %d %v %v", lines, reqs, torn, err)
	}
	for body, want := range map[string]string{
		"{oops\n" + good:                 "line 1 is not a JSON line",
		`{"kind":"sweep"}` + "\n":        `kind "sweep"`,
		`{"kind":"load"}` + "\n":         `kind "load" is not`,
		`{"key":"x","test":"tg"}` + "\n": "is not a load",
	} {
		os.WriteFile(p, []byte(body), 0o644)
		if _, _, _, err := ReadResults(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	os.WriteFile(p, []byte(`{"key":"x","test":"tg128"}`+"\n"), 0o644)
	if IsResults(p) {
		t.Error("a sweep record taken for load results")
	}
}
