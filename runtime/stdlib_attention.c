/* stdlib_attention.c - flash attention's C entry points (tls_attention_fwd,
 * tls_attention_bwd and its workspace query, include/tilec_stdlib.h;
 * docs/stdlib.md, "Flash attention"), apart from runtime/stdlib.c, whose
 * helpers it shares through stdlib_internal.h: attention alone has
 * four-dim tensors, a problem struct, varlen offsets and configuration
 * tables by head dim and arch, and with them stdlib.c would pass the
 * size a file may have.
 *
 * A call checks everything before it launches anything (begin_attention:
 * the problem, then each tensor against its dims, then that each output
 * keeps its elements apart and shares no byte with another tensor of the
 * call) and compiles every kernel it launches first, so that a refused
 * call writes nothing. The forward picks a row of attention_configs (f32:
 * attention_f32_configs) by head dim and the device's arch (BLOCK_M,
 * BLOCK_N, num_warps, num_stages) and the CAUSAL, WINDOW and VARLEN
 * specializations the problem asks for, and launches cdiv(n_q, BLOCK_M)
 * programs along axis 0, the heads along axis 1 and the batch along axis
 * 2. The backward picks a row of attention_bwd_configs (f32:
 * attention_bwd_f32_configs) the same way and launches
 * stdlib/attention_bwd.tile's three kernels on one argument list: the
 * pre-pass (delta into the caller's workspace) and dQ on the forward's
 * grid at dQ's BLOCK_M, dK/dV on cdiv(n_kv, BLOCK_N) programs by key/value
 * head. Messages start with the entry point's name. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"
#include "runtime/stdlib_internal.h"
#include "tilec_stdlib.h"

/* The configurations of stdlib/attention.tile's forward by head dim and
 * architecture (rt_attention_config_for: the first row of the head dim
 * whose min_sm the device reaches; the CPU and GPUs before sm_90 take the
 * min_sm 0 rows). Not timed (no GPU in the session that wrote them):
 * each row starts from what FlashAttention-2 (flash_fwd_launch_
 * template.h, its mma.sync kernels) and Triton's fused-attention
 * tutorial choose (BLOCK_M 128, BLOCK_N 64 up to head dim 64 and 32 past
 * it, 4 warps, 4 stages up to 64 and 3 past it; on an H100 8 warps, and 7
 * stages from head dim 64, else 3), moved to the nearest tile that ptxas
 * -v compiles without spilling today, for f16 and bf16, plain and with
 * CAUSAL, WINDOW and VARLEN (tests/stdlib-no-spills.sh checks each row
 * and prints its figures, strides aligned or not): the row max and sum
 * now stay in registers (issue 20), so the tiles are Triton's and FA2's
 * again, at 8 warps where 4 would spill or where FA2's 4 warps keep q in
 * shared memory, which this kernel keeps in registers (16 rows a warp
 * keeps p in registers too). num_stages is Triton's; the compiler lowers
 * it where the K and V rings do not fit the arch's shared memory (sm_86
 * and sm_89: 99 KB; at head dim 128 on sm_90). */
static const rt_attention_config attention_configs[] = {
    /* head_dim, min_sm, BLOCK_M, BLOCK_N, num_warps, num_stages */
    {32, 90, 128, 64, 8, 3},  /* Triton's H100 warps and stages on its A100 tile */
    {32, 0, 128, 64, 4, 4},   /* Triton's A100 tile, warps and stages (FA2's 128 x 128 w4 spills 13.8 KB) */
    {64, 90, 128, 64, 8, 7},  /* Triton's H100 tile, warps and stages */
    {64, 0, 128, 64, 8, 4},   /* Triton's A100 tile and stages; on 4 warps, 96 B of spill with every mask on sm_80 */
    {128, 90, 128, 64, 8, 7}, /* FA2's tile, Triton's H100 warps and stages */
    {128, 0, 128, 64, 8, 3},  /* FA2's A100 tile (its 4 warps keep q in shared memory; 8 here keep 16 rows a warp) */
    {256, 0, 64, 16, 8, 2},   /* no spill with or without masks and ALIGNED (64 x 32 w8 spills 16 B on sm_80 with
                                 neither, 64 x 64 124 B) */
};

/* The forward's configurations for f32 storage (attention_fwd_f32), looked
 * up the same way (rt_attention_f32_config_for): an f32 tile takes twice
 * the shared memory and twice the registers of an f16 one (q, k and v as
 * 32-bit tf32 fragments), so f32 has rows of its own. Each row is the
 * largest tile that ptxas -v compiles without spilling for its arch, plain,
 * with ALIGNED and with CAUSAL, WINDOW, VARLEN and ALIGNED
 * (tests/stdlib-no-spills.sh checks them), trying FA2's and Triton's
 * tiles first, then halving BLOCK_N, then BLOCK_M: 128 x 64 spills 80 to
 * 204 B at head dim 64, and sm_86's 99 KB (sm_89's too) make the compiler
 * stage through scratch, which spills at the sm_80 tiles of head dims 32 and
 * 64 (28 to 52 B at 128 x 64, 4 to 32 B at 128 x 32). 2 stages (the f32
 * rings take twice f16's bytes; deeper ones were not tried).
 * Head dim 256 has no row: every tile from 128 x 64 w8 down to 16 x 16 w1
 * spills (88 B at 16 x 16 w4, kilobytes at most), so f32 refuses it. Not
 * timed (no GPU in the session that wrote them). */
static const rt_attention_config attention_f32_configs[] = {
    /* head_dim, min_sm, BLOCK_M, BLOCK_N, num_warps, num_stages */
    {32, 90, 128, 64, 8, 2},
    {32, 86, 128, 32, 8, 2}, /* 128 x 64 spills 28 to 52 B there */
    {32, 0, 128, 64, 8, 2},
    {64, 90, 128, 32, 8, 2}, /* 128 x 64 spills 80 to 204 B */
    {64, 86, 64, 32, 4, 2},  /* 128 x 32 spills 4 to 32 B there */
    {64, 0, 128, 32, 8, 2},  /* 128 x 64 spills 96 to 196 B */
    {128, 0, 64, 32, 8, 2},  /* 128 x 32 w8 spills 220 B or more, 64 x 64 w8 264 B; 8 warps on 64 rows leave no
                                16-row block a warp, so p crosses shared memory to the second dot (64 x 32 on 4
                                warps, which would keep it in registers, spills 160 to 376 B) */
};

static const rt_attention_config *config_in(const rt_attention_config *t, size_t n, int64_t head_dim, int sm) {
    for (size_t i = 0; i < n; i++)
        if (t[i].head_dim == head_dim && sm >= t[i].min_sm) return &t[i];
    return NULL;
}

const rt_attention_config *rt_attention_config_for(int64_t head_dim, int sm) {
    return config_in(attention_configs, sizeof attention_configs / sizeof attention_configs[0], head_dim, sm);
}

const rt_attention_config *rt_attention_f32_config_for(int64_t head_dim, int sm) {
    return config_in(attention_f32_configs, sizeof attention_f32_configs / sizeof attention_f32_configs[0], head_dim,
                     sm);
}

/* The configurations of stdlib/attention_bwd.tile by head dim and
 * architecture, looked up as the forward's (rt_attention_bwd_config_for;
 * the CPU and the emulator take the min_sm 0 rows, sm_80's): BLOCK_M
 * (query rows a step of dK/dV, a program of dQ), BLOCK_N (keys a program
 * of dK/dV, a step of dQ), num_warps and num_stages for dK/dV's kernel
 * and for dQ's, whose module also holds the pre-pass (delta, BLOCK_M rows
 * a program): two modules a specialization, not three. Not timed (no GPU
 * in the session that wrote them): the kernel header's suggestions, the
 * largest blocks at which ptxas -v spills nothing on sm_80 and sm_90 at
 * the compiler's default 3 stages, plain and with CAUSAL, WINDOW and VARLEN
 * (tests/stdlib-no-spills.sh checks each row for the arch that takes it
 * and prints its figures), moved where they spilled: dK/dV at head dim
 * 128 on 32 x 64 spills 4 to 8 bytes on sm_80 and sm_90, so they take
 * 16 x 64 (32 x 32 spills nothing either; 16 x 64 keeps 64 keys a
 * program, as the other rows and Triton's small query step, large key
 * block). sm_86 and sm_89 have 99 KB of shared memory: their rows ask 2
 * stages for dK/dV where sm_80's 3 take 104 and 120 KB. Asked for 3 there,
 * the compiler keeps the 3 in 99 KB by converting v (at head dim 128 also
 * the transposed q and dO) through its scratch instead of buffers of
 * their own, and the kernel spills (252 B at head dim 64, 276 B at 128);
 * asked for 2, it spills nothing. dQ at head dim 128 asks 2, which the
 * compiler would lower 3 to anyway. To time against these (docs/stdlib.md
 * has the figures): Triton's tutorial, dK/dV 32 x 128 and dQ 128 x 32 on
 * 4 warps and 5 stages, spills from head dim 64 but not at 32; on 8
 * warps its dQ spills at no head dim, its dK/dV not at 32, nor at 64 on
 * sm_86 and sm_90. */
