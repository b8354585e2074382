/* The same kernels on each device, through the public runtime API only.
 *
 *   test_runtime_devices cpu|cuda
 *
 * Every case compiles its kernel with trt_compile, runs it on random
 * inputs (never all zero) with poisoned outputs, and compares with a C
 * reference: exactly where the language defines the result bit for bit
 * (one rounding per f32 operation, wrapping integers, saturating casts),
 * and within a stated tolerance where the GPU may approximate
 * (transcendental functions). Misuse of the API is checked on the device
 * too. ctest runs it once per device; without a GPU the cuda run exits 77
 * after saying why, which ctest reports as skipped. With
 * TILEC_TEST_REQUIRE_CUDA=1 (set by scripts/gpu-check.sh) a missing GPU is
 * a failure instead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <unistd.h>

#include "tilec_rt.h"
#include "half_float.h"

#ifndef TILEC_SOURCE_DIR
#error TILEC_SOURCE_DIR must name the source tree
#endif

static trt_device_kind kind;
static trt_device *dev;

/* ---- helpers ----------------------------------------------------------- */

#define OK(call)                                                                     \
    do {                                                                             \
        trt_status st_ = (call);                                                     \
        if (st_ != TRT_OK) fail_msg("%s: %s: %s", #call, trt_status_name(st_), trt_last_error(dev)); \
    } while (0)

typedef struct prog {
    trt_module *mod;
    char *text;
} prog;

/* The kernel `name` of `src` compiled for this device (with name NULL,
 * only the module); num_warps 0 leaves it to the compiler. */
static trt_kernel *compile_with(prog *p, const char *file, const char *src, const char *name,
                                const tilec_define *defs, size_t ndefs, int num_warps) {
    trt_compile_options o = {.num_warps = num_warps, .defines = defs, .ndefines = ndefs};
    p->text = NULL;
    if (trt_compile(dev, file, src, strlen(src), &o, &p->mod) != TRT_OK)
        fail_msg("%s does not compile: %s", file, trt_last_error(dev));
    trt_kernel *k = NULL;
    if (name) OK(trt_get_kernel(p->mod, name, &k));
    return k;
}

static trt_kernel *compile_text(prog *p, const char *file, const char *src, const char *name,
                                const tilec_define *defs, size_t ndefs) {
    return compile_with(p, file, src, name, defs, ndefs, 0);
}

/* A kernel from a .tile file in the source tree (stdlib/, samples/); with
 * name NULL, only the module. */
static trt_kernel *compile_file(prog *p, const char *rel, const char *name, const tilec_define *defs, size_t ndefs) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TILEC_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = 0;
    fclose(f);
    trt_kernel *k = compile_text(p, rel, text, name, defs, ndefs);
    p->text = text;
    return k;
}

static void drop(prog *p) {
    trt_module_free(p->mod);
    free(p->text);
}

static trt_buffer upload(const void *host, size_t bytes) {
    trt_buffer b;
    OK(trt_alloc(dev, bytes, &b));
    OK(trt_write(dev, b, 0, host, bytes));
    return b;
}

static void download(trt_buffer b, void *host, size_t bytes) {
    OK(trt_read(dev, b, 0, host, bytes));
    OK(trt_free(dev, b));
}

static void launch(trt_kernel *k, uint32_t gx, uint32_t gy, uint32_t gz, const trt_arg *args, size_t nargs) {
    trt_status st = trt_launch(k, gx, gy, gz, args, nargs);
    if (st == TRT_OK) st = trt_sync(dev);
    if (st != TRT_OK) fail_msg("launch: %s: %s", trt_status_name(st), trt_last_error(dev));
}

static uint32_t cdiv(int n, int b) { return (uint32_t)((n + b - 1) / b); }

/* Random values with a fractional part, both signs, never all zero. */
static float rand_f32(void) { return (float)(rand() % 2000001 - 1000000) / 1021.0f; }
static float *rand_f32s(int n) {
    float *p = malloc(sizeof(float) * (size_t)n + 1);
    for (int i = 0; i < n; i++) p[i] = rand_f32();
    return p;
}
static float *poison_f32s(int n) {
    float *p = malloc(sizeof(float) * (size_t)n + 1);
    for (int i = 0; i < n; i++) p[i] = NAN;
    return p;
}
static int32_t rand_i32(void) { return (int32_t)((uint32_t)rand() << 16 ^ (uint32_t)rand()); }

static bool same_f32(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

static void expect_f32(const char *what, int n, const float *got, const float *want) {
    for (int i = 0; i < n; i++)
        if (!same_f32(got[i], want[i]))
            fail_msg("%s on %s: [%d] = %.9g, want %.9g", what, trt_device_name(dev), i, got[i], want[i]);
}

/* ---- elementwise, tails and grid sizes ----------------------------------- */

static const char vadd_src[] =
    "kernel vadd(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);\n"
    "}\n";

static void test_vadd_tails_blocks_grids(void **state) {
    (void)state;
    const int blocks[] = {128, 1024};
    const int sizes[] = {1, 127, 128, 129, 1000, 4096, 100003, (1 << 20) + 3};
    for (size_t b = 0; b < 2; b++) {
        tilec_define d = {"BLOCK", blocks[b]};
        prog p;
        trt_kernel *k = compile_text(&p, "vadd.tile", vadd_src, "vadd", &d, 1);
        for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
            int n = sizes[t], pad = 64; /* elements past n must stay poisoned */
            size_t bytes = sizeof(float) * (size_t)(n + pad);
            float *x = rand_f32s(n + pad), *y = rand_f32s(n + pad), *out = poison_f32s(n + pad);
            trt_buffer bx = upload(x, bytes), by = upload(y, bytes), bo = upload(out, bytes);
            trt_arg a[4] = {trt_buf(bx), trt_buf(by), trt_buf(bo), trt_int(n)};
            launch(k, cdiv(n, blocks[b]), 1, 1, a, 4);
            download(bo, out, bytes);
            for (int i = 0; i < n + pad; i++) {
                float want = i < n ? x[i] + y[i] : NAN;
                if (!same_f32(out[i], want)) fail_msg("vadd BLOCK=%d n=%d: out[%d] = %g, want %g", blocks[b], n, i, out[i], want);
            }
            trt_free(dev, bx), trt_free(dev, by);
            free(x), free(y), free(out);
        }
        drop(&p);
    }
}

/* A pointer argument that starts inside its buffer (16-byte aligned). */
static void test_pointer_at_an_offset(void **state) {
    (void)state;
    prog p;
    tilec_define d = {"BLOCK", 64};
    trt_kernel *k = compile_text(&p, "vadd.tile", vadd_src, "vadd", &d, 1);
    int n = 200;
    float *x = rand_f32s(n + 8), *y = rand_f32s(n), *out = poison_f32s(n);
    trt_buffer bx = upload(x, sizeof(float) * (size_t)(n + 8)), by = upload(y, sizeof(float) * (size_t)n),
               bo = upload(out, sizeof(float) * (size_t)n);
    trt_arg a[4] = {trt_buf_at(bx, 8 * sizeof(float)), trt_buf(by), trt_buf(bo), trt_int(n)};
    launch(k, cdiv(n, 64), 1, 1, a, 4);
    download(bo, out, sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++) assert_true(out[i] == x[i + 8] + y[i]);
    trt_free(dev, bx), trt_free(dev, by);
    free(x), free(y), free(out);
    drop(&p);
}

/* ---- the stdlib and the samples' kernels ---------------------------------- */

static void test_stdlib_elementwise(void **state) {
    (void)state;
    const int sizes[] = {1, 1000, 1024, 3000, 70001};
    prog p;
    trt_kernel *add, *mul, *scale, *fill;
    add = compile_file(&p, "stdlib/elementwise.tile", "add_f32", NULL, 0);
    OK(trt_get_kernel(p.mod, "mul_f32", &mul));
    OK(trt_get_kernel(p.mod, "scale_f32", &scale));
    OK(trt_get_kernel(p.mod, "fill_f32", &fill));
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t];
        size_t bytes = sizeof(float) * (size_t)n;
        float *x = rand_f32s(n), *y = rand_f32s(n), *out = poison_f32s(n), *want = malloc(bytes + 1);
        trt_buffer bx = upload(x, bytes), by = upload(y, bytes);
        for (int op = 0; op < 2; op++) {
            trt_buffer bo = upload(out, bytes);
            trt_arg a[4] = {trt_buf(bx), trt_buf(by), trt_buf(bo), trt_int(n)};
            launch(op ? mul : add, cdiv(n, 1024), 1, 1, a, 4);
            float *got = poison_f32s(n);
            download(bo, got, bytes);
            for (int i = 0; i < n; i++) want[i] = op ? x[i] * y[i] : x[i] + y[i];
            expect_f32(op ? "mul_f32" : "add_f32", n, got, want);
            free(got);
        }
        trt_arg s[3] = {trt_buf(bx), trt_float(-1.75), trt_int(n)}; /* in place */
        launch(scale, cdiv(n, 1024), 1, 1, s, 3);
        for (int i = 0; i < n; i++) want[i] = -1.75f * x[i];
        download(bx, x, bytes);
        expect_f32("scale_f32", n, x, want);
        trt_buffer bo = upload(out, bytes);
        trt_arg f[3] = {trt_buf(bo), trt_float(3.25), trt_int(n - 1)}; /* the last stays poisoned */
        launch(fill, cdiv(n, 1024), 1, 1, f, 3);
        download(bo, out, bytes);
        for (int i = 0; i < n; i++) want[i] = i < n - 1 ? 3.25f : NAN;
        expect_f32("fill_f32", n, out, want);
        trt_free(dev, by);
        free(x), free(y), free(out), free(want);
    }
    drop(&p);
}


static void test_samples_elementwise(void **state) {
    (void)state;
    prog p;
    trt_kernel *saxpy = compile_file(&p, "samples/elementwise.tile", "saxpy", NULL, 0), *shift, *madd;
    OK(trt_get_kernel(p.mod, "scale_shift_f16", &shift));
    OK(trt_get_kernel(p.mod, "madd_strided", &madd));
    const int sizes[] = {1, 777, 2048, 9001};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t];
        size_t fb = sizeof(float) * (size_t)n;
        /* saxpy: y = a*x + y with two roundings (no contraction to fma) */
        float *x = rand_f32s(n), *y = rand_f32s(n), *want = malloc(fb + 1);
        trt_buffer bx = upload(x, fb), by = upload(y, fb);
        trt_arg a[4] = {trt_buf(bx), trt_buf(by), trt_float(0.3), trt_int(n)};
        launch(saxpy, cdiv(n, 1024), 1, 1, a, 4);
        for (int i = 0; i < n; i++) {
            volatile float prod = 0.3f * x[i]; /* volatile: keep the C reference from fusing too */
            want[i] = prod + y[i];
        }
        download(by, y, fb);
        expect_f32("saxpy", n, y, want);
        trt_free(dev, bx);

        /* scale_shift_f16: f16 in, f32 arithmetic, f16 out */
        uint16_t *xh = malloc(2 * (size_t)n + 2), *oh = malloc(2 * (size_t)n + 2);
        float *bias = rand_f32s(n);
        for (int i = 0; i < n; i++) xh[i] = f16_bits(rand_f32() / 64), oh[i] = 0x7e00; /* NaN */
        trt_buffer bxh = upload(xh, 2 * (size_t)n), boh = upload(oh, 2 * (size_t)n), bb = upload(bias, fb);
        trt_arg s[6] = {trt_buf(bxh), trt_buf(boh), trt_float(1.5), trt_float(-0.25), trt_buf(bb), trt_int(n)};
        launch(shift, cdiv(n, 2048), 1, 1, s, 6);
        download(boh, oh, 2 * (size_t)n);
        for (int i = 0; i < n; i++) {
            volatile float v = f16_value(xh[i]) - 1.5f;
            v = v * -0.25f;
            v = v + bias[i];
            if (oh[i] != f16_bits(v))
                fail_msg("scale_shift_f16 n=%d: out[%d] = %#x, want %#x (%g)", n, i, oh[i], f16_bits(v), (double)v);
        }
        trt_free(dev, bb);

        /* madd_strided: wrapping i32 a*b + c, reading every stride-th */
        for (int stride = 1; stride <= 3; stride += 2) {
            size_t ib = sizeof(int32_t) * (size_t)n * (size_t)stride;
            int32_t *ia = malloc(ib), *ibv = malloc(ib), *ic = malloc(ib), *io = malloc(sizeof(int32_t) * (size_t)n);
            for (size_t i = 0; i < (size_t)n * (size_t)stride; i++) ia[i] = rand_i32(), ibv[i] = rand_i32(), ic[i] = rand_i32();
            for (int i = 0; i < n; i++) io[i] = 0x5a5a5a5a;
            trt_buffer b1 = upload(ia, ib), b2 = upload(ibv, ib), b3 = upload(ic, ib),
                       b4 = upload(io, sizeof(int32_t) * (size_t)n);
            trt_arg m[6] = {trt_buf(b1), trt_buf(b2), trt_buf(b3), trt_buf(b4), trt_int(n), trt_int(stride)};
            launch(madd, cdiv(n, 512), 1, 1, m, 6);
            download(b4, io, sizeof(int32_t) * (size_t)n);
            for (int i = 0; i < n; i++) {
                size_t s2 = (size_t)i * (size_t)stride;
                int32_t w = (int32_t)((uint32_t)ia[s2] * (uint32_t)ibv[s2] + (uint32_t)ic[s2]);
                if (io[i] != w) fail_msg("madd_strided n=%d stride=%d: out[%d] = %d, want %d", n, stride, i, io[i], w);
            }
            trt_free(dev, b1), trt_free(dev, b2), trt_free(dev, b3);
            free(ia), free(ibv), free(ic), free(io);
        }
        free(x), free(y), free(want), free(xh), free(oh), free(bias);
    }
    drop(&p);
}

/* ---- grids, loops ------------------------------------------------------ */

static void test_three_axis_grid(void **state) {
    (void)state;
    static const char src[] =
        "kernel ids(out: *i32, const B: i32 = 32) {\n"
        "    let x = program_id(0);\n"
        "    let y = program_id(1);\n"
        "    let z = program_id(2);\n"
        "    let flat = (z * num_programs(1) + y) * num_programs(0) + x;\n"
        "    store(out + flat * B + arange(0, B), x + 100 * y + 10000 * z + 1000000 * arange(0, B));\n"
        "}\n";
    prog p;
    trt_kernel *k = compile_text(&p, "ids.tile", src, "ids", NULL, 0);
    const uint32_t grids[][3] = {{1, 1, 1}, {3, 4, 5}, {70, 1, 2}, {1, 65, 1}};
    for (size_t g = 0; g < 4; g++) {
        uint32_t gx = grids[g][0], gy = grids[g][1], gz = grids[g][2];
        size_t count = (size_t)gx * gy * gz * 32;
        int32_t *out = malloc(count * 4);
        for (size_t i = 0; i < count; i++) out[i] = -7;
        trt_buffer b = upload(out, count * 4);
        trt_arg a[1] = {trt_buf(b)};
        launch(k, gx, gy, gz, a, 1);
        download(b, out, count * 4);
        for (uint32_t z = 0; z < gz; z++)
            for (uint32_t y = 0; y < gy; y++)
                for (uint32_t x = 0; x < gx; x++)
                    for (int i = 0; i < 32; i++) {
                        size_t at = (((size_t)z * gy + y) * gx + x) * 32 + (size_t)i;
                        int32_t want = (int32_t)(x + 100 * y + 10000 * z) + 1000000 * i;
                        if (out[at] != want)
                            fail_msg("grid %ux%ux%u: program (%u,%u,%u) lane %d wrote %d, want %d", gx, gy, gz, x, y, z,
                                     i, out[at], want);
                    }
        free(out);
    }
    drop(&p);
}

/* Row sums: a loop carrying an f32 tile, summed in the order C sums. */
static void test_loop_row_sums(void **state) {
    (void)state;
    static const char src[] =
        "kernel rowsum(x: *f32, out: *f32, rows: i32, cols: i32, const B: i32 = 64) {\n"
        "    let r = program_id(0) * B + arange(0, B);\n"
        "    let live = r < rows;\n"
        "    var acc = zeros(B, f32);\n"
        "    for c in range(0, cols) {\n"
        "        acc = acc + load(x + r * cols + c, live);\n"
        "    }\n"
        "    store(out + r, acc, live);\n"
        "}\n";
    prog p;
    trt_kernel *k = compile_text(&p, "rowsum.tile", src, "rowsum", NULL, 0);
    const int shapes[][2] = {{1, 1}, {100, 7}, {64, 64}, {1000, 33}, {5, 0}};
    for (size_t s = 0; s < 5; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        size_t xn = (size_t)rows * (size_t)(cols ? cols : 1);
        float *x = rand_f32s((int)xn), *out = poison_f32s(rows), *want = malloc(sizeof(float) * (size_t)rows);
        for (int r = 0; r < rows; r++) {
            volatile float acc = 0;
            for (int c = 0; c < cols; c++) acc = acc + x[(size_t)r * cols + c];
            want[r] = acc;
        }
        trt_buffer bx = upload(x, xn * 4), bo = upload(out, (size_t)rows * 4);
        trt_arg a[4] = {trt_buf(bx), trt_buf(bo), trt_int(rows), trt_int(cols)};
        launch(k, cdiv(rows, 64), 1, 1, a, 4);
        download(bo, out, (size_t)rows * 4);
        expect_f32("rowsum", rows, out, want);
        trt_free(dev, bx);
        free(x), free(out), free(want);
    }
    drop(&p);
}

/* ---- exactly defined arithmetic ----------------------------------------- */

static void test_math_builtins_exact(void **state) {
    (void)state;
    static const char src[] =
        "kernel m(a: *f32, b: *f32, c: *f32, out: *f32, n: i32, const B: i32 = 256) {\n"
        "    let o = program_id(0) * B + arange(0, B);\n"
        "    let k = o < n;\n"
        "    let x = load(a + o, k);\n"
        "    let y = load(b + o, k);\n"
        "    let z = load(c + o, k);\n"
        "    store(out + o, minimum(x, y), k);\n"
        "    store(out + n + o, maximum(x, y), k);\n"
        "    store(out + 2 * n + o, where(x < y, abs(x), floor(y)), k);\n"
        "    store(out + 3 * n + o, ceil(x) + sqrt(abs(y)), k);\n"
        "    store(out + 4 * n + o, fma(x, y, z), k);\n"
        "    store(out + 5 * n + o, x / y - x % y, k);\n"
        "}\n";
    prog p;
    trt_kernel *k = compile_text(&p, "m.tile", src, "m", NULL, 0);
    int n = 3001;
    float *a = rand_f32s(n), *b = rand_f32s(n), *c = rand_f32s(n), *out = poison_f32s(6 * n), *want = malloc(24 * (size_t)n);
    /* the awkward values: NaN, signed zeros, infinities, equal pairs */
    const float special[] = {NAN, 0.0f, -0.0f, INFINITY, -INFINITY, 1.0f, -1.0f};
    for (int i = 0; i < 64; i++) a[i] = special[i % 7], b[i] = special[i / 7 % 7];
    a[100] = b[100] = 2.5f;
    for (int i = 0; i < n; i++) {
        float x = a[i], y = b[i], z = c[i];
        want[i] = isnan(x) || isnan(y) ? NAN : (x == y ? (signbit(x) ? x : y) : fminf(x, y));
        want[n + i] = isnan(x) || isnan(y) ? NAN : (x == y ? (signbit(x) ? y : x) : fmaxf(x, y));
        want[2 * n + i] = x < y ? fabsf(x) : floorf(y);
        volatile float s = sqrtf(fabsf(y));
        want[3 * n + i] = ceilf(x) + s;
        want[4 * n + i] = fmaf(x, y, z);
        volatile float q = x / y, r = fmodf(x, y);
        want[5 * n + i] = q - r;
    }
    size_t bytes = 4 * (size_t)n;
    trt_buffer ba = upload(a, bytes), bb = upload(b, bytes), bc = upload(c, bytes), bo = upload(out, 6 * bytes);
    trt_arg args[5] = {trt_buf(ba), trt_buf(bb), trt_buf(bc), trt_buf(bo), trt_int(n)};
    launch(k, cdiv(n, 256), 1, 1, args, 5);
    download(bo, out, 6 * bytes);
    const char *names[] = {"minimum", "maximum", "where/abs/floor", "ceil+sqrt", "fma", "x/y - x%y"};
    for (int j = 0; j < 6; j++) {
        for (int i = 0; i < n; i++) {
            float g = out[j * n + i], w = want[j * n + i];
            /* min/max of +0 and -0 must pick the sign too */
            bool same = same_f32(g, w) && (g != 0 || signbit(g) == signbit(w) || j > 1);
            if (!same) fail_msg("%s on %s: [%d] (x=%g y=%g) = %g, want %g", names[j], trt_device_name(dev), i, a[i], b[i], g, w);
        }
    }
    trt_free(dev, ba), trt_free(dev, bb), trt_free(dev, bc);
    free(a), free(b), free(c), free(out), free(want);
    drop(&p);
}

/* Integer widths and conversions, all defined exactly. */
static void test_integers_and_casts(void **state) {
    (void)state;
    static const char src[] =
        "kernel ints(a: *i32, b: *i32, f: *f32, o8: *i8, o16: *i16, o32: *i32, o64: *i64, oh: *f16, obf: *bf16,\n"
        "            n: i32, const B: i32 = 128) {\n"
        "    let o = program_id(0) * B + arange(0, B);\n"
        "    let k = o < n;\n"
        "    let x = load(a + o, k);\n"
        "    let y = load(b + o, k, other = 1);\n"
        "    let v = load(f + o, k);\n"
        "    store(o8 + o, cast(x, i8) + cast(y, i8), k);\n"
        "    store(o16 + o, cast(x >> 3, i16) * cast(y, i16), k);\n"
        "    store(o32 + o, x / y + x % y + (x << 3) + (y >> 5) + (x ^ y) + (!x & 255), k);\n"
        "    store(o64 + o, cast(x, i64) * cast(y, i64) + cast(v, i64), k);\n"
        "    store(oh + o, v, k);\n"
        "    store(obf + o, v, k);\n"
        "    store(o32 + n + o, cast(v * 3.0e6, i32), k);\n"
        "}\n";
    prog p;
    trt_kernel *k = compile_text(&p, "ints.tile", src, "ints", NULL, 0);
    int n = 1500;
    int32_t *a = malloc(4 * (size_t)n), *b = malloc(4 * (size_t)n);
    float *f = malloc(4 * (size_t)n);
    for (int i = 0; i < n; i++) {
        a[i] = rand_i32();
        b[i] = rand_i32() >> (rand() % 31);
        if (b[i] == 0 || (b[i] == -1 && a[i] == INT32_MIN)) b[i] = 3; /* defined differently per device */
        f[i] = rand_f32() * (float)(1 << (rand() % 12));
    }
    f[0] = NAN, f[1] = INFINITY, f[2] = -INFINITY, f[3] = 65520.0f, f[4] = 1e-7f, a[5] = INT32_MIN, a[6] = INT32_MAX;
    int8_t *o8 = malloc((size_t)n);
    int16_t *o16 = malloc(2 * (size_t)n);
    int32_t *o32 = malloc(8 * (size_t)n);
    int64_t *o64 = malloc(8 * (size_t)n);
    uint16_t *oh = malloc(2 * (size_t)n), *obf = malloc(2 * (size_t)n);
    memset(o8, 0x55, (size_t)n), memset(o16, 0x55, 2 * (size_t)n), memset(o32, 0x55, 8 * (size_t)n);
    memset(o64, 0x55, 8 * (size_t)n), memset(oh, 0x55, 2 * (size_t)n), memset(obf, 0x55, 2 * (size_t)n);
    trt_buffer ba = upload(a, 4 * (size_t)n), bb = upload(b, 4 * (size_t)n), bf = upload(f, 4 * (size_t)n),
               b8 = upload(o8, (size_t)n), b16 = upload(o16, 2 * (size_t)n), b32 = upload(o32, 8 * (size_t)n),
               b64 = upload(o64, 8 * (size_t)n), bh = upload(oh, 2 * (size_t)n), bbf = upload(obf, 2 * (size_t)n);
    trt_arg args[10] = {trt_buf(ba), trt_buf(bb),  trt_buf(bf), trt_buf(b8),  trt_buf(b16),
                        trt_buf(b32), trt_buf(b64), trt_buf(bh), trt_buf(bbf), trt_int(n)};
    launch(k, cdiv(n, 128), 1, 1, args, 10);
    download(b8, o8, (size_t)n), download(b16, o16, 2 * (size_t)n), download(b32, o32, 8 * (size_t)n);
    download(b64, o64, 8 * (size_t)n), download(bh, oh, 2 * (size_t)n), download(bbf, obf, 2 * (size_t)n);
    for (int i = 0; i < n; i++) {
        int32_t x = a[i], y = b[i];
        float v = f[i];
        int8_t w8 = (int8_t)(uint8_t)((uint8_t)x + (uint8_t)y);
        int16_t w16 = (int16_t)(uint16_t)((uint32_t)(uint16_t)(x >> 3) * (uint32_t)(uint16_t)y);
        uint32_t w32 = (uint32_t)(x / y) + (uint32_t)(x % y) + ((uint32_t)x << 3) + (uint32_t)(y >> 5) +
                       (uint32_t)(x ^ y) + (uint32_t)(~x & 255);
        int64_t vi = isnan(v) ? 0 : v >= 9.2233720368547758e18f ? INT64_MAX : v <= -9.2233720368547758e18f ? INT64_MIN : (int64_t)v;
        int64_t w64 = (int64_t)((uint64_t)((int64_t)x * (int64_t)y) + (uint64_t)vi);
        double big = (double)(v * 3.0e6f);
        int32_t wsat = isnan(big) ? 0 : big >= 2147483647.0 ? INT32_MAX : big <= -2147483648.0 ? INT32_MIN : (int32_t)big;
        uint32_t fb;
        memcpy(&fb, &v, 4);
        uint16_t wbf = isnan(v) ? 0 : (uint16_t)((fb + 0x7fff + ((fb >> 16) & 1)) >> 16);
        if (o8[i] != w8) fail_msg("i8 [%d] = %d, want %d", i, o8[i], w8);
        if (o16[i] != w16) fail_msg("i16 [%d] = %d, want %d", i, o16[i], w16);
        if ((uint32_t)o32[i] != w32) fail_msg("i32 [%d] (x=%d y=%d) = %d, want %d", i, x, y, o32[i], (int32_t)w32);
        if (o64[i] != w64) fail_msg("i64 [%d] = %lld, want %lld", i, (long long)o64[i], (long long)w64);
        if (o32[n + i] != wsat) fail_msg("saturating cast [%d] of %g = %d, want %d", i, big, o32[n + i], wsat);
        if (isnan(v) ? (oh[i] & 0x7fff) <= 0x7c00 : oh[i] != f16_bits(v))
            fail_msg("f16 [%d] of %g = %#x, want %#x", i, (double)v, oh[i], f16_bits(v));
        if (isnan(v) ? (obf[i] & 0x7fff) <= 0x7f80 : obf[i] != wbf)
            fail_msg("bf16 [%d] of %g = %#x, want %#x", i, (double)v, obf[i], wbf);
    }
    trt_free(dev, ba), trt_free(dev, bb), trt_free(dev, bf);
    free(a), free(b), free(f), free(o8), free(o16), free(o32), free(o64), free(oh), free(obf);
    drop(&p);
}

