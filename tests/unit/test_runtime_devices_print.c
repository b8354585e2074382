/* test_runtime_devices_print.c - the device tests of print and assert: what
 * kernels print, asserts that hold or are compiled out, and a failing assert
 * (last: on the GPU it loses the context).
 * Runs on each device as the others (device_harness.h):
 * test_runtime_devices_print cpu|cuda|emu. */
#include "device_harness.h"

/* ---- print and assert -------------------------------------------------- */

/* What a launch printed: on the CPU through trt_set_print; on the GPU the
 * driver writes the kernel's printf to stdout (fd 1) when the host waits,
 * so stdout goes to a file around the launch. */
typedef struct captured {
    char *text;
    size_t len;
} captured;

static void capture_line(void *user, const char *text, size_t len) {
    captured *c = user;
    c->text = realloc(c->text, c->len + len + 1);
    assert_non_null(c->text);
    memcpy(c->text + c->len, text, len);
    c->len += len;
    c->text[c->len] = 0;
}

static captured launch_captured(trt_kernel *k, uint32_t gx, const trt_arg *args, size_t nargs) {
    captured c = {calloc(1, 1), 0};
    if (kind != TRT_DEVICE_CUDA) { /* the CPU and the emulator call a print function */
        OK(trt_set_print(dev, capture_line, &c));
        launch(k, gx, 1, 1, args, nargs);
        OK(trt_set_print(dev, NULL, NULL));
        return c;
    }
    assert_int_equal(trt_set_print(dev, capture_line, &c), TRT_ERR_INVALID_ARGUMENT);
    char path[] = "/tmp/tilec-print-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    launch(k, gx, 1, 1, args, nargs);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    FILE *f = fdopen(fd, "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    c.text = realloc(c.text, (size_t)n + 1);
    assert_int_equal(fread(c.text, 1, (size_t)n, f), (size_t)n);
    c.text[n] = 0;
    c.len = (size_t)n;
    fclose(f);
    unlink(path);
    return c;
}

static int compare_lines(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The lines of text sorted, one string: GPU threads print in any order. */
static char *sorted_lines(const char *text) {
    size_t n = 0, len = strlen(text);
    char *copy = strdup(text);
    char **lines = malloc(sizeof(char *) * (len + 1));
    for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) lines[n++] = l;
    qsort(lines, n, sizeof *lines, compare_lines);
    char *out = malloc(len + 2);
    out[0] = 0;
    for (size_t i = 0; i < n; i++) strcat(strcat(out, lines[i]), "\n");
    free(lines);
    free(copy);
    return out;
}

static const char print_src[] =
    "kernel show(x: *f32, n: i32) {\n"
    "    let rows = arange(0, 2);\n"
    "    let cols = arange(0, 4);\n"
    "    let v = load(x + program_id(0) * 8 + rows[:, None] * 4 + cols[None, :]);\n"
    "    print(\"n =\", n, program_id(0), n > 3);\n"
    "    print(\"v[i][j] % 100:\", v, rows[:, None] * 10 + cols[None, :]);\n"
    "    print(\"\");\n"
    "}\n";

/* print's lines for a scalar and a 2-D tile, formatted as
 * docs/language.md says, against the same formats in C. */
static void test_print_scalars_and_tiles(void **state) {
    (void)state;
    enum { PROGRAMS = 2, N = 8 * PROGRAMS };
    float *x = rand_f32s(N);
    prog p;
    trt_kernel *k = compile_text(&p, "print.tile", print_src, "show", NULL, 0);
    trt_buffer bx = upload(x, sizeof(float) * N);
    int n = 5;
    trt_arg args[2] = {trt_buf(bx), trt_int(n)};
    captured got = launch_captured(k, PROGRAMS, args, 2);
    char *want = calloc(1, 4096), line[256];
    for (int pid = 0; pid < PROGRAMS; pid++) {
        snprintf(line, sizeof line, "pid (%d, 0, 0) n = %d %d %s\n", pid, n, pid, n > 3 ? "true" : "false");
        strcat(want, line);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++) {
                snprintf(line, sizeof line, "pid (%d, 0, 0) idx (%d, %d) v[i][j] %% 100: %.9g %d\n", pid, i, j,
                         (double)x[pid * 8 + i * 4 + j], i * 10 + j);
                strcat(want, line);
            }
        snprintf(line, sizeof line, "pid (%d, 0, 0)\n", pid);
        strcat(want, line);
    }
    if (kind == TRT_DEVICE_CPU) { /* the interpreter's order: programs, then elements row-major */
        assert_string_equal(got.text, want);
    } else {
        char *a = sorted_lines(got.text), *b = sorted_lines(want);
        assert_string_equal(a, b);
        free(a), free(b);
    }
    free(got.text), free(want), free(x);
    OK(trt_free(dev, bx));
    drop(&p);
}

static const char assert_src[] =
    "kernel positive(x: *f32, out: *f32, n: i32, const BLOCK: i32 = 64) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let v = load(x + offs, offs < n);\n"
    "    assert(v > 0.0, \"x must be positive\", mask = offs < n);\n"
    "    assert(n > 0, \"n > 0\");\n"
    "    store(out + offs, v * 2.0, offs < n);\n"
    "}\n";

/* Asserts that hold: the kernel runs as if they were not there (masked-off
 * elements, which load as 0, do not count). With no_asserts a false one is
 * not checked. */
