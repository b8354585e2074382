/* The stdlib's C entry points (include/tilec_stdlib.h) on one device.
 *
 *   test_stdlib_api cpu|cuda
 *
 * Every entry point runs for f32, f16 and bf16 storage on random non-zero
 * inputs, at sizes with tails (rows 1, 7, 33; widths 1, 100, 1000, 5000
 * and the widest the kernels take; n from 1 to 70001), with strides
 * wider than the rows and tensors at byte offsets into their buffers.
 * Every buffer starts poisoned (all bits set: NaN in every type), so an
 * output that is not written shows, and so does a kernel that reads or
 * writes past its rows: the check ends with every byte outside the
 * tensor still poisoned. Results are compared with a float64 C reference
 * of the stored inputs, within the tolerances each test states (dropout
 * bit for bit, its mask from a C Philox). Misuse is a status and a
 * message. ctest runs the cuda variant through tests/on-cuda.sh: without
 * a GPU this program says "cannot open a device" and the run is skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec_stdlib.h"
#include "stdlib_test_main.h"
#include "half_float.h"

static trt_device *dev;

#define OK(call)                                                                                        \
    do {                                                                                                \
        trt_status st_ = (call);                                                                        \
        if (st_ != TRT_OK) fail_msg("%s: %s: %s", #call, trt_status_name(st_), trt_last_error(dev)); \
    } while (0)

/* ---- storage types ---------------------------------------------------------- */

/* Round a float to f16 bits, nearest even (finite, normal range here). */
typedef struct dtype {
    tls_dtype id;
    const char *name;
    size_t size;
    void (*put)(void *p, size_t i, float v);
    float (*get)(const void *p, size_t i);
    double tol; /* the storage's rounding, relative */
    double tiny; /* absolute error allowed near zero: f16's subnormal step, else f32's smallest normal (GPU flushes) */
} dtype;
static const dtype dtypes[] = {{TLS_F32, "f32", 4, put_f32, get_f32, 1e-5, 0x1p-126},
                               {TLS_F16, "f16", 2, put_f16, get_f16, 2e-3, 0x1p-24},
                               {TLS_BF16, "bf16", 2, put_bf16, get_bf16, 1.6e-2, 0x1p-126}};
static const dtype f32_type = {TLS_F32, "f32", 4, put_f32, get_f32, 1e-5, 0x1p-126};

/* Random values with a fractional part, both signs, never all zero. */
static float rand_f32(void) { return (float)(rand() % 2000001 - 1000000) / 1021.0f; }

/* ---- tensors in poisoned buffers --------------------------------------------- */

/* rows x cols elements, rows `stride` apart, `off` bytes into a buffer of
 * exactly off + rows * stride elements; host holds the whole buffer. */
typedef struct tensor {
    const dtype *dt;
    int64_t rows, cols, stride;
    size_t off, bytes;
    unsigned char *host;
    trt_buffer buf;
} tensor;

static tensor make(const dtype *dt, int64_t rows, int64_t cols, int64_t stride, size_t off) {
    tensor t = {dt, rows, cols, stride, off, off + (size_t)(rows * stride) * dt->size, NULL, {0}};
    t.host = malloc(t.bytes);
    assert_non_null(t.host);
    memset(t.host, 0xff, t.bytes); /* NaN in every type */
    return t;
}
static tensor vec(const dtype *dt, int64_t n, size_t off) { return make(dt, 1, n, n, off); }
static size_t ix(const tensor *t, int64_t r, int64_t i) { return (size_t)(r * t->stride + i); }
static float get(const tensor *t, int64_t r, int64_t i) { return t->dt->get(t->host + t->off, ix(t, r, i)); }
/* The same value, NaN as NaN (values come back through their storage type, exactly). */
static bool same_bits(float a, float b) { return a == b || (a != a && b != b); }
static void put(tensor *t, int64_t r, int64_t i, float v) { t->dt->put(t->host + t->off, ix(t, r, i), v); }
static tls_mem mem(const tensor *t) { return tls_mem_at(t->buf, t->off); }

/* Fills every element with f(r, i) (the padding stays poisoned). */
static void fill(tensor *t, float (*f)(int64_t r, int64_t i)) {
    for (int64_t r = 0; r < t->rows; r++)
        for (int64_t i = 0; i < t->cols; i++) put(t, r, i, f(r, i));
}
static float any(int64_t r, int64_t i) { return (void)r, (void)i, rand_f32(); }

static void send(tensor *t) {
    OK(trt_alloc(dev, t->bytes, &t->buf));
    OK(trt_write(dev, t->buf, 0, t->host, t->bytes));
}
/* Reads the buffer back; everything outside the tensor must still be
 * poison. */
static void fetch(tensor *t, const char *what) {
    OK(trt_sync(dev));
    OK(trt_read(dev, t->buf, 0, t->host, t->bytes));
    for (size_t b = 0; b < t->bytes; b++) {
        bool inside = false;
        if (b >= t->off) {
            size_t e = (b - t->off) / t->dt->size;
            inside = (int64_t)(e % (size_t)t->stride) < t->cols;
        }
        if (!inside && t->host[b] != 0xff)
            fail_msg("%s: byte %zu of its buffer, outside the tensor, was written (%#x) on %s", what, b, t->host[b],
                     trt_device_name(dev));
    }
}
static void drop(tensor *t) {
    OK(trt_free(dev, t->buf));
    free(t->host);
}

/* The shapes of the row tests: rows, cols, and a padding of the stride.
 * They give the kernels ALIGN (runtime/stdlib.c's row_align) 1 (cols 1,
 * odd paddings), 4 and 8, the largest, also at 2000 (a partial row: the
 * last columns' accesses masked off whole) and 4096 (full rows). */
static const int row_shapes[][3] = {{1, 1, 0},    {7, 1, 3},     {33, 1, 0},    {1, 100, 4},  {7, 100, 0},
                                    {33, 100, 1}, {1, 1000, 0},  {7, 1000, 24}, {33, 1000, 3}, {1, 5000, 8},
                                    {7, 5000, 0}, {33, 5000, 5}, {5, 2000, 16}, {3, 4096, 0}};
enum { NSHAPES = sizeof row_shapes / sizeof row_shapes[0] };
/* a byte offset of a tensor in its buffer, varying with the shape */
static size_t offset_of(size_t s) { return 16 * (s % 3); }

/* ---- softmax --------------------------------------------------------------------- */

/* Checks rows of y = softmax(x) and dx = softmax'(y) dy against float64 from
 * the stored x, y and dy. Tolerance: the storage's rounding relative to the
 * row's largest y; for dx relative to max |y| (|dy| + sum |dy y|), the size
 * of what dy - sum(dy y) cancels. */
static void check_softmax(const char *what, const tensor *x, const tensor *y, const tensor *dy, const tensor *dx) {
    const dtype *dt = x->dt;
    double *ref = malloc(sizeof(double) * (size_t)x->cols);
    for (int64_t r = 0; r < x->rows; r++) {
        double mx = -INFINITY, sum = 0, ymax = 0, dot = 0, absdot = 0, gscale = 0;
        for (int64_t i = 0; i < x->cols; i++) mx = fmax(mx, get(x, r, i));
        for (int64_t i = 0; i < x->cols; i++) sum += ref[i] = exp(get(x, r, i) - mx);
        for (int64_t i = 0; i < x->cols; i++) ref[i] /= sum, ymax = fmax(ymax, ref[i]);
        for (int64_t i = 0; i < x->cols; i++) {
            double p = (double)get(dy, r, i) * get(y, r, i);
            dot += p, absdot += fabs(p);
        }
        for (int64_t i = 0; i < x->cols; i++) gscale = fmax(gscale, fabs(get(y, r, i)) * (fabs(get(dy, r, i)) + absdot));
        for (int64_t i = 0; i < x->cols; i++) {
            double got = get(y, r, i);
            if (!(fabs(got - ref[i]) <= dt->tol * ymax + 1e-30))
                fail_msg("%s: y[%lld][%lld] = %.8g, want %.8g on %s", what, (long long)r, (long long)i, got, ref[i],
                         trt_device_name(dev));
            double want = get(y, r, i) * (get(dy, r, i) - dot), g = get(dx, r, i);
            if (!(fabs(g - want) <= dt->tol * gscale + 1e-30))
                fail_msg("%s: dx[%lld][%lld] = %.8g, want %.8g on %s", what, (long long)r, (long long)i, g, want,
                         trt_device_name(dev));
        }
    }
    free(ref);
}

