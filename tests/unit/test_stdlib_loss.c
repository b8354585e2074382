/* The stdlib's losses from C (tls_cross_entropy, include/tilec_stdlib.h)
 * on one device, in the way of test_stdlib_api.c.
 *
 *   test_stdlib_loss cpu|cuda|emu
 *
 * Shapes: f32, f16 and bf16 logits; rows 1, 17 and 31 (1 and 17 of the
 * chunked width: the emulator is slow on them); cols 1, 7, 256 (the GPT
 * sample's vocabulary) and 4111, a prime past the 4096 columns a row
 * keeps in one tile (runtime/stdlib_loss.c's XENT_CHUNK: the chunked path,
 * with a ragged last chunk), 4096, 4097 and 8192 (where the paths meet),
 * and 50257 (GPT-2's vocabulary, 13 chunks);
 * strides wider than cols, tensors at byte offsets into their buffers;
 * rows ignored by negative targets; a row whose first chunk is all -inf
 * (masked classes), rows whose max grows in the last chunk; dlogits
 * apart and in place over the logits; the forward alone; dloss 1 / rows;
 * one warp and a stream. Every buffer starts poisoned (all bits set: NaN
 * in every type), so an output not written shows, and so does a write
 * past the tensors. The reference is float64 of the stored logits;
 * tolerances (check_xent says why): the loss within 1e-5 (1 + |lse| +
 * |logit of the target|), dlogits within the storage's rounding of the
 * value plus 1e-5 |dloss| (p + onehot), exactly 0 for an ignored row.
 * Misuse: each check's status and message, the outputs untouched. */
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

enum { CHUNK = 4096 }; /* runtime/stdlib_loss.c's XENT_CHUNK */

typedef struct dtype {
    tls_dtype id;
    const char *name;
    size_t size;
    void (*put)(void *p, size_t i, float v);
    float (*get)(const void *p, size_t i);
    double tol;  /* the storage's rounding, relative */
    double tiny; /* absolute, near zero: f16's subnormal step, else f32's smallest normal (the GPU flushes) */
} dtype;
static const dtype dtypes[] = {{TLS_F32, "f32", 4, put_f32, get_f32, 1e-6, 0x1p-126},
                               {TLS_F16, "f16", 2, put_f16, get_f16, 2e-3, 0x1p-24},
                               {TLS_BF16, "bf16", 2, put_bf16, get_bf16, 1.6e-2, 0x1p-126}};
static const dtype f32_type = {TLS_F32, "f32", 4, put_f32, get_f32, 0, 0};

static bool on_gpu(void) { return trt_device_arch(dev)[0] != 0; }

/* ---- tensors in poisoned buffers --------------------------------------------- */

/* rows x cols elements, rows `stride` apart, `off` bytes into a buffer of
 * exactly off + rows * stride elements (poison outside the tensor). */
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
    memset(t.host, 0xff, t.bytes); /* NaN in every type, -1 as i32 */
    return t;
}
static size_t ix(const tensor *t, int64_t r, int64_t i) { return (size_t)(r * t->stride + i); }
static float get(const tensor *t, int64_t r, int64_t i) { return t->dt->get(t->host + t->off, ix(t, r, i)); }
static void put(tensor *t, int64_t r, int64_t i, float v) { t->dt->put(t->host + t->off, ix(t, r, i), v); }
static int32_t *ints(const tensor *t) { return (int32_t *)(void *)(t->host + t->off); }
static tls_mem mem(const tensor *t) { return tls_mem_at(t->buf, t->off); }

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

/* Random logits in about [-10, 10] with a fractional part, never all zero. */
static float rand_logit(void) { return (float)(rand() % 2000001 - 1000000) / 102100.0f; }

/* ---- the reference and the check ------------------------------------------------ */

/* Checks losses and (unless dx is NULL) dx against float64 from the stored
 * logits x and targets. The loss: its f32 math rounds lse and the target's
 * logit (a few units of 2^-24 of each, the GPU's approximate exp2 and
 * log2 a few more), hence 1e-5 (1 + |lse| + |x_t|). dx: p = exp(x - lse)
 * in f32 has a relative error of about 2^-24 |x - lse| (up to 20 here)
 * plus the approximations, so 1e-5 |dloss| (p + onehot), and the storage's
 * rounding of the value; 0 exactly for an ignored row. */
