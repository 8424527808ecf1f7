package engine

/*
#include <stdlib.h>
#include "tb.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"github.com/tokbench/tokbench/gguf"
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
		return fmt.Errorf("quantize: output %s is the input file: choose another output path", out)
	}
	p := C.llama_model_quantize_default_params()
	p.nthread = C.int32_t(opts.Threads)
	if opts.Threads <= 0 {
		p.nthread = C.int32_t(runtime.NumCPU())
	}
	p.ftype = C.enum_llama_ftype(ft)
	p.allow_requantize = C.bool(opts.AllowRequantize)
	p.pure = C.bool(opts.Pure)
	cin, cout := C.CString(in), C.CString(out)
	defer C.free(unsafe.Pointer(cin))
	defer C.free(unsafe.Pointer(cout))
	clearError()
	if rc := C.llama_model_quantize(cin, cout, &p); rc != 0 {
		os.Remove(out)
		hint := "check that the source is an F32, F16 or BF16 model and that the disk has room"
		if strings.Contains(lastError(), "requantiz") {
			hint = "the source is already quantized: quantize from an F16/BF16/F32 file, or pass --allow-requantize"
		}
		return cerr(fmt.Sprintf("quantize %s to %s", in, name), hint)
	}
	return nil
}

func same(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
