package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// helpWidth is the widest line of a flag's help.
const helpWidth = 100

// flagHelp writes a flag as two parts: its names and value on one line,
// its usage and default (once) wrapped below it, so that help fits 100
// columns however long the longest flag name is.
func flagHelp(f cli.Flag) string {
	names := f.Names()
	var parts []string
	for i, n := range names {
		// Short names and aliases are llama-bench's single-dash spellings
		// (-pg, -ngl, -ctk); the rest take two.
		dash := "--"
		if len(n) <= 2 || (i > 0 && len(n) <= 5) {
			dash = "-"
		}
		parts = append(parts, dash+n)
	}
	head := strings.Join(parts, ", ")
	usage := ""
	if d, ok := f.(cli.DocGenerationFlag); ok {
		if d.TakesValue() {
			head += " value"
			if s, ok := f.(cli.DocGenerationSliceFlag); ok && s.IsSliceFlag() {
				head += " (list)"
			}
		}
		usage = d.GetUsage()
		def := d.GetDefaultText()
		if def == "" && d.TakesValue() {
			def = d.GetValue()
		}
		if def != "" && def != `""` && !strings.Contains(usage, "default") {
			usage += fmt.Sprintf(" (default: %s)", def)
		}
	}
	// urfave's help template indents what follows a flag's first line by 6 more.
	return head + "\n" + wrap(usage, "        ", helpWidth-6)
}

// wrap breaks text into lines of at most width columns, each indented.
func wrap(text, indent string, width int) string {
	var lines []string
	line := indent
	for _, w := range strings.Fields(text) {
		if line != indent && len([]rune(line))+1+len([]rune(w)) > width {
			lines = append(lines, line)
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}
