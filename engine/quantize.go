package engine

/*
#include <stdlib.h>
#include "tb.h"
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/internal/halt"
	"github.com/tokbench/tokbench/internal/safefile"
	"github.com/tokbench/tokbench/point"
)

// QuantizeOptions are the knobs of llama_model_quantize tokbench exposes.
type QuantizeOptions struct {
	Threads         int  // 0: all cores
	AllowRequantize bool // quantize an already quantized source (loses quality)
	Pure            bool // every tensor in the one type, no k-quant mixtures
}

// Quantize writes in, converted to the quantization type typ, to out.
func Quantize(in, out, typ string, opts QuantizeOptions) error {
	name, ft, err := gguf.ParseFileType(typ)
	if err != nil {
		return err
	}
	if _, _, err := gguf.Inspect(in); err != nil {
		return err
	}
	if same(in, out) {
		return point.Inputf("quantize: --out %s is the input file: choose another output path", out)
	}
	if err := safefile.CheckOut(out, false); err != nil {
		return point.Inputf("quantize: --out %v", err)
	}
	// The model is written under a name of this process's own beside
	// out and renamed onto it when whole: a failure or a signal leaves
	// out as it was, and a process that has out mapped keeps reading the
	// file it mapped.
	tmp, done, err := tempBeside(out)
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	defer done()
	defer halt.AtOnce()()
	p := C.llama_model_quantize_default_params()
	p.nthread = C.int32_t(opts.Threads)
	if opts.Threads <= 0 {
		p.nthread = C.int32_t(runtime.NumCPU())
	}
	p.ftype = C.enum_llama_ftype(ft)
	p.allow_requantize = C.bool(opts.AllowRequantize)
	p.pure = C.bool(opts.Pure)
	cin, cout := C.CString(in), C.CString(tmp)
	defer C.free(unsafe.Pointer(cin))
	defer C.free(unsafe.Pointer(cout))
	clearError()
	if rc := C.llama_model_quantize(cin, cout, &p); rc != 0 {
		hint := "check that the source is an F32, F16 or BF16 model and that the disk has room"
		if strings.Contains(lastError(), "requantiz") {
			hint = "the source is already quantized: quantize from an F16/BF16/F32 file, or pass --allow-requantize"
		}
		return cerr(fmt.Sprintf("quantize %s to %s", in, name), hint)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	return nil
}

// tempBeside reserves a file name of this process's own in path's folder
// (created exclusively: a planted file or link there is never written
// through), removed by done unless renamed away, and by a signal that
// ends the process first.
func tempBeside(path string) (tmp string, done func(), err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.part")
	if err != nil {
		return "", nil, err
	}
	tmp = f.Name()
	f.Close()
	untrack := halt.Temp(tmp)
	return tmp, func() { untrack(); os.Remove(tmp) }, nil
}

func same(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
