/* The runtime API (include/tilec_rt.h) end to end on the CPU device, and
 * its answers to misuse. (test_runtime_devices_* run kernels and misuse
 * through the API on each device, the GPU included.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tilec_rt.h"

static const char vadd_src[] =
    "kernel vadd(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);\n"
    "}\n";

typedef struct fx {
    trt_device *dev;
    trt_module *mod;
    trt_kernel *vadd;
} fx;

static int setup(void **state) {
    static fx f;
    char why[256];
    assert_int_equal(trt_open(TRT_DEVICE_CPU, &f.dev, why, sizeof why), TRT_OK);
    tilec_define d = {.name = "BLOCK", .value = 256};
    trt_compile_options o = {.defines = &d, .ndefines = 1};
    if (trt_compile(f.dev, "vadd.tile", vadd_src, strlen(vadd_src), &o, &f.mod) != TRT_OK)
        fail_msg("%s", trt_last_error(f.dev));
    assert_int_equal(trt_get_kernel(f.mod, "vadd", &f.vadd), TRT_OK);
    *state = &f;
    return 0;
}

static int teardown(void **state) {
    fx *f = *state;
    trt_module_free(f->mod);
    trt_close(f->dev);
    return 0;
}

static void vadd_on(trt_device *dev, trt_kernel *vadd);

static void test_vadd_end_to_end(void **state) {
    fx *f = *state;
    vadd_on(f->dev, f->vadd);
}

/* The same test on the GPU, when this machine has one. */
static void test_vadd_on_cuda(void **state) {
    (void)state;
    char why[512];
    trt_device *dev;
    if (trt_open(TRT_DEVICE_CUDA, &dev, why, sizeof why) != TRT_OK) {
        const char *req = getenv("TILEC_TEST_REQUIRE_CUDA"); /* set by scripts/gpu-check.sh */
        if (req && *req && strcmp(req, "0") != 0) fail_msg("a GPU is required here, but: %s", why);
        print_message("SKIPPED: vadd on CUDA: %s\n", why);
        skip();
    }
    trt_module *mod;
    tilec_define d = {.name = "BLOCK", .value = 256};
    trt_compile_options o = {.defines = &d, .ndefines = 1};
    if (trt_compile(dev, "vadd.tile", vadd_src, strlen(vadd_src), &o, &mod) != TRT_OK)
        fail_msg("%s", trt_last_error(dev));
    trt_kernel *vadd;
    assert_int_equal(trt_get_kernel(mod, "vadd", &vadd), TRT_OK);
    vadd_on(dev, vadd);
    trt_module_free(mod);
    trt_close(dev);
}

static void vadd_on(trt_device *dev, trt_kernel *vadd) {
    struct { trt_device *dev; trt_kernel *vadd; } fs = {dev, vadd}, *f = &fs;
    const int sizes[] = {1, 255, 256, 1000, 5000};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t];
        size_t bytes = sizeof(float) * (size_t)n;
        float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
        for (int i = 0; i < n; i++) x[i] = (float)(rand() % 1000) / 7.0f, y[i] = (float)(rand() % 1000) / -3.0f;
        for (int i = 0; i < n; i++) out[i] = NAN;
        trt_buffer bx, by, bo;
        assert_int_equal(trt_alloc(f->dev, bytes, &bx), TRT_OK);
        assert_int_equal(trt_alloc(f->dev, bytes, &by), TRT_OK);
        assert_int_equal(trt_alloc(f->dev, bytes, &bo), TRT_OK);
        assert_int_equal(trt_write(f->dev, bx, 0, x, bytes), TRT_OK);
        assert_int_equal(trt_write(f->dev, by, 0, y, bytes), TRT_OK);
        assert_int_equal(trt_write(f->dev, bo, 0, out, bytes), TRT_OK); /* poisoned */
        trt_arg args[4] = {trt_buf(bx), trt_buf(by), trt_buf(bo), trt_int(n)};
        if (trt_launch(f->vadd, (uint32_t)(n + 255) / 256, 1, 1, args, 4) != TRT_OK)
            fail_msg("%s", trt_last_error(f->dev));
        assert_int_equal(trt_sync(f->dev), TRT_OK);
        assert_int_equal(trt_read(f->dev, bo, 0, out, bytes), TRT_OK);
        for (int i = 0; i < n; i++)
            if (out[i] != x[i] + y[i]) fail_msg("n=%d: out[%d] = %g, want %g", n, i, out[i], x[i] + y[i]);
        trt_free(f->dev, bx), trt_free(f->dev, by), trt_free(f->dev, bo);
        free(x), free(y), free(out);
    }
}

