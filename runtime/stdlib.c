/* stdlib.c - the C entry points of the kernel library
 * (include/tilec_stdlib.h): one call per operation, on either device.
 *
 * Each call checks its arguments, then picks the kernel's specialization
 * and launch for the shape:
 *   - BLOCK: for the row kernels (softmax, layernorm, rmsnorm), the next
 *     power of two >= cols, since a row lives in one tile; for the
 *     elementwise kernels (gelu, dropout), ELEMENTWISE_BLOCK; for the
 *     column sums of the norms' backward passes, COLSUM_BLOCK;
 *   - num_warps: the caller's (tls_options), else 0, which leaves it to
 *     the compiler's heuristic on the bytes of the kernel's largest tile
 *     (lower/layout.c, measured on an H100; docs/stdlib.md tabulates what
 *     it gives for each row width);
 *   - the grid: a program per row, per ELEMENTWISE_BLOCK elements, per
 *     COLSUM_BLOCK columns, or per group of rows for the norms' backward
 *     passes, which take cdiv(rows, groups) rows each with groups
 *     GPU_GROUPS_PER_SM per multiprocessor on the GPU (4 for rows of up
 *     to NARROW_COLS; the bench's measured choices) and CPU_GROUPS on the
 *     CPU.
 * Matrix products (tls_matmul*) pick instead a row of matmul_configs by
 * shape (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps) and the layout
 * specializations the strides allow (matmul.tile's header), and launch
 * one program per tile of c along axis 0 and the batch along axis 1.
 * Flash attention (tls_attention_fwd) picks a row of attention_configs
 * by head dim and the device's arch (BLOCK_M, BLOCK_N, num_warps,
 * num_stages), the CAUSAL, WINDOW and VARLEN specializations the problem
 * asks for, and launches cdiv(n_q, BLOCK_M) programs along axis 0, the
 * heads along axis 1 and the batch along axis 2.
 * The source is the stdlib file embedded at build time (stdlib_embed.h),
 * compiled with rt_compile_kept: once per device and (file, BLOCK, ALIGN,
 * num_warps), then kept loaded until trt_close, so a repeated call costs a
 * list walk, not a compile nor a module load. A whole file compiles at
 * once: its f32, f16 and bf16 kernels, forward and backward, share one
 * module per BLOCK.
 *
 * Every check happens before the first launch, so an error leaves the
 * outputs untouched. Messages start with the entry point's name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"
#include "runtime/stdlib_embed.h"
#include "runtime/stdlib_internal.h"
#include "tilec_stdlib.h"

enum {
    ELEMENTWISE_BLOCK = 1024, /* the bench's (and Triton's tutorials') block for elementwise kernels */
    COLSUM_BLOCK = 32,        /* the column-sum kernels' default: many small programs, GROUPS rows a trip */
    CPU_GROUPS = 4,           /* the interpreter runs programs one by one: few groups, but more than one,
                                 so that the CPU runs the same partial sums as the GPU */
    GPU_GROUPS_PER_SM = 2,    /* rows_per_program = cdiv(rows, 2 * SMs) ... */
    GPU_GROUPS_PER_SM_NARROW = 4, /* ... or 4 * SMs for rows of NARROW_COLS or fewer: short rows leave a
                                     program mostly waiting on latency, and more programs hide it (1024
                                     f16 columns: dx 38% faster at 8 rows a program than at 16, in the
                                     2026-11-22 sweep, bench/RESULTS.md) */
    NARROW_COLS = 1024,
    FALLBACK_SMS = 132,       /* when the driver does not say (an H100 SXM's count) */
    WORKSPACE_ALIGN = 64,     /* layernorm's db partials start this aligned after dw's */
    PTR_ALIGN = 16,           /* what the compiler assumes of pointers (trt_launch checks it too) */
    MAX_NUM_WARPS = 32,       /* the compiler's limit: 1024 threads a program */
    MAX_KERNEL_NAME = 64,
    MAX_DIMS = 4,             /* of a tensor: attention's batch, head, row and column */
    MAX_ALIGN = 8             /* the row kernels' largest ALIGN: 8 elements, a 16-byte access of f16 or two of
                                 f32; 16 gives the same code (f32, f16, bf16 rows), and each value is a module */
};

_Static_assert((long long)TLS_MAX_ELEMENTS + ELEMENTWISE_BLOCK - 1 <= INT32_MAX,
               "the elementwise kernels' i32 offsets must not wrap in the last program");

typedef struct storage {
    const char *suffix; /* of the kernel names: softmax_f16 */
    size_t size;
} storage;

static const storage storages[] = {[TLS_F32] = {"f32", 4}, [TLS_F16] = {"f16", 2}, [TLS_BF16] = {"bf16", 2}};

/* One entry point's call: what every helper needs to check, compile and
 * launch, and to name the call in a message. */
typedef struct call {
    trt_device *d;
    const char *op; /* "tls_softmax" */
    const storage *st;
    const tls_options *o;
} call;

static trt_status begin(call *c, trt_device *d, const char *op, tls_dtype dt, const tls_options *o) {
    c->d = d, c->op = op, c->o = o, c->st = NULL;
    if (!d) return TRT_ERR_INVALID_ARGUMENT;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "%s: the device was closed", op);
    if ((unsigned)dt >= sizeof storages / sizeof storages[0])
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "%s: unknown dtype %d (TLS_F32, TLS_F16 or TLS_BF16)", op, (int)dt);
    c->st = &storages[dt];
    if (o && o->precision != TLS_TF32 && o->precision != TLS_IEEE)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "%s: unknown precision %d (TLS_TF32 or TLS_IEEE)", op,
                       (int)o->precision);
    int w = o ? o->num_warps : 0;
    if (w < 0 || w > MAX_NUM_WARPS || (w & (w - 1)))
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "%s: num_warps %d must be 0 (the heuristic) or a power of two from 1 to %d",
                       op, w, MAX_NUM_WARPS);
    return TRT_OK;
}

static trt_status check_rows(const call *c, int64_t rows, int64_t cols, int64_t max_cols) {
    if (rows < 1 || rows > TLS_MAX_ROWS)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: rows is %lld; it must be from 1 to %lld", c->op,
                       (long long)rows, (long long)TLS_MAX_ROWS);
    if (cols < 1 || cols > max_cols)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: cols is %lld; it must be from 1 to %lld (a row lives in one tile)",
                       c->op, (long long)cols, (long long)max_cols);
    return TRT_OK;
}

static trt_status check_stride(const call *c, const char *name, int64_t stride, int64_t cols) {
    if (stride < cols)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s is %lld, less than cols (%lld): rows would overlap", c->op,
                       name, (long long)stride, (long long)cols);
    return TRT_OK;
}

static trt_status check_elements(const call *c, int64_t n) {
    if (n < 1 || n > TLS_MAX_ELEMENTS)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: n is %lld; it must be from 1 to %lld", c->op, (long long)n,
                       (long long)TLS_MAX_ELEMENTS);
    return TRT_OK;
}

