/* test_runtime_devices_attention.c - the device tests of stdlib/attention.tile's
 * forward (issue 20, first cut): f16 and bf16; causal or not; a sliding
 * window or not, one that leaves some rows no key; grouped-query heads;
 * query and key lengths that are not multiples of the blocks; heads with
 * their own strides. Inputs are random (q in [-4, 4], k and v in [-1,
 * 1]); the reference computes the softmax in float64. Tolerance: O is
 * rounded to the storage type and so is p before the second dot (2^-11
 * relative for f16, 2^-8 for bf16, each term): |err| <= 8 u (1 + |o|),
 * u the storage's unit roundoff, with room for f32 accumulation; the
 * log-sum-exp, in f32 from exp2/log2 of f32 values: 1e-3 (1 + |lse|).
 * Runs on each device as the others (device_harness.h):
 * test_runtime_devices_attention cpu|cuda|emu. */
#include <math.h>

#include "device_harness.h"

enum { D = 64, BLOCK = 64 };

/* Uniform in [-1, 1], never all zero: scores of a few units, so the
 * softmax spreads over many keys (rand_f32's range would make it one-hot). */
static float unit_rand(void) { return (float)(rand() % 2001 - 1000) / 1000.0f; }

typedef struct attn_case {
    const dtype *dt;
    int heads, q_per_kv, n_q, n_kv;
    bool causal, window;
    int left, right;
} attn_case;

/* Whether query row i sees key j. */
static bool sees(const attn_case *t, int i, int j) {
    return j < t->n_kv && (!t->causal || j <= i) && (!t->window || (j >= i - t->left && j <= i + t->right));
}

static void run_forward(const attn_case *t) {
    const dtype *dt = t->dt;
    int kv_heads = t->heads / t->q_per_kv;
    size_t nq = (size_t)t->heads * t->n_q * D, nk = (size_t)kv_heads * t->n_kv * D, es = dt->size;
    void *hq = malloc(es * nq), *hk = malloc(es * nk), *hv = malloc(es * nk), *ho = malloc(es * nq);
    float *lse = poison_f32s(t->heads * t->n_q);
    for (size_t i = 0; i < nq; i++) dt->put(hq, i, 4 * unit_rand());
    for (size_t i = 0; i < nk; i++) dt->put(hk, i, unit_rand()), dt->put(hv, i, unit_rand());
    memset(ho, 0xff, es * nq); /* NaN */
    tilec_define defs[4] = {{"BLOCK_M", BLOCK}, {"BLOCK_N", BLOCK}, {"CAUSAL", t->causal}, {"WINDOW", t->window}};
    char name[64];
    snprintf(name, sizeof name, "attention_fwd_%s", dt->name);
    prog p;
    trt_kernel *k = compile_file_with(&p, "stdlib/attention.tile", name, defs, 4, 4);
    trt_buffer bq = upload(hq, es * nq), bk = upload(hk, es * nk), bv = upload(hv, es * nk), bo = upload(ho, es * nq),
               bl = upload(lse, sizeof(float) * (size_t)(t->heads * t->n_q));
    double scale = 1 / sqrt((double)D);
    trt_arg args[] = {trt_buf(bq), trt_buf(bk), trt_buf(bv), trt_buf(bo), trt_buf(bl), trt_int(t->n_q),
                      trt_int(t->n_kv), trt_int(t->q_per_kv), trt_int((int64_t)t->n_q * D), trt_int(D),
                      trt_int((int64_t)t->n_kv * D), trt_int(D), trt_int((int64_t)t->n_kv * D), trt_int(D),
                      trt_int((int64_t)t->n_q * D), trt_int(D), trt_float(scale), trt_int(t->left), trt_int(t->right)};
    launch(k, cdiv(t->n_q, BLOCK), (uint32_t)t->heads, 1, args, sizeof args / sizeof args[0]);
    download(bo, ho, es * nq);
    download(bl, lse, sizeof(float) * (size_t)(t->heads * t->n_q));
    OK(trt_free(dev, bq));
    OK(trt_free(dev, bk));
    OK(trt_free(dev, bv));
    double *s = malloc(sizeof(double) * (size_t)t->n_kv), tol = 8 * (strcmp(dt->name, "bf16") ? 0x1p-11 : 0x1p-8);
    char what[96];
    snprintf(what, sizeof what, "attention %s%s%s n_q=%d n_kv=%d heads=%d/%d", dt->name, t->causal ? " causal" : "",
             t->window ? " window" : "", t->n_q, t->n_kv, t->heads, kv_heads);
    for (int h = 0; h < t->heads; h++)
        for (int i = 0; i < t->n_q; i++) {
            size_t qrow = ((size_t)h * t->n_q + i) * D, kvh = (size_t)(h / t->q_per_kv);
            double m = -INFINITY, l = 0;
            for (int j = 0; j < t->n_kv; j++) {
                if (!sees(t, i, j)) continue;
                double dotp = 0;
                for (int d = 0; d < D; d++) dotp += dt->get(hq, qrow + d) * dt->get(hk, (kvh * t->n_kv + j) * D + d);
                s[j] = dotp * scale;
                m = s[j] > m ? s[j] : m;
            }
            for (int j = 0; j < t->n_kv; j++)
                if (sees(t, i, j)) l += exp(s[j] - m);
            double want_lse = l > 0 ? m + log(l) : -INFINITY, got_lse = lse[h * t->n_q + i];
            if (!(got_lse == want_lse || fabs(got_lse - want_lse) <= 1e-3 * (1 + fabs(want_lse))))
                fail_msg("%s: lse[%d][%d] = %g, want %g on %s", what, h, i, got_lse, want_lse, trt_device_name(dev));
            for (int d = 0; d < D; d++) {
                double want = 0;
                for (int j = 0; j < t->n_kv; j++)
                    if (sees(t, i, j)) want += exp(s[j] - m) / l * dt->get(hv, (kvh * t->n_kv + j) * D + d);
                double got = dt->get(ho, qrow + d);
                if (!(fabs(got - want) <= tol * (1 + fabs(want))))
                    fail_msg("%s: o[%d][%d][%d] = %g, want %g on %s", what, h, i, d, got, want, trt_device_name(dev));
            }
        }
    free(s), free(hq), free(hk), free(hv), free(ho), free(lse);
    drop(&p);
}

static void test_forward(void **state) {
    (void)state;
    const dtype *f16 = &dtypes[1], *bf16 = &dtypes[2];
    const attn_case cases[] = {
        {f16, 3, 1, 100, 77, false, false, 0, 0},   /* tails in both lengths */
        {f16, 2, 1, 128, 192, false, false, 0, 0},  /* whole blocks, more keys than queries */
        {f16, 3, 1, 100, 100, true, false, 0, 0},   /* causal, a tail */
        {bf16, 2, 1, 100, 77, false, false, 0, 0},  /* bf16 */
        {bf16, 2, 1, 130, 130, true, false, 0, 0},  /* bf16 causal */
        {f16, 6, 3, 70, 90, false, false, 0, 0},    /* grouped-query: 3 query heads a key/value head */
        {f16, 4, 4, 70, 90, true, false, 0, 0},     /* multi-query, causal */
        {f16, 2, 1, 150, 140, false, true, 40, 9},  /* a sliding window */
        {f16, 2, 1, 150, 60, false, true, 20, 5},   /* a window past the keys: rows from 80 on see none */
        {f16, 2, 2, 150, 120, true, true, 70, 0},   /* causal within a window, grouped */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_forward(&cases[i]);
}

HARNESS_MAIN(cmocka_unit_test(test_forward))
