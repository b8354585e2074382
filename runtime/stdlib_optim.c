/* stdlib_optim.c - the training step's C entry points besides the
 * model's layers (include/tilec_stdlib.h, "training"; docs/stdlib.md,
 * "Training"): tls_sum_squares and its workspace query, tls_adamw and
 * tls_adamw_schedule, tls_fill, tls_add, tls_sum_rows and tls_convert, over stdlib/optim.tile, on the
 * helpers runtime/stdlib.c shares through stdlib_internal.h.
 *
 * Every kernel of the file compiles in one module (the const parameters
 * below, the same for every call; a second module per num_warps the
 * caller asks for), so the first call compiles them all and the rest of
 * a training step compiles nothing. The grids come from the shape only,
 * never from the device: the sums' partials, and so their bits, do not
 * depend on how many multiprocessors run them. None uses an atomic.
 *
 * A call checks every argument, then that no output shares memory with
 * another tensor of the call (through the buffers' device addresses, so
 * two handles on one allocation are caught too; tls_add and tls_convert
 * allow an output exactly on an input of its size: each element is read
 * by the program that writes it, before it does), and compiles before it
 * launches anything: a refused call writes nothing. Messages start with
 * the entry point's name. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/internal.h"
#include "runtime/stdlib_internal.h"
#include "tilec_stdlib.h"

/* stdlib/optim.tile's const parameters, passed to every kernel of it (the
 * file's defaults, which tests/stdlib-no-spills.sh checks, are these) */
enum {
    OPTIM_BLOCK = 1024, /* elements a program of the elementwise kernels (as runtime/stdlib.c's), and a trip of
                           the sums of squares */
    OPTIM_CHUNK = 8192, /* elements a partial sum of squares: 8 trips of a block; 124M parameters give 15k
                           partials, which one program adds up in 15 trips */
    OPTIM_COL_BLOCK = 32, /* columns a program of tls_sum_rows, and ... */
    OPTIM_GROUPS = 64,    /* ... rows a trip (layernorm_dwdb's shape: many small programs) */
};

_Static_assert(OPTIM_CHUNK % OPTIM_BLOCK == 0, "a partial sum is whole trips");
_Static_assert((long long)TLS_MAX_ELEMENTS + OPTIM_GROUPS - 1 <= INT32_MAX,
               "tls_sum_rows's i32 row indices must not wrap in the last trip");

static const char OPTIM_FILE[] = "stdlib/optim.tile";

/* The kernel `base`_`suffix` (`base`_`suffix`_`suffix2` unless suffix2 is
 * NULL) of stdlib/optim.tile, compiled (once) with the file's
 * configuration and `warps` (0: the compiler's heuristic). */
static trt_status optim_kernel(const sl_call *c, const char *base, const char *suffix, const char *suffix2, int warps,
                               trt_kernel **k) {
    static const tilec_define defs[] = {
        {"BLOCK", OPTIM_BLOCK}, {"CHUNK", OPTIM_CHUNK}, {"COL_BLOCK", OPTIM_COL_BLOCK}, {"GROUPS", OPTIM_GROUPS}};
    char name[SL_MAX_KERNEL_NAME];
    snprintf(name, sizeof name, "%s_%s%s%s", base, suffix, suffix2 ? "_" : "", suffix2 ? suffix2 : "");
    trt_compile_options co = {.num_warps = warps, .defines = defs, .ndefines = sizeof defs / sizeof defs[0]};
    return sl_kernel_with(c, OPTIM_FILE, name, &co, "its defaults", k);
}

static trt_status check_count(const sl_call *c, const char *name, int64_t v) {
    if (v < 1 || v > TLS_MAX_ELEMENTS)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s is %lld; it must be from 1 to %lld", c->op, name,
                       (long long)v, (long long)TLS_MAX_ELEMENTS);
    return TRT_OK;
}

/* That output o shares no byte with x (or, with `same_ok`, is exactly
 * x: the same first byte and length). */
static trt_status check_apart(const sl_call *c, const sl_span *o, const sl_span *x, bool same_ok) {
    if (same_ok && o->begin == x->begin && o->end == x->end) return TRT_OK;
    return sl_check_apart(c, o, x, same_ok ? "unless it is exactly that tensor (in place)" : NULL);
}

static trt_status launch(const sl_call *c, trt_kernel *k, int64_t grid, const trt_arg *args, size_t nargs) {
    return sl_launch_grid(c, k, grid, 1, 1, args, nargs);
}

/* ---- the sum of squares ---------------------------------------------------------- */

/* The bytes of the partial sums of n values, rounded up to 16 so that
 * the query never says 0 (trt_alloc refuses 0 bytes) and a tensor after
 * them stays aligned; one chunk's program writes the caller's total
 * itself and leaves them alone. */
