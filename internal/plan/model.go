// Package plan is what a test needs and costs before it runs, in plain Go
// (no cgo): the model's description from its file or its shape, the
// memory a test takes and whether it fits, a step's shape and cost for
// the roofline, the environment tests run in and the record a test's
// settings and environment make. Sweeps plan with it, dry runs estimate
// with it, and the executor (package measure) checks and records with it.
package plan

import (
	"fmt"
	"path/filepath"

	"github.com/tokbench/tokbench/gguf"
	"github.com/tokbench/tokbench/internal/preset"
	"github.com/tokbench/tokbench/point"
)

// The llama.cpp tokbench runs: the upstream commit ollama's copy is of,
// and the ollama version it comes from (third_party/README.md); records
// name both. They change with the go.mod pin.
const (
	llamaCommit = "ec98e200"
	// llamaBuild is that commit's llama.cpp build number (release b7437),
	// llama-bench's build_number; ollama's build-info leaves it 0.
	llamaBuild    = 7437
	ollamaVersion = "v0.17.4"
)

// Model describes a model: its sizes, shape and experts, read from its
// file's header (Read), planned from a shape before it is made (Planned),
// or, for a loaded one, as llama.cpp reports it.
type Model struct {
	Path        string           `json:"model_filename"`
	Desc        string           `json:"model_type"` // llama.cpp's description, e.g. "llama 8B Q4_K - Medium"
	Arch        string           `json:"arch"`
	FileType    string           `json:"file_type"`  // q4_k_m, f16, ...
	Size        uint64           `json:"model_size"` // bytes of weights
	FileSize    int64            `json:"file_size"`  // bytes on disk
	NParams     uint64           `json:"model_n_params"`
	NLayer      int              `json:"n_layer"`
	NEmbd       int              `json:"n_embd"`
	NHead       int              `json:"n_head"`
	NHeadKV     int              `json:"n_head_kv"`
	NVocab      int              `json:"n_vocab"`
	NCtxTrain   int              `json:"n_ctx_train"`
	NEmbdKGQA   int              `json:"n_embd_k_gqa"`
	NEmbdVGQA   int              `json:"n_embd_v_gqa"`
	TensorBytes map[string]int64 `json:"tensor_bytes"` // bytes per ggml type
	WeightBytes int64            `json:"weight_bytes"` // all tensor data
	EmbdBytes   int64            `json:"embd_bytes"`   // token_embd.weight
	Tied        bool             `json:"tied_output"`  // token_embd doubles as the output projection
	// A mixture of experts: experts per layer, used per token, and the
	// bytes and weights of all of them (0: dense).
	NExpert      int   `json:"n_expert,omitempty"`
	NExpertUsed  int   `json:"n_expert_used,omitempty"`
	ExpertBytes  int64 `json:"expert_bytes,omitempty"`
	ExpertParams int64 `json:"expert_params,omitempty"`
}

// File is a model file read once: its header and tensor table, its
// hyperparameters and its description. Checks, loading and the kernels'
// shapes all read this one parse.
type File struct {
	Model
	GGUF *gguf.File
	H    gguf.Hparams
}

// Read reads and checks a model file's header.
func Read(path string) (File, error) {
	f, h, err := gguf.Inspect(path)
	if err != nil {
		return File{}, err
	}
	x := f.Experts(h)
	m := Model{Path: path, Desc: h.Arch, Arch: h.Arch, NParams: uint64(f.Params()), NLayer: int(h.NLayer), NEmbd: int(h.NEmbd),
		NHead: int(h.NHead), NHeadKV: int(h.NHeadKV), NVocab: int(h.NVocab), NCtxTrain: int(h.NCtxTrain),
		NEmbdKGQA: int(h.NEmbdKGQA()), NEmbdVGQA: int(h.NEmbdVGQA()), WeightBytes: f.TensorBytes(), Tied: h.TiedOutput, FileSize: f.Size,
		NExpert: int(x.Count), NExpertUsed: int(x.Used), ExpertBytes: x.Bytes, ExpertParams: x.Params, TensorBytes: f.BytesByType()}
	if t, ok := f.Tensor("token_embd.weight"); ok {
		m.EmbdBytes = t.Bytes()
	}
	m.Size = uint64(m.WeightBytes)
	return File{Model: m, GGUF: f, H: h}, nil
}

// Planned is what a synthetic model of shape s in file type typ will be,
// before it is made (AtType); it has no GGUF. Norms are counted at the
// type too: a few KB.
func Planned(s preset.Shape, typ string) File {
	e, hd := int64(s.NEmbd), int64(s.HeadDim())
	h := gguf.Hparams{Arch: s.ArchName(), NLayer: int64(s.NLayer), NEmbd: e, NFF: int64(s.NFF), NHead: int64(s.NHead), NHeadKV: int64(s.NHeadKV),
		NCtxTrain: int64(s.NCtxTrain), NVocab: int64(s.NVocab), KeyLength: hd, ValLength: hd, TiedOutput: s.Tied,
		NExpert: int64(s.NExpert), NExpertUsed: int64(s.NExpertUsed)}
	m := Model{Desc: s.Name + " (planned)", Arch: h.Arch, NParams: uint64(s.Params()), NLayer: s.NLayer, NEmbd: s.NEmbd,
		NHead: s.NHead, NHeadKV: s.NHeadKV, NVocab: s.NVocab, NCtxTrain: s.NCtxTrain, NEmbdKGQA: int(h.NEmbdKGQA()), NEmbdVGQA: int(h.NEmbdVGQA()),
		Tied: s.Tied, NExpert: s.NExpert, NExpertUsed: s.NExpertUsed, ExpertParams: s.ExpertParams()}
	return File{Model: m.AtType(typ), H: h}
}

// AtType is the model as it will be in file type typ, before it is made
// (a synthetic one, or a quantization of m): its bytes are its weights
// at the type's usual bits per weight (a mixture such as q4_k_m is
// llama.cpp's choice per tensor, which this averages).
func (m Model) AtType(typ string) Model {
	bpw := gguf.ApproxBPW(typ) / 8
	bytes := func(params int64) int64 { return int64(float64(params) * bpw) }
	m.FileType = typ
	m.WeightBytes, m.EmbdBytes, m.ExpertBytes = bytes(int64(m.NParams)), bytes(int64(m.NVocab)*int64(m.NEmbd)), bytes(m.ExpertParams)
	m.Size, m.TensorBytes = uint64(m.WeightBytes), nil
	return m
}

// SynthPath is where a synthetic model lives in the cache folder.
func SynthPath(cacheDir, presetName, typ string, seed uint64) (string, error) {
	s, err := preset.Lookup(presetName)
	if err != nil {
		return "", &point.InputError{Err: err}
	}
	name, _, err := gguf.ParseFileType(typ)
	if err != nil {
		return "", &point.InputError{Err: err}
	}
	return filepath.Join(cacheDir, fmt.Sprintf("%s-%s-s%d.gguf", s.Name, name, seed)), nil
}
