/* test_runtime_devices_warp_specialize.c - warp specialization on sm_90a
 * (lower/warp_specialize.c, issue 22): kernels whose pipelined loop's
 * rings the bulk copy engine fills, each asking for a producer warpgroup
 * (range(..., warp_specialize = true)), on the shapes a review looked for
 * wrong answers, hangs and races in: bounds that are not 0..K by BLOCK_K
 * (lo != 0, a step of two blocks, bounds from program ids, zero trips with
 * K > 0, fewer trips than stages), num_warps 4, 8 and 16, 2 to 7 stages,
 * K and M/N tails, bf16, a batch dim, a guard around the body that some
 * programs fail, epilogues through shared memory (reductions both ways, a
 * scalar store, atomics), a carried offset the producer advances itself,
 * offsets loaded or reduced from a tile (no split: the producer cannot
 * compute them), two dots a trip, a second loop after the split, a
 * stream and a graph, a nested loop (no split), more than 32 buffers
 * (each its own bytes: test_many_buffers), and the registers setmaxnreg
 * moves (test_register_pool: the LLVM IR, the same on every device).
 * Each compares every element with a host reference in float64; on cpu
 * (the interpreter: the reference semantics) and on emu:sm_90a (the
 * emulator on the sm_90a code, where the pass fires; its race and
 * deadlock checks on):
 *
 *   test_runtime_devices_warp_specialize cpu|emu|emu:sm_90a|cuda */
#include "device_harness.h"
#include "tilec.h"

/* A case: the kernel `mm(a: *T, b: *T, c: *f32, ints...)` of src, over gx
 * x gy (x gz) programs, writing clen floats of c; ref gives element idx
 * of c (and the sum of the magnitudes of its terms, for the tolerance). */
typedef struct ws_run ws_run;
typedef double (*ref_fn)(const ws_run *r, const float *A, const float *B, long idx, double *mag);
struct ws_run {
    const char *what, *src;
    int warps;
    const tilec_define *defs;
    size_t ndefs;
    long a_len, b_len, clen;
    uint32_t grid[3];
    int64_t ints[8];
    unsigned nints;
    ref_fn ref;
    int N;         /* c's row stride where ref needs it */
    bool bf16;     /* a and b: *bf16 (else *f16) */
    double rtol;   /* past the f32 accumulation's: 0 */
    const int32_t *i32s; /* a fourth pointer argument (int32 data), or NULL */
    long i32_len;
    long zeros_from; /* c's elements from here on start 0 (atomics add to them); 0: none */
    bool graph;      /* launched on a stream, captured in a graph and replayed twice (else trt_launch) */
    int ws_option;   /* trt_compile_options.warp_specialize (0: auto) */
};

/* sum over kk in [k0, k1) of A[i * sa + kk] * B[j * sb + kk] */
static double dotk(const float *A, const float *B, long ia, long jb, long k0, long k1, double *mag) {
    double s = 0;
    for (long kk = k0; kk < k1; kk++) {
        double x = (double)A[ia + kk] * B[jb + kk];
        s += x, *mag += fabs(x);
    }
    return s;
}

static void run(const ws_run *r) {
    size_t es = 2;
    uint16_t *ha = malloc(es * (size_t)r->a_len), *hb = malloc(es * (size_t)r->b_len);
    float *fa = malloc(sizeof(float) * (size_t)r->a_len), *fb = malloc(sizeof(float) * (size_t)r->b_len);
    for (long i = 0; i < r->a_len; i++) {
        float v = rand_f32() / 8.0f;
        if (r->bf16) put_bf16(ha, (size_t)i, v ? v : 0.5f), fa[i] = get_bf16(ha, (size_t)i);
        else put_f16(ha, (size_t)i, v ? v : 0.5f), fa[i] = get_f16(ha, (size_t)i);
    }
    for (long i = 0; i < r->b_len; i++) {
        float v = rand_f32() / 8.0f;
        if (r->bf16) put_bf16(hb, (size_t)i, v ? v : -0.25f), fb[i] = get_bf16(hb, (size_t)i);
        else put_f16(hb, (size_t)i, v ? v : -0.25f), fb[i] = get_f16(hb, (size_t)i);
    }
    float *c = poison_f32s((int)r->clen);
    for (long i = r->zeros_from ? r->zeros_from : r->clen; i < r->clen; i++) c[i] = 0;
    prog p = {0};
    trt_compile_options co = {.num_warps = r->warps, .defines = r->defs, .ndefines = r->ndefs,
                              .warp_specialize = r->ws_option};
    trt_kernel *k = NULL;
    if (trt_compile(dev, "ws.tile", r->src, strlen(r->src), &co, &p.mod) != TRT_OK)
        fail_msg("%s: does not compile: %s", r->what, trt_last_error(dev));
    OK(trt_get_kernel(p.mod, "mm", &k));
    trt_buffer ba = upload(ha, es * (size_t)r->a_len), bb = upload(hb, es * (size_t)r->b_len),
               bc = upload(c, sizeof(float) * (size_t)r->clen), bi = {0};
    trt_arg args[12] = {trt_buf(ba), trt_buf(bb), trt_buf(bc)};
    unsigned n = 3;
    if (r->i32s) bi = upload(r->i32s, sizeof(int32_t) * (size_t)r->i32_len), args[n++] = trt_buf(bi);
    for (unsigned i = 0; i < r->nints; i++) args[n++] = trt_int(r->ints[i]);
    uint32_t gz = r->grid[2] ? r->grid[2] : 1;
    trt_status st;
    if (r->graph) { /* a stream, the launch captured in a graph, replayed twice on another stream */
        trt_stream *s, *t;
        trt_graph *g;
        OK(trt_stream_create(dev, &s));
        OK(trt_stream_create(dev, &t));
        OK(trt_launch_on(s, k, r->grid[0], r->grid[1], gz, args, n));
        OK(trt_stream_sync(s));
        OK(trt_stream_begin_capture(s));
        OK(trt_launch_on(s, k, r->grid[0], r->grid[1], gz, args, n));
        OK(trt_stream_end_capture(s, &g));
        assert_int_equal(trt_graph_num_launches(g), 1);
        OK(trt_graph_launch(g, t));
        OK(trt_graph_launch(g, t));
        OK(trt_stream_sync(t));
        trt_graph_destroy(g);
        trt_stream_destroy(s);
        trt_stream_destroy(t);
        st = TRT_OK;
    } else st = trt_launch(k, r->grid[0], r->grid[1], gz, args, n);
    if (st != TRT_OK) fail_msg("%s: launch: %s: %s", r->what, trt_status_name(st), trt_last_error(dev));
    if (kind != TRT_DEVICE_CPU) {
        st = trt_sync(dev);
        if (st != TRT_OK) fail_msg("%s: sync: %s: %s", r->what, trt_status_name(st), trt_last_error(dev));
    }
    download(bc, c, sizeof(float) * (size_t)r->clen); /* frees bc */
    OK(trt_free(dev, ba));
    OK(trt_free(dev, bb));
    if (r->i32s) OK(trt_free(dev, bi));
    for (long i = 0; i < r->clen; i++) {
        double mag = 0, want = r->ref(r, fa, fb, i, &mag);
        if (isnan(want)) { /* left alone */
            if (!isnan(c[i])) fail_msg("%s: c[%ld] = %.9g, want it untouched on %s", r->what, i, c[i], trt_device_name(dev));
            continue;
        }
        double tol = 2048 * ldexp(1.0, -22) * mag + r->rtol * mag + 1e-30;
        if (!(fabs(c[i] - want) <= tol))
            fail_msg("%s: c[%ld] = %.9g, want %.9g (tolerance %.3g) on %s", r->what, i, c[i], want, tol,
                     trt_device_name(dev));
    }
    free(ha), free(hb), free(fa), free(fb), free(c);
    drop(&p);
}

