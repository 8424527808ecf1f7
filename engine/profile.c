// Op profile of a real step, through llama.cpp's graph evaluation callback.
#include "profile.h"

#include "ggml-cpu.h"
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t tb_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

tb_prof *tb_prof_new(int32_t cap) {
    tb_prof *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->nodes = calloc((size_t)cap, sizeof *p->nodes);
    if (!p->nodes) {
        free(p);
        return NULL;
    }
    p->cap = cap;
    return p;
}

void tb_prof_free(tb_prof *p) {
    if (!p) return;
    free(p->nodes);
    free(p);
}

int64_t tb_prof_mark(tb_prof *p) {
    p->in_step = 0;
    p->last_ns = tb_now_ns();
    return p->last_ns;
}

bool tb_prof_cb(struct ggml_tensor *t, bool ask, void *user_data) {
    tb_prof *p = user_data;
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
    return true;
}
