//go:build amx

package engine

// AMX=1 builds link ggml's AMX kernels (package amx).
import _ "github.com/tokbench/tokbench/engine/amx"