/* ---- reductions ------------------------------------------------------------ */

/* One row per program: sum, max and min of the row's f32 values and of its
 * i32 values, over tiles from 1 element to 32768 and 1 to 32 warps, with
 * rows shorter than the tile (masked) and tiles smaller than the threads
 * (replicated elements, which must count once). */
static void test_reductions(void **state) {
    (void)state;
    static const char src[] =
        "kernel red(x: *f32, xi: *i32, out: *f32, outi: *i32, n: i32, const BLOCK: i32 = 64) {\n"
        "    let row = program_id(0);\n"
        "    let o = arange(0, BLOCK);\n"
        "    let k = o < n;\n"
        "    let v = load(x + row * n + o, k, other = 0.0);\n"
        "    let w = load(xi + row * n + o, k, other = 0);\n"
        "    store(out + 3 * row, sum(v));\n"
        "    store(out + 3 * row + 1, max(where(k, v, -1.0 / 0.0)));\n"
        "    store(out + 3 * row + 2, min(where(k, v, 1.0 / 0.0), axis = 0));\n"
        "    store(outi + 2 * row, sum(w));\n"
        "    store(outi + 2 * row + 1, max(where(k, w, -2147483647 - 1)));\n"
        "}\n";
    const int blocks[] = {1, 2, 32, 64, 128, 512, 1024, 4096, 32768};
    const int warps[] = {0, 1, 4, 32}; /* 0: the heuristic */
    enum { ROWS = 5 };
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
        for (size_t w = 0; w < sizeof warps / sizeof warps[0]; w++) {
            int block = blocks[b];
            /* past 256 elements a thread, code and compile time explode
             * (32768 on one warp takes ptxas half a minute) */
            if (warps[w] && block / (32 * warps[w]) > 256) continue;
            tilec_define d = {"BLOCK", block};
            prog p;
            trt_kernel *k = compile_with(&p, "red.tile", src, "red", &d, 1, warps[w]);
            int n = block > 8 ? block - 3 - rand() % (block / 4) : block; /* a tail masked off */
            size_t cells = (size_t)ROWS * (size_t)n;
            float *x = rand_f32s((int)cells), *out = poison_f32s(3 * ROWS);
            int32_t *xi = malloc(4 * cells), outi[2 * ROWS];
            for (size_t i = 0; i < cells; i++) xi[i] = rand_i32();
            for (int i = 0; i < 2 * ROWS; i++) outi[i] = 0x5a5a5a5a;
            /* row 1 holds a NaN (when it has room), row 2 both zeros */
            if (n > 1) x[(size_t)n + (size_t)(n / 2)] = NAN;
            if (n > 1) x[2 * (size_t)n] = -0.0f, x[2 * (size_t)n + 1] = 0.0f;
            for (int i = 2; n > 1 && i < n; i++) x[2 * (size_t)n + (size_t)i] = -fabsf(x[2 * (size_t)n + (size_t)i]) - 1;
            trt_buffer bx = upload(x, 4 * cells), bxi = upload(xi, 4 * cells), bo = upload(out, 12 * ROWS),
                       boi = upload(outi, 8 * ROWS);
            trt_arg a[5] = {trt_buf(bx), trt_buf(bxi), trt_buf(bo), trt_buf(boi), trt_int(n)};
            launch(k, ROWS, 1, 1, a, 5);
            download(bo, out, 12 * ROWS);
            download(boi, outi, 8 * ROWS);
            for (int r = 0; r < ROWS; r++) {
                const float *row = x + (size_t)r * (size_t)n;
                double s = 0, mag = 0;
                float mx = -INFINITY, mn = INFINITY;
                bool nan = false;
                uint32_t si = 0;
                int32_t mi = INT32_MIN;
                for (int i = 0; i < n; i++) {
                    float v = row[i];
                    s += v, mag += fabs(v), nan |= isnan(v);
                    if (v > mx || (v == 0 && mx == 0 && !signbit(v))) mx = v;
                    if (v < mn || (v == 0 && mn == 0 && signbit(v))) mn = v;
                    si += (uint32_t)xi[(size_t)r * (size_t)n + (size_t)i];
                    if (xi[(size_t)r * (size_t)n + (size_t)i] > mi) mi = xi[(size_t)r * (size_t)n + (size_t)i];
                }
                /* a float sum rounds n - 1 times, in some order */
                double tol = (double)n * 0x1p-24 * mag;
                const char *where = trt_device_name(dev);
                if (nan) {
                    if (!isnan(out[3 * r]) || !isnan(out[3 * r + 1]) || !isnan(out[3 * r + 2]))
                        fail_msg("BLOCK=%d warps=%d row %d has a NaN: sum %g max %g min %g on %s", block, warps[w], r,
                                 out[3 * r], out[3 * r + 1], out[3 * r + 2], where);
                } else {
                    if (!(fabs(out[3 * r] - s) <= tol))
                        fail_msg("BLOCK=%d warps=%d n=%d row %d: sum %.9g, want %.9g (tolerance %.3g) on %s", block,
                                 warps[w], n, r, out[3 * r], s, tol, where);
                    if (out[3 * r + 1] != mx || signbit(out[3 * r + 1]) != signbit(mx) || out[3 * r + 2] != mn ||
                        signbit(out[3 * r + 2]) != signbit(mn))
                        fail_msg("BLOCK=%d warps=%d n=%d row %d: max %g min %g, want %g %g on %s", block, warps[w], n,
                                 r, out[3 * r + 1], out[3 * r + 2], mx, mn, where);
                }
                if ((uint32_t)outi[2 * r] != si || outi[2 * r + 1] != mi)
                    fail_msg("BLOCK=%d warps=%d row %d: i32 sum %d max %d, want %d %d on %s", block, warps[w], r,
                             outi[2 * r], outi[2 * r + 1], (int32_t)si, mi, where);
            }
            trt_free(dev, bx), trt_free(dev, bxi);
            free(x), free(xi), free(out);
            drop(&p);
        }
}

/* A reduction inside a loop: its shared-memory slot is written again on
 * every trip, so the trips must not overtake each other. */
static void test_reduction_in_a_loop(void **state) {
    (void)state;
    static const char src[] =
        "kernel loopsum(x: *f32, out: *f32, n: i32, const B: i32 = 256) {\n"
        "    var acc = 0.0;\n"
        "    var big = -1.0 / 0.0;\n"
        "    for start in range(0, n, B) {\n"
        "        let c = start + arange(0, B);\n"
        "        let v = load(x + program_id(0) * n + c, c < n, other = 0.0);\n"
        "        acc = acc + sum(v);\n"
        "        big = maximum(big, max(v));\n"
        "    }\n"
        "    store(out + 2 * program_id(0), acc);\n"
        "    store(out + 2 * program_id(0) + 1, big);\n"
        "}\n";
    prog p;
    trt_kernel *k = compile_with(&p, "loopsum.tile", src, "loopsum", NULL, 0, 8);
    enum { ROWS = 64 };
    int n = 256 * 37 + 11;
    float *x = malloc(sizeof(float) * ROWS * (size_t)n), *out = poison_f32s(2 * ROWS);
    for (size_t i = 0; i < (size_t)ROWS * (size_t)n; i++) x[i] = (float)(rand() % 2001 - 1000) / 8; /* sums exactly */
    trt_buffer bx = upload(x, sizeof(float) * ROWS * (size_t)n), bo = upload(out, 8 * ROWS);
    trt_arg a[3] = {trt_buf(bx), trt_buf(bo), trt_int(n)};
    launch(k, ROWS, 1, 1, a, 3);
    download(bo, out, 8 * ROWS);
    for (int r = 0; r < ROWS; r++) {
        double s = 0;
        float mx = -INFINITY;
        for (int i = 0; i < n; i++) s += x[(size_t)r * (size_t)n + (size_t)i], mx = fmaxf(mx, x[(size_t)r * (size_t)n + (size_t)i]);
        if (out[2 * r] != (float)s || out[2 * r + 1] != mx)
            fail_msg("row %d: sum %g max %g, want %g %g on %s", r, out[2 * r], out[2 * r + 1], s, mx, trt_device_name(dev));
    }
    trt_free(dev, bx);
    free(x), free(out);
    drop(&p);
}

/* ---- cumsum ------------------------------------------------------------------
 * Running sums against a C reference: i32 exactly (wrapping), f32 within
 * n 2^-24 sum(|x|) of the float64 prefix (each running sum rounds once per
 * addition, in an order the device picks), forward and reversed, with a
 * tail masked off, at several block sizes and warp counts. */

/* The tolerance of an f32 running sum of `count` terms of total |x| mag. */
static double scan_tol(int count, double mag) { return (double)count * 0x1p-24 * mag + 1e-30; }

static void test_cumsum_1d(void **state) {
    (void)state;
    static const char src[] =
        "kernel scan1(x: *f32, xi: *i32, out: *f32, outi: *i32, n: i32, const BLOCK: i32 = 64) {\n"
        "    let row = program_id(0);\n"
        "    let o = arange(0, BLOCK);\n"
        "    let k = o < n;\n"
        "    let v = load(x + row * n + o, k, other = 0.0);\n"
        "    let w = load(xi + row * n + o, k, other = 0);\n"
        "    store(out + 2 * row * n + o, cumsum(v), k);\n"
        "    store(out + (2 * row + 1) * n + o, cumsum(v, reverse = true), k);\n"
        "    store(outi + 3 * row * n + o, cumsum(w, 0), k);\n"
        "    store(outi + (3 * row + 1) * n + o, cumsum(w, axis = 0, reverse = true), k);\n"
        "    store(outi + (3 * row + 2) * n + o, cumsum(w < 0), k);\n"
        "}\n";
    const int blocks[] = {1, 2, 8, 32, 64, 128, 512, 1024, 4096};
    const int warps[] = {0, 1, 2, 4, 8}; /* 0: the heuristic */
    enum { ROWS = 3 };
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
        for (size_t w = 0; w < sizeof warps / sizeof warps[0]; w++) {
            int block = blocks[b];
            if (warps[w] && block / (32 * warps[w]) > 64) continue; /* compile time, as test_reductions */
            tilec_define d = {"BLOCK", block};
            prog p;
            trt_kernel *k = compile_with(&p, "scan1.tile", src, "scan1", &d, 1, warps[w]);
            int n = block > 8 ? block - 3 - rand() % (block / 4) : block; /* a tail masked off */
            size_t cells = (size_t)ROWS * (size_t)n;
            float *x = rand_f32s((int)cells), *out = poison_f32s(2 * (int)cells);
            int32_t *xi = malloc(4 * cells), *outi = malloc(12 * cells);
            for (size_t i = 0; i < cells; i++) xi[i] = rand_i32();
            for (size_t i = 0; i < 3 * cells; i++) outi[i] = 0x5a5a5a5a;
            trt_buffer bx = upload(x, 4 * cells), bxi = upload(xi, 4 * cells), bo = upload(out, 8 * cells),
                       boi = upload(outi, 12 * cells);
            trt_arg a[5] = {trt_buf(bx), trt_buf(bxi), trt_buf(bo), trt_buf(boi), trt_int(n)};
            launch(k, ROWS, 1, 1, a, 5);
            download(bo, out, 8 * cells);
            download(boi, outi, 12 * cells);
            for (int r = 0; r < ROWS; r++) {
                const float *xr = x + (size_t)r * (size_t)n;
                const int32_t *wr = xi + (size_t)r * (size_t)n;
                const float *fwd = out + 2 * (size_t)r * (size_t)n, *bwd = fwd + n;
                const int32_t *ifwd = outi + 3 * (size_t)r * (size_t)n, *ibwd = ifwd + n, *neg = ibwd + n;
                double s = 0, mag = 0, rs = 0, rmag = 0;
                uint32_t si = 0, rsi = 0;
                int32_t count = 0;
                for (int i = 0; i < n; i++) {
                    int j = n - 1 - i; /* the reversed scan's element */
                    s += xr[i], mag += fabs(xr[i]), si += (uint32_t)wr[i], count += wr[i] < 0;
                    rs += xr[j], rmag += fabs(xr[j]), rsi += (uint32_t)wr[j];
                    if (!(fabs(fwd[i] - s) <= scan_tol(i + 1, mag)) || !(fabs(bwd[j] - rs) <= scan_tol(i + 1, rmag)))
                        fail_msg("BLOCK=%d warps=%d n=%d row %d: f32 cumsum [%d] %.9g (want %.9g), reversed [%d] %.9g "
                                 "(want %.9g) on %s",
                                 block, warps[w], n, r, i, fwd[i], s, j, bwd[j], rs, trt_device_name(dev));
                    if ((uint32_t)ifwd[i] != si || (uint32_t)ibwd[j] != rsi || neg[i] != count)
                        fail_msg("BLOCK=%d warps=%d n=%d row %d: i32 cumsum [%d] %d (want %d), reversed [%d] %d "
                                 "(want %d), of a mask %d (want %d) on %s",
                                 block, warps[w], n, r, i, ifwd[i], (int32_t)si, j, ibwd[j], (int32_t)rsi, neg[i],
                                 count, trt_device_name(dev));
                }
            }
            trt_free(dev, bx), trt_free(dev, bxi);
            free(x), free(xi), free(out), free(outi);
            drop(&p);
        }
}

/* Rank 2, blocks of a matrix: along each axis, forward and reversed, and
 * the running sum of row sums (a slice layout). Each block scans only its
 * own elements. */
static void test_cumsum_2d(void **state) {
    (void)state;
    static const char src[] =
        "kernel scan2(x: *f32, xi: *i32, out: *f32, outi: *i32, rowcum: *i32, M: i32, N: i32,\n"
        "             const BM: i32 = 16, const BN: i32 = 32) {\n"
        "    let rows = program_id(0) * BM + arange(0, BM);\n"
        "    let cols = program_id(1) * BN + arange(0, BN);\n"
        "    let mask = rows[:, None] < M & cols[None, :] < N;\n"
        "    let at = rows[:, None] * N + cols[None, :];\n"
        "    let v = load(x + at, mask, other = 0.0);\n"
        "    let w = load(xi + at, mask, other = 0);\n"
        "    store(out + at, cumsum(v, axis = 1), mask);\n"
        "    store(out + M * N + at, cumsum(v, axis = 0, reverse = true), mask);\n"
        "    store(outi + at, cumsum(w, axis = 0), mask);\n"
        "    store(outi + M * N + at, cumsum(w, axis = 1, reverse = true), mask);\n"
        "    store(rowcum + program_id(1) * M + rows, cumsum(sum(w, axis = 1)), rows < M);\n"
        "}\n";
    const int shapes[][2] = {{16, 32}, {1, 32}, {32, 1}, {64, 8}, {2, 128}, {32, 64}, {4, 4}, {128, 2}};
    const int warps[] = {0, 1, 2, 4, 8};
    enum { M = 37, N = 45 };
    float *x = rand_f32s(M * N);
    int32_t *xi = malloc(sizeof(int32_t) * M * N);
    for (int i = 0; i < M * N; i++) xi[i] = rand_i32();
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (size_t w = 0; w < sizeof warps / sizeof warps[0]; w++) {
            int bm = shapes[sh][0], bn = shapes[sh][1], gm = (int)cdiv(M, bm), gn = (int)cdiv(N, bn);
            tilec_define d[2] = {{"BM", bm}, {"BN", bn}};
            prog p;
            trt_kernel *k = compile_with(&p, "scan2.tile", src, "scan2", d, 2, warps[w]);
            float *out = poison_f32s(2 * M * N);
            int32_t *outi = malloc(sizeof(int32_t) * 2 * M * N), *rc = malloc(sizeof(int32_t) * (size_t)(gn * M));
            for (int i = 0; i < 2 * M * N; i++) outi[i] = 0x5a5a5a5a;
            for (int i = 0; i < gn * M; i++) rc[i] = 0x5a5a5a5a;
            trt_buffer bx = upload(x, sizeof(float) * M * N), bxi = upload(xi, sizeof(int32_t) * M * N),
                       bo = upload(out, sizeof(float) * 2 * M * N), boi = upload(outi, sizeof(int32_t) * 2 * M * N),
                       brc = upload(rc, sizeof(int32_t) * (size_t)(gn * M));
            trt_arg args[7] = {trt_buf(bx), trt_buf(bxi), trt_buf(bo), trt_buf(boi), trt_buf(brc), trt_int(M), trt_int(N)};
            launch(k, (uint32_t)gm, (uint32_t)gn, 1, args, 7);
            download(bo, out, sizeof(float) * 2 * M * N), download(boi, outi, sizeof(int32_t) * 2 * M * N);
            download(brc, rc, sizeof(int32_t) * (size_t)(gn * M));
            trt_free(dev, bx), trt_free(dev, bxi);
            char what[64];
            snprintf(what, sizeof what, "blocks %dx%d, %d warps", bm, bn, warps[w]);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    int i0 = i / bm * bm, j0 = j / bn * bn, i1 = i0 + bm < M ? i0 + bm : M, j1 = j0 + bn < N ? j0 + bn : N;
                    double along1 = 0, mag1 = 0, along0 = 0, mag0 = 0;
                    uint32_t s0 = 0, s1 = 0;
                    for (int q = j0; q <= j; q++) along1 += x[i * N + q], mag1 += fabs(x[i * N + q]);
                    for (int q = i; q < i1; q++) along0 += x[q * N + j], mag0 += fabs(x[q * N + j]);
                    for (int q = i0; q <= i; q++) s0 += (uint32_t)xi[q * N + j];
                    for (int q = j; q < j1; q++) s1 += (uint32_t)xi[i * N + q];
                    float g1 = out[i * N + j], g0 = out[M * N + i * N + j];
                    if (!(fabs(g1 - along1) <= scan_tol(j - j0 + 1, mag1)) || !(fabs(g0 - along0) <= scan_tol(i1 - i, mag0)))
                        fail_msg("%s: f32 [%d][%d]: along dim 1 %.9g (want %.9g), reversed along dim 0 %.9g (want %.9g) on %s",
                                 what, i, j, g1, along1, g0, along0, trt_device_name(dev));
                    if ((uint32_t)outi[i * N + j] != s0 || (uint32_t)outi[M * N + i * N + j] != s1)
                        fail_msg("%s: i32 [%d][%d]: along dim 0 %d (want %d), reversed along dim 1 %d (want %d) on %s", what,
                                 i, j, outi[i * N + j], (int32_t)s0, outi[M * N + i * N + j], (int32_t)s1,
                                 trt_device_name(dev));
                }
            for (int bj = 0; bj < gn; bj++)
                for (int i = 0; i < M; i++) {
                    uint32_t t = 0;
                    for (int q = i / bm * bm; q <= i; q++)
                        for (int j = bj * bn; j < N && j < (bj + 1) * bn; j++) t += (uint32_t)xi[q * N + j];
                    if ((uint32_t)rc[bj * M + i] != t)
                        fail_msg("%s: running row sum %d of column block %d = %d, want %d on %s", what, i, bj,
                                 rc[bj * M + i], (int32_t)t, trt_device_name(dev));
                }
            free(out), free(outi), free(rc);
            drop(&p);
        }
    free(x), free(xi);
}

/* Rank 3, i32: along each of the three dims (the middle one reversed). */
static void test_cumsum_3d(void **state) {
    (void)state;
    static const char src[] =
        "kernel scan3(xi: *i32, out: *i32, const A: i32 = 2, const B: i32 = 4, const C: i32 = 8) {\n"
        "    let idx = arange(0, A)[:, None, None] * (B * C) + arange(0, B)[None, :, None] * C\n"
        "              + arange(0, C)[None, None, :];\n"
        "    let w = load(xi + idx);\n"
        "    store(out + idx, cumsum(w, axis = 0));\n"
        "    store(out + A * B * C + idx, cumsum(w, axis = 1, reverse = true));\n"
        "    store(out + 2 * A * B * C + idx, cumsum(w, axis = 2));\n"
        "}\n";
    const int dims[][3] = {{2, 4, 8}, {4, 8, 32}, {8, 2, 4}, {1, 16, 2}, {16, 16, 16}, {32, 1, 4}};
    const int warps[] = {0, 1, 2, 8};
    for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++)
        for (size_t w = 0; w < sizeof warps / sizeof warps[0]; w++) {
            int A = dims[s][0], B = dims[s][1], C = dims[s][2], n = A * B * C;
            tilec_define d[3] = {{"A", A}, {"B", B}, {"C", C}};
            prog p;
            trt_kernel *k = compile_with(&p, "scan3.tile", src, "scan3", d, 3, warps[w]);
            int32_t *x = malloc(sizeof(int32_t) * (size_t)n), *out = malloc(sizeof(int32_t) * 3 * (size_t)n);
            for (int i = 0; i < n; i++) x[i] = rand_i32();
            for (int i = 0; i < 3 * n; i++) out[i] = 0x5a5a5a5a;
            trt_buffer bx = upload(x, sizeof(int32_t) * (size_t)n), bo = upload(out, sizeof(int32_t) * 3 * (size_t)n);
            trt_arg args[2] = {trt_buf(bx), trt_buf(bo)};
            launch(k, 1, 1, 1, args, 2);
            download(bo, out, sizeof(int32_t) * 3 * (size_t)n);
            trt_free(dev, bx);
            for (int i = 0; i < A; i++)
                for (int j = 0; j < B; j++)
                    for (int l = 0; l < C; l++) {
                        uint32_t s0 = 0, s1 = 0, s2 = 0;
                        for (int q = 0; q <= i; q++) s0 += (uint32_t)x[(q * B + j) * C + l];
                        for (int q = j; q < B; q++) s1 += (uint32_t)x[(i * B + q) * C + l];
                        for (int q = 0; q <= l; q++) s2 += (uint32_t)x[(i * B + j) * C + q];
                        int at = (i * B + j) * C + l;
                        if ((uint32_t)out[at] != s0 || (uint32_t)out[n + at] != s1 || (uint32_t)out[2 * n + at] != s2)
                            fail_msg("cube %dx%dx%d, %d warps: [%d][%d][%d] along dims 0, 1 (reversed), 2: %d %d %d, "
                                     "want %d %d %d on %s",
                                     A, B, C, warps[w], i, j, l, out[at], out[n + at], out[2 * n + at], (int32_t)s0,
                                     (int32_t)s1, (int32_t)s2, trt_device_name(dev));
                    }
            free(x), free(out);
            drop(&p);
        }
}

/* ---- stdlib softmax --------------------------------------------------------- */


