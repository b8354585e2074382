/* test_runtime_devices_tiles.c - the device tests of tiles of rank 2 and 3:
 * masked 2-D blocks, their sums, maxima and transposes; 3-D permutations,
 * reshapes and reductions; a mask transposed by a renaming permute.
 * Runs on each device as the others (device_harness.h):
 * test_runtime_devices_tiles cpu|cuda|emu. */
#include "device_harness.h"

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

/* A mask transposed by a permute that only renames registers (its
 * operand already in the transposed layout, which another use gave it),
 * on a masked load and a masked store: the vector accesses' run counts
 * must come from the mask as the accesses run, not from the operand's
 * facts about its own last dim (found in review: the load dropped
 * elements, the store wrote masked-off ones). Columns below n (rows, for
 * the transposed mask) are on. */
static const char permuted_mask_src[] =
    "kernel pm(x: *f32, y: *f32, o: *f32, o2: *f32, o3: *f32, n: i32) {\n"
    "    let r = arange(0, 64);\n"
    "    let yt = trans(load(y + r[:, None] * 64 + r[None, :]));\n"
    "    let e = (r[None, :] + r[:, None] * 0) < n;\n"
    "    store(o2 + r[:, None] * 64 + r[None, :], where(e, yt, 0.0));\n"
    "    store(o + r[:, None] * 64 + r[None, :], load(x + r[:, None] * 64 + r[None, :], trans(e), other = 0.0));\n"
    "    store(o3 + r[:, None] * 64 + r[None, :], load(x + r[:, None] * 64 + r[None, :]), trans(e));\n"
    "}\n";

static void test_permuted_mask(void **state) {
    (void)state;
    enum { N = 64 * 64 };
    static const int ns[] = {10, 37, 64};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        int n = ns[t];
        float *x = rand_f32s(N), *y = rand_f32s(N), *o = poison_f32s(N), *o2 = poison_f32s(N), *o3 = poison_f32s(N);
        float *want = malloc(sizeof(float) * N), *want3 = malloc(sizeof(float) * N);
        prog p;
        trt_kernel *k = compile_with(&p, "pm.tile", permuted_mask_src, "pm", NULL, 0, 4);
        trt_buffer bx = upload(x, sizeof(float) * N), by = upload(y, sizeof(float) * N), bo = upload(o, sizeof(float) * N),
                   bo2 = upload(o2, sizeof(float) * N), bo3 = upload(o3, sizeof(float) * N);
        trt_arg args[6] = {trt_buf(bx), trt_buf(by), trt_buf(bo), trt_buf(bo2), trt_buf(bo3), trt_int(n)};
        launch(k, 1, 1, 1, args, 6);
        download(bo, o, sizeof(float) * N);
        download(bo3, o3, sizeof(float) * N);
        for (int i = 0; i < 64; i++)
            for (int j = 0; j < 64; j++) {
                want[i * 64 + j] = i < n ? x[i * 64 + j] : 0.0f; /* trans(e)[i][j] = e[j][i] = i < n */
                want3[i * 64 + j] = i < n ? x[i * 64 + j] : NAN;  /* stays poisoned */
            }
        char what[64];
        snprintf(what, sizeof what, "permuted mask, n = %d: masked load", n);
        expect_f32(what, N, o, want);
        snprintf(what, sizeof what, "permuted mask, n = %d: masked store", n);
        expect_f32(what, N, o3, want3);
        free(x), free(y), free(o), free(o2), free(o3), free(want), free(want3);
        drop(&p);
    }
}

/* Rows at a run-time stride: nothing is known of the stride, so the
 * axis analysis (lower/axisinfo.c) may not claim that row starts are
 * 16-byte aligned, and codegen must test the alignment before a 4-wide
 * access (or go element by element). Odd strides put most rows off 16
 * bytes; a claim of more divisibility than the stride has (for a
 * parameter, a product or a sum) makes the emulator report a misaligned
 * access, and the GPU one too. Even strides and a multiple of 4 are
 * checked as well, and each row's values. */
