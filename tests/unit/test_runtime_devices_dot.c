/* test_runtime_devices_dot.c - the device tests of dot: every input type and
 * precision over block shapes and warps, its result feeding other tile
 * operations, the pipelined matmul with carried pointers, a kernel on
 * dynamic shared memory, and a dot's result as the next dot's a.
 * Runs on each device as the others (device_harness.h):
 * test_runtime_devices_dot cpu|cuda|emu. */
#include "device_harness.h"

/* ---- dot ------------------------------------------------------------------
 * C = A.B (+ an epilogue) over a grid of BMxBN blocks, the K loop carrying
 * the accumulator, masks at every edge (M, N, K not multiples of the
 * blocks). Inputs are random non-zero values of the input type (rounded to
 * tf32 for `dot` on f32, as the tensor cores do: cvt.rna); the reference
 * sums the exact products in float64. Tolerance: f32 accumulation of K
 * terms in any order, K 2^-23 sum_k |a_ik b_kj| (the tensor cores add in
 * groups of k); i8 into i32 is exact. On the GPU these kernels run on
 * mma.sync (dot_ieee on FMAs). The kernels: tests/kernels/dot.tile, one
 * per input type and precision, and dot_bias.tile, with the epilogue. */

typedef struct dot_case {
    const char *kernel, *bias_kernel; /* in tests/kernels/dot.tile and dot_bias.tile */
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

/* One case on `mod`, tests/kernels/dot.tile (dot_bias.tile with the
 * epilogue) compiled for these blocks and warps: a compile builds every
 * kernel of the file, so the cases share one. */
static void run_dot(trt_module *mod, const dot_case *dc, int bm, int bn, int bk, int warps, bool epilogue) {
    bool integer = dc->put == put_i8;
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
    trt_kernel *k;
    OK(trt_get_kernel(mod, epilogue ? dc->bias_kernel : dc->kernel, &k));
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
                want += bias[j] + (i % 8) * 0.125; /* dot_bias.tile: a bias row and a column */
                tol += fabs(want) * ldexp(1.0, -11) + ldexp(1.0, -23) * (fabs(bias[j]) + 1); /* f16 rounding, the f32 adds */
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
}

static void test_dot(void **state) {
    (void)state;
    static const dot_case cases[] = {
        {"mm_f16", "mm_bias_f16", "f16", NULL, 2, put_f16, get_f16},
        {"mm_bf16", "mm_bias_bf16", "bf16", NULL, 2, put_bf16, get_bf16},
        {"mm_f32", "mm_bias_f32", "f32", NULL, 4, put_f32, get_f32},
        {"mm_f32_ieee", "mm_bias_f32_ieee", "f32", "ieee", 4, put_f32, get_f32},
        {"mm_i8", NULL, "i8", NULL, 1, put_i8, get_i8},
    };
    static const int shapes[][3] = {{16, 16, 16}, {64, 32, 16}, {128, 128, 64}, {32, 64, 32}};
    static const int warps[] = {4, 8};
    static const int epilogue_configs[][4] = {{64, 32, 16, 4}, {16, 64, 32, 8}}; /* blocks, warps */
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t w = 0; w < sizeof warps / sizeof warps[0]; w++) {
            tilec_define d[3] = {{"BM", shapes[s][0]}, {"BN", shapes[s][1]}, {"BK", shapes[s][2]}};
            prog p;
            compile_file_with(&p, "tests/kernels/dot.tile", NULL, d, 3, warps[w]);
            for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
                run_dot(p.mod, &cases[c], shapes[s][0], shapes[s][1], shapes[s][2], warps[w], false);
            drop(&p);
        }
    /* the epilogue: f32 accumulator plus a bias row, stored as f16 */
    for (size_t e = 0; e < sizeof epilogue_configs / sizeof epilogue_configs[0]; e++) {
        const int *cfg = epilogue_configs[e];
        tilec_define d[3] = {{"BM", cfg[0]}, {"BN", cfg[1]}, {"BK", cfg[2]}};
        prog p;
        compile_file_with(&p, "tests/kernels/dot_bias.tile", NULL, d, 3, cfg[3]);
        for (size_t c = 0; c < 4; c++) run_dot(p.mod, &cases[c], cfg[0], cfg[1], cfg[2], cfg[3], true);
        drop(&p);
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
 * accumulation of K terms in any order, K 2^-23 sum_k |a_ik b_kj|. The
 * kernels: tests/kernels/carried_matmul.tile, mm and mm_const_strides. */
static void run_carried_mm(bool const_strides, int bm, int bn, int bk, int stages) {
    const int M = 2 * bm + 3, N = bn + 5, K = 5 * bk + 7;
    const int lda = const_strides ? (K + 7) / 8 * 8 : K, ldb = const_strides ? (N + 7) / 8 * 8 : N;
    float *a = malloc(sizeof(float) * (size_t)(M * lda)), *b = malloc(sizeof(float) * (size_t)(K * ldb));
    uint16_t *ha = malloc(2 * (size_t)(M * lda)), *hb = malloc(2 * (size_t)(K * ldb));
    float *c = poison_f32s(M * N);
    /* random non-zero f16 values in (-1, 1), padding included */
    for (int i = 0; i < M * lda; i++) put_f16(ha, (size_t)i, rand_f32() / 1000.0f), a[i] = get_f16(ha, (size_t)i);
    for (int i = 0; i < K * ldb; i++) put_f16(hb, (size_t)i, rand_f32() / 1000.0f), b[i] = get_f16(hb, (size_t)i);
    tilec_define d[6] = {{"BM", bm}, {"BN", bn}, {"BK", bk}, {"S", stages}, {"stride_am", lda}, {"stride_bk", ldb}};
    prog p;
    trt_kernel *k = compile_file(&p, "tests/kernels/carried_matmul.tile", const_strides ? "mm_const_strides" : "mm", d,
                                 const_strides ? 6 : 4);
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


/* `src`'s kernel mm(a: *f16, b: *f16, c: *f32, M, N, K) on random f16 a
 * (M x K) and b (K x N), row-major, over cdiv(M, bm) x cdiv(N, bn)
 * programs, against float64: `what` names it in a failure. */
static void run_f16_matmul(const char *what, const char *src, int M, int N, int K, int bm, int bn) {
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
    trt_kernel *k = compile_text(&p, "matmul.tile", src, "mm", NULL, 0);
    trt_buffer ba = upload(ha, 2 * (size_t)(M * K)), bb = upload(hb, 2 * (size_t)(K * N)),
               bc = upload(c, sizeof(float) * (size_t)(M * N));
    trt_arg args[6] = {trt_buf(ba), trt_buf(bb), trt_buf(bc), trt_int(M), trt_int(N), trt_int(K)};
    launch(k, cdiv(M, bm), cdiv(N, bn), 1, args, 6);
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
                fail_msg("%s: c[%d][%d] = %.9g, want %.9g (tolerance %.3g) on %s", what, i, j,
                         c[i * N + j], want, tol, trt_device_name(dev));
        }
    free(a), free(b), free(ha), free(hb), free(c);
    drop(&p);
}

/* ---- wrapped columns ------------------------------------------------------
 * Triton's tutorial wraps b's columns past N into the matrix,
 * `(pid * BN + arange(0, BN)) % N`, along b's contiguous dim; with N a
 * multiple of 8 the axis analysis keeps each thread's 8 columns one 16-byte
 * run (lower/axisinfo.c, the remainder rule) and the loop is pipelined. N
 * = 40 is not a multiple of the tile: the second column tile's 32..63 load
 * 32..39 and 0..23, so a run claimed contiguous across the wrap would read
 * the wrong columns; the store masks the columns past N by the unwrapped
 * index. */
static const char wrap_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32) {\n"
    "    let n8 = multiple_of(N, 8);\n"
    "    let rm = program_id(0) * 32 + arange(0, 32);\n"
    "    let cn = program_id(1) * 32 + arange(0, 32);\n"
    "    let rn = cn % n8;\n"
    "    let rk = arange(0, 16);\n"
    "    var acc = zeros((32, 32), f32);\n"
    "    for k in range(0, K, 16, num_stages = 3) {\n"
    "        let x = load(a + rm[:, None] * K + (k + rk)[None, :], rm[:, None] < M & (k + rk)[None, :] < K, other = 0.0);\n"
    "        let y = load(b + (k + rk)[:, None] * n8 + rn[None, :], (k + rk)[:, None] < K, other = 0.0);\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * N + cn[None, :], acc, rm[:, None] < M & cn[None, :] < N);\n"
    "}\n";

static void test_wrapped_columns(void **state) {
    (void)state;
    run_f16_matmul("wrapped columns matmul", wrap_src, 32 + 5, 40, 3 * 16 + 5, 32, 32);
}

/* A 1 x 1 tile broadcast over the accumulator, in its mma layout (the
 * layout pass joins broadcasts to the accumulator's region; an mma tile's
 * dims may be 1): 0.75 added through it, and taken away as a scalar. */
static const char scalar_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32) {\n"
    "    let rm = program_id(0) * 32 + arange(0, 32);\n"
    "    let rn = program_id(1) * 32 + arange(0, 32);\n"
    "    let rk = arange(0, 16);\n"
    "    var acc = zeros((32, 32), f32);\n"
    "    for k in range(0, K, 16) {\n"
    "        let x = load(a + rm[:, None] * K + (k + rk)[None, :], rm[:, None] < M & (k + rk)[None, :] < K, other = 0.0);\n"
    "        let y = load(b + (k + rk)[:, None] * N + rn[None, :], (k + rk)[:, None] < K & rn[None, :] < N, other = 0.0);\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    acc = acc + (zeros((1, 1), f32) + 0.75) - 0.75;\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);\n"
    "}\n";

static void test_scalar_tile_broadcast(void **state) {
    (void)state;
    run_f16_matmul("1 x 1 tile broadcast over a matmul", scalar_src, 32 + 5, 32 + 3, 2 * 16 + 5, 32, 32);
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
    run_f16_matmul("dynamic shared memory matmul", dynsmem_src, 128 + 5, 128 + 3, 4 * 32 + 7, 128, 128);
}

/* ---- a pipelined loop run again by an outer loop -------------------------
 * The K loop split in two halves that an outer `for` (or `while`) runs one
 * after the other, the accumulator carried across: the second run's
 * prologue copies into the slots the first run read last, with no other
 * op between the two runs. Each half spans several trips, with a tail
 * masked at K; two stages, so every slot is read near the end of a run.
 * The emulator reports a read of one run and a write of the next that no
 * barrier separates. */
/* The kernel's parts around the outer loop: the K loop over one half,
 * and what comes before and after; the two kernels differ only in how the
 * outer loop is written. */
#define RERUN_HEAD                                                   \
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32) {\n" \
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"                \
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"                \
    "    let rk = arange(0, 64);\n"                                     \
    "    let half = (K + 127) / 128 * 64;\n"                            \
    "    var acc = zeros((64, 64), f32);\n"
#define RERUN_K_LOOP                                                                                                   \
    "        for k in range(h * half, h * half + half, 64, num_stages = 2) {\n"                                            \
    "            let x = load(a + rm[:, None] * K + (k + rk)[None, :], rm[:, None] < M & (k + rk)[None, :] < K, other = 0.0);\n" \
    "            let y = load(b + (k + rk)[:, None] * N + rn[None, :], (k + rk)[:, None] < K & rn[None, :] < N, other = 0.0);\n" \
    "            acc = dot(x, y, acc);\n"                                                                                  \
    "        }\n"
#define RERUN_TAIL                                                                        \
    "    store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);\n" \
    "}\n"
static const char rerun_for_src[] = RERUN_HEAD "    for h in range(0, 2) {\n" RERUN_K_LOOP "    }\n" RERUN_TAIL;
static const char rerun_while_src[] =
    RERUN_HEAD "    var h = 0;\n    while h < 2 {\n" RERUN_K_LOOP "        h = h + 1;\n    }\n" RERUN_TAIL;

static void test_pipelined_loop_rerun(void **state) {
    (void)state;
    run_f16_matmul("K loop run twice by a for", rerun_for_src, 64 + 5, 64 + 3, 6 * 64 + 7, 64, 64);
    run_f16_matmul("K loop run twice by a while", rerun_while_src, 64 + 5, 64 + 3, 6 * 64 + 7, 64, 64);
}

/* ---- accumulators moved between layouts -----------------------------------
 * An accumulator read from memory (converted from the load's layout to
 * the mma layout) and written as f32 and as f16 (converted back): moves
 * through shared memory (lower/cg_xthread.c's plan_move) in both
 * directions. Where two index bits (one at f32) are registers of both
 * sides' threads the plan gathers 16-byte pieces (acc_f32 at 128x128 with
 * 8 warps: the rounds' bits are a thread's on the mma side, both as writer
 * and as reader; acc_both at 64x64 with 2 warps: all three moves; with 4
 * warps the f32 ones); where not it keeps the column pairs (acc_both at
 * 64x64 with 8 warps: all three; with 4 warps the f16 one): both are
 * checked here. Small integers: every sum is exact, so the results compare
 * bit for bit. */
static const char moves_src[] =
    "kernel acc_f32(a: *f16, b: *f16, c: *f32, d: *f32, const BM: i32 = 64, const BN: i32 = 64) {\n"
    "    let rm = program_id(0) * BM + arange(0, BM);\n"
    "    let rn = arange(0, BN);\n"
    "    let rk = arange(0, 32);\n"
    "    let acc = dot(load(a + rm[:, None] * 32 + rk[None, :]), load(b + rk[:, None] * BN + rn[None, :]),\n"
    "                  load(c + rm[:, None] * BN + rn[None, :]));\n"
    "    store(d + rm[:, None] * BN + rn[None, :], acc);\n"
    "}\n"
    "kernel acc_both(a: *f16, b: *f16, c: *f32, d: *f32, e: *f16, const BM: i32 = 64, const BN: i32 = 64) {\n"
    "    let rm = program_id(0) * BM + arange(0, BM);\n"
    "    let rn = arange(0, BN);\n"
    "    let rk = arange(0, 32);\n"
    "    let acc = dot(load(a + rm[:, None] * 32 + rk[None, :]), load(b + rk[:, None] * BN + rn[None, :]),\n"
    "                  load(c + rm[:, None] * BN + rn[None, :]));\n"
    "    store(d + rm[:, None] * BN + rn[None, :], acc);\n"
    "    store(e + rm[:, None] * BN + rn[None, :], cast(acc, f16));\n"
    "}\n";

/* `kernel` of moves_src at bm x bn and `warps` over two row blocks. */
static void run_moves(const char *kernel, int bm, int bn, int warps) {
    enum { K = 32 };
    bool f16_out = !strcmp(kernel, "acc_both");
    int M = 2 * bm, N = bn;
    uint16_t *ha = malloc(2 * (size_t)(M * K)), *hb = malloc(2 * (size_t)(K * N)), *he = malloc(2 * (size_t)(M * N));
    float *c = malloc(sizeof(float) * (size_t)(M * N)), *d = poison_f32s(M * N);
    for (int i = 0; i < M * K; i++) put_f16(ha, (size_t)i, (float)(rand() % 9 - 4));
    for (int i = 0; i < K * N; i++) put_f16(hb, (size_t)i, (float)(rand() % 9 - 4));
    for (int i = 0; i < M * N; i++) c[i] = (float)(rand() % 201 - 100);
    memset(he, 0xff, 2 * (size_t)(M * N)); /* NaN */
    tilec_define defs[2] = {{"BM", bm}, {"BN", bn}};
    prog p;
    trt_kernel *k = compile_with(&p, "moves.tile", moves_src, kernel, defs, 2, warps);
    trt_buffer ba = upload(ha, 2 * (size_t)(M * K)), bb = upload(hb, 2 * (size_t)(K * N)),
               bc = upload(c, sizeof(float) * (size_t)(M * N)), bd = upload(d, sizeof(float) * (size_t)(M * N)),
               be = upload(he, 2 * (size_t)(M * N));
    trt_arg args[5] = {trt_buf(ba), trt_buf(bb), trt_buf(bc), trt_buf(bd), trt_buf(be)};
    launch(k, 2, 1, 1, args, f16_out ? 5 : 4);
    download(bd, d, sizeof(float) * (size_t)(M * N));
    download(be, he, 2 * (size_t)(M * N));
    OK(trt_free(dev, ba));
    OK(trt_free(dev, bb));
    OK(trt_free(dev, bc));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float want = c[i * N + j];
            for (int kk = 0; kk < K; kk++) want += get_f16(ha, (size_t)(i * K + kk)) * get_f16(hb, (size_t)(kk * N + j));
            if (!same_f32(d[i * N + j], want))
                fail_msg("%s %dx%d, %d warps: d[%d][%d] = %g, want %g on %s", kernel, bm, bn, warps, i, j, d[i * N + j],
                         want, trt_device_name(dev));
            if (f16_out && !same_f32(get_f16(he, (size_t)(i * N + j)), want))
                fail_msg("%s %dx%d, %d warps: e[%d][%d] = %g, want %g on %s", kernel, bm, bn, warps, i, j,
                         get_f16(he, (size_t)(i * N + j)), want, trt_device_name(dev));
        }
    free(ha), free(hb), free(he), free(c), free(d);
    drop(&p);
}

static void test_accumulator_moves(void **state) {
    (void)state;
    run_moves("acc_f32", 128, 128, 8);
    run_moves("acc_both", 128, 128, 4);
    static const int warps[] = {2, 4, 8};
    for (size_t w = 0; w < sizeof warps / sizeof warps[0]; w++) run_moves("acc_both", 64, 64, warps[w]);
}

/* ---- a dot's result as the next dot's a --------------------------------
 * Attention's p v, p computed from s = q k^T in registers: the layout pass
 * puts both dots' warps all along M where they cover it, and the
 * conversion of p to the a operand only renames registers (issue 20);
 * elsewhere (64 rows on 8 warps) p goes through shared memory. Small
 * integers: every sum and p's rounding to f16 are exact, so the results
 * compare bit for bit. */
static const char chain_src[] =
    "kernel chain(a: *f16, b: *f16, v: *f16, o: *f32, const BM: i32 = 64, const BN: i32 = 64,\n"
    "             const BD: i32 = 64) {\n"
    "    let rm = program_id(0) * BM + arange(0, BM);\n"
    "    let rk = arange(0, 16);\n"
    "    let rn = arange(0, BN);\n"
    "    let rd = arange(0, BD);\n"
    "    let s = dot(load(a + rm[:, None] * 16 + rk[None, :]), load(b + rk[:, None] * BN + rn[None, :]),\n"
    "                zeros((BM, BN), f32));\n"
    "    let p = cast(s * 2.0 - 1.0, f16);\n"
    "    let out = dot(p, load(v + rn[:, None] * BD + rd[None, :]), zeros((BM, BD), f32));\n"
    "    store(o + rm[:, None] * BD + rd[None, :], out);\n"
    "}\n";

static void run_chain(int bm, int bn, int bd, int warps) {
    enum { K = 16 };
    int M = 2 * bm;
    uint16_t *ha = malloc(2 * (size_t)(M * K)), *hb = malloc(2 * (size_t)(K * bn)), *hv = malloc(2 * (size_t)(bn * bd));
    float *o = poison_f32s(M * bd);
    for (int i = 0; i < M * K; i++) put_f16(ha, (size_t)i, (float)(rand() % 5 - 2));
    for (int i = 0; i < K * bn; i++) put_f16(hb, (size_t)i, (float)(rand() % 5 - 2));
    for (int i = 0; i < bn * bd; i++) put_f16(hv, (size_t)i, (float)(rand() % 5 - 2));
    tilec_define defs[3] = {{"BM", bm}, {"BN", bn}, {"BD", bd}};
    prog p;
    trt_kernel *k = compile_with(&p, "chain.tile", chain_src, "chain", defs, 3, warps);
    trt_buffer ba = upload(ha, 2 * (size_t)(M * K)), bb = upload(hb, 2 * (size_t)(K * bn)),
               bv = upload(hv, 2 * (size_t)(bn * bd)), bo = upload(o, sizeof(float) * (size_t)(M * bd));
    trt_arg args[4] = {trt_buf(ba), trt_buf(bb), trt_buf(bv), trt_buf(bo)};
    launch(k, 2, 1, 1, args, 4);
    download(bo, o, sizeof(float) * (size_t)(M * bd));
    OK(trt_free(dev, ba));
    OK(trt_free(dev, bb));
    OK(trt_free(dev, bv));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < bd; j++) {
            double want = 0;
            for (int n = 0; n < bn; n++) {
                double s = 0;
                for (int kk = 0; kk < K; kk++) s += get_f16(ha, (size_t)(i * K + kk)) * get_f16(hb, (size_t)(kk * bn + n));
                want += (s * 2 - 1) * get_f16(hv, (size_t)(n * bd + j));
            }
            if (!same_f32(o[i * bd + j], (float)want))
                fail_msg("chain %dx%dx%d, %d warps: o[%d][%d] = %g, want %g on %s", bm, bn, bd, warps, i, j,
                         o[i * bd + j], want, trt_device_name(dev));
        }
    free(ha), free(hb), free(hv), free(o);
    drop(&p);
}

