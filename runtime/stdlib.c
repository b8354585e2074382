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
 * Flash attention is in stdlib_attention.c, on the helpers below that
 * stdlib_internal.h declares (the sl_ ones).
 * The source is the stdlib file embedded at build time (stdlib_embed.h),
 * compiled with rt_compile_kept: once per device and (kernel, BLOCK,
 * ALIGN, num_warps), then kept loaded until trt_close, so a repeated call costs a
 * list walk, not a compile nor a module load. Each kernel compiles alone
 * (trt_compile_options.kernel): a file holds every dtype's kernels,
 * forward and backward (optim.tile 25 of them), and a call launches one
 * or two.
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
#include "runtime/tune.h"
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
    MAX_NUM_WARPS = 32,       /* the compiler's limit: 1024 threads a program */
    MAX_DIMS = 4,             /* of a tensor (sl_dims_overlap): attention's batch, head, row and column */
    MAX_ALIGN = 8             /* the row kernels' largest ALIGN: 8 elements, a 16-byte access of f16 or two of
                                 f32; 16 gives the same code (f32, f16, bf16 rows), and each value is a module */
};

_Static_assert((long long)TLS_MAX_ELEMENTS + ELEMENTWISE_BLOCK - 1 <= INT32_MAX,
               "the elementwise kernels' i32 offsets must not wrap in the last program");

const sl_storage sl_storages[] = {[TLS_F32] = {"f32", 4}, [TLS_F16] = {"f16", 2}, [TLS_BF16] = {"bf16", 2}};

static trt_status begin(sl_call *c, trt_device *d, const char *op, tls_dtype dt, const tls_options *o,
                        bool searchable) {
    c->d = d, c->op = op, c->o = o, c->st = NULL;
    if (!d) return TRT_ERR_INVALID_ARGUMENT;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "%s: the device was closed", op);
    if ((unsigned)dt >= sizeof sl_storages / sizeof sl_storages[0])
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "%s: unknown dtype %d (TLS_F32, TLS_F16 or TLS_BF16)", op, (int)dt);
    c->st = &sl_storages[dt];
    if (o && o->precision != TLS_TF32 && o->precision != TLS_IEEE)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "%s: unknown precision %d (TLS_TF32 or TLS_IEEE)", op,
                       (int)o->precision);
    int w = o ? o->num_warps : 0;
    if (w < 0 || w > MAX_NUM_WARPS || (w & (w - 1)))
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "%s: num_warps %d must be 0 (the heuristic) or a power of two from 1 to %d",
                       op, w, MAX_NUM_WARPS);
    if (o && o->search && !searchable)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "%s: tls_options.search: only the matrix products and "
                       "attention (forward and backward) search their configurations", op);
    return TRT_OK;
}

trt_status sl_begin(sl_call *c, trt_device *d, const char *op, tls_dtype dt, const tls_options *o) {
    return begin(c, d, op, dt, o, false);
}

trt_status sl_begin_searchable(sl_call *c, trt_device *d, const char *op, tls_dtype dt, const tls_options *o) {
    return begin(c, d, op, dt, o, true);
}

bool sl_can_read(const sl_call *c) { return c->d->ops->read == rt_host_read && !c->d->capturing; }

static trt_status check_rows(const sl_call *c, int64_t rows, int64_t cols, int64_t max_cols) {
    if (rows < 1 || rows > TLS_MAX_ROWS)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: rows is %lld; it must be from 1 to %lld", c->op,
                       (long long)rows, (long long)TLS_MAX_ROWS);
    if (cols < 1 || cols > max_cols)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: cols is %lld; it must be from 1 to %lld (a row lives in one tile)",
                       c->op, (long long)cols, (long long)max_cols);
    return TRT_OK;
}

static trt_status check_stride(const sl_call *c, const char *name, int64_t stride, int64_t cols) {
    if (stride < cols)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s is %lld, less than cols (%lld): rows would overlap", c->op,
                       name, (long long)stride, (long long)cols);
    return TRT_OK;
}

static trt_status check_elements(const sl_call *c, int64_t n) {
    if (n < 1 || n > TLS_MAX_ELEMENTS)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: n is %lld; it must be from 1 to %lld", c->op, (long long)n,
                       (long long)TLS_MAX_ELEMENTS);
    return TRT_OK;
}

trt_status sl_check_rows(const sl_call *c, const char *name, tls_mem m, int64_t rows, int64_t cols, int64_t stride,
                         size_t esize, sl_span *sp) {
    size_t have;
    uint64_t base;
    trt_status st = rt_buffer_size(c->d, m.buffer, &have);
    if (st == TRT_OK) st = trt_buffer_ptr(c->d, m.buffer, &base);
    if (st != TRT_OK) return rt_fail(c->d, st, "%s: %s: %s", c->op, name, c->d->err);
    if (m.offset % SL_PTR_ALIGN)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: offset %zu is not a multiple of %d bytes", c->op, name,
                       m.offset, SL_PTR_ALIGN);
    /* (rows - 1) * stride + cols elements, without overflowing */
    uint64_t r = (uint64_t)(rows - 1), s = (uint64_t)stride, limit = (uint64_t)INT64_MAX / esize;
    if (r && s > (limit - (uint64_t)cols) / r)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: %lld rows %lld elements apart do not fit in memory", c->op,
                       name, (long long)rows, (long long)stride);
    uint64_t need = (r * s + (uint64_t)cols) * esize;
    if ((m.offset > have || need > have - m.offset) && rows == 1)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: the buffer holds %zu bytes; %lld values need %llu from "
                       "offset %zu", c->op, name, have, (long long)cols, (unsigned long long)need, m.offset);
    if (m.offset > have || need > have - m.offset)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT,
                       "%s: %s: the buffer holds %zu bytes; %lld rows of %lld elements %lld apart need %llu from offset %zu",
                       c->op, name, have, (long long)rows, (long long)cols, (long long)stride, (unsigned long long)need,
                       m.offset);
    if (sp) *sp = (sl_span){.name = name, .begin = base + m.offset, .end = base + m.offset + need};
    return TRT_OK;
}

trt_status sl_check_apart(const sl_call *c, const sl_span *o, const sl_span *x, const char *unless) {
    if (o->begin < x->end && x->begin < o->end)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT,
                       "%s: %s and %s overlap in memory: an output must not share memory with another tensor of the "
                       "call%s%s",
                       c->op, o->name, x->name, unless ? " " : "", unless ? unless : "");
    return TRT_OK;
}

trt_status sl_check_values(const sl_call *c, const char *name, tls_mem m, int64_t n, size_t esize, sl_span *sp) {
    return sl_check_rows(c, name, m, 1, n, n, esize, sp);
}

trt_status sl_check_vector(const sl_call *c, const char *name, tls_mem m, int64_t n, size_t esize) {
    return sl_check_values(c, name, m, n, esize, NULL);
}

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

/* The kernel `name` of the embedded `file`, compiled (once) with the
 * options co; `spec` says which specialization in a message. */
