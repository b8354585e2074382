/* Every stdlib kernel runs on the interpreter against a C reference, on
 * random inputs with poisoned outputs, over sizes that leave tails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang.h"
#include "lower/lower.h"
#include "parser/parser.h"
#include "runtime/interp.h"

#ifndef TILEC_SOURCE_DIR
#error TILEC_SOURCE_DIR must name the source tree
#endif

typedef struct lib {
    tc_arena *arena;
    tc_diag diag;
    char *text;
    tc_source src;
    tir_module *m;
} lib;

static int setup(void **state) {
    static lib l; /* one group at a time */
    const char *path = TILEC_SOURCE_DIR "/stdlib/elementwise.tile";
    size_t len;
    const char *err;
    if (!tc_read_file(path, &l.text, &len, &err)) fail_msg("cannot read %s: %s", path, err);
    l.arena = tc_arena_new();
    tc_diag_init(&l.diag);
    l.src = (tc_source){.name = "stdlib/elementwise.tile", .text = l.text, .len = len};
    ast_module *ast = parse_module(l.arena, &l.src, &l.diag);
    l.m = l.diag.nerrors ? NULL : lang_to_tir(ast, NULL, l.arena, &l.diag);
    if (!l.m) fail_msg("stdlib does not compile:\n%s", l.diag.out.data);
    lower_options opt = {0};
    assert_true(lower_simplify(l.m, &opt, &l.diag));
    *state = &l;
    return 0;
}

static int teardown(void **state) {
    lib *l = *state;
    tc_arena_free(l->arena);
    tc_diag_free(&l->diag);
    free(l->text);
    return 0;
}

enum { BLOCK = 1024 };
static const int sizes[] = {1, 1000, 1024, 3000};

static float *random_floats(int n) {
    float *p = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++) p[i] = (float)(rand() % 200001 - 100000) / 1021.0f;
    return p;
}

static float *poisoned(int n) {
    float *p = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++) p[i] = NAN;
    return p;
}

static void run(lib *l, const char *kernel, rt_buffer *bufs, uint32_t nbufs, const rt_arg *args, uint32_t nargs,
                int n) {
    const tir_func *f = tir_module_find(l->m, kernel);
    if (!f) fail_msg("stdlib has no kernel %s", kernel);
    rt_launch launch = {.func = f, .file = l->src.name, .buffers = bufs, .nbuffers = nbufs,
                        .args = args, .nargs = nargs, .grid = {(uint32_t)((n + BLOCK - 1) / BLOCK), 1, 1}};
    if (!rt_interp_run(&launch, &l->diag)) fail_msg("%s failed:\n%s", kernel, l->diag.out.data);
}

static rt_arg P(uint32_t b) { return (rt_arg){.kind = RT_ARG_PTR, .buffer = b}; }
static rt_arg I(int64_t v) { return (rt_arg){.kind = RT_ARG_INT, .i = v}; }
static rt_arg F(double v) { return (rt_arg){.kind = RT_ARG_FLOAT, .f = v}; }

/* out = x op y, checked exactly: one f32 operation per element */
static void binary(lib *l, const char *kernel, int mul) {
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t];
        float *x = random_floats(n), *y = random_floats(n), *out = poisoned(n);
        rt_buffer b[3] = {{x, sizeof(float) * (size_t)n}, {y, sizeof(float) * (size_t)n}, {out, sizeof(float) * (size_t)n}};
        rt_arg a[4] = {P(0), P(1), P(2), I(n)};
        run(l, kernel, b, 3, a, 4, n);
        for (int i = 0; i < n; i++) {
            float want = mul ? x[i] * y[i] : x[i] + y[i];
            if (out[i] != want) fail_msg("%s n=%d: out[%d] = %g, want %g", kernel, n, i, out[i], want);
        }
        free(x), free(y), free(out);
    }
}

static void test_add_f32(void **state) { binary(*state, "add_f32", 0); }
static void test_mul_f32(void **state) { binary(*state, "mul_f32", 1); }

static void test_scale_f32(void **state) {
    lib *l = *state;
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t];
        float *x = random_floats(n), *x0 = malloc(sizeof(float) * (size_t)n);
        memcpy(x0, x, sizeof(float) * (size_t)n);
        rt_buffer b[1] = {{x, sizeof(float) * (size_t)n}};
        rt_arg a[3] = {P(0), F(-1.75), I(n)};
        run(l, "scale_f32", b, 1, a, 3, n);
        for (int i = 0; i < n; i++) assert_true(x[i] == -1.75f * x0[i]);
        free(x), free(x0);
    }
}

static void test_fill_f32(void **state) {
    lib *l = *state;
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t];
        float *out = poisoned(n + 7);
        rt_buffer b[1] = {{out, sizeof(float) * (size_t)(n + 7)}};
        rt_arg a[3] = {P(0), F(3.25), I(n)};
        run(l, "fill_f32", b, 1, a, 3, n);
        for (int i = 0; i < n; i++) assert_true(out[i] == 3.25f);
        for (int i = n; i < n + 7; i++) assert_true(isnan(out[i]));
        free(out);
    }
}

/* Every kernel in the file has a test above: a new stdlib kernel without
 * one fails here. */
static void test_every_kernel_is_covered(void **state) {
    lib *l = *state;
    static const char *const covered[] = {"add_f32", "mul_f32", "scale_f32", "fill_f32"};
    for (const tir_func *f = l->m->funcs; f; f = f->next) {
        bool ok = false;
        for (size_t i = 0; i < sizeof covered / sizeof covered[0]; i++) ok |= !strcmp(covered[i], f->name);
        if (!ok) fail_msg("stdlib kernel %s has no interpreter test", f->name);
    }
}

int main(void) {
    srand(7);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_f32),   cmocka_unit_test(test_mul_f32),  cmocka_unit_test(test_scale_f32),
        cmocka_unit_test(test_fill_f32),  cmocka_unit_test(test_every_kernel_is_covered),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
