/* stdlib_loss.c - the losses' C entry points (tls_cross_entropy,
 * include/tilec_stdlib.h; docs/stdlib.md, "Cross-entropy"), on the
 * helpers runtime/stdlib.c shares through stdlib_internal.h.
 *
 * tls_cross_entropy launches stdlib/cross_entropy.tile's kernel once, one
 * program a row: for rows of up to XENT_CHUNK columns in one tile of the
 * next power of two >= cols (CHUNKED false), past it XENT_CHUNK columns a
 * trip (CHUNKED true; the file's header says why 4096), with GRAD when
 * the caller passes dlogits, and ALIGN the largest power of two up to
 * XENT_MAX_ALIGN dividing cols and the strides.
 *
 * Everything is checked before the launch, so a refused call writes
 * nothing: the shape, that each buffer holds what the shape reaches, that
 * no output shares a byte with another tensor of the call (dlogits may be
 * logits itself: the same memory and stride), and on the CPU and the
 * emulator, whose buffers are host memory and whose launches are done
 * when they return, that every target is below cols. On the GPU reading
 * the targets would wait for the work queued before the call (a hidden
 * sync, as the varlen offsets of runtime/stdlib_attention.c), so they are
 * not read there, and the kernel ignores a row whose target it cannot
 * index. Messages start with the entry point's name. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/internal.h"
#include "runtime/stdlib_internal.h"
#include "tilec_stdlib.h"

enum {
    XENT_CHUNK = 4096,        /* the widest row in one tile, and the chunk past it (stdlib/cross_entropy.tile) */
    XENT_MAX_ALIGN = 8,       /* as runtime/stdlib.c's row kernels: 8 elements, one 16-byte access of f16 */
    XENT_TARGETS_READ = 4096, /* targets checked this many at a time, through a buffer on the stack */
};

_Static_assert((long long)TLS_CROSS_ENTROPY_MAX_COLS + XENT_CHUNK - 1 <= INT32_MAX,
               "the kernel's i32 column offsets must not wrap in the last chunk");

static const char *const XENT_FILE = "stdlib/cross_entropy.tile";

/* One tensor of the call: where its bytes lie, for the overlap checks. */
typedef struct xent_span {
    const char *name;
    uint64_t begin, end; /* device addresses of its first byte and one past its last */
} xent_span;

/* That m is a live buffer of the device, 16-byte aligned at its offset,
 * holding `rows` rows of `cols` elements of esize bytes `stride` elements
 * apart (rows, cols >= 1 and stride >= cols, checked before; one row: a
 * vector of cols values); sets *sp. */
static trt_status check_rows_mem(const sl_call *c, const char *name, tls_mem m, int64_t rows, int64_t cols,
                                 int64_t stride, size_t esize, xent_span *sp) {
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
    *sp = (xent_span){.name = name, .begin = base + m.offset, .end = base + m.offset + need};
    return TRT_OK;
}

/* That output o shares no byte with x: their spans, first byte to last,
 * must not meet (a conservative test: two tensors interleaved in one
 * buffer without sharing an element are refused too). */
static trt_status check_disjoint(const sl_call *c, const xent_span *o, const xent_span *x) {
    if (o->begin < x->end && x->begin < o->end)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT,
                       "%s: %s and %s overlap in memory: an output must not share memory with another tensor of the "
                       "call (dlogits may be logits itself, with the same stride)",
                       c->op, o->name, x->name);
    return TRT_OK;
}

/* Every target below cols, where reading them costs a memcpy (the CPU and
 * the emulator); negative ones ignore their rows. */
static trt_status check_targets(const sl_call *c, tls_mem targets, int64_t rows, int64_t cols) {
    if (c->d->ops->read != rt_host_read) return TRT_OK;
    int32_t v[XENT_TARGETS_READ];
    for (int64_t at = 0; at < rows; at += XENT_TARGETS_READ) {
        int64_t n = rows - at < XENT_TARGETS_READ ? rows - at : XENT_TARGETS_READ;
        trt_status st = trt_read(c->d, targets.buffer, targets.offset + (size_t)at * sizeof v[0], v,
                                 (size_t)n * sizeof v[0]);
        if (st != TRT_OK) return rt_fail(c->d, st, "%s: targets: %s", c->op, c->d->err);
        for (int64_t i = 0; i < n; i++)
            if (v[i] >= cols)
                return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT,
                               "%s: targets[%lld] is %d, not below cols (%lld); a negative target ignores its row",
                               c->op, (long long)(at + i), (int)v[i], (long long)cols);
    }
    return TRT_OK;
}