/* Storage of one element type: bytes, to and from float. */
typedef struct dtype {
    const char *name;
    size_t size;
    void (*put)(void *p, size_t i, float v);
    float (*get)(const void *p, size_t i);
    double tol; /* relative to the largest value of a row: the storage's rounding */
} dtype;
static const dtype dtypes[] = {{"f32", 4, put_f32, get_f32, 1e-5}, {"f16", 2, put_f16, get_f16, 2e-3},
                               {"bf16", 2, put_bf16, get_bf16, 1.6e-2}};

static int pow2_at_least(int n) {
    int b = 1;
    while (b < n) b *= 2;
    return b;
}

/* softmax and its gradient from stdlib/softmax.tile against float64, for
 * f32, f16 and bf16 storage, rows of 1 to 32768, strides that keep rows
 * 16-byte aligned and strides that do not. Tolerance: the storage's
 * rounding, relative to the row's largest output; for the gradient, to
 * the largest |y| (|dy| + sum |dy y|), the size of what dy - sum(dy y)
 * cancels. */
static void test_stdlib_softmax(void **state) {
    (void)state;
    const int shapes[][3] = {/* rows, cols, stride */ {3, 1, 1},        {5, 7, 9},         {37, 1000, 1000},
                             {4, 1024, 1024},   {3, 1000, 1003},   {6, 4097, 4104},
                             {2, 16384, 16384}, {2, 32768, 32768}};
    for (size_t t = 0; t < 3; t++) {
        const dtype *dt = &dtypes[t];
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int rows = shapes[s][0], cols = shapes[s][1], stride = shapes[s][2];
            tilec_define d = {"BLOCK", pow2_at_least(cols)};
            char fwd[32], bwd[32];
            snprintf(fwd, sizeof fwd, "softmax_%s", dt->name);
            snprintf(bwd, sizeof bwd, "softmax_bwd_%s", dt->name);
            prog p;
            trt_kernel *kf = compile_file(&p, "stdlib/softmax.tile", fwd, &d, 1), *kb;
            OK(trt_get_kernel(p.mod, bwd, &kb));
            size_t cells = (size_t)rows * (size_t)stride, bytes = cells * dt->size;
            void *x = malloc(bytes), *y = malloc(bytes), *dy = malloc(bytes), *dx = malloc(bytes);
            for (size_t i = 0; i < cells; i++) {
                dt->put(x, i, rand_f32() / 100); /* logits in about [-10, 10] */
                dt->put(dy, i, rand_f32() / 1000);
            }
            memset(y, 0xff, bytes), memset(dx, 0xff, bytes); /* NaN in every type */
            trt_buffer bx = upload(x, bytes), by = upload(y, bytes), bdy = upload(dy, bytes), bdx = upload(dx, bytes);
            trt_arg af[5] = {trt_buf(bx), trt_buf(by), trt_int(cols), trt_int(stride), trt_int(stride)};
            launch(kf, (uint32_t)rows, 1, 1, af, 5);
            trt_arg ab[5] = {trt_buf(by), trt_buf(bdy), trt_buf(bdx), trt_int(cols), trt_int(stride)};
            launch(kb, (uint32_t)rows, 1, 1, ab, 5);
            download(by, y, bytes);
            download(bdx, dx, bytes);
            double *ref = malloc(sizeof(double) * (size_t)cols);
            for (int r = 0; r < rows; r++) {
                size_t at = (size_t)r * (size_t)stride;
                double mx = -INFINITY, sum = 0, dot = 0, absdot = 0, ymax = 0, gscale = 0;
                for (int i = 0; i < cols; i++) mx = fmax(mx, dt->get(x, at + i));
                for (int i = 0; i < cols; i++) sum += ref[i] = exp(dt->get(x, at + i) - mx);
                for (int i = 0; i < cols; i++) ref[i] /= sum, ymax = fmax(ymax, ref[i]);
                /* the gradient of the stored y, as the kernel sees it */
                for (int i = 0; i < cols; i++) {
                    double p = (double)dt->get(dy, at + i) * dt->get(y, at + i);
                    dot += p, absdot += fabs(p);
                }
                /* dy - dot cancels: its error scales with the inputs, not the result */
                for (int i = 0; i < cols; i++)
                    gscale = fmax(gscale, fabs(dt->get(y, at + i)) * (fabs(dt->get(dy, at + i)) + absdot));
                for (int i = 0; i < cols; i++) {
                    double got = dt->get(y, at + i), err = fabs(got - ref[i]);
                    if (!(err <= dt->tol * ymax + 1e-30))
                        fail_msg("softmax_%s %dx%d stride %d: y[%d][%d] = %.8g, want %.8g on %s", dt->name, rows, cols,
                                 stride, r, i, got, ref[i], trt_device_name(dev));
                    double yv = dt->get(y, at + i), want = yv * (dt->get(dy, at + i) - dot);
                    double g = dt->get(dx, at + i);
                    if (!(fabs(g - want) <= dt->tol * gscale + 1e-30))
                        fail_msg("softmax_bwd_%s %dx%d stride %d: dx[%d][%d] = %.8g, want %.8g on %s", dt->name, rows,
                                 cols, stride, r, i, g, want, trt_device_name(dev));
                }
            }
            trt_free(dev, bx), trt_free(dev, bdy);
            free(x), free(y), free(dy), free(dx), free(ref);
            drop(&p);
        }
    }
}

/* ---- stdlib layernorm -------------------------------------------------------- */

/* layernorm forward and backward (dx, and dw, db through the partial sums
 * and their second kernel) from stdlib/layernorm.tile against float64,
 * for f32, f16 and bf16 storage. The reference takes the stored inputs;
 * tolerances are the storage's rounding relative to each output's scale,
 * plus the GPU's approximate rsqrt (relative 2^-22). */
static void test_stdlib_layernorm(void **state) {
    (void)state;
    const int shapes[][4] = {/* rows, cols, stride, rows per program */ {1, 1, 1, 1},         {7, 5, 8, 3},
                             {37, 1000, 1003, 4},    {16, 1024, 1024, 16}, {9, 4096, 4096, 2},
                             {5, 8192, 8200, 5}};
    for (size_t t = 0; t < 3; t++) {
        const dtype *dt = &dtypes[t];
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int rows = shapes[s][0], cols = shapes[s][1], stride = shapes[s][2], per = shapes[s][3];
            int groups = (rows + per - 1) / per;
            tilec_define d = {"BLOCK", pow2_at_least(cols)};
            /* the column sums a few groups a trip, so that several trips run */
            tilec_define colsum[2] = {{"BLOCK", 64}, {"GROUPS", 4}};
            char fwd[32], bwd[32], dwdb[32];
            snprintf(fwd, sizeof fwd, "layernorm_%s", dt->name);
            snprintf(bwd, sizeof bwd, "layernorm_bwd_%s", dt->name);
            snprintf(dwdb, sizeof dwdb, "layernorm_dwdb_%s", dt->name);
            prog p, q;
            trt_kernel *kf = compile_file(&p, "stdlib/layernorm.tile", fwd, &d, 1), *kb;
            OK(trt_get_kernel(p.mod, bwd, &kb));
            trt_kernel *ks = compile_file(&q, "stdlib/layernorm.tile", dwdb, colsum, 2);
            size_t cells = (size_t)rows * (size_t)stride, bytes = cells * dt->size, wbytes = (size_t)cols * dt->size;
            void *x = malloc(bytes), *y = malloc(bytes), *dy = malloc(bytes), *dx = malloc(bytes);
            void *w = malloc(wbytes), *b = malloc(wbytes), *dw = malloc(wbytes), *db = malloc(wbytes);
            for (size_t i = 0; i < cells; i++) {
                dt->put(x, i, rand_f32() / 300 + 2); /* an offset: the mean must come out */
                dt->put(dy, i, rand_f32() / 1000);
            }
            for (int i = 0; i < cols; i++) dt->put(w, (size_t)i, 1 + rand_f32() / 2000), dt->put(b, (size_t)i, rand_f32() / 1000);
            memset(y, 0xff, bytes), memset(dx, 0xff, bytes), memset(dw, 0xff, wbytes), memset(db, 0xff, wbytes);
            float *mean = poison_f32s(rows), *rstd = poison_f32s(rows);
            float *part = poison_f32s(groups * cols);
            trt_buffer bx = upload(x, bytes), by = upload(y, bytes), bdy = upload(dy, bytes), bdx = upload(dx, bytes),
                       bw = upload(w, wbytes), bb = upload(b, wbytes), bdw = upload(dw, wbytes), bdb = upload(db, wbytes),
                       bm = upload(mean, 4 * (size_t)rows), br = upload(rstd, 4 * (size_t)rows),
                       bpw = upload(part, 4 * (size_t)groups * (size_t)cols),
                       bpb = upload(part, 4 * (size_t)groups * (size_t)cols);
            const double eps = 1e-5;
            trt_arg af[9] = {trt_buf(bx), trt_buf(by), trt_buf(bw),  trt_buf(bb),    trt_buf(bm),
                             trt_buf(br), trt_int(cols), trt_int(stride), trt_float(eps)};
            launch(kf, (uint32_t)rows, 1, 1, af, 9);
            trt_arg ab[12] = {trt_buf(bx),  trt_buf(bdy), trt_buf(bdx), trt_buf(bw),    trt_buf(bm),     trt_buf(br),
                              trt_buf(bpw), trt_buf(bpb), trt_int(rows), trt_int(cols), trt_int(stride), trt_int(per)};
            launch(kb, (uint32_t)groups, 1, 1, ab, 12);
            trt_arg as[6] = {trt_buf(bpw), trt_buf(bpb), trt_buf(bdw), trt_buf(bdb), trt_int(groups), trt_int(cols)};
            launch(ks, cdiv(cols, 64), 1, 1, as, 6);
            download(by, y, bytes), download(bdx, dx, bytes), download(bdw, dw, wbytes), download(bdb, db, wbytes);
            download(bm, mean, 4 * (size_t)rows), download(br, rstd, 4 * (size_t)rows);
            double *xh = malloc(sizeof(double) * (size_t)cols), *rdw = calloc((size_t)cols, sizeof(double)),
                   *rdb = calloc((size_t)cols, sizeof(double)), *adw = calloc((size_t)cols, sizeof(double));
            const char *where = trt_device_name(dev);
            for (int r = 0; r < rows; r++) {
                size_t at = (size_t)r * (size_t)stride;
                double mu = 0, var = 0;
                for (int i = 0; i < cols; i++) mu += dt->get(x, at + i);
                mu /= cols;
                for (int i = 0; i < cols; i++) var += (dt->get(x, at + i) - mu) * (dt->get(x, at + i) - mu);
                var /= cols;
                double rs = 1 / sqrt(var + eps);
                if (!(fabs(mean[r] - mu) <= 1e-6 * (fabs(mu) + 1)) || !(fabs(rstd[r] - rs) <= 2e-6 * rs))
                    fail_msg("%s %dx%d: row %d mean %.8g rstd %.8g, want %.8g %.8g on %s", fwd, rows, cols, r, mean[r],
                             rstd[r], mu, rs, where);
                double c1 = 0, c2 = 0, scale = 0;
                for (int i = 0; i < cols; i++) {
                    xh[i] = (dt->get(x, at + i) - mu) * rs;
                    double wdy = dt->get(w, (size_t)i) * dt->get(dy, at + i);
                    c1 += xh[i] * wdy, c2 += wdy, scale = fmax(scale, fabs(wdy));
                    double want = xh[i] * dt->get(w, (size_t)i) + dt->get(b, (size_t)i), got = dt->get(y, at + i);
                    if (!(fabs(got - want) <= dt->tol * (fabs(want) + 1) + 1e-5))
                        fail_msg("%s %dx%d: y[%d][%d] = %.8g, want %.8g on %s", fwd, rows, cols, r, i, got, want, where);
                    rdw[i] += dt->get(dy, at + i) * xh[i], rdb[i] += dt->get(dy, at + i);
                    adw[i] += fabs(dt->get(dy, at + i) * xh[i]) + fabs(dt->get(dy, at + i));
                }
                c1 /= cols, c2 /= cols;
                for (int i = 0; i < cols; i++) {
                    double wdy = dt->get(w, (size_t)i) * dt->get(dy, at + i);
                    double want = (wdy - (xh[i] * c1 + c2)) * rs, got = dt->get(dx, at + i);
                    /* cancellation in wdy - (...): scale by what cancels */
                    double tol = (dt->tol + 1e-5) * (scale * 4 * rs) + 1e-12;
                    if (!(fabs(got - want) <= tol))
                        fail_msg("%s %dx%d: dx[%d][%d] = %.8g, want %.8g (tol %.3g) on %s", bwd, rows, cols, r, i, got,
                                 want, tol, where);
                }
            }
            for (int i = 0; i < cols; i++) {
                double tw = (dt->tol + 1e-5) * adw[i] + 1e-12;
                if (!(fabs(dt->get(dw, (size_t)i) - rdw[i]) <= tw) || !(fabs(dt->get(db, (size_t)i) - rdb[i]) <= tw))
                    fail_msg("%s %dx%d: dw[%d] %.8g db %.8g, want %.8g %.8g (tol %.3g) on %s", dwdb, rows, cols, i,
                             dt->get(dw, (size_t)i), dt->get(db, (size_t)i), rdw[i], rdb[i], tw, where);
            }
            trt_free(dev, bx), trt_free(dev, bdy), trt_free(dev, bw), trt_free(dev, bb), trt_free(dev, bpw);
            trt_free(dev, bpb);
            free(x), free(y), free(dy), free(dx), free(w), free(b), free(dw), free(db), free(mean), free(rstd);
            free(part), free(xh), free(rdw), free(rdb), free(adw);
            drop(&p), drop(&q);
        }
    }
}

/* ---- tiles of rank 2 and 3 ------------------------------------------------ */

/* Blocks of a matrix: masked 2-D loads and stores, sums and maxima along
 * each axis and over all, a transposed store, a mask transposed with the
 * data. Values are small integers, so every f32 sum is exact and the
 * comparison is bit for bit. Shapes, layouts and warp counts vary: tall,
 * wide, smaller and larger than the threads. */
static void test_tiles_2d(void **state) {
    (void)state;
    static const char src[] =
        "kernel blocks(x: *f32, rowsum: *f32, colmax: *f32, xt: *f32, total: *f32, M: i32, N: i32, stride: i32,\n"
        "              const BM: i32 = 16, const BN: i32 = 32) {\n"
        "    let rows = program_id(0) * BM + arange(0, BM);\n"
        "    let cols = program_id(1) * BN + arange(0, BN);\n"
        "    let mask = rows[:, None] < M & cols[None, :] < N;\n"
        "    let v = load(x + rows[:, None] * stride + cols[None, :], mask, other = 0.0);\n"
        "    store(rowsum + program_id(1) * M + rows, sum(v, axis = 1), rows < M);\n"
        "    store(colmax + program_id(0) * N + cols, max(where(mask, v, -1.0e30), axis = 0), cols < N);\n"
        "    store(xt + cols[:, None] * M + rows[None, :], trans(v) * 2.0 + 1.0, trans(mask));\n"
        "    store(total + program_id(0) * num_programs(1) + program_id(1), sum(v));\n"
        "}\n";
    const int shapes[][2] = {{16, 32}, {1, 32}, {32, 1}, {64, 8}, {2, 128}, {32, 64}, {4, 4}};
    const int warps[] = {0, 1, 2, 4, 8};
    const int M = 37, N = 45, stride = 50;
    float *x = malloc(sizeof(float) * M * stride);
    for (int i = 0; i < M * stride; i++) x[i] = (float)(rand() % 201 - 100);
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (size_t w = 0; w < sizeof warps / sizeof warps[0]; w++) {
            int bm = shapes[sh][0], bn = shapes[sh][1];
            tilec_define d[2] = {{"BM", bm}, {"BN", bn}};
            prog p;
            trt_kernel *k = compile_with(&p, "blocks.tile", src, "blocks", d, 2, warps[w]);
            int gm = (int)cdiv(M, bm), gn = (int)cdiv(N, bn);
            float *rs = poison_f32s(gn * M), *cm = poison_f32s(gm * N), *xt = poison_f32s(M * N), *tot = poison_f32s(gm * gn);
            trt_buffer bx = upload(x, sizeof(float) * M * stride), brs = upload(rs, sizeof(float) * gn * M),
                       bcm = upload(cm, sizeof(float) * gm * N), bxt = upload(xt, sizeof(float) * M * N),
                       btot = upload(tot, sizeof(float) * gm * gn);
            trt_arg args[8] = {trt_buf(bx), trt_buf(brs), trt_buf(bcm), trt_buf(bxt), trt_buf(btot),
                               trt_int(M),  trt_int(N),   trt_int(stride)};
            launch(k, (uint32_t)gm, (uint32_t)gn, 1, args, 8);
            download(brs, rs, sizeof(float) * gn * M), download(bcm, cm, sizeof(float) * gm * N);
            download(bxt, xt, sizeof(float) * M * N), download(btot, tot, sizeof(float) * gm * gn);
            trt_free(dev, bx);
            char what[96];
            snprintf(what, sizeof what, "blocks %dx%d, %d warps", bm, bn, warps[w]);
            for (int bi = 0; bi < gm; bi++)
                for (int bj = 0; bj < gn; bj++) {
                    float t = 0;
                    for (int i = bi * bm; i < M && i < (bi + 1) * bm; i++)
                        for (int j = bj * bn; j < N && j < (bj + 1) * bn; j++) t += x[i * stride + j];
                    if (tot[bi * gn + bj] != t)
                        fail_msg("%s: total of block (%d, %d) = %g, want %g on %s", what, bi, bj, tot[bi * gn + bj], t,
                                 trt_device_name(dev));
                }
            for (int bj = 0; bj < gn; bj++)
                for (int i = 0; i < M; i++) {
                    float t = 0;
                    for (int j = bj * bn; j < N && j < (bj + 1) * bn; j++) t += x[i * stride + j];
                    if (rs[bj * M + i] != t)
                        fail_msg("%s: row sum %d of column block %d = %g, want %g on %s", what, i, bj, rs[bj * M + i], t,
                                 trt_device_name(dev));
                }
            for (int bi = 0; bi < gm; bi++)
                for (int j = 0; j < N; j++) {
                    float m = -1.0e30f;
                    for (int i = bi * bm; i < M && i < (bi + 1) * bm; i++) m = fmaxf(m, x[i * stride + j]);
                    if (cm[bi * N + j] != m)
                        fail_msg("%s: column max %d of row block %d = %g, want %g on %s", what, j, bi, cm[bi * N + j], m,
                                 trt_device_name(dev));
                }
            for (int j = 0; j < N; j++)
                for (int i = 0; i < M; i++)
                    if (xt[j * M + i] != x[i * stride + j] * 2 + 1)
                        fail_msg("%s: xt[%d][%d] = %g, want %g on %s", what, j, i, xt[j * M + i], x[i * stride + j] * 2 + 1,
                                 trt_device_name(dev));
            free(rs), free(cm), free(xt), free(tot);
            drop(&p);
        }
    free(x);
}

/* ---- dot ------------------------------------------------------------------
 * C = A.B (+ an epilogue) over a grid of BMxBN blocks, the K loop carrying
 * the accumulator, masks at every edge (M, N, K not multiples of the
 * blocks). Inputs are random non-zero values of the input type (rounded to
 * tf32 for `dot` on f32, as the tensor cores do: cvt.rna); the reference
 * sums the exact products in float64. Tolerance: f32 accumulation of K
 * terms in any order, K 2^-23 sum_k |a_ik b_kj| (the tensor cores add in
 * groups of k); i8 into i32 is exact. On the GPU these kernels run on
 * mma.sync (dot_ieee on FMAs). */

typedef struct dot_case {
    const char *type;  /* input element type */
    const char *prec;  /* input_precision, or NULL */
    size_t bytes;
    void (*put)(void *, size_t, float);
    float (*get)(const void *, size_t);
} dot_case;

static float tf32_round(float x) { /* cvt.rna.tf32.f32 */
    uint32_t u;
    memcpy(&u, &x, 4);
    u = (u + 0x1000u) & ~0x1fffu;
    memcpy(&x, &u, 4);
    return x;
}

static void put_i8(void *p, size_t i, float v) { ((int8_t *)p)[i] = (int8_t)v; }
static float get_i8(const void *p, size_t i) { return ((const int8_t *)p)[i]; }

/* A random non-zero input of the case's type, as the kernel will read it. */
static float dot_input(const dot_case *dc) {
    if (dc->put == put_i8) {
        int v = rand() % 255 - 127;
        return (float)(v ? v : 1);
    }
    float v = (float)(rand() % 20001 - 10000) / 9973.0f;
    if (v == 0) v = 0.5f;
    unsigned char tmp[4];
    dc->put(tmp, 0, v);
    return dc->get(tmp, 0);
}

static void run_dot(const dot_case *dc, int bm, int bn, int bk, int warps, bool epilogue) {
    bool integer = dc->put == put_i8;
    char src[2048];
    /* epilogue: out = f16(acc + bias[None, :]) */
    snprintf(src, sizeof src,
             "kernel mm(a: *%s, b: *%s, bias: *f32, c: *%s, M: i32, N: i32, K: i32,\n"
             "          const BM: i32 = 16, const BN: i32 = 16, const BK: i32 = 16) {\n"
             "    let rm = program_id(0) * BM + arange(0, BM);\n"
             "    let rn = program_id(1) * BN + arange(0, BN);\n"
             "    let rk = arange(0, BK);\n"
             "    var acc = zeros((BM, BN), %s);\n"
             "    for k in range(0, K, BK) {\n"
             "        let x = load(a + rm[:, None] * K + (k + rk)[None, :], rm[:, None] < M & (k + rk)[None, :] < K, other = %s);\n"
             "        let y = load(b + (k + rk)[:, None] * N + rn[None, :], (k + rk)[:, None] < K & rn[None, :] < N, other = %s);\n"
             "        acc = dot(x, y, acc%s%s%s);\n"
             "    }\n"
             "    %s\n"
             "}\n",
             dc->type, dc->type, epilogue ? "f16" : integer ? "i32" : "f32", integer ? "i32" : "f32",
             integer ? "0" : "0.0", integer ? "0" : "0.0", dc->prec ? ", input_precision = \"" : "",
             dc->prec ? dc->prec : "", dc->prec ? "\"" : "",
             epilogue ? "store(c + rm[:, None] * N + rn[None, :], cast(acc + load(bias + rn, rn < N, other = 0.0)[None, :], f16), "
                        "rm[:, None] < M & rn[None, :] < N);"
                      : "store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);");
    /* edges in every dim: two blocks and a bit along M and N, K past a
     * multiple of BK */
    const int M = 2 * bm + 3, N = bn + 5, K = 2 * bk + 7;
    float *a = malloc(sizeof(float) * (size_t)(M * K)), *b = malloc(sizeof(float) * (size_t)(K * N));
    float *bias = malloc(sizeof(float) * (size_t)N);
    unsigned char *ha = malloc(dc->bytes * (size_t)(M * K)), *hb = malloc(dc->bytes * (size_t)(K * N));
    for (int i = 0; i < M * K; i++) a[i] = dot_input(dc), dc->put(ha, (size_t)i, a[i]);
    for (int i = 0; i < K * N; i++) b[i] = dot_input(dc), dc->put(hb, (size_t)i, b[i]);
    for (int j = 0; j < N; j++) bias[j] = rand_f32() / 64.0f;
    size_t cbytes = epilogue ? 2 : 4;
    unsigned char *hc = malloc(cbytes * (size_t)(M * N));
    memset(hc, 0xff, cbytes * (size_t)(M * N)); /* NaN for f16/f32, -1 for i32 */
    tilec_define d[3] = {{"BM", bm}, {"BN", bn}, {"BK", bk}};
    prog p;
    trt_kernel *k = compile_with(&p, "dot.tile", src, "mm", d, 3, warps);
    trt_buffer ba = upload(ha, dc->bytes * (size_t)(M * K)), bb = upload(hb, dc->bytes * (size_t)(K * N)),
               bbias = upload(bias, sizeof(float) * (size_t)N), bc = upload(hc, cbytes * (size_t)(M * N));
    trt_arg args[7] = {trt_buf(ba), trt_buf(bb), trt_buf(bbias), trt_buf(bc), trt_int(M), trt_int(N), trt_int(K)};
    launch(k, cdiv(M, bm), cdiv(N, bn), 1, args, 7);
    download(bc, hc, cbytes * (size_t)(M * N));
    trt_free(dev, ba), trt_free(dev, bb), trt_free(dev, bbias);
    bool tf32 = dc->put == put_f32 && !(dc->prec && !strcmp(dc->prec, "ieee"));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0, mag = 0;
            for (int kk = 0; kk < K; kk++) {
                double x = tf32 ? tf32_round(a[i * K + kk]) : a[i * K + kk];
                double y = tf32 ? tf32_round(b[kk * N + j]) : b[kk * N + j];
                want += x * y;
                mag += fabs(x * y);
            }
            if (integer) {
                int32_t got = ((int32_t *)hc)[i * N + j];
                if (got != (int32_t)want)
                    fail_msg("dot %s %dx%dx%d, %d warps: c[%d][%d] = %d, want %d on %s", dc->type, bm, bn, bk, warps, i, j,
                             got, (int32_t)want, trt_device_name(dev));
                continue;
            }
            double tol = K * ldexp(1.0, -23) * mag, got;
            if (epilogue) {
                want += bias[j];
                tol += fabs(want) * ldexp(1.0, -11) + ldexp(1.0, -24) * fabs(bias[j]); /* f16 rounding, the f32 add */
                got = get_f16(hc, (size_t)(i * N + j));
            } else {
                got = ((float *)hc)[i * N + j];
            }
            if (!(fabs(got - want) <= tol))
                fail_msg("dot %s%s%s %dx%dx%d, %d warps%s: c[%d][%d] = %.9g, want %.9g (tolerance %.3g) on %s", dc->type,
                         dc->prec ? " " : "", dc->prec ? dc->prec : "", bm, bn, bk, warps, epilogue ? ", epilogue" : "", i,
                         j, got, want, tol, trt_device_name(dev));
        }
    free(a), free(b), free(bias), free(ha), free(hb), free(hc);
    drop(&p);
}

