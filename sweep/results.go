package sweep

import (
	"fmt"
	"os"

	"github.com/tokbench/tokbench/measure"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// OpenResults opens path for a sweep's records. Without resume, an
// existing non-empty file is refused (its results would be mixed with new
// ones); with resume, its records are returned, a torn last line is cut
// off, and records from other hardware or another llama.cpp build are
// refused.
func OpenResults(path string, resume bool, env measure.Env) (*record.Writer, []record.Record, error) {
	if st, err := os.Stat(path); err == nil && st.Size() > 0 && !resume {
		return nil, nil, point.Inputf("%s already holds results: pass --resume to continue that sweep, or choose another --out", path)
	}
	var old []record.Record
	w, err := record.CreateLocked(path, func() error {
		recs, intact, torn, err := record.Read(path)
		if err != nil {
			return err
		}
		if torn {
			if err := os.Truncate(path, intact); err != nil {
				return fmt.Errorf("cut the torn last line of %s: %w", path, err)
			}
		}
		if len(recs) > 0 {
			if want, got := recs[0].Fingerprint(), env.Fingerprint(); want != got {
				return point.Inputf("%s was measured on %q; this machine and build is %q: results of different hardware or llama.cpp builds must not mix, choose another --out", path, want, got)
			}
		}
		old = recs
		return nil
	})
	return w, old, err
}
