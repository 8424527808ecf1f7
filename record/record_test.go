package record

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/point"
)

func TestReadTornAndCorrupt(t *testing.T) {
	dir := t.TempDir()
	good := `{"key":"a|p=0|n=16","test":"tg16","status":"ok"}` + "\n" + `{"key":"b|p=0|n=16","test":"tg16","status":"ok"}` + "\n"
	p := filepath.Join(dir, "r.jsonl")
	os.WriteFile(p, []byte(good+`{"key":"c","te`), 0o644)
	recs, intact, torn, err := Read(p)
	if err != nil || !torn || len(recs) != 2 || intact != int64(len(good)) || recs[1].Key.Model != "b" {
		t.Errorf("torn file: %d records, intact %d, torn %v, %v", len(recs), intact, torn, err)
	}
	os.WriteFile(p, []byte(`{"key":"a"`+"\n"+good), 0o644)
	if _, _, _, err := Read(p); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("corrupt first line: %v", err)
	}
	os.WriteFile(p, []byte(good+"garbage\n"), 0o644)
	if _, _, torn, err := Read(p); torn || err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("a complete garbage last line is no torn line: torn %v, %v", torn, err)
	}
	os.WriteFile(p, []byte(good+`{"kind":"load"}`+"\n"), 0o644)
	if _, _, _, err := Read(p); err == nil || !strings.Contains(err.Error(), "line 3 is not a tokbench record") {
		t.Errorf("a last line of another kind is no torn line: %v", err)
	}
	for _, bad := range []string{`[1e308, -1e308]`, `[-5]`, `[1e300]`} {
		os.WriteFile(p, []byte(good+`{"key":"c|p=0|n=16","test":"tg16","status":"ok","samples_ts":`+bad+"}\n"), 0o644)
		if _, _, _, err := Read(p); err == nil || !strings.Contains(err.Error(), "line 3: tg16: a rate of") {
			t.Errorf("samples_ts %s: %v", bad, err)
		}
	}
}

// Appending after a last line without its newline starts a line of its own.
func TestAppendAlignsLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.jsonl")
	os.WriteFile(p, []byte(`{"key":"a|p=1|n=0","test":"pp1","status":"ok"}`), 0o644)
	if err := Append(p, Record{Key: point.Key{Model: "b"}, Test: "pp2", Status: StatusOK}); err != nil {
		t.Fatal(err)
	}
	recs, _, torn, err := Read(p)
	if err != nil || torn || len(recs) != 2 || recs[1].Test != "pp2" {
		t.Fatalf("%d records, torn %v, %v", len(recs), torn, err)
	}
}

// The nested Go form marshals flat, with llama-bench's names (its
// flash_attn a bool).
func TestJSONIsFlat(t *testing.T) {
	r := Record{Key: point.Key{Model: "m", NGen: 8}, Test: "tg8", Status: StatusOK,
		Build: Build{BuildCommit: "ec98e2002"}, Model: Model{ModelFile: "m.gguf"},
		Settings: Settings{NGen: 8, FlashAttn: point.FlashOn}, Result: Result{AvgTs: 12.5, SamplesTs: []float64{12.5}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for k, want := range map[string]any{"build_commit": "ec98e2002", "model_filename": "m.gguf", "n_gen": 8.0, "flash_attn": true, "avg_ts": 12.5, "status": "ok"} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v (%s)", k, m[k], want, b)
		}
	}
	if !strings.HasPrefix(m["key"].(string), "m|p=0|n=8|") {
		t.Errorf("key %v", m["key"])
	}
	var back Record
	if err := json.Unmarshal(b, &back); err != nil || back.Key != r.Key || back.FlashAttn != point.FlashOn || back.AvgTs != 12.5 {
		t.Errorf("round trip: %v %+v", err, back)
	}
}

