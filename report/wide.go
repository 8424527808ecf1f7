package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/roofline"
	"github.com/tokbench/tokbench/stats"
)

// column is one column of the human-readable tables.
type column struct {
	head  string
	right bool
	value func(r *record.Record) string
}

func size(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	default:
		return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
	}
}

func params(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f B", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f M", float64(n)/1e6)
	}
	return strconv.FormatUint(n, 10)
}

func ms(l *stats.Latency, f func(*stats.Latency) float64) string {
	if l == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", f(l))
}

var columns = []column{
	{"model", false, func(r *record.Record) string { return cmp.Or(r.ModelID, r.ModelType) }},
	{"size", true, func(r *record.Record) string { return size(r.ModelSize) }},
	{"params", true, func(r *record.Record) string { return params(r.ModelParams) }},
	{"backend", false, func(r *record.Record) string { return r.Backend }},
	{"threads", true, func(r *record.Record) string { return strconv.Itoa(r.Threads) }},
	{"fa", true, func(r *record.Record) string { return r.FlashAttnSetting().String() }},
	{"test", false, func(r *record.Record) string { return r.Test }},
	{"sampling", false, func(r *record.Record) string { return strings.SplitN(r.Sampling, " ", 2)[0] }},
	{"t/s", true, func(r *record.Record) string {
		if r.Status != "" && r.Status != record.StatusOK {
			return strings.ToUpper(string(r.Status))
		}
		s := fmt.Sprintf("%.2f ± %.2f", r.AvgTs, r.StddevTs)
		if imprecise(r) || noisy(r) {
			s += " (!)"
		}
		return s
	}},
	{"t/s/seq", true, func(r *record.Record) string { return fmt.Sprintf("%.2f", r.AvgTsPerSeq) }},
	{"cv", true, func(r *record.Record) string { return fmt.Sprintf("%.1f%%", 100*r.CV) }},
	{"ttft ms", true, func(r *record.Record) string { return ms(r.TTFT, func(l *stats.Latency) float64 { return l.P50 }) }},
	{"itl p50 ms", true, func(r *record.Record) string { return ms(r.ITL, func(l *stats.Latency) float64 { return l.P50 }) }},
	{"itl p99 ms", true, func(r *record.Record) string { return ms(r.ITL, func(l *stats.Latency) float64 { return l.P99 }) }},
}

// gpuColumns show what the GPUs did while a test was measured; tables
// have them when any record has GPU telemetry.
var gpuColumns = []column{
	{"gpu %", true, func(r *record.Record) string { return gpuStat(r, "gpu_util", "%.0f") }},
	{"mem %", true, func(r *record.Record) string { return gpuStat(r, "mem_util", "%.0f") }},
	{"dram bw %", true, func(r *record.Record) string { return gpuStat(r, "dram_bw_util", "%.0f") }},
	// The share of the peak bandwidth the roofline's bytes per step moved
	// at: beside NVML's memory-controller and GPM's DRAM figures, whether
	// the memory was as busy as the step's bytes say.
	{"step bw %", true, func(r *record.Record) string {
		if r.Roofline == nil || r.Roofline.PeakBWGBs == 0 || r.Roofline.AchievedGBs == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", 100*r.Roofline.AchievedGBs/r.Roofline.PeakBWGBs)
	}},
	{"W", true, func(r *record.Record) string { return gpuStat(r, "power_w", "%.0f") }},
	{"J/tok", true, func(r *record.Record) string {
		if r.TokensPerJ == nil || *r.TokensPerJ == 0 {
			return "-"
		}
		s := fmt.Sprintf("%.3g", 1 / *r.TokensPerJ)
		if r.Throttled {
			s += " (throttled)"
		}
		return s
	}},
}

// gpuStat is a GPU metric's mean over the measured repetitions, averaged
// over the GPUs that report it.
func gpuStat(r *record.Record, metric, format string) string {
	if r.Telemetry == nil || r.Telemetry.Measure == nil {
		return "-"
	}
	v := roofline.GPUMean(r.Telemetry.Measure, metric)
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}

// rooflineColumns set each test against its ceiling.
var rooflineColumns = []column{
	{"ceiling t/s", true, func(r *record.Record) string {
		if r.Roofline == nil || r.Roofline.CeilingTs == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", r.Roofline.CeilingTs)
	}},
	{"eff", true, func(r *record.Record) string {
		if r.Roofline == nil || r.Roofline.CeilingTs == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*r.Roofline.Efficiency)
	}},
	{"verdict", false, func(r *record.Record) string {
		if r.Roofline == nil {
			return "-"
		}
		return r.Roofline.Verdict
	}},
}

