package quality

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// A row read back that cannot be the base's (a log-probability above 0,
// a token outside the vocabulary, NaN) is an error naming the cache and
// what to do, never a KLD of 1e24.
func TestDamagedRowsRefused(t *testing.T) {
	dir := t.TempDir()
	key := Key{Version: cacheVersion, K: 2, Vocab: 10}
	for name, row := range map[string]struct {
		ids  []int32
		logp []float32
		next float32
	}{
		"positive": {[]int32{1, 2}, []float32{50, -1}, -1},
		"vocab":    {[]int32{1, 12}, []float32{-0.1, -3}, -1},
		"nan next": {[]int32{1, 2}, []float32{-0.1, -3}, float32(math.NaN())},
	} {
		path := filepath.Join(dir, name+".tbq")
		cw, err := CreateCache(path, key)
		if err != nil {
			t.Fatal(err)
		}
		cw.Write([]int32{2}, row.ids, row.logp, []float64{0.01}, []float32{row.next})
		if err := cw.Commit(); err != nil {
			t.Fatal(err)
		}
		cr, err := OpenCache(path, key)
		if err != nil {
			t.Fatal(err)
		}
		err = cr.Read(make([]int32, 1), make([]int32, 2), make([]float32, 2), make([]float64, 1), make([]float32, 1))
		cr.Close()
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "remove it") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
