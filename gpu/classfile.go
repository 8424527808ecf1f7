package gpu

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tokbench/tokbench/internal/safefile"
)

// ClassFile is where a hardware class's JSON file lives in dir: probes and
// baselines are kept one file per class.
func ClassFile(dir, class string) string { return filepath.Join(dir, class+".json") }

// SaveClass writes v as dir/CLASS.json, making dir; a temporary file
// renamed into place, so that a crash leaves the old file or the new one.
func SaveClass(dir, class string, v any) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", err
	}
	p := ClassFile(dir, class)
	if err := safefile.Write(p, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("%w: free space there, or give another folder", err)
	}
	return p, nil
}

// LoadClass reads dir/CLASS.json into v; found is false when there is no
// such file.
func LoadClass(dir, class string, v any) (found bool, err error) {
	b, err := os.ReadFile(ClassFile(dir, class))
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(b, v)
}
