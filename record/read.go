package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/tokbench/tokbench/point"
)

// Read reads a results file: JSONL records as tokbench writes them (a
// torn last line is ignored and reported through torn, with the offset
// where the intact part ends; corruption anywhere else is an error naming
// the line), or a JSON array, read as llama-bench's -o json output (which
// `tokbench run -o json` also writes).
func Read(path string) (recs []Record, intact int64, torn bool, err error) {
	array, err := isArray(path)
	if err != nil {
		return nil, 0, false, err
	}
	if array {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, 0, false, err
		}
		recs, err := readArray(path, bytes.TrimSpace(data))
		return recs, int64(len(data)), false, err
	}
	var in interner
	// Records are gathered in chunks and copied once into a slice of the
	// right length: a slice grown record by record (1.4 KB each) would
	// copy them all at every growth.
	var chunks [][]Record
	count := 0
	intact, torn, err = Lines(path, "a JSON record", func(n int, line []byte) error {
		if isQuality(line) {
			return nil // read by ReadQuality
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("%s line %d is not a tokbench record: %v", path, n, err)
		}
		if r.Key == (point.Key{}) && r.Test == "" {
			return fmt.Errorf("%s line %d is not a tokbench record", path, n)
		}
		if err := r.checkRates(); err != nil {
			return fmt.Errorf("%s line %d: %v", path, n, err)
		}
		in.record(&r)
		if len(chunks) == 0 || len(chunks[len(chunks)-1]) == cap(chunks[len(chunks)-1]) {
			chunks = append(chunks, make([]Record, 0, 4096))
		}
		chunks[len(chunks)-1] = append(chunks[len(chunks)-1], r)
		count++
		return nil
	})
	if err != nil {
		return nil, 0, false, err
	}
	if count > 0 {
		recs = make([]Record, 0, count)
	}
	for i, c := range chunks {
		recs = append(recs, c...)
		chunks[i] = nil
	}
	return recs, intact, torn, nil
}

// maxRate bounds a believable rate, tokens per second.
const maxRate = 1e12

// checkRates refuses a record whose rates no measurement gives (negative,
// huge, or not finite: a hand-edited or corrupt file), before anything
// downstream computes with them.
func (r *Record) checkRates() error {
	for _, v := range append([]float64{r.AvgTs, r.StddevTs, r.MedianTs}, r.SamplesTs...) {
		if !(v >= 0 && v <= maxRate) { // NaN fails both
			return fmt.Errorf("%s: a rate of %g t/s: not a measurement (edited or corrupt?); remove the line", r.Test, v)
		}
	}
	return nil
}

// isArray says whether a file holds a JSON array (llama-bench's -o json)
// rather than lines, from its first byte that is not blank; the lines of
// a large file are then read one at a time, never the whole file at once.
func isArray(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		b, err := r.ReadByte()
		switch {
		case err == io.EOF:
			return false, nil
		case err != nil:
			return false, fmt.Errorf("%s: %w", path, err)
		case b == '[':
			return true, nil
		case b != ' ' && b != '\t' && b != '\n' && b != '\r':
			return false, nil
		}
	}
}

// interner keeps one copy of the strings that every record of a file
// repeats (the host, build, model, types): a million records would
// otherwise hold a million copies of each.
type interner map[string]string

func (in *interner) str(s *string) {
	if *in == nil {
		*in = interner{}
	}
	if v, ok := (*in)[*s]; ok {
		*s = v
	} else if len(*in) < 1<<16 {
		(*in)[*s] = *s
	}
}

func (in *interner) record(r *Record) {
	for _, s := range []*string{&r.ModelID, &r.SpecSHA256, &r.Shard, &r.BuildCommit, &r.OllamaVersion, &r.Tool, &r.CPUInfo, &r.GPUInfo,
		&r.Backends, &r.Backend, &r.CPUFeatures, &r.HostName, &r.ModelFile, &r.ModelType, &r.ModelFileType, &r.ModelSHA256, &r.TypeK,
		&r.TypeV, &r.SplitMode, &r.Sampling, &r.TensorSplit, &r.TensorOverrides, &r.DeviceSelect, &r.CPUMask} {
		in.str(s)
	}
}