static const rt_attention_bwd_config attention_bwd_configs[] = {
    /* head_dim, min_sm, dK/dV {BLOCK_M, BLOCK_N, num_warps, num_stages}, dQ {the same} */
    {32, 0, {64, 64, 8, 3}, {64, 64, 4, 3}},
    {64, 90, {64, 64, 8, 3}, {64, 64, 4, 3}},
    {64, 86, {64, 64, 8, 2}, {64, 64, 4, 3}},  /* 99 KB: 3 stages of dK/dV spill there (above) */
    {64, 0, {64, 64, 8, 3}, {64, 64, 4, 3}},
    {128, 90, {16, 64, 8, 3}, {64, 32, 8, 3}},  /* 32 x 64 spills 4 B with every mask */
    {128, 86, {32, 64, 8, 2}, {64, 32, 8, 2}}, /* 99 KB: 3 stages of dK/dV spill, dQ's do not fit */
    {128, 0, {16, 64, 8, 3}, {64, 32, 8, 3}},  /* 32 x 64 spills 8 B on sm_80 */
    /* head dim 256 on every arch: the largest blocks that spill nothing on sm_80, sm_86 and sm_90 with or without
     * masks and ALIGNED, in sm_86's 99 KB (75 KB and 89 KB). dK/dV at 32 x 16 spills 84-112 B without ALIGNED on
     * sm_80 and sm_90 (0 with it), 16 x 32 16-88 B, both more on sm_86, and on 4 warps every tile spills (the two
     * 16 x 256 f32 accumulators); dQ at 32 x 32 and 64 x 16 spill 4-12 B on sm_80 without ALIGNED. 16 keys on
     * 8 warps leave no 16-row block a warp, so p^T and dS^T cross shared memory on their way to the second
     * and third dots (the other rows keep them in registers) */
    {256, 0, {16, 16, 8, 2}, {32, 16, 8, 2}},
};

/* sm_90a's, for f16 and bf16, where they differ (else attention_bwd_configs'
 * rows): dK/dV runs its three dots on wgmma when its keys fill whole
 * warpgroups (64 a warpgroup: the dots' M), which the table's 64 x 64 on 8
 * warps does not; 128 keys on 8 warps do, at head dims 32 and 64 without a
 * spill (161 and 234 registers). At head dim 128, 64 query rows a step
 * spill 96 B and more, 64 keys on 4 warps 120 B: 32 rows a step on 128
 * keys (233 to 245 registers, no spill with any mask; its q and dO by
 * bulk tensor copies), with 2.2 times fewer instructions a (key, query)
 * pair in its loop than mma.sync's 16 x 64 (bench/RESULTS.md, offline).
 * dQ's 64 x 64 on 4 warps is wgmma already; at head dim 128 too (230
 * registers). Not timed (no GPU). */
static const rt_attention_bwd_config attention_bwd_wgmma_configs[] = {
    /* head_dim, min_sm, dK/dV {BLOCK_M, BLOCK_N, num_warps, num_stages}, dQ {the same} */
    {32, 90, {64, 128, 8, 3}, {64, 64, 4, 3}},
    {64, 90, {64, 128, 8, 3}, {64, 64, 4, 3}},
    {128, 90, {32, 128, 8, 3}, {64, 64, 4, 3}},
};

/* The backward's configurations for f32 storage (stdlib/attention_bwd.tile's
 * _f32 kernels), looked up as the others (rt_attention_bwd_f32_config_for;
 * a min_sm 86 row serves sm_86, sm_89 and, with no 90 row before it,
 * sm_90): chosen as the forward's f32 rows, the largest blocks at which
 * ptxas -v spills nothing for the arch, plain and with CAUSAL, WINDOW,
 * VARLEN and ALIGNED (tests/stdlib-no-spills.sh checks each row), 2
 * stages. The two f32 BLOCK_N x HEAD_DIM accumulators of dK/dV take
 * twice the registers of f16's: at head dim 128 only 16 keys a program on
 * 8 warps spill nothing on sm_80 and sm_86 (16 x 32 spills 4 B with every
 * option on sm_80, 64 B on sm_86; 32 x 16 20 to 272 B), 16 x 32 on sm_90.
 * dQ at head dim 128: 64 x 32 w8 spills 68 to 736 B, 64 x 16 none on sm_80
 * and sm_90 (20 to 40 B on sm_86, which takes 32 x 16). At head dim 64
 * dK/dV's f16 tile, 64 x 64, spills 300 to 1900 B, 32 x 64 40 to 68 B with
 * every option; dQ's 64 x 64 w4 450 B or more, on 8 warps 8 to 620 B. At
 * head dim 32, dK/dV's 64 x 64 spills 12 B on sm_90 and 150 B on sm_86.
 * Not timed (no GPU in the session that wrote them). */
static const rt_attention_bwd_config attention_bwd_f32_configs[] = {
    /* head_dim, min_sm, dK/dV {BLOCK_M, BLOCK_N, num_warps, num_stages}, dQ {the same} */
    {32, 86, {32, 64, 8, 2}, {64, 64, 8, 2}},
    {32, 0, {64, 64, 8, 2}, {64, 64, 8, 2}},
    {64, 90, {16, 64, 8, 2}, {64, 32, 8, 2}},
    {64, 86, {32, 32, 8, 2}, {64, 32, 8, 2}}, /* 16 x 64 spills 4 B there with every option */
    {64, 0, {16, 64, 8, 2}, {64, 32, 8, 2}},
    {128, 90, {16, 32, 8, 2}, {64, 16, 8, 2}},
    {128, 86, {16, 16, 8, 2}, {32, 16, 8, 2}},
    {128, 0, {16, 16, 8, 2}, {64, 16, 8, 2}},
};

static const rt_attention_bwd_config *bwd_config_in(const rt_attention_bwd_config *t, size_t n, int64_t head_dim,
                                                    int sm) {
    for (size_t i = 0; i < n; i++)
        if (t[i].head_dim == head_dim && sm >= t[i].min_sm) return &t[i];
    return NULL;
}

const rt_attention_bwd_config *rt_attention_bwd_config_for(int64_t head_dim, int sm) {
    return bwd_config_in(attention_bwd_configs, sizeof attention_bwd_configs / sizeof attention_bwd_configs[0],
                         head_dim, sm);
}

const rt_attention_bwd_config *rt_attention_bwd_wgmma_config_for(int64_t head_dim) {
    return bwd_config_in(attention_bwd_wgmma_configs,
                         sizeof attention_bwd_wgmma_configs / sizeof attention_bwd_wgmma_configs[0], head_dim, 90);
}

const rt_attention_bwd_config *rt_attention_bwd_f32_config_for(int64_t head_dim, int sm) {
    return bwd_config_in(attention_bwd_f32_configs,
                         sizeof attention_bwd_f32_configs / sizeof attention_bwd_f32_configs[0], head_dim, sm);
}

/* The compute capability the call's code is built for: the GPU's, the
 * emulator's code arch, 0 on the CPU ("sm_90a": 90). */
static int device_sm(const sl_call *c) {
    const rt_device_ops *ops = c->d->ops;
    const char *arch = ops->arch ? ops->arch(c->d) : ops->code_arch ? ops->code_arch(c->d) : NULL;
    return arch && !strncmp(arch, "sm_", 3) ? atoi(arch + 3) : 0;
}

