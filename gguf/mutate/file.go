// Package mutate decodes a GGUF file whole, changes it the way a damaged
// or hostile file differs from a good one, and writes it back: the
// fuzzing of tokbench's load path (make fuzz-load) and its regression
// corpus use it. It is test machinery, kept apart from the reader that
// tokbench trusts.
package mutate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/tokbench/tokbench/gguf"
)

// kv is one metadata entry. A scalar's value is Raw (little-endian); a
// string's is Raw too; an array has ArrType and one Items entry per
// element (raw bytes of a scalar, the text of a string).
type kv struct {
	Key     string
	Type    gguf.ValueType
	Raw     []byte
	ArrType gguf.ValueType
	Items   [][]byte
}

// tensor is one tensor: its table entry and its data.
type tensor struct {
	Name string
	Dims []uint64
	Type uint32
	Data []byte
}

// File is a whole GGUF file.
type File struct {
	Version uint32
	KVs     []kv
	Tensors []tensor
	Align   uint64
}

var scalarSize = map[gguf.ValueType]int{
	gguf.TypeUint8: 1, gguf.TypeInt8: 1, gguf.TypeBool: 1,
	gguf.TypeUint16: 2, gguf.TypeInt16: 2,
	gguf.TypeUint32: 4, gguf.TypeInt32: 4, gguf.TypeFloat32: 4,
	gguf.TypeUint64: 8, gguf.TypeInt64: 8, gguf.TypeFloat64: 8,
}

// Decode reads a well-formed GGUF file (gguf.Parse checks it first).
func Decode(b []byte) (*File, error) {
	g, err := gguf.Parse(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	f := &File{Version: g.Version, Align: uint64(g.Alignment)}
	d := &dec{b: b, pos: 24}
	for range g.Keys {
		kv := kv{Key: d.str(), Type: gguf.ValueType(d.u32())}
		switch kv.Type {
		case gguf.TypeString:
			kv.Raw = []byte(d.str())
		case gguf.TypeArray:
			kv.ArrType = gguf.ValueType(d.u32())
			n := d.u64()
			for i := uint64(0); i < n; i++ {
				if kv.ArrType == gguf.TypeString {
					kv.Items = append(kv.Items, []byte(d.str()))
				} else {
					kv.Items = append(kv.Items, d.take(scalarSize[kv.ArrType]))
				}
			}
		default:
			kv.Raw = d.take(scalarSize[kv.Type])
		}
		f.KVs = append(f.KVs, kv)
	}
	for _, t := range g.Tensors {
		dims := make([]uint64, len(t.Dims))
		for i, x := range t.Dims {
			dims[i] = uint64(x)
		}
		start := g.DataOffset + int64(t.Offset)
		f.Tensors = append(f.Tensors, tensor{Name: t.Name, Dims: dims, Type: uint32(t.Type),
			Data: append([]byte(nil), b[start:start+t.Bytes()]...)})
	}
	if d.err != nil {
		return nil, d.err
	}
	return f, nil
}

type dec struct {
	b   []byte
	pos int
	err error
}

func (d *dec) take(n int) []byte {
	if d.err != nil || d.pos+n > len(d.b) {
		d.err = errors.New("mutate: short file")
		return make([]byte, n)
	}
	d.pos += n
	return append([]byte(nil), d.b[d.pos-n:d.pos]...)
}
func (d *dec) u32() uint32 { return binary.LittleEndian.Uint32(d.take(4)) }
func (d *dec) u64() uint64 { return binary.LittleEndian.Uint64(d.take(8)) }
func (d *dec) str() string { return string(d.take(int(d.u64()))) }

// Encode writes the file: header, metadata, tensor table, then each
// tensor's data at the next aligned offset, zero-padded or cut to the
// size its dimensions and type give (so a changed shape stays a
// self-consistent file).
func (f *File) Encode() []byte {
	var w bytes.Buffer
	le := func(v any) { binary.Write(&w, binary.LittleEndian, v) }
	str := func(s []byte) { le(uint64(len(s))); w.Write(s) }
	w.WriteString("GGUF")
	le(f.Version)
	le(uint64(len(f.Tensors)))
	le(uint64(len(f.KVs)))
	for _, kv := range f.KVs {
		str([]byte(kv.Key))
		le(uint32(kv.Type))
		switch kv.Type {
		case gguf.TypeString:
			str(kv.Raw)
		case gguf.TypeArray:
			le(uint32(kv.ArrType))
			le(uint64(len(kv.Items)))
			for _, it := range kv.Items {
				if kv.ArrType == gguf.TypeString {
					str(it)
				} else {
					w.Write(it)
				}
			}
		default:
			w.Write(kv.Raw)
		}
	}
	align := max(f.Align, 1)
	var off uint64
	sizes := make([]uint64, len(f.Tensors))
	for i, t := range f.Tensors {
		str([]byte(t.Name))
		le(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			le(d)
		}
		le(t.Type)
		le(off)
		sizes[i] = t.size()
		off = (off + sizes[i] + align - 1) / align * align
	}
	pad := func() {
		for uint64(w.Len())%align != 0 {
			w.WriteByte(0)
		}
	}
	pad()
	for i, t := range f.Tensors {
		data := t.Data
		if uint64(len(data)) > sizes[i] {
			data = data[:sizes[i]]
		}
		w.Write(data)
		w.Write(make([]byte, sizes[i]-uint64(len(data))))
		pad()
	}
	return w.Bytes()
}

// size is the tensor's data size by its dimensions and type, capped so
// that a hostile shape cannot make the writer allocate without bound.
func (t tensor) size() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		if d != 0 && n > math.MaxUint32/d {
			return 0
		}
		n *= d
	}
	ty := gguf.GGMLType(t.Type)
	if !ty.Valid() || n%uint64(ty.BlockSize()) != 0 {
		return uint64(len(t.Data))
	}
	s := n / uint64(ty.BlockSize()) * uint64(ty.TypeSize())
	if s > 1<<30 {
		return 0
	}
	return s
}

// find is the index of a metadata key, or -1.
func (f *File) find(key string) int {
	for i, kv := range f.KVs {
		if kv.Key == key {
			return i
		}
	}
	return -1
}

// String describes a KV briefly, for the names of mutants.
func (kv kv) String() string {
	if kv.Type == gguf.TypeArray {
		return fmt.Sprintf("%s[%d %s]", kv.Key, len(kv.Items), kv.ArrType)
	}
	return fmt.Sprintf("%s(%s)", kv.Key, kv.Type)
}
