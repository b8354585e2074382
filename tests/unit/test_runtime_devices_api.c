/* test_runtime_devices_api.c - the device tests of the runtime API around
 * kernels: streams, modules built ahead of time, wrapped memory, the disk cache,
 * misuse of the API, and launching after the device is closed.
 * Runs on each device as the others (device_harness.h):
 * test_runtime_devices_api cpu|cuda|emu. */
#include "device_harness.h"

/* ---- streams ------------------------------------------------------------- */

/* Four streams, each copying in, adding and copying out its own vectors,
 * all queued before any is waited for; then a stream's launch read back
 * through the default stream (ordered after it, as documented). */
static void test_streams(void **state) {
    (void)state;
    enum { STREAMS = 4, N = (1 << 18) + 5 };
    prog p;
    trt_kernel *k = compile_text(&p, "vadd.tile", vadd_src, "vadd", NULL, 0);
    trt_stream *s[STREAMS];
    float *x[STREAMS], *y[STREAMS], *out[STREAMS];
    trt_buffer bx[STREAMS], by[STREAMS], bo[STREAMS];
    size_t bytes = sizeof(float) * N;
    for (int i = 0; i < STREAMS; i++) {
        OK(trt_stream_create(dev, &s[i]));
        x[i] = rand_f32s(N), y[i] = rand_f32s(N), out[i] = poison_f32s(N);
        OK(trt_alloc(dev, bytes, &bx[i]));
        OK(trt_alloc(dev, bytes, &by[i]));
        OK(trt_alloc(dev, bytes, &bo[i]));
    }
    for (int i = 0; i < STREAMS; i++) {
        OK(trt_write_async(s[i], bx[i], 0, x[i], bytes));
        OK(trt_write_async(s[i], by[i], 0, y[i], bytes));
        OK(trt_write_async(s[i], bo[i], 0, out[i], bytes)); /* poison */
        trt_arg a[4] = {trt_buf(bx[i]), trt_buf(by[i]), trt_buf(bo[i]), trt_int(N)};
        OK(trt_launch_on(s[i], k, cdiv(N, 1024), 1, 1, a, 4));
        OK(trt_read_async(s[i], bo[i], 0, out[i], bytes));
    }
    for (int i = STREAMS - 1; i >= 0; i--) {
        OK(trt_stream_sync(s[i]));
        for (int j = 0; j < N; j++)
            if (out[i][j] != x[i][j] + y[i][j]) fail_msg("stream %d: out[%d] = %g, want %g", i, j, out[i][j], x[i][j] + y[i][j]);
    }
    /* a launch on a stream, then a plain trt_read: ordered after it */
    trt_arg a[4] = {trt_buf(bx[0]), trt_buf(bx[0]), trt_buf(bo[0]), trt_int(N)};
    OK(trt_launch_on(s[0], k, cdiv(N, 1024), 1, 1, a, 4));
    OK(trt_read(dev, bo[0], 0, out[0], bytes));
    for (int j = 0; j < N; j++) assert_true(out[0][j] == x[0][j] + x[0][j]);
    for (int i = 0; i < STREAMS; i++) {
        trt_stream_destroy(s[i]);
        trt_free(dev, bx[i]), trt_free(dev, by[i]), trt_free(dev, bo[i]);
        free(x[i]), free(y[i]), free(out[i]);
    }
    drop(&p);
}

static void test_stream_misuse(void **state) {
    (void)state;
    prog p;
    trt_kernel *k = compile_text(&p, "vadd.tile", vadd_src, "vadd", NULL, 0);
    trt_device *other;
    OK(trt_open(kind, &other, NULL, 0));
    trt_stream *theirs, *mine = NULL;
    OK(trt_stream_create(other, &theirs));
    trt_buffer b;
    OK(trt_alloc(dev, 64, &b));
    trt_arg a[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_int(16)};
    assert_int_equal(trt_launch_on(theirs, k, 1, 1, 1, a, 4), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_last_error(dev), "another device"));
    assert_int_equal(trt_launch_on(NULL, k, 1, 1, 1, a, 4), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_write_async(theirs, b, 0, a, 4), TRT_ERR_INVALID_HANDLE); /* not its device's buffer */
    OK(trt_stream_create(dev, &mine));
    assert_int_equal(trt_launch_on(mine, k, 1, 1, 1, a, 3), TRT_ERR_ARGUMENTS);
    float host[16];
    assert_int_equal(trt_read_async(mine, b, 60, host, 8), TRT_ERR_INVALID_ARGUMENT);
    trt_stream_destroy(mine);
    trt_close(other); /* its stream outlives it, refusing work */
    assert_int_equal(trt_stream_sync(theirs), TRT_ERR_CLOSED);
    assert_int_equal(trt_stream_create(other, &mine), TRT_ERR_CLOSED);
    assert_null(mine);
    trt_stream_destroy(theirs); /* frees what the closed device still held */
    trt_stream_destroy(NULL);
    assert_int_equal(trt_stream_create(dev, NULL), TRT_ERR_INVALID_ARGUMENT);
    trt_free(dev, b);
    drop(&p);
}

