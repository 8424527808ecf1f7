package gguf

import "strings"

// Experts is how a mixture of experts' weights divide: the experts'
// tensors ([in, out, expert] matrices, "blk.N.ffn_*_exps") and the rest.
type Experts struct {
	Count, Used int64 // per layer; per token
	Bytes       int64 // every expert of every layer
	Params      int64
}

// IsExpertTensor says whether a tensor holds experts: a 3-D matrix of a
// block's feed-forward whose last dimension is the expert.
func IsExpertTensor(t Tensor) bool {
	return len(t.Dims) == 3 && strings.HasPrefix(t.Name, "blk.") && strings.Contains(t.Name, "_exps")
}

// Experts sums the file's expert tensors; Count is 0 for a dense model.
func (f *File) Experts(h Hparams) Experts {
	x := Experts{Count: h.NExpert, Used: h.NExpertUsed}
	if h.NExpert == 0 {
		return x
	}
	for _, t := range f.Tensors {
		if !IsExpertTensor(t) {
			continue
		}
		x.Bytes += t.Bytes()
		x.Params += t.Elements()
	}
	return x
}
