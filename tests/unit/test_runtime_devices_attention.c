/* test_runtime_devices_attention.c - the device tests of stdlib/attention.tile's
 * forward (issue 20, first cut): f16 and bf16; causal or not; a sliding
 * window or not, one that leaves some rows no key; grouped-query heads;
 * query and key lengths that are not multiples of the blocks; batch, head
 * and row strides of FlashAttention's (batch, row, head, d) layout;
 * batches padded to the longest, and packed (varlen); strides promised
 * aligned (ALIGNED) or not. Inputs are random (q in [-4, 4], k and v in [-1,
 * 1]); the reference computes the softmax in float64. Tolerance: O is
 * rounded to the storage type and so is p before the second dot (2^-11
 * relative for f16, 2^-8 for bf16, each term): |err| <= 8 u (1 + |o|),
 * u the storage's unit roundoff, with room for f32 accumulation; the
 * log-sum-exp, in f32 from exp2/log2 of f32 values: 1e-3 (1 + |lse|).
 * Runs on each device as the others (device_harness.h):
 * test_runtime_devices_attention cpu|cuda|emu. */
#include <math.h>

#include "device_harness.h"

enum { BLOCK = 64 };

/* Uniform in [-1, 1], never all zero: scores of a few units, so the
 * softmax spreads over many keys (rand_f32's range would make it one-hot). */
static float unit_rand(void) { return (float)(rand() % 2001 - 1000) / 1000.0f; }

typedef struct attn_case {
    const dtype *dt;
    int heads, q_per_kv, n_q, n_kv;
    bool causal, window;
    int left, right;
    int batch;         /* 0: one batch; else batches of lengths lens_q, lens_kv */
    bool varlen;       /* the batches packed along the rows (cu_q, cu_k) */
    int lens_q[3], lens_kv[3];
    int d, warps;      /* head dim (0: 64) and num_warps (0: 4, p in registers) */
    bool aligned;      /* ALIGNED: the strides (multiples of 8 here, all of them) promised so */
} attn_case;

/* Whether query row i sees key j of a sequence of n_kv keys. */
static bool sees(const attn_case *t, int i, int j, int n_kv) {
    return j < n_kv && (!t->causal || j <= i) && (!t->window || (j >= i - t->left && j <= i + t->right));
}

/* Rows are laid out (batch, row, head, d), FlashAttention's layout, so
 * the head, row and batch strides all differ from a flattening; with
 * varlen the batches' rows follow one another. */
