package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/roofline"
)

// ModelInfo writes what `tokbench info` shows of a validated model file:
// its format, shape and bytes per tensor type.
func ModelInfo(w io.Writer, path string, f *gguf.File, h gguf.Hparams) error {
	fmt.Fprintf(w, "%s: GGUF v%d, %d tensors, %d metadata keys, %.1f MiB\n", path, f.Version, len(f.Tensors), len(f.KV), float64(f.Size)/(1<<20))
	fmt.Fprintf(w, "arch %s: %d layers, embd %d, ff %d, heads %d/%d (KV), vocab %d, trained context %d, tied output %v\n",
		h.Arch, h.NLayer, h.NEmbd, h.NFF, h.NHead, h.NHeadKV, h.NVocab, h.NCtxTrain, h.TiedOutput)
	if x := f.Experts(h); x.Count > 0 {
		fmt.Fprintf(w, "experts: %d per layer, %d used per token; %.1f of the %.1f MiB of weights (%.0f%%) are experts, %.1f MiB one expert of every layer\n",
			x.Count, x.Used, float64(x.Bytes)/(1<<20), float64(f.TensorBytes())/(1<<20), 100*float64(x.Bytes)/float64(max(f.TensorBytes(), 1)), float64(x.Bytes)/float64(x.Count)/(1<<20))
		fmt.Fprintf(w, "  a step of 1, 8, 64 tokens reads %s experts per layer if its tokens pick them independently and evenly;\n",
			uniformExperts(x, 1, 8, 64))
		fmt.Fprintln(w, "  how the router really spreads them is measured by tokbench run (experts_distinct in its records), not assumed")
		if syn, ok := f.String("tokbench.synthetic"); ok {
			fmt.Fprintf(w, "  synthetic: %s\n", syn)
		}
	}
	byType := f.BytesByType()
	var names []string
	for n := range byType {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := fmt.Fprintf(w, "  %-8s %10.2f MiB\n", n, float64(byType[n])/(1<<20)); err != nil {
			return err
		}
	}
	return nil
}

// uniformExperts is the expected distinct experts of steps of the given
// token counts under an even, independent router.
func uniformExperts(x gguf.Experts, tokens ...int) string {
	var out []string
	for _, b := range tokens {
		out = append(out, fmt.Sprintf("%.1f", roofline.UniformExperts(float64(x.Count), float64(x.Used), float64(b))))
	}
	return strings.Join(out, ", ")
}