static void test_signature_is_visible(void **state) {
    fx *f = *state;
    assert_int_equal(trt_kernel_num_params(f->vadd), 4);
    const char *type;
    assert_string_equal(trt_kernel_param(f->vadd, 0, &type), "x");
    assert_string_equal(type, "*f32");
    assert_string_equal(trt_kernel_param(f->vadd, 3, &type), "n");
    assert_string_equal(type, "i32");
    assert_null(trt_kernel_param(f->vadd, 4, &type));
}

static void test_misuse_is_an_error(void **state) {
    fx *f = *state;
    trt_buffer b;
    assert_int_equal(trt_alloc(f->dev, 64, &b), TRT_OK);
    trt_arg three[3] = {trt_buf(b), trt_buf(b), trt_buf(b)};
    assert_int_equal(trt_launch(f->vadd, 1, 1, 1, three, 3), TRT_ERR_ARGUMENTS);
    assert_non_null(strstr(trt_last_error(f->dev), "kernel 'vadd' takes 4 arguments, 3 given"));

    trt_arg wrong_kind[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_float(3.0)};
    assert_int_equal(trt_launch(f->vadd, 1, 1, 1, wrong_kind, 4), TRT_ERR_ARGUMENTS);
    assert_non_null(strstr(trt_last_error(f->dev), "argument 3 ('n') of 'vadd' must be an integer (i32)"));

    trt_arg too_big[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_int(1ll << 40)};
    assert_int_equal(trt_launch(f->vadd, 1, 1, 1, too_big, 4), TRT_ERR_ARGUMENTS);
    assert_non_null(strstr(trt_last_error(f->dev), "does not fit in i32"));

    trt_arg int_for_ptr[4] = {trt_int(0), trt_buf(b), trt_buf(b), trt_int(1)};
    assert_int_equal(trt_launch(f->vadd, 1, 1, 1, int_for_ptr, 4), TRT_ERR_ARGUMENTS);
    assert_non_null(strstr(trt_last_error(f->dev), "must be a buffer (*f32)"));

    trt_arg misaligned[4] = {trt_buf_at(b, 4), trt_buf(b), trt_buf(b), trt_int(1)};
    assert_int_equal(trt_launch(f->vadd, 1, 1, 1, misaligned, 4), TRT_ERR_ARGUMENTS);
    assert_non_null(strstr(trt_last_error(f->dev), "must be 16-byte aligned"));

    trt_kernel *k;
    assert_int_equal(trt_get_kernel(f->mod, "nope", &k), TRT_ERR_NOT_FOUND);
    assert_non_null(strstr(trt_last_error(f->dev), "no kernel named 'nope' in vadd.tile"));

    /* a freed buffer's handle is recognized, not dereferenced */
    assert_int_equal(trt_free(f->dev, b), TRT_OK);
    trt_arg freed[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_int(1)};
    assert_int_equal(trt_launch(f->vadd, 1, 1, 1, freed, 4), TRT_ERR_INVALID_HANDLE);
    assert_int_equal(trt_free(f->dev, b), TRT_ERR_INVALID_HANDLE);
    float tmp[4];
    assert_int_equal(trt_read(f->dev, b, 0, tmp, sizeof tmp), TRT_ERR_INVALID_HANDLE);
    trt_buffer bogus = {12345};
    assert_int_equal(trt_write(f->dev, bogus, 0, tmp, sizeof tmp), TRT_ERR_INVALID_HANDLE);

    trt_buffer small;
    assert_int_equal(trt_alloc(f->dev, 8, &small), TRT_OK);
    assert_int_equal(trt_write(f->dev, small, 4, tmp, 8), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_alloc(f->dev, 0, &b), TRT_ERR_INVALID_ARGUMENT);
    trt_free(f->dev, small);
}

