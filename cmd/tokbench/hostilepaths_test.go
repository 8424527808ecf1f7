package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every command that writes a file, given its own input, a results file
// another tokbench holds, or links planted at the names a careless writer
// would use beside its output: nothing it reads or points to changes,
// and a refusal says what to do.
func TestHostilePaths(t *testing.T) {
	dir := t.TempDir()
	results := someResults(t)
	in := filepath.Join(dir, "r.jsonl")
	os.WriteFile(in, []byte(results), 0o644)
	model := filepath.Join(dir, "m.gguf")
	if r := tokbench(t, "synth", "--preset", "tiny", "--type", "q8_0", "--out", model); r.code != 0 {
		t.Fatalf("synth: %s", r.stderr)
	}
	modelBytes, _ := os.ReadFile(model)
	live := filepath.Join(dir, "live.jsonl")
	os.WriteFile(live, []byte(results), 0o644)
	holdLock(t, live)
	unchanged := func(name, path string, want []byte) {
		t.Helper()
		if b, _ := os.ReadFile(path); string(b) != string(want) {
			t.Errorf("%s: %s changed (%d bytes now)", name, filepath.Base(path), len(b))
		}
	}

	// Its own input, or a live file: refused, the file as it was.
	for _, c := range []struct {
		name string
		args []string
		file string
		want []byte
	}{
		{"report onto its input", []string{"report", in, "-o", "md", "--out", in}, in, []byte(results)},
		{"report onto a live file", []string{"report", in, "--out", live}, live, []byte(results)},
		{"merge onto a live file", []string{"merge", in, "--out", live}, live, []byte(results)},
		{"quantize onto its input", []string{"quantize", "-m", model, "--type", "q8_0", "--out", model}, model, modelBytes},
	} {
		r := tokbench(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--out") {
			t.Errorf("%s: exit %d: %s", c.name, r.code, r.stderr)
		}
		unchanged(c.name, c.file, c.want)
	}

	// Links planted at the names beside each output: their targets keep
	// their content, whatever the command wrote.
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("victim"), 0o644)
	plant := func(out string) {
		for _, suffix := range []string{".tmp", ".part", ".new", "~", ".lock", "-1.svg", ".json.tmp"} {
			os.Symlink(victim, out+suffix)
		}
	}
	bdir := filepath.Join(dir, "baselines")
	os.Mkdir(bdir, 0o755)
	if r := tokbench(t, "baseline", "create", in, "--dir", bdir); r.code != 0 {
		t.Fatalf("baseline: %s", r.stderr)
	}
	classes, _ := filepath.Glob(filepath.Join(bdir, "*.json"))
	for _, c := range classes {
		plant(strings.TrimSuffix(c, ".json"))
		plant(c)
	}
	for _, c := range []struct {
		name string
		out  string
		args []string
	}{
		{"report", filepath.Join(dir, "rep.md"), []string{"report", in, "-o", "md", "--out"}},
		{"merge", filepath.Join(dir, "merged.jsonl"), []string{"merge", in, "--out"}},
		{"quantize", filepath.Join(dir, "q4.gguf"), []string{"quantize", "-m", filepath.Join(dir, "m16.gguf"), "--type", "q4_0", "--out"}},
		{"synth", filepath.Join(dir, "s.gguf"), []string{"synth", "--preset", "tiny", "--type", "q4_0", "--out"}},
		{"baseline", bdir, []string{"baseline", "create", in, "--dir"}},
	} {
		if c.name == "quantize" {
			if r := tokbench(t, "synth", "--preset", "tiny", "--type", "f16", "--out", filepath.Join(dir, "m16.gguf")); r.code != 0 {
				t.Fatalf("synth: %s", r.stderr)
			}
		}
		plant(c.out)
		if r := tokbench(t, append(c.args, c.out)...); r.code != 0 {
			t.Errorf("%s: exit %d: %s", c.name, r.code, r.stderr)
		}
		unchanged(c.name, victim, []byte("victim"))
	}
}
