/* stdlib_internal.h - private to runtime/stdlib.c, runtime/stdlib_attention.c
 * and their tests: the stdlib's declarations that are not part of
 * include/tilec_stdlib.h (its configuration tables, and the helpers its
 * two files share), kept apart from runtime/internal.h, which is the
 * runtime's own (the stdlib is a library on top of the runtime,
 * tilec_stdlib). */
#ifndef TILEC_RUNTIME_STDLIB_INTERNAL_H
#define TILEC_RUNTIME_STDLIB_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilec_stdlib.h"
#include "runtime/tune.h"

/* The stdlib matmul's tile configuration (runtime/stdlib.c's tables: one
 * for the tensor cores, one for matmul_f32_ieee's FMAs, one for sm_90a) for
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
    /* stdlib/matmul.tile's EDGE_MASKS: edges masked, not wrapped, so the
     * loads can be bulk tensor copies (sm_90a) */
    bool edge_masks;
    /* whole tiles only: the row serves a call only when M, N and K are
     * multiples of its tile (stdlib/matmul.tile's EVEN) and both operands
     * are row- or column-major (layouts 1 and 2): its masked or strided
     * variants spill (tests/stdlib-no-spills.sh checks the others) */
    bool even_only;
} rt_matmul_config;
/* Which table: tensor cores (mma.sync), matmul_f32_ieee's FMAs, or sm_90a's
 * wgmma (f16 and bf16 there). */
typedef enum rt_matmul_table { RT_MATMUL_MMA, RT_MATMUL_FMA, RT_MATMUL_WGMMA } rt_matmul_table;
/* The row of `which` for an M x N x K product of `batch` (sms: the GPU's
 * multiprocessors, 0 elsewhere); fast_layouts: both operands row- or
 * column-major (what even_only rows need beside whole tiles). */
const rt_matmul_config *rt_matmul_config_for(int64_t M, int64_t N, int64_t K, int64_t batch, int sms, bool fast_layouts,
                                             rt_matmul_table which);

/* A row of the configuration table of stdlib/attention.tile's forward
 * (runtime/stdlib_attention.c's attention_configs): for head_dim on a GPU of
 * compute capability sm (90 for "sm_90"; 0: not a GPU, or unknown), the
 * first row of that head_dim whose min_sm <= sm. */
typedef struct rt_attention_config {
    int head_dim, min_sm;
    int block_m, block_n, num_warps, num_stages;
} rt_attention_config;
/* NULL for a head_dim the table does not have. */
const rt_attention_config *rt_attention_config_for(int64_t head_dim, int sm);
/* The same for f32 storage (attention_f32_configs: no head_dim 256). */
const rt_attention_config *rt_attention_f32_config_for(int64_t head_dim, int sm);

/* A kernel of the backward (stdlib/attention_bwd.tile) in a row of its
 * table: the blocks, warps and software-pipelining depth it compiles
 * with. */
typedef struct rt_attention_pass {
    int block_m, block_n, num_warps, num_stages;
} rt_attention_pass;
/* A row of the backward's table (runtime/stdlib_attention.c's
 * attention_bwd_configs), looked up as the forward's: dK/dV's kernel and
 * dQ's, whose module also gives the pre-pass (delta) its kernel. */
typedef struct rt_attention_bwd_config {
    int head_dim, min_sm;
    rt_attention_pass dkdv, dq;
} rt_attention_bwd_config;
const rt_attention_bwd_config *rt_attention_bwd_config_for(int64_t head_dim, int sm);
/* sm_90a's row for f16 and bf16 (attention_bwd_wgmma_configs), NULL
 * where it takes attention_bwd_configs'. */
const rt_attention_bwd_config *rt_attention_bwd_wgmma_config_for(int64_t head_dim);
/* The same for f32 storage (attention_bwd_f32_configs). */
const rt_attention_bwd_config *rt_attention_bwd_f32_config_for(int64_t head_dim, int sm);

/* ---- what runtime/stdlib.c shares with runtime/stdlib_attention.c (sl_: the
 * stdlib's own helpers, not the runtime's rt_) ---- */

enum {
    SL_PTR_ALIGN = 16,       /* what the compiler assumes of pointers (trt_launch checks it too) */
    SL_MAX_KERNEL_NAME = 64, /* "attention_bwd_dkdv_bf16" and room */
    SL_MAX_PREFETCH = 8,     /* kernels sl_prefetch compiles together (attention's backward: 3) */
    SL_MAX_SEARCH = 16,      /* candidate configurations a call searches (tls_options.search) */
};

/* A storage type of the kernels: the suffix of their names ("softmax_f16")
 * and its bytes; sl_storages is indexed by tls_dtype. */
typedef struct sl_storage {
    const char *suffix;
    size_t size;
} sl_storage;
extern const sl_storage sl_storages[3];

/* One entry point's call: what every helper needs to check, compile and
 * launch, and to name the call in a message. */
typedef struct sl_call {
    trt_device *d;
    const char *op; /* "tls_softmax" */
    const sl_storage *st;
    const tls_options *o;
} sl_call;

/* The checks every entry point starts with: the device open, the dtype
 * and the options (precision, num_warps); sets up *c. */