/* ---- the general matmul ---------------------------------------------------
 * C[M x N] = sum over the trips k = lo, lo + STEP, ... < K of the BK
 * columns from k on (those below K) of A[i] . B[j]; A is M x K (row
 * stride sa), B is N x K (row stride sb). ints: M, N, K, lo, sa, sb */
static const char mm_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64,\n"
    "          const BM: i32 = 64, const BN: i32 = 64, const BK: i32 = 64, const STEP: i32 = 64, const NS: i32 = 3) {\n"
    "    let rm = program_id(0) * BM + arange(0, BM);\n"
    "    let rn = program_id(1) * BN + arange(0, BN);\n"
    "    let ks = arange(0, BK);\n"
    "    let sam = multiple_of(sa, 8);\n"
    "    let sbn = multiple_of(sb, 8);\n"
    "    var acc = zeros((BM, BN), f32);\n"
    "    for k in range(multiple_of(lo, 8), K, STEP, num_stages = NS, warp_specialize = true) {\n"
    "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] < K & rm[:, None] < M, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K & rn[:, None] < N, other = 0.0));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);\n"
    "}\n";

static int64_t def_of(const ws_run *r, const char *name, int64_t dflt) {
    for (size_t i = 0; i < r->ndefs; i++)
        if (!strcmp(r->defs[i].name, name)) return r->defs[i].value;
    return dflt;
}

static double mm_ref(const ws_run *r, const float *A, const float *B, long idx, double *mag) {
    const int64_t *v = r->ints;
    long N = v[1], K = v[2], lo = v[3], i = idx / N, j = idx % N;
    long bk = def_of(r, "BK", 64), step = def_of(r, "STEP", 64);
    double s = 0;
    for (long k = lo; k < K; k += step) s += dotk(A, B, i * v[4], j * v[5], k, k + bk < K ? k + bk : K, mag);
    return s;
}

static void mm_case(const char *what, int warps, const tilec_define *defs, size_t ndefs, int M, int N, int K, int lo,
                    int sa, int sb) {
    ws_run r = {what, mm_src, warps, defs, ndefs, (long)M * sa, (long)N * sb, (long)M * N, {0, 0, 1}, {M, N, K, lo, sa, sb}, 6,
                mm_ref, N, false, 0, NULL, 0, 0, false, 0};
    uint32_t bm = (uint32_t)def_of(&r, "BM", 64), bn = (uint32_t)def_of(&r, "BN", 64);
    r.grid[0] = cdiv(M, (int)bm), r.grid[1] = cdiv(N, (int)bn);
    run(&r);
}

/* 64 x 64 tiles at 4 warps: every K from 1 trip to past the ring twice,
 * with tails, for 2 to 7 stages */
static void test_stages_and_trips(void **state) {
    (void)state;
    static const int ks[] = {64, 100, 128, 192, 300, 520};
    for (int ns = 2; ns <= 7; ns++)
        for (unsigned i = 0; i < sizeof ks / sizeof ks[0]; i++) {
            if (ns > 3 && ns != 5 && ns != 7 && i != 4) continue; /* the emulator's time */
            tilec_define d[1] = {{"NS", ns}};
            char what[64];
            snprintf(what, sizeof what, "%d stages, K = %d", ns, ks[i]);
            mm_case(what, 4, d, 1, 100, 70, ks[i], 0, 528, 528);
        }
}

/* lo != 0 (not a multiple of the block), a step of two blocks, zero trips
 * with K > 0 (lo >= K) */
