package report

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
)

// param is a setting shown as a column of the compact table when it
// varies between the records or is not its default, as llama-bench shows
// its parameters.
type param struct {
	head  string
	def   string // "" : shown only when it varies
	value func(r *record.Record) string
}

var settings = withSwitchColumns(append(shapeColumns(), []param{
	{"fa", "off", func(r *record.Record) string { return r.FlashAttnSetting().String() }},
	{"ncmoe", "0", func(r *record.Record) string { return strconv.Itoa(r.NCPUMoE) }},
	{"sm", "layer", func(r *record.Record) string { return cmp.Or(r.SplitMode, "layer") }},
	{"poll", "50", func(r *record.Record) string { return pollName(r.Poll) }},
	{"mmap", "1", func(r *record.Record) string { return boolDigit(r.UseMmap) }},
	{"nkvo", "0", func(r *record.Record) string { return boolDigit(r.NoKVOffload) }},
	{"cpu_mask", "0x0", func(r *record.Record) string { return cmp.Or(r.CPUMask, "0x0") }},
	{"cpu_strict", "0", func(r *record.Record) string { return boolDigit(r.CPUStrict) }},
	{"ot", "none", func(r *record.Record) string { return cmp.Or(r.TensorOverrides, "none") }},
	{"ts", "0.00", func(r *record.Record) string { return cmp.Or(r.TensorSplit, "0.00") }},
	{"np", "1", func(r *record.Record) string { return strconv.Itoa(max(r.NParallel, 1)) }},
	{"sampling", "none", func(r *record.Record) string { return strings.SplitN(cmp.Or(r.Sampling, "none"), " ", 2)[0] }},
}...))