static void test_dot_chain(void **state) {
    (void)state;
    run_chain(64, 64, 64, 4);   /* renamed: 4 warps of 16 rows */
    run_chain(128, 32, 64, 8);  /* renamed: 8 warps of 16 rows */
    run_chain(128, 64, 32, 4);  /* renamed, 2 row blocks a warp */
    run_chain(64, 64, 32, 8);   /* 64 rows on 8 warps: through shared memory */
}

/* ---- reductions of a dot's result ---------------------------------------
 * Row and column max, min and sum of an accumulator stay in registers
 * (the mma layout's slices, issue 20): within a thread, over the lanes of
 * a row group or column, then over warps through shared memory where
 * warps split the dim (wpc [2, 2] at 64x64 on 4 warps, [1, 4] at 16x64,
 * warps wrapping over 16 columns at 16x16); a row max expanded back onto
 * the scores (a rename), a slice reduced to a scalar, and reductions along
 * a dim of 1 of a row or column taking part in the accumulator's math
 * (each element counted once). Small integers: every sum is
 * exact, so the results compare bit for bit. */
static const char reduce_src[] =
    "kernel red(a: *f16, b: *f16, rows: *f32, cols: *f32, tot: *f32, const BM: i32 = 64, const BN: i32 = 64) {\n"
    "    let rm = arange(0, BM);\n"
    "    let rk = arange(0, 16);\n"
    "    let rn = arange(0, BN);\n"
    "    let s = dot(load(a + rm[:, None] * 16 + rk[None, :]), load(b + rk[:, None] * BN + rn[None, :]),\n"
    "                zeros((BM, BN), f32));\n"
    "    let mx = max(s, axis = 1);\n"
    "    store(rows + rm, mx);\n"
    "    store(rows + BM + rm, min(s, axis = 1));\n"
    "    store(rows + 2 * BM + rm, sum(s - mx[:, None], axis = 1));\n"
    "    let e = mx[:, None] * 0.5;\n"
    "    store(rows + 3 * BM + rm, sum(e, axis = 1));\n"
    "    store(rows + 4 * BM + rm, max(s + e, axis = 1));\n"
    "    let cs = sum(s, axis = 0);\n"
    "    store(cols + rn, max(s, axis = 0));\n"
    "    store(cols + BN + rn, cs);\n"
    "    let f = cs[None, :] * 2.0;\n"
    "    store(cols + 2 * BN + rn, max(f, axis = 0));\n"
    "    store(cols + 3 * BN + rn, min(s - f, axis = 0));\n"
    "    store(tot, sum(mx, axis = 0));\n"
    "}\n";

