// Package report writes benchmark records for people (aligned table,
// Markdown) and for tools (JSON as llama-bench writes it, JSON lines, CSV).
package report

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
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

// Formats are the output formats, as -o names them.
var Formats = []string{"table", "json", "jsonl", "csv", "md", "html", "sql"}

// Write writes records in the format.
func Write(w io.Writer, format string, recs []record.Record) error {
	return WriteWith(w, format, recs, Options{})
}

func write(w io.Writer, format string, recs []record.Record) error {
	switch format {
	case "table":
		return Table(w, recs)
	case "md":
		return Markdown(w, recs)
	case "json", "jsonl":
		return writeJSON(w, format == "jsonl", recs)
	case "csv":
		return CSV(w, recs)
	case "html":
		return HTML(w, recs)
	case "sql":
		return SQL(w, recs)
	}
	return fmt.Errorf("output format %q: use one of %s", format, strings.Join(Formats, ", "))
}

// writeJSON writes items as one indented JSON array (an empty one for
// none), or as JSON lines.
func writeJSON[T any](w io.Writer, lines bool, items []T) error {
	enc := json.NewEncoder(w)
	if !lines {
		// Item by item, as json.MarshalIndent lays an array out: the
		// whole array is never one buffer in memory.
		if len(items) == 0 {
			_, err := io.WriteString(w, "[]\n")
			return err
		}
		for i := range items {
			sep := ",\n  "
			if i == 0 {
				sep = "[\n  "
			}
			if _, err := io.WriteString(w, sep); err != nil {
				return err
			}
			// Encode ends each item with a newline, which the separator
			// replaces.
			var b bytes.Buffer
			e := json.NewEncoder(&b)
			e.SetIndent("  ", "  ")
			if err := e.Encode(&items[i]); err != nil {
				return err
			}
			if _, err := w.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n"))); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, "\n]\n")
		return err
	}
	for i := range items {
		if err := enc.Encode(&items[i]); err != nil {
			return err
		}
	}
	return nil
}

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
	{"threads", true, func(r *record.Record) string { return strconv.Itoa(r.NThreads) }},
	{"fa", true, func(r *record.Record) string { return [...]string{"auto", "off", "on"}[r.FlashAttn+1] }},
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

// Grouped orders records by model and quantization, and within each the
// tests of the same settings as llama-bench shows them (pp, then tg, then
// pp+tg), keeping the order otherwise, as a sweep's closing table shows
// them; it sorts recs in place.
func Grouped(recs []record.Record) []record.Record {
	out := recs // in place: a large file's records are not copied again
	first, firstSet := map[string]int{}, map[string]int{}
	for i, r := range out {
		if _, ok := first[group(&r)]; !ok {
			first[group(&r)] = i
		}
		if _, ok := firstSet[testSettings(&r)]; !ok {
			firstSet[testSettings(&r)] = i
		}
	}
	kind := func(r *record.Record) int {
		switch {
		case r.IsCombined():
			return 2
		case r.IsPrompt():
			return 0
		}
		return 1
	}
	slices.SortStableFunc(out, func(a, b record.Record) int {
		return cmp.Or(first[group(&a)]-first[group(&b)], firstSet[testSettings(&a)]-firstSet[testSettings(&b)], kind(&a)-kind(&b))
	})
	return out
}

// testSettings names a record's settings but for its test's token counts.
func testSettings(r *record.Record) string {
	k := r.Key
	k.NPrompt, k.NGen, k.Sampling = 0, 0, ""
	return k.String()
}

func group(r *record.Record) string { return cmp.Or(r.ModelID, r.ModelFile) + "|" + r.ModelFileType }

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
func Table(w io.Writer, recs []record.Record) error {
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
			cells = append(cells, c.value(&recs[i]))
		}
		row(cells)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return footer(w, recs)
}

// Markdown writes a GitHub-flavoured table, as llama-bench -o md does.
func Markdown(w io.Writer, recs []record.Record) error {
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
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	return footer(w, recs)
}

// footer names the build and hardware once, not on every row.
// noisy says whether the machine was not quiet while a record was
// measured.
func noisy(r *record.Record) bool { return r.Noise != nil && len(r.Noise.Warnings) > 0 }

// imprecise says whether a record's adaptive repetitions stopped short of
// their CI target.
func imprecise(r *record.Record) bool { return r.CITargetMet != nil && !*r.CITargetMet }

