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
    tc_source src; /* the module points at it: it lives as long as the result */
    tc_diag diag;
    tc_strbuf ir;
    tir_module *m;
} result;

static void compile_opts(result *r, const char *src_text, const tilec_options *opt) {
    r->arena = tc_arena_new();
    tc_diag_init(&r->diag);
    tc_strbuf_init(&r->ir);
    r->src = (tc_source){"t.tile", src_text, strlen(src_text)};
    ast_module *ast = parse_module(r->arena, &r->src, &r->diag);
    r->m = r->diag.nerrors ? NULL : lang_to_tir(ast, opt, r->arena, &r->diag);
    if (r->m) {
        assert_true(tir_verify(r->m, "lang", &r->diag));
        tir_print_module(&r->ir, r->m, 0);
    }
}

static void compile(result *r, const char *src_text, const tilec_define *defs, size_t ndefs) {
    tilec_options opt = {.defines = defs, .ndefines = ndefs};
    compile_opts(r, src_text, &opt);
}

static void expect_diag(const result *r, const char *text) {
    if (!r->diag.out.data || !strstr(r->diag.out.data, text))
        fail_msg("expected \"%s\" in:\n%s", text, r->diag.out.data ? r->diag.out.data : "(no diagnostics)");
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

static void test_define_overrides_default(void **state) {
    (void)state;
    tilec_define d = {.name = "B", .value = 32};
    result r;
    compile(&r, "kernel k(x: *f32, const B: i32 = 8) { store(x + arange(0, B), 1.0); }", &d, 1);
    assert_non_null(r.m);
    assert_non_null(strstr(r.ir.data, "arange 0, 32"));
    done(&r);
}

static void test_define_no_kernel_takes_is_an_error(void **state) {
    (void)state;
    tilec_define d[] = {{.name = "B", .value = 32}, {.name = "NOPE", .value = 1}};
    result r;
    compile(&r, "kernel k(x: *f32, const B: i32 = 8) { store(x + arange(0, B), 1.0); }", d, 2);
    assert_null(r.m);
    expect_diag(&r, "error: NOPE (-D, or a define): no kernel compiled here has a const parameter of that name");
    assert_null(strstr(r.diag.out.data, "-D B"));
    done(&r);
}

/* With one kernel asked for, a define another kernel of the file takes is
 * accepted (the runtime passes a stdlib file's defines to each kernel it
 * compiles alone); a name no kernel of the file takes is still an error. */
static void test_define_for_a_kernel_not_compiled(void **state) {
    (void)state;
    static const char two[] = "kernel k(x: *f32, const B: i32 = 8) { store(x + arange(0, B), 1.0); }\n"
                              "kernel other(x: *f32, const C: i32 = 4) { store(x + arange(0, C), 2.0); }\n";
    tilec_define d[] = {{.name = "B", .value = 32}, {.name = "C", .value = 16}, {.name = "NOPE", .value = 1}};
    tilec_options opt = {.defines = d, .ndefines = 2, .kernel = "k"};
    result r;
    compile_opts(&r, two, &opt);
    assert_non_null(r.m);
    assert_non_null(strstr(r.ir.data, "arange 0, 32"));
    assert_null(strstr(r.ir.data, "@other"));
    done(&r);
    opt.ndefines = 3;
    compile_opts(&r, two, &opt);
    assert_null(r.m);
    expect_diag(&r, "error: NOPE (-D, or a define): no kernel compiled here has a const parameter of that name");
    assert_null(strstr(r.diag.out.data, "error: C "));
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

static const tir_op *last_op(const tir_func *f) { return f->body->last; }

static void test_func_signature_names_locs_and_options(void **state) {
    (void)state;
    result r;
    tilec_options opt = {.num_warps = 8};
    compile_opts(&r, "// a comment\n"
                     "kernel k(x: *f16, const B: i32 = 16, n: i64) {\n"
                     "    let v = load(x + arange(0, B));\n"
                     "    store(x + arange(0, B), v);\n"
                     "}\n",
                 &opt);
    assert_non_null(r.m);
    assert_string_equal(r.m->source_name, "t.tile");
    const tir_func *f = r.m->funcs;
    assert_string_equal(f->name, "k");
    assert_int_equal(f->num_warps, 8);
    assert_int_equal(f->loc.line, 2);
    assert_int_equal(f->loc.col, 8);
    assert_int_equal(f->nparams, 2);
    assert_string_equal(f->params[0]->name, "x");
    assert_int_equal(f->params[0]->type.elem, TIR_PTR);
    assert_int_equal(f->params[0]->type.pointee, TIR_F16);
    assert_string_equal(f->params[1]->name, "n");
    assert_int_equal(f->params[1]->type.elem, TIR_I64);
    assert_int_equal(last_op(f)->code, TIR_OP_RETURN);
    /* the load has no mask, so no second or third operand; it sits on line 3 */
    const tir_op *load = NULL;
    for (const tir_op *op = f->body->first; op; op = op->next)
        if (op->code == TIR_OP_LOAD) load = op;
    assert_non_null(load);
    assert_int_equal(load->noperands, 1);
    assert_int_equal(load->loc.line, 3);
    assert_int_equal(load->loc.col, 13);
    assert_string_equal(load->results[0]->name, "v");
    done(&r);
}

static void test_pointer_minus_int_is_addptr_of_negation(void **state) {
    (void)state;
    result r;
    compile(&r, "kernel k(x: *f32, i: i8) { store(x - i, 1.0); }", NULL, 0);
    assert_non_null(r.m);
    assert_non_null(strstr(r.ir.data, "= neg %i : i8"));
    assert_non_null(strstr(r.ir.data, "= addptr %x, %"));
    done(&r);
}

static void test_float_literal_arithmetic_folds_and_adapts(void **state) {
    (void)state;
    result r;
    compile(&r, "kernel k(x: *f16) { let o = arange(0, 8); store(x + o, load(x + o) * (1.0 / 4.0) + 7 / 2); }",
            NULL, 0);
    assert_non_null(r.m);
    assert_non_null(strstr(r.ir.data, "const 0.25 : f16"));
    assert_non_null(strstr(r.ir.data, "const 3.0 : f16")); /* 7 / 2 is integer division */
    assert_null(strstr(r.ir.data, "cast"));
    assert_null(strstr(r.ir.data, "f32"));
    done(&r);
}

static void test_integer_division_folds_toward_zero(void **state) {
    (void)state;
    result r;
    compile(&r, "kernel k(x: *f32) { store(x + arange(-7 / 2, 6 + -7 % 2), 0.0); }", NULL, 0);
    assert_non_null(r.m);
    assert_non_null(strstr(r.ir.data, "arange -3, 5 : tile<8xi32>"));
    done(&r);
}

static void test_literal_next_to_const_param_must_fit(void **state) {
    (void)state;
    result r;
    compile(&r, "kernel k(x: *f32, const B: i8 = 4) {\n    let a = B + 300;\n}\n", NULL, 0);
    assert_null(r.m);
    assert_int_equal(r.diag.nerrors, 1);
    expect_diag(&r, "t.tile:2:17: error: integer literal 300 does not fit in i8");
    done(&r);
}

static void test_only_kernel_picks_one_and_names_a_missing_one(void **state) {
    (void)state;
    const char *two = "kernel a(x: *f32) { store(x, 1.0); }\nkernel b(x: *f32) { store(x, 2.0); }\n";
    result r;
    tilec_options opt = {.kernel = "b", .num_warps = 4};
    compile_opts(&r, two, &opt);
    assert_non_null(r.m);
    assert_int_equal(r.m->nfuncs, 1);
    assert_string_equal(r.m->funcs->name, "b");
    done(&r);
    opt.kernel = "zz";
    compile_opts(&r, two, &opt);
    assert_null(r.m);
    expect_diag(&r, "no kernel named 'zz' in t.tile");
    done(&r);
}

static void test_arange_names_the_runtime_parameter(void **state) {
    (void)state;
    result r;
    compile(&r, "kernel k(x: *f32, n: i32) {\n    let a = arange(0, n);\n}\n", NULL, 0);
    assert_null(r.m);
    expect_diag(&r, "t.tile:2:23: error: arange bounds must be compile-time constants; 'n' is a runtime parameter");
    done(&r);
}

static void count_named(tir_op *op, void *ctx) {
    for (uint32_t i = 0; i < op->nresults; i++)
        if (op->results[i]->name && !strcmp(op->results[i]->name, "acc")) ++*(int *)ctx;
}

static void test_assigned_values_keep_the_var_name(void **state) {
    (void)state;
    result r;
    compile(&r, "kernel k(x: *f32) { var acc = load(x); acc = acc + 1.0; acc = acc * 2.0; store(x, acc); }", NULL,
            0);
    assert_non_null(r.m);
    int n = 0;
    tir_walk(r.m->funcs, count_named, &n);
    assert_int_equal(n, 3);
    done(&r);
}

static void test_unused_define_not_reported_after_errors_and_redefinition_has_a_note(void **state) {
    (void)state;
    tilec_define d = {.name = "NOPE", .value = 1};
    result r;
    compile(&r, "kernel k(x: *f32) {\n    let v = 1;\n    var v = 2;\n}\n", &d, 1);
    assert_null(strstr(r.diag.out.data, "-D NOPE"));
    assert_null(r.m);
    expect_diag(&r, "t.tile:3:9: error: redefinition of 'v'");
    expect_diag(&r, "t.tile:2:9: note: 'v' was first defined here");
    done(&r);
}

static void test_scalar_mask_and_other_broadcast(void **state) {
    (void)state;
    result r;
    compile(&r, "kernel k(x: *f16, n: i32) { let o = arange(0, 4); store(x + o, load(x + o, n > 0, other = 2)); }",
            NULL, 0);
    assert_non_null(r.m);
    assert_non_null(strstr(r.ir.data, "splat %0 : tile<4xi1>") || strstr(r.ir.data, ": tile<4xi1>"));
    assert_non_null(strstr(r.ir.data, "const 2.0 : f16"));
    const tir_op *load = NULL;
    for (const tir_op *op = r.m->funcs->body->first; op; op = op->next)
        if (op->code == TIR_OP_LOAD) load = op;
    assert_non_null(load);
    assert_int_equal(load->noperands, 3);
    assert_int_equal(load->operands[1]->type.rank, 1);
    assert_int_equal(load->operands[2]->type.elem, TIR_F16);
    assert_int_equal(load->operands[2]->type.rank, 1);
    done(&r);
}

/* Appends fmt, whose one or two %d both take i. */
static void append(tc_strbuf *b, const char *fmt, int i) { tc_strbuf_printf(b, fmt, i, i); }

static void test_names_end_with_their_loop_body(void **state) {
    (void)state;
    result r;
    compile(&r, "kernel k(x: *f32) { var s = 0; for i in range(4) { let t = i; s = s + t; } let t = 2; let i = s; }",
            NULL, 0);
    assert_int_equal(r.diag.nerrors, 0);
    assert_non_null(r.m);
    done(&r);
}

static void test_many_names_and_the_name_limit(void **state) {
    (void)state;
    tc_strbuf src;
    tc_strbuf_init(&src);
    tc_strbuf_puts(&src, "kernel k(x: *i32) {\n");
    for (int i = 0; i < LANG_MAX_BINDINGS; i++) append(&src, "let v%d = %d;\n", i); /* + x: one too many */
    tc_strbuf_puts(&src, "}\n");
    result r;
    compile(&r, src.data, NULL, 0);
    assert_null(r.m);
    assert_int_equal(r.diag.nerrors, 1);
    expect_diag(&r, "too many names in one kernel (limit is 65536)");
    done(&r);
    tc_strbuf_free(&src);
}

static void test_too_many_loop_carried_vars(void **state) {
    (void)state;
    tc_strbuf src;
    tc_strbuf_init(&src);
    tc_strbuf_puts(&src, "kernel k(x: *i32) {\n");
    for (int i = 0; i < TIR_MAX_OPERANDS; i++) append(&src, "var v%d = %d;\n", i);
    tc_strbuf_puts(&src, "for j in range(4) {\n");
    for (int i = 0; i < TIR_MAX_OPERANDS; i++) append(&src, "v%d = j + %d;\n", i);
    tc_strbuf_puts(&src, "}\n}\n");
    result r;
    compile(&r, src.data, NULL, 0);
    assert_null(r.m);
    expect_diag(&r, "too many variables change in this loop (limit is 61)");
    done(&r);
    tc_strbuf_free(&src);
}

static void test_overflowing_constants_wrap_without_undefined_behavior(void **state) {
    (void)state;
    result r;
    /* each of these overflows int64_t if folded naively (UBSan aborts then) */
    compile(&r, "kernel k(x: *i64) {\n"
                "    let m = -9223372036854775807 - 1;\n"
                "    store(x, cdiv(9223372036854775807, 2));\n"
                "    store(x, cdiv(m, -1));\n"
                "    store(x, m / -1 + m % -1 + -m);\n"
                "    store(x, 1 << 63 << 1);\n"
                "}\n",
            NULL, 0);
    assert_int_equal(r.diag.nerrors, 0);
    assert_non_null(strstr(r.ir.data, "const -4611686018427387904 : i64")); /* (2^63 - 1 + 1) wraps, / 2 */
    done(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promotion_rules),
        cmocka_unit_test(test_vadd_to_ir),
        cmocka_unit_test(test_define_overrides_default),
        cmocka_unit_test(test_define_no_kernel_takes_is_an_error), cmocka_unit_test(test_define_for_a_kernel_not_compiled),
        cmocka_unit_test(test_independent_errors_all_reported_without_cascade),
        cmocka_unit_test(test_deep_expression_is_an_error_not_a_crash),
        cmocka_unit_test(test_constant_folding_in_arange_bounds),
        cmocka_unit_test(test_func_signature_names_locs_and_options),
        cmocka_unit_test(test_pointer_minus_int_is_addptr_of_negation),
        cmocka_unit_test(test_float_literal_arithmetic_folds_and_adapts),
        cmocka_unit_test(test_integer_division_folds_toward_zero),
        cmocka_unit_test(test_literal_next_to_const_param_must_fit),
        cmocka_unit_test(test_only_kernel_picks_one_and_names_a_missing_one),
        cmocka_unit_test(test_arange_names_the_runtime_parameter),
        cmocka_unit_test(test_assigned_values_keep_the_var_name),
        cmocka_unit_test(test_unused_define_not_reported_after_errors_and_redefinition_has_a_note),
        cmocka_unit_test(test_scalar_mask_and_other_broadcast),
        cmocka_unit_test(test_names_end_with_their_loop_body),
        cmocka_unit_test(test_many_names_and_the_name_limit),
        cmocka_unit_test(test_too_many_loop_carried_vars),
        cmocka_unit_test(test_overflowing_constants_wrap_without_undefined_behavior),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
