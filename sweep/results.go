package sweep

import (
	"fmt"
	"os"

	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/internal/safefile"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// openResults opens path for a sweep's records. Without resume, an
// existing non-empty file is refused (its results would be mixed with new
// ones); with resume, its records are returned and a torn last line is
// cut off, but first records from other hardware or another llama.cpp
// build, or of another sweep (another spec hash, if specHash is set), are
// refused, the file left as it was.
func openResults(path string, resume bool, env plan.Env, specHash string) (*record.Writer, []record.Record, error) {
	if err := safefile.CheckOut(path, false); err != nil {
		return nil, nil, fmt.Errorf("--out: %w", err)
	}
	if st, err := os.Stat(path); err == nil && st.Size() > 0 && !resume {
		return nil, nil, point.Inputf("%s already holds results: pass --resume to continue that sweep, or choose another --out", path)
	}
	var old []record.Record
	w, err := record.CreateLocked(path, func() error {
		recs, intact, torn, err := record.Read(path)
		if err != nil {
			return err
		}
		if len(recs) > 0 {
			if want, got := recs[0].Fingerprint(), env.Fingerprint(); want != got {
				return point.Inputf("%s was measured on %q; this machine and build is %q: results of different hardware or llama.cpp builds must not mix, choose another --out", path, want, got)
			}
		}
		for _, r := range recs {
			if specHash != "" && r.SpecSHA256 != "" && r.SpecSHA256 != specHash {
				return point.Inputf("%s holds another sweep's results (its spec %.12s, this one %.12s: other flags, spec file or models): resume with the same ones, or choose another --out", path, r.SpecSHA256, specHash)
			}
		}
		if torn {
			if err := os.Truncate(path, intact); err != nil {
				return fmt.Errorf("cut the torn last line of %s: %w", path, err)
			}
		}
		old = recs
		return nil
	})
	return w, old, err
}
