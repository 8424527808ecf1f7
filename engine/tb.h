// C side of the engine: the few loops that must not cross into Go per token
// (prefill chunks, one decode step for B sequences, sampling) and the glue
// llama.cpp needs as C functions (log and abort callbacks).
#ifndef TOKBENCH_TB_H
#define TOKBENCH_TB_H

#include <stdbool.h>
#include <stdint.h>
#include "llama.h"
#include "gguf.h"
#include "ggml.h"

// Logging: messages at or above min_level go to stderr; the last error or
// warning line is kept so a failed call can say why.
void tb_log_init(int min_level);
void tb_last_error(char *buf, int n);
void tb_clear_error(void);
void tb_first_error(char *buf, int n);

// Aborts: tb_abort_init makes every ggml/llama.cpp assertion print one
// line ("tokbench: llama.cpp aborted: FILE:LINE: ...") and exit with
// TB_EXIT_ABORTED, instead of a debugger backtrace and abort(3).
#define TB_EXIT_ABORTED 134
void tb_abort_init(void);

// tb_check_model loads a model on the CPU alone and makes a small context
// from it, then frees both: 0 if both worked, 1 if the load failed, 2 if
// the context did (llama.cpp logged why).
int tb_check_model(const char *path);

// A measurement context: the llama context, one reusable batch, a token
// generator and the cancellation state the abort callback reads.
typedef struct tb_ctx {
    struct llama_context *ctx;
    struct llama_batch batch;
    int32_t n_batch_alloc;
    int32_t n_vocab;
    uint64_t rng;
    int32_t cancel;      // set from Go (Ctrl-C); read by the abort callback
    int64_t deadline_us; // ggml_time_us() deadline, 0 = none
    int64_t step_delay_ns; // extra time per decode step (tests), 0 = none
} tb_ctx;

// tb_put appends one token to a batch.
static inline void tb_put(struct llama_batch *b, llama_token tok, llama_pos pos, llama_seq_id seq, bool logits) {
    int i = b->n_tokens++;
    b->token[i] = tok;
    b->pos[i] = pos;
    b->n_seq_id[i] = 1;
    b->seq_id[i][0] = seq;
    b->logits[i] = logits;
}

tb_ctx *tb_ctx_new(struct llama_model *model, struct llama_context_params params, uint64_t seed);
void tb_ctx_free(tb_ctx *c);
void tb_ctx_cancel(tb_ctx *c);
void tb_ctx_set_deadline(tb_ctx *c, int64_t deadline_us);

// Prefill n_tokens random tokens (BOS first at position 0) into each of the
// sequences [0, n_seq), starting at pos0, in chunks of n_batch, then
// synchronize once. Returns llama_decode's status of the first failure.
int tb_prefill(tb_ctx *c, int32_t n_seq, int32_t n_tokens, int32_t pos0, int32_t n_batch, int32_t bos);

// One decode step of one token for each sequence [0, n_seq) at position pos,
// then synchronize. Tokens are random unless samplers is non-NULL, in which
// case each sequence's token is the one its sampler picked after the last
// step (tokens[] carries them between steps).
int tb_step(tb_ctx *c, int32_t n_seq, int32_t pos, struct llama_sampler **samplers, int32_t *tokens);
// tb_generate runs n steps (tb_step at pos0, pos0+1, ...) in one call, so
// that the caller's runtime is not entered once per token; ends_ns[0] is
// the start and ends_ns[i+1] the end of step i (CLOCK_MONOTONIC). On an
// error, *done steps were completed.
int tb_generate(tb_ctx *c, int32_t n_seq, int32_t pos0, int32_t n, struct llama_sampler **samplers, int32_t *tokens,
                int64_t *ends_ns, int32_t *done);

// Synthetic model data: fill n rows of n_per_row random values uniform in
// [-scale, scale) (or all equal to scale when constant) and convert them to
// type into dst. scratch holds n * n_per_row floats. Returns bytes written.
size_t tb_synth_rows(enum ggml_type type, int64_t nrows, int64_t n_per_row, uint64_t seed,
                     float scale, bool constant, float *scratch, void *dst);

// A llama-style SPM vocabulary of n tokens: <unk> <s> </s>, the 256 byte
// tokens, then filler pieces.
void tb_synth_vocab(struct gguf_context *g, int32_t n);

#endif

// Continuous batching: tb_batch_add queues n random tokens (BOS at
// position 0) of sequence seq from position pos0, asking for logits on the
// last; tb_batch_decode decodes what is queued (in chunks of the batch
// size) and synchronizes. Returns llama_decode's status.
int tb_batch_add(tb_ctx *c, int32_t seq, int32_t pos0, int32_t n, int32_t bos);
int tb_batch_decode(tb_ctx *c);
