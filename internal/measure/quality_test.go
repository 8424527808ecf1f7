package measure

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/internal/preset"
	"github.com/tokbench/tokbench/internal/quality"
	"github.com/tokbench/tokbench/record"
)

// qualityModels makes the tiny model in F32 and its quantizations, once.
func qualityModels(t *testing.T, types ...string) (string, []QualityModel) {
	t.Helper()
	dir := filepath.Join(filepath.Dir(tinyPath), "quality")
	os.MkdirAll(dir, 0o755)
	src := filepath.Join(dir, "tiny-f32.gguf")
	if _, err := os.Stat(src); err != nil {
		if err := engine.Synthesize(preset.Presets["tiny"], src, engine.SynthOptions{Type: "f32", Seed: 3}); err != nil {
			t.Fatal(err)
		}
	}
	models := []QualityModel{{ID: "f32", Path: src}}
	for _, typ := range types {
		out := filepath.Join(dir, "tiny-"+typ+".gguf")
		if _, err := os.Stat(out); err != nil {
			if err := engine.Quantize(src, out, typ, engine.QuantizeOptions{Threads: 2}); err != nil {
				t.Fatal(err)
			}
		}
		models = append(models, QualityModel{ID: typ, Path: out})
	}
	return src, models
}

func qualityOpts(t *testing.T) QualityOptions {
	return QualityOptions{Tokens: 2048, Ctx: 256, TopK: quality.DefaultTopK, Tail: 0.0001, Threads: 1, NGPULayers: 0, Seed: 5, CacheDir: t.TempDir()}
}

