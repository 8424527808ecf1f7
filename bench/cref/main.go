// Command cref is the C reference loop of make bench, llama-bench's method:
// Go only parses the arguments; everything measured runs in ref.c, against
// the same llama.cpp objects tokbench links.
package main

/*
#include <stdlib.h>
int cref_main(const char *path, int n_prompt, int n_gen, int threads, int reps, int n_batch, int n_ubatch, int pool);
*/
import "C"

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	_ "github.com/ollama/ollama/llama/llama.cpp/src"
)

func main() {
	m := flag.String("m", "", "model")
	p := flag.Int("p", 512, "prompt tokens")
	n := flag.Int("n", 128, "generated tokens")
	t := flag.Int("t", runtime.NumCPU(), "threads")
	r := flag.Int("r", 5, "repetitions")
	b := flag.Int("b", 2048, "batch")
	ub := flag.Int("ub", 512, "ubatch")
	pool := flag.Bool("pool", true, "attach a thread pool per test, as llama-bench (false: none)")
	flag.Parse()
	if *m == "" || *r < 1 || *p < 0 || *n < 0 {
		fmt.Fprintln(os.Stderr, "usage: cref -m MODEL [-p 512] [-n 128] [-t N] [-r 5] [-b 2048] [-ub 512] [-pool=false]")
		os.Exit(2)
	}
	path := C.CString(*m)
	defer C.free(unsafe.Pointer(path))
	os.Exit(int(C.cref_main(path, C.int(*p), C.int(*n), C.int(*t), C.int(*r), C.int(*b), C.int(*ub), C.int(b2i(*pool)))))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