static size_t sumsq_workspace(int64_t n) {
    size_t bytes = (size_t)sl_cdiv(n, OPTIM_CHUNK) * sizeof(float);
    return (bytes + SL_PTR_ALIGN - 1) / SL_PTR_ALIGN * SL_PTR_ALIGN;
}

trt_status tls_sum_squares_workspace(trt_device *dev, int64_t n, size_t *bytes) {
    sl_call c;
    trt_status st;
    if ((st = sl_begin(&c, dev, "tls_sum_squares_workspace", TLS_F32, NULL))) return st;
    if (!bytes) return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: bytes is NULL", c.op);
    *bytes = 0;
    if ((st = check_count(&c, "n", n))) return st;
    *bytes = sumsq_workspace(n);
    return TRT_OK;
}

trt_status tls_sum_squares(trt_device *dev, tls_dtype dt, tls_mem x, int64_t n, tls_mem out, bool accumulate,
                           tls_mem workspace, const tls_options *opt) {
    sl_call c;
    trt_status st;
    sl_span sx, so, sw;
    trt_kernel *kp, *kt = NULL;
    if ((st = sl_begin(&c, dev, "tls_sum_squares", dt, opt)) || (st = check_count(&c, "n", n)) ||
        (st = sl_check_values(&c, "x", x, n, c.st->size, &sx)) || (st = sl_check_values(&c, "out", out, 1, 4, &so)) ||
        (st = sl_check_values(&c, "workspace", workspace, (int64_t)sumsq_workspace(n), 1, &sw)) ||
        (st = check_apart(&c, &so, &sx, false)) || (st = check_apart(&c, &sw, &sx, false)) ||
        (st = check_apart(&c, &so, &sw, false)))
        return st;
    int64_t parts = sl_cdiv(n, OPTIM_CHUNK);
    if ((parts > 1 && (st = optim_kernel(&c, "sumsq_total", "f32", NULL, 0, &kt))) ||
        (st = optim_kernel(&c, "sumsq_parts", c.st->suffix, NULL, sl_main_warps(&c), &kp)))
        return st;
    /* one part: the total straight into out; else the partials into the
     * workspace, then their sum into out */
    trt_arg ap[] = {sl_arg_mem(x), sl_arg_mem(kt ? workspace : out), trt_int(n), trt_int(!kt && accumulate)};
    if ((st = launch(&c, kp, parts, ap, sizeof ap / sizeof ap[0])) || !kt) return st;
    trt_arg at[] = {sl_arg_mem(workspace), sl_arg_mem(out), trt_int(parts), trt_int(accumulate)};
    return launch(&c, kt, 1, at, sizeof at / sizeof at[0]);
}

/* ---- AdamW ------------------------------------------------------------------------ */

static trt_status check_hyper(const sl_call *c, const char *name, float v, bool ok, const char *range) {
    if (!ok) return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: %s is %g; it must be %s", c->op, name, (double)v, range);
    return TRT_OK;
}

static trt_status check_adamw_params(const sl_call *c, const tls_adamw_params *h) {
    trt_status st;
    if (!h) return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: h is NULL", c->op);
    if ((st = check_hyper(c, "lr", h->lr, h->lr >= 0 && isfinite(h->lr), "finite and >= 0")) ||
        (st = check_hyper(c, "beta1", h->beta1, h->beta1 >= 0 && h->beta1 < 1, "from 0 to less than 1")) ||
        (st = check_hyper(c, "beta2", h->beta2, h->beta2 >= 0 && h->beta2 < 1, "from 0 to less than 1")) ||
        /* eps 0 would divide 0 by 0 for a parameter whose gradients have all been 0 (a byte the data never holds) */
        (st = check_hyper(c, "eps", h->eps, h->eps > 0 && isfinite(h->eps), "finite and > 0")) ||
        (st = check_hyper(c, "weight_decay", h->weight_decay, h->weight_decay >= 0 && isfinite(h->weight_decay),
                          "finite and >= 0")) ||
        (st = check_hyper(c, "grad_scale", h->grad_scale, h->grad_scale > 0 && isfinite(h->grad_scale),
                          "finite and > 0")) ||
        (st = check_hyper(c, "max_norm", h->max_norm, h->max_norm >= 0 && isfinite(h->max_norm),
                          "finite and >= 0 (0: no clipping)")))
        return st;
    if (h->step < 1)
        return rt_fail(c->d, TRT_ERR_INVALID_ARGUMENT, "%s: step is %lld; it must be >= 1 (1 for the first update)",
                       c->op, (long long)h->step);
    return TRT_OK;
}

/* torch.optim.AdamW's constants that change with the step, in double,
 * rounded to f32 once: 1 - lr wd, lr / (1 - beta1^step),
 * 1 / sqrt(1 - beta2^step). */
