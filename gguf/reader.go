// Package gguf reads and validates the header, metadata and tensor table of
// GGUF model files in pure Go, so that a malformed file is refused with a
// clear error before llama.cpp (which aborts the process on some malformed
// input) ever sees it.
package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/tokbench/tokbench/internal/infile"
)

// Limits that no real model comes near; they keep a hostile header from
// making the reader allocate or loop without bound.
const (
	maxKV       = 1 << 20
	maxTensors  = 1 << 20
	maxKeyLen   = 1 << 16
	maxDims     = 4
	maxArrayLen = 1 << 28
	// maxStringLen bounds a single metadata string (chat templates are the
	// longest seen in practice, tens of KB).
	maxStringLen = 1 << 26
)

// ValueType is a GGUF metadata value type.
type ValueType uint32

const (
	TypeUint8 ValueType = iota
	TypeInt8
	TypeUint16
	TypeInt16
	TypeUint32
	TypeInt32
	TypeFloat32
	TypeBool
	TypeString
	TypeArray
	TypeUint64
	TypeInt64
	TypeFloat64
)

var scalarSize = map[ValueType]int64{
	TypeUint8: 1, TypeInt8: 1, TypeBool: 1,
	TypeUint16: 2, TypeInt16: 2,
	TypeUint32: 4, TypeInt32: 4, TypeFloat32: 4,
	TypeUint64: 8, TypeInt64: 8, TypeFloat64: 8,
}

// Value is one metadata value. Scalars are kept; arrays keep their element
// type and length only (a vocabulary is 100k+ strings we never need).
type Value struct {
	Type     ValueType
	ArrType  ValueType
	ArrLen   uint64
	Int      int64
	Uint     uint64
	Float    float64
	Bool     bool
	Str      string
	Strs     []string // the elements of a kept string array (keepStrings)
	Ints     []int64  // the elements of a kept int32 array (keepInts)
	isSigned bool
}

// keepStrings names the string arrays whose elements are kept: the
// vocabulary, whose duplicates make llama.cpp abort.
var keepStrings = map[string]bool{"tokenizer.ggml.tokens": true}

// keepInts names the int32 arrays whose elements are kept: the token
// types, some of which some tokenizers abort on.
var keepInts = map[string]bool{"tokenizer.ggml.token_type": true}

// AsInt returns an integer value and whether the value is an integer.
func (v Value) AsInt() (int64, bool) {
	switch v.Type {
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64:
		if v.Uint > math.MaxInt64 {
			return 0, false
		}
		return int64(v.Uint), true
	case TypeInt8, TypeInt16, TypeInt32, TypeInt64:
		return v.Int, true
	}
	return 0, false
}

// Tensor is one entry of the tensor table.
type Tensor struct {
	Name   string
	Dims   []int64
	Type   GGMLType
	Offset uint64 // relative to the start of the data section
}