static void test_bounds(void **state) {
    (void)state;
    mm_case("lo = 40", 4, NULL, 0, 100, 70, 300, 40, 304, 304);
    mm_case("lo = 256, one trip", 4, NULL, 0, 100, 70, 300, 256, 304, 304);
    tilec_define step[1] = {{"STEP", 128}};
    mm_case("a step of 2 blocks", 4, step, 1, 100, 70, 520, 0, 528, 528);
    mm_case("a step of 2 blocks, lo = 8", 4, step, 1, 100, 70, 520, 8, 528, 528);
    mm_case("zero trips, lo = K", 4, NULL, 0, 100, 70, 304, 304, 304, 304);
    mm_case("zero trips, lo > K", 4, NULL, 0, 100, 70, 300, 400, 304, 304);
}

/* 8 warps (two consumer warpgroups: setmaxnreg), 16 warps (640 threads) */
static void test_warps(void **state) {
    (void)state;
    tilec_define d8[2] = {{"BM", 128}, {"BN", 64}};
    mm_case("8 warps", 8, d8, 2, 200, 100, 300, 0, 304, 304);
    tilec_define d8b[3] = {{"BM", 128}, {"BN", 128}, {"NS", 4}};
    mm_case("8 warps, 128 x 128, 4 stages", 8, d8b, 3, 130, 130, 520, 0, 528, 528);
    tilec_define d16[2] = {{"BM", 256}, {"BN", 64}};
    mm_case("16 warps", 16, d16, 2, 256, 64, 300, 0, 304, 304);
    tilec_define d4[3] = {{"BM", 128}, {"BN", 128}, {"NS", 2}};
    mm_case("4 warps, 128 x 128", 4, d4, 3, 130, 200, 200, 0, 208, 208);
    tilec_define d8w[2] = {{"BM", 256}, {"BN", 128}};
    mm_case("8 warps, 256 x 128", 8, d8w, 2, 256, 128, 200, 0, 208, 208);
    tilec_define d16w[2] = {{"BM", 256}, {"BN", 128}};
    mm_case("16 warps, 256 x 128", 16, d16w, 2, 300, 128, 136, 0, 136, 136);
}

/* a stream and a graph: launches of num_warps + 4 warps (the module's) */
static void test_graph(void **state) {
    (void)state;
    tilec_define d8[2] = {{"BM", 128}, {"BN", 64}};
    int M = 200, N = 100, K = 300, sa = 304;
    ws_run r = {"8 warps in a graph", mm_src, 8, d8, 2, (long)M * sa, (long)N * sa, (long)M * N, {cdiv(M, 128), cdiv(N, 64), 1},
                {M, N, K, 0, sa, sa}, 6, mm_ref, N, false, 0, NULL, 0, 0, true, 0};
    run(&r);
}

/* ---- epilogues through shared memory, and a guard ------------------------
 * One 64-row block (M = 64), N in 64-column programs; after the loop: the
 * tile, its column sums (a reduction across the consumer warps, through
 * shared memory), its row maxima, a scalar store of its sum and an atomic
 * add of it into one word. c: [M x N | N | N | N / 64 | 1]. With GUARD the
 * body sits in `if pn < nlim` (attention's form): programs past it leave
 * their parts of c alone. ints: M, N, K, lo, sa, sb, nlim */
static const char epi_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64, nlim: i32,\n"
    "          const NS: i32 = 3) {\n"
    "    let pn = program_id(1);\n"
    "    if pn < nlim {\n"
    "        let rm = arange(0, 64);\n"
    "        let rn = pn * 64 + arange(0, 64);\n"
    "        let ks = arange(0, 64);\n"
    "        let sam = multiple_of(sa, 8);\n"
    "        let sbn = multiple_of(sb, 8);\n"
    "        var acc = zeros((64, 64), f32);\n"
    "        for k in range(multiple_of(lo, 8), K, 64, num_stages = NS, warp_specialize = true) {\n"
    "            let x = load(a + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] < K, other = 0.0);\n"
    "            let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K, other = 0.0));\n"
    "            acc = dot(x, y, acc);\n"
    "        }\n"
    "        store(c + rm[:, None] * N + rn[None, :], acc);\n"
    "        store(c + M * N + rn, sum(acc, axis = 0));\n"
    "        store(c + M * N + N + rn, max(acc, axis = 1));\n"
    "        let total = sum(sum(acc, axis = 1), axis = 0);\n"
    "        store(c + M * N + 2 * N + pn, total);\n"
    "        atomic_add(c + M * N + 2 * N + N / 64, total);\n"
    "    }\n"
    "}\n";

/* the same without the guard */
static const char epi_noguard_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64, nlim: i32,\n"
    "          const NS: i32 = 3) {\n"
    "    let pn = program_id(1);\n"
    "    let rm = arange(0, 64);\n"
    "    let rn = pn * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(sa, 8);\n"
    "    let sbn = multiple_of(sb, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(multiple_of(lo, 8), K, 64, num_stages = NS, warp_specialize = true) {\n"
    "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] < K, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K, other = 0.0));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc);\n"
    "    store(c + M * N + rn, sum(acc, axis = 0));\n"
    "    store(c + M * N + N + rn, max(acc, axis = 1));\n"
    "    let total = sum(sum(acc, axis = 1), axis = 0);\n"
    "    store(c + M * N + 2 * N + pn, total);\n"
    "    atomic_add(c + M * N + 2 * N + N / 64, total);\n"
    "}\n";

/* one element of the product, as mm_ref's (row i, column j) */
static double prod_at(const ws_run *r, const float *A, const float *B, long i, long j, double *mag) {
    const int64_t *v = r->ints;
    double s = 0;
    for (long k = v[3]; k < v[2]; k += 64) s += dotk(A, B, i * v[4], j * v[5], k, k + 64 < v[2] ? k + 64 : v[2], mag);
    return s;
}

