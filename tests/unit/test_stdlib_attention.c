/* The stdlib's flash attention from C (tls_attention_fwd,
 * tls_attention_bwd and its workspace query, include/tilec_stdlib.h) on
 * one device, in the way of test_stdlib_api.c (which it would have pushed
 * past the 1,200 lines a file may have): results against a float64
 * reference, and every refused argument.
 *
 *   test_stdlib_attention cpu|cuda|emu
 *
 * Shapes: f16, bf16 and f32 (tf32 inputs, small shapes); head dims 32,
 * 64 and 128 (the rows of
 * runtime/stdlib_attention.c's attention_configs and
 * attention_bwd_configs the CPU and the emulator take, and head dim 32 at
 * the sm_90 row's 8 warps); causal or not; sliding windows, one-sided
 * (-1) and one that leaves rows no key; grouped-query and multi-query
 * heads; n of 1, 17, primes past the blocks, n_q != n_kv;
 * FlashAttention's (batch, row, head, d) layout, (batch, head, row, d)
 * with padded rows, and rows at odd strides; variable-length batches
 * with a sequence of 0 and of 1 rows. Every tensor sits at an offset in
 * a buffer poisoned (all bits set) outside it, so a write past an output
 * shows. The reference is the softmax in float64 of the stored inputs;
 * tolerance as test_runtime_devices_attention.c's: o within 8 u (1 +
 * |o|), u the storage's unit roundoff (p is rounded to it before the
 * second product, o after), lse within 1e-3 (1 + |lse|) (f32 exp2 and
 * log2), and exactly 0 and -inf for a row that sees no key; for f32, u is
 * tf32's (2^-11: its inputs are tf32 values, so the products are exact,
 * and p is rounded to tf32 before the second product on every device,
 * the CPU's interpreter and the emulator as the GPU). The backward
 * runs on the forward's o and lse against the float64 gradient
 * (run_backward says its tolerance). Misuse: each check of
 * tls_attention_fwd and tls_attention_bwd gives its status and message,
 * and the outputs stay poisoned. ctest runs the cuda variant through
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
    double u; /* unit roundoff */
} dtype;
/* f32 to tf32 as the tensor cores' cvt.rna.tf32.f32 (and the CPU device's
 * and the emulator's f32 dot): 10 mantissa bits, to nearest, ties away
 * from zero. */
static float tf32(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    u = (u + 0x1000u) & ~0x1fffu;
    memcpy(&v, &u, 4);
    return v;
}
/* f32 attention's inputs: tf32 values, so that its tf32 products are exact
 * as f16's are and the reference needs no rounding of its own. */
static void put_tf32(void *p, size_t i, float v) { put_f32(p, i, tf32(v)); }

static const dtype f16 = {TLS_F16, "f16", 2, put_f16, get_f16, 0x1p-11},
                   bf16 = {TLS_BF16, "bf16", 2, put_bf16, get_bf16, 0x1p-8},
                   f32 = {TLS_F32, "f32", 4, put_f32, get_f32, 0x1p-24},
                   /* f32 attention: its u is tf32's, to which p (and the backward's dS) is rounded before a
                    * product, on every device */
                   f32_att = {TLS_F32, "f32", 4, put_tf32, get_f32, 0x1p-11};

/* ---- tensors of four dims in poisoned buffers ----------------------------------- */

/* Element (b, h, i, d) at b * s[0] + h * s[1] + i * s[2] + d elements from
 * `off` bytes into a buffer that ends at the furthest element. */
typedef struct tensor {
    const dtype *dt;
    int64_t n[4], s[4];
    size_t off, bytes;
    unsigned char *host;
    trt_buffer buf;
} tensor;

static tensor make(const dtype *dt, const int64_t n[4], int64_t sb, int64_t sh, int64_t sr, size_t off) {
    tensor t = {dt, {n[0], n[1], n[2], n[3]}, {sb, sh, sr, 1}, off, off, NULL, {0}};
    int64_t last = 0;
    for (int i = 0; i < 4; i++) last += (n[i] > 0 ? n[i] - 1 : 0) * t.s[i];
    t.bytes = off + (size_t)(last + 1) * dt->size;
    t.host = malloc(t.bytes);
    assert_non_null(t.host);
    memset(t.host, 0xff, t.bytes); /* NaN in every type */
    return t;
}
static size_t at(const tensor *t, int64_t b, int64_t h, int64_t i, int64_t d) {
    return (size_t)(b * t->s[0] + h * t->s[1] + i * t->s[2] + d);
}
static float get(const tensor *t, int64_t b, int64_t h, int64_t i, int64_t d) {
    return t->dt->get(t->host + t->off, at(t, b, h, i, d));
}
static void put(tensor *t, int64_t b, int64_t h, int64_t i, int64_t d, float v) {
    t->dt->put(t->host + t->off, at(t, b, h, i, d), v);
}
static tls_attention_tensor arg(const tensor *t) {
    tls_attention_tensor a = {tls_mem_at(t->buf, t->off), t->s[0], t->s[1], t->s[2]};
    return a;
}
static void send(tensor *t) {
    OK(trt_alloc(dev, t->bytes, &t->buf));
    OK(trt_write(dev, t->buf, 0, t->host, t->bytes));
}
/* Reads an output back: every byte that is not one of its elements must
 * still be poison. */
static void fetch(tensor *t, const char *what) {
    OK(trt_sync(dev));
    OK(trt_read(dev, t->buf, 0, t->host, t->bytes));
    bool *mine = calloc(t->bytes, 1);
    for (int64_t b = 0; b < t->n[0]; b++)
        for (int64_t h = 0; h < t->n[1]; h++)
            for (int64_t i = 0; i < t->n[2]; i++)
                for (int64_t d = 0; d < t->n[3]; d++)
                    memset(mine + t->off + at(t, b, h, i, d) * t->dt->size, 1, t->dt->size);
    for (size_t i = 0; i < t->bytes; i++)
        if (!mine[i] && t->host[i] != 0xff) {
            free(mine);
            fail_msg("%s: byte %zu of its buffer, outside the tensor, was written (%#x) on %s", what, i, t->host[i],
                     trt_device_name(dev));
        }
    free(mine);
}
static bool all_poison(const tensor *t) {
    tensor c = *t;
    c.host = malloc(t->bytes);
    OK(trt_sync(dev));
    OK(trt_read(dev, t->buf, 0, c.host, t->bytes));
    bool poison = true;
    for (size_t i = 0; i < t->bytes && poison; i++) poison = c.host[i] == 0xff;
    free(c.host);
    return poison;
}
static void drop(tensor *t) {
    OK(trt_free(dev, t->buf));
    free(t->host);
}

/* Uniform in [-1, 1]: scores of a few units, so that the softmax spreads
 * over many keys. */
static float unit_rand(void) { return (float)(rand() % 2001 - 1000) / 1000.0f; }

/* ---- results ------------------------------------------------------------------- */

typedef enum { BSHD, BHSD_PADDED, ODD } layout;
static const char *const layout_names[] = {"(batch, row, head, d)", "(batch, head, row, d) padded", "odd strides"};

typedef struct att_case {
    const dtype *dt;
    int batch, heads, kv_heads, n_q, n_kv, d;
    bool causal, window;
    int left, right; /* -1: no bound */
    float scale;     /* 0: the default */
    layout lay;
    int lens_q[4], lens_kv[4]; /* with varlen: the batch's lengths */
    bool varlen;
    int warps; /* tls_options.num_warps: 0, the table's */
} att_case;

/* Strides of a [batch, heads, rows, d] tensor (rows the packed total
 * with varlen, its batch stride 0). */
static void strides_for(const att_case *c, int64_t heads, int64_t rows, int64_t s[3]) {
    int64_t d = c->d;
    switch (c->lay) {
    case BSHD: s[2] = heads * d, s[1] = d, s[0] = rows * heads * d; break;
    case BHSD_PADDED: s[2] = d + 8, s[1] = rows * (d + 8), s[0] = heads * rows * (d + 8); break;
    case ODD: s[2] = heads * (d + 3) + 1, s[1] = d + 3, s[0] = rows * s[2] + 5; break;
    }
    if (c->varlen) s[0] = 0;
}

static bool sees(const att_case *c, int64_t i, int64_t j) {
    return (!c->causal || j <= i) && (!c->window || ((c->left < 0 || j >= i - c->left) && (c->right < 0 || j <= i + c->right)));
}