static void run_reduce(int bm, int bn, int warps) {
    enum { K = 16 };
    uint16_t *ha = malloc(2 * (size_t)(bm * K)), *hb = malloc(2 * (size_t)(K * bn));
    float *rows = poison_f32s(5 * bm), *cols = poison_f32s(4 * bn), *tot = poison_f32s(1);
    float *want_r = malloc(sizeof(float) * 5 * (size_t)bm), *want_c = malloc(sizeof(float) * 4 * (size_t)bn);
    double *sv = malloc(sizeof(double) * (size_t)(bm * bn));
    for (int i = 0; i < bm * K; i++) put_f16(ha, (size_t)i, (float)(rand() % 7 - 3));
    for (int i = 0; i < K * bn; i++) put_f16(hb, (size_t)i, (float)(rand() % 7 - 3));
    tilec_define defs[2] = {{"BM", bm}, {"BN", bn}};
    prog p;
    trt_kernel *k = compile_with(&p, "red.tile", reduce_src, "red", defs, 2, warps);
    trt_buffer ba = upload(ha, 2 * (size_t)(bm * K)), bb = upload(hb, 2 * (size_t)(K * bn)),
               br = upload(rows, sizeof(float) * 5 * (size_t)bm), bc = upload(cols, sizeof(float) * 4 * (size_t)bn),
               bt = upload(tot, sizeof(float));
    trt_arg args[5] = {trt_buf(ba), trt_buf(bb), trt_buf(br), trt_buf(bc), trt_buf(bt)};
    launch(k, 1, 1, 1, args, 5);
    download(br, rows, sizeof(float) * 5 * (size_t)bm);
    download(bc, cols, sizeof(float) * 4 * (size_t)bn);
    download(bt, tot, sizeof(float));
    OK(trt_free(dev, ba));
    OK(trt_free(dev, bb));
    for (int i = 0; i < bm; i++)
        for (int j = 0; j < bn; j++) {
            double x = 0;
            for (int kk = 0; kk < K; kk++) x += get_f16(ha, (size_t)(i * K + kk)) * get_f16(hb, (size_t)(kk * bn + j));
            sv[i * bn + j] = x;
        }
    double total = 0;
    for (int i = 0; i < bm; i++) {
        double mx = -INFINITY, mn = INFINITY, sum = 0;
        for (int j = 0; j < bn; j++) mx = fmax(mx, sv[i * bn + j]), mn = fmin(mn, sv[i * bn + j]);
        for (int j = 0; j < bn; j++) sum += sv[i * bn + j] - mx;
        want_r[i] = (float)mx, want_r[bm + i] = (float)mn, want_r[2 * bm + i] = (float)sum;
        want_r[3 * bm + i] = (float)(0.5 * mx), want_r[4 * bm + i] = (float)(1.5 * mx);
        total += mx;
    }
    for (int j = 0; j < bn; j++) {
        double mx = -INFINITY, sum = 0, mn = INFINITY;
        for (int i = 0; i < bm; i++) mx = fmax(mx, sv[i * bn + j]), sum += sv[i * bn + j];
        for (int i = 0; i < bm; i++) mn = fmin(mn, sv[i * bn + j] - 2 * sum);
        want_c[j] = (float)mx, want_c[bn + j] = (float)sum, want_c[2 * bn + j] = (float)(2 * sum);
        want_c[3 * bn + j] = (float)mn;
    }
    char what[80];
    snprintf(what, sizeof what, "mma reductions %dx%d, %d warps: rows", bm, bn, warps);
    expect_f32(what, 5 * bm, rows, want_r);
    snprintf(what, sizeof what, "mma reductions %dx%d, %d warps: columns", bm, bn, warps);
    expect_f32(what, 4 * bn, cols, want_c);
    if (!same_f32(tot[0], (float)total))
        fail_msg("mma reductions %dx%d, %d warps: total %g, want %g on %s", bm, bn, warps, tot[0], total, trt_device_name(dev));
    free(ha), free(hb), free(rows), free(cols), free(tot), free(want_r), free(want_c), free(sv);
    drop(&p);
}