trt_status sl_begin(sl_call *c, trt_device *d, const char *op, tls_dtype dt, const tls_options *o);
/* The same for a call that takes tls_options.search (the matrix products
 * and attention; sl_begin refuses it). */
trt_status sl_begin_searchable(sl_call *c, trt_device *d, const char *op, tls_dtype dt, const tls_options *o);
/* The search tls_options.search asks for (docs/tuning.md): the n
 * candidates cfgs of kernel `name` of the embedded stdlib `file`, each
 * launched with args on the grid `grid` gives it (user: its first
 * argument), measured by trt_tune (exp2_ftz as the call compiles), the
 * winner recorded in the caller's tuning under `bucket` and its index in
 * *best. The outputs are then the last candidate's measured: the caller
 * runs the winner once more, so that they are its bits. */
trt_status sl_search(const sl_call *c, const char *file, const char *name, const trt_tune_config *cfgs, size_t n,
                     bool exp2_ftz, const char *bucket, trt_tune_grid_fn grid, void *user, const trt_arg *args,
                     size_t nargs, size_t *best);
/* Whether the call may read device memory to check its arguments (token
 * ids, targets, offsets): where reading costs a memcpy (the CPU and the
 * emulator, whose launches are done when they return), and not while a
 * stream of the device captures a graph, whose replays see other values
 * (the host cannot read then either). On the GPU a read would wait for
 * the work before the call, so such values are not checked there: the
 * kernels take an out-of-range one as documented. */
bool sl_can_read(const sl_call *c);
/* Where a tensor of a call lies, for the overlap checks: the device
 * addresses of its first byte and one past its last. */
typedef struct sl_span {
    const char *name;
    uint64_t begin, end;
} sl_span;
/* That m is a live buffer of the device, 16-byte aligned at its offset,
 * holding `rows` rows of `cols` elements of esize bytes `stride` elements
 * apart (rows, cols >= 1 and stride >= cols, checked before; one row: a
 * vector of cols values); sets *sp (NULL: not wanted) to its bytes. */
trt_status sl_check_rows(const sl_call *c, const char *name, tls_mem m, int64_t rows, int64_t cols, int64_t stride,
                         size_t esize, sl_span *sp);
/* That m is a live buffer of the device, 16-byte aligned at its offset,
 * holding n values of esize bytes (n >= 1). */
trt_status sl_check_vector(const sl_call *c, const char *name, tls_mem m, int64_t n, size_t esize);
/* sl_check_vector, and *sp (NULL: not wanted) its bytes. */
trt_status sl_check_values(const sl_call *c, const char *name, tls_mem m, int64_t n, size_t esize, sl_span *sp);
/* That output o shares no byte with x: their spans, first byte to last,
 * do not meet (conservative: interleaved tensors that share no element
 * are refused too). `unless` (NULL: none) ends the message: what the call
 * does allow. */
trt_status sl_check_apart(const sl_call *c, const sl_span *o, const sl_span *x, const char *unless);
/* The device's tuning entry (trt_use_tuning, docs/tuning.md) for kernel
 * `name` of the embedded stdlib `file` in the bucket of the sizes (each up
 * to a power of two, trt_tune_bucket), with its consts values[i] =
 * consts[i]; NULL when the device has no tuning or no such entry, or,
 * with a note in the tuning, when the entry lacks a const from 1 to
 * INT32_MAX. */
const rt_tune_entry *sl_tuned(const sl_call *c, const char *file, const char *name, const char *const *size_names,
                              const int64_t *sizes, size_t nsizes, const char *const *consts, int64_t *values,
                              size_t nconsts);
/* Compiles the kernels names[i] of the embedded stdlib `file` with the
 * options cos[i] at once, on threads, ahead of the sl_kernel_with calls
 * for them, which then find them compiled: a call that launches several
 * kernels waits for the slowest compile, not their sum. What fails is left
 * for those calls to report. */
void sl_prefetch(const sl_call *c, const char *file, const char *const *names, const trt_compile_options *cos,
                 size_t n);
/* The kernel `name` of the embedded stdlib `file`, compiled (once per
 * device) with the options co (its const parameters, num_warps and
 * num_stages, 0: the compiler's, exp2_ftz; arch NULL: the device's);
 * `spec` names the specialization in a message. */
trt_status sl_kernel_with(const sl_call *c, const char *file, const char *name, const trt_compile_options *co,
                          const char *spec, trt_kernel **k);
/* The caller's num_warps (tls_options), 0 for none. */
int sl_main_warps(const sl_call *c);
/* k on a grid of grid_x x grid_y x grid_z programs, on the caller's stream. */
trt_status sl_launch_grid(const sl_call *c, trt_kernel *k, int64_t grid_x, int64_t grid_y, int64_t grid_z,
                          const trt_arg *args, size_t nargs);
/* Whether two elements of a tensor of ndims (up to 4) dims, sizes n and
 * strides s >= 0 in elements, share an address. */
bool sl_dims_overlap(int ndims, const int64_t *n, const int64_t *s);

static inline int64_t sl_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline trt_arg sl_arg_mem(tls_mem m) { return trt_buf_at(m.buffer, m.offset); }

#endif
