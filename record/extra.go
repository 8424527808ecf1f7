package record

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tokbench/tokbench/point"
)

// Extra is what a llama-bench row carried that tokbench has no field for
// (load_mode, the fields of a newer llama-bench), as read: each written
// back beside llama-bench's fields in every format (JSON at the top, CSV
// and SQL as columns), so that a file passes through report, merge and
// report --sqlite whole. Only what can be a column is kept: a name of
// lower-case letters, digits and _, a text, number or boolean; at most
// maxExtra fields a row (a file is data, never trusted to be small).
type Extra map[string]any

const maxExtra = 64

var extraName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// add keeps an unknown field of a row, if it can be kept. SQLite's names
// of a row's id (rowid, oid, _rowid_) are the table's, never a field: a
// row read from a database or its SQL text carries its id under one, and
// a column of that name cannot be added to a table.
func (e *Extra) add(name string, v any) {
	if !extraName.MatchString(name) || len(*e) >= maxExtra || name == "rowid" || name == "oid" || name == "_rowid_" {
		return
	}
	switch v.(type) {
	case string, float64, bool, int64, json.Number:
	default:
		return
	}
	if *e == nil {
		*e = Extra{}
	}
	(*e)[name] = v
}

// Names are the fields of e, sorted.
func (e Extra) Names() []string {
	names := make([]string, 0, len(e))
	for k := range e {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// plainRecord is Record without its MarshalJSON.
type plainRecord Record

// ownNames are the top-level JSON names of a record's own fields: an
// Extra field of one of them is never written at the top.
var ownNames = func() map[string]bool {
	names := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			names[cmp.Or(name, f.Name)] = true
		}
	}
	walk(reflect.TypeFor[plainRecord]())
	return names
}()

// MarshalJSON writes the record as the pinned llama-bench's JSON begins
// one, then tokbench's own: llama-bench's fields first, in its order and
// with its types (LlamaBenchFields: flash_attn a bool), its samples, then
// the rest of the record (flash_attn_type first where -fa was auto), and
// the Extra fields at the top level, where llama-bench wrote them.
func (r Record) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2048)
	b = append(b, '{')
	for i, f := range LlamaBenchFields {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendField(b, f.name, f.value(&r)); err != nil {
			return nil, err
		}
	}
	for _, s := range [...]struct {
		name string
		v    any
	}{{"samples_ns", r.SamplesNs}, {"samples_ts", r.SamplesTs}} {
		var err error
		if b, err = appendField(append(b, ','), s.name, s.v); err != nil {
			return nil, err
		}
	}
	if r.FlashAttnSetting() == point.FlashAuto {
		b = append(b, `,"flash_attn_type":"auto"`...)
	}
	t := reflect.New(tailType()).Elem()
	t.Field(0).Set(reflect.ValueOf(plainRecord(r)))
	tail, err := json.Marshal(t.Interface())
	if err != nil {
		return nil, err
	}
	if len(tail) > 2 {
		b = append(append(b, ','), tail[1:len(tail)-1]...)
	}
	for _, k := range r.Extra.Names() {
		if ownNames[k] || headNames()[k] {
			continue
		}
		if b, err = appendField(append(b, ','), k, r.Extra[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendField appends "name":value, the value as encoding/json writes it
// (a plain integer or boolean directly).
func appendField(b []byte, name string, v any) ([]byte, error) {
	b = append(append(append(b, '"'), name...), '"', ':')
	switch x := v.(type) {
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	}
	j, err := json.Marshal(v)
	return append(b, j...), err
}

// headNames are the names MarshalJSON writes before the rest of a
// record: llama-bench's fields, its samples and flash_attn_type.
var headNames = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{"samples_ns": true, "samples_ts": true, "flash_attn_type": true}
	for _, f := range LlamaBenchFields {
		names[f.name] = true
	}
	return names
})

// tailType is a record with the head's names hidden: a struct that
// embeds plainRecord beside an empty field of each of those names, which
// encoding/json prefers to the deeper ones and leaves out (nil,
// omitempty).
var tailType = sync.OnceValue(func() reflect.Type {
	fields := []reflect.StructField{{Name: "R", Type: reflect.TypeFor[plainRecord](), Anonymous: true}}
	for name := range headNames() {
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("H%d", len(fields)), Type: reflect.TypeFor[*struct{}](),
			Tag: reflect.StructTag(`json:"` + name + `,omitempty"`)})
	}
	return reflect.StructOf(fields)
})
