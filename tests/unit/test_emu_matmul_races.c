/* The emulator's race checks on the pipelined loop the compiler generates:
 * stdlib/matmul.tile's matmul_f16 (64x64x32, 4 warps, 3 stages, EVEN), its
 * optimized NVPTX LLVM IR run on one CTA as shipped, then mutated the two
 * ways a pipeline goes wrong:
 *  - the barrier after the loop body's cp.async.wait_group removed: the
 *    next trip's refill (a cp.async into the stage this trip read) and the
 *    reads of the stage that just landed are then unordered with other
 *    threads' accesses; the emulator must report a data race;
 *  - that wait weakened (wait_group 2 for 1): the next trip reads a stage
 *    whose copies are still in flight; the emulator must say so.
 * The unmutated loop runs clean and gives the right product, so the
 * reports come from the mutations. The mutations find their places by the
 * text of the loop's last `cp.async.wait.group(i32 1)` and the barrier
 * after it; if codegen changes that shape, this test says so and fails. */
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

enum { ERR = 8192, BM = 64, BN = 64, BK = 32, M = 64, N = 64, K = 256, WARPS = 4, STAGES = 3 };

static const char WAIT_BARRIER[] = "tail call void @llvm.nvvm.cp.async.wait.group(i32 1)\n"
                                   "  tail call void @llvm.nvvm.barrier0()\n";

/* matmul_f16's optimized LLVM IR (malloc'd) and its dynamic shared bytes. */
static char *compile(uint32_t *dyn) {
    char *src;
    size_t len;
    const char *err;
    if (!tc_read_file(TILEC_SOURCE_DIR "/stdlib/matmul.tile", &src, &len, &err)) fail_msg("%s", err);
    tilec_define defs[] = {{"BLOCK_M", BM}, {"BLOCK_N", BN}, {"BLOCK_K", BK}, {"GROUP_M", 8},
                           {"A_LAYOUT", 1}, {"B_LAYOUT", 1}, {"C_LAYOUT", 1}, {"EVEN", 1}};
    tilec_options opt;
    tilec_options_init(&opt);
    opt.emit = TILEC_EMIT_LLVM;
    opt.llvm_optimized = true;
    opt.sidecar = true;
    opt.kernel = "matmul_f16";
    opt.num_warps = WARPS;
    opt.num_stages = STAGES;
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
    return ir;
}

/* The last occurrence of WAIT_BARRIER in ir: the loop body's. */
static char *loop_wait(char *ir) {
    char *last = NULL;
    for (char *p = strstr(ir, WAIT_BARRIER); p; p = strstr(p + 1, WAIT_BARRIER)) last = p;
    if (!last) fail_msg("the matmul loop no longer ends in a wait_group 1 and a barrier: update this test's mutations");
    return last;
}

/* Runs ir on one CTA; C checked against a double reference when it runs. */
static emu_result run(const char *ir, uint32_t dyn, char *err) {
    emu_module *m = emu_module_load(ir, strlen(ir), err, ERR);
    if (!m) fail_msg("%s", err);
    static uint16_t A[M * K], B[K * N], C[M * N];
    for (int i = 0; i < M * K; i++) A[i] = f16_bits((float)((i * 37 % 17) - 8) / 8.0f + 0x1p-4f);
    for (int i = 0; i < K * N; i++) B[i] = f16_bits((float)((i * 11 % 13) - 6) / 4.0f + 0x1p-3f);
    memset(C, 0xff, sizeof C);
    emu_buffer bufs[3] = {{A, sizeof A}, {B, sizeof B}, {C, sizeof C}};
    emu_arg args[16] = {
        {true, 0, 0, 0},          {true, 1, 0, 0},          {true, 2, 0, 0},         {false, 0, 0, M},
        {false, 0, 0, N},         {false, 0, 0, K},         {false, 0, 0, K},        {false, 0, 0, 1},
        {false, 0, 0, N},         {false, 0, 0, 1},         {false, 0, 0, N},        {false, 0, 0, 1},
        {false, 0, 0, 0},         {false, 0, 0, 0},         {false, 0, 0, 0},        {true, 2, 0, 0}};
    emu_launch l = {"matmul_f16", {1, 1, 1}, args, 16, bufs, 3, NULL, NULL, dyn, NULL, 0};
    emu_result res = emu_run(m, &l, err, ERR);
    emu_module_free(m);
    if (res != EMU_OK) return res;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double p = (double)f16_value(A[i * K + k]) * f16_value(B[k * N + j]);
                ref += p, mag += fabs(p);
            }
            double got = f16_value(C[i * N + j]);
            if (!(fabs(got - ref) <= 0x1p-9 * mag)) fail_msg("C[%d][%d] = %g, want %g", i, j, got, ref);
        }
    return EMU_OK;
}

static void test_loop_runs_clean(void **state) {
    (void)state;
    uint32_t dyn;
    char *ir = compile(&dyn), err[ERR];
    loop_wait(ir); /* the shape the mutations need is there */
    if (run(ir, dyn, err) != EMU_OK) fail_msg("%s", err);
    free(ir);
}

static void test_barrier_removed_is_a_race(void **state) {
    (void)state;
    uint32_t dyn;
    char *ir = compile(&dyn), err[ERR];
    char *at = loop_wait(ir), *barrier = strstr(at, "\n") + 1, *after = strstr(barrier, "\n") + 1;
    memmove(barrier, after, strlen(after) + 1); /* the line goes */
    assert_int_equal(run(ir, dyn, err), EMU_ERROR);
    if (!strstr(err, "a data race in shared memory")) fail_msg("not a race report: %s", err);
    print_message("reported: %s\n", err);
    free(ir);
}

static void test_weak_wait_reads_in_flight(void **state) {
    (void)state;
    uint32_t dyn;
    char *ir = compile(&dyn), err[ERR];
    char *at = loop_wait(ir), *n = strstr(at, "(i32 1)");
    n[5] = '2'; /* wait_group 2: one group more left in flight */
    assert_int_equal(run(ir, dyn, err), EMU_ERROR);
    if (!strstr(err, "which a cp.async is still writing")) fail_msg("not an in-flight report: %s", err);
    print_message("reported: %s\n", err);
    free(ir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loop_runs_clean),
        cmocka_unit_test(test_barrier_removed_is_a_race),
        cmocka_unit_test(test_weak_wait_reads_in_flight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
