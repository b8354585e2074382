/* tls_matmul and the tuning file (docs/tuning.md), on the device the
 * argument names: a device given a trt_tuning takes an entry for the
 * product's kernel and bucket before the built-in table, and falls back
 * to the table, with a note, for an entry that does not compile or lacks
 * a const. The tuned tiles (16 x 16 x 16) are none of the table's, so the
 * extra module they compile shows they were used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tilec_stdlib.h"
#include "stdlib_test_main.h"

static trt_device *dev;

enum { M = 60, N = 50, K = 40 }; /* bucket M=64,N=64,K=64 */
#define BUCKET "M=64,N=64,K=64"

static char *matmul_src;
static size_t matmul_len;

static void read_matmul_source(void) {
    FILE *f = fopen(TILEC_SOURCE_DIR "/stdlib/matmul.tile", "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    matmul_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    matmul_src = malloc(matmul_len + 1);
    assert_int_equal(fread(matmul_src, 1, matmul_len, f), matmul_len);
    fclose(f);
}

/* c = a x b of small integers (exact in tf32 and f32), checked. */
static void product_is_right(void) {
    static float a[M * K], b[K * N], c[M * N];
    for (int i = 0; i < M * K; i++) a[i] = (float)(i % 7 - 3);
    for (int i = 0; i < K * N; i++) b[i] = (float)(i % 5 - 2);
    trt_buffer ba, bb, bc;
    assert_int_equal(trt_alloc(dev, sizeof a, &ba), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof b, &bb), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof c, &bc), TRT_OK);
    assert_int_equal(trt_write(dev, ba, 0, a, sizeof a), TRT_OK);
    assert_int_equal(trt_write(dev, bb, 0, b, sizeof b), TRT_OK);
    if (tls_matmul(dev, TLS_F32, tls_mem_of(ba), tls_mem_of(bb), tls_mem_of(bc), M, N, K, K, 1, N, 1, N, 1, NULL) !=
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

/* A tuning of one matmul_f32 entry for this device and BUCKET. */
static trt_tuning *tuning_with(const tilec_define *defs, size_t n, int num_warps, const char *bucket) {
    trt_tuning *t;
    assert_int_equal(trt_tuning_create(&t), TRT_OK);
    trt_tune_config cfg = {defs, n, num_warps, 2};
    if (trt_tuning_put(t, dev, matmul_src, matmul_len, "matmul_f32", bucket, &cfg) != TRT_OK)
        fail_msg("%s", trt_tuning_error(t));
    return t;
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

int main(int argc, char **argv) {
    read_matmul_source();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tuned_from_file),
        cmocka_unit_test(test_other_bucket_unused),
        cmocka_unit_test(test_fallback_with_note),
    };
    int r = stdlib_test_main(argc, argv, &dev, tests, sizeof tests / sizeof tests[0]);
    free(matmul_src);
    return r;
}
