#include "tb.h"
#include "profile.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int tb_min_level = GGML_LOG_LEVEL_ERROR;
static int tb_last_level = GGML_LOG_LEVEL_NONE;
static pthread_mutex_t tb_err_mu = PTHREAD_MUTEX_INITIALIZER;
static char tb_err[1024];
// The first error since the last clear: llama.cpp logs the cause (mmap
// failed: Cannot allocate memory) before the consequence (failed to load
// model).
static char tb_first[1024];
// Set once a computation is aborted on purpose (cancel, deadline): the
// errors llama.cpp then logs are expected, not news.
static int tb_aborting = 0;

static void tb_log(enum ggml_log_level level, const char *text, void *ud) {
    (void)ud;
    // CONT continues the previous message at its level.
    int lv = level == GGML_LOG_LEVEL_CONT ? tb_last_level : (int)level;
    tb_last_level = lv;
    if (lv >= GGML_LOG_LEVEL_WARN && level != GGML_LOG_LEVEL_CONT) {
        pthread_mutex_lock(&tb_err_mu);
        snprintf(tb_err, sizeof tb_err, "%s", text);
        size_t n = strlen(tb_err);
        while (n > 0 && (tb_err[n - 1] == '\n' || tb_err[n - 1] == ' ')) tb_err[--n] = 0;
        if (lv >= GGML_LOG_LEVEL_ERROR && tb_first[0] == 0) memcpy(tb_first, tb_err, n + 1);
        pthread_mutex_unlock(&tb_err_mu);
    }
    if (lv >= tb_min_level && !__atomic_load_n(&tb_aborting, __ATOMIC_RELAXED)) {
        fputs(text, stderr);
    }
}

void tb_log_init(int min_level) {
    tb_min_level = min_level;
    llama_log_set(tb_log, NULL);
}

void tb_last_error(char *buf, int n) {
    pthread_mutex_lock(&tb_err_mu);
    snprintf(buf, n, "%s", tb_err);
    pthread_mutex_unlock(&tb_err_mu);
}

void tb_first_error(char *buf, int n) {
    pthread_mutex_lock(&tb_err_mu);
    snprintf(buf, n, "%s", tb_first);
    pthread_mutex_unlock(&tb_err_mu);
}

void tb_clear_error(void) {
    pthread_mutex_lock(&tb_err_mu);
    tb_err[0] = 0;
    tb_first[0] = 0;
    pthread_mutex_unlock(&tb_err_mu);
    __atomic_store_n(&tb_aborting, 0, __ATOMIC_RELAXED);
}

// xorshift64*: fast, good enough for token ids and synthetic weights, and
// identical on every platform so a seed means the same model everywhere.
static inline uint64_t tb_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static uint64_t tb_seed(uint64_t seed) {
    // splitmix64 finaliser: spreads nearby seeds apart; never returns 0.
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z ? z : 1;
}

static bool tb_abort_cb(void *data) {
    tb_ctx *c = data;
    int64_t d = __atomic_load_n(&c->deadline_us, __ATOMIC_RELAXED);
    if (__atomic_load_n(&c->cancel, __ATOMIC_RELAXED) || (d > 0 && ggml_time_us() > d)) {
        __atomic_store_n(&tb_aborting, 1, __ATOMIC_RELAXED);
        return true;
    }
    return false;
}

tb_ctx *tb_ctx_new(struct llama_model *model, struct llama_context_params params, uint64_t seed) {
    tb_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    params.abort_callback = tb_abort_cb;
    params.abort_callback_data = c;
    c->ctx = llama_init_from_model(model, params);
    if (!c->ctx) {
        free(c);
        return NULL;
    }
    int32_t n = (int32_t)params.n_batch;
    if ((int32_t)params.n_seq_max > n) n = (int32_t)params.n_seq_max;
    c->batch = llama_batch_init(n, 0, 1);
    c->n_batch_alloc = n;
    c->n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    c->rng = tb_seed(seed);
    return c;
}

void tb_ctx_free(tb_ctx *c) {
    if (!c) return;
    llama_batch_free(c->batch);
    llama_free(c->ctx);
    free(c);
}