func footer(w io.Writer, recs []record.Record) error {
	if len(recs) == 0 {
		return nil
	}
	r := recs[0]
	_, err := fmt.Fprintf(w, "\nbuild: llama.cpp %s (ollama %s), %s; cpu: %s (%s)\n", r.BuildCommit, r.OllamaVersion, r.Tool, r.CPUInfo, r.CPUFeatures)
	for _, rec := range recs {
		if rec.SamplingCostPct != nil {
			fmt.Fprintf(w, "%s %s: sampling %s costs %.1f%% of raw decode t/s\n", cmp.Or(rec.ModelID, rec.ModelType), rec.Test, rec.Sampling, *rec.SamplingCostPct)
		}
		if rec.Status != "" && rec.Status != record.StatusOK {
			fmt.Fprintf(w, "%s %s %s: %s\n", cmp.Or(rec.ModelID, rec.ModelType), rec.Test, rec.Status, rec.Reason)
		}
		if noisy(&rec) {
			for _, warning := range rec.Noise.Warnings {
				fmt.Fprintf(w, "(!) %s %s: %s\n", cmp.Or(rec.ModelID, rec.ModelType), rec.Test, warning)
			}
		}
		if imprecise(&rec) {
			fmt.Fprintf(w, "(!) %s %s: -r auto did not reach its target of ±%.1f%% (±%.1f%% after %d repetitions): the mean is less precise than asked; rerun on a quiet machine or raise --max-reps\n",
				cmp.Or(rec.ModelID, rec.ModelType), rec.Test, 100*rec.CITarget, 100*rec.CI95Ts/rec.AvgTs, rec.Reps)
		}
		if a := rec.Roofline; a != nil {
			fmt.Fprintf(w, "%s %s: %s: %s\n", cmp.Or(rec.ModelID, rec.ModelType), rec.Test, a.Verdict, a.Why)
		} else if rec.IsCombined() && rec.OK() {
			fmt.Fprintf(w, "%s %s: no roofline: a pp+tg test times prefill and decode together, whose ceilings differ (see the pp and tg tests)\n", cmp.Or(rec.ModelID, rec.ModelType), rec.Test)
		}
	}
	return err
}