/* That m is a live buffer of the device, 16-byte aligned at its offset,
 * holding `rows` rows of `cols` elements of `esize` bytes, `stride`
 * elements apart (rows, cols >= 1 and stride >= cols, checked before). */
static trt_status check_mem(const call *c, const char *name, tls_mem m, int64_t rows, int64_t cols, int64_t stride,
                            size_t esize) {
    size_t have;
    trt_status st = rt_buffer_size(c->d, m.buffer, &have);
    if (st != TRT_OK) return rt_fail(c->d, st, "%s: %s: %s", c->op, name, c->d->err);
    if (m.offset % PTR_ALIGN)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: offset %zu is not a multiple of %d bytes", c->op, name,
                       m.offset, PTR_ALIGN);
    /* (rows - 1) * stride + cols elements, without overflowing */
    uint64_t r = (uint64_t)(rows - 1), s = (uint64_t)stride, limit = (uint64_t)INT64_MAX / esize;
    if (r && s > (limit - (uint64_t)cols) / r)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: %lld rows %lld elements apart do not fit in memory", c->op,
                       name, (long long)rows, (long long)stride);
    uint64_t need = (r * s + (uint64_t)cols) * esize;
    if (m.offset > have || need > have - m.offset)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT,
                       "%s: %s: the buffer holds %zu bytes; %lld rows of %lld elements %lld apart need %llu from offset %zu",
                       c->op, name, have, (long long)rows, (long long)cols, (long long)stride, (unsigned long long)need,
                       m.offset);
    return TRT_OK;
}

static trt_status check_vector(const call *c, const char *name, tls_mem m, int64_t n, size_t esize) {
    return check_mem(c, name, m, 1, n, n, esize);
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int next_pow2(int64_t n) {
    int b = 1;
    while (b < n) b *= 2;
    return b;
}

static const rt_embedded_file *embedded(const char *name) {
    for (size_t i = 0; i < rt_stdlib_nfiles; i++)
        if (!strcmp(rt_stdlib_files[i].name, name)) return &rt_stdlib_files[i];
    return NULL;
}

/* The kernel `name` of the embedded `file` with the const parameters
 * `defs`, compiled (once) with num_warps and num_stages (0: the
 * compiler's); `spec` says which specialization in a message. */
static trt_status kernel_with(const call *c, const char *file, const char *name, const tilec_define *defs,
                              size_t ndefs, int num_warps, int num_stages, const char *spec, trt_kernel **k) {
    const rt_embedded_file *f = embedded(file);
    if (!f) return rt_fail(c->d, TRT_ERR_NOT_FOUND, "%s: %s is not in this build of tilec", c->op, file);
    trt_compile_options co = {
        .arch = NULL, .num_warps = num_warps, .defines = defs, .ndefines = ndefs, .num_stages = num_stages};
    trt_module *m;
    trt_status st = rt_compile_kept(c->d, f->name, f->text, f->len, &co, &m);
    if (st != TRT_OK) return rt_fail(c->d, st, "%s: compiling %s (%s): %s", c->op, file, spec, c->d->err);
    return trt_get_kernel(m, name, k);
}

/* The kernel `base`_<dtype> of the embedded `file` with BLOCK = block and,
 * unless align is 0, ALIGN = align, compiled (once) with num_warps. */
static trt_status kernel_for(const call *c, const char *file, const char *base, int block, int align, int num_warps,
                             trt_kernel **k) {
    tilec_define defs[2] = {{"BLOCK", block}, {"ALIGN", align}};
    char name[MAX_KERNEL_NAME], spec[48];
    snprintf(name, sizeof name, "%s_%s", base, c->st->suffix);
    if (align) snprintf(spec, sizeof spec, "BLOCK %d, ALIGN %d", block, align);
    else snprintf(spec, sizeof spec, "BLOCK %d", block);
    return kernel_with(c, file, name, defs, align ? 2 : 1, num_warps, 0, spec, k);
}

/* The ALIGN of the row kernels: the largest power of two up to MAX_ALIGN
 * that divides the row length and the strides (each a multiple_of promise
 * in the kernel; stdlib/softmax.tile). */
static int row_align(int64_t cols, int64_t stride_a, int64_t stride_b) {
    int a = MAX_ALIGN;
    while (a > 1 && ((cols | stride_a | stride_b) & (a - 1))) a /= 2;
    return a;
}

static int main_warps(const call *c) { return c->o ? c->o->num_warps : 0; }

static trt_status launch_grid(const call *c, trt_kernel *k, int64_t grid_x, int64_t grid_y, int64_t grid_z,
                              const trt_arg *args, size_t nargs) {
    trt_stream *s = c->o ? c->o->stream : NULL;
    trt_status st = s ? trt_launch_on(s, k, (uint32_t)grid_x, (uint32_t)grid_y, (uint32_t)grid_z, args, nargs)
                      : trt_launch(k, (uint32_t)grid_x, (uint32_t)grid_y, (uint32_t)grid_z, args, nargs);
    return st == TRT_OK ? st : rt_fail(c->d, st, "%s: %s", c->op, c->d->err);
}

static trt_status launch(const call *c, trt_kernel *k, int64_t grid, const trt_arg *args, size_t nargs) {
    return launch_grid(c, k, grid, 1, 1, args, nargs);
}

static trt_arg arg_mem(tls_mem m) { return trt_buf_at(m.buffer, m.offset); }

/* ---- softmax ------------------------------------------------------------------ */

trt_status tls_softmax(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, int64_t rows, int64_t cols,
                       int64_t x_stride, int64_t y_stride, const tls_options *opt) {
    call c;
    trt_status st;
    trt_kernel *k;
    if ((st = begin(&c, dev, "tls_softmax", dt, opt)) || (st = check_rows(&c, rows, cols, TLS_SOFTMAX_MAX_COLS)) ||
        (st = check_stride(&c, "x_stride", x_stride, cols)) || (st = check_stride(&c, "y_stride", y_stride, cols)) ||
        (st = check_mem(&c, "x", x, rows, cols, x_stride, c.st->size)) ||
        (st = check_mem(&c, "y", y, rows, cols, y_stride, c.st->size)) ||
        (st = kernel_for(&c, "stdlib/softmax.tile", "softmax", next_pow2(cols), row_align(cols, x_stride, y_stride),
                            main_warps(&c), &k)))
        return st;
    trt_arg a[] = {arg_mem(x), arg_mem(y), trt_int(cols), trt_int(x_stride), trt_int(y_stride)};
    return launch(&c, k, rows, a, sizeof a / sizeof a[0]);
}

trt_status tls_softmax_bwd(trt_device *dev, tls_dtype dt, tls_mem y, tls_mem dy, tls_mem dx, int64_t rows,
                           int64_t cols, int64_t stride, const tls_options *opt) {
    call c;
    trt_status st;
    trt_kernel *k;
    if ((st = begin(&c, dev, "tls_softmax_bwd", dt, opt)) || (st = check_rows(&c, rows, cols, TLS_SOFTMAX_MAX_COLS)) ||
        (st = check_stride(&c, "stride", stride, cols)) || (st = check_mem(&c, "y", y, rows, cols, stride, c.st->size)) ||
        (st = check_mem(&c, "dy", dy, rows, cols, stride, c.st->size)) ||
        (st = check_mem(&c, "dx", dx, rows, cols, stride, c.st->size)) ||
        (st = kernel_for(&c, "stdlib/softmax.tile", "softmax_bwd", next_pow2(cols), row_align(cols, stride, stride),
                            main_warps(&c), &k)))
        return st;
    trt_arg a[] = {arg_mem(y), arg_mem(dy), arg_mem(dx), trt_int(cols), trt_int(stride)};
    return launch(&c, k, rows, a, sizeof a / sizeof a[0]);
}

/* ---- the norms ---------------------------------------------------------------- */

static trt_status check_eps(const call *c, float eps) {
    if (!(eps >= 0) || isinf(eps))
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: eps is %g; it must be finite and >= 0", c->op, (double)eps);
    return TRT_OK;
}

/* How the backward passes split the rows: `groups` programs of `per` rows
 * (the last one fewer), and the bytes of one f32 partial-sum matrix
 * (groups x cols), rounded up so that a second one can follow it. */
typedef struct row_groups {
    int64_t per, groups;
    size_t part_bytes;
} row_groups;

/* The multiprocessors of the call's GPU (FALLBACK_SMS where the driver
 * would not say); 0 on the CPU and the emulator. */
static int gpu_sms(const call *c) {
    if (!c->d->ops->sm_count) return 0; /* not a GPU */
    int sms = c->d->ops->sm_count(c->d);
    return sms > 0 ? sms : FALLBACK_SMS;
}

static trt_status plan_groups(const call *c, int64_t rows, int64_t cols, row_groups *g) {
    int per_sm = cols <= NARROW_COLS ? GPU_GROUPS_PER_SM_NARROW : GPU_GROUPS_PER_SM;
    int64_t target = c->d->ops->sm_count ? per_sm * (int64_t)gpu_sms(c) : CPU_GROUPS;
    g->per = cdiv(rows, target);
    g->groups = cdiv(rows, g->per);
    /* the kernels index rows and partial sums in i32 */
    if (g->groups * g->per > INT32_MAX || g->groups * cols > INT32_MAX)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %lld rows of %lld are too many for the backward kernels",
                       c->op, (long long)rows, (long long)cols);
    uint64_t bytes = (uint64_t)g->groups * (uint64_t)cols * 4;
    g->part_bytes = (size_t)((bytes + WORKSPACE_ALIGN - 1) / WORKSPACE_ALIGN * WORKSPACE_ALIGN);
    return TRT_OK;
}