static float logit(int64_t r, int64_t i) { return (void)r, (void)i, rand_f32() / 100; } /* about [-10, 10] */
static float small(int64_t r, int64_t i) { return (void)r, (void)i, rand_f32() / 1000; }

static void run_softmax(const dtype *dt, int rows, int cols, int xpad, int ypad, size_t off) {
    char what[96];
    snprintf(what, sizeof what, "softmax %s %dx%d strides %d %d", dt->name, rows, cols, cols + xpad, cols + ypad);
    tensor x = make(dt, rows, cols, cols + xpad, off), y = make(dt, rows, cols, cols + ypad, 0),
           dy = make(dt, rows, cols, cols + ypad, off), dx = make(dt, rows, cols, cols + ypad, 16);
    fill(&x, logit), fill(&dy, small);
    send(&x), send(&y), send(&dy), send(&dx);
    OK(tls_softmax(dev, dt->id, mem(&x), mem(&y), rows, cols, x.stride, y.stride, NULL));
    OK(tls_softmax_bwd(dev, dt->id, mem(&y), mem(&dy), mem(&dx), rows, cols, y.stride, NULL));
    fetch(&y, what), fetch(&dx, what);
    check_softmax(what, &x, &y, &dy, &dx);
    /* in place (y = x, then dx = dy): each row's values as out of place */
    OK(tls_softmax(dev, dt->id, mem(&x), mem(&x), rows, cols, x.stride, x.stride, NULL));
    OK(tls_softmax_bwd(dev, dt->id, mem(&y), mem(&dy), mem(&dy), rows, cols, y.stride, NULL));
    fetch(&x, what), fetch(&dy, what);
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < cols; i++)
            if (!same_bits(get(&x, r, i), get(&y, r, i)) || !same_bits(get(&dy, r, i), get(&dx, r, i)))
                fail_msg("%s in place: [%d][%d]: y %g (apart %g), dx %g (apart %g) on %s", what, r, i,
                         (double)get(&x, r, i), (double)get(&y, r, i), (double)get(&dy, r, i), (double)get(&dx, r, i),
                         trt_device_name(dev));
    drop(&x), drop(&y), drop(&dy), drop(&dx);
}

static void test_softmax(void **state) {
    (void)state;
    for (size_t t = 0; t < 3; t++) {
        for (size_t s = 0; s < NSHAPES; s++)
            run_softmax(&dtypes[t], row_shapes[s][0], row_shapes[s][1], row_shapes[s][2], (int)(s % 2) * 5,
                        offset_of(s));
        run_softmax(&dtypes[t], 2, TLS_SOFTMAX_MAX_COLS, 0, 0, 0); /* the widest row */
    }
}

/* ---- layernorm ------------------------------------------------------------------- */

static float offset_value(int64_t r, int64_t i) { return (void)r, (void)i, rand_f32() / 300 + 2; } /* the mean must come out */
static float weight(int64_t r, int64_t i) { return (void)r, (void)i, 1 + rand_f32() / 2000; }

/* Tolerances (as test_runtime_devices_stdlib's tests): mean 1e-6 and rstd
 * 2e-6 relative (f32 sums, the GPU's approximate rsqrt); y the storage's
 * rounding relative to |y| + 1; dx the storage's rounding plus 1e-5,
 * relative to 4 rstd max |w dy| (what cancels in w dy - (xhat c1 + c2));
 * dw and db the same relative to the sums of |dy xhat| + |dy|; near zero,
 * the storage's tiny (f16 dw of 2e-6 is subnormal: steps of 2^-24). */
static void run_layernorm(const dtype *dt, int rows, int cols, int pad, size_t off) {
    char what[96];
    snprintf(what, sizeof what, "layernorm %s %dx%d stride %d", dt->name, rows, cols, cols + pad);
    const int stride = cols + pad;
    const float eps = 1e-5f;
    tensor x = make(dt, rows, cols, stride, off), y = make(dt, rows, cols, stride, 16), dy = make(dt, rows, cols, stride, 0),
           dx = make(dt, rows, cols, stride, off), w = vec(dt, cols, off), b = vec(dt, cols, 0), dw = vec(dt, cols, 16),
           db = vec(dt, cols, off), mean = vec(&f32_type, rows, off), rstd = vec(&f32_type, rows, 16);
    size_t ws_bytes;
    OK(tls_layernorm_bwd_workspace(dev, rows, cols, &ws_bytes));
    tensor ws = vec(&f32_type, (int64_t)(ws_bytes / 4), 32); /* its contents do not matter: poison */
    fill(&x, offset_value), fill(&dy, small), fill(&w, weight), fill(&b, small);
    send(&x), send(&y), send(&dy), send(&dx), send(&w), send(&b), send(&dw), send(&db), send(&mean), send(&rstd);
    send(&ws);
    OK(tls_layernorm(dev, dt->id, mem(&x), mem(&y), mem(&w), mem(&b), mem(&mean), mem(&rstd), rows, cols, stride, eps,
                     NULL));
    OK(tls_layernorm_bwd(dev, dt->id, mem(&x), mem(&dy), mem(&dx), mem(&w), mem(&mean), mem(&rstd), mem(&dw), mem(&db),
                         rows, cols, stride, mem(&ws), NULL));
    fetch(&y, what), fetch(&dx, what), fetch(&dw, what), fetch(&db, what), fetch(&mean, what), fetch(&rstd, what);
    fetch(&ws, what); /* nothing past the workspace */
    double *xh = malloc(sizeof(double) * (size_t)cols), *rdw = calloc((size_t)cols, sizeof(double)),
           *rdb = calloc((size_t)cols, sizeof(double)), *adw = calloc((size_t)cols, sizeof(double));
    const char *where = trt_device_name(dev);
    for (int r = 0; r < rows; r++) {
        double mu = 0, var = 0;
        for (int i = 0; i < cols; i++) mu += get(&x, r, i);
        mu /= cols;
        for (int i = 0; i < cols; i++) var += (get(&x, r, i) - mu) * (get(&x, r, i) - mu);
        var /= cols;
        double rs = 1 / sqrt(var + eps), gm = get(&mean, 0, r), gr = get(&rstd, 0, r);
        if (!(fabs(gm - mu) <= 1e-6 * (fabs(mu) + 1)) || !(fabs(gr - rs) <= 2e-6 * rs))
            fail_msg("%s: row %d mean %.8g rstd %.8g, want %.8g %.8g on %s", what, r, gm, gr, mu, rs, where);
        double c1 = 0, c2 = 0, scale = 0;
        for (int i = 0; i < cols; i++) {
            xh[i] = (get(&x, r, i) - mu) * rs;
            double wdy = get(&w, 0, i) * get(&dy, r, i);
            c1 += xh[i] * wdy, c2 += wdy, scale = fmax(scale, fabs(wdy));
            double want = xh[i] * get(&w, 0, i) + get(&b, 0, i), got = get(&y, r, i);
            if (!(fabs(got - want) <= dt->tol * (fabs(want) + 1) + 1e-5))
                fail_msg("%s: y[%d][%d] = %.8g, want %.8g on %s", what, r, i, got, want, where);
            rdw[i] += get(&dy, r, i) * xh[i], rdb[i] += get(&dy, r, i);
            adw[i] += fabs(get(&dy, r, i) * xh[i]) + fabs(get(&dy, r, i));
        }
        c1 /= cols, c2 /= cols;
        for (int i = 0; i < cols; i++) {
            double wdy = get(&w, 0, i) * get(&dy, r, i);
            double want = (wdy - (xh[i] * c1 + c2)) * rs, got = get(&dx, r, i);
            double tol = (dt->tol + 1e-5) * (scale * 4 * rs) + dt->tiny;
            if (!(fabs(got - want) <= tol))
                fail_msg("%s: dx[%d][%d] = %.8g, want %.8g (tol %.3g) on %s", what, r, i, got, want, tol, where);
        }
    }
    for (int i = 0; i < cols; i++) {
        double tol = (dt->tol + 1e-5) * adw[i] + dt->tiny;
        if (!(fabs(get(&dw, 0, i) - rdw[i]) <= tol) || !(fabs(get(&db, 0, i) - rdb[i]) <= tol))
            fail_msg("%s: dw[%d] %.8g db %.8g, want %.8g %.8g (tol %.3g) on %s", what, i, get(&dw, 0, i), get(&db, 0, i),
                     rdw[i], rdb[i], tol, where);
    }
    free(xh), free(rdw), free(rdb), free(adw);
    drop(&x), drop(&y), drop(&dy), drop(&dx), drop(&w), drop(&b), drop(&dw), drop(&db), drop(&mean), drop(&rstd);
    drop(&ws);
}

