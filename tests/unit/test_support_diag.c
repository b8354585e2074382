/* Unit tests for support/: arena, string buffer, diagnostics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "support/support.h"

static void test_arena_zeroed_aligned_big(void **state) {
    (void)state;
    tc_arena *a = tc_arena_new();
    for (int i = 0; i < 1000; i++) {
        unsigned char *p = tc_arena_alloc(a, (size_t)i + 1);
        assert_int_equal((uintptr_t)p % 16, 0);
        for (int j = 0; j <= i; j++) assert_int_equal(p[j], 0);
        memset(p, 0xab, (size_t)i + 1);
    }
    char *big = tc_arena_alloc(a, 1 << 20);
    big[(1 << 20) - 1] = 1;
    assert_string_equal(tc_arena_printf(a, "%s-%d", "x", 42), "x-42");
    assert_string_equal(tc_arena_strndup(a, "hello", 3), "hel");
    tc_arena_free(a);
}

static void test_strbuf(void **state) {
    (void)state;
    tc_strbuf b;
    tc_strbuf_init(&b);
    for (int i = 0; i < 1000; i++) tc_strbuf_printf(&b, "%d,", i % 10);
    assert_int_equal(b.len, 2000);
    assert_int_equal(strlen(b.data), 2000);
    char *s = tc_strbuf_take(&b);
    assert_null(b.data);
    assert_memory_equal(s, "0,1,2,", 6);
    free(s);
}

static void test_source_loc(void **state) {
    (void)state;
    tc_source src = {.name = "f.tile", .text = "ab\ncd\n\nx", .len = 8};
    tc_loc l = tc_source_loc(&src, 4);
    assert_int_equal(l.line, 2);
    assert_int_equal(l.col, 2);
    l = tc_source_loc(&src, 7);
    assert_int_equal(l.line, 4);
    assert_int_equal(l.col, 1);
}

static void test_error_format_with_caret(void **state) {
    (void)state;
    const char *text = "kernel k() {\n    let y = x * 2;\n}\n";
    tc_source src = {.name = "k.tile", .text = text, .len = strlen(text)};
    tc_diag d;
    tc_diag_init(&d);
    tc_error(&d, &src, (tc_span){.off = (uint32_t)(strstr(text, "* 2") - text), .len = 1}, "bad %s", "thing");
    assert_int_equal(d.nerrors, 1);
    assert_string_equal(d.out.data, "k.tile:2:15: error: bad thing\n"
                                    "        let y = x * 2;\n"
                                    "                  ^\n");
    tc_diag_free(&d);
}

/* tc_error_loc (the passes' errors, at the IR's line and column) echoes
 * the line where the diag holds that file's text, the caret kept within
 * the line; another file's location, or none, echoes nothing. */
static void test_error_loc_echoes_its_file(void **state) {
    (void)state;
    const char *text = "kernel k() {\n    let y = x * 2;\n}\n";
    tc_source src = {.name = "k.tile", .text = text, .len = strlen(text)};
    tc_diag d;
    tc_diag_init(&d);
    d.echo = &src;
    tc_error_loc(&d, "k.tile", (tc_loc){.line = 2, .col = 9}, "at %s", "y");
    assert_string_equal(d.out.data, "k.tile:2:9: error: at y\n"
                                    "        let y = x * 2;\n"
                                    "            ^\n");
    tc_diag_free(&d);
    tc_diag_init(&d);
    d.echo = &src;
    tc_error_loc(&d, "k.tile", (tc_loc){.line = 3, .col = 40}, "past the end");
    assert_string_equal(d.out.data, "k.tile:3:40: error: past the end\n"
                                    "    }\n"
                                    "     ^\n");
    tc_diag_free(&d);
    tc_diag_init(&d);
    d.echo = &src;
    tc_error_loc(&d, "other.tile", (tc_loc){.line = 2, .col = 9}, "elsewhere");
    tc_error_loc(&d, "k.tile", (tc_loc){.line = 0, .col = 0}, "nowhere");
    assert_string_equal(d.out.data, "other.tile:2:9: error: elsewhere\nk.tile: error: nowhere\n");
    tc_diag_free(&d);
}

static void test_error_limit(void **state) {
    (void)state;
    tc_diag d;
    tc_diag_init(&d);
    for (int i = 0; i < 200; i++) tc_error_plain(&d, "e%d", i);
    assert_non_null(strstr(d.out.data, "too many errors (limit is 50)"));
    assert_null(strstr(d.out.data, "e50\n"));
    assert_non_null(strstr(d.out.data, "e49\n"));
    tc_diag_free(&d);
}

static void test_long_line_is_windowed(void **state) {
    (void)state;
    size_t n = 1 << 20;
    char *text = malloc(n);
    memset(text, 'a', n);
    tc_source src = {.name = "long.tile", .text = text, .len = n};
    tc_diag d;
    tc_diag_init(&d);
    tc_error(&d, &src, (tc_span){.off = (uint32_t)(n / 2), .len = 1}, "here");
    assert_true(d.out.len < 600);
    assert_non_null(strstr(d.out.data, "long.tile:1:524289: error: here"));
    tc_diag_free(&d);
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena_zeroed_aligned_big), cmocka_unit_test(test_strbuf),
        cmocka_unit_test(test_source_loc),               cmocka_unit_test(test_error_format_with_caret),
        cmocka_unit_test(test_error_limit),              cmocka_unit_test(test_long_line_is_windowed),
        cmocka_unit_test(test_error_loc_echoes_its_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
