package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/record"
)

// A spreadsheet takes no cell as a formula; numbers stay numbers.
func TestCSVCellsAreInert(t *testing.T) {
	var b bytes.Buffer
	w := csvWriter{csv.NewWriter(&b)}
	w.Write([]string{"=HYPERLINK(\"http://x\")", "+cmd", "-1", "-2.5e3", "@SUM(A1)", "\tx", "plain", ""})
	w.Flush()
	got, err := csv.NewReader(&b).Read()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"'=HYPERLINK(\"http://x\")", "'+cmd", "-1", "-2.5e3", "'@SUM(A1)", "'\tx", "plain", ""}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A Markdown cell stays one cell of text.
func TestMarkdownCellsAreInert(t *testing.T) {
	got := mdRow([]string{"a|b", "<script>x</script>", "1 & 2", "line\nbreak"})
	want := `| a\|b | &lt;script&gt;x&lt;/script&gt; | 1 &amp; 2 | line break |`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// What a file carries is shown, never acted on: no terminal control
// character reaches a table, its notes or the wide footer, and no markup
// reaches a Markdown table or its footers.
func TestFileTextIsInert(t *testing.T) {
	r := record.Record{Test: "tg16", Status: record.StatusOK, Reason: "x", Key: point.Key{Model: "m.gguf", NGen: 16}}
	r.AvgTs, r.SamplesTs, r.ModelType = 10, []float64{10}, "evil\x1b[2J\a\u009b31m"
	r.BuildCommit, r.CPUInfo = "<script>alert(1)</script>", "<img src=x onerror=alert(1)>\x1b]0;t\a"
	r.Noise = &host.Noise{Warnings: []string{"warned \x1b[31mred"}}
	for _, c := range []struct {
		name  string
		write func(w *bytes.Buffer) error
		bad   []string
	}{
		{"table", func(w *bytes.Buffer) error { return Table(w, w, []record.Record{r}, false) }, []string{"\x1b", "\a", "\u009b"}},
		{"md", func(w *bytes.Buffer) error { return Table(w, w, []record.Record{r}, true) }, []string{"\x1b", "\a", "<script", "<img"}},
		{"wide", func(w *bytes.Buffer) error { return Wide(w, []record.Record{r}) }, []string{"\x1b", "\a", "\u009b"}},
		{"wide md", func(w *bytes.Buffer) error { return wideMarkdown(w, []record.Record{r}) }, []string{"\x1b", "\a", "<script", "<img"}},
	} {
		var b bytes.Buffer
		if err := c.write(&b); err != nil {
			t.Fatal(err)
		}
		for _, bad := range c.bad {
			if strings.Contains(b.String(), bad) {
				t.Errorf("%s carries %q:\n%q", c.name, bad, b.String())
			}
		}
		if !strings.Contains(b.String(), "evil") {
			t.Errorf("%s lost the model's name:\n%s", c.name, b.String())
		}
	}
}