/* Two devices' buffers of the same slot are told apart: a buffer given to
 * the other device is an error, not that device's buffer of the same
 * number. And every device refuses a grid larger than a GPU launches. */
static void test_handles_and_grid_limits(void **state) {
    (void)state;
    prog p;
    trt_kernel *k = compile_text(&p, "vadd.tile", vadd_src, "vadd", NULL, 0);
    trt_device *other;
    OK(trt_open(kind, &other, NULL, 0));
    trt_buffer mine, theirs;
    OK(trt_alloc(dev, 64, &mine));
    assert_int_equal(trt_alloc(other, 64, &theirs), TRT_OK); /* the first slot of each */
    float v[16] = {1};
    assert_int_equal(trt_write(other, mine, 0, v, sizeof v), TRT_ERR_INVALID_HANDLE);
    assert_non_null(strstr(trt_last_error(other), "is not a buffer of this device (another device's?)"));
    assert_int_equal(trt_read(dev, theirs, 0, v, sizeof v), TRT_ERR_INVALID_HANDLE);
    trt_arg a[4] = {trt_buf(theirs), trt_buf(mine), trt_buf(mine), trt_int(16)};
    assert_int_equal(trt_launch(k, 1, 1, 1, a, 4), TRT_ERR_INVALID_HANDLE);
    assert_int_equal(trt_free(dev, (trt_buffer){0}), TRT_ERR_INVALID_HANDLE);
    /* grid limits: x up to 2^31 - 1, y and z up to 65535 */
    trt_arg ok[4] = {trt_buf(mine), trt_buf(mine), trt_buf(mine), trt_int(0)};
    assert_int_equal(trt_launch(k, 1, 65536, 1, ok, 4), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_last_error(dev), "grid (1, 65536, 1) of 'vadd' is larger than a GPU launches (limits "
                                                "are 2147483647, 65535, 65535)"));
    assert_int_equal(trt_launch(k, 1, 1, 65536, ok, 4), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_launch(k, 2147483648u, 1, 1, ok, 4), TRT_ERR_INVALID_ARGUMENT);
    OK(trt_launch(k, 1, 2, 3, ok, 4)); /* n = 0: every program masked off */
    OK(trt_free(dev, mine));
    trt_close(other);
    drop(&p);
}

/* A kernel whose loop never ends stops at the time limit of the CPU and
 * emulator devices with an error naming the loop; the GPU refuses a limit. */
static void test_time_limit(void **state) {
    (void)state;
    static const char spin[] = "kernel spin(x: *i32) {\n"
                               "    var i = load(x);\n"
                               "    while i >= 0 {\n"
                               "        i = i * 1;\n"
                               "    }\n"
                               "    store(x, i);\n"
                               "}\n";
    assert_int_equal(trt_set_time_limit(dev, -1), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_set_time_limit(NULL, 1), TRT_ERR_INVALID_ARGUMENT);
    if (kind == TRT_DEVICE_CUDA) {
        assert_int_equal(trt_set_time_limit(dev, 1), TRT_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(trt_last_error(dev), "has no time limit for launches"));
        OK(trt_set_time_limit(dev, 0));
        return;
    }
    prog p;
    trt_kernel *k = compile_text(&p, "spin.tile", spin, "spin", NULL, 0);
    int32_t zero = 0;
    trt_buffer b = upload(&zero, sizeof zero);
    OK(trt_set_time_limit(dev, 0.2));
    trt_arg a[] = {trt_buf(b)};
    assert_int_equal(trt_launch(k, 1, 1, 1, a, 1), TRT_ERR_LAUNCH);
    if (kind == TRT_DEVICE_CPU)
        assert_non_null(strstr(trt_last_error(dev), "spin.tile:3:5: error: in kernel 'spin', program (0, 0, 0): the "
                                                    "launch ran past its time limit of 0.2 s (trt_set_time_limit), here"));
    else
        assert_non_null(strstr(trt_last_error(dev), "the launch ran past its time limit of 0.2 s (trt_set_time_limit)"));
    OK(trt_set_time_limit(dev, 0));
    OK(trt_free(dev, b));
    drop(&p);
}

