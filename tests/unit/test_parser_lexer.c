/* Unit tests for parser/lexer.re: token kinds, lengths, literals, comments
 * and bad bytes, straight from parse_lex. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "parser/internal.h"

enum { MAX_TOKS = 128 };

typedef struct toks {
    int kind[MAX_TOKS];
    uint32_t len[MAX_TOKS];
    int n;
} toks;

/* Lexes len bytes of s (which may hold NULs) from a heap copy with just the
 * one sentinel byte, so ASan catches any read past it. */
static toks lex_n(const char *s, size_t len) {
    toks t = {.n = 0};
    char *buf = malloc(len + 1);
    memcpy(buf, s, len);
    buf[len] = '\0';
    size_t pos = 0;
    for (;;) {
        int kind;
        uint32_t n = parse_lex(buf + pos, buf + len, &kind);
        if (kind == PARSE_TK_EOF) {
            assert_int_equal(n, 0);
            break;
        }
        assert_true(n > 0);
        assert_true(t.n < MAX_TOKS);
        t.kind[t.n] = kind;
        t.len[t.n] = n;
        t.n++;
        pos += n;
        assert_true(pos <= len);
    }
    assert_int_equal(pos, len);
    free(buf);
    return t;
}

static toks lex(const char *s) { return lex_n(s, strlen(s)); }

/* The token kinds with whitespace left out. */
static toks lex_nospace(const char *s) {
    toks all = lex(s), t = {.n = 0};
    for (int i = 0; i < all.n; i++) {
        if (all.kind[i] == TK_SPACE) continue;
        t.kind[t.n] = all.kind[i];
        t.len[t.n] = all.len[i];
        t.n++;
    }
    return t;
}

static void expect_kinds(toks t, const int *kinds, int n) {
    assert_int_equal(t.n, n);
    for (int i = 0; i < n; i++) {
        if (t.kind[i] != kinds[i]) fail_msg("token %d: kind %d, expected %d", i, t.kind[i], kinds[i]);
    }
}

static void test_every_token_kind(void **state) {
    (void)state;
    toks t = lex_nospace("kernel let var const true false name_1 _x 42 4.5 + - * / % < <= > >= == != << >> "
                         "& | ^ ! = ( ) { } , ; : break");
    const int want[] = {TK_KERNEL, TK_LET, TK_VAR, TK_CONST, TK_TRUE, TK_FALSE, TK_IDENT, TK_IDENT,
                        TK_INT, TK_FLOAT, TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH, TK_PERCENT, TK_LT,
                        TK_LE, TK_GT, TK_GE, TK_EQ, TK_NE, TK_SHL, TK_SHR, TK_AND, TK_OR, TK_XOR,
                        TK_BANG, TK_ASSIGN, TK_LPAREN, TK_RPAREN, TK_LBRACE, TK_RBRACE, TK_COMMA,
                        TK_SEMI, TK_COLON, TK_RESERVED};
    expect_kinds(t, want, (int)(sizeof want / sizeof want[0]));
    assert_int_equal(t.len[0], 6);
    assert_int_equal(t.len[6], 6);
    assert_int_equal(t.len[16], 2);
}

static void test_longest_match(void **state) {
    (void)state;
    toks t = lex("<<=>>===<=<!!=");
    const int want[] = {TK_SHL, TK_ASSIGN, TK_SHR, TK_EQ, TK_ASSIGN, TK_LE, TK_LT, TK_BANG, TK_NE};
    expect_kinds(t, want, 9);
    /* keywords only as whole words */
    t = lex_nospace("kernels letx _let constant true1 variable");
    for (int i = 0; i < t.n; i++) assert_int_equal(t.kind[i], TK_IDENT);
    assert_int_equal(t.n, 6);
    t = lex_nospace("return break continue");
    assert_int_equal(t.n, 3);
    for (int i = 0; i < t.n; i++) assert_int_equal(t.kind[i], TK_RESERVED);
    t = lex_nospace("if else while iffy elsewhere whiles");
    const int branch_words[] = {TK_IF, TK_ELSE, TK_WHILE, TK_IDENT, TK_IDENT, TK_IDENT};
    expect_kinds(t, branch_words, 6);
    t = lex_nospace("for in range");
    const int loop_words[] = {TK_FOR, TK_IN, TK_IDENT}; /* range is a builtin name */
    expect_kinds(t, loop_words, 3);
}

