package record

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/internal/quality"
)

// QualityKind marks a quality line in a results file.
const QualityKind = "quality"

// Quality is one model's quality block: its output against a base model's
// over the same tokens (tokbench quality, sweep --quality). It lives in
// the same results file as the model's speed records, joined to them by
// the model's content (ModelSHA256), and is skipped by everything that
// reads speed.
type Quality struct {
	Kind    string `json:"kind"` // QualityKind
	ModelID string `json:"model_id"`
	Model
	// BitsPerWeight is the file's weight bytes x 8 over its parameters.
	BitsPerWeight float64 `json:"bpw"`
	IsBase        bool    `json:"is_base,omitempty"`
	BaseFile      string  `json:"base_filename"`
	BaseSHA256    string  `json:"base_sha256"`
	BaseFileType  string  `json:"base_file_type"`
	// Text is what was evaluated: a file, the built-in text, or a seeded
	// random token stream (synthetic models).
	Text      string          `json:"text"`
	Ctx       int             `json:"ctx"`
	Chunks    int             `json:"chunks"`
	TopK      int             `json:"cache_top_k"` // base tokens the cache keeps per row, at most
	CacheTail float64         `json:"cache_tail"`  // base probability a cached row may leave out
	Synthetic bool            `json:"synthetic"`
	Figures   quality.Figures `json:"quality"`
	// Note says what the figures cannot vouch for (perplexity of a
	// synthetic model, a KLD that is a lower bound), notes joined by "; ".
	Note        string    `json:"note,omitempty"`
	Seconds     float64   `json:"seconds"`      // the evaluation's wall time
	DecodeShare float64   `json:"decode_share"` // of it inside llama_decode
	NGPULayers  int       `json:"n_gpu_layers"`
	NThreads    int       `json:"n_threads"`
	TestTime    time.Time `json:"test_time"`
	Build
	Machine
}

// Class is the hardware class the block was evaluated on: KLD moves a
// little with the kernels (CPU, CUDA), so baselines keep it per class.
func (q *Quality) Class() string {
	var prof *gpu.GPU
	if len(q.GPUProfile) > 0 {
		prof = &q.GPUProfile[0]
	}
	return gpu.ClassOf(q.Backend, q.GPUInfo, prof, q.CPUInfo)
}

// isQuality says whether a results line is a quality block.
func isQuality(line []byte) bool {
	// quality" is rare where " is not: a search from each quote was
	// a tenth of reading a fleet's file. (Written with escapes, it is
	// decoded to find out.)
	if !bytes.Contains(line, []byte(`quality"`)) && !bytes.Contains(line, []byte(`\u`)) {
		return false
	}
	// By its exact key: a struct's field would take "KIND" or "Kind" too,
	// and a speed record with one would vanish from the speed tables.
	var k map[string]json.RawMessage
	if json.Unmarshal(line, &k) != nil {
		return false
	}
	var kind string
	return json.Unmarshal(k["kind"], &kind) == nil && kind == QualityKind
}

// ReadQuality reads the quality blocks of a results file (none from a
// file of llama-bench's). A torn last line is ignored, as by Read.
func ReadQuality(path string) ([]Quality, error) {
	if kind, err := sniff(path); err != nil || kind != kindLines {
		return nil, err
	}
	var out []Quality
	_, _, err := Lines(path, "a JSON record", func(n int, line []byte) error {
		if !isQuality(line) {
			return nil
		}
		var q Quality
		if err := json.Unmarshal(line, &q); err != nil {
			return fmt.Errorf("%s line %d is not a quality block: %w", path, n, err)
		}
		if err := q.Figures.Check(); err != nil {
			return fmt.Errorf("%s line %d: quality of %s: %w; remove the line", path, n, q.ModelFile, err)
		}
		out = append(out, q)
		return nil
	})
	return out, err
}

// Latest keeps the last block of each model for each evaluation (the same
// base, text, chunks and cache): an evaluation run again replaces the
// earlier one, in the order of the file.
func Latest(blocks []Quality) []Quality {
	type key struct {
		model, base, text string
		ctx, chunks, k    int
		tail              float64
	}
	at := map[key]int{}
	var out []Quality
	for _, q := range blocks {
		k := key{cmp.Or(q.ModelSHA256, q.ModelFile), q.BaseSHA256, q.Text, q.Ctx, q.Chunks, q.TopK, q.CacheTail}
		if i, ok := at[k]; ok {
			out[i] = q
			continue
		}
		at[k] = len(out)
		out = append(out, q)
	}
	return out
}