/* ---- modules built ahead of time ------------------------------------------- */

/* Writes a module the way `tilec -o FILE` does: the code and its sidecar.
 * False (and says so) when a cubin cannot be made for want of ptxas. */
static bool build_module(const char *path, tilec_emit emit, const char *arch) {
    tilec_options o;
    tilec_options_init(&o);
    o.emit = emit;
    o.arch = arch;
    o.sidecar = true;
    tilec_output out;
    tilec_status st = tilec_compile("vadd.tile", vadd_src, strlen(vadd_src), &o, &out);
    if (st == TILEC_ERR_TOOL && strstr(out.diagnostics, "ptxas") && kind == TRT_DEVICE_CPU) {
        print_message("SKIPPED: a cubin for %s: %s", arch, out.diagnostics);
        tilec_output_free(&out);
        return false;
    }
    if (st != TILEC_OK) fail_msg("tilec: %s", out.diagnostics);
    char side[600];
    snprintf(side, sizeof side, "%s.tir", path);
    FILE *f = fopen(path, "wb"), *s = fopen(side, "wb");
    assert_non_null(f);
    assert_non_null(s);
    assert_int_equal(fwrite(out.data, 1, out.size, f), out.size);
    assert_int_equal(fwrite(out.sidecar, 1, strlen(out.sidecar), s), strlen(out.sidecar));
    fclose(f), fclose(s);
    tilec_output_free(&out);
    return true;
}

static void run_loaded_vadd(trt_module *m) {
    trt_kernel *k;
    OK(trt_get_kernel(m, "vadd", &k));
    int n = 5000;
    float *x = rand_f32s(n), *y = rand_f32s(n), *out = poison_f32s(n);
    size_t bytes = 4 * (size_t)n;
    trt_buffer bx = upload(x, bytes), by = upload(y, bytes), bo = upload(out, bytes);
    trt_arg a[4] = {trt_buf(bx), trt_buf(by), trt_buf(bo), trt_int(n)};
    launch(k, cdiv(n, 1024), 1, 1, a, 4);
    download(bo, out, bytes);
    for (int i = 0; i < n; i++) assert_true(out[i] == x[i] + y[i]);
    trt_free(dev, bx), trt_free(dev, by);
    free(x), free(y), free(out);
}

/* PTX runs on any GPU at least as new as its arch; machine code only on its
 * own generation, and the runtime says so before the driver would. */
static void test_load_prebuilt_modules(void **state) {
    (void)state;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[512];
    const char *own = kind == TRT_DEVICE_CUDA ? trt_device_arch(dev) : "sm_80";
    assert_true(kind == TRT_DEVICE_CUDA ? !strncmp(own, "sm_", 3) : !strcmp(trt_device_arch(dev), ""));
    struct { tilec_emit emit; const char *arch; } cases[] = {{TILEC_EMIT_PTX, "sm_80"}, {TILEC_EMIT_CUBIN, own},
                                                             {TILEC_EMIT_CUBIN, "sm_80"}};
    for (size_t c = 0; c < 3; c++) {
        snprintf(path, sizeof path, "%s/tilec-devtest-%d-%zu.%s", tmp, (int)getpid(), c,
                 cases[c].emit == TILEC_EMIT_PTX ? "ptx" : "cubin");
        if (!build_module(path, cases[c].emit, cases[c].arch)) continue;
        trt_module *m = NULL;
        trt_status st = trt_load(dev, path, &m);
        if (kind == TRT_DEVICE_EMU) { /* it runs LLVM IR, which a prebuilt module lacks */
            assert_int_equal(st, TRT_ERR_INVALID_ARGUMENT);
            assert_null(m);
            assert_non_null(strstr(trt_last_error(dev), "compiled with trt_compile"));
            char side[600];
            snprintf(side, sizeof side, "%s.tir", path);
            remove(path), remove(side);
            continue;
        }
        bool runs = kind == TRT_DEVICE_CPU || cases[c].emit == TILEC_EMIT_PTX ||
                    (!strcmp(cases[c].arch, own) || (!strncmp(own, "sm_8", 4) && !strcmp(cases[c].arch, "sm_80")));
        if (runs) {
            if (st != TRT_OK) fail_msg("loading %s: %s", path, trt_last_error(dev));
            run_loaded_vadd(m);
            trt_module_free(m);
        } else {
            assert_int_equal(st, TRT_ERR_ARCH);
            assert_null(m);
            assert_non_null(strstr(trt_last_error(dev), "cannot run on this GPU"));
            print_message("as expected on %s: %s\n", own, trt_last_error(dev));
        }
        char side[600];
        snprintf(side, sizeof side, "%s.tir", path);
        remove(path), remove(side);
    }
}

