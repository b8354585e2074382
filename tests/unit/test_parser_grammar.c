/* Unit tests for the grammar and the AST builders: parse a string, compare
 * ast_dump output and the exact diagnostics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser/internal.h"

typedef struct parsed {
    char *dump;   /* malloc'd, "" if no kernels */
    char *diag;   /* malloc'd, "" if no messages */
    int nerrors;
    ast_module *m; /* valid until the arena is freed */
    tc_arena *arena;
} parsed;

/* Parses len bytes from a heap copy without a NUL terminator, so ASan
 * catches any read past the end. */
static parsed parse_n(const char *text, size_t len) {
    parsed r;
    char *copy = malloc(len ? len : 1);
    memcpy(copy, text, len);
    tc_source src = {.name = "t.tile", .text = copy, .len = len};
    r.arena = tc_arena_new();
    tc_diag d;
    tc_diag_init(&d);
    r.m = parse_module(r.arena, &src, &d);
    assert_non_null(r.m);
    tc_strbuf out;
    tc_strbuf_init(&out);
    ast_dump(&out, r.m);
    r.dump = strdup(out.data ? out.data : "");
    r.diag = strdup(d.out.data ? d.out.data : "");
    r.nerrors = d.nerrors;
    tc_strbuf_free(&out);
    tc_diag_free(&d);
    free(copy);
    r.m->src = NULL; /* src was on our stack */
    return r;
}

static parsed parse(const char *text) { return parse_n(text, strlen(text)); }

static void done(parsed *r) {
    free(r->dump);
    free(r->diag);
    tc_arena_free(r->arena);
}

/* Parses a kernel whose body is `let e = <expr>;` and checks the dump. */
static void expect_expr(const char *expr, const char *want) {
    char src[512], dump[512];
    snprintf(src, sizeof src, "kernel k() { let e = %s; }", expr);
    snprintf(dump, sizeof dump, "(kernel k (let e %s))\n", want);
    parsed r = parse(src);
    if (r.nerrors) fail_msg("%s: %s", expr, r.diag);
    assert_string_equal(r.dump, dump);
    done(&r);
}

/* Checks that the first line of the diagnostics is `want`. */
static void expect_first_error(const char *src, const char *want) {
    parsed r = parse(src);
    assert_true(r.nerrors >= 1);
    size_t n = strcspn(r.diag, "\n");
    if (strlen(want) != n || strncmp(r.diag, want, n) != 0) fail_msg("got: %s\nwant: %s", r.diag, want);
    done(&r);
}

static void test_vadd(void **state) {
    (void)state;
    parsed r = parse("// vadd.tile\n"
                     "kernel vadd(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {\n"
                     "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
                     "    let mask = offs < n;\n"
                     "    store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);\n"
                     "}\n");
    assert_string_equal(r.diag, "");
    assert_string_equal(r.dump,
                        "(kernel vadd (param x *f32) (param y *f32) (param out *f32) (param n i32) "
                        "(param const BLOCK i32 1024) "
                        "(let offs (+ (* (call program_id 0) BLOCK) (call arange 0 BLOCK))) "
                        "(let mask (< offs n)) "
                        "(call store (+ out offs) (+ (call load (+ x offs) mask) (call load (+ y offs) mask)) mask))\n");
    ast_kernel *k = r.m->kernels;
    assert_int_equal(r.m->nkernels, 1);
    assert_int_equal(k->nparams, 5);
    assert_true(k->params->next->next->next->next->is_const);
    assert_int_equal(k->params->type.pointer, 1);
    assert_string_equal(k->params->type.base.str, "f32");
    /* spans: the kernel runs from 'kernel' to '}' */
    assert_int_equal(k->span.off, 13);
    done(&r);
}

static void test_precedence(void **state) {
    (void)state;
    expect_expr("a < n & b > 0", "(& (< a n) (> b 0))");
    expect_expr("a | b ^ c & d", "(| a (^ b (& c d)))");
    expect_expr("a & b ^ c | d", "(| (^ (& a b) c) d)");
    expect_expr("1 + 2 * 3 << 1", "(<< (+ 1 (* 2 3)) 1)");
    expect_expr("a == b << 2", "(== a (<< b 2))");
    expect_expr("a - b - c", "(- (- a b) c)");
    expect_expr("a / b % c * d", "(* (% (/ a b) c) d)");
    expect_expr("-a * b", "(* (- a) b)");
    expect_expr("!a == +b", "(== (! a) (+ b))");
    expect_expr("- -a", "(- (- a))");
    expect_expr("(a + b) * c", "(* (+ a b) c)");
    expect_expr("a >> 1 >> 2", "(>> (>> a 1) 2)");
    expect_expr("(a < b) < c", "(< (< a b) c)");
    expect_expr("a != b", "(!= a b)");
    expect_expr("a <= b", "(<= a b)");
    expect_expr("a >= b", "(>= a b)");
}