static void run_forward(const attn_case *t) {
    const dtype *dt = t->dt;
    const int D = t->d ? t->d : 64;
    int kv_heads = t->heads / t->q_per_kv, nb = t->batch ? t->batch : 1;
    int cu_q[4] = {0}, cu_k[4] = {0}, max_q = 0, max_kv = 0;
    for (int b = 0; b < nb; b++) {
        int lq = t->batch ? t->lens_q[b] : t->n_q, lk = t->batch ? t->lens_kv[b] : t->n_kv;
        cu_q[b + 1] = cu_q[b] + lq, cu_k[b + 1] = cu_k[b] + lk;
        max_q = lq > max_q ? lq : max_q, max_kv = lk > max_kv ? lk : max_kv;
    }
    /* padded batches: each max_q (max_kv) rows; packed: the sum */
    int rows_q = t->varlen ? cu_q[nb] : nb * max_q, rows_kv = t->varlen ? cu_k[nb] : nb * max_kv;
    int64_t sqm = (int64_t)t->heads * D, skm = (int64_t)kv_heads * D, sqb = (int64_t)max_q * sqm, skb = (int64_t)max_kv * skm;
    size_t nq = (size_t)rows_q * sqm, nk = (size_t)rows_kv * skm, es = dt->size;
    size_t nl = t->varlen ? (size_t)t->heads * rows_q : (size_t)nb * t->heads * max_q;
    int64_t slh = t->varlen ? rows_q : max_q, slb = (int64_t)t->heads * max_q;
    void *hq = malloc(es * nq), *hk = malloc(es * nk), *hv = malloc(es * nk), *ho = malloc(es * nq);
    float *lse = poison_f32s((int)nl);
    for (size_t i = 0; i < nq; i++) dt->put(hq, i, 4 * unit_rand());
    for (size_t i = 0; i < nk; i++) dt->put(hk, i, unit_rand()), dt->put(hv, i, unit_rand());
    memset(ho, 0xff, es * nq); /* NaN */
    tilec_define defs[7] = {{"BLOCK_M", BLOCK}, {"BLOCK_N", BLOCK}, {"CAUSAL", t->causal}, {"WINDOW", t->window},
                            {"VARLEN", t->varlen}, {"HEAD_DIM", D}, {"ALIGNED", t->aligned}};
    char name[64];
    snprintf(name, sizeof name, "attention_fwd_%s", dt->name);
    prog p;
    trt_kernel *k = compile_file_with(&p, "stdlib/attention.tile", name, defs, 7, t->warps ? t->warps : 4);
    trt_buffer bq = upload(hq, es * nq), bk = upload(hk, es * nk), bv = upload(hv, es * nk), bo = upload(ho, es * nq),
               bl = upload(lse, sizeof(float) * nl), bcq = upload(cu_q, sizeof cu_q), bck = upload(cu_k, sizeof cu_k);
    double scale = 1 / sqrt((double)D);
    trt_arg args[] = {trt_buf(bq), trt_buf(bk), trt_buf(bv), trt_buf(bo), trt_buf(bl), trt_buf(bcq), trt_buf(bck),
                      trt_int(max_q), trt_int(max_kv), trt_int(t->q_per_kv),
                      trt_int(sqb), trt_int(D), trt_int(sqm), trt_int(skb), trt_int(D), trt_int(skm),
                      trt_int(skb), trt_int(D), trt_int(skm), trt_int(sqb), trt_int(D), trt_int(sqm),
                      trt_int(slb), trt_int(slh), trt_float(scale), trt_int(t->left), trt_int(t->right)};
    launch(k, cdiv(max_q, BLOCK), (uint32_t)t->heads, (uint32_t)nb, args, sizeof args / sizeof args[0]);
    download(bo, ho, es * nq);
    download(bl, lse, sizeof(float) * nl);
    OK(trt_free(dev, bq));
    OK(trt_free(dev, bk));
    OK(trt_free(dev, bv));
    OK(trt_free(dev, bcq));
    OK(trt_free(dev, bck));
    double *s = malloc(sizeof(double) * (size_t)max_kv), tol = 8 * (strcmp(dt->name, "bf16") ? 0x1p-11 : 0x1p-8);
    char what[128];
    snprintf(what, sizeof what, "attention %s%s%s%s d=%d n_q=%d n_kv=%d heads=%d/%d batches=%d", dt->name,
             t->causal ? " causal" : "", t->window ? " window" : "", t->varlen ? " varlen" : "", D, max_q, max_kv,
             t->heads, kv_heads, nb);
    for (int b = 0; b < nb; b++)
        for (int h = 0; h < t->heads; h++) {
            /* padded batches all have the longest lengths (their rows are data) */
            int lq = t->varlen ? cu_q[b + 1] - cu_q[b] : max_q, lk = t->varlen ? cu_k[b + 1] - cu_k[b] : max_kv;
            size_t row_q = t->varlen ? (size_t)cu_q[b] : (size_t)b * max_q, row_k = t->varlen ? (size_t)cu_k[b] : (size_t)b * max_kv;
            size_t kvh = (size_t)(h / t->q_per_kv);
            for (int i = 0; i < lq; i++) {
                size_t qi = (row_q + i) * sqm + (size_t)h * D;
                double m = -INFINITY, l = 0;
                for (int j = 0; j < lk; j++) {
                    if (!sees(t, i, j, lk)) continue;
                    double dotp = 0;
                    for (int d = 0; d < D; d++) dotp += dt->get(hq, qi + d) * dt->get(hk, (row_k + j) * skm + kvh * D + d);
                    s[j] = dotp * scale;
                    m = s[j] > m ? s[j] : m;
                }
                for (int j = 0; j < lk; j++)
                    if (sees(t, i, j, lk)) l += exp(s[j] - m);
                size_t li = t->varlen ? (size_t)h * slh + row_q + i : (size_t)b * slb + (size_t)h * slh + i;
                double want_lse = l > 0 ? m + log(l) : -INFINITY, got_lse = lse[li];
                if (!(got_lse == want_lse || fabs(got_lse - want_lse) <= 1e-3 * (1 + fabs(want_lse))))
                    fail_msg("%s: lse[%d][%d][%d] = %g, want %g on %s", what, b, h, i, got_lse, want_lse, trt_device_name(dev));
                for (int d = 0; d < D; d++) {
                    double want = 0;
                    for (int j = 0; j < lk; j++)
                        if (sees(t, i, j, lk)) want += exp(s[j] - m) / l * dt->get(hv, (row_k + j) * skm + kvh * D + d);
                    double got = dt->get(ho, qi + d);
                    if (!(fabs(got - want) <= tol * (1 + fabs(want))))
                        fail_msg("%s: o[%d][%d][%d][%d] = %g, want %g on %s", what, b, h, i, d, got, want, trt_device_name(dev));
                }
            }
        }
    free(s), free(hq), free(hk), free(hv), free(ho), free(lse);
    drop(&p);
}

