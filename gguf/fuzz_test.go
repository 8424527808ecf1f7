package gguf

import (
	"os"
	"testing"
)

// FuzzParse feeds the validator arbitrary bytes: it must return an error
// or a header whose every tensor lies inside the file, and never panic or
// allocate without bound. The seeds are a real synthetic model and cuts of
// it; `make fuzz` runs the fuzzer, `make test` the seeds.
func FuzzParse(f *testing.F) {
	data, err := os.ReadFile(micro)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	g, err := parseBytes(data)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data[:g.DataOffset])
	f.Add(data[:64])
	f.Add([]byte("GGUF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := parseBytes(b)
		if err != nil {
			return
		}
		for _, tn := range file.Tensors {
			if file.DataOffset+int64(tn.Offset)+tn.Bytes() > int64(len(b)) {
				t.Fatalf("tensor %q extends past the end of a %d-byte file", tn.Name, len(b))
			}
		}
		file.Validate()
	})
}