static void test_literals(void **state) {
    (void)state;
    expect_expr("0x7f", "127");
    expect_expr("0b101", "5");
    expect_expr("1_000_000", "1000000");
    expect_expr("18446744073709551615", "18446744073709551615");
    expect_expr("0xFFFF_ffff_FFFF_ffff", "18446744073709551615");
    expect_expr("1.5", "1.5");
    expect_expr("1.", "1.0");
    expect_expr(".5", "0.5");
    expect_expr("1e-3", "0.001");
    expect_expr("2.5E+4", "25000.0");
    expect_expr("1_0.2_5", "10.25");
    expect_expr("true & false", "(& true false)");
}

static void test_literal_errors(void **state) {
    (void)state;
    expect_first_error("kernel k() { let a = 18446744073709551616; }",
                       "t.tile:1:22: error: integer literal is too large (the limit is 18446744073709551615)");
    expect_first_error("kernel k() { let a = 0x1_0000_0000_0000_0000; }",
                       "t.tile:1:22: error: integer literal is too large (the limit is 18446744073709551615)");
    expect_first_error("kernel k() { let a = 0b12; }", "t.tile:1:25: error: invalid digit '2' in binary literal");
    expect_first_error("kernel k() { let a = 12ab; }", "t.tile:1:24: error: invalid digit 'a' in decimal literal");
    expect_first_error("kernel k() { let a = 0x_; }", "t.tile:1:22: error: hexadecimal literal has no digits");
    expect_first_error("kernel k() { let a = 1e400; }", "t.tile:1:22: error: floating-point literal is too large");
    /* a bad literal still gives a node, and the rest parses */
    parsed r = parse("kernel k() { let a = 0b2; let b = 1; }");
    assert_int_equal(r.nerrors, 1);
    assert_string_equal(r.dump, "(kernel k (let a 0) (let b 1))\n");
    done(&r);
}

static void test_statements_and_types(void **state) {
    (void)state;
    parsed r = parse("kernel k(p: **f16, q: i1,) {\n"
                     "  let a: i32 = 1;\n"
                     "  var b: *f32 = p;\n"
                     "  var c = 2;\n"
                     "  c = c + 1;\n"
                     "  store(p, a);\n"
                     "}");
    assert_string_equal(r.diag, "");
    assert_string_equal(r.dump, "(kernel k (param p **f16) (param q i1) (let a:i32 1) (var b:*f32 p) (var c 2) "
                                "(= c (+ c 1)) (call store p a))\n");
    ast_stmt *s = r.m->kernels->body;
    assert_int_equal(s->kind, AST_LET);
    assert_int_equal(s->next->kind, AST_VAR);
    assert_int_equal(s->next->next->next->kind, AST_ASSIGN);
    assert_int_equal(s->next->next->next->next->kind, AST_EXPR);
    assert_int_equal(r.m->kernels->params->type.pointer, 2);
    done(&r);
}

static void test_calls_named_args_trailing_commas(void **state) {
    (void)state;
    expect_expr("load(p + o, mask=m, other=0.0,)", "(call load (+ p o) mask=m other=0.0)");
    expect_expr("f()", "(call f)");
    expect_expr("f(g(h(1)),)", "(call f (call g (call h 1)))");
    parsed r = parse("kernel k() { let e = f(a, b = 2); }");
    ast_expr *call = r.m->kernels->body->value;
    assert_int_equal(call->kind, AST_CALL);
    assert_int_equal(call->u.call.nargs, 2);
    assert_null(call->u.call.args->name.str);
    assert_string_equal(call->u.call.args->next->name.str, "b");
    /* the call's span runs from the callee to ')' */
    assert_int_equal(call->span.off, 21);
    assert_int_equal(call->span.len, strlen("f(a, b = 2)"));
    done(&r);
}

