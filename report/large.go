package report

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
	"github.com/tokbench/tokbench/stats"
)

// listCap is the most records the table, md and html formats list one a
// row (a table nobody reads is longer): a file of more, a fleet's, is
// summed up per test across its classes, read one record at a time in
// memory that grows with its points, not its records.
const listCap = 10000

// minLineBytes is less than any record takes in any format: a file of
// fewer than listCap times it is listed without counting.
const minLineBytes = 100

// fleetSummary is a file's measured records summed up per point and
// build (a row), and per class within each: the mean t/s of its records.
type fleetSummary struct {
	classes        []string
	classAt        map[string]int
	rows           []*fleetRow
	at             map[fleetKey]*fleetRow
	builds         map[string]bool
	records, notOK int
}

type fleetKey struct {
	key   point.Key
	build string
}

type fleetRow struct {
	key                point.Key
	model, test, build string
	sum                []float64 // by class
	n                  []int32
}

// summarize reads a file of JSON lines, more than listCap of them, one
// record at a time into a fleetSummary, the records record.Final keeps
// (record.EachFinal); nil when the file holds no
// more than listCap records (it is listed).
func summarize(path string) (*fleetSummary, bool, error) {
	if many, err := manyLines(path); err != nil || !many {
		return nil, false, err
	}
	s := &fleetSummary{classAt: map[string]int{}, at: map[fleetKey]*fleetRow{}, builds: map[string]bool{}}
	_, torn, err := record.EachFinal(path, func(r *record.Record) error {
		s.add(r)
		return nil
	})
	if err != nil || s.records+s.notOK <= listCap {
		return nil, false, err
	}
	return s, torn, nil
}

func (s *fleetSummary) add(r *record.Record) {
	if !r.OK() {
		s.notOK++
		return
	}
	s.records++
	c := r.Class()
	j, ok := s.classAt[c]
	if !ok {
		j = len(s.classes)
		s.classAt[c] = j
		s.classes = append(s.classes, c)
	}
	build := r.BuildID()
	s.builds[build] = true
	k := fleetKey{r.Key, build}
	x := s.at[k]
	if x == nil {
		x = &fleetRow{key: r.Key, model: label(r), test: r.Test, build: build}
		s.at[k] = x
		s.rows = append(s.rows, x)
	}
	for len(x.sum) <= j {
		x.sum, x.n = append(x.sum, 0), append(x.n, 0)
	}
	x.sum[j] += r.AvgTs
	x.n[j]++
}

// classRows are the rows as classRow: each class's mean t/s (0: none);
// a test named with the settings that tell it from the others (t=2) and,
// when there are several, its build; a model by its file where models
// share a description.
func (s *fleetSummary) classRows() []*classRow {
	points := make([]point.Point, len(s.rows))
	files := map[string]map[string]bool{}
	for i, x := range s.rows {
		points[i] = x.key.Point()
		if files[x.model] == nil {
			files[x.model] = map[string]bool{}
		}
		files[x.model][x.key.Model] = true
	}
	var varies []string
	if len(points) > 0 {
		varies = point.Varying(points)
	}
	out := make([]*classRow, len(s.rows))
	for i, x := range s.rows {
		c := &classRow{model: x.model, test: strings.TrimSpace(x.test + " " + varies[i]), ts: make([]float64, len(s.classes))}
		if len(files[x.model]) > 1 {
			c.model = filepath.Base(x.key.Model)
		}
		if len(s.builds) > 1 {
			c.test += " @ " + cmp.Or(x.build, "?")
		}
		for j := range x.sum {
			if x.n[j] > 0 {
				c.ts[j] = x.sum[j] / float64(x.n[j])
			}
		}
		out[i] = c
	}
	return out
}

// heading says what the summary is.
func (s *fleetSummary) heading() string {
	builds := ""
	if len(s.builds) > 1 {
		builds = fmt.Sprintf(" and %d builds", len(s.builds))
	}
	h := fmt.Sprintf("%d measured records of %d hardware classes%s: more than %d, too many to list one a row. Each test's t/s across the classes (a class's figure: the mean of its records; builds not pooled)",
		s.records, len(s.classes), builds, listCap)
	if s.notOK > 0 {
		h += fmt.Sprintf("; %d records did not measure (failed or skipped)", s.notOK)
	}
	return h
}

// summaryLines are the summary's head and rows: per test, how many
// classes measured it, their median, slowest and fastest t/s and which
// classes those were (numbered: classList), each class its own figure;
// kept are the rows that have a line (some class measured them).
func summaryLines(rows []*classRow) (head []string, lines [][]string, kept []*classRow) {
	head = []string{"model", "test", "classes", "median t/s", "slowest", "", "fastest", "", "fastest/slowest"}
	for _, x := range rows {
		var got []float64
		lo, hi := -1, -1
		for j, v := range x.ts {
			if v <= 0 {
				continue
			}
			got = append(got, v)
			if lo < 0 || v < x.ts[lo] {
				lo = j
			}
			if hi < 0 || v > x.ts[hi] {
				hi = j
			}
		}
		if len(got) == 0 {
			continue
		}
		lines = append(lines, []string{x.model, x.test, fmt.Sprint(len(got)), fmt.Sprintf("%.2f", stats.Median(got)),
			fmt.Sprintf("#%d", lo+1), fmt.Sprintf("%.2f", x.ts[lo]), fmt.Sprintf("#%d", hi+1), fmt.Sprintf("%.2f", x.ts[hi]),
			fmt.Sprintf("%.2fx", x.ts[hi]/x.ts[lo])})
		kept = append(kept, x)
	}
	return head, lines, kept
}

