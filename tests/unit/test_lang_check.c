/* Unit tests for lang/: typing rules and AST-to-IR, through the parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "lang/check.h"
#include "parser/parser.h"

typedef struct result {
    tc_arena *arena;
    tc_diag diag;
    tc_strbuf ir;
    tir_module *m;
} result;

static void compile(result *r, const char *src_text, lang_define *defs, uint32_t ndefs) {
    r->arena = tc_arena_new();
    tc_diag_init(&r->diag);
    tc_strbuf_init(&r->ir);
    static tc_source src; /* tests run one at a time */
    src = (tc_source){"t.tile", src_text, strlen(src_text)};
    ast_module *ast = parse_module(r->arena, &src, &r->diag);
    lang_options opt = {defs, ndefs, NULL, 0};
    r->m = r->diag.nerrors ? NULL : lang_to_tir(ast, &opt, r->arena, &r->diag);
    if (r->m) {
        assert_true(tir_verify(r->m, "lang", &r->diag));
        tir_print_module(&r->ir, r->m, 0);
    }
}

static void done(result *r) {
    tc_arena_free(r->arena);
    tc_diag_free(&r->diag);
    tc_strbuf_free(&r->ir);
}

static operand typed(tir_elem e) {
    operand o;
    memset(&o, 0, sizeof o);
    o.kind = OPND_CONST;
    o.type = tir_scalar(e);
    return o;
}

static operand literal(operand_kind k) {
    operand o;
    memset(&o, 0, sizeof o);
    o.kind = k;
    return o;
}

static void test_promotion_rules(void **state) {
    (void)state;
    struct { operand a, b; tir_elem want; } cases[] = {
        {typed(TIR_I8), typed(TIR_I32), TIR_I32},   {typed(TIR_I1), typed(TIR_I16), TIR_I16},
        {typed(TIR_I64), typed(TIR_F16), TIR_F16},  {typed(TIR_F16), typed(TIR_BF16), TIR_F32},
        {typed(TIR_F32), typed(TIR_F64), TIR_F64},  {typed(TIR_BF16), typed(TIR_BF16), TIR_BF16},
        {typed(TIR_I8), literal(OPND_INTLIT), TIR_I8}, {literal(OPND_INTLIT), typed(TIR_F16), TIR_F16},
        {typed(TIR_I32), literal(OPND_FLOATLIT), TIR_F32}, {literal(OPND_INTLIT), literal(OPND_INTLIT), TIR_I32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tir_elem got;
        assert_true(lang_common_elem(&cases[i].a, &cases[i].b, &got));
        if (got != cases[i].want)
            fail_msg("case %zu: got %s, want %s", i, tir_elem_name(got), tir_elem_name(cases[i].want));
    }
    operand p = typed(TIR_I32);
    p.type = tir_ptr(TIR_F32);
    tir_elem got;
    assert_false(lang_common_elem(&p, &cases[0].a, &got));
    assert_true(lang_int_fits(127, TIR_I8));
    assert_false(lang_int_fits(128, TIR_I8));
    assert_false(lang_int_fits(2, TIR_I1));
}

static void test_vadd_to_ir(void **state) {
    (void)state;
    result r;
    compile(&r, "kernel vadd(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {\n"
                "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
                "    let mask = offs < n;\n"
                "    store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);\n"
                "}\n",
            NULL, 0);
    assert_int_equal(r.diag.nerrors, 0);
    assert_non_null(r.m);
    assert_int_equal(r.m->funcs->nparams, 4); /* BLOCK is gone */
    assert_non_null(strstr(r.ir.data, "%offs = add"));
    assert_non_null(strstr(r.ir.data, "%mask = lt %offs"));
    assert_non_null(strstr(r.ir.data, "arange 0, 1024 : tile<1024xi32>"));
    assert_non_null(strstr(r.ir.data, "store "));
    done(&r);
}

static void test_define_overrides_default_and_is_marked_used(void **state) {
    (void)state;
    lang_define d = {"B", 32, false};
    result r;
    compile(&r, "kernel k(x: *f32, const B: i32 = 8) { store(x + arange(0, B), 1.0); }", &d, 1);
    assert_true(d.used);
    assert_non_null(strstr(r.ir.data, "arange 0, 32"));
    done(&r);
}

static void test_independent_errors_all_reported_without_cascade(void **state) {
    (void)state;
    result r;
    compile(&r, "kernel k(x: *f32) {\n"
                "    let a = foo(1);\n"          /* 1: unknown function */
                "    let b = a + 1;\n"           /* no second error: a is poisoned */
                "    let c = x * 2;\n"           /* 2 */
                "    let d = arange(0, 3);\n"    /* 3 */
                "}\n"
                "kernel m(n: i32) { n = 1; }\n", /* 4, in another kernel */
            NULL, 0);
    assert_null(r.m);
    assert_int_equal(r.diag.nerrors, 4);
    assert_non_null(strstr(r.diag.out.data, "t.tile:2:13: error: unknown function 'foo'"));
    assert_non_null(strstr(r.diag.out.data, "t.tile:4:15: error: invalid operands to '*': *f32 and i32"));
    assert_non_null(strstr(r.diag.out.data, "t.tile:7:20: error: cannot assign to parameter 'n'"));
    done(&r);
}

static void test_deep_expression_is_an_error_not_a_crash(void **state) {
    (void)state;
    enum { TERMS = 5000 };
    static char src[TERMS * 4 + 64];
    size_t n = (size_t)sprintf(src, "kernel k(x: *i32) { store(x, 1");
    for (int i = 0; i < TERMS; i++) n += (size_t)sprintf(src + n, " + 1");
    sprintf(src + n, "); }");
    result r;
    compile(&r, src, NULL, 0);
    assert_int_equal(r.diag.nerrors, 1);
    assert_non_null(strstr(r.diag.out.data, "expression nested too deeply (limit is 1000)"));
    done(&r);
}

static void test_constant_folding_in_arange_bounds(void **state) {
    (void)state;
    result r;
    compile(&r, "kernel k(x: *f32, const B: i32 = 16) { store(x + arange(B / 2, (B << 2) - B * 2 + 8), 0.0); }",
            NULL, 0);
    assert_int_equal(r.diag.nerrors, 0);
    assert_non_null(strstr(r.ir.data, "arange 8, 40 : tile<32xi32>"));
    done(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promotion_rules),
        cmocka_unit_test(test_vadd_to_ir),
        cmocka_unit_test(test_define_overrides_default_and_is_marked_used),
        cmocka_unit_test(test_independent_errors_all_reported_without_cascade),
        cmocka_unit_test(test_deep_expression_is_an_error_not_a_crash),
        cmocka_unit_test(test_constant_folding_in_arange_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
