// Kernel ceilings: the ops of one transformer step at a model's own
// shapes, each on tensors of its own, timed with ggml on the backend the
// model runs on. The sum over a step's ops is the fastest the step can be
// with these kernels; what the real step takes beyond it is software.
#include "ops.h"
#include "probe.h"
#include "profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

// tb_fill sets a tensor to valid data of its type: one row of random
// values (in [-0.5, 0.5)), converted once and repeated, so that a large
// quantized weight costs a copy, not a quantization, to fill.
static void tb_fill(struct ggml_tensor *t, uint64_t seed) {
    int64_t k = t->ne[0], rows = ggml_nrows(t);
    size_t row = ggml_row_size(t->type, k);
    long long experts = 0;
    if (t->type == GGML_TYPE_I32 && sscanf(t->name, "tb_ids_%lld", &experts) == 1 && experts > 0) {
        // A mixture's routing, ids[k, n]: token i's j-th expert is
        // (i*k + j) mod e, so that each token's are distinct (k <= e),
        // the tokens together read all e, and evenly.
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)ggml_nelements(t));
        for (int64_t i = 0; i < t->ne[1]; i++) {
            for (int64_t j = 0; j < k; j++) ids[i * k + j] = (int32_t)((i * k + j) % experts);
        }
        ggml_backend_tensor_set(t, ids, 0, ggml_nbytes(t));
        free(ids);
        return;
    }
    if (t->type == GGML_TYPE_I32 || t->type == GGML_TYPE_I64) {
        // Row indices and positions: 0, 1, 2, ... (in range of anything).
        size_t es = ggml_type_size(t->type);
        char *b = calloc((size_t)ggml_nelements(t), es);
        for (int64_t i = 0; i < ggml_nelements(t); i++) {
            if (es == 4) ((int32_t *)b)[i] = (int32_t)i;
            else ((int64_t *)b)[i] = i;
        }
        ggml_backend_tensor_set(t, b, 0, ggml_nbytes(t));
        free(b);
        return;
    }
    float *f = malloc(sizeof(float) * (size_t)k);
    uint64_t s = seed | 1;
    for (int64_t i = 0; i < k; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        f[i] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5);
    }
    // A repacking buffer takes a tensor only whole; others in chunks.
    int64_t per = t->extra ? rows : rows < 64 ? rows : 64; // rows per host chunk
    char *chunk = calloc((size_t)per, row);
    // Types that need an importance matrix to quantize stay zero: valid
    // blocks, and as fast to multiply.
    if (!ggml_quantize_requires_imatrix(t->type)) ggml_quantize_chunk(t->type, f, chunk, 0, 1, k, NULL);
    for (int64_t r = 1; r < per; r++) memcpy(chunk + (size_t)r * row, chunk, row);
    for (int64_t r = 0; r < rows; r += per) {
        int64_t n = rows - r < per ? rows - r : per;
        ggml_backend_tensor_set(t, chunk, (size_t)r * row, (size_t)n * row);
    }
    free(chunk);
    free(f);
}

// tb_weights are the matrix products' weights of a graph, and their nodes:
// what may live in an extra (repacking) buffer as the model's weights do.
typedef struct {
    struct ggml_tensor **w, **node;
    int n, cap;
} tb_weights;

static void tb_weights_add(tb_weights *ws, struct ggml_tensor *w, struct ggml_tensor *node) {
    if (ws->n == ws->cap) {
        ws->cap = ws->cap ? 2 * ws->cap : 64;
        ws->w = realloc(ws->w, sizeof *ws->w * (size_t)ws->cap);
        ws->node = realloc(ws->node, sizeof *ws->node * (size_t)ws->cap);
    }
    ws->w[ws->n] = w;
    ws->node[ws->n++] = node;
}

