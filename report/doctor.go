package report

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tokbench/tokbench/internal/doctor"
)

// Findings writes a machine check: a line per check, and under each
// warning what it does to results and how to fix it.
func Findings(w io.Writer, format string, fs []doctor.Finding) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(fs)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	warnings := 0
	for _, f := range fs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Level, f.Check, f.Says)
		if f.Effect != "" {
			fmt.Fprintf(tw, "\t\t  effect: %s\n", f.Effect)
		}
		if f.Fix != "" {
			fmt.Fprintf(tw, "\t\t  fix: %s\n", f.Fix)
		}
		if f.Level == doctor.Warn {
			warnings++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d warning(s); tokbench changes none of this\n", warnings)
	return err
}
