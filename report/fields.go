package report

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
	"github.com/tokbench/tokbench/stats"
)

// LlamaBenchFields are the pinned llama.cpp's llama-bench fields (release
// b7437, test::get_fields), in its order and with its SQL types, which -o
// sql, csv, json and jsonl all carry, so that llama.cpp's tools read every
// one of them. Settings tokbench keeps off (embeddings, fit_target,
// fit_min_ctx) are written as llama-bench writes them off.
// flash_attn is -1 (auto), 0 or 1, as llama.cpp's setting is; the
// database's column is an integer. n_gpu_layers is what was given (-1 or
// 99: all layers), as llama-bench writes it.
var LlamaBenchFields = withSwitches([]sqlField{
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
	{"n_cpu_moe", "INTEGER", func(r *record.Record) any { return r.NCPUMoE }},
	{"split_mode", "TEXT", func(r *record.Record) any { return r.SplitMode }},
	{"main_gpu", "INTEGER", func(r *record.Record) any { return r.MainGPU }},
	{"no_kv_offload", "INTEGER", func(r *record.Record) any { return r.NoKVOffload }},
	{"flash_attn", "INTEGER", func(r *record.Record) any { return int(r.FlashAttn) }},
	{"devices", "TEXT", func(r *record.Record) any { return cmp.Or(string(r.Devices), "auto") }},
	{"tensor_split", "TEXT", func(r *record.Record) any { return cmp.Or(r.TensorSplit, "0.00") }},
	{"tensor_buft_overrides", "TEXT", func(r *record.Record) any { return cmp.Or(r.TensorOverrides, "none") }},
	{"use_mmap", "INTEGER", func(r *record.Record) any { return r.UseMmap }},
	{"embeddings", "INTEGER", func(r *record.Record) any { return r.Embeddings }},
	switchesHere,
	{"fit_target", "INTEGER", func(r *record.Record) any { return r.FitTarget }},
	{"fit_min_ctx", "INTEGER", func(r *record.Record) any { return r.FitMinCtx }},
	{"n_prompt", "INTEGER", func(r *record.Record) any { return r.NPrompt }},
	{"n_gen", "INTEGER", func(r *record.Record) any { return r.NGen }},
	{"n_depth", "INTEGER", func(r *record.Record) any { return r.NDepth }},
	{"test_time", "TEXT", func(r *record.Record) any { return r.TestTime.UTC().Format(time.RFC3339) }},
	{"avg_ns", "INTEGER", func(r *record.Record) any { return r.AvgNs }},
	{"stddev_ns", "INTEGER", func(r *record.Record) any { return r.StddevNs }},
	{"avg_ts", "REAL", func(r *record.Record) any { return r.AvgTs }},
	{"stddev_ts", "REAL", func(r *record.Record) any { return r.StddevTs }},
})

// currentFields are the columns the current llama-bench writes that the
// pinned one does not (load_mode in place of use_mmap, from 2026): a
// table tokbench makes has them too, so that its INSERTs fit.
var currentFields = []sqlField{
	{"use_direct_io", "INTEGER", func(r *record.Record) any { return false }},
	{"load_mode", "TEXT", func(r *record.Record) any {
		if m, ok := r.Extra["load_mode"].(string); ok {
			return m // as read: dio, none, mmap
		}
		if r.UseMmap {
			return "mmap"
		}
		return "none"
	}},
}

// extraFields are the fields of recs' Extra (what their llama-bench rows
// held that tokbench has no field for), sorted, less those named in have
// (the writer's own columns): columns after llama-bench's, so that a row
// passes through whole. A column is INTEGER or REAL when its first value
// is a number or boolean, else TEXT.
func extraFields(recs []record.Record, have ...[]sqlField) []sqlField {
	x := newExtras(have...)
	for i := range recs {
		x.add(&recs[i])
	}
	return x.fields()
}

// extras gathers extraFields one record at a time.
type extras struct {
	taken map[string]bool
	out   []sqlField
}

func newExtras(have ...[]sqlField) *extras {
	x := &extras{taken: map[string]bool{}}
	for _, fs := range have {
		for _, f := range fs {
			x.taken[f.name] = true
		}
	}
	return x
}