// shapeColumns are the columns of point.Shape's settings that have one
// (the batches and KV types), in its order, as the record holds them.
func shapeColumns() []param {
	var out []param
	typ := reflect.TypeFor[point.Shape]()
	for i := range typ.NumField() {
		st := point.Named(strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
		if st == nil || st.Column == "" {
			continue
		}
		out = append(out, param{st.Column, st.Default, func(r *record.Record) string { return st.Get(&point.Point{Shape: r.Shape}) }})
	}
	return out
}

// withSwitchColumns adds the columns of point.Switches' settings after
// nkvo, each shown as the others when it varies or is not its default.
func withSwitchColumns(ps []param) []param {
	i := slices.IndexFunc(ps, func(p param) bool { return p.head == "nkvo" }) + 1
	var sw []param
	for _, st := range point.Fields() {
		// As llama-bench shows them: a switch 0 or 1.
		show := func(sw point.Switches) string {
			if b, ok := st.Typed(sw).(bool); ok {
				return boolDigit(b)
			}
			return st.Of(sw)
		}
		sw = append(sw, param{st.Column, show(point.Switches{}), func(r *record.Record) string { return show(r.Switches) }})
	}
	return slices.Insert(ps, i, sw...)
}

func pollName(p int) string {
	if p < 0 {
		return "none"
	}
	return strconv.Itoa(p)
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// tableModel is llama-bench's model_type, or the preset of a synthetic
// model (whose type says little: "llama ?B Q8_0").
func tableModel(r *record.Record) string {
	if strings.HasPrefix(r.ModelID, "synth:") || r.ModelType == "" {
		return r.Name()
	}
	// llama.cpp's "?B" (a size it has no name for) says nothing: the
	// file's name does, as the progress lines give it.
	if strings.Contains(r.ModelType, "?B") && r.ModelFile != "" {
		return filepath.Base(r.ModelFile)
	}
	return r.ModelType
}

// llamaTest is a record's test as llama-bench names it: pp512, tg128,
// pp512+tg128, with " @ d512" for a depth.
func llamaTest(r *record.Record) string {
	t := fmt.Sprintf("tg%d", r.NGen)
	switch {
	case r.IsCombined():
		t = fmt.Sprintf("pp%d+tg%d", r.NPrompt, r.NGen)
	case r.NGen == 0:
		t = fmt.Sprintf("pp%d", r.NPrompt)
	}
	if r.NDepth > 0 {
		t += fmt.Sprintf(" @ d%d", r.NDepth)
	}
	return t
}

// compactColumns are llama-bench's columns (model, size, params, backend,
// ngl or threads), the parameters that vary, the test and t/s, then
// tokbench's two: the share of the roofline's ceiling and what limits the
// test.
func compactColumns(recs []record.Record) []column {
	cols := []column{
		{"model", false, tableModel},
		{"size", true, func(r *record.Record) string { return size(r.ModelSize) }},
		{"params", true, func(r *record.Record) string { return params(r.ModelParams) }},
		{"backend", false, func(r *record.Record) string { return r.Backend }},
	}
	varies := func(f func(r *record.Record) string, def string) bool {
		for i := range recs {
			if v := f(&recs[i]); v != f(&recs[0]) || (def != "" && v != def) {
				return true
			}
		}
		return false
	}
	// Two files of one type are told apart by their names.
	if varies(func(r *record.Record) string { return filepath.Base(r.ModelFile) }, "") &&
		!varies(func(r *record.Record) string { return r.ModelType }, "") {
		cols = append(cols, column{"file", false, func(r *record.Record) string { return filepath.Base(r.ModelFile) }})
	}
	cpu := !slices.ContainsFunc(recs, func(r record.Record) bool { return r.Backend != "CPU" })
	ngl := column{"ngl", true, func(r *record.Record) string { return strconv.Itoa(r.NGPULayers) }}
	threads := column{"threads", true, func(r *record.Record) string { return strconv.Itoa(r.Threads) }}
	// llama-bench's rule: threads on the CPU, GPU layers elsewhere; and
	// either where it varies.
	if !cpu || varies(ngl.value, "") {
		cols = append(cols, ngl)
	}
	if cpu || varies(threads.value, "") {
		cols = append(cols, threads)
	}
	for _, p := range settings {
		if varies(p.value, p.def) {
			cols = append(cols, column{p.head, true, p.value})
		}
	}
	cols = append(cols,
		column{"test", true, llamaTest},
		column{"t/s", true, func(r *record.Record) string {
			if r.Status != "" && !r.OK() {
				return strings.ToUpper(string(r.Status))
			}
			s := fmt.Sprintf("%.2f ± %.2f", r.AvgTs, r.StddevTs)
			if imprecise(r) || noisy(r) {
				s += " (!)"
			}
			return s
		}})
	if slices.ContainsFunc(recs, func(r record.Record) bool { return r.Roofline != nil }) {
		cols = append(cols,
			column{"eff", true, func(r *record.Record) string {
				if r.Roofline == nil || r.Roofline.CeilingTs == 0 {
					return "-"
				}
				return fmt.Sprintf("%.0f%%", 100*r.Roofline.Efficiency)
			}},
			column{"limit", false, func(r *record.Record) string {
				if r.Roofline == nil {
					return "-"
				}
				return r.Roofline.Verdict
			}})
	}
	return cols
}

// tableWidth is the widest the table may be: a 120-column terminal.
const tableWidth = 120

// Table writes llama-bench's table (md: its Markdown, with its build:
// footer), with tokbench's two columns, then, to notes, one legend line
// for the limits it shows and a line for each test that needs attention
// (a failure, a noisy machine, a repetition that drags the mean, a target
// CI missed) and nothing else: the rest is one flag away (--wide) and in
// the JSON. The table keeps within 120 columns: past that its columns
// are packed closer, then the settings every test shares move to a line
// above it.
func Table(w, notes io.Writer, recs []record.Record, md bool) error {
	if len(recs) == 0 {
		return nil
	}
	cols := compactColumns(recs)
	lines := renderTable(cols, recs, md, 2)
	// A terminal's table fits 120 columns; Markdown is llama-bench's,
	// whatever its width.
	if !md && widest(lines) > tableWidth {
		lines = renderTable(cols, recs, md, 1)
	}
	if !md && widest(lines) > tableWidth {
		var shared []string
		cols, shared = hoistShared(cols, recs)
		lines = renderTable(cols, recs, md, 1)
		if _, err := fmt.Fprintln(w, strings.Join(wrap("every test: "+strings.Join(shared, ", "), noteWidth, "    "), "\n")); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, strings.Join(lines, "\n")+"\n"); err != nil {
		return err
	}
	if md {
		// llama-bench's footer: the build the numbers are of.
		r := &recs[0]
		if _, err := fmt.Fprintf(w, "\nbuild: %s (%d)\n", mdText(r.BuildCommit), r.BuildNumber); err != nil {
			return err
		}
	}
	if err := legend(notes, recs); err != nil {
		return err
	}
	return attention(notes, recs, cols)
}

// renderTable lays the table out, pad spaces between columns (md: cells
// padded to their column, as llama-bench's Markdown is).
func renderTable(cols []column, recs []record.Record, md bool, pad int) []string {
	text := func(s string) string {
		if md {
			return mdText(s)
		}
		return printable(s)
	}
	rows := [][]string{make([]string, len(cols))}
	for i, c := range cols {
		rows[0][i] = text(c.head)
	}
	for i := range recs {
		row := make([]string, len(cols))
		for j, c := range cols {
			row[j] = text(c.value(&recs[i]))
		}
		rows = append(rows, row)
	}
	width := make([]int, len(cols))
	for _, row := range rows {
		for j, cell := range row {
			width[j] = max(width[j], utf8.RuneCountInString(cell))
		}
	}
	cell := func(j int, s string) string {
		gap := strings.Repeat(" ", width[j]-utf8.RuneCountInString(s))
		if cols[j].right {
			return gap + s
		}
		return s + gap
	}
	var lines []string
	for r, row := range rows {
		out := make([]string, len(row))
		for j, s := range row {
			out[j] = cell(j, s)
		}
		if md {
			lines = append(lines, "| "+strings.Join(out, " | ")+" |")
			if r == 0 {
				rule := make([]string, len(cols))
				for j := range cols {
					rule[j] = strings.Repeat("-", width[j])
					if cols[j].right {
						rule[j] = rule[j][1:] + ":"
					}
				}
				lines = append(lines, "| "+strings.Join(rule, " | ")+" |")
			}
			continue
		}
		lines = append(lines, strings.TrimRight(strings.Repeat(" ", pad)+strings.Join(out, strings.Repeat(" ", pad)), " "))
	}
	return lines
}

func widest(lines []string) int {
	n := 0
	for _, l := range lines {
		n = max(n, utf8.RuneCountInString(l))
	}
	return n
}

// isSetting marks the settings' columns.
var isSetting = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range settings {
		m[p.head] = true
	}
	return m
}()

// hoistShared takes out of cols the settings every record shares, and
// says them ("type_k q8_0").
func hoistShared(cols []column, recs []record.Record) ([]column, []string) {
	var kept []column
	var shared []string
	for _, c := range cols {
		if isSetting[c.head] && sameInAll(c, recs) {
			shared = append(shared, c.head+" "+c.value(&recs[0]))
			continue
		}
		kept = append(kept, c)
	}
	return kept, shared
}

// sameInAll says whether column c shows one value for every record.
func sameInAll(c column, recs []record.Record) bool {
	v := c.value(&recs[0])
	for i := range recs {
		if c.value(&recs[i]) != v {
			return false
		}
	}
	return true
}

// legend says, in one line, what the limits the table shows mean.
func legend(w io.Writer, recs []record.Record) error {
	var parts []string
	seen := map[string]bool{}
	for i := range recs {
		r := &recs[i]
		if r.Roofline == nil || seen[r.Roofline.Verdict] {
			continue
		}
		seen[r.Roofline.Verdict] = true
		if m := roofline.Meaning[r.Roofline.Verdict]; m != "" {
			parts = append(parts, r.Roofline.Verdict+": "+m)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	slices.Sort(parts)
	text := "limit: " + strings.Join(parts, "; ")
	_, err := fmt.Fprintln(w, "\n"+strings.Join(wrap(text, noteWidth, "    "), "\n"))
	return err
}

// noteWidth is how long an attention line may be: one line of a 120
// column terminal.
const noteWidth = 119

// wrap breaks text at spaces into lines of at most width runes, the
// lines after the first indented by indent (a word longer than a line
// stands alone).
func wrap(text string, width int, indent string) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = indent + word
		}
	}
	return append(lines, line)
}

