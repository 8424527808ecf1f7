package load

import (
	"fmt"
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
	// Probes are folded into the search line that follows them; a search
	// killed before its line is summed up from its probes.
	probe := func(c int, pass bool) string {
		return fmt.Sprintf(`{"kind":"probe","workload":{"name":"short"},"probe":{"concurrency":%d,"pass":%v,"summary":{"output_ts":%d}}}`+"\n", c, pass, 10*c)
	}
	os.WriteFile(p, []byte(probe(1, true)+probe(2, true)+`{"kind":"capacity","capacity":{"sustainable_concurrency":2,"probes":[]}}`+"\n"+
		probe(1, true)+probe(2, true)+probe(4, false)), 0o644)
	lines, _, _, err = ReadResults(p)
	if err != nil || len(lines) != 2 || lines[0].Capacity.Stopped != "" {
		t.Fatalf("%+v %v", lines, err)
	}
	if k := lines[1].Capacity; k.Concurrency != 2 || k.OutputTps != 20 || len(k.Trials) != 3 || !strings.HasPrefix(k.Stopped, "killed") || lines[1].Workload.Name != "short" {
		t.Errorf("killed search: %+v", k)
	}
	os.WriteFile(p, []byte(`{"key":"x","test":"tg128"}`+"\n"), 0o644)
	if IsResults(p) {
		t.Error("a sweep record taken for load results")
	}
}
