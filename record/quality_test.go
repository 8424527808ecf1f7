package record

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/internal/quality"
	"github.com/tokbench/tokbench/point"
)

func TestQualityLinesBesideRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	q := Quality{Kind: QualityKind, ModelID: "m", BaseSHA256: "b", Ctx: 512, Chunks: 8, TopK: 64, Figures: quality.Figures{Tokens: 10, KLD: quality.KLD{Mean: 0.5}}}
	q.ModelSHA256 = "s1"
	r := Record{Key: point.Key{Model: "m", NGen: 16}, Test: "tg16", Status: StatusOK}
	q2 := q
	q2.Figures.KLD.Mean = 0.25
	if err := Append(path, r, q, q2); err != nil {
		t.Fatal(err)
	}
	// A torn last line is ignored by both readers.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"kind":"quality","model_id":"x`)
	f.Close()
	recs, _, torn, err := Read(path)
	if err != nil || len(recs) != 1 || !torn || recs[0].Test != "tg16" {
		t.Fatalf("Read: %d records, torn %v, %v", len(recs), torn, err)
	}
	blocks, err := ReadQuality(path)
	if err != nil || len(blocks) != 2 || blocks[1].Figures.KLD.Mean != 0.25 || blocks[0].Figures.Tokens != 10 {
		t.Fatalf("ReadQuality: %+v, %v", blocks, err)
	}
	if l := Latest(blocks); len(l) != 1 || l[0].Figures.KLD.Mean != 0.25 {
		t.Errorf("Latest kept %+v, want the second block only", l)
	}
	other := blocks[0]
	other.ModelSHA256 = "s2"
	if l := Latest(append(blocks, other)); len(l) != 2 {
		t.Errorf("Latest merged two models: %d blocks", len(l))
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"quality":{"tokens":10`) {
		t.Errorf("the figures are not the quality block: %s", data)
	}
}

// A line is a quality block by its exact key and value: a speed record
// whose key is "KIND" or "Kind" stays a speed record.
func TestQualityByExactKind(t *testing.T) {
	for line, want := range map[string]bool{
		`{"kind":"quality","quality":{}}`:      true,
		`{"KIND":"quality","avg_ts":5}`:        false,
		`{"Kind":"quality","avg_ts":5}`:        false,
		`{"kind":"Quality","avg_ts":5}`:        false,
		`{"kind":"qu\u0061lity"}`:              true,
		`{"kind":5,"x":"quality"}`:             false,
		`{"key":"m|p=0","test":"quality"}`:     false,
		`{"key":"m|p=0","model_id":"quality"}`: false,
	} {
		if got := isQuality([]byte(line)); got != want {
			t.Errorf("%s: %v", line, got)
		}
	}
}
