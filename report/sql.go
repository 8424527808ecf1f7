package report

import (
	"cmp"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// LlamaBenchFields are llama-bench's fields, in its order and with the
// types of compare-llama-bench.py's database (LLAMA_BENCH_DB_FIELDS and
// _TYPES), which -o sql, csv, json and jsonl all carry, so that llama.cpp's
// tools read every one of them. Settings tokbench keeps off (embeddings,
// no_op_offload, fit_target, fit_min_ctx) are written as llama-bench
// writes them off. flash_attn is -1 (auto), 0 or 1, as llama.cpp's
// setting is; the database's column is an integer.
var LlamaBenchFields = sqlFields[:len(sqlFields)-3]

type sqlField struct {
	name, typ string
	value     func(r *record.Record) any
}

// switchesHere marks where the fields of point.Switches go (withSwitches).
var switchesHere = sqlField{"point.Switches", "", nil}

// Name is the field's name.
func (f sqlField) Name() string { return f.name }

// sqlFields are LlamaBenchFields, then three of tokbench's own.
var sqlFields = withSwitches([]sqlField{
	{"build_commit", "TEXT", func(r *record.Record) any { return r.BuildCommit }},
	{"build_number", "INTEGER", func(r *record.Record) any { return r.BuildNumber }},
	{"cpu_info", "TEXT", func(r *record.Record) any { return r.CPUInfo }},
	{"gpu_info", "TEXT", func(r *record.Record) any { return r.GPUInfo }},
	{"backends", "TEXT", func(r *record.Record) any { return r.Backends }},
	{"model_filename", "TEXT", func(r *record.Record) any { return r.ModelFile }},
	{"model_type", "TEXT", func(r *record.Record) any { return r.ModelType }},
	{"model_size", "INTEGER", func(r *record.Record) any { return r.ModelSize }},
	{"model_n_params", "INTEGER", func(r *record.Record) any { return r.ModelParams }},
	{"n_batch", "INTEGER", func(r *record.Record) any { return r.NBatch }},
	{"n_ubatch", "INTEGER", func(r *record.Record) any { return r.NUBatch }},
	{"n_threads", "INTEGER", func(r *record.Record) any { return r.NThreads }},
	{"cpu_mask", "TEXT", func(r *record.Record) any { return cmp.Or(r.CPUMask, "0x0") }},
	{"cpu_strict", "INTEGER", func(r *record.Record) any { return r.CPUStrict }},
	{"poll", "INTEGER", func(r *record.Record) any { return r.Poll }},
	{"type_k", "TEXT", func(r *record.Record) any { return r.TypeK }},
	{"type_v", "TEXT", func(r *record.Record) any { return r.TypeV }},
	{"n_gpu_layers", "INTEGER", func(r *record.Record) any { return r.NGPULayers }},
	{"split_mode", "TEXT", func(r *record.Record) any { return r.SplitMode }},
	{"main_gpu", "INTEGER", func(r *record.Record) any { return r.MainGPU }},
	{"no_kv_offload", "INTEGER", func(r *record.Record) any { return r.NoKVOffload }},
	{"flash_attn", "INTEGER", func(r *record.Record) any { return int(r.FlashAttn) }},
	{"tensor_split", "TEXT", func(r *record.Record) any { return cmp.Or(r.TensorSplit, "0.00") }},
	{"tensor_buft_overrides", "TEXT", func(r *record.Record) any { return cmp.Or(r.TensorOverrides, "none") }},
	{"use_mmap", "INTEGER", func(r *record.Record) any { return r.UseMmap }},
	{"embeddings", "INTEGER", func(r *record.Record) any { return r.Embeddings }},
	{"no_op_offload", "INTEGER", func(r *record.Record) any { return r.NoOpOffload }},
	switchesHere,
	{"n_prompt", "INTEGER", func(r *record.Record) any { return r.NPrompt }},
	{"n_gen", "INTEGER", func(r *record.Record) any { return r.NGen }},
	{"n_depth", "INTEGER", func(r *record.Record) any { return r.NDepth }},
	{"test_time", "TEXT", func(r *record.Record) any { return r.TestTime.UTC().Format(time.RFC3339) }},
	{"avg_ns", "INTEGER", func(r *record.Record) any { return r.AvgNs }},
	{"stddev_ns", "INTEGER", func(r *record.Record) any { return r.StddevNs }},
	{"avg_ts", "REAL", func(r *record.Record) any { return r.AvgTs }},
	{"stddev_ts", "REAL", func(r *record.Record) any { return r.StddevTs }},
	{"n_cpu_moe", "INTEGER", func(r *record.Record) any { return r.NCPUMoE }},
	{"fit_target", "INTEGER", func(r *record.Record) any { return r.FitTarget }},
	{"fit_min_ctx", "INTEGER", func(r *record.Record) any { return r.FitMinCtx }},
	// tokbench's: a test of several sequences has n_parallel > 1 (its
	// avg_ts counts all of them), and the test's name says so.
	{"n_parallel", "INTEGER", func(r *record.Record) any { return max(r.NParallel, 1) }},
	{"test", "TEXT", func(r *record.Record) any { return r.Test }},
	{"tool", "TEXT", func(r *record.Record) any { return r.Tool }},
})

// withSwitches puts the fields of point.Switches' settings where fields
// marks their place (after no_op_offload, as llama-bench writes its newer
// switches).
func withSwitches(fields []sqlField) []sqlField {
	var out []sqlField
	for _, f := range fields {
		if f.name != switchesHere.name {
			out = append(out, f)
			continue
		}
		for _, st := range point.Fields() {
			typ := "TEXT"
			if _, ok := st.Typed(point.Switches{}).(string); !ok {
				typ = "INTEGER"
			}
			out = append(out, sqlField{st.Field, typ, func(r *record.Record) any { return st.Typed(r.Switches) }})
		}
	}
	return out
}

// SQL writes the measured records as llama-bench's -o sql does: a CREATE
// TABLE IF NOT EXISTS llama_bench, then one INSERT per test. Tests that
// failed are left out, each with an SQL comment saying why.
func SQL(w io.Writer, recs []record.Record) error {
	names := make([]string, len(sqlFields))
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS llama_bench (\n")
	for i, f := range sqlFields {
		names[i] = f.name
		sep := ",\n"
		if i == len(sqlFields)-1 {
			sep = "\n"
		}
		fmt.Fprintf(&b, "  %s %s%s", f.name, f.typ, sep)
	}
	b.WriteString(");\n")
	for i := range recs {
		r := &recs[i]
		if !r.OK() {
			fmt.Fprintf(&b, "-- %s %s: %s, not written: %s\n", cmp.Or(r.ModelID, r.ModelFile), r.Test, r.Status, strings.ReplaceAll(r.Reason, "\n", " "))
			continue
		}
		vals := make([]string, len(sqlFields))
		for j, f := range sqlFields {
			vals[j] = sqlValue(f.value(r))
		}
		fmt.Fprintf(&b, "INSERT INTO llama_bench (%s) VALUES (%s);\n", strings.Join(names, ", "), strings.Join(vals, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sqlValue is a value as an SQL literal.
func sqlValue(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case bool:
		if x {
			return "1"
		}
		return "0"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
