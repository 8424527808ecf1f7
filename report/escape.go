package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
)

// Output that a spreadsheet, a Markdown viewer or a database reads is
// inert, whatever a field holds (a model's file name, a failure's reason).

// mdReplacer keeps a cell one cell of plain text: a | would end it, < and
// & would start raw HTML, a newline the row.
var mdReplacer = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "&", "&amp;", "\n", " ", "\r", " ")

// printable is s as a terminal shows it and does nothing else: a
// control character a file carried (ESC, which starts a terminal's
// commands, BEL, a C1 control) is U+FFFD. Newlines and tabs are kept.
func printable(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}

func isControl(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }

// mdText is a Markdown cell's text: inert, and printable.
func mdText(s string) string { return mdReplacer.Replace(printable(s)) }

// mdRow is a Markdown table row of cells.
func mdRow(cells []string) string {
	esc := make([]string, len(cells))
	for i, c := range cells {
		esc[i] = mdText(c)
	}
	return "| " + strings.Join(esc, " | ") + " |"
}

// writeMarkdownTable writes a head and its rows as a Markdown table.
func writeMarkdownTable(w io.Writer, head []string, lines [][]string) {
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
	for _, l := range lines {
		fmt.Fprintln(w, mdRow(l))
	}
}

// csvWriter writes rows whose cells a spreadsheet takes as text: a cell
// that starts as a formula does (=, +, -, @, a tab or a carriage return)
// and is not a number gets a leading apostrophe.
type csvWriter struct{ *csv.Writer }

func (w csvWriter) Write(row []string) error {
	safe := make([]string, len(row))
	for i, c := range row {
		safe[i] = c
		if formula(c) {
			safe[i] = "'" + c
		}
	}
	return w.Writer.Write(safe)
}

func formula(c string) bool {
	if c == "" || !strings.ContainsRune("=+-@\t\r", rune(c[0])) {
		return false
	}
	_, err := strconv.ParseFloat(c, 64)
	return err != nil
}
