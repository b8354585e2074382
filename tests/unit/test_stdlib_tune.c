/* tls_matmul, tls_attention_fwd and the tuning file (docs/tuning.md), on
 * the device the argument names: a device given a trt_tuning takes an
 * entry for the call's kernel and bucket before the built-in table, and
 * falls back to the table, with a note, for an entry that does not
 * compile or lacks a const. The tuned tiles (16 x 16 x 16; attention's 16
 * x 16) are none of the table's, so the extra module they compile shows
 * they were used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tilec_stdlib.h"
#include "stdlib_test_main.h"

static trt_device *dev;

enum { M = 60, N = 50, K = 40 }; /* bucket M=64,N=64,K=64 */
#define BUCKET "M=64,N=64,K=64"

static char *matmul_src, *attention_src;
static size_t matmul_len, attention_len;

static char *read_stdlib_source(const char *name, size_t *len) {
    char path[512];
    snprintf(path, sizeof path, "%s/stdlib/%s", TILEC_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc(*len + 1);
    if (s && fread(s, 1, *len, f) != *len) free(s), s = NULL;
    fclose(f);
    return s;
}

/* c = a x b of small integers (exact in tf32 and f32), checked; with the
 * options opt (NULL: none). */
static void product_is(const tls_options *opt) {
    static float a[M * K], b[K * N], c[M * N];
    for (int i = 0; i < M * K; i++) a[i] = (float)(i % 7 - 3);
    for (int i = 0; i < K * N; i++) b[i] = (float)(i % 5 - 2);
    trt_buffer ba, bb, bc;
    assert_int_equal(trt_alloc(dev, sizeof a, &ba), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof b, &bb), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof c, &bc), TRT_OK);
    assert_int_equal(trt_write(dev, ba, 0, a, sizeof a), TRT_OK);
    assert_int_equal(trt_write(dev, bb, 0, b, sizeof b), TRT_OK);
    for (int i = 0; i < M * N; i++) c[i] = NAN;
    assert_int_equal(trt_write(dev, bc, 0, c, sizeof c), TRT_OK);
    if (tls_matmul(dev, TLS_F32, tls_mem_of(ba), tls_mem_of(bb), tls_mem_of(bc), M, N, K, K, 1, N, 1, N, 1, opt) !=
        TRT_OK)
        fail_msg("%s", trt_last_error(dev));
    assert_int_equal(trt_read(dev, bc, 0, c, sizeof c), TRT_OK);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float want = 0;
            for (int k = 0; k < K; k++) want += a[i * K + k] * b[k * N + j];
            if (c[i * N + j] != want) fail_msg("c[%d][%d] is %g, not %g", i, j, (double)c[i * N + j], (double)want);
        }
    trt_free(dev, ba), trt_free(dev, bb), trt_free(dev, bc);
}

static void product_is_right(void) { product_is(NULL); }

/* A tuning of one entry for this device: kernel of the stdlib source
 * src in bucket, at cfg. */
static trt_tuning *one_entry(const char *src, size_t len, const char *kernel, const char *bucket,
                             trt_tune_config cfg) {
    trt_tuning *t;
    assert_int_equal(trt_tuning_create(&t), TRT_OK);
    if (trt_tuning_put(t, dev, src, len, kernel, bucket, &cfg) != TRT_OK) fail_msg("%s", trt_tuning_error(t));
    return t;
}

/* A tuning of one matmul_f32 entry (2 stages). */
static trt_tuning *tuning_with(const tilec_define *defs, size_t n, int num_warps, const char *bucket) {
    return one_entry(matmul_src, matmul_len, "matmul_f32", bucket, (trt_tune_config){defs, n, num_warps, 2});
}

