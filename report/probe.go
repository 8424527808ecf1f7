package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/tokbench/tokbench/roofline"
)

// WriteProbe writes a probe's ceilings: as JSON, or as a line for the
// class and one per weight type, in the order of types.
func WriteProbe(w io.Writer, format string, p *roofline.Probe, types []string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	pk := p.Peaks()
	fmt.Fprintf(w, "class %s: memory %.1f GB/s (copy), read %.1f GB/s, best GEMM %.2f TFLOP/s\n", p.Class, pk.BWGBs, pk.ReadBWGBs, pk.TFLOPS)
	for _, t := range types {
		fmt.Fprintf(w, "  %-6s GEMM %8.1f GFLOP/s   GEMV %8.1f GFLOP/s\n", t, p.MatMul[t].GEMM, p.MatMul[t].GEMV)
	}
	return nil
}