static void test_layernorm(void **state) {
    (void)state;
    for (size_t t = 0; t < 3; t++) {
        for (size_t s = 0; s < NSHAPES; s++)
            run_layernorm(&dtypes[t], row_shapes[s][0], row_shapes[s][1], row_shapes[s][2], offset_of(s));
        run_layernorm(&dtypes[t], 3, TLS_NORM_MAX_COLS, 0, 0);
    }
}

/* ---- rmsnorm ---------------------------------------------------------------------- */

/* every third row scaled by 1e-3: its mean square (about 1e-6) is below
 * eps, which must then be added where it belongs */
static float rms_value(int64_t r, int64_t i) {
    return (void)i, (float)((rand_f32() / 300 + 1) * (r % 3 == 2 ? 1e-3 : 1));
}

/* Tolerances (as test_runtime_devices_stdlib's rmsnorm test): rstd 2e-6 relative;
 * y the storage's rounding relative to |y|; dx the storage's rounding plus
 * 1e-5 relative to 2 rstd (|w dy| + |xhat| mean |xhat w dy|); dw the same
 * relative to the sum of |dy xhat|; near zero, the storage's tiny. */
static void run_rmsnorm(const dtype *dt, int rows, int cols, int pad, size_t off) {
    char what[96];
    snprintf(what, sizeof what, "rmsnorm %s %dx%d stride %d", dt->name, rows, cols, cols + pad);
    const int stride = cols + pad;
    const float eps = 1e-5f;
    tensor x = make(dt, rows, cols, stride, off), y = make(dt, rows, cols, stride, 0), dy = make(dt, rows, cols, stride, 16),
           dx = make(dt, rows, cols, stride, off), w = vec(dt, cols, 16), dw = vec(dt, cols, off),
           rstd = vec(&f32_type, rows, off);
    size_t ws_bytes;
    OK(tls_rmsnorm_bwd_workspace(dev, rows, cols, &ws_bytes));
    tensor ws = vec(&f32_type, (int64_t)(ws_bytes / 4), 0);
    fill(&x, rms_value), fill(&dy, small), fill(&w, weight);
    send(&x), send(&y), send(&dy), send(&dx), send(&w), send(&dw), send(&rstd), send(&ws);
    OK(tls_rmsnorm(dev, dt->id, mem(&x), mem(&y), mem(&w), mem(&rstd), rows, cols, stride, eps, NULL));
    OK(tls_rmsnorm_bwd(dev, dt->id, mem(&x), mem(&dy), mem(&dx), mem(&w), mem(&rstd), mem(&dw), rows, cols, stride,
                       mem(&ws), NULL));
    fetch(&y, what), fetch(&dx, what), fetch(&dw, what), fetch(&rstd, what), fetch(&ws, what);
    double *xh = malloc(sizeof(double) * (size_t)cols), *rdw = calloc((size_t)cols, sizeof(double)),
           *adw = calloc((size_t)cols, sizeof(double));
    const char *where = trt_device_name(dev);
    for (int r = 0; r < rows; r++) {
        double ms = 0;
        for (int i = 0; i < cols; i++) ms += (double)get(&x, r, i) * get(&x, r, i);
        double rs = 1 / sqrt(ms / cols + eps), gr = get(&rstd, 0, r);
        if (!(fabs(gr - rs) <= 2e-6 * rs)) fail_msg("%s: row %d rstd %.8g, want %.8g on %s", what, r, gr, rs, where);
        double c = 0, cabs = 0;
        for (int i = 0; i < cols; i++) {
            xh[i] = get(&x, r, i) * rs;
            double wdy = get(&w, 0, i) * get(&dy, r, i);
            c += xh[i] * wdy, cabs += fabs(xh[i] * wdy);
            double want = xh[i] * get(&w, 0, i), got = get(&y, r, i);
            if (!(fabs(got - want) <= dt->tol * fabs(want) + dt->tiny))
                fail_msg("%s: y[%d][%d] = %.8g, want %.8g on %s", what, r, i, got, want, where);
            rdw[i] += get(&dy, r, i) * xh[i], adw[i] += fabs(get(&dy, r, i) * xh[i]);
        }
        c /= cols, cabs /= cols;
        for (int i = 0; i < cols; i++) {
            double wdy = get(&w, 0, i) * get(&dy, r, i);
            double want = (wdy - xh[i] * c) * rs, got = get(&dx, r, i);
            double tol = (dt->tol + 1e-5) * 2 * rs * (fabs(wdy) + fabs(xh[i]) * cabs) + dt->tiny;
            if (!(fabs(got - want) <= tol))
                fail_msg("%s: dx[%d][%d] = %.8g, want %.8g (tol %.3g) on %s", what, r, i, got, want, tol, where);
        }
    }
    for (int i = 0; i < cols; i++) {
        double got = get(&dw, 0, i), tol = (dt->tol + 1e-5) * adw[i] + dt->tiny;
        if (!(fabs(got - rdw[i]) <= tol))
            fail_msg("%s: dw[%d] = %.8g, want %.8g (tol %.3g) on %s", what, i, got, rdw[i], tol, where);
    }
    free(xh), free(rdw), free(adw);
    drop(&x), drop(&y), drop(&dy), drop(&dx), drop(&w), drop(&dw), drop(&rstd), drop(&ws);
}

static void test_rmsnorm(void **state) {
    (void)state;
    for (size_t t = 0; t < 3; t++) {
        for (size_t s = 0; s < NSHAPES; s++)
            run_rmsnorm(&dtypes[t], row_shapes[s][0], row_shapes[s][1], row_shapes[s][2], offset_of(s));
        run_rmsnorm(&dtypes[t], 3, TLS_NORM_MAX_COLS, 0, 16);
    }
}

/* ---- elementwise ------------------------------------------------------------------- */

static const int elementwise_sizes[] = {1, 7, 1000, 5000, 70001};

/* gelu and its gradient against the stable float64 form s = 1 / (1 +
 * exp(-2u)), y = x s, gelu' = s + x u' / (2 cosh(u)^2), u = sqrt(2/pi) (x +
 * 0.044715 x^3), on values mostly in [-10, 10] with large ones in the tail.
 * Tolerance relative to |y|, or for dx to |dy| (s + |x u' / (2 cosh^2)|):
 * the storage's rounding plus 2^-20 (1 + |u|) (exp of an argument rounded
 * in f32, the GPU's approximate exp2); near zero, the storage's tiny. */
static void test_gelu(void **state) {
    (void)state;
    const double special[] = {1e4, -1e4, 100.5, -100.5, 20, -20, 5, -5, -0.75, 0, 1e-3, -1e-3};
    const double k = 0.7978845608028654, c = 0.044715;
    for (size_t t = 0; t < 3; t++) {
        const dtype *dt = &dtypes[t];
        for (size_t s = 0; s < sizeof elementwise_sizes / sizeof elementwise_sizes[0]; s++) {
            int n = elementwise_sizes[s];
            char what[64];
            snprintf(what, sizeof what, "gelu %s n=%d", dt->name, n);
            size_t nspecial = sizeof special / sizeof special[0];
            tensor x = vec(dt, n, offset_of(s)), y = vec(dt, n, 16), dy = vec(dt, n, 0), dx = vec(dt, n, offset_of(s + 1));
            for (int i = 0; i < n; i++) {
                size_t last = (size_t)(n - 1 - i); /* the special values at the end, in the tail */
                put(&x, 0, i, n > 1 && last < nspecial ? (float)special[last] : rand_f32() / 100);
                put(&dy, 0, i, rand_f32() / 1000);
            }
            send(&x), send(&y), send(&dy), send(&dx);
            OK(tls_gelu(dev, dt->id, mem(&x), mem(&y), n, NULL));
            OK(tls_gelu_bwd(dev, dt->id, mem(&x), mem(&dy), mem(&dx), n, NULL));
            fetch(&y, what), fetch(&dx, what);
            for (int i = 0; i < n; i++) {
                double v = get(&x, 0, i), g = get(&dy, 0, i);
                double u = k * (v + c * v * v * v), sg = 1 / (1 + exp(-2 * u)), ch = cosh(u);
                double du = k * (1 + 3 * c * v * v), part = v * du / (2 * ch * ch);
                double rel = dt->tol + 0x1p-20 * (1 + fabs(u));
                double want = v * sg, got = get(&y, 0, i);
                if (!(fabs(got - want) <= rel * fabs(want) + dt->tiny))
                    fail_msg("%s: y[%d] = %.9g for x = %.9g, want %.9g on %s", what, i, got, v, want, trt_device_name(dev));
                want = g * (sg + part), got = get(&dx, 0, i);
                if (!(fabs(got - want) <= rel * fabs(g) * (sg + fabs(part)) + dt->tiny))
                    fail_msg("%s: dx[%d] = %.9g for x = %.9g, dy = %.9g, want %.9g on %s", what, i, got, v, g, want,
                             trt_device_name(dev));
            }
            drop(&x), drop(&y), drop(&dy), drop(&dx);
        }
    }
}