static void test_forward(void **state) {
    (void)state;
    const dtype *f16 = &dtypes[1], *bf16 = &dtypes[2];
    const attn_case cases[] = {
        /* tails in both lengths */
        {.dt = f16, .heads = 3, .q_per_kv = 1, .n_q = 100, .n_kv = 77},
        /* whole blocks, more keys than queries */
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 128, .n_kv = 192, .aligned = true},
        {.dt = f16, .heads = 3, .q_per_kv = 1, .n_q = 100, .n_kv = 100, .causal = true},
        {.dt = bf16, .heads = 2, .q_per_kv = 1, .n_q = 100, .n_kv = 77},
        {.dt = bf16, .heads = 2, .q_per_kv = 1, .n_q = 130, .n_kv = 130, .causal = true, .aligned = true},
        /* grouped-query: 3 query heads a key/value head; multi-query */
        {.dt = f16, .heads = 6, .q_per_kv = 3, .n_q = 70, .n_kv = 90},
        {.dt = f16, .heads = 4, .q_per_kv = 4, .n_q = 70, .n_kv = 90, .causal = true},
        /* sliding windows; one past the keys: rows from 80 on see none */
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 150, .n_kv = 140, .window = true, .left = 40, .right = 9},
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 150, .n_kv = 60, .window = true, .left = 20, .right = 5,
         .aligned = true},
        {.dt = f16, .heads = 2, .q_per_kv = 2, .n_q = 150, .n_kv = 120, .causal = true, .window = true, .left = 70},
        /* batches of the longest lengths (lens_q/kv give them), and packed ones of their own lengths */
        {.dt = f16, .heads = 2, .q_per_kv = 1, .batch = 3, .lens_q = {70, 100, 33}, .lens_kv = {90, 40, 65}},
        {.dt = f16, .heads = 4, .q_per_kv = 2, .batch = 3, .varlen = true, .lens_q = {70, 100, 33},
         .lens_kv = {90, 40, 65}},
        {.dt = bf16, .heads = 2, .q_per_kv = 1, .causal = true, .batch = 2, .varlen = true, .lens_q = {130, 20},
         .lens_kv = {130, 20}, .aligned = true},
        /* head dims 32 and 128 (at 8 warps p goes through shared memory: 64 rows do not cover 8 warps of 16) */
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 100, .n_kv = 77, .causal = true, .d = 32, .aligned = true},
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 100, .n_kv = 77, .d = 128, .aligned = true},
        {.dt = bf16, .heads = 2, .q_per_kv = 1, .n_q = 100, .n_kv = 77, .d = 128, .warps = 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_forward(&cases[i]);
}

HARNESS_MAIN(cmocka_unit_test(test_forward))
