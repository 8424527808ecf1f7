package mutate

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/tokbench/tokbench/gguf"
)

const micro = "../testdata/micro-q4_0.gguf"

func TestRoundTrip(t *testing.T) {
	b, err := os.ReadFile(micro)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.Encode(), b) {
		t.Fatal("decode + encode changed the file")
	}
}

// Every kind of mutation changes the file, the same way for the same
// mutation, and most give files the reader still takes or refuses
// cleanly (never a panic).
func TestMutations(t *testing.T) {
	b, _ := os.ReadFile(micro)
	f, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for op := Op(0); op < numOps; op++ {
		changed := 0
		for range 20 {
			m := Random(r)
			m.Op = op
			out, desc := Apply(f, m)
			again, _ := Apply(f, m)
			if !bytes.Equal(out, again) {
				t.Fatalf("%s: not deterministic", desc)
			}
			if !bytes.Equal(out, b) {
				changed++
			}
			gguf.Parse(bytes.NewReader(out), int64(len(out)))
		}
		if changed == 0 {
			t.Errorf("%s never changed the file", op)
		}
	}
}
