// A plain C benchmark loop over llama.h, llama-bench's method (its
// tools/llama-bench/llama-bench.cpp): for each test a context of its own
// and, unless pool is 0, a ggml thread pool of its own (poll 50, as
// ggml_threadpool_params_default makes it) attached before the warm-up;
// the warm-up is the whole prompt for pp and one token for tg; random
// tokens (BOS first); pp decoded in n_batch chunks with one synchronize at
// the end, tg one token per llama_decode + llama_synchronize. It is the
// yardstick tokbench's own loop is measured against (make bench). pool 0
// attaches none: llama.cpp then starts and joins its threads in every
// graph computation, which shows what the pool is worth.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
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

// run_test measures one test (n_prompt tokens, or n_gen steps) as
// llama-bench does and prints its JSON object.
static int run_test(struct llama_model *model, int n_prompt, int n_gen, int threads, int reps, int n_batch,
                    int n_ubatch, int pool, const char *sep) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n_prompt + n_gen);
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
    struct ggml_threadpool *tp = NULL;
    if (pool) {
        struct ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
        tp = ggml_threadpool_new(&tpp);
        if (!tp) {
            fprintf(stderr, "cref: cannot make a thread pool\n");
            llama_free(ctx);
            return 1;
        }
        llama_attach_threadpool(ctx, tp, NULL);
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(llama_get_model(ctx));
    int n_vocab = llama_vocab_n_tokens(vocab);
    llama_token bos = llama_vocab_get_add_bos(vocab) ? llama_vocab_bos(vocab) : -1;
    llama_memory_t mem = llama_get_memory(ctx);

    int rc = n_prompt > 0 ? prompt(ctx, n_prompt, n_batch, n_vocab, bos) : generate(ctx, 1, n_vocab, bos);
    printf("  {\"n_prompt\": %d, \"n_gen\": %d, \"pool\": %d, \"samples_ts\": [", n_prompt, n_gen, pool);
    double sum_ts = 0;
    for (int r = 0; r < reps && rc == 0; r++) {
        llama_memory_clear(mem, false);
        int64_t t0 = llama_time_us();
        rc = n_prompt > 0 ? prompt(ctx, n_prompt, n_batch, n_vocab, bos) : generate(ctx, n_gen, n_vocab, bos);
        int64_t t1 = llama_time_us();
        double ts = 1e6 * (n_prompt + n_gen) / (double)(t1 - t0);
        sum_ts += ts;
        printf("%s%.3f", r ? ", " : "", ts);
    }
    printf("], \"avg_ts\": %.3f}%s\n", sum_ts / reps, sep);
    llama_free(ctx);
    if (tp) ggml_threadpool_free(tp);
    if (rc != 0) fprintf(stderr, "cref: decode failed\n");
    return rc;
}

int cref_main(const char *path, int n_prompt, int n_gen, int threads, int reps, int n_batch, int n_ubatch, int pool) {
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model *model = llama_model_load_from_file(path, llama_model_default_params());
    if (!model) {
        fprintf(stderr, "cref: cannot load %s\n", path);
        return 1;
    }
    printf("[\n");
    int rc = 0;
    if (n_prompt > 0) rc = run_test(model, n_prompt, 0, threads, reps, n_batch, n_ubatch, pool, n_gen > 0 ? "," : "");
    if (rc == 0 && n_gen > 0) rc = run_test(model, 0, n_gen, threads, reps, n_batch, n_ubatch, pool, "");
    printf("]\n");
    fflush(stdout);
    llama_model_free(model);
    llama_backend_free();
    return rc;
}
