package record

import (
	"bytes"
	"cmp"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
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

// add keeps an unknown field of a row, if it can be kept.
func (e *Extra) add(name string, v any) {
	if !extraName.MatchString(name) || len(*e) >= maxExtra {
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

// MarshalJSON writes the record, and its Extra fields also at the top
// level, where llama-bench wrote them.
func (r Record) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(plainRecord(r))
	if err != nil || len(r.Extra) == 0 {
		return b, err
	}
	var tail bytes.Buffer
	for _, k := range r.Extra.Names() {
		if ownNames[k] {
			continue
		}
		v, err := json.Marshal(r.Extra[k])
		if err != nil {
			return nil, err
		}
		tail.WriteString(`,"` + k + `":`)
		tail.Write(v)
	}
	return append(append(b[:len(b)-1], tail.Bytes()...), '}'), nil
}
