#ifndef TOKBENCH_PROFILE_H
#define TOKBENCH_PROFILE_H
#include <stdbool.h>
#include <stdint.h>
#include "ggml.h"

// One computed graph node of a profiled step.
typedef struct {
    char op[24];   // ggml_op_desc
    char type[12]; // the weight's (mul_mat, get_rows) or the K cache's (flash attention) type, else ""
    char name[40]; // the tensor's name, e.g. "ffn_up-3"
    int64_t ns;    // from the previous node's end (or the step's start) to this node's end
} tb_node_time;

// A weight a profiled step read (the first operand of a matrix product
// or lookup, in a model buffer) and the buffer type llama.cpp put it in.
typedef struct {
    const void *tensor;
    char name[64];
    char buft[24];
    int64_t bytes;
    int32_t expert; // read by MUL_MAT_ID: a mixture's experts
} tb_weight_place;

// A profile being recorded: llama.cpp's graph evaluation callback
// (cb_eval) observes every node, which makes the scheduler compute and
// synchronize node by node. Gaps between nodes are kept apart from them.
typedef struct {
    // mode: 0, the callback asks for no node and the scheduler computes
    // as without it (a context made observable keeps its steps as they
    // are until they are observed); 1 (light), it asks for a step's first
    // node, its result (result_output) and a mixture's routing, so that
    // the rest is computed together: the time outside the nodes and the
    // routing at about a step's cost; 2 (full), every node.
    int32_t mode;
    int32_t results; // result nodes seen (light)
    tb_node_time *nodes;
    int32_t n, cap;
    int64_t last_ns;
    int64_t build_ns;   // step start to the first node: graph build, allocation, inputs
    int64_t between_ns; // between one node's end and the next one's start
    int32_t in_step;    // 0 before the step's first node
    // A mixture of experts' routing, from its "ffn_moe_topk-L" nodes (the
    // experts each token of a layer was sent to): counted when n_expert
    // > 0. expert_hits has n_expert counters, summed over the layers.
    int32_t n_expert;
    int64_t moe_nodes;    // topk nodes seen (layers x steps)
    int64_t moe_distinct; // distinct experts over those nodes, summed
    int64_t moe_tokens;   // tokens over those nodes, summed
    double moe_uniform;   // distinct experts even, independent choices would give, summed
    // Nodes that routed fewer tokens than the step's first (a prefill's
    // last layer, which keeps only the outputs' rows), apart.
    int64_t moe_step_tokens, moe_short_nodes, moe_short_distinct;
    int64_t *expert_hits;
    // The weights the steps read, each once, where they were placed.
    tb_weight_place *weights;
    int32_t n_weights, cap_weights;
} tb_prof;

tb_prof *tb_prof_new(int32_t cap, int32_t n_expert);
void tb_prof_free(tb_prof *p);
// tb_prof_mark starts a step (call before llama_decode); it returns the time.
int64_t tb_prof_mark(tb_prof *p);
bool tb_prof_cb(struct ggml_tensor *t, bool ask, void *user_data);
int64_t tb_now_ns(void);
#endif
