package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"

	"github.com/tokbench/tokbench/internal/infile"
	"github.com/tokbench/tokbench/internal/sqlite"
	"github.com/tokbench/tokbench/point"
)

// Read reads a results file: JSONL records as tokbench writes them (a
// torn last line is ignored and reported through torn, with the offset
// where the intact part ends; corruption anywhere else is an error naming
// the line), or any output of llama-bench's, old or current: a JSON array
// (-o json, which `tokbench run -o json` also writes), JSONL lines, CSV,
// SQL text, or a SQLite database it was loaded into (tokbench's own rows
// there read back whole).
func Read(path string) (recs []Record, intact int64, torn bool, err error) {
	var in interner
	// Records are gathered in chunks and copied once into a slice of the
	// right length: a slice grown record by record (1.4 KB each) would
	// copy them all at every growth.
	var chunks [][]Record
	count := 0
	intact, torn, err = Each(path, func(r *Record) error {
		in.record(r)
		if len(chunks) == 0 || len(chunks[len(chunks)-1]) == cap(chunks[len(chunks)-1]) {
			chunks = append(chunks, make([]Record, 0, 4096))
		}
		chunks[len(chunks)-1] = append(chunks[len(chunks)-1], *r)
		count++
		return nil
	})
	if err != nil {
		return nil, 0, false, err
	}
	if count > 0 {
		recs = make([]Record, 0, count)
	}
	for i, c := range chunks {
		recs = append(recs, c...)
		chunks[i] = nil
	}
	return recs, intact, torn, nil
}

// Each reads a results file as Read does, giving each record to each in
// the file's order, one at a time: JSONL (what tokbench and a fleet's
// shards write) in memory that does not grow with the file; llama-bench's
// other formats are read whole first. each may keep the record it is
// given, not the pointer; an error it returns ends the reading.
func Each(path string, each func(*Record) error) (intact int64, torn bool, err error) {
	return EachWith(path, nothing, ignoring(each))
}

// nothing and ignoring make EachWith (and eachFinalWith) Each: no work
// beside the decoding.
func nothing(*Record) struct{} { return struct{}{} }

func ignoring(each func(*Record) error) func(*Record, struct{}) error {
	return func(r *Record, _ struct{}) error { return each(r) }
}

// EachWith is Each with work done on each record beside its decoding, on
// every core (prep: what the record is keyed by, or how it is written),
// its result given to each with the record.
func EachWith[T any](path string, prep func(*Record) T, each func(*Record, T) error) (intact int64, torn bool, err error) {
	return eachWith(path, func(r *Record, _ []byte) T { return prep(r) }, each)
}

// eachWith is EachWith whose prep is given the record's line too where
// the line is a tokbench record as it stands (own: read again, it is the
// same record); nil where it is llama-bench's, or the file is not JSONL.
func eachWith[T any](path string, prep func(r *Record, own []byte) T, each func(*Record, T) error) (intact int64, torn bool, err error) {
	kind, err := sniff(path)
	if err != nil {
		return 0, false, err
	}
	var recs []Record
	switch kind {
	case kindCSV, kindSQL, kindSQLite:
		recs, err = readTable(path, kind)
	case kindArray:
		var data []byte
		if data, err = infile.ReadFile(path); err == nil {
			intact = int64(len(data))
			recs, err = readArray(path, bytes.TrimSpace(bytes.TrimPrefix(data, []byte(utf8BOM))))
		}
	default:
		return eachRecord(path, prep, each)
	}
	if err != nil {
		return 0, false, err
	}
	for i := range recs {
		if err := each(&recs[i], prep(&recs[i], nil)); err != nil {
			return 0, false, err
		}
	}
	return intact, false, nil
}

// decoded is a record decoded from its line, with prep's work on it.
type decoded[T any] struct {
	rec  Record
	prep T
}

// eachRecord is eachWith of a JSONL file.
func eachRecord[T any](path string, prep func(r *Record, own []byte) T, each func(*Record, T) error) (intact int64, torn bool, err error) {
	return eachLine(path, func(n int, text []byte) (d decoded[T], err error) {
		var own bool
		if d.rec, own, err = decodeLine(path, n, text); err == nil {
			if !own {
				text = nil
			}
			d.prep = prep(&d.rec, text)
		}
		return d, err
	}, func(d *decoded[T]) error { return each(&d.rec, d.prep) })
}

// EachLine reads a results file's records as lines: work is given each
// record's line (its number from 1 and its text, trimmed; quality blocks
// left out) on every core, and each its result in the file's order, as
// EachWith gives records: what reads a file's lines as they are, decoding
// only those it needs (DecodeLine). A file of llama-bench's other formats
// is read whole first, its records numbered from 1 and given as the lines
// tokbench writes of them.
func EachLine[T any](path string, work func(n int, text []byte) (T, error), each func(*T) error) (intact int64, torn bool, err error) {
	kind, err := sniff(path)
	if err != nil {
		return 0, false, err
	}
	if kind == kindLines {
		return eachLine(path, work, each)
	}
	n := 0
	return EachWith(path, nothing, func(r *Record, _ struct{}) error {
		n++
		line, err := EncodeLine(r)
		if err != nil {
			return fmt.Errorf("%s record %d: %w", path, n, err)
		}
		v, err := work(n, line[:len(line)-1])
		if err != nil {
			return err
		}
		return each(&v)
	})
}

