// Ceiling probes: how fast the chosen backend device streams memory and
// multiplies matrices, measured with ggml itself (what llama.cpp runs).
#include "probe.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "ggml-alloc.h"
#include "ggml-backend.h"

ggml_backend_t tb_probe_backend(int dev, int threads) {
    if (dev < 0 || (size_t)dev >= ggml_backend_dev_count()) return NULL;
    ggml_backend_dev_t d = ggml_backend_dev_get((size_t)dev);
    ggml_backend_t be = ggml_backend_dev_init(d, NULL);
    if (!be) return NULL;
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(d);
    ggml_backend_set_n_threads_t set_threads =
        (ggml_backend_set_n_threads_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
    if (set_threads && threads > 0) set_threads(be, threads);
    return be;
}

// tb_probe_time runs the graph once to warm up, then up to iters times
// while budget seconds last (at least once), and returns the fastest
// run's seconds (< 0 on failure): a ceiling is what the device can do,
// and the fastest run is the one least disturbed. The budget bounds a
// slow device's probe (a software GPU, a small CPU) without filling its
// data twice to learn the cost of a run first.
static double tb_probe_time(ggml_backend_t be, struct ggml_cgraph *g, int iters, double budget) {
    if (ggml_backend_graph_compute(be, g) != GGML_STATUS_SUCCESS) return -1;
    ggml_backend_synchronize(be);
    double best = -1;
    int64_t start = ggml_time_us();
    for (int i = 0; i < iters && (i == 0 || (double)(ggml_time_us() - start) / 1e6 < budget); i++) {
        int64_t t0 = ggml_time_us();
        if (ggml_backend_graph_compute(be, g) != GGML_STATUS_SUCCESS) return -1;
        ggml_backend_synchronize(be);
        double s = (double)(ggml_time_us() - t0) / 1e6;
        if (best < 0 || s < best) best = s;
    }
    return best;
}

// A probe: weights/inputs allocated on the device, the op graph allocated
// by ggml's graph allocator.
typedef struct {
    ggml_backend_t be;
    struct ggml_context *data, *ops, *packed;
    ggml_backend_buffer_t buf, packed_buf;
    ggml_gallocr_t galloc;
} tb_probe;

static int tb_probe_open(tb_probe *p, int dev, int threads) {
    memset(p, 0, sizeof *p);
    p->be = tb_probe_backend(dev, threads);
    if (!p->be) return -1;
    struct ggml_init_params ip = {ggml_tensor_overhead() * 8, NULL, true};
    p->data = ggml_init(ip);
    struct ggml_init_params op = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), NULL, true};
    p->ops = ggml_init(op);
    return p->data && p->ops ? 0 : -1;
}

static void tb_probe_close(tb_probe *p) {
    if (p->galloc) ggml_gallocr_free(p->galloc);
    if (p->buf) ggml_backend_buffer_free(p->buf);
    if (p->packed_buf) ggml_backend_buffer_free(p->packed_buf);
    if (p->packed) ggml_free(p->packed);
    if (p->ops) ggml_free(p->ops);
    if (p->data) ggml_free(p->data);
    if (p->be) ggml_backend_free(p->be);
}

static double tb_probe_graph(tb_probe *p, struct ggml_tensor *out, int iters, double budget) {
    struct ggml_cgraph *g = ggml_new_graph(p->ops);
    ggml_build_forward_expand(g, out);
    p->galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(p->be));
    if (!p->galloc || !ggml_gallocr_alloc_graph(p->galloc, g)) return -1;
    return tb_probe_time(p->be, g, iters, budget);
}

// tb_probe_alloc allocates the probe's data on its device. A host
// buffer asks for transparent huge pages before its first touch: a GiB
// of 4 KiB pages costs 262,144 page faults (0.7 to 3 s on a VM) before
// anything is timed, and the probe streams it in order, so 2 MiB pages
// change no figure, only the wait (the kernel's choice; none is fine).
static int tb_probe_alloc(tb_probe *p) {
    p->buf = ggml_backend_alloc_ctx_tensors(p->data, p->be);
    if (!p->buf) return -1;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (ggml_backend_buffer_is_host(p->buf)) {
        const uintptr_t huge = 2u << 20;
        uintptr_t base = (uintptr_t)ggml_backend_buffer_get_base(p->buf);
        uintptr_t end = base + ggml_backend_buffer_get_size(p->buf);
        uintptr_t from = (base + huge - 1) & ~(huge - 1), to = end & ~(huge - 1);
        if (to > from) madvise((void *)from, to - from, MADV_HUGEPAGE);
    }
#endif
    return 0;
}

