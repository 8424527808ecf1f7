package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tokbench/tokbench/point"
)

// DeviceNames is llama-bench's devices field: the devices a test used,
// by name, "/" between them ("auto": all). tokbench's files before it
// held a list of descriptions under the same name, read as unknown.
type DeviceNames string

// UnmarshalJSON takes llama-bench's string, or an older tokbench list.
func (d *DeviceNames) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		*d = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*d = DeviceNames(s)
	return nil
}

// FromLlamaBench makes a record of one of llama-bench's rows, from any of
// its formats and versions: JSON and JSONL objects, CSV and SQL rows
// (values as text or as SQLite gives them). A newer file's load_mode
// ("mmap", "none", "dio") is read as use_mmap, and kept as it is with the
// other fields tokbench has no place for (Extra). What llama-bench does not write (status, test
// name, key, backend) is filled in; a CSV or SQL row has no samples, so
// its one sample is its mean, and no comparison can call it significant.
func FromLlamaBench(row map[string]any) (Record, error) {
	obj := map[string]any{}
	var unknown []string
	for k, v := range row {
		kind, ok := lbKinds[k]
		if !ok {
			if k == "samples_ns" || k == "samples_ts" {
				obj[k] = v
			} else if !ownNames[k] && v != nil {
				unknown = append(unknown, k)
			}
			continue
		}
		if v == nil || v == "" {
			continue
		}
		c, err := coerce(kind, v)
		if err != nil {
			return Record{}, fmt.Errorf("%s: %w", k, err)
		}
		obj[k] = c
	}
	// The same fields kept, whatever the map's order.
	slices.Sort(unknown)
	var extra Extra
	for _, k := range unknown {
		extra.add(k, row[k])
	}
	if m, ok := row["load_mode"].(string); ok && row["use_mmap"] == nil {
		obj["use_mmap"] = m == "mmap"
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return Record{}, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, err
	}
	r.Extra = extra
	if len(r.SamplesTs) == 0 && r.AvgTs > 0 {
		r.SamplesTs, r.SamplesNs = []float64{r.AvgTs}, []uint64{r.AvgNs}
	}
	return r, complete(&r)
}

// coerce is v as kind.
func coerce(kind byte, v any) (any, error) {
	s := strings.TrimSpace(fmt.Sprint(v))
	switch kind {
	case 's':
		return fmt.Sprint(v), nil
	case 'f':
		return strconv.ParseFloat(s, 64)
	case 'i', 'a':
		switch s {
		case "true":
			return 1, nil
		case "false":
			return 0, nil
		case "auto":
			if kind == 'a' {
				return -1, nil
			}
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && f == float64(int64(f)) {
			return int64(f), nil
		}
		return nil, fmt.Errorf("%q is not an integer", s)
	}
	switch s {
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	}
	return nil, fmt.Errorf("%q is not 0 or 1", s)
}

// complete fills in what a llama-bench record lacks and checks its rates.
// Older llama-bench writes flash_attn as a bool, and -ngl -1 (all layers)
// or any positive count means a GPU did the work when the build has a
// GPU backend.
func complete(r *Record) error {
	if r.Status == "" {
		r.Status = StatusOK
	}
	if r.NParallel == 0 {
		r.NParallel = 1
	}
	if r.Test == "" {
		r.Test = point.TestName(r.NPrompt, r.NGen, r.NDepth, r.NParallel)
	}
	if r.Backend == "" {
		r.Backend = backendOf(r.Backends, r.NGPULayers)
	}
	if r.Key == (point.Key{}) {
		r.Key = r.pointKey()
	}
	if len(r.SamplesTs) == 0 && r.Status == StatusOK {
		return fmt.Errorf("%s has no samples_ts and no avg_ts", r.Test)
	}
	if r.Status == StatusOK {
		// A measured test has a rate: 0 would divide every comparison.
		for _, v := range append([]float64{r.AvgTs}, r.SamplesTs...) {
			if v == 0 {
				return fmt.Errorf("%s: a rate of 0 t/s in a measured test: not a measurement (edited or corrupt?); remove it", r.Test)
			}
		}
	}
	return r.checkRates()
}

// readArray reads a JSON array of records: llama-bench's -o json, or
// tokbench's (whose records carry their key).
func readArray(path string, data []byte) ([]Record, error) {
	var objs []json.RawMessage
	if err := json.Unmarshal(data, &objs); err != nil {
		return nil, fmt.Errorf("%s: not a JSON array of benchmark records: %w", path, err)
	}
	recs := make([]Record, 0, len(objs))
	for i, o := range objs {
		r, err := readObject(o)
		if err != nil {
			return nil, fmt.Errorf("%s record %d: %w", path, i+1, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// readObject reads one JSON record: tokbench's (it has a key) as it is,
// llama-bench's through FromLlamaBench.
func readObject(b []byte) (Record, error) {
	var probe struct {
		Key *json.RawMessage `json:"key"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return Record{}, err
	}
	if probe.Key != nil {
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return Record{}, err
		}
		return r, complete(&r)
	}
	var row map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&row); err != nil {
		return Record{}, err
	}
	if _, ok := row["avg_ts"]; !ok {
		return Record{}, fmt.Errorf("no key, and no avg_ts")
	}
	return FromLlamaBench(row)
}

// backendOf is the backend that did the work of a llama-bench record:
// its GPU backend when layers were offloaded (-ngl -1 is all of them),
// else the CPU.
func backendOf(backends string, ngl int) string {
	var gpus []string
	for _, b := range strings.Split(backends, ",") {
		if b = strings.TrimSpace(b); b != "" && !strings.EqualFold(b, "CPU") {
			gpus = append(gpus, b)
		}
	}
	if len(gpus) == 0 || ngl == 0 {
		return "CPU"
	}
	return strings.Join(gpus, ",")
}

// pointKey is the identity of an imported record's point, from its
// settings (llama-bench does not write the seed; its tests use none).
func (r *Record) pointKey() point.Key {
	p := r.Point()
	p.ModelID, p.Sampling, p.Reps, p.NoWarmup, p.Seed = r.Name(), point.SamplingOff, len(r.SamplesTs), false, 0
	// A file from before llama-bench had --poll reads as poll 0, as a
	// real --poll 0 does: the key leaves poll out, as it always has.
	p.Poll = ""
	return p.Key()
}
