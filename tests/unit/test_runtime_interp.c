/* Unit tests for runtime/interp.c: the CPU device's tile IR interpreter.
 * Inputs are random, outputs are poisoned before each run, and results
 * are compared with C references (float64 where arithmetic rounds). */
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

typedef struct prog {
    tc_arena *arena;
    tc_diag diag;
    tc_source src;
    tir_module *m;
} prog;

static void build(prog *p, const char *name, const char *text) {
    p->arena = tc_arena_new();
    tc_diag_init(&p->diag);
    p->src = (tc_source){.name = name, .text = text, .len = strlen(text)};
    if (strstr(name, ".tir")) {
        p->m = tir_parse(p->arena, &p->src, &p->diag);
    } else {
        ast_module *ast = parse_module(p->arena, &p->src, &p->diag);
        p->m = p->diag.nerrors ? NULL : lang_to_tir(ast, NULL, p->arena, &p->diag);
    }
    if (!p->m) fail_msg("does not compile:\n%s", p->diag.out.data);
    lower_options opt = {0};
    assert_true(lower_simplify(p->m, &opt, &p->diag)); /* run what the pipeline runs first */
    assert_true(tir_verify(p->m, "test", &p->diag));
}

static void drop(prog *p) {
    tc_arena_free(p->arena);
    tc_diag_free(&p->diag);
}

static rt_arg ptr_arg(uint32_t buf) { return (rt_arg){.kind = RT_ARG_PTR, .buffer = buf}; }
static rt_arg int_arg(int64_t v) { return (rt_arg){.kind = RT_ARG_INT, .i = v}; }
static rt_arg float_arg(double v) { return (rt_arg){.kind = RT_ARG_FLOAT, .f = v}; }

static float rand_float(void) { return (float)(rand() % 20001 - 10000) / 997.0f; }

static const char vadd_src[] =
    "kernel vadd(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 256) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);\n"
    "}\n";

static void test_vadd_tails_and_grids(void **state) {
    (void)state;
    prog p;
    build(&p, "vadd.tile", vadd_src);
    const int sizes[] = {1, 255, 256, 257, 1000, 4096};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t], cap = ((n + 255) / 256) * 256 + 64;
        float *x = malloc(sizeof(float) * (size_t)cap), *y = malloc(sizeof(float) * (size_t)cap),
              *out = malloc(sizeof(float) * (size_t)cap);
        for (int i = 0; i < cap; i++) x[i] = rand_float(), y[i] = rand_float(), out[i] = NAN; /* poison */
        rt_buffer bufs[3] = {{x, sizeof(float) * (size_t)cap}, {y, sizeof(float) * (size_t)cap},
                             {out, sizeof(float) * (size_t)cap}};
        rt_arg args[4] = {ptr_arg(0), ptr_arg(1), ptr_arg(2), int_arg(n)};
        rt_launch l = {.func = p.m->funcs, .file = "vadd.tile", .buffers = bufs, .nbuffers = 3,
                       .args = args, .nargs = 4, .grid = {(uint32_t)(n + 255) / 256, 1, 1}};
        assert_true(rt_interp_run(&l, &p.diag));
        for (int i = 0; i < n; i++)
            if (out[i] != x[i] + y[i]) fail_msg("n=%d: out[%d] = %g, want %g", n, i, out[i], x[i] + y[i]);
        for (int i = n; i < cap; i++) assert_true(isnan(out[i])); /* masked off: untouched */
        free(x), free(y), free(out);
    }
    drop(&p);
}

static void test_out_of_bounds_names_file_and_line(void **state) {
    (void)state;
    prog p;
    build(&p, "vadd.tile", vadd_src);
    float x[100] = {0}, y[100] = {0}, out[100];
    rt_buffer bufs[3] = {{x, sizeof x}, {y, sizeof y}, {out, sizeof out}};
    rt_arg args[4] = {ptr_arg(0), ptr_arg(1), ptr_arg(2), int_arg(200)}; /* n past the buffers */
    rt_launch l = {.func = p.m->funcs, .file = "vadd.tile", .buffers = bufs, .nbuffers = 3,
                   .args = args, .nargs = 4, .grid = {1, 1, 1}};
    assert_false(rt_interp_run(&l, &p.diag));
    assert_non_null(strstr(p.diag.out.data, "vadd.tile:4:"));
    assert_non_null(strstr(p.diag.out.data, "vadd.tile:4:23: error: in kernel 'vadd', program (0, 0, 0): out-of-bounds access at byte offset 400 of the 400-byte buffer passed as 'x'"));
    drop(&p);
}

static void test_argument_checks(void **state) {
    (void)state;
    prog p;
    build(&p, "vadd.tile", vadd_src);
    float b[4];
    rt_buffer bufs[1] = {{b, sizeof b}};
    rt_arg args[4] = {ptr_arg(0), ptr_arg(0), ptr_arg(0), float_arg(1.0)}; /* n must be an int */
    rt_launch l = {.func = p.m->funcs, .file = "vadd.tile", .buffers = bufs, .nbuffers = 1,
                   .args = args, .nargs = 4, .grid = {1, 1, 1}};
    assert_false(rt_interp_run(&l, &p.diag));
    assert_non_null(strstr(p.diag.out.data, "argument 'n' has the wrong kind"));
    l.nargs = 3;
    assert_false(rt_interp_run(&l, &p.diag));
    assert_non_null(strstr(p.diag.out.data, "wrong number of arguments: 3 given, 4 expected"));
    drop(&p);
}

/* An offset below the buffer is as much an error as one past its end:
 * `x + arange(0, 16) - 1` reaches 4 bytes before x (the lowest address
 * the interpreter would otherwise read, with status OK). A store below the
 * buffer is the same error, and a masked-off lane is not checked. */
