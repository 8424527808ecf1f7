package engine

/*
#include "ggml.h"
*/
import "C"

// ggmlTypeInfo is ggml's own block size, type size and name for a type id.
// Only the tests call it (to check gguf's pure-Go table against ggml), and
// it lives here because test files cannot use cgo.
func ggmlTypeInfo(i int) (blockSize, typeSize int64, name string) {
	t := C.enum_ggml_type(i)
	return int64(C.ggml_blck_size(t)), int64(C.ggml_type_size(t)), C.GoString(C.ggml_type_name(t))
}
