/* test_runtime_devices_tmaps.c - tensor maps made at launch (Hopper's bulk
 * tensor copies; docs/design.md, "Tensor maps"): a kernel written as tile
 * IR whose tensor_map reads its pointer, two dims and a stride from its
 * arguments copies boxes with tma_load through an mbarrier, and the
 * runtime encodes the map from each launch's arguments (the emulator and
 * the GPU get it as a hidden parameter; the CPU interpreter copies by the
 * same description). Checked against a host reference on random data,
 * boxes partly out of bounds reading zeros; arguments the copy engine
 * cannot take fail the launch with TRT_ERR_ARGUMENTS naming the argument.
 * Runs on each device (device_harness.h): test_runtime_devices_tmaps
 * cpu|cuda|emu; the emulator and the GPU compile it for sm_90a. */
#include "device_harness.h"

enum { BOX_X = 32, BOX_Y = 16 }; /* the kernel's box: 32 f16 (64 bytes) by 16 rows */

/* Program (px, py) copies the box at (px * 32, py * 16) of the K x M
 * matrix a (row stride sa elements) into one slot, waits for it on the
 * slot's mbarrier, and stores it as f32 at the same place of out (row
 * stride ow), outside a included: the copy's zeros. */
#define TCOPY_SRC(SWIZZLE, LAYOUT) TCOPY_SHIFTED_SRC(SWIZZLE, LAYOUT, "0")
/* ... with the box's x coordinate SHIFT columns to the left */
#define TCOPY_SHIFTED_SRC(SWIZZLE, LAYOUT, SHIFT)                                                \
    "kernel @tcopy(%a: ptr<f16>, %out: ptr<f32>, %K: i32, %M: i32, %sa: i32, %ow: i32)\n"        \
    "    tensor_map(%a, dims=[%K, %M], strides=[1, %sa], box=[32, 16], swizzle=" SWIZZLE ") {\n" \
    "  %buf = local_alloc : smem<1x16x32xf16" LAYOUT ">\n"                                       \
    "  %bars = local_alloc : smem<1x1xi64>\n"                                                    \
    "  mbar_init 1, %bars\n"                                                                     \
    "  barrier\n"                                                                                \
    "  %s0 = const 0 : i32\n"                                                                    \
    "  %true = const 1 : i1\n"                                                                   \
    "  %py = program_id 1 : i32\n"                                                               \
    "  %c16 = const 16 : i32\n"                                                                  \
    "  %y0 = mul %py, %c16 : i32\n"                                                              \
    "  %px = program_id 0 : i32\n"                                                               \
    "  %c32 = const 32 : i32\n"                                                                  \
    "  %xb = mul %px, %c32 : i32\n"                                                              \
    "  %shift = const " SHIFT " : i32\n"                                                         \
    "  %x0 = sub %xb, %shift : i32\n"                                                            \
    "  tma_load 0, %buf, %s0, %bars, %true, %x0, %y0\n"                                          \
    "  mbar_wait %bars, %s0, %s0\n"                                                              \
    "  %v = local_load %buf, %s0 : tile<16x32xf16>\n"                                            \
    "  %ri = arange 0, 16 : tile<16xi32>\n"                                                      \
    "  %ys = splat %y0 : tile<16xi32>\n"                                                         \
    "  %r = add %ys, %ri : tile<16xi32>\n"                                                       \
    "  %ci = arange 0, 32 : tile<32xi32>\n"                                                      \
    "  %xs = splat %x0 : tile<32xi32>\n"                                                         \
    "  %c = add %xs, %ci : tile<32xi32>\n"                                                       \
    "  %r2 = expand_dims 1, %r : tile<16x1xi32>\n"                                               \
    "  %ows = splat %ow : tile<16x1xi32>\n"                                                      \
    "  %ro = mul %r2, %ows : tile<16x1xi32>\n"                                                   \
    "  %outs = splat %out : tile<16x1xptr<f32>>\n"                                               \
    "  %rp = addptr %outs, %ro : tile<16x1xptr<f32>>\n"                                          \
    "  %c2 = expand_dims 0, %c : tile<1x32xi32>\n"                                               \
    "  %rpb = broadcast %rp : tile<16x32xptr<f32>>\n"                                            \
    "  %cb = broadcast %c2 : tile<16x32xi32>\n"                                                  \
    "  %p = addptr %rpb, %cb : tile<16x32xptr<f32>>\n"                                           \
    "  %vf = cast %v : tile<16x32xf32>\n"                                                        \
    "  store %p, %vf\n"                                                                          \
    "  barrier\n"                                                                                \
    "  mbar_inval %bars\n"                                                                       \
    "  return\n"                                                                                 \
    "}\n"

