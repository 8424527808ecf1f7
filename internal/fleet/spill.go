package fleet

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// entry is what a merge keeps of a record while it reads: a hashed
// identity, the record's place, and a small figure (its rank, or what
// its point's check says).
type entry struct {
	key pointID
	at  at
	v   int32
}

const entrySize = 16 + 4 + 4 + 4

func compareEntries(a, b entry) int {
	return cmp.Or(compareIDs(a.key, b.key), cmp.Compare(a.at.file, b.at.file), cmp.Compare(a.at.n, b.at.n))
}

// compareIDs orders hashed identities: any order serves, as long as it
// is one.
func compareIDs(a, b pointID) int {
	return cmp.Or(cmp.Compare(binary.LittleEndian.Uint64(a[:8]), binary.LittleEndian.Uint64(b[:8])),
		cmp.Compare(binary.LittleEndian.Uint64(a[8:]), binary.LittleEndian.Uint64(b[8:])))
}

// spill gathers entries too many to hold and gives them back grouped by
// key, each group in the order of places: runs of spillRun entries,
// each sorted and written to an unlinked temporary file, read back
// merged. A merge's memory does not grow with its records.
type spill struct {
	buf  []entry
	runs []*os.File
	err  error
}

// spillRun is how many entries are sorted in memory at once (about 2 MB;
// tests take fewer, to sort on disk).
var spillRun = 1 << 16

func (s *spill) add(e entry) {
	if s.err != nil {
		return
	}
	if s.buf == nil {
		s.buf = make([]entry, 0, spillRun)
	}
	s.buf = append(s.buf, e)
	if len(s.buf) == spillRun {
		s.err = s.flush()
	}
}

// flush writes the buffer, sorted, as a run.
func (s *spill) flush() error {
	slices.SortFunc(s.buf, compareEntries)
	f, err := os.CreateTemp("", "tokbench-merge-*")
	if err != nil {
		return fmt.Errorf("merge: a temporary file: %w", err)
	}
	os.Remove(f.Name()) // unlinked: gone with the process, whatever ends it
	s.runs = append(s.runs, f)
	w := bufio.NewWriterSize(f, 1<<16)
	var b [entrySize]byte
	for _, e := range s.buf {
		copy(b[:16], e.key[:])
		binary.LittleEndian.PutUint32(b[16:], uint32(e.at.file))
		binary.LittleEndian.PutUint32(b[20:], uint32(e.at.n))
		binary.LittleEndian.PutUint32(b[24:], uint32(e.v))
		w.Write(b[:])
	}
	s.buf = s.buf[:0]
	if err := w.Flush(); err != nil {
		return fmt.Errorf("merge: a temporary file: %w (free space in %s, or set TMPDIR)", err, os.TempDir())
	}
	return nil
}

// groups gives each key's entries, in order of keys and, within a key,
// of places. Entries that never left memory are not written.
func (s *spill) groups(fn func([]entry) error) error {
	if s.err != nil {
		return s.err
	}
	var next func() (entry, bool, error)
	if len(s.runs) == 0 {
		slices.SortFunc(s.buf, compareEntries)
		i := 0
		next = func() (entry, bool, error) {
			if i == len(s.buf) {
				return entry{}, false, nil
			}
			i++
			return s.buf[i-1], true, nil
		}
	} else {
		if len(s.buf) > 0 {
			if err := s.flush(); err != nil {
				return err
			}
		}
		m, err := newRunMerge(s.runs)
		if err != nil {
			return err
		}
		next = m.next
	}
	var group []entry
	for {
		e, ok, err := next()
		if err != nil {
			return err
		}
		if len(group) > 0 && (!ok || e.key != group[0].key) {
			if err := fn(group); err != nil {
				return err
			}
			group = group[:0]
		}
		if !ok {
			return nil
		}
		group = append(group, e)
	}
}

func (s *spill) close() {
	for _, f := range s.runs {
		f.Close()
	}
	s.runs, s.buf = nil, nil
}

// runMerge reads sorted runs back as one sorted stream.
type runMerge struct {
	heads []runHead
}

type runHead struct {
	r *bufio.Reader
	e entry
}

func newRunMerge(runs []*os.File) (*runMerge, error) {
	m := &runMerge{}
	for _, f := range runs {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("merge: a temporary file: %w", err)
		}
		h := runHead{r: bufio.NewReaderSize(f, 1<<15)}
		ok, err := h.read()
		if err != nil {
			return nil, err
		}
		if ok {
			m.heads = append(m.heads, h)
		}
	}
	heap.Init(m)
	return m, nil
}

func (h *runHead) read() (bool, error) {
	var b [entrySize]byte
	if _, err := io.ReadFull(h.r, b[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("merge: a temporary file: %w", err)
	}
	copy(h.e.key[:], b[:16])
	h.e.at = at{int32(binary.LittleEndian.Uint32(b[16:])), int32(binary.LittleEndian.Uint32(b[20:]))}
	h.e.v = int32(binary.LittleEndian.Uint32(b[24:]))
	return true, nil
}

func (m *runMerge) next() (entry, bool, error) {
	if len(m.heads) == 0 {
		return entry{}, false, nil
	}
	e := m.heads[0].e
	ok, err := m.heads[0].read()
	switch {
	case err != nil:
		return entry{}, false, err
	case ok:
		heap.Fix(m, 0)
	default:
		heap.Pop(m)
	}
	return e, true, nil
}

func (m *runMerge) Len() int           { return len(m.heads) }
func (m *runMerge) Less(i, j int) bool { return compareEntries(m.heads[i].e, m.heads[j].e) < 0 }
func (m *runMerge) Swap(i, j int)      { m.heads[i], m.heads[j] = m.heads[j], m.heads[i] }
func (m *runMerge) Push(x any)         { m.heads = append(m.heads, x.(runHead)) }
func (m *runMerge) Pop() any {
	h := m.heads[len(m.heads)-1]
	m.heads = m.heads[:len(m.heads)-1]
	return h
}
