package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A test never reads or writes the user's cache: without TOKBENCH_CACHE,
// a test binary's cache folder is a temporary one of its own, not the
// user's (a kernel timing cached there on a busy day would decide the
// tests' verdicts for ever after).
func TestCacheDirOfTests(t *testing.T) {
	t.Setenv("TOKBENCH_CACHE", "")
	dir, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if user, err := os.UserCacheDir(); err == nil && strings.HasPrefix(dir, user) {
		t.Errorf("a test's cache folder %s is in the user's %s", dir, user)
	}
	if !strings.HasPrefix(dir, os.TempDir()) || !strings.Contains(filepath.Base(dir), "tokbench-test-cache") {
		t.Errorf("a test's cache folder %s", dir)
	}
	if again, _ := CacheDir(); again != dir {
		t.Errorf("one process, two folders: %s and %s", dir, again)
	}
	t.Setenv("TOKBENCH_CACHE", "/given")
	if d, _ := CacheDir(); d != "/given" {
		t.Errorf("TOKBENCH_CACHE ignored: %s", d)
	}
}