static void test_if_else_while(void **state) {
    (void)state;
    parsed r = parse("kernel k(n: i32) {\n"
                     "    var i = 0;\n"
                     "    while i < n { i = i + 1; }\n"
                     "    if i > 2 { i = 0; } else if i == 1 { } else { i = 2; i = 3; }\n"
                     "    if n > 0 { }\n"
                     "}\n");
    if (r.nerrors) fail_msg("%s", r.diag);
    assert_string_equal(r.dump, "(kernel k (param n i32) (var i 0) (while (< i n) (= i (+ i 1)))"
                                " (if (> i 2) (then (= i 0)) (else (if (== i 1) (then) (else (= i 2) (= i 3)))))"
                                " (if (> n 0) (then)))\n");
    done(&r);
    expect_first_error("kernel k() { if 1 { } else }", "t.tile:1:28: error: expected '{' or 'if', found '}'");
    expect_first_error("kernel k() { else { } }", "t.tile:1:14: error: unexpected 'else'");
}

static void test_params(void **state) {
    (void)state;
    parsed r = parse("kernel a() {}\n"
                     "kernel b(const N: i32 = 4, const M: i64, x: f32 = 1.5) { }\n"
                     "kernel c(x: *f32,) { let y = x; }\n");
    assert_string_equal(r.diag, "");
    assert_string_equal(r.dump, "(kernel a)\n"
                                "(kernel b (param const N i32 4) (param const M i64) (param x f32 1.5))\n"
                                "(kernel c (param x *f32) (let y x))\n");
    assert_int_equal(r.m->nkernels, 3);
    /* the default on a non-const param is the checker's to reject */
    assert_false(r.m->kernels->next->params->next->next->is_const);
    assert_non_null(r.m->kernels->next->params->next->next->default_value);
    done(&r);
}

static void test_syntax_error_messages(void **state) {
    (void)state;
    expect_first_error("kernel k(x *f32) {}", "t.tile:1:12: error: expected ':', found '*'");
    expect_first_error("kernel k() {\n  let a = ;\n}", "t.tile:2:11: error: expected expression, found ';'");
    expect_first_error("kernel k() {\n  let a = 1 2;\n}", "t.tile:2:13: error: expected ';', found '2'");
    expect_first_error("kernel k() { x = 1 }", "t.tile:1:20: error: expected ';', found '}'");
    expect_first_error("let a = 1;", "t.tile:1:1: error: expected 'kernel', found 'let'");
    /* ',' is offered although Lemon's default reductions have closed the
     * argument list by the time the error is seen (parse_ctx.snapshot) */
    expect_first_error("kernel k() { f(a b); }", "t.tile:1:18: error: expected ')', ',' or '=', found 'b'");
    expect_first_error("kernel k(", "t.tile:1:10: error: expected ')', identifier or 'const', found end of file");
    expect_first_error("kernel (", "t.tile:1:8: error: expected identifier, found '('");
    expect_first_error("kernel k() { let a = 1; ", "t.tile:1:25: error: expected '}' at end of file");
    expect_first_error("kernel k() { let a = (1; }", "t.tile:1:24: error: expected ')' or ',', found ';'");
    expect_first_error("kernel k(x: i32) { let a = x < 1 < 2; }",
                       "t.tile:1:34: error: comparison operators cannot be chained; use parentheses and '&', "
                       "e.g. '(a < b) & (b < c)'");
    expect_first_error("kernel k(x: i32) { let a = x == 1 != 2; }",
                       "t.tile:1:35: error: comparison operators cannot be chained; use parentheses and '&', "
                       "e.g. '(a < b) & (b < c)'");
    expect_first_error("kernel k() { let break = 1; }",
                       "t.tile:1:18: error: 'break' is a reserved word and cannot be used yet");
    /* the caret line */
    parsed r = parse("kernel k() {\n\tlet a = 1 2;\n}");
    assert_string_equal(r.diag, "t.tile:2:12: error: expected ';', found '2'\n"
                                "    \tlet a = 1 2;\n"
                                "    \t          ^\n");
    done(&r);
}

static void test_recovery_reports_several_errors(void **state) {
    (void)state;
    parsed r = parse("kernel a(x: i32) {\n"
                     "  let p = x +;\n"
                     "  let q = 1;\n"
                     "  let r = (x;\n"
                     "  let s = 2;\n"
                     "}\n"
                     "kernel b(x i32) { let t = 3; }\n"
                     "kernel c() { let u = 4; }\n");
    assert_int_equal(r.nerrors, 3);
    assert_string_equal(r.diag, "t.tile:2:14: error: expected expression, found ';'\n"
                                "      let p = x +;\n"
                                "                 ^\n"
                                "t.tile:4:13: error: expected ')' or ',', found ';'\n"
                                "      let r = (x;\n"
                                "                ^\n"
                                "t.tile:7:12: error: expected ':', found 'i32'\n"
                                "    kernel b(x i32) { let t = 3; }\n"
                                "               ^~~\n");
    /* good statements and kernels around the errors are kept */
    assert_string_equal(r.dump, "(kernel a (param x i32) (let q 1) (let s 2))\n(kernel c (let u 4))\n");
    done(&r);
}