static void test_mma_reductions(void **state) {
    (void)state;
    run_reduce(64, 64, 4);  /* wpc [2, 2]: two warps along each dim */
    run_reduce(16, 64, 4);  /* [1, 4]: four along the rows */
    run_reduce(16, 16, 4);  /* [1, 4] over 16 columns: warps 2 and 3 hold copies */
    run_reduce(128, 32, 8); /* several row blocks a warp */
    run_reduce(32, 32, 1);
}

/* ---- a dot's result transposed ----------------------------------------------
 * Found by tests/fuzz/difftest.c: trans() of an accumulator (mma layout)
 * moves it through the scratch area by row-major index, but the shared
 * memory plan gave that permute no scratch, so code generation refused
 * the kernel ("the kernel's smem scratch is smaller than this move
 * needs"). Small integers: every sum is exact, compared bit for bit. */
static const char trans_src[] =
    "kernel tr(a: *f16, b: *f16, o: *f32, const B: i32 = 32) {\n"
    "    let r = arange(0, B);\n"
    "    let off = r[:, None] * B + r[None, :];\n"
    "    store(o + off, trans(dot(load(a + off), load(b + off))));\n"
    "}\n";

static void test_dot_transposed(void **state) {
    (void)state;
    static const int cases[][2] = {{16, 1}, {32, 1}, {32, 4}, {64, 8}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int bs = cases[c][0], warps = cases[c][1], n = bs * bs;
        uint16_t *ha = malloc(2 * (size_t)n), *hb = malloc(2 * (size_t)n);
        float *o = poison_f32s(n);
        for (int i = 0; i < n; i++) put_f16(ha, (size_t)i, (float)(rand() % 9 - 4)), put_f16(hb, (size_t)i, (float)(rand() % 9 - 4));
        tilec_define defs[1] = {{"B", bs}};
        prog p;
        trt_kernel *k = compile_with(&p, "tr.tile", trans_src, "tr", defs, 1, warps);
        trt_buffer ba = upload(ha, 2 * (size_t)n), bb = upload(hb, 2 * (size_t)n), bo = upload(o, sizeof(float) * (size_t)n);
        trt_arg args[3] = {trt_buf(ba), trt_buf(bb), trt_buf(bo)};
        launch(k, 1, 1, 1, args, 3);
        download(bo, o, sizeof(float) * (size_t)n);
        OK(trt_free(dev, ba));
        OK(trt_free(dev, bb));
        for (int i = 0; i < bs; i++)
            for (int j = 0; j < bs; j++) {
                double want = 0; /* o[i][j] = (a b)[j][i] */
                for (int kk = 0; kk < bs; kk++) want += get_f16(ha, (size_t)(j * bs + kk)) * get_f16(hb, (size_t)(kk * bs + i));
                if (!same_f32(o[i * bs + j], (float)want))
                    fail_msg("trans(dot) %dx%d, %d warps: o[%d][%d] = %g, want %g on %s", bs, bs, warps, i, j, o[i * bs + j],
                             want, trt_device_name(dev));
            }
        free(ha), free(hb), free(o);
        drop(&p);
    }
}

