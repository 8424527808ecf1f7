package gguf

import (
	"fmt"
	"strconv"
)

// Hparams are the model dimensions a benchmark needs, read from metadata.
type Hparams struct {
	Arch       string
	NLayer     int64
	NEmbd      int64
	NFF        int64
	NHead      int64
	NHeadKV    int64
	NCtxTrain  int64
	NVocab     int64
	KeyLength  int64 // per-head K size
	ValLength  int64 // per-head V size
	TiedOutput bool  // no output.weight: the embedding doubles as output
	// NExpert is the experts per layer (0: dense), NExpertUsed those a
	// token is routed to.
	NExpert, NExpertUsed int64
}

// NEmbdKGQA is the K width per token and layer (n_head_kv * head size).
func (h Hparams) NEmbdKGQA() int64 { return h.NHeadKV * h.KeyLength }

// NEmbdVGQA is the V width per token and layer.
func (h Hparams) NEmbdVGQA() int64 { return h.NHeadKV * h.ValLength }

// Validate checks that the metadata and tensors describe a model llama.cpp
// can run: architecture, dimensions that agree with each other and with the
// tensor shapes, a vocabulary matching the embedding. It returns the
// dimensions it checked.
func (f *File) Validate() (Hparams, error) {
	var h Hparams
	arch, ok := f.String("general.architecture")
	if !ok || arch == "" {
		return h, fmt.Errorf("metadata has no general.architecture string: not a model file (adapters and projectors cannot be benchmarked alone)")
	}
	h.Arch = arch
	need := func(key string, dst *int64, min int64) error {
		v, ok := f.Int(arch + "." + key)
		if !ok {
			return fmt.Errorf("metadata %s.%s is missing or not an integer: the model file is incomplete", arch, key)
		}
		if v < min || v > 1<<31 {
			return fmt.Errorf("metadata %s.%s = %d is out of range: corrupt model file", arch, key, v)
		}
		*dst = v
		return nil
	}
	for _, k := range []struct {
		key string
		dst *int64
	}{
		{"block_count", &h.NLayer},
		{"embedding_length", &h.NEmbd},
		{"context_length", &h.NCtxTrain},
	} {
		if err := need(k.key, k.dst, 1); err != nil {
			return h, err
		}
	}
	// Head counts and feed-forward length may be per-layer arrays in some
	// architectures; a scalar is checked, an array is left to llama.cpp.
	if v, ok := f.KV[arch+".attention.head_count"]; ok && v.Type != TypeArray {
		if err := need("attention.head_count", &h.NHead, 1); err != nil {
			return h, err
		}
		h.NHeadKV = h.NHead
		if v, ok := f.KV[arch+".attention.head_count_kv"]; ok && v.Type != TypeArray {
			if err := need("attention.head_count_kv", &h.NHeadKV, 1); err != nil {
				return h, err
			}
		}
		if h.NHead%h.NHeadKV != 0 {
			return h, fmt.Errorf("attention.head_count %d is not a multiple of head_count_kv %d: corrupt model file", h.NHead, h.NHeadKV)
		}
		h.KeyLength, h.ValLength = h.NEmbd/h.NHead, h.NEmbd/h.NHead
		if v, ok := f.Int(arch + ".attention.key_length"); ok && v > 0 {
			h.KeyLength = v
		}
		if v, ok := f.Int(arch + ".attention.value_length"); ok && v > 0 {
			h.ValLength = v
		}
	}
	if v, ok := f.KV[arch+".feed_forward_length"]; ok && v.Type != TypeArray {
		if err := need("feed_forward_length", &h.NFF, 1); err != nil {
			return h, err
		}
	}
	toks, ok := f.KV["tokenizer.ggml.tokens"]
	if !ok || toks.Type != TypeArray || toks.ArrType != TypeString || toks.ArrLen == 0 {
		return h, fmt.Errorf("metadata tokenizer.ggml.tokens is missing or empty: the model file has no vocabulary")
	}
	h.NVocab = int64(toks.ArrLen)
	for _, key := range []string{"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"} {
		if id, ok := f.Int(key); ok && (id < 0 || id >= h.NVocab) {
			return h, fmt.Errorf("metadata %s = %d is outside the vocabulary of %d tokens: corrupt model file", key, id, h.NVocab)
		}
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		return h, fmt.Errorf("tensor token_embd.weight is missing: the model file is incomplete")
	}
	if len(emb.Dims) != 2 || emb.Dims[0] != h.NEmbd || emb.Dims[1] != h.NVocab {
		return h, fmt.Errorf("token_embd.weight has shape %v, expected [%d %d] (embedding_length x vocabulary): corrupt model file", emb.Dims, h.NEmbd, h.NVocab)
	}
	_, hasOut := f.Tensor("output.weight")
	h.TiedOutput = !hasOut
	// Every block must be present; llama.cpp reports a missing tensor too,
	// but a missing block is the commonest sign of a half-written file.
	for i := int64(0); i < h.NLayer; i++ {
		if !f.hasBlock(i) {
			return h, fmt.Errorf("no tensors for layer %d of %d (blk.%d.*): the model file is incomplete", i, h.NLayer, i)
		}
	}
	if err := f.checkVocab(h.NVocab); err != nil {
		return h, err
	}
	if err := f.checkTensorTypes(); err != nil {
		return h, err
	}
	h.NExpert, _ = f.Int(arch + ".expert_count")
	h.NExpertUsed, _ = f.Int(arch + ".expert_used_count")
	return h, f.checkHparams(arch, h.NLayer)
}

func (f *File) hasBlock(i int64) bool {
	prefix := "blk." + strconv.FormatInt(i, 10) + "."
	for _, t := range f.Tensors {
		if len(t.Name) > len(prefix) && t.Name[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}