trt_status sl_kernel_with(const sl_call *c, const char *file, const char *name, const trt_compile_options *co,
                          const char *spec, trt_kernel **k) {
    const rt_embedded_file *f = embedded(file);
    if (!f) return rt_fail(c->d, TRT_ERR_NOT_FOUND, "%s: %s is not in this build of tilec", c->op, file);
    trt_compile_options one = *co;
    one.kernel = name; /* the file's other kernels (dtypes, backward) when a call needs them */
    trt_module *m;
    trt_status st = rt_compile_kept(c->d, f->name, f->text, f->len, &one, &m);
    if (st != TRT_OK) return rt_fail(c->d, st, "%s: compiling %s (%s): %s", c->op, file, spec, c->d->err);
    return trt_get_kernel(m, name, k);
}

void sl_prefetch(const sl_call *c, const char *file, const char *const *names, const trt_compile_options *cos,
                 size_t n) {
    const rt_embedded_file *f = embedded(file);
    trt_compile_options one[SL_MAX_PREFETCH];
    trt_compile_request reqs[SL_MAX_PREFETCH];
    if (!f || n > SL_MAX_PREFETCH) return; /* sl_kernel_with says what is missing; more compile one by one */
    for (size_t i = 0; i < n; i++) {
        one[i] = cos[i];
        one[i].kernel = names[i]; /* as sl_kernel_with compiles it */
        reqs[i] = (trt_compile_request){.filename = f->name, .source = f->text, .len = f->len, .options = &one[i]};
    }
    rt_compile_prefetch(c->d, reqs, n);
}

/* The kernel `base`_<dtype> with BLOCK = block and, unless align is 0,
 * ALIGN = align, on num_warps: its name, options and specialization. */
typedef struct row_kernel {
    char name[SL_MAX_KERNEL_NAME], spec[48];
    tilec_define defs[2];
    trt_compile_options co; /* its defines point at defs: made in place (row_kernel_init), not copied */
    const rt_tune_entry *tuned; /* the tuning entry its num_warps came from (row_kernel_tuned); NULL: none */
} row_kernel;

static void row_kernel_init(row_kernel *r, const sl_call *c, const char *base, int block, int align, int num_warps) {
    snprintf(r->name, sizeof r->name, "%s_%s", base, c->st->suffix);
    if (align) snprintf(r->spec, sizeof r->spec, "BLOCK %d, ALIGN %d", block, align);
    else snprintf(r->spec, sizeof r->spec, "BLOCK %d", block);
    r->defs[0] = (tilec_define){"BLOCK", block};
    r->defs[1] = (tilec_define){"ALIGN", align};
    r->co = (trt_compile_options){.num_warps = num_warps, .defines = r->defs, .ndefines = align ? 2 : 1};
    r->tuned = NULL;
}

/* A row kernel of `file` (a program a row of cols, BLOCK its power of
 * two): num_warps the caller's tls_options', else a tuned entry's
 * (trt_use_tuning; bucket COLS, docs/tuning.md), else the compiler's. */
static void row_kernel_tuned(row_kernel *r, const sl_call *c, const char *file, const char *base, int64_t cols,
                             int align) {
    static const char *const size_names[] = {"COLS"};
    row_kernel_init(r, c, base, next_pow2(cols), align, sl_main_warps(c));
    if (r->co.num_warps) return;
    const rt_tune_entry *e = sl_tuned(c, file, r->name, size_names, &cols, 1, NULL, NULL, 0);
    if (e && e->num_warps > 0) r->tuned = e, r->co.num_warps = e->num_warps;
}

/* r's kernel of the embedded `file`, compiled (once); at a tuned
 * num_warps that does not compile, at the compiler's, with a note in the
 * tuning. */
static trt_status row_kernel_get(const sl_call *c, const char *file, row_kernel *r, trt_kernel **k) {
    trt_status st = sl_kernel_with(c, file, r->name, &r->co, r->spec, k);
    if (!r->tuned || st != TRT_ERR_COMPILE) {
        if (st == TRT_OK && r->tuned) rt_tuning_used(c->d->tuning, r->tuned);
        return st;
    }
    rt_tuning_note(c->d->tuning, "%s: the tuned configuration of %s %s does not compile; the compiler's num_warps "
                   "instead: %s", c->op, r->name, r->tuned->bucket, c->d->err);
    r->tuned = NULL;
    r->co.num_warps = 0;
    return sl_kernel_with(c, file, r->name, &r->co, r->spec, k);
}

/* That kernel of the embedded `file`, compiled (once). */
static trt_status kernel_for(const sl_call *c, const char *file, const char *base, int block, int align, int num_warps,
                             trt_kernel **k) {
    row_kernel r;
    row_kernel_init(&r, c, base, block, align, num_warps);
    return sl_kernel_with(c, file, r.name, &r.co, r.spec, k);
}

/* The two kernels of `file` a backward call launches (the rows', then the
 * column sums'), compiled together. */
static trt_status kernels_for_two(const sl_call *c, const char *file, row_kernel *a, row_kernel *b, trt_kernel **ka,
                                  trt_kernel **kb) {
    const char *names[2] = {a->name, b->name};
    const trt_compile_options cos[2] = {a->co, b->co};
    sl_prefetch(c, file, names, cos, 2);
    trt_status st = row_kernel_get(c, file, a, ka);
    return st ? st : row_kernel_get(c, file, b, kb);
}

/* The ALIGN of the row kernels: the largest power of two up to MAX_ALIGN
 * that divides the row length and the strides (each a multiple_of promise
 * in the kernel; stdlib/softmax.tile). */
static int row_align(int64_t cols, int64_t stride_a, int64_t stride_b) {
    int a = MAX_ALIGN;
    while (a > 1 && ((cols | stride_a | stride_b) & (a - 1))) a /= 2;
    return a;
}

int sl_main_warps(const sl_call *c) { return c->o ? c->o->num_warps : 0; }

trt_status sl_launch_grid(const sl_call *c, trt_kernel *k, int64_t grid_x, int64_t grid_y, int64_t grid_z,
                              const trt_arg *args, size_t nargs) {
    trt_stream *s = c->o ? c->o->stream : NULL;
    trt_status st = s ? trt_launch_on(s, k, (uint32_t)grid_x, (uint32_t)grid_y, (uint32_t)grid_z, args, nargs)
                      : trt_launch(k, (uint32_t)grid_x, (uint32_t)grid_y, (uint32_t)grid_z, args, nargs);
    return st == TRT_OK ? st : rt_fail(c->d, st, "%s: %s", c->op, c->d->err);
}

static trt_status launch(const sl_call *c, trt_kernel *k, int64_t grid, const trt_arg *args, size_t nargs) {
    return sl_launch_grid(c, k, grid, 1, 1, args, nargs);
}

/* ---- softmax ------------------------------------------------------------------ */

/* That output o shares no byte with input x, or is exactly x (the same
 * first byte and length, and `same_stride`): each row is read whole by
 * the program that writes it, before it does, so in place is safe. */
