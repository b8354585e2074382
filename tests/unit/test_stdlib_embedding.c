/* The token + position embedding from C (tls_embedding, tls_embedding_bwd,
 * include/tilec_stdlib.h) on one device, in the way of test_stdlib_api.c.
 *
 *   test_stdlib_embedding cpu|cuda|emu
 *
 * Shapes: f32, f16 and bf16; rows = batch x seq with batch 1 and 3 and
 * seq 1 and 17, rows past a multiple of seq (a partial last sequence) and
 * fewer than seq (rows of dwpe with no position), rows past the
 * backward's CHUNK of 64 positions (ragged and whole); dim 1, 7, 64 and
 * 257 (a prime past BLOCK, 256); vocab 1, 5 and 256, tokens repeated
 * (some shapes draw them from a few values only). Every tensor sits 16
 * bytes into a buffer poisoned (all bits set: NaN in every type) around
 * it, so a write past an output shows; dwte and dwpe start at random
 * non-zero values (the backward adds into them).
 *
 * References, from the stored inputs: in float64, out within the f32
 * sum's rounding and the storage's, (2^-24 + u) |out| (u the storage's
 * unit roundoff), and the gradients within the in-order f32 sum's error
 * and the storage's rounding, 2^-24 (n + 1) (|old| + sum |dout|) + u |g|
 * (n the positions summed); and bit for bit against a C model of the
 * documented order (each sum in f32 in order of i from 0, then added to
 * the stored value in f32, then rounded to the storage), which any other
 * order would miss. A second backward from the same dwte and dwpe gives
 * the same bits. Misuse: each refused argument gives its status and
 * message and leaves the outputs poisoned; an out-of-range token is
 * refused on the CPU and the emulator, and adds zeros (skipped in the
 * backward) on the GPU. ctest runs the cuda variant through
 * tests/on-cuda.sh (skipped without a GPU). */
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

typedef struct dtype {
    tls_dtype id;
    const char *name;
    size_t size;
    void (*put)(void *p, size_t i, float v);
    float (*get)(const void *p, size_t i);
    double u;    /* unit roundoff */
    double tiny; /* absolute error allowed near zero: f16's subnormal step, else f32's smallest normal */
} dtype;
static const dtype dtypes[] = {{TLS_F32, "f32", 4, put_f32, get_f32, 0x1p-24, 0x1p-126},
                               {TLS_F16, "f16", 2, put_f16, get_f16, 0x1p-11, 0x1p-24},
                               {TLS_BF16, "bf16", 2, put_bf16, get_bf16, 0x1p-8, 0x1p-126}};

enum { OFF = 16, TAIL = 16 }; /* poisoned bytes before and after each tensor */

/* n values of size bytes, OFF bytes into a buffer of OFF + n * size + TAIL;
 * host holds the whole buffer. */
typedef struct tensor {
    size_t size, n, bytes;
    unsigned char *host;
    trt_buffer buf;
} tensor;

static tensor make(size_t size, size_t n) {
    tensor t = {size, n, OFF + n * size + TAIL, NULL, {0}};
    t.host = malloc(t.bytes);
    assert_non_null(t.host);
    memset(t.host, 0xff, t.bytes);
    OK(trt_alloc(dev, t.bytes, &t.buf));
    return t;
}
static void *at(const tensor *t) { return t->host + OFF; }
static tls_mem mem(const tensor *t) { return tls_mem_at(t->buf, OFF); }
static void send(const tensor *t) { OK(trt_write(dev, t->buf, 0, t->host, t->bytes)); }
/* Reads the buffer back into host (or into a copy of it, `into`); the
 * bytes around the tensor must still be poison. */
static void fetch_into(const tensor *t, unsigned char *into, const char *what) {
    OK(trt_sync(dev));
    OK(trt_read(dev, t->buf, 0, into, t->bytes));
    for (size_t b = 0; b < t->bytes; b++)
        if ((b < OFF || b >= OFF + t->n * t->size) && into[b] != 0xff)
            fail_msg("%s: byte %zu of its buffer, outside the tensor, was written (%#x) on %s", what, b, into[b],
                     trt_device_name(dev));
}
static void fetch(tensor *t, const char *what) { fetch_into(t, t->host, what); }
static bool all_poison(const tensor *t) {
    unsigned char *b = malloc(t->bytes);
    assert_non_null(b);
    OK(trt_read(dev, t->buf, 0, b, t->bytes));
    bool yes = true;
    for (size_t i = 0; i < t->bytes; i++) yes &= b[i] == 0xff;
    free(b);
    return yes;
}
static void drop(tensor *t) {
    OK(trt_free(dev, t->buf));
    free(t->host);
}