void tb_ctx_cancel(tb_ctx *c) { __atomic_store_n(&c->cancel, 1, __ATOMIC_RELAXED); }

void tb_ctx_set_deadline(tb_ctx *c, int64_t deadline_us) {
    __atomic_store_n(&c->deadline_us, deadline_us, __ATOMIC_RELAXED);
}

int tb_prefill(tb_ctx *c, int32_t n_seq, int32_t n_tokens, int32_t pos0, int32_t n_batch, int32_t bos) {
    if (n_batch > c->n_batch_alloc) n_batch = c->n_batch_alloc;
    struct llama_batch *b = &c->batch;
    b->n_tokens = 0;
    for (int32_t s = 0; s < n_seq; s++) {
        for (int32_t i = 0; i < n_tokens; i++) {
            llama_pos pos = pos0 + i;
            llama_token tok = (pos == 0 && bos >= 0) ? bos : (llama_token)(tb_next(&c->rng) % (uint64_t)c->n_vocab);
            // Logits for each sequence's last token: what a server needs to
            // sample the first generated token.
            tb_put(b, tok, pos, s, i == n_tokens - 1);
            if (b->n_tokens == n_batch) {
                int rc = llama_decode(c->ctx, *b);
                b->n_tokens = 0;
                if (rc != 0) return rc;
            }
        }
    }
    if (b->n_tokens > 0) {
        int rc = llama_decode(c->ctx, *b);
        b->n_tokens = 0;
        if (rc != 0) return rc;
    }
    llama_synchronize(c->ctx);
    return 0;
}

int tb_step(tb_ctx *c, int32_t n_seq, int32_t pos, struct llama_sampler **samplers, int32_t *tokens) {
    struct llama_batch *b = &c->batch;
    b->n_tokens = 0;
    for (int32_t s = 0; s < n_seq; s++) {
        llama_token tok = samplers ? tokens[s] : (llama_token)(tb_next(&c->rng) % (uint64_t)c->n_vocab);
        tb_put(b, tok, pos, s, true);
    }
    int rc = llama_decode(c->ctx, *b);
    if (rc != 0) return rc;
    llama_synchronize(c->ctx);
    if (samplers) {
        for (int32_t s = 0; s < n_seq; s++) {
            tokens[s] = llama_sampler_sample(samplers[s], c->ctx, s);
        }
    }
    if (c->step_delay_ns > 0) {
        // A slow decode loop, on purpose (tests of the decomposition):
        // work on the CPU until the delay has passed, as exact as the
        // clock (a sleep can overshoot by a scheduler tick).
        int64_t end = tb_now_ns() + c->step_delay_ns;
        while (tb_now_ns() < end) {
        }
    }
    return 0;
}

int tb_generate(tb_ctx *c, int32_t n_seq, int32_t pos0, int32_t n, struct llama_sampler **samplers, int32_t *tokens,
                int64_t *ends_ns, int32_t *done) {
    ends_ns[0] = tb_now_ns();
    for (int32_t i = 0; i < n; i++) {
        int rc = tb_step(c, n_seq, pos0 + i, samplers, tokens);
        if (rc != 0) {
            *done = i;
            return rc;
        }
        ends_ns[i + 1] = tb_now_ns();
    }
    *done = n;
    return 0;
}

int tb_batch_add(tb_ctx *c, int32_t seq, int32_t pos0, int32_t n, int32_t bos) {
    struct llama_batch *b = &c->batch;
    if (b->n_tokens + n > c->n_batch_alloc) return -1;
    for (int32_t i = 0; i < n; i++) {
        llama_pos pos = pos0 + i;
        llama_token tok = (pos == 0 && bos >= 0) ? bos : (llama_token)(tb_next(&c->rng) % (uint64_t)c->n_vocab);
        tb_put(b, tok, pos, seq, i == n - 1);
    }
    return 0;
}

int tb_batch_decode(tb_ctx *c) {
    struct llama_batch *b = &c->batch;
    if (b->n_tokens == 0) return 0;
    int rc = llama_decode(c->ctx, *b);
    b->n_tokens = 0;
    if (rc != 0) return rc;
    llama_synchronize(c->ctx);
    return 0;
}

