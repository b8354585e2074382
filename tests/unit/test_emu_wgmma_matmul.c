/* The sm_90a lowering of `dot` (lower/cg_dot_wgmma.c) on the emulator:
 * stdlib/matmul.tile's matmul_f16 and matmul_bf16 compiled with
 * --arch=sm_90a, their optimized NVPTX LLVM IR run on the emulator (which
 * checks wgmma's fragments, descriptors, swizzles, fences and waits
 * against the PTX ISA: emu/wgmma.c, tests/unit/test_emu_wgmma.c), C
 * compared with a float64 reference. Each case first checks that the
 * code has wgmma.mma_async (so a fallback to mma.sync cannot pass for it)
 * and runs in one layout the descriptors must know:
 *  - A row-major (K-major, 64- or 128-byte rows) and B row-major (N
 *    contiguous: MN-major, transposed, its 256-byte rows in 128-byte
 *    pieces), or B^T stored (K-major); A^T stored (MN-major A);
 *  - 4 warps (one warpgroup, two 64-row pieces) and 8 (two warpgroups).
 * With EVEN the loads become bulk tensor copies (lower/tma_copies.c): the
 * test reads the kernel's tensor maps from its IR (`tensor_map(...)`, its
 * own reading of the printed form) and encodes them as the runtime would,
 * in a launch buffer passed after the arguments; without EVEN (an M, N and
 * K tail) the rows wrap as on sm_80 and A keeps cp.async, or with
 * EDGE_MASKS the masks become the maps' sizes.
 * Then the code mutated the ways the ISA forbids, each of which the
 * emulator must report: no fence.proxy.async between the threads' copies
 * and wgmma's reads, no wgmma.fence before the first wgmma; the waits of
 * the bulk copies' mbarriers gone or always on parity 0, no expect_tx;
 * with a producer warpgroup (lower/warp_specialize.c: on by default with
 * 8 warps, asked for with 4, refused in one case), the consumers'
 * hand-back of slots gone or counted for half of them.
 * Tolerance:
 * the f32 sum of K exact products, in any order: K 2^-23 sum |a b|, then
 * C's rounding to f16 (2^-11 relative) or bf16 (2^-8). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/emu.h"
#include "half_float.h"
#include "support/support.h"
#include "tilec.h"

enum { ERR = 8192, MAXM = 256, MAXN = 256, KMAX = 192 };

typedef struct mm_case {
    const char *kernel; /* matmul_f16 or matmul_bf16 */
    int bm, bn, bk, warps, a_layout, b_layout;
    int even;       /* 1: M, N, K multiples of the blocks; 0: tails (M bm - 5, N bn - 3, K - 7) */
    int edge_masks; /* stdlib/matmul.tile's EDGE_MASKS */
    int ws;         /* tilec_options.warp_specialize: 0 the compiler's choice (8 warps: on), on, off */
} mm_case;

enum { MAX_MAPS = 4, MAP_BYTES = EMU_TENSOR_MAP_BYTES };

static bool is_bf16(const mm_case *mc) { return strcmp(mc->kernel, "matmul_bf16") == 0; }

/* The kernel's optimized LLVM IR for sm_90a (malloc'd); its dynamic shared
 * bytes, and its tile IR's first line (the signature and tensor maps). */