/* ---- an operand computed in a loop, staged through shared memory -------
 * x * 2 is neither a ring's slot nor defined before the loop, so
 * lower/stage_operands.c (case 3) stores it to a buffer of its own on
 * every trip: barrier (the last trip's readers are done), local_store,
 * barrier, local_load. b's block is loaded once, before the loop, so no
 * other barrier in the trip separates one trip's reads of the buffer from
 * the next trip's writes: without the first barrier the emulator reports
 * the race (a warp rewriting the buffer while another still reads it), and
 * on a GPU the product would mix two trips' values. The loop is not
 * pipelined (the loads take a run-time K as stride). */
static void test_operand_staged_in_a_loop(void **state) {
    (void)state;
    static const char src[] =
        "kernel sdot(a: *f16, b: *f16, c: *f32, K: i32, const BM: i32 = 32, const BN: i32 = 32, const BK: i32 = 16) {\n"
        "    let rm = arange(0, BM);\n"
        "    let rn = arange(0, BN);\n"
        "    let rk = arange(0, BK);\n"
        "    let y = load(b + rk[:, None] * BN + rn[None, :]);\n"
        "    var acc = zeros((BM, BN), f32);\n"
        "    for k in range(0, K, BK) {\n"
        "        let x = load(a + rm[:, None] * K + (k + rk)[None, :]);\n"
        "        acc = dot(x * 2.0, y, acc);\n"
        "    }\n"
        "    store(c + rm[:, None] * BN + rn[None, :], acc);\n"
        "}\n";
    enum { BM = 32, BN = 32, BK = 16, K = 5 * BK };
    const int warps[] = {0, 1, 4};
    uint16_t *ha = malloc(2 * BM * K), *hb = malloc(2 * BK * BN);
    float *a = malloc(sizeof(float) * BM * K), *b = malloc(sizeof(float) * BK * BN);
    for (int i = 0; i < BM * K; i++) put_f16(ha, (size_t)i, rand_f32() / 1000.0f), a[i] = get_f16(ha, (size_t)i);
    for (int i = 0; i < BK * BN; i++) put_f16(hb, (size_t)i, rand_f32() / 1000.0f), b[i] = get_f16(hb, (size_t)i);
    for (size_t w = 0; w < sizeof warps / sizeof warps[0]; w++) {
        prog p;
        trt_kernel *k = compile_with(&p, "sdot.tile", src, "sdot", NULL, 0, warps[w]);
        float *c = poison_f32s(BM * BN);
        trt_buffer ba = upload(ha, 2 * BM * K), bb = upload(hb, 2 * BK * BN), bc = upload(c, sizeof(float) * BM * BN);
        trt_arg args[4] = {trt_buf(ba), trt_buf(bb), trt_buf(bc), trt_int(K)};
        launch(k, 1, 1, 1, args, 4);
        download(bc, c, sizeof(float) * BM * BN);
        trt_free(dev, ba), trt_free(dev, bb), trt_free(dev, bc);
        for (int i = 0; i < BM; i++)
            for (int j = 0; j < BN; j++) {
                double want = 0, mag = 0;
                for (int kk = 0; kk < K; kk++) {
                    double prod = 2.0 * a[i * K + kk] * b[(kk % BK) * BN + j]; /* x * 2 is exact in f16 */
                    want += prod;
                    mag += fabs(prod);
                }
                double tol = K * ldexp(1.0, -23) * mag, got = c[i * BN + j];
                if (!(fabs(got - want) <= tol))
                    fail_msg("operand staged in a loop, %d warps: c[%d][%d] = %.9g, want %.9g (tolerance %.3g) on %s",
                             warps[w], i, j, got, want, tol, trt_device_name(dev));
            }
        free(c);
        drop(&p);
    }
    free(ha), free(hb), free(a), free(b);
}

