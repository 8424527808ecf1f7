package quality

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTallyFigures(t *testing.T) {
	var tl Tally
	// 1000 rows: KLD i/1000, top tokens agree on 3 of 4, dp alternating
	// ±0.1, the model one nat less sure of each next token than the base.
	for i := range 1000 {
		tl.Add(float64(i)/1000, i%4 != 0, 0.1*float64(1-2*(i%2)), -3, -2, 0.001)
	}
	f := tl.Figures()
	if f.Tokens != 1000 || math.Abs(f.KLD.Mean-0.4995) > 1e-12 || f.KLD.Max != 0.999 {
		t.Errorf("tokens %d, KLD mean %v max %v", f.Tokens, f.KLD.Mean, f.KLD.Max)
	}
	if f.KLD.P99 != 0.989 || f.KLD.P90 != 0.899 || f.KLD.P999 != 0.998 {
		t.Errorf("KLD p90 %v p99 %v p99.9 %v, want nearest ranks 0.899 0.989 0.998", f.KLD.P90, f.KLD.P99, f.KLD.P999)
	}
	// Standard error of a uniform 0..0.999 grid: sd 0.2888 / sqrt(1000).
	if math.Abs(f.KLD.Stderr-0.28883/math.Sqrt(1000)) > 1e-4 {
		t.Errorf("KLD stderr %v", f.KLD.Stderr)
	}
	if f.Top1Pct != 75 || math.Abs(f.Top1Stderr-100*math.Sqrt(0.75*0.25/1000)) > 1e-9 {
		t.Errorf("top-1 %v ± %v", f.Top1Pct, f.Top1Stderr)
	}
	if math.Abs(f.RMSDPPct-10) > 1e-9 {
		t.Errorf("RMS dp %v%%, want 10", f.RMSDPPct)
	}
	if math.Abs(f.PPL-math.Exp(3)) > 1e-9 || math.Abs(f.BasePPL-math.Exp(2)) > 1e-9 || math.Abs(f.LnPPLRatio-1) > 1e-12 || f.LnPPLStderr != 0 {
		t.Errorf("PPL %v base %v ln ratio %v ± %v", f.PPL, f.BasePPL, f.LnPPLRatio, f.LnPPLStderr)
	}
	if f.Bounded() || math.Abs(f.TailMass-0.001) > 1e-12 {
		t.Errorf("tail %v, bounded %v", f.TailMass, f.Bounded())
	}
	if (&Figures{TailMass: 0.2}).Bounded() != true {
		t.Error("a 20% tail is not flagged")
	}
}

func TestRegression(t *testing.T) {
	old := Figures{KLD: KLD{Mean: 0.010, Stderr: 0.0002}}
	for _, c := range []struct {
		mean, se float64
		want     bool
	}{
		{0.010, 0.0002, false},  // the same
		{0.0105, 0.0002, false}, // within 1.96 x sqrt(2) x 0.0002 = 0.00055
		{0.0106, 0.0002, true},
		{0.008, 0.0002, false}, // better is not a regression
		{0.0106, 0.001, false}, // a noisier new figure cannot show it
	} {
		got, d := Regression(old, Figures{KLD: KLD{Mean: c.mean, Stderr: c.se}})
		if got != c.want || math.Abs(d-(c.mean-0.010)) > 1e-15 {
			t.Errorf("KLD %v ± %v: regression %v (delta %v), want %v", c.mean, c.se, got, d, c.want)
		}
	}
}

func TestDominated(t *testing.T) {
	speed := []float64{100, 150, 140, 200, 150}
	kld := []float64{0.001, 0.01, 0.02, 0.3, 0.01}
	// 140 t/s at 0.02 is beaten by 150 t/s at 0.01; two equal points do
	// not dominate each other.
	want := []bool{false, false, true, false, false}
	if got := Dominated(speed, kld); !slices.Equal(got, want) {
		t.Errorf("dominated %v, want %v", got, want)
	}
}