static void test_rows_at_run_time_strides(void **state) {
    (void)state;
    static const char src[] =
        "kernel rows(x: *f32, out: *f32, stride: i32, off: i32, const BN: i32 = 128) {\n"
        "    let cols = arange(0, BN);\n"
        "    let v = load(x + program_id(0) * stride + off + cols);\n"
        "    store(out + program_id(0) * BN + cols, v * 2.0 + 1.0);\n"
        "}\n";
    enum { ROWS = 8, BN = 128 };
    const int strides[] = {129, 131, 130, 132, 128};
    const int offs[] = {0, 1, 2, 3};
    for (size_t w = 0; w < 2; w++) {
        prog p;
        trt_kernel *k = compile_with(&p, "rows.tile", src, "rows", NULL, 0, w ? 4 : 1);
        for (size_t si = 0; si < sizeof strides / sizeof strides[0]; si++)
            for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
                int stride = strides[si], off = offs[oi], n = ROWS * stride + 4;
                float *x = rand_f32s(n), *o = poison_f32s(ROWS * BN);
                trt_buffer bx = upload(x, sizeof(float) * (size_t)n), bo = upload(o, sizeof(float) * ROWS * BN);
                trt_arg args[4] = {trt_buf(bx), trt_buf(bo), trt_int(stride), trt_int(off)};
                launch(k, ROWS, 1, 1, args, 4);
                download(bo, o, sizeof(float) * ROWS * BN);
                trt_free(dev, bx), trt_free(dev, bo);
                for (int r = 0; r < ROWS; r++)
                    for (int j = 0; j < BN; j++) {
                        float want = x[r * stride + off + j] * 2.0f + 1.0f;
                        if (o[r * BN + j] != want)
                            fail_msg("rows at stride %d, offset %d, %d warps: out[%d][%d] = %g, want %g on %s", stride,
                                     off, w ? 4 : 1, r, j, o[r * BN + j], want, trt_device_name(dev));
                    }
                free(x), free(o);
            }
        drop(&p);
    }
}

/* The same through a loop: the induction variable of a range with a
 * run-time step, and a pointer advanced by that step each trip (a carried
 * induction value), are as unknown as the step; each trip's rows start off
 * 16 bytes for odd steps. */
static void test_rows_at_run_time_loop_steps(void **state) {
    (void)state;
    static const char src[] =
        "kernel walk(x: *f32, out: *f32, step: i32, n: i32, const BN: i32 = 128) {\n"
        "    let cols = arange(0, BN);\n"
        "    var acc = zeros(BN, f32);\n"
        "    var p = x;\n"
        "    for k in range(0, n, step) {\n"
        "        acc = acc + load(x + k + cols) * 2.0 + load(p + cols);\n"
        "        p = p + step;\n"
        "    }\n"
        "    store(out + cols, acc);\n"
        "}\n";
    enum { BN = 128, TRIPS = 4 };
    const int steps[] = {129, 131, 130, 132, 128};
    for (size_t w = 0; w < 2; w++) {
        prog p;
        trt_kernel *k = compile_with(&p, "walk.tile", src, "walk", NULL, 0, w ? 4 : 1);
        for (size_t si = 0; si < sizeof steps / sizeof steps[0]; si++) {
            int step = steps[si], n = (TRIPS - 1) * step + 1, size = n + BN;
            float *x = rand_f32s(size), *o = poison_f32s(BN);
            trt_buffer bx = upload(x, sizeof(float) * (size_t)size), bo = upload(o, sizeof(float) * BN);
            trt_arg args[4] = {trt_buf(bx), trt_buf(bo), trt_int(step), trt_int(n)};
            launch(k, 1, 1, 1, args, 4);
            download(bo, o, sizeof(float) * BN);
            trt_free(dev, bx), trt_free(dev, bo);
            for (int j = 0; j < BN; j++) {
                float want = 0.0f;
                for (int t = 0; t < TRIPS; t++) {
                    float v = x[t * step + j];
                    want = want + v * 2.0f;
                    want = want + v;
                }
                if (o[j] != want)
                    fail_msg("rows at loop step %d, %d warps: out[%d] = %g, want %g on %s", step, w ? 4 : 1, j, o[j],
                             want, trt_device_name(dev));
            }
            free(x), free(o);
        }
        drop(&p);
    }
}

HARNESS_MAIN(
    cmocka_unit_test(test_tiles_2d),
    cmocka_unit_test(test_tiles_3d),
    cmocka_unit_test(test_permuted_mask),
    cmocka_unit_test(test_rows_at_run_time_strides),
    cmocka_unit_test(test_rows_at_run_time_loop_steps))

