//go:build amx

// ggml's AMX matrix multiplication kernels, from the pinned module (see amx.go).
#include "amx/mmq.cpp"