static void run_attention(const att_case *c) {
    const dtype *dt = c->dt;
    char what[200];
    snprintf(what, sizeof what, "attention %s d=%d batch %d heads %d/%d n %d/%d%s%s %d %d%s, %s, warps %d", dt->name,
             c->d, c->batch, c->heads, c->kv_heads, c->n_q, c->n_kv, c->causal ? " causal" : "",
             c->window ? " window" : "", c->left, c->right, c->varlen ? " varlen" : "", layout_names[c->lay], c->warps);
    int32_t cu_q[5] = {0}, cu_k[5] = {0};
    int max_q = c->n_q, max_kv = c->n_kv;
    if (c->varlen) {
        max_q = max_kv = 1;
        for (int b = 0; b < c->batch; b++) {
            cu_q[b + 1] = cu_q[b] + c->lens_q[b], cu_k[b + 1] = cu_k[b] + c->lens_kv[b];
            max_q = c->lens_q[b] > max_q ? c->lens_q[b] : max_q, max_kv = c->lens_kv[b] > max_kv ? c->lens_kv[b] : max_kv;
        }
    }
    int64_t nb = c->varlen ? 1 : c->batch, rq = c->varlen ? cu_q[c->batch] : max_q,
            rk = c->varlen ? cu_k[c->batch] : max_kv, sq[3] = {0}, sk[3] = {0};
    strides_for(c, c->heads, rq, sq), strides_for(c, c->kv_heads, rk, sk);
    const int64_t nq[4] = {nb, c->heads, rq, c->d}, nk[4] = {nb, c->kv_heads, rk, c->d}, nl[4] = {nb, c->heads, rq, 1};
    tensor q = make(dt, nq, sq[0], sq[1], sq[2], 16), k = make(dt, nk, sk[0], sk[1], sk[2], 32),
           v = make(dt, nk, sk[0], sk[1], sk[2], 0), o = make(dt, nq, sq[0], sq[1], sq[2], 48),
           lse = make(&f32, nl, c->varlen ? 0 : c->heads * (rq + 4), rq + 4, 1, 16), cq, ck;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t h = 0; h < c->heads; h++)
            for (int64_t i = 0; i < rq; i++)
                for (int64_t d = 0; d < c->d; d++) put(&q, b, h, i, d, 4 * unit_rand());
    for (int64_t b = 0; b < nb; b++)
        for (int64_t h = 0; h < c->kv_heads; h++)
            for (int64_t i = 0; i < rk; i++)
                for (int64_t d = 0; d < c->d; d++) put(&k, b, h, i, d, unit_rand()), put(&v, b, h, i, d, unit_rand());
    send(&q), send(&k), send(&v), send(&o), send(&lse);
    tls_attention_problem p = {.batch = c->batch, .heads = c->heads, .kv_heads = c->kv_heads, .n_q = max_q,
                               .n_kv = max_kv, .head_dim = c->d, .scale = c->scale, .causal = c->causal,
                               .window = c->window, .window_left = c->window ? c->left : 0,
                               .window_right = c->window ? c->right : 0};
    if (c->varlen) {
        const int64_t ncu[4] = {1, 1, 1, c->batch + 1};
        cq = make(&f32, ncu, 0, 0, 0, 16), ck = make(&f32, ncu, 0, 0, 0, 0);
        memcpy(cq.host + cq.off, cu_q, sizeof(int32_t) * (size_t)(c->batch + 1));
        memcpy(ck.host + ck.off, cu_k, sizeof(int32_t) * (size_t)(c->batch + 1));
        send(&cq), send(&ck);
        p.cu_q = tls_mem_at(cq.buf, cq.off), p.cu_k = tls_mem_at(ck.buf, ck.off), p.total_q = rq, p.total_kv = rk;
    }
    size_t modules = tls_num_modules(dev);
    const tls_options opt = {.num_warps = c->warps};
    OK(tls_attention_fwd(dev, dt->id, &p, arg(&q), arg(&k), arg(&v), arg(&o), arg(&lse), &opt));
    fetch(&o, what), fetch(&lse, what);
    size_t after = tls_num_modules(dev); /* the same call again compiles nothing */
    OK(tls_attention_fwd(dev, dt->id, &p, arg(&q), arg(&k), arg(&v), arg(&o), arg(&lse), &opt));
    assert_true(after <= modules + 1);
    assert_int_equal(tls_num_modules(dev), after);
    double scale = c->scale != 0 ? c->scale : 1 / sqrt((double)(float)c->d), tol = 8 * dt->u;
    double *s = malloc(sizeof(double) * (size_t)max_kv);
    for (int64_t b = 0; b < c->batch; b++)
        for (int64_t h = 0; h < c->heads; h++) {
            int64_t qb = c->varlen ? 0 : b, lq = c->varlen ? c->lens_q[b] : max_q, lk = c->varlen ? c->lens_kv[b] : max_kv;
            int64_t q0 = c->varlen ? cu_q[b] : 0, k0 = c->varlen ? cu_k[b] : 0, kvh = h / (c->heads / c->kv_heads);
            for (int64_t i = 0; i < lq; i++) {
                double m = -INFINITY, l = 0;
                for (int64_t j = 0; j < lk; j++) {
                    if (!sees(c, i, j)) continue;
                    double dot = 0;
                    for (int64_t d = 0; d < c->d; d++) dot += (double)get(&q, qb, h, q0 + i, d) * get(&k, qb, kvh, k0 + j, d);
                    s[j] = dot * (float)scale, m = fmax(m, s[j]);
                }
                for (int64_t j = 0; j < lk; j++)
                    if (sees(c, i, j)) l += exp(s[j] - m);
                double want_lse = l > 0 ? m + log(l) : -INFINITY, got_lse = get(&lse, qb, h, q0 + i, 0);
                if (!(got_lse == want_lse || fabs(got_lse - want_lse) <= 1e-3 * (1 + fabs(want_lse))))
                    fail_msg("%s: lse[%lld][%lld][%lld] = %g, want %g on %s", what, (long long)b, (long long)h,
                             (long long)i, got_lse, want_lse, trt_device_name(dev));
                for (int64_t d = 0; d < c->d; d++) {
                    double want = 0, got = get(&o, qb, h, q0 + i, d);
                    for (int64_t j = 0; j < lk; j++)
                        if (sees(c, i, j)) want += exp(s[j] - m) / l * get(&v, qb, kvh, k0 + j, d);
                    if (!(fabs(got - want) <= tol * (1 + fabs(want))) || (l == 0 && got != 0))
                        fail_msg("%s: o[%lld][%lld][%lld][%lld] = %g, want %g on %s", what, (long long)b, (long long)h,
                                 (long long)i, (long long)d, got, want, trt_device_name(dev));
                }
            }
        }
    free(s);
    drop(&q), drop(&k), drop(&v), drop(&o), drop(&lse);
    if (c->varlen) drop(&cq), drop(&ck);
}

