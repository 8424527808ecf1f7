// Package fleet is one sweep spread over many machines: merging the
// shards' results files into one answer (each point once, what is missing
// and who owed it), and the job files that run the shards on the engines
// clusters already have (a Slurm job array, a Kubernetes Indexed Job).
package fleet

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tokbench/tokbench/internal/safefile"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// Duplicate is a point found twice: the record kept and the one dropped.
type Duplicate struct {
	Point      string
	Kept, Drop string // the files
}

// Merged is the fleet's one answer: what a first reading of its files
// chose (each point's record, by its place in the files), ready to be
// written by a second. What the first reading keeps of each record (its
// identity hashed, its place) is sorted on disk (spill), and so is what
// Check needs of each point; memory holds a bit a record: a
// fleet's 10^6 records are read one at a time, twice.
type Merged struct {
	Paths      []string
	Torn       []bool // each file's torn last line was ignored
	Records    int    // the records Write writes: one a point
	Quality    []record.Quality
	Duplicates []Duplicate
	SpecHash   string
	Classes    []string

	firsts   []bits    // by file and line: the first record of its point (where the merged file has it)
	own      []bits    // by file and line: a tokbench record as it stands (written as it is)
	sums     []uint64  // by file: its lines' sum (lineSum), to find a file changed between the readings
	chosenAt map[at]at // a point's first place, where its record kept is another (a requeued shard's)
	have     *spill    // Check's: round 0 points by class and key, each measured (-1) or why not (an index of why), sorted
	why      []Missing
	threads  map[string]map[int]int
	shards   int
}

// pointID is a record's identity, hashed: 16 bytes a point, where the
// text is a few hundred. The hash is seeded anew in each process, so a
// hostile file cannot make two points one (a collision among 10^6
// points has a chance of about 10^-27).
type pointID [16]byte

var idSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func hashID(s string) pointID {
	var id pointID
	binary.LittleEndian.PutUint64(id[:8], maphash.String(idSeeds[0], s))
	binary.LittleEndian.PutUint64(id[8:], maphash.String(idSeeds[1], s))
	return id
}

// at is a record's place: its file and its line there (record.EachLine).
type at struct{ file, n int32 }

// bits are a bit a line.
type bits []uint64

func (b bits) get(i int32) bool { return int(i>>6) < len(b) && b[i>>6]&(1<<(i&63)) != 0 }

func (b *bits) set(i int32) {
	for int(i>>6) >= len(*b) {
		*b = append(*b, 0)
	}
	(*b)[i>>6] |= 1 << (i & 63)
}

// identity is a record's point in a fleet: its hardware class (a fleet
// of several classes measures each point once per class), its key, its
// round and its build (and, for llama-bench's records, its time).
func identity(r *record.Record) string { return identityOf(r, r.Class(), r.Key.String()) }