static int next_pow2(int64_t n) {
    int b = 1;
    while (b < n) b *= 2;
    return b;
}

/* The largest power of two up to XENT_MAX_ALIGN dividing cols and both
 * strides (runtime/stdlib.c's row_align, for this file's ALIGN). */
static int xent_align(int64_t cols, int64_t stride, int64_t dstride) {
    int a = XENT_MAX_ALIGN;
    while (a > 1 && ((cols | stride | dstride) & (a - 1))) a /= 2;
    return a;
}

trt_status tls_cross_entropy(trt_device *dev, tls_dtype dt, tls_mem logits, tls_mem targets, tls_mem losses,
                             tls_mem dlogits, int64_t rows, int64_t cols, int64_t stride, int64_t dlogits_stride,
                             float dloss, const tls_options *opt) {
    sl_call c;
    trt_status st;
    if ((st = sl_begin(&c, dev, "tls_cross_entropy", dt, opt))) return st;
    bool grad = dlogits.buffer.handle != 0;
    if (rows < 1 || rows > TLS_MAX_ROWS)
        return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: rows is %lld; it must be from 1 to %lld", c.op,
                       (long long)rows, (long long)TLS_MAX_ROWS);
    if (cols < 1 || cols > TLS_CROSS_ENTROPY_MAX_COLS)
        return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: cols is %lld; it must be from 1 to %lld", c.op,
                       (long long)cols, (long long)TLS_CROSS_ENTROPY_MAX_COLS);
    if (stride < cols)
        return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: stride is %lld, less than cols (%lld): rows would overlap",
                       c.op, (long long)stride, (long long)cols);
    if (grad && dlogits_stride < cols)
        return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT,
                       "%s: dlogits_stride is %lld, less than cols (%lld): rows would overlap", c.op,
                       (long long)dlogits_stride, (long long)cols);
    if (!isfinite(dloss))
        return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: dloss is %g; it must be finite", c.op, (double)dloss);
    xent_span x, t, l, d;
    if ((st = check_rows_mem(&c, "logits", logits, rows, cols, stride, c.st->size, &x)) ||
        (st = check_rows_mem(&c, "targets", targets, 1, rows, rows, 4, &t)) ||
        (st = check_rows_mem(&c, "losses", losses, 1, rows, rows, 4, &l)) ||
        (grad && (st = check_rows_mem(&c, "dlogits", dlogits, rows, cols, dlogits_stride, c.st->size, &d))) ||
        (st = check_disjoint(&c, &l, &x)) || (st = check_disjoint(&c, &l, &t)))
        return st;
    if (grad) {
        bool in_place = x.begin == d.begin && stride == dlogits_stride;
        if ((!in_place && (st = check_disjoint(&c, &d, &x))) || (st = check_disjoint(&c, &d, &t)) ||
            (st = check_disjoint(&c, &d, &l)))
            return st;
    }
    if ((st = check_targets(&c, targets, rows, cols))) return st;
    bool chunked = cols > XENT_CHUNK;
    int block = chunked ? XENT_CHUNK : next_pow2(cols), align = xent_align(cols, stride, grad ? dlogits_stride : stride);
    tilec_define defs[] = {{"BLOCK", block}, {"CHUNKED", chunked}, {"GRAD", grad}, {"ALIGN", align}};
    char name[SL_MAX_KERNEL_NAME], spec[64];
    snprintf(name, sizeof name, "cross_entropy_%s", c.st->suffix);
    snprintf(spec, sizeof spec, "BLOCK %d%s%s, ALIGN %d", block, chunked ? ", CHUNKED" : "", grad ? ", GRAD" : "",
             align);
    trt_compile_options co = {.num_warps = sl_main_warps(&c), .defines = defs, .ndefines = sizeof defs / sizeof defs[0]};
    trt_kernel *k;
    if ((st = sl_kernel_with(&c, XENT_FILE, name, &co, spec, &k))) return st;
    tls_mem dx = grad ? dlogits : logits; /* without GRAD, not written */
    trt_arg a[] = {sl_arg_mem(logits), sl_arg_mem(targets), sl_arg_mem(losses),
                   sl_arg_mem(dx),     trt_int(cols),       trt_int(stride),
                   trt_int(grad ? dlogits_stride : stride), trt_float(dloss)};
    return sl_launch_grid(&c, k, rows, 1, 1, a, sizeof a / sizeof a[0]);
}