/* Philox4x32-10 as docs/language.md spells it out; rand(seed, i) is its
 * first word for counter (i, 0, 0, 0) and key (seed's low, high 32 bits),
 * folded to [0, 2^31) and scaled by the f32 0x1.fffffep-32. */
static float rand_ref(int64_t seed, int32_t offset) {
    uint32_t ctr[4] = {(uint32_t)offset, 0, 0, 0}, k0 = (uint32_t)(uint64_t)seed, k1 = (uint32_t)((uint64_t)seed >> 32);
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0], p2 = (uint64_t)0xCD9E8D57u * ctr[2];
        uint32_t c0 = (uint32_t)(p2 >> 32) ^ ctr[1] ^ k0, c2 = (uint32_t)(p0 >> 32) ^ ctr[3] ^ k1;
        ctr[0] = c0, ctr[1] = (uint32_t)p2, ctr[2] = c2, ctr[3] = (uint32_t)p0;
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
    uint32_t u = ctr[0];
    if (u >> 31) u = ~u;
    return (float)u * 0x1.fffffep-32f;
}

/* dropout and its gradient bit for bit: element i is kept where
 * rand(seed, i) >= p, as x * (1 / (1 - p)) in f32 rounded once to storage,
 * else 0; the gradient keeps the same elements of dy. */
static void test_dropout(void **state) {
    (void)state;
    const float ps[] = {0.0f, 0.1f, 0.5f, 1.0f};
    const int64_t seeds[] = {1234, -7, 0x5eed5eed5eed5eedLL};
    for (size_t t = 0; t < 3; t++) {
        const dtype *dt = &dtypes[t];
        for (size_t s = 0; s < sizeof elementwise_sizes / sizeof elementwise_sizes[0]; s++)
            for (size_t q = 0; q < sizeof ps / sizeof ps[0]; q++) {
                int n = elementwise_sizes[s];
                float p = ps[q];
                int64_t seed = seeds[(s + q) % 3];
                char what[96];
                snprintf(what, sizeof what, "dropout %s n=%d p=%g seed %lld", dt->name, n, (double)p, (long long)seed);
                tensor x = vec(dt, n, offset_of(s)), y = vec(dt, n, 0), dy = vec(dt, n, 16), dx = vec(dt, n, offset_of(q));
                fill(&x, any), fill(&dy, small);
                send(&x), send(&y), send(&dy), send(&dx);
                OK(tls_dropout(dev, dt->id, mem(&x), mem(&y), n, p, seed, NULL));
                OK(tls_dropout_bwd(dev, dt->id, mem(&dy), mem(&dx), n, p, seed, NULL));
                fetch(&y, what), fetch(&dx, what);
                volatile float one_minus = 1.0f - p, scale = 1.0f / one_minus;
                for (int i = 0; i < n; i++) {
                    bool keep = rand_ref(seed, i) >= p;
                    unsigned char want[4], wantg[4];
                    dt->put(want, 0, keep ? get(&x, 0, i) * scale : 0.0f);
                    dt->put(wantg, 0, keep ? get(&dy, 0, i) * scale : 0.0f);
                    if (memcmp(y.host + y.off + (size_t)i * dt->size, want, dt->size) ||
                        memcmp(dx.host + dx.off + (size_t)i * dt->size, wantg, dt->size))
                        fail_msg("%s: [%d] = %.8g, %.8g, want %.8g, %.8g on %s", what, i, get(&y, 0, i), get(&dx, 0, i),
                                 dt->get(want, 0), dt->get(wantg, 0), trt_device_name(dev));
                }
                drop(&x), drop(&y), drop(&dy), drop(&dx);
            }
    }
}

/* ---- matrix products ---------------------------------------------------------------- */

/* A batch of matrices at any strides (elements), `off` bytes into a buffer
 * that ends at its furthest element; everything else stays poisoned. */
typedef struct matrix {
    const dtype *dt;
    int64_t n[3], s[3]; /* batch, rows, columns */
    size_t off, bytes;
    unsigned char *host;
    trt_buffer buf;
} matrix;

static matrix make_matrix(const dtype *dt, int64_t batch, int64_t rows, int64_t cols, int64_t sb, int64_t sr,
                          int64_t sc, size_t off) {
    matrix m = {dt, {batch, rows, cols}, {sb, sr, sc}, off, 0, NULL, {0}};
    int64_t last = (batch - 1) * sb + (rows - 1) * sr + (cols - 1) * sc;
    m.bytes = off + (size_t)(last + 1) * dt->size;
    m.host = malloc(m.bytes);
    assert_non_null(m.host);
    memset(m.host, 0xff, m.bytes);
    return m;
}
static size_t mx(const matrix *m, int64_t b, int64_t r, int64_t c) {
    return (size_t)(b * m->s[0] + r * m->s[1] + c * m->s[2]);
}
static float mget(const matrix *m, int64_t b, int64_t r, int64_t c) { return m->dt->get(m->host + m->off, mx(m, b, r, c)); }
static void mput(matrix *m, int64_t b, int64_t r, int64_t c, float v) { m->dt->put(m->host + m->off, mx(m, b, r, c), v); }
static tls_mem mmem(const matrix *m) { return tls_mem_at(m->buf, m->off); }
static void msend(matrix *m) {
    OK(trt_alloc(dev, m->bytes, &m->buf));
    OK(trt_write(dev, m->buf, 0, m->host, m->bytes));
}
/* Reads the output back: every byte that is not one of its elements must
 * still be poison. */
static void mfetch(matrix *m, const char *what) {
    OK(trt_sync(dev));
    OK(trt_read(dev, m->buf, 0, m->host, m->bytes));
    bool *mine = calloc(m->bytes, 1);
    for (int64_t b = 0; b < m->n[0]; b++)
        for (int64_t r = 0; r < m->n[1]; r++)
            for (int64_t c = 0; c < m->n[2]; c++)
                for (size_t k = 0; k < m->dt->size; k++) mine[m->off + mx(m, b, r, c) * m->dt->size + k] = true;
    for (size_t i = 0; i < m->bytes; i++)
        if (!mine[i] && m->host[i] != 0xff) {
            free(mine);
            fail_msg("%s: byte %zu of c's buffer, outside c, was written (%#x) on %s", what, i, m->host[i],
                     trt_device_name(dev));
        }
    free(mine);
}
static void mdrop(matrix *m) {
    OK(trt_free(dev, m->buf));
    free(m->host);
}

/* f32 to tf32 as the tensor cores' cvt.rna.tf32.f32: 10 mantissa bits, to
 * nearest, ties away from zero. */
static double tf32(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    u = (u + 0x1000u) & ~0x1fffu;
    memcpy(&v, &u, 4);
    return v;
}

/* How a matrix sits in memory in the tests below. */
typedef enum { ROW_MAJOR, COL_MAJOR, PADDED, SPREAD } placement;
static const char *const placement_names[] = {"row-major", "column-major", "row-major, padded rows", "strided"};

