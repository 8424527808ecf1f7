package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/tokbench/tokbench/engine"
)

// ReadRecords reads a JSONL results file. A torn last line (a write cut
// short by a crash or a kill) is ignored and reported through torn, with
// the offset where the intact part ends; corruption anywhere else is an
// error naming the line.
//
// A JSON array is read as llama-bench's -o json output (which tokbench's
// `run -o json` also writes): llama-bench's records become tokbench records
// with the fields they share, so their results can be reported and used
// as baselines.
func ReadRecords(path string) (recs []Record, intact int64, torn bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, false, err
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		recs, err := readArray(path, t)
		return recs, int64(len(data)), false, err
	}
	line := 0
	for off := 0; off < len(data); {
		line++
		end := bytes.IndexByte(data[off:], '\n')
		last := end < 0
		if last {
			end = len(data) - off
		}
		text := bytes.TrimSpace(data[off : off+end])
		var r Record
		if len(text) > 0 {
			if err := json.Unmarshal(text, &r); err != nil {
				if last || off+end+1 >= len(data) {
					return recs, int64(off), true, nil
				}
				return nil, 0, false, fmt.Errorf("%s line %d is not a JSON record: %v", path, line, err)
			}
			if r.Key == "" && r.Test == "" {
				return nil, 0, false, fmt.Errorf("%s line %d is not a tokbench record", path, line)
			}
			recs = append(recs, r)
		}
		if last {
			return recs, int64(len(data)), true, nil
		}
		off += end + 1
	}
	return recs, int64(len(data)), false, nil
}

// Results is a results file open for appending.
type Results struct {
	f    *os.File
	path string
}

// OpenResults opens path for a sweep. Without resume, an existing
// non-empty file is refused (its results would be mixed with new ones);
// with resume, its records are returned, a torn last line is cut off, and
// records from other hardware or another llama.cpp build are refused.
func OpenResults(path string, resume bool, env Env) (*Results, []Record, error) {
	var old []Record
	if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		if !resume {
			return nil, nil, inputErr("%s already holds results: pass --resume to continue that sweep, or choose another --out", path)
		}
		recs, intact, torn, err := ReadRecords(path)
		if err != nil {
			return nil, nil, err
		}
		if torn {
			if err := os.Truncate(path, intact); err != nil {
				return nil, nil, fmt.Errorf("cut the torn last line of %s: %w", path, err)
			}
		}
		if len(recs) > 0 {
			if want, got := recs[0].Fingerprint(), FingerprintOf(env); want != got {
				return nil, nil, inputErr("%s was measured on %q; this machine and build is %q: results of different hardware or llama.cpp builds must not mix, choose another --out", path, want, got)
			}
		}
		old = recs
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("results: %w", err)
	}
	return &Results{f: f, path: path}, old, nil
}

// Append writes one record as a line and fsyncs it: once Append returns,
// the record survives a crash of the machine.
func (r *Results) Append(rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if _, err := r.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", r.path, err)
	}
	return r.f.Sync()
}

// Close closes the file.
func (r *Results) Close() error { return r.f.Close() }

// Fingerprint names the hardware and build a record was measured with.
func (r *Record) Fingerprint() string {
	return fmt.Sprintf("cpu=%s features=%s gpu=%s threads=%d llama.cpp=%s ollama=%s",
		r.CPUInfo, r.CPUFeatures, r.GPUInfo, r.HostThreads, r.BuildCommit, r.OllamaVersion)
}

// FingerprintOf is the fingerprint records made in env will have.
func FingerprintOf(env Env) string {
	r := fill(Record{}, Point{}, engine.Meta{}, env)
	return r.Fingerprint()
}

// readArray reads a JSON array of records, completing what llama-bench's
// records lack: status, test name, key and backend.
func readArray(path string, data []byte) ([]Record, error) {
	var recs []Record
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("%s: not a JSON array of benchmark records: %v", path, err)
	}
	for i := range recs {
		r := &recs[i]
		if r.Status == "" {
			r.Status = StatusOK
		}
		if r.NParallel == 0 {
			r.NParallel = 1
		}
		if r.Test == "" {
			r.Test = Point{NPrompt: r.NPrompt, NGen: r.NGen, NDepth: r.NDepth, Parallel: r.NParallel}.TestName()
		}
		if r.Backend == "" {
			r.Backend = "CPU"
			if r.Backends != "" && r.NGPULayers > 0 && !strings.EqualFold(r.Backends, "CPU") {
				r.Backend = strings.TrimSuffix(strings.TrimPrefix(r.Backends, "CPU,"), ",CPU")
			}
		}
		if r.Key == "" {
			r.Key = fmt.Sprintf("%s|%s|b=%d|ub=%d|t=%d|ngl=%d|fa=%d|ctk=%s|ctv=%s", r.ModelFile, r.Test, r.NBatch, r.NUBatch,
				r.NThreads, r.NGPULayers, r.FlashAttn, r.TypeK, r.TypeV)
		}
		if len(r.SamplesTs) == 0 {
			return nil, fmt.Errorf("%s record %d (%s) has no samples_ts", path, i+1, r.Test)
		}
	}
	return recs, nil
}
