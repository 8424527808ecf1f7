#include "quality.h"
#include "profile.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

// row_max is the largest logit of a row and (first) where it is.
static float row_max(const float *x, int32_t n, int32_t *at) {
    float m = x[0];
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++) {
        if (x[i] > m) {
            m = x[i];
            best = i;
        }
    }
    if (at) *at = best;
    return m;
}

// row_sums is log(sum(exp(x))) of a row of logits whose largest is m and,
// when tail is not NULL, the probability of the tokens not among
// ids[0..n), summed directly in the same pass (one minus the kept mass
// would cancel to noise when the tail is small). Every call sums in the
// same order, so the same row gives the same figures to the last bit.
// kept is all zero on entry and on return.
static double row_sums(const float *x, int32_t nv, float m, const int32_t *ids, int32_t n, uint8_t *kept, double *tail) {
    for (int32_t j = 0; j < n; j++) kept[ids[j]] = 1;
    double s = 0, st = 0;
    for (int32_t i = 0; i < nv; i++) {
        double e = expf(x[i] - m);
        s += e;
        if (!kept[i]) st += e;
    }
    for (int32_t j = 0; j < n; j++) kept[ids[j]] = 0;
    if (tail) *tail = st / s;
    return (double)m + log(s);
}

// logp is one token's log-probability. Both modes round it to float the
// same way, so that a model compared with itself gives exactly 0.
static inline float logp(float x, double lse) { return (float)((double)x - lse); }

// A min-heap of (logit, id) keeps the k largest logits of a row: its root
// is the smallest kept. Ties go to the lower id, so rows are reproducible.
static inline int below(float xa, int32_t ia, float xb, int32_t ib) { return xa < xb || (xa == xb && ia > ib); }

static void sift(float *x, int32_t *id, int32_t n, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && below(x[l], id[l], x[m], id[m])) m = l;
        if (r < n && below(x[r], id[r], x[m], id[m])) m = r;
        if (m == i) return;
        float tx = x[i]; x[i] = x[m]; x[m] = tx;
        int32_t ti = id[i]; id[i] = id[m]; id[m] = ti;
        i = m;
    }
}

// top_k writes the k largest of x (k <= n) into ids and their values into
// vals, largest first.
static void top_k(const float *x, int32_t n, int32_t k, int32_t *ids, float *vals) {
    for (int32_t i = 0; i < k; i++) {
        vals[i] = x[i];
        ids[i] = i;
    }
    for (int32_t i = k / 2 - 1; i >= 0; i--) sift(vals, ids, k, i);
    for (int32_t i = k; i < n; i++) {
        if (below(vals[0], ids[0], x[i], i)) {
            vals[0] = x[i];
            ids[0] = i;
            sift(vals, ids, k, 0);
        }
    }
    // Heap sort in place: the smallest goes last.
    for (int32_t end = k - 1; end > 0; end--) {
        float tx = vals[0]; vals[0] = vals[end]; vals[end] = tx;
        int32_t ti = ids[0]; ids[0] = ids[end]; ids[end] = ti;
        sift(vals, ids, end, 0);
    }
}

static void base_row(const float *x, int32_t nv, int32_t next, tb_qrows *q, int32_t r, uint8_t *kept) {
    int32_t *ids = q->ids + (int64_t)r * q->k;
    float *lps = q->lps + (int64_t)r * q->k;
    float m = row_max(x, nv, NULL);
    double lse = row_sums(x, nv, m, NULL, 0, kept, NULL);
    int32_t k = q->k < nv ? q->k : nv;
    top_k(x, nv, k, ids, lps);
    double mass = 0;
    int32_t n = 0;
    while (n < k && mass < 1 - q->tail) {
        lps[n] = logp(lps[n], lse);
        mass += exp(lps[n]);
        n++;
    }
    q->n[r] = n;
    row_sums(x, nv, m, ids, n, kept, &q->tail_p[r]);
    q->lp_next[r] = logp(x[next], lse);
}

static void compare_row(const float *x, int32_t nv, int32_t next, tb_qrows *q, int32_t r, uint8_t *kept) {
    const int32_t *ids = q->ids + (int64_t)r * q->k;
    const float *lps = q->lps + (int64_t)r * q->k;
    int32_t best;
    float m = row_max(x, nv, &best);
    // One pass gives the normaliser and this model's mass on the base's tail.
    double qt;
    double lse = row_sums(x, nv, m, ids, q->n[r], kept, &qt);
    double kld = 0;
    for (int32_t j = 0; j < q->n[r]; j++) {
        double lp = lps[j], lq = logp(x[ids[j]], lse);
        kld += exp(lp) * (lp - lq);
    }
    // The base's tokens beyond those kept, as one outcome.
    double pt = q->tail_p[r];
    if (pt > 0) kld += pt * log(pt / (qt > DBL_MIN ? qt : DBL_MIN));
    q->kld[r] = kld;
    q->top[r] = best == ids[0];
    q->dp[r] = (float)(exp(logp(x[ids[0]], lse)) - exp(lps[0]));
    q->lp_next[r] = logp(x[next], lse);
}

int tb_eval_chunk(tb_ctx *c, const int32_t *tokens, int32_t n, int32_t first, int32_t n_batch, tb_qrows *q) {
    if (n_batch > c->n_batch_alloc) n_batch = c->n_batch_alloc;
    llama_memory_clear(llama_get_memory(c->ctx), true);
    int32_t nv = c->n_vocab;
    uint8_t *kept = calloc(nv, 1);
    if (!kept) return -1;
    int rc = 0;
    struct llama_batch *b = &c->batch;
    for (int32_t start = 0; start < n; start += n_batch) {
        int32_t end = start + n_batch < n ? start + n_batch : n;
        b->n_tokens = 0;
        for (int32_t i = start; i < end; i++) tb_put(b, tokens[i], i, 0, i >= first && i < n - 1);
        int64_t t0 = tb_now_ns();
        rc = llama_decode(c->ctx, *b);
        if (rc == 0) llama_synchronize(c->ctx);
        q->decode_ns += tb_now_ns() - t0;
        b->n_tokens = 0;
        if (rc != 0) break;
        for (int32_t i = start > first ? start : first; i < end && i < n - 1; i++) {
            const float *x = llama_get_logits_ith(c->ctx, i - start);
            if (!x) {
                rc = -1;
                break;
            }
            if (q->kld) {
                compare_row(x, nv, tokens[i + 1], q, i - first, kept);
            } else {
                base_row(x, nv, tokens[i + 1], q, i - first, kept);
            }
        }
        if (rc != 0) break;
    }
    free(kept);
    return rc;
}