static const float ATT_LOG2E = 1.44269504f; /* the kernels scale the scores by scale * log2(e), in f32 */
/* The kernels' exp2 flushes results below 2^-126 to zero (tilec_options.
 * exp2_ftz), as Triton's does: p = exp2(s - m) that small is lost against
 * the row sum (at least 1) and in p's f16 or bf16 anyway, and each exp2
 * costs 3 instructions fewer (bench/sass_attention.py) */
static const bool ATT_EXP2_FTZ = true;

/* One tensor of an attention call: its dims (batch, heads, rows, head
 * dim; with varlen, batch 1 and rows the packed total), their strides in
 * elements (the last 1), and where its bytes lie (check_att_tensor). */
typedef struct att_tensor {
    const char *name;
    tls_mem mem;
    size_t esize;
    int64_t n[4], s[4];
    uint64_t begin, end; /* device addresses of its first byte and one past its last; equal when empty */
} att_tensor;

static att_tensor att_of(const char *name, tls_attention_tensor t, size_t esize, int64_t batch, int64_t heads,
                         int64_t rows, int64_t cols) {
    att_tensor a = {.name = name, .mem = t.mem, .esize = esize, .n = {batch, heads, rows, cols},
                    .s = {t.stride_batch, t.stride_head, t.stride_row, 1}};
    return a;
}

/* That t's strides are >= 0 and its buffer, live and 16-byte aligned at
 * its offset, holds its furthest element; sets t->begin and t->end. */
static trt_status check_att_tensor(const sl_call *c, att_tensor *t) {
    static const char *const dims[3] = {"stride_batch", "stride_head", "stride_row"};
    for (int i = 0; i < 3; i++)
        if (t->s[i] < 0)
            return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: %s is %lld; strides must be >= 0", c->op, t->name,
                           dims[i], (long long)t->s[i]);
    size_t have;
    uint64_t base;
    trt_status st = rt_buffer_size(c->d, t->mem.buffer, &have);
    if (st == TRT_OK) st = trt_buffer_ptr(c->d, t->mem.buffer, &base);
    if (st != TRT_OK) return rt_fail(c->d, st, "%s: %s: %s", c->op, t->name, c->d->err);
    if (t->mem.offset % SL_PTR_ALIGN)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: offset %zu is not a multiple of %d bytes", c->op,
                       t->name, t->mem.offset, SL_PTR_ALIGN);
    t->begin = t->end = base + t->mem.offset;
    if (!t->n[0] || !t->n[1] || !t->n[2]) return TRT_OK; /* no rows: nothing is read or written */
    /* the furthest element, sum (n - 1) * s, and one more, without overflowing */
    uint64_t limit = (uint64_t)INT64_MAX / t->esize, last = 0;
    for (int i = 0; i < 4; i++) {
        uint64_t n = (uint64_t)(t->n[i] - 1), s = (uint64_t)t->s[i];
        if (n && s > (limit - 1 - last) / n)
            return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: its strides reach past what memory can hold",
                           c->op, t->name);
        last += n * s;
    }
    uint64_t need = (last + 1) * t->esize;
    if (t->mem.offset > have || need > have - t->mem.offset)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT,
                       "%s: %s: the buffer holds %zu bytes; %lld x %lld x %lld x %lld elements with strides %lld, "
                       "%lld, %lld, 1 need %llu from offset %zu",
                       c->op, t->name, have, (long long)t->n[0], (long long)t->n[1], (long long)t->n[2],
                       (long long)t->n[3], (long long)t->s[0], (long long)t->s[1], (long long)t->s[2],
                       (unsigned long long)need, t->mem.offset);
    t->end = t->begin + need;
    return TRT_OK;
}

/* The bytes of each row of t, when every element of t lies in the first
 * `width` bytes of a slot of stride_row elements from t's start (the
 * heads of a row within one stride_row, the batches whole rows apart); 0
 * otherwise. */
static uint64_t row_slot_width(const att_tensor *t) {
    if (t->s[2] <= 0 || (t->n[0] > 1 && t->s[0] % t->s[2])) return 0;
    uint64_t w = (uint64_t)((t->n[1] - 1) * t->s[1] + t->n[3]);
    return w <= (uint64_t)t->s[2] ? w * t->esize : 0;
}

/* Whether a and b, row-slot tensors of one row pitch, keep to columns of
 * the slots that do not meet, as q, k and v do in FlashAttention's packed
 * qkv layout ([rows, 3, heads, head dim]): b's start, taken modulo the
 * pitch from a's, lies past a's width and at least its own width before
 * the next slot. */
static bool interleaved_apart(const att_tensor *a, const att_tensor *b) {
    uint64_t wa = row_slot_width(a), wb = row_slot_width(b);
    if (!wa || !wb || a->esize != b->esize || a->s[2] != b->s[2]) return false;
    uint64_t pitch = (uint64_t)a->s[2] * a->esize;
    uint64_t rho = b->begin >= a->begin ? (b->begin - a->begin) % pitch
                                        : (pitch - (a->begin - b->begin) % pitch) % pitch;
    return rho >= wa && rho <= pitch - wb;
}

/* That output o shares no byte with x: their spans, first byte to last,
 * must not meet, unless both are rows of one pitch whose columns are apart
 * (interleaved_apart: the packed q, k, v and dq, dk, dv of a fused qkv
 * projection). Conservative: other interleavings that share no element
 * are refused too. */
static trt_status check_disjoint(const sl_call *c, const att_tensor *o, const att_tensor *x) {
    if (o->begin < o->end && x->begin < x->end && o->begin < x->end && x->begin < o->end &&
        !interleaved_apart(o, x))
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT,
                       "%s: %s and %s overlap in memory (%llu and %llu bytes from offsets %zu and %zu of their "
                       "buffers): an output must not share memory with another tensor of the call",
                       c->op, o->name, x->name, (unsigned long long)(o->end - o->begin),
                       (unsigned long long)(x->end - x->begin), o->mem.offset, x->mem.offset);
    return TRT_OK;
}

static trt_status check_range(const sl_call *c, const char *name, int64_t v, int64_t lo, int64_t hi, const char *why) {
    if (v < lo || v > hi)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s is %lld; it must be from %lld to %lld%s", c->op, name,
                       (long long)v, (long long)lo, (long long)hi, why);
    return TRT_OK;
}

/* The offsets of a varlen batch, read where the call may (sl_can_read):
 * from >= 0, nondecreasing, each sequence at most `longest` rows (the
 * grid covers no more), the last at most `total`. */
static trt_status check_offsets(const sl_call *c, const char *name, tls_mem cu, int64_t batch, int64_t longest,
                                const char *longest_name, int64_t total, const char *total_name) {
    if (!sl_can_read(c)) return TRT_OK;
    int32_t *v = malloc(sizeof(int32_t) * (size_t)(batch + 1));
    if (!v) return rt_fail(c->d, TRT_ERR_OUT_OF_MEMORY, "%s: out of memory reading %s", c->op, name);
    trt_status st = trt_read(c->d, cu.buffer, cu.offset, v, sizeof(int32_t) * (size_t)(batch + 1));
    if (st != TRT_OK) st = rt_fail(c->d, st, "%s: %s: %s", c->op, name, c->d->err);
    else if (v[0] < 0)
        st = rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s[0] is %d; offsets must be >= 0", c->op, name, (int)v[0]);
    for (int64_t b = 0; st == TRT_OK && b < batch; b++) {
        if (v[b + 1] < v[b])
            st = rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s[%lld] is %d, less than %s[%lld] (%d): offsets must not "
                         "decrease", c->op, name, (long long)(b + 1), (int)v[b + 1], name, (long long)b, (int)v[b]);
        else if ((int64_t)v[b + 1] - v[b] > longest)
            st = rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: sequence %lld has %lld rows (%s[%lld] - %s[%lld]), more "
                         "than %s (%lld), the longest the call covers", c->op, (long long)b,
                         (long long)v[b + 1] - v[b], name, (long long)(b + 1), name, (long long)b, longest_name,
                         (long long)longest);
    }
    if (st == TRT_OK && v[batch] > total)
        st = rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s[%lld] is %d, past %s (%lld), the rows the tensors hold",
                     c->op, name, (long long)batch, (int)v[batch], total_name, (long long)total);
    free(v);
    return st;
}