static void test_negative_offset_is_an_error(void **state) {
    (void)state;
    prog p;
    build(&p, "neg.tile", "kernel neg(x: *f32, out: *f32, lo: i32) {\n"
                          "    let v = load(x + arange(0, 16) - 1, mask = arange(0, 16) >= lo);\n"
                          "    store(out + arange(0, 16) - lo, v);\n}\n");
    float x[16] = {0}, out[16];
    rt_buffer bufs[2] = {{x, sizeof x}, {out, sizeof out}};
    rt_arg args[3] = {ptr_arg(0), ptr_arg(1), int_arg(0)};
    rt_launch l = {.func = p.m->funcs, .file = "neg.tile", .buffers = bufs, .nbuffers = 2,
                   .args = args, .nargs = 3, .grid = {1, 1, 1}};
    assert_false(rt_interp_run(&l, &p.diag));
    assert_non_null(strstr(p.diag.out.data, "neg.tile:2:13: error: in kernel 'neg', program (0, 0, 0): out-of-bounds access "
                                            "at byte offset -4 of the 64-byte buffer passed as 'x'"));
    tc_diag_free(&p.diag);
    tc_diag_init(&p.diag);
    args[2] = int_arg(1); /* lane 0 masked off: the load is in bounds, the store's lane 0 is not */
    assert_false(rt_interp_run(&l, &p.diag));
    assert_non_null(strstr(p.diag.out.data, "neg.tile:3:5: error: in kernel 'neg', program (0, 0, 0): out-of-bounds access "
                                            "at byte offset -4 of the 64-byte buffer passed as 'out'"));
    drop(&p);
}

/* A buffer slot index is checked against the buffer's slots both ways
 * (the passes only make slots below the count; a .tir file can make any). */
static void test_buffer_slot_out_of_range(void **state) {
    (void)state;
    static const char src[] = "kernel @k(%x: ptr<f32>, %s: i32) {\n"
                              "  %xs = splat %x : tile<16xptr<f32>>\n"
                              "  %o = arange 0, 16 : tile<16xi32>\n"
                              "  %p = addptr %xs, %o : tile<16xptr<f32>>\n"
                              "  %v = load %p : tile<16xf32>\n"
                              "  %buf = local_alloc : smem<2x16xf32>\n"
                              "  local_store %buf, %s, %v loc(7:3)\n"
                              "  %w = local_load %buf, %s : tile<16xf32> loc(8:3)\n"
                              "  store %p, %w\n"
                              "  return\n}\n";
    prog p;
    build(&p, "slot.tir", src);
    float x[16] = {0};
    rt_buffer bufs[1] = {{x, sizeof x}};
    const int64_t slots[] = {1, 2, -1};
    const char *want[] = {NULL, "slot.tir:7:3: error: in kernel 'k', program (0, 0, 0): buffer slot 2 of 2 out of range",
                          "slot.tir:7:3: error: in kernel 'k', program (0, 0, 0): buffer slot -1 of 2 out of range"};
    for (int t = 0; t < 3; t++) {
        rt_arg args[2] = {ptr_arg(0), int_arg(slots[t])};
        rt_launch l = {.func = p.m->funcs, .file = "slot.tir", .buffers = bufs, .nbuffers = 1,
                       .args = args, .nargs = 2, .grid = {1, 1, 1}};
        tc_diag_free(&p.diag);
        tc_diag_init(&p.diag);
        bool ok = rt_interp_run(&l, &p.diag);
        if (!want[t]) {
            if (!ok) fail_msg("slot %lld: %s", (long long)slots[t], p.diag.out.data);
            continue;
        }
        assert_false(ok);
        if (!strstr(p.diag.out.data, want[t])) fail_msg("slot %lld: got %s", (long long)slots[t], p.diag.out.data);
    }
    drop(&p);
}

/* A run-time loop step of 0 or less is an error when the loop would run
 * (it would never end); an empty range runs nothing whatever the step. */
static void test_run_time_loop_step(void **state) {
    (void)state;
    prog p;
    build(&p, "step.tile", "kernel s(x: *i32, n: i32, st: i32) {\n"
                           "    var t = 0;\n"
                           "    for i in range(0, n, st) { t = t + 1; }\n"
                           "    store(x, t);\n}\n");
    int32_t x[1] = {-1};
    rt_buffer bufs[1] = {{x, sizeof x}};
    rt_arg args[3] = {ptr_arg(0), int_arg(10), int_arg(3)};
    rt_launch l = {.func = p.m->funcs, .file = "step.tile", .buffers = bufs, .nbuffers = 1,
                   .args = args, .nargs = 3, .grid = {1, 1, 1}};
    if (!rt_interp_run(&l, &p.diag)) fail_msg("%s", p.diag.out.data);
    assert_int_equal(x[0], 4);
    const int64_t bad[] = {0, -1};
    for (int t = 0; t < 2; t++) {
        args[2] = int_arg(bad[t]);
        assert_false(rt_interp_run(&l, &p.diag));
        assert_non_null(strstr(p.diag.out.data, "step.tile:3:5: error: in kernel 's', program (0, 0, 0): loop step must be positive"));
    }
    args[1] = int_arg(0); /* empty: no trip, no error */
    tc_diag_free(&p.diag);
    tc_diag_init(&p.diag);
    if (!rt_interp_run(&l, &p.diag)) fail_msg("%s", p.diag.out.data);
    assert_int_equal(x[0], 0);
    drop(&p);
}

/* A pointer argument must name one of the launch's buffers. */
static void test_pointer_argument_past_the_buffers(void **state) {
    (void)state;
    prog p;
    build(&p, "vadd.tile", vadd_src);
    float b[4];
    rt_buffer bufs[1] = {{b, sizeof b}};
    rt_arg args[4] = {ptr_arg(0), ptr_arg(1), ptr_arg(0), int_arg(1)}; /* buffer 1 of 1 */
    rt_launch l = {.func = p.m->funcs, .file = "vadd.tile", .buffers = bufs, .nbuffers = 1,
                   .args = args, .nargs = 4, .grid = {1, 1, 1}};
    assert_false(rt_interp_run(&l, &p.diag));
    assert_non_null(strstr(p.diag.out.data, "argument 'y' has the wrong kind"));
    drop(&p);
}

/* Round to f16 the slow, obvious way, for the reference. */
static double ref_round_f16(double x) {
    if (x == 0 || !isfinite(x)) return x;
    int e;
    frexp(x, &e);
    int exp = e - 1 < -14 ? -14 : e - 1;
    double step = ldexp(1.0, exp - 10);
    double r = nearbyint(x / step) * step;
    return fabs(r) > 65504 ? copysign(INFINITY, x) : r;
}