// llama-bench's -o json output in the current shape and in an older one
// (flash_attn a bool, -ngl -1 for all layers), written from its
// documented output.
func TestReadLlamaBench(t *testing.T) {
	recs, _, torn, err := Read("testdata/llama-bench-new.json")
	if err != nil || torn || len(recs) != 1 {
		t.Fatalf("%v %v %d", err, torn, len(recs))
	}
	r := recs[0]
	if r.Status != StatusOK || r.Test != "tg128@d4096" || r.Backend != "CUDA" || r.AvgTs != 142.2 || r.Key.NGen != 128 || r.NParallel != 1 || r.FlashAttn != point.FlashOff {
		t.Errorf("%+v", r)
	}
	if c := r.Class(); c != "cuda-nvidia-h100-80gb-hbm3" {
		t.Errorf("class %s", c)
	}
	recs, _, _, err = Read("testdata/llama-bench-old.json")
	if err != nil || len(recs) != 1 {
		t.Fatalf("old shape: %v", err)
	}
	r = recs[0]
	if r.FlashAttn != point.FlashOff || r.Test != "pp512" || !slices.Equal(r.SamplesTs, []float64{4338.9, 4196.7}) {
		t.Errorf("old shape: %+v", r)
	}
	// -ngl -1 is every layer on the GPU: a GPU run, of the GPU's class.
	if r.Backend != "CUDA" || r.Class() != "cuda-nvidia-l40s" {
		t.Errorf("old shape: backend %s, class %s", r.Backend, r.Class())
	}
	if backendOf("CUDA", 0) != "CPU" || backendOf("CPU", -1) != "CPU" || backendOf("CPU,Metal", 99) != "Metal" {
		t.Error("backendOf")
	}
}

// llama-bench's current output (2026: devices a string, load_mode in
// place of use_mmap, no_op_offload a bool) in each of its formats reads as
// the same test; JSON and JSONL keep the samples, CSV and SQL have only
// the mean.
func TestReadLlamaBenchFormats(t *testing.T) {
	for _, ext := range []string{"json", "jsonl", "csv", "sql"} {
		path := "testdata/llama-bench-current." + ext
		recs, _, _, err := Read(path)
		if err != nil || len(recs) != 1 {
			t.Fatalf("%s: %d records, %v", path, len(recs), err)
		}
		r := recs[0]
		samples := 3
		if ext == "csv" || ext == "sql" {
			samples = 1
		}
		if r.Test != "pp512" || !r.UseMmap || r.Devices != "CUDA0" || r.NGPULayers != 99 || r.FlashAttn != point.FlashAuto ||
			r.AvgTs != 8533.3 || r.BuildNumber != 8120 || r.Backend != "CUDA" || fmt.Sprint(r.Extra["fit_target"]) != "1024" || len(r.SamplesTs) != samples ||
			r.TestTime.Year() != 2026 || r.Status != StatusOK {
			t.Errorf("%s: %+v", path, r)
		}
	}
}

// A damaged record is an error naming where, whatever the format: a
// tokbench line with a field of the wrong type (it has avg_ts, so it
// could pass for llama-bench's), and a SQL row whose tokbench record is
// not JSON.
func TestDamagedRecordsRefused(t *testing.T) {
	dir := t.TempDir()
	line := filepath.Join(dir, "r.jsonl")
	os.WriteFile(line, []byte(`{"key":"a|p=0|n=16","test":"tg16","status":"ok","avg_ts":"fast","samples_ts":[5]}`+"\n"), 0o644)
	if _, _, _, err := Read(line); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a wrong-typed field: %v", err)
	}
	db := filepath.Join(dir, "r.sql")
	os.WriteFile(db, []byte("CREATE TABLE llama_bench (avg_ts REAL);\nINSERT INTO llama_bench (avg_ts) VALUES ('5');\n"+
		"CREATE TABLE tokbench (llama_bench_rowid INTEGER, record TEXT);\nINSERT INTO tokbench VALUES (1, '{not json');\n"), 0o644)
	if _, _, _, err := Read(db); err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Errorf("a damaged tokbench record in SQL: %v", err)
	}
}