static char side_head[4096];
static char *compile(const mm_case *mc, uint32_t *dyn) {
    char *src;
    size_t len;
    const char *err;
    if (!tc_read_file(TILEC_SOURCE_DIR "/stdlib/matmul.tile", &src, &len, &err)) fail_msg("%s", err);
    tilec_define defs[] = {{"BLOCK_M", mc->bm}, {"BLOCK_N", mc->bn}, {"BLOCK_K", mc->bk}, {"GROUP_M", 8},
                           {"A_LAYOUT", mc->a_layout}, {"B_LAYOUT", mc->b_layout}, {"C_LAYOUT", 1},
                           {"EVEN", mc->even}, {"EDGE_MASKS", mc->edge_masks}};
    tilec_options opt;
    tilec_options_init(&opt);
    opt.emit = TILEC_EMIT_LLVM;
    opt.llvm_optimized = true;
    opt.sidecar = true;
    opt.kernel = mc->kernel;
    opt.arch = "sm_90a";
    opt.num_warps = mc->warps;
    opt.num_stages = 3;
    opt.warp_specialize = mc->ws;
    opt.defines = defs;
    opt.ndefines = sizeof defs / sizeof defs[0];
    tilec_output out;
    if (tilec_compile("stdlib/matmul.tile", src, len, &opt, &out) != TILEC_OK) fail_msg("%s", out.diagnostics);
    free(src);
    const char *d = out.sidecar ? strstr(out.sidecar, "dynamic_smem(") : NULL;
    *dyn = d ? (uint32_t)strtoul(d + strlen("dynamic_smem("), NULL, 10) : 0;
    const char *k = out.sidecar ? strstr(out.sidecar, "\nkernel @") : NULL;
    if (!k) fail_msg("no kernel in the sidecar");
    snprintf(side_head, sizeof side_head, "%.*s", (int)strcspn(k + 1, "\n"), k + 1);
    char *ir = out.data;
    out.data = NULL;
    tilec_output_free(&out);
    if (!strstr(ir, "wgmma.mma_async")) fail_msg("%s %dx%dx%d: no wgmma.mma_async in the code", mc->kernel, mc->bm, mc->bn, mc->bk);
    if (!strstr(ir, "wgmma.wait_group.sync.aligned 1;")) /* the loop's dot_async (async_dots) */
        fail_msg("%s %dx%dx%d: the loop's wgmma is not waited a trip later", mc->kernel, mc->bm, mc->bn, mc->bk);
    return ir;
}

static uint16_t to_bits(const mm_case *mc, float v) { return is_bf16(mc) ? bf16_bits(v) : f16_bits(v); }
static double of_bits(const mm_case *mc, uint16_t b) { return is_bf16(mc) ? bf16_value(b) : f16_value(b); }

/* The matmul's parameters, in order, and their values for a launch. */
static const char *const param_names[16] = {"a", "b", "c", "M", "N", "K", "stride_am", "stride_ak", "stride_bk",
                                            "stride_bn", "stride_cm", "stride_cn", "stride_ab", "stride_bb",
                                            "stride_cb", "bias"};

/* One size or stride of a printed tensor map: `64`, `%M`, `8 * %s`, `*`. */
static int64_t map_term(const char **p, const emu_arg *args) {
    while (**p == ' ') (*p)++;
    if (**p == '*') return (*p)++, INT64_C(1) << 31;
    int64_t scale = 1;
    if (**p != '%') {
        char *end;
        scale = strtoll(*p, &end, 10);
        *p = end;
        while (**p == ' ') (*p)++;
        if (**p != '*') return scale;
        (*p)++;
        while (**p == ' ') (*p)++;
    }
    (*p)++; /* % */
    size_t n = strcspn(*p, ",]");
    for (int i = 0; i < 16; i++)
        if (strlen(param_names[i]) == n && !strncmp(*p, param_names[i], n)) return *p += n, scale * (int64_t)args[i].bits;
    fail_msg("tensor map term '%.*s' names no parameter", (int)n, *p);
    return 0;
}

static void map_list(const char **p, const char *key, const emu_arg *args, int64_t *out, unsigned *n) {
    const char *at = strstr(*p, key);
    if (!at) fail_msg("no '%s' in a tensor map", key);
    *p = at + strlen(key);
    for (*n = 0; **p != ']'; (*n)++) {
        if (*n == EMU_TENSOR_MAX_RANK) fail_msg("a tensor map of too many dims");
        out[*n] = map_term(p, args);
        if (**p == ',') (*p)++;
    }
}

/* The tensor maps of side_head, encoded for the launch (as the runtime's
 * emulator device does) into maps, one pointer argument each after args. */
