package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/tokbench/tokbench/internal/safefile"
)

// A Writer appends JSON lines to a results file, fsyncing each call's
// lines: once Append returns, they survive a crash of the machine. Sweep
// records, load runs and capacity searches are all written with it.
type Writer struct {
	f    *os.File
	path string
	lock *os.File // held while writing (CreateLocked)
}

// Create opens path for appending, creating it if absent: a regular
// file only (safefile.CheckOut).
func Create(path string) (*Writer, error) {
	if err := safefile.CheckOut(path, false); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return create(path)
}

// create is Create of a path checked already.
func create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		// JSON lines go only into a file of JSON lines: appended to
		// another format, they would make it unreadable, or never be read.
		head := make([]byte, 64)
		n, _ := f.ReadAt(head, 0)
		kind, err := sniffHead(head[:n])
		if err == nil && kind != kindLines {
			err = fmt.Errorf("it is %s, not JSON lines", kindNames[kind])
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("results %s: %w: tokbench appends only to a JSONL file; give another --out (tokbench report %s -o jsonl --out NEW.jsonl converts it)", path, err, path)
		}
		// A last line without its newline (written by hand, or by
		// another tool) must not run into the first one appended.
		b := make([]byte, 1)
		if _, err := f.ReadAt(b, st.Size()-1); err == nil && b[0] != '\n' {
			f.Write([]byte{'\n'})
		}
	}
	return &Writer{f: f, path: path}, nil
}