/* The workspace query of layernorm (two partial sums) or rmsnorm (one). */
static trt_status workspace(trt_device *dev, const char *op, int64_t rows, int64_t cols, int parts, size_t *bytes) {
    call c;
    trt_status st;
    row_groups g;
    if ((st = begin(&c, dev, op, TLS_F32, NULL))) return st;
    if (!bytes) return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: bytes is NULL", op);
    *bytes = 0;
    if ((st = check_rows(&c, rows, cols, TLS_NORM_MAX_COLS)) || (st = plan_groups(&c, rows, cols, &g))) return st;
    *bytes = (size_t)parts * g.part_bytes;
    return TRT_OK;
}

trt_status tls_layernorm(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, tls_mem w, tls_mem b, tls_mem mean,
                         tls_mem rstd, int64_t rows, int64_t cols, int64_t stride, float eps, const tls_options *opt) {
    call c;
    trt_status st;
    trt_kernel *k;
    if ((st = begin(&c, dev, "tls_layernorm", dt, opt)) || (st = check_rows(&c, rows, cols, TLS_NORM_MAX_COLS)) ||
        (st = check_stride(&c, "stride", stride, cols)) || (st = check_eps(&c, eps)) ||
        (st = check_mem(&c, "x", x, rows, cols, stride, c.st->size)) ||
        (st = check_mem(&c, "y", y, rows, cols, stride, c.st->size)) ||
        (st = check_vector(&c, "w", w, cols, c.st->size)) || (st = check_vector(&c, "b", b, cols, c.st->size)) ||
        (st = check_vector(&c, "mean", mean, rows, 4)) || (st = check_vector(&c, "rstd", rstd, rows, 4)) ||
        (st = kernel_for(&c, "stdlib/layernorm.tile", "layernorm", next_pow2(cols), row_align(cols, stride, stride),
                            main_warps(&c), &k)))
        return st;
    trt_arg a[] = {arg_mem(x),    arg_mem(y),       arg_mem(w),     arg_mem(b),     arg_mem(mean),
                   arg_mem(rstd), trt_int(cols), trt_int(stride), trt_float(eps)};
    return launch(&c, k, rows, a, sizeof a / sizeof a[0]);
}

trt_status tls_layernorm_bwd_workspace(trt_device *dev, int64_t rows, int64_t cols, size_t *bytes) {
    return workspace(dev, "tls_layernorm_bwd_workspace", rows, cols, 2, bytes);
}

trt_status tls_layernorm_bwd(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem dy, tls_mem dx, tls_mem w, tls_mem mean,
                             tls_mem rstd, tls_mem dw, tls_mem db, int64_t rows, int64_t cols, int64_t stride,
                             tls_mem ws, const tls_options *opt) {
    call c;
    trt_status st;
    row_groups g;
    trt_kernel *kb, *ks;
    if ((st = begin(&c, dev, "tls_layernorm_bwd", dt, opt)) || (st = check_rows(&c, rows, cols, TLS_NORM_MAX_COLS)) ||
        (st = check_stride(&c, "stride", stride, cols)) || (st = plan_groups(&c, rows, cols, &g)) ||
        (st = check_mem(&c, "x", x, rows, cols, stride, c.st->size)) ||
        (st = check_mem(&c, "dy", dy, rows, cols, stride, c.st->size)) ||
        (st = check_mem(&c, "dx", dx, rows, cols, stride, c.st->size)) ||
        (st = check_vector(&c, "w", w, cols, c.st->size)) || (st = check_vector(&c, "mean", mean, rows, 4)) ||
        (st = check_vector(&c, "rstd", rstd, rows, 4)) || (st = check_vector(&c, "dw", dw, cols, c.st->size)) ||
        (st = check_vector(&c, "db", db, cols, c.st->size)) ||
        (st = check_vector(&c, "workspace", ws, (int64_t)(2 * g.part_bytes), 1)) ||
        (st = kernel_for(&c, "stdlib/layernorm.tile", "layernorm_bwd", next_pow2(cols), row_align(cols, stride, stride),
                            main_warps(&c), &kb)) ||
        (st = kernel_for(&c, "stdlib/layernorm.tile", "layernorm_dwdb", COLSUM_BLOCK, row_align(cols, cols, cols), 0, &ks)))
        return st;
    tls_mem dw_part = ws, db_part = tls_mem_at(ws.buffer, ws.offset + g.part_bytes);
    trt_arg ab[] = {arg_mem(x),       arg_mem(dy),      arg_mem(dx),   arg_mem(w),    arg_mem(mean),   arg_mem(rstd),
                    arg_mem(dw_part), arg_mem(db_part), trt_int(rows), trt_int(cols), trt_int(stride), trt_int(g.per)};
    trt_arg as[] = {arg_mem(dw_part), arg_mem(db_part), arg_mem(dw), arg_mem(db), trt_int(g.groups), trt_int(cols)};
    if ((st = launch(&c, kb, g.groups, ab, sizeof ab / sizeof ab[0]))) return st;
    return launch(&c, ks, cdiv(cols, COLSUM_BLOCK), as, sizeof as / sizeof as[0]);
}