static trt_status check_in_place(const sl_call *c, const sl_span *o, const sl_span *x, bool same_stride) {
    if (same_stride && o->begin == x->begin && o->end == x->end) return TRT_OK;
    return sl_check_apart(c, o, x, "unless it is exactly that tensor with the same stride (in place)");
}

trt_status tls_softmax(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, int64_t rows, int64_t cols,
                       int64_t x_stride, int64_t y_stride, const tls_options *opt) {
    sl_call c;
    trt_status st;
    trt_kernel *k;
    sl_span sx, sy;
    row_kernel r;
    if ((st = sl_begin(&c, dev, "tls_softmax", dt, opt)) || (st = check_rows(&c, rows, cols, TLS_SOFTMAX_MAX_COLS)) ||
        (st = check_stride(&c, "x_stride", x_stride, cols)) || (st = check_stride(&c, "y_stride", y_stride, cols)) ||
        (st = sl_check_rows(&c, "x", x, rows, cols, x_stride, c.st->size, &sx)) ||
        (st = sl_check_rows(&c, "y", y, rows, cols, y_stride, c.st->size, &sy)) ||
        (st = check_in_place(&c, &sy, &sx, x_stride == y_stride)))
        return st;
    row_kernel_tuned(&r, &c, "stdlib/softmax.tile", "softmax", cols, row_align(cols, x_stride, y_stride));
    if ((st = row_kernel_get(&c, "stdlib/softmax.tile", &r, &k))) return st;
    trt_arg a[] = {sl_arg_mem(x), sl_arg_mem(y), trt_int(cols), trt_int(x_stride), trt_int(y_stride)};
    return launch(&c, k, rows, a, sizeof a / sizeof a[0]);
}

trt_status tls_softmax_bwd(trt_device *dev, tls_dtype dt, tls_mem y, tls_mem dy, tls_mem dx, int64_t rows,
                           int64_t cols, int64_t stride, const tls_options *opt) {
    sl_call c;
    trt_status st;
    trt_kernel *k;
    sl_span sy, sdy, sdx;
    row_kernel r;
    if ((st = sl_begin(&c, dev, "tls_softmax_bwd", dt, opt)) ||
        (st = check_rows(&c, rows, cols, TLS_SOFTMAX_MAX_COLS)) ||
        (st = check_stride(&c, "stride", stride, cols)) ||
        (st = sl_check_rows(&c, "y", y, rows, cols, stride, c.st->size, &sy)) ||
        (st = sl_check_rows(&c, "dy", dy, rows, cols, stride, c.st->size, &sdy)) ||
        (st = sl_check_rows(&c, "dx", dx, rows, cols, stride, c.st->size, &sdx)) ||
        (st = check_in_place(&c, &sdx, &sy, true)) || (st = check_in_place(&c, &sdx, &sdy, true)))
        return st;
    row_kernel_tuned(&r, &c, "stdlib/softmax.tile", "softmax_bwd", cols, row_align(cols, stride, stride));
    if ((st = row_kernel_get(&c, "stdlib/softmax.tile", &r, &k))) return st;
    trt_arg a[] = {sl_arg_mem(y), sl_arg_mem(dy), sl_arg_mem(dx), trt_int(cols), trt_int(stride)};
    return launch(&c, k, rows, a, sizeof a / sizeof a[0]);
}

/* ---- the norms ---------------------------------------------------------------- */

