package baseline

import "github.com/tokbench/tokbench/record"

// Ranges looks records up in the baselines of a folder, reading each
// hardware class's file once (a class without one has no ranges).
type Ranges struct {
	Dir   string
	files map[string]*File
}

// Of is the expected range of a record's t/s, if its class's baseline
// holds its point.
func (rg *Ranges) Of(r *record.Record) (lo, hi float64, ok bool) {
	class := r.Class()
	f, seen := rg.files[class]
	if !seen {
		f, _ = Load(rg.Dir, class)
		if rg.files == nil {
			rg.files = map[string]*File{}
		}
		rg.files[class] = f
	}
	if f == nil {
		return 0, 0, false
	}
	p := f.Points[identity(r)]
	if p == nil {
		return 0, 0, false
	}
	p.settle()
	return p.Low, p.High, true
}