/* ---- memory from elsewhere ------------------------------------------------- */

/* Memory the runtime did not allocate (here: the middle of a buffer, by its
 * address, as another library would hand it over) works as a buffer, is
 * bounds-checked against the driver's allocation on the GPU, and is not
 * freed by trt_free. */
static void test_wrapped_memory(void **state) {
    (void)state;
    prog p;
    tilec_define d = {"BLOCK", 64};
    trt_kernel *k = compile_text(&p, "vadd.tile", vadd_src, "vadd", &d, 1);
    enum { N = 300, SKIP = 16 };
    float *x = rand_f32s(N), *y = rand_f32s(N), *out = poison_f32s(N + 2 * SKIP);
    trt_buffer bx = upload(x, 4 * N), by = upload(y, 4 * N), big = upload(out, 4 * (N + 2 * SKIP)), mid;
    uint64_t base = 0;
    OK(trt_buffer_ptr(dev, big, &base));
    assert_true(base != 0 && base % 16 == 0);
    OK(trt_wrap(dev, base + 4 * SKIP, 4 * N, &mid));
    trt_arg a[4] = {trt_buf(bx), trt_buf(by), trt_buf(mid), trt_int(N)};
    launch(k, cdiv(N, 64), 1, 1, a, 4);
    OK(trt_free(dev, mid)); /* forgets it; the memory stays big's */
    assert_int_equal(trt_free(dev, mid), TRT_ERR_INVALID_HANDLE);
    download(big, out, 4 * (N + 2 * SKIP));
    for (int i = 0; i < N + 2 * SKIP; i++) {
        float want = i >= SKIP && i < SKIP + N ? x[i - SKIP] + y[i - SKIP] : NAN;
        if (!same_f32(out[i], want)) fail_msg("wrapped: out[%d] = %g, want %g", i, out[i], want);
    }
    trt_buffer w;
    assert_int_equal(trt_wrap(dev, 0, 16, &w), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_wrap(dev, base, 0, &w), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_wrap(dev, base, 16, NULL), TRT_ERR_INVALID_ARGUMENT);
    if (kind == TRT_DEVICE_CUDA) {
        OK(trt_buffer_ptr(dev, bx, &base));
        assert_int_equal(trt_wrap(dev, base + 16, 4 * N, &w), TRT_ERR_INVALID_ARGUMENT); /* 16 bytes too long */
        assert_non_null(strstr(trt_last_error(dev), "past the end"));
        assert_int_equal(trt_wrap(dev, (uint64_t)(uintptr_t)x, 16, &w), TRT_ERR_INVALID_ARGUMENT); /* host memory */
        assert_non_null(strstr(trt_last_error(dev), "not device memory"));
        assert_int_equal(trt_wrap(dev, 0x1000, 16, &w), TRT_ERR_INVALID_ARGUMENT); /* nothing at all */
    }
    uint64_t none;
    assert_int_equal(trt_buffer_ptr(dev, mid, &none), TRT_ERR_INVALID_HANDLE);
    trt_free(dev, bx), trt_free(dev, by);
    free(x), free(y), free(out);
    drop(&p);
}

/* ---- the disk cache (TILEC_CACHE_DIR) -------------------------------------- */

/* out[0] of `src`'s vadd compiled on a fresh device (so an empty memory
 * cache), for x = 5, y = 3: 8 if it adds, 2 if it subtracts. */
static float first_result(const char *src) {
    trt_device *d;
    char why[512];
    OK(trt_open(kind, &d, why, sizeof why));
    trt_module *m;
    if (trt_compile(d, "cached.tile", src, strlen(src), NULL, &m) != TRT_OK) fail_msg("%s", trt_last_error(d));
    float out = vadd_first(d, m);
    trt_module_free(m);
    trt_close(d);
    return out;
}

