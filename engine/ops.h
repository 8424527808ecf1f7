#ifndef TOKBENCH_OPS_H
#define TOKBENCH_OPS_H
#include <stdint.h>
#include "ggml.h"

// The kinds of op a transformer step runs, timed in isolation at a
// model's own shapes (kernel ceilings).
enum tb_op_kind {
    TB_OP_MATMUL = 0, // w[a=k, b=m] of type x act[k, n] f32
    TB_OP_GET_ROWS,   // n rows of a table w[a, b] of type
    TB_OP_ATTN,       // attention of n queries over c cached tokens: head size a, b heads, d KV heads; K type, V type2
    TB_OP_FLASH,      // the same through flash_attn_ext
    TB_OP_KV_STORE,   // n rows of width a written into a cache of type (set_rows)
    TB_OP_NORM,       // rms_norm of [a, n] times a weight [a]
    TB_OP_ROPE,       // rope over [a=head size, b=heads, n]
    TB_OP_GLU,        // swiglu of [a, n] gate and up
    TB_OP_ADD,        // residual add [a, n]
    TB_OP_MATMUL_ID,  // experts: e weights [a=k, b=m] of type; n tokens of c input rows, each through d experts
    TB_OP_ROUTE,      // a mixture's routing: softmax over a experts, top d, the d outputs [b, d, n] weighted and summed
};

typedef struct {
    int32_t kind;
    int32_t type, type2; // ggml types
    int64_t a, b, c, d, e;
    int64_t n;           // tokens of the step
    int32_t copies;      // independent copies in the graph
} tb_op;

// tb_time_ops builds one graph with every op of ops (each copies times,
// on tensors of its own), runs it once to warm up, then up to iters times
// (fewer once three or more runs agree within 5% of their median, or once
// budget_ns has passed: at least once), and returns the median seconds
// (< 0: failed). threads sets the CPU backend's threads.
double tb_time_ops(int dev, int threads, const tb_op *ops, int n_ops, int iters, int64_t budget_ns);
// tb_keep_freed_memory (1) makes what ops allocate come from the heap and
// stay there when freed, for the next ops to reuse; (0) large allocations
// are mapped again, the heap keeping what it has until
// tb_give_back_memory.
void tb_keep_freed_memory(int keep);
void tb_give_back_memory(void);
#endif