static void test_f16_arithmetic_rounds_like_f16(void **state) {
    (void)state;
    prog p;
    build(&p, "h.tile",
          "kernel h(x: *f16, out: *f32, s: f32) {\n"
          "    let o = arange(0, 64);\n"
          "    let v = load(x + o) * 3 + 0.1;\n" /* f16 ops: 3 and 0.1 become f16 */
          "    store(out + o, v * s);\n"         /* f16 * f32 -> f32 */
          "}\n");
    uint16_t xh[64];
    float out[64];
    double xs[64];
    for (int i = 0; i < 64; i++) {
        /* random f16 values: sign, exponent 10..20, random mantissa */
        xh[i] = (uint16_t)((rand() & 1) << 15 | (10 + rand() % 10) << 10 | (rand() & 1023));
        int exp = (xh[i] >> 10) & 31, mant = xh[i] & 1023;
        xs[i] = ldexp(1024 + mant, exp - 25) * ((xh[i] & 0x8000) ? -1 : 1);
        out[i] = NAN;
    }
    rt_buffer bufs[2] = {{xh, sizeof xh}, {out, sizeof out}};
    rt_arg args[3] = {ptr_arg(0), ptr_arg(1), float_arg(0.5)};
    rt_launch l = {.func = p.m->funcs, .file = "h.tile", .buffers = bufs, .nbuffers = 2,
                   .args = args, .nargs = 3, .grid = {1, 1, 1}};
    assert_true(rt_interp_run(&l, &p.diag));
    double tenth = ref_round_f16(0.1);
    for (int i = 0; i < 64; i++) {
        double v = ref_round_f16(ref_round_f16(xs[i] * 3) + tenth);
        float want = (float)(v * 0.5);
        if (out[i] != want) fail_msg("out[%d] = %.9g, want %.9g (x = %.9g)", i, out[i], want, xs[i]);
    }
    drop(&p);
}

static void test_integer_semantics(void **state) {
    (void)state;
    prog p;
    build(&p, "i.tile",
          "kernel k(a: *i32, b: *i32, q: *i32, r: *i32, sh: *i32, w: *i8) {\n"
          "    let o = arange(0, 8);\n"
          "    let x = load(a + o);\n"
          "    let y = load(b + o);\n"
          "    store(q + o, x / y);\n"
          "    store(r + o, x % y);\n"
          "    store(sh + o, (x << y) + (x >> y));\n"
          "    store(w + o, load(w + o) + 100);\n"
          "}\n");
    int32_t a[8] = {7, -7, 7, -7, INT32_MIN, 5, -1, 1000};
    int32_t b[8] = {2, 2, -2, -2, -1, 40, 31, 3};
    int32_t q[8], r[8], sh[8];
    int8_t w[8] = {100, -100, 27, 28, 0, -128, 127, 1};
    int8_t w0[8];
    memcpy(w0, w, sizeof w);
    rt_buffer bufs[6] = {{a, sizeof a}, {b, sizeof b}, {q, sizeof q}, {r, sizeof r}, {sh, sizeof sh}, {w, sizeof w}};
    rt_arg args[6] = {ptr_arg(0), ptr_arg(1), ptr_arg(2), ptr_arg(3), ptr_arg(4), ptr_arg(5)};
    rt_launch l = {.func = p.m->funcs, .file = "i.tile", .buffers = bufs, .nbuffers = 6,
                   .args = args, .nargs = 6, .grid = {1, 1, 1}};
    assert_true(rt_interp_run(&l, &p.diag));
    int32_t want_q[8] = {3, -3, -3, 3, INT32_MIN, 0, 0, 333}, want_r[8] = {1, -1, 1, -1, 0, 5, -1, 1};
    for (int i = 0; i < 8; i++) {
        assert_int_equal(q[i], want_q[i]);
        assert_int_equal(r[i], want_r[i]);
        /* shift counts compare unsigned: negative ones are "too large" */
        int64_t s = (uint32_t)b[i] >= 32 ? 0 : (int32_t)((uint32_t)a[i] << b[i]);
        int64_t t = a[i] >> ((uint32_t)b[i] >= 32 ? 31 : b[i]);
        assert_int_equal(sh[i], (int32_t)(uint32_t)(s + t));
        assert_int_equal(w[i], (int8_t)(uint8_t)(w0[i] + 100));
    }
    drop(&p);
}

/* multiple_of's promise is checked by the reference semantics: kept, the
 * value passes through; broken, the launch fails at the call, naming both
 * numbers. */
static void test_multiple_of_checks_its_promise(void **state) {
    (void)state;
    prog p;
    build(&p, "m.tile",
          "kernel k(a: *i64, n: i32, s: i64) {\n"
          "    store(a, cast(multiple_of(n, 16), i64) + multiple_of(s, 1024));\n}\n");
    int64_t a[1] = {0};
    rt_buffer bufs[1] = {{a, sizeof a}};
    rt_arg args[3] = {ptr_arg(0), int_arg(-48), int_arg(1 << 20)};
    rt_launch l = {.func = p.m->funcs, .file = "m.tile", .buffers = bufs, .nbuffers = 1,
                   .args = args, .nargs = 3, .grid = {1, 1, 1}};
    assert_true(rt_interp_run(&l, &p.diag));
    assert_int_equal(a[0], -48 + (1 << 20));
    args[2] = int_arg(1 << 20 | 512);
    assert_false(rt_interp_run(&l, &p.diag));
    assert_non_null(strstr(p.diag.out.data, "m.tile:2:"));
    assert_non_null(strstr(p.diag.out.data, "multiple_of: 1049088 is not a multiple of 1024"));
    drop(&p);
}

static void test_division_by_zero_is_an_error(void **state) {
    (void)state;
    prog p;
    build(&p, "z.tile", "kernel k(a: *i32, d: i32) {\n    store(a, load(a) / d);\n}\n");
    int32_t a[1] = {5};
    rt_buffer bufs[1] = {{a, sizeof a}};
    rt_arg args[2] = {ptr_arg(0), int_arg(0)};
    rt_launch l = {.func = p.m->funcs, .file = "z.tile", .buffers = bufs, .nbuffers = 1,
                   .args = args, .nargs = 2, .grid = {1, 1, 1}};
    assert_false(rt_interp_run(&l, &p.diag));
    assert_non_null(strstr(p.diag.out.data, "z.tile:2:"));
    assert_non_null(strstr(p.diag.out.data, "integer division by zero"));
    drop(&p);
}