/* The problem's own arguments, before any tensor: sizes, head dim,
 * scale, window, varlen offsets and totals. */
static trt_status check_problem(const sl_call *c, const tls_attention_problem *p, bool varlen) {
    trt_status st;
    if ((st = check_range(c, "batch", p->batch, 1, TLS_ATTENTION_MAX_BATCH, " (the grid's axis 2)")) ||
        (st = check_range(c, "heads", p->heads, 1, TLS_ATTENTION_MAX_HEADS, " (the grid's axis 1)")) ||
        (st = check_range(c, "kv_heads", p->kv_heads, 1, p->heads, " (heads)")))
        return st;
    if (p->heads % p->kv_heads)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: heads (%lld) is not a multiple of kv_heads (%lld): each "
                       "key/value head serves heads / kv_heads query heads", c->op, (long long)p->heads,
                       (long long)p->kv_heads);
    if (!rt_attention_config_for(p->head_dim, 0))
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: head_dim is %lld; it must be 32, 64, 128 or 256 (pad q, k and "
                       "v with zero columns to the next: the scores and o's first columns stay the same)", c->op,
                       (long long)p->head_dim);
    if ((st = check_range(c, "n_q", p->n_q, 1, TLS_ATTENTION_MAX_SEQ, "")) ||
        (st = check_range(c, "n_kv", p->n_kv, 1, TLS_ATTENTION_MAX_SEQ, "")))
        return st;
    if (!isfinite(p->scale * ATT_LOG2E))
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: scale is %g; it must be finite, and so must scale * "
                       "log2(e) in f32 (0: 1 / sqrt(head_dim))", c->op, (double)p->scale);
    if (p->window) {
        if ((st = check_range(c, "window_left", p->window_left, -1, INT64_MAX, " (-1: no bound)")) ||
            (st = check_range(c, "window_right", p->window_right, -1, INT64_MAX, " (-1: no bound)")))
            return st;
    } else if ((p->window_left != 0 && p->window_left != -1) || (p->window_right != 0 && p->window_right != -1))
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: window_left %lld and window_right %lld without window: "
                       "set window for a sliding window, else leave them 0 (or -1)", c->op,
                       (long long)p->window_left, (long long)p->window_right);
    if ((p->cu_q.buffer.handle != 0) != (p->cu_k.buffer.handle != 0))
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: cu_q and cu_k go together: both for variable-length "
                       "batches, neither for padded ones", c->op);
    if (!varlen) {
        if (p->total_q || p->total_kv)
            return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: total_q %lld and total_kv %lld without cu_q and cu_k: "
                           "they are for variable-length batches (leave them 0)", c->op, (long long)p->total_q,
                           (long long)p->total_kv);
        return TRT_OK;
    }
    if ((st = check_range(c, "total_q", p->total_q, 0, INT32_MAX, " (cu_q holds i32 offsets)")) ||
        (st = check_range(c, "total_kv", p->total_kv, 0, INT32_MAX, " (cu_k holds i32 offsets)")) ||
        (st = sl_check_vector(c, "cu_q", p->cu_q, p->batch + 1, 4)) ||
        (st = sl_check_vector(c, "cu_k", p->cu_k, p->batch + 1, 4)) ||
        (st = check_offsets(c, "cu_q", p->cu_q, p->batch, p->n_q, "n_q", p->total_q, "total_q")) ||
        (st = check_offsets(c, "cu_k", p->cu_k, p->batch, p->n_kv, "n_kv", p->total_kv, "total_kv")))
        return st;
    return TRT_OK;
}

/* What a tensor of an attention call holds, which gives its dims: rows
 * of the queries (q, o; the backward's dO, dQ), of the keys (k, v; dK,
 * dV), or one f32 a query row (lse), or the backward's workspace (delta,
 * one f32 a query row in lse's dims, contiguous: checked against
 * tls_attention_bwd_workspace's size). */
typedef enum { ATT_QUERY_ROWS, ATT_KEY_ROWS, ATT_ROW_VALUES, ATT_WORKSPACE } att_kind;

/* A tensor argument of an attention entry point, for begin_attention. */
typedef struct att_arg {
    const char *name;
    tls_attention_tensor t;
    att_kind kind;
    bool output;
} att_arg;

enum { MAX_ATT_TENSORS = 12 }; /* the backward's nine and its workspace, and room */

/* Where the backward's delta lies in the workspace: f32 in lse's dims
 * (batch, heads, rows; with varlen one batch of total_q rows), each
 * head's rows contiguous, and its bytes; refused where they overflow. */
typedef struct att_delta {
    int64_t stride_batch, stride_head;
    uint64_t bytes;
} att_delta;

static trt_status delta_layout(const sl_call *c, const tls_attention_problem *p, bool varlen, att_delta *d) {
    uint64_t nb = varlen ? 1 : (uint64_t)p->batch, rows = (uint64_t)(varlen ? p->total_q : p->n_q);
    uint64_t heads = (uint64_t)p->heads; /* batch and heads up to 65535 (checked): nb * heads below 2^32 */
    if (rows && nb * heads > (uint64_t)INT64_MAX / 4 / rows)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: the workspace would hold %llu x %llu x %llu f32 values, "
                       "more than memory can", c->op, (unsigned long long)nb, (unsigned long long)heads,
                       (unsigned long long)rows);
    d->stride_head = (int64_t)rows;
    d->stride_batch = varlen ? 0 : (int64_t)(heads * rows);
    d->bytes = 4 * nb * heads * rows;
    return TRT_OK;
}

/* That the workspace's buffer holds `bytes` past its offset, said in the
 * workspace's terms (a buffer that is not the device's is left to
 * check_att_tensor). */
static trt_status check_workspace(const sl_call *c, tls_mem ws, uint64_t bytes) {
    size_t have;
    if (rt_buffer_size(c->d, ws.buffer, &have) != TRT_OK) return TRT_OK;
    if (ws.offset > have || bytes > have - ws.offset)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: workspace: the buffer holds %zu bytes; from offset %zu "
                       "the call needs %llu (tls_attention_bwd_workspace)", c->op, have, ws.offset,
                       (unsigned long long)bytes);
    return TRT_OK;
}

/* What every attention entry point checks before it launches anything:
 * the device, dtype (f16, bf16, or f32 at a head dim of
 * attention_f32_configs) and options; the problem (check_problem); each
 * tensor of args against its dims (with varlen, one batch of the packed
 * rows, every stride_batch 0; f32 row values contiguous; the workspace
 * holding delta_layout's bytes, its strides set here); that each output
 * keeps its elements apart and shares no byte with another tensor of the
 * call or the varlen offsets. Sets
 * *varlen. With no tensors (n 0), the problem's checks alone. */