// classList names the classes by their numbers.
func classList(classes []string) string {
	names := make([]string, len(classes))
	for i, c := range classes {
		names[i] = fmt.Sprintf("#%d %s", i+1, c)
	}
	return "classes: " + strings.Join(names, ", ")
}

// writeSummaryText writes the summary as an aligned text table, or
// Markdown, the classes listed below it.
func writeSummaryText(w io.Writer, md bool, heading string, rows []*classRow, classes []string) error {
	head, lines, _ := summaryLines(rows)
	fmt.Fprintf(w, "\n%s\n", strings.Join(wrap(heading, noteWidth, ""), "\n"))
	if md {
		writeMarkdownTable(w, head, lines)
		_, err := fmt.Fprintf(w, "\n%s\n", classList(classes))
		return err
	}
	if err := writeAligned(w, head, lines); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, strings.Join(wrap(classList(classes), noteWidth, "    "), "\n"))
	return err
}

// write writes the summary in a format: table, md or html.
func (s *fleetSummary) write(w io.Writer, format, title string) error {
	rows := s.classRows()
	if format != "html" {
		return writeSummaryText(w, format == "md", s.heading(), rows, s.classes)
	}
	var b strings.Builder
	pageStart(&b, title)
	fmt.Fprintf(&b, "<p>%s.</p>\n", esc(s.heading()))
	head, lines, kept := summaryLines(rows)
	b.WriteString("<table><tr>")
	for i, h := range append(head, "each class's t/s") {
		fmt.Fprintf(&b, "<th%s>%s</th>", leftIf(i < 2), esc(h))
	}
	b.WriteString("</tr>\n")
	for i, x := range kept {
		b.WriteString("<tr>")
		for j, c := range lines[i] {
			fmt.Fprintf(&b, "<td%s>%s</td>", leftIf(j < 2), esc(c))
		}
		fmt.Fprintf(&b, "<td>%s</td></tr>\n", strip(x.ts, s.classes))
	}
	b.WriteString("</table>\n")
	fmt.Fprintf(&b, "<p><small>%s</small></p>\n</body></html>\n", esc(classList(s.classes)))
	_, err := io.WriteString(w, b.String())
	return err
}

// leftIf is a cell's class when it holds words (the model, the test).
func leftIf(words bool) string {
	if words {
		return ` class="l"`
	}
	return ""
}

// strip draws a test's classes as dots on one axis from 0 to its
// fastest: how they spread, each dot titled with its class and t/s.
func strip(ts []float64, classes []string) string {
	const width, height = 240, 14
	top := 0.0
	for _, v := range ts {
		top = max(top, v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg width="%d" height="%d" viewBox="0 0 %d %d"><line x1="0" y1="%d" x2="%d" y2="%d" stroke="#ccc"/>`, width, height, width, height, height/2, width, height/2)
	for j, v := range ts {
		if v > 0 {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%d" r="3" fill="#1f77b4" fill-opacity="0.5"><title>#%d %s: %.2f t/s</title></circle>`,
				4+(width-8)*v/top, height/2, j+1, esc(classes[j]), v)
		}
	}
	b.WriteString("</svg>")
	return b.String()
}

// manyLines says whether path is a file of JSON lines, more than listCap
// of them (counted up to there): a fleet's, which the machine formats
// write as they read it.
func manyLines(path string) (bool, error) {
	if fi, err := os.Stat(path); err != nil || fi.Size() < listCap*minLineBytes {
		return false, nil // too small to hold more; Read says what is wrong with it
	}
	if lines, err := record.IsLines(path); err != nil || !lines {
		return false, err
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	n, buf := 0, make([]byte, 1<<20)
	for n <= listCap {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte("\n"))
		if err == io.EOF {
			break
		} else if err != nil {
			return false, err
		}
	}
	return n > listCap, nil
}

// writeStreamed writes a file's records in a machine format (json,
// jsonl, csv, sql) one at a time as it reads them, in the file's order
// (not grouped: that needs them all), those record.Final keeps
// (record.EachFinal), each with its roofline;
// what it says of the file goes to log.
func writeStreamed(w, log io.Writer, path, format string, peaks *roofline.Cache, o Options) error {
	annotate, parallel, torn := true, 0, false
	src := func(each func(*record.Record) error) error {
		parallel = 0
		_, t, err := record.EachFinal(path, func(r *record.Record) error {
			if annotate {
				if err := r.SetRoofline(peaks); err != nil {
					fmt.Fprintln(log, "roofline:", err)
					annotate = false
				}
			}
			if r.NParallel > 1 {
				parallel++
				if o.TagParallel {
					r.ModelType += fmt.Sprintf(" np %d", r.NParallel)
				}
			}
			return each(r)
		})
		torn = t
		return err
	}
	var err error
	switch format {
	case "csv":
		err = CSVOf(w, src)
	case "sql":
		err = record.WriteSQLOf(w, src)
	default:
		err = writeJSONOf(w, format == "jsonl", src)
	}
	noteTorn(log, path, torn)
	if note := parallelNote(format, parallel, o); note != "" {
		fmt.Fprintln(log, note)
	}
	return err
}