static void tb_probe_fill(struct ggml_tensor *t, uint64_t seed) {
    int64_t k = t->ne[0], rows = ggml_nrows(t);
    float *f = malloc(sizeof(float) * (size_t)k);
    void *q = malloc(ggml_row_size(t->type, k));
    uint64_t s = seed | 1;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < k; i++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            f[i] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5);
        }
        size_t n = ggml_quantize_chunk(t->type, f, q, 0, 1, k, NULL);
        ggml_backend_tensor_set(t, q, (size_t)r * n, n);
    }
    free(f);
    free(q);
}

double tb_probe_copy(int dev, int threads, int64_t n, int iters, double budget) {
    tb_probe p;
    double secs = -1;
    if (tb_probe_open(&p, dev, threads) == 0) {
        struct ggml_tensor *a = ggml_new_tensor_1d(p.data, GGML_TYPE_F32, n);
        struct ggml_tensor *b = ggml_new_tensor_1d(p.data, GGML_TYPE_F32, n);
        if (tb_probe_alloc(&p) == 0) {
            ggml_backend_buffer_clear(p.buf, 1);
            secs = tb_probe_graph(&p, ggml_cpy(p.ops, a, b), iters, budget);
        }
    }
    tb_probe_close(&p);
    return secs;
}

// tb_probe_packed puts a k x m weight of type wtype where a model's
// weights go on a CPU: the CPU_REPACK buffer, whose weights of some types
// (Q4_0, Q4_K, IQ4_NL on AVX2 or NEON) are repacked as they are set, as
// llama.cpp loads a model's (and then multiplied by other kernels). NULL
// where the device has no such buffer or the type no repacked layout.
// Its data is set whole, at once, as that buffer requires.
static struct ggml_tensor *tb_probe_packed(tb_probe *p, enum ggml_type wtype, int64_t k, int64_t m) {
    ggml_backend_dev_t d = ggml_backend_get_device(p->be);
    if (ggml_backend_dev_type(d) != GGML_BACKEND_DEVICE_TYPE_CPU || !ggml_is_quantized(wtype)) return NULL;
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(d);
    ggml_backend_dev_get_extra_bufts_t extra =
        (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    ggml_backend_buffer_type_t buft = NULL;
    for (ggml_backend_buffer_type_t *b = extra ? extra(d) : NULL; b && *b; b++) {
        if (strcmp(ggml_backend_buft_name(*b), "CPU_REPACK") == 0) buft = *b;
    }
    if (!buft) return NULL;
    struct ggml_init_params ip = {ggml_tensor_overhead() * 2, NULL, true};
    p->packed = ggml_init(ip);
    if (!p->packed) return NULL;
    struct ggml_tensor *w = ggml_new_tensor_2d(p->packed, wtype, k, m);
    p->packed_buf = ggml_backend_alloc_ctx_tensors_from_buft(p->packed, buft);
    if (!p->packed_buf || !w->extra) return NULL; // no repacked layout for this type here
    size_t row = ggml_row_size(wtype, k);
    float *f = malloc(sizeof(float) * (size_t)k);
    char *q = malloc(row * (size_t)m);
    if (!f || !q) {
        free(f);
        free(q);
        return NULL;
    }
    uint64_t s = 1;
    for (int64_t r = 0; r < m; r++) {
        for (int64_t i = 0; i < k; i++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            f[i] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5);
        }
        ggml_quantize_chunk(wtype, f, q + (size_t)r * row, 0, 1, k, NULL);
    }
    ggml_backend_tensor_set(w, q, 0, row * (size_t)m);
    free(f);
    free(q);
    return w;
}

double tb_probe_matmul(int dev, int threads, enum ggml_type wtype, int64_t m, int64_t n, int64_t k, int iters, double budget) {
    tb_probe p;
    double secs = -1;
    if (tb_probe_open(&p, dev, threads) == 0) {
        struct ggml_tensor *w = tb_probe_packed(&p, wtype, k, m);
        struct ggml_tensor *x = ggml_new_tensor_2d(p.data, GGML_TYPE_F32, k, n);
        if (w) {
            if (tb_probe_alloc(&p) == 0) {
                tb_probe_fill(x, 2);
                secs = tb_probe_graph(&p, ggml_mul_mat(p.ops, w, x), iters, budget);
            }
            tb_probe_close(&p);
            return secs;
        }
        w = ggml_new_tensor_2d(p.data, wtype, k, m);
        if (tb_probe_alloc(&p) == 0) {
            // An F32 weight is what the bandwidth probes read: its
            // values change no timing, and a memset (every page touched,
            // none the shared zero page; 0x3c3c3c3c is 0.0115, far from
            // denormals) fills a GiB in a fraction of the random fill's
            // time. Quantized weights need valid blocks: random.
            if (wtype == GGML_TYPE_F32) ggml_backend_buffer_clear(p.buf, 0x3c);
            else tb_probe_fill(w, 1);
            tb_probe_fill(x, 2);
            secs = tb_probe_graph(&p, ggml_mul_mat(p.ops, w, x), iters, budget);
        }
    }
    tb_probe_close(&p);
    return secs;
}