static void check_xent(const char *what, const tensor *x, const int32_t *tg, const tensor *loss, const tensor *dx,
                       float dloss) {
    const dtype *dt = x->dt;
    for (int64_t r = 0; r < x->rows; r++) {
        int32_t t = tg[r];
        bool hit = t >= 0 && t < x->cols;
        double mx = -INFINITY, sum = 0;
        for (int64_t i = 0; i < x->cols; i++) mx = fmax(mx, get(x, r, i));
        for (int64_t i = 0; i < x->cols; i++) sum += exp(get(x, r, i) - mx);
        double lse = mx + log(sum), xt = hit ? get(x, r, t) : 0, want = hit ? lse - xt : 0;
        double got = get(loss, 0, r);
        if (!(fabs(got - want) <= 1e-5 * (1 + fabs(lse) + fabs(xt))) || (!hit && got != 0))
            fail_msg("%s: loss[%lld] = %.9g, want %.9g (target %d) on %s", what, (long long)r, got, want, (int)t,
                     trt_device_name(dev));
        if (!dx) continue;
        for (int64_t i = 0; i < x->cols; i++) {
            double p = exp(get(x, r, i) - lse), oh = i == t ? 1 : 0, w = hit ? (p - oh) * dloss : 0;
            double g = get(dx, r, i), tol = dt->tol * fabs(w) + 1e-5 * fabs(dloss) * (p + oh) + dt->tiny;
            if (!(fabs(g - w) <= tol) || (!hit && g != 0))
                fail_msg("%s: dlogits[%lld][%lld] = %.9g, want %.9g (target %d) on %s", what, (long long)r,
                         (long long)i, g, w, (int)t, trt_device_name(dev));
        }
    }
}

/* How a run places dlogits: a tensor of its own, over the logits (in
 * place), or none (the forward alone). */
typedef enum { APART, IN_PLACE, FORWARD } placement;

/* Targets: random classes, with every fifth row from the third ignored
 * (-1, and -100 as PyTorch's default ignore_index). With cols past a
 * chunk, row 0's first chunk is all -inf (masked classes; its target
 * past them) when dlogits is apart, and its last chunk's logits 8 higher
 * otherwise and on row 1 (the running max grows in the last chunk: the
 * sums before it must be rescaled). */
static void run_xent(const dtype *dt, int rows, int cols, int pad, int dpad, size_t off, placement where) {
    char what[128];
    static const char *const places[] = {"apart", "in place", "forward only"};
    snprintf(what, sizeof what, "cross_entropy %s %dx%d strides %d %d %s", dt->name, rows, cols, cols + pad,
             cols + dpad, places[where]);
    tensor x = make(dt, rows, cols, cols + pad, off), tg = make(&f32_type, 1, rows, rows, 16),
           loss = make(&f32_type, 1, rows, rows, off);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < cols; i++) {
            float v = rand_logit();
            if (cols > CHUNK && r == 0 && where == APART && i < CHUNK) v = -INFINITY;
            if (cols > CHUNK && (r == 1 || (r == 0 && where != APART)) && i >= CHUNK) v += 8; /* the max grows */
            put(&x, r, i, v);
        }
        ints(&tg)[r] = r % 5 == 2 ? (r % 2 ? -100 : -1) : r == 0 && cols > CHUNK && where == APART ? CHUNK + rand() % (cols - CHUNK)
                                                                                  : rand() % cols;
    }
    tensor keep = x; /* the logits as sent: in place, x comes back as dlogits */
    keep.host = malloc(x.bytes);
    assert_non_null(keep.host);
    memcpy(keep.host, x.host, x.bytes);
    tensor dx = where == APART ? make(dt, rows, cols, cols + dpad, 16) : x;
    send(&x), send(&tg), send(&loss);
    if (where == APART) send(&dx);
    else dx.buf = x.buf;
    float dloss = 1.0f / (float)rows;
    tls_mem dmem = where == FORWARD ? tls_mem_of((trt_buffer){0}) : mem(&dx);
    OK(tls_cross_entropy(dev, dt->id, mem(&x), mem(&tg), mem(&loss), dmem, rows, cols, x.stride,
                         where == FORWARD ? 0 : dx.stride, dloss, NULL));
    fetch(&loss, what), fetch(&x, what);
    if (where == APART) fetch(&dx, what);
    if (where != IN_PLACE && memcmp(x.host, keep.host, x.bytes))
        fail_msg("%s: the logits changed on %s", what, trt_device_name(dev));
    if (where == IN_PLACE) dx.host = x.host;
    check_xent(what, &keep, ints(&tg), &loss, where == FORWARD ? NULL : &dx, dloss);
    free(keep.host);
    if (where == APART) drop(&dx);
    drop(&x), drop(&tg), drop(&loss);
}

