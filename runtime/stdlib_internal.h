/* stdlib_internal.h - private to runtime/stdlib.c and its tests: the
 * stdlib's declarations that are not part of include/tilec_stdlib.h, kept
 * apart from runtime/internal.h, which is the runtime's own (the stdlib is
 * a library on top of the runtime, tilec_stdlib). */
#ifndef TILEC_RUNTIME_STDLIB_INTERNAL_H
#define TILEC_RUNTIME_STDLIB_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

/* The stdlib matmul's tile configuration (runtime/stdlib.c's tables: one
 * for the tensor cores, one for matmul_f32_ieee's FMAs when `fma`) for
 * `batch` products of M x N on a GPU of `sms` multiprocessors (0: not a
 * GPU, or its count unknown). */
typedef struct rt_matmul_config {
    int64_t min_m, min_n;
    int block_m, block_n, block_k, group_m, num_warps;
    /* the software-pipelining depth Triton uses with it, passed as the
     * kernel's num_stages; the compiler lowers it where the rings would not
     * fit its shared-memory budget (lower/pipeline_loops.c) */
    int num_stages;
    /* num_warps instead for f32 inputs (tf32: 32-bit fragments, b loaded
     * element by element from shared memory) and for the general path
     * (an operand of any strides: 64-bit offsets): where num_warps would
     * spill (ptxas -v, tests/stdlib-no-spills.sh), the same tile on more
     * warps, fewer accumulators a thread */
    int wide_warps;
} rt_matmul_config;
const rt_matmul_config *rt_matmul_config_for(int64_t M, int64_t N, int64_t batch, int sms, bool fma);

/* A row of the configuration table of stdlib/attention.tile's forward
 * (runtime/stdlib.c's attention_configs): for head_dim on a GPU of
 * compute capability sm (90 for "sm_90"; 0: not a GPU, or unknown), the
 * first row of that head_dim whose min_sm <= sm. */
typedef struct rt_attention_config {
    int head_dim, min_sm;
    int block_m, block_n, num_warps, num_stages;
} rt_attention_config;
/* NULL for a head_dim the table does not have. */
const rt_attention_config *rt_attention_config_for(int64_t head_dim, int sm);

#endif
