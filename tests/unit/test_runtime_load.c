/* trt_load: modules tilec built ahead of time, and bad module files.
 * Links only the runtime: loading needs no compiler. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"
#include "tilec_rt.h"

#ifndef VADD_MODULE
#error VADD_MODULE must name the vadd module the build made
#endif

/* Which GPUs code built for an arch runs on, as the CUDA driver decides. */
static void test_arch_compatibility(void **state) {
    (void)state;
    assert_true(rt_arch_compatible(false, "sm_80", "sm_80"));
    assert_true(rt_arch_compatible(false, "sm_80", "sm_86"));
    assert_true(rt_arch_compatible(false, "sm_80", "sm_89"));
    assert_false(rt_arch_compatible(false, "sm_86", "sm_80"));
    assert_false(rt_arch_compatible(false, "sm_80", "sm_90")); /* the H100 runs no sm_80 machine code */
    assert_true(rt_arch_compatible(false, "sm_90", "sm_90"));
    assert_true(rt_arch_compatible(false, "sm_90a", "sm_90"));
    assert_false(rt_arch_compatible(false, "sm_90a", "sm_100"));
    assert_true(rt_arch_compatible(true, "sm_80", "sm_90")); /* PTX: JIT-compiled for newer GPUs */
    assert_true(rt_arch_compatible(true, "sm_90", "sm_120"));
    assert_false(rt_arch_compatible(true, "sm_90", "sm_89"));
    assert_false(rt_arch_compatible(true, "sm_90a", "sm_100"));
    assert_false(rt_arch_compatible(false, "compute_80", "sm_80"));
    assert_false(rt_arch_compatible(false, "sm_8", "sm_80"));
    assert_false(rt_arch_compatible(false, "sm_80x", "sm_80"));
}

/* The sidecar names what the module holds, for the check at load time. */
static void test_sidecar_names_its_target(void **state) {
    (void)state;
    FILE *f = fopen(VADD_MODULE ".tir", "r");
    assert_non_null(f);
    char line[256];
    bool found = false;
    while (fgets(line, sizeof line, f))
        found |= !strncmp(line, "// target: cubin sm_", 20) || !strncmp(line, "// target: ptx sm_", 18);
    fclose(f);
    assert_true(found);
}

static void test_load_and_run_on_cpu(void **state) {
    (void)state;
    trt_device *dev;
    assert_int_equal(trt_open(TRT_DEVICE_CPU, &dev, NULL, 0), TRT_OK);
    trt_module *m;
    if (trt_load(dev, VADD_MODULE, &m) != TRT_OK) fail_msg("%s", trt_last_error(dev));
    trt_kernel *k;
    assert_int_equal(trt_get_kernel(m, "vadd", &k), TRT_OK);
    const char *type;
    assert_string_equal(trt_kernel_param(k, 3, &type), "n");
    assert_string_equal(type, "i32");
    enum { N = 3000 };
    float x[N], y[N], out[N];
    for (int i = 0; i < N; i++) x[i] = (float)i * 0.5f, y[i] = (float)(rand() % 100), out[i] = -1;
    trt_buffer bx, by, bo;
    assert_int_equal(trt_alloc(dev, sizeof x, &bx), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof y, &by), TRT_OK);
    assert_int_equal(trt_alloc(dev, sizeof out, &bo), TRT_OK);
    trt_write(dev, bx, 0, x, sizeof x);
    trt_write(dev, by, 0, y, sizeof y);
    trt_write(dev, bo, 0, out, sizeof out);
    trt_arg args[4] = {trt_buf(bx), trt_buf(by), trt_buf(bo), trt_int(N)};
    assert_int_equal(trt_launch(k, (N + 1023) / 1024, 1, 1, args, 4), TRT_OK);
    trt_read(dev, bo, 0, out, sizeof out);
    for (int i = 0; i < N; i++) assert_true(out[i] == x[i] + y[i]);
    /* the signature is enforced for loaded kernels too */
    assert_int_equal(trt_launch(k, 1, 1, 1, args, 3), TRT_ERR_ARGUMENTS);
    /* and runtime errors name the .tile source the module came from */
    trt_arg oob[4] = {trt_buf(bx), trt_buf(by), trt_buf(bo), trt_int(N + 1)};
    assert_int_equal(trt_launch(k, (N + 1023) / 1024 + 1, 1, 1, oob, 4), TRT_ERR_LAUNCH);
    assert_non_null(strstr(trt_last_error(dev), "vadd.tile:"));
    trt_module_free(m);
    trt_close(dev);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A scratch folder holding k.cubin (not a real one: the sidecar is read
 * and checked first) and the path of its sidecar, k.cubin.tir. */
typedef struct scratch_module {
    char dir[32], mod[64], side[64];
} scratch_module;