static double epi_ref(const ws_run *r, const float *A, const float *B, long idx, double *mag) {
    long M = r->ints[0], N = r->ints[1], nlim = r->ints[6], live = (nlim < N / 64 ? nlim : N / 64) * 64;
    if (idx < M * N) return idx % N < live ? prod_at(r, A, B, idx / N, idx % N, mag) : NAN;
    idx -= M * N;
    if (idx < N) { /* a column's sum */
        if (idx >= live) return NAN;
        double s = 0;
        for (long i = 0; i < M; i++) s += prod_at(r, A, B, i, idx, mag);
        return s;
    }
    idx -= N;
    if (idx < N) { /* the row max of program idx / 64, row idx % 64 */
        if (idx >= live) return NAN;
        double best = -INFINITY;
        for (long j = idx / 64 * 64; j < idx / 64 * 64 + 64; j++) {
            double m = 0, x = prod_at(r, A, B, idx % 64, j, &m);
            if (x > best) best = x, *mag = m;
        }
        return best;
    }
    idx -= N;
    long p0 = idx < N / 64 ? idx : 0, p1 = idx < N / 64 ? idx + 1 : (live / 64); /* one program's, or all */
    if (idx < N / 64 && idx * 64 >= live) return NAN;
    double s = 0;
    for (long pn = p0; pn < p1; pn++)
        for (long i = 0; i < M; i++)
            for (long j = pn * 64; j < pn * 64 + 64; j++) s += prod_at(r, A, B, i, j, mag);
    return s;
}

static void epi_case(const char *what, const char *src, int ns, int N, int K, int lo, int nlim) {
    tilec_define d[1] = {{"NS", ns}};
    int M = 64, sa = (K + 7) / 8 * 8 + 8;
    long clen = (long)M * N + 2L * N + N / 64 + 1;
    ws_run r = {what, src, 4, d, 1, (long)M * sa, (long)N * sa, clen, {1, (uint32_t)(N / 64), 1},
                {M, N, K, lo, sa, sa, nlim}, 7, epi_ref, N, false, 0, NULL, 0, clen - 1, false, 0};
    run(&r);
}

static void test_epilogues(void **state) {
    (void)state;
    epi_case("epilogue", epi_noguard_src, 3, 192, 300, 0, 99);
    epi_case("epilogue, one trip", epi_noguard_src, 4, 128, 40, 0, 99);
    epi_case("epilogue, zero trips", epi_noguard_src, 3, 128, 300, 320, 99);
    epi_case("guarded epilogue, all in", epi_src, 3, 192, 300, 0, 3);
    epi_case("guarded epilogue, 1 of 3 in", epi_src, 3, 192, 300, 0, 1);
    epi_case("guarded epilogue, none in", epi_src, 2, 192, 300, 0, 0);
    epi_case("guarded epilogue, 2 stages, lo = 104", epi_src, 2, 192, 520, 104, 2);
}

/* ---- a start the copy engine cannot take ------------------------------------
 * A box must start at a multiple of 16 bytes along its contiguous dim (an
 * H200 executes any other as an illegal instruction: lower/tma_copies.c,
 * emu/async.c). Without multiple_of(lo, 8) the compiler cannot prove it,
 * so the loop keeps cp.async (and no producer warpgroup): lo = 100 runs
 * right, and only the promised source has bulk tensor copies. */
static const char *unpromised(const char *src, char *buf, size_t n) {
    static const char promise[] = "multiple_of(lo, 8)";
    const char *at = strstr(src, promise);
    assert_non_null(at);
    snprintf(buf, n, "%.*slo%s", (int)(at - src), src, at + strlen(promise));
    return buf;
}

static bool has_bulk_tensor_copies(const char *src) {
    tilec_define d[1] = {{"NS", 2}};
    tilec_options o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_PTX;
    o.arch = "sm_90a";
    o.num_warps = 4;
    o.defines = d, o.ndefines = 1;
    tilec_output out;
    if (tilec_compile("ws.tile", src, strlen(src), &o, &out) != TILEC_OK) fail_msg("%s", out.diagnostics);
    bool has = strstr(out.data, "cp.async.bulk.tensor") != NULL;
    tilec_output_free(&out);
    return has;
}

static void test_unaligned_start(void **state) {
    (void)state;
    static char src[sizeof epi_src];
    unpromised(epi_src, src, sizeof src);
    epi_case("guarded epilogue, 2 stages, lo = 100 unpromised", src, 2, 192, 520, 100, 2);
    epi_case("guarded epilogue, 3 stages, lo = 36 unpromised", src, 3, 192, 300, 36, 3);
    assert_true(has_bulk_tensor_copies(epi_src));
    assert_false(has_bulk_tensor_copies(src));
}

/* ---- what the producer computes ----------------------------------------
 * The K coordinate from a carried offset the loop advances by a block
 * (the producer runs the loop with it), from lo = program_id(1) (bounds
 * from a program id), and from an offset o loaded from memory or reduced
 * from a tile (the producer can compute neither: no split; A's ring on
 * cp.async, since nothing says o + k is a multiple of 8, B's the copy
 * engine's; still right; o = 0 from offs' zeros). ints as mm_src's. */
static const char carried_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(sa, 8);\n"
    "    let sbn = multiple_of(sb, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    var off = multiple_of(lo, 8);\n"
    "    for t in range(0, K - lo, 64, num_stages = 3, warp_specialize = true) {\n"
    "        let x = load(a + rm[:, None] * sam + (off + ks)[None, :], (off + ks)[None, :] < K & rm[:, None] < M, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (off + ks)[None, :], (off + ks)[None, :] < K & rn[:, None] < N, other = 0.0));\n"
    "        acc = dot(x, y, acc);\n"
    "        off = off + 64;\n"
    "    }\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);\n"
    "}\n";

static const char loaded_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, offs: *i32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(sa, 8);\n"
    "    let sbn = multiple_of(sb, 8);\n"
    "    let o = load(offs);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(multiple_of(lo, 8), K, 64, num_stages = 3, warp_specialize = true) {\n"
    "        let x = load(a + rm[:, None] * sam + (o + k + ks)[None, :], rm[:, None] < M, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K & rn[:, None] < N, other = 0.0));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);\n"
    "}\n";

