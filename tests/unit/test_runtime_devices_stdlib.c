/* test_runtime_devices_stdlib.c - the device tests of the stdlib's and the
 * samples' kernels against float64 references: elementwise, softmax, layernorm,
 * rmsnorm, gelu and dropout, and every stdlib kernel has a test.
 * Runs on each device as the others (device_harness.h):
 * test_runtime_devices_stdlib cpu|cuda|emu. */
#include "device_harness.h"

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


/* ---- stdlib softmax --------------------------------------------------------- */




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
 * elementwise.tile, by test_runtime_stdlib too; matmul by test_stdlib_api;
 * attention by test_runtime_devices_attention and _attention_bwd, its f32
 * kernels by test_stdlib_attention): a new
 * kernel without a test fails here. */
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
        "matmul_f16", "matmul_bf16", "matmul_f32", "matmul_f32_ieee",
        "attention_fwd_f16", "attention_fwd_bf16", /* test_runtime_devices_attention.c */
        "attention_bwd_pre_f16", "attention_bwd_dkdv_f16", "attention_bwd_dq_f16", /* ..._attention_bwd.c */
        "attention_bwd_pre_bf16", "attention_bwd_dkdv_bf16", "attention_bwd_dq_bf16",
        /* through tls_embedding and tls_embedding_bwd in test_stdlib_embedding.c */
        "embedding_f32", "embedding_f16", "embedding_bf16", "embedding_bwd_wte_f32", "embedding_bwd_wte_f16",
        "embedding_bwd_wte_bf16", "embedding_bwd_wpe_f32", "embedding_bwd_wpe_f16", "embedding_bwd_wpe_bf16",
        /* through their entry points (tls_sum_squares, tls_adamw, tls_fill, tls_add, tls_sum_rows,
         * tls_convert) in test_stdlib_optim.c */
        "sumsq_parts_f32", "sumsq_parts_f16", "sumsq_parts_bf16", "sumsq_total_f32", "adamw_f32", "adamw_f16",
        "adamw_bf16", "fill_f32", "fill_f16", "fill_bf16", "vadd_f32", "vadd_f16", "vadd_bf16", "sum_rows_f32", "sum_rows_f16", "sum_rows_bf16",
        "convert_f32_f32", "convert_f32_f16", "convert_f32_bf16", "convert_f16_f32", "convert_f16_f16",
        "convert_f16_bf16", "convert_bf16_f32", "convert_bf16_f16", "convert_bf16_bf16",
        "cross_entropy_f32", "cross_entropy_f16", "cross_entropy_bf16", /* test_stdlib_loss.c */
        "attention_fwd_f32", "attention_bwd_pre_f32", "attention_bwd_dkdv_f32", /* test_stdlib_attention.c */
        "attention_bwd_dq_f32"};
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
            if (!ok)
                fail_msg("%s: kernel %s has no test in test_runtime_devices_stdlib.c, test_stdlib_api.c, "
                         "test_stdlib_attention.c, test_runtime_devices_attention.c, "
                         "test_runtime_devices_attention_bwd.c, test_stdlib_embedding.c, test_stdlib_optim.c or "
                         "test_stdlib_loss.c",
                         rel, name);
            seen++;
        }
        assert_null(trt_module_kernel(p.mod, trt_module_num_kernels(p.mod)));
        drop(&p);
    }
    assert_true(files >= 3 && files < MAX_STDLIB_FILES);
    assert_int_equal(seen, sizeof tested / sizeof tested[0]); /* and no name above is stale */
}


HARNESS_MAIN(
    cmocka_unit_test(test_stdlib_elementwise),
    cmocka_unit_test(test_samples_elementwise),
    cmocka_unit_test(test_stdlib_softmax),
    cmocka_unit_test(test_stdlib_layernorm),
    cmocka_unit_test(test_stdlib_rmsnorm),
    cmocka_unit_test(test_stdlib_gelu),
    cmocka_unit_test(test_stdlib_dropout),
    cmocka_unit_test(test_every_stdlib_kernel_is_tested))

