package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/internal/quality"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

func qualityFixture() ([]record.Record, []record.Quality) {
	var recs []record.Record
	var blocks []record.Quality
	for i, m := range []struct {
		typ      string
		tg, kld  float64
		bpw      float64
		depth0tg float64
	}{{"f16", 50, 0, 16, 0}, {"q8_0", 90, 0.001, 8.5, 0}, {"q4_0", 80, 0.03, 4.5, 0}, {"q4_k_m", 120, 0.02, 4.9, 0}} {
		sha := "sha-" + m.typ
		for _, depth := range []int{1024, 0} {
			r := record.Record{Key: point.Key{Model: m.typ, NGen: 16, NDepth: depth}, ModelID: m.typ, Test: "tg16", Status: record.StatusOK}
			r.ModelSHA256, r.NGen, r.NDepth, r.NParallel, r.AvgTs = sha, 16, depth, 1, m.tg/float64(1+depth/1024)
			recs = append(recs, r)
		}
		q := record.Quality{Kind: record.QualityKind, ModelID: m.typ, BitsPerWeight: m.bpw, IsBase: i == 0, Text: "t", Ctx: 512, Chunks: 8, TopK: 64,
			Figures: quality.Figures{Tokens: 2040, KLD: quality.KLD{Mean: m.kld, Stderr: m.kld / 100}, Top1Pct: 100 - 1000*m.kld}}
		q.ModelSHA256, q.ModelFileType = sha, m.typ
		blocks = append(blocks, q)
	}
	return recs, blocks
}

func TestTradeoffs(t *testing.T) {
	recs, blocks := qualityFixture()
	ts := Tradeoffs(recs, blocks)
	if len(ts) != 4 {
		t.Fatalf("%d trade-offs", len(ts))
	}
	for _, tr := range ts {
		if tr.TG == nil || tr.TG.NDepth != 0 {
			t.Errorf("%s: tg record %+v, want the depth-0 one", tr.Q.ModelID, tr.TG)
		}
	}
	// q4_0 is slower than q4_k_m and diverges more: dominated; f16 (KLD 0)
	// and q8_0 are on the front.
	for i, want := range []bool{false, false, true, false} {
		if ts[i].Dominated != want {
			t.Errorf("%s dominated %v, want %v", ts[i].Q.ModelID, ts[i].Dominated, want)
		}
	}
	var b bytes.Buffer
	if err := WriteTradeoffs(&b, false, ts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dominated", "front", "120.00", "0.020000 ± 0.000200"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	cs := qualityCharts(ts)
	if len(cs) != 2 {
		t.Fatalf("%d charts, want the Pareto front and KLD by bpw", len(cs))
	}
	svg := cs[0].svg(true)
	if !strings.Contains(svg, "base f16 (KLD 0)") || strings.Count(svg, `fill="white" stroke=`) != 2 || !strings.Contains(svg, "q4_0") {
		t.Errorf("Pareto chart: base line, one hollow (dominated) point and its legend, labels:\n%s", svg)
	}
}
