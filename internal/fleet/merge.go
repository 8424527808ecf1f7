// Package fleet is one sweep spread over many machines: merging the
// shards' results files into one answer (each point once, what is missing
// and who owed it), and the job files that run the shards on the engines
// clusters already have (a Slurm job array, a Kubernetes Indexed Job).
package fleet

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// Input is one results file read.
type Input struct {
	Path    string
	Records []record.Record
	Quality []record.Quality
	Torn    bool // its torn last line was ignored
}

// Read reads a results file for merging.
func Read(path string) (Input, error) {
	recs, _, torn, err := record.Read(path)
	if err != nil {
		return Input{}, err
	}
	qs, err := record.ReadQuality(path)
	return Input{Path: path, Records: recs, Quality: qs, Torn: torn}, err
}

// Duplicate is a point found twice: the record kept and the one dropped.
type Duplicate struct {
	Point      string
	Kept, Drop string // the files
}

// Merged is the fleet's one answer.
type Merged struct {
	Records    []record.Record
	Quality    []record.Quality
	Duplicates []Duplicate
	SpecHash   string
	Classes    []string
}

// identity is a record's point in a fleet: its hardware class (a fleet
// of several classes measures each point once per class), its key, its
// round and its build (and, for llama-bench's records, its time).
func identity(r *record.Record) string {
	id := fmt.Sprintf("%s|%s|round=%d|build=%s", r.Class(), r.Key, r.Round, r.BuildID())
	// llama-bench appends every run of a test: another time is another
	// measurement, not a copy (a requeued shard of tokbench's measures
	// its point again, and that one is a duplicate).
	if !strings.HasPrefix(r.Tool, "tokbench") {
		id += "|time=" + r.TestTime.String()
	}
	return id
}

// rank orders the records of one point: a measurement before a failure
// before a skip.
func rank(s record.Status) int {
	switch s {
	case record.StatusOK:
		return 0
	case record.StatusFailed:
		return 1
	}
	return 2
}

// Merge joins results files: each point once per class (a point measured
// by two shards, or twice around a requeue, is kept once: the complete
// record, else the first), in the order first seen. Files of different
// sweeps (spec hashes) are refused.
func Merge(inputs []Input) (*Merged, error) {
	m := &Merged{}
	hashes := map[string][]string{}
	at := map[string]int{}
	from := map[string]string{}
	classes := map[string]bool{}
	var blocks []record.Quality
	total := 0
	for _, in := range inputs {
		total += len(in.Records)
	}
	// Sized once: records are large, and a slice grown one by one copies
	// them all at each growth.
	m.Records = make([]record.Record, 0, total)
	for _, in := range inputs {
		for _, r := range in.Records {
			if r.SpecSHA256 != "" && !slices.Contains(hashes[r.SpecSHA256], in.Path) {
				hashes[r.SpecSHA256] = append(hashes[r.SpecSHA256], in.Path)
			}
			id := identity(&r)
			i, seen := at[id]
			if !seen {
				at[id], from[id] = len(m.Records), in.Path
				m.Records = append(m.Records, r)
				if !classes[r.Class()] {
					classes[r.Class()] = true
					m.Classes = append(m.Classes, r.Class())
				}
				continue
			}
			if rank(r.Status) < rank(m.Records[i].Status) {
				m.Duplicates = append(m.Duplicates, Duplicate{id, in.Path, from[id]})
				m.Records[i], from[id] = r, in.Path
			} else {
				m.Duplicates = append(m.Duplicates, Duplicate{id, from[id], in.Path})
			}
		}
		blocks = append(blocks, in.Quality...)
	}
	if len(hashes) > 1 {
		var parts []string
		for h, files := range hashes {
			parts = append(parts, fmt.Sprintf("%s… in %s", h[:12], strings.Join(files, ", ")))
		}
		slices.Sort(parts)
		return nil, point.Inputf("the files come from different sweeps (spec hashes %s): a shard started with another spec or other flags than its siblings must be run again with the same ones", strings.Join(parts, "; "))
	}
	for h := range hashes {
		m.SpecHash = h
	}
	m.Quality = record.Latest(blocks)
	return m, nil
}

// Owed is a point the spec asks for and the shard that owes it.
type Owed struct {
	Key   point.Key
	Shard string // "I/N", or "" when the files do not say how the sweep was sharded
}

// Missing is a point a class has no measurement of.
type Missing struct {
	Class  string
	Owed   Owed
	Status record.Status // failed or skipped when recorded so; "" when absent
	Reason string
}

// Check lists, for each class the merged records hold (or "" when they
// hold none), the points of want that it has no measurement of.
func (m *Merged) Check(want func(class string) ([]Owed, error)) ([]Missing, error) {
	have := map[string]*record.Record{}
	for i := range m.Records {
		r := &m.Records[i]
		if r.Round == 0 {
			have[r.Class()+"|"+r.Key.String()] = r
		}
	}
	classes := m.Classes
	if len(classes) == 0 {
		classes = []string{""}
	}
	var out []Missing
	for _, class := range classes {
		owed, err := want(class)
		if err != nil {
			return nil, err
		}
		for _, o := range owed {
			r := have[class+"|"+o.Key.String()]
			switch {
			case r == nil:
				out = append(out, Missing{Class: class, Owed: o})
			case r.Status != record.StatusOK:
				out = append(out, Missing{Class: class, Owed: o, Status: r.Status, Reason: r.Reason})
			}
		}
	}
	return out, nil
}

// ShardCount is how many shards the records say the sweep had (0: not
// sharded, or not said).
func (m *Merged) ShardCount() int {
	for _, r := range m.Records {
		if _, n, ok := strings.Cut(r.Shard, "/"); ok {
			var c int
			fmt.Sscan(n, &c)
			return c
		}
	}
	return 0
}

// Threads is the thread count most of a class's records ran with (0 if
// none): a spec that leaves threads to each machine's default is laid out
// with it when checked.
func (m *Merged) Threads(class string) int {
	count := map[int]int{}
	best := 0
	for _, r := range m.Records {
		if r.Class() == class {
			count[r.NThreads]++
			if count[r.NThreads] > count[best] {
				best = r.NThreads
			}
		}
	}
	return best
}

// Write writes the merged records, then the quality blocks, to path
// through a temporary file renamed into place: merging into one of the
// inputs is safe, and a crash leaves the old file whole. A path that a
// writer (a sweep, load or capacity run) holds is refused: its later
// lines would go to the file replaced. The new file keeps the old one's
// permissions (0644 for a new one).
func (m *Merged) Write(path string) error {
	if err := record.Busy(path); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".merge-*")
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	w, err := record.Create(tmp.Name())
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	err = w.AppendEach(len(m.Records)+len(m.Quality), func(i int) any {
		if i < len(m.Records) {
			return &m.Records[i]
		}
		return &m.Quality[i-len(m.Records)]
	})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// SortMissing orders missing points by class, shard and key.
func SortMissing(ms []Missing) {
	slices.SortFunc(ms, func(a, b Missing) int {
		return cmp.Or(cmp.Compare(a.Class, b.Class), cmp.Compare(a.Owed.Shard, b.Owed.Shard), cmp.Compare(a.Owed.Key.String(), b.Owed.Key.String()))
	})
}
