package report

import (
	"fmt"
	"io"
	"sort"

	"github.com/tokbench/tokbench/gguf"
)

// ModelInfo writes what `tokbench info` shows of a validated model file:
// its format, shape and bytes per tensor type.
func ModelInfo(w io.Writer, path string, f *gguf.File, h gguf.Hparams) error {
	fmt.Fprintf(w, "%s: GGUF v%d, %d tensors, %d metadata keys, %.1f MiB\n", path, f.Version, len(f.Tensors), len(f.KV), float64(f.Size)/(1<<20))
	fmt.Fprintf(w, "arch %s: %d layers, embd %d, ff %d, heads %d/%d (KV), vocab %d, trained context %d, tied output %v\n",
		h.Arch, h.NLayer, h.NEmbd, h.NFF, h.NHead, h.NHeadKV, h.NVocab, h.NCtxTrain, h.TiedOutput)
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