func evaluate(t *testing.T, models []QualityModel, o QualityOptions) []record.Quality {
	t.Helper()
	var out []record.Quality
	if err := Quality(context.Background(), models, o, DescribeEnv("test"), func(q record.Quality) error {
		out = append(out, q)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// The acceptance test: quantizing the tiny model's F32 weights further
// costs more, in order, and the base against itself (a copy, loaded and
// evaluated again) costs nothing.
func TestQualityOrdering(t *testing.T) {
	types := []string{"q8_0", "q6_k", "q4_k_m", "q3_k_m", "q2_k"}
	src, models := qualityModels(t, types...)
	cp := filepath.Join(t.TempDir(), "copy.gguf")
	data, _ := os.ReadFile(src)
	os.WriteFile(cp, data, 0o644)
	models = append(models[:1], append([]QualityModel{{ID: "copy", Path: cp}}, models[1:]...)...)
	blocks := evaluate(t, models, qualityOpts(t))
	if len(blocks) != len(models) {
		t.Fatalf("%d blocks for %d models", len(blocks), len(models))
	}
	for _, q := range blocks[:2] {
		if f := q.Figures; f.KLD.Mean != 0 || f.KLD.Max != 0 || f.Top1Pct != 100 || f.LnPPLRatio != 0 {
			t.Errorf("%s against itself: KLD %g (max %g), top-1 %g%%, ln PPL ratio %g; want 0, 0, 100, 0", q.ModelID, f.KLD.Mean, f.KLD.Max, f.Top1Pct, f.LnPPLRatio)
		}
	}
	for i := 2; i < len(blocks); i++ {
		a, b := blocks[i-1].Figures, blocks[i].Figures
		t.Logf("%s: KLD %.6f ± %.6f, top-1 %.2f%%, %.2f bpw", blocks[i].ModelID, b.KLD.Mean, b.KLD.Stderr, b.Top1Pct, blocks[i].BitsPerWeight)
		if !(b.KLD.Mean > a.KLD.Mean) || !(b.Top1Pct < a.Top1Pct) {
			t.Errorf("%s: KLD %g, top-1 %g%% after %s's %g, %g%%: want more divergence and less agreement", blocks[i].ModelID, b.KLD.Mean, b.Top1Pct, blocks[i-1].ModelID, a.KLD.Mean, a.Top1Pct)
		}
	}
	q := blocks[len(blocks)-1]
	if q.Figures.Tokens != 8*127 || !q.Synthetic || q.Text != "random tokens (seed 5)" || q.ModelFileType != "q2_k" || q.BaseFileType != "f32" || q.ModelSHA256 == "" {
		t.Errorf("block: %d tokens, synthetic %v, text %q, type %s, base %s", q.Figures.Tokens, q.Synthetic, q.Text, q.ModelFileType, q.BaseFileType)
	}
	if !strings.Contains(q.Note, "perplexity means nothing") || q.DecodeShare <= 0 || q.DecodeShare > 1 {
		t.Errorf("note %q, decode share %v", q.Note, q.DecodeShare)
	}
}

// The compact cache's KLD against the full distributions' (every token
// kept, no tail): never above it, and below it by no more than the tail's
// share, as the cache's documentation states.
func TestQualityCompactAgreesWithFull(t *testing.T) {
	_, models := qualityModels(t, "q8_0", "q4_k_m", "q2_k")
	full := qualityOpts(t)
	full.TopK, full.Tail = 1024, 0
	exact := evaluate(t, models, full)
	for _, tc := range []struct {
		k    int
		tail float64
	}{{quality.DefaultTopK, 0.0001}, {64, 0.0001}} {
		o := qualityOpts(t)
		o.TopK, o.Tail = tc.k, tc.tail
		compact := evaluate(t, models, o)
		for i := 1; i < len(models); i++ {
			e, c := exact[i].Figures, compact[i].Figures
			gap := (e.KLD.Mean - c.KLD.Mean) / e.KLD.Mean
			t.Logf("top %d: %s KLD %.7f full %.7f: low by %.4f%%, tail %.4f%%", tc.k, models[i].ID, c.KLD.Mean, e.KLD.Mean, 100*gap, 100*c.TailMass)
			if exact[i].Figures.TailMass != 0 {
				t.Errorf("the full evaluation left %g in a tail", exact[i].Figures.TailMass)
			}
			if gap < -1e-9 || gap > c.TailMass*1.5+1e-9 {
				t.Errorf("top %d: %s KLD %g against %g in full: want lower by at most about the tail %g", tc.k, models[i].ID, c.KLD.Mean, e.KLD.Mean, c.TailMass)
			}
			if c.Top1Pct != e.Top1Pct {
				t.Errorf("top-1 %g%% through the cache, %g%% in full", c.Top1Pct, e.Top1Pct)
			}
		}
		if bounded := compact[1].Figures.Bounded(); bounded != (tc.k == 64) || bounded != strings.Contains(compact[1].Note, "lower bound") {
			t.Errorf("top %d: bounded %v, note %q", tc.k, bounded, compact[1].Note)
		}
	}
}

func TestQualityCacheAndText(t *testing.T) {
	_, models := qualityModels(t, "q4_k_m")
	o := qualityOpts(t)
	first := evaluate(t, models, o)
	again := evaluate(t, models, o)
	if !strings.Contains(again[0].Note, "from the cache") || strings.Contains(first[0].Note, "from the cache") {
		t.Errorf("base notes %q then %q: want the second from the cache", first[0].Note, again[0].Note)
	}
	if first[1].Figures != again[1].Figures || first[0].Figures != again[0].Figures {
		t.Errorf("figures through the cache differ: %+v against %+v", again[1].Figures, first[1].Figures)
	}
	if m, _ := filepath.Glob(filepath.Join(o.CacheDir, "quality", "*.tbq")); len(m) != 1 {
		t.Errorf("%d cache files, want 1", len(m))
	}
	// A text file goes through the model's own tokenizer (byte pieces for
	// the synthetic vocabulary) instead of random tokens.
	text := filepath.Join(t.TempDir(), "text.txt")
	os.WriteFile(text, []byte(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 60)), 0o644)
	o.Text, o.Tokens, o.Ctx = text, 1024, 128
	tb := evaluate(t, models, o)
	if tb[1].Text != text || tb[1].Figures.Tokens == 0 || tb[1].Figures.KLD.Mean <= 0 {
		t.Errorf("text block: %q, %d tokens, KLD %g", tb[1].Text, tb[1].Figures.Tokens, tb[1].Figures.KLD.Mean)
	}
}

func TestQualityRefusesMismatches(t *testing.T) {
	src, models := qualityModels(t, "q8_0")
	dir := t.TempDir()
	make := func(name string, edit func(*preset.Shape)) string {
		s := preset.Presets["tiny"]
		edit(&s)
		p := filepath.Join(dir, name)
		if err := engine.Synthesize(s, p, engine.SynthOptions{Type: "q8_0", Seed: 3}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	short := filepath.Join(dir, "short.txt")
	os.WriteFile(short, []byte("too short"), 0o644)
	for _, c := range []struct {
		name   string
		models []QualityModel
		edit   func(*QualityOptions)
		want   string
	}{
		{"vocabulary", []QualityModel{models[0], {ID: "v", Path: make("v.gguf", func(s *preset.Shape) { s.NVocab = 1000 })}}, nil, "another vocabulary"},
		{"shape", []QualityModel{models[0], {ID: "l", Path: make("l.gguf", func(s *preset.Shape) { s.NLayer = 3 })}}, nil, "not the shape of the base"},
		{"dense and mixture", []QualityModel{models[0], {ID: "x", Path: make("x.gguf", func(s *preset.Shape) { *s = preset.Presets["tiny-moe"]; s.NFF = 768 })}}, nil,
			"(2 layers, embedding 256, feed-forward 768, 4 heads, 8 experts (2 used)) is not the shape of the base"},
		{"short text", models, func(o *QualityOptions) { o.Text = short }, "one chunk of --ctx needs 256"},
		{"missing text", models, func(o *QualityOptions) { o.Text = filepath.Join(dir, "none.txt") }, "--text"},
		{"tokens", models, func(o *QualityOptions) { o.Tokens = 100 }, "less than one chunk"},
		{"no models", nil, nil, "no models"},
	} {
		o := qualityOpts(t)
		if c.edit != nil {
			c.edit(&o)
		}
		evaluated := 0
		err := Quality(context.Background(), c.models, o, DescribeEnv("test"), func(record.Quality) error { evaluated++; return nil })
		if err == nil || !strings.Contains(err.Error(), c.want) || evaluated != 0 {
			t.Errorf("%s: %v after %d blocks; want %q before any evaluation", c.name, err, evaluated, c.want)
		}
	}
	_ = src
}

// A long text is tokenized piece by piece and only as far as the tokens
// needed: a megabyte gives its first tokens in well under a second (one
// call took minutes), the pieces give what one call gives but for a few
// tokens at each cut, and a canceled context stops it.
func TestTokenizeUpTo(t *testing.T) {
	vocab, err := engine.LoadVocab(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	defer vocab.Close()
	line := "the quick brown fox jumps over the lazy dog, and then some more words follow here.\n"
	text := strings.Repeat(line, (1<<20)/len(line))
	start := time.Now()
	toks, err := tokenizeUpTo(context.Background(), vocab, text, 4096)
	if took := time.Since(start); err != nil || len(toks) < 4096 || len(toks) > 4096+2*tokenPiece || took > 5*time.Second {
		t.Errorf("1 MiB for 4096 tokens: %d tokens in %s, %v", len(toks), took, err)
	}
	short := text[:3*tokenPiece+100]
	whole, _ := vocab.Tokenize(short)
	pieces, err := tokenizeUpTo(context.Background(), vocab, short, 1<<30)
	if err != nil || len(pieces) < len(whole)-16 || len(pieces) > len(whole)+16 { // 3 cuts
		t.Errorf("pieces gave %d tokens, one call %d (%v)", len(pieces), len(whole), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tokenizeUpTo(ctx, vocab, text, 1<<30); err == nil {
		t.Error("a canceled context did not stop it")
	}
}