// A record whose count of anything (tokens, threads, batch, sequences)
// is negative is refused, the field named: each such setting of the
// table, read through the table as a record holds it.
func TestNegativeCountsRefused(t *testing.T) {
	var names []string
	for _, s := range counts() {
		names = append(names, s.Field)
		path := filepath.Join(t.TempDir(), "r.jsonl")
		line := fmt.Sprintf(`{"key":"a|p=0|n=16","test":"tg16","status":"ok","n_batch":64,"samples_ts":[5],%q:-3}`, s.Field)
		os.WriteFile(path, []byte(line+"\n"), 0o644)
		if _, _, _, err := Read(path); err == nil || !strings.Contains(err.Error(), s.Field+" -3") {
			t.Errorf("%s -3: %v", s.Field, err)
		}
	}
	slices.Sort(names)
	want := []string{"n_batch", "n_depth", "n_gen", "n_parallel", "n_prompt", "n_threads", "n_ubatch"}
	if !slices.Equal(names, want) {
		t.Errorf("counts checked: %q, want %q", names, want)
	}
}

// A build is named by 8 hex digits, as llama-bench names it: an older
// tokbench record's 9 name the same build, in a results file's
// fingerprint too.
func TestBuildIsEightDigits(t *testing.T) {
	old, now := Record{Build: Build{BuildCommit: "ec98e2002"}}, Record{Build: Build{BuildCommit: "ec98e200"}}
	if old.BuildID() != "ec98e200" || now.BuildID() != "ec98e200" || old.Fingerprint() != now.Fingerprint() {
		t.Errorf("builds %q and %q, fingerprints %q, %q", old.BuildID(), now.BuildID(), old.Fingerprint(), now.Fingerprint())
	}
	if short := (Record{Build: Build{BuildCommit: "abc"}}); short.BuildID() != "abc" {
		t.Errorf("a short commit: %q", short.BuildID())
	}
}

// What a llama-bench row carries beyond tokbench's fields is kept when
// it can be a column (a plain name; a text, number or boolean), at most
// maxExtra of them, and written back at the JSON's top level, never over
// a field of the record's own.
func TestExtraFieldsBounded(t *testing.T) {
	row := map[string]any{"n_prompt": 0.0, "n_gen": 8.0, "avg_ts": 10.0, "load_mode": "dio", "x; DROP TABLE t": "1", "nested": map[string]any{"a": 1.0}}
	for i := range 100 {
		row[fmt.Sprintf("f%03d", i)] = float64(i)
	}
	r, err := FromLlamaBench(row)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Extra) != maxExtra || r.Extra["x; DROP TABLE t"] != nil || r.Extra["nested"] != nil || r.UseMmap {
		t.Errorf("%d extras, use_mmap %v: %v", len(r.Extra), r.UseMmap, r.Extra.Names())
	}
	r.Extra = Extra{"load_mode": "dio", "avg_ts": 99.0}
	b, _ := json.Marshal(r)
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil || back["load_mode"] != "dio" || back["avg_ts"] != 10.0 {
		t.Errorf("written back: %v %s", err, b)
	}
}

// A record claiming a spread no measurement gives is refused where it is
// read, its line named: a process_cv of 1e300 would let any change
// through a comparison's gate.
func TestClaimedSpreadRefused(t *testing.T) {
	for field, v := range map[string]string{"process_cv": "1e300", "cv": "50", "ci95_ts": "-1", "ci95_reps_ts": "1e300"} {
		path := filepath.Join(t.TempDir(), "r.jsonl")
		r := Record{Key: point.Key{Model: "m", NGen: 16}, Test: "tg16", Status: StatusOK}
		r.AvgTs, r.SamplesTs = 10.5, []float64{10, 11}
		if err := Append(path, r); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		edited := strings.Replace(string(b), `"`+field+`":0,`, `"`+field+`":`+v+`,`, 1)
		if edited == string(b) {
			t.Fatalf("no %s field in %s", field, b)
		}
		os.WriteFile(path, []byte(edited), 0o644)
		if _, _, _, err := Read(path); err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s %s: %v", field, v, err)
		}
	}
}
