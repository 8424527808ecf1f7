package gguf

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The checks in this file refuse what llama.cpp's loader asserts on
// (GGML_ASSERT / GGML_ABORT, which end the process) or reads out of
// bounds, instead of throwing an error it would report. Each names the
// place in llama.cpp it guards; third_party/llama-asserts.md lists them
// all, with those left to llama.cpp's own errors and to the isolated load.

// tokenizers are the tokenizer.ggml.model values llama.cpp knows
// (llama-vocab.cpp:1692-1808), without "none" and "no_vocab": a model
// without a vocabulary has no tokens to benchmark with.
var tokenizers = []string{"llama", "bert", "gpt2", "t5", "rwkv", "plamo2"}

// tokenByte is LLAMA_TOKEN_TYPE_BYTE.
const tokenByte = 6

// checkVocab checks the tokenizer arrays llama_vocab::impl::load reads.
func (f *File) checkVocab(nVocab int64) error {
	model, _ := f.String("tokenizer.ggml.model")
	if !slices.Contains(tokenizers, model) {
		return fmt.Errorf("metadata tokenizer.ggml.model is %s: tokbench needs one of %s", f.KV["tokenizer.ggml.model"].describe(), strings.Join(tokenizers, ", "))
	}
	toks := f.KV["tokenizer.ggml.tokens"]
	// llama-vocab.cpp:2089 GGML_ASSERT(id_to_token.size() ==
	// token_to_id.size()): two tokens of one text. An empty token is
	// renamed "[EMPTY_<id>]" first (llama-vocab.cpp:2065).
	seen := make(map[string]int, len(toks.Strs))
	for i, s := range toks.Strs {
		if s == "" {
			s = "[EMPTY_" + strconv.Itoa(i) + "]"
		}
		if j, dup := seen[s]; dup {
			return fmt.Errorf("tokenizer.ggml.tokens: tokens %d and %d are both %q: a vocabulary needs unique tokens (llama.cpp aborts on this file)", j, i, s)
		}
		seen[s] = i
	}
	// llama-vocab.cpp:2049, 2055, 2073, 2077: scores[i] and toktypes[i] are
	// read for every token without a length check (a string array has no
	// data at all): a read out of bounds.
	for _, a := range []struct {
		key  string
		want ValueType
	}{{"tokenizer.ggml.scores", TypeFloat32}, {"tokenizer.ggml.token_type", TypeInt32}} {
		v, ok := f.KV[a.key]
		if !ok {
			continue
		}
		if v.Type != TypeArray || v.ArrType != a.want || int64(v.ArrLen) != nVocab {
			return fmt.Errorf("%s must be an array of %d %s (one per token), got %s: corrupt vocabulary", a.key, nVocab, a.want, v.describe())
		}
	}
	// llama-vocab.cpp:2590 (token_to_byte, reached from the piece cache
	// built at load): a WordPiece (bert) vocabulary has no byte tokens.
	if model == "bert" {
		if i := slices.Index(f.KV["tokenizer.ggml.token_type"].Ints, tokenByte); i >= 0 {
			return fmt.Errorf("tokenizer.ggml.token_type: token %d is a byte token, which a bert (WordPiece) vocabulary cannot have (llama.cpp aborts on this file)", i)
		}
	}
	// gguf_get_arr_str (merges, llama-vocab.cpp:1747) asserts a string
	// array (gguf.cpp:818); the precompiled_charsmap (llama-vocab.cpp:1785)
	// is read as bytes, out of bounds if it is a string array.
	if v, ok := f.KV["tokenizer.ggml.merges"]; ok && (v.Type != TypeArray || v.ArrType != TypeString) {
		return fmt.Errorf("tokenizer.ggml.merges must be an array of strings, got %s: corrupt vocabulary", v.describe())
	}
	if v, ok := f.KV["tokenizer.ggml.precompiled_charsmap"]; ok && (v.Type != TypeArray || scalarSize[v.ArrType] == 0) {
		return fmt.Errorf("tokenizer.ggml.precompiled_charsmap must be an array of numbers, got %s: corrupt vocabulary", v.describe())
	}
	return nil
}

// checkTensorTypes refuses tensor types that no model weight has: the
// integer and f64 types and the dot-product-only q8_1/q8_K, which no
// backend multiplies or looks rows up in, so that building the graph at
// context creation asserts (ggml-backend.cpp:1186, no backend for the
// op). One-dimensional tensors (norms, biases) are added and multiplied
// element-wise: float types only.
func (f *File) checkTensorTypes() error {
	for _, t := range f.Tensors {
		name := t.Type.String()
		float := name == "f32" || name == "f16" || name == "bf16"
		switch {
		case t.Type.isInt() || name == "f64" || name == "q8_1" || name == "q8_K":
			return fmt.Errorf("tensor %q has type %s, which no model weight has: corrupt model file (llama.cpp aborts on this file)", t.Name, name)
		case len(t.Dims) == 1 && !float:
			return fmt.Errorf("tensor %q is one-dimensional but of type %s: norms and biases are f32, f16 or bf16 (llama.cpp aborts on this file)", t.Name, name)
		}
	}
	return nil
}

