/* test_runtime_devices_tma_inference.c - lower/tma_copies.c's inference
 * of tensor maps from a pipelined loop's pointer loads (issue 22), on
 * kernels whose loads a bulk tensor copy must read exactly as the pointer
 * loads do: masked-off elements 0, the same elements at the same places.
 * Each kernel is a 64 x 64 x 64 f16 matmul tile (wgmma-sized, 4 warps:
 * on sm_90a its rings are candidates for tensor maps) computing
 * C = A_eff B_eff^T, where A_eff and B_eff are what its loads read; each
 * case states them (a host reference in float64) and checks every
 * element of C. On cpu (the interpreter, the reference semantics) and on
 * emu:sm_90a (the emulator on the sm_90a code, where the pass fires):
 *
 *   test_runtime_devices_tma_inference cpu|emu|emu:sm_90a|cuda
 *
 * Two legal launches the copy engine cannot take, refused on emu:sm_90a
 * (and a GPU) with TRT_ERR_ARGUMENTS and a message naming the argument,
 * while cpu and sm_80 compute them: test_row_stride_zero (a row stride of
 * 0 with a box of 64 rows: the copy engine takes no stride 0) and
 * test_k_zero (a mask-bound map dim of 0 elements; the loop makes no
 * copy, but the map is made at launch). A documented limitation of the
 * sm_90a path (docs/language.md), left for issue 22. */
#include "device_harness.h"

enum { TB = 64 }; /* the tile: 64 x 64, k steps of 64 */

/* What a case's loads read: the element of A (of B) at row i, column k of
 * the product, as an index into the host array, or -1 for 0. */
typedef long (*elem_fn)(int i, int k, const int64_t *ints);

typedef struct mm_run {
    const char *what, *src;
    int M, N, K;         /* C is M x N (row stride N), the sum over k < K */
    long a_len, b_len;   /* elements of the host arrays */
    elem_fn a_at, b_at;
    int64_t ints[6];     /* the kernel's integer arguments after a, b, c */
    unsigned nints;
    const tilec_define *defs; /* the kernel's constants, or NULL */
    size_t ndefs;
    bool a_f32; /* a: *f32 (holding f16 values) */
    long a_off; /* a points this many elements into its buffer (a_at counts from the buffer's start) */
} mm_run;

/* over gx x gy programs; `refused` (or NULL): where tensor maps read the
 * loads (sm_90a), the launch's error instead, saying this */