static void schedule_of(const tls_adamw_params *h, float out[TLS_ADAMW_SCHEDULE]) {
    double lr = h->lr, bc1 = 1 - pow(h->beta1, (double)h->step), bc2 = 1 - pow(h->beta2, (double)h->step);
    out[0] = (float)(1 - lr * h->weight_decay);
    out[1] = (float)(lr / bc1);
    out[2] = (float)(1 / sqrt(bc2));
}

trt_status tls_adamw_schedule(trt_device *dev, const tls_adamw_params *h, float out[TLS_ADAMW_SCHEDULE]) {
    sl_call c;
    trt_status st;
    if ((st = sl_begin(&c, dev, "tls_adamw_schedule", TLS_F32, NULL)) || (st = check_adamw_params(&c, h))) return st;
    if (!out) return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: out is NULL", c.op);
    schedule_of(h, out);
    return TRT_OK;
}

trt_status tls_adamw(trt_device *dev, tls_dtype dt, tls_mem p, tls_mem g, tls_mem m, tls_mem v, tls_mem p_copy,
                     tls_mem grad_sumsq, int64_t n, const tls_adamw_params *h, const tls_options *opt) {
    sl_call c;
    trt_status st;
    trt_kernel *k;
    sl_span sp, sg, sm, sv, sc = {0}, ss = {0}, sh = {0};
    if ((st = sl_begin(&c, dev, "tls_adamw", dt, opt)) || (st = check_adamw_params(&c, h)) ||
        (st = check_count(&c, "n", n)) || (st = sl_check_values(&c, "p", p, n, 4, &sp)) ||
        (st = sl_check_values(&c, "g", g, n, c.st->size, &sg)) || (st = sl_check_values(&c, "m", m, n, 4, &sm)) ||
        (st = sl_check_values(&c, "v", v, n, 4, &sv)))
        return st;
    bool has_copy = p_copy.buffer.handle != 0, clip = h->max_norm > 0, sched = h->schedule.buffer.handle != 0;
    if (has_copy && (st = sl_check_values(&c, "p_copy", p_copy, n, c.st->size, &sc))) return st;
    if (clip && (st = sl_check_values(&c, "grad_sumsq", grad_sumsq, 1, 4, &ss))) return st;
    if (sched && (st = sl_check_values(&c, "schedule", h->schedule, TLS_ADAMW_SCHEDULE, 4, &sh))) return st;
    /* the outputs (p, m, v, p_copy) apart from each other and from the inputs (g, grad_sumsq, schedule) */
    const sl_span *t[] = {&sp, &sm, &sv, &sc, &sg, &ss, &sh};
    const bool present[] = {true, true, true, has_copy, true, clip, sched};
    for (size_t i = 0; i < 4; i++)
        for (size_t j = i + 1; j < sizeof t / sizeof t[0]; j++)
            if (present[i] && present[j] && (st = check_apart(&c, t[i], t[j], false))) return st;
    if ((st = optim_kernel(&c, "adamw", c.st->suffix, NULL, sl_main_warps(&c), &k))) return st;
    float sv3[TLS_ADAMW_SCHEDULE];
    schedule_of(h, sv3);
    trt_arg a[] = {sl_arg_mem(p),
                   sl_arg_mem(g),
                   sl_arg_mem(m),
                   sl_arg_mem(v),
                   sl_arg_mem(has_copy ? p_copy : p), /* without a copy, never written */
                   sl_arg_mem(clip ? grad_sumsq : p), /* without clipping, never read */
                   sl_arg_mem(sched ? h->schedule : p), /* without a schedule, never read */
                   trt_int(n),
                   trt_float(sv3[0]),
                   trt_float(sv3[1]),
                   trt_float(h->beta1),
                   trt_float((float)(1 - (double)h->beta1)),
                   trt_float(h->beta2),
                   trt_float((float)(1 - (double)h->beta2)),
                   trt_float(sv3[2]),
                   trt_float(h->eps),
                   trt_float(h->grad_scale),
                   trt_float(h->max_norm),
                   trt_int(has_copy),
                   trt_int(sched)};
    return launch(&c, k, sl_cdiv(n, OPTIM_BLOCK), a, sizeof a / sizeof a[0]);
}

/* ---- y = a + b ------------------------------------------------------------------- */

trt_status tls_fill(trt_device *dev, tls_dtype dt, tls_mem y, int64_t n, float value, const tls_options *opt) {
    sl_call c;
    trt_status st;
    trt_kernel *k;
    sl_span sy;
    if ((st = sl_begin(&c, dev, "tls_fill", dt, opt)) || (st = check_count(&c, "n", n)) ||
        (st = sl_check_values(&c, "y", y, n, c.st->size, &sy)) ||
        (st = optim_kernel(&c, "fill", c.st->suffix, NULL, sl_main_warps(&c), &k)))
        return st;
    trt_arg args[] = {sl_arg_mem(y), trt_int(n), trt_float(value)};
    return launch(&c, k, sl_cdiv(n, OPTIM_BLOCK), args, sizeof args / sizeof args[0]);
}

