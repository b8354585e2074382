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
 * Then the code mutated the ways the ISA forbids, each of which the
 * emulator must report: no fence.proxy.async between the threads' copies
 * and wgmma's reads, no wgmma.fence before the first wgmma. Tolerance:
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

enum { ERR = 8192, MAXM = 256, MAXN = 256, K = 192 };

typedef struct mm_case {
    const char *kernel; /* matmul_f16 or matmul_bf16 */
    int bm, bn, bk, warps, a_layout, b_layout;
} mm_case;

static bool is_bf16(const mm_case *mc) { return strcmp(mc->kernel, "matmul_bf16") == 0; }

/* The kernel's optimized LLVM IR for sm_90a (malloc'd); its dynamic shared bytes. */
static char *compile(const mm_case *mc, uint32_t *dyn) {
    char *src;
    size_t len;
    const char *err;
    if (!tc_read_file(TILEC_SOURCE_DIR "/stdlib/matmul.tile", &src, &len, &err)) fail_msg("%s", err);
    tilec_define defs[] = {{"BLOCK_M", mc->bm}, {"BLOCK_N", mc->bn}, {"BLOCK_K", mc->bk}, {"GROUP_M", 8},
                           {"A_LAYOUT", mc->a_layout}, {"B_LAYOUT", mc->b_layout}, {"C_LAYOUT", 1}, {"EVEN", 1}};
    tilec_options opt;
    tilec_options_init(&opt);
    opt.emit = TILEC_EMIT_LLVM;
    opt.llvm_optimized = true;
    opt.sidecar = true;
    opt.kernel = mc->kernel;
    opt.arch = "sm_90a";
    opt.num_warps = mc->warps;
    opt.num_stages = 3;
    opt.defines = defs;
    opt.ndefines = sizeof defs / sizeof defs[0];
    tilec_output out;
    if (tilec_compile("stdlib/matmul.tile", src, len, &opt, &out) != TILEC_OK) fail_msg("%s", out.diagnostics);
    free(src);
    const char *d = out.sidecar ? strstr(out.sidecar, "dynamic_smem(") : NULL;
    *dyn = d ? (uint32_t)strtoul(d + strlen("dynamic_smem("), NULL, 10) : 0;
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

/* Runs ir over a 2 x 1 grid of tiles (M = 2 bm... capped, N = bn); C
 * checked against a double reference when it runs. */
static emu_result run(const mm_case *mc, const char *ir, uint32_t dyn, char *err) {
    emu_module *m = emu_module_load(ir, strlen(ir), err, ERR);
    if (!m) fail_msg("%s", err);
    int M = mc->bm, N = mc->bn;
    static uint16_t A[MAXM * K], B[K * MAXN], C[MAXM * MAXN];
    /* random non-zero values with a few bits, both signs */
    for (int i = 0; i < M * K; i++) A[i] = to_bits(mc, (float)(rand() % 15 - 7) / 8.0f + 0x1p-5f);
    for (int i = 0; i < K * N; i++) B[i] = to_bits(mc, (float)(rand() % 13 - 6) / 4.0f + 0x1p-4f);
    memset(C, 0xff, sizeof C); /* NaN */
    /* A^T or B^T stored row-major: the strides say so (A_LAYOUT / B_LAYOUT 2) */
    int64_t sam = mc->a_layout == 2 ? 1 : K, sak = mc->a_layout == 2 ? M : 1;
    int64_t sbk = mc->b_layout == 2 ? 1 : N, sbn = mc->b_layout == 2 ? K : 1;
    emu_buffer bufs[3] = {{A, sizeof A}, {B, sizeof B}, {C, sizeof C}};
    emu_arg args[16] = {{true, 0, 0, 0},   {true, 1, 0, 0},   {true, 2, 0, 0},   {false, 0, 0, M},
                        {false, 0, 0, N},  {false, 0, 0, K},  {false, 0, 0, sam}, {false, 0, 0, sak},
                        {false, 0, 0, sbk}, {false, 0, 0, sbn}, {false, 0, 0, N},  {false, 0, 0, 1},
                        {false, 0, 0, 0},  {false, 0, 0, 0},  {false, 0, 0, 0},  {true, 2, 0, 0}};
    emu_launch l = {mc->kernel, {1, 1, 1}, args, 16, bufs, 3, NULL, NULL, dyn, NULL, 0};
    emu_result res = emu_run(m, &l, err, ERR);
    emu_module_free(m);
    if (res != EMU_OK) return res;
    double out_ulp = is_bf16(mc) ? 0x1p-8 : 0x1p-11;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double p = of_bits(mc, A[mc->a_layout == 2 ? k * M + i : i * K + k]) *
                           of_bits(mc, B[mc->b_layout == 2 ? j * K + k : k * N + j]);
                ref += p, mag += fabs(p);
            }
            double got = of_bits(mc, C[i * N + j]);
            if (!(fabs(got - ref) <= K * 0x1p-23 * mag + out_ulp * fabs(ref)))
                fail_msg("%s %dx%dx%d, %d warps, layouts %d/%d: C[%d][%d] = %.9g, want %.9g", mc->kernel, mc->bm, mc->bn,
                         mc->bk, mc->warps, mc->a_layout, mc->b_layout, i, j, got, ref);
        }
    return EMU_OK;
}

static const mm_case cases[] = {
    {"matmul_f16", 128, 128, 32, 4, 1, 1},  /* A: 64-byte rows; B MN-major in 128-byte pieces */
    {"matmul_f16", 128, 64, 64, 4, 1, 2},   /* A: 128-byte rows; B^T stored: K-major B */
    {"matmul_bf16", 128, 128, 64, 8, 2, 1}, /* two warpgroups; A^T stored: MN-major A */
    {"matmul_f16", 64, 256, 32, 4, 2, 2},   /* one 64-row piece, N 256 */
};

static void test_generated_matmuls(void **state) {
    (void)state;
    srand(90);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t dyn;
        char *ir = compile(&cases[i], &dyn), err[ERR];
        if (run(&cases[i], ir, dyn, err) != EMU_OK) fail_msg("%s", err);
        free(ir);
    }
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

/* The first case's code with every line holding `what` removed (or, with
 * `to`, every `what` rewritten as it) must fail with a report saying `want`. */
static void expect_report_for(const char *what, const char *to, const char *want) {
    uint32_t dyn;
    char *ir = compile(&cases[0], &dyn), err[ERR];
    if (!(to ? replace_all(ir, what, to) : remove_lines(ir, what)))
        fail_msg("the code has no '%s' to change: update this test", what);
    assert_int_equal(run(&cases[0], ir, dyn, err), EMU_ERROR);
    if (!strstr(err, want)) fail_msg("without '%s': not the report wanted ('%s'): %s", what, want, err);
    print_message("reported: %s\n", err);
    free(ir);
}

static void expect_report(const char *what, const char *want) { expect_report_for(what, NULL, want); }

static void test_no_proxy_fence_is_reported(void **state) {
    (void)state;
    expect_report("fence.proxy.async.shared::cta", "without a fence.proxy.async");
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generated_matmuls),
        cmocka_unit_test(test_no_proxy_fence_is_reported),
        cmocka_unit_test(test_no_wgmma_fence_is_reported),
        cmocka_unit_test(test_no_trip_wait_is_reported),
        cmocka_unit_test(test_no_final_wait_is_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