/* Random values with a fractional part, both signs, never all zero. */
static float rand_value(void) { return (float)(rand() % 2000001 - 1000000) / 1021.0f / 100; }
static void fill(const dtype *dt, tensor *t) {
    for (size_t i = 0; i < t->n; i++) dt->put(at(t), i, rand_value());
}
static float get(const dtype *dt, const tensor *t, size_t i) { return dt->get(at(t), i); }
static uint32_t bits_of(const dtype *dt, const void *p, size_t i) {
    return dt->size == 4 ? ((const uint32_t *)p)[i] : ((const uint16_t *)p)[i];
}

/* ---- forward and backward against the references ------------------------------- */

typedef struct shape {
    int64_t rows, seq, dim, vocab;
    int64_t distinct; /* tokens drawn from [0, distinct) (repeats), else from [0, vocab) */
} shape;

/* The forward's check: out[i, :] = wte[tok[i], :] + wpe[i % seq, :]. */
static void check_forward(const dtype *dt, const shape *s, const int32_t *tok, const tensor *wte, const tensor *wpe,
                          const tensor *out, const char *what) {
    for (int64_t i = 0; i < s->rows; i++)
        for (int64_t j = 0; j < s->dim; j++) {
            size_t ti = (size_t)(tok[i] * s->dim + j), pi = (size_t)(i % s->seq * s->dim + j), oi = (size_t)(i * s->dim + j);
            double want = (double)get(dt, wte, ti) + get(dt, wpe, pi), got = get(dt, out, oi);
            if (!(fabs(got - want) <= (0x1p-24 + dt->u) * fabs(want) + dt->tiny))
                fail_msg("%s: out[%lld][%lld] = %.9g, want %.9g on %s", what, (long long)i, (long long)j, got, want,
                         trt_device_name(dev));
            unsigned char model[4];
            dt->put(model, 0, get(dt, wte, ti) + get(dt, wpe, pi)); /* the f32 sum, rounded to the storage */
            if (bits_of(dt, model, 0) != bits_of(dt, at(out), oi))
                fail_msg("%s: out[%lld][%lld] = %.9g, not the f32 sum rounded (%.9g) on %s", what, (long long)i,
                         (long long)j, got, (double)dt->get(model, 0), trt_device_name(dev));
        }
}

/* A gradient's row r, column j: old + the sum of dout over the positions
 * i with pick(i) == r, in float64 within the tolerance above, and bit for
 * bit against the f32 in-order model. */
static void check_gradient(const dtype *dt, const shape *s, const char *name, int64_t r, int64_t j, float old,
                           const tensor *dout, const int32_t *tok, bool by_token, float got, const char *what) {
    double sum = 0, mag = fabs(old);
    float f = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < s->rows; i++) {
        if (by_token ? tok[i] != r : i % s->seq != r) continue;
        float d = get(dt, dout, (size_t)(i * s->dim + j));
        sum += d, mag += fabs(d), f += d, n++;
    }
    double want = old + sum;
    if (!(fabs(got - want) <= 0x1p-24 * (double)(n + 1) * mag + dt->u * fabs(want) + dt->tiny))
        fail_msg("%s: %s[%lld][%lld] = %.9g, want %.9g (%lld positions) on %s", what, name, (long long)r, (long long)j,
                 (double)got, want, (long long)n, trt_device_name(dev));
    unsigned char model[4], have[4];
    dt->put(model, 0, old + f);
    dt->put(have, 0, got);
    if (bits_of(dt, model, 0) != bits_of(dt, have, 0))
        fail_msg("%s: %s[%lld][%lld] = %.9g, not the in-order f32 sum added to %.9g (%.9g) on %s", what, name,
                 (long long)r, (long long)j, (double)got, (double)old, (double)dt->get(model, 0),
                 trt_device_name(dev));
}

