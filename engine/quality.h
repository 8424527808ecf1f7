// Quality evaluation: a chunk of real tokens decoded with logits for its
// scored half, each scored row reduced here, so that the vocabulary-wide
// work (log-softmax, top-k, divergence) never crosses into Go per token.
#ifndef TOKBENCH_QUALITY_H
#define TOKBENCH_QUALITY_H

#include <stdint.h>
#include "tb.h"

// The rows of one chunk. Row r is position first+r, predicting token
// first+r+1. In base mode (kld == NULL) each row's most probable tokens
// are written to ids/lps[r*k ...] (most probable first, natural-log
// probabilities): the fewest that hold 1-tail of the probability, at most
// k, their count in n[r]. In compare mode they are read from there and
// the row's divergence from them is written to kld, top and dp.
typedef struct tb_qrows {
    int32_t k;
    float tail;
    int32_t *n;
    int32_t *ids;
    float *lps;
    double *tail_p; // the base's probability outside the kept tokens
    float *lp_next; // log-probability of the token that follows
    double *kld;    // KL(base || this), the base's tail merged into one outcome
    int8_t *top;    // 1 where this model's most probable token is the base's
    float *dp;      // this model's probability of the base's top token minus the base's
    int64_t decode_ns; // time in llama_decode and synchronize, accumulated
} tb_qrows;

// tb_eval_chunk empties the memory, decodes tokens[0..n) as sequence 0 in
// pieces of n_batch with logits for positions first .. n-2, and fills the
// n-1-first rows. Returns llama_decode's status of the first failure
// (-1 also when a row has no logits or memory is short).
int tb_eval_chunk(tb_ctx *c, const int32_t *tokens, int32_t n, int32_t first, int32_t n_batch, tb_qrows *q);

#endif