static void test_loop_sum_and_grid_axes(void **state) {
    (void)state;
    prog p;
    build(&p, "sum.tir",
          "kernel @sum(%x: ptr<f32>, %out: ptr<f32>, %n: i32) {\n"
          "  %lo = const 0 : i32\n  %step = const 64 : i32\n  %z = const 0.0 : f32\n"
          "  %acc0 = splat %z : tile<64xf32>\n  %r = arange 0, 64 : tile<64xi32>\n"
          "  %row = program_id 1 : i32\n  %rowoff = mul %row, %n : i32\n"
          "  %xr = addptr %x, %rowoff : ptr<f32>\n  %xs = splat %xr : tile<64xptr<f32>>\n"
          "  %acc = for %lo, %n, %step, %acc0 : tile<64xf32> {\n"
          "  ^(%i: i32, %a: tile<64xf32>):\n"
          "    %is = splat %i : tile<64xi32>\n    %o = add %is, %r : tile<64xi32>\n"
          "    %p = addptr %xs, %o : tile<64xptr<f32>>\n    %v = load %p : tile<64xf32>\n"
          "    %a2 = add %a, %v : tile<64xf32>\n    yield %a2\n  }\n"
          "  %orow = mul %row, %step : i32\n  %ob = addptr %out, %orow : ptr<f32>\n"
          "  %os = splat %ob : tile<64xptr<f32>>\n  %op = addptr %os, %r : tile<64xptr<f32>>\n"
          "  store %op, %acc\n  return\n}\n");
    enum { ROWS = 3, N = 256 };
    float x[ROWS * N], out[ROWS * 64];
    for (int i = 0; i < ROWS * N; i++) x[i] = rand_float();
    for (int i = 0; i < ROWS * 64; i++) out[i] = NAN;
    rt_buffer bufs[2] = {{x, sizeof x}, {out, sizeof out}};
    rt_arg args[3] = {ptr_arg(0), ptr_arg(1), int_arg(N)};
    rt_launch l = {.func = p.m->funcs, .file = "sum.tir", .buffers = bufs, .nbuffers = 2,
                   .args = args, .nargs = 3, .grid = {1, ROWS, 1}};
    assert_true(rt_interp_run(&l, &p.diag));
    for (int row = 0; row < ROWS; row++)
        for (int j = 0; j < 64; j++) {
            float want = 0; /* same order as the kernel: f32 adds */
            for (int i = 0; i < N; i += 64) want += x[row * N + i + j];
            if (out[row * 64 + j] != want) fail_msg("row %d col %d: %g want %g", row, j, out[row * 64 + j], want);
        }
    drop(&p);
}

static void test_for_loop_from_source(void **state) {
    (void)state;
    prog p;
    build(&p, "rowsum.tile",
          "kernel rowsum(x: *f32, out: *f32, n: i32, const BLOCK: i32 = 64) {\n"
          "    let row = program_id(0);\n"
          "    let cols = arange(0, BLOCK);\n"
          "    var acc = load(x + cols) * 0.0;\n"
          "    var count = 0;\n"
          "    for start in range(0, n, BLOCK) {\n"
          "        let c = start + cols;\n"
          "        acc = acc + load(x + row * n + c, c < n, other = 0.0);\n"
          "        count = count + 1;\n"
          "    }\n"
          "    store(out + row * BLOCK + cols, acc + count);\n"
          "}\n");
    enum { ROWS = 3, N = 200, B = 64 };
    float x[ROWS * N], out[ROWS * B];
    for (int i = 0; i < ROWS * N; i++) x[i] = rand_float();
    for (int i = 0; i < ROWS * B; i++) out[i] = NAN;
    rt_buffer bufs[2] = {{x, sizeof x}, {out, sizeof out}};
    rt_arg args[3] = {ptr_arg(0), ptr_arg(1), int_arg(N)};
    rt_launch l = {.func = p.m->funcs, .file = "rowsum.tile", .buffers = bufs, .nbuffers = 2,
                   .args = args, .nargs = 3, .grid = {ROWS, 1, 1}};
    if (!rt_interp_run(&l, &p.diag)) fail_msg("%s", p.diag.out.data);
    int trips = (N + B - 1) / B;
    for (int row = 0; row < ROWS; row++)
        for (int j = 0; j < B; j++) {
            float acc = x[j] * 0.0f; /* same order and precision as the kernel */
            for (int s = 0; s < N; s += B) acc += s + j < N ? x[row * N + s + j] : 0.0f;
            float want = acc + (float)trips;
            if (out[row * B + j] != want) fail_msg("row %d col %d: %g want %g", row, j, out[row * B + j], want);
        }
    drop(&p);
}

