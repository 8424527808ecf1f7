package record

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/tokbench/tokbench/point"
)

// llama-bench's format, in one place: its fields with their kinds and
// values (this file), the reading of every format and version
// (llamabench.go, sqltext.go, tables.go) and the writing of its SQL and
// SQLite (lbsql.go).

// LlamaBenchFields are the pinned llama.cpp's llama-bench fields (release
// b7437, test::get_fields), in its order and with its SQL types, which -o
// sql, csv, json and jsonl all carry, so that llama.cpp's tools read every
// one of them. Settings tokbench keeps off (embeddings) are written as
// llama-bench writes them off. flash_attn is its bool (0 or 1 in CSV and
// SQL): on or off as the test ran (-fa auto, which it lacks, is said in
// tokbench's flash_attn_type). n_gpu_layers is what was given (-1 or 99:
// all layers), as llama-bench writes it.
var LlamaBenchFields = withSwitches([]LBField{
	{"build_commit", 's', func(r *Record) any { return r.BuildCommit }},
	{"build_number", 'i', func(r *Record) any { return r.BuildNumber }},
	{"cpu_info", 's', func(r *Record) any { return r.CPUInfo }},
	{"gpu_info", 's', func(r *Record) any { return r.GPUInfo }},
	{"backends", 's', func(r *Record) any { return r.Backends }},
	{"model_filename", 's', func(r *Record) any { return r.ModelFile }},
	{"model_type", 's', func(r *Record) any { return r.ModelType }},
	{"model_size", 'i', func(r *Record) any { return r.ModelSize }},
	{"model_n_params", 'i', func(r *Record) any { return r.ModelParams }},
	{"n_batch", 'i', func(r *Record) any { return r.NBatch }},
	{"n_ubatch", 'i', func(r *Record) any { return r.NUBatch }},
	{"n_threads", 'i', func(r *Record) any { return r.Threads }},
	{"cpu_mask", 's', func(r *Record) any { return cmp.Or(r.CPUMask, "0x0") }},
	{"cpu_strict", 'b', func(r *Record) any { return r.CPUStrict }},
	{"poll", 'i', func(r *Record) any { return r.Poll }},
	{"type_k", 's', func(r *Record) any { return r.TypeK }},
	{"type_v", 's', func(r *Record) any { return r.TypeV }},
	{"n_gpu_layers", 'i', func(r *Record) any { return r.NGPULayers }},
	{"n_cpu_moe", 'i', func(r *Record) any { return r.NCPUMoE }},
	{"split_mode", 's', func(r *Record) any { return r.SplitMode }},
	{"main_gpu", 'i', func(r *Record) any { return r.MainGPU }},
	{"no_kv_offload", 'b', func(r *Record) any { return r.NoKVOffload }},
	{"flash_attn", 'a', func(r *Record) any { return r.FlashAttn == point.FlashOn }},
	{"devices", 's', func(r *Record) any { return cmp.Or(string(r.Devices), "auto") }},
	{"tensor_split", 's', func(r *Record) any { return cmp.Or(r.TensorSplit, "0.00") }},
	{"tensor_buft_overrides", 's', func(r *Record) any { return cmp.Or(r.TensorOverrides, "none") }},
	{"use_mmap", 'b', func(r *Record) any { return r.UseMmap }},
	{"embeddings", 'b', func(r *Record) any { return r.Embeddings }},
	switchesHere,
	{"n_prompt", 'i', func(r *Record) any { return r.NPrompt }},
	{"n_gen", 'i', func(r *Record) any { return r.NGen }},
	{"n_depth", 'i', func(r *Record) any { return r.NDepth }},
	{"test_time", 's', func(r *Record) any { return r.TestTime.UTC().Format(time.RFC3339) }},
	{"avg_ns", 'i', func(r *Record) any { return r.AvgNs }},
	{"stddev_ns", 'i', func(r *Record) any { return r.StddevNs }},
	{"avg_ts", 'f', func(r *Record) any { return r.AvgTs }},
	{"stddev_ts", 'f', func(r *Record) any { return r.StddevTs }},
})