// DecodeLine is line n of a JSONL results file's text as a record, as
// Each reads it; own says the line is a tokbench record as it stands
// (not llama-bench's, converted), so that reading it again gives the
// same record.
func DecodeLine(path string, n int, text []byte) (r Record, own bool, err error) {
	return decodeLine(path, n, text)
}

// eachLine is EachLine of a JSONL file. A record's JSON is most of a
// reader's time: lines are worked on on every core, in batches, and given
// to each in the file's order on the caller's goroutine; a few batches
// are in flight at once, whatever the file's size.
func eachLine[T any](path string, work func(n int, text []byte) (T, error), each func(*T) error) (intact int64, torn bool, err error) {
	sc, err := openLines(path)
	if err != nil {
		return 0, false, err
	}
	type item struct {
		l    line
		v    T
		skip bool // a quality block (ReadQuality reads it)
		err  error
	}
	type batch struct {
		items []item
		err   error // the file's, after the items
		done  chan struct{}
	}
	// A batch ends at 256 lines or 1 MiB: the bytes in flight are bounded
	// (a few batches a core), whatever the lines' size.
	const batchLines, batchBytes = 256, 1 << 20
	workers := runtime.GOMAXPROCS(0)
	queued, order, stop := make(chan *batch, workers), make(chan *batch, 2*workers), make(chan struct{})
	var end int64 // where the file's lines end: read once order is closed
	go func() {
		defer sc.close()
		defer close(order)
		defer close(queued)
		for {
			b := &batch{done: make(chan struct{})}
			for size := 0; len(b.items) < batchLines && size < batchBytes && b.err == nil; {
				l, ok, err := sc.next()
				if !ok {
					b.err = err
					break
				}
				l.text = bytes.Clone(l.text)
				size += len(l.text)
				b.items = append(b.items, item{l: l})
			}
			if len(b.items) == 0 && b.err == nil {
				end = sc.off
				return
			}
			select {
			case order <- b:
			case <-stop:
				return
			}
			select {
			case queued <- b:
			case <-stop:
				return
			}
			if b.err != nil {
				return
			}
		}
	}()
	for range workers {
		go func() {
			for b := range queued {
				for i := range b.items {
					it := &b.items[i]
					if it.skip = isQuality(it.l.text); !it.skip {
						it.v, it.err = work(it.l.n, it.l.text)
					}
				}
				close(b.done)
			}
		}()
	}
	defer close(stop)
	for b := range order {
		<-b.done
		for i := range b.items {
			it := &b.items[i]
			switch {
			case it.err != nil:
				return it.l.off, it.l.torn(), it.l.failed(path, "a JSON record", it.err)
			case !it.skip:
				if err := each(&it.v); err != nil {
					return it.l.off, false, err
				}
			}
		}
		if b.err != nil {
			return 0, false, b.err
		}
	}
	return end, false, nil
}

// decodeLine reads line n of a JSONL file: a tokbench record (own), or
// llama-bench's -o jsonl.
func decodeLine(path string, n int, line []byte) (r Record, own bool, err error) {
	own = true
	if err = json.Unmarshal(line, &r); err != nil || (r.Key == (point.Key{}) && r.Test == "") {
		// Not a tokbench record as it stands: llama-bench's -o jsonl
		// (no key, no test name, its own types), or a damaged line.
		lb, lerr := readObject(line)
		if lerr != nil {
			if err == nil {
				err = lerr
			}
			return r, false, fmt.Errorf("%s line %d is not a tokbench record, nor llama-bench's: %w", path, n, err)
		}
		r, own = lb, false
	}
	if err := r.checkRates(); err != nil {
		return r, own, fmt.Errorf("%s line %d: %w", path, n, err)
	}
	return r, own, nil
}

// MaxRate bounds a believable rate, tokens per second (a record's, a
// baseline's); maxCV the spread between processes (a fraction of the
// mean: beyond 1, a run was at no speed at all).
const (
	MaxRate = 1e12
	maxCV   = 1
)

