// A plain C benchmark loop over llama.h, llama-bench's method: random
// tokens (BOS first), pp decoded in n_batch chunks with one synchronize at
// the end, tg one token per llama_decode + llama_synchronize. It is the
// yardstick tokbench's own overhead is measured against (make bench).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *ud) {
    (void)ud;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static uint64_t rng = 88172645463325252ULL;
static llama_token next_token(int n_vocab) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (llama_token)(rng % (uint64_t)n_vocab);
}

static int prompt(struct llama_context *ctx, int n_prompt, int n_batch, int n_vocab, llama_token bos) {
    llama_token *toks = malloc(sizeof(llama_token) * (size_t)n_batch);
    int done = 0;
    while (done < n_prompt) {
        int n = n_prompt - done < n_batch ? n_prompt - done : n_batch;
        for (int i = 0; i < n; i++) toks[i] = next_token(n_vocab);
        if (done == 0 && bos >= 0) toks[0] = bos;
        if (llama_decode(ctx, llama_batch_get_one(toks, n)) != 0) {
            free(toks);
            return 1;
        }
        done += n;
    }
    llama_synchronize(ctx);
    free(toks);
    return 0;
}

static int generate(struct llama_context *ctx, int n_gen, int n_vocab, llama_token bos) {
    llama_token tok = bos >= 0 ? bos : 0;
    for (int i = 0; i < n_gen; i++) {
        if (llama_decode(ctx, llama_batch_get_one(&tok, 1)) != 0) return 1;
        llama_synchronize(ctx);
        tok = next_token(n_vocab);
    }
    return 0;
}

int cref_main(const char *path, int n_prompt, int n_gen, int threads, int reps, int n_batch, int n_ubatch) {
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) {
        fprintf(stderr, "cref: cannot load %s\n", path);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n_prompt > n_gen ? n_prompt : n_gen);
    cp.n_batch = (uint32_t)n_batch;
    cp.n_ubatch = (uint32_t)n_ubatch;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cref: cannot create a context\n");
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int n_vocab = llama_vocab_n_tokens(vocab);
    llama_token bos = llama_vocab_bos(vocab);
    llama_memory_t mem = llama_get_memory(ctx);

    printf("[\n");
    for (int test = 0; test < 2; test++) {
        int n = test == 0 ? n_prompt : n_gen;
        if (n == 0) continue;
        // Warm-up, as llama-bench: one small run, not counted.
        if (test == 0) prompt(ctx, n < n_batch ? n : n_batch, n_batch, n_vocab, bos);
        else generate(ctx, 1, n_vocab, bos);
        double sum_ts = 0;
        printf("  {\"n_prompt\": %d, \"n_gen\": %d, \"samples_ts\": [", test == 0 ? n : 0, test == 1 ? n : 0);
        for (int r = 0; r < reps; r++) {
            llama_memory_clear(mem, false);
            int64_t t0 = llama_time_us();
            int rc = test == 0 ? prompt(ctx, n, n_batch, n_vocab, bos) : generate(ctx, n, n_vocab, bos);
            int64_t t1 = llama_time_us();
            if (rc != 0) {
                fprintf(stderr, "cref: decode failed\n");
                return 1;
            }
            double ts = 1e6 * n / (double)(t1 - t0);
            sum_ts += ts;
            printf("%s%.3f", r ? ", " : "", ts);
        }
        printf("], \"avg_ts\": %.3f}%s\n", sum_ts / reps, test == 0 && n_gen > 0 ? "," : "");
    }
    printf("]\n");
    fflush(stdout);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
