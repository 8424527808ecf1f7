package report

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestZZProf(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	if err := SQLiteFile(context.Background(), io.Discard, "/tmp/f1e5.jsonl", filepath.Join(t.TempDir(), "db.sqlite")); err != nil {
		t.Fatal(err)
	}
}