/* The names in dir, sorted, one string ("a b c"); its count in *n. */
static void list_dir(const char *dir, char *names, size_t size, int *n) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls %s | sort | tr '\\n' ' '", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t got = fread(names, 1, size - 1, p);
    names[got] = 0;
    pclose(p);
    *n = 0;
    for (char *s = names; *s; s++) *n += *s == ' ';
}

static void copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    assert_non_null(a);
    assert_non_null(b);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0) assert_int_equal(fwrite(buf, 1, n, b), n);
    fclose(a), fclose(b);
}

/* Modules go to disk; a fresh device reads them back (shown by planting the
 * subtracting kernel's entry under the adding one's key); a damaged entry
 * is compiled afresh; without TILEC_CACHE_DIR nothing is read. */
static void test_disk_cache(void **state) {
    (void)state;
    char dir[] = "/tmp/tilec-cache-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("TILEC_CACHE_DIR", dir, 1);
    int per_module = kind != TRT_DEVICE_CPU ? 2 : 1; /* .tir (+ .cubin, or the emulator's .ll) */
    char names[1024], add_names[1024];
    int n;
    assert_true(first_result(vadd_src) == 8);
    list_dir(dir, add_names, sizeof add_names, &n);
    assert_int_equal(n, per_module);
    assert_true(first_result(vsub_as_vadd_src) == 2);
    list_dir(dir, names, sizeof names, &n);
    assert_int_equal(n, 2 * per_module);
    /* the subtracting entry's key: the name that is not the adding one's */
    char add_key[17] = "", sub_key[17] = "";
    memcpy(add_key, add_names, 16);
    for (char *s = names; *s; s += strcspn(s, " ") + 1)
        if (strncmp(s, add_key, 16)) memcpy(sub_key, s, 16);
    assert_true(sub_key[0] != 0);
    const char *exts[2] = {"tir", kind == TRT_DEVICE_EMU ? "ll" : "cubin"};
    for (int e = 0; e < per_module; e++) {
        char from[600], to[600];
        snprintf(from, sizeof from, "%s/%s.%s", dir, sub_key, exts[e]);
        snprintf(to, sizeof to, "%s/%s.%s", dir, add_key, exts[e]);
        copy_file(from, to);
    }
    assert_true(first_result(vadd_src) == 2); /* read from disk: the planted entry */

    char tir[600];
    snprintf(tir, sizeof tir, "%s/%s.tir", dir, add_key);
    FILE *f = fopen(tir, "wb");
    fputs("kernel @vadd(garbage", f);
    fclose(f);
    assert_true(first_result(vadd_src) == 8); /* damaged: compiled afresh, and rewritten */
    assert_true(first_result(vadd_src) == 8);

    unsetenv("TILEC_CACHE_DIR");
    for (int e = 0; e < per_module; e++) {
        char from[600], to[600];
        snprintf(from, sizeof from, "%s/%s.%s", dir, sub_key, exts[e]);
        snprintf(to, sizeof to, "%s/%s.%s", dir, add_key, exts[e]);
        copy_file(from, to);
    }
    assert_true(first_result(vadd_src) == 8); /* no cache dir: not read */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}


/* ---- misuse on this device ------------------------------------------------ */