/* Written to a file and loaded back, the entry is what tls_matmul takes. */
static void test_tuned_from_file(void **state) {
    (void)state;
    assert_int_equal(trt_use_tuning(dev, NULL), TRT_OK);
    product_is_right(); /* the table's configuration compiled */
    size_t before = tls_num_modules(dev);
    static const tilec_define t16[] = {{"BLOCK_M", 16}, {"BLOCK_N", 16}, {"BLOCK_K", 16}, {"GROUP_M", 2}};
    trt_tuning *put = tuning_with(t16, 4, 1, BUCKET), *loaded;
    char path[512];
    snprintf(path, sizeof path, "%s/tilec-stdlib-tune-%ld.txt", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (long)getpid());
    assert_int_equal(trt_tuning_save(put, path), TRT_OK);
    trt_tuning_free(put);
    assert_int_equal(trt_tuning_create(&loaded), TRT_OK);
    if (trt_tuning_load(loaded, path) != TRT_OK) fail_msg("%s", trt_tuning_error(loaded));
    remove(path);
    assert_int_equal(trt_use_tuning(dev, loaded), TRT_OK);
    product_is_right();
    assert_int_equal(tls_num_modules(dev), before + 1); /* the tuned tiles' module */
    const char *used = trt_tuning_last_used(loaded);
    if (!strstr(used, "matmul_f32 ") || !strstr(used, " " BUCKET " num_warps=1 num_stages=2 BLOCK_M=16 BLOCK_N=16 "
                                                     "BLOCK_K=16 GROUP_M=2"))
        fail_msg("last used: '%s'", used);
    assert_string_equal(trt_tuning_last_note(loaded), "");
    /* again: the same module, no compile */
    product_is_right();
    assert_int_equal(tls_num_modules(dev), before + 1);
    assert_int_equal(trt_use_tuning(dev, NULL), TRT_OK);
    trt_tuning_free(loaded);
}

/* An entry of another bucket is not this product's. */
static void test_other_bucket_unused(void **state) {
    (void)state;
    static const tilec_define t16[] = {{"BLOCK_M", 16}, {"BLOCK_N", 16}, {"BLOCK_K", 16}, {"GROUP_M", 2}};
    trt_tuning *t = tuning_with(t16, 4, 1, "M=128,N=64,K=64");
    assert_int_equal(trt_use_tuning(dev, t), TRT_OK);
    product_is_right();
    assert_string_equal(trt_tuning_last_used(t), "");
    assert_int_equal(trt_use_tuning(dev, NULL), TRT_OK);
    trt_tuning_free(t);
}

/* An entry whose tiles do not compile (24 rows: not a power of two) or
 * that lacks GROUP_M: the table's configuration, and a note saying why. */
static void test_fallback_with_note(void **state) {
    (void)state;
    static const tilec_define odd[] = {{"BLOCK_M", 24}, {"BLOCK_N", 16}, {"BLOCK_K", 16}, {"GROUP_M", 2}};
    trt_tuning *t = tuning_with(odd, 4, 1, BUCKET);
    assert_int_equal(trt_use_tuning(dev, t), TRT_OK);
    product_is_right();
    assert_string_equal(trt_tuning_last_used(t), "");
    const char *note = trt_tuning_last_note(t);
    if (!strstr(note, "tls_matmul: the tuned configuration of matmul_f32 " BUCKET " does not compile; the built-in "
                      "table's instead: ") || !strstr(note, "not a power of two"))
        fail_msg("note: '%s'", note);
    trt_tuning_free(t);
    static const tilec_define three[] = {{"BLOCK_M", 16}, {"BLOCK_N", 16}, {"BLOCK_K", 16}};
    t = tuning_with(three, 3, 1, BUCKET);
    assert_int_equal(trt_use_tuning(dev, t), TRT_OK);
    product_is_right();
    assert_string_equal(trt_tuning_last_used(t), "");
    assert_non_null(strstr(trt_tuning_last_note(t), "has no GROUP_M"));
    assert_int_equal(trt_use_tuning(dev, NULL), TRT_OK);
    trt_tuning_free(t);
}

/* ---- attention --------------------------------------------------------------- */

enum { AH = 2, AQ = 40, AKV = 50, AD = 32 }; /* two query heads on one key/value head */
#define ATT_BUCKET "N_Q=64,N_KV=64,HEAD_DIM=32"

/* tls_attention_fwd in f32 of one sequence against float64: inputs of
 * k/8 for small integers k (tf32 values, so its tf32 products are exact),
 * o within 8 u (1 + |o|) with u tf32's unit roundoff 2^-11 (p is rounded
 * to tf32 before the second product), lse within 1e-3 (1 + |lse|), and
 * outputs poisoned first. */
