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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ptx_has_entry_and_vector_loads), cmocka_unit_test(test_tir_specializes_define),
        cmocka_unit_test(test_source_error_status_and_message), cmocka_unit_test(test_bad_options_are_usage_errors),
        cmocka_unit_test(test_null_and_empty_inputs),          cmocka_unit_test(test_concurrent_compiles_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