var csvFields = []struct {
	name  string
	value func(r *record.Record) string
}{
	{"build_commit", func(r *record.Record) string { return r.BuildCommit }},
	{"ollama_version", func(r *record.Record) string { return r.OllamaVersion }},
	{"cpu_info", func(r *record.Record) string { return r.CPUInfo }},
	{"gpu_info", func(r *record.Record) string { return r.GPUInfo }},
	{"backend", func(r *record.Record) string { return r.Backend }},
	{"model_filename", func(r *record.Record) string { return r.ModelFile }},
	{"model_type", func(r *record.Record) string { return r.ModelType }},
	{"model_file_type", func(r *record.Record) string { return r.ModelFileType }},
	{"model_size", func(r *record.Record) string { return strconv.FormatUint(r.ModelSize, 10) }},
	{"model_n_params", func(r *record.Record) string { return strconv.FormatUint(r.ModelParams, 10) }},
	{"n_batch", func(r *record.Record) string { return strconv.Itoa(r.NBatch) }},
	{"n_ubatch", func(r *record.Record) string { return strconv.Itoa(r.NUBatch) }},
	{"n_threads", func(r *record.Record) string { return strconv.Itoa(r.NThreads) }},
	{"type_k", func(r *record.Record) string { return r.TypeK }},
	{"type_v", func(r *record.Record) string { return r.TypeV }},
	{"n_gpu_layers", func(r *record.Record) string { return strconv.Itoa(r.NGPULayers) }},
	{"flash_attn", func(r *record.Record) string { return strconv.Itoa(int(r.FlashAttn)) }},
	{"n_prompt", func(r *record.Record) string { return strconv.Itoa(r.NPrompt) }},
	{"n_gen", func(r *record.Record) string { return strconv.Itoa(r.NGen) }},
	{"n_depth", func(r *record.Record) string { return strconv.Itoa(r.NDepth) }},
	{"n_parallel", func(r *record.Record) string { return strconv.Itoa(r.NParallel) }},
	{"sampling", func(r *record.Record) string { return r.Sampling }},
	{"test", func(r *record.Record) string { return r.Test }},
	{"status", func(r *record.Record) string { return string(r.Status) }},
	{"reason", func(r *record.Record) string { return r.Reason }},
	{"key", func(r *record.Record) string { return r.Key.String() }},
	{"avg_ns", func(r *record.Record) string { return strconv.FormatUint(r.AvgNs, 10) }},
	{"stddev_ns", func(r *record.Record) string { return strconv.FormatUint(r.StddevNs, 10) }},
	{"avg_ts", func(r *record.Record) string { return fmtF(r.AvgTs) }},
	{"stddev_ts", func(r *record.Record) string { return fmtF(r.StddevTs) }},
	{"median_ts", func(r *record.Record) string { return fmtF(r.MedianTs) }},
	{"ci95_ts", func(r *record.Record) string { return fmtF(r.CI95Ts) }},
	{"cv", func(r *record.Record) string { return fmtF(r.CV) }},
	{"repetitions", func(r *record.Record) string { return strconv.Itoa(r.Reps) }},
	{"ci_target_met", func(r *record.Record) string {
		if r.CITargetMet == nil {
			return ""
		}
		return strconv.FormatBool(*r.CITargetMet)
	}},
	{"avg_ts_per_seq", func(r *record.Record) string { return fmtF(r.AvgTsPerSeq) }},
	{"ttft_p50_ms", func(r *record.Record) string { return latF(r.TTFT, 50) }},
	{"itl_p50_ms", func(r *record.Record) string { return latF(r.ITL, 50) }},
	{"itl_p90_ms", func(r *record.Record) string { return latF(r.ITL, 90) }},
	{"itl_p99_ms", func(r *record.Record) string { return latF(r.ITL, 99) }},
	{"itl_max_ms", func(r *record.Record) string { return latF(r.ITL, 100) }},
	{"gpu_util", func(r *record.Record) string { return gpuStat(r, "gpu_util", "%.2f") }},
	{"mem_util", func(r *record.Record) string { return gpuStat(r, "mem_util", "%.2f") }},
	{"power_w", func(r *record.Record) string { return gpuStat(r, "power_w", "%.2f") }},
	{"energy_j", func(r *record.Record) string { return optF(r.EnergyJ) }},
	{"tokens_per_j", func(r *record.Record) string { return optF(r.TokensPerJ) }},
	{"throttled", func(r *record.Record) string { return strconv.FormatBool(r.Throttled) }},
	// A mixture of experts: experts per layer, and those a step read, as
	// measured and as an even router would (empty for a dense model).
	{"n_expert", func(r *record.Record) string {
		return expertF(r, func(x *record.Experts) string { return strconv.Itoa(x.Count) })
	}},
	{"experts_per_step", func(r *record.Record) string {
		return expertF(r, func(x *record.Experts) string { return fmtF(x.Distinct) })
	}},
	{"experts_uniform_per_step", func(r *record.Record) string {
		return expertF(r, func(x *record.Experts) string { return fmtF(x.Uniform) })
	}},
	{"test_time", func(r *record.Record) string { return r.TestTime.Format("2006-01-02T15:04:05Z") }},
}

func expertF(r *record.Record, f func(*record.Experts) string) string {
	if r.Experts == nil {
		return ""
	}
	return f(r.Experts)
}

func optF(f *float64) string {
	if f == nil {
		return ""
	}
	return fmtF(*f)
}

func fmtF(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) }

func latF(l *stats.Latency, p int) string {
	if l == nil {
		return ""
	}
	switch p {
	case 50:
		return fmtF(l.P50)
	case 90:
		return fmtF(l.P90)
	case 99:
		return fmtF(l.P99)
	}
	return fmtF(l.Max)
}

// CSV writes one row per record with a header: llama-bench's fields
// first, as its -o csv writes them (booleans 0 or 1), then tokbench's.
func CSV(w io.Writer, recs []record.Record) error {
	cw := csv.NewWriter(w)
	lb := map[string]bool{}
	var head []string
	for _, f := range LlamaBenchFields {
		lb[f.name] = true
		head = append(head, f.name)
	}
	for _, f := range csvFields {
		if !lb[f.name] {
			head = append(head, f.name)
		}
	}
	cw.Write(head)
	for i := range recs {
		var row []string
		for _, f := range LlamaBenchFields {
			row = append(row, csvValue(f.value(&recs[i])))
		}
		for _, f := range csvFields {
			if !lb[f.name] {
				row = append(row, f.value(&recs[i]))
			}
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// csvValue is a llama-bench field as its CSV writes it.
func csvValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "1"
		}
		return "0"
	case float64:
		return fmtF(x)
	}
	return fmt.Sprint(v)
}
