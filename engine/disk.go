package engine

import (
	"fmt"
	"os"
	"path/filepath"
)

// checkDisk refuses to write about need bytes at path when the file
// system that would hold it has less free: a preset of tens of GB (and a
// mixture's F16 intermediate) would otherwise fill a disk and fail late.
// A file system whose free space cannot be read is left to the write.
func checkDisk(path string, need int64, what string) error {
	dir := filepath.Dir(path)
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	free, ok := freeBytes(dir)
	if !ok || need <= free {
		return nil
	}
	gib := func(b int64) float64 { return float64(b) / (1 << 30) }
	return fmt.Errorf("%s needs about %.1f GiB on %s, which has %.1f GiB free: free space there, write elsewhere (--out, or TOKBENCH_CACHE for --synth), or choose a smaller preset or type",
		what, gib(need), dir, gib(free))
}
