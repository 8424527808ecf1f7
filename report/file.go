package report

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tokbench/tokbench/internal/halt"
	"github.com/tokbench/tokbench/internal/load"
	"github.com/tokbench/tokbench/internal/safefile"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// FileOptions say how File reports a file.
type FileOptions struct {
	Format string // one of Formats
	Out    string // the file written; "" is File's w
	// Timeline is the raw telemetry samples charted as timelines (html,
	// md).
	Timeline Timeline
	// Peaks are the ceilings known now, the records' rooflines set with.
	Peaks *roofline.Cache
	// Reference is the class a fleet's other classes are divided by (""
	// the first).
	Reference string
	Options
}

// File reports a results file (records of run or sweep, llama-bench's
// JSON, or the lines of load and capacity) as fo says, with rooflines from
// the ceilings known now, the raw telemetry samples as timelines, and the
// quality blocks the file holds beside the speed of the same models
// (table, md, html). A torn last line is ignored and said on log. With
// records of several hardware classes (a fleet's merged file) the table
// and md formats add them side by side, with ratios to the reference
// class.
func File(w io.Writer, log io.Writer, path string, fo FileOptions) error {
	format, out, tl, peaks, ref, o := fo.Format, fo.Out, fo.Timeline, fo.Peaks, fo.Reference, fo.Options
	if load.IsResults(path) {
		lines, _, torn, err := load.ReadResults(path)
		if err != nil {
			return err
		}
		noteTorn(log, path, torn)
		if out != "" && format == "md" {
			if err := checkMarkdownOut(out, path); err != nil {
				return err
			}
			return loadMarkdownFiles(out, lines, tl)
		}
		return ToOut(w, out, []string{path}, func(w io.Writer) error { return writeLoadWith(w, format, lines, tl) })
	}
	if format == "table" || format == "md" || format == "html" {
		s, torn, err := summarize(path)
		if err != nil {
			return err
		}
		if s != nil {
			if err := checkReference(ref, s.classes); err != nil {
				return err
			}
			noteTorn(log, path, torn)
			return ToOut(w, out, []string{path}, func(w io.Writer) error { return s.write(w, format, "tokbench report "+path) })
		}
	}
	if format == "json" || format == "jsonl" || format == "csv" || format == "sql" {
		if many, err := manyLines(path); err != nil || many {
			if err != nil {
				return err
			}
			return ToOut(w, out, []string{path}, func(w io.Writer) error { return writeStreamed(w, log, path, format, peaks, o) })
		}
	}
	recs, _, torn, err := record.Read(path)
	if err != nil {
		return err
	}
	noteTorn(log, path, torn)
	if err := record.Annotate(recs, peaks); err != nil {
		fmt.Fprintln(log, "roofline:", err)
	}
	recs = Grouped(record.Final(recs))
	blocks, err := record.ReadQuality(path)
	if err != nil {
		return err
	}
	var ts []Tradeoff
	if len(blocks) > 0 {
		ts = Tradeoffs(recs, blocks)
	}
	if out != "" && format == "md" {
		if err := checkMarkdownOut(out, path); err != nil {
			return err
		}
		return MarkdownFiles(out, recs, tl, ts)
	}
	return ToOut(w, out, []string{path}, func(w io.Writer) error {
		if format == "html" {
			return htmlWith(w, recs, tl, ts, "tokbench report "+path)
		}
		if format == "md" {
			o.Notes = log // stdout is llama-bench's Markdown alone
		}
		if note := ParallelNote(format, recs, o); note != "" {
			fmt.Fprintln(log, note)
		}
		if err := WriteWith(w, format, recs, o); err != nil || (format != "table" && format != "md") {
			return err
		}
		if len(ts) > 0 {
			fmt.Fprintln(w)
			if err := WriteTradeoffs(w, format == "md", ts); err != nil {
				return err
			}
		}
		return writeClasses(w, format == "md", recs, ref, fleetWidth)
	})
}

func noteTorn(log io.Writer, path string, torn bool) {
	if torn {
		fmt.Fprintf(log, "%s: ignoring a torn last line\n", path)
	}
}