trt_status tls_rmsnorm(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, tls_mem w, tls_mem rstd, int64_t rows,
                       int64_t cols, int64_t stride, float eps, const tls_options *opt) {
    call c;
    trt_status st;
    trt_kernel *k;
    if ((st = begin(&c, dev, "tls_rmsnorm", dt, opt)) || (st = check_rows(&c, rows, cols, TLS_NORM_MAX_COLS)) ||
        (st = check_stride(&c, "stride", stride, cols)) || (st = check_eps(&c, eps)) ||
        (st = check_mem(&c, "x", x, rows, cols, stride, c.st->size)) ||
        (st = check_mem(&c, "y", y, rows, cols, stride, c.st->size)) ||
        (st = check_vector(&c, "w", w, cols, c.st->size)) || (st = check_vector(&c, "rstd", rstd, rows, 4)) ||
        (st = kernel_for(&c, "stdlib/rmsnorm.tile", "rmsnorm", next_pow2(cols), row_align(cols, stride, stride),
                            main_warps(&c), &k)))
        return st;
    trt_arg a[] = {arg_mem(x),    arg_mem(y),      arg_mem(w),    arg_mem(rstd),
                   trt_int(cols), trt_int(stride), trt_float(eps)};
    return launch(&c, k, rows, a, sizeof a / sizeof a[0]);
}

trt_status tls_rmsnorm_bwd_workspace(trt_device *dev, int64_t rows, int64_t cols, size_t *bytes) {
    return workspace(dev, "tls_rmsnorm_bwd_workspace", rows, cols, 1, bytes);
}

trt_status tls_rmsnorm_bwd(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem dy, tls_mem dx, tls_mem w, tls_mem rstd,
                           tls_mem dw, int64_t rows, int64_t cols, int64_t stride, tls_mem ws,
                           const tls_options *opt) {
    call c;
    trt_status st;
    row_groups g;
    trt_kernel *kb, *ks;
    if ((st = begin(&c, dev, "tls_rmsnorm_bwd", dt, opt)) || (st = check_rows(&c, rows, cols, TLS_NORM_MAX_COLS)) ||
        (st = check_stride(&c, "stride", stride, cols)) || (st = plan_groups(&c, rows, cols, &g)) ||
        (st = check_mem(&c, "x", x, rows, cols, stride, c.st->size)) ||
        (st = check_mem(&c, "dy", dy, rows, cols, stride, c.st->size)) ||
        (st = check_mem(&c, "dx", dx, rows, cols, stride, c.st->size)) ||
        (st = check_vector(&c, "w", w, cols, c.st->size)) || (st = check_vector(&c, "rstd", rstd, rows, 4)) ||
        (st = check_vector(&c, "dw", dw, cols, c.st->size)) ||
        (st = check_vector(&c, "workspace", ws, (int64_t)g.part_bytes, 1)) ||
        (st = kernel_for(&c, "stdlib/rmsnorm.tile", "rmsnorm_bwd", next_pow2(cols), row_align(cols, stride, stride),
                            main_warps(&c), &kb)) ||
        (st = kernel_for(&c, "stdlib/rmsnorm.tile", "rmsnorm_dw", COLSUM_BLOCK, row_align(cols, cols, cols), 0, &ks)))
        return st;
    trt_arg ab[] = {arg_mem(x),    arg_mem(dy),   arg_mem(dx),     arg_mem(w),     arg_mem(rstd),
                    arg_mem(ws),   trt_int(rows), trt_int(cols),   trt_int(stride), trt_int(g.per)};
    trt_arg as[] = {arg_mem(ws), arg_mem(dw), trt_int(g.groups), trt_int(cols)};
    if ((st = launch(&c, kb, g.groups, ab, sizeof ab / sizeof ab[0]))) return st;
    return launch(&c, ks, cdiv(cols, COLSUM_BLOCK), as, sizeof as / sizeof as[0]);
}

/* ---- elementwise ---------------------------------------------------------------- */

/* An elementwise kernel of `file` over n elements of the given tensors,
 * then `extra` scalar arguments (after n). */
static trt_status elementwise(const call *c, const char *file, const char *base, const tls_mem *mems,
                              const char *const *names, size_t nmems, int64_t n, const trt_arg *extra, size_t nextra) {
    trt_status st;
    trt_kernel *k;
    if ((st = check_elements(c, n))) return st;
    for (size_t i = 0; i < nmems; i++)
        if ((st = check_vector(c, names[i], mems[i], n, c->st->size))) return st;
    if ((st = kernel_for(c, file, base, ELEMENTWISE_BLOCK, 0, main_warps(c), &k))) return st;
    trt_arg a[6];
    size_t na = 0;
    for (size_t i = 0; i < nmems; i++) a[na++] = arg_mem(mems[i]);
    a[na++] = trt_int(n);
    for (size_t i = 0; i < nextra; i++) a[na++] = extra[i];
    return launch(c, k, cdiv(n, ELEMENTWISE_BLOCK), a, na);
}

trt_status tls_gelu(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, int64_t n, const tls_options *opt) {
    call c;
    trt_status st = begin(&c, dev, "tls_gelu", dt, opt);
    const tls_mem m[] = {x, y};
    static const char *const names[] = {"x", "y"};
    return st ? st : elementwise(&c, "stdlib/gelu.tile", "gelu", m, names, 2, n, NULL, 0);
}

trt_status tls_gelu_bwd(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem dy, tls_mem dx, int64_t n,
                        const tls_options *opt) {
    call c;
    trt_status st = begin(&c, dev, "tls_gelu_bwd", dt, opt);
    const tls_mem m[] = {x, dy, dx};
    static const char *const names[] = {"x", "dy", "dx"};
    return st ? st : elementwise(&c, "stdlib/gelu.tile", "gelu_bwd", m, names, 3, n, NULL, 0);
}

static trt_status check_p(const call *c, float p) {
    if (!(p >= 0 && p <= 1))
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: p is %g; it must be from 0 to 1", c->op, (double)p);
    return TRT_OK;
}

trt_status tls_dropout(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, int64_t n, float p, int64_t seed,
                       const tls_options *opt) {
    call c;
    trt_status st;
    if ((st = begin(&c, dev, "tls_dropout", dt, opt)) || (st = check_p(&c, p))) return st;
    const tls_mem m[] = {x, y};
    static const char *const names[] = {"x", "y"};
    const trt_arg extra[] = {trt_float(p), trt_int(seed)};
    return elementwise(&c, "stdlib/dropout.tile", "dropout", m, names, 2, n, extra, 2);
}