// checkRates refuses a record whose figures no measurement gives (a
// hand-edited, corrupt or hostile file) before anything downstream
// computes with them: rates negative, huge or not finite, negative token
// counts, depths, threads or batches.
func (r *Record) checkRates() error {
	for _, v := range append([]float64{r.AvgTs, r.StddevTs, r.MedianTs}, r.SamplesTs...) {
		if !(v >= 0 && v <= MaxRate) { // NaN fails both
			return fmt.Errorf("%s: a rate of %g t/s: not a measurement (edited or corrupt?); remove the line", r.Test, v)
		}
	}
	// The spreads a comparison trusts: a claimed one beyond any a
	// measurement gives would make any change pass its gate.
	for _, f := range []struct {
		name   string
		v, top float64
	}{{"ci95_ts", r.CI95Ts, MaxRate}, {"ci95_reps_ts", r.CI95RepsTs, MaxRate},
		{"cv", r.CV, math.Sqrt(float64(max(len(r.SamplesTs), 1))) + 1e-9}, // the most n samples of t/s allow
		{"process_cv", r.ProcessCV, maxCV}} {
		if !(f.v >= 0 && f.v <= f.top) {
			return fmt.Errorf("%s: %s %g: not a spread any measurement gives (edited or corrupt?); remove the line", r.Test, f.name, f.v)
		}
	}
	p := r.Point()
	for _, s := range counts() {
		if v := s.Get(&p); strings.HasPrefix(v, "-") {
			return fmt.Errorf("%s: %s %s: not a setting anything measured with (edited or corrupt?); remove the line", r.Test, s.Field, v)
		}
	}
	return nil
}

// counts are the settings in records that count something (tokens,
// threads, sequences): none is negative.
var counts = sync.OnceValue(func() []*point.Setting {
	var out []*point.Setting
	for i := range point.Settings {
		if s := &point.Settings[i]; s.Field != "" && s.Ints && s.Min >= 0 {
			out = append(out, s)
		}
	}
	return out
})

// What a results file holds.
const (
	kindLines  = iota // JSONL: tokbench's, or llama-bench's -o jsonl
	kindArray         // a JSON array: -o json
	kindCSV           // llama-bench's -o csv (a header, then rows)
	kindSQL           // -o sql text
	kindSQLite        // a SQLite database
)

// sniff says what a file holds from its first bytes, never reading the
// whole of it: the lines of a large file are read one at a time.
func sniff(path string) (int, error) {
	f, err := infile.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	head := make([]byte, 64)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	kind, err := sniffHead(head[:n])
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return kind, nil
}

// IsLines says whether the file at path holds JSON lines (tokbench's, or
// llama-bench's -o jsonl): what can be read a record at a time as it goes.
func IsLines(path string) (bool, error) {
	kind, err := sniff(path)
	return kind == kindLines, err
}

// utf8BOM may begin a file saved by an editor on Windows: it is skipped.
const utf8BOM = "\xef\xbb\xbf"

// sniffHead is what a file beginning with head holds. UTF-16 and UTF-32
// text (a byte-order mark, or NULs between the characters) is refused:
// read as UTF-8 it would be nothing at all.
func sniffHead(head []byte) (int, error) {
	if bytes.HasPrefix(head, []byte(sqlite.Magic)) {
		return kindSQLite, nil
	}
	if bytes.HasPrefix(head, []byte("\xff\xfe")) || bytes.HasPrefix(head, []byte("\xfe\xff")) ||
		len(head) >= 4 && (head[1] == 0 && head[3] == 0 || head[0] == 0 && head[2] == 0) {
		return 0, fmt.Errorf("UTF-16 or UTF-32 text: tokbench reads UTF-8; convert it first (iconv -f UTF-16 -t UTF-8)")
	}
	t := bytes.TrimLeft(bytes.TrimPrefix(head, []byte(utf8BOM)), " \t\r\n")
	up := strings.ToUpper(string(t))
	switch {
	case bytes.HasPrefix(t, []byte("[")):
		return kindArray, nil
	case bytes.HasPrefix(t, []byte("build_commit,")):
		return kindCSV, nil
	case strings.HasPrefix(up, "CREATE TABLE"), strings.HasPrefix(up, "INSERT INTO"), strings.HasPrefix(up, "--"), strings.HasPrefix(up, "BEGIN"):
		return kindSQL, nil
	}
	return kindLines, nil
}

// kindNames say what a file of each kind is, for an error.
var kindNames = map[int]string{kindArray: "a JSON array (-o json)", kindCSV: "CSV (-o csv)", kindSQL: "SQL text (-o sql)", kindSQLite: "a SQLite database"}

// interner keeps one copy of the strings that every record of a file
// repeats (the host, build, model, types): a million records would
// otherwise hold a million copies of each.
type interner map[string]string

func (in *interner) str(s *string) {
	if *in == nil {
		*in = interner{}
	}
	if v, ok := (*in)[*s]; ok {
		*s = v
	} else if len(*in) < 1<<16 {
		(*in)[*s] = *s
	}
}

func (in *interner) record(r *Record) {
	for _, s := range []*string{&r.ModelID, &r.SpecSHA256, &r.Shard, &r.BuildCommit, &r.OllamaVersion, &r.Tool, &r.CPUInfo, &r.GPUInfo,
		&r.Backends, &r.Backend, &r.CPUFeatures, &r.HostName, &r.ModelFile, &r.ModelType, &r.ModelFileType, &r.ModelSHA256, &r.TypeK,
		&r.TypeV, &r.SplitMode, &r.Sampling, &r.TensorSplit, &r.TensorOverrides, &r.DeviceSelect, &r.CPUMask} {
		in.str(s)
	}
}