static void test_literals(void **state) {
    (void)state;
    struct { const char *text; int kind; } cases[] = {
        {"123", TK_INT},     {"0x7f", TK_INT},     {"0b101", TK_INT},    {"1_000", TK_INT},
        {"0XAB_cd", TK_INT}, {"0x", TK_INT},       {"12ab", TK_INT},     {"1e", TK_INT},
        {"1.5", TK_FLOAT},   {"1.", TK_FLOAT},     {".5", TK_FLOAT},     {"1e-3", TK_FLOAT},
        {"2.5E+4", TK_FLOAT}, {"1_0.2_5", TK_FLOAT}, {"3e10", TK_FLOAT}, {".5e2", TK_FLOAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        toks t = lex(cases[i].text);
        if (t.n != 1 || t.kind[0] != cases[i].kind)
            fail_msg("'%s': %d tokens, first kind %d", cases[i].text, t.n, t.kind[0]);
        assert_int_equal(t.len[0], strlen(cases[i].text));
    }
    /* A float ends where the number does. */
    toks t = lex("1.5e+x");
    const int want[] = {TK_FLOAT, TK_IDENT, TK_PLUS, TK_IDENT};
    expect_kinds(t, want, 4);
    assert_int_equal(t.len[0], 3);
    t = lex("x.5");
    const int want2[] = {TK_IDENT, TK_FLOAT};
    expect_kinds(t, want2, 2);
}

static void test_comments(void **state) {
    (void)state;
    toks t = lex("a // line ** /* \nb/* x * y ** */c/**/d");
    const int want[] = {TK_IDENT, TK_SPACE, TK_COMMENT, TK_SPACE, TK_IDENT, TK_COMMENT, TK_IDENT,
                        TK_COMMENT, TK_IDENT};
    expect_kinds(t, want, 9);
    assert_int_equal(t.len[2], strlen("// line ** /* "));
    assert_int_equal(t.len[5], strlen("/* x * y ** */"));
    /* Block comments don't nest: the first '*' '/' ends it. */
    t = lex("/* a /* b */ c */");
    const int want2[] = {TK_COMMENT, TK_SPACE, TK_IDENT, TK_SPACE, TK_STAR, TK_SLASH};
    expect_kinds(t, want2, 6);
    /* A line comment at the very end, with no newline. */
    t = lex("x //");
    assert_int_equal(t.n, 3);
    assert_int_equal(t.kind[2], TK_COMMENT);
}

static void test_unterminated_comment(void **state) {
    (void)state;
    toks t = lex("x /* abc * / ");
    const int want[] = {TK_IDENT, TK_SPACE, TK_BAD_COMMENT};
    expect_kinds(t, want, 3);
    assert_int_equal(t.len[2], strlen("/* abc * / "));
    t = lex("/*");
    assert_int_equal(t.n, 1);
    assert_int_equal(t.kind[0], TK_BAD_COMMENT);
    t = lex("/**");
    assert_int_equal(t.kind[0], TK_BAD_COMMENT);
    assert_int_equal(t.len[0], 3);
}

static void test_bad_bytes(void **state) {
    (void)state;
    /* A run of junk is one token. */
    toks t = lex("a\x01\x02\x7f@#b");
    const int want[] = {TK_IDENT, TK_ILLEGAL, TK_IDENT};
    expect_kinds(t, want, 3);
    assert_int_equal(t.len[1], 5);
    /* NUL bytes inside the text are ordinary bad bytes, not the end. */
    t = lex_n("a\0\0b", 4);
    expect_kinds(t, want, 3);
    assert_int_equal(t.len[1], 2);
    /* Non-UTF-8 and UTF-8 bytes alike. */
    t = lex("\xff\xfe\xc3\xa9");
    assert_int_equal(t.n, 1);
    assert_int_equal(t.kind[0], TK_ILLEGAL);
    /* A lone '.' is not a token. */
    t = lex("a.b");
    expect_kinds(t, want, 3);
    assert_int_equal(t.len[1], 1);
    /* A NUL at the very end, before the sentinel. */
    t = lex_n("x\0", 2);
    assert_int_equal(t.n, 2);
    assert_int_equal(t.kind[1], TK_ILLEGAL);
}

static void test_empty_and_space(void **state) {
    (void)state;
    toks t = lex("");
    assert_int_equal(t.n, 0);
    t = lex(" \t\r\n\v\f ");
    assert_int_equal(t.n, 1);
    assert_int_equal(t.kind[0], TK_SPACE);
    assert_int_equal(t.len[0], 7);
}

static void test_token_desc(void **state) {
    (void)state;
    assert_string_equal(parse_token_desc(TK_SEMI), "';'");
    assert_string_equal(parse_token_desc(TK_LET), "'let'");
    assert_string_equal(parse_token_desc(TK_IDENT), "identifier");
    assert_string_equal(parse_token_desc(PARSE_TK_EOF), "end of file");
}

/* A string is one token, escapes included (decoded later); one that meets
 * a newline, a NUL or the end first is TK_BAD_STRING up to there. */
static void test_strings(void **state) {
    (void)state;
    toks t = lex("\"a b\" \"\" \"q\\\"x\\\\\" \"bad\\q\"");
    int kinds[] = {TK_STRING, TK_SPACE, TK_STRING, TK_SPACE, TK_STRING, TK_SPACE, TK_STRING};
    uint32_t lens[] = {5, 1, 2, 1, 8, 1, 7};
    assert_int_equal(t.n, 7);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(t.kind[i], kinds[i]);
        assert_int_equal(t.len[i], lens[i]);
    }
    t = lex("\"open\nx");
    assert_int_equal(t.kind[0], TK_BAD_STRING);
    assert_int_equal(t.len[0], 5);
    assert_int_equal(t.kind[2], TK_IDENT);
    t = lex("\"end\\");
    assert_int_equal(t.n, 1);
    assert_int_equal(t.kind[0], TK_BAD_STRING);
    assert_int_equal(t.len[0], 5);
    t = lex_n("\"a\0b\"", 5);
    assert_int_equal(t.kind[0], TK_BAD_STRING);
    assert_int_equal(t.len[0], 2);
    t = lex("\"");
    assert_int_equal(t.n, 1);
    assert_int_equal(t.kind[0], TK_BAD_STRING);
    /* a quote is never part of a run of bad bytes */
    t = lex("@\"x\"");
    assert_int_equal(t.kind[0], TK_ILLEGAL);
    assert_int_equal(t.len[0], 1);
    assert_int_equal(t.kind[1], TK_STRING);
    assert_string_equal(parse_token_desc(TK_STRING), "string literal");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_token_kind), cmocka_unit_test(test_longest_match),
        cmocka_unit_test(test_literals),         cmocka_unit_test(test_comments),
        cmocka_unit_test(test_unterminated_comment), cmocka_unit_test(test_bad_bytes),
        cmocka_unit_test(test_empty_and_space),  cmocka_unit_test(test_token_desc),
        cmocka_unit_test(test_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