// needsAttention is why a test needs its reader's attention, most
// important first; nil when it does not. A ceiling in doubt is said
// besides anything else: an efficiency read against it is not the
// machine's.
func needsAttention(r *record.Record) []string {
	whys := otherAttention(r)
	if c := ceilingDoubt(r); c != "" {
		whys = append(whys, c)
	}
	return whys
}

// ceilingDoubt says why a test's ceiling, and so its eff, is in doubt.
func ceilingDoubt(r *record.Record) string {
	switch a := r.Roofline; {
	case a == nil || !r.OK():
	case a.ProbeLow != "" && a.ProbeBusy != "":
		return fmt.Sprintf("it ran at %.4g t/s, above the probed ceiling of its %s: the probe was taken while %s, so eff reads 100%%; the next run on a quiet machine probes again (or run tokbench probe)",
			r.AvgTs, a.Bound, a.ProbeBusy)
	case a.ProbeLow != "":
		return fmt.Sprintf("it ran at %.4g t/s, above the probed ceiling of its %s (the probe's large products run slower than this model's), so its ceiling is the measured rate and eff reads 100%%",
			r.AvgTs, a.Bound)
	case a.ProbeBusy != "":
		return fmt.Sprintf("its ceilings were probed while %s: eff may read high; the next run on a quiet machine probes again (or run tokbench probe)", a.ProbeBusy)
	}
	return ""
}

