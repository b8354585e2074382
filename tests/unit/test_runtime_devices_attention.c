/* test_runtime_devices_attention.c - the device tests of stdlib/attention.tile's
 * forward (issue 20, first cut): causal or not, query and key lengths
 * that are not multiples of the blocks, heads with their own strides.
 * Inputs are random f16 (q in [-4, 4], k and v in [-1, 1]); the reference computes the softmax in
 * float64. Tolerance: O is rounded to f16 (2^-11 relative) and p to f16
 * before the second dot (2^-11 relative of each term): |err| <= 4e-3 (1 +
 * |o|) covers both with room for f32 accumulation; the log-sum-exp, in
 * f32 from exp2/log2 of f32 values: 1e-3 (1 + |lse|).
 * Runs on each device as the others (device_harness.h):
 * test_runtime_devices_attention cpu|cuda|emu. */
#include <math.h>

#include "device_harness.h"

enum { HEADS = 3, D = 64, BLOCK = 64 };

/* Uniform in [-1, 1], never all zero: scores of a few units, so the
 * softmax spreads over many keys (rand_f32's range would make it one-hot). */
static float unit_rand(void) { return (float)(rand() % 2001 - 1000) / 1000.0f; }

static void run_forward(int n_q, int n_kv, bool causal) {
    size_t nq = (size_t)HEADS * n_q * D, nk = (size_t)HEADS * n_kv * D;
    uint16_t *hq = malloc(2 * nq), *hk = malloc(2 * nk), *hv = malloc(2 * nk), *ho = malloc(2 * nq);
    float *lse = poison_f32s(HEADS * n_q);
    for (size_t i = 0; i < nq; i++) put_f16(hq, i, 4 * unit_rand());
    for (size_t i = 0; i < nk; i++) put_f16(hk, i, unit_rand()), put_f16(hv, i, unit_rand());
    memset(ho, 0xff, 2 * nq); /* NaN */
    tilec_define defs[3] = {{"BLOCK_M", BLOCK}, {"BLOCK_N", BLOCK}, {"CAUSAL", causal}};
    prog p;
    trt_kernel *k = compile_file_with(&p, "stdlib/attention.tile", "attention_fwd_f16", defs, 3, 4);
    trt_buffer bq = upload(hq, 2 * nq), bk = upload(hk, 2 * nk), bv = upload(hv, 2 * nk), bo = upload(ho, 2 * nq),
               bl = upload(lse, sizeof(float) * (size_t)(HEADS * n_q));
    double scale = 1 / sqrt((double)D);
    trt_arg args[16] = {trt_buf(bq), trt_buf(bk), trt_buf(bv), trt_buf(bo), trt_buf(bl), trt_int(n_q), trt_int(n_kv),
                        trt_int((int64_t)n_q * D), trt_int(D), trt_int((int64_t)n_kv * D), trt_int(D),
                        trt_int((int64_t)n_kv * D), trt_int(D), trt_int((int64_t)n_q * D), trt_int(D),
                        trt_float(scale)};
    launch(k, cdiv(n_q, BLOCK), HEADS, 1, args, 16);
    download(bo, ho, 2 * nq);
    download(bl, lse, sizeof(float) * (size_t)(HEADS * n_q));
    OK(trt_free(dev, bq));
    OK(trt_free(dev, bk));
    OK(trt_free(dev, bv));
    double *s = malloc(sizeof(double) * (size_t)n_kv);
    for (int h = 0; h < HEADS; h++)
        for (int i = 0; i < n_q; i++) {
            const uint16_t *qi = hq + ((size_t)h * n_q + i) * D;
            double m = -INFINITY, l = 0;
            int last = causal ? (i < n_kv - 1 ? i : n_kv - 1) : n_kv - 1;
            for (int j = 0; j <= last; j++) {
                double dotp = 0;
                for (int d = 0; d < D; d++) dotp += get_f16(qi, (size_t)d) * get_f16(hk, ((size_t)h * n_kv + j) * D + d);
                s[j] = dotp * scale;
                m = s[j] > m ? s[j] : m;
            }
            for (int j = 0; j <= last; j++) l += exp(s[j] - m);
            double want_lse = m + log(l), got_lse = lse[h * n_q + i];
            if (!(fabs(got_lse - want_lse) <= 1e-3 * (1 + fabs(want_lse))))
                fail_msg("attention %s n_q=%d n_kv=%d: lse[%d][%d] = %g, want %g on %s", causal ? "causal" : "full",
                         n_q, n_kv, h, i, got_lse, want_lse, trt_device_name(dev));
            for (int d = 0; d < D; d++) {
                double want = 0;
                for (int j = 0; j <= last; j++) want += exp(s[j] - m) / l * get_f16(hv, ((size_t)h * n_kv + j) * D + d);
                double got = get_f16(ho, ((size_t)h * n_q + i) * D + d);
                if (!(fabs(got - want) <= 4e-3 * (1 + fabs(want))))
                    fail_msg("attention %s n_q=%d n_kv=%d: o[%d][%d][%d] = %g, want %g on %s", causal ? "causal" : "full",
                             n_q, n_kv, h, i, d, got, want, trt_device_name(dev));
            }
        }
    free(s), free(hq), free(hk), free(hv), free(ho), free(lse);
    drop(&p);
}

static void test_forward(void **state) {
    (void)state;
    run_forward(100, 77, false);  /* tails in both lengths */
    run_forward(128, 192, false); /* whole blocks, more keys than queries */
    run_forward(100, 100, true);  /* causal, a tail */
}

HARNESS_MAIN(cmocka_unit_test(test_forward))