static void test_each_kernel_reports_its_own_error(void **state) {
    (void)state;
    /* within three tokens of the first error's recovery, but in a new
     * kernel: still reported */
    parsed r = parse("kernel a() { f(a=); }\nkernel (x: i32) {}\nkernel c() {}");
    assert_int_equal(r.nerrors, 2);
    assert_non_null(strstr(r.diag, "t.tile:1:18: error: expected expression, found ')'\n"));
    assert_non_null(strstr(r.diag, "t.tile:2:8: error: expected identifier, found '('\n"));
    assert_string_equal(r.dump, "(kernel a)\n(kernel c)\n");
    done(&r);
}

static void test_missing_brace_before_kernel(void **state) {
    (void)state;
    parsed r = parse("kernel a() { let x = 1;\nkernel b() { let y = 2; }\n");
    assert_int_equal(r.nerrors, 1);
    assert_string_equal(r.diag, "t.tile:2:1: error: expected '}' before 'kernel'\n"
                                "    kernel b() { let y = 2; }\n"
                                "    ^~~~~~\n");
    assert_string_equal(r.dump, "(kernel a (let x 1))\n(kernel b (let y 2))\n");
    done(&r);
    /* an unfinished statement, then the next kernel: one error */
    r = parse("kernel a() { let x = 1\nkernel b() { let y = 2; }\n");
    assert_int_equal(r.nerrors, 1);
    assert_string_equal(r.dump, "(kernel a)\n(kernel b (let y 2))\n");
    done(&r);
}

static void test_lexical_errors(void **state) {
    (void)state;
    parsed r = parse("kernel k() { let a = 1 \x01\x02\x03 + 2; }");
    assert_int_equal(r.nerrors, 1);
    assert_string_equal(r.diag, "t.tile:1:24: error: invalid character '\\x01'\n"
                                "    kernel k() { let a = 1 ??? + 2; }\n"
                                "                           ^~~\n");
    assert_string_equal(r.dump, "(kernel k (let a (+ 1 2)))\n");
    done(&r);
    /* the parser stays quiet about the hole a bad byte leaves */
    r = parse("kernel k() { let a = 1 @ 2; }");
    assert_int_equal(r.nerrors, 1);
    assert_string_equal(r.diag, "t.tile:1:24: error: invalid character '@'\n"
                                "    kernel k() { let a = 1 @ 2; }\n"
                                "                           ^\n");
    done(&r);
    r = parse("kernel k() { } /* never closed\n\n");
    assert_int_equal(r.nerrors, 1);
    assert_string_equal(r.diag, "t.tile:1:16: error: unterminated block comment\n"
                                "    kernel k() { } /* never closed\n"
                                "                   ^~\n");
    assert_string_equal(r.dump, "(kernel k)\n");
    done(&r);
    /* NUL and non-UTF-8 bytes */
    r = parse_n("kernel k() {\0\xff}", 15);
    assert_int_equal(r.nerrors, 1);
    assert_true(strstr(r.diag, "t.tile:1:13: error: invalid character '\\x00'") == r.diag);
    done(&r);
}

static void test_nesting_limit(void **state) {
    (void)state;
    char src[4096];
    /* exactly PARSE_MAX_NESTING parentheses are fine */
    int n = snprintf(src, sizeof src, "kernel k() { let a = ");
    for (int i = 0; i < PARSE_MAX_NESTING; i++) src[n++] = '(';
    src[n++] = '1';
    for (int i = 0; i < PARSE_MAX_NESTING; i++) src[n++] = ')';
    snprintf(src + n, sizeof src - (size_t)n, "; }");
    parsed r = parse(src);
    assert_string_equal(r.diag, "");
    assert_string_equal(r.dump, "(kernel k (let a 1))\n");
    done(&r);
    /* one more is an error, reported once */
    n = snprintf(src, sizeof src, "kernel k() { let a = ");
    for (int i = 0; i <= PARSE_MAX_NESTING; i++) src[n++] = '(';
    src[n++] = '1';
    for (int i = 0; i <= PARSE_MAX_NESTING; i++) src[n++] = ')';
    snprintf(src + n, sizeof src - (size_t)n, "; }");
    r = parse(src);
    assert_int_equal(r.nerrors, 1);
    assert_true(strstr(r.diag, "t.tile:1:278: error: expression nested too deeply (limit is 256)\n") == r.diag);
    done(&r);
    /* deep unary operators overflow the parser stack: same error */
    n = snprintf(src, sizeof src, "kernel k() { let a = ");
    for (int i = 0; i < 3000; i++) src[n++] = '-';
    snprintf(src + n, sizeof src - (size_t)n, "1; }");
    r = parse(src);
    assert_int_equal(r.nerrors, 1);
    assert_non_null(strstr(r.diag, "error: expression nested too deeply (limit is 256)\n"));
    done(&r);
}