static void scratch_module_make(scratch_module *s) {
    snprintf(s->dir, sizeof s->dir, "/tmp/tilec-load-XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->mod, sizeof s->mod, "%s/k.cubin", s->dir);
    snprintf(s->side, sizeof s->side, "%s/k.cubin.tir", s->dir);
    write_file(s->mod, "not really a cubin");
}

static void scratch_module_remove(const scratch_module *s) {
    remove(s->mod);
    remove(s->side);
    remove(s->dir);
}

static void test_bad_modules_are_errors(void **state) {
    (void)state;
    trt_device *dev;
    assert_int_equal(trt_open(TRT_DEVICE_CPU, &dev, NULL, 0), TRT_OK);
    trt_module *m;
    assert_int_equal(trt_load(dev, "/nonexistent/k.cubin", &m), TRT_ERR_NOT_FOUND);
    assert_null(m);
    scratch_module s;
    scratch_module_make(&s);
    const char *mod = s.mod, *side = s.side;
    assert_int_equal(trt_load(dev, mod, &m), TRT_ERR_NOT_FOUND); /* no sidecar */
    assert_non_null(strstr(trt_last_error(dev), "k.cubin.tir"));
    write_file(side, "kernel @k(%x: ptr<f32>) {\n  %a = add %x, %x : ptr<f32>\n  return\n}\n");
    assert_int_equal(trt_load(dev, mod, &m), TRT_ERR_COMPILE); /* fails the verifier */
    assert_non_null(strstr(trt_last_error(dev), "not valid"));
    write_file(side, "\x01\x02 junk {{{");
    assert_int_equal(trt_load(dev, mod, &m), TRT_ERR_COMPILE);
    scratch_module_remove(&s);
    trt_close(dev);
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    text[n] = 0;
    *len = (size_t)n;
    return text;
}

static void write_bytes(const char *path, const char *bytes, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    fclose(f);
}

/* Loads `mod` with its sidecar as written: an error must come with a
 * message; a module that loads anyway (a cut between two kernels, a flip
 * in a comment) is freed. Under ASan this also checks for leaks. */
static void load_survives(trt_device *dev, const char *mod, const char *what, size_t at) {
    trt_module *m = NULL;
    trt_status st = trt_load(dev, mod, &m);
    if (st == TRT_OK) {
        assert_non_null(m);
        trt_module_free(m);
        return;
    }
    assert_null(m);
    const char *err = trt_last_error(dev);
    if (!err || !*err) fail_msg("%s at byte %zu: status %d without a message", what, at, (int)st);
}

/* A sidecar cut short or with a byte changed, next to a module file, is
 * an error with a message (or, where the change leaves valid IR, a
 * module), never a crash or a leak: trt_load reads and verifies the IR
 * before it touches the module image, so this runs on the CPU device
 * (the CUDA device loads the image only after the same checks). */
static void test_corrupt_sidecars_are_errors(void **state) {
    (void)state;
    size_t len;
    char *good = read_all(VADD_MODULE ".tir", &len);
    trt_device *dev;
    assert_int_equal(trt_open(TRT_DEVICE_CPU, &dev, NULL, 0), TRT_OK);
    scratch_module s;
    scratch_module_make(&s);
    const char *mod = s.mod, *side = s.side;

    /* cut at every byte: a cut inside the kernel is an error in reading
     * the sidecar, which names it (not the .tile source its locations
     * refer to); a cut in the header comments may leave a module without
     * kernels */
    const char *ir = strstr(good, "kernel @");
    assert_non_null(ir);
    size_t header = (size_t)(ir - good);
    for (size_t cut = 0; cut < len; cut++) {
        write_bytes(side, good, cut);
        if (cut <= header || cut + 1 == len) { /* the file ends in "}\n" */
            load_survives(dev, mod, "cut", cut);
            continue;
        }
        trt_module *m = NULL;
        trt_status st = trt_load(dev, mod, &m);
        if (st != TRT_ERR_COMPILE) fail_msg("sidecar cut at byte %zu: status %d, not TRT_ERR_COMPILE", cut, (int)st);
        assert_null(m);
        if (!strstr(trt_last_error(dev), "not valid") || !strstr(trt_last_error(dev), "k.cubin.tir:"))
            fail_msg("sidecar cut at byte %zu: %s", cut, trt_last_error(dev));
    }
    /* every byte of the IR changed to each of a few bytes the reader gives meaning to */
    static const char bytes[] = {'%', '<', '}', '9', '\0', (char)0xff};
    char *bad = malloc(len + 1);
    assert_non_null(bad);
    for (size_t at = header; at < len; at++)
        for (size_t b = 0; b < sizeof bytes; b++) {
            memcpy(bad, good, len);
            if (bad[at] == bytes[b]) continue;
            bad[at] = bytes[b];
            write_bytes(side, bad, len);
            load_survives(dev, mod, "changed byte", at);
        }
    free(bad);
    scratch_module_remove(&s);
    free(good);
    trt_close(dev);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arch_compatibility),
        cmocka_unit_test(test_sidecar_names_its_target),
        cmocka_unit_test(test_load_and_run_on_cpu),
        cmocka_unit_test(test_bad_modules_are_errors),
        cmocka_unit_test(test_corrupt_sidecars_are_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
