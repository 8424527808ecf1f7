package scripts

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every Go file imports in at most two groups, the standard library's
// first, then the others (import "C" stands apart, as cgo needs).
func TestImportGroups(t *testing.T) {
	root, _ := filepath.Abs("..")
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == "third_party" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return fs.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		groups, lastLine, sawOther := 0, -10, false
		for _, im := range f.Imports {
			p := strings.Trim(im.Path.Value, `"`)
			if p == "C" {
				continue
			}
			line := fset.Position(im.Pos()).Line
			if line > lastLine+1 {
				groups++
			}
			lastLine = line
			std := !strings.Contains(strings.Split(p, "/")[0], ".")
			if std && sawOther {
				t.Errorf("%s: %s after a non-standard import", path, p)
			}
			sawOther = sawOther || !std
		}
		if groups > 2 {
			t.Errorf("%s: %d import groups, want the standard library's and one other", path, groups)
		}
		return nil
	})
}

// The imports run down the layers docs/development.md draws, never back
// up: each package imports only from its own layer or those below, and
// every package of the module is in one layer.
func TestLayers(t *testing.T) {
	root, _ := filepath.Abs("..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```layers\n")
	block, _, _ = strings.Cut(block, "```")
	if !ok || block == "" {
		t.Fatal("docs/development.md has no ```layers block")
	}
	level := map[string]int{} // package dir -> layer, the top 0
	var names []string
	for i, line := range strings.Split(strings.TrimSpace(block), "\n") {
		name, pkgs, _ := strings.Cut(line, ":")
		names = append(names, name)
		for _, p := range strings.Fields(pkgs) {
			if _, dup := level[p]; dup {
				t.Errorf("%s is in two layers", p)
			}
			level[p] = i
		}
	}
	const module = "github.com/tokbench/tokbench/"
	seen := map[string]bool{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == "third_party" || d.Name() == "testdata" || d.Name() == "build" || strings.HasPrefix(d.Name(), ".")) {
			return fs.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		dir = filepath.ToSlash(dir)
		mine, ok := level[dir]
		if !seen[dir] && !ok {
			t.Errorf("package %s is in no layer of docs/development.md", dir)
		}
		seen[dir] = true
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		for _, im := range f.Imports {
			p, ok := strings.CutPrefix(strings.Trim(im.Path.Value, `"`), module)
			if !ok {
				continue
			}
			if theirs, known := level[p]; known && theirs < mine {
				t.Errorf("%s imports %s: the %s layer is above %s", path, p, names[theirs], names[mine])
			}
		}
		return nil
	})
	for p := range level {
		if !seen[p] {
			t.Errorf("docs/development.md names %s, which holds no Go package", p)
		}
	}
}