static void test_math_builtins(void **state) {
    (void)state;
    prog p;
    build(&p, "m.tile",
          "kernel m(x: *f32, y: *f32, out: *f32, iout: *i32, n: i32) {\n"
          "    let o = arange(0, 64);\n"
          "    let a = load(x + o);\n"
          "    let b = load(y + o);\n"
          "    store(out + o, where(a > b, a, b) + minimum(a, 0.5) * maximum(b, -1));\n"
          "    store(out + 64 + o, sqrt(abs(b)) + floor(a) - ceil(b) + fma(a, b, 2.0));\n"
          "    store(iout + o, abs(cast(a * 10, i32)) + minimum(o, 7) + cdiv(n, 16) + cdiv(o, 3));\n"
          "    store(out + 128 + o, full(64, 0.25) + zeros(64, f32) + cast(cast(a, f16), f32));\n"
          "}\n");
    float x[64], y[64], out[192];
    int32_t iout[64];
    for (int i = 0; i < 64; i++) x[i] = rand_float(), y[i] = rand_float();
    x[3] = NAN, y[5] = NAN, x[7] = -0.0f, y[7] = 0.0f; /* NaN propagates; -0 is the smaller zero */
    for (int i = 0; i < 192; i++) out[i] = 12345;
    rt_buffer bufs[4] = {{x, sizeof x}, {y, sizeof y}, {out, sizeof out}, {iout, sizeof iout}};
    rt_arg args[5] = {ptr_arg(0), ptr_arg(1), ptr_arg(2), ptr_arg(3), int_arg(100)};
    rt_launch l = {.func = p.m->funcs, .file = "m.tile", .buffers = bufs, .nbuffers = 4,
                   .args = args, .nargs = 5, .grid = {1, 1, 1}};
    if (!rt_interp_run(&l, &p.diag)) fail_msg("%s", p.diag.out.data);
    for (int i = 0; i < 64; i++) {
        float a = x[i], b = y[i];
        float mn = isnan(a) ? NAN : (a < 0.5f ? a : 0.5f);
        float mx = isnan(b) ? NAN : (b > -1.0f ? b : -1.0f);
        float w1 = (a > b ? a : b) + mn * mx;
        float w2 = sqrtf(fabsf(b)) + floorf(a) - ceilf(b) + fmaf(a, b, 2.0f);
        if (!(out[i] == w1 || (isnan(out[i]) && isnan(w1)))) fail_msg("where/min/max [%d]: %g want %g", i, out[i], w1);
        if (!(out[64 + i] == w2 || (isnan(out[64 + i]) && isnan(w2)))) fail_msg("math [%d]: %g want %g", i, out[64 + i], w2);
        if (!isnan(a)) {
            float t = a * 10;
            int32_t want = abs((int32_t)t) + (i < 7 ? i : 7) + 7 + (i + 2) / 3;
            assert_int_equal(iout[i], want);
            /* f32 -> f16 -> f32 rounds to 11 significant bits */
            float h = out[128 + i] - 0.25f;
            assert_true(fabsf(h - a) <= fabsf(a) * 0x1p-11f + 1e-7f);
        }
    }
    drop(&p);
}

static void test_min_of_signed_zeros(void **state) {
    (void)state;
    prog p;
    build(&p, "z.tile", "kernel z(x: *f32) {\n    store(x + 2, minimum(load(x), load(x + 1)));\n"
                        "    store(x + 3, maximum(load(x), load(x + 1)));\n}\n");
    float v[4] = {0.0f, -0.0f, 7, 7};
    rt_buffer bufs[1] = {{v, sizeof v}};
    rt_arg args[1] = {ptr_arg(0)};
    rt_launch l = {.func = p.m->funcs, .file = "z.tile", .buffers = bufs, .nbuffers = 1,
                   .args = args, .nargs = 1, .grid = {1, 1, 1}};
    assert_true(rt_interp_run(&l, &p.diag));
    assert_true(v[2] == 0 && signbit(v[2]));  /* min(+0, -0) = -0 */
    assert_true(v[3] == 0 && !signbit(v[3])); /* max(+0, -0) = +0 */
    drop(&p);
}

/* The interpreter computes these exactly (then rounds to the type); the
 * GPU's .approx instructions are within a few ulp of it. */
static void test_transcendental_functions(void **state) {
    (void)state;
    prog p;
    build(&p, "t.tile",
          "kernel t(x: *f32, out: *f32) {\n"
          "    let o = arange(0, 64);\n"
          "    let a = load(x + o);\n"
          "    store(out + o, exp(a));\n"
          "    store(out + 64 + o, log(abs(a) + 1));\n"
          "    store(out + 128 + o, sin(a) + cos(a));\n"
          "    store(out + 192 + o, rsqrt(abs(a) + 1));\n"
          "    store(out + 256 + o, sigmoid(a));\n"
          "    store(out + 320 + o, tanh(a));\n"
          "    store(out + 384 + o, exp2(a) * log2(abs(a) + 2));\n"
          "}\n");
    float x[64], out[448];
    for (int i = 0; i < 64; i++) x[i] = rand_float() / 2; /* about -5..5 */
    for (int i = 0; i < 448; i++) out[i] = NAN;
    rt_buffer bufs[2] = {{x, sizeof x}, {out, sizeof out}};
    rt_arg args[2] = {ptr_arg(0), ptr_arg(1)};
    rt_launch l = {.func = p.m->funcs, .file = "t.tile", .buffers = bufs, .nbuffers = 2,
                   .args = args, .nargs = 2, .grid = {1, 1, 1}};
    if (!rt_interp_run(&l, &p.diag)) fail_msg("%s", p.diag.out.data);
    for (int i = 0; i < 64; i++) {
        double a = x[i];
        double want[7] = {exp(a), log(fabs(a) + 1), sin(a) + cos(a), 1 / sqrt(fabs(a) + 1), 1 / (1 + exp(-a)),
                          tanh(a), exp2(a) * log2(fabs(a) + 2)};
        for (int k = 0; k < 7; k++) {
            double got = out[64 * k + i], tol = 1e-5 * fabs(want[k]) + 1e-6; /* f32 steps on the way */
            if (fabs(got - want[k]) > tol) fail_msg("function %d at x=%g: %.9g, want %.9g", k, a, got, want[k]);
        }
    }
    drop(&p);
}

/* Atomics are checked like loads and stores: an address past the buffer
 * is an error naming the line, unless its lane is masked off. */
static void test_atomic_out_of_bounds_is_an_error(void **state) {
    (void)state;
    prog p;
    build(&p, "atom.tile", "kernel a(x: *i32, n: i32, k: i32) {\n"
                           "    let o = arange(0, 16);\n"
                           "    atomic_add(x + o * k, 1, mask = o < n);\n}\n");
    int32_t x[16] = {0};
    rt_buffer bufs[1] = {{x, sizeof x}};
    rt_arg ok_args[3] = {ptr_arg(0), int_arg(8), int_arg(2)}; /* lanes 8.. would be past the end: off */
    rt_launch l = {.func = p.m->funcs, .file = "atom.tile", .buffers = bufs, .nbuffers = 1,
                   .args = ok_args, .nargs = 3, .grid = {1, 1, 1}};
    if (!rt_interp_run(&l, &p.diag)) fail_msg("%s", p.diag.out.data);
    for (int i = 0; i < 16; i++) assert_int_equal(x[i], i % 2 == 0);
    rt_arg bad_args[3] = {ptr_arg(0), int_arg(9), int_arg(2)};
    l.args = bad_args;
    assert_false(rt_interp_run(&l, &p.diag));
    assert_non_null(strstr(p.diag.out.data, "atom.tile:3:5: error: in kernel 'a', program (0, 0, 0): out-of-bounds access at "
                                            "byte offset 64 of the 64-byte buffer passed as 'x'"));
    drop(&p);
}