trt_status tls_dropout_bwd(trt_device *dev, tls_dtype dt, tls_mem dy, tls_mem dx, int64_t n, float p, int64_t seed,
                           const tls_options *opt) {
    call c;
    trt_status st;
    if ((st = begin(&c, dev, "tls_dropout_bwd", dt, opt)) || (st = check_p(&c, p))) return st;
    const tls_mem m[] = {dy, dx};
    static const char *const names[] = {"dy", "dx"};
    const trt_arg extra[] = {trt_float(p), trt_int(seed)};
    return elementwise(&c, "stdlib/dropout.tile", "dropout_bwd", m, names, 2, n, extra, 2);
}

/* ---- matrix products -------------------------------------------------------------- */

/* The tile configurations of stdlib/matmul.tile, largest first, taken
 * from Triton's matmul tutorial (its autotuner's list for f16 on recent
 * GPUs); not yet measured here: GPU code for dot is new.
 * rt_matmul_config_for takes the first row whose minimums the shape
 * (M, N) meets and whose tiles, on a GPU, fill its multiprocessors (at
 * least one a multiprocessor): a product of fewer tiles than SMs leaves
 * SMs idle, and one tile takes about as long as it is large, so smaller
 * tiles finish sooner there (1024 x 1024: 64 tiles of 128 x 128 on 132
 * SMs, 256 of 64 x 64). No row fills them: the last, smallest. */
static const rt_matmul_config matmul_configs[] = {
    /* min_m, min_n, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, wide_warps */
    {128, 128, 128, 128, 32, 8, 4, 4, 8}, /* large: 128 f32 accumulators a thread (64 on 8 warps) */
    {64, 64, 64, 64, 32, 8, 4, 4, 4},
    {1, 1, 32, 32, 32, 8, 2, 4, 2}, /* skinny or small: less padding past the edges */
};

/* matmul_f32_ieee's (dot_ieee on FMAs, each thread holding whole rows of a
 * and columns of b over BLOCK_K): the same tiles as far as they do not
 * spill (tests/stdlib-no-spills.sh), with BLOCK_K 16 on the largest and
 * smallest and 8 warps on the middle one, where 32 and 4 spilled (issue
 * 19). Triton's FMA path keeps a and b in registers the same way. */
static const rt_matmul_config matmul_ieee_configs[] = {
    /* min_m, min_n, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, wide_warps */
    {128, 128, 128, 128, 16, 8, 8, 4, 8},
    {64, 64, 64, 64, 32, 8, 8, 4, 8},
    {1, 1, 32, 32, 16, 8, 2, 4, 2},
};

const rt_matmul_config *rt_matmul_config_for(int64_t M, int64_t N, int64_t batch, int sms, bool fma) {
    const rt_matmul_config *table = fma ? matmul_ieee_configs : matmul_configs;
    size_t n = fma ? sizeof matmul_ieee_configs / sizeof matmul_ieee_configs[0]
                   : sizeof matmul_configs / sizeof matmul_configs[0];
    for (size_t i = 0; i < n - 1; i++) {
        const rt_matmul_config *r = &table[i];
        if (M < r->min_m || N < r->min_n) continue;
        /* in double: M and N up to TLS_MATMUL_MAX_DIM, batch too, need not fit a product of int64 */
        double tiles = (double)cdiv(M, r->block_m) * (double)cdiv(N, r->block_n) * (double)batch;
        if (sms <= 0 || tiles >= sms) return r;
    }
    return &table[n - 1];
}

/* One matrix operand: its memory, its name in messages, and its three
 * dims (batch, rows, columns) with their strides in elements. */
typedef struct matrix {
    const char *name;
    tls_mem mem;
    int64_t n[3], s[3];
} matrix;

static trt_status check_dim(const call *c, const char *name, int64_t v, int64_t max) {
    if (v < 1 || v > max)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s is %lld; it must be from 1 to %lld", c->op, name,
                       (long long)v, (long long)max);
    return TRT_OK;
}

/* That x's strides are >= 0 and its buffer, live and 16-byte aligned at
 * its offset, holds the furthest element (sizes >= 1, checked before). */
static trt_status check_matrix(const call *c, const matrix *x) {
    static const char *const dims[3] = {"b", "row", "column"};
    for (int i = 0; i < 3; i++)
        if (x->s[i] < 0)
            return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: the %s stride is %lld; strides must be >= 0",
                           c->op, x->name, i ? dims[i] : "batch", (long long)x->s[i]);
    size_t have;
    trt_status st = rt_buffer_size(c->d, x->mem.buffer, &have);
    if (st != TRT_OK) return rt_fail(c->d, st, "%s: %s: %s", c->op, x->name, c->d->err);
    if (x->mem.offset % PTR_ALIGN)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: offset %zu is not a multiple of %d bytes", c->op,
                       x->name, x->mem.offset, PTR_ALIGN);
    /* the furthest element, sum (n - 1) * s, and one more, without overflowing */
    uint64_t limit = (uint64_t)INT64_MAX / c->st->size, last = 0;
    for (int i = 0; i < 3; i++) {
        uint64_t n = (uint64_t)(x->n[i] - 1), s = (uint64_t)x->s[i];
        if (n && s > (limit - 1 - last) / n)
            return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: its strides reach past what memory can hold",
                           c->op, x->name);
        last += n * s;
    }
    uint64_t need = (last + 1) * c->st->size;
    if (x->mem.offset > have || need > have - x->mem.offset)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT,
                       "%s: %s: the buffer holds %zu bytes; %lld x %lld x %lld elements with strides %lld, %lld, %lld "
                       "need %llu from offset %zu",
                       c->op, x->name, have, (long long)x->n[0], (long long)x->n[1], (long long)x->n[2],
                       (long long)x->s[0], (long long)x->s[1], (long long)x->s[2], (unsigned long long)need,
                       x->mem.offset);
    return TRT_OK;
}

/* Whether two elements of a tensor of ndims dims (sizes n, strides s in
 * elements, checked >= 0 before) share an address: taking its dims
 * longer than 1 by increasing stride, each stride must pass the last
 * element the smaller ones reach (the usual test for a non-overlapping
 * view; sizes and strides checked before, so nothing overflows). */
static bool dims_overlap(int ndims, const int64_t *n, const int64_t *s) {
    int order[MAX_DIMS], k = 0;
    for (int i = 0; i < ndims; i++)
        if (n[i] > 1) order[k++] = i;
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && s[order[j]] < s[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    int64_t reach = 0; /* the furthest element of the dims so far */
    for (int i = 0; i < k; i++) {
        if (s[order[i]] <= reach || s[order[i]] == 0) return true;
        reach += (n[order[i]] - 1) * s[order[i]];
    }
    return false;
}

/* That no two elements of the output share an address. */
static trt_status check_apart(const call *c, const matrix *x) {
    if (dims_overlap(3, x->n, x->s))
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT,
                       "%s: %s: strides %lld, %lld, %lld (batch, row, column) over %lld x %lld x %lld put two "
                       "of its elements at one address",
                       c->op, x->name, (long long)x->s[0], (long long)x->s[1], (long long)x->s[2],
                       (long long)x->n[0], (long long)x->n[1], (long long)x->n[2]);
    return TRT_OK;
}

