package engine

/*
#include <stdlib.h>
#include "tb.h"
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"
)

// SamplerConfig is a llama.cpp sampler chain. The zero value plus Greedy
// is greedy decoding; TypicalSampler is what chat front ends use.
type SamplerConfig struct {
	Greedy        bool    `json:"greedy"`
	TopK          int     `json:"top_k,omitempty"`
	TopP          float32 `json:"top_p,omitempty"`
	MinP          float32 `json:"min_p,omitempty"`
	Temp          float32 `json:"temp,omitempty"`
	RepeatPenalty float32 `json:"repeat_penalty,omitempty"`
	RepeatLastN   int     `json:"repeat_last_n,omitempty"`
	Seed          uint32  `json:"seed"`
}

// GreedySampler picks the most likely token.
func GreedySampler() SamplerConfig { return SamplerConfig{Greedy: true} }

// TypicalSampler is a common chat chain: repetition penalty 1.1 over the
// last 64 tokens, top-k 40, top-p 0.95, min-p 0.05, temperature 0.8.
func TypicalSampler(seed uint32) SamplerConfig {
	return SamplerConfig{TopK: 40, TopP: 0.95, MinP: 0.05, Temp: 0.8, RepeatPenalty: 1.1, RepeatLastN: 64, Seed: seed}
}

// Name is a short description of the chain.
func (s SamplerConfig) Name() string {
	if s.Greedy {
		return "greedy"
	}
	return fmt.Sprintf("penalty=%.2g,top_k=%d,top_p=%.2g,min_p=%.2g,temp=%.2g", s.RepeatPenalty, s.TopK, s.TopP, s.MinP, s.Temp)
}

// SamplerSet holds one sampler chain per sequence (each with its own
// penalty history). Close frees them.
type SamplerSet struct {
	chains []*C.struct_llama_sampler
}

// NewSamplers builds n chains for the model's vocabulary. End-of-generation
// tokens get a -inf bias (as a server's ignore_eos) so a benchmark always
// generates the tokens it asked for.
func (md *Model) NewSamplers(cfg SamplerConfig, n int) *SamplerSet {
	vocab := C.llama_model_get_vocab(md.m)
	var bias []C.llama_logit_bias
	for t := 0; t < md.Info.NVocab; t++ {
		if C.llama_vocab_is_eog(vocab, C.llama_token(t)) {
			bias = append(bias, C.llama_logit_bias{token: C.llama_token(t), bias: C.float(math.Inf(-1))})
		}
	}
	s := &SamplerSet{}
	for i := 0; i < n; i++ {
		chain := C.llama_sampler_chain_init(C.llama_sampler_chain_default_params())
		if len(bias) > 0 {
			cb := (*C.llama_logit_bias)(C.malloc(C.size_t(len(bias)) * C.size_t(unsafe.Sizeof(bias[0]))))
			copy(unsafe.Slice(cb, len(bias)), bias)
			C.llama_sampler_chain_add(chain, C.llama_sampler_init_logit_bias(C.int32_t(md.Info.NVocab), C.int32_t(len(bias)), cb))
			C.free(unsafe.Pointer(cb)) // the sampler keeps its own copy
		}
		if cfg.Greedy {
			C.llama_sampler_chain_add(chain, C.llama_sampler_init_greedy())
		} else {
			if cfg.RepeatPenalty > 0 && cfg.RepeatPenalty != 1 {
				C.llama_sampler_chain_add(chain, C.llama_sampler_init_penalties(C.int32_t(cfg.RepeatLastN), C.float(cfg.RepeatPenalty), 0, 0))
			}
			if cfg.TopK > 0 {
				C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_k(C.int32_t(cfg.TopK)))
			}
			if cfg.TopP > 0 && cfg.TopP < 1 {
				C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_p(C.float(cfg.TopP), 1))
			}
			if cfg.MinP > 0 {
				C.llama_sampler_chain_add(chain, C.llama_sampler_init_min_p(C.float(cfg.MinP), 1))
			}
			if cfg.Temp > 0 {
				C.llama_sampler_chain_add(chain, C.llama_sampler_init_temp(C.float(cfg.Temp)))
			}
			C.llama_sampler_chain_add(chain, C.llama_sampler_init_dist(C.uint32_t(cfg.Seed+uint32(i))))
		}
		s.chains = append(s.chains, chain)
	}
	return s
}

// Reset clears every chain's history (between repetitions).
func (s *SamplerSet) Reset() {
	for _, c := range s.chains {
		C.llama_sampler_reset(c)
	}
}

// Close frees the chains.
func (s *SamplerSet) Close() {
	if s == nil {
		return
	}
	for _, c := range s.chains {
		C.llama_sampler_free(c)
	}
	s.chains = nil
}