// tb_place_weights puts each weight that the CPU backend's extra buffer
// types take (CPU_REPACK: Q4_0, Q4_K, IQ4_NL, ... in the layout their
// kernels want) in a buffer of that type, as llama.cpp places a model's
// weights, so that the same kernels run. Buffers made are added to bufs.
static void tb_place_weights(ggml_backend_t be, tb_weights *ws, ggml_backend_buffer_t *bufs, int *n_bufs) {
    if (!ggml_backend_is_cpu(be)) return;
    ggml_backend_dev_t dev = ggml_backend_get_device(be);
    ggml_backend_dev_get_extra_bufts_t get_extra = (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(
        ggml_backend_dev_backend_reg(dev), "ggml_backend_dev_get_extra_bufts");
    ggml_backend_buffer_type_t *extras = get_extra ? get_extra(dev) : NULL;
    for (int i = 0; extras && i < ws->n; i++) {
        struct ggml_tensor *w = ws->w[i];
        for (ggml_backend_buffer_type_t *b = extras; *b && !w->buffer; b++) {
            ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(*b, ggml_nbytes(w));
            if (!buf) continue;
            if (ggml_backend_tensor_alloc(buf, w, ggml_backend_buffer_get_base(buf)) == GGML_STATUS_SUCCESS &&
                ggml_backend_dev_supports_op(dev, ws->node[i])) {
                bufs[(*n_bufs)++] = buf;
                break;
            }
            w->buffer = NULL;
            w->data = NULL;
            w->extra = NULL;
            ggml_backend_buffer_free(buf);
        }
    }
}

// tb_build adds copies of op to the graph, making its tensors in data.
static void tb_build(struct ggml_context *data, struct ggml_context *ops, struct ggml_cgraph *g, const tb_op *op, tb_weights *ws) {
    enum ggml_type ty = (enum ggml_type)op->type, ty2 = (enum ggml_type)op->type2;
    int64_t a = op->a, b = op->b, c = op->c, d = op->d, n = op->n;
    for (int i = 0; i < op->copies; i++) {
        struct ggml_tensor *out = NULL;
        switch (op->kind) {
        case TB_OP_MATMUL: {
            struct ggml_tensor *w = ggml_new_tensor_2d(data, ty, a, b);
            out = ggml_mul_mat(ops, w, ggml_new_tensor_2d(data, GGML_TYPE_F32, a, n));
            tb_weights_add(ws, w, out);
            break;
        }
        case TB_OP_MATMUL_ID: {
            // Only the e experts read are made: ids name each of them.
            struct ggml_tensor *w = ggml_new_tensor_3d(data, ty, a, b, op->e);
            struct ggml_tensor *ids = ggml_new_tensor_2d(data, GGML_TYPE_I32, d, n);
            ggml_format_name(ids, "tb_ids_%lld", (long long)op->e);
            out = ggml_mul_mat_id(ops, w, ggml_new_tensor_3d(data, GGML_TYPE_F32, a, c, n), ids);
            tb_weights_add(ws, w, out);
            break;
        }
        case TB_OP_ROUTE: {
            // As llama.cpp's build_moe_ffn: the router's probabilities,
            // each token's top d, their weights, the experts' outputs
            // scaled by them and summed.
            struct ggml_tensor *probs = ggml_soft_max(ops, ggml_new_tensor_2d(data, GGML_TYPE_F32, a, n));
            struct ggml_tensor *sel = ggml_argsort_top_k(ops, probs, (int)d);
            struct ggml_tensor *w = ggml_get_rows(ops, ggml_reshape_3d(ops, probs, 1, a, n), sel);
            struct ggml_tensor *y = ggml_mul(ops, ggml_new_tensor_3d(data, GGML_TYPE_F32, b, d, n), w);
            out = ggml_view_2d(ops, y, b, n, y->nb[2], 0);
            for (int64_t j = 1; j < d; j++) out = ggml_add(ops, out, ggml_view_2d(ops, y, b, n, y->nb[2], (size_t)j * y->nb[1]));
            break;
        }
        case TB_OP_GET_ROWS: {
            // The n rows looked up are all the op reads: a table of them
            // costs the same to look up as the whole vocabulary's, which
            // would take a large model's fill seconds.
            int64_t rows = n < b ? (n > 0 ? n : 1) : b;
            out = ggml_get_rows(ops, ggml_new_tensor_2d(data, ty, a, rows), ggml_new_tensor_1d(data, GGML_TYPE_I32, n));
            break;
        }
        case TB_OP_ATTN: {
            struct ggml_tensor *q = ggml_new_tensor_3d(data, GGML_TYPE_F32, a, n, b);
            struct ggml_tensor *k = ggml_new_tensor_3d(data, ty, a, c, d);
            struct ggml_tensor *v = ggml_new_tensor_3d(data, ty2, c, a, d); // transposed, as the non-FA cache keeps V
            struct ggml_tensor *mask = ggml_new_tensor_2d(data, GGML_TYPE_F16, c, n);
            struct ggml_tensor *kq = ggml_soft_max_ext(ops, ggml_mul_mat(ops, k, q), mask, 1.0f / sqrtf((float)a), 0.0f);
            out = ggml_mul_mat(ops, v, kq);
            break;
        }
        case TB_OP_FLASH: {
            struct ggml_tensor *q = ggml_new_tensor_3d(data, GGML_TYPE_F32, a, n, b);
            struct ggml_tensor *k = ggml_new_tensor_3d(data, ty, a, c, d);
            struct ggml_tensor *v = ggml_new_tensor_3d(data, ty2, a, c, d);
            struct ggml_tensor *mask = ggml_new_tensor_2d(data, GGML_TYPE_F16, c, n);
            out = ggml_flash_attn_ext(ops, q, k, v, mask, 1.0f / sqrtf((float)a), 0.0f, 0.0f);
            ggml_flash_attn_ext_set_prec(out, GGML_PREC_F32);
            break;
        }
        case TB_OP_KV_STORE:
            out = ggml_set_rows(ops, ggml_new_tensor_2d(data, ty, a, n + 256), ggml_new_tensor_2d(data, GGML_TYPE_F32, a, n),
                                ggml_new_tensor_1d(data, GGML_TYPE_I64, n));
            break;
        case TB_OP_NORM:
            out = ggml_mul(ops, ggml_rms_norm(ops, ggml_new_tensor_2d(data, GGML_TYPE_F32, a, n), 1e-5f),
                           ggml_new_tensor_1d(data, GGML_TYPE_F32, a));
            break;
        case TB_OP_ROPE:
            out = ggml_rope_ext(ops, ggml_new_tensor_3d(data, GGML_TYPE_F32, a, b, n), ggml_new_tensor_1d(data, GGML_TYPE_I32, n),
                                NULL, (int)a, 0, 4096, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
            break;
        case TB_OP_GLU:
            out = ggml_swiglu_split(ops, ggml_new_tensor_2d(data, GGML_TYPE_F32, a, n), ggml_new_tensor_2d(data, GGML_TYPE_F32, a, n));
            break;
        case TB_OP_ADD:
            out = ggml_add(ops, ggml_new_tensor_2d(data, GGML_TYPE_F32, a, n), ggml_new_tensor_2d(data, GGML_TYPE_F32, a, n));
            break;
        }
        if (out) ggml_build_forward_expand(g, out);
    }
}

void tb_keep_freed_memory(int keep) {
#if defined(__GLIBC__)
    // Ops timed one after another each allocate and fill their tensors:
    // from memory the process already touched, a fill is a copy; from
    // fresh pages it is a page fault every 4 KiB, which on a VM costs a
    // hundred times the copy. While ops are timed their blocks come from
    // the heap and stay there when freed, for the next ops (the next
    // test's too); after, allocations are as before (large ones mapped:
    // the measured contexts' are not changed), and tb_give_back_memory
    // returns what the heap kept.
    mallopt(M_MMAP_MAX, keep ? 0 : 65536); // 0: no block is mapped
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#else
    (void)keep;
#endif
}

void tb_give_back_memory(void) {
#if defined(__GLIBC__)
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
    malloc_trim(0);
#else
    (void)keep;
#endif
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

// tb_tight is the spread of runs (max - min over their median) from
// which an op's timing is taken as settled.
static const double tb_tight = 0.05;

// tb_settle_ns is how long runs that keep disagreeing are taken past the
// fifth: short ops still get up to iters.
static const int64_t tb_settle_ns = 25000000;

// tb_brief_ns: runs that agree end the timing early only once this much
// time has passed, so that an op of microseconds, which one preemption
// of a thread makes a thousand times slower, gets all of iters.
static const int64_t tb_brief_ns = 2000000;

// tb_spread is (max - min) / median of n runs (from five on, without
// the fastest and the slowest), in a copy.
static double tb_spread(const double *runs, int n) {
    double s[64];
    if (n > 64) n = 64;
    memcpy(s, runs, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    double med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    int lo = n >= 5 ? 1 : 0, hi = n >= 5 ? n - 2 : n - 1;
    return med > 0 ? (s[hi] - s[lo]) / med : 1;
}

double tb_time_ops(int dev, int threads, const tb_op *ops, int n_ops, int iters, int64_t budget_ns) {
    int n_tensors = 0, n_nodes = 0;
    for (int i = 0; i < n_ops; i++) {
        int64_t per = ops[i].kind == TB_OP_ROUTE ? 8 + 2 * ops[i].d : 4; // routing: a view and an add per expert
        n_tensors += 5 * ops[i].copies;
        n_nodes += (int)per * ops[i].copies;
    }
    ggml_backend_t be = tb_probe_backend(dev, threads);
    if (!be) return -1;
    // On the CPU, a threadpool kept across the runs, its threads spinning
    // between them as between the back-to-back steps of a decode loop: a
    // pool made and ended per run would pay to wake an idle core each
    // time, which the step does not.
    struct ggml_threadpool *tp = NULL;
    if (ggml_backend_is_cpu(be) && threads > 0) {
        struct ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
        tpp.poll = 100;
        tp = ggml_threadpool_new(&tpp);
        if (tp) ggml_backend_cpu_set_threadpool(be, tp);
    }
    struct ggml_init_params dp = {ggml_tensor_overhead() * (size_t)(n_tensors + 8), NULL, true};
    struct ggml_init_params op = {ggml_tensor_overhead() * (size_t)(n_nodes + 8) + ggml_graph_overhead_custom((size_t)n_nodes + 8, false), NULL, true};
    struct ggml_context *data = ggml_init(dp), *octx = ggml_init(op);
    ggml_backend_buffer_t buf = NULL;
    ggml_gallocr_t galloc = NULL;
    tb_weights ws = {0};
    int n_bufs = 0;
    ggml_backend_buffer_t *bufs = NULL;
    double *runs = malloc(sizeof(double) * (size_t)(iters > 0 ? iters : 1));
    double secs = -1;
    if (!data || !octx || !runs) goto done;
    struct ggml_cgraph *g = ggml_new_graph_custom(octx, (size_t)n_nodes + 8, false);
    for (int i = 0; i < n_ops; i++) tb_build(data, octx, g, &ops[i], &ws);
    bufs = calloc((size_t)ws.n + 1, sizeof *bufs);
    if (!bufs) goto done;
    tb_place_weights(be, &ws, bufs, &n_bufs);
    buf = ggml_backend_alloc_ctx_tensors(data, be);
    if (!buf && n_bufs == 0) goto done;
    uint64_t seed = 1;
    for (struct ggml_tensor *t = ggml_get_first_tensor(data); t; t = ggml_get_next_tensor(data, t)) tb_fill(t, seed++);
    galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(be));
    if (!galloc || !ggml_gallocr_alloc_graph(galloc, g)) goto done;
    if (ggml_backend_graph_compute(be, g) != GGML_STATUS_SUCCESS) goto done;
    ggml_backend_synchronize(be);
    int done_iters = 0;
    for (int64_t start = tb_now_ns(); done_iters < iters && (done_iters == 0 || tb_now_ns() - start < budget_ns); done_iters++) {
        int64_t t0 = tb_now_ns();
        if (ggml_backend_graph_compute(be, g) != GGML_STATUS_SUCCESS) goto done;
        ggml_backend_synchronize(be);
        runs[done_iters] = (double)(tb_now_ns() - t0) / 1e9;
        // Enough once the runs agree: from three on, all within
        // tb_tight of their median, or from five on, all but the fastest
        // and the slowest (more runs would not move the median).
        if (done_iters + 1 >= 3 && tb_now_ns() - start >= tb_brief_ns && tb_spread(runs, done_iters + 1) <= tb_tight) {
            done_iters++;
            break;
        }
        // Runs that take a while and still disagree (a noisy machine):
        // five of them say as much as more would.
        if (done_iters + 1 >= 5 && tb_now_ns() - start >= tb_settle_ns) {
            done_iters++;
            break;
        }
    }
    qsort(runs, (size_t)done_iters, sizeof(double), cmp_double);
    secs = done_iters % 2 ? runs[done_iters / 2] : (runs[done_iters / 2 - 1] + runs[done_iters / 2]) / 2;
done:
    free(runs);
    if (galloc) ggml_gallocr_free(galloc);
    if (buf) ggml_backend_buffer_free(buf);
    for (int i = 0; i < n_bufs; i++) ggml_backend_buffer_free(bufs[i]);
    free(bufs);
    free(ws.w);
    free(ws.node);
    if (octx) ggml_free(octx);
    if (data) ggml_free(data);
    ggml_backend_free(be);
    if (tp) ggml_threadpool_free(tp);
    return secs;
}
