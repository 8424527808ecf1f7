// Package report writes what tokbench measures and plans, for people and
// for tools: records as llama-bench's table (Table) or every column
// (Wide), Markdown, JSON and JSON lines, CSV and SQL (llama-bench's
// fields, then tokbench's: fields.go), HTML with SVG charts; and load
// runs, quality blocks, op profiles, probes, devices, doctor's findings,
// baseline comparisons, sweep plans, shard partitions and run's
// estimates.
package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tokbench/tokbench/record"
)

// Formats are the output formats, as -o names them.
var Formats = []string{"table", "json", "jsonl", "csv", "md", "html", "sql"}

// Options say how records are written.
type Options struct {
	// Wide gives the tables every column (CI, latencies, the step's
	// split, GPU figures) and a line per test below them.
	Wide bool
	// TagParallel names tests of several sequences in model_type ("np
	// 4") in llama-bench's files, so that compare-llama-bench.py, which
	// does not key on n_parallel, keeps them apart.
	TagParallel bool
	// Notes, if set, takes what the table and md formats say below the
	// table (the legend, the tests that need attention): stderr, so that
	// -o md's stdout is llama-bench's Markdown and nothing else.
	Notes io.Writer
}

// WriteWith writes records in a format with options.
func WriteWith(w io.Writer, format string, recs []record.Record, o Options) error {
	if o.TagParallel {
		recs = slices.Clone(recs)
		for i := range recs {
			if recs[i].NParallel > 1 {
				recs[i].ModelType += fmt.Sprintf(" np %d", recs[i].NParallel)
			}
		}
	}
	notes := w
	if o.Notes != nil {
		notes = o.Notes
	}
	switch {
	case format == "table" && !o.Wide:
		return Table(w, notes, recs, false)
	case format == "md" && !o.Wide:
		return Table(w, notes, recs, true)
	}
	return write(w, format, recs)
}

// ParallelNote says, for a file in llama-bench's formats that holds tests
// of several sequences, that compare-llama-bench.py would average them
// with the others ("" when there is nothing to say).
func ParallelNote(format string, recs []record.Record, o Options) string {
	n := 0
	for i := range recs {
		if recs[i].NParallel > 1 {
			n++
		}
	}
	return parallelNote(format, n, o)
}

// parallelNote is ParallelNote of a file of n tests of several sequences.
func parallelNote(format string, n int, o Options) string {
	if o.TagParallel || !slices.Contains([]string{"json", "jsonl", "csv", "sql"}, format) || n == 0 {
		return ""
	}
	return fmt.Sprintf("note: %d test(s) decode several sequences (n_parallel > 1); compare-llama-bench.py does not key on n_parallel and averages them with the other tests of the same settings: --tag-parallel names them in model_type", n)
}

// Write writes records in the format.
func Write(w io.Writer, format string, recs []record.Record) error {
	return WriteWith(w, format, recs, Options{})
}

func write(w io.Writer, format string, recs []record.Record) error {
	switch format {
	case "table":
		return Wide(w, recs)
	case "md":
		return wideMarkdown(w, recs)
	case "json", "jsonl":
		return writeJSON(w, format == "jsonl", recs)
	case "csv":
		return CSV(w, recs)
	case "html":
		return HTML(w, recs)
	case "sql":
		return record.WriteSQL(w, recs)
	}
	return fmt.Errorf("output format %q: use one of %s", format, strings.Join(Formats, ", "))
}

// writeJSON writes items as one indented JSON array (an empty one for
// none), or as JSON lines.
func writeJSON[T any](w io.Writer, lines bool, items []T) error {
	return writeJSONOf(w, lines, func(each func(*T) error) error {
		for i := range items {
			if err := each(&items[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeJSONOf is writeJSON of the items src gives, one at a time: item
// by item, as json.MarshalIndent lays an array out, so that the whole
// array is never one buffer in memory.
func writeJSONOf[T any](w io.Writer, lines bool, src func(each func(*T) error) error) error {
	enc := json.NewEncoder(w)
	if lines {
		return src(func(item *T) error { return enc.Encode(item) })
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetIndent("  ", "  ")
	sep := "[\n  "
	err := src(func(item *T) error {
		if _, err := io.WriteString(w, sep); err != nil {
			return err
		}
		sep = ",\n  "
		// Encode ends each item with a newline, which the separator
		// replaces.
		b.Reset()
		if err := e.Encode(item); err != nil {
			return err
		}
		_, err := w.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
		return err
	})
	switch {
	case err != nil:
		return err
	case sep == "[\n  ": // none
		_, err = io.WriteString(w, "[]\n")
	default:
		_, err = io.WriteString(w, "\n]\n")
	}
	return err
}

// Grouped orders records by model and quantization, and within each the
// tests of the same settings as llama-bench shows them (pp, then tg, then
// pp+tg), keeping the order otherwise, as a sweep's closing table shows
// them; it sorts recs in place.
func Grouped(recs []record.Record) []record.Record {
	// Each record's place is found once (its key's text is costly), the
	// order sorted as indices, and the records moved once each.
	type rank struct{ group, set, kind, at int }
	first, firstSet := map[string]int{}, map[string]int{}
	ranks := make([]rank, len(recs))
	for i := range recs {
		r := &recs[i]
		g, set := group(r), testSettings(r)
		if _, ok := first[g]; !ok {
			first[g] = i
		}
		if _, ok := firstSet[set]; !ok {
			firstSet[set] = i
		}
		ranks[i] = rank{first[g], firstSet[set], 1, i}
		switch {
		case r.IsCombined():
			ranks[i].kind = 2
		case r.IsPrompt():
			ranks[i].kind = 0
		}
	}
	slices.SortFunc(ranks, func(a, b rank) int {
		return cmp.Or(a.group-b.group, a.set-b.set, a.kind-b.kind, a.at-b.at)
	})
	// recs[i] takes the record at ranks[i].at: each cycle of the
	// permutation is followed once, one record held aside.
	for i := range ranks {
		if ranks[i].at == i || ranks[i].at < 0 {
			continue
		}
		held := recs[i]
		j := i
		for ranks[j].at != i {
			next := ranks[j].at
			recs[j] = recs[next]
			ranks[j].at = -1
			j = next
		}
		recs[j] = held
		ranks[j].at = -1
	}
	return recs
}

// testSettings names a record's settings but for its test's token counts.
func testSettings(r *record.Record) string {
	k := r.Key
	k.NPrompt, k.NGen, k.Sampling = 0, 0, ""
	return k.String()
}

func group(r *record.Record) string { return cmp.Or(r.ModelID, r.ModelFile) + "|" + r.ModelFileType }