/* Strides for `rows` x `cols` matrices placed so: row-major; column-major
 * (the transpose of a row-major matrix: what a transposed operand is);
 * row-major with 8 elements between rows (still 16-byte aligned rows);
 * every element 2 apart with rows 3 more apart (no fast path at all);
 * the batches apart by the last element plus 5 more. */
static void strides_of(placement p, int64_t rows, int64_t cols, int64_t s[3]) {
    switch (p) {
    case ROW_MAJOR: s[1] = cols, s[2] = 1; break;
    case COL_MAJOR: s[1] = 1, s[2] = rows; break;
    case PADDED: s[1] = cols + 8, s[2] = 1; break;
    case SPREAD: s[1] = 2 * cols + 3, s[2] = 2; break;
    }
    s[0] = (rows - 1) * s[1] + (cols - 1) * s[2] + 1 + 5;
}

static float nonzero(void) {
    float v = (float)(rand() % 2001 - 1000) / 1021.0f; /* no short binary fraction: every mantissa bit set */
    return v != 0 ? v : 0.5f;
}

/* c = a . b for a batch of `batch` (1: through tls_matmul) on random
 * non-zero inputs in [-1, 1], c poisoned before, checked against float64
 * sums of the stored inputs (rounded to tf32 first for TLS_TF32, as the
 * kernel does, so that a kernel that skipped the rounding fails; TLS_IEEE
 * uses them as they are, and would fail with it). b_shared: one b for the
 * whole batch (stride 0).
 *
 * Tolerance for c[i][j], with S = sum over k of |a[i][k] b[k][j]|:
 *   S * K * 2^-23  +  |c| * u_storage  +  the storage's tiny,
 * - products: exact in f32 (f16 and bf16 have 11 and 8 significant bits,
 *   tf32 11: a product has at most 22), so only the sum rounds;
 * - the sum: K f32 additions, each off by at most 2^-24 of the partial
 *   sum, itself at most S: K * 2^-24 * S; doubled, as the tensor cores
 *   add in groups whose rounding is not specified;
 * - the result: rounded once to the storage, relative u (f16 2^-11, bf16
 *   2^-8, f32 2^-24), plus dt->tiny where that rounds to a subnormal.
 * A dropped or doubled term, a wrong stride or a missing tf32 rounding is
 * much larger than that: a product is about S / K, and tf32's rounding
 * moves the sum by about S * 2^-11, more than S * K * 2^-23 for K < 4096. */
static void run_matmul(const dtype *dt, tls_precision prec, int64_t batch, int64_t M, int64_t N, int64_t K,
                       placement pa, placement pb, placement pc, bool b_shared, size_t off) {
    char what[192];
    snprintf(what, sizeof what, "matmul %s%s batch %lld%s %lldx%lldx%lld, a %s, b %s, c %s", dt->name,
             prec == TLS_IEEE ? " (ieee)" : "", (long long)batch, b_shared ? " (one b)" : "", (long long)M, (long long)N,
             (long long)K, placement_names[pa], placement_names[pb], placement_names[pc]);
    int64_t sa[3], sb[3], sc[3];
    strides_of(pa, M, K, sa), strides_of(pb, K, N, sb), strides_of(pc, M, N, sc);
    if (b_shared) sb[0] = 0;
    matrix a = make_matrix(dt, batch, M, K, sa[0], sa[1], sa[2], off),
           b = make_matrix(dt, batch, K, N, sb[0], sb[1], sb[2], (off + 16) % 48),
           c = make_matrix(dt, batch, M, N, sc[0], sc[1], sc[2], off + 16);
    for (int64_t q = 0; q < batch; q++) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t k = 0; k < K; k++) mput(&a, q, i, k, nonzero());
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < N; j++) mput(&b, q, k, j, nonzero());
    }
    msend(&a), msend(&b), msend(&c);
    tls_options o = {.precision = prec};
    if (batch == 1)
        OK(tls_matmul(dev, dt->id, mmem(&a), mmem(&b), mmem(&c), M, N, K, sa[1], sa[2], sb[1], sb[2], sc[1], sc[2], &o));
    else
        OK(tls_matmul_batched(dev, dt->id, mmem(&a), mmem(&b), mmem(&c), batch, M, N, K, sa[0], sa[1], sa[2], sb[0],
                              sb[1], sb[2], sc[0], sc[1], sc[2], &o));
    mfetch(&c, what);
    bool round_tf32 = dt->id == TLS_F32 && prec == TLS_TF32;
    double u_out = dt->id == TLS_F32 ? 0x1p-24 : dt->id == TLS_F16 ? 0x1p-11 : 0x1p-8;
    for (int64_t q = 0; q < batch; q++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double want = 0, mag = 0;
                for (int64_t k = 0; k < K; k++) {
                    double x = mget(&a, q, i, k), y = mget(&b, q, k, j);
                    if (round_tf32) x = tf32((float)x), y = tf32((float)y);
                    want += x * y, mag += fabs(x * y);
                }
                double got = mget(&c, q, i, j), tol = mag * (double)K * 0x1p-23 + fabs(want) * u_out + dt->tiny;
                if (!(fabs(got - want) <= tol))
                    fail_msg("%s: c[%lld][%lld][%lld] = %.9g, want %.9g (tol %.3g) on %s", what, (long long)q,
                             (long long)i, (long long)j, got, want, tol, trt_device_name(dev));
            }
    mdrop(&a), mdrop(&b), mdrop(&c);
}

/* The sizes: each of 1, 7, 16, 31, 64, 97 and 128 as M, N and K (primes,
 * 1, powers of two, one past and one short of the tiles), each table row
 * of runtime/stdlib.c (128 x 128 and up, 64 x 64 and up, the rest), and
 * multiples of every tile (no masks). */
static const int matmul_shapes[][3] = {{1, 1, 1},    {7, 16, 31},  {16, 7, 1},    {31, 64, 7},  {64, 97, 16},
                                       {97, 31, 64}, {128, 128, 97}, {1, 128, 128}, {128, 1, 16}, {64, 64, 64},
                                       {97, 97, 128}, {32, 32, 32}, {128, 128, 64}};
enum { NMATMUL = sizeof matmul_shapes / sizeof matmul_shapes[0] };

static void test_matmul(void **state) {
    (void)state;
    const tls_precision precs[] = {TLS_TF32, TLS_TF32, TLS_TF32, TLS_IEEE};
    for (size_t t = 0; t < 4; t++) {
        const dtype *dt = &dtypes[t < 3 ? t : 0]; /* f32, f16, bf16, then f32 again, exactly */
        for (size_t s = 0; s < NMATMUL; s++) {
            const int *sh = matmul_shapes[s];
            /* the placements rotate with the shape, so that each operand
             * meets each placement at several sizes */
            placement pa = (placement)((s + t) % 4), pb = (placement)((s / 2 + t) % 4), pc = (placement)((s / 3) % 4);
            run_matmul(dt, precs[t], 1, sh[0], sh[1], sh[2], pa, pb, pc, false, offset_of(s));
        }
    }
}

/* Transposed operands, by strides alone: every pairing of row- and
 * column-major a and b (a^T b, a b^T, a^T b^T), for each dtype. */
static void test_matmul_transposed(void **state) {
    (void)state;
    for (size_t t = 0; t < 3; t++)
        for (int pa = ROW_MAJOR; pa <= COL_MAJOR; pa++)
            for (int pb = ROW_MAJOR; pb <= COL_MAJOR; pb++) {
                run_matmul(&dtypes[t], TLS_TF32, 1, 64, 64, 64, (placement)pa, (placement)pb, ROW_MAJOR, false, 0);
                run_matmul(&dtypes[t], TLS_TF32, 1, 31, 97, 7, (placement)pa, (placement)pb, COL_MAJOR, false, 16);
            }
}

/* c = act(a . b + bias) through tls_matmul_epilogue, against float64:
 * the product's tolerance (run_matmul's) carried through the activation
 * (ReLU's slope is at most 1, GELU's at most 1.13: 1.2 covers both), plus
 * GELU's own error (the GPU's ex2.approx, relative 2^-22 of e, moves
 * x / (1 + e) by at most |x| 2^-21), plus the rounding to the storage.
 * A missing or doubled bias is about 1, the activation off or wrong far
 * more than the tolerance; no bias (handle 0) is checked as well. */
