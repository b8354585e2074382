/* test_runtime_devices_reductions.c - the device tests of reductions and
 * scans: sum, max and min (also inside a loop), cumsum over ranks 1 to 3, argmax
 * and argmin.
 * Runs on each device as the others (device_harness.h):
 * test_runtime_devices_reductions cpu|cuda|emu. */
#include "device_harness.h"

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


HARNESS_MAIN(
    cmocka_unit_test(test_reductions),
    cmocka_unit_test(test_reduction_in_a_loop),
    cmocka_unit_test(test_argmax_argmin),
    cmocka_unit_test(test_cumsum_1d),
    cmocka_unit_test(test_cumsum_2d),
    cmocka_unit_test(test_cumsum_3d))