trt_status tls_add(trt_device *dev, tls_dtype dt, tls_mem a, tls_mem b, tls_mem y, int64_t n,
                   const tls_options *opt) {
    sl_call c;
    trt_status st;
    trt_kernel *k;
    sl_span sa, sb, sy;
    if ((st = sl_begin(&c, dev, "tls_add", dt, opt)) || (st = check_count(&c, "n", n)) ||
        (st = sl_check_values(&c, "a", a, n, c.st->size, &sa)) ||
        (st = sl_check_values(&c, "b", b, n, c.st->size, &sb)) ||
        (st = sl_check_values(&c, "y", y, n, c.st->size, &sy)) || (st = check_apart(&c, &sy, &sa, true)) ||
        (st = check_apart(&c, &sy, &sb, true)) || (st = optim_kernel(&c, "vadd", c.st->suffix, NULL, sl_main_warps(&c), &k)))
        return st;
    trt_arg args[] = {sl_arg_mem(a), sl_arg_mem(b), sl_arg_mem(y), trt_int(n)};
    return launch(&c, k, sl_cdiv(n, OPTIM_BLOCK), args, sizeof args / sizeof args[0]);
}

/* ---- column sums ------------------------------------------------------------------- */

trt_status tls_sum_rows(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem out, int64_t rows, int64_t cols,
                        int64_t stride, bool accumulate, const tls_options *opt) {
    sl_call c;
    trt_status st;
    trt_kernel *k;
    sl_span sx, so;
    if ((st = sl_begin(&c, dev, "tls_sum_rows", dt, opt)) || (st = check_count(&c, "rows", rows)) ||
        (st = check_count(&c, "cols", cols)))
        return st;
    if (stride < cols)
        return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: stride is %lld, less than cols (%lld): rows would overlap",
                       c.op, (long long)stride, (long long)cols);
    /* x spans (rows - 1) * stride + cols elements, if that fits memory */
    if (rows > 1 && (uint64_t)stride > ((uint64_t)INT64_MAX / c.st->size - (uint64_t)cols) / (uint64_t)(rows - 1))
        return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: x: %lld rows %lld elements apart do not fit in memory", c.op,
                       (long long)rows, (long long)stride);
    if ((st = sl_check_values(&c, "x", x, (rows - 1) * stride + cols, c.st->size, &sx)) ||
        (st = sl_check_values(&c, "out", out, cols, c.st->size, &so)) || (st = check_apart(&c, &so, &sx, false)) ||
        (st = optim_kernel(&c, "sum_rows", c.st->suffix, NULL, sl_main_warps(&c), &k)))
        return st;
    trt_arg a[] = {sl_arg_mem(x), sl_arg_mem(out), trt_int(rows), trt_int(cols), trt_int(stride), trt_int(accumulate)};
    return launch(&c, k, sl_cdiv(cols, OPTIM_COL_BLOCK), a, sizeof a / sizeof a[0]);
}

/* ---- conversions -------------------------------------------------------------------- */

trt_status tls_convert(trt_device *dev, tls_dtype from, tls_mem x, tls_dtype to, tls_mem y, int64_t n,
                       const tls_options *opt) {
    sl_call c;
    trt_status st;
    trt_kernel *k;
    sl_span sx, sy;
    if ((st = sl_begin(&c, dev, "tls_convert", from, opt))) return st;
    if ((unsigned)to >= sizeof sl_storages / sizeof sl_storages[0])
        return rt_fail(dev, TRT_ERR_INVALID_ARGUMENT, "%s: unknown dtype %d for `to` (TLS_F32, TLS_F16 or TLS_BF16)",
                       c.op, (int)to);
    const sl_storage *st_to = &sl_storages[to];
    if ((st = check_count(&c, "n", n)) || (st = sl_check_values(&c, "x", x, n, c.st->size, &sx)) ||
        (st = sl_check_values(&c, "y", y, n, st_to->size, &sy)) || (st = check_apart(&c, &sy, &sx, true)))
        return st;
    if ((st = optim_kernel(&c, "convert", c.st->suffix, st_to->suffix, sl_main_warps(&c), &k))) return st;
    trt_arg a[] = {sl_arg_mem(x), sl_arg_mem(y), trt_int(n)};
    return launch(&c, k, sl_cdiv(n, OPTIM_BLOCK), a, sizeof a / sizeof a[0]);
}