static void test_error_limit_and_junk(void **state) {
    (void)state;
    /* many bad statements: the count stops at the diag limit */
    size_t cap = 200 * 64, n = 0;
    char *src = malloc(cap);
    n += (size_t)snprintf(src + n, cap - n, "kernel k() {\n");
    for (int i = 0; i < 200; i++) n += (size_t)snprintf(src + n, cap - n, "let a%d = ;\nlet b = 1;\n", i);
    n += (size_t)snprintf(src + n, cap - n, "}\n");
    parsed r = parse_n(src, n);
    assert_int_equal(r.nerrors, TC_MAX_ERRORS + 1);
    assert_non_null(strstr(r.diag, "too many errors"));
    done(&r);
    free(src);
    /* random-ish junk: no crash, at least one error */
    char junk[2048];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (char)(x >> 16);
    }
    r = parse_n(junk, sizeof junk);
    assert_true(r.nerrors >= 1);
    done(&r);
    r = parse_n("", 0);
    assert_int_equal(r.nerrors, 0);
    assert_string_equal(r.dump, "");
    assert_int_equal(r.m->nkernels, 0);
    done(&r);
}

static void test_span_join_and_spelling(void **state) {
    (void)state;
    tc_span s = tc_span_join((tc_span){.off = 10, .len = 2}, (tc_span){.off = 4, .len = 3});
    assert_int_equal(s.off, 4);
    assert_int_equal(s.len, 8);
    s = tc_span_join((tc_span){.off = 4, .len = 20}, (tc_span){.off = 6, .len = 1});
    assert_int_equal(s.off, 4);
    assert_int_equal(s.len, 20);
    assert_string_equal(ast_op_spelling(AST_OP_LE), "<=");
    assert_string_equal(ast_op_spelling(AST_OP_SHR), ">>");
    assert_string_equal(ast_op_spelling(AST_OP_NOT), "!");
    /* binary spans cover both operands, parentheses included */
    parsed r = parse("kernel k() { let e = (a + b) * c; }");
    ast_expr *e = r.m->kernels->body->value;
    assert_int_equal(e->span.off, 21);
    assert_int_equal(e->span.len, strlen("(a + b) * c"));
    assert_int_equal(e->u.binary.op_span.off, 29);
    done(&r);
}

/* Strings parse as expressions (the checker limits where), with their
 * escapes decoded; a bad escape is reported at the backslash. */
static void test_strings(void **state) {
    (void)state;
    parsed r = parse("kernel k(n: i32) { print(\"n =\\t\\\"q\\\"\\\\\\n\", n); assert(n > 0, \"\"); }");
    if (r.nerrors) fail_msg("%s", r.diag);
    assert_string_equal(r.dump, "(kernel k (param n i32) (call print \"n =\\t\\\"q\\\"\\\\\\n\" n) (call assert (> n 0) \"\"))\n");
    done(&r);
    expect_first_error("kernel k(n: i32) { print(\"a\\qb\", n); }",
                       "t.tile:1:28: error: invalid escape '\\q' in string literal (use \\n, \\t, \\\" or \\\\)");
    expect_first_error("kernel k(n: i32) { print(\"open, n); }",
                       "t.tile:1:26: error: unterminated string literal (strings end on their line)");
    expect_first_error("kernel k(n: i32) { let x = 1 \"s\"; }",
                       "t.tile:1:30: error: expected ';', found '\"s\"'");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vadd),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_literal_errors),
        cmocka_unit_test(test_statements_and_types),
        cmocka_unit_test(test_calls_named_args_trailing_commas),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_if_else_while),
        cmocka_unit_test(test_syntax_error_messages),
        cmocka_unit_test(test_recovery_reports_several_errors),
        cmocka_unit_test(test_each_kernel_reports_its_own_error),
        cmocka_unit_test(test_missing_brace_before_kernel),
        cmocka_unit_test(test_lexical_errors),
        cmocka_unit_test(test_nesting_limit),
        cmocka_unit_test(test_error_limit_and_junk),
        cmocka_unit_test(test_span_join_and_spelling),
        cmocka_unit_test(test_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
