package engine

/*
#include <stdlib.h>
#include "tb.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/point"
)

// ModelOptions are llama_model_params that a benchmark varies.
type ModelOptions struct {
	NGPULayers int // -1: all
	NoMmap     bool
	MainGPU    int
	Split      point.SplitMode
	Placement  point.Placement // -dev, -ts, -ot, -ncmoe
}

// Model is a loaded llama.cpp model. Close frees it.
type Model struct {
	m        *C.struct_llama_model
	Info     Info
	switches point.Switches // its contexts' switches (no_op_offload)
}

// Info is the model as llama.cpp reports it, with the experts of its
// header.
type Info struct {
	Path              string
	Desc, FileType    string // llama.cpp's description ("llama 8B Q4_K - Medium"), q4_k_m
	Size, NParams     uint64 // bytes of weights, parameters
	NLayer, NEmbd     int
	NHead, NHeadKV    int
	NVocab, NCtxTrain int
	NExpert           int // experts per layer (0: dense), from the header
}

// LoadModel loads the model file at path, whose header h was read and
// checked already, with llama.cpp.
func LoadModel(path string, h gguf.Hparams, opts ModelOptions) (*Model, error) {
	if opts.Split == point.SplitNone && opts.NGPULayers != 0 {
		// llama.cpp's own words ("invalid value for main_gpu") read like a
		// broken file on a build without a GPU.
		if n := gpuCount(); opts.MainGPU >= n {
			return nil, point.Inputf("-sm none -mg %d: this build sees %d GPUs (tokbench devices lists them), so there is no GPU %d to put the model on: leave out -sm none and -mg, or give a GPU backend (--backend-dir)",
				opts.MainGPU, n, opts.MainGPU)
		}
	}
	p := C.llama_model_default_params()
	p.n_gpu_layers = C.int32_t(opts.NGPULayers)
	if opts.NGPULayers < 0 {
		p.n_gpu_layers = C.int32_t(h.NLayer + 1)
	}
	p.use_mmap = C.bool(!opts.NoMmap)
	p.main_gpu = C.int32_t(opts.MainGPU)
	p.split_mode = C.enum_llama_split_mode(opts.Split)
	var mem cAlloc
	defer mem.free() // llama.cpp reads the placement while it loads
	if err := place(&p, opts.Placement, &mem); err != nil {
		return nil, &point.InputError{Err: err}
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	clearError()
	m := C.llama_model_load_from_file(cpath, p)
	if m == nil {
		return nil, cerr("load model "+path, "check that the file is a complete model of an architecture this llama.cpp supports, and that there is memory for it")
	}
	md := &Model{m: m, switches: opts.Placement.Switches}
	md.Info = Info{Path: path, Desc: md.desc(), FileType: md.fileType(), NExpert: int(h.NExpert),
		Size: uint64(C.llama_model_size(m)), NParams: uint64(C.llama_model_n_params(m)),
		NLayer: int(C.llama_model_n_layer(m)), NEmbd: int(C.llama_model_n_embd(m)),
		NHead: int(C.llama_model_n_head(m)), NHeadKV: int(C.llama_model_n_head_kv(m)),
		NVocab: int(C.llama_vocab_n_tokens(C.llama_model_get_vocab(m))), NCtxTrain: int(C.llama_model_n_ctx_train(m))}
	return md, nil
}

// CheckLoad validates a model file, then loads it with llama.cpp on the
// CPU alone (mapped, weights untouched) and builds a small context from
// it. Run in a child process, it finds what would make llama.cpp abort
// before a benchmark loads the file in earnest.
func CheckLoad(path string) error {
	if _, _, err := gguf.Inspect(path); err != nil {
		return err
	}
	return checkLoad(path)
}

// checkLoad is CheckLoad without the validation.
func checkLoad(path string) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	clearError()
	switch C.tb_check_model(cpath) {
	case 1:
		return cerr("load model "+path, "check that the file is a complete model of an architecture this llama.cpp supports")
	case 2:
		return cerr("make a context for "+path, "the model's dimensions do not fit together")
	}
	return nil
}

// Close frees the model. Contexts made from it must be closed first.
func (md *Model) Close() {
	if md != nil && md.m != nil {
		C.llama_model_free(md.m)
		md.m = nil
	}
}

func (md *Model) desc() string {
	var buf [256]C.char
	C.llama_model_desc(md.m, &buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0])
}

// fileType is general.file_type as a name; "unknown" when absent.
func (md *Model) fileType() string {
	key := C.CString("general.file_type")
	defer C.free(unsafe.Pointer(key))
	var buf [32]C.char
	if C.llama_model_meta_val_str(md.m, key, &buf[0], C.size_t(len(buf))) < 0 {
		return "unknown"
	}
	var ft int
	if _, err := fmt.Sscan(C.GoString(&buf[0]), &ft); err != nil {
		return "unknown"
	}
	return gguf.FileTypeName(ft)
}

// bos is the model's beginning-of-sequence token, -1 if none.
func (md *Model) bos() int {
	return int(C.llama_vocab_bos(C.llama_model_get_vocab(md.m)))
}
