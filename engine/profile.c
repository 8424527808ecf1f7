// Op profile of a real step, through llama.cpp's graph evaluation callback.
#include "profile.h"

#include "ggml-cpu.h"
#include "ggml-backend.h"
#include "llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t tb_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

tb_prof *tb_prof_new(int32_t cap, int32_t n_expert) {
    tb_prof *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->nodes = calloc((size_t)cap, sizeof *p->nodes);
    p->expert_hits = calloc((size_t)(n_expert > 0 ? n_expert : 1), sizeof *p->expert_hits);
    p->cap_weights = 1 << 14;
    p->weights = calloc((size_t)p->cap_weights, sizeof *p->weights);
    if (!p->nodes || !p->expert_hits || !p->weights) {
        tb_prof_free(p);
        return NULL;
    }
    p->cap = cap;
    p->n_expert = n_expert;
    return p;
}

void tb_prof_free(tb_prof *p) {
    if (!p) return;
    free(p->nodes);
    free(p->expert_hits);
    free(p->weights);
    free(p);
}

// tb_place_weight notes where a weight the step read lives, once.
static void tb_place_weight(tb_prof *p, const struct ggml_tensor *w, int expert) {
    if (!w->buffer || ggml_backend_buffer_get_usage(w->buffer) != GGML_BACKEND_BUFFER_USAGE_WEIGHTS) return;
    for (int32_t i = p->n_weights - 1; i >= 0; i--) {
        if (p->weights[i].tensor == w) return;
    }
    if (p->n_weights == p->cap_weights) return;
    tb_weight_place *wp = &p->weights[p->n_weights++];
    wp->tensor = w;
    snprintf(wp->name, sizeof wp->name, "%s", w->name);
    snprintf(wp->buft, sizeof wp->buft, "%s", ggml_backend_buft_name(ggml_backend_buffer_get_type(w->buffer)));
    wp->bytes = (int64_t)ggml_nbytes(w);
    wp->expert = expert;
}

// tb_count_experts reads a layer's routing, ids[k, n_tokens] (I32, rows
// possibly strided: top-k is a view of the router's argsort), wherever
// the tensor lives, and counts the distinct experts it names.
static void tb_count_experts(tb_prof *p, const struct ggml_tensor *t) {
    int64_t k = t->ne[0], n = t->ne[1];
    if (t->type != GGML_TYPE_I32 || k <= 0 || k > p->n_expert || !t->buffer) return;
    // One read of the whole (strided) view: one transfer from a GPU.
    size_t size = ggml_nbytes(t);
    char *buf = malloc(size);
    if (!buf) return;
    ggml_backend_tensor_get((struct ggml_tensor *)t, buf, 0, size);
    uint8_t seen[512] = {0}; // LLAMA_MAX_EXPERTS
    int64_t distinct = 0;
    for (int64_t i = 0; i < n; i++) {
        const int32_t *ids = (const int32_t *)(buf + i * t->nb[1]);
        for (int64_t j = 0; j < k; j++) {
            int32_t e = ids[j];
            if (e < 0 || e >= p->n_expert) continue;
            p->expert_hits[e]++;
            if (!seen[e]) {
                seen[e] = 1;
                distinct++;
            }
        }
    }
    free(buf);
    if (p->moe_step_tokens == 0) p->moe_step_tokens = n;
    if (n < p->moe_step_tokens) {
        p->moe_short_nodes++;
        p->moe_short_distinct += distinct;
    }
    p->moe_nodes++;
    p->moe_distinct += distinct;
    p->moe_tokens += n;
    p->moe_uniform += p->n_expert * (1 - pow(1 - (double)k / p->n_expert, (double)n));
}

int64_t tb_prof_mark(tb_prof *p) {
    p->in_step = 0;
    p->moe_step_tokens = 0;
    p->last_ns = tb_now_ns();
    return p->last_ns;
}

static bool tb_is_weight_op(const struct ggml_tensor *t) {
    return (t->op == GGML_OP_MUL_MAT || t->op == GGML_OP_MUL_MAT_ID || t->op == GGML_OP_GET_ROWS) && t->src[0];
}

bool tb_prof_cb(struct ggml_tensor *t, bool ask, void *user_data) {
    tb_prof *p = user_data;
    if (p->mode == 0) return false;
    bool result = strcmp(t->name, "result_output") == 0;
    if (ask && p->mode == 1) {
        // Where the weights live needs no data: seen as they are asked.
        if (tb_is_weight_op(t)) tb_place_weight(p, t->src[0], t->op == GGML_OP_MUL_MAT_ID);
        bool topk = p->n_expert > 0 && strncmp(t->name, "ffn_moe_topk", 12) == 0;
        if (p->in_step && !result && !topk) return false;
    }
    if (!ask && result) p->results++;
    int64_t now = tb_now_ns();
    if (ask) {
        // The scheduler is about to compute up to t: what passed since
        // the last node (or the step's start) was not a kernel.
        if (p->in_step) p->between_ns += now - p->last_ns;
        else p->build_ns += now - p->last_ns;
        p->in_step = 1;
        p->last_ns = now;
        return true;
    }
    if (p->n < p->cap) {
        tb_node_time *nt = &p->nodes[p->n++];
        const struct ggml_tensor *w = NULL;
        if (t->op == GGML_OP_MUL_MAT || t->op == GGML_OP_MUL_MAT_ID || t->op == GGML_OP_GET_ROWS) w = t->src[0];
        if (t->op == GGML_OP_FLASH_ATTN_EXT) w = t->src[1];
        snprintf(nt->op, sizeof nt->op, "%s", ggml_op_desc(t));
        snprintf(nt->type, sizeof nt->type, "%s", w ? ggml_type_name(w->type) : "");
        snprintf(nt->name, sizeof nt->name, "%s", t->name);
        nt->ns = now - p->last_ns;
    }
    p->last_ns = now;
    if (tb_is_weight_op(t)) {
        tb_place_weight(p, t->src[0], t->op == GGML_OP_MUL_MAT_ID);
        p->last_ns = tb_now_ns();
    }
    if (p->n_expert > 0 && strncmp(t->name, "ffn_moe_topk", 12) == 0) {
        // Read outside the node's time and the gap after it.
        tb_count_experts(p, t);
        p->last_ns = tb_now_ns();
    }
    return true;
}