static void run_mm_refusable(const mm_run *r, uint32_t gx, uint32_t gy, const char *refused) {
    uint16_t *ha = malloc(2 * (size_t)r->a_len), *hb = malloc(2 * (size_t)r->b_len);
    for (long i = 0; i < r->a_len; i++) {
        put_f16(ha, (size_t)i, rand_f32() / 8.0f);
        if (!ha[i]) put_f16(ha, (size_t)i, 0.5f);
    }
    for (long i = 0; i < r->b_len; i++) {
        put_f16(hb, (size_t)i, rand_f32() / 8.0f);
        if (!hb[i]) put_f16(hb, (size_t)i, -0.25f);
    }
    int M = r->M, N = r->N;
    float *c = poison_f32s(M * N);
    prog p;
    trt_kernel *k = compile_with(&p, "tma.tile", r->src, "mm", r->defs, r->ndefs, 4);
    float *fa = malloc(sizeof(float) * (size_t)r->a_len);
    for (long i = 0; i < r->a_len; i++) fa[i] = get_f16(ha, (size_t)i);
    trt_buffer ba = r->a_f32 ? upload(fa, sizeof(float) * (size_t)r->a_len) : upload(ha, 2 * (size_t)r->a_len), bb = upload(hb, 2 * (size_t)r->b_len),
               bc = upload(c, sizeof(float) * (size_t)(M * N));
    trt_arg args[9] = {trt_buf_at(ba, (size_t)r->a_off * (r->a_f32 ? 4 : 2)), trt_buf(bb), trt_buf(bc)};
    for (unsigned i = 0; i < r->nints; i++) args[3 + i] = trt_int(r->ints[i]);
    trt_status st = trt_launch(k, gx, gy, 1, args, 3 + r->nints);
    if (st != TRT_OK && refused && strstr(trt_last_error(dev), "through a tensor map")) {
        if (st != TRT_ERR_ARGUMENTS || !strstr(trt_last_error(dev), refused))
            fail_msg("%s: %s: %s; want TRT_ERR_ARGUMENTS saying \"%s\"", r->what, trt_status_name(st),
                     trt_last_error(dev), refused);
        print_message("%s: refused: %s\n", r->what, trt_last_error(dev));
        OK(trt_free(dev, ba));
        OK(trt_free(dev, bb));
        OK(trt_free(dev, bc));
        free(ha), free(hb), free(c), free(fa);
        drop(&p);
        return;
    }
    if (st != TRT_OK) fail_msg("%s: launch: %s: %s", r->what, trt_status_name(st), trt_last_error(dev));
    if (kind != TRT_DEVICE_CPU) OK(trt_sync(dev));
    download(bc, c, sizeof(float) * (size_t)(M * N));
    OK(trt_free(dev, ba));
    OK(trt_free(dev, bb));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0, mag = 0;
            for (int kk = 0; kk < r->K; kk++) {
                long ai = r->a_at(i, kk, r->ints), bi = r->b_at(j, kk, r->ints);
                double x = ai < 0 ? 0 : get_f16(ha, (size_t)ai), y = bi < 0 ? 0 : get_f16(hb, (size_t)bi);
                want += x * y, mag += fabs(x * y);
            }
            double tol = r->K * ldexp(1.0, -22) * mag + 1e-30;
            if (!(fabs(c[i * N + j] - want) <= tol))
                fail_msg("%s: c[%d][%d] = %.9g, want %.9g (tolerance %.3g) on %s", r->what, i, j, c[i * N + j], want,
                         tol, trt_device_name(dev));
        }
    free(ha), free(hb), free(c), free(fa);
    drop(&p);
}

static void run_mm_grid(const mm_run *r, uint32_t gx, uint32_t gy) { run_mm_refusable(r, gx, gy, NULL); }

static void run_mm(const mm_run *r) { run_mm_grid(r, cdiv(r->M, TB), cdiv(r->N, TB)); }

/* ---- a scalar predicate in the mask -------------------------------------
 * `load(..., k < kon, other = 0.0)`: a condition of the trip that is not
 * "this trip exists". Where it is false the load reads zeros; a tma_load
 * whose predicate is false copies nothing and arrives on no mbarrier. */
static const char pred_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, K: i32, kon: i32, stride_am: i64, stride_bn: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(stride_am, 8);\n"
    "    let sbn = multiple_of(stride_bn, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(0, K, 64, num_stages = 3) {\n"
    "        let on = k < kon;\n"
    "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :], on, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :]));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * 64 + rn[None, :], acc);\n"
    "}\n";

/* ints: K, kon, stride_am, stride_bn */
static long pred_a(int i, int k, const int64_t *v) { return k / TB * TB < v[1] ? i * v[2] + k : -1; }
static long pred_b(int j, int k, const int64_t *v) { return j * v[3] + k; }

static void test_scalar_predicate(void **state) {
    (void)state;
    /* 4 trips, A's loads on for the first 2 only */
    mm_run r = {"a scalar predicate", pred_src, 64, 64, 256, 64 * 256, 64 * 256, pred_a, pred_b,
                {256, 128, 256, 256}, 4, NULL, 0, false, 0};
    run_mm(&r);
}

/* ---- a coordinate below 0, an address inside the tensor -----------------
 * `a + (rm + 1) * stride_am + (k + ks) - 8`: the row coordinate rm + 1
 * and the column coordinate k - 8, below 0 in the first trip, where the
 * loads read the last 8 elements of the row before: memory of a, a legal
 * program. */
static const char shifted_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, K: i32, stride_am: i64, stride_bn: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(stride_am, 8);\n"
    "    let sbn = multiple_of(stride_bn, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(0, K, 64, num_stages = 3) {\n"
    "        let x = load(a + (rm[:, None] + 1) * sam + (k + ks)[None, :] - 8);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :]));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * 64 + rn[None, :], acc);\n"
    "}\n";

