package plan

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestModelDigest(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	// Any file's content names it: a few KB stand for a model.
	data := make([]byte, 8192)
	for i := range data {
		data[i] = byte(i * 7)
	}
	a, b := filepath.Join(dir, "a.gguf"), filepath.Join(dir, "renamed-copy.gguf")
	os.WriteFile(a, data, 0o644)
	os.WriteFile(b, data, 0o644)
	da, err := ModelDigest(a, cache)
	if err != nil || len(da) != 64 {
		t.Fatal(da, err)
	}
	if db, _ := ModelDigest(b, cache); db != da {
		t.Errorf("a copy under another name: %s, want %s", db, da)
	}
	// One byte of one tensor flipped: another model.
	data[len(data)-100] ^= 1
	os.WriteFile(b, data, 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(b, old, old)
	if db, _ := ModelDigest(b, cache); db == da {
		t.Error("a flipped byte kept the digest")
	}
	// The cache answers for an unchanged file without reading it: a
	// planted entry of a digest's form is believed, until the file
	// changes; one of any other form (a path, a short string) is
	// computed again.
	plant := func(sha string) {
		entries, _ := filepath.Glob(filepath.Join(cache, "digest", "*.json"))
		for _, e := range entries {
			var d digestEntry
			b, _ := os.ReadFile(e)
			json.Unmarshal(b, &d)
			if d.Path == mustAbs(a) {
				d.SHA256 = sha
				b, _ = json.Marshal(d)
				os.WriteFile(e, b, 0o644)
			}
		}
	}
	for _, bad := range []string{"abc", "../../x/evil0000", strings.Repeat("G", 64)} {
		plant(bad)
		if got, _ := ModelDigest(a, cache); got != da {
			t.Errorf("cached %q: digest %s", bad, got)
		}
	}
	planted := strings.Repeat("0", 64)
	plant(planted)
	if got, _ := ModelDigest(a, cache); got != planted {
		t.Errorf("cache not used: %s", got)
	}
	later := time.Now().Add(time.Minute)
	os.Chtimes(a, later, later)
	if got, _ := ModelDigest(a, cache); got != da {
		t.Errorf("a touched file kept its cached digest: %s", got)
	}
}

func mustAbs(p string) string {
	a, _ := filepath.Abs(p)
	return a
}