static trt_status check_eps(const sl_call *c, float eps) {
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
static int gpu_sms(const sl_call *c) {
    if (!c->d->ops->sm_count) return 0; /* not a GPU */
    int sms = c->d->ops->sm_count(c->d);
    return sms > 0 ? sms : FALLBACK_SMS;
}

static trt_status plan_groups(const sl_call *c, int64_t rows, int64_t cols, row_groups *g) {
    int per_sm = cols <= NARROW_COLS ? GPU_GROUPS_PER_SM_NARROW : GPU_GROUPS_PER_SM;
    int64_t target = c->d->ops->sm_count ? per_sm * (int64_t)gpu_sms(c) : CPU_GROUPS;
    g->per = sl_cdiv(rows, target);
    g->groups = sl_cdiv(rows, g->per);
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
    sl_call c;
    trt_status st;
    row_groups g;
    if ((st = sl_begin(&c, dev, op, TLS_F32, NULL))) return st;
    if (!bytes) return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: bytes is NULL", op);
    *bytes = 0;
    if ((st = check_rows(&c, rows, cols, TLS_NORM_MAX_COLS)) || (st = plan_groups(&c, rows, cols, &g))) return st;
    *bytes = (size_t)parts * g.part_bytes;
    return TRT_OK;
}

trt_status tls_layernorm(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, tls_mem w, tls_mem b, tls_mem mean,
                         tls_mem rstd, int64_t rows, int64_t cols, int64_t stride, float eps, const tls_options *opt) {
    sl_call c;
    trt_status st;
    trt_kernel *k;
    if ((st = sl_begin(&c, dev, "tls_layernorm", dt, opt)) || (st = check_rows(&c, rows, cols, TLS_NORM_MAX_COLS)) ||
        (st = check_stride(&c, "stride", stride, cols)) || (st = check_eps(&c, eps)) ||
        (st = sl_check_rows(&c, "x", x, rows, cols, stride, c.st->size, NULL)) ||
        (st = sl_check_rows(&c, "y", y, rows, cols, stride, c.st->size, NULL)) ||
        (st = sl_check_vector(&c, "w", w, cols, c.st->size)) || (st = sl_check_vector(&c, "b", b, cols, c.st->size)) ||
        (st = sl_check_vector(&c, "mean", mean, rows, 4)) || (st = sl_check_vector(&c, "rstd", rstd, rows, 4)))
        return st;
    row_kernel r;
    row_kernel_tuned(&r, &c, "stdlib/layernorm.tile", "layernorm", cols, row_align(cols, stride, stride));
    if ((st = row_kernel_get(&c, "stdlib/layernorm.tile", &r, &k))) return st;
    trt_arg a[] = {sl_arg_mem(x),    sl_arg_mem(y),       sl_arg_mem(w),     sl_arg_mem(b),     sl_arg_mem(mean),
                   sl_arg_mem(rstd), trt_int(cols), trt_int(stride), trt_float(eps)};
    return launch(&c, k, rows, a, sizeof a / sizeof a[0]);
}

trt_status tls_layernorm_bwd_workspace(trt_device *dev, int64_t rows, int64_t cols, size_t *bytes) {
    return workspace(dev, "tls_layernorm_bwd_workspace", rows, cols, 2, bytes);
}

trt_status tls_layernorm_bwd(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem dy, tls_mem dx, tls_mem w, tls_mem mean,
                             tls_mem rstd, tls_mem dw, tls_mem db, int64_t rows, int64_t cols, int64_t stride,
                             tls_mem ws, const tls_options *opt) {
    sl_call c;
    trt_status st;
    row_groups g;
    trt_kernel *kb, *ks;
    row_kernel rb, rs;
    if ((st = sl_begin(&c, dev, "tls_layernorm_bwd", dt, opt)) ||
        (st = check_rows(&c, rows, cols, TLS_NORM_MAX_COLS)) ||
        (st = check_stride(&c, "stride", stride, cols)) || (st = plan_groups(&c, rows, cols, &g)) ||
        (st = sl_check_rows(&c, "x", x, rows, cols, stride, c.st->size, NULL)) ||
        (st = sl_check_rows(&c, "dy", dy, rows, cols, stride, c.st->size, NULL)) ||
        (st = sl_check_rows(&c, "dx", dx, rows, cols, stride, c.st->size, NULL)) ||
        (st = sl_check_vector(&c, "w", w, cols, c.st->size)) || (st = sl_check_vector(&c, "mean", mean, rows, 4)) ||
        (st = sl_check_vector(&c, "rstd", rstd, rows, 4)) || (st = sl_check_vector(&c, "dw", dw, cols, c.st->size)) ||
        (st = sl_check_vector(&c, "db", db, cols, c.st->size)) ||
        (st = sl_check_vector(&c, "workspace", ws, (int64_t)(2 * g.part_bytes), 1)))
        return st;
    row_kernel_tuned(&rb, &c, "stdlib/layernorm.tile", "layernorm_bwd", cols, row_align(cols, stride, stride));
    row_kernel_init(&rs, &c, "layernorm_dwdb", COLSUM_BLOCK, row_align(cols, cols, cols), 0);
    if ((st = kernels_for_two(&c, "stdlib/layernorm.tile", &rb, &rs, &kb, &ks))) return st;
    tls_mem dw_part = ws, db_part = tls_mem_at(ws.buffer, ws.offset + g.part_bytes);
    trt_arg ab[] = {sl_arg_mem(x),       sl_arg_mem(dy),      sl_arg_mem(dx),   sl_arg_mem(w),
                    sl_arg_mem(mean),    sl_arg_mem(rstd),    sl_arg_mem(dw_part), sl_arg_mem(db_part),
                    trt_int(rows),       trt_int(cols),       trt_int(stride),  trt_int(g.per)};
    trt_arg as[] = {sl_arg_mem(dw_part), sl_arg_mem(db_part), sl_arg_mem(dw),
                    sl_arg_mem(db),      trt_int(g.groups),   trt_int(cols)};
    if ((st = launch(&c, kb, g.groups, ab, sizeof ab / sizeof ab[0]))) return st;
    return launch(&c, ks, sl_cdiv(cols, COLSUM_BLOCK), as, sizeof as / sizeof as[0]);
}

trt_status tls_rmsnorm(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, tls_mem w, tls_mem rstd, int64_t rows,
                       int64_t cols, int64_t stride, float eps, const tls_options *opt) {
    sl_call c;
    trt_status st;
    trt_kernel *k;
    if ((st = sl_begin(&c, dev, "tls_rmsnorm", dt, opt)) || (st = check_rows(&c, rows, cols, TLS_NORM_MAX_COLS)) ||
        (st = check_stride(&c, "stride", stride, cols)) || (st = check_eps(&c, eps)) ||
        (st = sl_check_rows(&c, "x", x, rows, cols, stride, c.st->size, NULL)) ||
        (st = sl_check_rows(&c, "y", y, rows, cols, stride, c.st->size, NULL)) ||
        (st = sl_check_vector(&c, "w", w, cols, c.st->size)) || (st = sl_check_vector(&c, "rstd", rstd, rows, 4)))
        return st;
    row_kernel r;
    row_kernel_tuned(&r, &c, "stdlib/rmsnorm.tile", "rmsnorm", cols, row_align(cols, stride, stride));
    if ((st = row_kernel_get(&c, "stdlib/rmsnorm.tile", &r, &k))) return st;
    trt_arg a[] = {sl_arg_mem(x),    sl_arg_mem(y),      sl_arg_mem(w),    sl_arg_mem(rstd),
                   trt_int(cols), trt_int(stride), trt_float(eps)};
    return launch(&c, k, rows, a, sizeof a / sizeof a[0]);
}

trt_status tls_rmsnorm_bwd_workspace(trt_device *dev, int64_t rows, int64_t cols, size_t *bytes) {
    return workspace(dev, "tls_rmsnorm_bwd_workspace", rows, cols, 1, bytes);
}

trt_status tls_rmsnorm_bwd(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem dy, tls_mem dx, tls_mem w, tls_mem rstd,
                           tls_mem dw, int64_t rows, int64_t cols, int64_t stride, tls_mem ws,
                           const tls_options *opt) {
    sl_call c;
    trt_status st;
    row_groups g;
    trt_kernel *kb, *ks;
    row_kernel rb, rs;
    if ((st = sl_begin(&c, dev, "tls_rmsnorm_bwd", dt, opt)) || (st = check_rows(&c, rows, cols, TLS_NORM_MAX_COLS)) ||
        (st = check_stride(&c, "stride", stride, cols)) || (st = plan_groups(&c, rows, cols, &g)) ||
        (st = sl_check_rows(&c, "x", x, rows, cols, stride, c.st->size, NULL)) ||
        (st = sl_check_rows(&c, "dy", dy, rows, cols, stride, c.st->size, NULL)) ||
        (st = sl_check_rows(&c, "dx", dx, rows, cols, stride, c.st->size, NULL)) ||
        (st = sl_check_vector(&c, "w", w, cols, c.st->size)) || (st = sl_check_vector(&c, "rstd", rstd, rows, 4)) ||
        (st = sl_check_vector(&c, "dw", dw, cols, c.st->size)) ||
        (st = sl_check_vector(&c, "workspace", ws, (int64_t)g.part_bytes, 1)))
        return st;
    row_kernel_tuned(&rb, &c, "stdlib/rmsnorm.tile", "rmsnorm_bwd", cols, row_align(cols, stride, stride));
    row_kernel_init(&rs, &c, "rmsnorm_dw", COLSUM_BLOCK, row_align(cols, cols, cols), 0);
    if ((st = kernels_for_two(&c, "stdlib/rmsnorm.tile", &rb, &rs, &kb, &ks))) return st;
    trt_arg ab[] = {sl_arg_mem(x),    sl_arg_mem(dy),   sl_arg_mem(dx),     sl_arg_mem(w),     sl_arg_mem(rstd),
                    sl_arg_mem(ws),   trt_int(rows), trt_int(cols),   trt_int(stride), trt_int(g.per)};
    trt_arg as[] = {sl_arg_mem(ws), sl_arg_mem(dw), trt_int(g.groups), trt_int(cols)};
    if ((st = launch(&c, kb, g.groups, ab, sizeof ab / sizeof ab[0]))) return st;
    return launch(&c, ks, sl_cdiv(cols, COLSUM_BLOCK), as, sizeof as / sizeof as[0]);
}

/* ---- elementwise ---------------------------------------------------------------- */

/* An elementwise kernel of `file` over n elements of the given tensors,
 * then `extra` scalar arguments (after n). */
static trt_status elementwise(const sl_call *c, const char *file, const char *base, const tls_mem *mems,
                              const char *const *names, size_t nmems, int64_t n, const trt_arg *extra, size_t nextra) {
    trt_status st;
    trt_kernel *k;
    if ((st = check_elements(c, n))) return st;
    for (size_t i = 0; i < nmems; i++)
        if ((st = sl_check_vector(c, names[i], mems[i], n, c->st->size))) return st;
    if ((st = kernel_for(c, file, base, ELEMENTWISE_BLOCK, 0, sl_main_warps(c), &k))) return st;
    trt_arg a[6];
    size_t na = 0;
    for (size_t i = 0; i < nmems; i++) a[na++] = sl_arg_mem(mems[i]);
    a[na++] = trt_int(n);
    for (size_t i = 0; i < nextra; i++) a[na++] = extra[i];
    return launch(c, k, sl_cdiv(n, ELEMENTWISE_BLOCK), a, na);
}

trt_status tls_gelu(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, int64_t n, const tls_options *opt) {
    sl_call c;
    trt_status st = sl_begin(&c, dev, "tls_gelu", dt, opt);
    const tls_mem m[] = {x, y};
    static const char *const names[] = {"x", "y"};
    return st ? st : elementwise(&c, "stdlib/gelu.tile", "gelu", m, names, 2, n, NULL, 0);
}

trt_status tls_gelu_bwd(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem dy, tls_mem dx, int64_t n,
                        const tls_options *opt) {
    sl_call c;
    trt_status st = sl_begin(&c, dev, "tls_gelu_bwd", dt, opt);
    const tls_mem m[] = {x, dy, dx};
    static const char *const names[] = {"x", "dy", "dx"};
    return st ? st : elementwise(&c, "stdlib/gelu.tile", "gelu_bwd", m, names, 3, n, NULL, 0);
}

static trt_status check_p(const sl_call *c, float p) {
    if (!(p >= 0 && p <= 1))
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: p is %g; it must be from 0 to 1", c->op, (double)p);
    return TRT_OK;
}

trt_status tls_dropout(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, int64_t n, float p, int64_t seed,
                       const tls_options *opt) {
    sl_call c;
    trt_status st;
    if ((st = sl_begin(&c, dev, "tls_dropout", dt, opt)) || (st = check_p(&c, p))) return st;
    const tls_mem m[] = {x, y};
    static const char *const names[] = {"x", "y"};
    const trt_arg extra[] = {trt_float(p), trt_int(seed)};
    return elementwise(&c, "stdlib/dropout.tile", "dropout", m, names, 2, n, extra, 2);
}

trt_status tls_dropout_bwd(trt_device *dev, tls_dtype dt, tls_mem dy, tls_mem dx, int64_t n, float p, int64_t seed,
                           const tls_options *opt) {
    sl_call c;
    trt_status st;
    if ((st = sl_begin(&c, dev, "tls_dropout_bwd", dt, opt)) || (st = check_p(&c, p))) return st;
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
    /* min_m, min_n, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, wide_warps, edge_masks, even_only */
    {128, 128, 128, 128, 32, 8, 4, 4, 8, false, false}, /* large: 128 f32 accumulators a thread (64 on 8 warps) */
    {64, 64, 64, 64, 32, 8, 4, 4, 4, false, false},
    {1, 1, 32, 32, 32, 8, 2, 4, 2, false, false}, /* skinny or small: less padding past the edges */
};

/* matmul_f32_ieee's (dot_ieee on FMAs, each thread holding whole rows of a
 * and columns of b over BLOCK_K): the same tiles as far as they do not
 * spill (tests/stdlib-no-spills.sh), with BLOCK_K 16 on the largest and
 * smallest and 8 warps on the middle one, where 32 and 4 spilled (issue
 * 19). Triton's FMA path keeps a and b in registers the same way. */
static const rt_matmul_config matmul_ieee_configs[] = {
    /* min_m, min_n, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, wide_warps, edge_masks, even_only */
    {128, 128, 128, 128, 16, 8, 8, 4, 8, false, false},
    {64, 64, 64, 64, 32, 8, 8, 4, 8, false, false},
    {1, 1, 32, 32, 16, 8, 2, 4, 2, false, false},
};

/* sm_90a's, for f16 and bf16 (wgmma: lower/cg_dot_wgmma.c, the operands
 * by bulk tensor copies, a producer warpgroup: lower/warp_specialize.c):
 * first Triton's Hopper tile, 128 x 256 x 64 on two consumer warpgroups
 * (128 f32 accumulators a thread, 232 registers after setmaxnreg), 3
 * stages as Triton's, for whole tiles of row- or column-major operands
 * only: masked at the edges its epilogue spills (ptxas -v: 24 to 116
 * bytes; the strided path 200), so such calls take the next row, 128 x
 * 128 x 64 on 8 warps, 4 stages; then matmul_configs' smaller rows. Not
 * yet timed on a GPU; offline counts in bench/RESULTS.md
 * (bench/sass_hopper.py). */
static const rt_matmul_config matmul_wgmma_configs[] = {
    /* min_m, min_n, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, wide_warps, edge_masks, even_only */
    {128, 256, 128, 256, 64, 8, 8, 3, 8, true, true},
    {128, 128, 128, 128, 64, 8, 8, 4, 8, true, false},
    {64, 64, 64, 64, 32, 8, 4, 4, 4, true, false},
    {1, 1, 32, 32, 32, 8, 2, 4, 2, true, false},
};

const rt_matmul_config *rt_matmul_config_for(int64_t M, int64_t N, int64_t K, int64_t batch, int sms, bool fast_layouts,
                                             rt_matmul_table which) {
    const rt_matmul_config *table = which == RT_MATMUL_FMA     ? matmul_ieee_configs
                                    : which == RT_MATMUL_WGMMA ? matmul_wgmma_configs
                                                               : matmul_configs;
    size_t n = which == RT_MATMUL_FMA     ? sizeof matmul_ieee_configs / sizeof matmul_ieee_configs[0]
               : which == RT_MATMUL_WGMMA ? sizeof matmul_wgmma_configs / sizeof matmul_wgmma_configs[0]
                                          : sizeof matmul_configs / sizeof matmul_configs[0];
    for (size_t i = 0; i < n - 1; i++) {
        const rt_matmul_config *r = &table[i];
        if (M < r->min_m || N < r->min_n) continue;
        if (r->even_only && !(fast_layouts && M % r->block_m == 0 && N % r->block_n == 0 && K % r->block_k == 0))
            continue;
        /* in double: M and N up to TLS_MATMUL_MAX_DIM, batch too, need not fit a product of int64 */
        double tiles = (double)sl_cdiv(M, r->block_m) * (double)sl_cdiv(N, r->block_n) * (double)batch;
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

static trt_status check_dim(const sl_call *c, const char *name, int64_t v, int64_t max) {
    if (v < 1 || v > max)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s is %lld; it must be from 1 to %lld", c->op, name,
                       (long long)v, (long long)max);
    return TRT_OK;
}

/* That x's strides are >= 0 and its buffer, live and 16-byte aligned at
 * its offset, holds the furthest element (sizes >= 1, checked before);
 * and where its elements lie (from its first to one past its furthest)
 * into *sp, for the overlap checks. */
static trt_status check_matrix(const sl_call *c, const matrix *x, sl_span *sp) {
    static const char *const dims[3] = {"b", "row", "column"};
    for (int i = 0; i < 3; i++)
        if (x->s[i] < 0)
            return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: the %s stride is %lld; strides must be >= 0",
                           c->op, x->name, i ? dims[i] : "batch", (long long)x->s[i]);
    size_t have;
    trt_status st = rt_buffer_size(c->d, x->mem.buffer, &have);
    if (st != TRT_OK) return rt_fail(c->d, st, "%s: %s: %s", c->op, x->name, c->d->err);
    if (x->mem.offset % SL_PTR_ALIGN)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s: offset %zu is not a multiple of %d bytes", c->op,
                       x->name, x->mem.offset, SL_PTR_ALIGN);
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
    uint64_t base;
    if (sp && (st = trt_buffer_ptr(c->d, x->mem.buffer, &base)) == TRT_OK)
        *sp = (sl_span){.name = x->name, .begin = base + x->mem.offset, .end = base + x->mem.offset + need};
    return st;
}

