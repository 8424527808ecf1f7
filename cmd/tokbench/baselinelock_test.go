package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/internal/safefile"
)

// Two baseline creates into one folder: the second is refused while the
// first holds it (here the test holds it, as a create reading its inputs
// does), and the folder's baselines are as they were.
func TestBaselineCreateOneWriter(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	os.WriteFile(in, []byte(someResults(t)), 0o644)
	bl := filepath.Join(dir, "baselines")
	if r := tokbench(t, "baseline", "create", in, "--dir", bl); r.code != 0 {
		t.Fatalf("create: %d %s", r.code, r.stderr)
	}
	before, _ := os.ReadDir(bl)
	release, err := safefile.LockDir(bl)
	if err != nil {
		t.Fatal(err)
	}
	r := tokbench(t, "baseline", "create", in, "--dir", bl)
	release()
	if r.code != 2 || !strings.Contains(r.stderr, "being written by another tokbench") {
		t.Errorf("a second writer: exit %d %s", r.code, r.stderr)
	}
	if after, _ := os.ReadDir(bl); len(after) != len(before) {
		t.Errorf("the folder changed: %v, was %v", after, before)
	}
	if r := tokbench(t, "baseline", "create", in, "--dir", bl); r.code != 0 {
		t.Errorf("after the first let go: %d %s", r.code, r.stderr)
	}
}