static trt_status begin_attention(sl_call *c, trt_device *dev, const char *op, tls_dtype dt, const tls_options *opt,
                                  const tls_attention_problem *p, const att_arg *args, size_t n, bool *varlen) {
    trt_status st;
    bool searchable = !strcmp(op, "tls_attention_fwd") || !strcmp(op, "tls_attention_bwd"); /* tls_options.search */
    if ((st = searchable ? sl_begin_searchable(c, dev, op, dt, opt) : sl_begin(c, dev, op, dt, opt))) return st;
    if (opt && opt->precision != TLS_TF32)
        return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: precision TLS_IEEE: attention's products are the tensor "
                       "cores' (f32 as tf32)", op);
    if (!p) return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: the problem is NULL", op);
    *varlen = p->cu_q.buffer.handle && p->cu_k.buffer.handle;
    if ((st = check_problem(c, p, *varlen))) return st;
    if (dt == TLS_F32 && !rt_attention_f32_config_for(p->head_dim, 0))
        return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: head_dim is %lld; in f32 it must be 32, 64 or 128 (no f32 "
                       "tile of head dim 256 compiles without spilling: use f16 or bf16 there)", op,
                       (long long)p->head_dim);
    int64_t nb = *varlen ? 1 : p->batch, rq = *varlen ? p->total_q : p->n_q, rk = *varlen ? p->total_kv : p->n_kv;
    att_tensor t[MAX_ATT_TENSORS + 2];
    assert(n <= MAX_ATT_TENSORS);
    for (size_t i = 0; i < n; i++) {
        const att_arg *a = &args[i];
        tls_attention_tensor at = a->t;
        if (a->kind == ATT_WORKSPACE) { /* its strides are the call's */
            att_delta d = {0};
            if ((st = delta_layout(c, p, *varlen, &d)) || (st = check_workspace(c, at.mem, d.bytes))) return st;
            at.stride_batch = d.stride_batch, at.stride_head = d.stride_head, at.stride_row = 1;
        }
        if (a->kind == ATT_ROW_VALUES && at.stride_row != 1)
            return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: %s: stride_row is %lld; it must be 1 (each head's "
                           "values are contiguous)", op, a->name, (long long)at.stride_row);
        if (*varlen && at.stride_batch)
            return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: %s: stride_batch is %lld; with cu_q and cu_k the "
                           "sequences are packed along the rows and it must be 0", op, a->name,
                           (long long)at.stride_batch);
        t[i] = a->kind == ATT_QUERY_ROWS ? att_of(a->name, at, c->st->size, nb, p->heads, rq, p->head_dim)
               : a->kind == ATT_KEY_ROWS ? att_of(a->name, at, c->st->size, nb, p->kv_heads, rk, p->head_dim)
                                         : att_of(a->name, at, 4, nb, p->heads, rq, 1);
        if ((st = check_att_tensor(c, &t[i]))) return st;
    }
    for (size_t i = 0; i < n; i++)
        if (args[i].output && sl_dims_overlap(4, t[i].n, t[i].s))
            return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: %s: strides %lld, %lld, %lld, 1 (batch, head, row, "
                           "column) over %lld x %lld x %lld x %lld put two of its elements at one address", op,
                           t[i].name, (long long)t[i].s[0], (long long)t[i].s[1], (long long)t[i].s[2],
                           (long long)t[i].n[0], (long long)t[i].n[1], (long long)t[i].n[2], (long long)t[i].n[3]);
    /* the varlen offsets, as two more inputs */
    size_t all = n;
    const tls_mem cu[2] = {p->cu_q, p->cu_k};
    for (int i = 0; *varlen && i < 2; i++) {
        uint64_t base;
        if ((st = trt_buffer_ptr(dev, cu[i].buffer, &base))) return rt_fail(dev, st, "%s: %s", op, dev->err);
        t[all] = (att_tensor){.name = i ? "cu_k" : "cu_q", .mem = cu[i]};
        t[all].begin = base + cu[i].offset, t[all].end = t[all].begin + 4 * (uint64_t)(p->batch + 1);
        all++;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; args[i].output && j < all; j++)
            if (j != i && (j > i || j >= n || !args[j].output) && (st = check_disjoint(c, &t[i], &t[j]))) return st;
    return TRT_OK;
}

/* The kernels' mask arguments: a window of no bound on a side, or one
 * past every row or key, is the rows' length there (the same mask, and
 * the kernels' i32 bounds, a row plus the window, stay in range), and no
 * WINDOW at all when neither side bounds anything; the scale, 0 meaning
 * 1 / sqrt(head_dim). */
typedef struct att_mask {
    bool window;
    int64_t left, right; /* 0 without window */
    float scale;
} att_mask;

static att_mask attention_mask(const tls_attention_problem *p) {
    int64_t left = p->window_left < 0 || p->window_left > p->n_q ? p->n_q : p->window_left;
    int64_t right = p->window_right < 0 || p->window_right > p->n_kv ? p->n_kv : p->window_right;
    att_mask m = {.window = p->window && (left < p->n_q || right < p->n_kv),
                  .scale = p->scale != 0 ? p->scale : 1.0f / sqrtf((float)p->head_dim)};
    if (m.window) m.left = left, m.right = right;
    return m;
}

/* The kernels' ALIGNED: every stride of these tensors a multiple of 8
 * elements (16 bytes of f16 and bf16, 32 of f32; their offsets are
 * checked 16-byte aligned), so each row's 16-byte pieces are aligned and
 * the k and v copies need no alignment check at run time. */
static bool strides_aligned(const tls_attention_tensor *const *t, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (t[i]->stride_batch % 8 || t[i]->stride_head % 8 || t[i]->stride_row % 8) return false;
    return true;
}

/* The forward's launch at one configuration: its kernel's name, consts
 * and options, its arguments and grid (attention_fwd_prepare). */
enum { ATT_FWD_DEFINES = 7, ATT_FWD_ARGS = 27 };
typedef struct att_fwd_launch {
    char name[SL_MAX_KERNEL_NAME], spec[128];
    tilec_define defs[ATT_FWD_DEFINES];
    trt_compile_options co; /* its defines point at defs: made in place, not copied */
    trt_arg args[ATT_FWD_ARGS];
    int64_t grid[3];
} att_fwd_launch;

static void attention_fwd_prepare(const sl_call *c, const rt_attention_config *cfg, const tls_attention_problem *p,
                                  bool varlen, tls_attention_tensor q, tls_attention_tensor k, tls_attention_tensor v,
                                  tls_attention_tensor o, tls_attention_tensor lse, att_fwd_launch *l) {
    att_mask m = attention_mask(p);
    const tls_attention_tensor *all[] = {&q, &k, &v, &o};
    bool aligned = strides_aligned(all, sizeof all / sizeof all[0]);
    const tilec_define defs[] = {
        {"BLOCK_M", cfg->block_m}, {"BLOCK_N", cfg->block_n}, {"HEAD_DIM", cfg->head_dim}, {"CAUSAL", p->causal},
        {"WINDOW", m.window},      {"VARLEN", varlen},        {"ALIGNED", aligned}};
    _Static_assert(sizeof defs / sizeof defs[0] == ATT_FWD_DEFINES, "one value per slot (a missing one would be a silent 0)");
    memcpy(l->defs, defs, sizeof defs);
    snprintf(l->name, sizeof l->name, "attention_fwd_%s", c->st->suffix);
    snprintf(l->spec, sizeof l->spec, "HEAD_DIM %d, BLOCK_M %d, BLOCK_N %d%s%s%s%s", cfg->head_dim, cfg->block_m,
             cfg->block_n, p->causal ? ", CAUSAL" : "", m.window ? ", WINDOW" : "", varlen ? ", VARLEN" : "",
             aligned ? ", ALIGNED" : "");
    int warps = sl_main_warps(c) ? sl_main_warps(c) : cfg->num_warps;
    l->co = (trt_compile_options){.num_warps = warps, .defines = l->defs, .ndefines = ATT_FWD_DEFINES,
                                  .num_stages = cfg->num_stages, .exp2_ftz = ATT_EXP2_FTZ};
    tls_mem cuq = varlen ? p->cu_q : lse.mem, cuk = varlen ? p->cu_k : lse.mem; /* without varlen, not read */
    const trt_arg a[] = {
        sl_arg_mem(q.mem),       sl_arg_mem(k.mem),       sl_arg_mem(v.mem),       sl_arg_mem(o.mem),
        sl_arg_mem(lse.mem),     sl_arg_mem(cuq),         sl_arg_mem(cuk),         trt_int(p->n_q),
        trt_int(p->n_kv),        trt_int(p->heads / p->kv_heads), trt_int(q.stride_batch), trt_int(q.stride_head),
        trt_int(q.stride_row),   trt_int(k.stride_batch), trt_int(k.stride_head), trt_int(k.stride_row),
        trt_int(v.stride_batch), trt_int(v.stride_head), trt_int(v.stride_row),   trt_int(o.stride_batch),
        trt_int(o.stride_head),  trt_int(o.stride_row),   trt_int(lse.stride_batch), trt_int(lse.stride_head),
        trt_float(m.scale),      trt_int(m.left),         trt_int(m.right)};
    _Static_assert(sizeof a / sizeof a[0] == ATT_FWD_ARGS, "one value per slot (a missing one would be a silent 0)");
    memcpy(l->args, a, sizeof a);
    l->grid[0] = sl_cdiv(p->n_q, cfg->block_m), l->grid[1] = p->heads, l->grid[2] = p->batch;
}