/* ---- the tests ----------------------------------------------------------------- */

static void test_cross_entropy(void **state) {
    (void)state;
    static const int rows[] = {1, 17, 31}, cols[] = {1, 7, 256, 4111};
    size_t n = 0;
    for (size_t d = 0; d < 3; d++)
        for (size_t r = 0; r < 3; r++)
            for (size_t c = 0; c < 4; c++, n++)
                if (cols[c] < CHUNK || rows[r] < 31) /* chunked rows are slow on the emulator: 1 and 17 of them */
                    run_xent(&dtypes[d], rows[r], cols[c], (int)(n % 3) * 3, (int)(n % 4), 16 * (n % 3), APART);
}

/* dlogits over the logits, and the forward alone (the logits unchanged),
 * one tile and chunked. */
static void test_cross_entropy_in_place_and_forward(void **state) {
    (void)state;
    for (size_t d = 0; d < 3; d++) {
        run_xent(&dtypes[d], 17, 256, 8, 8, 16, IN_PLACE);
        run_xent(&dtypes[d], 5, 7, 1, 1, 0, FORWARD);
        run_xent(&dtypes[d], 3, 4111, 5, 5, 32, IN_PLACE);
        run_xent(&dtypes[d], 3, 4111, 0, 0, 0, FORWARD);
    }
}

/* Where the paths meet: 4096 columns, the widest row in one tile; 4097,
 * the narrowest chunked one (a last chunk of one column); 8192, two whole
 * chunks; each at ALIGN 8 (cols and strides multiples of 8: 16-byte
 * accesses) where it can be, and 4097 at 1. */
static void test_cross_entropy_chunk_edges(void **state) {
    (void)state;
    for (size_t d = 0; d < 3; d++) {
        run_xent(&dtypes[d], 5, CHUNK, 8, 16, 16, APART);
        run_xent(&dtypes[d], 5, CHUNK + 1, 2, 0, 0, APART);
        run_xent(&dtypes[d], 5, 2 * CHUNK, 0, 8, 32, APART);
        run_xent(&dtypes[d], 3, 2 * CHUNK, 8, 8, 16, IN_PLACE);
    }
}

/* GPT-2's vocabulary (13 chunks, the last of 1105 columns); bf16 in
 * place, as a model trains. */
static void test_cross_entropy_wide(void **state) {
    (void)state;
    run_xent(&dtypes[2], 4, 50257, 47, 47, 16, IN_PLACE);
    run_xent(&dtypes[0], 2, 50257, 0, 3, 0, APART);
}

/* num_warps and a stream, in place: one warp for a row in one tile (its
 * reductions in the warp, no barrier: the stores still wait for every
 * load through the row's sum), two for chunked rows (a thread holds 64
 * columns of each tile; one warp, 128, spills and is slow on the
 * emulator). */
static void run_with_options(int cols, int warps, trt_stream *s) {
    char what[96];
    snprintf(what, sizeof what, "cross_entropy f16 3x%d in place on %d warps on a stream", cols, warps);
    tensor x = make(&dtypes[1], 3, cols, cols, 0), tg = make(&f32_type, 1, 3, 3, 0), loss = make(&f32_type, 1, 3, 3, 0);
    for (int64_t r = 0; r < 3; r++) {
        for (int64_t i = 0; i < cols; i++) put(&x, r, i, rand_logit());
        ints(&tg)[r] = rand() % cols;
    }
    tensor keep = x;
    keep.host = malloc(x.bytes);
    assert_non_null(keep.host);
    memcpy(keep.host, x.host, x.bytes);
    send(&x), send(&tg), send(&loss);
    tls_options o = {.num_warps = warps, .stream = s};
    OK(tls_cross_entropy(dev, TLS_F16, mem(&x), mem(&tg), mem(&loss), mem(&x), 3, cols, cols, cols, 0.5f, &o));
    OK(trt_stream_sync(s));
    fetch(&loss, what), fetch(&x, what);
    check_xent(what, &keep, ints(&tg), &loss, &x, 0.5f);
    free(keep.host);
    drop(&x), drop(&tg), drop(&loss);
}