// Elements is the number of elements of the tensor.
func (t Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Bytes is the size of the tensor's data.
func (t Tensor) Bytes() int64 { return t.Type.RowSize(t.Elements()) }

// File is the parsed header of a GGUF file.
type File struct {
	Version    uint32
	KV         map[string]Value
	Keys       []string // in file order
	Tensors    []Tensor
	Alignment  int64
	DataOffset int64 // absolute offset of the data section
	Size       int64 // file size
}

// ErrNotGGUF is returned for files that do not start with the GGUF magic.
var ErrNotGGUF = errors.New("not a GGUF file (bad magic): give a .gguf model file")

type reader struct {
	r    *bufio.Reader
	pos  int64
	size int64
}

func (r *reader) read(p []byte) error {
	if int64(len(p)) > r.size-r.pos {
		return fmt.Errorf("truncated at byte %d of %d (need %d more bytes): the file is incomplete, download or write it again", r.pos, r.size, len(p))
	}
	n, err := io.ReadFull(r.r, p)
	r.pos += int64(n)
	if err != nil {
		return fmt.Errorf("read at byte %d: %w", r.pos, err)
	}
	return nil
}

func (r *reader) u32() (uint32, error) {
	var b [4]byte
	if err := r.read(b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

func (r *reader) u64() (uint64, error) {
	var b [8]byte
	if err := r.read(b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

func (r *reader) skip(n int64) error {
	if n > r.size-r.pos {
		return fmt.Errorf("truncated at byte %d of %d (need %d more bytes): the file is incomplete", r.pos, r.size, n)
	}
	m, err := r.r.Discard(int(n))
	r.pos += int64(m)
	return err
}

func (r *reader) str(limit uint64) (string, error) {
	n, err := r.u64()
	if err != nil {
		return "", err
	}
	if n > limit {
		return "", fmt.Errorf("string of %d bytes at byte %d is longer than allowed (%d): corrupt file", n, r.pos, limit)
	}
	if int64(n) > r.size-r.pos {
		return "", fmt.Errorf("string of %d bytes at byte %d runs past the end of the file (%d bytes): truncated or corrupt file", n, r.pos, r.size)
	}
	b := make([]byte, n)
	if err := r.read(b); err != nil {
		return "", err
	}
	return string(b), nil
}

func (r *reader) scalar(t ValueType) (Value, error) {
	v := Value{Type: t}
	var b [8]byte
	sz := scalarSize[t]
	if err := r.read(b[:sz]); err != nil {
		return v, err
	}
	u := binary.LittleEndian.Uint64(b[:])
	switch t {
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64:
		v.Uint = u
	case TypeInt8:
		v.Int = int64(int8(u))
	case TypeInt16:
		v.Int = int64(int16(u))
	case TypeInt32:
		v.Int = int64(int32(u))
	case TypeInt64:
		v.Int = int64(u)
	case TypeFloat32:
		v.Float = float64(math.Float32frombits(uint32(u)))
	case TypeFloat64:
		v.Float = math.Float64frombits(u)
	case TypeBool:
		if b[0] > 1 {
			return v, fmt.Errorf("bool value %d at byte %d: corrupt file", b[0], r.pos)
		}
		v.Bool = b[0] == 1
	}
	return v, nil
}

func (r *reader) value(key string, t ValueType) (Value, error) {
	switch {
	case t == TypeString:
		s, err := r.str(maxStringLen)
		return Value{Type: t, Str: s}, err
	case t == TypeArray:
		et, err := r.u32()
		if err != nil {
			return Value{}, err
		}
		n, err := r.u64()
		if err != nil {
			return Value{}, err
		}
		v := Value{Type: t, ArrType: ValueType(et), ArrLen: n}
		if n > maxArrayLen {
			return v, fmt.Errorf("array of %d elements is longer than allowed: corrupt file", n)
		}
		switch {
		case v.ArrType == TypeString && keepStrings[key]:
			for i := uint64(0); i < n; i++ {
				s, err := r.str(maxStringLen)
				if err != nil {
					return v, err
				}
				v.Strs = append(v.Strs, s)
			}
		case v.ArrType == TypeString:
			for i := uint64(0); i < n; i++ {
				l, err := r.u64()
				if err != nil {
					return v, err
				}
				if l > maxStringLen {
					return v, fmt.Errorf("array string of %d bytes: corrupt file", l)
				}
				if err := r.skip(int64(l)); err != nil {
					return v, err
				}
			}
		case v.ArrType == TypeInt32 && keepInts[key]:
			for i := uint64(0); i < n; i++ {
				x, err := r.scalar(TypeInt32)
				if err != nil {
					return v, err
				}
				v.Ints = append(v.Ints, x.Int)
			}
		case scalarSize[v.ArrType] > 0:
			if err := r.skip(int64(n) * scalarSize[v.ArrType]); err != nil {
				return v, err
			}
		default:
			// Nested arrays are legal GGUF but no llama.cpp model uses them,
			// and gguf.cpp refuses them too.
			return v, fmt.Errorf("array of element type %d is not supported", et)
		}
		return v, nil
	case scalarSize[t] > 0:
		return r.scalar(t)
	}
	return Value{}, fmt.Errorf("unknown metadata value type %d at byte %d: corrupt file", t, r.pos)
}

// open reads and checks the header, metadata and tensor table of a GGUF file.
func open(path string) (*File, error) {
	f, err := infile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory: give a .gguf model file", path)
	}
	return Parse(f, st.Size())
}

// Parse reads a GGUF header of a file of the given size from r.
func Parse(rd io.Reader, size int64) (*File, error) {
	r := &reader{r: bufio.NewReaderSize(rd, 1<<16), size: size}
	var magic [4]byte
	if err := r.read(magic[:]); err != nil {
		return nil, ErrNotGGUF
	}
	if string(magic[:]) != "GGUF" {
		return nil, ErrNotGGUF
	}
	f := &File{KV: map[string]Value{}, Alignment: 32, Size: size}
	var err error
	if f.Version, err = r.u32(); err != nil {
		return nil, err
	}
	if f.Version != 2 && f.Version != 3 {
		return nil, fmt.Errorf("GGUF version %d is not supported (2 and 3 are): convert the model with a current llama.cpp", f.Version)
	}
	nt, err := r.u64()
	if err != nil {
		return nil, err
	}
	nkv, err := r.u64()
	if err != nil {
		return nil, err
	}
	if nt > maxTensors || nkv > maxKV {
		return nil, fmt.Errorf("header claims %d tensors and %d metadata keys: corrupt file", nt, nkv)
	}
	for i := uint64(0); i < nkv; i++ {
		key, err := r.str(maxKeyLen)
		if err != nil {
			return nil, fmt.Errorf("metadata key %d: %w", i, err)
		}
		t, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("metadata %q: %w", key, err)
		}
		v, err := r.value(key, ValueType(t))
		if err != nil {
			return nil, fmt.Errorf("metadata %q: %w", key, err)
		}
		if _, dup := f.KV[key]; dup {
			return nil, fmt.Errorf("metadata key %q appears twice: corrupt file", key)
		}
		f.KV[key] = v
		f.Keys = append(f.Keys, key)
	}
	if v, ok := f.KV["general.alignment"]; ok {
		// gguf.cpp:479 reads it with gguf_get_val_u32, which asserts on
		// any other type.
		a, _ := v.AsInt()
		if v.Type != TypeUint32 || a <= 0 || a&(a-1) != 0 {
			return nil, fmt.Errorf("general.alignment must be a uint32 power of two, got %s %d: corrupt file", v.describe(), a)
		}
		f.Alignment = a
	}
	names := map[string]bool{}
	for i := uint64(0); i < nt; i++ {
		t, err := r.tensorInfo()
		if err != nil {
			return nil, fmt.Errorf("tensor %d: %w", i, err)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("tensor %q appears twice: corrupt file", t.Name)
		}
		names[t.Name] = true
		f.Tensors = append(f.Tensors, t)
	}
	f.DataOffset = align(r.pos, f.Alignment)
	if err := f.checkData(); err != nil {
		return nil, err
	}
	return f, nil
}

func (r *reader) tensorInfo() (Tensor, error) {
	var t Tensor
	var err error
	if t.Name, err = r.str(maxKeyLen); err != nil {
		return t, err
	}
	nd, err := r.u32()
	if err != nil {
		return t, err
	}
	if nd == 0 || nd > maxDims {
		return t, fmt.Errorf("%q has %d dimensions (1 to %d allowed): corrupt file", t.Name, nd, maxDims)
	}
	elems := int64(1)
	for j := uint32(0); j < nd; j++ {
		d, err := r.u64()
		if err != nil {
			return t, err
		}
		if d == 0 || d > math.MaxInt64/uint64(elems) {
			return t, fmt.Errorf("%q has dimension %d = %d: corrupt file", t.Name, j, d)
		}
		elems *= int64(d)
		t.Dims = append(t.Dims, int64(d))
	}
	ty, err := r.u32()
	if err != nil {
		return t, err
	}
	t.Type = GGMLType(ty)
	if !t.Type.Valid() {
		return t, fmt.Errorf("%q has unknown or removed ggml type %d: the file needs a different llama.cpp version", t.Name, ty)
	}
	if t.Dims[0]%t.Type.BlockSize() != 0 {
		return t, fmt.Errorf("%q: first dimension %d is not a multiple of %s's block size %d: corrupt file", t.Name, t.Dims[0], t.Type, t.Type.BlockSize())
	}
	if t.Offset, err = r.u64(); err != nil {
		return t, err
	}
	return t, nil
}

func align(n, a int64) int64 { return (n + a - 1) / a * a }

// checkData verifies that every tensor's data lies, aligned and without
// overlap, inside the file, as gguf.cpp expects: a truncated file would
// otherwise be mapped and fault (SIGBUS) in the middle of a benchmark.
func (f *File) checkData() error {
	if f.DataOffset > f.Size && len(f.Tensors) > 0 {
		return fmt.Errorf("data section starts at byte %d but the file has %d bytes: truncated file", f.DataOffset, f.Size)
	}
	var expect uint64
	for _, t := range f.Tensors {
		if t.Offset%uint64(f.Alignment) != 0 {
			return fmt.Errorf("tensor %q at offset %d is not aligned to %d: corrupt file", t.Name, t.Offset, f.Alignment)
		}
		if t.Offset != expect {
			return fmt.Errorf("tensor %q at offset %d, expected %d: corrupt tensor table", t.Name, t.Offset, expect)
		}
		n := uint64(t.Bytes())
		end := t.Offset + n
		if end < t.Offset || int64(end) < 0 || f.DataOffset+int64(end) > f.Size {
			return fmt.Errorf("tensor %q ends at byte %d but the file has %d bytes: truncated file, download or write it again", t.Name, f.DataOffset+int64(end), f.Size)
		}
		expect = uint64(align(int64(end), f.Alignment))
	}
	return nil
}

// TensorBytes is the total size of all tensor data.
func (f *File) TensorBytes() int64 {
	var n int64
	for _, t := range f.Tensors {
		n += t.Bytes()
	}
	return n
}

// Params is the number of weights: every tensor's elements.
func (f *File) Params() int64 {
	var n int64
	for _, t := range f.Tensors {
		n += t.Elements()
	}
	return n
}

// BytesByType sums tensor data per ggml type name.
func (f *File) BytesByType() map[string]int64 {
	m := map[string]int64{}
	for _, t := range f.Tensors {
		m[t.Type.String()] += t.Bytes()
	}
	return m
}

// Tensor finds a tensor by name.
func (f *File) Tensor(name string) (Tensor, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// String returns a string metadata value.
func (f *File) String(key string) (string, bool) {
	v, ok := f.KV[key]
	if !ok || v.Type != TypeString {
		return "", false
	}
	return v.Str, true
}

// Int returns an integer metadata value.
func (f *File) Int(key string) (int64, bool) {
	v, ok := f.KV[key]
	if !ok {
		return 0, false
	}
	return v.AsInt()
}
