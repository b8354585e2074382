/* Unit tests for libtilec's entry point (include/tilec.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tilec.h"

static const char vadd[] =
    "kernel vadd(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);\n"
    "}\n";

static tilec_status compile(const char *src, tilec_emit emit, tilec_output *out) {
    tilec_options opt;
    tilec_options_init(&opt);
    opt.emit = emit;
    return tilec_compile("vadd.tile", src, strlen(src), &opt, out);
}

static void test_ptx_has_entry_and_vector_loads(void **state) {
    (void)state;
    tilec_output out;
    assert_int_equal(compile(vadd, TILEC_EMIT_PTX, &out), TILEC_OK);
    assert_non_null(strstr(out.data, ".visible .entry vadd("));
    assert_non_null(strstr(out.data, "ld.global.v4.f32"));
    assert_string_equal(out.diagnostics, "");
    assert_true(out.ms_frontend > 0);
    tilec_output_free(&out);
}

static void test_tir_specializes_define(void **state) {
    (void)state;
    tilec_define d = {.name = "BLOCK", .value = 256};
    tilec_options opt;
    tilec_options_init(&opt);
    opt.emit = TILEC_EMIT_TIR;
    opt.defines = &d;
    opt.ndefines = 1;
    opt.passes = "none";
    tilec_output out;
    assert_int_equal(tilec_compile("vadd.tile", vadd, strlen(vadd), &opt, &out), TILEC_OK);
    assert_non_null(strstr(out.data, "arange 0, 256 : tile<256xi32>"));
    assert_null(strstr(out.data, "1024"));
    tilec_output_free(&out);
}

static void test_source_error_status_and_message(void **state) {
    (void)state;
    tilec_output out;
    assert_int_equal(compile("kernel k(x: *f32) { let y = x * 2; }\n", TILEC_EMIT_PTX, &out), TILEC_ERR_SOURCE);
    assert_null(out.data);
    assert_non_null(strstr(out.diagnostics, "vadd.tile:1:31: error: invalid operands to '*': *f32 and i32"));
    tilec_output_free(&out);
}

static void test_bad_options_are_usage_errors(void **state) {
    (void)state;
    tilec_options opt;
    tilec_options_init(&opt);
    opt.emit = TILEC_EMIT_PTX;
    opt.arch = "sm_61";
    tilec_output out;
    assert_int_equal(tilec_compile("v.tile", vadd, strlen(vadd), &opt, &out), TILEC_ERR_USAGE);
    assert_non_null(strstr(out.diagnostics, "unknown arch 'sm_61' (--arch;"));
    tilec_output_free(&out);
    opt.arch = NULL;
    opt.num_warps = 6;
    assert_int_equal(tilec_compile("v.tile", vadd, strlen(vadd), &opt, &out), TILEC_ERR_USAGE);
    assert_non_null(strstr(out.diagnostics, "num_warps (--num-warps) must be a power of two"));
    tilec_output_free(&out);
    /* a name given twice: which value was meant is not the compiler's to guess */
    opt.num_warps = 0;
    tilec_define twice[] = {{"BLOCK", 256}, {"BLOCK", 512}};
    opt.defines = twice, opt.ndefines = 2;
    assert_int_equal(tilec_compile("v.tile", vadd, strlen(vadd), &opt, &out), TILEC_ERR_USAGE);
    assert_non_null(strstr(out.diagnostics, "BLOCK is given two values (-D, or a define): 256 and 512"));
    tilec_output_free(&out);
    /* a pass list naming no pass is the options' error, not the compiler's */
    opt.defines = NULL, opt.ndefines = 0;
    opt.emit = TILEC_EMIT_TIR, opt.passes = "simplify,nope";
    assert_int_equal(tilec_compile("v.tile", vadd, strlen(vadd), &opt, &out), TILEC_ERR_USAGE);
    assert_non_null(strstr(out.diagnostics, "passes (--passes): no pass named 'nope'"));
    tilec_output_free(&out);
}

static void test_null_and_empty_inputs(void **state) {
    (void)state;
    tilec_output out;
    tilec_status st = tilec_compile(NULL, NULL, 0, NULL, &out); /* must not crash */
    assert_int_equal(st, out.status);
    assert_non_null(out.diagnostics);
    tilec_output_free(&out);
    /* no kernels: an empty module would load and have nothing to launch */
    assert_int_equal(compile("", TILEC_EMIT_PTX, &out), TILEC_ERR_SOURCE);
    assert_non_null(strstr(out.diagnostics, "no kernel to compile (the file defines none)"));
    tilec_output_free(&out);
    assert_int_equal(compile("// only a comment\n", TILEC_EMIT_TIR, &out), TILEC_ERR_SOURCE);
    tilec_output_free(&out);
    /* a NULL source with a length is the caller's mistake, not an empty file */
    assert_int_equal(tilec_compile("k.tile", NULL, 12, NULL, &out), TILEC_ERR_USAGE);
    assert_non_null(strstr(out.diagnostics, "the source is NULL, with a length of 12"));
    tilec_output_free(&out);
}

/* No global mutable state: concurrent compilations give identical output. */
static void *compile_thread(void *arg) {
    tilec_output *out = arg;
    compile(vadd, TILEC_EMIT_PTX, out);
    return NULL;
}

