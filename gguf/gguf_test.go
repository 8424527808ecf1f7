package gguf

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"
)

const micro = "testdata/micro-q4_0.gguf" // written by: tokbench synth --n-vocab 300 --n-embd 64 --n-layer 2 --n-ff 128 --n-head 2 --n-head-kv 1 --type q4_0 --seed 1

func parseBytes(b []byte) (*File, error) { return Parse(bytes.NewReader(b), int64(len(b))) }

func TestParseSyntheticModel(t *testing.T) {
	f, err := open(micro)
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.Validate()
	if err != nil {
		t.Fatal(err)
	}
	want := Hparams{Arch: "llama", NLayer: 2, NEmbd: 64, NFF: 128, NHead: 2, NHeadKV: 1, NCtxTrain: 4096, NVocab: 300, KeyLength: 32, ValLength: 32}
	if h != want {
		t.Errorf("hparams %+v, want %+v", h, want)
	}
	if len(f.Tensors) != 3+2*9 {
		t.Errorf("%d tensors, want 21", len(f.Tensors))
	}
	emb, _ := f.Tensor("token_embd.weight")
	if emb.Type.String() != "q4_0" || emb.Bytes() != 300*64/32*18 {
		t.Errorf("token_embd %s %d bytes", emb.Type, emb.Bytes())
	}
	if got := f.BytesByType()["f32"]; got != 5*64*4 {
		t.Errorf("f32 bytes %d, want the 5 norm vectors", got)
	}
	if f.DataOffset%f.Alignment != 0 || f.DataOffset+f.TensorBytes() > f.Size {
		t.Errorf("data at %d (+%d) in a %d-byte file", f.DataOffset, f.TensorBytes(), f.Size)
	}
}

func TestEveryTruncationIsRefused(t *testing.T) {
	data, err := os.ReadFile(micro)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := parseBytes(data)
	// Every cut through the header, then every 97 bytes through the data.
	for n := 0; n < len(data); n++ {
		if n > int(f.DataOffset) && n%97 != 0 {
			continue
		}
		if _, err := parseBytes(data[:n]); err == nil {
			t.Fatalf("file cut at %d of %d bytes parsed without error", n, len(data))
		}
	}
}

// builder writes GGUF headers by hand, to make the broken files that
// ggml's writer never would.
type builder struct{ bytes.Buffer }

func (b *builder) u32(v uint32) { binary.Write(b, binary.LittleEndian, v) }
func (b *builder) u64(v uint64) { binary.Write(b, binary.LittleEndian, v) }
func (b *builder) str(s string) { b.u64(uint64(len(s))); b.WriteString(s) }

func header(version uint32, nt, nkv uint64) *builder {
	b := &builder{}
	b.WriteString("GGUF")
	b.u32(version)
	b.u64(nt)
	b.u64(nkv)
	return b
}

func TestMalformedHeaders(t *testing.T) {
	cases := map[string]struct {
		data []byte
		want string
	}{}
	add := func(name string, b *builder, want string) {
		cases[name] = struct {
			data []byte
			want string
		}{b.Bytes(), want}
	}

	cases["empty"] = struct {
		data []byte
		want string
	}{nil, "not a GGUF file"}
	cases["text"] = struct {
		data []byte
		want string
	}{[]byte("this is not a model"), "not a GGUF file"}
	add("version 1", header(1, 0, 0), "version 1")
	add("huge counts", header(3, 1<<40, 1<<40), "corrupt")

	b := header(3, 0, 1)
	b.str("general.architecture")
	b.u32(99)
	add("bad value type", b, "unknown metadata value type")

	b = header(3, 0, 1)
	b.u64(1 << 40)
	add("huge key", b, "longer than allowed")

	b = header(3, 0, 2)
	for i := 0; i < 2; i++ {
		b.str("k")
		b.u32(uint32(TypeUint32))
		b.u32(1)
	}
	add("duplicate key", b, "appears twice")

	b = header(3, 0, 1)
	b.str("general.alignment")
	b.u32(uint32(TypeUint32))
	b.u32(3)
	add("bad alignment", b, "power of two")

	// gguf.cpp reads the alignment as a uint32 and asserts on any other type.
	b = header(3, 0, 1)
	b.str("general.alignment")
	b.u32(uint32(TypeUint64))
	b.u64(32)
	add("alignment of another type", b, "must be a uint32")

	tensor := func(b *builder, name string, dims []uint64, typ uint32, off uint64) {
		b.str(name)
		b.u32(uint32(len(dims)))
		for _, d := range dims {
			b.u64(d)
		}
		b.u32(typ)
		b.u64(off)
	}
	b = header(3, 1, 0)
	tensor(b, "t", []uint64{32}, 4, 0) // removed Q4_2
	add("removed type", b, "removed ggml type")

	b = header(3, 1, 0)
	tensor(b, "t", []uint64{33}, 2, 0)
	add("partial block", b, "block size")

	b = header(3, 1, 0)
	tensor(b, "t", []uint64{1, 2, 3, 4, 5}, 0, 0)
	add("five dims", b, "dimensions")

	b = header(3, 1, 0)
	tensor(b, "t", []uint64{0}, 0, 0)
	add("zero dim", b, "dimension 0")

	b = header(3, 1, 0)
	tensor(b, "t", []uint64{1 << 40, 1 << 40}, 0, 0)
	add("overflowing dims", b, "dimension 1")

	b = header(3, 2, 0)
	tensor(b, "a", []uint64{8}, 0, 0)
	tensor(b, "a", []uint64{8}, 0, 32)
	add("duplicate tensor", b, "appears twice")

	b = header(3, 1, 0)
	tensor(b, "a", []uint64{8}, 0, 16)
	b.Write(make([]byte, 128))
	add("misaligned", b, "not aligned")

	b = header(3, 1, 0)
	tensor(b, "a", []uint64{1024}, 0, 0)
	add("data past end", b, "truncated")

	for name, c := range cases {
		_, err := parseBytes(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", name, err, c.want)
		}
	}
}