/* A stride the kernel may take as 1: it is, or its dim has one element
 * (the elements it would reach are masked off); a stride it may take as
 * a multiple of vec elements (0 for a dim of one element). */
static bool unit_stride(int64_t s, int64_t n) { return s == 1 || n == 1; }
static bool vec_stride(int64_t s, int64_t n, int64_t vec) { return n == 1 || s % vec == 0; }

/* stdlib/matmul.tile's layout of an operand (A or B; C's is 1 or 0 as
 * the first case): 1 when its rows are contiguous, 2 when its columns
 * are, else 0 (the header of matmul.tile), with the other strides
 * multiples of vec elements. */
static int operand_layout(const matrix *x, int64_t vec) {
    if (!vec_stride(x->s[0], x->n[0], vec)) return 0;
    if (unit_stride(x->s[2], x->n[2]) && vec_stride(x->s[1], x->n[1], vec)) return 1;
    if (unit_stride(x->s[1], x->n[1]) && vec_stride(x->s[2], x->n[2], vec)) return 2;
    return 0;
}

/* The epilogue of a product: a bias per column (bias.mem.buffer.handle 0:
 * none) and an activation. */
typedef struct epilogue {
    matrix bias; /* 1 x 1 x N, contiguous */
    tls_activation act;
} epilogue;

static trt_status matmul(const call *c, matrix a, matrix b, matrix x, const epilogue *epi) {
    trt_status st;
    int64_t batch = a.n[0], M = a.n[1], K = a.n[2], N = b.n[2];
    if ((st = check_dim(c, "batch", batch, TLS_MATMUL_MAX_BATCH)) || (st = check_dim(c, "M", M, TLS_MATMUL_MAX_DIM)) ||
        (st = check_dim(c, "N", N, TLS_MATMUL_MAX_DIM)) || (st = check_dim(c, "K", K, TLS_MATMUL_MAX_DIM)))
        return st;
    bool ieee = c->o && c->o->precision == TLS_IEEE;
    if (ieee && c->st != &storages[TLS_F32])
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: precision TLS_IEEE is for f32 inputs, not %s", c->op,
                       c->st->suffix);
    const rt_matmul_config *cfg = rt_matmul_config_for(M, N, batch, gpu_sms(c), ieee);
    int64_t tiles = cdiv(M, cfg->block_m) * cdiv(N, cfg->block_n);
    if (tiles > INT32_MAX)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %lld x %lld needs %lld tiles of %d x %d; at most %d fit a grid",
                       c->op, (long long)M, (long long)N, (long long)tiles, cfg->block_m, cfg->block_n, INT32_MAX);
    if ((st = check_matrix(c, &a)) || (st = check_matrix(c, &b)) || (st = check_matrix(c, &x)) ||
        (st = check_apart(c, &x)))
        return st;
    bool has_bias = epi && epi->bias.mem.buffer.handle;
    if (has_bias && (st = check_matrix(c, &epi->bias))) return st;
    int act = epi ? (int)epi->act : TLS_ACT_NONE;
    if (act < TLS_ACT_NONE || act > TLS_ACT_GELU_TANH)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: activation %d is not a tls_activation", c->op, act);
    int64_t vec = PTR_ALIGN / (int64_t)c->st->size;
    int c_layout = vec_stride(x.s[0], x.n[0], vec) && unit_stride(x.s[2], x.n[2]) && vec_stride(x.s[1], x.n[1], vec);
    bool even = M % cfg->block_m == 0 && N % cfg->block_n == 0 && K % cfg->block_k == 0;
    tilec_define defs[] = {{"BLOCK_M", cfg->block_m},        {"BLOCK_N", cfg->block_n},
                           {"BLOCK_K", cfg->block_k},        {"GROUP_M", cfg->group_m},
                           {"A_LAYOUT", operand_layout(&a, vec)}, {"B_LAYOUT", operand_layout(&b, vec)},
                           {"C_LAYOUT", c_layout},           {"EVEN", even},
                           {"HAS_BIAS", has_bias},           {"ACTIVATION", act}};
    char name[MAX_KERNEL_NAME], spec[128];
    snprintf(name, sizeof name, "matmul_%s%s", c->st->suffix, ieee ? "_ieee" : "");
    snprintf(spec, sizeof spec, "BLOCK_M %d, BLOCK_N %d, BLOCK_K %d, layouts %lld %lld %lld%s%s, activation %d",
             cfg->block_m, cfg->block_n, cfg->block_k, (long long)defs[4].value, (long long)defs[5].value,
             (long long)c_layout, even ? ", EVEN" : "", has_bias ? ", bias" : "", act);
    bool wide = c->st == &storages[TLS_F32] || defs[4].value == 0 || defs[5].value == 0;
    int warps = main_warps(c) ? main_warps(c) : wide ? cfg->wide_warps : cfg->num_warps;
    trt_kernel *k;
    if ((st = kernel_with(c, "stdlib/matmul.tile", name, defs, sizeof defs / sizeof defs[0], warps, cfg->num_stages,
                          spec, &k)))
        return st;
    /* a dim of one element: its stride is never multiplied by more than 0
     * for an element that is loaded or stored, so any value does (the
     * layouts above count on 0) */
    for (int i = 0; i < 3; i++) {
        if (a.n[i] == 1) a.s[i] = 0;
        if (b.n[i] == 1) b.s[i] = 0;
        if (x.n[i] == 1) x.s[i] = 0;
    }
    trt_arg args[] = {arg_mem(a.mem),  arg_mem(b.mem),  arg_mem(x.mem),  trt_int(M),       trt_int(N),
                      trt_int(K),      trt_int(a.s[1]), trt_int(a.s[2]), trt_int(b.s[1]),  trt_int(b.s[2]),
                      trt_int(x.s[1]), trt_int(x.s[2]), trt_int(a.s[0]), trt_int(b.s[0]),  trt_int(x.s[0]),
                      arg_mem(has_bias ? epi->bias.mem : x.mem)}; /* without a bias, not read */
    return launch_grid(c, k, tiles, batch, 1, args, sizeof args / sizeof args[0]);
}

trt_status tls_matmul(trt_device *dev, tls_dtype dt, tls_mem a, tls_mem b, tls_mem c, int64_t M, int64_t N, int64_t K,
                      int64_t stride_am, int64_t stride_ak, int64_t stride_bk, int64_t stride_bn, int64_t stride_cm,
                      int64_t stride_cn, const tls_options *opt) {
    call cl;
    trt_status st;
    if ((st = begin(&cl, dev, "tls_matmul", dt, opt))) return st;
    matrix ma = {.name = "a", .mem = a, .n = {1, M, K}, .s = {0, stride_am, stride_ak}},
           mb = {.name = "b", .mem = b, .n = {1, K, N}, .s = {0, stride_bk, stride_bn}},
           mc = {.name = "c", .mem = c, .n = {1, M, N}, .s = {0, stride_cm, stride_cn}};
    return matmul(&cl, ma, mb, mc, NULL);
}