/* The box in rows of 64 bytes as they are, and with the 64-byte swizzle:
 * 16-byte chunk j of row r at j ^ (r / 2 % 4), the shared layout that
 * vec=8, per_phase=2, max_phase=4 describes (the copy and the reads
 * agree only if the map says the swizzle the layout does). */
static const char tcopy_src[] = TCOPY_SRC("0", ""),
                  tcopy_sw64_src[] = TCOPY_SRC("64", ", #shared<vec=8, per_phase=2, max_phase=4, ord=[1, 0]>"),
                  tcopy_before_src[] = TCOPY_SHIFTED_SRC("0", "", "8");

/* The kernel of src for this device, or NULL (with the reason printed)
 * on a GPU other than Hopper. The emulator and the GPU compile for
 * sm_90a. */
static trt_kernel *tcopy_kernel_of(prog *p, const char *src) {
    if (kind == TRT_DEVICE_CUDA && strcmp(trt_device_arch(dev), "sm_90") != 0) {
        printf("skipped: bulk tensor copies need an sm_90 GPU, this is %s\n", trt_device_arch(dev));
        return NULL;
    }
    trt_compile_options o = {.arch = kind == TRT_DEVICE_CPU ? NULL : "sm_90a"};
    p->text = NULL;
    if (trt_compile(dev, "tcopy.tir", src, strlen(src), &o, &p->mod) != TRT_OK)
        fail_msg("tcopy.tir does not compile: %s", trt_last_error(dev));
    trt_kernel *k = NULL;
    OK(trt_get_kernel(p->mod, "tcopy", &k));
    return k;
}

static trt_kernel *tcopy_kernel(prog *p) { return tcopy_kernel_of(p, tcopy_src); }

/* K x M f16 values (row stride sa) with fractional parts, both signs. */
static uint16_t *rand_f16s(int n) {
    uint16_t *h = malloc(sizeof *h * (size_t)n + 1);
    for (int i = 0; i < n; i++) h[i] = f16_bits(rand_f32());
    return h;
}

/* out (rows x ow) against the reference: element (y, x) is a's where
 * y < M and x < K, else 0 (the copy's fill). */
static void verify(const char *what, const uint16_t *a, const float *out, int K, int M, int sa, int ow, int rows) {
    for (int y = 0; y < rows; y++)
        for (int x = 0; x < ow; x++) {
            double want = y < M && x < K ? (double)f16_value(a[(size_t)y * sa + x]) : 0.0;
            float got = out[(size_t)y * ow + x];
            if ((double)got != want || !signbit(got) != !signbit(want))
                fail_msg("%s, K %d, M %d, stride %d: out[%d][%d] = %g, want %g on %s", what, K, M, sa, y, x, got, want,
                         trt_device_name(dev));
        }
}

/* One launch over the whole padded grid, checked. */
static void check_copy(trt_kernel *k, const char *what, int K, int M, int sa) {
    int gx = (int)cdiv(K, BOX_X), gy = (int)cdiv(M, BOX_Y), ow = gx * BOX_X, rows = gy * BOX_Y;
    uint16_t *a = rand_f16s(M * sa);
    float *out = poison_f32s(rows * ow);
    trt_buffer ba = upload(a, sizeof *a * (size_t)M * sa), bo = upload(out, sizeof *out * (size_t)rows * ow);
    trt_arg args[6] = {trt_buf(ba), trt_buf(bo), trt_int(K), trt_int(M), trt_int(sa), trt_int(ow)};
    launch(k, (uint32_t)gx, (uint32_t)gy, 1, args, 6);
    download(bo, out, sizeof *out * (size_t)rows * ow);
    verify(what, a, out, K, M, sa, ow, rows);
    OK(trt_free(dev, ba)); /* download freed bo */
    free(a), free(out);
}

/* Whole boxes, then edges cut along each dim and both (the dims are the
 * kernel's K and M arguments), a stride wider than a row, a single
 * element; without a swizzle and with one. */