static void test_attention(void **state) {
    (void)state;
    const att_case cases[] = {
        /* grouped-query heads, n_q != n_kv, a prime past the blocks; FlashAttention's layout */
        {.dt = &f16, .batch = 2, .heads = 4, .kv_heads = 2, .n_q = 17, .n_kv = 131, .d = 64, .lay = BSHD},
        /* multi-query, causal, head dim 32, padded rows; one row, one key */
        {.dt = &f16, .batch = 1, .heads = 3, .kv_heads = 1, .n_q = 100, .n_kv = 100, .d = 32, .causal = true,
         .lay = BHSD_PADDED},
        {.dt = &bf16, .batch = 2, .heads = 2, .kv_heads = 2, .n_q = 1, .n_kv = 1, .d = 32, .lay = ODD},
        /* head dim 128 at odd strides: causal with a window (rows from 65 on see no key), and a window past the keys
         * (rows from 21 on see none) */
        {.dt = &bf16, .batch = 2, .heads = 2, .kv_heads = 2, .n_q = 70, .n_kv = 45, .d = 128, .causal = true,
         .window = true, .left = 20, .right = 5, .lay = ODD},
        {.dt = &f16, .batch = 1, .heads = 2, .kv_heads = 1, .n_q = 40, .n_kv = 17, .d = 128, .window = true, .left = 4,
         .right = 0, .scale = 0.3f, .lay = BSHD},
        /* head dim 256, grouped heads, causal */
        {.dt = &f16, .batch = 1, .heads = 2, .kv_heads = 1, .n_q = 70, .n_kv = 45, .d = 256, .causal = true},
        /* one-sided windows (-1: no bound) */
        {.dt = &f16, .batch = 1, .heads = 2, .kv_heads = 2, .n_q = 67, .n_kv = 80, .d = 64, .window = true, .left = -1,
         .right = 3, .lay = BHSD_PADDED},
        {.dt = &bf16, .batch = 1, .heads = 2, .kv_heads = 1, .n_q = 67, .n_kv = 80, .d = 64, .window = true, .left = 9,
         .right = -1, .scale = -0.1f, .lay = BSHD},
        /* head dim 32 at the sm_90 row's 8 warps (the CPU and the emulator take the sm_80 rows) */
        {.dt = &bf16, .batch = 2, .heads = 2, .kv_heads = 1, .n_q = 150, .n_kv = 61, .d = 32, .causal = true,
         .lay = BHSD_PADDED, .warps = 8},
        /* a bound past every key is none (the call clamps it: the kernel's i32 row + window would wrap) */
        {.dt = &f16, .batch = 1, .heads = 1, .kv_heads = 1, .n_q = 70, .n_kv = 70, .d = 32, .window = true,
         .left = 6, .right = INT32_MAX, .lay = BSHD},
        /* varlen: sequences of 0 and 1 query rows, one of 0 keys (its rows see none) */
        {.dt = &f16, .batch = 4, .heads = 4, .kv_heads = 2, .d = 64, .causal = true, .lay = BSHD, .varlen = true,
         .lens_q = {37, 0, 1, 20}, .lens_kv = {50, 7, 1, 0}},
        {.dt = &bf16, .batch = 3, .heads = 2, .kv_heads = 2, .d = 32, .window = true, .left = 8, .right = 8,
         .lay = ODD, .varlen = true, .lens_q = {1, 131, 0}, .lens_kv = {3, 100, 1}},
        {.dt = &f16, .batch = 2, .heads = 2, .kv_heads = 1, .d = 128, .lay = BSHD, .varlen = true,
         .lens_q = {33, 70}, .lens_kv = {70, 33}},
        /* f32 (tf32 products; small: the emulator's f32 tiles are slow) at each head dim it takes: grouped heads,
         * causal; a window at odd strides; varlen with a sequence of 1 row */
        {.dt = &f32_att, .batch = 2, .heads = 2, .kv_heads = 1, .n_q = 17, .n_kv = 37, .d = 64, .causal = true,
         .lay = BSHD},
        {.dt = &f32_att, .batch = 1, .heads = 1, .kv_heads = 1, .n_q = 33, .n_kv = 20, .d = 128, .window = true,
         .left = 5, .right = 3, .scale = 0.2f, .lay = ODD},
        {.dt = &f32_att, .batch = 2, .heads = 2, .kv_heads = 2, .d = 32, .lay = BHSD_PADDED, .varlen = true,
         .lens_q = {1, 40}, .lens_kv = {20, 3}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_attention(&cases[i]);
}

/* num_warps and a stream from tls_options give the same results. */
static void test_attention_options(void **state) {
    (void)state;
    trt_stream *s;
    OK(trt_stream_create(dev, &s));
    const int64_t n[4] = {1, 2, 50, 64}, nl[4] = {1, 2, 50, 1};
    tensor q = make(&f16, n, 0, 50 * 64, 64, 0), kv = make(&f16, n, 0, 50 * 64, 64, 0),
           o = make(&f16, n, 0, 50 * 64, 64, 0), lse = make(&f32, nl, 0, 50, 1, 0);
    for (int64_t h = 0; h < 2; h++)
        for (int64_t i = 0; i < 50; i++)
            for (int64_t d = 0; d < 64; d++) put(&q, 0, h, i, d, unit_rand()), put(&kv, 0, h, i, d, unit_rand());
    send(&q), send(&kv), send(&o), send(&lse);
    tls_attention_problem p = {.batch = 1, .heads = 2, .kv_heads = 2, .n_q = 50, .n_kv = 50, .head_dim = 64};
    tls_options opt = {.num_warps = 2, .stream = s};
    OK(tls_attention_fwd(dev, TLS_F16, &p, arg(&q), arg(&kv), arg(&kv), arg(&o), arg(&lse), &opt));
    OK(trt_stream_sync(s));
    fetch(&o, "attention on a stream at 2 warps");
    /* k = v = kv: o is a weighted mean of kv's rows */
    for (int64_t h = 0; h < 2; h++)
        for (int64_t i = 0; i < 50; i++) {
            double m = -INFINITY, l = 0, sc[50];
            for (int64_t j = 0; j < 50; j++) {
                double dot = 0;
                for (int64_t d = 0; d < 64; d++) dot += (double)get(&q, 0, h, i, d) * get(&kv, 0, h, j, d);
                sc[j] = dot * 0.125, m = fmax(m, sc[j]);
            }
            for (int64_t j = 0; j < 50; j++) l += exp(sc[j] - m);
            for (int64_t d = 0; d < 64; d++) {
                double want = 0;
                for (int64_t j = 0; j < 50; j++) want += exp(sc[j] - m) / l * get(&kv, 0, h, j, d);
                if (!(fabs(get(&o, 0, h, i, d) - want) <= 8 * f16.u * (1 + fabs(want))))
                    fail_msg("attention on a stream: o[%lld][%lld][%lld] = %g, want %g", (long long)h, (long long)i,
                             (long long)d, (double)get(&o, 0, h, i, d), want);
            }
        }
    drop(&q), drop(&kv), drop(&o), drop(&lse);
    trt_stream_destroy(s);
}

/* ---- the backward ----------------------------------------------------------------- */

/* tls_attention_bwd after tls_attention_fwd on the same problem (o and lse
 * the forward kernel's, as a caller has them), d_o in [-1, 1], the
 * gradients at offsets in poisoned buffers in the case's layout, the
 * workspace poisoned past what tls_attention_bwd_workspace says, run
 * twice (the second time on a stream, on poisoned outputs: the same
 * bits); against the float64 gradient of the float64 reference on the
 * stored inputs.
 * Tolerance as test_runtime_devices_attention_bwd.c's: each gradient
 * within 8 u times the sum of its terms' magnitudes (the second term of
 * dq's and dk's bounding delta's error from o's), plus n 2^-22 for f16
 * (p and dS below f16's normals; n the terms), and exactly 0 where
 * there is no term (a row that sees no key, a key no row sees). */
/* Where run_backward's first backward call searches its configurations
 * (tls_options.search; test_attention_bwd_search), NULL: nowhere. */
static trt_tuning *bwd_search;

static void run_backward(const att_case *c) {
    const dtype *dt = c->dt;
    char what[200];
    snprintf(what, sizeof what, "attention bwd %s d=%d batch %d heads %d/%d n %d/%d%s%s %d %d%s, %s, warps %d",
             dt->name, c->d, c->batch, c->heads, c->kv_heads, c->n_q, c->n_kv, c->causal ? " causal" : "",
             c->window ? " window" : "", c->left, c->right, c->varlen ? " varlen" : "", layout_names[c->lay], c->warps);
    int32_t cu_q[5] = {0}, cu_k[5] = {0};
    int max_q = c->n_q, max_kv = c->n_kv;
    if (c->varlen) {
        max_q = max_kv = 1;
        for (int b = 0; b < c->batch; b++) {
            cu_q[b + 1] = cu_q[b] + c->lens_q[b], cu_k[b + 1] = cu_k[b] + c->lens_kv[b];
            max_q = c->lens_q[b] > max_q ? c->lens_q[b] : max_q, max_kv = c->lens_kv[b] > max_kv ? c->lens_kv[b] : max_kv;
        }
    }
    int64_t nb = c->varlen ? 1 : c->batch, rq = c->varlen ? cu_q[c->batch] : max_q,
            rk = c->varlen ? cu_k[c->batch] : max_kv, sq[3] = {0}, sk[3] = {0};
    strides_for(c, c->heads, rq, sq), strides_for(c, c->kv_heads, rk, sk);
    const int64_t nq[4] = {nb, c->heads, rq, c->d}, nk[4] = {nb, c->kv_heads, rk, c->d}, nl[4] = {nb, c->heads, rq, 1};
    tensor q = make(dt, nq, sq[0], sq[1], sq[2], 16), k = make(dt, nk, sk[0], sk[1], sk[2], 32),
           v = make(dt, nk, sk[0], sk[1], sk[2], 0), o = make(dt, nq, sq[0], sq[1], sq[2], 48),
           g = make(dt, nq, sq[0], sq[1], sq[2], 0), dq = make(dt, nq, sq[0], sq[1], sq[2], 32),
           dk = make(dt, nk, sk[0], sk[1], sk[2], 16), dv = make(dt, nk, sk[0], sk[1], sk[2], 64),
           lse = make(&f32, nl, c->varlen ? 0 : c->heads * (rq + 4), rq + 4, 1, 16), cq, ck;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t h = 0; h < c->heads; h++)
            for (int64_t i = 0; i < rq; i++)
                for (int64_t d = 0; d < c->d; d++) put(&q, b, h, i, d, 4 * unit_rand()), put(&g, b, h, i, d, unit_rand());
    for (int64_t b = 0; b < nb; b++)
        for (int64_t h = 0; h < c->kv_heads; h++)
            for (int64_t i = 0; i < rk; i++)
                for (int64_t d = 0; d < c->d; d++) put(&k, b, h, i, d, unit_rand()), put(&v, b, h, i, d, unit_rand());
    send(&q), send(&k), send(&v), send(&o), send(&g), send(&dq), send(&dk), send(&dv), send(&lse);
    tls_attention_problem p = {.batch = c->batch, .heads = c->heads, .kv_heads = c->kv_heads, .n_q = max_q,
                               .n_kv = max_kv, .head_dim = c->d, .scale = c->scale, .causal = c->causal,
                               .window = c->window, .window_left = c->window ? c->left : 0,
                               .window_right = c->window ? c->right : 0};
    if (c->varlen) {
        const int64_t ncu[4] = {1, 1, 1, c->batch + 1};
        cq = make(&f32, ncu, 0, 0, 0, 16), ck = make(&f32, ncu, 0, 0, 0, 0);
        memcpy(cq.host + cq.off, cu_q, sizeof(int32_t) * (size_t)(c->batch + 1));
        memcpy(ck.host + ck.off, cu_k, sizeof(int32_t) * (size_t)(c->batch + 1));
        send(&cq), send(&ck);
        p.cu_q = tls_mem_at(cq.buf, cq.off), p.cu_k = tls_mem_at(ck.buf, ck.off), p.total_q = rq, p.total_kv = rk;
    }
    const tls_options opt = {.num_warps = c->warps};
    OK(tls_attention_fwd(dev, dt->id, &p, arg(&q), arg(&k), arg(&v), arg(&o), arg(&lse), &opt));
    OK(trt_sync(dev));
    OK(trt_read(dev, o.buf, 0, o.host, o.bytes));
    /* the workspace: WS_OFF bytes before it and WS_TAIL after must stay poison */
    enum { WS_OFF = 32, WS_TAIL = 64 };
    size_t ws_bytes = 0;
    OK(tls_attention_bwd_workspace(dev, &p, &ws_bytes));
    assert_int_equal(ws_bytes, 4 * (size_t)nb * (size_t)c->heads * (size_t)rq);
    unsigned char *ws_host = malloc(WS_OFF + ws_bytes + WS_TAIL);
    memset(ws_host, 0xff, WS_OFF + ws_bytes + WS_TAIL);
    trt_buffer ws;
    OK(trt_alloc(dev, WS_OFF + ws_bytes + WS_TAIL, &ws));
    OK(trt_write(dev, ws, 0, ws_host, WS_OFF + ws_bytes + WS_TAIL));
    size_t modules = tls_num_modules(dev);
    const tls_options searching = {.num_warps = c->warps, .search = bwd_search};
    OK(tls_attention_bwd(dev, dt->id, &p, arg(&q), arg(&k), arg(&v), arg(&o), arg(&g), arg(&lse), arg(&dq), arg(&dk),
                         arg(&dv), tls_mem_at(ws, WS_OFF), &searching));
    size_t after = tls_num_modules(dev);
    if (!bwd_search) assert_true(after <= modules + 3); /* the pre-pass's module, dK/dV's and dQ's */
    /* the same call again, on a stream, on poisoned outputs: no compile, and the same bits (no atomics) */
    tensor *outs[3] = {&dq, &dk, &dv};
    unsigned char *first[3];
    for (int i = 0; i < 3; i++) {
        first[i] = malloc(outs[i]->bytes);
        OK(trt_read(dev, outs[i]->buf, 0, first[i], outs[i]->bytes));
        OK(trt_write(dev, outs[i]->buf, 0, outs[i]->host, outs[i]->bytes)); /* host: still the poison */
    }
    trt_stream *stream;
    OK(trt_stream_create(dev, &stream));
    const tls_options on_stream = {.num_warps = c->warps, .stream = stream};
    OK(tls_attention_bwd(dev, dt->id, &p, arg(&q), arg(&k), arg(&v), arg(&o), arg(&g), arg(&lse), arg(&dq), arg(&dk),
                         arg(&dv), tls_mem_at(ws, WS_OFF), &on_stream));
    OK(trt_stream_sync(stream));
    trt_stream_destroy(stream);
    assert_int_equal(tls_num_modules(dev), after);
    fetch(&dq, what), fetch(&dk, what), fetch(&dv, what);
    for (int i = 0; i < 3; i++) {
        if (memcmp(first[i], outs[i]->host, outs[i]->bytes))
            fail_msg("%s: a second run on a stream gave other bits (%s)", what, i == 0 ? "dq" : i == 1 ? "dk" : "dv");
        free(first[i]);
    }
    OK(trt_read(dev, ws, 0, ws_host, WS_OFF + ws_bytes + WS_TAIL));
    for (size_t i = 0; i < WS_OFF + ws_bytes + WS_TAIL; i++)
        if ((i < WS_OFF || i >= WS_OFF + ws_bytes) && ws_host[i] != 0xff)
            fail_msg("%s: byte %zu of the workspace's buffer, outside its %zu bytes from offset %d, was written", what, i,
                     ws_bytes, WS_OFF);
    free(ws_host);
    OK(trt_free(dev, ws));

    double scale = (float)(c->scale != 0 ? c->scale : 1 / sqrtf((float)c->d)), tol = 8 * dt->u;
    double sub = dt == &f16 ? 0x1p-22 : 0;
    int64_t q_per_kv = c->heads / c->kv_heads, D = c->d;
    double *pr = malloc(sizeof(double) * (size_t)(max_kv + 1)), *dp = malloc(sizeof(double) * (size_t)(max_kv + 1)),
           *adp = malloc(sizeof(double) * (size_t)(max_kv + 1));
    /* dk and dv (with their magnitudes) of one batch's key/value heads, summed over their query heads */
    size_t nkd = (size_t)c->kv_heads * (size_t)(max_kv + 1) * (size_t)D;
    double *rdk = malloc(sizeof(double) * nkd), *rdv = malloc(sizeof(double) * nkd), *mk = malloc(sizeof(double) * nkd),
           *mv = malloc(sizeof(double) * nkd), *rdq = malloc(sizeof(double) * (size_t)D),
           *mq = malloc(sizeof(double) * (size_t)D);
    for (int64_t b = 0; b < c->batch; b++) {
        int64_t qb = c->varlen ? 0 : b, lq = c->varlen ? c->lens_q[b] : max_q, lk = c->varlen ? c->lens_kv[b] : max_kv;
        int64_t q0 = c->varlen ? cu_q[b] : 0, k0 = c->varlen ? cu_k[b] : 0;
        memset(rdk, 0, sizeof(double) * nkd), memset(rdv, 0, sizeof(double) * nkd);
        memset(mk, 0, sizeof(double) * nkd), memset(mv, 0, sizeof(double) * nkd);
        for (int64_t h = 0; h < c->heads; h++) {
            int64_t kvh = h / q_per_kv;
            for (int64_t i = 0; i < lq; i++) {
                double m = -INFINITY, l = 0;
                for (int64_t j = 0; j < lk; j++) {
                    if (!sees(c, i, j)) continue;
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++) dot += (double)get(&q, qb, h, q0 + i, d) * get(&k, qb, kvh, k0 + j, d);
                    pr[j] = dot * scale, m = fmax(m, pr[j]);
                }
                for (int64_t j = 0; j < lk; j++)
                    if (sees(c, i, j)) l += exp(pr[j] - m);
                for (int64_t j = 0; j < lk; j++) pr[j] = sees(c, i, j) ? exp(pr[j] - m) / l : 0;
                /* delta against the float64 o; adl bounds its error from the stored o's */
                double dl = 0, adl = 0;
                for (int64_t d = 0; d < D; d++) {
                    double od = 0, aod = 0, gd = get(&g, qb, h, q0 + i, d);
                    for (int64_t j = 0; j < lk; j++) {
                        double vj = get(&v, qb, kvh, k0 + j, d);
                        od += pr[j] * vj, aod += pr[j] * fabs(vj);
                    }
                    dl += gd * od, adl += fabs(gd) * aod;
                }
                for (int64_t j = 0; j < lk; j++) {
                    double s = 0, a = 0;
                    for (int64_t d = 0; d < D; d++) {
                        double x = (double)get(&g, qb, h, q0 + i, d) * get(&v, qb, kvh, k0 + j, d);
                        s += x, a += fabs(x);
                    }
                    dp[j] = s, adp[j] = a;
                }
                for (int64_t d = 0; d < D; d++) rdq[d] = mq[d] = 0;
                for (int64_t j = 0; j < lk; j++) {
                    if (pr[j] == 0) continue;
                    double ds = pr[j] * (dp[j] - dl), ads = pr[j] * (adp[j] + adl);
                    for (int64_t d = 0; d < D; d++) {
                        size_t jd = ((size_t)kvh * (size_t)(max_kv + 1) + (size_t)j) * (size_t)D + (size_t)d;
                        double kj = get(&k, qb, kvh, k0 + j, d), qi = get(&q, qb, h, q0 + i, d),
                               gi = get(&g, qb, h, q0 + i, d);
                        rdq[d] += scale * ds * kj, mq[d] += fabs(scale) * ads * fabs(kj);
                        rdk[jd] += scale * ds * qi, mk[jd] += fabs(scale) * ads * fabs(qi);
                        rdv[jd] += pr[j] * gi, mv[jd] += pr[j] * fabs(gi);
                    }
                }
                for (int64_t d = 0; d < D; d++) {
                    double got = get(&dq, qb, h, q0 + i, d);
                    if (mq[d] == 0 ? got != 0 : !(fabs(got - rdq[d]) <= tol * mq[d] + (double)lk * sub))
                        fail_msg("%s: dq[%lld][%lld][%lld][%lld] = %g, want %g (terms' magnitude %g) on %s", what,
                                 (long long)b, (long long)h, (long long)i, (long long)d, got, rdq[d], mq[d],
                                 trt_device_name(dev));
                }
            }
        }
        for (int64_t h = 0; h < c->kv_heads; h++)
            for (int64_t j = 0; j < lk; j++)
                for (int64_t d = 0; d < D; d++) {
                    size_t jd = ((size_t)h * (size_t)(max_kv + 1) + (size_t)j) * (size_t)D + (size_t)d;
                    double gk = get(&dk, qb, h, k0 + j, d), gv = get(&dv, qb, h, k0 + j, d);
                    double slack = (double)lq * (double)q_per_kv * sub;
                    if (mk[jd] == 0 ? gk != 0 : !(fabs(gk - rdk[jd]) <= tol * mk[jd] + slack))
                        fail_msg("%s: dk[%lld][%lld][%lld][%lld] = %g, want %g (terms' magnitude %g) on %s", what,
                                 (long long)b, (long long)h, (long long)j, (long long)d, gk, rdk[jd], mk[jd],
                                 trt_device_name(dev));
                    if (mv[jd] == 0 ? gv != 0 : !(fabs(gv - rdv[jd]) <= tol * mv[jd] + slack))
                        fail_msg("%s: dv[%lld][%lld][%lld][%lld] = %g, want %g (terms' magnitude %g) on %s", what,
                                 (long long)b, (long long)h, (long long)j, (long long)d, gv, rdv[jd], mv[jd],
                                 trt_device_name(dev));
                }
    }
    free(pr), free(dp), free(adp), free(rdk), free(rdv), free(mk), free(mv), free(rdq), free(mq);
    drop(&q), drop(&k), drop(&v), drop(&o), drop(&g), drop(&dq), drop(&dk), drop(&dv), drop(&lse);
    if (c->varlen) drop(&cq), drop(&ck);
}