static void test_dot(void **state) {
    (void)state;
    static const dot_case cases[] = {
        {"f16", NULL, 2, put_f16, get_f16},        {"bf16", NULL, 2, put_bf16, get_bf16},
        {"f32", NULL, 4, put_f32, get_f32},        {"f32", "ieee", 4, put_f32, get_f32},
        {"i8", NULL, 1, put_i8, get_i8},
    };
    static const int shapes[][3] = {{16, 16, 16}, {64, 32, 16}, {128, 128, 64}, {32, 64, 32}};
    static const int warps[] = {4, 8};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (size_t w = 0; w < sizeof warps / sizeof warps[0]; w++)
                run_dot(&cases[c], shapes[s][0], shapes[s][1], shapes[s][2], warps[w], false);
    /* the epilogue: f32 accumulator plus a bias row, stored as f16 */
    for (size_t c = 0; c < 4; c++) {
        run_dot(&cases[c], 64, 32, 16, 4, true);
        run_dot(&cases[c], 16, 64, 32, 8, true);
    }
}

/* A dot's result (the mma layout on the GPU) feeding what else tiles do:
 * a transpose, a row sum, a column scan, a branch, a while loop and an
 * elementwise epilogue. Inputs are small non-zero integers, so every
 * product and sum is exact in f32 and the results compare exactly. */
static void test_dot_result_uses(void **state) {
    (void)state;
    static const char src[] =
        "kernel uses(a: *f16, b: *f16, t: *f32, rs: *f32, cs: *f32, w: *f32) {\n"
        "    let r = arange(0, 32);\n"
        "    let k = arange(0, 16);\n"
        "    let x = load(a + r[:, None] * 16 + k[None, :]);\n"
        "    let y = load(b + k[:, None] * 32 + r[None, :]);\n"
        "    let d = dot(x, y);\n"
        "    store(t + r[:, None] * 32 + r[None, :], trans(d));\n"
        "    store(rs + r, sum(d, axis = 1));\n"
        "    store(cs + r[:, None] * 32 + r[None, :], cumsum(d, axis = 0));\n"
        "    var acc = d;\n"
        "    if program_id(0) == 0 {\n"
        "        acc = where(d > 0.0, d, load(w + r[:, None] * 32 + r[None, :]));\n"
        "    }\n"
        "    var i = 0;\n"
        "    while i < 3 {\n"
        "        acc = acc * 0.5;\n"
        "        i = i + 1;\n"
        "    }\n"
        "    store(w + r[:, None] * 32 + r[None, :], acc + d);\n"
        "}\n";
    static const int warps[] = {1, 4, 8};
    for (size_t wi = 0; wi < sizeof warps / sizeof warps[0]; wi++) {
        float a[32 * 16], b[16 * 32], w0[32 * 32], d[32 * 32];
        uint16_t ha[32 * 16], hb[16 * 32];
        for (int i = 0; i < 32 * 16; i++) {
            a[i] = (float)(rand() % 4 + 1) * (rand() % 2 ? 1 : -1), put_f16(ha, (size_t)i, a[i]);
            b[i] = (float)(rand() % 4 + 1) * (rand() % 2 ? 1 : -1), put_f16(hb, (size_t)i, b[i]);
        }
        for (int i = 0; i < 32 * 32; i++) w0[i] = (float)(rand() % 100 + 1);
        for (int i = 0; i < 32; i++)
            for (int j = 0; j < 32; j++) {
                float s = 0;
                for (int kk = 0; kk < 16; kk++) s += a[i * 16 + kk] * b[kk * 32 + j];
                d[i * 32 + j] = s;
            }
        float *t = poison_f32s(32 * 32), *rs = poison_f32s(32), *cs = poison_f32s(32 * 32);
        prog p;
        trt_kernel *k = compile_with(&p, "uses.tile", src, "uses", NULL, 0, warps[wi]);
        trt_buffer ba = upload(ha, sizeof ha), bb = upload(hb, sizeof hb), bt = upload(t, sizeof(float) * 32 * 32),
                   brs = upload(rs, sizeof(float) * 32), bcs = upload(cs, sizeof(float) * 32 * 32),
                   bw = upload(w0, sizeof w0);
        trt_arg args[6] = {trt_buf(ba), trt_buf(bb), trt_buf(bt), trt_buf(brs), trt_buf(bcs), trt_buf(bw)};
        launch(k, 1, 1, 1, args, 6);
        float w[32 * 32];
        download(bt, t, sizeof(float) * 32 * 32), download(brs, rs, sizeof(float) * 32);
        download(bcs, cs, sizeof(float) * 32 * 32), download(bw, w, sizeof w);
        trt_free(dev, ba), trt_free(dev, bb);
        float want_t[32 * 32], want_rs[32], want_cs[32 * 32], want_w[32 * 32];
        for (int i = 0; i < 32; i++) {
            want_rs[i] = 0;
            for (int j = 0; j < 32; j++) {
                want_t[j * 32 + i] = d[i * 32 + j];
                want_rs[i] += d[i * 32 + j];
                want_cs[i * 32 + j] = d[i * 32 + j] + (i ? want_cs[(i - 1) * 32 + j] : 0);
                float acc = d[i * 32 + j] > 0 ? d[i * 32 + j] : w0[i * 32 + j];
                want_w[i * 32 + j] = acc * 0.125f + d[i * 32 + j];
            }
        }
        char what[64];
        snprintf(what, sizeof what, "dot result uses, %d warps: transpose", warps[wi]);
        expect_f32(what, 32 * 32, t, want_t);
        snprintf(what, sizeof what, "dot result uses, %d warps: row sums", warps[wi]);
        expect_f32(what, 32, rs, want_rs);
        snprintf(what, sizeof what, "dot result uses, %d warps: column scan", warps[wi]);
        expect_f32(what, 32 * 32, cs, want_cs);
        snprintf(what, sizeof what, "dot result uses, %d warps: branch and loop", warps[wi]);
        expect_f32(what, 32 * 32, w, want_w);
        free(t), free(rs), free(cs);
        drop(&p);
    }
}

/* ---- pipelined matmul with carried pointers ------------------------------
 * Triton's tutorial matmul: the K loop advances its pointers (`a_ptrs +=
 * BK * stride_ak`) and a k offset used in the masks from trip to trip,
 * which software pipelining (lower/pipeline_loops.c) stages through
 * shared-memory rings S-1 trips ahead. M, N and K are odd, so every
 * block's edges and the last trip's tail are masked. Two forms: the
 * strides as run-time arguments (the copies go element by element: nothing
 * is known about their alignment), and padded leading dims given at
 * compile time with unit steps along k and n (16-byte cp.async copies,
 * falling back to elements where a run's mask lanes differ). The cpu
 * device runs the loop unpipelined (the interpreter takes the IR before
 * the passes; test_runtime_interp checks the pipelined IR there); the emu
 * and cuda devices run the pipelined code. The reference
 * sums the exact products of the f16 inputs in float64; tolerance: f32
 * accumulation of K terms in any order, K 2^-23 sum_k |a_ik b_kj|. */
static const char carried_mm_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, %s,\n"
    "          const BM: i32 = 32, const BN: i32 = 32, const BK: i32 = 16, const S: i32 = 3) {\n"
    "    let offs_am = program_id(0) * BM + arange(0, BM);\n"
    "    let offs_bn = program_id(1) * BN + arange(0, BN);\n"
    "    let offs_k = arange(0, BK);\n"
    "    var a_ptrs = a + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak;\n"
    "    var b_ptrs = b + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn;\n"
    "    var k0 = 0;\n"
    "    var acc = zeros((BM, BN), f32);\n"
    "    for k in range(0, cdiv(K, BK), num_stages = S) {\n"
    "        let x = load(a_ptrs, (offs_am[:, None] < M) & ((k0 + offs_k)[None, :] < K), other = 0.0);\n"
    "        let y = load(b_ptrs, (offs_k[:, None] < K - k * BK) & (offs_bn[None, :] < N), other = 0.0);\n"
    "        acc = dot(x, y, acc);\n"
    "        a_ptrs = a_ptrs + BK * stride_ak;\n"
    "        b_ptrs = b_ptrs + BK * stride_bk;\n"
    "        k0 = k0 + BK;\n"
    "    }\n"
    "    store(c + offs_am[:, None] * N + offs_bn[None, :], acc, (offs_am[:, None] < M) & (offs_bn[None, :] < N));\n"
    "}\n";

static void run_carried_mm(bool const_strides, int bm, int bn, int bk, int stages) {
    const int M = 2 * bm + 3, N = bn + 5, K = 5 * bk + 7;
    const int lda = const_strides ? (K + 7) / 8 * 8 : K, ldb = const_strides ? (N + 7) / 8 * 8 : N;
    char src[sizeof carried_mm_src + 256];
    snprintf(src, sizeof src, carried_mm_src,
             const_strides ? "const stride_am: i32 = 0, const stride_ak: i32 = 1, const stride_bk: i32 = 0, "
                             "const stride_bn: i32 = 1"
                           : "stride_am: i32, stride_ak: i32, stride_bk: i32, stride_bn: i32");
    float *a = malloc(sizeof(float) * (size_t)(M * lda)), *b = malloc(sizeof(float) * (size_t)(K * ldb));
    uint16_t *ha = malloc(2 * (size_t)(M * lda)), *hb = malloc(2 * (size_t)(K * ldb));
    float *c = poison_f32s(M * N);
    /* random non-zero f16 values in (-1, 1), padding included */
    for (int i = 0; i < M * lda; i++) put_f16(ha, (size_t)i, rand_f32() / 1000.0f), a[i] = get_f16(ha, (size_t)i);
    for (int i = 0; i < K * ldb; i++) put_f16(hb, (size_t)i, rand_f32() / 1000.0f), b[i] = get_f16(hb, (size_t)i);
    tilec_define d[6] = {{"BM", bm}, {"BN", bn}, {"BK", bk}, {"S", stages}, {"stride_am", lda}, {"stride_bk", ldb}};
    prog p;
    trt_kernel *k = compile_text(&p, "carried.tile", src, "mm", d, const_strides ? 6 : 4);
    trt_buffer ba = upload(ha, 2 * (size_t)(M * lda)), bb = upload(hb, 2 * (size_t)(K * ldb)),
               bc = upload(c, sizeof(float) * (size_t)(M * N));
    trt_arg args[10] = {trt_buf(ba), trt_buf(bb), trt_buf(bc), trt_int(M), trt_int(N), trt_int(K),
                        trt_int(lda),  trt_int(1),    trt_int(ldb),  trt_int(1)};
    launch(k, cdiv(M, bm), cdiv(N, bn), 1, args, const_strides ? 6 : 10);
    download(bc, c, sizeof(float) * (size_t)(M * N));
    trt_free(dev, ba), trt_free(dev, bb);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0, mag = 0;
            for (int kk = 0; kk < K; kk++) {
                double prod = (double)a[i * lda + kk] * b[kk * ldb + j];
                want += prod;
                mag += fabs(prod);
            }
            double tol = K * ldexp(1.0, -23) * mag, got = c[i * N + j];
            if (!(fabs(got - want) <= tol))
                fail_msg("carried-pointer matmul %dx%dx%d, S=%d, %s strides: c[%d][%d] = %.9g, want %.9g "
                         "(tolerance %.3g) on %s",
                         bm, bn, bk, stages, const_strides ? "compile-time" : "run-time", i, j, got, want, tol,
                         trt_device_name(dev));
        }
    free(a), free(b), free(ha), free(hb), free(c);
    drop(&p);
}

static void test_pipelined_carried_pointers(void **state) {
    (void)state;
    run_carried_mm(false, 32, 32, 16, 3);
    run_carried_mm(false, 16, 16, 16, 4);
    run_carried_mm(true, 32, 32, 16, 2);
    run_carried_mm(true, 64, 32, 32, 4);
}

/* Rank 3, integer tiles: a permutation, reshapes, a reduction along the
 * middle dim, and a maximum broadcast back over the dim it removed. */
static void test_tiles_3d(void **state) {
    (void)state;
    static const char src[] =
        "kernel cube(x: *i32, perm: *i32, mid: *i32, centered: *i32, const A: i32 = 2, const B: i32 = 4,\n"
        "            const C: i32 = 8) {\n"
        "    let a = arange(0, A);\n"
        "    let b = arange(0, B);\n"
        "    let c = arange(0, C);\n"
        "    let idx = a[:, None, None] * (B * C) + b[None, :, None] * C + c[None, None, :];\n"
        "    let v = load(x + idx);\n"
        "    store(perm + arange(0, A * B * C), reshape(permute(v, (2, 0, 1)), A * B * C));\n"
        "    store(mid + a[:, None] * C + c[None, :], sum(v, axis = 1));\n"
        "    store(centered + reshape(idx, (A * B, C)), reshape(v - max(v, axis = 2)[:, :, None], (A * B, C)));\n"
        "}\n";
    const int dims[][3] = {{2, 4, 8}, {4, 8, 32}, {8, 2, 4}, {1, 16, 2}, {16, 16, 16}};
    const int warps[] = {0, 1, 4};
    for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++)
        for (size_t w = 0; w < sizeof warps / sizeof warps[0]; w++) {
            int A = dims[s][0], B = dims[s][1], C = dims[s][2], n = A * B * C;
            tilec_define d[3] = {{"A", A}, {"B", B}, {"C", C}};
            prog p;
            trt_kernel *k = compile_with(&p, "cube.tile", src, "cube", d, 3, warps[w]);
            int32_t *x = malloc(sizeof(int32_t) * (size_t)n), *pm = malloc(sizeof(int32_t) * (size_t)n),
                    *md = malloc(sizeof(int32_t) * (size_t)(A * C)), *ce = malloc(sizeof(int32_t) * (size_t)n);
            for (int i = 0; i < n; i++) x[i] = rand_i32() % 100000;
            memset(pm, 0xa5, sizeof(int32_t) * (size_t)n), memset(md, 0xa5, sizeof(int32_t) * (size_t)(A * C));
            memset(ce, 0xa5, sizeof(int32_t) * (size_t)n);
            trt_buffer bx = upload(x, sizeof(int32_t) * (size_t)n), bp = upload(pm, sizeof(int32_t) * (size_t)n),
                       bm = upload(md, sizeof(int32_t) * (size_t)(A * C)), bc = upload(ce, sizeof(int32_t) * (size_t)n);
            trt_arg args[4] = {trt_buf(bx), trt_buf(bp), trt_buf(bm), trt_buf(bc)};
            launch(k, 1, 1, 1, args, 4);
            download(bp, pm, sizeof(int32_t) * (size_t)n), download(bm, md, sizeof(int32_t) * (size_t)(A * C));
            download(bc, ce, sizeof(int32_t) * (size_t)n);
            trt_free(dev, bx);
            char what[64];
            snprintf(what, sizeof what, "cube %dx%dx%d, %d warps", A, B, C, warps[w]);
            for (int i = 0; i < A; i++)
                for (int j = 0; j < B; j++)
                    for (int l = 0; l < C; l++) {
                        int at = (i * B + j) * C + l, want = x[at];
                        if (pm[(l * A + i) * B + j] != want)
                            fail_msg("%s: permuted [%d][%d][%d] = %d, want %d on %s", what, l, i, j,
                                     pm[(l * A + i) * B + j], want, trt_device_name(dev));
                        int m = x[(i * B + j) * C];
                        for (int q = 1; q < C; q++) m = x[(i * B + j) * C + q] > m ? x[(i * B + j) * C + q] : m;
                        if (ce[at] != x[at] - m)
                            fail_msg("%s: centered [%d][%d][%d] = %d, want %d on %s", what, i, j, l, ce[at], x[at] - m,
                                     trt_device_name(dev));
                    }
            for (int i = 0; i < A; i++)
                for (int l = 0; l < C; l++) {
                    int32_t t = 0;
                    for (int j = 0; j < B; j++) t += x[(i * B + j) * C + l];
                    if (md[i * C + l] != t)
                        fail_msg("%s: sum over the middle [%d][%d] = %d, want %d on %s", what, i, l, md[i * C + l], t,
                                 trt_device_name(dev));
                }
            free(x), free(pm), free(md), free(ce);
            drop(&p);
        }
}

/* argmax and argmin along each axis and over all: the first index of the
 * extreme, a NaN counting as the extreme. Few distinct values, so there
 * are ties; some cases hold NaNs. */
static int first_ext(const float *v, int n, int step, bool want_max) {
    int best = 0;
    for (int i = 0; i < n; i++) {
        float a = v[i * step], b = v[best * step];
        if (isnan(b)) break;
        if (isnan(a) || (want_max ? a > b : a < b)) best = i;
    }
    return best;
}

static void test_argmax_argmin(void **state) {
    (void)state;
    static const char src[] =
        "kernel arg(x: *f32, xi: *i32, out: *i32, const R: i32 = 8, const C: i32 = 16) {\n"
        "    let r = arange(0, R);\n"
        "    let c = arange(0, C);\n"
        "    let off = r[:, None] * C + c[None, :];\n"
        "    let v = load(x + off);\n"
        "    let w = load(xi + off);\n"
        "    store(out + r, argmax(v, axis = 1));\n"
        "    store(out + R + c, argmin(v, axis = 0));\n"
        "    store(out + R + C, argmax(v));\n"
        "    store(out + R + C + 1, argmin(w));\n"
        "    store(out + R + C + 2 + r, argmin(w, axis = 1));\n"
        "}\n";
    const int shapes[][2] = {{8, 16}, {1, 64}, {32, 4}, {16, 32}};
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (int nan = 0; nan < 2; nan++) {
            int R = shapes[sh][0], C = shapes[sh][1], n = R * C, nout = 2 * R + C + 2;
            tilec_define d[2] = {{"R", R}, {"C", C}};
            prog p;
            trt_kernel *k = compile_text(&p, "arg.tile", src, "arg", d, 2);
            float *x = malloc(sizeof(float) * (size_t)n);
            int32_t *xi = malloc(sizeof(int32_t) * (size_t)n), *out = malloc(sizeof(int32_t) * (size_t)nout);
            for (int i = 0; i < n; i++) x[i] = (float)(rand() % 7 - 3) + 0.5f, xi[i] = rand() % 5 - 2;
            if (nan) x[rand() % n] = NAN, x[rand() % n] = NAN;
            memset(out, 0xa5, sizeof(int32_t) * (size_t)nout);
            trt_buffer bx = upload(x, sizeof(float) * (size_t)n), bi = upload(xi, sizeof(int32_t) * (size_t)n),
                       bo = upload(out, sizeof(int32_t) * (size_t)nout);
            trt_arg args[3] = {trt_buf(bx), trt_buf(bi), trt_buf(bo)};
            launch(k, 1, 1, 1, args, 3);
            download(bo, out, sizeof(int32_t) * (size_t)nout);
            trt_free(dev, bx), trt_free(dev, bi);
            int *want = malloc(sizeof(int) * (size_t)nout);
            for (int i = 0; i < R; i++) want[i] = first_ext(x + i * C, C, 1, true);
            for (int j = 0; j < C; j++) want[R + j] = first_ext(x + j, R, C, false);
            want[R + C] = first_ext(x, n, 1, true);
            int best = 0;
            for (int i = 1; i < n; i++) best = xi[i] < xi[best] ? i : best;
            want[R + C + 1] = best;
            for (int i = 0; i < R; i++) {
                best = 0;
                for (int j = 1; j < C; j++) best = xi[i * C + j] < xi[i * C + best] ? j : best;
                want[R + C + 2 + i] = best;
            }
            for (int i = 0; i < nout; i++)
                if (out[i] != want[i])
                    fail_msg("argmax/argmin %dx%d%s: result %d = %d, want %d on %s", R, C, nan ? " with NaNs" : "", i,
                             out[i], want[i], trt_device_name(dev));
            free(x), free(xi), free(out), free(want);
            drop(&p);
        }
}

/* ---- if / else / while ------------------------------------------------------ */

/* Scalar control flow: a while whose trip count depends on loaded data,
 * with an if/else inside (the Collatz steps of each program's number). */
static void test_while_and_if_on_scalars(void **state) {
    (void)state;
    static const char src[] =
        "kernel collatz(x: *i32, steps: *i32, peak: *i32) {\n"
        "    let pid = program_id(0);\n"
        "    var v = load(x + pid);\n"
        "    var n = 0;\n"
        "    var top = v;\n"
        "    while v != 1 {\n"
        "        if v % 2 == 0 {\n"
        "            v = v / 2;\n"
        "        } else {\n"
        "            v = 3 * v + 1;\n"
        "            if v > top { top = v; }\n"
        "        }\n"
        "        n = n + 1;\n"
        "    }\n"
        "    store(steps + pid, n);\n"
        "    store(peak + pid, top);\n"
        "}\n";
    enum { N = 300 };
    int32_t x[N], steps[N], peak[N];
    for (int i = 0; i < N; i++) x[i] = i < 10 ? i + 1 : 1 + rand() % 5000;
    memset(steps, 0xa5, sizeof steps), memset(peak, 0xa5, sizeof peak);
    prog p;
    trt_kernel *k = compile_text(&p, "collatz.tile", src, "collatz", NULL, 0);
    trt_buffer bx = upload(x, sizeof x), bs = upload(steps, sizeof steps), bp = upload(peak, sizeof peak);
    trt_arg args[3] = {trt_buf(bx), trt_buf(bs), trt_buf(bp)};
    launch(k, N, 1, 1, args, 3);
    download(bs, steps, sizeof steps), download(bp, peak, sizeof peak);
    trt_free(dev, bx);
    for (int i = 0; i < N; i++) {
        int64_t v = x[i], top = v;
        int n = 0;
        while (v != 1) {
            v = v % 2 == 0 ? v / 2 : 3 * v + 1;
            top = v > top ? v : top;
            n++;
        }
        if (steps[i] != n || peak[i] != top)
            fail_msg("collatz(%d): %d steps, peak %d; want %d, %lld on %s", x[i], steps[i], peak[i], n, (long long)top,
                     trt_device_name(dev));
    }
    drop(&p);
}

/* Tiles carried by a while (its test a reduction, so every warp must
 * agree) and through if/else branches that reduce and use shared memory,
 * over block sizes and warp counts. Values halve exactly and the branch
 * arithmetic rounds once per f32 operation, so results are exact. */