static void test_tma_copy(void **state) {
    (void)state;
    static const int cases[][3] = {{64, 32, 64}, {45, 37, 56}, {32, 20, 40}, {50, 16, 64}, {1, 1, 8}, {96, 48, 200}};
    const char *srcs[] = {tcopy_src, tcopy_sw64_src}, *what[] = {"no swizzle", "64-byte swizzle"};
    for (size_t v = 0; v < sizeof srcs / sizeof srcs[0]; v++) {
        prog p;
        trt_kernel *k = tcopy_kernel_of(&p, srcs[v]);
        if (!k) skip();
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            check_copy(k, what[v], cases[i][0], cases[i][1], cases[i][2]);
        drop(&p);
    }
}

/* Arguments the copy engine cannot take: the launch's error, naming the
 * kernel, the argument read through the map, and what is wrong; the
 * output untouched. */
static void test_tma_bad_arguments(void **state) {
    (void)state;
    prog p;
    trt_kernel *k = tcopy_kernel(&p);
    if (!k) skip();
    enum { K = 40, M = 20, SA = 48, OW = 64, ROWS = 32 };
    uint16_t *a = rand_f16s(M * SA + 8);
    float *out = poison_f32s(ROWS * OW);
    trt_buffer ba = upload(a, sizeof *a * (M * SA + 8)), bo = upload(out, sizeof *out * ROWS * OW);
    const struct {
        size_t offset; /* bytes into a */
        int K, M, sa;
        const char *want[2];
    } cases[] = {
        {8, K, M, SA, {"'a'", "16-byte aligned"}}, /* the runtime's pointer check comes first */
        {0, K, M, 10, {"kernel 'tcopy' reads 'a' through a tensor map", "its stride 1 is 20 bytes (sa = 10 f16); "
                                                                         "the copy engine needs a multiple of 16 bytes"}},
        {0, K, 0, SA, {"kernel 'tcopy' reads 'a' through a tensor map", "its dim 1 is 0 elements (M); a tensor map "
                                                                         "needs 1 to 2^32"}},
        {0, -3, M, SA, {"kernel 'tcopy' reads 'a' through a tensor map", "its dim 0 is -3 elements (K)"}},
        {0, K, M, -SA, {"kernel 'tcopy' reads 'a' through a tensor map", "its stride 1 (sa = -48 f16) is not in 0 to "
                                                                          "2^40 bytes"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        trt_arg args[6] = {trt_buf_at(ba, cases[i].offset), trt_buf(bo), trt_int(cases[i].K), trt_int(cases[i].M),
                           trt_int(cases[i].sa), trt_int(OW)};
        trt_status st = trt_launch(k, 2, 1, 1, args, 6);
        const char *err = trt_last_error(dev);
        if (st != TRT_ERR_ARGUMENTS || !strstr(err, cases[i].want[0]) || !strstr(err, cases[i].want[1]))
            fail_msg("case %zu: %s: %s; want TRT_ERR_ARGUMENTS with \"%s\" and \"%s\"", i, trt_status_name(st), err,
                     cases[i].want[0], cases[i].want[1]);
    }
    download(bo, out, sizeof *out * ROWS * OW);
    for (int i = 0; i < ROWS * OW; i++)
        if (!isnan(out[i])) fail_msg("out[%d] = %g after launches that failed, want the poison", i, out[i]);
    OK(trt_free(dev, ba));
    free(a), free(out);
    drop(&p);
}

/* A box starting before its tensor (x coordinate -8): the copy engine
 * would read zeros there where a pointer load reads memory, so the
 * launch fails (ops.def, tma_load): the interpreter says so, the
 * emulator and the GPU trap (lower/cg_tma.c). Nothing stored. */
static void test_tma_negative_coordinate(void **state) {
    (void)state;
    prog p;
    trt_kernel *k = tcopy_kernel_of(&p, tcopy_before_src);
    if (!k) skip();
    enum { K = 64, M = 16, SA = 64, OW = 64 };
    uint16_t *a = rand_f16s(M * SA);
    float *out = poison_f32s(M * OW);
    trt_buffer ba = upload(a, sizeof *a * M * SA), bo = upload(out, sizeof *out * M * OW);
    trt_arg args[6] = {trt_buf(ba), trt_buf(bo), trt_int(K), trt_int(M), trt_int(SA), trt_int(OW)};
    trt_status st = trt_launch(k, 1, 1, 1, args, 6);
    if (st == TRT_OK) st = trt_sync(dev);
    const char *err = trt_last_error(dev);
    const char *want = kind == TRT_DEVICE_CPU ? "coordinate is below 0" : kind == TRT_DEVICE_EMU ? "coordinate below 0" : "";
    if (st == TRT_OK || !strstr(err, want))
        fail_msg("a box at x -8: %s: %s; want a failed launch saying \"%s\"", trt_status_name(st), err, want);
    print_message("reported: %s\n", err);
    if (kind != TRT_DEVICE_CUDA) { /* a trapped GPU context is lost: nothing more to read there */
        download(bo, out, sizeof *out * M * OW);
        for (int i = 0; i < M * OW; i++)
            if (!isnan(out[i])) fail_msg("out[%d] = %g after a launch that failed, want the poison", i, out[i]);
        OK(trt_free(dev, ba));
    }
    free(a), free(out);
    drop(&p);
}

/* On a stream, and replayed from a graph: the maps a capture records are
 * the ones the earlier launch made (on the GPU, kept with the module),
 * still there at the replay. A capture meeting a map the module has not
 * made fails on the GPU, which cannot copy it meanwhile, asking for the
 * work to run once first; the host devices make maps at each replay. */
static void test_tma_streams_and_graphs(void **state) {
    (void)state;
    prog p;
    trt_kernel *k = tcopy_kernel(&p);
    if (!k) skip();
    enum { K = 45, M = 37, SA = 56, GX = 2, GY = 3, OW = GX * BOX_X, ROWS = GY * BOX_Y };
    uint16_t *a = rand_f16s(M * SA);
    float *out = poison_f32s(ROWS * OW), *poison = poison_f32s(ROWS * OW);
    trt_buffer ba = upload(a, sizeof *a * M * SA), bo = upload(out, sizeof *out * ROWS * OW);
    trt_arg args[6] = {trt_buf(ba), trt_buf(bo), trt_int(K), trt_int(M), trt_int(SA), trt_int(OW)};
    trt_stream *s;
    OK(trt_stream_create(dev, &s));
    OK(trt_launch_on(s, k, GX, GY, 1, args, 6));
    OK(trt_read_async(s, bo, 0, out, sizeof *out * ROWS * OW));
    OK(trt_stream_sync(s));
    verify("on a stream", a, out, K, M, SA, OW, ROWS);

    trt_graph *g;
    OK(trt_stream_begin_capture(s));
    OK(trt_launch_on(s, k, GX, GY, 1, args, 6));
    OK(trt_stream_end_capture(s, &g));
    OK(trt_write(dev, bo, 0, poison, sizeof *poison * ROWS * OW));
    OK(trt_graph_launch(g, s));
    OK(trt_read_async(s, bo, 0, out, sizeof *out * ROWS * OW));
    OK(trt_stream_sync(s));
    verify("replayed", a, out, K, M, SA, OW, ROWS);
    trt_graph_destroy(g);

    args[3] = trt_int(M - 5); /* a map not made yet */
    OK(trt_stream_begin_capture(s));
    trt_status st = trt_launch_on(s, k, GX, GY, 1, args, 6);
    if (kind == TRT_DEVICE_CUDA) {
        if (st != TRT_ERR_INVALID_ARGUMENT || !strstr(trt_last_error(dev), "run the work once before capturing it"))
            fail_msg("a new map while capturing: %s: %s", trt_status_name(st), trt_last_error(dev));
        trt_stream_end_capture(s, NULL);
    } else {
        OK(st);
        OK(trt_stream_end_capture(s, &g));
        trt_graph_destroy(g);
    }
    trt_stream_destroy(s);
    OK(trt_free(dev, ba));
    OK(trt_free(dev, bo));
    free(a), free(out), free(poison);
    drop(&p);
}

/* the negative coordinate last: on a GPU the trap ends the context */
HARNESS_MAIN(cmocka_unit_test(test_tma_copy), cmocka_unit_test(test_tma_bad_arguments),
             cmocka_unit_test(test_tma_streams_and_graphs), cmocka_unit_test(test_tma_negative_coordinate))
