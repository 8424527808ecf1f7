package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tokbench/tokbench/internal/safefile"
)

// fileSHA256 is the SHA-256 of a file's content, in hex.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// digestEntry is a model file's digest as the cache keeps it.
type digestEntry struct {
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
	SHA256  string    `json:"sha256"`
}

// isSHA256 says whether s is a SHA-256 as tokbench writes one: 64
// lowercase hexadecimal digits. A cached digest of another form is
// damaged and computed again.
func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ModelDigest is a model file's SHA-256: its identity in baselines, the
// same under any path or name. The cache folder (cacheDir; "" for none)
// keeps it by the file's path, size and modification time, so a model is
// read in full once, not on every run.
func ModelDigest(path, cacheDir string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	abs, _ := filepath.Abs(path)
	key := sha256.Sum256([]byte(abs))
	entry := filepath.Join(cacheDir, "digest", hex.EncodeToString(key[:12])+".json")
	want := digestEntry{Path: abs, Size: st.Size(), ModTime: st.ModTime().UTC()}
	if cacheDir != "" {
		var e digestEntry
		if b, err := os.ReadFile(entry); err == nil && json.Unmarshal(b, &e) == nil &&
			e.Path == want.Path && e.Size == want.Size && e.ModTime.Equal(want.ModTime) && isSHA256(e.SHA256) {
			return e.SHA256, nil
		}
	}
	if want.SHA256, err = fileSHA256(path); err != nil {
		return "", err
	}
	if cacheDir != "" {
		// A cache that cannot be written costs a re-read next time, not
		// the measurement.
		if os.MkdirAll(filepath.Dir(entry), 0o755) == nil {
			b, _ := json.Marshal(want)
			safefile.Write(entry, b, 0o644)
		}
	}
	return want.SHA256, nil
}
