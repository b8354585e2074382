/* test_runtime_devices_compile_many.c - trt_compile_many, several modules
 * compiled at once on threads: each module what trt_compile gives (it
 * runs and adds), a failing request reported with its index and the
 * compiler's message while the others compile, repeated and already
 * compiled requests, the disk cache read through it, and misuse.
 * Runs on each device as the others (device_harness.h):
 * test_runtime_devices_compile_many cpu|cuda|emu. */
#include "device_harness.h"

enum { N = 3000 }; /* not a multiple of any BLOCK below: the masked tail runs */

/* x + y through module m's vadd at BLOCK block, on random inputs with a
 * poisoned output, checked exactly. */
static void check_vadd(trt_module *m, int block) {
    trt_kernel *k;
    OK(trt_get_kernel(m, "vadd", &k));
    float *x = rand_f32s(N), *y = rand_f32s(N), *out = poison_f32s(N), *want = malloc(N * sizeof *want);
    for (int i = 0; i < N; i++) want[i] = x[i] + y[i];
    trt_buffer bx = upload(x, N * sizeof *x), by = upload(y, N * sizeof *y), bo = upload(out, N * sizeof *out);
    trt_arg a[4] = {trt_buf(bx), trt_buf(by), trt_buf(bo), trt_int(N)};
    launch(k, cdiv(N, block), 1, 1, a, 4);
    download(bo, out, N * sizeof *out);
    expect_f32("vadd", N, out, want);
    trt_free(dev, bx), trt_free(dev, by), trt_free(dev, bo);
    free(x), free(y), free(out), free(want);
}

/* Four specializations at once: each module runs its own BLOCK. */
static void test_specializations(void **state) {
    (void)state;
    enum { R = 4 };
    static const int blocks[R] = {64, 128, 256, 1024};
    tilec_define defs[R];
    trt_compile_options opts[R];
    trt_compile_request reqs[R];
    for (int i = 0; i < R; i++) {
        defs[i] = (tilec_define){"BLOCK", blocks[i]};
        opts[i] = (trt_compile_options){.defines = &defs[i], .ndefines = 1};
        reqs[i] = (trt_compile_request){"vadd.tile", vadd_src, strlen(vadd_src), &opts[i]};
    }
    trt_module *mods[R];
    trt_status st[R];
    OK(trt_compile_many(dev, reqs, R, mods, st));
    for (int i = 0; i < R; i++) {
        assert_int_equal(st[i], TRT_OK);
        assert_non_null(mods[i]);
        check_vadd(mods[i], blocks[i]);
        trt_module_free(mods[i]);
    }
}

/* A request that does not compile gives NULL and TRT_ERR_COMPILE; the
 * others compile all the same; the call returns the first failure, whose
 * message names its request and has the compiler's file:line:col. */
static void test_failures(void **state) {
    (void)state;
    static const char broken[] = "kernel vadd(x: *f32) {\n    store(x + arange(0, 64), 1.0)\n}\n"; /* no ';' */
    tilec_define b100 = {"BLOCK", 100}, b256 = {"BLOCK", 256};
    trt_compile_options o100 = {.defines = &b100, .ndefines = 1}, o256 = {.defines = &b256, .ndefines = 1};
    const trt_compile_request reqs[4] = {{"vadd.tile", vadd_src, strlen(vadd_src), NULL},
                                         {"vadd100.tile", vadd_src, strlen(vadd_src), &o100},
                                         {"vadd256.tile", vadd_src, strlen(vadd_src), &o256},
                                         {"broken.tile", broken, strlen(broken), NULL}};
    trt_module *mods[4];
    trt_status st[4];
    assert_int_equal(trt_compile_many(dev, reqs, 4, mods, st), TRT_ERR_COMPILE);
    const char *err = trt_last_error(dev);
    if (strncmp(err, "request 1: ", 11) || !strstr(err, "vadd100.tile:2:") ||
        !strstr(err, "arange length 100 is not a power of two"))
        fail_msg("message: %s", err);
    assert_int_equal(st[0], TRT_OK);
    assert_int_equal(st[1], TRT_ERR_COMPILE);
    assert_int_equal(st[2], TRT_OK);
    assert_int_equal(st[3], TRT_ERR_COMPILE);
    assert_null(mods[1]);
    assert_null(mods[3]);
    check_vadd(mods[0], 1024);
    check_vadd(mods[2], 256);
    trt_module_free(mods[0]);
    trt_module_free(mods[2]);
    /* status may be NULL */
    assert_int_equal(trt_compile_many(dev, reqs + 3, 1, mods, NULL), TRT_ERR_COMPILE);
    if (!strstr(trt_last_error(dev), "request 0: broken.tile:3:")) fail_msg("message: %s", trt_last_error(dev));
}

/* The same request twice, and one trt_compile made before: each gives a
 * module of its own that runs. */
static void test_repeats(void **state) {
    (void)state;
    tilec_define b = {"BLOCK", 512};
    trt_compile_options o = {.defines = &b, .ndefines = 1};
    trt_module *before;
    OK(trt_compile(dev, "vadd.tile", vadd_src, strlen(vadd_src), &o, &before));
    const trt_compile_request r = {"vadd.tile", vadd_src, strlen(vadd_src), &o};
    const trt_compile_request reqs[3] = {r, r, r};
    trt_module *mods[3];
    OK(trt_compile_many(dev, reqs, 3, mods, NULL));
    assert_true(mods[0] != mods[1] && mods[1] != mods[2] && mods[0] != before);
    for (int i = 0; i < 3; i++) {
        check_vadd(mods[i], 512);
        trt_module_free(mods[i]);
    }
    check_vadd(before, 512);
    trt_module_free(before);
}

