package engine

import (
	"math"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/point"
)

func TestEvalChunk(t *testing.T) {
	f16, q8, _ := tinyModels(t)
	open := func(path string) (*Model, *Context) {
		m, err := loadFile(path, allOnGPU)
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.NewContext(ContextOptions{Shape: point.Shape{NBatch: 24, NUBatch: 16, Threads: 1}, NCtx: 64, NSeqMax: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); m.Close() })
		return m, c
	}
	m, c := open(f16)
	toks, err := m.Tokenize("Tokens of a synthetic vocabulary: byte pieces, mostly.")
	if err != nil || len(toks) < 30 {
		t.Fatalf("tokenize: %d tokens, %v", len(toks), err)
	}
	chunk := append([]int32{int32(m.bos())}, toks[:63]...)
	// Pieces of 24 tokens: the scored rows span three llama_decode calls.
	base := NewRows(31, 8, 0, false)
	defer base.Free()
	if err := c.EvalChunk(chunk, 32, base); err != nil {
		t.Fatal(err)
	}
	for r := range 31 {
		lps := base.LogP[r*8 : r*8+8]
		mass := 0.0
		for j, lp := range lps {
			mass += math.Exp(float64(lp))
			if j > 0 && lp > lps[j-1] {
				t.Fatalf("row %d not most probable first: %v", r, lps)
			}
		}
		if base.N[r] != 8 || math.Abs(mass+base.Tail[r]-1) > 1e-5 || base.LogNext[r] > 0 {
			t.Fatalf("row %d: %d kept, mass %g + tail %g, next %g", r, base.N[r], mass, base.Tail[r], base.LogNext[r])
		}
	}
	if base.DecodeTime() <= 0 {
		t.Error("no decode time")
	}
	// Compared with itself: nothing. With its Q8_0: a little.
	for _, path := range []string{f16, q8} {
		_, c := open(path)
		cmp := NewRows(31, 8, 0, true)
		copy(cmp.N, base.N)
		copy(cmp.IDs, base.IDs)
		copy(cmp.LogP, base.LogP)
		copy(cmp.Tail, base.Tail)
		if err := c.EvalChunk(chunk, 32, cmp); err != nil {
			t.Fatal(err)
		}
		sum, same := 0.0, 0
		for r := range 31 {
			sum += cmp.KLD[r]
			same += int(cmp.Top[r])
		}
		if path == f16 && (sum != 0 || same != 31) || path == q8 && (sum <= 0 || sum > 0.1) {
			t.Errorf("%s: KLD sum %g, %d of 31 top tokens the same", path, sum, same)
		}
		cmp.Free()
	}
	for _, bad := range []struct {
		toks        []int32
		first, rows int
		want        string
	}{
		{chunk, 30, 31, "do not fill 31 rows"},
		{append(chunk[:63:63], 5000), 32, 31, "outside the vocabulary"},
		{make([]int32, 96), 64, 31, "exceeds the context"},
	} {
		rows := NewRows(bad.rows, 8, 0, false)
		if err := c.EvalChunk(bad.toks, bad.first, rows); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v", bad.want, err)
		}
		rows.Free()
	}
}