trt_status tls_matmul_epilogue(trt_device *dev, tls_dtype dt, tls_mem a, tls_mem b, tls_mem c, tls_mem bias,
                               tls_activation act, int64_t M, int64_t N, int64_t K, int64_t stride_am,
                               int64_t stride_ak, int64_t stride_bk, int64_t stride_bn, int64_t stride_cm,
                               int64_t stride_cn, const tls_options *opt) {
    call cl;
    trt_status st;
    if ((st = begin(&cl, dev, "tls_matmul_epilogue", dt, opt))) return st;
    matrix ma = {.name = "a", .mem = a, .n = {1, M, K}, .s = {0, stride_am, stride_ak}},
           mb = {.name = "b", .mem = b, .n = {1, K, N}, .s = {0, stride_bk, stride_bn}},
           mc = {.name = "c", .mem = c, .n = {1, M, N}, .s = {0, stride_cm, stride_cn}};
    epilogue epi = {.bias = {.name = "bias", .mem = bias, .n = {1, 1, N}, .s = {0, 0, 1}}, .act = act};
    return matmul(&cl, ma, mb, mc, &epi);
}

trt_status tls_matmul_batched(trt_device *dev, tls_dtype dt, tls_mem a, tls_mem b, tls_mem c, int64_t batch, int64_t M,
                              int64_t N, int64_t K, int64_t stride_ab, int64_t stride_am, int64_t stride_ak,
                              int64_t stride_bb, int64_t stride_bk, int64_t stride_bn, int64_t stride_cb,
                              int64_t stride_cm, int64_t stride_cn, const tls_options *opt) {
    call cl;
    trt_status st;
    if ((st = begin(&cl, dev, "tls_matmul_batched", dt, opt))) return st;
    matrix ma = {.name = "a", .mem = a, .n = {batch, M, K}, .s = {stride_ab, stride_am, stride_ak}},
           mb = {.name = "b", .mem = b, .n = {batch, K, N}, .s = {stride_bb, stride_bk, stride_bn}},
           mc = {.name = "c", .mem = c, .n = {batch, M, N}, .s = {stride_cb, stride_cm, stride_cn}};
    return matmul(&cl, ma, mb, mc, NULL);
}

/* ---- flash attention ---------------------------------------------------------------- */

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
 * and prints its figures): at 4 warps the row max and sum of the scores
 * still go through shared memory and the kernel spills from head dim 64
 * on (attention.tile's header), so those rows take 8 warps, which at
 * BLOCK_M 128 also keep p in registers (16 rows a warp; at BLOCK_M 64 it
 * goes through shared memory). num_stages is Triton's; the compiler
 * lowers it where the K and V rings do not fit the arch's shared memory
 * (sm_86 and sm_89: 99 KB; at head dim 128 on sm_90, 6 of the 7). When 4
 * warps stop spilling, FA2's and Triton's tiles are the ones to time. */
static const rt_attention_config attention_configs[] = {
    /* head_dim, min_sm, BLOCK_M, BLOCK_N, num_warps, num_stages */
    {32, 90, 128, 32, 8, 3},  /* Triton's H100 warps and stages */
    {32, 0, 128, 32, 4, 4},   /* FA2 128 x 128 and Triton 128 x 64 at 4 warps spill 13.8 KB and 88 B today */
    {64, 90, 128, 32, 8, 7},  /* Triton's H100 warps and stages; 128 x 64 w8 spills 180 B */
    {64, 0, 128, 32, 8, 4},   /* FA2 128 x 128 w4 and Triton 128 x 64 w4 spill 21 KB and 848 B, 128 x 64 w8 172 B */
    {128, 90, 64, 64, 8, 7},  /* Triton's H100 warps and stages, FA2's (sm_86, causal) tile */
    {128, 0, 64, 32, 8, 3},   /* FA2 128 x 64 w4 (A100) and Triton 128 x 32 w4 spill 17 KB and 10 KB, 128 x 32 w8
                                 72 B; 64 x 64 w8 48 B with CAUSAL, WINDOW and VARLEN */
};

const rt_attention_config *rt_attention_config_for(int64_t head_dim, int sm) {
    for (size_t i = 0; i < sizeof attention_configs / sizeof attention_configs[0]; i++)
        if (attention_configs[i].head_dim == head_dim && sm >= attention_configs[i].min_sm) return &attention_configs[i];
    return NULL;
}

/* The compute capability the call's code is built for: the GPU's, the
 * emulator's code arch, 0 on the CPU ("sm_90a": 90). */
static int device_sm(const call *c) {
    const rt_device_ops *ops = c->d->ops;
    const char *arch = ops->arch ? ops->arch(c->d) : ops->code_arch ? ops->code_arch(c->d) : NULL;
    return arch && !strncmp(arch, "sm_", 3) ? atoi(arch + 3) : 0;
}

static const float ATT_LOG2E = 1.44269504f; /* the kernels scale the scores by scale * log2(e), in f32 */

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
static trt_status check_att_tensor(const call *c, att_tensor *t) {
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
    if (t->mem.offset % PTR_ALIGN)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: offset %zu is not a multiple of %d bytes", c->op,
                       t->name, t->mem.offset, PTR_ALIGN);
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

/* That output o shares no byte with x: their spans, first byte to last,
 * must not meet (a conservative test: two tensors interleaved in one
 * buffer without sharing an element are refused too). */
static trt_status check_disjoint(const call *c, const att_tensor *o, const att_tensor *x) {
    if (o->begin < o->end && x->begin < x->end && o->begin < x->end && x->begin < o->end)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT,
                       "%s: %s and %s overlap in memory (%llu and %llu bytes from offsets %zu and %zu of their "
                       "buffers): an output must not share memory with another tensor of the call",
                       c->op, o->name, x->name, (unsigned long long)(o->end - o->begin),
                       (unsigned long long)(x->end - x->begin), o->mem.offset, x->mem.offset);
    return TRT_OK;
}

static trt_status check_range(const call *c, const char *name, int64_t v, int64_t lo, int64_t hi, const char *why) {
    if (v < lo || v > hi)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s is %lld; it must be from %lld to %lld%s", c->op, name,
                       (long long)v, (long long)lo, (long long)hi, why);
    return TRT_OK;
}

/* The offsets of a varlen batch, read where that costs a memcpy (the CPU
 * and the emulator, whose buffers are host memory and whose launches are
 * done when they return): from >= 0, nondecreasing, each sequence at
 * most `longest` rows (the grid covers no more), the last at most
 * `total`. On the GPU reading them would wait for the work before the
 * call (a hidden sync), so they are not checked there. */