static uint32_t encode_maps(const emu_arg *args, emu_buffer *bufs, uint8_t *maps, emu_arg *out) {
    uint32_t n = 0;
    for (const char *p = strstr(side_head, "tensor_map(%"); p; p = strstr(p, "tensor_map(%"), n++) {
        if (n == MAX_MAPS) fail_msg("too many tensor maps");
        p += strlen("tensor_map(%");
        size_t len = strcspn(p, ",");
        int base = -1;
        for (int i = 0; i < 16; i++)
            if (strlen(param_names[i]) == len && !strncmp(p, param_names[i], len)) base = i;
        if (base < 0 || !args[base].is_ptr) fail_msg("a tensor map's base is no pointer argument");
        int64_t dims[EMU_TENSOR_MAX_RANK], strides[EMU_TENSOR_MAX_RANK], box[EMU_TENSOR_MAX_RANK];
        unsigned nd, ns, nb;
        map_list(&p, "dims=[", args, dims, &nd);
        map_list(&p, "strides=[", args, strides, &ns);
        map_list(&p, "box=[", args, box, &nb);
        const char *sw = strstr(p, "swizzle=");
        if (nd != ns || nd != nb || !sw) fail_msg("a tensor map misread");
        int swz = atoi(sw + strlen("swizzle="));
        emu_tensor_map_desc d = {.global_address = emu_buffer_address(bufs, args[base].buffer, args[base].offset),
                                 .elem_bytes = 2, .rank = nd,
                                 .swizzle = swz == 128  ? EMU_SWIZZLE_128B
                                            : swz == 64 ? EMU_SWIZZLE_64B
                                            : swz == 32 ? EMU_SWIZZLE_32B
                                                        : EMU_SWIZZLE_NONE};
        for (unsigned k = 0; k < nd; k++) {
            d.global_dim[k] = (uint64_t)dims[k], d.box_dim[k] = (uint32_t)box[k], d.element_stride[k] = 1;
            /* the runtime's rule (runtime/tensor_maps.c): a stride of 0 where
             * it multiplies only 0 (a batch dim, box 1) becomes 16 bytes */
            if (k) d.global_stride[k - 1] = strides[k] == 0 && box[k] == 1 ? 16 : (uint64_t)strides[k] * 2;
        }
        char why[256];
        if (!emu_tensor_map_encode(maps + n * MAP_BYTES, &d, why, sizeof why)) fail_msg("tensor map %u: %s", n, why);
        out[n] = (emu_arg){true, 3, n * MAP_BYTES, 0};
    }
    return n;
}

/* Runs ir on one tile of C (M = bm, N = bn; less with tails); C checked
 * against a double reference when it runs. */
static emu_result run(const mm_case *mc, const char *ir, uint32_t dyn, char *err) {
    emu_module *m = emu_module_load(ir, strlen(ir), err, ERR);
    if (!m) fail_msg("%s", err);
    int M = mc->even ? mc->bm : mc->bm - 5, N = mc->even ? mc->bn : mc->bn - 3, K = mc->even ? KMAX : KMAX - 7;
    static uint16_t A[MAXM * KMAX], B[KMAX * MAXN], C[MAXM * MAXN];
    /* random non-zero values with a few bits, both signs; the padding too */
    for (size_t i = 0; i < sizeof A / 2; i++) A[i] = to_bits(mc, (float)(rand() % 15 - 7) / 8.0f + 0x1p-5f);
    for (size_t i = 0; i < sizeof B / 2; i++) B[i] = to_bits(mc, (float)(rand() % 13 - 6) / 4.0f + 0x1p-4f);
    memset(C, 0xff, sizeof C); /* NaN */
    /* A^T or B^T stored row-major: the strides say so (A_LAYOUT / B_LAYOUT
     * 2); rows padded to whole blocks, as the layouts promise multiples of
     * 16 bytes */
    int64_t sam = mc->a_layout == 2 ? 1 : KMAX, sak = mc->a_layout == 2 ? mc->bm : 1;
    int64_t sbk = mc->b_layout == 2 ? 1 : mc->bn, sbn = mc->b_layout == 2 ? KMAX : 1;
    static _Alignas(EMU_TENSOR_MAP_ALIGN) uint8_t maps[MAX_MAPS * MAP_BYTES];
    emu_buffer bufs[4] = {{A, sizeof A}, {B, sizeof B}, {C, sizeof C}, {maps, sizeof maps}};
    emu_arg args[16 + MAX_MAPS] = {{true, 0, 0, 0},   {true, 1, 0, 0},   {true, 2, 0, 0},   {false, 0, 0, M},
                                   {false, 0, 0, N},  {false, 0, 0, K},  {false, 0, 0, sam}, {false, 0, 0, sak},
                                   {false, 0, 0, sbk}, {false, 0, 0, sbn}, {false, 0, 0, mc->bn}, {false, 0, 0, 1},
                                   {false, 0, 0, 0},  {false, 0, 0, 0},  {false, 0, 0, 0},  {true, 2, 0, 0}};
    uint32_t nargs = 16 + encode_maps(args, bufs, maps, args + 16);
    emu_launch l = {mc->kernel, {1, 1, 1}, args, nargs, bufs, 4, NULL, NULL, dyn, NULL, 0};
    emu_result res = emu_run(m, &l, err, ERR);
    emu_module_free(m);
    if (res != EMU_OK) return res;
    double out_ulp = is_bf16(mc) ? 0x1p-8 : 0x1p-11;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double p = of_bits(mc, A[i * sam + k * sak]) * of_bits(mc, B[k * sbk + j * sbn]);
                ref += p, mag += fabs(p);
            }
            double got = of_bits(mc, C[i * mc->bn + j]);
            if (!(fabs(got - ref) <= K * 0x1p-23 * mag + out_ulp * fabs(ref)))
                fail_msg("%s %dx%dx%d, %d warps, layouts %d/%d: C[%d][%d] = %.9g, want %.9g", mc->kernel, mc->bm, mc->bn,
                         mc->bk, mc->warps, mc->a_layout, mc->b_layout, i, j, got, ref);
        }
    return EMU_OK;
}