static void test_misuse_is_an_error(void **state) {
    (void)state;
    prog p;
    tilec_define d = {"BLOCK", 64};
    trt_kernel *k = compile_text(&p, "vadd.tile", vadd_src, "vadd", &d, 1), *none = NULL;
    trt_buffer b;
    OK(trt_alloc(dev, 256, &b));
    trt_arg good[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_int(64)};
    OK(trt_launch(k, 1, 1, 1, good, 4));
    OK(trt_sync(dev));

    assert_int_equal(trt_launch(k, 1, 1, 1, good, 3), TRT_ERR_ARGUMENTS);
    assert_non_null(strstr(trt_last_error(dev), "takes 4 arguments, 3 given"));
    trt_arg wrong_kind[4] = {trt_buf(b), trt_int(0), trt_buf(b), trt_int(64)};
    assert_int_equal(trt_launch(k, 1, 1, 1, wrong_kind, 4), TRT_ERR_ARGUMENTS);
    assert_non_null(strstr(trt_last_error(dev), "('y') of 'vadd' must be a buffer"));
    trt_arg float_for_int[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_float(64)};
    assert_int_equal(trt_launch(k, 1, 1, 1, float_for_int, 4), TRT_ERR_ARGUMENTS);
    trt_arg too_big[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_int(1ll << 40)};
    assert_int_equal(trt_launch(k, 1, 1, 1, too_big, 4), TRT_ERR_ARGUMENTS);
    trt_arg misaligned[4] = {trt_buf_at(b, 4), trt_buf(b), trt_buf(b), trt_int(60)};
    assert_int_equal(trt_launch(k, 1, 1, 1, misaligned, 4), TRT_ERR_ARGUMENTS);
    assert_non_null(strstr(trt_last_error(dev), "16-byte aligned"));
    assert_int_equal(trt_launch(k, 0, 1, 1, good, 4), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_get_kernel(p.mod, "vsub", &none), TRT_ERR_NOT_FOUND);
    assert_null(none);
    assert_non_null(strstr(trt_last_error(dev), "no kernel named 'vsub'"));

    /* a kernel that stores past its buffer: the error names the parameter
     * and the .tile line of the store (vadd_src's line 4; the GPU cannot
     * say which) */
    if (kind != TRT_DEVICE_CUDA) {
        trt_buffer big;
        OK(trt_alloc(dev, 512, &big));
        float zeros[128] = {0};
        OK(trt_write(dev, big, 0, zeros, sizeof zeros));
        OK(trt_write(dev, b, 0, zeros, 256));
        trt_arg past[4] = {trt_buf(big), trt_buf(big), trt_buf(b), trt_int(128)};
        assert_int_equal(trt_launch(k, 2, 1, 1, past, 4), TRT_ERR_LAUNCH);
        const char *said = trt_last_error(dev);
        if (!strstr(said, kind == TRT_DEVICE_CPU ? "buffer passed as 'out'" : "(parameter 'out')"))
            fail_msg("the out-of-bounds error does not name the parameter: %s", said);
        if (!strstr(said, "vadd.tile:4:")) fail_msg("the out-of-bounds error does not name the .tile line: %s", said);
        OK(trt_free(dev, big));
    }

    float host[64];
    assert_int_equal(trt_read(dev, b, 8, host, 256), TRT_ERR_INVALID_ARGUMENT); /* past the end */
    OK(trt_free(dev, b));
    assert_int_equal(trt_free(dev, b), TRT_ERR_INVALID_HANDLE);
    assert_int_equal(trt_read(dev, b, 0, host, 4), TRT_ERR_INVALID_HANDLE);
    assert_int_equal(trt_launch(k, 1, 1, 1, good, 4), TRT_ERR_INVALID_HANDLE);
    /* the launch wraps the lookup's message in its own */
    assert_non_null(strstr(trt_last_error(dev), "argument 0 ('x') of 'vadd': buffer handle 0x"));
    assert_non_null(strstr(trt_last_error(dev), "is not a live buffer of this device (freed?)"));

    /* a compile error names the line */
    trt_module *bad = NULL;
    const char *src = "kernel k(x: *f32) {\n    store(x, y);\n}\n";
    assert_int_equal(trt_compile(dev, "bad.tile", src, strlen(src), NULL, &bad), TRT_ERR_COMPILE);
    assert_null(bad);
    assert_non_null(strstr(trt_last_error(dev), "bad.tile:2:14: error:"));
    drop(&p);
}


/* Closing the device while a module is alive: its kernels refuse to run.
 * Runs last, on a device of its own. */
static void test_launch_after_close(void **state) {
    (void)state;
    trt_device *mine;
    char why[512];
    OK(trt_open(kind, &mine, why, sizeof why));
    trt_module *mod;
    assert_int_equal(trt_compile(mine, "vadd.tile", vadd_src, strlen(vadd_src), NULL, &mod), TRT_OK);
    trt_kernel *k;
    assert_int_equal(trt_get_kernel(mod, "vadd", &k), TRT_OK);
    trt_buffer b;
    assert_int_equal(trt_alloc(mine, 64, &b), TRT_OK);
    trt_close(mine);
    trt_arg a[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_int(16)};
    assert_int_equal(trt_launch(k, 1, 1, 1, a, 4), TRT_ERR_CLOSED);
    trt_module_free(mod); /* the device's memory goes with its last module */
}


HARNESS_MAIN(
    cmocka_unit_test(test_streams),
    cmocka_unit_test(test_stream_misuse),
    cmocka_unit_test(test_handles_and_grid_limits),
    cmocka_unit_test(test_time_limit),
    cmocka_unit_test(test_load_prebuilt_modules),
    cmocka_unit_test(test_disk_cache),
    cmocka_unit_test(test_wrapped_memory),
    cmocka_unit_test(test_misuse_is_an_error),
    cmocka_unit_test(test_launch_after_close))