static trt_status check_offsets(const call *c, const char *name, tls_mem cu, int64_t batch, int64_t longest,
                                const char *longest_name, int64_t total, const char *total_name) {
    if (c->d->ops->read != rt_host_read) return TRT_OK;
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
static trt_status check_problem(const call *c, const tls_attention_problem *p, bool varlen) {
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
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: head_dim is %lld; it must be 32, 64 or 128 (pad q, k and "
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
        (st = check_vector(c, "cu_q", p->cu_q, p->batch + 1, 4)) || (st = check_vector(c, "cu_k", p->cu_k, p->batch + 1, 4)) ||
        (st = check_offsets(c, "cu_q", p->cu_q, p->batch, p->n_q, "n_q", p->total_q, "total_q")) ||
        (st = check_offsets(c, "cu_k", p->cu_k, p->batch, p->n_kv, "n_kv", p->total_kv, "total_kv")))
        return st;
    return TRT_OK;
}

/* What a tensor of an attention call holds, which gives its dims: rows
 * of the queries (q, o; the backward's dO, dQ), of the keys (k, v; dK,
 * dV), or one f32 a query row (lse; the backward's row sums). */
typedef enum { ATT_QUERY_ROWS, ATT_KEY_ROWS, ATT_ROW_VALUES } att_kind;

/* A tensor argument of an attention entry point, for begin_attention. */
typedef struct att_arg {
    const char *name;
    tls_attention_tensor t;
    att_kind kind;
    bool output;
} att_arg;

enum { MAX_ATT_TENSORS = 12 }; /* the backward's nine, and room */

/* What every attention entry point checks before it launches anything:
 * the device, dtype (f16 or bf16) and options; the problem
 * (check_problem); each tensor of args against its dims (with varlen, one
 * batch of the packed rows, every stride_batch 0; f32 row values
 * contiguous); that each output keeps its elements apart and shares no
 * byte with another tensor of the call or the varlen offsets. Sets
 * *varlen. */
static trt_status begin_attention(call *c, trt_device *dev, const char *op, tls_dtype dt, const tls_options *opt,
                                  const tls_attention_problem *p, const att_arg *args, size_t n, bool *varlen) {
    trt_status st;
    if ((st = begin(c, dev, op, dt, opt))) return st;
    if (dt == TLS_F32)
        return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: dtype f32: attention takes f16 or bf16 (its products run "
                       "on the tensor cores; convert f32 inputs first)", op);
    if (opt && opt->precision != TLS_TF32)
        return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: precision TLS_IEEE is for f32 matrix products", op);
    if (!p) return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: the problem is NULL", op);
    *varlen = p->cu_q.buffer.handle && p->cu_k.buffer.handle;
    if ((st = check_problem(c, p, *varlen))) return st;
    int64_t nb = *varlen ? 1 : p->batch, rq = *varlen ? p->total_q : p->n_q, rk = *varlen ? p->total_kv : p->n_kv;
    att_tensor t[MAX_ATT_TENSORS + 2];
    for (size_t i = 0; i < n; i++) {
        const att_arg *a = &args[i];
        if (a->kind == ATT_ROW_VALUES && a->t.stride_row != 1)
            return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: %s: stride_row is %lld; it must be 1 (each head's "
                           "values are contiguous)", op, a->name, (long long)a->t.stride_row);
        if (*varlen && a->t.stride_batch)
            return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: %s: stride_batch is %lld; with cu_q and cu_k the "
                           "sequences are packed along the rows and it must be 0", op, a->name,
                           (long long)a->t.stride_batch);
        t[i] = a->kind == ATT_QUERY_ROWS ? att_of(a->name, a->t, c->st->size, nb, p->heads, rq, p->head_dim)
               : a->kind == ATT_KEY_ROWS ? att_of(a->name, a->t, c->st->size, nb, p->kv_heads, rk, p->head_dim)
                                         : att_of(a->name, a->t, 4, nb, p->heads, rq, 1);
        if ((st = check_att_tensor(c, &t[i]))) return st;
    }
    for (size_t i = 0; i < n; i++)
        if (args[i].output && dims_overlap(4, t[i].n, t[i].s))
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

trt_status tls_attention_fwd(trt_device *dev, tls_dtype dt, const tls_attention_problem *p, tls_attention_tensor q,
                             tls_attention_tensor k, tls_attention_tensor v, tls_attention_tensor o,
                             tls_attention_tensor lse, const tls_options *opt) {
    call c;
    trt_status st;
    bool varlen = false;
    const att_arg args[] = {{"q", q, ATT_QUERY_ROWS, false}, {"k", k, ATT_KEY_ROWS, false},
                            {"v", v, ATT_KEY_ROWS, false},   {"o", o, ATT_QUERY_ROWS, true},
                            {"lse", lse, ATT_ROW_VALUES, true}};
    if ((st = begin_attention(&c, dev, "tls_attention_fwd", dt, opt, p, args, sizeof args / sizeof args[0], &varlen)))
        return st;
    const rt_attention_config *cfg = rt_attention_config_for(p->head_dim, device_sm(&c));
    att_mask m = attention_mask(p);
    tilec_define defs[] = {{"BLOCK_M", cfg->block_m}, {"BLOCK_N", cfg->block_n}, {"HEAD_DIM", cfg->head_dim},
                           {"CAUSAL", p->causal},     {"WINDOW", m.window},      {"VARLEN", varlen}};
    char name[MAX_KERNEL_NAME], spec[128];
    snprintf(name, sizeof name, "attention_fwd_%s", c.st->suffix);
    snprintf(spec, sizeof spec, "HEAD_DIM %d, BLOCK_M %d, BLOCK_N %d%s%s%s", cfg->head_dim, cfg->block_m,
             cfg->block_n, p->causal ? ", CAUSAL" : "", m.window ? ", WINDOW" : "", varlen ? ", VARLEN" : "");
    int warps = main_warps(&c) ? main_warps(&c) : cfg->num_warps;
    trt_kernel *kern;
    if ((st = kernel_with(&c, "stdlib/attention.tile", name, defs, sizeof defs / sizeof defs[0], warps,
                          cfg->num_stages, spec, &kern)))
        return st;
    tls_mem cuq = varlen ? p->cu_q : lse.mem, cuk = varlen ? p->cu_k : lse.mem; /* without varlen, not read */
    trt_arg a[] = {arg_mem(q.mem),          arg_mem(k.mem),          arg_mem(v.mem),
                   arg_mem(o.mem),          arg_mem(lse.mem),        arg_mem(cuq),
                   arg_mem(cuk),            trt_int(p->n_q),         trt_int(p->n_kv),
                   trt_int(p->heads / p->kv_heads), trt_int(q.stride_batch), trt_int(q.stride_head),
                   trt_int(q.stride_row),   trt_int(k.stride_batch), trt_int(k.stride_head),
                   trt_int(k.stride_row),   trt_int(v.stride_batch), trt_int(v.stride_head),
                   trt_int(v.stride_row),   trt_int(o.stride_batch), trt_int(o.stride_head),
                   trt_int(o.stride_row),   trt_int(lse.stride_batch), trt_int(lse.stride_head),
                   trt_float(m.scale),      trt_int(m.left),         trt_int(m.right)};
    return launch_grid(&c, kern, cdiv(p->n_q, cfg->block_m), p->heads, p->batch, a, sizeof a / sizeof a[0]);
}

size_t tls_num_modules(const trt_device *dev) {
    size_t n = 0;
    if (dev)
        for (const kept_module *k = dev->kept; k; k = k->next) n++;
    return n;
}