static void test_out_of_bounds_launch_names_the_line(void **state) {
    fx *f = *state;
    trt_buffer b;
    assert_int_equal(trt_alloc(f->dev, 100 * sizeof(float), &b), TRT_OK);
    trt_arg args[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_int(200)};
    assert_int_equal(trt_launch(f->vadd, 1, 1, 1, args, 4), TRT_ERR_LAUNCH);
    assert_non_null(strstr(trt_last_error(f->dev), "vadd.tile:4:"));
    assert_non_null(strstr(trt_last_error(f->dev), "out-of-bounds"));
    trt_free(f->dev, b);
}

static void test_compile_errors_and_devices(void **state) {
    (void)state;
    char why[256];
    trt_device *cuda, *any;
    trt_status st = trt_open(TRT_DEVICE_CUDA, &cuda, why, sizeof why);
    if (st == TRT_OK) { /* a GPU here: auto must pick it */
        assert_int_equal(trt_open(TRT_DEVICE_AUTO, &any, NULL, 0), TRT_OK);
        assert_non_null(strstr(trt_device_name(any), "cuda: "));
        trt_close(any);
        trt_close(cuda);
    } else { /* none: a reason, and auto falls back to the CPU */
        assert_int_equal(st, TRT_ERR_NO_DEVICE);
        assert_null(cuda);
        assert_true(strlen(why) > 0);
        assert_int_equal(trt_open(TRT_DEVICE_AUTO, &any, NULL, 0), TRT_OK);
        assert_string_equal(trt_device_name(any), "cpu (tile IR interpreter)");
        trt_close(any);
    }
    trt_device *d;
    assert_int_equal(trt_open(TRT_DEVICE_CPU, &d, NULL, 0), TRT_OK);
    trt_module *m;
    const char bad[] = "kernel k(x: *f32) { let y = x * 2; }\n";
    assert_int_equal(trt_compile(d, "bad.tile", bad, strlen(bad), NULL, &m), TRT_ERR_COMPILE);
    assert_null(m);
    assert_non_null(strstr(trt_last_error(d), "bad.tile:1:31: error: invalid operands to '*': *f32 and i32"));
    trt_close(d);
}

/* trt_emu_set_arch: the emulator's alone, and only names of GPU archs */
static void test_emu_arch(void **state) {
    (void)state;
    trt_device *d;
    assert_int_equal(trt_open(TRT_DEVICE_CPU, &d, NULL, 0), TRT_OK);
    assert_int_equal(trt_emu_set_arch(d, "sm_90a"), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_last_error(d), "only the emulator device takes an arch"));
    trt_close(d);
    assert_int_equal(trt_emu_set_arch(NULL, "sm_90a"), TRT_ERR_INVALID_ARGUMENT);
    if (trt_open(TRT_DEVICE_EMU, &d, NULL, 0) != TRT_OK) return; /* a runtime without the emulator */
    const char *bad[] = {NULL, "", "sm_9", "sm_90b", "90a", "sm_x0", "sm_90aa", "sm_1000000000000000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(trt_emu_set_arch(d, bad[i]), TRT_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(trt_last_error(d), "is not a GPU arch such as sm_80 or sm_90a"));
    }
    assert_int_equal(trt_emu_set_arch(d, "sm_90a"), TRT_OK);
    assert_int_equal(trt_emu_set_arch(d, "sm_80"), TRT_OK);
    trt_close(d);
}