/* The forward at configuration cfg: its kernel compiled (once), launched. */
static trt_status attention_fwd_as(sl_call *c, const rt_attention_config *cfg, const tls_attention_problem *p,
                                   bool varlen, tls_attention_tensor q, tls_attention_tensor k, tls_attention_tensor v,
                                   tls_attention_tensor o, tls_attention_tensor lse) {
    att_fwd_launch l;
    trt_kernel *kern;
    trt_status st;
    attention_fwd_prepare(c, cfg, p, varlen, q, k, v, o, lse, &l);
    if ((st = sl_kernel_with(c, "stdlib/attention.tile", l.name, &l.co, l.spec, &kern))) return st;
    return sl_launch_grid(c, kern, l.grid[0], l.grid[1], l.grid[2], l.args, ATT_FWD_ARGS);
}

/* The sizes a tuned attention configuration is keyed by (docs/tuning.md):
 * query and key rows and the head dim, each up to a power of two. */
static const char *const att_bucket_names[] = {"N_Q", "N_KV", "HEAD_DIM"};
enum { ATT_BUCKET_SIZES = 3 };

/* The device's tuned blocks, warps and stages of kernel `name` of `file`
 * for p's bucket into *out; NULL when there is none, or, with a note in
 * the tuning, when its entry lacks a block. */
static const rt_tune_entry *tuned_attention(const sl_call *c, const char *file, const char *name,
                                            const tls_attention_problem *p, rt_attention_pass *out) {
    static const char *const consts[] = {"BLOCK_M", "BLOCK_N"};
    const int64_t sizes[ATT_BUCKET_SIZES] = {p->n_q, p->n_kv, p->head_dim};
    int64_t v[2];
    const rt_tune_entry *e = sl_tuned(c, file, name, att_bucket_names, sizes, ATT_BUCKET_SIZES, consts, v, 2);
    if (e) *out = (rt_attention_pass){.block_m = (int)v[0], .block_n = (int)v[1], .num_warps = e->num_warps,
                                      .num_stages = e->num_stages};
    return e;
}

/* The blocks and warps a forward's search tries after the table's row
 * (BLOCK_M, BLOCK_N, num_warps): those of Triton's fused-attention
 * tutorial's autotuning list, whose stages (3, 4, 7) are left to the
 * row's num_stages (the compiler cuts a ring that does not fit). */
static const int attention_candidates[][3] = {{64, 32, 4}, {64, 64, 4},  {128, 32, 4}, {128, 64, 4},
                                              {64, 32, 8}, {64, 64, 8}, {128, 32, 8}, {128, 64, 8}};

/* p's bucket (att_bucket_names) into bucket[TRT_TUNE_MAX_BUCKET], for a
 * search. */
static trt_status search_bucket(const sl_call *c, const tls_attention_problem *p, char *bucket) {
    const int64_t sizes[ATT_BUCKET_SIZES] = {p->n_q, p->n_kv, p->head_dim};
    trt_status st = trt_tune_bucket(bucket, TRT_TUNE_MAX_BUCKET, att_bucket_names, sizes, ATT_BUCKET_SIZES);
    return st == TRT_OK ? st : rt_fail(c->d, st, "%s: tls_options.search: %s", c->op, c->d->err);
}

static void att_grid(void *user, const trt_tune_config *cfg, uint32_t g[3]) {
    const tls_attention_problem *p = user;
    g[0] = (uint32_t)sl_cdiv(p->n_q, cfg->defines[0].value); /* BLOCK_M: attention_fwd_prepare's first */
    g[1] = (uint32_t)p->heads;
    g[2] = (uint32_t)p->batch;
}

/* tls_options.search for the forward: the table's row, then each of
 * attention_candidates (its consts as the call gives them), searched. */
static trt_status attention_fwd_search(sl_call *c, const rt_attention_config *table, const tls_attention_problem *p,
                                       bool varlen, tls_attention_tensor q, tls_attention_tensor k,
                                       tls_attention_tensor v, tls_attention_tensor o, tls_attention_tensor lse) {
    enum { MAX = 1 + sizeof attention_candidates / sizeof attention_candidates[0] };
    _Static_assert((int)MAX <= (int)SL_MAX_SEARCH, "the forward's candidates fit a search");
    char bucket[TRT_TUNE_MAX_BUCKET];
    trt_status st = search_bucket(c, p, bucket);
    if (st != TRT_OK) return st;
    att_fwd_launch *l = malloc(MAX * sizeof *l);
    if (!l) return rt_fail(c->d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    trt_tune_config cfgs[MAX];
    rt_attention_config tried[MAX];
    for (size_t i = 0; i < MAX; i++) {
        rt_attention_config cand = *table;
        if (i) {
            const int *r = attention_candidates[i - 1];
            cand.block_m = r[0], cand.block_n = r[1], cand.num_warps = r[2];
        }
        attention_fwd_prepare(c, &cand, p, varlen, q, k, v, o, lse, &l[i]);
        cfgs[i] = (trt_tune_config){l[i].defs, ATT_FWD_DEFINES, l[i].co.num_warps, l[i].co.num_stages};
        tried[i] = cand;
    }
    size_t best = 0;
    st = sl_search(c, "stdlib/attention.tile", l[0].name, cfgs, MAX, ATT_EXP2_FTZ, bucket, att_grid, (void *)p,
                   l[0].args, ATT_FWD_ARGS, &best);
    free(l);
    return st == TRT_OK ? attention_fwd_as(c, &tried[best], p, varlen, q, k, v, o, lse) : st; /* the winner's bits */
}

trt_status tls_attention_fwd(trt_device *dev, tls_dtype dt, const tls_attention_problem *p, tls_attention_tensor q,
                             tls_attention_tensor k, tls_attention_tensor v, tls_attention_tensor o,
                             tls_attention_tensor lse, const tls_options *opt) {
    sl_call c;
    trt_status st;
    bool varlen = false;
    const att_arg args[] = {{"q", q, ATT_QUERY_ROWS, false}, {"k", k, ATT_KEY_ROWS, false},
                            {"v", v, ATT_KEY_ROWS, false},   {"o", o, ATT_QUERY_ROWS, true},
                            {"lse", lse, ATT_ROW_VALUES, true}};
    if ((st = begin_attention(&c, dev, "tls_attention_fwd", dt, opt, p, args, sizeof args / sizeof args[0], &varlen)))
        return st;
    int sm = device_sm(&c);
    const rt_attention_config *cfg = c.st == &sl_storages[TLS_F32] ? rt_attention_f32_config_for(p->head_dim, sm)
                                                                    : rt_attention_config_for(p->head_dim, sm);
    if (opt && opt->search) return attention_fwd_search(&c, cfg, p, varlen, q, k, v, o, lse);
    /* a tuned configuration first (one that does not compile falls back
     * to the table's, with a note in the tuning) */
    char name[SL_MAX_KERNEL_NAME];
    snprintf(name, sizeof name, "attention_fwd_%s", c.st->suffix);
    rt_attention_pass tp;
    const rt_tune_entry *e = tuned_attention(&c, "stdlib/attention.tile", name, p, &tp);
    if (e) {
        rt_attention_config tuned = {.head_dim = cfg->head_dim, .block_m = tp.block_m, .block_n = tp.block_n,
                                     .num_warps = tp.num_warps, .num_stages = tp.num_stages};
        st = attention_fwd_as(&c, &tuned, p, varlen, q, k, v, o, lse);
        if (st != TRT_ERR_COMPILE) {
            if (st == TRT_OK) rt_tuning_used(dev->tuning, e);
            return st;
        }
        rt_tuning_note(dev->tuning, "%s: the tuned configuration of %s %s does not compile; the built-in table's "
                       "instead: %s", c.op, name, e->bucket, dev->err);
    }
    return attention_fwd_as(&c, cfg, p, varlen, q, k, v, o, lse);
}

/* The backward's row of attention_bwd_configs for the call's device (p's
 * head dim checked before): sm_90a's own where it has one. */
static const rt_attention_bwd_config *bwd_config(const sl_call *c, const tls_attention_problem *p) {
    if (c->st == &sl_storages[TLS_F32]) return rt_attention_bwd_f32_config_for(p->head_dim, device_sm(c));
    const char *arch = c->d->ops->code_arch ? c->d->ops->code_arch(c->d) : NULL;
    const rt_attention_bwd_config *w =
        arch && !strcmp(arch, "sm_90a") ? rt_attention_bwd_wgmma_config_for(p->head_dim) : NULL;
    return w ? w : rt_attention_bwd_config_for(p->head_dim, device_sm(c));
}

/* dK/dV's program walks its (query head, query block) pairs in one loop
 * whose trip count is an i32: heads / kv_heads times n_q's blocks. */
static trt_status check_bwd_trips(const sl_call *c, const tls_attention_problem *p,
                                  const rt_attention_bwd_config *cfg) {
    if (!cfg) /* begin_attention let through a head dim the table lacks: the table is wrong, not the call */
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: no backward configuration for head_dim %lld", c->op,
                       (long long)p->head_dim);
    int64_t q_per_kv = p->heads / p->kv_heads, blocks = sl_cdiv(p->n_q, cfg->dkdv.block_m);
    if (q_per_kv * blocks > INT32_MAX)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: heads / kv_heads (%lld) times n_q's blocks of %d rows "
                       "(%lld) is %lld, past the dK/dV kernel's i32 loop count (%d)", c->op, (long long)q_per_kv,
                       cfg->dkdv.block_m, (long long)blocks, (long long)(q_per_kv * blocks), INT32_MAX);
    return TRT_OK;
}