static void test_control_flow_on_tiles(void **state) {
    (void)state;
    static const char src[] =
        "kernel cf(x: *f32, w: *i32, out: *f32, iters: *i32, n_cols: i32, const BLOCK: i32 = 256) {\n"
        "    let row = program_id(0);\n"
        "    let cols = arange(0, BLOCK);\n"
        "    let mask = cols < n_cols;\n"
        "    var t = load(x + row * n_cols + cols, mask, other = 0.0);\n"
        "    let wi = load(w + row * n_cols + cols, mask, other = 0);\n"
        "    var it = 0;\n"
        "    while max(abs(t)) > 1.0 {\n"
        "        t = t * 0.5;\n"
        "        it = it + 1;\n"
        "    }\n"
        "    let s = sum(wi);\n"
        "    if s % 3 == 0 {\n"
        "        t = t + 1.0;\n"
        "    } else if s % 3 == 1 | s % 3 == -1 {\n"
        "        t = t - 2.0 * max(t);\n"
        "    } else {\n"
        "        it = -it;\n"
        "    }\n"
        "    store(out + row * n_cols + cols, t, mask);\n"
        "    store(iters + row, it);\n"
        "}\n";
    const int blocks[] = {1, 32, 256, 1024};
    const int warps[] = {1, 2, 4, 8};
    const int rows = 12;
    for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++)
        for (size_t wi = 0; wi < sizeof warps / sizeof warps[0]; wi++) {
            int block = blocks[bi], n_cols = block > 1 ? block - block / 4 + 1 : 1, n = rows * n_cols;
            tilec_define d[1] = {{"BLOCK", block}};
            prog p;
            trt_kernel *k = compile_with(&p, "cf.tile", src, "cf", d, 1, warps[wi]);
            float *x = rand_f32s(n), *out = poison_f32s(n);
            int32_t *w = malloc(sizeof(int32_t) * (size_t)n), iters[12];
            for (int i = 0; i < n; i++) w[i] = rand() % 201 - 100;
            for (int j = 0; j < n_cols; j++) x[3 * n_cols + j] /= 4096.0f; /* a row the loop never runs for */
            memset(iters, 0xa5, sizeof iters);
            trt_buffer bx = upload(x, sizeof(float) * (size_t)n), bw = upload(w, sizeof(int32_t) * (size_t)n),
                       bo = upload(out, sizeof(float) * (size_t)n), bt = upload(iters, sizeof iters);
            trt_arg args[5] = {trt_buf(bx), trt_buf(bw), trt_buf(bo), trt_buf(bt), trt_int(n_cols)};
            launch(k, (uint32_t)rows, 1, 1, args, 5);
            download(bo, out, sizeof(float) * (size_t)n), download(bt, iters, sizeof iters);
            trt_free(dev, bx), trt_free(dev, bw);
            for (int r = 0; r < rows; r++) {
                float *t = x + r * n_cols;
                int it = 0, s = 0;
                for (;;) {
                    float m = 0;
                    for (int j = 0; j < n_cols; j++) m = fabsf(t[j]) > m ? fabsf(t[j]) : m;
                    if (!(m > 1.0f)) break;
                    for (int j = 0; j < n_cols; j++) t[j] *= 0.5f;
                    it++;
                }
                for (int j = 0; j < n_cols; j++) s += w[r * n_cols + j];
                float mx = -INFINITY;
                for (int j = 0; j < block; j++) mx = fmaxf(mx, j < n_cols ? t[j] : 0.0f); /* masked lanes hold 0 */
                for (int j = 0; j < n_cols; j++) {
                    if (s % 3 == 0) t[j] = t[j] + 1.0f;
                    else if (s % 3 == 1 || s % 3 == -1) t[j] = t[j] - 2.0f * mx;
                }
                if (s % 3 != 0 && s % 3 != 1 && s % 3 != -1) it = -it;
                if (iters[r] != it)
                    fail_msg("BLOCK %d, %d warps, row %d: %d halvings, want %d on %s", block, warps[wi], r, iters[r], it,
                             trt_device_name(dev));
                for (int j = 0; j < n_cols; j++)
                    if (memcmp(&out[r * n_cols + j], &t[j], sizeof(float)))
                        fail_msg("BLOCK %d, %d warps, row %d col %d: %a, want %a on %s", block, warps[wi], r, j,
                                 (double)out[r * n_cols + j], (double)t[j], trt_device_name(dev));
            }
            free(x), free(out), free(w);
            drop(&p);
        }
}

/* ---- stdlib rmsnorm ---------------------------------------------------------- */

/* The absolute error a stored output may have near zero: f16's subnormal
 * spacing (2^-24), else f32's smallest normal, which the GPU may flush. */
static double tiny_of(const dtype *dt) { return !strcmp(dt->name, "f16") ? 0x1p-24 : 0x1p-126; }

/* rmsnorm forward and backward (dx, and dw through the partial sums and
 * their second kernel) from stdlib/rmsnorm.tile against float64, for f32,
 * f16 and bf16 storage. Every third row is scaled by 1e-3, so that its
 * mean square (about 1e-6) is below eps (1e-5) and eps must be added where
 * it belongs. The reference takes the stored inputs. Tolerances: rstd 2e-6
 * relative (f32 sums and the GPU's approximate rsqrt, 2^-22); y the
 * storage's rounding relative to |y| (y is a product, nothing cancels);
 * dx the storage's rounding plus 1e-5, relative to what cancels in
 * w dy - xhat mean(xhat w dy), that is rstd (|w dy| + |xhat| mean |xhat w
 * dy|), twice; dw the same relative to the sum of |dy xhat| over the rows.
 * Near zero, tiny_of. The worst error / tolerance of each is printed. */
static void test_stdlib_rmsnorm(void **state) {
    (void)state;
    const int shapes[][4] = {/* rows, cols, stride, rows per program */ {1, 1, 1, 1},      {7, 5, 8, 3},
                             {37, 1000, 1003, 4}, {3, 3000, 3001, 7},  {16, 1024, 1024, 16},
                             {9, 4096, 4096, 2},  {5, 8192, 8200, 5}};
    for (size_t t = 0; t < 3; t++) {
        const dtype *dt = &dtypes[t];
        const double tiny = tiny_of(dt);
        double worst[4] = {0}; /* rstd, y, dx, dw: error / tolerance */
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int rows = shapes[s][0], cols = shapes[s][1], stride = shapes[s][2], per = shapes[s][3];
            int groups = (rows + per - 1) / per;
            tilec_define d = {"BLOCK", pow2_at_least(cols)};
            tilec_define colsum[2] = {{"BLOCK", 64}, {"GROUPS", 4}}; /* several trips of the column sums */
            char fwd[32], bwd[32], dwk[32];
            snprintf(fwd, sizeof fwd, "rmsnorm_%s", dt->name);
            snprintf(bwd, sizeof bwd, "rmsnorm_bwd_%s", dt->name);
            snprintf(dwk, sizeof dwk, "rmsnorm_dw_%s", dt->name);
            prog p, q;
            trt_kernel *kf = compile_file(&p, "stdlib/rmsnorm.tile", fwd, &d, 1), *kb;
            OK(trt_get_kernel(p.mod, bwd, &kb));
            trt_kernel *ks = compile_file(&q, "stdlib/rmsnorm.tile", dwk, colsum, 2);
            size_t cells = (size_t)rows * (size_t)stride, bytes = cells * dt->size, wbytes = (size_t)cols * dt->size;
            void *x = malloc(bytes), *y = malloc(bytes), *dy = malloc(bytes), *dx = malloc(bytes);
            void *w = malloc(wbytes), *dw = malloc(wbytes);
            for (size_t i = 0; i < cells; i++) {
                double scale = (i / (size_t)stride) % 3 == 2 ? 1e-3 : 1;
                dt->put(x, i, (float)((rand_f32() / 300 + 1) * scale)); /* an offset: the rms is not the std */
                dt->put(dy, i, rand_f32() / 1000);
            }
            for (int i = 0; i < cols; i++) dt->put(w, (size_t)i, 1 + rand_f32() / 2000);
            memset(y, 0xff, bytes), memset(dx, 0xff, bytes), memset(dw, 0xff, wbytes); /* NaN in every type */
            float *rstd = poison_f32s(rows), *part = poison_f32s(groups * cols);
            trt_buffer bx = upload(x, bytes), by = upload(y, bytes), bdy = upload(dy, bytes), bdx = upload(dx, bytes),
                       bw = upload(w, wbytes), bdw = upload(dw, wbytes), br = upload(rstd, 4 * (size_t)rows),
                       bp = upload(part, 4 * (size_t)groups * (size_t)cols);
            const double eps = 1e-5;
            trt_arg af[7] = {trt_buf(bx), trt_buf(by), trt_buf(bw), trt_buf(br), trt_int(cols), trt_int(stride),
                             trt_float(eps)};
            launch(kf, (uint32_t)rows, 1, 1, af, 7);
            trt_arg ab[10] = {trt_buf(bx), trt_buf(bdy),   trt_buf(bdx),   trt_buf(bw),     trt_buf(br),
                              trt_buf(bp), trt_int(rows), trt_int(cols), trt_int(stride), trt_int(per)};
            launch(kb, (uint32_t)groups, 1, 1, ab, 10);
            trt_arg as[4] = {trt_buf(bp), trt_buf(bdw), trt_int(groups), trt_int(cols)};
            launch(ks, cdiv(cols, 64), 1, 1, as, 4);
            download(by, y, bytes), download(bdx, dx, bytes), download(bdw, dw, wbytes);
            download(br, rstd, 4 * (size_t)rows);
            double *xh = malloc(sizeof(double) * (size_t)cols), *rdw = calloc((size_t)cols, sizeof(double)),
                   *adw = calloc((size_t)cols, sizeof(double));
            const char *where = trt_device_name(dev);
            for (int r = 0; r < rows; r++) {
                size_t at = (size_t)r * (size_t)stride;
                double ms = 0;
                for (int i = 0; i < cols; i++) ms += (double)dt->get(x, at + i) * dt->get(x, at + i);
                double rs = 1 / sqrt(ms / cols + eps), err = fabs(rstd[r] - rs), tol = 2e-6 * rs;
                if (!(err <= tol))
                    fail_msg("%s %dx%d: row %d rstd %.8g, want %.8g on %s", fwd, rows, cols, r, rstd[r], rs, where);
                worst[0] = fmax(worst[0], err / tol);
                double c = 0, cabs = 0;
                for (int i = 0; i < cols; i++) {
                    xh[i] = dt->get(x, at + i) * rs;
                    double wdy = dt->get(w, (size_t)i) * dt->get(dy, at + i);
                    c += xh[i] * wdy, cabs += fabs(xh[i] * wdy);
                    double want = xh[i] * dt->get(w, (size_t)i), got = dt->get(y, at + i);
                    err = fabs(got - want), tol = dt->tol * fabs(want) + tiny;
                    if (!(err <= tol))
                        fail_msg("%s %dx%d: y[%d][%d] = %.8g, want %.8g on %s", fwd, rows, cols, r, i, got, want, where);
                    worst[1] = fmax(worst[1], err / tol);
                    rdw[i] += dt->get(dy, at + i) * xh[i], adw[i] += fabs(dt->get(dy, at + i) * xh[i]);
                }
                c /= cols, cabs /= cols;
                for (int i = 0; i < cols; i++) {
                    double wdy = dt->get(w, (size_t)i) * dt->get(dy, at + i);
                    double want = (wdy - xh[i] * c) * rs, got = dt->get(dx, at + i);
                    err = fabs(got - want), tol = (dt->tol + 1e-5) * 2 * rs * (fabs(wdy) + fabs(xh[i]) * cabs) + tiny;
                    if (!(err <= tol))
                        fail_msg("%s %dx%d: dx[%d][%d] = %.8g, want %.8g (tol %.3g) on %s", bwd, rows, cols, r, i, got,
                                 want, tol, where);
                    worst[2] = fmax(worst[2], err / tol);
                }
            }
            for (int i = 0; i < cols; i++) {
                double got = dt->get(dw, (size_t)i), err = fabs(got - rdw[i]), tol = (dt->tol + 1e-5) * adw[i] + tiny;
                if (!(err <= tol))
                    fail_msg("%s %dx%d: dw[%d] = %.8g, want %.8g (tol %.3g) on %s", dwk, rows, cols, i, got, rdw[i], tol,
                             where);
                worst[3] = fmax(worst[3], err / tol);
            }
            trt_free(dev, bx), trt_free(dev, bdy), trt_free(dev, bw), trt_free(dev, bp);
            free(x), free(y), free(dy), free(dx), free(w), free(dw), free(rstd), free(part), free(xh), free(rdw);
            free(adw);
            drop(&p), drop(&q);
        }
        print_message("rmsnorm %s on %s: worst error / tolerance: rstd %.2f y %.2f dx %.2f dw %.2f\n", dt->name,
                      trt_device_name(dev), worst[0], worst[1], worst[2], worst[3]);
    }
}

/* ---- stdlib gelu ------------------------------------------------------------- */

/* gelu and its gradient from stdlib/gelu.tile against float64, for f32,
 * f16 and bf16 storage, n from 1 to 70001 with tails that are not a
 * multiple of BLOCK, and buffers of exactly n elements (a lane past n that
 * is not masked off is an error on the CPU). Inputs are mostly in [-10,
 * 10], with |x| up to 1e4 among them (3e38 for f32 and bf16): the
 * result must stay finite (the tanh form, and exp(2u) / (1 + exp(2u)),
 * give inf / inf or 0 * inf there). The reference is the stable form, s = 1 / (1 + exp(-2u)) =
 * (1 + tanh(u)) / 2, y = x s, gelu' = s + x u' / (2 cosh(u)^2), in double
 * (0.5 x (1 + tanh(u)) cancels to 0 below x = -6 even in double).
 * Tolerance, relative to |y|, or for dx to |dy| (s + |x u'| / (2
 * cosh(u)^2)), the size of what may cancel: the storage's rounding plus
 * 2^-20 (1 + |u|): exp(-2u) is computed from an argument rounded a few
 * times in f32, an error that grows with |u|, and the GPU's exp2 is
 * approximate (2^-22). Near zero, tiny_of. */
static void test_stdlib_gelu(void **state) {
    (void)state;
    const int shapes[][2] = {/* n, BLOCK */ {1, 1024}, {7, 256}, {1000, 1024}, {1024, 1024}, {4099, 1024},
                             {8192, 2048}, {70001, 4096}};
    const double special[] = {1e4,  -1e4, 1000, -1000, 100.5, -100.5, 100,  -100, 99.5,  -99.5, 20,   -20,  10.5,
                              -10.5, 9.5, -9.5, 5,     -5,    3,      -3,     -0.75, 0,   1e-3,  -1e-3,
                              1e30, -1e30, 3e38, -3e38}; /* the last four past f16's range: not for f16 */
    const double k = 0.7978845608028654, c = 0.044715; /* sqrt(2 / pi) */
    for (size_t t = 0; t < 3; t++) {
        const dtype *dt = &dtypes[t];
        const double tiny = tiny_of(dt);
        const size_t nspecial = sizeof special / sizeof special[0] - (strcmp(dt->name, "f16") ? 0 : 4);
        double worst[2] = {0};
        for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
            int n = shapes[sh][0], block = shapes[sh][1];
            tilec_define d = {"BLOCK", block};
            char fwd[32], bwd[32];
            snprintf(fwd, sizeof fwd, "gelu_%s", dt->name);
            snprintf(bwd, sizeof bwd, "gelu_bwd_%s", dt->name);
            prog p;
            trt_kernel *kf = compile_file(&p, "stdlib/gelu.tile", fwd, &d, 1), *kb;
            OK(trt_get_kernel(p.mod, bwd, &kb));
            size_t bytes = (size_t)n * dt->size;
            void *x = malloc(bytes), *y = malloc(bytes), *dy = malloc(bytes), *dx = malloc(bytes);
            for (size_t i = 0; i < (size_t)n; i++) {
                size_t last = (size_t)n - 1 - i; /* the special values at the end, in the tail */
                dt->put(x, i, n > 1 && last < nspecial ? (float)special[last] : rand_f32() / 100);
                dt->put(dy, i, rand_f32() / 1000);
            }
            memset(y, 0xff, bytes), memset(dx, 0xff, bytes); /* NaN in every type */
            trt_buffer bx = upload(x, bytes), by = upload(y, bytes), bdy = upload(dy, bytes), bdx = upload(dx, bytes);
            trt_arg af[3] = {trt_buf(bx), trt_buf(by), trt_int(n)};
            launch(kf, cdiv(n, block), 1, 1, af, 3);
            trt_arg ab[4] = {trt_buf(bx), trt_buf(bdy), trt_buf(bdx), trt_int(n)};
            launch(kb, cdiv(n, block), 1, 1, ab, 4);
            download(by, y, bytes), download(bdx, dx, bytes);
            const char *where = trt_device_name(dev);
            for (size_t i = 0; i < (size_t)n; i++) {
                double v = dt->get(x, i), g = dt->get(dy, i);
                double u = k * (v + c * v * v * v), s = 1 / (1 + exp(-2 * u)), ch = cosh(u);
                double du = k * (1 + 3 * c * v * v), part = v * du / (2 * ch * ch); /* 0 where cosh is inf */
                double rel = dt->tol + 0x1p-20 * (1 + fabs(u));
                double want = v * s, got = dt->get(y, i), err = fabs(got - want), tol = rel * fabs(want) + tiny;
                if (!(err <= tol))
                    fail_msg("%s n=%d: y[%zu] = %.9g for x = %.9g, want %.9g (tol %.3g) on %s", fwd, n, i, got, v, want,
                             tol, where);
                worst[0] = fmax(worst[0], err / tol);
                want = g * (s + part), got = dt->get(dx, i), err = fabs(got - want);
                tol = rel * fabs(g) * (s + fabs(part)) + tiny;
                if (!(err <= tol))
                    fail_msg("%s n=%d: dx[%zu] = %.9g for x = %.9g, dy = %.9g, want %.9g (tol %.3g) on %s", bwd, n, i,
                             got, v, g, want, tol, where);
                worst[1] = fmax(worst[1], err / tol);
            }
            trt_free(dev, bx), trt_free(dev, bdy);
            free(x), free(y), free(dy), free(dx);
            drop(&p);
        }
        print_message("gelu %s on %s: worst error / tolerance: y %.2f dx %.2f\n", dt->name, trt_device_name(dev),
                      worst[0], worst[1]);
    }
}

/* ---- random numbers: the C reference -------------------------------------------- */

/* Philox4x32-10 as docs/language.md spells it out, all four words. */
static void philox4x32_10(uint32_t ctr[4], uint32_t k0, uint32_t k1) {
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * ctr[0], p2 = (uint64_t)0xCD9E8D57u * ctr[2];
        uint32_t c0 = (uint32_t)(p2 >> 32) ^ ctr[1] ^ k0, c2 = (uint32_t)(p0 >> 32) ^ ctr[3] ^ k1;
        ctr[0] = c0, ctr[1] = (uint32_t)p2, ctr[2] = c2, ctr[3] = (uint32_t)p0;
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
}

/* randint(seed, offset): the first word for counter (offset, 0, 0, 0) and
 * key (the seed's low and high 32 bits, an i32 seed sign-extended). */
static uint32_t randint_ref(int64_t seed, int32_t offset) {
    uint32_t ctr[4] = {(uint32_t)offset, 0, 0, 0};
    philox4x32_10(ctr, (uint32_t)(uint64_t)seed, (uint32_t)((uint64_t)seed >> 32));
    return ctr[0];
}

/* rand: the word as i32, folded to [0, 2^31) (negative u to -u - 1, that
 * is ~u), converted to f32 and scaled by the f32 0x1.fffffep-32. */
static float rand_ref(int64_t seed, int32_t offset) {
    uint32_t u = randint_ref(seed, offset);
    if (u >> 31) u = ~u;
    return (float)u * 0x1.fffffep-32f;
}

/* ---- stdlib dropout ------------------------------------------------------------ */

/* dropout and its gradient from stdlib/dropout.tile, bit for bit: the mask
 * is rand_ref(seed, i) >= p, a kept element x * (1 / (1 - p)) in f32,
 * rounded once to storage; the gradient keeps the same elements of dy. The
 * kept fraction is near 1 - p. */
static void test_stdlib_dropout(void **state) {
    (void)state;
    const int sizes[] = {1, 1000, 70001};
    const float ps[] = {0.0f, 0.1f, 0.5f, 0.875f, 1.0f};
    const int64_t seeds[] = {1234, -7, 0x5eed5eed5eed5eedLL};
    for (size_t t = 0; t < 3; t++) {
        const dtype *dt = &dtypes[t];
        char fwd[32], bwd[32];
        snprintf(fwd, sizeof fwd, "dropout_%s", dt->name);
        snprintf(bwd, sizeof bwd, "dropout_bwd_%s", dt->name);
        prog pr;
        trt_kernel *kf = compile_file(&pr, "stdlib/dropout.tile", fwd, NULL, 0), *kb;
        OK(trt_get_kernel(pr.mod, bwd, &kb));
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            int n = sizes[s];
            size_t bytes = (size_t)n * dt->size;
            void *x = malloc(bytes), *dy = malloc(bytes), *out = malloc(bytes), *dx = malloc(bytes);
            for (int i = 0; i < n; i++) dt->put(x, (size_t)i, rand_f32()), dt->put(dy, (size_t)i, rand_f32() / 100);
            for (size_t q = 0; q < sizeof ps / sizeof ps[0]; q++) {
                float p = ps[q];
                int64_t seed = seeds[(s + q) % 3];
                memset(out, 0xff, bytes), memset(dx, 0xff, bytes);
                trt_buffer bx = upload(x, bytes), bdy = upload(dy, bytes), bo = upload(out, bytes), bdx = upload(dx, bytes);
                trt_arg af[5] = {trt_buf(bx), trt_buf(bo), trt_int(n), trt_float(p), trt_int(seed)};
                launch(kf, cdiv(n, 1024), 1, 1, af, 5);
                trt_arg ab[5] = {trt_buf(bdy), trt_buf(bdx), trt_int(n), trt_float(p), trt_int(seed)};
                launch(kb, cdiv(n, 1024), 1, 1, ab, 5);
                download(bo, out, bytes), download(bdx, dx, bytes);
                trt_free(dev, bx), trt_free(dev, bdy);
                volatile float one_minus = 1.0f - p, scale = 1.0f / one_minus;
                int kept = 0;
                for (int i = 0; i < n; i++) {
                    bool keep = rand_ref(seed, i) >= p;
                    kept += keep;
                    /* the same rounding as the kernel's, through storage */
                    unsigned char want[4], wantg[4], got[4], gotg[4];
                    dt->put(want, 0, keep ? dt->get(x, (size_t)i) * scale : 0.0f);
                    dt->put(wantg, 0, keep ? dt->get(dy, (size_t)i) * scale : 0.0f);
                    memcpy(got, (unsigned char *)out + (size_t)i * dt->size, dt->size);
                    memcpy(gotg, (unsigned char *)dx + (size_t)i * dt->size, dt->size);
                    if (memcmp(got, want, dt->size) || memcmp(gotg, wantg, dt->size))
                        fail_msg("%s/%s n=%d p=%g seed %lld on %s: [%d] = %.8g, %.8g, want %.8g, %.8g", fwd, bwd, n,
                                 (double)p, (long long)seed, trt_device_name(dev), i, dt->get(out, (size_t)i),
                                 dt->get(dx, (size_t)i), dt->get(want, 0), dt->get(wantg, 0));
                }
                /* the kept count is binomial(n, 1 - p): within 5 standard deviations */
                double mean = n * (1.0 - p), sd = sqrt(n * (double)p * (1.0 - p));
                if (!(fabs(kept - mean) <= 5 * sd + 1e-9))
                    fail_msg("%s n=%d p=%g: kept %d, expected about %.0f", fwd, n, (double)p, kept, mean);
            }
            free(x), free(dy), free(out), free(dx);
        }
        drop(&pr);
    }
}

/* Every kernel of the stdlib is run by a test of this file (or, for
 * elementwise.tile, by test_runtime_stdlib too): a new kernel without a
 * test fails here. */
static void test_every_stdlib_kernel_is_tested(void **state) {
    (void)state;
    static const char *const tested[] = {
        "add_f32", "mul_f32", "scale_f32", "fill_f32",                                   /* test_stdlib_elementwise */
        "softmax_f32", "softmax_f16", "softmax_bf16", "softmax_bwd_f32", "softmax_bwd_f16", /* test_stdlib_softmax */
        "softmax_bwd_bf16", "layernorm_f32", "layernorm_f16", "layernorm_bf16",            /* test_stdlib_layernorm */
        "layernorm_bwd_f32", "layernorm_bwd_f16", "layernorm_bwd_bf16", "layernorm_dwdb_f32", "layernorm_dwdb_f16",
        "layernorm_dwdb_bf16", "rmsnorm_f32", "rmsnorm_f16", "rmsnorm_bf16", "rmsnorm_bwd_f32", /* test_stdlib_rmsnorm */
        "rmsnorm_bwd_f16", "rmsnorm_bwd_bf16", "rmsnorm_dw_f32", "rmsnorm_dw_f16", "rmsnorm_dw_bf16", "gelu_f32",
        "gelu_f16", "gelu_bf16", "gelu_bwd_f32", "gelu_bwd_f16", "gelu_bwd_bf16", /* test_stdlib_gelu */
        "dropout_f32", "dropout_f16", "dropout_bf16",                /* test_stdlib_dropout */
        "dropout_bwd_f32", "dropout_bwd_f16", "dropout_bwd_bf16",
        /* through their entry points, tls_matmul and tls_matmul_batched, in
         * test_stdlib_api.c's test_matmul* (every layout specialization) */
        "matmul_f16", "matmul_bf16", "matmul_f32", "matmul_f32_ieee"};
    size_t seen = 0, files = 0;
    /* the file names first, so that a failure below (a longjmp) leaves no
     * directory open */
    enum { MAX_STDLIB_FILES = 64 };
    char names[MAX_STDLIB_FILES][256];
    DIR *d = opendir(TILEC_SOURCE_DIR "/stdlib");
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) && files < MAX_STDLIB_FILES;) {
        size_t len = strlen(e->d_name);
        if (len < 6 || len + sizeof "stdlib/" > sizeof names[0] || strcmp(e->d_name + len - 5, ".tile")) continue;
        memcpy(names[files], "stdlib/", sizeof "stdlib/" - 1);
        memcpy(names[files++] + sizeof "stdlib/" - 1, e->d_name, len + 1);
    }
    closedir(d);
    for (size_t f = 0; f < files; f++) {
        const char *rel = names[f];
        prog p;
        compile_file(&p, rel, NULL, NULL, 0);
        for (size_t i = 0; i < trt_module_num_kernels(p.mod); i++) {
            const char *name = trt_kernel_name(trt_module_kernel(p.mod, i));
            bool ok = false;
            for (size_t t = 0; t < sizeof tested / sizeof tested[0]; t++) ok |= !strcmp(tested[t], name);
            if (!ok) fail_msg("%s: kernel %s has no test in test_runtime_devices.c or test_stdlib_api.c", rel, name);
            seen++;
        }
        assert_null(trt_module_kernel(p.mod, trt_module_num_kernels(p.mod)));
        drop(&p);
    }
    assert_true(files >= 3 && files < MAX_STDLIB_FILES);
    assert_int_equal(seen, sizeof tested / sizeof tested[0]); /* and no name above is stale */
}

