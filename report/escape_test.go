package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
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