trt_status tls_attention_bwd_workspace(trt_device *dev, const tls_attention_problem *p, size_t *bytes) {
    sl_call c;
    trt_status st;
    bool varlen = false;
    att_delta d = {0};
    if (bytes) *bytes = 0;
    if ((st = begin_attention(&c, dev, "tls_attention_bwd_workspace", TLS_F16, NULL, p, NULL, 0, &varlen)))
        return st;
    if (!bytes) return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "tls_attention_bwd_workspace: bytes is NULL");
    if ((st = check_bwd_trips(&c, p, bwd_config(&c, p))) || (st = delta_layout(&c, p, varlen, &d))) return st;
    if (d.bytes > SIZE_MAX)
        return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "tls_attention_bwd_workspace: %llu bytes do not fit a size_t",
                       (unsigned long long)d.bytes);
    *bytes = (size_t)d.bytes;
    return TRT_OK;
}

/* The backward's tensors and workspace. */
typedef struct att_bwd_io {
    tls_attention_tensor q, k, v, o, d_o, lse, dq, dk, dv;
    tls_mem workspace;
} att_bwd_io;

/* The backward's three launches at one configuration (pre-pass, dK/dV,
 * dQ; attention_bwd_prepare): each kernel's name, consts, options and
 * specialization, the arguments they share, and each one's grid. */
enum { ATT_BWD_DEFINES = 7, ATT_BWD_ARGS = 46 };
typedef struct att_bwd_launch {
    char names[3][SL_MAX_KERNEL_NAME], specs[3][128];
    tilec_define defs[3][ATT_BWD_DEFINES];
    trt_compile_options co[3]; /* their defines point at defs: made in place, not copied */
    trt_arg args[ATT_BWD_ARGS];
    int64_t grid[3][3];
} att_bwd_launch;

static void attention_bwd_prepare(const sl_call *c, const rt_attention_bwd_config *cfg, const tls_attention_problem *p,
                                  bool varlen, const att_delta *d, const att_bwd_io *t, att_bwd_launch *l) {
    int64_t q_per_kv = p->heads / p->kv_heads;
    att_mask m = attention_mask(p);
    /* the kernels: the pre-pass with dQ's configuration, dK/dV with its own */
    static const char *const pass[3] = {"pre", "dkdv", "dq"};
    const tls_attention_tensor *all[] = {&t->q, &t->k, &t->v, &t->o, &t->d_o, &t->dq, &t->dk, &t->dv};
    bool aligned = strides_aligned(all, sizeof all / sizeof all[0]);
    for (int i = 0; i < 3; i++) {
        const rt_attention_pass *ps = i == 1 ? &cfg->dkdv : &cfg->dq;
        const tilec_define d_i[] = {
            {"BLOCK_M", ps->block_m}, {"BLOCK_N", ps->block_n}, {"HEAD_DIM", cfg->head_dim}, {"CAUSAL", p->causal},
            {"WINDOW", m.window},     {"VARLEN", varlen},       {"ALIGNED", aligned}};
        _Static_assert(sizeof d_i / sizeof d_i[0] == ATT_BWD_DEFINES, "one value per slot (a missing one would be a silent 0)");
        memcpy(l->defs[i], d_i, sizeof d_i);
        snprintf(l->names[i], sizeof l->names[i], "attention_bwd_%s_%s", pass[i], c->st->suffix);
        snprintf(l->specs[i], sizeof l->specs[i], "HEAD_DIM %d, BLOCK_M %d, BLOCK_N %d%s%s%s%s", cfg->head_dim,
                 ps->block_m, ps->block_n, p->causal ? ", CAUSAL" : "", m.window ? ", WINDOW" : "",
                 varlen ? ", VARLEN" : "", aligned ? ", ALIGNED" : "");
        int warps = sl_main_warps(c) ? sl_main_warps(c) : ps->num_warps;
        l->co[i] = (trt_compile_options){.num_warps = warps, .defines = l->defs[i], .ndefines = ATT_BWD_DEFINES,
                                         .num_stages = ps->num_stages, .exp2_ftz = ATT_EXP2_FTZ};
    }
    /* without varlen, cu_q and cu_k are not read */
    tls_mem cuq = varlen ? p->cu_q : t->lse.mem, cuk = varlen ? p->cu_k : t->lse.mem;
#define STRIDES(x) trt_int((x).stride_batch), trt_int((x).stride_head), trt_int((x).stride_row)
    const trt_arg a[] = {
        sl_arg_mem(t->q.mem),   sl_arg_mem(t->k.mem),     sl_arg_mem(t->v.mem),  sl_arg_mem(t->o.mem),
        sl_arg_mem(t->d_o.mem), sl_arg_mem(t->lse.mem),   sl_arg_mem(t->workspace),
        sl_arg_mem(t->dq.mem),  sl_arg_mem(t->dk.mem),    sl_arg_mem(t->dv.mem), sl_arg_mem(cuq),
        sl_arg_mem(cuk),        trt_int(p->n_q),          trt_int(p->n_kv),      trt_int(q_per_kv),
        STRIDES(t->q),          STRIDES(t->k),            STRIDES(t->v),         STRIDES(t->o),
        STRIDES(t->d_o),        STRIDES(t->dq),           STRIDES(t->dk),        STRIDES(t->dv),
        trt_int(t->lse.stride_batch), trt_int(t->lse.stride_head), trt_int(d->stride_batch),
        trt_int(d->stride_head), trt_float(m.scale),      trt_int(m.left),       trt_int(m.right)};
#undef STRIDES
    _Static_assert(sizeof a / sizeof a[0] == ATT_BWD_ARGS, "one value per slot (a missing one would be a silent 0)");
    memcpy(l->args, a, sizeof a);
    const int64_t grids[3][3] = {{sl_cdiv(p->n_q, cfg->dq.block_m), p->heads, p->batch},
                                 {sl_cdiv(p->n_kv, cfg->dkdv.block_n), p->kv_heads, p->batch},
                                 {sl_cdiv(p->n_q, cfg->dq.block_m), p->heads, p->batch}};
    memcpy(l->grid, grids, sizeof grids);
}

/* The backward at configuration cfg: its i32 loop count checked, its
 * three kernels compiled (together, once), launched. */
