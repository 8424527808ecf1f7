package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/tokbench/tokbench/point"
)

// Read reads a results file: JSONL records as tokbench writes them (a
// torn last line is ignored and reported through torn, with the offset
// where the intact part ends; corruption anywhere else is an error naming
// the line), or a JSON array, read as llama-bench's -o json output (which
// `tokbench run -o json` also writes).
func Read(path string) (recs []Record, intact int64, torn bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, false, err
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		recs, err := readArray(path, t)
		return recs, int64(len(data)), false, err
	}
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
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, 0, false, err
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