static void test_concurrent_compiles_agree(void **state) {
    (void)state;
    enum { N = 4 };
    pthread_t th[N];
    tilec_output outs[N];
    for (int i = 0; i < N; i++) assert_int_equal(pthread_create(&th[i], NULL, compile_thread, &outs[i]), 0);
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        assert_int_equal(outs[i].status, TILEC_OK);
        assert_string_equal(outs[i].data, outs[0].data);
    }
    for (int i = 0; i < N; i++) tilec_output_free(&outs[i]);
}

/* Several kernels: each built in an LLVM module of its own on up to `jobs`
 * threads, their PTX merged. The output must not depend on the count, each
 * kernel must be there once, and what the kernels' modules each declare
 * (vprintf, __assertfail, the dynamic shared array) once. */
static const char several[] =
    "kernel first(x: *f32, n: i32) {\n"
    "    let o = arange(0, 128);\n"
    "    assert(load(x + o, o < n) >= 0.0, \"negative\");\n"
    "    print(\"first\", n);\n"
    "    store(x + o, load(x + o, o < n) * 2.0, o < n);\n"
    "}\n"
    "kernel second(x: *f32, n: i32) {\n"
    "    let o = arange(0, 128);\n"
    "    let v = load(x + o, o < n);\n"
    "    print(\"sum\", sum(v, 0));\n"
    "    assert(n > 0, \"empty\");\n"
    "    store(x + o, v - max(v, 0), o < n);\n"
    "}\n"
    "kernel third(a: *f16, b: *f16, c: *f32) {\n"
    "    let r = arange(0, 32);\n"
    "    let acc = dot(load(a + r[:, None] * 32 + r[None, :]), load(b + r[:, None] * 32 + r[None, :]));\n"
    "    store(c + r[:, None] * 32 + r[None, :], acc);\n"
    "}\n"
    "kernel fourth(x: *f32, out: *f32) {\n"
    "    let r = arange(0, 64);\n"
    "    store(out + r, load(x) + cumsum(load(x + r), 0));\n"
    "}\n";

static tilec_status compile_jobs(const char *src, tilec_emit emit, int jobs, tilec_output *out) {
    tilec_options opt;
    tilec_options_init(&opt);
    opt.emit = emit;
    opt.jobs = jobs;
    return tilec_compile("several.tile", src, strlen(src), &opt, out);
}

static size_t count_of(const char *s, const char *what) {
    size_t n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

static void test_jobs_give_the_same_ptx(void **state) {
    (void)state;
    tilec_output one;
    if (compile_jobs(several, TILEC_EMIT_PTX, 1, &one) != TILEC_OK) fail_msg("%s", one.diagnostics);
    static const char *const entries[] = {".entry first(", ".entry second(", ".entry third(", ".entry fourth("};
    for (size_t i = 0; i < 4; i++) assert_int_equal(count_of(one.data, entries[i]), 1);
    for (size_t i = 1; i < 4; i++) assert_true(strstr(one.data, entries[i - 1]) < strstr(one.data, entries[i]));
    assert_int_equal(count_of(one.data, ".version"), 1);
    assert_int_equal(count_of(one.data, ".extern .func __assertfail"), 1);
    assert_int_equal(count_of(one.data, ") vprintf"), 1);
    assert_true(count_of(one.data, "first_$_str") > 0);
    assert_true(count_of(one.data, "second_$_str") > 0);
    static const int jobs[] = {0, 2, 3, 4, 16};
    for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++) {
        tilec_output many;
        assert_int_equal(compile_jobs(several, TILEC_EMIT_PTX, jobs[i], &many), TILEC_OK);
        assert_string_equal(many.data, one.data);
        tilec_output_free(&many);
    }
    tilec_output_free(&one);
}

/* The merged module assembles (kernels' private strings do not clash), with
 * the kernels on one thread or several. */
static void test_jobs_cubin(void **state) {
    (void)state;
    static const int jobs[] = {1, 0};
    for (size_t i = 0; i < 2; i++) {
        tilec_output out;
        tilec_status st = compile_jobs(several, TILEC_EMIT_CUBIN, jobs[i], &out);
        if (st == TILEC_ERR_TOOL && strstr(out.diagnostics, "not found")) {
            print_message("SKIPPED: no assembler (ptxas, libnvJitLink): the merged cubin is not checked\n");
            tilec_output_free(&out);
            return;
        }
        if (st != TILEC_OK) fail_msg("jobs %d: %s", jobs[i], out.diagnostics);
        assert_true(out.size > 4 && !memcmp(out.data,
                                            "\x7f"
                                            "ELF",
                                            4));
        tilec_output_free(&out);
    }
}

static void test_jobs_out_of_range(void **state) {
    (void)state;
    static const int bad[] = {-1, TILEC_MAX_JOBS + 1};
    for (size_t i = 0; i < 2; i++) {
        tilec_output out;
        assert_int_equal(compile_jobs(vadd, TILEC_EMIT_PTX, bad[i], &out), TILEC_ERR_USAGE);
        assert_non_null(strstr(out.diagnostics, "jobs (-j) must be from 0 (one a CPU) to"));
        tilec_output_free(&out);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ptx_has_entry_and_vector_loads),
        cmocka_unit_test(test_tir_specializes_define),
        cmocka_unit_test(test_source_error_status_and_message),
        cmocka_unit_test(test_bad_options_are_usage_errors),
        cmocka_unit_test(test_null_and_empty_inputs),
        cmocka_unit_test(test_concurrent_compiles_agree),
        cmocka_unit_test(test_jobs_give_the_same_ptx),
        cmocka_unit_test(test_jobs_cubin),
        cmocka_unit_test(test_jobs_out_of_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