size_t tb_synth_rows(enum ggml_type type, int64_t nrows, int64_t n_per_row, uint64_t seed,
                     float scale, bool constant, float *scratch, void *dst) {
    uint64_t s = tb_seed(seed);
    int64_t n = nrows * n_per_row;
    if (constant) {
        for (int64_t i = 0; i < n; i++) scratch[i] = scale;
    } else {
        // 24 random bits to a float in [-1, 1).
        const float k = 2.0f / 16777216.0f;
        for (int64_t i = 0; i < n; i++) {
            scratch[i] = ((float)(tb_next(&s) >> 40) * k - 1.0f) * scale;
        }
    }
    return ggml_quantize_chunk(type, scratch, dst, 0, nrows, n_per_row, NULL);
}

void tb_synth_vocab(struct gguf_context *g, int32_t n) {
    char **toks = malloc(sizeof(char *) * (size_t)n);
    float *scores = malloc(sizeof(float) * (size_t)n);
    int32_t *types = malloc(sizeof(int32_t) * (size_t)n);
    for (int32_t i = 0; i < n; i++) {
        char buf[32];
        if (i == 0) snprintf(buf, sizeof buf, "<unk>");
        else if (i == 1) snprintf(buf, sizeof buf, "<s>");
        else if (i == 2) snprintf(buf, sizeof buf, "</s>");
        else if (i < 3 + 256) snprintf(buf, sizeof buf, "<0x%02X>", i - 3);
        else snprintf(buf, sizeof buf, "\xe2\x96\x81t%d", i); // "▁t<i>"
        toks[i] = strdup(buf);
        scores[i] = i < 3 + 256 ? 0.0f : -(float)i;
        types[i] = i == 0 ? LLAMA_TOKEN_TYPE_UNKNOWN : i < 3 ? LLAMA_TOKEN_TYPE_CONTROL
                 : i < 3 + 256 ? LLAMA_TOKEN_TYPE_BYTE : LLAMA_TOKEN_TYPE_NORMAL;
    }
    gguf_set_arr_str(g, "tokenizer.ggml.tokens", (const char **)toks, (size_t)n);
    gguf_set_arr_data(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, (size_t)n);
    gguf_set_arr_data(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, (size_t)n);
    for (int32_t i = 0; i < n; i++) free(toks[i]);
    free(toks);
    free(scores);
    free(types);
}

// An assertion in llama.cpp or ggml ends the process. By default ggml
// prints a gdb backtrace and the Go runtime every goroutine's stack; this
// says it in one line that a parent process (or a person) can read, and
// exits without a core dump.
static void tb_on_abort(const char *msg) {
    char line[2048];
    snprintf(line, sizeof line, "%s", msg);
    for (char *p = line; *p; p++) {
        if (*p == '\n' || *p == '\r') *p = ' ';
    }
    fprintf(stderr, "tokbench: llama.cpp aborted: %s\n", line);
    fflush(stderr);
    _exit(TB_EXIT_ABORTED);
}

void tb_abort_init(void) { ggml_set_abort_callback(tb_on_abort); }

int tb_check_model(const char *path) {
    // CPU alone, mapped, no repacked copies: the check reads the file's
    // structure, not its weights, so it costs little whatever the size.
    ggml_backend_dev_t no_devices[1] = {NULL};
    struct llama_model_params mp = llama_model_default_params();
    mp.devices = no_devices;
    mp.n_gpu_layers = 0;
    mp.use_mmap = true;
    mp.use_extra_bufts = false;
    struct llama_model *m = llama_model_load_from_file(path, mp);
    if (m == NULL) return 1;
    struct llama_context_params cp = llama_context_default_params();
    int32_t train = llama_model_n_ctx_train(m);
    cp.n_ctx = train > 0 && train < 256 ? (uint32_t)train : 256;
    cp.n_batch = cp.n_ubatch = 32;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = 1;
    // Building the graphs (at context creation) checks the shapes the
    // loader left alone.
    struct llama_context *c = llama_init_from_model(m, cp);
    int rc = c == NULL ? 2 : 0;
    if (c != NULL) llama_free(c);
    llama_model_free(m);
    return rc;
}