// currentFields are the columns the current llama-bench writes that the
// pinned one does not (load_mode in place of use_mmap, fitting to free
// memory, from 2026): a table tokbench makes has them too, so that its
// INSERTs fit. tokbench keeps fitting off (0); a record read from a file
// that has them keeps them as they were (Extra).
var currentFields = []LBField{
	{"fit_target", 'i', func(r *Record) any { return extraOr(r, "fit_target") }},
	{"fit_min_ctx", 'i', func(r *Record) any { return extraOr(r, "fit_min_ctx") }},
	{"use_direct_io", 'b', func(r *Record) any { return false }},
	{"load_mode", 's', func(r *Record) any {
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
func extraFields(src Source, have ...[]LBField) ([]LBField, error) {
	x := newExtras(have...)
	err := src(func(r *Record) error { x.add(r); return nil })
	return x.fields(), err
}

// ExtraFields are the extra fields (extraFields) of src's records less
// llama-bench's and those named in taken: a writer's columns after
// llama-bench's.
func ExtraFields(src Source, taken ...string) ([]LBField, error) {
	own := make([]LBField, len(taken))
	for i, name := range taken {
		own[i].name = name
	}
	return extraFields(src, LlamaBenchFields, own)
}

// extras gathers extraFields one record at a time.
type extras struct {
	taken map[string]bool
	out   []LBField
}

func newExtras(have ...[]LBField) *extras {
	x := &extras{taken: map[string]bool{}}
	for _, fs := range have {
		for _, f := range fs {
			x.taken[f.name] = true
		}
	}
	return x
}

// add gathers r's fields, and returns those it is the first to have.
func (x *extras) add(r *Record) []LBField {
	n := len(x.out)
	for _, name := range r.Extra.Names() {
		if x.taken[name] {
			continue
		}
		x.taken[name] = true
		kind := byte('s')
		switch v := r.Extra[name].(type) {
		case bool, int64:
			kind = 'i'
		case float64:
			kind = map[bool]byte{true: 'i', false: 'f'}[v == float64(int64(v))]
		}
		x.out = append(x.out, LBField{name, kind, func(r *Record) any {
			if f, ok := r.Extra[name].(float64); ok && f == float64(int64(f)) {
				return int64(f) // a JSON number as it was written: 1, not 1.000000
			}
			return r.Extra[name]
		}})
	}
	return slices.Clone(x.out[n:])
}

// fields are the fields gathered, sorted.
func (x *extras) fields() []LBField {
	out := slices.Clone(x.out)
	slices.SortFunc(out, func(a, b LBField) int { return strings.Compare(a.name, b.name) })
	return out
}

// ownFields are tokbench's columns of its own SQL table, one row beside
// each of llama-bench's: a test of several sequences has n_parallel > 1
// (its avg_ts counts all of them), the test's name says so, and record is
// the whole record, read back by report, merge and baseline.
var ownFields = []LBField{
	{"n_parallel", 'i', func(r *Record) any { return max(r.NParallel, 1) }},
	{"test", 's', func(r *Record) any { return r.Test }},
	{"tool", 's', func(r *Record) any { return r.Tool }},
	{OwnRecord, 's', func(r *Record) any {
		b, _ := r.MarshalJSON() // records are made writable before they are written (json.Marshal would compact it again)
		return string(b)
	}},
}

// extraOr is an integer field of r's Extra, 0 where r has none.
func extraOr(r *Record, name string) any {
	if v, ok := r.Extra[name]; ok {
		return v
	}
	return 0
}

// LBField is a column of llama-bench's files: its name, its kind (i
// integer, b boolean, f real, s text, a flash_attn: -1, 0, 1 or a bool)
// and its value in a record.
type LBField struct {
	name  string
	kind  byte
	value func(r *Record) any
}

// switchesHere marks where the fields of point.Switches go (withSwitches).
var switchesHere = LBField{"point.Switches", 'x', nil}

// Name is the field's name.
func (f LBField) Name() string { return f.name }

// Value is the field's value in r, as llama-bench types it.
func (f LBField) Value(r *Record) any { return f.value(r) }

// sqlType is the field's column type in llama-bench's SQL.
func (f LBField) sqlType() string {
	switch f.kind {
	case 's':
		return "TEXT"
	case 'f':
		return "REAL"
	}
	return "INTEGER"
}

// withSwitches puts the fields of point.Switches' settings where fields
// marks their place (after embeddings, as llama-bench writes its newer
// switches).
func withSwitches(fields []LBField) []LBField {
	var out []LBField
	for _, f := range fields {
		if f.name != switchesHere.name {
			out = append(out, f)
			continue
		}
		for _, st := range point.Fields() {
			out = append(out, LBField{st.Field, st.Type, func(r *Record) any { return st.Typed(r.Switches) }})
		}
	}
	return out
}

// lbKinds are the kinds of llama-bench's fields (and the tokbench fields
// a tokbench SQL row carries) as a Record reads them. Every format of
// llama-bench's gives values of other kinds somewhere: CSV and SQL text,
// older JSON flash_attn a bool, newer no_op_offload a bool.
var lbKinds = func() map[string]byte {
	kinds := map[string]byte{}
	for _, fs := range [][]LBField{LlamaBenchFields, ownFields} {
		for _, f := range fs {
			if f.name != OwnRecord {
				kinds[f.name] = f.kind
			}
		}
	}
	kinds["flash_attn_type"] = 's' // tokbench's, in its CSV: -fa auto
	return kinds
}()
