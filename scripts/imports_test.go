package scripts

import (
	"go/parser"
	"go/token"
	"io/fs"
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