/* ---- a dot_ieee expanded to 3-D ---------------------------------------------
 * Found by tests/fuzz/difftest.c (tests/fuzz/found/dot_ieee_expand_dims.tile
 * was its reproducer): an FMA dot's result taken to 3-D (d[:, :, None], or
 * a reduction along the new dim) got the 3-D consumer's slice layout
 * backwards, which the FMA dot cannot have: the verifier stopped the
 * compile for the GPU. Its result now stays blocked (lower/layout.c).
 * dot_ieee adds its exact products along k in order, one fma each, on
 * every device: compared bit for bit with that sum in C. */
static const char ieee_expand_src[] =
    "kernel expand(a: *f32, b: *f32, out: *f32) {\n"
    "    let r = arange(0, 32);\n"
    "    let c = arange(0, 16);\n"
    "    let d = dot(load(a + r[:, None] * 32 + r[None, :]), load(b + r[:, None] * 16 + c[None, :]), input_precision = \"ieee\");\n"
    "    store(out + (r[:, None] * 16 + c[None, :])[:, :, None], d[:, :, None]);\n"
    "}\n"
    "kernel reduce_new_dim(a: *f32, b: *f32, out: *f32) {\n"
    "    let r = arange(0, 32);\n"
    "    let c = arange(0, 16);\n"
    "    let d = dot(load(a + r[:, None] * 32 + r[None, :]), load(b + r[:, None] * 16 + c[None, :]), input_precision = \"ieee\");\n"
    "    store(out + r[:, None] * 16 + c[None, :], max(broadcast_to(expand_dims(d, 2), (32, 16, 2)), axis = 2));\n"
    "}\n";