static void run_embedding(const dtype *dt, const shape *s, const tls_options *opt) {
    char what[128];
    snprintf(what, sizeof what, "embedding %s rows %lld seq %lld dim %lld vocab %lld%s", dt->name, (long long)s->rows,
             (long long)s->seq, (long long)s->dim, (long long)s->vocab, opt ? " with options" : "");
    size_t R = (size_t)s->rows, D = (size_t)s->dim, V = (size_t)s->vocab, S = (size_t)s->seq;
    tensor tokens = make(4, R), wte = make(dt->size, V * D), wpe = make(dt->size, S * D), out = make(dt->size, R * D),
           dout = make(dt->size, R * D), dwte = make(dt->size, V * D), dwpe = make(dt->size, S * D);
    int32_t *tok = at(&tokens);
    int64_t from = s->distinct ? s->distinct : s->vocab;
    for (size_t i = 0; i < R; i++) tok[i] = (int32_t)(rand() % from);
    fill(dt, &wte), fill(dt, &wpe), fill(dt, &dout), fill(dt, &dwte), fill(dt, &dwpe);
    send(&tokens), send(&wte), send(&wpe), send(&out), send(&dout), send(&dwte), send(&dwpe);

    OK(tls_embedding(dev, dt->id, mem(&tokens), mem(&wte), mem(&wpe), mem(&out), s->rows, s->seq, s->vocab, s->dim,
                     opt));
    fetch(&out, what);
    check_forward(dt, s, tok, &wte, &wpe, &out, what);

    unsigned char *dwte0 = malloc(dwte.bytes), *dwpe0 = malloc(dwpe.bytes);
    assert_non_null(dwte0), assert_non_null(dwpe0);
    memcpy(dwte0, dwte.host, dwte.bytes), memcpy(dwpe0, dwpe.host, dwpe.bytes);
    OK(tls_embedding_bwd(dev, dt->id, mem(&tokens), mem(&dout), mem(&dwte), mem(&dwpe), s->rows, s->seq, s->vocab,
                         s->dim, opt));
    fetch(&dwte, what), fetch(&dwpe, what);
    for (int64_t v = 0; v < s->vocab; v++)
        for (int64_t j = 0; j < s->dim; j++) {
            size_t e = (size_t)(v * s->dim + j);
            check_gradient(dt, s, "dwte", v, j, dt->get(dwte0 + OFF, e), &dout, tok, true, get(dt, &dwte, e), what);
        }
    for (int64_t t = 0; t < s->seq; t++)
        for (int64_t j = 0; j < s->dim; j++) {
            size_t e = (size_t)(t * s->dim + j);
            if (t >= s->rows) { /* no position: not written */
                if (bits_of(dt, dwpe0 + OFF, e) != bits_of(dt, at(&dwpe), e))
                    fail_msg("%s: dwpe[%lld][%lld], a row without positions, was written on %s", what, (long long)t,
                             (long long)j, trt_device_name(dev));
                continue;
            }
            check_gradient(dt, s, "dwpe", t, j, dt->get(dwpe0 + OFF, e), &dout, tok, false, get(dt, &dwpe, e), what);
        }

    /* again from the same dwte and dwpe: the same bits */
    unsigned char *first_te = malloc(dwte.bytes), *first_pe = malloc(dwpe.bytes);
    assert_non_null(first_te), assert_non_null(first_pe);
    memcpy(first_te, dwte.host, dwte.bytes), memcpy(first_pe, dwpe.host, dwpe.bytes);
    OK(trt_write(dev, dwte.buf, 0, dwte0, dwte.bytes));
    OK(trt_write(dev, dwpe.buf, 0, dwpe0, dwpe.bytes));
    OK(tls_embedding_bwd(dev, dt->id, mem(&tokens), mem(&dout), mem(&dwte), mem(&dwpe), s->rows, s->seq, s->vocab,
                         s->dim, opt));
    fetch(&dwte, what), fetch(&dwpe, what);
    if (memcmp(first_te, dwte.host, dwte.bytes) || memcmp(first_pe, dwpe.host, dwpe.bytes))
        fail_msg("%s: a second backward gave other bits on %s", what, trt_device_name(dev));

    free(dwte0), free(dwpe0), free(first_te), free(first_pe);
    drop(&tokens), drop(&wte), drop(&wpe), drop(&out), drop(&dout), drop(&dwte), drop(&dwpe);
}