/* the same, o a reduction of a tile */
static const char reduced_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, offs: *i32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(sa, 8);\n"
    "    let sbn = multiple_of(sb, 8);\n"
    "    let o = max(arange(0, 64) * load(offs + arange(0, 64) * 0), axis = 0);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(multiple_of(lo, 8), K, 64, num_stages = 3, warp_specialize = true) {\n"
    "        let x = load(a + rm[:, None] * sam + (o + k + ks)[None, :], rm[:, None] < M, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K & rn[:, None] < N, other = 0.0));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);\n"
    "}\n";

/* lo = 64 * program_id(1): program j sums from column 64 j on */
static const char pid_lo_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(sa, 8);\n"
    "    let sbn = multiple_of(sb, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(program_id(1) * 64 + multiple_of(lo, 8), K, 64, num_stages = 3, warp_specialize = true) {\n"
    "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] < K & rm[:, None] < M, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K & rn[:, None] < N, other = 0.0));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);\n"
    "}\n";

static double pid_lo_ref(const ws_run *r, const float *A, const float *B, long idx, double *mag) {
    const int64_t *v = r->ints;
    long N = v[1], K = v[2], i = idx / N, j = idx % N;
    double s = 0;
    for (long k = j / 64 * 64 + v[3]; k < K; k += 64) s += dotk(A, B, i * v[4], j * v[5], k, k + 64 < K ? k + 64 : K, mag);
    return s;
}

static void test_producer_values(void **state) {
    (void)state;
    int M = 100, N = 130, K = 300, sa = 304;
    ws_run r = {"a carried offset", carried_src, 4, NULL, 0, (long)M * sa, (long)N * sa, (long)M * N,
                {cdiv(M, 64), cdiv(N, 64), 1}, {M, N, K, 40, sa, sa}, 6, mm_ref, N, false, 0, NULL, 0, 0, false, 0};
    run(&r);
    r.ints[3] = 0, r.what = "a carried offset from 0";
    run(&r);
    static const int32_t zero[64] = {0};
    ws_run l = r; /* A's loads have no K mask: K a multiple of 64 */
    l.what = "an offset loaded from memory", l.src = loaded_src, l.i32s = zero, l.i32_len = 64, l.ints[2] = 256;
    run(&l);
    l.what = "an offset reduced from a tile", l.src = reduced_src;
    run(&l);
    ws_run q = r;
    q.what = "lo from a program id", q.src = pid_lo_src, q.ref = pid_lo_ref, q.ints[3] = 8;
    run(&q);
}

/* ---- bf16, 2 to 8 stages, K pieces of 16 to 128 ---------------------------- */
static const char bf16_src[] =
    "kernel mm(a: *bf16, b: *bf16, c: *f32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64,\n"
    "          const BK: i32 = 64, const NS: i32 = 3) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, BK);\n"
    "    let sam = multiple_of(sa, 8);\n"
    "    let sbn = multiple_of(sb, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(multiple_of(lo, 8), K, BK, num_stages = NS, warp_specialize = true) {\n"
    "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] < K & rm[:, None] < M, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K & rn[:, None] < N, other = 0.0));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);\n"
    "}\n";

static double bk_ref(const ws_run *r, const float *A, const float *B, long idx, double *mag) {
    const int64_t *v = r->ints;
    long N = v[1], K = v[2], i = idx / N, j = idx % N, bk = def_of(r, "BK", 64);
    double s = 0;
    for (long k = v[3]; k < K; k += bk) s += dotk(A, B, i * v[4], j * v[5], k, k + bk < K ? k + bk : K, mag);
    return s;
}

static void test_bf16_and_pieces(void **state) {
    (void)state;
    static const int bks[] = {16, 32, 64, 128};
    for (unsigned i = 0; i < 4; i++) {
        tilec_define d[2] = {{"BK", bks[i]}, {"NS", i == 3 ? 8 : 2 + (int)i * 2}};
        char what[64];
        snprintf(what, sizeof what, "bf16, BK = %d, %d stages", bks[i], (int)d[1].value);
        int M = 100, N = 70, K = 300, sa = 312;
        ws_run r = {what, bf16_src, 4, d, 2, (long)M * sa, (long)N * sa, (long)M * N, {cdiv(M, 64), cdiv(N, 64), 1},
                    {M, N, K, 0, sa, sa}, 6, bk_ref, N, true, 0, NULL, 0, 0, false, 0};
        run(&r);
    }
}

/* ---- more shapes of the loop ------------------------------------------------
 * A batch dim (program_id(2) times a stride: 3-d maps); A scaled in
 * registers before the dot (its tile loaded by the threads and staged
 * through shared memory each trip, a local_store: no split, B's ring
 * the copy engine's); two
 * dots a trip (attention's shape: s = x y^T, then s's f16 times B's rows
 * of the trip's keys) with a maximum down the columns of s, across the
 * consumer warps, in the trip; and a second pipelined loop after the
 * warp-specialized one, its copies per-thread cp.async (a scalar mask of
 * the program's own), its barriers the consumers' (c: twice the
 * product). ints as mm_src's. */
static const char batch_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64, sbt: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let bt = program_id(2);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(sa, 8);\n"
    "    let sbn = multiple_of(sb, 8);\n"
    "    let sab = multiple_of(sbt, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(multiple_of(lo, 8), K, 64, num_stages = 3, warp_specialize = true) {\n"
    "        let x = load(a + bt * sab + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] < K & rm[:, None] < M, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K & rn[:, None] < N, other = 0.0));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + bt * M * N + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);\n"
    "}\n";