static double gelu_tanh(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

static void run_matmul_epilogue(const dtype *dt, int64_t M, int64_t N, int64_t K, bool with_bias, tls_activation act,
                                size_t off) {
    static const char *const acts[] = {"none", "relu", "gelu"};
    char what[160];
    snprintf(what, sizeof what, "matmul epilogue %s %lldx%lldx%lld, bias %s, activation %s", dt->name, (long long)M,
             (long long)N, (long long)K, with_bias ? "yes" : "no", acts[act]);
    matrix a = make_matrix(dt, 1, M, K, 0, K, 1, off), b = make_matrix(dt, 1, K, N, 0, 1, K, 16),
           c = make_matrix(dt, 1, M, N, 0, N, 1, off + 16), bias = make_matrix(dt, 1, 1, N, 0, N, 1, 32);
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++) mput(&a, 0, i, k, nonzero());
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) mput(&b, 0, k, j, nonzero());
    for (int64_t j = 0; j < N; j++) mput(&bias, 0, 0, j, nonzero() * 2.0f);
    msend(&a), msend(&b), msend(&c), msend(&bias);
    tls_mem bm = with_bias ? mmem(&bias) : tls_mem_of((trt_buffer){0});
    OK(tls_matmul_epilogue(dev, dt->id, mmem(&a), mmem(&b), mmem(&c), bm, act, M, N, K, K, 1, 1, K, N, 1, NULL));
    mfetch(&c, what);
    bool round_tf32 = dt->id == TLS_F32;
    double u_out = dt->id == TLS_F32 ? 0x1p-24 : dt->id == TLS_F16 ? 0x1p-11 : 0x1p-8;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double sum = with_bias ? mget(&bias, 0, 0, j) : 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                double x = mget(&a, 0, i, k), y = mget(&b, 0, k, j);
                if (round_tf32) x = tf32((float)x), y = tf32((float)y);
                sum += x * y, mag += fabs(x * y);
            }
            double want = act == TLS_ACT_RELU ? (sum > 0 ? sum : 0) : act == TLS_ACT_GELU_TANH ? gelu_tanh(sum) : sum;
            double got = mget(&c, 0, i, j);
            double tol = 1.2 * (mag * (double)K * 0x1p-23 + fabs(sum) * 0x1p-22) + fabs(sum) * 0x1p-21 +
                         fabs(want) * u_out + dt->tiny;
            if (!(fabs(got - want) <= tol))
                fail_msg("%s: c[%lld][%lld] = %.9g, want %.9g (tol %.3g) on %s", what, (long long)i, (long long)j, got,
                         want, tol, trt_device_name(dev));
        }
    mdrop(&a), mdrop(&b), mdrop(&c), mdrop(&bias);
}

/* Each activation with and without a bias, each dtype, at edge-masked
 * and whole-tile sizes (b transposed: a linear layer's weight). */
static void test_matmul_epilogue(void **state) {
    (void)state;
    static const int shapes[][3] = {{7, 16, 31}, {64, 64, 64}, {97, 33, 16}};
    for (size_t t = 0; t < 3; t++)
        for (int act = TLS_ACT_NONE; act <= TLS_ACT_GELU_TANH; act++)
            for (size_t s = 0; s < 3; s++)
                run_matmul_epilogue(&dtypes[t], shapes[s][0], shapes[s][1], shapes[s][2], (s + (size_t)act) % 3 != 1,
                                    (tls_activation)act, offset_of(s));
}

/* Whole tiles of Triton's Hopper tile, 128 x 256 x 64 (runtime/stdlib.c's
 * matmul_wgmma_configs: sm_90a takes it for such calls only, with a
 * producer warpgroup): row- and column-major operands, a batch, the
 * epilogue with a bias; and one column short of whole tiles (the next
 * row). Every device computes them; on emu:sm_90a they run that row. */
static void test_matmul_hopper_tile(void **state) {
    (void)state;
    for (size_t t = 1; t < 3; t++) { /* f16, bf16: sm_90a's wgmma table */
        run_matmul(&dtypes[t], TLS_TF32, 1, 128, 256, 128, ROW_MAJOR, ROW_MAJOR, ROW_MAJOR, false, 0);
        run_matmul(&dtypes[t], TLS_TF32, 2, 128, 256, 64, COL_MAJOR, COL_MAJOR, ROW_MAJOR, false, 16);
        run_matmul(&dtypes[t], TLS_TF32, 1, 128, 248, 64, ROW_MAJOR, COL_MAJOR, ROW_MAJOR, false, 0);
        run_matmul_epilogue(&dtypes[t], 128, 256, 64, true, t == 1 ? TLS_ACT_GELU_TANH : TLS_ACT_RELU, 0);
    }
}

static void test_matmul_batched(void **state) {
    (void)state;
    for (size_t t = 0; t < 3; t++) {
        run_matmul(&dtypes[t], TLS_TF32, 3, 31, 16, 7, ROW_MAJOR, ROW_MAJOR, ROW_MAJOR, false, 0);
        run_matmul(&dtypes[t], TLS_TF32, 2, 64, 64, 32, ROW_MAJOR, COL_MAJOR, ROW_MAJOR, true, 16);
        run_matmul(&dtypes[t], TLS_TF32, 4, 7, 33, 16, SPREAD, PADDED, COL_MAJOR, true, 32);
    }
    run_matmul(&dtypes[0], TLS_IEEE, 2, 16, 16, 97, COL_MAJOR, ROW_MAJOR, PADDED, false, 0);
}

/* ---- compiling once, options ------------------------------------------------------- */

/* A call whose specialization was used before compiles nothing: the
 * device keeps one module per stdlib kernel (a dtype's), BLOCK, ALIGN and
 * num_warps, whatever the number of rows; a call compiles only the kernel
 * it launches. */
static void test_modules_compile_once(void **state) {
    (void)state;
    tensor x = make(&dtypes[0], 4, 300, 300, 0), y = make(&dtypes[0], 4, 300, 300, 0);
    fill(&x, logit);
    send(&x), send(&y);
    OK(tls_softmax(dev, TLS_F32, mem(&x), mem(&y), 4, 300, 300, 300, NULL));
    size_t n = tls_num_modules(dev);
    assert_true(n >= 1);
    OK(tls_softmax(dev, TLS_F32, mem(&x), mem(&y), 4, 300, 300, 300, NULL));
    OK(tls_softmax(dev, TLS_F32, mem(&x), mem(&y), 2, 260, 300, 300, NULL)); /* BLOCK 512 still */
    assert_int_equal(tls_num_modules(dev), n);
    OK(tls_softmax(dev, TLS_F16, mem(&x), mem(&y), 4, 300, 300, 300, NULL)); /* another dtype: its kernel */
    OK(tls_softmax(dev, TLS_F16, mem(&x), mem(&y), 4, 300, 300, 300, NULL));
    assert_int_equal(tls_num_modules(dev), n + 1);
    OK(tls_softmax(dev, TLS_F32, mem(&x), mem(&y), 4, 200, 300, 300, NULL)); /* BLOCK 256: one more */
    assert_int_equal(tls_num_modules(dev), n + 2);
    tls_options o = {.num_warps = 2};
    OK(tls_softmax(dev, TLS_F32, mem(&x), mem(&y), 4, 300, 300, 300, &o)); /* num_warps 2: one more */
    OK(tls_softmax(dev, TLS_F32, mem(&x), mem(&y), 4, 300, 300, 300, &o));
    assert_int_equal(tls_num_modules(dev), n + 3);
    drop(&x), drop(&y);
}

/* num_warps and a stream from tls_options give the same results. */
static void test_options(void **state) {
    (void)state;
    const dtype *dt = &dtypes[1];
    trt_stream *s;
    OK(trt_stream_create(dev, &s));
    tensor x = make(dt, 5, 700, 704, 16), y = make(dt, 5, 700, 700, 0), dy = make(dt, 5, 700, 700, 0),
           dx = make(dt, 5, 700, 700, 0);
    fill(&x, logit), fill(&dy, small);
    send(&x), send(&y), send(&dy), send(&dx);
    tls_options o = {.num_warps = 1, .stream = s};
    OK(tls_softmax(dev, dt->id, mem(&x), mem(&y), 5, 700, 704, 700, &o));
    o.num_warps = 8;
    OK(tls_softmax_bwd(dev, dt->id, mem(&y), mem(&dy), mem(&dx), 5, 700, 700, &o));
    OK(trt_stream_sync(s));
    fetch(&y, "softmax on a stream"), fetch(&dx, "softmax on a stream");
    check_softmax("softmax with num_warps 1 and 8 on a stream", &x, &y, &dy, &dx);
    drop(&x), drop(&y), drop(&dy), drop(&dx);
    trt_stream_destroy(s);
}

