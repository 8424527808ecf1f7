package engine

/*
#include "ggml-backend.h"
*/
import "C"

import "github.com/tokbench/tokbench/gpu"

// Devices lists the devices of every registered backend (Init first).
func Devices() []gpu.Device {
	n := int(C.ggml_backend_dev_count())
	out := make([]gpu.Device, 0, n)
	for i := 0; i < n; i++ {
		d := C.ggml_backend_dev_get(C.size_t(i))
		var free, total C.size_t
		C.ggml_backend_dev_memory(d, &free, &total)
		out = append(out, gpu.Device{
			Index:       i,
			Name:        C.GoString(C.ggml_backend_dev_name(d)),
			Description: C.GoString(C.ggml_backend_dev_description(d)),
			Type:        devType(C.ggml_backend_dev_type(d)),
			Backend:     C.GoString(C.ggml_backend_reg_name(C.ggml_backend_dev_backend_reg(d))),
			MemoryFree:  uint64(free),
			MemoryTotal: uint64(total),
		})
	}
	return out
}

func devType(t C.enum_ggml_backend_dev_type) string {
	switch t {
	case C.GGML_BACKEND_DEVICE_TYPE_CPU:
		return "cpu"
	case C.GGML_BACKEND_DEVICE_TYPE_GPU:
		return "gpu"
	case C.GGML_BACKEND_DEVICE_TYPE_IGPU:
		return "igpu"
	}
	return "accel"
}

// GPUs returns the non-CPU devices.
func GPUs() []gpu.Device {
	var out []gpu.Device
	for _, d := range Devices() {
		if d.Type != "cpu" {
			out = append(out, d)
		}
	}
	return out
}

// gpuCount is how many GPUs the loaded backends offer (-mg counts them).
func gpuCount() int {
	n := 0
	for _, d := range Devices() {
		if d.Type == "gpu" || d.Type == "igpu" {
			n++
		}
	}
	return n
}