static double batch_ref(const ws_run *r, const float *A, const float *B, long idx, double *mag) {
    const int64_t *v = r->ints;
    long M = v[0], N = v[1], bt = idx / (M * N), i = idx % (M * N) / N, j = idx % N;
    return prod_at(r, A + bt * M * v[4], B, i, j, mag);
}

static const char regs_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(sa, 8);\n"
    "    let sbn = multiple_of(sb, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(multiple_of(lo, 8), K, 64, num_stages = 3, warp_specialize = true) {\n"
    "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] < K & rm[:, None] < M, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K & rn[:, None] < N, other = 0.0));\n"
    "        acc = dot(x * 2.0, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);\n"
    "}\n";

static double twice_ref(const ws_run *r, const float *A, const float *B, long idx, double *mag) {
    const int64_t *v = r->ints;
    return 2 * prod_at(r, A, B, idx / v[1], idx % v[1], mag);
}

/* c[i][d] = sum over key blocks kb of sum_j f16(s[i][j] - colmax_j) * B[kb + j][64 + d],
 * s[i][j] = A[i][0:64] . B[kb + j][0:64]; one 64-row program, keys K
 * (a multiple of 64), sb >= 128 */
static const char two_dots_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64) {\n"
    "    let rm = arange(0, 64);\n"
    "    let rd = arange(0, 64);\n"
    "    let rj = arange(0, 64);\n"
    "    let sam = multiple_of(sa, 8);\n"
    "    let sbn = multiple_of(sb, 8);\n"
    "    let q = load(a + rm[:, None] * sam + rd[None, :]);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for kb in range(multiple_of(lo, 8), K, 64, num_stages = 3, warp_specialize = true) {\n"
    "        let kt = load(b + (kb + rj)[:, None] * sbn + rd[None, :], (kb + rj)[:, None] < K, other = 0.0);\n"
    "        let s = dot(q, trans(kt), zeros((64, 64), f32));\n"
    "        let m = max(s, axis = 0);\n"
    "        let p = cast(s - m[None, :], f16);\n"
    "        let vt = load(b + (kb + rj)[:, None] * sbn + 64 + rd[None, :], (kb + rj)[:, None] < K, other = 0.0);\n"
    "        acc = dot(p, vt, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * 64 + rd[None, :], acc);\n"
    "}\n";

static double two_dots_ref(const ws_run *r, const float *A, const float *B, long idx, double *mag) {
    const int64_t *v = r->ints;
    long i = idx / 64, d = idx % 64, sa = v[4], sb = v[5];
    double out = 0;
    for (long kb = v[3]; kb < v[2]; kb += 64) {
        for (long j = 0; j < 64; j++) {
            double m = -INFINITY, sij = 0, t = 0;
            for (long ii = 0; ii < 64; ii++) {
                double sv = dotk(A, B, ii * sa, (kb + j) * sb, 0, 64, &t);
                if (sv > m) m = sv;
                if (ii == i) sij = sv;
            }
            double p = f16_value(f16_bits((float)((float)sij - (float)m)));
            double x = p * B[(kb + j) * sb + 64 + d];
            out += x, *mag += fabs(x) + fabs(B[(kb + j) * sb + 64 + d]) * (fabs(sij) + fabs(m)) * ldexp(1.0, -8);
        }
    }
    return out;
}

static const char second_loop_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let rn = program_id(1) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(sa, 8);\n"
    "    let sbn = multiple_of(sb, 8);\n"
    "    var acc = zeros((64, 64), f32);\n"
    "    for k in range(multiple_of(lo, 8), K, 64, num_stages = 3, warp_specialize = true) {\n"
    "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] < K & rm[:, None] < M, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K & rn[:, None] < N, other = 0.0));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    for k in range(multiple_of(lo, 8), K, 64, num_stages = 3) {\n"
    "        let on = k < K + 1;\n"
    "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] < K & rm[:, None] < M & on, other = 0.0);\n"
    "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K & rn[:, None] < N & on, other = 0.0));\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);\n"
    "}\n";

static void test_loop_shapes(void **state) {
    (void)state;
    int M = 100, N = 70, K = 300, sa = 304;
    ws_run r = {"a batch dim", batch_src, 4, NULL, 0, 3L * M * sa, (long)N * sa, 3L * M * N, {cdiv(M, 64), cdiv(N, 64), 3},
                {M, N, K, 0, sa, sa, (long)M * sa}, 7, batch_ref, N, false, 0, NULL, 0, 0, false, 0};
    run(&r);
    ws_run g = {"A through registers", regs_src, 4, NULL, 0, (long)M * sa, (long)N * sa, (long)M * N,
                {cdiv(M, 64), cdiv(N, 64), 1}, {M, N, K, 0, sa, sa}, 6, twice_ref, N, false, 0, NULL, 0, 0, false, 0};
    run(&g);
    ws_run t = {"two dots a trip", two_dots_src, 4, NULL, 0, 64L * 64, 320L * 136, 64L * 64, {1, 1, 1},
                {64, 64, 320, 0, 64, 136}, 6, two_dots_ref, 64, false, 0, NULL, 0, 0, false, 0};
    run(&t);
    t.what = "two dots a trip, lo = 128", t.ints[3] = 128;
    run(&t);
    ws_run s = {"a second loop", second_loop_src, 4, NULL, 0, (long)M * sa, (long)N * sa, (long)M * N,
                {cdiv(M, 64), cdiv(N, 64), 1}, {M, N, K, 0, sa, sa}, 6, twice_ref, N, false, 0, NULL, 0, 0, false, 0};
    run(&s);
}

/* ---- the register pool of setmaxnreg ----------------------------------------
 * A CTA starts with maxnreg registers a thread (the annotation codegen
 * gives a warp-specialized kernel of 8 warps or more); setmaxnreg.dec
 * gives the producer warpgroup's surplus to the CTA's pool and
 * setmaxnreg.inc "blocks the execution until enough registers are
 * available in the CTA's register pool" (PTX ISA, setmaxnreg): the
 * consumers may ask for no more than the producer gave back, else they
 * wait forever on a GPU. The emulator checks the counts' form but keeps
 * no pool, so this reads the LLVM IR for sm_90a (the same on every
 * device): 128 (maxnreg - dec) >= 32 num_warps (inc - maxnreg). */
static uint32_t llvm_number(const char *ir, const char *key) {
    const char *at = strstr(ir, key);
    if (!at) fail_msg("no %s in the LLVM IR", key);
    return (uint32_t)strtoul(at + strlen(key), NULL, 10);
}

static void test_register_pool(void **state) {
    (void)state;
    static const int warps[] = {8, 16};
    for (unsigned i = 0; i < 2; i++) {
        tilec_define d[2] = {{"BM", 16 * warps[i]}, {"BN", 64}};
        tilec_options o;
        tilec_options_init(&o);
        o.emit = TILEC_EMIT_LLVM;
        o.arch = "sm_90a";
        o.num_warps = warps[i];
        o.defines = d, o.ndefines = 2;
        tilec_output out;
        if (tilec_compile("ws.tile", mm_src, strlen(mm_src), &o, &out) != TILEC_OK)
            fail_msg("%d warps: %s", warps[i], out.diagnostics);
        uint32_t threads = llvm_number(out.data, "!\"maxntidx\", i32 "), entry = llvm_number(out.data, "!\"maxnreg\", i32 "),
                 dec = llvm_number(out.data, "setmaxnreg.dec.sync.aligned.u32(i32 "),
                 inc = llvm_number(out.data, "setmaxnreg.inc.sync.aligned.u32(i32 ");
        uint32_t consumers = 32u * (uint32_t)warps[i], producers = threads - consumers;
        print_message("%d warps: %u threads at %u registers; the producer's %u to %u, the consumers' to %u\n", warps[i],
                      threads, entry, producers, dec, inc);
        assert_int_equal(producers, 128);
        assert_true(entry * threads <= 65536);
        if (producers * (entry - dec) < consumers * (inc - entry))
            fail_msg("%d warps: the consumers ask %u registers of the pool (%u threads from %u to %u), the producer "
                     "gave it %u (%u threads from %u to %u): setmaxnreg.inc would wait forever",
                     warps[i], consumers * (inc - entry), consumers, entry, inc, producers * (entry - dec), producers,
                     entry, dec);
        tilec_output_free(&out);
    }
}

/* ---- where it is not done -----------------------------------------------------
 * warp_specialize = true on a loop nested in another (the ring re-run by
 * the outer loop: its mbarriers made again each outer trip) and on the
 * outer loop too: left alone, right. Each program computes two column
 * tiles, one an outer trip; K of 5 trips and of 1. ints as mm_src's
 * (c: M x 128, N = 128). */
static const char nested_src[] =
    "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64) {\n"
    "    let rm = program_id(0) * 64 + arange(0, 64);\n"
    "    let ks = arange(0, 64);\n"
    "    let sam = multiple_of(sa, 8);\n"
    "    let sbn = multiple_of(sb, 8);\n"
    "    for t in range(0, 2, warp_specialize = true) {\n"
    "        let rn = t * 64 + arange(0, 64);\n"
    "        var acc = zeros((64, 64), f32);\n"
    "        for k in range(multiple_of(lo, 8), K, 64, num_stages = 3, warp_specialize = true) {\n"
    "            let x = load(a + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] < K & rm[:, None] < M, other = 0.0);\n"
    "            let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K, other = 0.0));\n"
    "            acc = dot(x, y, acc);\n"
    "        }\n"
    "        store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M);\n"
    "    }\n"
    "}\n";

static void test_not_specialized(void **state) {
    (void)state;
    static const int ks[] = {320, 64};
    for (unsigned i = 0; i < 2; i++) {
        int M = 100, N = 128, K = ks[i], sa = 328;
        ws_run r = {i ? "nested, 1 trip" : "nested, 5 trips", nested_src, 4, NULL, 0, (long)M * sa, (long)N * sa,
                    (long)M * N, {cdiv(M, 64), 1, 1}, {M, N, K, 0, sa, sa}, 6, mm_ref, N, false, 0, NULL, 0, 0, false, 0};
        run(&r);
    }
}

/* ---- more than 32 buffers ---------------------------------------------------
 * After the warp-specialized loop, EXTRA more dots of 16-column pieces of
 * A and B (read by the threads: each operand staged through a buffer of
 * its own, two buffers a dot), so that the kernel has more buffers than
 * smem_plan places by live ranges (LOWER_MAX_SMEM_OVERLAP, 32): then each
 * has bytes of its own, which codegen hands out in the order it meets the
 * local_allocs (gen_local_alloc). c = A B^T over [lo, K) plus over
 * columns [0, 16 EXTRA). ints as mm_src's. */
enum { EXTRA_DOTS = 15 };

static const char *extra_dots_src(bool ws) {
    static char src[2][8192];
    char *o = src[ws];
    size_t n = 0, cap = sizeof src[ws];
    n += (size_t)snprintf(o + n, cap - n,
                          "kernel mm(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32, lo: i32, sa: i64, sb: i64) {\n"
                          "    let rm = program_id(0) * 64 + arange(0, 64);\n"
                          "    let rn = program_id(1) * 64 + arange(0, 64);\n"
                          "    let ks = arange(0, 64);\n"
                          "    let kk = arange(0, 16);\n"
                          "    let sam = multiple_of(sa, 8);\n"
                          "    let sbn = multiple_of(sb, 8);\n"
                          "    var acc = zeros((64, 64), f32);\n"
                          "    for k in range(multiple_of(lo, 8), K, 64, num_stages = 3, warp_specialize = %s) {\n"
                          "        let x = load(a + rm[:, None] * sam + (k + ks)[None, :], (k + ks)[None, :] < K & rm[:, None] < M, other = 0.0);\n"
                          "        let y = trans(load(b + rn[:, None] * sbn + (k + ks)[None, :], (k + ks)[None, :] < K & rn[:, None] < N, other = 0.0));\n"
                          "        acc = dot(x, y, acc);\n"
                          "    }\n",
                          ws ? "true" : "false");
    for (int i = 0; i < EXTRA_DOTS; i++)
        n += (size_t)snprintf(o + n, cap - n,
                              "    acc = dot(load(a + rm[:, None] * sam + (%d + kk)[None, :], rm[:, None] < M, other = 0.0),\n"
                              "              trans(load(b + rn[:, None] * sbn + (%d + kk)[None, :], rn[:, None] < N, other = 0.0)), acc);\n",
                              16 * i, 16 * i);
    snprintf(o + n, cap - n, "    store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M & rn[None, :] < N);\n}\n");
    return o;
}

static double extra_dots_ref(const ws_run *r, const float *A, const float *B, long idx, double *mag) {
    const int64_t *v = r->ints;
    long N = v[1], i = idx / N, j = idx % N;
    return mm_ref(r, A, B, idx, mag) + dotk(A, B, i * v[4], j * v[5], 0, 16 * EXTRA_DOTS, mag);
}

static void test_many_buffers(void **state) {
    (void)state;
    int M = 100, N = 70, K = 300, sa = 304;
    ws_run r = {"more than 32 buffers, not specialized", extra_dots_src(false), 4, NULL, 0, (long)M * sa, (long)N * sa,
                (long)M * N, {cdiv(M, 64), cdiv(N, 64), 1}, {M, N, K, 0, sa, sa}, 6, extra_dots_ref, N, false, 0, NULL, 0,
                0, false, 0};
    run(&r);
    r.what = "more than 32 buffers", r.src = extra_dots_src(true);
    run(&r);
}

/* ---- the runtime's option ---------------------------------------------------
 * trt_compile_options.warp_specialize reaches the compiler for loops that
 * name no choice: at 4 warps (where auto leaves them alone) on each device
 * the numbers are right whichever is chosen; on the emulator at sm_90a,
 * the tile IR the runtime keeps of the kernel (the sidecar, read back from
 * its disk cache) has a producer warpgroup with _ON only, and the three
 * choices are cached apart. */
static const char *default_choice_src(void) {
    static char src[sizeof mm_src];
    const char *cut = strstr(mm_src, ", warp_specialize = true");
    size_t n = (size_t)(cut - mm_src), drop = strlen(", warp_specialize = true");
    memcpy(src, mm_src, n);
    memcpy(src + n, cut + drop, strlen(cut + drop) + 1);
    return src;
}

/* The .tir files in dir, and how many of them hold `needle`. */
static int tir_files(const char *dir, const char *needle, int *with) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    *with = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 4, ".tir")) continue;
        char path[600], text[1 << 16];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        size_t got = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[got] = 0;
        n++, *with += strstr(text, needle) != NULL;
    }
    closedir(d);
    return n;
}