/* ---- approximate on the GPU: within a stated tolerance ---------------------- */

static void test_transcendentals_within_tolerance(void **state) {
    (void)state;
    static const char src[] =
        "kernel t(x: *f32, out: *f32, n: i32, const B: i32 = 256) {\n"
        "    let o = program_id(0) * B + arange(0, B);\n"
        "    let k = o < n;\n"
        "    let v = load(x + o, k);\n"
        "    store(out + o, exp(v), k);\n"
        "    store(out + n + o, log(abs(v) + 0.5), k);\n"
        "    store(out + 2 * n + o, sin(v), k);\n"
        "    store(out + 3 * n + o, cos(v), k);\n"
        "    store(out + 4 * n + o, tanh(v), k);\n"
        "    store(out + 5 * n + o, sigmoid(v), k);\n"
        "    store(out + 6 * n + o, rsqrt(abs(v) + 0.25), k);\n"
        "    store(out + 7 * n + o, exp2(v) + log2(abs(v) + 1.0), k);\n"
        "}\n";
    enum { FUNCS = 8 };
    prog p;
    trt_kernel *k = compile_text(&p, "t.tile", src, "t", NULL, 0);
    int n = 4099;
    float *x = malloc(4 * (size_t)n), *out = poison_f32s(FUNCS * n);
    for (int i = 0; i < n; i++) x[i] = (float)((rand() % 2000001 - 1000000) * (3.14159 / 1e6)); /* [-pi, pi] */
    trt_buffer bx = upload(x, 4 * (size_t)n), bo = upload(out, FUNCS * 4 * (size_t)n);
    trt_arg a[3] = {trt_buf(bx), trt_buf(bo), trt_int(n)};
    launch(k, cdiv(n, 256), 1, 1, a, 3);
    download(bo, out, FUNCS * 4 * (size_t)n);
    /* PTX's approximations are within a few f32 ulps relatively (ex2, lg2,
     * rsqrt) or 2^-20 absolutely on [-pi, pi] (sin, cos); the composed
     * functions add a rounding or two. The interpreter is exact. */
    const double rel_tol = 1e-5, abs_tol = 4e-6;
    const char *names[FUNCS] = {"exp", "log", "sin", "cos", "tanh", "sigmoid", "rsqrt", "exp2+log2"};
    double worst[FUNCS] = {0};
    for (int i = 0; i < n; i++) {
        double v = x[i], want[FUNCS] = {exp(v), log(fabs(v) + 0.5), sin(v), cos(v), tanh(v), 1 / (1 + exp(-v)),
                                        1 / sqrt(fabs(v) + 0.25), exp2(v) + log2(fabs(v) + 1)};
        for (int j = 0; j < FUNCS; j++) {
            double g = out[j * n + i], err = fabs(g - want[j]), lim = abs_tol + rel_tol * fabs(want[j]);
            if (!(err <= lim)) fail_msg("%s(%.9g) on %s = %.9g, want %.9g (error %.3g > %.3g)", names[j], v,
                                        trt_device_name(dev), g, want[j], err, lim);
            if (err / lim > worst[j]) worst[j] = err / lim;
        }
    }
    print_message("transcendentals on %s: worst error / tolerance: exp %.2f log %.2f sin %.2f cos %.2f tanh %.2f "
                  "sigmoid %.2f rsqrt %.2f exp2+log2 %.2f\n",
                  trt_device_name(dev), worst[0], worst[1], worst[2], worst[3], worst[4], worst[5], worst[6], worst[7]);
    trt_free(dev, bx);
    free(x), free(out);
    drop(&p);
}

/* erf against float64: on the GPU an f32 approximation documented (and
 * modelled by test_lower_erf) to be within 2e-7 absolutely; the interpreter
 * rounds C's erf. f16 adds its own rounding: half an ulp, at most 2^-11
 * relative, of a value that may be off by the f32 error already. */
static void test_erf_within_tolerance(void **state) {
    (void)state;
    static const char src[] =
        "kernel e(x: *f32, out: *f32, h: *f16, hout: *f16, n: i32, const B: i32 = 256) {\n"
        "    let o = program_id(0) * B + arange(0, B);\n"
        "    let k = o < n;\n"
        "    store(out + o, erf(load(x + o, k)), k);\n"
        "    store(hout + o, erf(load(h + o, k)), k);\n"
        "}\n";
    const double tol = 2e-7;
    prog p;
    trt_kernel *k = compile_text(&p, "erf.tile", src, "e", NULL, 0);
    int n = 20011;
    float *x = malloc(4 * (size_t)n), *out = poison_f32s(n);
    uint16_t *h = malloc(2 * (size_t)n), *hout = malloc(2 * (size_t)n);
    const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.99999994f, 1.0000001f, 3.95f, 3.9499998f, 4.0f, 10.0f,
                             1e-30f, -1e-38f, INFINITY, -INFINITY, NAN};
    for (int i = 0; i < n; i++) x[i] = (float)((rand() % 2000001 - 1000000) * 5e-6); /* [-5, 5] */
    for (int i = 0; i < 2000; i++) x[i] = (float)((rand() % 2000001 - 1000000) * 1e-6); /* [-1, 1]: first piece */
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) x[i] = special[i];
    for (int i = 0; i < n; i++) h[i] = f16_bits(x[i]), hout[i] = 0x7e00;
    trt_buffer bx = upload(x, 4 * (size_t)n), bo = upload(out, 4 * (size_t)n), bh = upload(h, 2 * (size_t)n),
               bho = upload(hout, 2 * (size_t)n);
    trt_arg a[5] = {trt_buf(bx), trt_buf(bo), trt_buf(bh), trt_buf(bho), trt_int(n)};
    launch(k, cdiv(n, 256), 1, 1, a, 5);
    download(bo, out, 4 * (size_t)n);
    download(bho, hout, 2 * (size_t)n);
    double worst = 0, worst_h = 0;
    for (int i = 0; i < n; i++) {
        double want = erf(x[i]), err = fabs(out[i] - want);
        if (isnan(x[i]) ? !isnan(out[i]) : !(err <= tol) || (x[i] == 0 && signbit(out[i]) != signbit(x[i])))
            fail_msg("erf(%.9g) on %s = %.9g, want %.9g (error %.3g > %.3g)", x[i], trt_device_name(dev), out[i], want,
                     err, tol);
        if (err > worst) worst = err;
        float hx = f16_value(h[i]), hy = f16_value(hout[i]);
        double hwant = erf(hx), herr = fabs(hy - hwant), hlim = 2 * tol + ldexp(fabs(hwant), -11);
        if (isnan(hx) ? !isnan(hy) : !(herr <= hlim))
            fail_msg("erf(%.9g) in f16 on %s = %.9g, want %.9g", hx, trt_device_name(dev), hy, hwant);
        if (!isnan(hx) && herr / hlim > worst_h) worst_h = herr / hlim;
    }
    print_message("erf on %s: worst f32 error %.3g (tolerance %.3g), f16 error / tolerance %.2f\n",
                  trt_device_name(dev), worst, tol, worst_h);
    trt_free(dev, bx), trt_free(dev, bh);
    free(x), free(out), free(h), free(hout);
    drop(&p);
}

/* ---- random numbers: bit for bit against C --------------------------------- */

static void test_rand_is_philox(void **state) {
    (void)state;
    /* the reference against Random123's known answers for Philox4x32-10 */
    static const uint32_t kat[3][6][4] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}};
    for (int t = 0; t < 3; t++) {
        uint32_t ctr[4];
        memcpy(ctr, kat[t][0], sizeof ctr);
        philox4x32_10(ctr, kat[t][1][0], kat[t][1][1]);
        assert_memory_equal(ctr, kat[t][2], sizeof ctr);
    }
    static const char src[] =
        "kernel r(f: *f32, u: *i32, g: *f32, n: i32, seed: i64, s32: i32, const B: i32 = 512) {\n"
        "    let o = program_id(0) * B + arange(0, B);\n"
        "    let k = o < n;\n"
        "    store(f + o, rand(seed, o), k);\n"
        "    store(u + o, randint(s32, o), k);\n"
        "    store(g + o, rand(s32, cast(o - 3, i16)), k);\n" /* offsets widened from i16, negative ones too */
        "    store(g + n, rand(seed, n));\n"                    /* a scalar offset gives one number */
        "}\n";
    prog p;
    trt_kernel *k = compile_text(&p, "rand.tile", src, "r", NULL, 0);
    const int64_t seeds[][2] = {{0, 0}, {0x123456789abcdef0LL, -5}, {-1, 2147483647}, {42, -2147483647 - 1}};
    int n = 100003;
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        int64_t seed = seeds[s][0], s32 = seeds[s][1];
        float *f = poison_f32s(n), *g = poison_f32s(n + 1);
        int32_t *u = malloc(4 * (size_t)n);
        for (int i = 0; i < n; i++) u[i] = -1;
        trt_buffer bf = upload(f, 4 * (size_t)n), bu = upload(u, 4 * (size_t)n), bg = upload(g, 4 * (size_t)(n + 1));
        trt_arg a[6] = {trt_buf(bf), trt_buf(bu), trt_buf(bg), trt_int(n), trt_int(seed), trt_int(s32)};
        launch(k, cdiv(n, 512), 1, 1, a, 6);
        download(bf, f, 4 * (size_t)n), download(bu, u, 4 * (size_t)n), download(bg, g, 4 * (size_t)(n + 1));
        enum { BINS = 16 };
        int bins[BINS] = {0};
        double sum = 0;
        for (int i = 0; i < n; i++) {
            float want = rand_ref(seed, i), wantg = rand_ref(s32, (int16_t)(i - 3));
            uint32_t wantu = randint_ref(s32, i);
            if (memcmp(&f[i], &want, 4) || (uint32_t)u[i] != wantu || memcmp(&g[i], &wantg, 4))
                fail_msg("seed %lld/%lld offset %d on %s: rand %a randint %08x rand(i16) %a, want %a %08x %a",
                         (long long)seed, (long long)s32, i, trt_device_name(dev), (double)f[i], (unsigned)u[i],
                         (double)g[i], (double)want, (unsigned)wantu, (double)wantg);
            if (!(f[i] >= 0 && f[i] < 1)) fail_msg("rand gave %a, outside [0, 1)", (double)f[i]);
            bins[(int)(f[i] * BINS)]++;
            sum += f[i];
        }
        float last = rand_ref(seed, n);
        if (memcmp(&g[n], &last, 4)) fail_msg("rand(seed, n) = %a, want %a", (double)g[n], (double)last);
        /* uniform: the mean within 5 standard deviations (sqrt(1/12n)) of
         * 1/2, and chi-square over 16 bins below 37.7 (15 degrees of
         * freedom: exceeded with probability 0.001 by chance) */
        double chi2 = 0, expect = (double)n / BINS;
        for (int b = 0; b < BINS; b++) chi2 += (bins[b] - expect) * (bins[b] - expect) / expect;
        double mean = sum / n;
        if (!(fabs(mean - 0.5) <= 5 * sqrt(1.0 / (12.0 * n))) || !(chi2 < 37.7))
            fail_msg("seed %lld: mean %.5f, chi-square %.2f over %d bins: not uniform", (long long)seed, mean, chi2, BINS);
        free(f), free(u), free(g);
    }
    drop(&p);
}

/* ---- streams ------------------------------------------------------------- */

/* Four streams, each copying in, adding and copying out its own vectors,
 * all queued before any is waited for; then a stream's launch read back
 * through the default stream (ordered after it, as documented). */
static void test_streams(void **state) {
    (void)state;
    enum { STREAMS = 4, N = (1 << 18) + 5 };
    prog p;
    trt_kernel *k = compile_text(&p, "vadd.tile", vadd_src, "vadd", NULL, 0);
    trt_stream *s[STREAMS];
    float *x[STREAMS], *y[STREAMS], *out[STREAMS];
    trt_buffer bx[STREAMS], by[STREAMS], bo[STREAMS];
    size_t bytes = sizeof(float) * N;
    for (int i = 0; i < STREAMS; i++) {
        OK(trt_stream_create(dev, &s[i]));
        x[i] = rand_f32s(N), y[i] = rand_f32s(N), out[i] = poison_f32s(N);
        OK(trt_alloc(dev, bytes, &bx[i]));
        OK(trt_alloc(dev, bytes, &by[i]));
        OK(trt_alloc(dev, bytes, &bo[i]));
    }
    for (int i = 0; i < STREAMS; i++) {
        OK(trt_write_async(s[i], bx[i], 0, x[i], bytes));
        OK(trt_write_async(s[i], by[i], 0, y[i], bytes));
        OK(trt_write_async(s[i], bo[i], 0, out[i], bytes)); /* poison */
        trt_arg a[4] = {trt_buf(bx[i]), trt_buf(by[i]), trt_buf(bo[i]), trt_int(N)};
        OK(trt_launch_on(s[i], k, cdiv(N, 1024), 1, 1, a, 4));
        OK(trt_read_async(s[i], bo[i], 0, out[i], bytes));
    }
    for (int i = STREAMS - 1; i >= 0; i--) {
        OK(trt_stream_sync(s[i]));
        for (int j = 0; j < N; j++)
            if (out[i][j] != x[i][j] + y[i][j]) fail_msg("stream %d: out[%d] = %g, want %g", i, j, out[i][j], x[i][j] + y[i][j]);
    }
    /* a launch on a stream, then a plain trt_read: ordered after it */
    trt_arg a[4] = {trt_buf(bx[0]), trt_buf(bx[0]), trt_buf(bo[0]), trt_int(N)};
    OK(trt_launch_on(s[0], k, cdiv(N, 1024), 1, 1, a, 4));
    OK(trt_read(dev, bo[0], 0, out[0], bytes));
    for (int j = 0; j < N; j++) assert_true(out[0][j] == x[0][j] + x[0][j]);
    for (int i = 0; i < STREAMS; i++) {
        trt_stream_destroy(s[i]);
        trt_free(dev, bx[i]), trt_free(dev, by[i]), trt_free(dev, bo[i]);
        free(x[i]), free(y[i]), free(out[i]);
    }
    drop(&p);
}

static void test_stream_misuse(void **state) {
    (void)state;
    prog p;
    trt_kernel *k = compile_text(&p, "vadd.tile", vadd_src, "vadd", NULL, 0);
    trt_device *other;
    OK(trt_open(kind, &other, NULL, 0));
    trt_stream *theirs, *mine = NULL;
    OK(trt_stream_create(other, &theirs));
    trt_buffer b;
    OK(trt_alloc(dev, 64, &b));
    trt_arg a[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_int(16)};
    assert_int_equal(trt_launch_on(theirs, k, 1, 1, 1, a, 4), TRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(trt_last_error(dev), "another device"));
    assert_int_equal(trt_launch_on(NULL, k, 1, 1, 1, a, 4), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_write_async(theirs, b, 0, a, 4), TRT_ERR_INVALID_HANDLE); /* not its device's buffer */
    OK(trt_stream_create(dev, &mine));
    assert_int_equal(trt_launch_on(mine, k, 1, 1, 1, a, 3), TRT_ERR_ARGUMENTS);
    float host[16];
    assert_int_equal(trt_read_async(mine, b, 60, host, 8), TRT_ERR_INVALID_ARGUMENT);
    trt_stream_destroy(mine);
    trt_close(other); /* its stream outlives it, refusing work */
    assert_int_equal(trt_stream_sync(theirs), TRT_ERR_CLOSED);
    assert_int_equal(trt_stream_create(other, &mine), TRT_ERR_CLOSED);
    assert_null(mine);
    trt_stream_destroy(theirs); /* frees what the closed device still held */
    trt_stream_destroy(NULL);
    assert_int_equal(trt_stream_create(dev, NULL), TRT_ERR_INVALID_ARGUMENT);
    trt_free(dev, b);
    drop(&p);
}

/* ---- modules built ahead of time ------------------------------------------- */

/* Writes a module the way `tilec -o FILE` does: the code and its sidecar.
 * False (and says so) when a cubin cannot be made for want of ptxas. */
static bool build_module(const char *path, tilec_emit emit, const char *arch) {
    tilec_options o;
    tilec_options_init(&o);
    o.emit = emit;
    o.arch = arch;
    o.sidecar = true;
    tilec_output out;
    tilec_status st = tilec_compile("vadd.tile", vadd_src, strlen(vadd_src), &o, &out);
    if (st == TILEC_ERR_TOOL && strstr(out.diagnostics, "ptxas") && kind == TRT_DEVICE_CPU) {
        print_message("SKIPPED: a cubin for %s: %s", arch, out.diagnostics);
        tilec_output_free(&out);
        return false;
    }
    if (st != TILEC_OK) fail_msg("tilec: %s", out.diagnostics);
    char side[600];
    snprintf(side, sizeof side, "%s.tir", path);
    FILE *f = fopen(path, "wb"), *s = fopen(side, "wb");
    assert_non_null(f);
    assert_non_null(s);
    assert_int_equal(fwrite(out.data, 1, out.size, f), out.size);
    assert_int_equal(fwrite(out.sidecar, 1, strlen(out.sidecar), s), strlen(out.sidecar));
    fclose(f), fclose(s);
    tilec_output_free(&out);
    return true;
}

static void run_loaded_vadd(trt_module *m) {
    trt_kernel *k;
    OK(trt_get_kernel(m, "vadd", &k));
    int n = 5000;
    float *x = rand_f32s(n), *y = rand_f32s(n), *out = poison_f32s(n);
    size_t bytes = 4 * (size_t)n;
    trt_buffer bx = upload(x, bytes), by = upload(y, bytes), bo = upload(out, bytes);
    trt_arg a[4] = {trt_buf(bx), trt_buf(by), trt_buf(bo), trt_int(n)};
    launch(k, cdiv(n, 1024), 1, 1, a, 4);
    download(bo, out, bytes);
    for (int i = 0; i < n; i++) assert_true(out[i] == x[i] + y[i]);
    trt_free(dev, bx), trt_free(dev, by);
    free(x), free(y), free(out);
}

/* PTX runs on any GPU at least as new as its arch; machine code only on its
 * own generation, and the runtime says so before the driver would. */
static void test_load_prebuilt_modules(void **state) {
    (void)state;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[512];
    const char *own = kind == TRT_DEVICE_CUDA ? trt_device_arch(dev) : "sm_80";
    assert_true(kind == TRT_DEVICE_CUDA ? !strncmp(own, "sm_", 3) : !strcmp(trt_device_arch(dev), ""));
    struct { tilec_emit emit; const char *arch; } cases[] = {{TILEC_EMIT_PTX, "sm_80"}, {TILEC_EMIT_CUBIN, own},
                                                             {TILEC_EMIT_CUBIN, "sm_80"}};
    for (size_t c = 0; c < 3; c++) {
        snprintf(path, sizeof path, "%s/tilec-devtest-%d-%zu.%s", tmp, (int)getpid(), c,
                 cases[c].emit == TILEC_EMIT_PTX ? "ptx" : "cubin");
        if (!build_module(path, cases[c].emit, cases[c].arch)) continue;
        trt_module *m = NULL;
        trt_status st = trt_load(dev, path, &m);
        if (kind == TRT_DEVICE_EMU) { /* it runs LLVM IR, which a prebuilt module lacks */
            assert_int_equal(st, TRT_ERR_INVALID_ARGUMENT);
            assert_null(m);
            assert_non_null(strstr(trt_last_error(dev), "compiled with trt_compile"));
            char side[600];
            snprintf(side, sizeof side, "%s.tir", path);
            remove(path), remove(side);
            continue;
        }
        bool runs = kind == TRT_DEVICE_CPU || cases[c].emit == TILEC_EMIT_PTX ||
                    (!strcmp(cases[c].arch, own) || (!strncmp(own, "sm_8", 4) && !strcmp(cases[c].arch, "sm_80")));
        if (runs) {
            if (st != TRT_OK) fail_msg("loading %s: %s", path, trt_last_error(dev));
            run_loaded_vadd(m);
            trt_module_free(m);
        } else {
            assert_int_equal(st, TRT_ERR_ARCH);
            assert_null(m);
            assert_non_null(strstr(trt_last_error(dev), "cannot run on this GPU"));
            print_message("as expected on %s: %s\n", own, trt_last_error(dev));
        }
        char side[600];
        snprintf(side, sizeof side, "%s.tir", path);
        remove(path), remove(side);
    }
}

/* ---- memory from elsewhere ------------------------------------------------- */

/* Memory the runtime did not allocate (here: the middle of a buffer, by its
 * address, as another library would hand it over) works as a buffer, is
 * bounds-checked against the driver's allocation on the GPU, and is not
 * freed by trt_free. */
static void test_wrapped_memory(void **state) {
    (void)state;
    prog p;
    tilec_define d = {"BLOCK", 64};
    trt_kernel *k = compile_text(&p, "vadd.tile", vadd_src, "vadd", &d, 1);
    enum { N = 300, SKIP = 16 };
    float *x = rand_f32s(N), *y = rand_f32s(N), *out = poison_f32s(N + 2 * SKIP);
    trt_buffer bx = upload(x, 4 * N), by = upload(y, 4 * N), big = upload(out, 4 * (N + 2 * SKIP)), mid;
    uint64_t base = 0;
    OK(trt_buffer_ptr(dev, big, &base));
    assert_true(base != 0 && base % 16 == 0);
    OK(trt_wrap(dev, base + 4 * SKIP, 4 * N, &mid));
    trt_arg a[4] = {trt_buf(bx), trt_buf(by), trt_buf(mid), trt_int(N)};
    launch(k, cdiv(N, 64), 1, 1, a, 4);
    OK(trt_free(dev, mid)); /* forgets it; the memory stays big's */
    assert_int_equal(trt_free(dev, mid), TRT_ERR_INVALID_HANDLE);
    download(big, out, 4 * (N + 2 * SKIP));
    for (int i = 0; i < N + 2 * SKIP; i++) {
        float want = i >= SKIP && i < SKIP + N ? x[i - SKIP] + y[i - SKIP] : NAN;
        if (!same_f32(out[i], want)) fail_msg("wrapped: out[%d] = %g, want %g", i, out[i], want);
    }
    trt_buffer w;
    assert_int_equal(trt_wrap(dev, 0, 16, &w), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_wrap(dev, base, 0, &w), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_wrap(dev, base, 16, NULL), TRT_ERR_INVALID_ARGUMENT);
    if (kind == TRT_DEVICE_CUDA) {
        OK(trt_buffer_ptr(dev, bx, &base));
        assert_int_equal(trt_wrap(dev, base + 16, 4 * N, &w), TRT_ERR_INVALID_ARGUMENT); /* 16 bytes too long */
        assert_non_null(strstr(trt_last_error(dev), "past the end"));
        assert_int_equal(trt_wrap(dev, (uint64_t)(uintptr_t)x, 16, &w), TRT_ERR_INVALID_ARGUMENT); /* host memory */
        assert_non_null(strstr(trt_last_error(dev), "not device memory"));
        assert_int_equal(trt_wrap(dev, 0x1000, 16, &w), TRT_ERR_INVALID_ARGUMENT); /* nothing at all */
    }
    uint64_t none;
    assert_int_equal(trt_buffer_ptr(dev, mid, &none), TRT_ERR_INVALID_HANDLE);
    trt_free(dev, bx), trt_free(dev, by);
    free(x), free(y), free(out);
    drop(&p);
}

/* ---- the disk cache (TILEC_CACHE_DIR) -------------------------------------- */

static const char vsub_as_vadd_src[] = /* named vadd, but subtracts */
    "kernel vadd(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let mask = offs < n;\n"
    "    store(out + offs, load(x + offs, mask) - load(y + offs, mask), mask);\n"
    "}\n";

/* out[0] of `src`'s vadd compiled on a fresh device (so an empty memory
 * cache), for x = 5, y = 3: 8 if it adds, 2 if it subtracts. */
