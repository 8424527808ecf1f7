package point

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Every name a setting is given by is given once: keys, flags, aliases,
// key names, record fields.
func TestSettingsNamedOnce(t *testing.T) {
	seen := map[string]string{}
	name := func(kind, v, of string) {
		if v == "" {
			return
		}
		if prev, ok := seen[kind+" "+v]; ok {
			t.Errorf("%s %q is %s's and %s's", kind, v, prev, of)
		}
		seen[kind+" "+v] = of
	}
	for _, s := range Settings {
		of := s.Key + s.Flag
		name("key", s.Key, of)
		for _, f := range append([]string{s.Flag, s.Not}, s.Aliases...) {
			name("flag", f, of)
		}
		name("key name", s.KeyName, of)
		name("field", s.Field, of)
		if s.Key != "" && s.Set == nil {
			t.Errorf("%s has a key and no Set", of)
		}
		if (s.KeyName != "" || s.Field != "") && s.Get == nil {
			t.Errorf("%s is in keys or records but has no Get", of)
		}
		if s.Nest > 0 && s.Kind != List {
			t.Errorf("%s is an axis but not a list", of)
		}
		if s.KeyName != "" {
			if v, err := s.Check(s.Example); err != nil || v != s.Example || v == s.Default {
				t.Errorf("%s: example %q (checked %q, %v): give a value, as Check returns it, that is not the default", of, s.Example, v, err)
			}
		}
	}
}

// Switches' fields and the settings that name them agree: each field's
// JSON tag is a setting's Field, and each Field a field's tag.
func TestSwitchesFieldsAreSettings(t *testing.T) {
	var tags []string
	typ := reflect.TypeFor[Switches]()
	for i := range typ.NumField() {
		tags = append(tags, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
	}
	var fields []string
	for _, s := range Fields() {
		fields = append(fields, s.Field)
		if s.Type != 'b' && s.Type != 'i' && s.Type != 's' {
			t.Errorf("%s has no type in llama-bench's files", s.Field)
		}
		if s.Column == "" {
			t.Errorf("%s has no column", s.Field)
		}
	}
	slices.Sort(tags)
	slices.Sort(fields)
	if !slices.Equal(tags, fields) {
		t.Errorf("Switches' JSON tags %q, settings' fields %q", tags, fields)
	}
}

// Each knob a key's text names reads back what it wrote, and a knob at
// its default is not written (keys of older files still match).
func TestKnobsInKeys(t *testing.T) {
	values := map[string]string{"dev": "none", "ts": "3/1", "ot": "exps=CPU|x", "ncmoe": "4", "poll": "none", "C": "0xF",
		"strict": "true", "prio": "2", "nkvo": "true", "noh": "true", "nopo": "true"}
	p := Point{Shape: Shape{NBatch: 1, NUBatch: 1, Threads: 1}, Model: "m", NPrompt: 1, Parallel: 1}
	plain := p.Key().String()
	for _, s := range Settings {
		if !s.IsKnob() {
			continue
		}
		v, ok := values[s.KeyName]
		if !ok {
			t.Errorf("knob %s: give it a value in this test", s.KeyName)
			continue
		}
		if ok, err := setKeyValue(&p, s.KeyName, v); !ok || err != nil {
			t.Fatalf("setKeyValue %s=%s: %v %v", s.KeyName, v, ok, err)
		}
	}
	k := p.Key()
	text := k.String()
	if !strings.HasPrefix(text, plain+"|") || !strings.Contains(text, "|ot=exps=CPU%7Cx") {
		t.Errorf("key %s after %s", text, plain)
	}
	var back Key
	if err := back.UnmarshalText([]byte(text)); err != nil || back != k {
		t.Errorf("%s read back as %+v: %v", text, back, err)
	}
	var def Point
	if got := knobText(&def, func(s string) string { return s }); got != "" {
		t.Errorf("default knobs written: %q", got)
	}
}