static const mm_case cases[] = {
    {"matmul_f16", 128, 128, 32, 4, 1, 1, 1, 0, 0},  /* A: 64-byte rows; B MN-major in 128-byte pieces */
    {"matmul_f16", 128, 64, 64, 4, 1, 2, 1, 0, 0},   /* A: 128-byte rows; B^T stored: K-major B */
    {"matmul_bf16", 128, 128, 64, 8, 2, 1, 1, 0, 0}, /* two warpgroups; A^T stored: MN-major A */
    {"matmul_f16", 64, 256, 32, 4, 2, 2, 1, 0, 0},   /* one 64-row piece, N 256 */
    {"matmul_f16", 128, 128, 64, 8, 1, 1, 0, 0, 0},  /* tails, rows wrapped: A by cp.async, B by bulk copies */
    {"matmul_bf16", 128, 128, 64, 8, 1, 1, 0, 1, 0}, /* tails as the maps' sizes (sm_90a's table) */
    {"matmul_f16", 128, 64, 64, 4, 2, 2, 0, 1, 0},   /* the same, both transposed */
    /* a producer warpgroup (lower/warp_specialize.c), on by default above
     * with 8 warps: asked for with 4, refused with 8 */
    {"matmul_f16", 128, 128, 32, 4, 1, 1, 1, 0, TILEC_WARP_SPECIALIZE_ON},
    {"matmul_f16", 128, 128, 32, 8, 1, 1, 1, 0, 0}, /* six trips: every slot refilled after a hand-back */
    {"matmul_bf16", 128, 128, 64, 8, 2, 1, 1, 0, TILEC_WARP_SPECIALIZE_OFF},
};

/* Whether a case's code has a producer warpgroup: its consumers' named
 * barrier, its registers moved. */
static bool specialized(const char *ir) { return strstr(ir, "setmaxnreg.") || strstr(ir, "@llvm.nvvm.barrier(i32 1,"); }

static void test_generated_matmuls(void **state) {
    (void)state;
    srand(90);
    int ws = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t dyn;
        char *ir = compile(&cases[i], &dyn), err[ERR];
        const mm_case *mc = &cases[i];
        bool want = mc->even + mc->edge_masks && mc->ws != TILEC_WARP_SPECIALIZE_OFF &&
                    (mc->ws == TILEC_WARP_SPECIALIZE_ON || mc->warps >= 8);
        if (specialized(ir) != want)
            fail_msg("case %zu: %s a producer warpgroup, expected %s", i, specialized(ir) ? "with" : "without",
                     want ? "one" : "none");
        ws += want;
        if (run(&cases[i], ir, dyn, err) != EMU_OK) fail_msg("%s", err);
        free(ir);
    }
    assert_true(ws >= 3);
}

/* Removes every line of ir that contains `what`; how many it removed. */
static int remove_lines(char *ir, const char *what) {
    int n = 0;
    for (char *p = strstr(ir, what); p; p = strstr(p, what)) {
        char *start = p, *end = strchr(p, '\n');
        while (start > ir && start[-1] != '\n') start--;
        end = end ? end + 1 : p + strlen(p);
        memmove(start, end, strlen(end) + 1);
        p = start, n++;
    }
    return n;
}

/* Rewrites every `what` in ir as `to`, of the same length; how many. */
static int replace_all(char *ir, const char *what, const char *to) {
    int n = 0;
    for (char *p = strstr(ir, what); p; p = strstr(p + 1, what)) memcpy(p, to, strlen(to)), n++;
    return n;
}

