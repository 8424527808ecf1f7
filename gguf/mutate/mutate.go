package mutate

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/tokbench/tokbench/gguf"
)

// Op is a kind of damage.
type Op uint8

const (
	setInt      Op = iota // a scalar metadata value set to an edge value
	retype                // a metadata value's type changed, its bytes kept
	dropKV                // a metadata entry removed
	DupToken              // one vocabulary token made equal to another
	emptyToken            // one vocabulary token emptied
	cutArray              // an array shortened
	arrRetype             // an array's element type changed
	tensorDim             // a tensor dimension changed
	tensorType            // a tensor's type changed
	dropTensor            // a tensor removed
	swapTensors           // two tensors' names swapped
	flipHeader            // one byte of the header (metadata, table) flipped
	flipData              // one byte of the weights flipped
	setString             // a string metadata value changed
	numOps
)

var opNames = [...]string{"set-int", "retype", "drop-kv", "dup-token", "empty-token", "cut-array", "arr-retype",
	"tensor-dim", "tensor-type", "drop-tensor", "swap-tensors", "flip-header", "flip-data", "set-string"}

func (o Op) String() string { return opNames[o%numOps] }

// Mutation is one change: Op, where (A, B pick entries, tokens or bytes)
// and a value V. Any values are valid, so a fuzzer can choose them.
type Mutation struct {
	Op   Op
	A, B uint32
	V    uint64
}

// Random draws a mutation.
func Random(r *rand.Rand) Mutation {
	return Mutation{Op: Op(r.IntN(int(numOps))), A: r.Uint32(), B: r.Uint32(), V: r.Uint64()}
}

// edges are values that break a dimension or an index in different ways.
var edges = []uint64{0, 1, 2, 3, 7, 255, 256, 511, 512, 513, 1 << 16, 1<<31 - 1, 1 << 31, 1<<32 - 1, 1 << 40}

var stringValues = []string{"", "llama", "gpt2", "bert", "t5", "rwkv", "none", "no_vocab", "yarn", "bogus", "mistral", "\xff\xfe", "llama4", "qwen2"}