static void attention_is(const tls_options *opt) {
    static float q[AH * AQ * AD], k[AKV * AD], v[AKV * AD], o[AH * AQ * AD], lse[AH * AQ];
    for (int i = 0; i < AH * AQ * AD; i++) q[i] = (float)(rand() % 17 - 8) / 8, o[i] = NAN;
    for (int i = 0; i < AKV * AD; i++) k[i] = (float)(rand() % 17 - 8) / 8, v[i] = (float)(rand() % 17 - 8) / 8;
    for (int i = 0; i < AH * AQ; i++) lse[i] = NAN;
    trt_buffer bq, bk, bv, bo, bl;
    assert_int_equal(trt_alloc(dev, sizeof q, &bq), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof k, &bk), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof v, &bv), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof o, &bo), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof lse, &bl), TRT_OK);
    assert_int_equal(trt_write(dev, bq, 0, q, sizeof q), TRT_OK);
    assert_int_equal(trt_write(dev, bk, 0, k, sizeof k), TRT_OK);
    assert_int_equal(trt_write(dev, bv, 0, v, sizeof v), TRT_OK);
    assert_int_equal(trt_write(dev, bo, 0, o, sizeof o), TRT_OK);
    assert_int_equal(trt_write(dev, bl, 0, lse, sizeof lse), TRT_OK);
    tls_attention_problem p = {.batch = 1, .heads = AH, .kv_heads = 1, .n_q = AQ, .n_kv = AKV, .head_dim = AD};
    tls_attention_tensor tq = {tls_mem_of(bq), 0, AQ * AD, AD}, tk = {tls_mem_of(bk), 0, 0, AD},
                         tv = {tls_mem_of(bv), 0, 0, AD}, to = {tls_mem_of(bo), 0, AQ * AD, AD},
                         tl = {tls_mem_of(bl), 0, AQ, 1};
    if (tls_attention_fwd(dev, TLS_F32, &p, tq, tk, tv, to, tl, opt) != TRT_OK) fail_msg("%s", trt_last_error(dev));
    assert_int_equal(trt_read(dev, bo, 0, o, sizeof o), TRT_OK);
    assert_int_equal(trt_read(dev, bl, 0, lse, sizeof lse), TRT_OK);
    double scale = 1 / sqrt((double)(float)AD), tol = 8 * 0x1p-11;
    for (int h = 0; h < AH; h++)
        for (int i = 0; i < AQ; i++) {
            double s[AKV], top = -INFINITY, sum = 0;
            for (int j = 0; j < AKV; j++) {
                s[j] = 0;
                for (int d = 0; d < AD; d++) s[j] += (double)q[(h * AQ + i) * AD + d] * k[j * AD + d];
                s[j] *= scale;
                top = fmax(top, s[j]);
            }
            for (int j = 0; j < AKV; j++) sum += exp(s[j] - top);
            double want_lse = top + log(sum), got_lse = lse[h * AQ + i];
            if (!(fabs(got_lse - want_lse) <= 1e-3 * (1 + fabs(want_lse))))
                fail_msg("lse[%d][%d] is %g, not %g", h, i, got_lse, want_lse);
            for (int d = 0; d < AD; d++) {
                double want = 0;
                for (int j = 0; j < AKV; j++) want += exp(s[j] - top) / sum * v[j * AD + d];
                double got = o[(h * AQ + i) * AD + d];
                if (!(fabs(got - want) <= tol * (1 + fabs(want))))
                    fail_msg("o[%d][%d][%d] is %g, not %g", h, i, d, got, want);
            }
        }
    trt_free(dev, bq), trt_free(dev, bk), trt_free(dev, bv), trt_free(dev, bo), trt_free(dev, bl);
}

static void attention_is_right(void) { attention_is(NULL); }

/* A tuning of one attention_fwd_f32 entry (1 warp, 1 stage). */
static trt_tuning *attention_tuning(const tilec_define *defs, size_t n, const char *bucket) {
    return one_entry(attention_src, attention_len, "attention_fwd_f32", bucket, (trt_tune_config){defs, n, 1, 1});
}

/* The forward takes its entry (16 x 16 blocks on one warp: a module of
 * its own) and is right; an entry of another bucket is passed over; one
 * that does not compile, or lacks BLOCK_N, falls back with a note. */