static trt_status attention_bwd_as(sl_call *c, const rt_attention_bwd_config *cfg, const tls_attention_problem *p,
                                   bool varlen, const att_delta *d, const att_bwd_io *t) {
    trt_status st;
    if ((st = check_bwd_trips(c, p, cfg))) return st;
    att_bwd_launch *l = malloc(sizeof *l);
    if (!l) return rt_fail(c->d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    attention_bwd_prepare(c, cfg, p, varlen, d, t, l);
    /* the three compile together: a first call waits for the slowest */
    const char *names[3] = {l->names[0], l->names[1], l->names[2]};
    sl_prefetch(c, "stdlib/attention_bwd.tile", names, l->co, 3);
    trt_kernel *kern[3];
    for (int i = 0; i < 3 && st == TRT_OK; i++)
        st = sl_kernel_with(c, "stdlib/attention_bwd.tile", l->names[i], &l->co[i], l->specs[i], &kern[i]);
    for (int i = 0; i < 3 && st == TRT_OK; i++)
        st = sl_launch_grid(c, kern[i], l->grid[i][0], l->grid[i][1], l->grid[i][2], l->args, ATT_BWD_ARGS);
    free(l);
    return st;
}

/* A backward pass's grid for a search's configuration: dK/dV's by key
 * blocks (BLOCK_N, the second const), dQ's by query blocks (BLOCK_M, the
 * first). */
static void att_bwd_dkdv_grid(void *user, const trt_tune_config *cfg, uint32_t g[3]) {
    const tls_attention_problem *p = user;
    g[0] = (uint32_t)sl_cdiv(p->n_kv, cfg->defines[1].value), g[1] = (uint32_t)p->kv_heads, g[2] = (uint32_t)p->batch;
}

static void att_bwd_dq_grid(void *user, const trt_tune_config *cfg, uint32_t g[3]) {
    const tls_attention_problem *p = user;
    g[0] = (uint32_t)sl_cdiv(p->n_q, cfg->defines[0].value), g[1] = (uint32_t)p->heads, g[2] = (uint32_t)p->batch;
}

/* tls_options.search for the backward: the pre-pass once at the table's
 * row (delta, which no configuration changes), then dK/dV's kernel and
 * dQ's each searched apart over the table's pass and attention_candidates
 * (the pass's stages), each recorded under its own kernel's name. */
static trt_status attention_bwd_search(sl_call *c, const rt_attention_bwd_config *table,
                                       const tls_attention_problem *p, bool varlen, const att_delta *d,
                                       const att_bwd_io *t) {
    enum { MAX = 1 + sizeof attention_candidates / sizeof attention_candidates[0] };
    _Static_assert((int)MAX <= (int)SL_MAX_SEARCH, "the backward's candidates fit a search");
    char bucket[TRT_TUNE_MAX_BUCKET];
    trt_status st = search_bucket(c, p, bucket);
    if (st != TRT_OK) return st;
    att_bwd_launch *l = malloc(MAX * sizeof *l);
    if (!l) return rt_fail(c->d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    attention_bwd_prepare(c, table, p, varlen, d, t, &l[0]);
    trt_kernel *pre;
    if ((st = sl_kernel_with(c, "stdlib/attention_bwd.tile", l[0].names[0], &l[0].co[0], l[0].specs[0], &pre)) ||
        (st = sl_launch_grid(c, pre, l[0].grid[0][0], l[0].grid[0][1], l[0].grid[0][2], l[0].args, ATT_BWD_ARGS)))
        goto done;
    rt_attention_bwd_config won = *table; /* each pass's winner, as it is found */
    for (int pass = 1; pass <= 2 && st == TRT_OK; pass++) {
        trt_tune_config cfgs[MAX];
        rt_attention_pass tried[MAX];
        size_t n = 0, best = 0;
        for (size_t i = 0; i < MAX; i++) {
            rt_attention_bwd_config cand = *table;
            rt_attention_pass *ps = pass == 1 ? &cand.dkdv : &cand.dq;
            if (i) {
                const int *r = attention_candidates[i - 1];
                ps->block_m = r[0], ps->block_n = r[1], ps->num_warps = r[2];
            }
            if (i && check_bwd_trips(c, p, &cand) != TRT_OK) continue; /* its blocks overrun dK/dV's loop count */
            attention_bwd_prepare(c, &cand, p, varlen, d, t, &l[n]);
            cfgs[n] = (trt_tune_config){l[n].defs[pass], ATT_BWD_DEFINES, l[n].co[pass].num_warps,
                                        l[n].co[pass].num_stages};
            tried[n++] = *ps;
        }
        st = sl_search(c, "stdlib/attention_bwd.tile", l[0].names[pass], cfgs, n, ATT_EXP2_FTZ, bucket,
                       pass == 1 ? att_bwd_dkdv_grid : att_bwd_dq_grid, (void *)p, l[0].args, ATT_BWD_ARGS, &best);
        if (st == TRT_OK) *(pass == 1 ? &won.dkdv : &won.dq) = tried[best];
    }
done:
    free(l);
    return st == TRT_OK ? attention_bwd_as(c, &won, p, varlen, d, t) : st; /* the winners' bits */
}

trt_status tls_attention_bwd(trt_device *dev, tls_dtype dt, const tls_attention_problem *p, tls_attention_tensor q,
                             tls_attention_tensor k, tls_attention_tensor v, tls_attention_tensor o,
                             tls_attention_tensor d_o, tls_attention_tensor lse, tls_attention_tensor dq,
                             tls_attention_tensor dk, tls_attention_tensor dv, tls_mem workspace,
                             const tls_options *opt) {
    static const char *const op = "tls_attention_bwd";
    sl_call c;
    trt_status st;
    bool varlen = false;
    att_delta d = {0};
    tls_attention_tensor delta = {workspace, 0, 0, 1}; /* its strides: begin_attention's, delta_layout's */
    const att_arg args[] = {{"q", q, ATT_QUERY_ROWS, false},       {"k", k, ATT_KEY_ROWS, false},
                            {"v", v, ATT_KEY_ROWS, false},         {"o", o, ATT_QUERY_ROWS, false},
                            {"d_o", d_o, ATT_QUERY_ROWS, false},   {"lse", lse, ATT_ROW_VALUES, false},
                            {"dq", dq, ATT_QUERY_ROWS, true},      {"dk", dk, ATT_KEY_ROWS, true},
                            {"dv", dv, ATT_KEY_ROWS, true},        {"workspace", delta, ATT_WORKSPACE, true}};
    if ((st = begin_attention(&c, dev, op, dt, opt, p, args, sizeof args / sizeof args[0], &varlen)) ||
        (st = delta_layout(&c, p, varlen, &d)))
        return st;
    const rt_attention_bwd_config *cfg = bwd_config(&c, p);
    if ((st = check_bwd_trips(&c, p, cfg))) return st;
    const att_bwd_io io = {q, k, v, o, d_o, lse, dq, dk, dv, workspace};
    if (opt && opt->search) return attention_bwd_search(&c, cfg, p, varlen, &d, &io);
    /* tuned passes first: dK/dV's entry, and dQ's (the pre-pass's too);
     * if they do not compile (or their blocks overrun the loop count),
     * the table's, with a note in the tuning */
    char dkdv_name[SL_MAX_KERNEL_NAME], dq_name[SL_MAX_KERNEL_NAME];
    snprintf(dkdv_name, sizeof dkdv_name, "attention_bwd_dkdv_%s", c.st->suffix);
    snprintf(dq_name, sizeof dq_name, "attention_bwd_dq_%s", c.st->suffix);
    rt_attention_bwd_config tuned = *cfg;
    const rt_tune_entry *e_dkdv = tuned_attention(&c, "stdlib/attention_bwd.tile", dkdv_name, p, &tuned.dkdv),
                        *e_dq = tuned_attention(&c, "stdlib/attention_bwd.tile", dq_name, p, &tuned.dq);
    if (e_dkdv || e_dq) {
        st = attention_bwd_as(&c, &tuned, p, varlen, &d, &io);
        if (st != TRT_ERR_COMPILE && st != TRT_ERR_INVALID_ARGUMENT) {
            if (st == TRT_OK && e_dkdv) rt_tuning_used(dev->tuning, e_dkdv);
            if (st == TRT_OK && e_dq) rt_tuning_used(dev->tuning, e_dq);
            return st;
        }
        rt_tuning_note(dev->tuning, "%s: the tuned configuration of %s%s%s %s does not %s; the built-in table's "
                       "instead: %s", op, e_dkdv ? dkdv_name : "", e_dkdv && e_dq ? " and " : "",
                       e_dq ? dq_name : "", (e_dkdv ? e_dkdv : e_dq)->bucket,
                       st == TRT_ERR_COMPILE ? "compile" : "fit the call", dev->err);
    }
    return attention_bwd_as(&c, cfg, p, varlen, &d, &io);
}
