//go:build amx

// Package amx compiles ggml's AMX matrix-multiply path (Intel Xeons since
// Sapphire Rapids) into the CPU backend: `make AMX=1`. ollama's tree ships
// the sources but builds none of them (its patch 0009-remove-amx), while
// ggml-cpu.cpp, compiled with AMX enabled, calls into them; without this
// package the default build disables AMX instead (-mno-amx-*). The sources
// are compiled from the pinned module, found through the include paths the
// Makefile adds with AMX=1.
package amx

// #cgo CXXFLAGS: -std=c++17
// #cgo CPPFLAGS: -DNDEBUG -DGGML_USE_LLAMAFILE
// #cgo linux CPPFLAGS: -D_GNU_SOURCE
import "C"