static void test_attention_tuned(void **state) {
    (void)state;
    assert_int_equal(trt_use_tuning(dev, NULL), TRT_OK);
    attention_is_right(); /* the table's configuration */
    size_t before = tls_num_modules(dev);
    static const tilec_define b16[] = {{"BLOCK_M", 16}, {"BLOCK_N", 16}};
    trt_tuning *t = attention_tuning(b16, 2, ATT_BUCKET);
    assert_int_equal(trt_use_tuning(dev, t), TRT_OK);
    attention_is_right();
    assert_int_equal(tls_num_modules(dev), before + 1);
    const char *used = trt_tuning_last_used(t);
    if (!strstr(used, "attention_fwd_f32 ") || !strstr(used, " " ATT_BUCKET " num_warps=1 num_stages=1 BLOCK_M=16 "
                                                             "BLOCK_N=16"))
        fail_msg("last used: '%s'", used);
    assert_string_equal(trt_tuning_last_note(t), "");
    trt_tuning_free(t);

    t = attention_tuning(b16, 2, "N_Q=128,N_KV=64,HEAD_DIM=32");
    assert_int_equal(trt_use_tuning(dev, t), TRT_OK);
    attention_is_right();
    assert_string_equal(trt_tuning_last_used(t), "");
    trt_tuning_free(t);

    static const tilec_define odd[] = {{"BLOCK_M", 24}, {"BLOCK_N", 16}};
    t = attention_tuning(odd, 2, ATT_BUCKET);
    assert_int_equal(trt_use_tuning(dev, t), TRT_OK);
    attention_is_right();
    assert_string_equal(trt_tuning_last_used(t), "");
    const char *note = trt_tuning_last_note(t);
    if (!strstr(note, "tls_attention_fwd: the tuned configuration of attention_fwd_f32 " ATT_BUCKET
                      " does not compile; the built-in table's instead: ") ||
        !strstr(note, "not a power of two"))
        fail_msg("note: '%s'", note);
    trt_tuning_free(t);

    t = attention_tuning(b16, 1, ATT_BUCKET);
    assert_int_equal(trt_use_tuning(dev, t), TRT_OK);
    attention_is_right();
    assert_string_equal(trt_tuning_last_used(t), "");
    assert_non_null(strstr(trt_tuning_last_note(t), "has no BLOCK_N"));
    assert_int_equal(trt_use_tuning(dev, NULL), TRT_OK);
    trt_tuning_free(t);
}

/* ---- a row kernel ------------------------------------------------------------ */

enum { SR = 3, SC = 100 }; /* rows of 100 f32: BLOCK 128, 512 bytes, 1 warp by the heuristic */
#define ROW_BUCKET "COLS=128"

/* tls_softmax of SR rows in f32 against float64 (within 1e-5 relative:
 * ex2.approx on the GPU code), on random rows, with y poisoned first;
 * warps: tls_options.num_warps. */
static void softmax_is_right(int warps) {
    static float x[SR * SC], y[SR * SC];
    for (int i = 0; i < SR * SC; i++) x[i] = (float)(rand() % 2001 - 1000) / 100, y[i] = NAN;
    trt_buffer bx, by;
    assert_int_equal(trt_alloc(dev, sizeof x, &bx), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof y, &by), TRT_OK);
    assert_int_equal(trt_write(dev, bx, 0, x, sizeof x), TRT_OK);
    assert_int_equal(trt_write(dev, by, 0, y, sizeof y), TRT_OK);
    const tls_options opt = {.num_warps = warps};
    if (tls_softmax(dev, TLS_F32, tls_mem_of(bx), tls_mem_of(by), SR, SC, SC, SC, &opt) != TRT_OK)
        fail_msg("%s", trt_last_error(dev));
    assert_int_equal(trt_read(dev, by, 0, y, sizeof y), TRT_OK);
    for (int r = 0; r < SR; r++) {
        double top = -INFINITY, sum = 0;
        for (int j = 0; j < SC; j++) top = fmax(top, x[r * SC + j]);
        for (int j = 0; j < SC; j++) sum += exp((double)x[r * SC + j] - top);
        for (int j = 0; j < SC; j++) {
            double want = exp((double)x[r * SC + j] - top) / sum;
            if (!(fabs(y[r * SC + j] - want) <= 1e-5 * want + 1e-12))
                fail_msg("y[%d][%d] is %g, not %g", r, j, (double)y[r * SC + j], want);
        }
    }
    trt_free(dev, bx), trt_free(dev, by);
}

/* A softmax_f32 entry of 2 warps is taken (a module of its own) and
 * right; the caller's num_warps wins over it; an entry that leaves the
 * warps to the compiler (0) is not taken. */