/* ---- misuse ---------------------------------------------------------------------- */

/* st must be `want`, with a message containing `says`. */
static void expect_error(trt_status st, trt_status want, const char *says, const char *call) {
    if (st != want)
        fail_msg("%s: %s (%s), want %s", call, trt_status_name(st), trt_last_error(dev), trt_status_name(want));
    if (!strstr(trt_last_error(dev), says))
        fail_msg("%s: the message \"%s\" does not say \"%s\"", call, trt_last_error(dev), says);
}
#define EXPECT(call, want, says) expect_error((call), (want), (says), #call)

static void test_misuse_is_an_error(void **state) {
    (void)state;
    const dtype *dt = &dtypes[0];
    const trt_status BAD = TRT_ERR_INVALID_ARGUMENT;
    tensor x = make(dt, 4, 64, 64, 0), y = make(dt, 4, 64, 64, 0), w = vec(dt, 64, 0), st = vec(dt, 4, 0),
           ws = vec(dt, 4, 0);
    fill(&x, logit), fill(&w, weight);
    send(&x), send(&y), send(&w), send(&st), send(&ws);
    tls_mem X = mem(&x), Y = mem(&y), W = mem(&w), S = mem(&st), WS = mem(&ws);

    assert_int_equal(tls_softmax(NULL, TLS_F32, X, Y, 4, 64, 64, 64, NULL), BAD);
    assert_int_equal(tls_layernorm_bwd_workspace(NULL, 4, 64, &(size_t){0}), BAD);
    EXPECT(tls_layernorm_bwd_workspace(dev, 4, 64, NULL), BAD, "bytes is NULL");
    EXPECT(tls_softmax(dev, (tls_dtype)7, X, Y, 4, 64, 64, 64, NULL), BAD, "unknown dtype 7");
    EXPECT(tls_softmax(dev, TLS_F32, X, Y, 0, 64, 64, 64, NULL), BAD, "rows is 0");
    EXPECT(tls_softmax(dev, TLS_F32, X, Y, -3, 64, 64, 64, NULL), BAD, "rows is -3");
    EXPECT(tls_softmax(dev, TLS_F32, X, Y, 4, 0, 64, 64, NULL), BAD, "cols is 0");
    EXPECT(tls_softmax(dev, TLS_F32, X, Y, 1, TLS_SOFTMAX_MAX_COLS + 1, 1 << 20, 1 << 20, NULL), BAD,
           "it must be from 1 to 32768");
    EXPECT(tls_layernorm(dev, TLS_F32, X, Y, W, W, S, S, 1, TLS_NORM_MAX_COLS + 1, 1 << 20, 1e-5f, NULL), BAD,
           "it must be from 1 to 16384");
    EXPECT(tls_rmsnorm_bwd_workspace(dev, 1, TLS_NORM_MAX_COLS + 1, &(size_t){0}), BAD, "it must be from 1 to 16384");
    EXPECT(tls_softmax(dev, TLS_F32, X, Y, 4, 64, 63, 64, NULL), BAD, "x_stride is 63, less than cols");
    EXPECT(tls_softmax(dev, TLS_F32, X, Y, 5, 64, 64, 64, NULL), BAD, "tls_softmax: x: the buffer holds 1024 bytes");
    EXPECT(tls_softmax(dev, TLS_F32, X, Y, 4, 64, 64, 65, NULL), BAD, "y: the buffer holds 1024 bytes");
    OK(tls_softmax(dev, TLS_F16, X, Y, 4, 64, 64, 64, NULL)); /* f16 rows take half the bytes */
    EXPECT(tls_softmax(dev, TLS_F32, X, tls_mem_at(y.buf, 8), 4, 32, 32, 32, NULL), BAD, "offset 8 is not a multiple of 16");
    EXPECT(tls_softmax(dev, TLS_F32, X, tls_mem_at(y.buf, 2048), 1, 1, 1, 1, NULL), BAD, "need 4 from offset 2048");
    EXPECT(tls_softmax(dev, TLS_F32, X, Y, 3, 64, INT64_MAX / 2, 64, NULL), BAD, "do not fit in memory");
    /* in place only exactly: a row shifted onto another is read and written by two programs */
    EXPECT(tls_softmax(dev, TLS_F32, X, tls_mem_at(x.buf, 16), 3, 64, 64, 64, NULL), BAD,
           "tls_softmax: y and x overlap in memory: an output must not share memory with another tensor of the call "
           "unless it is exactly that tensor with the same stride (in place)");
    EXPECT(tls_softmax(dev, TLS_F32, X, X, 2, 64, 128, 64, NULL), BAD, "y and x overlap"); /* other strides */
    EXPECT(tls_softmax_bwd(dev, TLS_F32, X, Y, tls_mem_at(y.buf, 32), 3, 64, 64, NULL), BAD,
           "tls_softmax_bwd: dx and dy overlap");
    EXPECT(tls_gelu(dev, TLS_F32, X, Y, 0, NULL), BAD, "n is 0");
    EXPECT(tls_gelu(dev, TLS_F32, X, Y, (int64_t)TLS_MAX_ELEMENTS + 1, NULL), BAD, "n is 2147482625");
    EXPECT(tls_gelu_bwd(dev, TLS_F32, X, Y, Y, 257, NULL), BAD, "tls_gelu_bwd: x: the buffer holds 1024 bytes");
    EXPECT(tls_dropout(dev, TLS_F32, X, Y, 256, 1.5f, 1, NULL), BAD, "p is 1.5");
    EXPECT(tls_dropout_bwd(dev, TLS_F32, X, Y, 256, NAN, 1, NULL), BAD, "p is nan");
    EXPECT(tls_layernorm(dev, TLS_F32, X, Y, W, W, S, S, 4, 64, 64, -1.0f, NULL), BAD, "eps is -1");
    EXPECT(tls_rmsnorm(dev, TLS_F32, X, Y, W, S, 4, 64, 64, INFINITY, NULL), BAD, "eps is inf");
    EXPECT(tls_rmsnorm(dev, TLS_F32, X, Y, W, S, 3, 65, 65, 1e-5f, NULL), BAD, "w: the buffer holds 256 bytes");
    EXPECT(tls_layernorm(dev, TLS_F32, X, Y, W, W, S, tls_mem_at(st.buf, 16), 4, 64, 64, 1e-5f, NULL), BAD, "rstd:");
    tls_options o = {.num_warps = 3};
    EXPECT(tls_gelu(dev, TLS_F32, X, Y, 256, &o), BAD, "num_warps 3 must be 0 (the heuristic) or a power of two");
    o.num_warps = 64;
    EXPECT(tls_gelu(dev, TLS_F32, X, Y, 256, &o), BAD, "num_warps 64");

    /* a workspace too small: nothing runs, dx stays poisoned */
    tensor dx = make(dt, 4, 64, 64, 0);
    send(&dx);
    size_t need;
    OK(tls_rmsnorm_bwd_workspace(dev, 4, 64, &need));
    assert_true(need > ws.bytes);
    EXPECT(tls_rmsnorm_bwd(dev, TLS_F32, X, X, mem(&dx), W, S, W, 4, 64, 64, WS, NULL), BAD, "workspace: the buffer holds 16");
    EXPECT(tls_layernorm_bwd(dev, TLS_F32, X, X, mem(&dx), W, S, S, W, W, 4, 64, 64, WS, NULL), BAD, "workspace:");
    fetch(&dx, "dx after a refused call");
    for (size_t b = 0; b < dx.bytes; b++)
        if (dx.host[b] != 0xff) fail_msg("a refused tls_rmsnorm_bwd wrote dx (byte %zu)", b);

    /* a freed buffer */
    trt_buffer gone;
    OK(trt_alloc(dev, 1024, &gone));
    OK(trt_free(dev, gone));
    EXPECT(tls_gelu(dev, TLS_F32, tls_mem_of(gone), Y, 256, NULL), TRT_ERR_INVALID_HANDLE, "tls_gelu: x: buffer handle");

    /* a stream of another device */
    trt_device *other;
    char why[256];
    OK(trt_open(TRT_DEVICE_CPU, &other, why, sizeof why));
    trt_stream *s;
    OK(trt_stream_create(other, &s));
    tls_options on_other = {.stream = s};
    EXPECT(tls_gelu(dev, TLS_F32, X, Y, 256, &on_other), BAD, "stream belongs to another device");
    trt_stream_destroy(s);
    trt_close(other);

    drop(&x), drop(&y), drop(&w), drop(&st), drop(&ws), drop(&dx);
}