static void test_attention_bwd(void **state) {
    (void)state;
    const att_case cases[] = {
        /* grouped-query heads, n_q != n_kv, a prime past the blocks; FlashAttention's layout */
        {.dt = &f16, .batch = 2, .heads = 4, .kv_heads = 2, .n_q = 17, .n_kv = 67, .d = 64, .lay = BSHD},
        /* multi-query, causal, head dim 32, padded rows; one row and one key at odd strides */
        {.dt = &f16, .batch = 1, .heads = 3, .kv_heads = 1, .n_q = 70, .n_kv = 70, .d = 32, .causal = true,
         .lay = BHSD_PADDED},
        {.dt = &bf16, .batch = 2, .heads = 2, .kv_heads = 2, .n_q = 1, .n_kv = 1, .d = 32, .lay = ODD},
        /* head dim 128 (dK/dV at 16 x 64 on the CPU and the emulator) at odd strides: causal with a window (rows
         * from 25 on see no key: dq 0), and causal with keys past the rows (keys from 20 on seen by no row: dk and
         * dv 0) */
        {.dt = &bf16, .batch = 1, .heads = 2, .kv_heads = 1, .n_q = 40, .n_kv = 20, .d = 128, .causal = true,
         .window = true, .left = 5, .right = 3, .lay = ODD},
        {.dt = &f16, .batch = 1, .heads = 2, .kv_heads = 2, .n_q = 20, .n_kv = 45, .d = 128, .causal = true,
         .lay = BHSD_PADDED},
        /* one-sided windows (-1: no bound), a scale of its own, bf16 */
        {.dt = &f16, .batch = 1, .heads = 2, .kv_heads = 2, .n_q = 67, .n_kv = 40, .d = 64, .window = true, .left = -1,
         .right = 3, .lay = BHSD_PADDED},
        {.dt = &bf16, .batch = 1, .heads = 4, .kv_heads = 1, .n_q = 33, .n_kv = 80, .d = 64, .window = true, .left = 9,
         .right = -1, .scale = -0.1f, .lay = BSHD},
        /* varlen: sequences of 0 and 1 query rows, one of 0 keys (its rows see none: dq 0) and one whose keys no row
         * sees (0 query rows: dk and dv 0) */
        {.dt = &f16, .batch = 4, .heads = 4, .kv_heads = 2, .d = 32, .causal = true, .lay = BSHD, .varlen = true,
         .lens_q = {37, 0, 1, 20}, .lens_kv = {50, 7, 1, 0}},
        {.dt = &bf16, .batch = 3, .heads = 2, .kv_heads = 1, .d = 64, .window = true, .left = 8, .right = 8,
         .lay = ODD, .varlen = true, .lens_q = {1, 70, 0}, .lens_kv = {3, 66, 1}},
        /* head dim 256 (dK/dV at 16 x 16, dQ at 32 x 16), grouped heads, causal, keys past the rows; bf16 with a
         * window at odd strides */
        {.dt = &f16, .batch = 1, .heads = 2, .kv_heads = 1, .n_q = 40, .n_kv = 45, .d = 256, .causal = true},
        {.dt = &bf16, .batch = 2, .heads = 1, .kv_heads = 1, .n_q = 33, .n_kv = 20, .d = 256, .window = true,
         .left = 6, .right = 2, .lay = ODD},
        /* the warps of tls_options, for all three kernels */
        {.dt = &f16, .batch = 1, .heads = 2, .kv_heads = 1, .n_q = 30, .n_kv = 50, .d = 32, .lay = BSHD, .warps = 4},
        /* f32 (tf32 products), small as the forward's: grouped heads, causal; a window at odd strides (keys from 24
         * on seen by no row); varlen with a sequence of 0 query rows */
        {.dt = &f32_att, .batch = 1, .heads = 2, .kv_heads = 1, .n_q = 17, .n_kv = 37, .d = 64, .causal = true,
         .lay = BSHD},
        {.dt = &f32_att, .batch = 1, .heads = 1, .kv_heads = 1, .n_q = 20, .n_kv = 33, .d = 128, .window = true,
         .left = 4, .right = 3, .lay = ODD},
        {.dt = &f32_att, .batch = 2, .heads = 2, .kv_heads = 1, .d = 32, .lay = BHSD_PADDED, .varlen = true,
         .lens_q = {0, 21}, .lens_kv = {5, 30}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_backward(&cases[i]);
}

/* A tuning (docs/tuning.md) of the backward's dK/dV and dQ kernels for
 * one problem's bucket, 16 x 16 on one warp (none of the table's): the
 * call takes both entries (three modules of its own: the pre-pass compiles
 * with dQ's), and the gradients are right as above; a dK/dV entry that
 * does not compile (24 rows) falls back to the table, with a note, and is
 * right too. */
static trt_tuning *bwd_tuning(const char *src, size_t len, int dkdv_block_m, const char *bucket) {
    trt_tuning *t;
    OK(trt_tuning_create(&t));
    const tilec_define dkdv[] = {{"BLOCK_M", dkdv_block_m}, {"BLOCK_N", 16}}, dq[] = {{"BLOCK_M", 16}, {"BLOCK_N", 16}};
    const trt_tune_config c_dkdv = {dkdv, 2, 1, 2}, c_dq = {dq, 2, 1, 2}; /* 2 stages: cp.async (emu-attention-banks) */
    if (trt_tuning_put(t, dev, src, len, "attention_bwd_dkdv_f16", bucket, &c_dkdv) != TRT_OK ||
        trt_tuning_put(t, dev, src, len, "attention_bwd_dq_f16", bucket, &c_dq) != TRT_OK)
        fail_msg("%s", trt_tuning_error(t));
    return t;
}

static void test_attention_bwd_tuned(void **state) {
    (void)state;
    FILE *f = fopen(TILEC_SOURCE_DIR "/stdlib/attention_bwd.tile", "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    size_t len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *src = malloc(len);
    assert_int_equal(fread(src, 1, len, f), len);
    fclose(f);
    const att_case c = {.dt = &f16, .batch = 1, .heads = 2, .kv_heads = 1, .n_q = 30, .n_kv = 50, .d = 32,
                        .lay = BSHD};
    run_backward(&c); /* the table's kernels, compiled */
    size_t before = tls_num_modules(dev);
    trt_tuning *t = bwd_tuning(src, len, 16, "N_Q=32,N_KV=64,HEAD_DIM=32");
    OK(trt_use_tuning(dev, t));
    run_backward(&c);
    assert_int_equal(tls_num_modules(dev), before + 3);
    if (!strstr(trt_tuning_last_used(t), "attention_bwd_dq_f16 "))
        fail_msg("last used: '%s'", trt_tuning_last_used(t));
    assert_string_equal(trt_tuning_last_note(t), "");
    trt_tuning_free(t);
    t = bwd_tuning(src, len, 24, "N_Q=32,N_KV=64,HEAD_DIM=32");
    OK(trt_use_tuning(dev, t));
    run_backward(&c);
    assert_string_equal(trt_tuning_last_used(t), "");
    const char *note = trt_tuning_last_note(t);
    if (!strstr(note, "tls_attention_bwd: the tuned configuration of attention_bwd_dkdv_f16 and attention_bwd_dq_f16 "
                      "N_Q=32,N_KV=64,HEAD_DIM=32 does not compile; the built-in table's instead: ") ||
        !strstr(note, "not a power of two"))
        fail_msg("note: '%s'", note);
    OK(trt_use_tuning(dev, NULL));
    trt_tuning_free(t);
    free(src);
}

/* The backward searching its configurations from the call into a tuning
 * the device also consults: the searched call's gradients are right, and
 * are the winners' (the call again, now taking the tuning's two entries,
 * compiles nothing and gives the same bits: run_backward's checks). */
static void test_attention_bwd_search(void **state) {
    (void)state;
    trt_tuning *t;
    OK(trt_tuning_create(&t));
    OK(trt_use_tuning(dev, t));
    bwd_search = t;
    const att_case c = {.dt = &f16, .batch = 1, .heads = 2, .kv_heads = 1, .n_q = 30, .n_kv = 50, .d = 32,
                        .causal = true, .lay = BSHD};
    run_backward(&c);
    bwd_search = NULL;
    assert_int_equal(trt_tuning_num_entries(t), 2); /* dK/dV's and dQ's */
    if (!strstr(trt_tuning_last_used(t), "attention_bwd_dq_f16 "))
        fail_msg("last used: '%s'", trt_tuning_last_used(t));
    OK(trt_use_tuning(dev, NULL));
    trt_tuning_free(t);
}

/* FlashAttention's packed layout, q, k and v interleaved in one [batch,
 * rows, 3, heads, d] buffer as a fused qkv projection writes them, and
 * dq, dk, dv written into one such buffer: accepted (their columns are
 * apart, though their spans meet) and the same bits as the same problem
 * on separate tensors (whose values the tests above check). dk's columns
 * moved half a head dim onto dq's is refused. */
static void test_attention_packed_qkv(void **state) {
    (void)state;
    enum { B = 2, H = 2, T = 37, D = 32, C = H * D };
    const int64_t np[4] = {B, 3 * H, T, D}, n[4] = {B, H, T, D}, nl[4] = {B, H, T, 1};
    tensor qkv = make(&f16, np, T * 3 * C, D, 3 * C, 0), dqkv = make(&f16, np, T * 3 * C, D, 3 * C, 0);
    tensor sep[3], dsep[3], o = make(&f16, n, T * C, D, C, 0), o2 = make(&f16, n, T * C, D, C, 0),
                    g = make(&f16, n, T * C, D, C, 0), lse = make(&f32, nl, H * T, T, 1, 0),
                    lse2 = make(&f32, nl, H * T, T, 1, 0);
    for (int k = 0; k < 3; k++) sep[k] = make(&f16, n, T * C, D, C, 0), dsep[k] = make(&f16, n, T * C, D, C, 0);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < T; i++)
                for (int64_t d = 0; d < D; d++) {
                    for (int k = 0; k < 3; k++) {
                        float v = unit_rand();
                        put(&qkv, b, k * H + h, i, d, v), put(&sep[k], b, h, i, d, v);
                    }
                    put(&g, b, h, i, d, unit_rand());
                }
    send(&qkv), send(&dqkv), send(&o), send(&o2), send(&g), send(&lse), send(&lse2);
    for (int k = 0; k < 3; k++) send(&sep[k]), send(&dsep[k]);
    tls_attention_problem p = {.batch = B, .heads = H, .kv_heads = H, .n_q = T, .n_kv = T, .head_dim = D,
                               .causal = true};
    tls_attention_tensor part[3];
    for (int k = 0; k < 3; k++) part[k] = arg(&qkv), part[k].mem.offset += (size_t)k * C * 2;
    tls_attention_tensor dpart[3];
    for (int k = 0; k < 3; k++) dpart[k] = arg(&dqkv), dpart[k].mem.offset += (size_t)k * C * 2;
    size_t bytes;
    OK(tls_attention_bwd_workspace(dev, &p, &bytes));
    trt_buffer ws;
    OK(trt_alloc(dev, bytes, &ws));
    OK(tls_attention_fwd(dev, TLS_F16, &p, part[0], part[1], part[2], arg(&o), arg(&lse), NULL));
    OK(tls_attention_bwd(dev, TLS_F16, &p, part[0], part[1], part[2], arg(&o), arg(&g), arg(&lse), dpart[0], dpart[1],
                         dpart[2], tls_mem_of(ws), NULL));
    OK(tls_attention_fwd(dev, TLS_F16, &p, arg(&sep[0]), arg(&sep[1]), arg(&sep[2]), arg(&o2), arg(&lse2), NULL));
    OK(tls_attention_bwd(dev, TLS_F16, &p, arg(&sep[0]), arg(&sep[1]), arg(&sep[2]), arg(&o2), arg(&g), arg(&lse2),
                         arg(&dsep[0]), arg(&dsep[1]), arg(&dsep[2]), tls_mem_of(ws), NULL));
    fetch(&o, "packed o"), fetch(&o2, "o"), fetch(&dqkv, "packed dq, dk, dv");
    for (int k = 0; k < 3; k++) fetch(&dsep[k], "dq, dk, dv");
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < T; i++)
                for (int64_t d = 0; d < D; d++) {
                    if (memcmp(o.host + 2 * at(&o, b, h, i, d), o2.host + 2 * at(&o2, b, h, i, d), 2))
                        fail_msg("packed qkv: o[%lld][%lld][%lld][%lld] differs from separate tensors' on %s",
                                 (long long)b, (long long)h, (long long)i, (long long)d, trt_device_name(dev));
                    for (int k = 0; k < 3; k++)
                        if (memcmp(dqkv.host + 2 * at(&dqkv, b, k * H + h, i, d), dsep[k].host + 2 * at(&dsep[k], b, h, i, d), 2))
                            fail_msg("packed qkv: gradient %d [%lld][%lld][%lld][%lld] differs from separate tensors' on %s",
                                     k, (long long)b, (long long)h, (long long)i, (long long)d, trt_device_name(dev));
                }
    /* dk half a head dim onto dq's columns: refused, nothing written */
    tensor dbad = make(&f16, np, T * 3 * C, D, 3 * C, 0);
    send(&dbad);
    tls_attention_tensor bad[3];
    for (int k = 0; k < 3; k++) bad[k] = arg(&dbad), bad[k].mem.offset += (size_t)k * C * 2;
    bad[1].mem.offset = (size_t)C; /* C / 2 elements of 2 bytes: 16-byte aligned, inside dq's columns */
    trt_status st = tls_attention_bwd(dev, TLS_F16, &p, part[0], part[1], part[2], arg(&o), arg(&g), arg(&lse), bad[0],
                                      bad[1], bad[2], tls_mem_of(ws), NULL);
    assert_int_equal(st, TRT_ERR_INVALID_ARGUMENT);
    if (!strstr(trt_last_error(dev), "dq and dk overlap in memory"))
        fail_msg("interleaved dq and dk that share bytes: \"%s\"", trt_last_error(dev));
    assert_true(all_poison(&dbad));
    drop(&qkv), drop(&dqkv), drop(&o), drop(&o2), drop(&g), drop(&lse), drop(&lse2), drop(&dbad);
    for (int k = 0; k < 3; k++) drop(&sep[k]), drop(&dsep[k]);
    OK(trt_free(dev, ws));
}

/* ---- misuse ---------------------------------------------------------------------- */

static void expect_error(trt_status st, trt_status want, const char *says, const char *call) {
    if (st != want)
        fail_msg("%s: %s (%s), want %s", call, trt_status_name(st), trt_last_error(dev), trt_status_name(want));
    if (!strstr(trt_last_error(dev), says))
        fail_msg("%s: the message \"%s\" does not say \"%s\"", call, trt_last_error(dev), says);
}
#define EXPECT(call, says) expect_error((call), TRT_ERR_INVALID_ARGUMENT, (says), #call)

/* Each argument check of tls_attention_fwd: its message, and o and lse
 * untouched. The base problem (2 batches of 2 heads over 1 key/value
 * head, 16 rows of 32, FlashAttention's layout) is valid; each line
 * breaks one thing of a copy of it. */
static void test_attention_misuse(void **state) {
    (void)state;
    const int64_t n[4] = {2, 2, 16, 32}, nk[4] = {2, 1, 16, 32}, nl[4] = {2, 2, 16, 1}, ncu[4] = {1, 1, 1, 3};
    tensor q = make(&f16, n, 16 * 64, 32, 64, 0), k = make(&f16, nk, 16 * 32, 32, 32, 0),
           o = make(&f16, n, 16 * 64, 32, 64, 0), lse = make(&f32, nl, 32, 16, 1, 0), cu = make(&f32, ncu, 0, 0, 0, 0),
           bad_cu = make(&f32, ncu, 0, 0, 0, 0);
    const int32_t offsets[3] = {0, 10, 16}, bad_offsets[3] = {0, 12, 9};
    memcpy(cu.host, offsets, sizeof offsets), memcpy(bad_cu.host, bad_offsets, sizeof bad_offsets);
    send(&q), send(&k), send(&o), send(&lse), send(&cu), send(&bad_cu);
    const tls_attention_problem good = {.batch = 2, .heads = 2, .kv_heads = 1, .n_q = 16, .n_kv = 16, .head_dim = 32};
    tls_attention_tensor Q = arg(&q), K = arg(&k), O = arg(&o), L = arg(&lse);
    tls_attention_problem p;
    tls_attention_tensor t;
#define FWD(prob, ...) tls_attention_fwd(dev, TLS_F16, prob, __VA_ARGS__, NULL)
#define WITH(field, value, says) (p = good, p.field = (value), EXPECT(FWD(&p, Q, K, K, O, L), says))
    assert_int_equal(tls_attention_fwd(NULL, TLS_F16, &good, Q, K, K, O, L, NULL), TRT_ERR_INVALID_ARGUMENT);
    p = good, p.head_dim = 256; /* f32 has no head dim 256 (no tile of it compiles without spilling) */
    EXPECT(tls_attention_fwd(dev, TLS_F32, &p, Q, K, K, O, L, NULL),
           "tls_attention_fwd: head_dim is 256; in f32 it must be 32, 64 or 128");
    EXPECT(tls_attention_fwd(dev, (tls_dtype)5, &good, Q, K, K, O, L, NULL), "unknown dtype 5");
    tls_options ieee = {.precision = TLS_IEEE}, warps = {.num_warps = 3};
    EXPECT(tls_attention_fwd(dev, TLS_F16, &good, Q, K, K, O, L, &ieee),
           "tls_attention_fwd: precision TLS_IEEE: attention's products are the tensor cores' (f32 as tf32)");
    EXPECT(tls_attention_fwd(dev, TLS_F32, &good, Q, K, K, O, L, &ieee), "precision TLS_IEEE: attention's products");
    EXPECT(tls_attention_fwd(dev, TLS_F16, &good, Q, K, K, O, L, &warps), "num_warps 3 must be 0");
    EXPECT(FWD(NULL, Q, K, K, O, L), "tls_attention_fwd: the problem is NULL");
    WITH(batch, 0, "batch is 0; it must be from 1 to 65535 (the grid's axis 2)");
    WITH(batch, 65536, "batch is 65536");
    WITH(heads, 0, "heads is 0; it must be from 1 to 65535");
    WITH(heads, 65536, "heads is 65536");
    WITH(kv_heads, 0, "kv_heads is 0; it must be from 1 to 2");
    WITH(kv_heads, 3, "kv_heads is 3");
    p = good, p.heads = 3, p.kv_heads = 2;
    EXPECT(FWD(&p, Q, K, K, O, L), "heads (3) is not a multiple of kv_heads (2)");
    WITH(head_dim, 80, "head_dim is 80; it must be 32, 64, 128 or 256");
    WITH(head_dim, 512, "head_dim is 512");
    WITH(n_q, 0, "n_q is 0; it must be from 1 to 1073741696");
    WITH(n_kv, (int64_t)TLS_ATTENTION_MAX_SEQ + 1, "n_kv is 1073741697");
    WITH(scale, NAN, "scale is nan; it must be finite");
    WITH(scale, INFINITY, "scale is inf");
    WITH(scale, 3e38f, "so must scale * log2(e) in f32");
    WITH(window_left, 5, "window_left 5 and window_right 0 without window");
    WITH(window_right, -2, "window_right -2 without window");
    p = good, p.window = true, p.window_left = -2;
    EXPECT(FWD(&p, Q, K, K, O, L), "window_left is -2; it must be from -1 to");
    p = good, p.window = true, p.window_right = -5;
    EXPECT(FWD(&p, Q, K, K, O, L), "window_right is -5");
    WITH(cu_q, tls_mem_of(cu.buf), "cu_q and cu_k go together");
    WITH(total_q, 32, "total_q 32 and total_kv 0 without cu_q and cu_k");
    /* varlen: 2 sequences packed into 16 rows (k's and o's batch 0 hold them) */
    tls_attention_problem vl = good;
    vl.cu_q = vl.cu_k = tls_mem_of(cu.buf), vl.total_q = vl.total_kv = 16;
    tls_attention_tensor Qv = Q, Kv = K, Ov = O, Lv = L;
    Qv.stride_batch = Kv.stride_batch = Ov.stride_batch = Lv.stride_batch = 0;
    p = vl, p.total_q = (int64_t)INT32_MAX + 1;
    EXPECT(FWD(&p, Qv, Kv, Kv, Ov, Lv), "total_q is 2147483648; it must be from 0 to 2147483647");
    p = vl, p.batch = 3;
    EXPECT(FWD(&p, Qv, Kv, Kv, Ov, Lv), "cu_q: the buffer holds 12 bytes; 4 values need 16");
    p = vl, p.cu_k = tls_mem_at(cu.buf, 8);
    EXPECT(FWD(&p, Qv, Kv, Kv, Ov, Lv), "cu_k: offset 8 is not a multiple of 16");
    EXPECT(FWD(&vl, Q, Kv, Kv, Ov, Lv), "q: stride_batch is 1024; with cu_q and cu_k the sequences are packed");
    EXPECT(FWD(&vl, Qv, Kv, Kv, Ov, L), "lse: stride_batch is 32");
    bool host = !trt_device_arch(dev)[0]; /* not a GPU */
    if (host) { /* the offsets' values: read on the CPU and the emulator only */
        p = vl, p.cu_k = tls_mem_of(bad_cu.buf);
        EXPECT(FWD(&p, Qv, Kv, Kv, Ov, Lv), "cu_k[2] is 9, less than cu_k[1] (12): offsets must not decrease");
        p = vl, p.n_q = 8;
        EXPECT(FWD(&p, Qv, Kv, Kv, Ov, Lv), "sequence 0 has 10 rows (cu_q[1] - cu_q[0]), more than n_q (8)");
        p = vl, p.total_kv = 15;
        EXPECT(FWD(&p, Qv, Kv, Kv, Ov, Lv), "cu_k[2] is 16, past total_kv (15)");
        int32_t neg[3] = {-1, 0, 0};
        OK(trt_write(dev, bad_cu.buf, 0, neg, sizeof neg));
        p = vl, p.cu_q = tls_mem_of(bad_cu.buf);
        EXPECT(FWD(&p, Qv, Kv, Kv, Ov, Lv), "cu_q[0] is -1; offsets must be >= 0");
    }
    /* the tensors */
    t = K, t.stride_head = -1;
    EXPECT(FWD(&good, Q, K, t, O, L), "v: stride_head is -1; strides must be >= 0");
    t = Q, t.stride_row = 65;
    EXPECT(FWD(&good, t, K, K, O, L), "q: the buffer holds 4096 bytes; 2 x 2 x 16 x 32 elements with strides 1024, "
                                      "32, 65, 1 need 4126 from offset 0");
    t = K, t.mem.offset = 16;
    EXPECT(FWD(&good, Q, t, K, O, L), "k: the buffer holds 2048 bytes");
    t = O, t.mem.offset = 4;
    EXPECT(FWD(&good, Q, K, K, t, L), "o: offset 4 is not a multiple of 16");
    t = O, t.stride_batch = INT64_MAX / 2;
    EXPECT(FWD(&good, Q, K, K, t, L), "o: its strides reach past what memory can hold");
    t = L, t.stride_row = 0;
    EXPECT(FWD(&good, Q, K, K, O, t), "lse: stride_row is 0; it must be 1");
    t = L, t.stride_head = 17;
    EXPECT(FWD(&good, Q, K, K, O, t), "lse: the buffer holds 256 bytes");
    /* outputs apart: from themselves, each other and the inputs */
    t = O, t.stride_row = 16;
    EXPECT(FWD(&good, Q, K, K, t, L), "o: strides 1024, 32, 16, 1 (batch, head, row, column) over 2 x 2 x 16 x 32 "
                                      "put two of its elements at one address");
    t = L, t.stride_batch = 16;
    EXPECT(FWD(&good, Q, K, K, O, t), "lse: strides 16, 16, 1, 1 (batch, head, row, column) over 2 x 2 x 16 x 1");
    EXPECT(FWD(&good, Q, K, K, Q, L), "o and q overlap in memory");
    EXPECT(FWD(&good, Q, K, K, O, (tls_attention_tensor){tls_mem_at(o.buf, 0), 32, 16, 1}), "o and lse overlap");
    EXPECT(FWD(&good, Q, K, K, O, (tls_attention_tensor){tls_mem_at(k.buf, 0), 32, 16, 1}), "lse and k overlap");
    trt_buffer gone;
    OK(trt_alloc(dev, 64, &gone));
    OK(trt_free(dev, gone));
    t = K, t.mem = tls_mem_of(gone);
    expect_error(FWD(&good, Q, K, t, O, L), TRT_ERR_INVALID_HANDLE, "tls_attention_fwd: v: buffer handle", "a freed v");
    /* nothing ran */
    if (!all_poison(&o) || !all_poison(&lse)) fail_msg("a refused tls_attention_fwd wrote o or lse");
    /* offsets inside o (valid ones, as the CPU reads them) */
    OK(trt_write(dev, o.buf, 0, offsets, sizeof offsets));
    p = vl, p.cu_k = tls_mem_at(o.buf, 0);
    EXPECT(FWD(&p, Qv, Kv, Kv, Ov, Lv), "o and cu_k overlap");
    /* the base problem and its varlen form are valid */
    OK(FWD(&good, Q, K, K, O, L));
    OK(FWD(&vl, Qv, Kv, Kv, Ov, Lv));
#undef WITH
#undef FWD
    drop(&q), drop(&k), drop(&o), drop(&lse), drop(&cu), drop(&bad_cu);
}

/* Each argument check of tls_attention_bwd and its workspace query: its
 * message, and dq, dk, dv and the workspace untouched. The problem checks
 * and the tensor checks are the forward's (begin_attention; tested
 * above): here one of each kind, and what the backward adds (d_o, the
 * gradients, the workspace). The base problem is test_attention_misuse's. */
static void test_attention_bwd_misuse(void **state) {
    (void)state;
    const int64_t n[4] = {2, 2, 16, 32}, nk[4] = {2, 1, 16, 32}, nl[4] = {2, 2, 16, 1}, ncu[4] = {1, 1, 1, 3},
                  nw[4] = {1, 1, 1, 64};
    tensor q = make(&f16, n, 16 * 64, 32, 64, 0), k = make(&f16, nk, 16 * 32, 32, 32, 0),
           o = make(&f16, n, 16 * 64, 32, 64, 0), g = make(&f16, n, 16 * 64, 32, 64, 0),
           lse = make(&f32, nl, 32, 16, 1, 0), dq = make(&f16, n, 16 * 64, 32, 64, 0),
           dk = make(&f16, nk, 16 * 32, 32, 32, 0), dv = make(&f16, nk, 16 * 32, 32, 32, 0),
           ws = make(&f32, nw, 0, 0, 0, 0), cu = make(&f32, ncu, 0, 0, 0, 0); /* ws: 256 bytes */
    const int32_t offsets[3] = {0, 10, 16};
    memcpy(cu.host, offsets, sizeof offsets);
    send(&q), send(&k), send(&o), send(&g), send(&lse), send(&dq), send(&dk), send(&dv), send(&ws), send(&cu);
    const tls_attention_problem good = {.batch = 2, .heads = 2, .kv_heads = 1, .n_q = 16, .n_kv = 16, .head_dim = 32};
    tls_attention_tensor Q = arg(&q), K = arg(&k), O = arg(&o), G = arg(&g), L = arg(&lse), DQ = arg(&dq),
                         DK = arg(&dk), DV = arg(&dv), t;
    tls_mem W = tls_mem_of(ws.buf);
    tls_attention_problem p;
    size_t bytes = 1;
    /* the workspace query */
    assert_int_equal(tls_attention_bwd_workspace(NULL, &good, &bytes), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(bytes, 0);
    EXPECT(tls_attention_bwd_workspace(dev, &good, NULL), "tls_attention_bwd_workspace: bytes is NULL");
    EXPECT(tls_attention_bwd_workspace(dev, NULL, &bytes), "tls_attention_bwd_workspace: the problem is NULL");
    p = good, p.head_dim = 80;
    EXPECT(tls_attention_bwd_workspace(dev, &p, &bytes),
           "tls_attention_bwd_workspace: head_dim is 80; it must be 32, 64, 128 or 256");
    p = good, p.kv_heads = 3;
    EXPECT(tls_attention_bwd_workspace(dev, &p, &bytes), "tls_attention_bwd_workspace: kv_heads is 3");
    OK(tls_attention_bwd_workspace(dev, &good, &bytes));
    assert_int_equal(bytes, 4 * 2 * 2 * 16); /* delta: batch x heads x n_q f32 */
    p = good, p.batch = p.heads = p.kv_heads = 65535, p.n_q = TLS_ATTENTION_MAX_SEQ;
    EXPECT(tls_attention_bwd_workspace(dev, &p, &bytes), "tls_attention_bwd_workspace: the workspace would hold 65535 "
                                                         "x 65535 x 1073741696 f32 values, more than memory can");
    assert_int_equal(bytes, 0);
    p = good, p.batch = 1, p.heads = 65535, p.n_q = TLS_ATTENTION_MAX_SEQ; /* 2^48 bytes, but too many trips */
    EXPECT(tls_attention_bwd_workspace(dev, &p, &bytes), "tls_attention_bwd_workspace: heads / kv_heads (65535) times "
                                                         "n_q's blocks of");
    EXPECT(tls_attention_bwd_workspace(dev, &p, &bytes), "past the dK/dV kernel's i32 loop count (2147483647)");
    /* (tls_attention_bwd makes the same check after the tensors', which at this size need terabytes) */
    tls_attention_problem vl = good;
    vl.cu_q = vl.cu_k = tls_mem_of(cu.buf), vl.total_q = vl.total_kv = 16;
    OK(tls_attention_bwd_workspace(dev, &vl, &bytes));
    assert_int_equal(bytes, 4 * 2 * 16); /* heads x total_q */
#define BWD(prob, ...) tls_attention_bwd(dev, TLS_F16, prob, __VA_ARGS__, NULL)
    assert_int_equal(tls_attention_bwd(NULL, TLS_F16, &good, Q, K, K, O, G, L, DQ, DK, DV, W, NULL),
                     TRT_ERR_INVALID_ARGUMENT);
    p = good, p.head_dim = 256;
    EXPECT(tls_attention_bwd(dev, TLS_F32, &p, Q, K, K, O, G, L, DQ, DK, DV, W, NULL),
           "tls_attention_bwd: head_dim is 256; in f32 it must be 32, 64 or 128");
    tls_options ieee = {.precision = TLS_IEEE};
    EXPECT(tls_attention_bwd(dev, TLS_F32, &good, Q, K, K, O, G, L, DQ, DK, DV, W, &ieee),
           "tls_attention_bwd: precision TLS_IEEE");
    tls_options warps = {.num_warps = 3};
    EXPECT(tls_attention_bwd(dev, TLS_BF16, &good, Q, K, K, O, G, L, DQ, DK, DV, W, &warps), "num_warps 3 must be 0");
    EXPECT(BWD(NULL, Q, K, K, O, G, L, DQ, DK, DV, W), "tls_attention_bwd: the problem is NULL");
    p = good, p.heads = 3, p.kv_heads = 2;
    EXPECT(BWD(&p, Q, K, K, O, G, L, DQ, DK, DV, W), "tls_attention_bwd: heads (3) is not a multiple of kv_heads (2)");
    p = good, p.head_dim = 80;
    EXPECT(BWD(&p, Q, K, K, O, G, L, DQ, DK, DV, W), "tls_attention_bwd: head_dim is 80");
    /* the tensors the backward adds */
    t = G, t.stride_row = 65;
    EXPECT(BWD(&good, Q, K, K, O, t, L, DQ, DK, DV, W), "tls_attention_bwd: d_o: the buffer holds 4096 bytes");
    t = DK, t.mem.offset = 8;
    EXPECT(BWD(&good, Q, K, K, O, G, L, DQ, t, DV, W), "dk: offset 8 is not a multiple of 16");
    t = L, t.stride_row = 2;
    EXPECT(BWD(&good, Q, K, K, O, G, t, DQ, DK, DV, W), "lse: stride_row is 2; it must be 1");
    t = DV, t.stride_head = -1;
    EXPECT(BWD(&good, Q, K, K, O, G, L, DQ, DK, t, W), "dv: stride_head is -1; strides must be >= 0");
    t = DQ, t.stride_row = 16;
    EXPECT(BWD(&good, Q, K, K, O, G, L, t, DK, DV, W), "dq: strides 1024, 32, 16, 1 (batch, head, row, column) "
                                                       "over 2 x 2 x 16 x 32 put two of its elements at one address");
    /* the outputs apart from each other and from every input */
    EXPECT(BWD(&good, Q, K, K, O, G, L, G, DK, DV, W), "dq and d_o overlap in memory");
    EXPECT(BWD(&good, Q, K, K, O, G, L, DQ, DK, DK, W), "dk and dv overlap in memory");
    EXPECT(BWD(&good, Q, K, K, O, G, L, DQ, DK, K, W), "dv and k overlap in memory");
    /* the workspace: big enough, aligned, apart */
    EXPECT(BWD(&good, Q, K, K, O, G, L, DQ, DK, DV, tls_mem_at(ws.buf, 16)),
           "tls_attention_bwd: workspace: the buffer holds 256 bytes; from offset 16 the call needs 256 "
           "(tls_attention_bwd_workspace)");
    EXPECT(BWD(&good, Q, K, K, O, G, L, DQ, DK, DV, tls_mem_at(q.buf, 4)), "workspace: offset 4 is not a multiple of 16");
    EXPECT(BWD(&good, Q, K, K, O, G, L, DQ, DK, DV, tls_mem_of(o.buf)), "workspace and o overlap in memory");
    EXPECT(BWD(&good, Q, K, K, O, G, L, DQ, DK, DV, tls_mem_of(lse.buf)), "workspace and lse overlap in memory");
    EXPECT(BWD(&good, Q, K, K, O, G, L, DQ, DK, DV, tls_mem_of(dv.buf)), "dv and workspace overlap in memory");
    trt_buffer gone;
    OK(trt_alloc(dev, 256, &gone));
    OK(trt_free(dev, gone));
    expect_error(BWD(&good, Q, K, K, O, G, L, DQ, DK, DV, tls_mem_of(gone)), TRT_ERR_INVALID_HANDLE,
                 "tls_attention_bwd: workspace: buffer handle", "a freed workspace");
    /* varlen: the packed forms, and the offsets inside the workspace */
    tls_attention_tensor Qv = Q, Kv = K, Ov = O, Gv = G, Lv = L, DQv = DQ, DKv = DK, DVv = DV;
    Qv.stride_batch = Kv.stride_batch = Ov.stride_batch = Gv.stride_batch = Lv.stride_batch = 0;
    DQv.stride_batch = DKv.stride_batch = DVv.stride_batch = 0;
    EXPECT(BWD(&vl, Qv, Kv, Kv, Ov, G, Lv, DQv, DKv, DVv, W), "d_o: stride_batch is 1024; with cu_q and cu_k");
    EXPECT(BWD(&vl, Qv, Kv, Kv, Ov, Gv, Lv, DQv, DK, DVv, W), "dk: stride_batch is 512");
    if (!trt_device_arch(dev)[0]) { /* the offsets' values: read on the CPU and the emulator only */
        p = vl, p.n_q = 8;
        EXPECT(BWD(&p, Qv, Kv, Kv, Ov, Gv, Lv, DQv, DKv, DVv, W),
               "tls_attention_bwd: sequence 0 has 10 rows (cu_q[1] - cu_q[0]), more than n_q (8)");
    }
    OK(trt_write(dev, ws.buf, 64, offsets, sizeof offsets));
    p = vl, p.cu_q = tls_mem_at(ws.buf, 64);
    EXPECT(BWD(&p, Qv, Kv, Kv, Ov, Gv, Lv, DQv, DKv, DVv, W), "workspace and cu_q overlap in memory");
    OK(trt_write(dev, ws.buf, 0, ws.host, ws.bytes)); /* poison again */
    /* nothing ran */
    if (!all_poison(&dq) || !all_poison(&dk) || !all_poison(&dv) || !all_poison(&ws))
        fail_msg("a refused tls_attention_bwd wrote dq, dk, dv or the workspace");
    /* the base problem and its varlen form are valid */
    OK(BWD(&good, Q, K, K, O, G, L, DQ, DK, DV, W));
    OK(BWD(&vl, Qv, Kv, Kv, Ov, Gv, Lv, DQv, DKv, DVv, W));
#undef BWD
    drop(&q), drop(&k), drop(&o), drop(&g), drop(&lse), drop(&dq), drop(&dk), drop(&dv), drop(&ws), drop(&cu);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_attention_options),
        cmocka_unit_test(test_attention_misuse),
        cmocka_unit_test(test_attention_bwd),
        cmocka_unit_test(test_attention_bwd_tuned),
        cmocka_unit_test(test_attention_bwd_search),
        cmocka_unit_test(test_attention_packed_qkv),
        cmocka_unit_test(test_attention_bwd_misuse),
    };
    return stdlib_test_main(argc, argv, &dev, tests, sizeof tests / sizeof tests[0]);
}