// identityOf is identity with the record's class and key text given.
func identityOf(r *record.Record, class, key string) string {
	id := class + "|" + key + "|round=" + strconv.Itoa(r.Round) + "|build=" + r.BuildID()
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
func rank(s record.Status) int8 {
	switch s {
	case record.StatusOK:
		return 0
	case record.StatusFailed:
		return 1
	}
	return 2
}

// Merge reads results files to join them: each point once per class (a
// point measured by two shards, or twice around a requeue, is kept once:
// the complete record, else the first), in the order first seen. Files
// of different sweeps (spec hashes) are refused. Write writes the answer.
func Merge(paths []string) (*Merged, error) {
	m := &Merged{Paths: paths, chosenAt: map[at]at{}, threads: map[string]map[int]int{}}
	hashes := map[string][]string{}
	var blocks []record.Quality
	var ids, haves spill
	defer ids.close()
	defer haves.close()
	m.firsts, m.own, m.sums = make([]bits, len(paths)), make([]bits, len(paths)), make([]uint64, len(paths))
	for f, path := range paths {
		_, torn, err := record.EachLine(path, func(n int, text []byte) (read, error) {
			return identify(path, n, text)
		}, func(rd *read) error {
			m.sums[f] += rd.sum
			r := &rd.rec
			here := at{int32(f), int32(rd.n)}
			if rd.own {
				m.own[f].set(here.n)
			}
			if r.SpecSHA256 != "" && !slices.Contains(hashes[r.SpecSHA256], path) {
				hashes[r.SpecSHA256] = append(hashes[r.SpecSHA256], path)
			}
			m.note(r, rd.identified, here, &haves)
			ids.add(entry{rd.id, here, int32(rank(r.Status))})
			return nil
		})
		if err != nil {
			return nil, err
		}
		m.Torn = append(m.Torn, torn)
		qs, err := record.ReadQuality(path)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, qs...)
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
	dups, err := m.choose(&ids)
	if err != nil {
		return nil, err
	}
	if err := m.nameDuplicates(dups); err != nil {
		return nil, err
	}
	m.have = &spill{}
	err = haves.groups(func(g []entry) error {
		// Measured once measured; else the last reason it was not.
		state := g[len(g)-1].v
		if slices.ContainsFunc(g, func(e entry) bool { return e.v < 0 }) {
			state = -1
		}
		m.have.add(entry{key: g[0].key, v: state})
		return nil
	})
	return m, err
}

// Close removes what Merge keeps on disk for Check.
func (m *Merged) Close() {
	if m.have != nil {
		m.have.close()
	}
}

// dupAt is a duplicate found where the record at was read: the files
// of the record kept and of the one dropped then.
type dupAt struct {
	at         at
	kept, drop int32
}

// choose takes each point's record, as reading the records in order
// would: its first, replaced by a later one that ranks before it (a
// measurement before a failure before a skip); it marks each point's
// first place and says the duplicates where they were read.
func (m *Merged) choose(ids *spill) ([]dupAt, error) {
	var dups []dupAt
	err := ids.groups(func(g []entry) error {
		m.Records++
		first, kept := g[0].at, g[0]
		for _, e := range g[1:] {
			if e.v < kept.v {
				dups = append(dups, dupAt{e.at, e.at.file, kept.at.file})
				kept = e
			} else {
				dups = append(dups, dupAt{e.at, kept.at.file, e.at.file})
			}
		}
		m.firsts[first.file].set(first.n)
		if kept.at != first {
			m.chosenAt[first] = kept.at
		}
		return nil
	})
	slices.SortFunc(dups, func(a, b dupAt) int { return cmp.Or(cmp.Compare(a.at.file, b.at.file), cmp.Compare(a.at.n, b.at.n)) })
	return dups, err
}

// nameDuplicates names each duplicate's point, in the order they were
// read: a pass of its own over the files where they were read, decoding
// those lines only.
func (m *Merged) nameDuplicates(dups []dupAt) error {
	if len(dups) == 0 {
		return nil
	}
	lines := map[at]bool{} // read by every core: never written while they read
	names := map[at]string{}
	files := map[int32]bool{}
	for _, d := range dups {
		lines[d.at], files[d.at.file] = true, true
	}
	for f, path := range m.Paths {
		if !files[int32(f)] {
			continue
		}
		type named struct {
			at   at
			name string
		}
		if _, _, err := record.EachLine(path, func(n int, text []byte) (named, error) {
			here := at{int32(f), int32(n)}
			if !lines[here] {
				return named{}, nil
			}
			r, _, err := record.DecodeLine(path, n, text)
			return named{here, identity(&r)}, err
		}, func(nm *named) error {
			if nm.name != "" {
				names[nm.at] = nm.name
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for _, d := range dups {
		m.Duplicates = append(m.Duplicates, Duplicate{names[d.at], m.Paths[d.kept], m.Paths[d.drop]})
	}
	return nil
}

// identified is what a record is merged by: its identity, hashed, its
// class, and its point in that class, hashed.
type identified struct {
	class     string
	id, point pointID
}

// read is a record line as the first reading finds it, on every core
// (record.EachLine): the record, what it is merged by, and whether the
// line is a tokbench record as it stands, to be written again as it is
// (decoding it again was most of writing a merge).
type read struct {
	rec record.Record
	n   int
	identified
	own bool
	sum uint64 // lineSum
}

func identify(path string, n int, text []byte) (read, error) {
	r, own, err := record.DecodeLine(path, n, text)
	if err != nil {
		return read{}, err
	}
	class, key := r.Class(), r.Key.String()
	return read{rec: r, n: n, identified: identified{class: class, id: hashID(identityOf(&r, class, key)), point: hashID(class + "|" + key)}, own: own, sum: lineSum(n, text)}, nil
}

// lineSum is a line's share of its file's sum: the file's lines, each at
// its place, summed (in any order: the lines are read on every core). A
// file whose sum differs between the readings was changed in between.
func lineSum(n int, text []byte) uint64 {
	return maphash.Bytes(idSeeds[0], text) ^ uint64(n)*0x9e3779b97f4a7c15
}

// unchanged says, as an error, that the file read again is not the one
// read first: its lines would not be those the merge chose.
func (m *Merged) unchanged(f int, sum uint64) error {
	if sum != m.sums[f] {
		return point.Inputf("%s changed between merge's two readings (something wrote it meanwhile): nothing was written; merge again once nothing writes it", m.Paths[f])
	}
	return nil
}

// note keeps what Check, Threads and ShardCount need of a record: its
// class, its threads, the sweep's shard count, and whether its point was
// measured (to haves: resolved once all are read).
func (m *Merged) note(r *record.Record, p identified, here at, haves *spill) {
	if m.threads[p.class] == nil {
		m.threads[p.class] = map[int]int{}
		m.Classes = append(m.Classes, p.class)
	}
	m.threads[p.class][r.Threads]++
	if _, n, ok := strings.Cut(r.Shard, "/"); ok && m.shards == 0 {
		fmt.Sscan(n, &m.shards)
	}
	if r.Round == 0 {
		state := int32(-1)
		if r.Status != record.StatusOK {
			state = int32(len(m.why))
			m.why = append(m.why, Missing{Status: r.Status, Reason: r.Reason})
		}
		haves.add(entry{p.point, here, state})
	}
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
	classes := m.Classes
	if len(classes) == 0 {
		classes = []string{""}
	}
	// The owed points, hashed as Merge hashed the measured ones, are
	// joined with them in the order of their hashes.
	type owedAt struct {
		class string
		owed  Owed
		id    pointID
		found bool
		state int32 // found: measured (-1), or why not (an index of why)
	}
	var all []*owedAt
	for _, class := range classes {
		owed, err := want(class)
		if err != nil {
			return nil, err
		}
		for _, o := range owed {
			all = append(all, &owedAt{class: class, owed: o, id: hashID(class + "|" + o.Key.String())})
		}
	}
	byID := slices.Clone(all)
	slices.SortFunc(byID, func(a, b *owedAt) int { return compareIDs(a.id, b.id) })
	i := 0
	if m.have != nil {
		if err := m.have.groups(func(g []entry) error {
			for ; i < len(byID) && compareIDs(byID[i].id, g[0].key) < 0; i++ {
			}
			for j := i; j < len(byID) && byID[j].id == g[0].key; j++ {
				byID[j].found, byID[j].state = true, g[0].v
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	var out []Missing
	for _, o := range all {
		switch {
		case !o.found:
			out = append(out, Missing{Class: o.class, Owed: o.owed})
		case o.state >= 0:
			w := m.why[o.state]
			out = append(out, Missing{Class: o.class, Owed: o.owed, Status: w.Status, Reason: w.Reason})
		}
	}
	return out, nil
}

// ShardCount is how many shards the records say the sweep had (0: not
// sharded, or not said).
func (m *Merged) ShardCount() int { return m.shards }

// Threads is the thread count most of a class's records ran with (0 if
// none): a spec that leaves threads to each machine's default is laid out
// with it when checked.
func (m *Merged) Threads(class string) int {
	best := 0
	for t, n := range m.threads[class] {
		if c := m.threads[class][best]; n > c || (n == c && t < best) {
			best = t
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
	if err := safefile.CheckOut(path, false); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
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
	err = m.write(w)
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

// write reads the files again and writes each point's chosen record at
// the place the point was first seen, then the quality blocks. A record
// chosen over one seen earlier (a requeued shard's measurement of a point
// that failed) is read first, in a pass of its own: they are few.
func (m *Merged) write(w *record.Writer) error {
	// A point whose record was chosen over its first (a requeued shard's
	// measurement of a point that failed) gets that record at its first
	// place: read first, in a pass of its own (they are few).
	later := map[at]record.Line{}
	wanted := map[at]bool{} // read by every core: never written while they read
	for _, kept := range m.chosenAt {
		wanted[kept] = true
	}
	if len(wanted) > 0 {
		if err := m.each(func(here at) bool { return wanted[here] }, func(here at, line record.Line) error {
			later[here] = line
			return nil
		}); err != nil {
			return err
		}
	}
	return w.Stream(func(emit func(any) error) error {
		// (A record past those read first, written since, is not the
		// merge's.)
		err := m.each(func(here at) bool { return m.firsts[here.file].get(here.n) }, func(here at, line record.Line) error {
			if k, ok := m.chosenAt[here]; ok {
				line = later[k]
			}
			return emit(line)
		})
		for i := range m.Quality {
			if err == nil {
				err = emit(&m.Quality[i])
			}
		}
		return err
	})
}

// placed is a record read again to be written: its place and its line
// (nil: not wanted), and the line's lineSum.
type placed struct {
	at   at
	line record.Line
	sum  uint64
}

// each reads the files again, giving the place and line of each record
// want wants: a tokbench record's line as it is (as its writer wrote it:
// read again, it is the same record), llama-bench's converted (decoded
// and encoded, on every core).
func (m *Merged) each(want func(at) bool, fn func(at, record.Line) error) error {
	for f, path := range m.Paths {
		var sum uint64
		if _, _, err := record.EachLine(path, func(n int, text []byte) (placed, error) {
			here, s := at{int32(f), int32(n)}, lineSum(n, text)
			switch {
			case !want(here):
				return placed{sum: s}, nil
			case m.own[f].get(here.n):
				return placed{here, append(text, '\n'), s}, nil
			}
			r, _, err := record.DecodeLine(path, n, text)
			if err != nil {
				return placed{}, err
			}
			line, err := record.EncodeLine(&r)
			return placed{here, line, s}, err
		}, func(p *placed) error {
			sum += p.sum
			if p.line == nil {
				return nil
			}
			return fn(p.at, p.line)
		}); err != nil {
			return err
		}
		if err := m.unchanged(f, sum); err != nil {
			return err
		}
	}
	return nil
}