/* Misuse of the matrix products: a status and a message, and c untouched. */
static void test_matmul_misuse(void **state) {
    (void)state;
    const trt_status BAD = TRT_ERR_INVALID_ARGUMENT;
    matrix a = make_matrix(&dtypes[0], 1, 16, 16, 256, 16, 1, 0), c = make_matrix(&dtypes[0], 1, 16, 16, 256, 16, 1, 0);
    mput(&a, 0, 0, 0, 0.5f); /* the rest stays poisoned */
    msend(&a), msend(&c);
    tls_mem A = mmem(&a), C = mmem(&c);
    tls_options ieee = {.precision = TLS_IEEE}, odd = {.precision = (tls_precision)5};
    assert_int_equal(tls_matmul(NULL, TLS_F32, A, A, C, 16, 16, 16, 16, 1, 16, 1, 16, 1, NULL), BAD);
    EXPECT(tls_matmul(dev, (tls_dtype)9, A, A, C, 16, 16, 16, 16, 1, 16, 1, 16, 1, NULL), BAD, "unknown dtype 9");
    EXPECT(tls_matmul(dev, TLS_F32, A, A, C, 0, 16, 16, 16, 1, 16, 1, 16, 1, NULL), BAD, "tls_matmul: M is 0");
    EXPECT(tls_matmul(dev, TLS_F32, A, A, C, 16, -2, 16, 16, 1, 16, 1, 16, 1, NULL), BAD, "N is -2");
    EXPECT(tls_matmul(dev, TLS_F32, A, A, C, 16, 16, (int64_t)TLS_MATMUL_MAX_DIM + 1, 16, 1, 16, 1, 16, 1, NULL), BAD,
           "K is 2147483137");
    EXPECT(tls_matmul_batched(dev, TLS_F32, A, A, C, 0, 16, 16, 16, 0, 16, 1, 0, 16, 1, 256, 16, 1, NULL), BAD,
           "tls_matmul_batched: batch is 0");
    EXPECT(tls_matmul_batched(dev, TLS_F32, A, A, C, TLS_MATMUL_MAX_BATCH + 1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, NULL),
           BAD, "batch is 65536");
    EXPECT(tls_matmul(dev, TLS_F32, A, A, C, 16, 16, 16, -16, 1, 16, 1, 16, 1, NULL), BAD,
           "a: the row stride is -16; strides must be >= 0");
    EXPECT(tls_matmul(dev, TLS_F32, A, A, C, 16, 16, 16, 16, 1, 16, 1, 17, 1, NULL), BAD,
           "c: the buffer holds 1024 bytes; 1 x 16 x 16 elements with strides 0, 17, 1 need 1084");
    EXPECT(tls_matmul(dev, TLS_F32, A, A, C, 16, 16, 16, 16, 1, 1, 16, 1, INT64_MAX / 4, NULL), BAD,
           "c: its strides reach past what memory can hold");
    EXPECT(tls_matmul(dev, TLS_F16, A, A, C, 16, 16, 16, 16, 1, 16, 1, 8, 1, NULL), BAD,
           "c: strides 0, 8, 1 (batch, row, column) over 1 x 16 x 16 put two of its elements at one address");
    EXPECT(tls_matmul(dev, TLS_F32, A, A, C, 16, 16, 16, 16, 1, 16, 1, 0, 1, NULL), BAD, "put two of its elements");
    EXPECT(tls_matmul_batched(dev, TLS_F16, A, A, C, 2, 8, 8, 8, 64, 8, 1, 0, 8, 1, 32, 8, 1, NULL), BAD,
           "c: strides 32, 8, 1");
    EXPECT(tls_matmul(dev, TLS_F32, tls_mem_at(a.buf, 8), A, C, 1, 1, 1, 1, 1, 1, 1, 1, 1, NULL), BAD,
           "a: offset 8 is not a multiple of 16");
    EXPECT(tls_matmul(dev, TLS_F16, A, A, C, 16, 16, 16, 16, 1, 16, 1, 16, 1, &ieee), BAD,
           "precision TLS_IEEE is for f32 inputs, not f16");
    EXPECT(tls_matmul(dev, TLS_F32, A, A, C, 16, 16, 16, 16, 1, 16, 1, 16, 1, &odd), BAD, "unknown precision 5");
    EXPECT(tls_matmul_epilogue(dev, TLS_F32, A, A, C, A, (tls_activation)7, 16, 16, 16, 16, 1, 16, 1, 16, 1, NULL), BAD,
           "tls_matmul_epilogue: activation 7 is not a tls_activation");
    EXPECT(tls_matmul_epilogue(dev, TLS_F32, A, A, C, tls_mem_at(a.buf, 1008), TLS_ACT_RELU, 16, 16, 16, 16, 1, 16, 1,
                               16, 1, NULL),
           BAD, "bias: the buffer holds 1024 bytes; 1 x 1 x 16 elements with strides 0, 0, 1 need 64 from offset 1008");
    trt_buffer gone;
    OK(trt_alloc(dev, 1024, &gone));
    OK(trt_free(dev, gone));
    EXPECT(tls_matmul(dev, TLS_F32, A, tls_mem_of(gone), C, 16, 16, 16, 16, 1, 16, 1, 16, 1, NULL),
           TRT_ERR_INVALID_HANDLE, "tls_matmul: b: buffer handle");
    /* c sharing memory with a, b or the bias: other programs read what one writes */
    EXPECT(tls_matmul(dev, TLS_F32, A, C, A, 16, 16, 16, 16, 1, 16, 1, 16, 1, NULL), BAD,
           "tls_matmul: c and a overlap in memory");
    EXPECT(tls_matmul(dev, TLS_F32, A, C, tls_mem_at(c.buf, 256), 8, 8, 8, 16, 1, 16, 1, 16, 1, NULL), BAD,
           "c and b overlap");
    EXPECT(tls_matmul_epilogue(dev, TLS_F32, A, A, C, tls_mem_at(c.buf, 64), TLS_ACT_NONE, 16, 16, 16, 16, 1, 16, 1,
                               16, 1, NULL),
           BAD, "c and bias overlap");
    /* nothing ran: c is still all poison */
    mfetch(&c, "c after refused calls");
    for (size_t i = 0; i < c.bytes; i++)
        if (c.host[i] != 0xff) fail_msg("a refused tls_matmul wrote c (byte %zu)", i);
    /* inputs may repeat an element (strides 0): a and b are a[0] everywhere */
    OK(tls_matmul(dev, TLS_F32, A, A, C, 16, 16, 16, 0, 0, 0, 0, 16, 1, NULL));
    size_t modules = tls_num_modules(dev); /* a repeated specialization compiles nothing */
    OK(tls_matmul(dev, TLS_F32, A, A, C, 16, 16, 16, 0, 0, 0, 0, 16, 1, NULL));
    assert_int_equal(tls_num_modules(dev), modules);
    mfetch(&c, "matmul of one repeated element");
    for (int64_t i = 0; i < 16; i++)
        for (int64_t j = 0; j < 16; j++)
            if (mget(&c, 0, i, j) != 4.0f) fail_msg("c[%lld][%lld] = %g, want 16 * 0.5 * 0.5", (long long)i,
                                                    (long long)j, (double)mget(&c, 0, i, j));
    mdrop(&a), mdrop(&c);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_gelu),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_matmul_transposed),
        cmocka_unit_test(test_matmul_batched),
        cmocka_unit_test(test_matmul_epilogue),
        cmocka_unit_test(test_matmul_hopper_tile),
        cmocka_unit_test(test_matmul_misuse),
        cmocka_unit_test(test_modules_compile_once),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_misuse_is_an_error),
    };
    return stdlib_test_main(argc, argv, &dev, tests, sizeof tests / sizeof tests[0]);
}