func TestValidateRefusesInconsistentModels(t *testing.T) {
	base, err := open(micro)
	if err != nil {
		t.Fatal(err)
	}
	clone := func() *File {
		f := *base
		f.KV = map[string]Value{}
		for k, v := range base.KV {
			f.KV[k] = v
		}
		f.Tensors = append([]Tensor(nil), base.Tensors...)
		return &f
	}
	cases := []struct {
		name   string
		mutate func(f *File)
		want   string
	}{
		{"no arch", func(f *File) { delete(f.KV, "general.architecture") }, "general.architecture"},
		{"no layers", func(f *File) { delete(f.KV, "llama.block_count") }, "llama.block_count"},
		{"head mismatch", func(f *File) { f.KV["llama.attention.head_count_kv"] = Value{Type: TypeUint32, Uint: 3} }, "not a multiple"},
		{"vocab mismatch", func(f *File) {
			v := f.KV["tokenizer.ggml.tokens"]
			v.ArrLen = 301
			f.KV["tokenizer.ggml.tokens"] = v
		}, "token_embd.weight has shape"},
		{"bos outside vocab", func(f *File) { f.KV["tokenizer.ggml.bos_token_id"] = Value{Type: TypeUint32, Uint: 5000} }, "outside the vocabulary"},
		{"missing layer", func(f *File) { f.KV["llama.block_count"] = Value{Type: TypeUint32, Uint: 3} }, "layer 2"},
		{"no embedding", func(f *File) { f.Tensors = f.Tensors[1:] }, "token_embd.weight is missing"},
		// What llama.cpp asserts on (third_party/llama-asserts.md).
		{"duplicate token", func(f *File) {
			v := f.KV["tokenizer.ggml.tokens"]
			v.Strs = append([]string(nil), v.Strs...)
			v.Strs[200] = v.Strs[7]
			f.KV["tokenizer.ggml.tokens"] = v
		}, `tokens 7 and 200 are both "<0x04>"`},
		{"empty tokens", func(f *File) {
			v := f.KV["tokenizer.ggml.tokens"]
			v.Strs = append([]string(nil), v.Strs...)
			v.Strs[9], v.Strs[10] = "", "[EMPTY_9]"
			f.KV["tokenizer.ggml.tokens"] = v
		}, "tokens 9 and 10"},
		{"short scores", func(f *File) {
			f.KV["tokenizer.ggml.scores"] = Value{Type: TypeArray, ArrType: TypeFloat32, ArrLen: 299}
		}, "tokenizer.ggml.scores must be an array of 300 float32"},
		{"string token types", func(f *File) {
			f.KV["tokenizer.ggml.token_type"] = Value{Type: TypeArray, ArrType: TypeString, ArrLen: 300}
		}, "got an array of 300 string"},
		{"numeric merges", func(f *File) { f.KV["tokenizer.ggml.merges"] = Value{Type: TypeArray, ArrType: TypeInt32, ArrLen: 3} }, "merges must be an array of strings"},
		{"rope scaling", func(f *File) { f.KV["llama.rope.scaling.type"] = Value{Type: TypeString, Str: "cubic"} }, `rope.scaling.type is "cubic"`},
		{"experts used", func(f *File) { f.KV["llama.expert_used_count"] = Value{Type: TypeUint32, Uint: 2} }, "expert_used_count 2 is outside 0..expert_count (0)"},
		{"too many experts", func(f *File) { f.KV["llama.expert_count"] = Value{Type: TypeUint32, Uint: 513} }, "expert_count 513"},
		{"graph room", func(f *File) {
			f.KV["llama.expert_count"] = Value{Type: TypeUint32, Uint: 512}
			f.KV["llama.expert_used_count"] = Value{Type: TypeUint32, Uint: 240}
		}, "expert_used_count 240: 2 layers of 240 experts each need about"},
		{"float head counts", func(f *File) {
			f.KV["llama.attention.head_count_kv"] = Value{Type: TypeArray, ArrType: TypeFloat32, ArrLen: 2}
		}, "array of 2 int32/uint32"},
	}
	for _, c := range cases {
		f := clone()
		c.mutate(f)
		if _, err := f.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
}

func TestTypes(t *testing.T) {
	q, ok := ParseType("Q4_K")
	if !ok || q.BlockSize() != 256 || q.TypeSize() != 144 || q.RowSize(512) != 288 {
		t.Errorf("q4_K: %v %d %d", ok, q.BlockSize(), q.TypeSize())
	}
	if _, ok := ParseType("q4_2"); ok {
		t.Error("removed type parsed")
	}
	if GGMLType(4).Valid() || GGMLType(NumTypes).Valid() {
		t.Error("removed or out-of-range type is valid")
	}
}
