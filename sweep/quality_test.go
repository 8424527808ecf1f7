package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/record"
)

func TestQualitySpec(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "s.yaml")
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	s, err := LoadSpec(write("models: [a.gguf]\nquality: {ctx: 256}\n"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if q := s.Quality; q == nil || q.Ctx != 256 || q.Tokens != 4096 || q.TopK != 4096 || q.CacheTail != 0.0001 {
		t.Errorf("quality %+v: want ctx 256 over the defaults", q)
	}
	if s, _ := LoadSpec(write("models: [a.gguf]\n"), 2); s.Quality != nil {
		t.Error("no quality key, yet quality is on")
	}
	for body, want := range map[string]string{
		"quality: {ctx: 256, tokenz: 5}\n": `no key "tokenz"`,
		"quality: {ctx: 4}\n":              "ctx 4 must be at least 16",
		"quality: {tokens: 100}\n":         "less than one chunk",
		"quality: {cache_tail: 2}\n":       "cache_tail",
	} {
		if _, err := LoadSpec(write("models: [a.gguf]\n"+body), 2); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

func TestQualityGroups(t *testing.T) {
	s := &Spec{Inputs: Inputs{QuantizeFrom: "src.gguf"}}
	models := []ModelRef{
		{ID: "a.gguf", Path: "a.gguf"}, {ID: "b.gguf", Path: "b.gguf"},
		{ID: "synth:tiny:f32", Path: "t32"}, {ID: "synth:tiny:q4_0", Path: "t4"}, {ID: "synth:mid:q8_0", Path: "m8"},
		{ID: "quant:src:q8_0", Path: "s8"}, {ID: "quant:src:q2_k", Path: "s2"},
	}
	gs := QualityGroups(s, models)
	var got []string
	for _, g := range gs {
		var ids []string
		for _, m := range g.Others {
			ids = append(ids, m.ID)
		}
		got = append(got, g.Base.ID+" <- "+strings.Join(ids, ","))
	}
	want := []string{"a.gguf <- b.gguf", "synth:tiny:f32 <- synth:tiny:q4_0", "synth:mid:q8_0 <- ", "src.gguf <- quant:src:q8_0,quant:src:q2_k"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("groups\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	q := DefaultQuality()
	g := gs[3]
	blocks := []record.Quality{{BaseFile: "src.gguf", Ctx: 512, TopK: 4096, CacheTail: q.CacheTail}}
	for _, p := range []string{"src.gguf", "s8"} {
		blocks[0].ModelFile = p
		if g.Done(blocks, q) {
			t.Errorf("done with %s alone", p)
		}
		blocks = append(blocks, blocks[0])
	}
	blocks[len(blocks)-1].ModelFile = "s2"
	if !g.Done(blocks, q) {
		t.Error("not done with every model's block")
	}
}