/* The interpreter's own order and arithmetic: a tile's elements update in
 * row-major order (duplicates see the ones before them); i32 wraps; f16
 * rounds once to f16; f32 flushes subnormals as PTX's atom.add.f32. */
/* dot: a (MxK) . b (KxN) + acc against a float64 reference; f32 inputs
 * round to tf32 (ties away from zero) unless input_precision = "ieee";
 * i8 sums wrap in i32. */
static const char dot_src[] =
    "kernel mm(a: *f32, b: *f32, c: *f32, c_ieee: *f32, const M: i32 = 32, const N: i32 = 16, const K: i32 = 64) {\n"
    "    let m = arange(0, M);\n"
    "    let n = arange(0, N);\n"
    "    let k = arange(0, K);\n"
    "    let x = load(a + m[:, None] * K + k[None, :]);\n"
    "    let y = load(b + k[:, None] * N + n[None, :]);\n"
    "    let acc = full((M, N), 0.5);\n"
    "    store(c + m[:, None] * N + n[None, :], dot(x, y, acc));\n"
    "    store(c_ieee + m[:, None] * N + n[None, :], dot(x, y, acc, input_precision = \"ieee\"));\n"
    "}\n"
    "kernel mm8(a: *i8, b: *i8, c: *i32) {\n"
    "    let m = arange(0, 16);\n"
    "    let k = arange(0, 32);\n"
    "    let x = load(a + m[:, None] * 32 + k[None, :]);\n"
    "    let y = load(b + k[:, None] * 16 + m[None, :]);\n"
    "    store(c + m[:, None] * 16 + m[None, :], dot(x, y, full((16, 16), 2147480000)));\n"
    "}\n";

static void test_dot_products(void **state) {
    (void)state;
    enum { M = 32, N = 16, K = 64 };
    prog p;
    build(&p, "dot.tile", dot_src);
    float a[M * K], b[K * N], c[M * N], ci[M * N];
    for (int i = 0; i < M * K; i++) a[i] = rand_float();
    for (int i = 0; i < K * N; i++) b[i] = rand_float();
    a[0] = 1.0f + 0x1p-11f; /* exactly between two tf32 values: ties away, to 1 + 2^-10 */
    for (int k = 0; k < K; k++) b[k * N] = k ? 0.0f : 1.0f; /* c[0][0] = 0.5 + a[0][0] */
    for (int i = 1; i < K; i++) a[i] = 0.0f;
    for (int i = 0; i < M * N; i++) c[i] = ci[i] = NAN;
    rt_buffer bufs[4] = {{a, sizeof a}, {b, sizeof b}, {c, sizeof c}, {ci, sizeof ci}};
    rt_arg args[4] = {ptr_arg(0), ptr_arg(1), ptr_arg(2), ptr_arg(3)};
    rt_launch l = {.func = p.m->funcs, .file = "dot.tile", .buffers = bufs, .nbuffers = 4,
                   .args = args, .nargs = 4, .grid = {1, 1, 1}};
    assert_true(rt_interp_run(&l, &p.diag));
    assert_true(c[0] == 0.5f + 1.0f + 0x1p-10f);
    assert_true(ci[0] == 0.5f + 1.0f + 0x1p-11f);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0.5, mag = 0.5;
            for (int k = 0; k < K; k++) ref += (double)a[i * K + k] * b[k * N + j], mag += fabs((double)a[i * K + k] * b[k * N + j]);
            /* ieee: K f32 roundings; tf32: each input off by up to 2^-11 relative */
            double tol_ieee = K * 0x1p-24 * mag, tol_tf32 = 2 * 0x1p-11 * mag + tol_ieee;
            if (fabs(ci[i * N + j] - ref) > tol_ieee) fail_msg("ieee [%d][%d] = %.9g, want %.9g", i, j, ci[i * N + j], ref);
            if (fabs(c[i * N + j] - ref) > tol_tf32) fail_msg("tf32 [%d][%d] = %.9g, want %.9g", i, j, c[i * N + j], ref);
        }
    int8_t a8[16 * 32], b8[32 * 16];
    int32_t c8[16 * 16];
    for (int i = 0; i < 16 * 32; i++) a8[i] = (int8_t)(rand() % 256 - 128), b8[i] = (int8_t)(rand() % 256 - 128);
    for (int i = 0; i < 16 * 16; i++) c8[i] = 12345; /* poison */
    rt_buffer bufs8[3] = {{a8, sizeof a8}, {b8, sizeof b8}, {c8, sizeof c8}};
    rt_launch l8 = {.func = p.m->funcs->next, .file = "dot.tile", .buffers = bufs8, .nbuffers = 3,
                    .args = args, .nargs = 3, .grid = {1, 1, 1}};
    assert_true(rt_interp_run(&l8, &p.diag));
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            int64_t ref = 2147480000;
            for (int k = 0; k < 32; k++) ref += a8[i * 32 + k] * b8[k * 16 + j];
            assert_int_equal(c8[i * 16 + j], (int32_t)(uint32_t)(uint64_t)ref); /* wraps past INT32_MAX */
        }
    drop(&p);
}

/* Software pipelining (lower/pipeline_loops.c) must not change results:
 * a matmul loop over K run as the front end built it and after the whole
 * pass pipeline (layouts, loads staged through shared-memory rings S-1
 * trips ahead), for S = 2, 3, 4 and K with no trip, fewer trips than
 * stages, and a masked tail. */