static void test_row_kernel_tuned(void **state) {
    (void)state;
    size_t len;
    char *src = read_stdlib_source("softmax.tile", &len);
    assert_non_null(src);
    assert_int_equal(trt_use_tuning(dev, NULL), TRT_OK);
    softmax_is_right(0);
    softmax_is_right(4);
    size_t before = tls_num_modules(dev);
    for (int warps = 2; warps >= 0; warps -= 2) {
        /* 2 warps: one module more; then 0: nothing taken, none more */
        trt_tuning *t = one_entry(src, len, "softmax_f32", ROW_BUCKET, (trt_tune_config){NULL, 0, warps, 0});
        assert_int_equal(trt_use_tuning(dev, t), TRT_OK);
        size_t now = tls_num_modules(dev);
        softmax_is_right(4); /* the caller's warps: the module compiled above */
        assert_int_equal(tls_num_modules(dev), now);
        assert_string_equal(trt_tuning_last_used(t), "");
        softmax_is_right(0);
        assert_int_equal(tls_num_modules(dev), before + 1);
        if (warps && (!strstr(trt_tuning_last_used(t), "softmax_f32 ") ||
                      !strstr(trt_tuning_last_used(t), " " ROW_BUCKET " num_warps=2 ")))
            fail_msg("last used: '%s'", trt_tuning_last_used(t));
        if (!warps) assert_string_equal(trt_tuning_last_used(t), "");
        assert_string_equal(trt_tuning_last_note(t), "");
        assert_int_equal(trt_use_tuning(dev, NULL), TRT_OK);
        trt_tuning_free(t);
    }
    free(src);
}

/* ---- searching from a call (tls_options.search) -------------------------------- */

/* A matmul and an attention forward searched from the call: each right
 * (the winner's output), one entry each in the tuning under the call's
 * bucket, which the same call then takes; a call that cannot search
 * refuses it. */
static void test_search_from_call(void **state) {
    (void)state;
    assert_int_equal(trt_use_tuning(dev, NULL), TRT_OK);
    trt_tuning *t;
    assert_int_equal(trt_tuning_create(&t), TRT_OK);
    const tls_options search = {.search = t};
    product_is(&search);
    assert_int_equal(trt_tuning_num_entries(t), 1);
    attention_is(&search);
    assert_int_equal(trt_tuning_num_entries(t), 2);
    assert_int_equal(trt_use_tuning(dev, t), TRT_OK);
    product_is_right();
    if (!strstr(trt_tuning_last_used(t), "matmul_f32 ") || !strstr(trt_tuning_last_used(t), " " BUCKET " "))
        fail_msg("last used: '%s'", trt_tuning_last_used(t));
    attention_is_right();
    if (!strstr(trt_tuning_last_used(t), "attention_fwd_f32 ") || !strstr(trt_tuning_last_used(t), " " ATT_BUCKET " "))
        fail_msg("last used: '%s'", trt_tuning_last_used(t));
    assert_string_equal(trt_tuning_last_note(t), "");
    assert_int_equal(trt_use_tuning(dev, NULL), TRT_OK);
    trt_buffer x;
    assert_int_equal(trt_alloc(dev, 64, &x), TRT_OK);
    assert_int_equal(tls_softmax(dev, TLS_F32, tls_mem_of(x), tls_mem_of(x), 1, 16, 16, 16, &search),
                     TRT_ERR_INVALID_ARGUMENT);
    if (!strstr(trt_last_error(dev), "tls_softmax: tls_options.search: only the matrix products and "
                                     "attention (forward and backward) search"))
        fail_msg("message: %s", trt_last_error(dev));
    assert_int_equal(trt_tuning_num_entries(t), 2);
    trt_free(dev, x);
    trt_tuning_free(t);
}

int main(int argc, char **argv) {
    matmul_src = read_stdlib_source("matmul.tile", &matmul_len);
    attention_src = read_stdlib_source("attention.tile", &attention_len);
    if (!matmul_src || !attention_src) {
        fprintf(stderr, "%s: cannot read the stdlib's sources under %s\n", argv[0], TILEC_SOURCE_DIR);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tuned_from_file),
        cmocka_unit_test(test_other_bucket_unused),
        cmocka_unit_test(test_fallback_with_note),
        cmocka_unit_test(test_attention_tuned),
        cmocka_unit_test(test_row_kernel_tuned),
        cmocka_unit_test(test_search_from_call),
    };
    int r = stdlib_test_main(argc, argv, &dev, tests, sizeof tests / sizeof tests[0]);
    free(matmul_src), free(attention_src);
    return r;
}