/* the same, A's rows where they are */
static const char plain_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, K: i32, stride_am: i64, stride_bn: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(stride_am, 8);\n"
    "    let sbn = multiple_of(stride_bn, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(0, K, 64, num_stages = 3) {\n"
    "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :]);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :]));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * 64 + rn[None, :], acc);\n"
    "}\n";

/* ints: K, stride_am, stride_bn */
static long shifted_a(int i, int k, const int64_t *v) { return (i + 1) * v[1] + k - 8; }
static long plain_a(int i, int k, const int64_t *v) { return i * v[1] + k; }
static long plain_b(int j, int k, const int64_t *v) { return j * v[2] + k; }

static void test_negative_coordinate(void **state) {
    (void)state;
    mm_run r = {"a coordinate below 0", shifted_src, 64, 64, 128, 65 * 128, 64 * 128, shifted_a, plain_b,
                {128, 128, 128}, 3, NULL, 0, false, 0};
    run_mm(&r);
}

/* ---- a row stride of 0 ------------------------------------------------
 * stride_am = 0 (a multiple of 8): every row of A is a's first row, a
 * broadcast operand, a legal program. */
static long bcast_a(int i, int k, const int64_t *v) { (void)i, (void)v; return k; }

static void test_row_stride_zero(void **state) {
    (void)state;
    mm_run r = {"a row stride of 0", plain_src, 64, 64, 128, 128, 64 * 128, bcast_a, plain_b, {128, 0, 128}, 3, NULL, 0, false, 0};
    run_mm_refusable(&r, 1, 1, "its stride 1 is 0 bytes");
}

/* ---- masks as maps' sizes: le, ge and gt forms, tails -------------------
 * M, N and K not multiples of the tile, each bounded by a compare of
 * another form; A row-major, and A stored transposed (its contiguous
 * dim M). C is 128 x 128 (2 x 2 programs). ints: M, N, K, sa, sb */
static const char masks_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, stride_am: i64, stride_bn: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(stride_am, 8);\n"
    "    let sbn = multiple_of(stride_bn, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(0, K, 64, num_stages = 3) {\n"
    "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] <= K - 1 & M > rm[:, None], other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], N >= rn[:, None] + 1 & ks[None, :] < K - k, other = 0.0));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * 128 + rn[None, :], acc);\n"
    "}\n";
static const char masks_t_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, stride_ak: i64, stride_bn: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sak = multiple_of(stride_ak, 8);\n"
    "    let sbn = multiple_of(stride_bn, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(0, K, 64, num_stages = 3) {\n"
    "        let x = load(a + rm[:, None] + (k + ks)[None, :] * sak, (k + ks)[None, :] < K & rm[:, None] < M, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], rn[:, None] < N & (k + ks)[None, :] < K, other = 0.0));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * 128 + rn[None, :], acc);\n"
    "}\n";

static long masks_a(int i, int k, const int64_t *v) { return i < v[0] && k < v[2] ? i * v[3] + k : -1; }
static long masks_t_a(int i, int k, const int64_t *v) { return i < v[0] && k < v[2] ? k * v[3] + i : -1; }
static long masks_b(int j, int k, const int64_t *v) { return j < v[1] && k < v[2] ? j * v[4] + k : -1; }

static void test_mask_forms(void **state) {
    (void)state;
    mm_run r = {"le, ge and gt masks", masks_src, 128, 128, 150, 100 * 160, 70 * 160, masks_a, masks_b,
                {100, 70, 150, 160, 160}, 5, NULL, 0, false, 0};
    run_mm(&r);
    mm_run t = {"A transposed, masked", masks_t_src, 128, 128, 150, 150 * 104, 70 * 160, masks_t_a, masks_b,
                {100, 70, 150, 104, 160}, 5, NULL, 0, false, 0};
    run_mm(&t);
}

/* ---- the ring re-run by an outer loop ------------------------------------
 * Each program computes two column tiles, one an outer trip, each with the
 * pipelined loop (its mbarriers made again, its phase from 0): K of 5
 * trips (the phase flips, and the slots end mid-ring) and of 1 (fewer
 * than the stages). ints: K, sa, sb; C is 64 x 128. */
