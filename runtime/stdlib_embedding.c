/* stdlib_embedding.c - the token + position embedding's C entry points
 * (tls_embedding, tls_embedding_bwd, include/tilec_stdlib.h;
 * docs/stdlib.md, "Embeddings") over stdlib/embedding.tile, on the
 * helpers runtime/stdlib.c shares through stdlib_internal.h.
 *
 * Each call checks everything before it launches anything: the sizes,
 * each tensor's buffer (live, 16-byte aligned at its offset, holding its
 * rows), that no output shares a byte with another tensor of the call,
 * and on the CPU and the emulator (whose buffers are host memory, and
 * whose launches are done when they return) that every token is in
 * [0, vocab); on the GPU reading the tokens would wait for the work that
 * wrote them, so there an out-of-range token adds zeros (the forward) or
 * nothing (the backward) instead. Then it compiles the kernels (one
 * module for the three of a dtype, forward and backward alike) and
 * launches:
 *   - BLOCK, the columns of a program: the next power of two >= dim, at
 *     most MAX_BLOCK (768 columns: 3 programs a row, 2 columns a thread
 *     on 4 warps); the forward takes FWD_TILE / BLOCK positions a program,
 *     so that small dims still give each program a tile of some size;
 *   - ALIGN: the largest power of two up to MAX_ALIGN dividing dim (16
 *     bytes of f16 a load; rows start at token * dim);
 *   - num_warps: the caller's (tls_options), for all three kernels, else
 *     the compiler's heuristic;
 *   - the grid: the forward cdiv(rows, BLOCK_R) x cdiv(dim, BLOCK); dwte
 *     vocab x cdiv(dim, BLOCK); dwpe min(seq, rows) x cdiv(dim, BLOCK).
 * Messages start with the entry point's name. */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/internal.h"
#include "runtime/stdlib_internal.h"
#include "tilec_stdlib.h"

enum {
    MAX_BLOCK = 256,  /* columns a program: TLS_EMBEDDING_MAX_DIM is 65535 of them (the grid's axis 1) */
    FWD_TILE = 512,   /* the forward's positions x columns a program (2 x 256): 16 bytes of f32 a thread on 4 warps, and no
                         spill even on 1 warp with 64-bit addresses (2048 spilled there: ptxas -v) */
    MAX_ALIGN = 8,    /* as the row kernels' (stdlib.c): 16 bytes of f16, two 16-byte accesses of f32 */
    TOKEN_BYTES = 4,  /* tokens are i32 */
    MAX_GRID_Y = 65535,
};

_Static_assert((long long)TLS_EMBEDDING_MAX_DIM == (long long)MAX_GRID_Y * MAX_BLOCK,
               "dim's blocks fill the grid's axis 1 at most");
_Static_assert((long long)TLS_EMBEDDING_MAX_ROWS + FWD_TILE - 1 <= INT32_MAX,
               "the forward's i32 positions must not wrap in the last program (BLOCK_R up to FWD_TILE)");

static trt_status check_size(const sl_call *c, const char *name, int64_t v, int64_t max) {
    if (v < 1 || v > max)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s is %lld; it must be from 1 to %lld", c->op, name,
                       (long long)v, (long long)max);
    return TRT_OK;
}

/* The sizes every call takes, before any tensor. */
static trt_status check_sizes(const sl_call *c, int64_t rows, int64_t seq, int64_t vocab, int64_t dim) {
    trt_status st;
    if ((st = check_size(c, "rows", rows, TLS_EMBEDDING_MAX_ROWS)) ||
        (st = check_size(c, "seq", seq, TLS_EMBEDDING_MAX_SEQ)) ||
        (st = check_size(c, "vocab", vocab, TLS_EMBEDDING_MAX_VOCAB)) ||
        (st = check_size(c, "dim", dim, TLS_EMBEDDING_MAX_DIM)))
        return st;
    return TRT_OK;
}

/* Every token in [0, vocab), read where the call may (sl_can_read);
 * elsewhere the kernels take an out-of-range token as none. */
static trt_status check_tokens(const sl_call *c, tls_mem tokens, int64_t rows, int64_t vocab) {
    if (!sl_can_read(c)) return TRT_OK;
    int32_t *t = malloc((size_t)rows * TOKEN_BYTES);
    if (!t) return rt_fail(c->d, TRT_ERR_OUT_OF_MEMORY, "%s: out of memory reading tokens", c->op);
    trt_status st = trt_read(c->d, tokens.buffer, tokens.offset, t, (size_t)rows * TOKEN_BYTES);
    if (st != TRT_OK) st = rt_fail(c->d, st, "%s: tokens: %s", c->op, c->d->err);
    for (int64_t i = 0; st == TRT_OK && i < rows; i++)
        if (t[i] < 0 || t[i] >= vocab)
            st = rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: tokens[%lld] is %d; a token must be from 0 to %lld "
                         "(vocab - 1)", c->op, (long long)i, (int)t[i], (long long)(vocab - 1));
    free(t);
    return st;
}