static void test_cross_entropy_options(void **state) {
    (void)state;
    trt_stream *s;
    OK(trt_stream_create(dev, &s));
    run_with_options(300, 1, s);
    run_with_options(4500, 2, s);
    trt_stream_destroy(s);
}

/* A target >= cols: refused where the call can read the targets (CPU,
 * emulator); on the GPU, which does not read them, the kernel ignores the
 * row (loss 0, dlogits 0) and the others are right. */
static void test_cross_entropy_target_past_cols(void **state) {
    (void)state;
    tensor x = make(&dtypes[0], 3, 10, 10, 0), tg = make(&f32_type, 1, 3, 3, 0), loss = make(&f32_type, 1, 3, 3, 0),
           dx = make(&dtypes[0], 3, 10, 10, 0);
    for (int64_t r = 0; r < 3; r++)
        for (int64_t i = 0; i < 10; i++) put(&x, r, i, rand_logit());
    ints(&tg)[0] = 3, ints(&tg)[1] = 10, ints(&tg)[2] = -1;
    send(&x), send(&tg), send(&loss), send(&dx);
    trt_status st = tls_cross_entropy(dev, TLS_F32, mem(&x), mem(&tg), mem(&loss), mem(&dx), 3, 10, 10, 10, 1, NULL);
    if (on_gpu()) {
        OK(st);
        fetch(&loss, "a target past cols"), fetch(&dx, "a target past cols");
        check_xent("a target past cols on the GPU", &x, ints(&tg), &loss, &dx, 1);
    } else {
        assert_int_equal(st, TRT_ERR_INVALID_ARGUMENT);
        const char *want = "tls_cross_entropy: targets[1] is 10, not below cols (10)";
        if (!strstr(trt_last_error(dev), want)) fail_msg("\"%s\" does not say \"%s\"", trt_last_error(dev), want);
        fetch(&loss, "a refused call"), fetch(&dx, "a refused call");
        for (size_t b = 0; b < loss.bytes; b++)
            if (loss.host[b] != 0xff) fail_msg("a refused call wrote losses (byte %zu)", b);
        for (size_t b = 0; b < dx.bytes; b++)
            if (dx.host[b] != 0xff) fail_msg("a refused call wrote dlogits (byte %zu)", b);
    }
    drop(&x), drop(&tg), drop(&loss), drop(&dx);
}

/* The kernel itself, launched directly on every device (the emulator
 * runs the GPU's code): a target >= cols, which tls_cross_entropy refuses
 * where it can read the targets and the GPU cannot see, ignores its row
 * as a negative one does, one tile and chunked, with the other rows
 * right. */
static void test_cross_entropy_kernel_ignores_targets_past_cols(void **state) {
    (void)state;
    FILE *f = fopen(TILEC_SOURCE_DIR "/stdlib/cross_entropy.tile", "rb");
    assert_non_null(f);
    char *src = malloc(1 << 16);
    assert_non_null(src);
    size_t len = fread(src, 1, 1 << 16, f);
    fclose(f);
    assert_true(len > 0 && len < 1 << 16);
    static const int widths[] = {10, CHUNK + 11};
    for (size_t w = 0; w < 2; w++) {
        int cols = widths[w];
        bool chunked = cols > CHUNK;
        tilec_define defs[] = {{"BLOCK", chunked ? CHUNK : 16}, {"CHUNKED", chunked}};
        trt_compile_options co = {.defines = defs, .ndefines = 2};
        trt_module *m;
        trt_kernel *k;
        OK(trt_compile(dev, "stdlib/cross_entropy.tile", src, len, &co, &m));
        OK(trt_get_kernel(m, "cross_entropy_f32", &k));
        tensor x = make(&dtypes[0], 5, cols, cols, 0), tg = make(&f32_type, 1, 5, 5, 0),
               loss = make(&f32_type, 1, 5, 5, 0), dx = make(&dtypes[0], 5, cols, cols, 0);
        for (int64_t r = 0; r < 5; r++)
            for (int64_t i = 0; i < cols; i++) put(&x, r, i, rand_logit());
        int32_t *t = ints(&tg);
        t[0] = 3, t[1] = cols, t[2] = cols - 1, t[3] = INT32_MAX, t[4] = -7;
        send(&x), send(&tg), send(&loss), send(&dx);
        trt_arg a[] = {trt_buf_at(x.buf, 0), trt_buf_at(tg.buf, 0), trt_buf_at(loss.buf, 0), trt_buf_at(dx.buf, 0),
                       trt_int(cols), trt_int(cols), trt_int(cols), trt_float(0.25)};
        OK(trt_launch(k, 5, 1, 1, a, sizeof a / sizeof a[0]));
        fetch(&loss, "a target past cols"), fetch(&dx, "a target past cols");
        check_xent(chunked ? "targets past cols, chunked" : "targets past cols", &x, t, &loss, &dx, 0.25f);
        drop(&x), drop(&tg), drop(&loss), drop(&dx);
        trt_module_free(m);
    }
    free(src);
}

