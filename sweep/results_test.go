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

// llama-bench's -o json output, as it writes it (fields abridged).
const llamaBench = `[
  {
    "build_commit": "ec98e2002", "build_number": 1, "cpu_info": "AMD EPYC 9654 96-Core Processor", "gpu_info": "NVIDIA H100 80GB HBM3",
    "backends": "CUDA", "model_filename": "models/llama-3.1-8b-q4_k_m.gguf", "model_type": "llama 8B Q4_K - Medium",
    "model_size": 4912898304, "model_n_params": 8030261248, "n_batch": 2048, "n_ubatch": 512, "n_threads": 32,
    "type_k": "f16", "type_v": "f16", "n_gpu_layers": 99, "flash_attn": 0, "n_prompt": 0, "n_gen": 128, "n_depth": 4096,
    "test_time": "2025-06-01T10:00:00Z", "avg_ns": 900000000, "stddev_ns": 1000000, "avg_ts": 142.2, "stddev_ts": 0.5,
    "samples_ns": [900000000, 901000000], "samples_ts": [142.2, 142.1]
  }
]`

func TestReadLlamaBenchJSON(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lb.json")
	os.WriteFile(p, []byte(llamaBench), 0o644)
	recs, _, torn, err := ReadRecords(p)
	if err != nil || torn || len(recs) != 1 {
		t.Fatalf("%v %v %d", err, torn, len(recs))
	}
	r := recs[0]
	if r.Status != StatusOK || r.Test != "tg128@d4096" || r.Backend != "CUDA" || r.AvgTs != 142.2 || r.Key == "" || r.NParallel != 1 {
		t.Errorf("%+v", r)
	}
	if c := r.Class(); c != "cuda-nvidia-h100-80gb-hbm3" {
		t.Errorf("class %s", c)
	}
}