// add gathers r's fields, and returns those it is the first to have.
func (x *extras) add(r *record.Record) []sqlField {
	n := len(x.out)
	for _, name := range r.Extra.Names() {
		if x.taken[name] {
			continue
		}
		x.taken[name] = true
		typ := "TEXT"
		switch v := r.Extra[name].(type) {
		case bool, int64:
			typ = "INTEGER"
		case float64:
			typ = map[bool]string{true: "INTEGER", false: "REAL"}[v == float64(int64(v))]
		}
		x.out = append(x.out, sqlField{name, typ, func(r *record.Record) any {
			if f, ok := r.Extra[name].(float64); ok && f == float64(int64(f)) {
				return int64(f) // a JSON number as it was written: 1, not 1.000000
			}
			return r.Extra[name]
		}})
	}
	return slices.Clone(x.out[n:])
}

// fields are the fields gathered, sorted.
func (x *extras) fields() []sqlField {
	out := slices.Clone(x.out)
	slices.SortFunc(out, func(a, b sqlField) int { return strings.Compare(a.name, b.name) })
	return out
}

// ownFields are tokbench's columns of its own SQL table, one row beside
// each of llama-bench's: a test of several sequences has n_parallel > 1
// (its avg_ts counts all of them), the test's name says so, and record is
// the whole record, read back by report, merge and baseline.
var ownFields = []sqlField{
	{"n_parallel", "INTEGER", func(r *record.Record) any { return max(r.NParallel, 1) }},
	{"test", "TEXT", func(r *record.Record) any { return r.Test }},
	{"tool", "TEXT", func(r *record.Record) any { return r.Tool }},
	{record.OwnRecord, "TEXT", func(r *record.Record) any {
		b, _ := r.MarshalJSON() // records are made writable before they are written (json.Marshal would compact it again)
		return string(b)
	}},
}

type sqlField struct {
	name, typ string
	value     func(r *record.Record) any
}

// switchesHere marks where the fields of point.Switches go (withSwitches).
var switchesHere = sqlField{"point.Switches", "", nil}

// Name is the field's name.
func (f sqlField) Name() string { return f.name }

// withSwitches puts the fields of point.Switches' settings where fields
// marks their place (after embeddings, as llama-bench writes its newer
// switches).
func withSwitches(fields []sqlField) []sqlField {
	var out []sqlField
	for _, f := range fields {
		if f.name != switchesHere.name {
			out = append(out, f)
			continue
		}
		for _, st := range point.Fields() {
			typ := "INTEGER"
			if st.Type == 's' {
				typ = "TEXT"
			}
			out = append(out, sqlField{st.Field, typ, func(r *record.Record) any { return st.Typed(r.Switches) }})
		}
	}
	return out
}

// tokbenchFields are tokbench's own fields in CSV, after llama-bench's
// (LlamaBenchFields): the name each has there and its text.
var tokbenchFields = []struct {
	name  string
	value func(r *record.Record) string
}{
	{"ollama_version", func(r *record.Record) string { return r.OllamaVersion }},
	{"backend", func(r *record.Record) string { return r.Backend }},
	{"model_file_type", func(r *record.Record) string { return r.ModelFileType }},
	{"n_parallel", func(r *record.Record) string { return strconv.Itoa(r.NParallel) }},
	{"sampling", func(r *record.Record) string { return r.Sampling }},
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
// first, as its -o csv writes them (booleans 0 or 1), then tokbench's.
func CSV(w io.Writer, recs []record.Record) error {
	cw := csvWriter{csv.NewWriter(w)}
	own := make([]sqlField, len(tokbenchFields))
	for i, f := range tokbenchFields {
		own[i].name = f.name
	}
	lb := append(append([]sqlField{}, LlamaBenchFields...), extraFields(recs, LlamaBenchFields, own)...)
	var head []string
	for _, f := range lb {
		head = append(head, f.name)
	}
	for _, f := range tokbenchFields {
		head = append(head, f.name)
	}
	cw.Write(head)
	for i := range recs {
		var row []string
		for _, f := range lb {
			row = append(row, csvValue(f.value(&recs[i])))
		}
		for _, f := range tokbenchFields {
			row = append(row, f.value(&recs[i]))
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
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
