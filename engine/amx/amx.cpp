//go:build amx

// ggml's AMX buffer type, from the pinned module (see amx.go).
#include "amx/amx.cpp"