static const char pipelined_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, const S: i32 = 3, const BK: i32 = 16) {\n"
    "    let m = program_id(0) * 32 + arange(0, 32);\n"
    "    let n = arange(0, 32);\n"
    "    let kk = arange(0, BK);\n"
    "    var acc = zeros((32, 32), f32);\n"
    "    for k in range(0, K, BK, num_stages = S) {\n"
    "        let x = load(a + m[:, None] * K + (k + kk)[None, :], (m[:, None] < M) & ((k + kk)[None, :] < K), other = 0.0);\n"
    "        let y = load(b + (k + kk)[:, None] * N + n[None, :], ((k + kk)[:, None] < K) & (n[None, :] < N));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + m[:, None] * N + n[None, :], acc, (m[:, None] < M) & (n[None, :] < N));\n"
    "}\n";

/* local_loads, and those of a part of a slot past its start
 * (prefetch_fragments' K pieces) */
typedef struct load_count {
    int loads, parts;
} load_count;

static void count_op(tir_op *op, void *p) {
    load_count *n = p;
    if (op->code != TIR_OP_LOCAL_LOAD) return;
    n->loads++;
    if (op->attr.offset[0] || op->attr.offset[1]) n->parts++;
}

/* Runs kernel `src` (params a, b, c, M, N, K, then with `strides` the row
 * strides of a and b, and const S, and const BK = bk unless bk is 0) for
 * S = 2, 3, 4 as the front end built
 * it and after the whole pass pipeline, for each K in ks, on f16 inputs of
 * M x K and K x N, and checks that the pipeline staged both loads, that every element of c is written, and
 * that the pipelined results equal the plain ones bit for bit (the same
 * order of additions). */
enum { PIPE_M = 45, PIPE_N = 29, PIPE_KMAX = 640, PIPE_MAX_KS = 8 };

static void check_pipelining_keeps_results(const char *name, const char *src, const int *ks, int nks, bool strides,
                                           int bk) {
    static uint16_t a[PIPE_M * PIPE_KMAX], b[PIPE_KMAX * PIPE_N];
    static float out[2][PIPE_MAX_KS][PIPE_M * PIPE_N];
    enum { M = PIPE_M, N = PIPE_N };
    assert_true(nks <= PIPE_MAX_KS);
    for (int s = 2; s <= 4; s++) {
        tilec_define def[2] = {{.name = "S", .value = s}, {.name = "BK", .value = bk}};
        for (int pipelined = 0; pipelined < 2; pipelined++) {
            prog p;
            p.arena = tc_arena_new();
            tc_diag_init(&p.diag);
            p.src = (tc_source){.name = name, .text = src, .len = strlen(src)};
            ast_module *ast = parse_module(p.arena, &p.src, &p.diag);
            tilec_options lo = {.defines = def, .ndefines = bk ? 2 : 1};
            p.m = ast ? lang_to_tir(ast, &lo, p.arena, &p.diag) : NULL;
            if (!p.m) fail_msg("%s does not compile:\n%s", name, p.diag.out.data);
            lower_options opt = {.compile.passes = pipelined ? NULL : "simplify"}; /* NULL: every pass */
            assert_true(lower_run_pipeline(p.m, &opt, &p.diag));
            load_count n = {0};
            tir_walk(p.m->funcs, count_op, &n);
            /* the pass did stage both loads (prefetch_fragments reads each
             * ring before the loop and at the end of a trip too; with K
             * pieces past the first, in the trip) */
            if (pipelined) assert_true(n.loads >= 2);
            else assert_int_equal(n.loads, 0);
            assert_true(pipelined && bk > 16 ? n.parts > 0 : n.parts == 0);
            for (int t = 0; t < nks; t++) {
                int K = ks[t];
                assert_true(K <= PIPE_KMAX);
                srand((unsigned)(K + 1));
                for (int i = 0; i < M * K; i++) a[i] = (uint16_t)(0x3000 + rand() % 0x1000); /* f16 in [0.125, 1) */
                for (int i = 0; i < K * N; i++) b[i] = (uint16_t)(0xb000 + rand() % 0x1000);
                float *c = out[pipelined][t], *ref = out[0][t];
                for (int i = 0; i < M * N; i++) c[i] = NAN;
                rt_buffer bufs[3] = {{a, sizeof a}, {b, sizeof b}, {c, sizeof out[0][0]}};
                rt_arg args[8] = {ptr_arg(0), ptr_arg(1), ptr_arg(2), int_arg(M), int_arg(N), int_arg(K),
                                  int_arg(K), int_arg(N)};
                rt_launch l = {.func = p.m->funcs, .file = name, .buffers = bufs, .nbuffers = 3,
                               .args = args, .nargs = strides ? 8 : 6, .grid = {(M + 31) / 32, 1, 1}};
                if (!rt_interp_run(&l, &p.diag)) fail_msg("%s S=%d K=%d: %s", name, s, K, p.diag.out.data);
                for (int i = 0; i < M * N; i++)
                    if (isnan(c[i])) fail_msg("%s S=%d K=%d: c[%d] not written", name, s, K, i);
                if (pipelined)
                    for (int i = 0; i < M * N; i++)
                        if (!(c[i] == ref[i]))
                            fail_msg("%s S=%d K=%d: c[%d] = %g pipelined, %g not", name, s, K, i, c[i], ref[i]);
            }
            drop(&p);
        }
    }
}

static void test_pipelined_loop_gives_the_same_results(void **state) {
    (void)state;
    const int ks[6] = {0, 1, 16, 17, 40, 100};
    check_pipelining_keeps_results("pipe.tile", pipelined_src, ks, 6, false, 0);
}

/* The same with a K step (BK) of 64, which prefetch_fragments splits into
 * pieces of 16 (the first carried from the trip before, the others read
 * at offsets in the trip): the dots add the pieces in K order, as one dot
 * does, so the results stay the same bit for bit. */
static void test_pipelined_pieces_give_the_same_results(void **state) {
    (void)state;
    const int ks[6] = {0, 1, 64, 65, 130, 600};
    check_pipelining_keeps_results("pieces.tile", pipelined_src, ks, 6, false, 64);
}

/* The same for a loop that carries its pointers and a k offset from trip
 * to trip, as Triton's tutorial matmul does (`a_ptrs += BK * stride_ak`;
 * carried induction values in lower/pipeline_loops.c): for S = 2, 3, 4
 * and 0, 1, 16, 17 and 40 trips (K = 16 * trips, less 7 where the last
 * trip has a masked tail), the pipelined loop against the unpipelined one,
 * bit for bit. */
static const char carried_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, stride_am: i32, stride_bk: i32,\n"
    "          const S: i32 = 3) {\n"
    "    let offs_am = program_id(0) * 32 + arange(0, 32);\n"
    "    let offs_bn = arange(0, 32);\n"
    "    let offs_k = arange(0, 16);\n"
    "    var a_ptrs = a + offs_am[:, None] * stride_am + offs_k[None, :];\n"
    "    var b_ptrs = b + offs_k[:, None] * stride_bk + offs_bn[None, :];\n"
    "    var k0 = 0;\n"
    "    var acc = zeros((32, 32), f32);\n"
    "    for k in range(0, cdiv(K, 16), num_stages = S) {\n"
    "        let x = load(a_ptrs, (offs_am[:, None] < M) & ((k0 + offs_k)[None, :] < K), other = 0.0);\n"
    "        let y = load(b_ptrs, (offs_k[:, None] < K - k * 16) & (offs_bn[None, :] < N));\n"
    "        acc = dot(x, y, acc);\n"
    "        a_ptrs = a_ptrs + 16;\n"
    "        b_ptrs = 16 * stride_bk + b_ptrs;\n"
    "        k0 = k0 + 16;\n"
    "    }\n"
    "    store(c + offs_am[:, None] * N + offs_bn[None, :], acc, (offs_am[:, None] < M) & (offs_bn[None, :] < N));\n"
    "}\n";

static void test_pipelined_carried_pointers_give_the_same_results(void **state) {
    (void)state;
    /* 0, 1, 16, 17 and 40 trips of 16, less 7 where the last is a masked tail */
    const int ks[5] = {0, 16 - 7, 16 * 16, 17 * 16 - 7, 40 * 16 - 7};
    check_pipelining_keeps_results("carried.tile", carried_src, ks, 5, true, 0);
}

static void test_atomic_order_and_rounding(void **state) {
    (void)state;
    prog p;
    build(&p, "atom.tile", "kernel a(c: *i32, olds: *i32, h: *f16, f: *f32, fo: *f32) {\n"
                           "    let o = arange(0, 8);\n"
                           "    store(olds + o, atomic_add(c + o % 2, 1 + 2147483646 * (o / 6)));\n"
                           "    atomic_add(h, 0.00048828125);\n"
                           "    store(fo + o, atomic_add(f + o, load(f + 8 + o)));\n}\n");
    int32_t c[2] = {0, 0}, olds[8];
    uint16_t h = 0x3c01; /* 1 + 2^-10; adding 2^-11 ties, to the even 1 + 2^-9 */
    float f[16] = {1e-39f, -1e-39f, 0x1p-126f, 0x1p-126f, 5, 0, 0, 0,
                   0, -0.0f, 0x1p-127f, -0x1.8p-126f, 0.25f, 0, 0, 0};
    float fo[8];
    memset(olds, 0x5a, sizeof olds);
    rt_buffer bufs[5] = {{c, sizeof c}, {olds, sizeof olds}, {&h, sizeof h}, {f, sizeof f}, {fo, sizeof fo}};
    rt_arg args[5] = {ptr_arg(0), ptr_arg(1), ptr_arg(2), ptr_arg(3), ptr_arg(4)};
    rt_launch l = {.func = p.m->funcs, .file = "atom.tile", .buffers = bufs, .nbuffers = 5,
                   .args = args, .nargs = 5, .grid = {1, 1, 1}};
    if (!rt_interp_run(&l, &p.diag)) fail_msg("%s", p.diag.out.data);
    /* elements 0, 2, 4 add 1 to c[0], then 6 adds 2147483647; 1, 3, 5, 7 the same to c[1] */
    const int32_t want_olds[8] = {0, 0, 1, 1, 2, 2, 3, 3};
    for (int i = 0; i < 8; i++) assert_int_equal(olds[i], want_olds[i]);
    assert_int_equal(c[0], INT32_MIN + 2); /* 3 + 2147483647 wraps */
    assert_int_equal(c[1], INT32_MIN + 2);
    assert_int_equal(h, 0x3c02);
    assert_true(fo[0] == 1e-39f && fo[3] == 0x1p-126f); /* old values as they were, unflushed */
    assert_true(f[0] == 0 && !signbit(f[0]));  /* a subnormal input is flushed */
    assert_true(f[1] == 0 && signbit(f[1]));   /* to a zero of its sign: -0 + -0 */
    assert_true(f[2] == 0x1p-126f);            /* 2^-126 + 2^-127: the subnormal flushed, not added */
    assert_true(f[3] == 0 && signbit(f[3]));   /* 2^-126 - 1.5 * 2^-126 = -2^-127: a subnormal result */
    assert_true(f[4] == 5.25f);
    drop(&p);
}

int main(void) {
    srand(12345);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vadd_tails_and_grids),
        cmocka_unit_test(test_out_of_bounds_names_file_and_line),
        cmocka_unit_test(test_argument_checks),
        cmocka_unit_test(test_negative_offset_is_an_error),
        cmocka_unit_test(test_buffer_slot_out_of_range),
        cmocka_unit_test(test_run_time_loop_step),
        cmocka_unit_test(test_pointer_argument_past_the_buffers),
        cmocka_unit_test(test_f16_arithmetic_rounds_like_f16),
        cmocka_unit_test(test_integer_semantics),
        cmocka_unit_test(test_multiple_of_checks_its_promise),
        cmocka_unit_test(test_division_by_zero_is_an_error),
        cmocka_unit_test(test_loop_sum_and_grid_axes),
        cmocka_unit_test(test_for_loop_from_source),
        cmocka_unit_test(test_math_builtins),
        cmocka_unit_test(test_min_of_signed_zeros),
        cmocka_unit_test(test_transcendental_functions),
        cmocka_unit_test(test_atomic_out_of_bounds_is_an_error),
        cmocka_unit_test(test_atomic_order_and_rounding),
        cmocka_unit_test(test_dot_products),
        cmocka_unit_test(test_pipelined_loop_gives_the_same_results),
        cmocka_unit_test(test_pipelined_carried_pointers_give_the_same_results),
        cmocka_unit_test(test_pipelined_pieces_give_the_same_results),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