// CreateLocked is Create for a file only this process may write: a sweep's
// results (two shards, or a shard and its requeued self, must never write
// one file), a load run's or a capacity search's. It takes the file's lock
// first, then runs prepare if not nil (reading and mending the file), then
// opens it for appending; another writer holding the lock is a clear
// error. Every command that writes or replaces a results file honours the
// lock (see Busy).
func CreateLocked(path string, prepare func() error) (*Writer, error) {
	if err := safefile.CheckOut(path, false); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	held, err := lock(f)
	if err == nil && !held {
		err = busyError(path)
	}
	if err == nil && prepare != nil {
		err = prepare()
	}
	var w *Writer
	if err == nil {
		w, err = create(path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	w.lock = f
	return w, nil
}

// Append writes each value as one line, then syncs.
func (w *Writer) Append(values ...any) error {
	if err := w.AppendNoSync(values...); err != nil {
		return err
	}
	return w.f.Sync()
}

// Stream writes the values write emits as JSON lines through a buffer,
// then syncs: a large file is never one buffer in memory, nor its values
// one slice.
func (w *Writer) Stream(write func(emit func(any) error) error) error {
	b := bufio.NewWriterSize(w.f, 1<<20)
	err := write(func(v any) error {
		line, err := jsonLine(v)
		if err != nil {
			return fmt.Errorf("results %s: %w", w.path, err)
		}
		_, err = b.Write(line)
		return err
	})
	if err != nil {
		return err
	}
	if err := b.Flush(); err != nil {
		return fmt.Errorf("%w: free space on its disk, or give another --out", err)
	}
	return w.f.Sync()
}

// Line is a JSON line encoded already (EncodeLine), written as it is.
type Line []byte

// EncodeLine is v as the line a Writer writes of it: encoded where it is
// read (on every core, EachWith), written in order.
func EncodeLine(v any) (Line, error) { return jsonLine(v) }

// jsonLine is v as one JSON line, as an Encoder writes it. A record is
// marshalled by its own MarshalJSON, whose output is compact already: an
// Encoder would scan and compact it again (a fifth of a merge's time).
func jsonLine(v any) ([]byte, error) {
	var b []byte
	var err error
	switch r := v.(type) {
	case Line:
		return r, nil
	case *Record:
		b, err = r.MarshalJSON()
	case Record:
		b, err = r.MarshalJSON()
	default:
		b, err = json.Marshal(v)
	}
	return append(b, '\n'), err
}

// AppendNoSync writes values as JSON lines without waiting for the disk:
// a killed process keeps them (the kernel has them), a machine that goes
// down may not; the next Append syncs them.
func (w *Writer) AppendNoSync(values ...any) error {
	var buf bytes.Buffer
	for _, v := range values {
		line, err := jsonLine(v)
		if err != nil {
			return fmt.Errorf("results %s: %w", w.path, err)
		}
		buf.Write(line)
	}
	if _, err := w.f.Write(buf.Bytes()); err != nil {
		// err names the file already.
		return fmt.Errorf("%w: free space on its disk, or give another --out (what was written before stays)", err)
	}
	return nil
}

func busyError(path string) error {
	return fmt.Errorf("%s is being written by another tokbench (a sweep, load or capacity run, another shard, or an earlier run of this one still going): give each run its own --out, or wait for the other to end", path)
}

// Busy says, with an error naming it, whether another process holds the
// writer's lock of the file at path (a missing file is not busy): a
// command that replaces or rewrites a results file (merge) must not do it
// under a writer, whose later lines would go to the replaced file.
func Busy(path string) error {
	// Opened without waiting (a FIFO with no writer would block the
	// open); only a regular file is a results file a writer can hold.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close() // lets go of the lock taken to test it
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	held, err := lock(f)
	if err == nil && !held {
		return busyError(path)
	}
	return nil
}

// Close closes the file (and lets go of its lock); a nil Writer is none.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	err := w.f.Close()
	if w.lock != nil {
		w.lock.Close()
	}
	return err
}

// Append appends values to the file at path, a line each, and syncs it.
func Append(path string, values ...any) error {
	w, err := Create(path)
	if err != nil {
		return err
	}
	err = w.Append(values...)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// Lines reads a JSONL file line by line, calling each with the line's
// number and bytes (blank lines skipped; a line each fails on that is not JSON is reported as such). A
// line that is not JSON is an error naming it, what the file should hold
// and the fault, unless it is a last line without its newline: a write
// cut short by a crash or a kill leaves such a torn line (a line is
// written whole, newline last), which is skipped and reported through
// torn, with the offset where the intact part ends. A complete last line
// that is not JSON is garbage, not torn: an error, never cut away. An
// error from each ends the read. each must not keep line: it is reused.
func Lines(path, what string, each func(n int, line []byte) error) (intact int64, torn bool, err error) {
	sc, err := openLines(path)
	if err != nil {
		return 0, false, err
	}
	defer sc.close()
	for {
		l, ok, err := sc.next()
		if err != nil || !ok {
			return sc.off, false, err
		}
		// A line is checked for JSON only when each fails on it: a valid
		// line is parsed once.
		if err := each(l.n, l.text); err != nil {
			return l.off, l.torn(), l.failed(path, what, err)
		}
	}
}

// lineScanner reads a file's lines, never more than one at a time.
type lineScanner struct {
	f    *os.File
	r    *bufio.Reader
	path string
	n    int
	off  int64  // where the lines read so far end
	buf  []byte // reused: a line is given to parse, not to keep
	done bool
}

// line is one line of a file: its number, its text (spaces trimmed, the
// first line's byte-order mark dropped), where it begins, and whether it
// is the file's last and ends with a newline.
type line struct {
	n             int
	text          []byte
	off           int64
	last, newline bool
}

func openLines(path string) (*lineScanner, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &lineScanner{f: f, r: bufio.NewReaderSize(f, 1<<20), path: path}, nil
}

func (sc *lineScanner) close() { sc.f.Close() }

// next is the next line that is not blank (ok false at the end).
func (sc *lineScanner) next() (l line, ok bool, err error) {
	for !sc.done {
		sc.n++
		sc.buf = sc.buf[:0]
		var rerr error
		for {
			var chunk []byte
			chunk, rerr = sc.r.ReadSlice('\n')
			sc.buf = append(sc.buf, chunk...)
			if rerr != bufio.ErrBufferFull {
				break
			}
		}
		if rerr != nil && rerr != io.EOF {
			return line{}, false, fmt.Errorf("%s: %w", sc.path, rerr)
		}
		last := rerr == io.EOF
		if !last {
			rest, _ := sc.r.Peek(1)
			last = len(rest) == 0
		}
		l = line{n: sc.n, off: sc.off, last: last, newline: bytes.HasSuffix(sc.buf, []byte("\n")), text: bytes.TrimSpace(sc.buf)}
		if sc.n == 1 {
			l.text = bytes.TrimPrefix(l.text, []byte(utf8BOM))
		}
		sc.off += int64(len(sc.buf))
		sc.done = last
		if len(l.text) > 0 {
			return l, true, nil
		}
	}
	return line{}, false, nil
}

// torn says whether a line that failed to read is a torn last line (a
// writer killed mid-line): the file's last, without its newline, and not
// JSON.
func (l line) torn() bool { return l.last && !l.newline && !json.Valid(l.text) }

// failed is what a line that failed to read with err says: nothing for a
// torn last line, err itself when the line is JSON (it is not what was
// wanted), else what is wrong with its JSON.
func (l line) failed(path, what string, err error) error {
	switch {
	case l.torn():
		return nil
	case json.Valid(l.text):
		return err
	}
	var v any
	jerr := json.Unmarshal(l.text, &v) // says what is wrong
	return fmt.Errorf("%s line %d is not %s: %w", path, l.n, what, jerr)
}
