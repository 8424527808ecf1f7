package report

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

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

var settings = withSwitchColumns([]param{
	{"n_batch", "2048", func(r *record.Record) string { return strconv.Itoa(r.NBatch) }},
	{"n_ubatch", "512", func(r *record.Record) string { return strconv.Itoa(r.NUBatch) }},
	{"type_k", "f16", func(r *record.Record) string { return r.TypeK }},
	{"type_v", "f16", func(r *record.Record) string { return r.TypeV }},
	{"fa", "auto", func(r *record.Record) string { return [...]string{"auto", "off", "on"}[r.FlashAttn+1] }},
	{"ncmoe", "0", func(r *record.Record) string { return strconv.Itoa(r.NCPUMoE) }},
	{"poll", "50", func(r *record.Record) string { return pollName(r.Poll) }},
	{"mmap", "1", func(r *record.Record) string { return boolDigit(r.UseMmap) }},
	{"nkvo", "0", func(r *record.Record) string { return boolDigit(r.NoKVOffload) }},
	{"cpu_mask", "0x0", func(r *record.Record) string { return cmp.Or(r.CPUMask, "0x0") }},
	{"ot", "none", func(r *record.Record) string { return cmp.Or(r.TensorOverrides, "none") }},
	{"ts", "0.00", func(r *record.Record) string { return cmp.Or(r.TensorSplit, "0.00") }},
	{"np", "1", func(r *record.Record) string { return strconv.Itoa(max(r.NParallel, 1)) }},
	{"sampling", "none", func(r *record.Record) string { return strings.SplitN(cmp.Or(r.Sampling, "none"), " ", 2)[0] }},
})

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
	threads := column{"threads", true, func(r *record.Record) string { return strconv.Itoa(r.NThreads) }}
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

// Compact writes llama-bench's table (md: its markdown), with tokbench's
// two columns, then a line for each test that needs attention (a
// failure, a noisy machine, a repetition that drags the mean, a target CI
// missed) and nothing else: the rest is one flag away (--wide) and in
// the JSON.
func Table(w io.Writer, recs []record.Record, md bool) error {
	if len(recs) == 0 {
		return nil
	}
	cols := compactColumns(recs)
	cells := func(r *record.Record) []string {
		out := make([]string, len(cols))
		for i, c := range cols {
			out[i] = c.value(r)
		}
		return out
	}
	var head []string
	for _, c := range cols {
		head = append(head, c.head)
	}
	if md {
		var rule []string
		for _, c := range cols {
			rule = append(rule, map[bool]string{true: "---:", false: "---"}[c.right])
		}
		fmt.Fprintf(w, "| %s |\n| %s |\n", strings.Join(head, " | "), strings.Join(rule, " | "))
		for i := range recs {
			fmt.Fprintln(w, mdRow(cells(&recs[i])))
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
		for i := range recs {
			fmt.Fprintln(tw, strings.Join(cells(&recs[i]), "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return attention(w, recs)
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
// important first; nil when it does not.
func needsAttention(r *record.Record) []string {
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
// do, wrapped to the terminal's width.
func attention(w io.Writer, recs []record.Record) error {
	first := true
	for i := range recs {
		r := &recs[i]
		whys := needsAttention(r)
		if len(whys) == 0 {
			continue
		}
		why := whys[0]
		if len(whys) > 1 {
			why = fmt.Sprintf("%s (and %d more: --wide)", why, len(whys)-1)
		}
		if first {
			fmt.Fprintln(w)
			first = false
		}
		note := fmt.Sprintf("(!) %s %s: %s", tableModel(r), llamaTest(r), why)
		if _, err := fmt.Fprintln(w, strings.Join(wrap(note, noteWidth, "    "), "\n")); err != nil {
			return err
		}
	}
	return nil
}