static float first_result(const char *src) {
    trt_device *d;
    char why[512];
    OK(trt_open(kind, &d, why, sizeof why));
    trt_module *m;
    if (trt_compile(d, "cached.tile", src, strlen(src), NULL, &m) != TRT_OK) fail_msg("%s", trt_last_error(d));
    trt_kernel *k;
    assert_int_equal(trt_get_kernel(m, "vadd", &k), TRT_OK);
    float x = 5, y = 3, out = NAN;
    trt_buffer b[3];
    for (int i = 0; i < 3; i++) assert_int_equal(trt_alloc(d, 4, &b[i]), TRT_OK);
    trt_write(d, b[0], 0, &x, 4), trt_write(d, b[1], 0, &y, 4), trt_write(d, b[2], 0, &out, 4);
    trt_arg a[4] = {trt_buf(b[0]), trt_buf(b[1]), trt_buf(b[2]), trt_int(1)};
    assert_int_equal(trt_launch(k, 1, 1, 1, a, 4), TRT_OK);
    assert_int_equal(trt_read(d, b[2], 0, &out, 4), TRT_OK);
    trt_module_free(m);
    trt_close(d);
    return out;
}

/* The names in dir, sorted, one string ("a b c"); its count in *n. */
static void list_dir(const char *dir, char *names, size_t size, int *n) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls %s | sort | tr '\\n' ' '", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t got = fread(names, 1, size - 1, p);
    names[got] = 0;
    pclose(p);
    *n = 0;
    for (char *s = names; *s; s++) *n += *s == ' ';
}

static void copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    assert_non_null(a);
    assert_non_null(b);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0) assert_int_equal(fwrite(buf, 1, n, b), n);
    fclose(a), fclose(b);
}

/* Modules go to disk; a fresh device reads them back (shown by planting the
 * subtracting kernel's entry under the adding one's key); a damaged entry
 * is compiled afresh; without TILEC_CACHE_DIR nothing is read. */
static void test_disk_cache(void **state) {
    (void)state;
    char dir[] = "/tmp/tilec-cache-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("TILEC_CACHE_DIR", dir, 1);
    int per_module = kind != TRT_DEVICE_CPU ? 2 : 1; /* .tir (+ .cubin, or the emulator's .ll) */
    char names[1024], add_names[1024];
    int n;
    assert_true(first_result(vadd_src) == 8);
    list_dir(dir, add_names, sizeof add_names, &n);
    assert_int_equal(n, per_module);
    assert_true(first_result(vsub_as_vadd_src) == 2);
    list_dir(dir, names, sizeof names, &n);
    assert_int_equal(n, 2 * per_module);
    /* the subtracting entry's key: the name that is not the adding one's */
    char add_key[17] = "", sub_key[17] = "";
    memcpy(add_key, add_names, 16);
    for (char *s = names; *s; s += strcspn(s, " ") + 1)
        if (strncmp(s, add_key, 16)) memcpy(sub_key, s, 16);
    assert_true(sub_key[0] != 0);
    const char *exts[2] = {"tir", kind == TRT_DEVICE_EMU ? "ll" : "cubin"};
    for (int e = 0; e < per_module; e++) {
        char from[600], to[600];
        snprintf(from, sizeof from, "%s/%s.%s", dir, sub_key, exts[e]);
        snprintf(to, sizeof to, "%s/%s.%s", dir, add_key, exts[e]);
        copy_file(from, to);
    }
    assert_true(first_result(vadd_src) == 2); /* read from disk: the planted entry */

    char tir[600];
    snprintf(tir, sizeof tir, "%s/%s.tir", dir, add_key);
    FILE *f = fopen(tir, "wb");
    fputs("kernel @vadd(garbage", f);
    fclose(f);
    assert_true(first_result(vadd_src) == 8); /* damaged: compiled afresh, and rewritten */
    assert_true(first_result(vadd_src) == 8);

    unsetenv("TILEC_CACHE_DIR");
    for (int e = 0; e < per_module; e++) {
        char from[600], to[600];
        snprintf(from, sizeof from, "%s/%s.%s", dir, sub_key, exts[e]);
        snprintf(to, sizeof to, "%s/%s.%s", dir, add_key, exts[e]);
        copy_file(from, to);
    }
    assert_true(first_result(vadd_src) == 8); /* no cache dir: not read */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- atomics ------------------------------------------------------------------
 * Every element of a tile is one atomic: lanes of one tile and programs
 * that hit one address all count. Tiles smaller than the threads (and
 * scalars) are held by several threads each: one updates, all get the old
 * value. Masked-off lanes touch no memory and give 0. */

static int32_t *fill_i32s(int n, int32_t v) {
    int32_t *p = malloc(sizeof(int32_t) * (size_t)n + 1);
    for (int i = 0; i < n; i++) p[i] = v;
    return p;
}

/* Active element i added 1 to bin[i]: the counts are exact, the old values
 * one bin handed out are 0 .. count - 1 each once, and inactive elements
 * got 0. */
static void expect_histogram(const char *what, int nbins, int n, const int32_t *bin, const bool *active,
                             const int32_t *olds, const int32_t *counts) {
    int32_t *want = fill_i32s(nbins, 0), *first = fill_i32s(nbins + 1, 0);
    for (int i = 0; i < n; i++) want[bin[i]] += active[i];
    for (int b = 0; b < nbins; b++) {
        if (counts[b] != want[b]) fail_msg("%s on %s: bin %d counts %d, want %d", what, trt_device_name(dev), b, counts[b], want[b]);
        first[b + 1] = first[b] + want[b];
    }
    bool *seen = calloc((size_t)first[nbins] + 1, 1);
    for (int i = 0; i < n; i++) {
        if (!active[i]) {
            if (olds[i] != 0) fail_msg("%s on %s: masked-off lane %d gave %d, want 0", what, trt_device_name(dev), i, olds[i]);
            continue;
        }
        int b = bin[i];
        if (olds[i] < 0 || olds[i] >= want[b] || seen[first[b] + olds[i]])
            fail_msg("%s on %s: element %d got old value %d from bin %d (count %d): not each of 0..count-1 once", what,
                     trt_device_name(dev), i, olds[i], b, want[b]);
        seen[first[b] + olds[i]] = true;
    }
    free(want), free(first), free(seen);
}

static void test_atomic_histogram(void **state) {
    (void)state;
    static const char src[] =
        "kernel hist(x: *i32, bins: *i32, olds: *i32, n: i32, const BLOCK: i32 = 256) {\n"
        "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
        "    let m = offs < n;\n"
        "    let old = atomic_add(bins + load(x + offs, m), 1, mask = m);\n"
        "    store(olds + offs, old);\n"
        "}\n"
        "kernel count(x: *i32, bins: *i32, n: i32, const BLOCK: i32 = 256) {\n"
        "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
        "    atomic_add(bins + load(x + offs, offs < n), 1, offs < n);\n"
        "}\n";
    enum { NBINS = 37 };
    /* {BLOCK, num_warps}: 16 and 32 elements replicate over 32 and 128 threads */
    const int cfg[][2] = {{256, 0}, {16, 0}, {32, 4}, {1024, 4}};
    const int sizes[] = {1, 1000, 10007};
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        int block = cfg[c][0];
        tilec_define d = {"BLOCK", block};
        prog p;
        trt_kernel *hist = compile_with(&p, "hist.tile", src, "hist", &d, 1, cfg[c][1]), *count;
        OK(trt_get_kernel(p.mod, "count", &count));
        for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
            int n = sizes[t], total = (int)cdiv(n, block) * block;
            int32_t *x = fill_i32s(total, 0), *olds = fill_i32s(total, 0x5a5a5a5a), *bins = fill_i32s(NBINS, 0);
            bool *active = calloc((size_t)total, 1);
            for (int i = 0; i < n; i++) x[i] = rand() % NBINS, active[i] = true;
            trt_buffer bx = upload(x, sizeof(int32_t) * (size_t)n), bb = upload(bins, sizeof(int32_t) * NBINS),
                       bo = upload(olds, sizeof(int32_t) * (size_t)total);
            trt_arg a[4] = {trt_buf(bx), trt_buf(bb), trt_buf(bo), trt_int(n)};
            launch(hist, cdiv(n, block), 1, 1, a, 4);
            /* the statement form adds the same counts again */
            trt_arg a2[3] = {trt_buf(bx), trt_buf(bb), trt_int(n)};
            launch(count, cdiv(n, block), 1, 1, a2, 3);
            download(bo, olds, sizeof(int32_t) * (size_t)total);
            download(bb, bins, sizeof(int32_t) * NBINS);
            trt_free(dev, bx);
            char what[64];
            snprintf(what, sizeof what, "histogram BLOCK=%d n=%d", block, n);
            for (int b = 0; b < NBINS; b++) bins[b] /= 2; /* counted twice */
            expect_histogram(what, NBINS, total, x, active, olds, bins);
            free(x), free(olds), free(bins), free(active);
        }
        drop(&p);
    }
}

/* A 2-D tile of 32 elements over 128 threads (the general owner rule), and
 * a scalar pointer (thread 0 updates, every thread gets the old value). */
static void test_atomic_2d_and_scalar(void **state) {
    (void)state;
    static const char src[] =
        "kernel grid2(bins: *i32, olds: *i32, const R: i32 = 4, const C: i32 = 8) {\n"
        "    let r = arange(0, R);\n"
        "    let c = arange(0, C);\n"
        "    let old = atomic_add(bins + (r[:, None] * C + c[None, :]) % 5, 1, mask = c[None, :] < C - 1);\n"
        "    store(olds + program_id(0) * R * C + r[:, None] * C + c[None, :], old);\n"
        "}\n"
        "kernel ticket(counter: *i32, odd: *i32, out: *i32, got: *i32, const BLOCK: i32 = 64) {\n"
        "    let pid = program_id(0);\n"
        "    let t = atomic_add(counter, 1);\n"
        "    store(out + pid * BLOCK + arange(0, BLOCK), t * BLOCK + arange(0, BLOCK));\n"
        "    store(got + pid, atomic_add(odd, 5, mask = pid % 2 == 1));\n"
        "}\n";
    enum { R = 4, C = 8, G = 7, BLOCK = 64 };
    prog p;
    trt_kernel *grid2 = compile_with(&p, "atom2.tile", src, "grid2", NULL, 0, 4), *ticket;
    OK(trt_get_kernel(p.mod, "ticket", &ticket));
    int n = G * R * C;
    int32_t *bins = fill_i32s(5, 0), *olds = fill_i32s(n, 0x5a5a5a5a), *bin = fill_i32s(n, 0);
    bool *active = calloc((size_t)n, 1);
    for (int i = 0; i < n; i++) bin[i] = (i % (R * C)) % 5, active[i] = i % C < C - 1;
    trt_buffer bb = upload(bins, sizeof(int32_t) * 5), bo = upload(olds, sizeof(int32_t) * (size_t)n);
    trt_arg a[2] = {trt_buf(bb), trt_buf(bo)};
    launch(grid2, G, 1, 1, a, 2);
    download(bb, bins, sizeof(int32_t) * 5);
    download(bo, olds, sizeof(int32_t) * (size_t)n);
    expect_histogram("2-D atomic_add over 128 threads", 5, n, bin, active, olds, bins);
    free(bins), free(olds), free(bin), free(active);

    int32_t zero[2] = {0, 0}, *out = fill_i32s(G * BLOCK, -1), *got = fill_i32s(G, -1);
    trt_buffer bc = upload(&zero[0], 4), bd = upload(&zero[1], 4), bt = upload(out, sizeof(int32_t) * G * BLOCK),
               bg = upload(got, sizeof(int32_t) * G);
    trt_arg b[4] = {trt_buf(bc), trt_buf(bd), trt_buf(bt), trt_buf(bg)};
    launch(ticket, G, 1, 1, b, 4);
    download(bc, &zero[0], 4);
    download(bd, &zero[1], 4);
    download(bt, out, sizeof(int32_t) * G * BLOCK);
    download(bg, got, sizeof(int32_t) * G);
    assert_int_equal(zero[0], G);
    assert_int_equal(zero[1], 5 * (G / 2));
    bool taken[G] = {false};
    for (int pid = 0; pid < G; pid++) {
        int t = out[pid * BLOCK] / BLOCK;
        if (t < 0 || t >= G || taken[t]) fail_msg("ticket: program %d got ticket %d on %s", pid, t, trt_device_name(dev));
        taken[t] = true;
        for (int k = 0; k < BLOCK; k++) /* every thread has the one old value */
            if (out[pid * BLOCK + k] != t * BLOCK + k)
                fail_msg("ticket: program %d element %d = %d, want %d on %s", pid, k, out[pid * BLOCK + k], t * BLOCK + k,
                         trt_device_name(dev));
        if (pid % 2 == 0 ? got[pid] != 0 : got[pid] < 0 || got[pid] >= 5 * (G / 2) || got[pid] % 5)
            fail_msg("masked scalar atomic: program %d got %d on %s", pid, got[pid], trt_device_name(dev));
    }
    free(out), free(got);
    drop(&p);
}

/* Float sums: each addition rounds once, in an order the device picks, so
 * slot j is within cnt_j * 2^-24 * sum_j |x| of the float64 sum (2^-53 for
 * f64); i64 sums are exact (with wrapping) and need all 64 bits. */
static void test_atomic_add_sums(void **state) {
    (void)state;
    static const char src[] =
        "kernel sums(x: *f32, xd: *f64, xl: *i64, s: *f32, sd: *f64, sl: *i64, n: i32, const NS: i32 = 8,\n"
        "            const BLOCK: i32 = 128) {\n"
        "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
        "    let m = offs < n;\n"
        "    atomic_add(s + offs % NS, load(x + offs, m), mask = m);\n"
        "    atomic_add(sd + offs % NS, load(xd + offs, m), mask = m);\n"
        "    atomic_add(sl + offs % NS, load(xl + offs, m), mask = m);\n"
        "}\n";
    enum { NS = 8 };
    const int sizes[] = {5, 3001, 20000};
    prog p;
    trt_kernel *k = compile_text(&p, "sums.tile", src, "sums", NULL, 0);
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t];
        float *x = rand_f32s(n), s[NS];
        double *xd = malloc(sizeof(double) * (size_t)n), sd[NS], want[NS], mag[NS], wantd[NS], magd[NS];
        int64_t *xl = malloc(sizeof(int64_t) * (size_t)n), sl[NS];
        uint64_t wantl[NS];
        int cnt[NS];
        for (int j = 0; j < NS; j++)
            s[j] = (float)j, sd[j] = j, sl[j] = j, want[j] = wantd[j] = j, mag[j] = magd[j] = j, wantl[j] = (uint64_t)j,
            cnt[j] = 0;
        for (int i = 0; i < n; i++) {
            xd[i] = (double)rand_f32() / 3.0;
            xl[i] = (int64_t)((uint64_t)rand_i32() << 31 ^ (uint64_t)rand_i32());
            int j = i % NS;
            want[j] += x[i], mag[j] += fabs(x[i]), wantd[j] += xd[i], magd[j] += fabs(xd[i]);
            wantl[j] += (uint64_t)xl[i], cnt[j]++;
        }
        trt_buffer bx = upload(x, sizeof(float) * (size_t)n), bxd = upload(xd, sizeof(double) * (size_t)n),
                   bxl = upload(xl, sizeof(int64_t) * (size_t)n), bs = upload(s, sizeof s), bsd = upload(sd, sizeof sd),
                   bsl = upload(sl, sizeof sl);
        trt_arg a[7] = {trt_buf(bx), trt_buf(bxd), trt_buf(bxl), trt_buf(bs), trt_buf(bsd), trt_buf(bsl), trt_int(n)};
        launch(k, cdiv(n, 128), 1, 1, a, 7);
        download(bs, s, sizeof s), download(bsd, sd, sizeof sd), download(bsl, sl, sizeof sl);
        trt_free(dev, bx), trt_free(dev, bxd), trt_free(dev, bxl);
        for (int j = 0; j < NS; j++) {
            double tol = (cnt[j] + 1) * 0x1p-24 * mag[j], told = (cnt[j] + 1) * 0x1p-53 * magd[j];
            if (!(fabs(s[j] - want[j]) <= tol))
                fail_msg("f32 atomic_add n=%d slot %d = %.9g, want %.9g within %g on %s", n, j, s[j], want[j], tol,
                         trt_device_name(dev));
            if (!(fabs(sd[j] - wantd[j]) <= told))
                fail_msg("f64 atomic_add n=%d slot %d = %.17g, want %.17g within %g on %s", n, j, sd[j], wantd[j], told,
                         trt_device_name(dev));
            if ((uint64_t)sl[j] != wantl[j])
                fail_msg("i64 atomic_add n=%d slot %d = %lld, want %lld on %s", n, j, (long long)sl[j],
                         (long long)wantl[j], trt_device_name(dev));
        }
        free(x), free(xd), free(xl);
    }
    drop(&p);
}

/* maximum/minimum as the language defines them: NaN if either is NaN, and
 * -0 < +0. */
static float ref_ext_f32(float a, float b, bool want_max) {
    if (isnan(a) || isnan(b)) return NAN;
    if (a == b) return (signbit(a) != 0) == want_max ? b : a;
    return (a > b) == want_max ? a : b;
}

static void test_atomic_max_min(void **state) {
    (void)state;
    static const char src[] =
        "kernel ext(v: *i32, f: *f32, mx: *i32, mn: *i32, fmx: *f32, fmn: *f32, olds: *i32, n: i32,\n"
        "           const NS: i32 = 8, const BLOCK: i32 = 64) {\n"
        "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
        "    let m = offs < n;\n"
        "    let s = offs % NS;\n"
        "    store(olds + offs, atomic_max(mx + s, load(v + offs, m), m));\n"
        "    atomic_min(mn + s, load(v + offs, m), m);\n"
        "    atomic_max(fmx + s, load(f + offs, m), m);\n"
        "    atomic_min(fmn + s, load(f + offs, m), m);\n"
        "}\n";
    enum { NS = 8 };
    const int sizes[] = {16, 3001};
    prog p;
    trt_kernel *k = compile_text(&p, "ext.tile", src, "ext", NULL, 0);
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t], total = (int)cdiv(n, 64) * 64;
        int32_t *v = fill_i32s(n, 0), *olds = fill_i32s(total, 0x5a5a5a5a), mx[NS], mn[NS], wmx[NS], wmn[NS];
        float *f = rand_f32s(n), fmx[NS], fmn[NS], wfmx[NS], wfmn[NS];
        for (int i = 0; i < n; i++) v[i] = rand_i32();
        /* slot 0 meets a NaN, slot 1 both zeros (the first run only) */
        if (n == 16) f[0] = NAN, f[1] = -0.0f, f[9] = 0.0f;
        for (int j = 0; j < NS; j++)
            mx[j] = wmx[j] = INT32_MIN + j, mn[j] = wmn[j] = INT32_MAX - j, fmx[j] = wfmx[j] = -INFINITY,
            fmn[j] = wfmn[j] = INFINITY;
        for (int i = 0; i < n; i++) {
            int j = i % NS;
            wmx[j] = v[i] > wmx[j] ? v[i] : wmx[j], wmn[j] = v[i] < wmn[j] ? v[i] : wmn[j];
            wfmx[j] = ref_ext_f32(wfmx[j], f[i], true), wfmn[j] = ref_ext_f32(wfmn[j], f[i], false);
        }
        trt_buffer bv = upload(v, sizeof(int32_t) * (size_t)n), bf = upload(f, sizeof(float) * (size_t)n),
                   bmx = upload(mx, sizeof mx), bmn = upload(mn, sizeof mn), bfmx = upload(fmx, sizeof fmx),
                   bfmn = upload(fmn, sizeof fmn), bo = upload(olds, sizeof(int32_t) * (size_t)total);
        trt_arg a[8] = {trt_buf(bv), trt_buf(bf), trt_buf(bmx), trt_buf(bmn), trt_buf(bfmx), trt_buf(bfmn), trt_buf(bo),
                        trt_int(n)};
        launch(k, cdiv(n, 64), 1, 1, a, 8);
        download(bmx, mx, sizeof mx), download(bmn, mn, sizeof mn), download(bfmx, fmx, sizeof fmx);
        download(bfmn, fmn, sizeof fmn), download(bo, olds, sizeof(int32_t) * (size_t)total);
        trt_free(dev, bv), trt_free(dev, bf);
        for (int j = 0; j < NS; j++) {
            if (mx[j] != wmx[j] || mn[j] != wmn[j])
                fail_msg("i32 atomic_max/min n=%d slot %d: %d, %d, want %d, %d on %s", n, j, mx[j], mn[j], wmx[j], wmn[j],
                         trt_device_name(dev));
            if (!same_f32(fmx[j], wfmx[j]) || !same_f32(fmn[j], wfmn[j]) || signbit(fmx[j]) != signbit(wfmx[j]) ||
                signbit(fmn[j]) != signbit(wfmn[j]))
                fail_msg("f32 atomic_max/min n=%d slot %d: %g, %g, want %g, %g on %s", n, j, fmx[j], fmn[j], wfmx[j],
                         wfmn[j], trt_device_name(dev));
        }
        if (n == 16) assert_true(isnan(fmx[0]) && isnan(fmn[0]) && !signbit(fmx[1]) && fmx[1] == 0 && signbit(fmn[1]));
        /* each old value is the slot's start or an earlier value there, at most the final maximum */
        for (int i = 0; i < total; i++) {
            if (i >= n) {
                if (olds[i] != 0) fail_msg("atomic_max: masked-off lane %d gave %d on %s", i, olds[i], trt_device_name(dev));
                continue;
            }
            int j = i % NS;
            bool known = olds[i] == INT32_MIN + j;
            for (int q = j; q < n && !known; q += NS) known = q != i && v[q] == olds[i];
            if (!known || olds[i] > wmx[j])
                fail_msg("atomic_max: element %d got old value %d, not one slot %d held, on %s", i, olds[i], j,
                         trt_device_name(dev));
        }
        free(v), free(olds), free(f);
    }
    drop(&p);
}

/* xchg: per slot, the old values handed out and the final value are the
 * start value and every value written, each exactly once. */
static void test_atomic_xchg(void **state) {
    (void)state;
    static const char src[] =
        "kernel swap(slots: *i32, fslots: *f32, olds: *i32, folds: *f32, n: i32, const NS: i32 = 4,\n"
        "            const BLOCK: i32 = 64) {\n"
        "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
        "    store(olds + offs, atomic_xchg(slots + offs % NS, offs + 1, offs < n));\n"
        "    store(folds + offs, atomic_xchg(fslots + offs % NS, cast(offs + 1, f32) * 0.5, mask = offs < n));\n"
        "}\n";
    enum { NS = 4 };
    const int sizes[] = {3, 1000};
    prog p;
    trt_kernel *k = compile_text(&p, "swap.tile", src, "swap", NULL, 0);
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t], total = (int)cdiv(n, 64) * 64;
        int32_t slots[NS], *olds = fill_i32s(total, 0x5a5a5a5a);
        float fslots[NS], *folds = poison_f32s(total);
        for (int j = 0; j < NS; j++) slots[j] = -(j + 1), fslots[j] = (float)-(j + 1);
        trt_buffer bs = upload(slots, sizeof slots), bf = upload(fslots, sizeof fslots),
                   bo = upload(olds, sizeof(int32_t) * (size_t)total), bfo = upload(folds, sizeof(float) * (size_t)total);
        trt_arg a[5] = {trt_buf(bs), trt_buf(bf), trt_buf(bo), trt_buf(bfo), trt_int(n)};
        launch(k, cdiv(n, 64), 1, 1, a, 5);
        download(bs, slots, sizeof slots), download(bf, fslots, sizeof fslots);
        download(bo, olds, sizeof(int32_t) * (size_t)total), download(bfo, folds, sizeof(float) * (size_t)total);
        /* value v > 0 was written by element v - 1; v = -(j + 1) started in slot j */
        int *seen = calloc((size_t)(n + NS + 1), sizeof(int)), *fseen = calloc((size_t)(n + NS + 1), sizeof(int));
        for (int i = 0; i < total + NS; i++) {
            bool fin = i >= total;
            int j = fin ? i - total : i % NS;
            if (!fin && i >= n) {
                if (olds[i] != 0 || folds[i] != 0)
                    fail_msg("atomic_xchg: masked-off lane %d gave %d, %g on %s", i, olds[i], folds[i], trt_device_name(dev));
                continue;
            }
            int32_t got = fin ? slots[j] : olds[i];
            float fgot = fin ? fslots[j] : folds[i];
            int at = got > 0 ? got : n - got, fat = fgot > 0 ? (int)(fgot * 2) : n - (int)fgot;
            bool ok = got > 0 ? got <= n && (got - 1) % NS == j : got == -(j + 1);
            bool fok = fgot > 0 ? fgot * 2 <= n && ((int)(fgot * 2) - 1) % NS == j : fgot == (float)-(j + 1);
            if (!ok || seen[at]++ || !fok || fseen[fat]++)
                fail_msg("atomic_xchg n=%d: %s %d of slot %d is %d, %g: not each value once on %s", n,
                         fin ? "final value" : "old value", i, j, got, fgot, trt_device_name(dev));
        }
        free(olds), free(folds), free(seen), free(fseen);
    }
    drop(&p);
}