/* Case `mc`'s code with every line holding `what` removed (or, with
 * `to`, every `what` rewritten as it) must fail with a report saying `want`. */
static void expect_report_in(const mm_case *mc, const char *what, const char *to, const char *want) {
    uint32_t dyn;
    char *ir = compile(mc, &dyn), err[ERR];
    if (!(to ? replace_all(ir, what, to) : remove_lines(ir, what)))
        fail_msg("the code has no '%s' to change: update this test", what);
    assert_int_equal(run(mc, ir, dyn, err), EMU_ERROR);
    if (!strstr(err, want)) fail_msg("without '%s': not the report wanted ('%s'): %s", what, want, err);
    print_message("reported: %s\n", err);
    free(ir);
}

static void expect_report_for(const char *what, const char *to, const char *want) {
    expect_report_in(&cases[0], what, to, want);
}

static void expect_report(const char *what, const char *want) { expect_report_for(what, NULL, want); }

/* the case whose A ring keeps cp.async (rows wrapped), beside B's bulk copies */
static const mm_case *mixed_case(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!cases[i].even && !cases[i].edge_masks) return &cases[i];
    fail_msg("no case keeps cp.async");
    return NULL;
}

static void test_no_proxy_fence_is_reported(void **state) {
    (void)state;
    expect_report_in(mixed_case(), "fence.proxy.async.shared::cta", NULL, "without a fence.proxy.async");
}

static void test_no_wgmma_fence_is_reported(void **state) {
    (void)state;
    expect_report("wgmma.fence.sync.aligned", "without a wgmma.fence");
}

/* async_dots: the loop's wgmma waited one trip later (wait_group 1), and
 * for good after the loop (wait_group 0) */
static void test_no_trip_wait_is_reported(void **state) {
    (void)state;
    expect_report("wgmma.wait_group.sync.aligned 1;", "which the wgmma.mma_async at");
}

static void test_no_final_wait_is_reported(void **state) {
    (void)state;
    expect_report_for("wgmma.wait_group.sync.aligned 0;", "wgmma.wait_group.sync.aligned 1;", "pending");
}

/* with cp.async, a refill over a slot the previous trip's wgmma reads is
 * the threads' write (the report above names the wgmma the same way) */
static void test_no_trip_wait_with_copies_is_reported(void **state) {
    (void)state;
    expect_report_in(mixed_case(), "wgmma.wait_group.sync.aligned 1;", NULL, "which the wgmma.mma_async at");
}

/* Rewrites the right-hand side of every line holding `what`, from its
 * `= ` on, as `to` (valid LLVM IR of the same result type); how many. */
static char *rewrite_calls(const char *ir, const char *what, const char *to, int *n) {
    size_t cap = strlen(ir) + 1;
    char *out = malloc(cap), *o = out;
    *n = 0;
    for (const char *line = ir; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line + 1) : strlen(line);
        const char *eq = strstr(line, " = ");
        if (eq && eq < line + len && strstr(line, what) && strstr(line, what) < line + len) {
            size_t head = (size_t)(eq - line) + 3;
            memcpy(o, line, head), o += head;
            o += sprintf(o, "%s\n", to), (*n)++;
        } else {
            memcpy(o, line, len), o += len;
        }
        line += len;
    }
    *o = 0;
    return out;
}

/* The bulk copies' mbarrier waits: gone (a thread reads its slot while the
 * copy may be landing) or always on parity 0 (the phase never flips: from
 * the second round of the ring on, a wait passes at once). Each must be
 * reported as a read of bytes in flight. */
/* Every try_wait's parity operand (its last, `i32 %x)`) as 0. */
static char *parity_zero(const char *ir, int *n) {
    char *out = malloc(strlen(ir) + 1), *o = out;
    *n = 0;
    for (const char *line = ir; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line + 1) : strlen(line);
        const char *w = strstr(line, "mbarrier.try_wait.parity"), *last = NULL;
        for (const char *q = line; w && w < line + len && (q = strstr(q, ", i32 ")) && q < line + len; q++) last = q;
        if (w && w < line + len && last) {
            size_t head = (size_t)(last - line) + strlen(", i32 ");
            const char *close = strchr(last, ')');
            memcpy(o, line, head), o += head;
            *o++ = '0';
            size_t tail = len - (size_t)(close - line);
            memcpy(o, close, tail), o += tail, (*n)++;
        } else {
            memcpy(o, line, len), o += len;
        }
        line += len;
    }
    *o = 0;
    return out;
}