static void test_embedding(void **state) {
    (void)state;
    /* rows, seq, dim, vocab, distinct */
    static const shape shapes[] = {
        {1, 1, 1, 1, 0},       /* the smallest */
        {3, 1, 7, 5, 0},       /* seq 1: dwpe sums every position */
        {17, 17, 64, 256, 0},  /* batch 1 */
        {51, 17, 257, 5, 0},   /* batch 3, dim past BLOCK */
        {51, 17, 7, 256, 3},   /* a few tokens, often repeated, of a large vocabulary */
        {51, 17, 1, 1, 0},     /* one token everywhere */
        {3, 1, 257, 256, 0},
        {20, 17, 7, 5, 0},     /* a partial last sequence */
        {5, 17, 64, 5, 0},     /* fewer positions than seq: dwpe's last rows untouched */
        {185, 37, 64, 256, 7}, /* three chunks of the backward, the last partial */
        {128, 64, 7, 256, 0},  /* two whole chunks */
    };
    size_t n = sizeof shapes / sizeof shapes[0];
    for (size_t t = 0; t < 3; t++)
        for (size_t i = 0; i < n; i++) run_embedding(&dtypes[t], &shapes[i], NULL);
    /* the caller's warps, on a stream */
    trt_stream *st;
    OK(trt_stream_create(dev, &st));
    tls_options o = {.num_warps = 1, .stream = st};
    run_embedding(&dtypes[1], &(shape){51, 17, 64, 5, 0}, &o);
    o.num_warps = 8;
    run_embedding(&dtypes[0], &(shape){20, 17, 257, 5, 0}, &o);
    trt_stream_destroy(st);
}

/* ---- misuse ---------------------------------------------------------------------- */

/* st must be `want`, with a message containing `says`. */
static void expect_error(trt_status st, trt_status want, const char *says, const char *call) {
    if (st != want)
        fail_msg("%s: %s (%s), want %s", call, trt_status_name(st), trt_last_error(dev), trt_status_name(want));
    if (!strstr(trt_last_error(dev), says))
        fail_msg("%s: the message \"%s\" does not say \"%s\"", call, trt_last_error(dev), says);
}
#define EXPECT(call, says) expect_error((call), TRT_ERR_INVALID_ARGUMENT, (says), #call)

