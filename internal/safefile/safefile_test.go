package safefile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	if err := os.WriteFile(path, []byte("old content"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "new" {
		t.Fatalf("read %q, %v", b, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestWriteIntoMissingFolderFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "f")
	if err := Write(path, []byte("x"), 0o644); err == nil {
		t.Fatal("no error")
	}
}

// A file written through Create appears whole at Commit; one closed
// before leaves the old content, and a link planted at the path is
// replaced, never written through.
func TestCreateCommitOrLeave(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	os.WriteFile(path, []byte("old"), 0o644)
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("half")
	f.Close()
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("aborted write left %q", b)
	}
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("precious"), 0o644)
	link := filepath.Join(dir, "rep-1.svg")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("svg"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("written through the link: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestNotAnInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	os.WriteFile(in, []byte("{}\n"), 0o644)
	link := filepath.Join(dir, "link.csv")
	os.Symlink(in, link)
	for _, out := range []string{in, link, filepath.Join(dir, ".", "r.jsonl")} {
		if err := NotAnInput(out, in); err == nil {
			t.Errorf("%s accepted as the output of its own input", out)
		}
	}
	if err := NotAnInput(filepath.Join(dir, "new.csv"), in); err != nil {
		t.Error(err)
	}
}