static void test_assert_passing_and_compiled_out(void **state) {
    (void)state;
    enum { N = 100 };
    float x[N], out[N + 28];
    for (int i = 0; i < N; i++) x[i] = fabsf(rand_f32()) + 0.5f;
    prog p;
    trt_kernel *k = compile_text(&p, "assert.tile", assert_src, "positive", NULL, 0);
    trt_buffer bx = upload(x, sizeof x), bo;
    for (int i = 0; i < N + 28; i++) out[i] = NAN;
    bo = upload(out, sizeof out);
    trt_arg args[3] = {trt_buf(bx), trt_buf(bo), trt_int(N)};
    launch(k, cdiv(N, 64), 1, 1, args, 3);
    download(bo, out, sizeof out);
    for (int i = 0; i < N; i++) assert_true(out[i] == 2.0f * x[i]);
    for (int i = N; i < N + 28; i++) assert_true(isnan(out[i]));
    drop(&p);
    /* compiled out: a negative element goes through */
    trt_compile_options o = {.no_asserts = true};
    OK(trt_compile(dev, "assert.tile", assert_src, strlen(assert_src), &o, &p.mod));
    p.text = NULL;
    OK(trt_get_kernel(p.mod, "positive", &k));
    x[7] = -1.0f;
    OK(trt_write(dev, bx, 0, x, sizeof x));
    OK(trt_alloc(dev, sizeof out, &bo));
    args[1] = trt_buf(bo);
    launch(k, cdiv(N, 64), 1, 1, args, 3);
    download(bo, out, sizeof out);
    assert_true(out[7] == -2.0f);
    OK(trt_free(dev, bx));
    drop(&p);
}

/* A false assert stops the launch with TRT_ERR_ASSERT and says where. On
 * the CPU the device, its buffers and the kernel stay usable. On the GPU
 * the context is lost for everyone sharing it (the primary context), so
 * this runs last, on a device of its own, and only checks that every
 * later call answers with a status. */
static void test_assert_failing(void **state) {
    (void)state;
    enum { N = 100 };
    trt_device *mine;
    char why[512];
    OK(trt_open(kind, &mine, why, sizeof why));
    float x[N];
    for (int i = 0; i < N; i++) x[i] = fabsf(rand_f32()) + 0.5f;
    x[64 + 3] = -x[64 + 3]; /* program 1, element 3 */
    x[64 + 9] = -x[64 + 9];
    trt_module *mod;
    assert_int_equal(trt_compile(mine, "assert.tile", assert_src, strlen(assert_src), NULL, &mod), TRT_OK);
    trt_kernel *k;
    assert_int_equal(trt_get_kernel(mod, "positive", &k), TRT_OK);
    trt_buffer bx, bo;
    assert_int_equal(trt_alloc(mine, sizeof x, &bx), TRT_OK);
    assert_int_equal(trt_alloc(mine, sizeof x, &bo), TRT_OK);
    assert_int_equal(trt_write(mine, bx, 0, x, sizeof x), TRT_OK);
    trt_arg args[3] = {trt_buf(bx), trt_buf(bo), trt_int(N)};
    trt_status st = trt_launch(k, cdiv(N, 64), 1, 1, args, 3);
    if (st == TRT_OK) st = trt_sync(mine);
    assert_int_equal(st, TRT_ERR_ASSERT);
    const char *msg = trt_last_error(mine);
    if (kind != TRT_DEVICE_CUDA) { /* the emulator reports the line the kernel printed, and goes on */
        assert_string_equal(msg, "assert.tile:4:5: assertion failed: x must be positive "
                                 "(kernel 'positive', program (1, 0, 0), idx (3))\n");
        /* still usable: the input reads back, a good launch runs */
        float back[N];
        assert_int_equal(trt_read(mine, bx, 0, back, sizeof back), TRT_OK);
        assert_memory_equal(back, x, sizeof x);
        x[64 + 3] = -x[64 + 3], x[64 + 9] = -x[64 + 9];
        assert_int_equal(trt_write(mine, bx, 0, x, sizeof x), TRT_OK);
        assert_int_equal(trt_launch(k, cdiv(N, 64), 1, 1, args, 3), TRT_OK);
        assert_int_equal(trt_read(mine, bo, 0, back, sizeof back), TRT_OK);
        for (int i = 0; i < N; i++) assert_true(back[i] == 2.0f * x[i]);
        /* a scalar assert names no element */
        args[2] = trt_int(0);
        assert_int_equal(trt_launch(k, 1, 1, 1, args, 3), TRT_ERR_ASSERT);
        assert_string_equal(trt_last_error(mine),
                            "assert.tile:5:5: assertion failed: n > 0 (kernel 'positive', program (0, 0, 0))\n");
    } else {
        assert_non_null(strstr(msg, "an assert failed in a kernel on the GPU"));
        float back[N];
        assert_int_equal(trt_read(mine, bx, 0, back, sizeof back), TRT_ERR_ASSERT);
        assert_int_equal(trt_launch(k, 1, 1, 1, args, 3) == TRT_OK ? trt_sync(mine) : TRT_ERR_ASSERT, TRT_ERR_ASSERT);
    }
    trt_close(mine);
    trt_module_free(mod);
}


HARNESS_MAIN(
    cmocka_unit_test(test_print_scalars_and_tiles),
    cmocka_unit_test(test_assert_passing_and_compiled_out),
    cmocka_unit_test(test_assert_failing), /* last: on the GPU it loses the context */)