static void expect_wait_report(const char *to) {
    uint32_t dyn;
    const mm_case *mc = &cases[0]; /* BLOCK_K 32, 3 stages, K 192: six trips, two rounds of the ring */
    char *ir = compile(mc, &dyn), err[ERR];
    int n;
    char *mut = to ? rewrite_calls(ir, "mbarrier.try_wait.parity", to, &n) : parity_zero(ir, &n);
    if (!n) fail_msg("the code has no mbarrier.try_wait.parity to change: update this test");
    if (!to && !strstr(mut, ", i32 0) #")) fail_msg("the parity was not rewritten: update this test");
    assert_int_equal(run(mc, mut, dyn, err), EMU_ERROR);
    if (!strstr(err, "in flight") && !strstr(err, "still writing") && !strstr(err, "which no thread of this CTA wrote"))
        fail_msg("without the waits (%s): not the report wanted: %s", to, err);
    print_message("reported: %s\n", err);
    free(mut);
    free(ir);
}

static void test_no_mbarrier_wait_is_reported(void **state) {
    (void)state;
    expect_wait_report("add i32 0, 1");
}

static void test_mbarrier_phase_not_flipped_is_reported(void **state) {
    (void)state;
    expect_wait_report(NULL);
}

/* no arrive.expect_tx: the phase has no arrival to complete it */
static void test_no_expect_tx_is_reported(void **state) {
    (void)state;
    expect_report_in(&cases[2], "mbarrier.arrive.expect_tx", NULL, "deadlock");
}

/* Warp specialization's hand-back of slots (a case of more trips than
 * stages, so that the producer waits for hand-backs): without the
 * consumers' arrivals the producer waits forever (a deadlock); with the
 * `empty` mbarriers counting half the consumers, phases complete twice a
 * trip, and the producer either refills a slot the other warpgroup's
 * wgmma still reads or waits on a parity whose phase went by (a
 * deadlock): which depends on the threads' order, either is reported. */
static const mm_case *ws_case(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (cases[i].warps == 8 && cases[i].even && !cases[i].ws && KMAX / cases[i].bk > 3) return &cases[i];
    fail_msg("no case with a producer warpgroup and two consumer warpgroups");
    return NULL;
}

static void test_ws_no_arrival_is_reported(void **state) {
    (void)state;
    expect_report_in(ws_case(), "mbarrier.arrive.shared::cta.b64 _, [$0];", NULL, "deadlock");
}

static void test_ws_half_arrivals_are_reported(void **state) {
    (void)state;
    const mm_case *mc = ws_case();
    uint32_t dyn;
    char *ir = compile(mc, &dyn), err[ERR];
    /* the empty mbarriers' init: one arrival per consumer thread, 256 */
    int n = 0;
    for (char *p = strstr(ir, "mbarrier.init.shared"); p; p = strstr(p + 1, "mbarrier.init.shared")) {
        char *eol = strchr(p, '\n'), *c = strstr(p, ", i32 256)");
        if (c && (!eol || c < eol)) memcpy(c, ", i32 128)", strlen(", i32 128)")), n++;
    }
    if (!n) fail_msg("no mbarrier.init of 256 arrivals: update this test");
    assert_int_equal(run(mc, ir, dyn, err), EMU_ERROR);
    if (!strstr(err, "still reads") && !strstr(err, "more arrivals") && !strstr(err, "deadlock"))
        fail_msg("with half the arrivals: not the report wanted: %s", err);
    print_message("reported: %s\n", err);
    free(ir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generated_matmuls),
        cmocka_unit_test(test_no_proxy_fence_is_reported),
        cmocka_unit_test(test_no_wgmma_fence_is_reported),
        cmocka_unit_test(test_no_trip_wait_is_reported),
        cmocka_unit_test(test_no_final_wait_is_reported),
        cmocka_unit_test(test_no_trip_wait_with_copies_is_reported),
        cmocka_unit_test(test_no_mbarrier_wait_is_reported),
        cmocka_unit_test(test_mbarrier_phase_not_flipped_is_reported),
        cmocka_unit_test(test_no_expect_tx_is_reported),
        cmocka_unit_test(test_ws_no_arrival_is_reported),
        cmocka_unit_test(test_ws_half_arrivals_are_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