// maxExperts is LLAMA_MAX_EXPERTS (llama-hparams.h).
const maxExperts = 512

// checkHparams checks the hyperparameters llama_model::load_hparams
// asserts on for every architecture.
func (f *File) checkHparams(arch string, nLayer int64) error {
	get := func(key string) int64 { v, _ := f.Int(arch + "." + key); return v }
	// llama-model.cpp:521-533.
	nExpert, used := get("expert_count"), get("expert_used_count")
	groups, groupUsed := get("expert_group_count"), get("expert_group_used_count")
	var bad string
	switch {
	case nExpert < 0 || nExpert > maxExperts:
		bad = fmt.Sprintf("expert_count %d is outside 0..%d", nExpert, maxExperts)
	case used < 0 || used > nExpert:
		bad = fmt.Sprintf("expert_used_count %d is outside 0..expert_count (%d)", used, nExpert)
	case nExpert == 0 && groups != 0:
		bad = fmt.Sprintf("expert_group_count %d without experts", groups)
	case nExpert > 0 && used == 0:
		bad = "expert_used_count is 0 with experts"
	case nExpert > 0 && (groups < 0 || groups >= nExpert):
		bad = fmt.Sprintf("expert_group_count %d is outside 0..expert_count-1 (%d)", groups, nExpert-1)
	case groups > 1 && (nExpert%groups != 0 || groupUsed <= 0 || groupUsed >= groups):
		bad = fmt.Sprintf("expert_count %d, expert_group_count %d and expert_group_used_count %d do not fit together", nExpert, groups, groupUsed)
	}
	if bad != "" {
		return fmt.Errorf("metadata %s.%s: corrupt model file (llama.cpp aborts on this file)", arch, bad)
	}
	if need, room := MoEGraph(nLayer, used, int64(len(f.Tensors))); need > room {
		return fmt.Errorf("metadata %s.expert_used_count %d: %d layers of %d experts each need about %d graph nodes, more than the %d llama.cpp makes room for, and it aborts (GGML_ASSERT(obj_new)); use fewer experts per token or fewer layers",
			arch, used, nLayer, used, need, room)
	}
	// llama-model.cpp:574: an unknown rope scaling type is asserted on.
	if v, ok := f.KV[arch+".rope.scaling.type"]; ok {
		switch v.Str {
		case "none", "linear", "yarn", "longrope":
		default:
			return fmt.Errorf("metadata %s.rope.scaling.type is %s: use none, linear, yarn or longrope (llama.cpp aborts on this file)", arch, v.describe())
		}
	}
	// llama-model-loader.cpp:307-310 (get_key_or_arr -> get_arr): a
	// per-layer array is read as uint32 and asserted on otherwise; its
	// length must be the block count (an error llama.cpp throws, said
	// here first).
	for _, key := range []string{"feed_forward_length", "attention.head_count", "attention.head_count_kv"} {
		v, ok := f.KV[arch+"."+key]
		if !ok || v.Type != TypeArray {
			continue
		}
		if (v.ArrType != TypeInt32 && v.ArrType != TypeUint32) || int64(v.ArrLen) != nLayer {
			return fmt.Errorf("metadata %s.%s must be one integer or an array of %d int32/uint32 (one per layer), got %s: corrupt model file", arch, key, nLayer, v.describe())
		}
	}
	return nil
}

// describe says what a value is, for errors: its type, an array's
// element type and length, a string's text.
func (v Value) describe() string {
	switch v.Type {
	case TypeArray:
		return fmt.Sprintf("an array of %d %s", v.ArrLen, v.ArrType)
	case TypeString:
		return strconv.Quote(v.Str)
	}
	return "a " + v.Type.String()
}

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return "type " + strconv.Itoa(int(t))
}

// MoEGraph is the graph nodes a mixture's step needs, about, and the room
// llama.cpp gives them (llama-context.cpp, graph_max_nodes: at least 1024,
// 8 per tensor). Each layer routes through 2 nodes per expert used
// (llama-graph.cpp, build_moe_ffn: a view and an add each) and about 60
// others; measured on the pinned llama.cpp, 2 layers abort from 227
// experts used, 4 from 100, 8 from 36. Real models are far inside it;
// synthetic ones with hundreds of experts used are not.
func MoEGraph(nLayer, used, nTensors int64) (need, room int64) {
	if used <= 0 {
		return 0, 1
	}
	return nLayer*(2*used+60) + 6, max(1024, 8*nTensors)
}
