package report

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/stats"
)

// tokbenchFields are tokbench's own fields in CSV, after llama-bench's
// (record.LlamaBenchFields): the name each has there and its text.
var tokbenchFields = []struct {
	name  string
	value func(r *record.Record) string
}{
	{"ollama_version", func(r *record.Record) string { return r.OllamaVersion }},
	{"backend", func(r *record.Record) string { return r.Backend }},
	{"model_file_type", func(r *record.Record) string { return r.ModelFileType }},
	{"n_parallel", func(r *record.Record) string { return strconv.Itoa(r.NParallel) }},
	{"sampling", func(r *record.Record) string { return r.Sampling }},
	{"flash_attn_type", func(r *record.Record) string { return r.FlashAttnType }},
	{"test", func(r *record.Record) string { return r.Test }},
	{"status", func(r *record.Record) string { return string(r.Status) }},
	{"reason", func(r *record.Record) string { return r.Reason }},
	{"key", func(r *record.Record) string { return r.Key.String() }},
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
// first, as its -o csv writes them (every value quoted, booleans 0 or 1,
// rates with 6 decimals), then tokbench's.
func CSV(w io.Writer, recs []record.Record) error { return CSVOf(w, record.Slice(recs)) }

// CSVOf is CSV of src's records, read twice: for the columns their extra
// fields need, then for their rows, written one at a time.
func CSVOf(w io.Writer, src record.Source) error {
	var own []string
	for _, f := range tokbenchFields {
		own = append(own, f.name)
	}
	extra, err := record.ExtraFields(src, own...)
	if err != nil {
		return err
	}
	lb := append(append([]record.LBField{}, record.LlamaBenchFields...), extra...)
	var head []string
	for _, f := range lb {
		head = append(head, f.Name())
	}
	for _, f := range tokbenchFields {
		head = append(head, f.name)
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(strings.Join(head, ",") + "\n")
	row := make([]string, 0, len(head))
	err = src(func(r *record.Record) error {
		row = row[:0]
		for _, f := range lb {
			row = append(row, csvValue(f.Value(r)))
		}
		for _, f := range tokbenchFields {
			row = append(row, f.value(r))
		}
		_, err := bw.WriteString(quotedRow(row))
		return err
	})
	return cmp.Or(err, bw.Flush())
}

// quotedRow is a CSV row as llama-bench writes one: every cell quoted,
// its quotes doubled (a cell a spreadsheet would take as a formula
// starts with ', as every CSV of tokbench's does).
func quotedRow(cells []string) string {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteByte(',')
		}
		if formula(c) {
			c = "'" + c
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(c, `"`, `""`))
		b.WriteByte('"')
	}
	b.WriteByte('\n')
	return b.String()
}

// csvValue is a llama-bench field as its CSV writes it.
func csvValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
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