func TestChunks(t *testing.T) {
	toks := make([]int32, 100)
	for i := range toks {
		toks[i] = int32(i + 10)
	}
	cs, err := Chunks(toks, 32, 0, 1)
	if err != nil || len(cs) != 3 {
		t.Fatalf("%d chunks, %v; want 3", len(cs), err)
	}
	if cs[1][0] != 1 || cs[1][1] != 43 || len(cs[2]) != 32 {
		t.Errorf("chunk 1 starts %v, want BOS then token 43", cs[1][:2])
	}
	if cs, _ := Chunks(toks, 32, 64, -1); len(cs) != 2 || cs[0][0] != 10 {
		t.Errorf("limit 64 without BOS: %d chunks starting %d", len(cs), cs[0][0])
	}
	if _, err := Chunks(toks[:20], 32, 0, 1); err == nil || !strings.Contains(err.Error(), "gives 20 tokens but one chunk of --ctx needs 32") {
		t.Errorf("short text: %v", err)
	}
	if First(512) != 256 || Scored(512) != 255 {
		t.Errorf("first %d scored %d", First(512), Scored(512))
	}
}

func TestRandomTokens(t *testing.T) {
	a, b := RandomTokens(5000, 1024, 3, 7), RandomTokens(5000, 1024, 3, 7)
	if !slices.Equal(a, b) || slices.Equal(a, RandomTokens(5000, 1024, 3, 8)) {
		t.Error("the stream is not a function of its seed")
	}
	if slices.Min(a) < 3 || slices.Max(a) >= 1024 {
		t.Errorf("tokens %d..%d outside [3, 1024)", slices.Min(a), slices.Max(a))
	}
	if !strings.Contains(DefaultText, "tokbench") || len(DefaultText) < 20000 {
		t.Errorf("built-in text of %d bytes", len(DefaultText))
	}
}

func TestCacheRoundTrip(t *testing.T) {
	dir := t.TempDir()
	chunks := [][]int32{{1, 5, 6, 7}, {1, 8, 9, 10}}
	key := NewKey("abc", chunks, 3, 0.001, 1024)
	path := key.Path(dir)
	if _, err := OpenCache(path, key); !errors.Is(err, ErrNoCache) {
		t.Fatalf("absent cache: %v", err)
	}
	cw, err := CreateCache(path, key)
	if err != nil {
		t.Fatal(err)
	}
	n, ids, lps, tail, next := []int32{3, 1}, []int32{4, 5, 6, 7, 0, 0}, []float32{-0.1, -2, -3, -0.01, 0, 0}, []float64{0.02, 0.0001}, []float32{-1, -2}
	if err := cw.Write(n, ids, lps, tail, next); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("an unfinished cache is visible")
	}
	if err := cw.Commit(); err != nil {
		t.Fatal(err)
	}
	cr, err := OpenCache(path, key)
	if err != nil {
		t.Fatal(err)
	}
	gn, gids, glps, gtail, gnext := make([]int32, 2), make([]int32, 6), make([]float32, 6), make([]float64, 2), make([]float32, 2)
	if err := cr.Read(gn, gids, glps, gtail, gnext); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gn, n) || !slices.Equal(gids[:4], ids[:4]) || !slices.Equal(glps[:4], lps[:4]) || !slices.Equal(gtail, tail) || !slices.Equal(gnext, next) {
		t.Errorf("read back %v %v %v %v %v", gn, gids, glps, gtail, gnext)
	}
	if err := cr.Read(gn, gids, glps, gtail, gnext); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("reading past the end: %v", err)
	}
	cr.Close()
	// Other settings do not read this cache; another key has another path.
	other := NewKey("abc", chunks, 4, 0.001, 1024)
	if other.Path(dir) == path {
		t.Error("two keys share a path")
	}
	if _, err := OpenCache(path, other); !errors.Is(err, ErrNoCache) {
		t.Errorf("cache of other settings: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "junk.tbq"), []byte("not a cache"), 0o644)
	if _, err := OpenCache(filepath.Join(dir, "junk.tbq"), key); !errors.Is(err, ErrNoCache) {
		t.Errorf("junk file: %v", err)
	}
}