static void test_compile_option(void **state) {
    (void)state;
    const char *src = default_choice_src();
    assert_null(strstr(src, "warp_specialize"));
    static const int choices[] = {TILEC_WARP_SPECIALIZE_AUTO, TILEC_WARP_SPECIALIZE_ON, TILEC_WARP_SPECIALIZE_OFF};
    static const char *const names[] = {"option auto", "option on", "option off"};
    int M = 100, N = 70, K = 300, sa = 304;
    for (unsigned i = 0; i < 3; i++) {
        ws_run r = {names[i], src, 4, NULL, 0, (long)M * sa, (long)N * sa, (long)M * N, {cdiv(M, 64), cdiv(N, 64), 1},
                    {M, N, K, 0, sa, sa}, 6, mm_ref, N, false, 0, NULL, 0, 0, false, choices[i]};
        run(&r);
    }
    if (kind != TRT_DEVICE_EMU) return; /* the emulator takes the arch below; the CPU has none */
    /* a source of its own, so that none of the above is in the device's cache */
    char again[sizeof mm_src + 64];
    snprintf(again, sizeof again, "%s// compiled again, for the disk cache\n", src);
    char dir[] = "/tmp/tilec-ws-option-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("TILEC_CACHE_DIR", dir, 1);
    for (unsigned i = 0; i < 3; i++) {
        trt_compile_options co = {.arch = "sm_90a", .num_warps = 4, .warp_specialize = choices[i]};
        trt_module *m = NULL;
        if (trt_compile(dev, "ws.tile", again, strlen(again), &co, &m) != TRT_OK)
            fail_msg("sm_90a with %s: %s", names[i], trt_last_error(dev));
        trt_module_free(m);
        int with, n = tir_files(dir, "producer_warps(4)", &with);
        if (n != (int)i + 1) fail_msg("after %s: %d modules on disk, want %u", names[i], n, i + 1);
        if (with != (i >= 1)) /* option on's only */
            fail_msg("after %s: %d of them with a producer warpgroup, want %d", names[i], with, i >= 1);
    }
    unsetenv("TILEC_CACHE_DIR");
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

HARNESS_MAIN(cmocka_unit_test(test_stages_and_trips),
             cmocka_unit_test(test_bounds),
             cmocka_unit_test(test_warps),
             cmocka_unit_test(test_graph),
             cmocka_unit_test(test_register_pool),
             cmocka_unit_test(test_epilogues),
             cmocka_unit_test(test_unaligned_start),
             cmocka_unit_test(test_producer_values),
             cmocka_unit_test(test_bf16_and_pieces),
             cmocka_unit_test(test_loop_shapes),
             cmocka_unit_test(test_not_specialized),
             cmocka_unit_test(test_many_buffers),
             cmocka_unit_test(test_compile_option))
