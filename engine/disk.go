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
	return fmt.Errorf("%s needs about %s on %s, which has %s free: free space there, write elsewhere (--out, or TOKBENCH_CACHE for --synth), or choose a smaller preset or type",
		what, size(need), dir, size(free))
}

// size is a byte count in the unit that shows it: 1.2 GiB, 3.4 MiB, 512 KiB.
func size(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
}
