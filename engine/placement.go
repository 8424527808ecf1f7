package engine

/*
#include <stdlib.h>
#include "llama.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

int tb_regex_check(const char *pattern, char *err, int n);
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/tokbench/tokbench/point"
)

// cAlloc is C memory that llama.cpp reads while it loads a model (or
// runs a context) and that is freed after.
type cAlloc []unsafe.Pointer

func (a *cAlloc) add(p unsafe.Pointer) unsafe.Pointer { *a = append(*a, p); return p }

func (a *cAlloc) str(s string) *C.char { return (*C.char)(a.add(unsafe.Pointer(C.CString(s)))) }

func (a *cAlloc) free() {
	for _, p := range *a {
		C.free(p)
	}
	*a = nil
}

// place sets the model parameters of a Placement: the devices by name,
// each device's share, and the tensor overrides with their buffer types
// by name. Names that match nothing are errors that list what there is.
func place(p *C.struct_llama_model_params, pl point.Placement, mem *cAlloc) error {
	p.no_host = C.bool(pl.NoHost)
	if devs := point.ParseDevices(pl.Devices); devs != nil {
		arr := (*[1 << 10]C.ggml_backend_dev_t)(mem.add(C.calloc(C.size_t(len(devs)+1), C.size_t(unsafe.Sizeof(C.ggml_backend_dev_t(nil))))))
		for i, name := range devs {
			d := C.ggml_backend_dev_by_name(mem.str(name))
			if d == nil || C.ggml_backend_dev_type(d) == C.GGML_BACKEND_DEVICE_TYPE_CPU {
				have := "none here, so only -dev none"
				if gpus := GPUs(); len(gpus) > 0 {
					var names []string
					for _, g := range gpus {
						names = append(names, g.Name)
					}
					have = strings.Join(names, ", ")
				}
				return fmt.Errorf("-dev %s: no such GPU device (have: %s; the CPU is always used)", name, have)
			}
			arr[i] = d
		}
		p.devices = &arr[0]
	}
	split, err := point.ParseTensorSplit(pl.TensorSplit)
	if err != nil {
		return err
	}
	if split != nil {
		n := int(C.llama_max_devices())
		if len(split) > n {
			return fmt.Errorf("-ts %s: %d shares, but llama.cpp takes at most %d devices", pl.TensorSplit, len(split), n)
		}
		arr := (*[1 << 10]C.float)(mem.add(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.float(0))))))
		for i, v := range split {
			arr[i] = C.float(v)
		}
		p.tensor_split = &arr[0]
	}
	rules, err := point.ParseOverrides(pl.Overrides)
	if err != nil {
		return err
	}
	rules = append(rules, point.MoEOverrides(pl.NCPUMoE)...)
	if len(rules) == 0 {
		return nil
	}
	if max := int(C.llama_max_tensor_buft_overrides()); len(rules) >= max {
		return fmt.Errorf("-ot/-ncmoe: %d overrides, but llama.cpp takes at most %d", len(rules), max-1)
	}
	size := C.size_t(unsafe.Sizeof(C.struct_llama_model_tensor_buft_override{}))
	arr := (*[1 << 12]C.struct_llama_model_tensor_buft_override)(mem.add(C.calloc(C.size_t(len(rules)+1), size)))
	for i, r := range rules {
		var why [256]C.char
		if C.tb_regex_check(mem.str(r.Pattern), &why[0], C.int(len(why))) == 0 {
			return fmt.Errorf("-ot %s: llama.cpp's regular expressions (ECMAScript) cannot read it: %s", r.Pattern, C.GoString(&why[0]))
		}
		buft := bufferType(r.BufferType)
		if buft == nil {
			return fmt.Errorf("-ot %s=%s: no such buffer type (have: %s)", r.Pattern, r.BufferType, strings.Join(bufferTypeNames(), ", "))
		}
		arr[i].pattern, arr[i].buft = mem.str(r.Pattern), buft
	}
	p.tensor_buft_overrides = &arr[0]
	return nil
}

// bufferType is the default buffer type of the device whose buffer type
// is named name (CPU, CUDA0, Vulkan0, ...), or nil.
func bufferType(name string) C.ggml_backend_buffer_type_t {
	for i := range C.ggml_backend_dev_count() {
		b := C.ggml_backend_dev_buffer_type(C.ggml_backend_dev_get(i))
		if b != nil && strings.EqualFold(C.GoString(C.ggml_backend_buft_name(b)), name) {
			return b
		}
	}
	return nil
}

func bufferTypeNames() []string {
	var out []string
	for i := range C.ggml_backend_dev_count() {
		if b := C.ggml_backend_dev_buffer_type(C.ggml_backend_dev_get(i)); b != nil {
			out = append(out, C.GoString(C.ggml_backend_buft_name(b)))
		}
	}
	return out
}

// threadpool makes the thread pool a Threading asks for, as llama-bench
// makes one for each test (nil for point.NoPool: llama.cpp then starts
// threads in every graph computation).
func threadpool(threads int, t point.Threading) (*C.struct_ggml_threadpool, error) {
	if !t.Pool() {
		return nil, nil
	}
	mask, err := point.ParseCPUMask(t.CPUMask)
	if err != nil {
		return nil, err
	}
	tp := C.ggml_threadpool_params_default(C.int(threads))
	tp.poll = C.uint32_t(t.PollLevel())
	tp.prio = C.enum_ggml_sched_priority(t.Prio)
	tp.strict_cpu = C.bool(t.CPUStrict)
	for i, on := range mask {
		tp.cpumask[i] = C.bool(on)
	}
	clearError()
	pool := C.ggml_threadpool_new(&tp)
	if pool == nil {
		return nil, cerr("make a thread pool", "check -C, --cpu-strict and --prio")
	}
	return pool, nil
}

// CheckPlacement says whether a placement's device and buffer type
// names exist here, before a model is loaded with it.
func CheckPlacement(pl point.Placement) error {
	p := C.llama_model_default_params()
	var mem cAlloc
	defer mem.free()
	return place(&p, pl, &mem)
}
