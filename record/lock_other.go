//go:build !unix

package record

import "os"

// lock is a no-op where there is no flock: two writers are not detected.
func lock(*os.File) (bool, error) { return true, nil }
