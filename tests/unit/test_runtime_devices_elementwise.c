/* test_runtime_devices_elementwise.c - the device tests of elementwise: vadd
 * over tails, blocks and grids, a pointer at an offset, a three-axis grid,
 * loops, and control flow (if, while) on scalars and tiles.
 * Runs on each device as the others (device_harness.h):
 * test_runtime_devices_elementwise cpu|cuda|emu. */
#include "device_harness.h"


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


/* ---- masks from comparisons ---------------------------------------------
 * Found by tests/fuzz/difftest.c: `load(x + c, c != 2, other = 1)` with a
 * thread holding runs of consecutive elements had its mask tested once per
 * vector (the axis analysis said c != 2 is constant over runs of 2), so
 * element 3 read `other`. Every predicate, both ways round, against
 * constants of several divisibilities, on f16 runs of 8 a thread (one warp,
 * 256 elements) and f32 runs of 4; each mask loads x where it holds. */
static void run_compare_masks(const char *type, bool half) {
    static const char *const preds[] = {"c != %d", "c == %d", "c <= %d", "c > %d", "c < %d", "c >= %d",
                                        "%d < c",  "%d >= c", "%d == c", "%d > c", "%d <= c"};
    static const int consts[] = {2, 8, 16, 64};
    enum { N = 256, NP = sizeof preds / sizeof preds[0], NC = sizeof consts / sizeof consts[0] };
    char src[8192];
    size_t len = (size_t)snprintf(src, sizeof src, "kernel cm(x: *%s, out: *%s) {\n    let c = arange(0, %d);\n",
                                  type, type, N);
    for (int p = 0; p < NP; p++)
        for (int k = 0; k < NC; k++) {
            char mask[32];
            snprintf(mask, sizeof mask, preds[p], consts[k]);
            len += (size_t)snprintf(src + len, sizeof src - len, "    store(out + %d + c, load(x + c, %s, other = 1));\n",
                                    (p * NC + k) * N, mask);
        }
    snprintf(src + len, sizeof src - len, "}\n");
    prog pr;
    trt_kernel *k = compile_with(&pr, "cm.tile", src, "cm", NULL, 0, 1);
    size_t es = half ? 2 : 4;
    unsigned char *x = malloc(es * N), *out = malloc(es * N * NP * NC);
    for (int i = 0; i < N; i++) {
        float v = (float)(i % 100) + 2.0f; /* never 1 */
        if (half) put_f16(x, (size_t)i, v);
        else put_f32(x, (size_t)i, v);
    }
    memset(out, 0xff, es * N * NP * NC);
    trt_buffer bx = upload(x, es * N), bo = upload(out, es * N * NP * NC);
    trt_arg args[2] = {trt_buf(bx), trt_buf(bo)};
    launch(k, 1, 1, 1, args, 2);
    download(bo, out, es * N * NP * NC);
    trt_free(dev, bx);
    for (int p = 0; p < NP; p++)
        for (int kk = 0; kk < NC; kk++)
            for (int c = 0; c < N; c++) {
                int v = consts[kk];
                bool on = p == 0 ? c != v : p == 1 ? c == v : p == 2 ? c <= v : p == 3 ? c > v : p == 4 ? c < v
                        : p == 5 ? c >= v : p == 6 ? v < c : p == 7 ? v >= c : p == 8 ? v == c : p == 9 ? v > c : v <= c;
                size_t at = (size_t)((p * NC + kk) * N + c);
                float got = half ? get_f16(out, at) : get_f32(out, at), want = on ? (float)(c % 100) + 2.0f : 1.0f;
                if (got != want) {
                    char mask[32];
                    snprintf(mask, sizeof mask, preds[p], v);
                    fail_msg("%s load masked by %s: [%d] = %g, want %g on %s", type, mask, c, (double)got, (double)want,
                             trt_device_name(dev));
                }
            }
    free(x), free(out);
    drop(&pr);
}

static void test_compare_masks(void **state) {
    (void)state;
    run_compare_masks("f16", true);
    run_compare_masks("f32", false);
}

HARNESS_MAIN(
    cmocka_unit_test(test_vadd_tails_blocks_grids),
    cmocka_unit_test(test_pointer_at_an_offset),
    cmocka_unit_test(test_three_axis_grid),
    cmocka_unit_test(test_loop_row_sums),
    cmocka_unit_test(test_while_and_if_on_scalars),
    cmocka_unit_test(test_control_flow_on_tiles),
    cmocka_unit_test(test_compare_masks))