static void test_dot_ieee_expanded(void **state) {
    (void)state;
    enum { M = 32, K = 32, N = 16 };
    float *a = rand_f32s(M * K), *b = rand_f32s(K * N), want[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float acc = 0;
            for (int k = 0; k < K; k++) acc = fmaf(a[i * K + k], b[k * N + j], acc);
            want[i * N + j] = acc;
        }
    static const char *const kernels[] = {"expand", "reduce_new_dim"};
    for (int w = 1; w <= 4; w *= 2)
        for (int kk = 0; kk < 2; kk++) {
            prog p;
            trt_kernel *k = compile_with(&p, "ieee_expand.tile", ieee_expand_src, kernels[kk], NULL, 0, w);
            float *o = poison_f32s(M * N);
            trt_buffer ba = upload(a, sizeof(float) * M * K), bb = upload(b, sizeof(float) * K * N),
                       bo = upload(o, sizeof(float) * M * N);
            trt_arg args[3] = {trt_buf(ba), trt_buf(bb), trt_buf(bo)};
            launch(k, 1, 1, 1, args, 3);
            download(bo, o, sizeof(float) * M * N); /* and frees bo */
            OK(trt_free(dev, ba));
            OK(trt_free(dev, bb));
            for (int i = 0; i < M * N; i++)
                if (memcmp(&o[i], &want[i], sizeof(float)))
                    fail_msg("%s, %d warps: out[%d] = %.9g, want %.9g on %s", kernels[kk], w, i, o[i], want[i],
                             trt_device_name(dev));
            free(o);
            drop(&p);
        }
    free(a), free(b);
}

HARNESS_MAIN(
    cmocka_unit_test(test_dot),
    cmocka_unit_test(test_dot_result_uses),
    cmocka_unit_test(test_pipelined_carried_pointers),
    cmocka_unit_test(test_wrapped_columns),
    cmocka_unit_test(test_scalar_tile_broadcast),
    cmocka_unit_test(test_dynamic_shared_memory),
    cmocka_unit_test(test_pipelined_loop_rerun),
    cmocka_unit_test(test_accumulator_moves),
    cmocka_unit_test(test_dot_chain),
    cmocka_unit_test(test_mma_reductions),
    cmocka_unit_test(test_dot_transposed),
    cmocka_unit_test(test_operand_staged_in_a_loop),
    cmocka_unit_test(test_dot_ieee_expanded))