/* st must be `want`, with a message containing `says`. */
static void expect_error(trt_status st, trt_status want, const char *says, const char *call) {
    if (st != want)
        fail_msg("%s: %s (%s), want %s", call, trt_status_name(st), trt_last_error(dev), trt_status_name(want));
    if (!strstr(trt_last_error(dev), says))
        fail_msg("%s: the message \"%s\" does not say \"%s\"", call, trt_last_error(dev), says);
}
#define EXPECT(call, want, says) expect_error((call), (want), (says), #call)

static void test_cross_entropy_misuse(void **state) {
    (void)state;
    const trt_status BAD = TRT_ERR_INVALID_ARGUMENT;
    /* 4 rows of 64 f32 logits (1024 bytes), 4 targets, 4 losses, dlogits like the logits; and one buffer of
     * 2048 bytes holding a row-major 4 x 64 tensor at 0 and room past it */
    tensor x = make(&dtypes[0], 4, 64, 64, 0), tg = make(&f32_type, 1, 4, 4, 0), loss = make(&f32_type, 1, 4, 4, 0),
           dx = make(&dtypes[0], 4, 64, 64, 0), big = make(&dtypes[0], 8, 64, 64, 0);
    for (int64_t r = 0; r < 4; r++) {
        for (int64_t i = 0; i < 64; i++) put(&x, r, i, rand_logit());
        ints(&tg)[r] = (int32_t)r;
    }
    send(&x), send(&tg), send(&loss), send(&dx), send(&big);
    tls_mem X = mem(&x), T = mem(&tg), L = mem(&loss), D = mem(&dx), B = mem(&big), NONE = tls_mem_of((trt_buffer){0});

    assert_int_equal(tls_cross_entropy(NULL, TLS_F32, X, T, L, D, 4, 64, 64, 64, 1, NULL), BAD);
    EXPECT(tls_cross_entropy(dev, (tls_dtype)5, X, T, L, D, 4, 64, 64, 64, 1, NULL), BAD,
           "tls_cross_entropy: unknown dtype 5");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, L, D, 0, 64, 64, 64, 1, NULL), BAD,
           "tls_cross_entropy: rows is 0; it must be from 1 to 2147483647");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, L, D, 4, 0, 64, 64, 1, NULL), BAD, "cols is 0");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, L, D, 1, (int64_t)TLS_CROSS_ENTROPY_MAX_COLS + 1, INT64_MAX,
                             INT64_MAX, 1, NULL),
           BAD, "cols is 2147479553; it must be from 1 to 2147479552");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, L, D, 4, 64, 63, 64, 1, NULL), BAD,
           "stride is 63, less than cols (64)");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, L, D, 4, 64, 64, 32, 1, NULL), BAD,
           "dlogits_stride is 32, less than cols (64)");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, L, D, 4, 64, 64, 64, NAN, NULL), BAD, "dloss is nan; it must be finite");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, L, D, 4, 64, 64, 64, INFINITY, NULL), BAD, "dloss is inf");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, L, D, 4, 64, 65, 64, 1, NULL), BAD,
           "logits: the buffer holds 1024 bytes; 4 rows of 64 elements 65 apart need 1036 from offset 0");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, L, D, 3, 64, INT64_MAX / 2, 64, 1, NULL), BAD,
           "logits: 3 rows 4611686018427387903 elements apart do not fit in memory");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, L, D, 5, 32, 32, 32, 1, NULL), BAD,
           "targets: the buffer holds 16 bytes; 5 values need 20 from offset 0");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, tls_mem_at(big.buf, 2048), D, 4, 64, 64, 64, 1, NULL), BAD,
           "losses: the buffer holds 2048 bytes; 4 values need 16 from offset 2048");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, L, D, 4, 64, 64, 65, 1, NULL), BAD,
           "dlogits: the buffer holds 1024 bytes; 4 rows of 64 elements 65 apart need 1036");
    EXPECT(tls_cross_entropy(dev, TLS_F32, tls_mem_at(x.buf, 8), T, L, D, 1, 1, 1, 1, 1, NULL), BAD,
           "logits: offset 8 is not a multiple of 16");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, tls_mem_at(tg.buf, 4), L, D, 1, 1, 1, 1, 1, NULL), BAD,
           "targets: offset 4 is not a multiple of 16");
    /* overlaps: losses over the logits, the targets; dlogits over the logits (not the same rows), the
     * targets, the losses */
    EXPECT(tls_cross_entropy(dev, TLS_F32, B, T, tls_mem_at(big.buf, 512), D, 4, 64, 64, 64, 1, NULL), BAD,
           "losses and logits overlap in memory");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, T, D, 4, 64, 64, 64, 1, NULL), BAD, "losses and targets overlap");
    EXPECT(tls_cross_entropy(dev, TLS_F32, B, T, L, tls_mem_at(big.buf, 256), 4, 64, 64, 64, 1, NULL), BAD,
           "dlogits and logits overlap in memory");
    EXPECT(tls_cross_entropy(dev, TLS_F32, B, T, L, B, 4, 32, 64, 32, 1, NULL), BAD,
           "dlogits and logits overlap in memory"); /* the same start, another stride: not in place */
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, tls_mem_at(big.buf, 512), L, B, 4, 64, 64, 64, 1, NULL), BAD,
           "dlogits and targets overlap");
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, tls_mem_at(big.buf, 512), B, 4, 64, 64, 64, 1, NULL), BAD,
           "dlogits and losses overlap");
    tls_options o = {.num_warps = 3};
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, L, D, 4, 64, 64, 64, 1, &o), BAD,
           "tls_cross_entropy: num_warps 3 must be 0 (the heuristic) or a power of two");
    trt_buffer gone;
    OK(trt_alloc(dev, 1024, &gone));
    OK(trt_free(dev, gone));
    EXPECT(tls_cross_entropy(dev, TLS_F32, X, T, L, tls_mem_of(gone), 4, 64, 64, 64, 1, NULL), TRT_ERR_INVALID_HANDLE,
           "tls_cross_entropy: dlogits: buffer handle");

    /* nothing ran: the outputs are still poison */
    fetch(&loss, "losses after refused calls"), fetch(&dx, "dlogits after refused calls"), fetch(&big, "big");
    for (size_t b = 0; b < loss.bytes; b++)
        if (loss.host[b] != 0xff) fail_msg("a refused tls_cross_entropy wrote losses (byte %zu)", b);
    for (size_t b = 0; b < dx.bytes; b++)
        if (dx.host[b] != 0xff) fail_msg("a refused tls_cross_entropy wrote dlogits (byte %zu)", b);
    for (size_t b = 0; b < big.bytes; b++)
        if (big.host[b] != 0xff) fail_msg("a refused tls_cross_entropy wrote a buffer (byte %zu)", b);

    /* what is allowed: dlogits over the logits with the same stride, none with any dlogits_stride, f16 rows
     * in half the bytes */
    OK(tls_cross_entropy(dev, TLS_F32, X, T, L, NONE, 4, 64, 64, -7, 1, NULL));
    OK(tls_cross_entropy(dev, TLS_F16, X, T, L, X, 4, 128, 128, 128, 1, NULL));
    OK(tls_cross_entropy(dev, TLS_F32, X, T, L, X, 4, 64, 64, 64, 1, NULL));
    drop(&x), drop(&tg), drop(&loss), drop(&dx), drop(&big);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cross_entropy),
        cmocka_unit_test(test_cross_entropy_in_place_and_forward),
        cmocka_unit_test(test_cross_entropy_chunk_edges),
        cmocka_unit_test(test_cross_entropy_wide),
        cmocka_unit_test(test_cross_entropy_options),
        cmocka_unit_test(test_cross_entropy_target_past_cols),
        cmocka_unit_test(test_cross_entropy_kernel_ignores_targets_past_cols),
        cmocka_unit_test(test_cross_entropy_misuse),
    };
    return stdlib_test_main(argc, argv, &dev, tests, sizeof tests / sizeof tests[0]);
}