func otherAttention(r *record.Record) []string {
	switch {
	case r.Status != "" && !r.OK():
		return []string{r.Reason}
	case noisy(r):
		return r.Noise.Warnings
	case imprecise(r):
		return []string{fmt.Sprintf("-r auto stopped at ±%.1f%%, short of ±%.1f%%: raise --max-reps", 100*r.CI95RepsTs/r.AvgTs, 100*r.CITarget)}
	case r.Roofline != nil && r.Roofline.Decomp != nil && r.Roofline.Decomp.Unvouched != "":
		return []string{fmt.Sprintf("%s: the kernels timed alone took %.0f%% of the step, so its split into hardware, kernels and software is not vouched for; rerun on a quiet machine, or see the ops as the step ran them with tokbench profile",
			roofline.Unvouched, 100*r.Roofline.Decomp.KernelShare)}
	}
	return nil
}

// attention writes a note for each test that needs it: why, and what to
// do, wrapped to the terminal's width. The test is named as the table's
// row is: its model, the settings that vary (cols) and the test; tests
// with the same reason share one note.
func attention(w io.Writer, recs []record.Record, cols []column) error {
	var varied []column // the settings that tell rows apart
	for _, c := range cols {
		if (isSetting[c.head] || tellsApart[c.head]) && !sameInAll(c, recs) {
			varied = append(varied, c)
		}
	}
	var whyOrder []string
	named, prevModel, more := map[string][]string{}, map[string]string{}, map[string]int{}
	for i := range recs {
		r := &recs[i]
		whys, doubt := otherAttention(r), ceilingDoubt(r)
		if len(whys) == 0 && doubt == "" {
			continue
		}
		var why string
		switch {
		case len(whys) == 0:
			why = doubt
		default:
			why = whys[0]
			if doubt != "" {
				why += "; and " + doubt // the eff column is read against it
			}
			more[why] += len(whys) - 1
		}
		name := ""
		for _, c := range varied {
			name += c.head + " " + c.value(r) + " "
		}
		name += llamaTest(r)
		// A model named once for its tests in a row.
		if model, prev := tableModel(r), named[why]; len(prev) == 0 || prevModel[why] != model {
			name = model + " " + name
			prevModel[why] = model
		}
		if named[why] == nil {
			whyOrder = append(whyOrder, why)
		}
		named[why] = append(named[why], name)
	}
	if len(whyOrder) > 0 {
		fmt.Fprintln(w)
	}
	for _, why := range whyOrder {
		note := fmt.Sprintf("(!) %s: %s", strings.Join(named[why], ", "), why)
		if n := more[why]; n > 0 {
			note += fmt.Sprintf(" (and %d more: --wide)", n)
		}
		if _, err := fmt.Fprintln(w, strings.Join(wrap(printable(note), noteWidth, "    "), "\n")); err != nil {
			return err
		}
	}
	return nil
}

// tellsApart marks the columns besides the settings' that tell rows
// apart: a note names a row by them where they vary.
var tellsApart = map[string]bool{"file": true, "ngl": true, "threads": true}