static const char nested_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, K: i32, stride_am: i64, stride_bn: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(stride_am, 8);\n"
    "    let sbn = multiple_of(stride_bn, 8);\n"
    "    for t in range(0, 2) {\n"
    "        let rn = t * 64 + arange(0, 64);\n"
    "        var acc = zeros((64, 64), f32);\n"
    "        for k in range(0, K, 64, num_stages = 3) {\n"
    "            let x = load(a + rm[:, None] * sam + (k + ks)[None, :]);\n"
    "            let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :]));\n"
    "            acc = dot(x, y, acc);\n"
    "        }\n"
    "        store(c + rm[:, None] * 128 + rn[None, :], acc);\n"
    "    }\n"
    "}\n";

static void test_nested_loops(void **state) {
    (void)state;
    mm_run r = {"an outer loop, 5 trips", nested_src, 64, 128, 320, 64 * 320, 128 * 320, plain_a, plain_b,
                {320, 320, 320}, 3, NULL, 0, false, 0};
    run_mm_grid(&r, 1, 1);
    mm_run q = {"an outer loop, 1 trip", nested_src, 64, 128, 64, 64 * 64, 128 * 64, plain_a, plain_b,
                {64, 64, 64}, 3, NULL, 0, false, 0};
    run_mm_grid(&q, 1, 1);
}

/* ---- two pipelined loops, one after the other ----------------------------
 * The second loop's rings and mbarriers may take the bytes of the first's
 * (smem_plan): C = A[:, :K] B[:, :K]^T + A[:, K:2K] B[:, K:2K]^T, each
 * half its own loop (3 trips each); the second loop's coordinates start at
 * K, a parameter (not a batch dim: no multiple_of). ints: K, sa, sb */
static const char two_loops_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, K: i32, stride_am: i64, stride_bn: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(stride_am, 8);\n"
    "    let sbn = multiple_of(stride_bn, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(0, K, 64, num_stages = 3) {\n"
    "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :]);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :]));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    var acc2 = zeros((64, 64), f32);\n"
    "    for k in range(K, 2 * K, 64, num_stages = 4) {\n"
    "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :]);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :]));\n"
    "        acc2 = dot(x, y, acc2);\n"
    "    }\n"
    "    store(c + rm[:, None] * 64 + rn[None, :], acc + acc2);\n"
    "}\n";

static void test_two_loops(void **state) {
    (void)state;
    mm_run r = {"two loops", two_loops_src, 64, 64, 384, 64 * 384, 64 * 384, plain_a, plain_b, {192, 384, 384}, 3, NULL, 0, false, 0};
    run_mm(&r);
}

/* ---- a batch dim: program_id(2) times a stride, 0 or not ------------------
 * `a + (pid2 + 1) * sab + ...`: the batch dim's coordinate pid2 + 1 (two
 * terms of one parameter); with sab = 0 A is broadcast. B is one matrix.
 * ints: K, sa, sb, sab */