/* The kernel embedding`suffix`_<dtype> at the BLOCK and ALIGN for dim;
 * *block gets BLOCK. */
static trt_status embedding_kernel(const sl_call *c, const char *suffix, int64_t dim, int *block, trt_kernel **k) {
    int b = 1, a = MAX_ALIGN;
    while (b < dim && b < MAX_BLOCK) b *= 2;
    while (a > 1 && dim % a) a /= 2;
    tilec_define defs[] = {{"BLOCK", b}, {"BLOCK_R", FWD_TILE / b}, {"ALIGN", a}};
    char name[SL_MAX_KERNEL_NAME], spec[64];
    snprintf(name, sizeof name, "embedding%s_%s", suffix, c->st->suffix);
    snprintf(spec, sizeof spec, "BLOCK %d, BLOCK_R %d, ALIGN %d", b, FWD_TILE / b, a);
    trt_compile_options co = {.num_warps = sl_main_warps(c), .defines = defs, .ndefines = sizeof defs / sizeof defs[0]};
    *block = b;
    return sl_kernel_with(c, "stdlib/embedding.tile", name, &co, spec, k);
}

trt_status tls_embedding(trt_device *dev, tls_dtype dt, tls_mem tokens, tls_mem wte, tls_mem wpe, tls_mem out,
                         int64_t rows, int64_t seq, int64_t vocab, int64_t dim, const tls_options *opt) {
    sl_call c;
    trt_status st;
    sl_span s[4] = {{0}};
    trt_kernel *k;
    int block;
    if ((st = sl_begin(&c, dev, "tls_embedding", dt, opt)) || (st = check_sizes(&c, rows, seq, vocab, dim)) ||
        (st = sl_check_values(&c, "tokens", tokens, rows, TOKEN_BYTES, &s[0])) ||
        (st = sl_check_values(&c, "wte", wte, vocab * dim, c.st->size, &s[1])) ||
        (st = sl_check_values(&c, "wpe", wpe, seq * dim, c.st->size, &s[2])) ||
        (st = sl_check_values(&c, "out", out, rows * dim, c.st->size, &s[3])))
        return st;
    for (int i = 0; i < 3; i++)
        if ((st = sl_check_apart(&c, &s[3], &s[i], NULL))) return st;
    if ((st = check_tokens(&c, tokens, rows, vocab)) || (st = embedding_kernel(&c, "", dim, &block, &k))) return st;
    trt_arg a[] = {sl_arg_mem(tokens), sl_arg_mem(wte), sl_arg_mem(wpe), sl_arg_mem(out),
                   trt_int(rows),      trt_int(seq),    trt_int(vocab),  trt_int(dim)};
    return sl_launch_grid(&c, k, sl_cdiv(rows, FWD_TILE / block), sl_cdiv(dim, block), 1, a, sizeof a / sizeof a[0]);
}

trt_status tls_embedding_bwd(trt_device *dev, tls_dtype dt, tls_mem tokens, tls_mem dout, tls_mem dwte, tls_mem dwpe,
                             int64_t rows, int64_t seq, int64_t vocab, int64_t dim, const tls_options *opt) {
    sl_call c;
    trt_status st;
    sl_span s[4] = {{0}}; /* tokens, dout, dwte, dwpe */
    trt_kernel *kte, *kpe;
    int block;
    if ((st = sl_begin(&c, dev, "tls_embedding_bwd", dt, opt)) || (st = check_sizes(&c, rows, seq, vocab, dim)) ||
        (st = sl_check_values(&c, "tokens", tokens, rows, TOKEN_BYTES, &s[0])) ||
        (st = sl_check_values(&c, "dout", dout, rows * dim, c.st->size, &s[1])) ||
        (st = sl_check_values(&c, "dwte", dwte, vocab * dim, c.st->size, &s[2])) ||
        (st = sl_check_values(&c, "dwpe", dwpe, seq * dim, c.st->size, &s[3])))
        return st;
    for (int o = 2; o < 4; o++)
        for (int i = 0; i < 4; i++)
            if (i != o && (st = sl_check_apart(&c, &s[o], &s[i], NULL))) return st;
    if ((st = check_tokens(&c, tokens, rows, vocab)) || (st = embedding_kernel(&c, "_bwd_wte", dim, &block, &kte)) ||
        (st = embedding_kernel(&c, "_bwd_wpe", dim, &block, &kpe)))
        return st;
    int64_t cblocks = sl_cdiv(dim, block), positions = seq < rows ? seq : rows;
    trt_arg ate[] = {sl_arg_mem(tokens), sl_arg_mem(dout), sl_arg_mem(dwte), trt_int(rows), trt_int(dim)};
    trt_arg ape[] = {sl_arg_mem(dout), sl_arg_mem(dwpe), trt_int(rows), trt_int(seq), trt_int(dim)};
    if ((st = sl_launch_grid(&c, kte, vocab, cblocks, 1, ate, sizeof ate / sizeof ate[0]))) return st;
    return sl_launch_grid(&c, kpe, positions, cblocks, 1, ape, sizeof ape / sizeof ape[0]);
}
