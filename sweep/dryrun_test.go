package sweep

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/report"
)

// Both dry runs plan models not made yet from their shapes, in plain Go:
// a sweep's plan of points with memory and time, run's estimates of
// each test, and how shards would share a grid, each as report writes it.
func TestDryRunsPlanWithoutModels(t *testing.T) {
	dir := t.TempDir()
	s := DefaultSpec(2)
	s.Synth, s.Types = Strs("llama-8b", "tiny"), Strs("q4_k_m")
	s.Values["n_depth"] = []string{"0", "4096"}
	refs, points, dropped, err := s.Layout(dir, Shard{})
	if err != nil {
		t.Fatal(err)
	}
	env := plan.Env{Version: "test", CacheDir: dir}
	g, err := DryRun(point.Order(points), refs, dropped, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Points)+len(g.Skipped) != 8 || g.Total() <= 0 {
		t.Errorf("%d points, %d skipped, %s", len(g.Points), len(g.Skipped), g.Total())
	}
	// llama-8b q4_k_m: 8.03 G params at 4.85 bits, and an f16 KV cache of
	// 32 layers x 1024 (K and V of 8 heads x 128) x 2 B per token.
	var tg *point.Point
	for i, p := range points {
		if p.ModelID == "synth:llama-8b:q4_k_m" && p.NGen > 0 && p.NDepth == 4096 {
			tg = &points[i]
		}
	}
	m := g.Memory[tg.Key()]
	if w := float64(m.Weights) / 8.03e9 * 8; w < 4.8 || w > 4.9 {
		t.Errorf("weights %d bytes: %.2f bits per weight", m.Weights, w)
	}
	if want := int64(4352) * 32 * 2048 * 2; m.KV != want { // 4096+128 padded to 256
		t.Errorf("KV %d, want %d", m.KV, want)
	}
	var b bytes.Buffer
	if err := report.WriteGrid(&b, g); err != nil || !strings.Contains(b.String(), "synth:llama-8b:q4_k_m  tg128@d4096") ||
		!strings.Contains(b.String(), "6 points to measure (2 models, 2 contexts), 2 skipped") {
		t.Errorf("%v\n%s", err, b.String())
	}

	tests, _, err := s.Tests(refs)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Estimates(tests, refs, env)
	if err != nil || len(rows) != 8 {
		t.Fatalf("%d estimates: %v", len(rows), err)
	}
	for _, r := range rows {
		if r.Memory.Total() <= 0 || r.Roofline.BytesPerStep <= 0 || r.Roofline.FlopsPerStep <= 0 {
			t.Errorf("%s %s: %+v", r.Model, r.Test, r)
		}
	}
	b.Reset()
	if err := report.WriteEstimates(&b, "table", rows); err != nil || !strings.Contains(b.String(), "none known: run tokbench probe") {
		t.Errorf("%v\n%s", err, b.String())
	}
	b.Reset()
	var back []plan.TestEstimate
	if err := report.WriteEstimates(&b, "json", rows); err != nil || json.Unmarshal(b.Bytes(), &back) != nil || len(back) != 8 {
		t.Errorf("json: %v\n%s", err, b.String())
	}

	shares, err := Shares(points, refs, 2)
	if err != nil || len(shares) != 2 || shares[0].Points+shares[1].Points != 8 {
		t.Fatalf("%+v %v", shares, err)
	}
	b.Reset()
	if err := report.WritePartition(&b, shares); err != nil || !strings.Contains(b.String(), "8 points of 2 models in 2 shards") {
		t.Errorf("%v\n%s", err, b.String())
	}
}