static const char batch_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, K: i32, stride_am: i64, stride_bn: i64, stride_ab: i64) {\n"
    "    let rm = arange(0, 64);\n"
    "    let rn = arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(stride_am, 8);\n"
    "    let sbn = multiple_of(stride_bn, 8);\n"
    "    let sab = multiple_of(stride_ab, 8);\n"
    "    let bt = program_id(0);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(0, K, 64, num_stages = 3) {\n"
    "        let x = load(a + (bt + 1) * sab + rm[:, None] * sam + (k + ks)[None, :]);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :]));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + bt * 4096 + rm[:, None] * 64 + rn[None, :], acc);\n"
    "}\n";

/* C's rows: batch i / 64, row i % 64 */
static long batch_a(int i, int k, const int64_t *v) { return (i / 64 + 1) * v[3] + i % 64 * v[1] + k; }

static void test_batch(void **state) {
    (void)state;
    mm_run r = {"a batch dim", batch_src, 128, 64, 128, 3 * 64 * 136, 64 * 128, batch_a, plain_b,
                {128, 136, 128, 64 * 136}, 4, NULL, 0, false, 0};
    run_mm_grid(&r, 2, 1);
    mm_run z = {"a batch dim of stride 0", batch_src, 128, 64, 128, 64 * 136, 64 * 128, batch_a, plain_b,
                {128, 136, 128, 0}, 4, NULL, 0, false, 0};
    run_mm_grid(&z, 2, 1);
}

/* ---- K pieces of 16, 32, 64 and 128 f16 ---------------------------------
 * Rows of 32, 64 and 128 bytes (the 32-, 64- and 128-byte swizzles) and of
 * 256 (two boxes side by side a slot), with M, N and K tails. ints as
 * masks_src's. */
static const char bk_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, stride_am: i64, stride_bn: i64,\n"
    "          const BK: i32 = 64, const NS: i32 = 3) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, BK);\n"
    "    let sam = multiple_of(stride_am, 8);\n"
    "    let sbn = multiple_of(stride_bn, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(0, K, BK, num_stages = NS) {\n"
    "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] < K & rm[:, None] < M, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K & rn[:, None] < N, other = 0.0));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * 128 + rn[None, :], acc);\n"
    "}\n";

static void test_k_pieces(void **state) {
    (void)state;
    static const int bks[] = {16, 32, 64, 128};
    for (unsigned i = 0; i < sizeof bks / sizeof bks[0]; i++) {
        tilec_define d[1] = {{"BK", bks[i]}};
        char what[32];
        snprintf(what, sizeof what, "BK = %d", bks[i]);
        mm_run r = {what, bk_src, 128, 128, 300, 100 * 304, 70 * 304, masks_a, masks_b, {100, 70, 300, 304, 304}, 5,
                    d, 1, false, 0};
        run_mm(&r);
    }
}

/* ---- B stored K x N (its rows K), A of f32 cast to f16 -------------------
 * B's ring has the rows along K: the K tail bounds map dim 1. A's f32
 * ring (32-element boxes) is read into registers and cast before the dot.
 * ints: M, N, K, sa, sb (B's row stride: along K). */
static const char kn_src[] =
    "kernel mm(a: *f32, b: *f16, c: *f32, M: i32, N: i32, K: i32, stride_am: i64, stride_bk: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(stride_am, 8);\n"
    "    let sbk = multiple_of(stride_bk, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(0, K, 64, num_stages = 3) {\n"
    "        let x = cast(load(a + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] < K & rm[:, None] < M, other = 0.0), f16);\n"
    "        let y = load(b + (k + ks)[:, None] * sbk + rn[None, :], (k + ks)[:, None] < K & rn[None, :] < N, other = 0.0);\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * 128 + rn[None, :], acc);\n"
    "}\n";

static long kn_b(int j, int k, const int64_t *v) { return j < v[1] && k < v[2] ? k * v[4] + j : -1; }

static void test_b_k_rows_a_f32(void **state) {
    (void)state;
    mm_run r = {"B K x N, A f32", kn_src, 128, 128, 150, 100 * 152, 150 * 72, masks_a, kn_b, {100, 70, 150, 152, 72}, 5,
                NULL, 0, true, 0};
    run_mm(&r);
}

/* ---- K = 0 -----------------------------------------------------------------
 * No trips, C = 0: a legal launch, whose K-tail mask makes K the size of
 * map dim 0, where the copy engine takes 1 to 2^32 (no copy is made). */
static void test_k_zero(void **state) {
    (void)state;
    mm_run r = {"K = 0", bk_src, 128, 128, 0, 100 * 304, 70 * 304, masks_a, masks_b, {100, 70, 0, 304, 304}, 5, NULL,
                0, false, 0};
    run_mm_refusable(&r, 2, 2, "its dim 0 is 0 elements");
}

/* ---- 2 and 4 stages: the phase flips every 2 and 4 trips; K of 1 to 9
 * trips (fewer than the stages, and ending mid-ring). */
static void test_stages(void **state) {
    (void)state;
    static const int ks[] = {40, 150, 300, 560};
    for (int ns = 2; ns <= 4; ns += 2)
        for (unsigned i = 0; i < sizeof ks / sizeof ks[0]; i++) {
            tilec_define d[1] = {{"NS", ns}};
            char what[48];
            snprintf(what, sizeof what, "%d stages, K = %d", ns, ks[i]);
            mm_run r = {what, bk_src, 128, 128, ks[i], 100 * 568, 70 * 568, masks_a, masks_b,
                        {100, 70, ks[i], 568, 568}, 5, d, 1, false, 0};
            run_mm(&r);
        }
}

/* ---- a row coordinate below 0, inside a's buffer ---------------------------
 * a points 2 rows into its buffer (a 16-byte aligned offset) and the loads
 * read rows rm - 1: row -1 of a is memory of the buffer, a legal load,
 * where the map's row coordinate (program_id * 64 - 1) is below 0 in the
 * first program. ints: K, sa, sb */
static const char row_before_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, K: i32, stride_am: i64, stride_bn: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(stride_am, 8);\n"
    "    let sbn = multiple_of(stride_bn, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(0, K, 64, num_stages = 3) {\n"
    "        let x = load(a + (rm[:, None] - 1) * sam + (k + ks)[None, :]);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :]));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * 64 + rn[None, :], acc);\n"
    "}\n";

static long row_before_a(int i, int k, const int64_t *v) { return (i + 1) * v[1] + k; }

static void test_row_before(void **state) {
    (void)state;
    mm_run r = {"a row coordinate below 0", row_before_src, 64, 64, 128, 66 * 128, 64 * 128, row_before_a, plain_b,
                {128, 128, 128}, 3, NULL, 0, false, 2 * 128};
    run_mm(&r);
}

/* ---- rows read in reverse --------------------------------------------------
 * `a + (63 - arange(0, 64))[:, None] * stride_am + ...`: tile row i is a's
 * row 63 - i, the tile's row stride -stride_am, which a tensor map cannot
 * have (the copy engine's strides are positive). ints: K, sa, sb */
static const char reversed_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, K: i32, stride_am: i64, stride_bn: i64) {\n"
    "    let rr = 63 - arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(stride_am, 8);\n"
    "    let sbn = multiple_of(stride_bn, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(0, K, 64, num_stages = 3) {\n"
    "        let x = load(a + rr[:, None] * sam + (k + ks)[None, :]);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :]));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + arange(0, 64)[:, None] * 64 + rn[None, :], acc);\n"
    "}\n";

static long reversed_a(int i, int k, const int64_t *v) { return (63 - i) * v[1] + k; }

/* the same from a's last row down: a points 63 rows into its buffer, the
 * coordinate 0 */
static const char reversed_down_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, K: i32, stride_am: i64, stride_bn: i64) {\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(stride_am, 8);\n"
    "    let sbn = multiple_of(stride_bn, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(0, K, 64, num_stages = 3) {\n"
    "        let x = load(a + arange(0, 64)[:, None] * (0 - sam) + (k + ks)[None, :]);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :]));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + arange(0, 64)[:, None] * 64 + rn[None, :], acc);\n"
    "}\n";

static void test_rows_reversed(void **state) {
    (void)state;
    mm_run r = {"rows reversed", reversed_src, 64, 64, 128, 64 * 128, 64 * 128, reversed_a, plain_b, {128, 128, 128}, 3,
                NULL, 0, false, 0};
    run_mm(&r);
    mm_run d = {"rows reversed from the last", reversed_down_src, 64, 64, 128, 64 * 128, 64 * 128, reversed_a, plain_b,
                {128, 128, 128}, 3, NULL, 0, false, 63 * 128};
    run_mm(&d);
}

HARNESS_MAIN(cmocka_unit_test(test_scalar_predicate),
             cmocka_unit_test(test_negative_coordinate),
             cmocka_unit_test(test_row_stride_zero),
             cmocka_unit_test(test_mask_forms),
             cmocka_unit_test(test_nested_loops),
             cmocka_unit_test(test_two_loops),
             cmocka_unit_test(test_batch),
             cmocka_unit_test(test_k_pieces),
             cmocka_unit_test(test_b_k_rows_a_f32),
             cmocka_unit_test(test_k_zero),
             cmocka_unit_test(test_stages),
             cmocka_unit_test(test_row_before),
             cmocka_unit_test(test_rows_reversed))