// columnsFor adds the GPU columns when there is GPU telemetry and the
// roofline columns when there are ceilings.
func columnsFor(recs []record.Record) []column {
	cols := columns
	for i := range recs {
		if gpuStat(&recs[i], "gpu_util", "%.0f") != "-" || gpuStat(&recs[i], "power_w", "%.0f") != "-" {
			cols = append(slices.Clone(cols), gpuColumns...)
			break
		}
	}
	for i := range recs {
		if decompOf(&recs[i]) != nil {
			cols = append(slices.Clone(cols), decompColumns...)
			break
		}
	}
	for i := range recs {
		if recs[i].Roofline != nil {
			return append(slices.Clone(cols), rooflineColumns...)
		}
	}
	return cols
}

// Table writes an aligned table, a blank line between models.
func Wide(w io.Writer, recs []record.Record) error {
	columns := columnsFor(recs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(cells []string) {
		for _, c := range cells {
			fmt.Fprint(tw, c, "\t")
		}
		fmt.Fprintln(tw)
	}
	var head []string
	for _, c := range columns {
		head = append(head, c.head)
	}
	row(head)
	for i := range recs {
		if i > 0 && group(&recs[i]) != group(&recs[i-1]) {
			// A row of empty cells, not an empty line: tabwriter would
			// align the groups separately.
			row(make([]string, len(columns)))
		}
		var cells []string
		for _, c := range columns {
			cells = append(cells, printable(c.value(&recs[i])))
		}
		row(cells)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return footer(w, recs, printable)
}

// Markdown writes a GitHub-flavoured table, as llama-bench -o md does.
func wideMarkdown(w io.Writer, recs []record.Record) error {
	columns := columnsFor(recs)
	var head, rule []string
	for _, c := range columns {
		head = append(head, c.head)
		if c.right {
			rule = append(rule, "---:")
		} else {
			rule = append(rule, "---")
		}
	}
	fmt.Fprintf(w, "| %s |\n| %s |\n", strings.Join(head, " | "), strings.Join(rule, " | "))
	for i := range recs {
		var cells []string
		for _, c := range columns {
			cells = append(cells, c.value(&recs[i]))
		}
		fmt.Fprintln(w, mdRow(cells))
	}
	return footer(w, recs, mdText)
}

// footer names the build and hardware once, not on every row.
// noisy says whether the machine was not quiet while a record was
// measured.
func noisy(r *record.Record) bool { return r.Noise != nil && len(r.Noise.Warnings) > 0 }

// imprecise says whether a record's adaptive repetitions stopped short of
// their CI target.
func imprecise(r *record.Record) bool { return r.CITargetMet != nil && !*r.CITargetMet }

func footer(out io.Writer, recs []record.Record, text func(string) string) error {
	if len(recs) == 0 {
		return nil
	}
	// Its lines hold what files carried (a CPU's name, a failure's
	// reason): each is made inert (text) before it is written.
	var w strings.Builder
	r := recs[0]
	fmt.Fprintf(&w, "\nbuild: llama.cpp %s (ollama %s), %s; cpu: %s (%s)\n", r.BuildCommit, r.OllamaVersion, r.Tool, r.CPUInfo, r.CPUFeatures)
	for _, rec := range recs {
		if rec.SamplingCostPct != nil {
			fmt.Fprintf(&w, "%s %s: sampling %s costs %.1f%% of raw decode t/s\n", cmp.Or(rec.ModelID, rec.ModelType), rec.Test, rec.Sampling, *rec.SamplingCostPct)
		}
		if rec.Status != "" && rec.Status != record.StatusOK {
			fmt.Fprintf(&w, "%s %s %s: %s\n", cmp.Or(rec.ModelID, rec.ModelType), rec.Test, rec.Status, rec.Reason)
		}
		if noisy(&rec) {
			for _, warning := range rec.Noise.Warnings {
				fmt.Fprintf(&w, "(!) %s %s: %s\n", cmp.Or(rec.ModelID, rec.ModelType), rec.Test, warning)
			}
		}
		if imprecise(&rec) {
			fmt.Fprintf(&w, "(!) %s %s: -r auto did not reach its target of ±%.1f%% (±%.1f%% after %d repetitions): the mean is less precise than asked; rerun on a quiet machine or raise --max-reps\n",
				cmp.Or(rec.ModelID, rec.ModelType), rec.Test, 100*rec.CITarget, 100*rec.CI95RepsTs/rec.AvgTs, rec.Reps)
		}
		if a := rec.Roofline; a != nil {
			fmt.Fprintf(&w, "%s %s: %s: %s\n", cmp.Or(rec.ModelID, rec.ModelType), rec.Test, a.Verdict, a.Why)
		} else if rec.IsCombined() && rec.OK() {
			fmt.Fprintf(&w, "%s %s: no roofline: a pp+tg test times prefill and decode together, whose ceilings differ (see the pp and tg tests)\n", cmp.Or(rec.ModelID, rec.ModelType), rec.Test)
		}
	}
	for _, l := range strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n") {
		if _, err := fmt.Fprintln(out, text(l)); err != nil {
			return err
		}
	}
	return nil
}