// Apply writes base with m applied, and says what it did.
func Apply(base *File, m Mutation) ([]byte, string) {
	f := base.clone()
	desc := m.Op.String()
	pickKV := func(ok func(kv) bool) int {
		var idx []int
		for i, kv := range f.KVs {
			if ok(kv) {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			return -1
		}
		return idx[int(m.A%uint32(len(idx)))]
	}
	tokens := f.find("tokenizer.ggml.tokens")
	switch m.Op % numOps {
	case setInt:
		if i := pickKV(func(kv kv) bool { return kv.Type != gguf.TypeString && kv.Type != gguf.TypeArray }); i >= 0 {
			v := edges[m.V%uint64(len(edges))]
			if m.B%3 == 0 { // near the value it had
				v = le(f.KVs[i].Raw) + uint64(int64(m.B%5)-2)
			}
			f.KVs[i].Raw = put(len(f.KVs[i].Raw), v)
			desc += fmt.Sprintf(" %s=%d", f.KVs[i], v)
		}
	case retype:
		if i := pickKV(func(kv kv) bool { return kv.Type != gguf.TypeArray }); i >= 0 {
			t := gguf.ValueType(m.B % 13)
			if t == gguf.TypeArray {
				t = gguf.TypeString
			}
			desc += fmt.Sprintf(" %s->%s", f.KVs[i], t)
			f.KVs[i].Raw = resize(f.KVs[i].Raw, t)
			f.KVs[i].Type = t
		}
	case dropKV:
		if i := pickKV(func(kv) bool { return true }); i >= 0 {
			desc += " " + f.KVs[i].String()
			f.KVs = slices.Delete(f.KVs, i, i+1)
		}
	case DupToken, emptyToken:
		if tokens >= 0 && len(f.KVs[tokens].Items) > 1 {
			items := f.KVs[tokens].Items
			i, j := int(m.A)%len(items), int(m.B)%len(items)
			if m.Op == emptyToken {
				items[i] = nil
				desc += fmt.Sprintf(" token %d", i)
			} else if i != j {
				items[i] = append([]byte(nil), items[j]...)
				desc += fmt.Sprintf(" token %d = token %d %q", i, j, items[j])
			}
		}
	case cutArray:
		if i := pickKV(func(kv kv) bool { return kv.Type == gguf.TypeArray && len(kv.Items) > 0 }); i >= 0 {
			n := len(f.KVs[i].Items)
			keep := int(m.V % uint64(n))
			desc += fmt.Sprintf(" %s to %d", f.KVs[i], keep)
			f.KVs[i].Items = f.KVs[i].Items[:keep]
		}
	case arrRetype:
		if i := pickKV(func(kv kv) bool { return kv.Type == gguf.TypeArray }); i >= 0 {
			t := gguf.ValueType(m.B % 13)
			if t == gguf.TypeArray {
				t = gguf.TypeString
			}
			desc += fmt.Sprintf(" %s->%s", f.KVs[i], t)
			for k, it := range f.KVs[i].Items {
				f.KVs[i].Items[k] = resize(it, t)
			}
			f.KVs[i].ArrType = t
		}
	case tensorDim:
		if len(f.Tensors) > 0 {
			t := &f.Tensors[int(m.A)%len(f.Tensors)]
			d := int(m.B) % len(t.Dims)
			old := t.Dims[d]
			switch m.V % 5 {
			case 0:
				t.Dims[d] = old * 2
			case 1:
				t.Dims[d] = max(old/2, 1)
			case 2:
				t.Dims[d] = old + 32
			case 3:
				t.Dims = append(t.Dims, 2)
			default:
				t.Dims[d] = edges[(m.V/5)%uint64(len(edges))]
			}
			desc += fmt.Sprintf(" %s dims %v", t.Name, t.Dims)
		}
	case tensorType:
		if len(f.Tensors) > 0 {
			t := &f.Tensors[int(m.A)%len(f.Tensors)]
			t.Type = m.B % gguf.NumTypes
			desc += fmt.Sprintf(" %s -> %s", t.Name, gguf.GGMLType(t.Type))
		}
	case dropTensor:
		if len(f.Tensors) > 0 {
			i := int(m.A) % len(f.Tensors)
			desc += " " + f.Tensors[i].Name
			f.Tensors = slices.Delete(f.Tensors, i, i+1)
		}
	case swapTensors:
		if len(f.Tensors) > 1 {
			i, j := int(m.A)%len(f.Tensors), int(m.B)%len(f.Tensors)
			f.Tensors[i].Name, f.Tensors[j].Name = f.Tensors[j].Name, f.Tensors[i].Name
			desc += fmt.Sprintf(" %s <-> %s", f.Tensors[i].Name, f.Tensors[j].Name)
		}
	case setString:
		if i := pickKV(func(kv kv) bool { return kv.Type == gguf.TypeString }); i >= 0 {
			s := stringValues[m.V%uint64(len(stringValues))]
			desc += fmt.Sprintf(" %s=%q", f.KVs[i], s)
			f.KVs[i].Raw = []byte(s)
		}
	case flipHeader, flipData:
		b := f.Encode()
		g, err := gguf.Parse(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return b, desc
		}
		lo, hi := int64(4), g.DataOffset // the magic is not worth flipping
		if m.Op == flipData {
			lo, hi = g.DataOffset, int64(len(b))
		}
		if hi > lo {
			at := lo + int64(m.V%uint64(hi-lo))
			bit := byte(1) << (m.B % 8)
			if m.A%4 == 0 {
				bit = byte(m.A>>8) | 1
			}
			b[at] ^= bit
			desc += fmt.Sprintf(" byte %d ^= %#x", at, bit)
		}
		return b, desc
	}
	return f.Encode(), desc
}

func (f *File) clone() *File {
	c := &File{Version: f.Version, Align: f.Align}
	for _, kv := range f.KVs {
		kv.Raw = slices.Clone(kv.Raw)
		items := make([][]byte, len(kv.Items))
		for i, it := range kv.Items {
			items[i] = slices.Clone(it)
		}
		kv.Items = items
		c.KVs = append(c.KVs, kv)
	}
	for _, t := range f.Tensors {
		t.Dims = slices.Clone(t.Dims)
		c.Tensors = append(c.Tensors, t) // data is shared: nothing writes it
	}
	return c
}

// le reads up to 8 little-endian bytes.
func le(b []byte) uint64 {
	var x [8]byte
	copy(x[:], b)
	return binary.LittleEndian.Uint64(x[:])
}

// put is v in n little-endian bytes.
func put(n int, v uint64) []byte {
	var x [8]byte
	binary.LittleEndian.PutUint64(x[:], v)
	return slices.Clone(x[:n])
}

// resize keeps a value's bytes for a new type: cut or zero-extended to
// the new scalar size; a string keeps its bytes as text.
func resize(raw []byte, to gguf.ValueType) []byte {
	if to == gguf.TypeString {
		return raw
	}
	return put(scalarSize[to], le(raw))
}