static void test_embedding_misuse(void **state) {
    (void)state;
    const dtype *dt = &dtypes[0];
    enum { R = 8, SEQ = 4, D = 8, V = 5 };
    tensor tokens = make(4, R), wte = make(4, V * D), wpe = make(4, SEQ * D), out = make(4, R * D),
           dout = make(4, R * D), dwte = make(4, V * D), dwpe = make(4, SEQ * D), big = make(4, 4096);
    int32_t *tok = at(&tokens);
    for (int i = 0; i < R; i++) tok[i] = i % V;
    fill(dt, &wte), fill(dt, &wpe), fill(dt, &dout);
    send(&tokens), send(&wte), send(&wpe), send(&out), send(&dout), send(&dwte), send(&dwpe), send(&big);
    tls_mem T = mem(&tokens), WTE = mem(&wte), WPE = mem(&wpe), O = mem(&out), DO = mem(&dout), DWTE = mem(&dwte),
            DWPE = mem(&dwpe);
#define FWD(...) tls_embedding(dev, TLS_F32, __VA_ARGS__, NULL)
#define BWD(...) tls_embedding_bwd(dev, TLS_F32, __VA_ARGS__, NULL)
    assert_int_equal(tls_embedding(NULL, TLS_F32, T, WTE, WPE, O, R, SEQ, V, D, NULL), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(tls_embedding_bwd(NULL, TLS_F32, T, DO, DWTE, DWPE, R, SEQ, V, D, NULL), TRT_ERR_INVALID_ARGUMENT);
    EXPECT(tls_embedding(dev, (tls_dtype)4, T, WTE, WPE, O, R, SEQ, V, D, NULL), "tls_embedding: unknown dtype 4");
    EXPECT(tls_embedding(dev, TLS_F32, T, WTE, WPE, O, R, SEQ, V, D, &(tls_options){.num_warps = 3}),
           "tls_embedding: num_warps 3 must be 0");
    /* sizes */
    EXPECT(FWD(T, WTE, WPE, O, 0, SEQ, V, D), "tls_embedding: rows is 0; it must be from 1 to 2147481600");
    EXPECT(FWD(T, WTE, WPE, O, (int64_t)TLS_EMBEDDING_MAX_ROWS + 1, SEQ, V, D), "rows is 2147481601");
    EXPECT(FWD(T, WTE, WPE, O, R, 0, V, D), "tls_embedding: seq is 0; it must be from 1 to 2147483647");
    EXPECT(FWD(T, WTE, WPE, O, R, (int64_t)1 << 31, V, D), "seq is 2147483648");
    EXPECT(FWD(T, WTE, WPE, O, R, SEQ, -1, D), "tls_embedding: vocab is -1; it must be from 1 to 2147483647");
    EXPECT(FWD(T, WTE, WPE, O, R, SEQ, V, 0), "tls_embedding: dim is 0; it must be from 1 to 16776960");
    EXPECT(BWD(T, DO, DWTE, DWPE, R, SEQ, V, (int64_t)TLS_EMBEDDING_MAX_DIM + 1),
           "tls_embedding_bwd: dim is 16776961");
    EXPECT(BWD(T, DO, DWTE, DWPE, 0, SEQ, V, D), "tls_embedding_bwd: rows is 0");
    EXPECT(BWD(T, DO, DWTE, DWPE, R, -5, V, D), "tls_embedding_bwd: seq is -5");
    EXPECT(BWD(T, DO, DWTE, DWPE, R, SEQ, 0, D), "tls_embedding_bwd: vocab is 0");
    EXPECT(BWD(T, DO, DWTE, DWPE, R, SEQ, (int64_t)TLS_EMBEDDING_MAX_VOCAB + 1, D), "vocab is 2147483648");
    /* buffers too small for the shape, misaligned, freed */
    EXPECT(FWD(T, WTE, WPE, O, R + 5, SEQ, V, D), "tls_embedding: tokens: the buffer holds 64 bytes");
    EXPECT(FWD(T, WTE, WPE, O, R, SEQ, V + 1, D), "tls_embedding: wte: the buffer holds 192 bytes");
    EXPECT(FWD(T, WTE, WPE, O, R, SEQ + 1, V, D), "tls_embedding: wpe: the buffer holds 160 bytes");
    EXPECT(FWD(T, WTE, WPE, O, R, SEQ, 1, D + 1), "tls_embedding: out: the buffer holds 288 bytes");
    EXPECT(BWD(T, DO, DWTE, DWPE, R, SEQ, 1, D + 1), "tls_embedding_bwd: dout: the buffer holds 288 bytes");
    EXPECT(BWD(T, DO, DWTE, DWPE, R, SEQ, V + 1, D), "tls_embedding_bwd: dwte: the buffer holds 192 bytes");
    EXPECT(BWD(T, DO, DWTE, DWPE, R, SEQ + 1, V, D), "tls_embedding_bwd: dwpe: the buffer holds 160 bytes");
    EXPECT(FWD(tls_mem_at(tokens.buf, 8), WTE, WPE, O, 1, SEQ, V, D), "tokens: offset 8 is not a multiple of 16");
    EXPECT(BWD(T, DO, tls_mem_at(dwte.buf, 24), DWPE, R, SEQ, 1, 1), "dwte: offset 24 is not a multiple of 16");
    trt_buffer gone;
    OK(trt_alloc(dev, 1024, &gone));
    OK(trt_free(dev, gone));
    expect_error(FWD(T, tls_mem_of(gone), WPE, O, R, SEQ, V, D), TRT_ERR_INVALID_HANDLE,
                 "tls_embedding: wte: buffer handle", "a freed wte");
    expect_error(BWD(T, DO, DWTE, tls_mem_of(gone), R, SEQ, V, D), TRT_ERR_INVALID_HANDLE,
                 "tls_embedding_bwd: dwpe: buffer handle", "a freed dwpe");
    /* outputs sharing memory: one big buffer holding several tensors */
    tls_mem B0 = tls_mem_at(big.buf, OFF), B64 = tls_mem_at(big.buf, OFF + 64 * 4), B32 = tls_mem_at(big.buf, OFF + 32 * 4);
    EXPECT(FWD(T, B0, WPE, B32, R, SEQ, V, D), "tls_embedding: out and wte overlap in memory");
    EXPECT(FWD(T, WTE, B64, B64, R, SEQ, V, D), "out and wpe overlap in memory");
    EXPECT(FWD(T, WTE, WPE, tls_mem_at(tokens.buf, OFF), 1, SEQ, V, 1), "out and tokens overlap in memory");
    EXPECT(BWD(T, DO, B0, B32, R, SEQ, V, D), "tls_embedding_bwd: dwte and dwpe overlap in memory");
    EXPECT(BWD(T, B0, DWTE, B32, R, SEQ, V, D), "dwpe and dout overlap in memory");
    EXPECT(BWD(T, DO, tls_mem_at(dout.buf, OFF + 32 * 4), DWPE, R, SEQ, 1, D), "dwte and dout overlap in memory");
    EXPECT(BWD(T, DO, DWTE, tls_mem_at(tokens.buf, OFF), 1, 1, V, 1), "dwpe and tokens overlap in memory");
    /* tokens out of range: refused where they can be read (the CPU and the
     * emulator), a row of zeros and no gradient on the GPU */
    tok[3] = V, tok[5] = -2;
    send(&tokens);
    bool host = !trt_device_arch(dev)[0];
    if (host) {
        EXPECT(FWD(T, WTE, WPE, O, R, SEQ, V, D), "tls_embedding: tokens[3] is 5; a token must be from 0 to 4");
        EXPECT(BWD(T, DO, DWTE, DWPE, R, SEQ, V, D), "tls_embedding_bwd: tokens[3] is 5");
        tok[3] = 0;
        send(&tokens);
        EXPECT(FWD(T, WTE, WPE, O, R, SEQ, V, D), "tokens[5] is -2");
        tok[3] = V;
        send(&tokens);
    }
    /* nothing ran */
    if (!all_poison(&out) || !all_poison(&dwte) || !all_poison(&dwpe) || !all_poison(&big))
        fail_msg("a refused tls_embedding or tls_embedding_bwd wrote an output");
    if (!host) {
        for (size_t i = 0; i < dwte.n; i++) put_f32(at(&dwte), i, 0.0f);
        for (size_t i = 0; i < dwpe.n; i++) put_f32(at(&dwpe), i, 0.0f);
        send(&dwte), send(&dwpe);
        OK(FWD(T, WTE, WPE, O, R, SEQ, V, D));
        OK(BWD(T, DO, DWTE, DWPE, R, SEQ, V, D));
        fetch(&out, "out-of-range tokens"), fetch(&dwte, "out-of-range tokens"), fetch(&dwpe, "out-of-range tokens");
        for (int i = 0; i < R; i++)
            for (int j = 0; j < D; j++) {
                float want = (tok[i] >= 0 && tok[i] < V ? get(dt, &wte, (size_t)(tok[i] * D + j)) : 0.0f) +
                             get(dt, &wpe, (size_t)(i % SEQ * D + j));
                if (get(dt, &out, (size_t)(i * D + j)) != want)
                    fail_msg("out[%d][%d] = %g, want %g (token %d)", i, j, (double)get(dt, &out, (size_t)(i * D + j)),
                             (double)want, tok[i]);
            }
        for (int v = 0; v < V; v++)
            for (int j = 0; j < D; j++) {
                float want = 0;
                for (int i = 0; i < R; i++)
                    if (tok[i] == v) want += get(dt, &dout, (size_t)(i * D + j));
                if (get(dt, &dwte, (size_t)(v * D + j)) != want)
                    fail_msg("dwte[%d][%d] = %g, want %g", v, j, (double)get(dt, &dwte, (size_t)(v * D + j)),
                             (double)want);
            }
    }
#undef FWD
#undef BWD
    drop(&tokens), drop(&wte), drop(&wpe), drop(&out), drop(&dout), drop(&dwte), drop(&dwpe), drop(&big);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_embedding_misuse),
    };
    return stdlib_test_main(argc, argv, &dev, tests, sizeof tests / sizeof tests[0]);
}
