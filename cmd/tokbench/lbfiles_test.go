package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The real llama-bench of the pinned commit (b7437, ec98e2002, built with
// CMake's defaults) wrote testdata/llama-bench-b7437 on the synthetic
// smollm-135m Q8_0 (tokbench synth --preset smollm-135m --type q8_0 --out
// smollm-q8_0.gguf), as `llama-bench -m smollm-q8_0.gguf -p 16 -n 4 -r 1
// -o FORMAT`. tokbench run with that command line writes, field by field,
// llama-bench's names, order, types, encoding and values in JSON, JSONL,
// CSV and SQL, then its own fields after them: all but what was measured,
// when, and the build's and the machine's own facts.
var lbOwnFacts = map[string]bool{
	"build_commit": true, "cpu_info": true, "gpu_info": true, "n_threads": true, "test_time": true,
	"avg_ns": true, "stddev_ns": true, "avg_ts": true, "stddev_ts": true, "samples_ns": true, "samples_ts": true,
}

// lbField is one field of a row as a file holds it: its name, its JSON
// kind (or the SQL literal's) and its text.
type lbField struct{ name, kind, text string }

func TestSameFilesAsLlamaBench(t *testing.T) {
	dir := t.TempDir()
	if r := tokbench(t, "synth", "--preset", "smollm-135m", "--type", "q8_0", "--out", filepath.Join(dir, "smollm-q8_0.gguf")); r.code != 0 {
		t.Fatalf("synth: %s", r.stderr)
	}
	for _, format := range []string{"json", "jsonl", "csv", "sql"} {
		want, err := os.ReadFile(filepath.Join("testdata", "llama-bench-b7437", "smollm-q8_0."+format))
		if err != nil {
			t.Fatal(err)
		}
		r := tokbenchIn(t, dir, "run", "-m", "smollm-q8_0.gguf", "-p", "16", "-n", "4", "-r", "1", "--no-kernels", "--no-probe", "-o", format)
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", format, r.code, r.stderr)
		}
		lbRows, tbRows := lbRowsOf(t, format, want), lbRowsOf(t, format, []byte(r.stdout))
		if len(lbRows) != 2 || len(tbRows) != len(lbRows) {
			t.Fatalf("%s: %d rows of tokbench's, %d of llama-bench's\n%s", format, len(tbRows), len(lbRows), r.stdout)
		}
		for i := range lbRows {
			if len(tbRows[i]) < len(lbRows[i]) {
				t.Fatalf("%s row %d: %d fields, llama-bench's %d", format, i, len(tbRows[i]), len(lbRows[i]))
			}
			for j, w := range lbRows[i] {
				g := tbRows[i][j]
				switch {
				case g.name != w.name:
					t.Errorf("%s row %d field %d: %s, llama-bench's is %s", format, i, j, g.name, w.name)
				case g.kind != w.kind:
					t.Errorf("%s row %d: %s is a %s (%s), llama-bench's a %s (%s)", format, i, w.name, g.kind, g.text, w.kind, w.text)
				case !lbOwnFacts[w.name] && g.text != w.text:
					t.Errorf("%s row %d: %s = %s, llama-bench's %s", format, i, w.name, g.text, w.text)
				}
			}
		}
		if format == "sql" {
			// The table is llama-bench's, byte for byte.
			create := regexp.MustCompile(`(?s)CREATE TABLE IF NOT EXISTS llama_bench \(.*?\);`)
			if g, w := create.FindString(r.stdout), create.FindString(string(want)); g != w || w == "" {
				t.Errorf("sql: CREATE TABLE\n%s\nllama-bench's\n%s", g, w)
			}
		}
	}
}

// tokbenchIn runs tokbench in dir (its output is the test's: a failure
// ends the test).
func tokbenchIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOKBENCH_CACHE="+filepath.Join(workDir, "cache"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return result{out.String(), errb.String(), code}
}

// lbRowsOf reads a file's rows as their fields, in the file's order.
func lbRowsOf(t *testing.T, format string, b []byte) [][]lbField {
	t.Helper()
	var rows [][]lbField
	switch format {
	case "json", "jsonl":
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if format == "json" {
			if _, err := d.Token(); err != nil { // [
				t.Fatal(err)
			}
		}
		for d.More() {
			rows = append(rows, jsonFields(t, d))
		}
	case "csv":
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		head := strings.Split(lines[0], ",")
		for _, line := range lines[1:] {
			cells, err := csv.NewReader(strings.NewReader(line)).Read()
			if err != nil {
				t.Fatalf("csv %q: %v", line, err)
			}
			var row []lbField
			for i, c := range cells {
				// llama-bench quotes every value: the encoding is checked as the kind.
				kind := "bare"
				if strings.HasPrefix(line, `"`) {
					kind = "quoted"
				}
				row = append(row, lbField{head[i], kind, c})
			}
			rows = append(rows, row)
		}
	case "sql":
		insert := regexp.MustCompile(`(?m)^INSERT INTO llama_bench \((.*?)\) VALUES \((.*)\);$`)
		for _, m := range insert.FindAllStringSubmatch(string(b), -1) {
			names := strings.Split(m[1], ", ")
			vals := strings.Split(m[2], ", ")
			var row []lbField
			for i, n := range names {
				v := vals[i]
				kind := "literal"
				if strings.HasPrefix(v, "'") {
					kind, v = "quoted", strings.Trim(v, "'")
				}
				row = append(row, lbField{n, kind, v})
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// jsonFields reads one JSON object's fields in order, each value's JSON
// kind and text (arrays as their text).
func jsonFields(t *testing.T, d *json.Decoder) []lbField {
	t.Helper()
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %v %v", tok, err)
	}
	var out []lbField
	for d.More() {
		name, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		kind := "number"
		switch raw[0] {
		case '"':
			kind = "string"
		case 't', 'f':
			kind = "bool"
		case '[':
			kind = "array"
		case '{':
			kind = "object"
		case 'n':
			kind = "null"
		}
		var v any
		json.Unmarshal(raw, &v)
		text := string(raw)
		if s, ok := v.(string); ok {
			text = s
		}
		out = append(out, lbField{name.(string), kind, text})
	}
	d.Token() // }
	return out
}

// The real llama-bench's files go into a database, every format alike,
// SQL text included (its rows carry their ids, which are the table's,
// never a column), and their rows read back.
func TestLlamaBenchFilesIntoADatabase(t *testing.T) {
	for _, format := range []string{"json", "jsonl", "csv", "sql"} {
		db := filepath.Join(t.TempDir(), "new.db")
		in := filepath.Join("testdata", "llama-bench-b7437", "smollm-q8_0."+format)
		if r := tokbench(t, "report", in, "--sqlite", db); r.code != 0 || !strings.Contains(r.stderr, "2 tests appended") {
			t.Errorf("%s into a new database: exit %d: %s", format, r.code, r.stderr)
			continue
		}
		if r := tokbench(t, "report", db, "-o", "jsonl"); r.code != 0 || strings.Count(r.stdout, "\n") != 2 || strings.Contains(r.stdout, `"rowid"`) {
			t.Errorf("%s read back: exit %d: %s%s", format, r.code, r.stdout, r.stderr)
		}
	}
}