/* Whether two elements of a tensor of ndims dims (sizes n, strides s in
 * elements, checked >= 0 before) share an address: taking its dims
 * longer than 1 by increasing stride, each stride must pass the last
 * element the smaller ones reach (the usual test for a non-overlapping
 * view; sizes and strides checked before, so nothing overflows). */
bool sl_dims_overlap(int ndims, const int64_t *n, const int64_t *s) {
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
static trt_status check_apart(const sl_call *c, const matrix *x) {
    if (sl_dims_overlap(3, x->n, x->s))
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
/* a stride of 0 over several elements (a broadcast) is not one: bulk
 * tensor copies (sm_90a) take none */
static bool vec_stride(int64_t s, int64_t n, int64_t vec) { return n == 1 || (s != 0 && s % vec == 0); }

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

/* A product's launch at one configuration: its kernel's name, consts and
 * options, its arguments and grid (matmul_prepare). */
enum { MM_DEFINES = 12, MM_ARGS = 16 };
typedef struct mm_launch {
    char name[SL_MAX_KERNEL_NAME], spec[128];
    tilec_define defs[MM_DEFINES];
    trt_compile_options co; /* its defines point at defs: made in place, not copied */
    trt_arg args[MM_ARGS];
    int64_t tiles, batch;
} mm_launch;

/* The checks of a product at configuration cfg, and its launch into *l. */
static trt_status matmul_prepare(const sl_call *c, const rt_matmul_config *cfg, bool ieee, matrix a, matrix b,
                                 matrix x, const epilogue *epi, mm_launch *l) {
    trt_status st;
    int64_t batch = a.n[0], M = a.n[1], K = a.n[2], N = b.n[2];
    int64_t tiles = sl_cdiv(M, cfg->block_m) * sl_cdiv(N, cfg->block_n);
    if (tiles > INT32_MAX)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %lld x %lld needs %lld tiles of %d x %d; at most %d fit a grid",
                       c->op, (long long)M, (long long)N, (long long)tiles, cfg->block_m, cfg->block_n, INT32_MAX);
    sl_span sa, sb, sx, sbias;
    if ((st = check_matrix(c, &a, &sa)) || (st = check_matrix(c, &b, &sb)) ||
        (st = check_matrix(c, &x, &sx)) || (st = check_apart(c, &x)) || (st = sl_check_apart(c, &sx, &sa, NULL)) ||
        (st = sl_check_apart(c, &sx, &sb, NULL)))
        return st;
    bool has_bias = epi && epi->bias.mem.buffer.handle;
    if (has_bias && ((st = check_matrix(c, &epi->bias, &sbias)) || (st = sl_check_apart(c, &sx, &sbias, NULL))))
        return st;
    int act = epi ? (int)epi->act : TLS_ACT_NONE;
    if (act < TLS_ACT_NONE || act > TLS_ACT_GELU_TANH)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: activation %d is not a tls_activation", c->op, act);
    int64_t vec = SL_PTR_ALIGN / (int64_t)c->st->size;
    int c_layout = vec_stride(x.s[0], x.n[0], vec) && unit_stride(x.s[2], x.n[2]) && vec_stride(x.s[1], x.n[1], vec);
    bool even = M % cfg->block_m == 0 && N % cfg->block_n == 0 && K % cfg->block_k == 0;
    /* sizes of whole 16-byte runs: the masks are one bit a run (no use when EVEN drops them) */
    bool sizes_vec = !even && M % vec == 0 && N % vec == 0 && K % vec == 0;
    const tilec_define defs[] = {{"BLOCK_M", cfg->block_m},        {"BLOCK_N", cfg->block_n},
                                           {"BLOCK_K", cfg->block_k},        {"GROUP_M", cfg->group_m},
                                           {"A_LAYOUT", operand_layout(&a, vec)}, {"B_LAYOUT", operand_layout(&b, vec)},
                                           {"C_LAYOUT", c_layout},           {"EVEN", even},
                                           {"HAS_BIAS", has_bias},           {"ACTIVATION", act},
                                           {"EDGE_MASKS", cfg->edge_masks}, {"SIZES_VEC", sizes_vec}};
    _Static_assert(sizeof defs / sizeof defs[0] == MM_DEFINES, "one value per slot (a missing one would be a silent 0)");
    memcpy(l->defs, defs, sizeof defs);
    snprintf(l->name, sizeof l->name, "matmul_%s%s", c->st->suffix, ieee ? "_ieee" : "");
    snprintf(l->spec, sizeof l->spec, "BLOCK_M %d, BLOCK_N %d, BLOCK_K %d, layouts %lld %lld %lld%s%s%s, activation %d",
             cfg->block_m, cfg->block_n, cfg->block_k, (long long)defs[4].value, (long long)defs[5].value,
             (long long)c_layout, even ? ", EVEN" : "", sizes_vec ? ", SIZES_VEC" : "", has_bias ? ", bias" : "", act);
    bool wide = c->st == &sl_storages[TLS_F32] || defs[4].value == 0 || defs[5].value == 0;
    int warps = sl_main_warps(c) ? sl_main_warps(c) : wide ? cfg->wide_warps : cfg->num_warps;
    l->co = (trt_compile_options){.num_warps = warps, .defines = l->defs, .ndefines = MM_DEFINES,
                                  .num_stages = cfg->num_stages};
    /* a dim of one element: its stride is never multiplied by more than 0
     * for an element that is loaded or stored, so any value does (the
     * layouts above count on 0) */
    for (int i = 0; i < 3; i++) {
        if (a.n[i] == 1) a.s[i] = 0;
        if (b.n[i] == 1) b.s[i] = 0;
        if (x.n[i] == 1) x.s[i] = 0;
    }
    const trt_arg args[] = {sl_arg_mem(a.mem),  sl_arg_mem(b.mem),  sl_arg_mem(x.mem),  trt_int(M),
                                   trt_int(N),         trt_int(K),         trt_int(a.s[1]),    trt_int(a.s[2]),
                                   trt_int(b.s[1]),    trt_int(b.s[2]),    trt_int(x.s[1]),    trt_int(x.s[2]),
                                   trt_int(a.s[0]),    trt_int(b.s[0]),    trt_int(x.s[0]),
                                   sl_arg_mem(has_bias ? epi->bias.mem : x.mem)}; /* without a bias, not read */
    _Static_assert(sizeof args / sizeof args[0] == MM_ARGS, "one value per slot (a missing one would be a silent 0)");
    memcpy(l->args, args, sizeof args);
    l->tiles = tiles, l->batch = batch;
    return TRT_OK;
}

/* The product with tile configuration cfg, checked (but for its dims and
 * precision, by matmul), compiled and launched. */
static trt_status matmul_as(const sl_call *c, const rt_matmul_config *cfg, bool ieee, matrix a, matrix b, matrix x,
                            const epilogue *epi) {
    mm_launch l;
    trt_kernel *k;
    trt_status st;
    if ((st = matmul_prepare(c, cfg, ieee, a, b, x, epi, &l)) ||
        (st = sl_kernel_with(c, "stdlib/matmul.tile", l.name, &l.co, l.spec, &k)))
        return st;
    return sl_launch_grid(c, k, l.tiles, l.batch, 1, l.args, MM_ARGS);
}

/* The candidates a product's search tries after the table's row: the
 * autotuning list of Triton's matrix multiplication tutorial for NVIDIA
 * GPUs (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages). */
static const int matmul_candidates[][6] = {
    {128, 256, 64, 8, 8, 3}, {64, 256, 32, 8, 4, 4}, {128, 128, 32, 8, 4, 4}, {128, 64, 32, 8, 4, 4},
    {64, 128, 32, 8, 4, 4},  {128, 32, 32, 8, 4, 4}, {64, 32, 32, 8, 2, 5},   {32, 64, 32, 8, 2, 5},
};

typedef struct mm_grid_user {
    int64_t M, N, batch;
} mm_grid_user;

static void mm_grid(void *user, const trt_tune_config *cfg, uint32_t g[3]) {
    const mm_grid_user *u = user;
    int64_t bm = cfg->defines[0].value, bn = cfg->defines[1].value; /* BLOCK_M, BLOCK_N: matmul_prepare's first */
    g[0] = (uint32_t)(sl_cdiv(u->M, bm) * sl_cdiv(u->N, bn));
    g[1] = (uint32_t)u->batch;
    g[2] = 1;
}

/* tls_options.search for a product: the table's row, then each candidate
 * of matmul_candidates (its consts as the call gives them), searched. */
static trt_status matmul_search(const sl_call *c, const rt_matmul_config *table, bool ieee, matrix a, matrix b,
                                matrix x, const epilogue *epi) {
    enum { MAX = 1 + sizeof matmul_candidates / sizeof matmul_candidates[0] };
    _Static_assert((int)MAX <= (int)SL_MAX_SEARCH, "a product's candidates fit a search");
    static const char *const names[] = {"M", "N", "K", "B"};
    int64_t batch = a.n[0], M = a.n[1], K = a.n[2], N = b.n[2];
    const int64_t sizes[] = {M, N, K, batch};
    char bucket[TRT_TUNE_MAX_BUCKET];
    trt_status st = trt_tune_bucket(bucket, sizeof bucket, names, sizes, batch > 1 ? 4 : 3);
    if (st != TRT_OK) return rt_fail(c->d, st, "%s: tls_options.search: %s", c->op, c->d->err);
    mm_launch *l = malloc(MAX * sizeof *l);
    if (!l) return rt_fail(c->d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    trt_tune_config cfgs[MAX];
    rt_matmul_config tried[MAX];
    size_t n = 0;
    for (size_t i = 0; i < MAX && st == TRT_OK; i++) {
        rt_matmul_config cand = *table;
        if (i) {
            const int *r = matmul_candidates[i - 1];
            cand.block_m = r[0], cand.block_n = r[1], cand.block_k = r[2], cand.group_m = r[3];
            cand.num_warps = cand.wide_warps = r[4], cand.num_stages = r[5];
        }
        /* the operands' checks are the same for every candidate: the
         * table's row says them; a candidate's own can only be its tile
         * count past a grid, which leaves that candidate out */
        trt_status s = matmul_prepare(c, &cand, ieee, a, b, x, epi, &l[n]);
        if (s != TRT_OK && !i) st = s;
        if (s != TRT_OK) continue;
        cfgs[n] = (trt_tune_config){l[n].defs, MM_DEFINES, l[n].co.num_warps, l[n].co.num_stages};
        tried[n++] = cand;
    }
    mm_grid_user u = {M, N, batch};
    size_t best = 0;
    if (st == TRT_OK)
        st = sl_search(c, "stdlib/matmul.tile", l[0].name, cfgs, n, false, bucket, mm_grid, &u, l[0].args, MM_ARGS,
                       &best);
    free(l);
    return st == TRT_OK ? matmul_as(c, &tried[best], ieee, a, b, x, epi) : st; /* the winner's bits */
}

trt_status sl_search(const sl_call *c, const char *file, const char *name, const trt_tune_config *cfgs, size_t n,
                     bool exp2_ftz, const char *bucket, trt_tune_grid_fn grid, void *user, const trt_arg *args,
                     size_t nargs, size_t *best) {
    const rt_embedded_file *f = embedded(file);
    if (!f) return rt_fail(c->d, TRT_ERR_NOT_FOUND, "%s: %s is not in this build of tilec", c->op, file);
    trt_tune_space sp = {.file = f->name, .source = f->text, .len = f->len, .kernel = name, .configs = cfgs,
                         .nconfigs = n, .bucket = bucket, .grid = grid, .user = user, .args = args, .nargs = nargs,
                         .exp2_ftz = exp2_ftz};
    trt_status st = trt_tune(c->d, &sp, c->o->search, NULL, best);
    return st == TRT_OK ? st : rt_fail(c->d, st, "%s: tls_options.search: %s", c->op, c->d->err);
}

const rt_tune_entry *sl_tuned(const sl_call *c, const char *file, const char *name, const char *const *size_names,
                              const int64_t *sizes, size_t nsizes, const char *const *consts, int64_t *values,
                              size_t nconsts) {
    char bucket[TRT_TUNE_MAX_BUCKET];
    if (!c->d->tuning) return NULL;
    const rt_embedded_file *f = embedded(file);
    if (!f || trt_tune_bucket(bucket, sizeof bucket, size_names, sizes, nsizes) != TRT_OK) return NULL;
    const rt_tune_entry *e = rt_tuning_lookup(c->d->tuning, c->d, rt_tune_hash(f->text, f->len), name, bucket);
    if (!e) return NULL;
    for (size_t i = 0; i < nconsts; i++)
        if (!rt_tune_entry_define(e, consts[i], &values[i]) || values[i] < 1 || values[i] > INT32_MAX) {
            rt_tuning_note(c->d->tuning, "%s: the tuning entry for %s %s has no %s from 1 to %d; the built-in table's "
                           "configuration instead", c->op, name, bucket, consts[i], INT32_MAX);
            return NULL;
        }
    return e;
}

/* The device's tuned configuration (trt_use_tuning, docs/tuning.md) for
 * kernel `name` and the product's bucket (M, N and K as powers of two, and
 * the batch when there is one) into *out; NULL when there is none, or, with
 * a note, when its entry lacks a const. Its num_warps serves both the
 * narrow and the wide paths. */
static const rt_tune_entry *tuned_matmul(const sl_call *c, const char *name, int64_t batch, int64_t M, int64_t N,
                                         int64_t K, rt_matmul_config *out) {
    static const char *const names[] = {"M", "N", "K", "B"};
    static const char *const consts[] = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"};
    const int64_t sizes[] = {M, N, K, batch};
    int64_t v[4];
    const rt_tune_entry *e = sl_tuned(c, "stdlib/matmul.tile", name, names, sizes, batch > 1 ? 4 : 3, consts, v, 4);
    if (!e) return NULL;
    *out = (rt_matmul_config){.min_m = 1, .min_n = 1, .block_m = (int)v[0], .block_n = (int)v[1],
                              .block_k = (int)v[2], .group_m = (int)v[3], .num_warps = e->num_warps,
                              .num_stages = e->num_stages, .wide_warps = e->num_warps};
    return e;
}

/* A product: a tuned configuration when the device has one for it (one
 * that does not compile falls back to the table, with a note in the
 * tuning: trt_tuning_last_note), else the table's row for the shape. */
static trt_status matmul(const sl_call *c, matrix a, matrix b, matrix x, const epilogue *epi) {
    trt_status st;
    int64_t batch = a.n[0], M = a.n[1], K = a.n[2], N = b.n[2];
    if ((st = check_dim(c, "batch", batch, TLS_MATMUL_MAX_BATCH)) || (st = check_dim(c, "M", M, TLS_MATMUL_MAX_DIM)) ||
        (st = check_dim(c, "N", N, TLS_MATMUL_MAX_DIM)) || (st = check_dim(c, "K", K, TLS_MATMUL_MAX_DIM)))
        return st;
    bool ieee = c->o && c->o->precision == TLS_IEEE;
    if (ieee && c->st != &sl_storages[TLS_F32])
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: precision TLS_IEEE is for f32 inputs, not %s", c->op,
                       c->st->suffix);
    const char *arch = c->d->ops->code_arch ? c->d->ops->code_arch(c->d) : NULL;
    bool wgmma = arch && !strcmp(arch, "sm_90a") && c->st != &sl_storages[TLS_F32]; /* f32 keeps mma.sync */
    int64_t vec = SL_PTR_ALIGN / (int64_t)c->st->size;
    bool fast = operand_layout(&a, vec) && operand_layout(&b, vec); /* what matmul_as passes as A_ and B_LAYOUT */
    const rt_matmul_config *cfg = rt_matmul_config_for(M, N, K, batch, gpu_sms(c), fast,
                                                       ieee    ? RT_MATMUL_FMA
                                                       : wgmma ? RT_MATMUL_WGMMA
                                                               : RT_MATMUL_MMA);
    if (c->o && c->o->search) return matmul_search(c, cfg, ieee, a, b, x, epi);
    char name[SL_MAX_KERNEL_NAME];
    snprintf(name, sizeof name, "matmul_%s%s", c->st->suffix, ieee ? "_ieee" : "");
    rt_matmul_config tuned;
    const rt_tune_entry *e = tuned_matmul(c, name, batch, M, N, K, &tuned);
    if (e) {
        st = matmul_as(c, &tuned, ieee, a, b, x, epi);
        if (st != TRT_ERR_COMPILE) {
            if (st == TRT_OK) rt_tuning_used(c->d->tuning, e);
            return st;
        }
        rt_tuning_note(c->d->tuning, "%s: the tuned configuration of %s %s does not compile; the built-in table's "
                       "instead: %s", c->op, name, e->bucket, c->d->err);
    }
    return matmul_as(c, cfg, ieee, a, b, x, epi);
}

trt_status tls_matmul(trt_device *dev, tls_dtype dt, tls_mem a, tls_mem b, tls_mem c, int64_t M, int64_t N, int64_t K,
                      int64_t stride_am, int64_t stride_ak, int64_t stride_bk, int64_t stride_bn, int64_t stride_cm,
                      int64_t stride_cn, const tls_options *opt) {
    sl_call cl;
    trt_status st;
    if ((st = sl_begin_searchable(&cl, dev, "tls_matmul", dt, opt))) return st;
    matrix ma = {.name = "a", .mem = a, .n = {1, M, K}, .s = {0, stride_am, stride_ak}},
           mb = {.name = "b", .mem = b, .n = {1, K, N}, .s = {0, stride_bk, stride_bn}},
           mc = {.name = "c", .mem = c, .n = {1, M, N}, .s = {0, stride_cm, stride_cn}};
    return matmul(&cl, ma, mb, mc, NULL);
}

trt_status tls_matmul_epilogue(trt_device *dev, tls_dtype dt, tls_mem a, tls_mem b, tls_mem c, tls_mem bias,
                               tls_activation act, int64_t M, int64_t N, int64_t K, int64_t stride_am,
                               int64_t stride_ak, int64_t stride_bk, int64_t stride_bn, int64_t stride_cm,
                               int64_t stride_cn, const tls_options *opt) {
    sl_call cl;
    trt_status st;
    if ((st = sl_begin_searchable(&cl, dev, "tls_matmul_epilogue", dt, opt))) return st;
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
    sl_call cl;
    trt_status st;
    if ((st = sl_begin_searchable(&cl, dev, "tls_matmul_batched", dt, opt))) return st;
    matrix ma = {.name = "a", .mem = a, .n = {batch, M, K}, .s = {stride_ab, stride_am, stride_ak}},
           mb = {.name = "b", .mem = b, .n = {batch, K, N}, .s = {stride_bb, stride_bk, stride_bn}},
           mc = {.name = "c", .mem = c, .n = {batch, M, N}, .s = {stride_cb, stride_cm, stride_cn}};
    return matmul(&cl, ma, mb, mc, NULL);
}

size_t tls_num_modules(const trt_device *dev) {
    size_t n = 0;
    if (dev)
        for (const kept_module *k = dev->kept; k; k = k->next) n++;
    return n;
}