/* cas: each program tries to claim every slot; exactly one wins each, the
 * others see the winner. Floats compare bits, so a -0 slot is not 0. */
static void test_atomic_cas_claims(void **state) {
    (void)state;
    static const char src[] =
        "kernel claim(slots: *i32, fslots: *f32, got: *i32, fgot: *f32, ns: i32, const S: i32 = 16) {\n"
        "    let pid = program_id(0);\n"
        "    let s = arange(0, S);\n"
        "    store(got + pid * S + s, atomic_cas(slots + s, 0, pid + 1, mask = s < ns));\n"
        "    store(fgot + pid * S + s, atomic_cas(fslots + s, 0.0, cast(pid + 1, f32), s < ns));\n"
        "}\n";
    enum { S = 16, G = 9 };
    const int ns_values[] = {S, 11};
    prog p;
    trt_kernel *k = compile_text(&p, "claim.tile", src, "claim", NULL, 0);
    for (size_t t = 0; t < 2; t++) {
        int ns = ns_values[t];
        int32_t slots[S], *got = fill_i32s(G * S, 0x5a5a5a5a);
        float fslots[S], *fgot = poison_f32s(G * S);
        for (int s = 0; s < S; s++) slots[s] = s < ns ? 0 : 0x7777, fslots[s] = s < ns ? 0.0f : 7.0f;
        fslots[1] = -0.0f; /* never claimed: -0 does not have +0's bits */
        trt_buffer bs = upload(slots, sizeof slots), bf = upload(fslots, sizeof fslots),
                   bg = upload(got, sizeof(int32_t) * G * S), bfg = upload(fgot, sizeof(float) * G * S);
        trt_arg a[5] = {trt_buf(bs), trt_buf(bf), trt_buf(bg), trt_buf(bfg), trt_int(ns)};
        launch(k, G, 1, 1, a, 5);
        download(bs, slots, sizeof slots), download(bf, fslots, sizeof fslots);
        download(bg, got, sizeof(int32_t) * G * S), download(bfg, fgot, sizeof(float) * G * S);
        for (int s = 0; s < S; s++) {
            if (s >= ns) {
                assert_true(slots[s] == 0x7777 && fslots[s] == 7.0f);
                for (int pid = 0; pid < G; pid++)
                    if (got[pid * S + s] != 0 || fgot[pid * S + s] != 0)
                        fail_msg("atomic_cas: masked-off slot %d gave %d, %g on %s", s, got[pid * S + s], fgot[pid * S + s],
                                 trt_device_name(dev));
                continue;
            }
            int winners = 0, fwinners = 0;
            for (int pid = 0; pid < G; pid++) {
                int32_t g = got[pid * S + s];
                float fg = fgot[pid * S + s];
                winners += g == 0;
                if (g == 0 ? slots[s] != pid + 1 : g != slots[s])
                    fail_msg("atomic_cas slot %d: program %d saw %d, slot holds %d on %s", s, pid, g, slots[s],
                             trt_device_name(dev));
                if (s == 1) {
                    if (!(fg == 0 && signbit(fg))) fail_msg("atomic_cas: -0 slot gave %g to program %d", fg, pid);
                    continue;
                }
                fwinners += fg == 0;
                if (fg == 0 ? fslots[s] != (float)(pid + 1) : fg != fslots[s])
                    fail_msg("f32 atomic_cas slot %d: program %d saw %g, slot holds %g on %s", s, pid, fg, fslots[s],
                             trt_device_name(dev));
            }
            assert_int_equal(winners, 1);
            assert_int_equal(fwinners, s == 1 ? 0 : 1);
        }
        assert_true(fslots[1] == 0 && signbit(fslots[1]));
        free(got), free(fgot);
    }
    drop(&p);
}

/* ---- misuse on this device ------------------------------------------------ */

static void test_misuse_is_an_error(void **state) {
    (void)state;
    prog p;
    tilec_define d = {"BLOCK", 64};
    trt_kernel *k = compile_text(&p, "vadd.tile", vadd_src, "vadd", &d, 1), *none = NULL;
    trt_buffer b;
    OK(trt_alloc(dev, 256, &b));
    trt_arg good[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_int(64)};
    OK(trt_launch(k, 1, 1, 1, good, 4));
    OK(trt_sync(dev));

    assert_int_equal(trt_launch(k, 1, 1, 1, good, 3), TRT_ERR_ARGUMENTS);
    assert_non_null(strstr(trt_last_error(dev), "takes 4 arguments, 3 given"));
    trt_arg wrong_kind[4] = {trt_buf(b), trt_int(0), trt_buf(b), trt_int(64)};
    assert_int_equal(trt_launch(k, 1, 1, 1, wrong_kind, 4), TRT_ERR_ARGUMENTS);
    assert_non_null(strstr(trt_last_error(dev), "('y') of 'vadd' must be a buffer"));
    trt_arg float_for_int[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_float(64)};
    assert_int_equal(trt_launch(k, 1, 1, 1, float_for_int, 4), TRT_ERR_ARGUMENTS);
    trt_arg too_big[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_int(1ll << 40)};
    assert_int_equal(trt_launch(k, 1, 1, 1, too_big, 4), TRT_ERR_ARGUMENTS);
    trt_arg misaligned[4] = {trt_buf_at(b, 4), trt_buf(b), trt_buf(b), trt_int(60)};
    assert_int_equal(trt_launch(k, 1, 1, 1, misaligned, 4), TRT_ERR_ARGUMENTS);
    assert_non_null(strstr(trt_last_error(dev), "16-byte aligned"));
    assert_int_equal(trt_launch(k, 0, 1, 1, good, 4), TRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(trt_get_kernel(p.mod, "vsub", &none), TRT_ERR_NOT_FOUND);
    assert_null(none);
    assert_non_null(strstr(trt_last_error(dev), "no kernel named 'vsub'"));

    float host[64];
    assert_int_equal(trt_read(dev, b, 8, host, 256), TRT_ERR_INVALID_ARGUMENT); /* past the end */
    OK(trt_free(dev, b));
    assert_int_equal(trt_free(dev, b), TRT_ERR_INVALID_HANDLE);
    assert_int_equal(trt_read(dev, b, 0, host, 4), TRT_ERR_INVALID_HANDLE);
    assert_int_equal(trt_launch(k, 1, 1, 1, good, 4), TRT_ERR_INVALID_HANDLE);
    /* the launch wraps the lookup's message in its own */
    assert_non_null(strstr(trt_last_error(dev), "argument 0 ('x') of 'vadd': buffer handle 0x"));
    assert_non_null(strstr(trt_last_error(dev), "is not a live buffer of this device (freed?)"));

    /* a compile error names the line */
    trt_module *bad = NULL;
    const char *src = "kernel k(x: *f32) {\n    store(x, y);\n}\n";
    assert_int_equal(trt_compile(dev, "bad.tile", src, strlen(src), NULL, &bad), TRT_ERR_COMPILE);
    assert_null(bad);
    assert_non_null(strstr(trt_last_error(dev), "bad.tile:2:14: error:"));
    drop(&p);
}

/* ---- print and assert -------------------------------------------------- */

/* What a launch printed: on the CPU through trt_set_print; on the GPU the
 * driver writes the kernel's printf to stdout (fd 1) when the host waits,
 * so stdout goes to a file around the launch. */
typedef struct captured {
    char *text;
    size_t len;
} captured;

static void capture_line(void *user, const char *text, size_t len) {
    captured *c = user;
    c->text = realloc(c->text, c->len + len + 1);
    assert_non_null(c->text);
    memcpy(c->text + c->len, text, len);
    c->len += len;
    c->text[c->len] = 0;
}

static captured launch_captured(trt_kernel *k, uint32_t gx, const trt_arg *args, size_t nargs) {
    captured c = {calloc(1, 1), 0};
    if (kind != TRT_DEVICE_CUDA) { /* the CPU and the emulator call a print function */
        OK(trt_set_print(dev, capture_line, &c));
        launch(k, gx, 1, 1, args, nargs);
        OK(trt_set_print(dev, NULL, NULL));
        return c;
    }
    assert_int_equal(trt_set_print(dev, capture_line, &c), TRT_ERR_INVALID_ARGUMENT);
    char path[] = "/tmp/tilec-print-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    launch(k, gx, 1, 1, args, nargs);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    FILE *f = fdopen(fd, "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    c.text = realloc(c.text, (size_t)n + 1);
    assert_int_equal(fread(c.text, 1, (size_t)n, f), (size_t)n);
    c.text[n] = 0;
    c.len = (size_t)n;
    fclose(f);
    unlink(path);
    return c;
}

static int compare_lines(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The lines of text sorted, one string: GPU threads print in any order. */
static char *sorted_lines(const char *text) {
    size_t n = 0, len = strlen(text);
    char *copy = strdup(text);
    char **lines = malloc(sizeof(char *) * (len + 1));
    for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) lines[n++] = l;
    qsort(lines, n, sizeof *lines, compare_lines);
    char *out = malloc(len + 2);
    out[0] = 0;
    for (size_t i = 0; i < n; i++) strcat(strcat(out, lines[i]), "\n");
    free(lines);
    free(copy);
    return out;
}

static const char print_src[] =
    "kernel show(x: *f32, n: i32) {\n"
    "    let rows = arange(0, 2);\n"
    "    let cols = arange(0, 4);\n"
    "    let v = load(x + program_id(0) * 8 + rows[:, None] * 4 + cols[None, :]);\n"
    "    print(\"n =\", n, program_id(0), n > 3);\n"
    "    print(\"v[i][j] % 100:\", v, rows[:, None] * 10 + cols[None, :]);\n"
    "    print(\"\");\n"
    "}\n";

/* print's lines for a scalar and a 2-D tile, formatted as
 * docs/language.md says, against the same formats in C. */
static void test_print_scalars_and_tiles(void **state) {
    (void)state;
    enum { PROGRAMS = 2, N = 8 * PROGRAMS };
    float *x = rand_f32s(N);
    prog p;
    trt_kernel *k = compile_text(&p, "print.tile", print_src, "show", NULL, 0);
    trt_buffer bx = upload(x, sizeof(float) * N);
    int n = 5;
    trt_arg args[2] = {trt_buf(bx), trt_int(n)};
    captured got = launch_captured(k, PROGRAMS, args, 2);
    char *want = calloc(1, 4096), line[256];
    for (int pid = 0; pid < PROGRAMS; pid++) {
        snprintf(line, sizeof line, "pid (%d, 0, 0) n = %d %d %s\n", pid, n, pid, n > 3 ? "true" : "false");
        strcat(want, line);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++) {
                snprintf(line, sizeof line, "pid (%d, 0, 0) idx (%d, %d) v[i][j] %% 100: %.9g %d\n", pid, i, j,
                         (double)x[pid * 8 + i * 4 + j], i * 10 + j);
                strcat(want, line);
            }
        snprintf(line, sizeof line, "pid (%d, 0, 0)\n", pid);
        strcat(want, line);
    }
    if (kind == TRT_DEVICE_CPU) { /* the interpreter's order: programs, then elements row-major */
        assert_string_equal(got.text, want);
    } else {
        char *a = sorted_lines(got.text), *b = sorted_lines(want);
        assert_string_equal(a, b);
        free(a), free(b);
    }
    free(got.text), free(want), free(x);
    OK(trt_free(dev, bx));
    drop(&p);
}

static const char assert_src[] =
    "kernel positive(x: *f32, out: *f32, n: i32, const BLOCK: i32 = 64) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let v = load(x + offs, offs < n);\n"
    "    assert(v > 0.0, \"x must be positive\", mask = offs < n);\n"
    "    assert(n > 0, \"n > 0\");\n"
    "    store(out + offs, v * 2.0, offs < n);\n"
    "}\n";

/* Asserts that hold: the kernel runs as if they were not there (masked-off
 * elements, which load as 0, do not count). With no_asserts a false one is
 * not checked. */
static void test_assert_passing_and_compiled_out(void **state) {
    (void)state;
    enum { N = 100 };
    float x[N], out[N + 28];
    for (int i = 0; i < N; i++) x[i] = fabsf(rand_f32()) + 0.5f;
    prog p;
    trt_kernel *k = compile_text(&p, "assert.tile", assert_src, "positive", NULL, 0);
    trt_buffer bx = upload(x, sizeof x), bo;
    for (int i = 0; i < N + 28; i++) out[i] = NAN;
    bo = upload(out, sizeof out);
    trt_arg args[3] = {trt_buf(bx), trt_buf(bo), trt_int(N)};
    launch(k, cdiv(N, 64), 1, 1, args, 3);
    download(bo, out, sizeof out);
    for (int i = 0; i < N; i++) assert_true(out[i] == 2.0f * x[i]);
    for (int i = N; i < N + 28; i++) assert_true(isnan(out[i]));
    drop(&p);
    /* compiled out: a negative element goes through */
    trt_compile_options o = {.no_asserts = true};
    OK(trt_compile(dev, "assert.tile", assert_src, strlen(assert_src), &o, &p.mod));
    p.text = NULL;
    OK(trt_get_kernel(p.mod, "positive", &k));
    x[7] = -1.0f;
    OK(trt_write(dev, bx, 0, x, sizeof x));
    OK(trt_alloc(dev, sizeof out, &bo));
    args[1] = trt_buf(bo);
    launch(k, cdiv(N, 64), 1, 1, args, 3);
    download(bo, out, sizeof out);
    assert_true(out[7] == -2.0f);
    OK(trt_free(dev, bx));
    drop(&p);
}

/* A false assert stops the launch with TRT_ERR_ASSERT and says where. On
 * the CPU the device, its buffers and the kernel stay usable. On the GPU
 * the context is lost for everyone sharing it (the primary context), so
 * this runs last, on a device of its own, and only checks that every
 * later call answers with a status. */
static void test_assert_failing(void **state) {
    (void)state;
    enum { N = 100 };
    trt_device *mine;
    char why[512];
    OK(trt_open(kind, &mine, why, sizeof why));
    float x[N];
    for (int i = 0; i < N; i++) x[i] = fabsf(rand_f32()) + 0.5f;
    x[64 + 3] = -x[64 + 3]; /* program 1, element 3 */
    x[64 + 9] = -x[64 + 9];
    trt_module *mod;
    assert_int_equal(trt_compile(mine, "assert.tile", assert_src, strlen(assert_src), NULL, &mod), TRT_OK);
    trt_kernel *k;
    assert_int_equal(trt_get_kernel(mod, "positive", &k), TRT_OK);
    trt_buffer bx, bo;
    assert_int_equal(trt_alloc(mine, sizeof x, &bx), TRT_OK);
    assert_int_equal(trt_alloc(mine, sizeof x, &bo), TRT_OK);
    assert_int_equal(trt_write(mine, bx, 0, x, sizeof x), TRT_OK);
    trt_arg args[3] = {trt_buf(bx), trt_buf(bo), trt_int(N)};
    trt_status st = trt_launch(k, cdiv(N, 64), 1, 1, args, 3);
    if (st == TRT_OK) st = trt_sync(mine);
    assert_int_equal(st, TRT_ERR_ASSERT);
    const char *msg = trt_last_error(mine);
    if (kind != TRT_DEVICE_CUDA) { /* the emulator reports the line the kernel printed, and goes on */
        assert_string_equal(msg, "assert.tile:4:5: assertion failed: x must be positive "
                                 "(kernel 'positive', program (1, 0, 0), idx (3))\n");
        /* still usable: the input reads back, a good launch runs */
        float back[N];
        assert_int_equal(trt_read(mine, bx, 0, back, sizeof back), TRT_OK);
        assert_memory_equal(back, x, sizeof x);
        x[64 + 3] = -x[64 + 3], x[64 + 9] = -x[64 + 9];
        assert_int_equal(trt_write(mine, bx, 0, x, sizeof x), TRT_OK);
        assert_int_equal(trt_launch(k, cdiv(N, 64), 1, 1, args, 3), TRT_OK);
        assert_int_equal(trt_read(mine, bo, 0, back, sizeof back), TRT_OK);
        for (int i = 0; i < N; i++) assert_true(back[i] == 2.0f * x[i]);
        /* a scalar assert names no element */
        args[2] = trt_int(0);
        assert_int_equal(trt_launch(k, 1, 1, 1, args, 3), TRT_ERR_ASSERT);
        assert_string_equal(trt_last_error(mine),
                            "assert.tile:5:5: assertion failed: n > 0 (kernel 'positive', program (0, 0, 0))\n");
    } else {
        assert_non_null(strstr(msg, "an assert failed in a kernel on the GPU"));
        float back[N];
        assert_int_equal(trt_read(mine, bx, 0, back, sizeof back), TRT_ERR_ASSERT);
        assert_int_equal(trt_launch(k, 1, 1, 1, args, 3) == TRT_OK ? trt_sync(mine) : TRT_ERR_ASSERT, TRT_ERR_ASSERT);
    }
    trt_close(mine);
    trt_module_free(mod);
}

/* Closing the device while a module is alive: its kernels refuse to run.
 * Runs last, on a device of its own. */
static void test_launch_after_close(void **state) {
    (void)state;
    trt_device *mine;
    char why[512];
    OK(trt_open(kind, &mine, why, sizeof why));
    trt_module *mod;
    assert_int_equal(trt_compile(mine, "vadd.tile", vadd_src, strlen(vadd_src), NULL, &mod), TRT_OK);
    trt_kernel *k;
    assert_int_equal(trt_get_kernel(mod, "vadd", &k), TRT_OK);
    trt_buffer b;
    assert_int_equal(trt_alloc(mine, 64, &b), TRT_OK);
    trt_close(mine);
    trt_arg a[4] = {trt_buf(b), trt_buf(b), trt_buf(b), trt_int(16)};
    assert_int_equal(trt_launch(k, 1, 1, 1, a, 4), TRT_ERR_CLOSED);
    trt_module_free(mod); /* the device's memory goes with its last module */
}

/* ---- dynamic shared memory ------------------------------------------------ */

/* A kernel needing more than the 48 KB of static shared memory: a
 * 128x128x32 f16 matmul tile pipelined four stages deep has 64 KB of
 * rings (tests/golden/codegen/dynamic-smem.tile shows such kernels take
 * the dynamic array), so on the GPU and the emulator it runs only if the
 * launch gives it its dynamic shared memory, and the emulator checks
 * every access against that size. K spans five trips, so the rings wrap;
 * M and N end inside a tile. */
static const char dynsmem_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32) {\n"
    "    let rm = program_id(0) * 128 + arange(0, 128);\n"
    "    let rn = program_id(1) * 128 + arange(0, 128);\n"
    "    let rk = arange(0, 32);\n"
    "    var acc = zeros((128, 128), f32);\n"
    "    for k in range(0, K, 32, num_stages = 4) {\n"
    "        let x = load(a + rm[:, None] * K + (k + rk)[None, :], rm[:, None] < M & (k + rk)[None, :] < K, other = 0.0);\n"
    "        let y = load(b + (k + rk)[:, None] * N + rn[None, :], (k + rk)[:, None] < K & rn[None, :] < N, other = 0.0);\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);\n"
    "}\n";

static void test_dynamic_shared_memory(void **state) {
    (void)state;
    const int M = 128 + 5, N = 128 + 3, K = 4 * 32 + 7;
    float *a = malloc(sizeof(float) * (size_t)(M * K)), *b = malloc(sizeof(float) * (size_t)(K * N));
    uint16_t *ha = malloc(2 * (size_t)(M * K)), *hb = malloc(2 * (size_t)(K * N));
    for (int i = 0; i < M * K; i++) {
        put_f16(ha, (size_t)i, rand_f32() / 1000.0f);
        if (!ha[i]) put_f16(ha, (size_t)i, 0.5f);
        a[i] = get_f16(ha, (size_t)i);
    }
    for (int i = 0; i < K * N; i++) {
        put_f16(hb, (size_t)i, rand_f32() / 1000.0f);
        if (!hb[i]) put_f16(hb, (size_t)i, -0.25f);
        b[i] = get_f16(hb, (size_t)i);
    }
    float *c = poison_f32s(M * N);
    prog p;
    trt_kernel *k = compile_text(&p, "dynsmem.tile", dynsmem_src, "mm", NULL, 0);
    trt_buffer ba = upload(ha, 2 * (size_t)(M * K)), bb = upload(hb, 2 * (size_t)(K * N)),
               bc = upload(c, sizeof(float) * (size_t)(M * N));
    trt_arg args[6] = {trt_buf(ba), trt_buf(bb), trt_buf(bc), trt_int(M), trt_int(N), trt_int(K)};
    launch(k, cdiv(M, 128), cdiv(N, 128), 1, args, 6);
    download(bc, c, sizeof(float) * (size_t)(M * N));
    OK(trt_free(dev, ba));
    OK(trt_free(dev, bb));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0, mag = 0;
            for (int kk = 0; kk < K; kk++) {
                want += (double)a[i * K + kk] * b[kk * N + j];
                mag += fabs((double)a[i * K + kk] * b[kk * N + j]);
            }
            double tol = K * ldexp(1.0, -23) * mag; /* f16 products are exact in f32; K f32 adds */
            if (!(fabs(c[i * N + j] - want) <= tol))
                fail_msg("dynamic shared memory matmul: c[%d][%d] = %.9g, want %.9g (tolerance %.3g) on %s", i, j,
                         c[i * N + j], want, tol, trt_device_name(dev));
        }
    free(a), free(b), free(ha), free(hb), free(c);
    drop(&p);
}

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "cpu";
    if (!strcmp(which, "cpu")) kind = TRT_DEVICE_CPU;
    else if (!strcmp(which, "cuda")) kind = TRT_DEVICE_CUDA;
    else if (!strcmp(which, "emu")) kind = TRT_DEVICE_EMU;
    else {
        fprintf(stderr, "usage: %s cpu|cuda|emu\n", argv[0]);
        return 2;
    }
    char why[512];
    if (trt_open(kind, &dev, why, sizeof why) != TRT_OK) {
        const char *req = getenv("TILEC_TEST_REQUIRE_CUDA");
        bool required = req && *req && strcmp(req, "0") != 0;
        fprintf(stderr, "%s: %s device tests %s: %s\n", argv[0], which, required ? "FAILED" : "SKIPPED", why);
        return required ? 1 : 77; /* 77: ctest's SKIP_RETURN_CODE */
    }
    printf("device: %s\n", trt_device_name(dev));
    srand(2026);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vadd_tails_blocks_grids),
        cmocka_unit_test(test_pointer_at_an_offset),
        cmocka_unit_test(test_stdlib_elementwise),
        cmocka_unit_test(test_samples_elementwise),
        cmocka_unit_test(test_three_axis_grid),
        cmocka_unit_test(test_loop_row_sums),
        cmocka_unit_test(test_math_builtins_exact),
        cmocka_unit_test(test_integers_and_casts),
        cmocka_unit_test(test_transcendentals_within_tolerance),
        cmocka_unit_test(test_erf_within_tolerance),
        cmocka_unit_test(test_rand_is_philox),
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_reduction_in_a_loop),
        cmocka_unit_test(test_tiles_2d),
        cmocka_unit_test(test_tiles_3d),
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_dot_result_uses),
        cmocka_unit_test(test_pipelined_carried_pointers),
        cmocka_unit_test(test_dynamic_shared_memory),
        cmocka_unit_test(test_argmax_argmin),
        cmocka_unit_test(test_while_and_if_on_scalars),
        cmocka_unit_test(test_control_flow_on_tiles),
        cmocka_unit_test(test_cumsum_1d),
        cmocka_unit_test(test_cumsum_2d),
        cmocka_unit_test(test_cumsum_3d),
        cmocka_unit_test(test_atomic_histogram),
        cmocka_unit_test(test_atomic_2d_and_scalar),
        cmocka_unit_test(test_atomic_add_sums),
        cmocka_unit_test(test_atomic_max_min),
        cmocka_unit_test(test_atomic_xchg),
        cmocka_unit_test(test_atomic_cas_claims),
        cmocka_unit_test(test_stdlib_softmax),
        cmocka_unit_test(test_stdlib_layernorm),
        cmocka_unit_test(test_stdlib_rmsnorm),
        cmocka_unit_test(test_stdlib_gelu),
        cmocka_unit_test(test_stdlib_dropout),
        cmocka_unit_test(test_every_stdlib_kernel_is_tested),
        cmocka_unit_test(test_streams),
        cmocka_unit_test(test_stream_misuse),
        cmocka_unit_test(test_load_prebuilt_modules),
        cmocka_unit_test(test_disk_cache),
        cmocka_unit_test(test_wrapped_memory),
        cmocka_unit_test(test_misuse_is_an_error),
        cmocka_unit_test(test_print_scalars_and_tiles),
        cmocka_unit_test(test_assert_passing_and_compiled_out),
        cmocka_unit_test(test_launch_after_close),
        cmocka_unit_test(test_assert_failing), /* last: on the GPU it loses the context */
    };
    int failed = cmocka_run_group_tests_name(which, tests, NULL, NULL);
    trt_close(dev);
    return failed ? 1 : 0;
}
