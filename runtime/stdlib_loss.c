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
/* what the overlap messages add: the one overlap the call takes */
static const char *const XENT_IN_PLACE = "(dlogits may be logits itself, with the same stride)";

/* Every target below cols, read where the call may (sl_can_read);
 * negative ones ignore their rows. */
static trt_status check_targets(const sl_call *c, tls_mem targets, int64_t rows, int64_t cols) {
    if (!sl_can_read(c)) return TRT_OK;
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
    sl_span x, t, l, d;
    if ((st = sl_check_rows(&c, "logits", logits, rows, cols, stride, c.st->size, &x)) ||
        (st = sl_check_values(&c, "targets", targets, rows, 4, &t)) ||
        (st = sl_check_values(&c, "losses", losses, rows, 4, &l)) ||
        (grad && (st = sl_check_rows(&c, "dlogits", dlogits, rows, cols, dlogits_stride, c.st->size, &d))) ||
        (st = sl_check_apart(&c, &l, &x, XENT_IN_PLACE)) || (st = sl_check_apart(&c, &l, &t, XENT_IN_PLACE)))
        return st;
    if (grad) {
        bool in_place = x.begin == d.begin && stride == dlogits_stride;
        if ((!in_place && (st = sl_check_apart(&c, &d, &x, XENT_IN_PLACE))) ||
            (st = sl_check_apart(&c, &d, &t, XENT_IN_PLACE)) || (st = sl_check_apart(&c, &d, &l, XENT_IN_PLACE)))
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