// ToOut runs write on the file out (created), or on w.
func ToOut(w io.Writer, out string, inputs []string, write func(io.Writer) error) error {
	// Buffered: a table is written cell by cell, and a million records'
	// cells are a write system call each otherwise.
	buffered := func(w io.Writer) error {
		b := bufio.NewWriterSize(w, 1<<16)
		err := write(b)
		if ferr := b.Flush(); err == nil {
			err = ferr
		}
		return err
	}
	if out == "" {
		return buffered(w)
	}
	if err := CheckOut(out, inputs...); err != nil {
		return err
	}
	f, err := safefile.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := buffered(f); err != nil {
		return err
	}
	return f.Commit(0o644)
}

// CheckOut refuses, before anything is read or measured, an output that
// is one of the inputs, a results file another tokbench is writing (a
// sweep's --out: replacing either would lose what is in it, or what the
// writer writes next), or neither a file nor a device or a pipe to write
// through (safefile.CheckOut).
func CheckOut(out string, inputs ...string) error {
	if err := safefile.CheckOut(out, true); err != nil {
		return point.Inputf("--out %v", err)
	}
	if err := safefile.NotAnInput(out, inputs...); err != nil {
		return point.Inputf("%v", err)
	}
	if err := record.Busy(out); err != nil {
		return point.Inputf("--out: %v", err)
	}
	return nil
}

// maxCharts bounds the charts a Markdown report writes beside itself.
const maxCharts = 256

// checkMarkdownOut is checkOut for a Markdown report and the charts it
// writes beside it (X.md's X-1.svg, X-2.svg, ...): none of them may be an
// input.
func checkMarkdownOut(out string, inputs ...string) error {
	if err := safefile.CheckOut(out, false); err != nil {
		return point.Inputf("-o md --out %v (its charts go beside it; without --out the Markdown goes to stdout)", err)
	}
	if err := CheckOut(out, inputs...); err != nil {
		return err
	}
	base := strings.TrimSuffix(out, filepath.Ext(out))
	for i := 1; i <= maxCharts; i++ {
		if err := safefile.NotAnInput(fmt.Sprintf("%s-%d.svg", base, i), inputs...); err != nil {
			return point.Inputf("-o md --out %s writes its charts as %s-N.svg: %v", out, base, strings.Replace(err.Error(), "give another --out", "give another --out or move the input", 1))
		}
	}
	return nil
}

// SQLiteFile appends the measured records of a results file (tokbench's
// or llama-bench's, any format) to the SQLite database db, as
// record.AppendSQLite does, and says how many on log. A database that is the
// file itself is refused: its rows would be appended to themselves.
func SQLiteFile(ctx context.Context, log io.Writer, path, db string) error {
	if err := safefile.NotAnInput(db, path); err != nil {
		return point.Inputf("--sqlite: %v", strings.Replace(err.Error(), "--out", "--sqlite", 1))
	}
	_, statErr := os.Lstat(db)
	var torn bool
	var dbErr error
	// The transaction stops in order on a signal: rolled back, not cut.
	defer halt.InOrder()()
	n, err := record.AppendSQLiteEach(ctx, db, func(add func(*record.Record, record.SQLRow) error) error {
		// One record at a time, the final ones (record.Final's).
		var err error
		_, torn, err = record.EachFinalRow(path, func(r *record.Record, row record.SQLRow) error {
			dbErr = add(r, row)
			return dbErr
		})
		return err
	})
	if err != nil && os.IsNotExist(statErr) {
		os.Remove(db) // made by this append, and rolled back: nothing is left of it
	}
	if err != nil && dbErr == nil && ctx.Err() == nil {
		return err // the input, not the database
	}
	noteTorn(log, path, torn)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("--sqlite %s: stopped, nothing appended: %w", db, ctx.Err())
	}
	if err != nil {
		if strings.Contains(err.Error(), "not a database") {
			return point.Inputf("--sqlite %s: %v: give a SQLite database, or a new file's name", db, err)
		}
		return fmt.Errorf("--sqlite %s: %w", db, err)
	}
	fmt.Fprintf(log, "%d tests appended to %s: table %s, tokbench's own fields in table %s\n", n, db, record.BenchTable, record.OwnTable)
	return nil
}