/* trt_compile_options.kernel: a module of that kernel alone, and a clear
 * error for a name the file does not define. */
static void test_compile_one_kernel(void **state) {
    (void)state;
    static const char two[] = "kernel first(x: *f32) { store(x, 1.0); }\n"
                              "kernel second(x: *f32) { store(x, 2.0); }\n";
    trt_device *d;
    assert_int_equal(trt_open(TRT_DEVICE_CPU, &d, NULL, 0), TRT_OK);
    trt_module *m1, *m2, *bad;
    trt_kernel *k;
    trt_compile_options o = {.kernel = "second"};
    assert_int_equal(trt_compile(d, "two.tile", two, strlen(two), &o, &m2), TRT_OK);
    assert_int_equal(trt_get_kernel(m2, "second", &k), TRT_OK);
    assert_int_equal(trt_get_kernel(m2, "first", &k), TRT_ERR_NOT_FOUND);
    o.kernel = "first"; /* the same source and options otherwise: not the module above */
    assert_int_equal(trt_compile(d, "two.tile", two, strlen(two), &o, &m1), TRT_OK);
    trt_kernel *first;
    assert_int_equal(trt_get_kernel(m1, "second", &k), TRT_ERR_NOT_FOUND);
    assert_int_equal(trt_get_kernel(m1, "first", &first), TRT_OK);
    trt_buffer b;
    float got = 0;
    assert_int_equal(trt_alloc(d, sizeof got, &b), TRT_OK);
    trt_arg arg = trt_buf(b);
    if (trt_launch(first, 1, 1, 1, &arg, 1) != TRT_OK) fail_msg("%s", trt_last_error(d));
    assert_int_equal(trt_read(d, b, 0, &got, sizeof got), TRT_OK);
    assert_true(got == 1.0f);
    o.kernel = "third";
    assert_int_equal(trt_compile(d, "two.tile", two, strlen(two), &o, &bad), TRT_ERR_COMPILE);
    assert_null(bad);
    assert_non_null(strstr(trt_last_error(d), "no kernel named 'third' in two.tile"));
    trt_free(d, b);
    trt_module_free(m1), trt_module_free(m2);
    trt_close(d);
}

static void test_launch_after_close(void **state) {
    (void)state;
    trt_device *d;
    assert_int_equal(trt_open(TRT_DEVICE_CPU, &d, NULL, 0), TRT_OK);
    trt_module *m;
    assert_int_equal(trt_compile(d, "vadd.tile", vadd_src, strlen(vadd_src), NULL, &m), TRT_OK);
    trt_module *again;
    assert_int_equal(trt_compile(d, "vadd.tile", vadd_src, strlen(vadd_src), NULL, &again), TRT_OK); /* cached */
    trt_kernel *k;
    assert_int_equal(trt_get_kernel(m, "vadd", &k), TRT_OK);
    trt_buffer b;
    assert_int_equal(trt_alloc(d, 4096, &b), TRT_OK);
    trt_close(d); /* the modules keep what they need alive */
    trt_arg args[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_int(1)};
    assert_int_equal(trt_launch(k, 1, 1, 1, args, 4), TRT_ERR_CLOSED);
    trt_module_free(again);
    trt_module_free(m);
}

int main(void) {
    srand(99);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vadd_end_to_end),      cmocka_unit_test(test_vadd_on_cuda),
        cmocka_unit_test(test_signature_is_visible),
        cmocka_unit_test(test_misuse_is_an_error),   cmocka_unit_test(test_out_of_bounds_launch_names_the_line),
        cmocka_unit_test(test_compile_errors_and_devices), cmocka_unit_test(test_launch_after_close),
        cmocka_unit_test(test_emu_arch),             cmocka_unit_test(test_compile_one_kernel),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