/* ---- the disk cache (TILEC_CACHE_DIR) through trt_compile_many ----------- */

/* out[0] of each source's vadd, compiled together by trt_compile_many on a
 * fresh device (an empty memory cache), for x = 5, y = 3: 8 where it
 * adds, 2 where it subtracts. */
static void fresh_results(const char *const *srcs, int n, float *results) {
    trt_device *d;
    char why[512];
    OK(trt_open(kind, &d, why, sizeof why));
    trt_compile_request reqs[2];
    trt_module *mods[2];
    for (int i = 0; i < n; i++) reqs[i] = (trt_compile_request){"cached.tile", srcs[i], strlen(srcs[i]), NULL};
    if (trt_compile_many(d, reqs, (size_t)n, mods, NULL) != TRT_OK) fail_msg("%s", trt_last_error(d));
    for (int i = 0; i < n; i++) {
        results[i] = vadd_first(d, mods[i]);
        trt_module_free(mods[i]);
    }
    trt_close(d);
}

static int count_files(const char *dir) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls %s | wc -l", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int n = -1;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* r against what a step of test_disk_cache wants, with the cache's files
 * in the message when they differ */
static void expect_results(const char *step, const float *r, float want0, float want1, const char *dir) {
    if (r[0] == want0 && r[1] == want1) return;
    char cmd[700], files[1024] = "";
    snprintf(cmd, sizeof cmd, "ls -l %s 2>&1", dir);
    FILE *p = popen(cmd, "r");
    if (p) {
        size_t n = fread(files, 1, sizeof files - 1, p);
        files[n] = 0;
        pclose(p);
    }
    fail_msg("%s: results %g and %g, want %g and %g; the cache %s:\n%s", step, r[0], r[1], want0, want1, dir, files);
}

/* What the batch compiles goes to disk; what is on disk is read, not
 * compiled: the subtracting kernel's entries copied over the adding one's
 * make the adding source subtract on a fresh device. */
static void test_disk_cache(void **state) {
    (void)state;
    char dir[] = "/tmp/tilec-cache-many-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("TILEC_CACHE_DIR", dir, 1);
    int per_module = kind != TRT_DEVICE_CPU ? 2 : 1; /* .tir (+ .cubin, or the emulator's .ll) */
    const char *const both[2] = {vadd_src, vsub_as_vadd_src};
    float r[2];
    fresh_results(both, 2, r);
    expect_results("compiled", r, 8, 2, dir);
    assert_int_equal(count_files(dir), 2 * per_module);
    /* plant: every file of the subtracting entry (its IR's sub) over the
     * adding one's (the keys' order is the hash's: it differs by device) */
    char cmd[1600];
    snprintf(cmd, sizeof cmd,
             "cd %s && sub=$(grep -l ' = sub ' *.tir | cut -c1-16) && add=$(ls *.tir | grep -v \"^$sub\" | cut -c1-16) && "
             "[ -n \"$sub\" ] && [ -n \"$add\" ] && for f in $sub.*; do cp \"$f\" \"$add.${f#*.}\"; done",
             dir);
    assert_int_equal(system(cmd), 0);
    fresh_results(both, 2, r);
    /* the adding source's key now holds the subtracting code */
    expect_results("planted", r, 2, 2, dir);
    unsetenv("TILEC_CACHE_DIR");
    fresh_results(both, 2, r); /* no cache dir: compiled */
    expect_results("no cache dir", r, 8, 2, dir);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- misuse ---------------------------------------------------------------- */

static void test_misuse(void **state) {
    (void)state;
    const trt_compile_request good = {"vadd.tile", vadd_src, strlen(vadd_src), NULL};
    trt_compile_request reqs[2] = {good, good};
    trt_module *mods[2] = {(trt_module *)1, (trt_module *)1};
    trt_status st[2];
    assert_int_equal(trt_compile_many(NULL, reqs, 2, mods, st), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_compile_many(dev, NULL, 2, mods, st), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_compile_many(dev, reqs, 2, NULL, st), TRT_ERR_INVALID_ARGUMENT);
    OK(trt_compile_many(dev, NULL, 0, NULL, NULL)); /* nothing to do */
    reqs[1].source = NULL;
    assert_int_equal(trt_compile_many(dev, reqs, 2, mods, st), TRT_ERR_INVALID_ARGUMENT);
    if (!strstr(trt_last_error(dev), "request 1: source is NULL")) fail_msg("message: %s", trt_last_error(dev));
    assert_null(mods[0]); /* nothing compiled */
    assert_null(mods[1]);
    assert_int_equal(st[0], TRT_ERR_INVALID_ARGUMENT);
    /* while a stream captures a graph, compiling is refused */
    trt_stream *s;
    OK(trt_stream_create(dev, &s));
    OK(trt_stream_begin_capture(s));
    assert_int_equal(trt_compile_many(dev, reqs, 1, mods, st), TRT_ERR_INVALID_ARGUMENT);
    if (!strstr(trt_last_error(dev), "compile modules")) fail_msg("message: %s", trt_last_error(dev));
    trt_graph *g;
    OK(trt_stream_end_capture(s, &g));
    trt_graph_destroy(g);
    trt_stream_destroy(s);
}

HARNESS_MAIN(cmocka_unit_test(test_specializations), cmocka_unit_test(test_failures), cmocka_unit_test(test_repeats),
             cmocka_unit_test(test_disk_cache), cmocka_unit_test(test_misuse))
