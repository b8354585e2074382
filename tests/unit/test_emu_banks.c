/* The emulator's shared-memory bank accounting (emu/emu.h: emu_launch.
 * smem_stats) on hand-written NVPTX LLVM IR: each kernel fills a shared
 * array conflict-free, meets at a barrier, then makes one access pattern
 * whose wavefronts are known by hand from NVIDIA's rules (32 banks of 4
 * bytes; 8-byte accesses by half-warps, 16-byte by quarter-warps; ldmatrix
 * a group per 8x8 matrix; lanes on one word broadcast). The instruction
 * under test carries the name %probe, by which its site is found. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/emu.h"

enum {
    ERR = 4096,
    IR_SIZE = 16384,
    SMEM_BYTES = 8192, /* @S: what every access pattern here stays inside */
    FILL_BYTES = 16    /* each fill store */
};

static const char header[] =
    "target datalayout = \"e-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\n"
    "target triple = \"nvptx64-nvidia-cuda\"\n"
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "declare void @llvm.nvvm.barrier0()\n"
    "declare {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16(ptr addrspace(3))\n"
    "declare {i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16(ptr addrspace(3))\n"
    "declare i32 @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x1.b16(ptr addrspace(3))\n"
    "declare void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3), ptr addrspace(1))\n"
    "declare void @llvm.nvvm.cp.async.wait.all()\n"
    "@S = internal addrspace(3) global [8192 x i8] undef, align 128\n";

static void append(char *ir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(char *ir, const char *fmt, ...) {
    size_t n = strlen(ir);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ir + n, IR_SIZE - n, fmt, ap);
    va_end(ap);
}

/* Kernel @k(ptr addrspace(1) %g) of `threads` threads: the threads fill
 * @S with 16-byte stores (thread t at 16 * (t + threads * j): consecutive
 * per quarter-warp, conflict-free), a barrier, then `body` (with %t the
 * thread and %lane its lane), then return. */
static void kernel(char *ir, int threads, const char *body) {
    snprintf(ir, IR_SIZE, "%sdefine void @k(ptr addrspace(1) %%g) {\n", header);
    append(ir, "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  %%lane = and i32 %%t, 31\n");
    for (int j = 0; j < SMEM_BYTES / (FILL_BYTES * threads); j++)
        append(ir,
               "  %%fi%d = add i32 %%t, %d\n  %%fo%d = mul i32 %%fi%d, %d\n"
               "  %%fp%d = getelementptr i8, ptr addrspace(3) @S, i32 %%fo%d\n"
               "  store <4 x i32> <i32 1, i32 2, i32 3, i32 4>, ptr addrspace(3) %%fp%d, align 16\n",
               j, threads * j, j, j, FILL_BYTES, j, j, j);
    append(ir, "  call void @llvm.nvvm.barrier0()\n%s  ret void\n}\n", body);
    append(ir,
           "!nvvm.annotations = !{!0, !1}\n!0 = !{ptr @k, !\"kernel\", i32 1}\n"
           "!1 = !{ptr @k, !\"maxntidx\", i32 %d}\n",
           threads);
}

/* Runs the kernel once with accounting into *st (zeroed first). */
static void run_counted(const char *ir, emu_smem_stats *st) {
    char err[ERR];
    emu_module *m = emu_module_load(ir, strlen(ir), err, sizeof err);
    if (!m) fail_msg("%s\n%s", err, ir);
    static uint8_t global[SMEM_BYTES];
    for (size_t i = 0; i < sizeof global; i++) global[i] = (uint8_t)(i * 7 + 1);
    emu_buffer buf = {global, sizeof global};
    emu_arg arg = {true, 0, 0, 0};
    memset(st, 0, sizeof *st);
    emu_launch l = {"k", {1, 1, 1}, &arg, 1, &buf, 1, NULL, NULL, 0, st, 0};
    if (emu_run(m, &l, err, sizeof err) != EMU_OK) fail_msg("%s\n%s", err, ir);
    emu_module_free(m);
}

/* The site of the instruction named %probe (its text has "%probe"). */
static const emu_smem_site *probe(const emu_smem_stats *st) {
    const emu_smem_site *found = NULL;
    for (uint32_t i = 0; i < st->nsites; i++)
        if (strstr(st->sites[i].text, "%probe")) {
            if (found) fail_msg("two sites named %%probe");
            found = &st->sites[i];
        }
    if (!found) fail_msg("no site named %%probe");
    return found;
}

static void expect(const emu_smem_site *s, emu_smem_kind kind, uint64_t instances, uint64_t wavefronts,
                   uint64_t ideal) {
    if (s->kind != kind || s->count.instances != instances || s->count.wavefronts != wavefronts ||
        s->count.ideal != ideal)
        fail_msg("%s: %s, %llu instances, %llu / %llu wavefronts; expected %s, %llu, %llu / %llu", s->text,
                 emu_smem_kind_name(s->kind), (unsigned long long)s->count.instances,
                 (unsigned long long)s->count.wavefronts, (unsigned long long)s->count.ideal,
                 emu_smem_kind_name(kind), (unsigned long long)instances, (unsigned long long)wavefronts,
                 (unsigned long long)ideal);
}

/* A load or store of type `ty` (aligned to `align` bytes) by each lane at
 * byte lane * stride + base of @S. */
static void access_case(int threads, bool store, const char *ty, int align, int stride, int base, emu_smem_kind kind,
                        uint64_t instances, uint64_t wavefronts, uint64_t ideal) {
    static char body[2048], ir[IR_SIZE];
    snprintf(body, sizeof body,
             "  %%o0 = mul i32 %%lane, %d\n  %%off = add i32 %%o0, %d\n"
             "  %%probe_p = getelementptr i8, ptr addrspace(3) @S, i32 %%off\n",
             stride, base);
    if (store)
        snprintf(body + strlen(body), sizeof body - strlen(body),
                 "  store %s zeroinitializer, ptr addrspace(3) %%probe_p, align %d\n", ty, align);
    else
        snprintf(body + strlen(body), sizeof body - strlen(body),
                 "  %%probe = load %s, ptr addrspace(3) %%probe_p, align %d\n", ty, align);
    kernel(ir, threads, body);
    emu_smem_stats st;
    run_counted(ir, &st);
    expect(probe(&st), kind, instances, wavefronts, ideal);
    emu_smem_stats_free(&st);
}

/* 32-bit accesses by a warp: a row (each lane its bank) is one wavefront;
 * a column 32 words apart puts every lane on bank 0: 32; lanes 2 words
 * apart pair up on 16 banks: 2; every lane on one word is a broadcast: 1.
 * Two warps make two instances. */
static void test_words(void **state) {
    (void)state;
    access_case(32, false, "i32", 4, 4, 0, EMU_SMEM_LOAD, 1, 1, 1);
    access_case(32, false, "i32", 4, 128, 0, EMU_SMEM_LOAD, 1, 32, 1);
    access_case(32, false, "i32", 4, 8, 4, EMU_SMEM_LOAD, 1, 2, 1);
    access_case(32, false, "i32", 4, 0, 64, EMU_SMEM_LOAD, 1, 1, 1);
    access_case(32, true, "float", 4, 4, 0, EMU_SMEM_STORE, 1, 1, 1);
    access_case(32, true, "i32", 4, 128, 0, EMU_SMEM_STORE, 1, 32, 1);
    access_case(64, false, "i32", 4, 128, 0, EMU_SMEM_LOAD, 2, 64, 2);
    /* sub-word: lanes on 2-byte halves of 16 words: 16 distinct words, 1 */
    access_case(32, false, "half", 2, 2, 0, EMU_SMEM_LOAD, 1, 1, 1);
    /* bytes 128 apart: one bank, 32 words */
    access_case(32, false, "i8", 1, 128, 0, EMU_SMEM_LOAD, 1, 32, 1);
}

/* Wider accesses go by half-warps (8 bytes) and quarter-warps (16): 16
 * bytes a lane, lanes consecutive: 4 wavefronts, the ideal; 16 bytes
 * 128 apart: each quarter-warp's 8 lanes on banks 0-3, 8 each: 32 of 4.
 * 8 bytes consecutive: 2 of 2; 8 bytes 16 apart: each half-warp covers
 * 256 bytes, 2 words a bank: 4 of 2. */
static void test_vectors(void **state) {
    (void)state;
    access_case(32, false, "<4 x i32>", 16, 16, 0, EMU_SMEM_LOAD, 1, 4, 4);
    access_case(32, false, "<8 x half>", 16, 128, 0, EMU_SMEM_LOAD, 1, 32, 4);
    access_case(32, true, "<4 x float>", 16, 16, 0, EMU_SMEM_STORE, 1, 4, 4);
    access_case(32, false, "<2 x i32>", 8, 8, 0, EMU_SMEM_LOAD, 1, 2, 2);
    access_case(32, false, "i64", 8, 16, 0, EMU_SMEM_LOAD, 1, 4, 2);
    /* every lane on the same 16 bytes: a broadcast in each quarter */
    access_case(32, false, "<4 x i32>", 16, 0, 32, EMU_SMEM_LOAD, 1, 4, 4);
    /* 16 bytes one byte past each lane's 16 (align 1): 5 words a lane, so
     * a quarter-warp's 8 lanes reach word 32, bank 0's second: 8 of 4 */
    access_case(32, false, "<4 x i32>", 1, 16, 1, EMU_SMEM_LOAD, 1, 8, 4);
}

/* Lanes that do not execute an access take no part: lanes 0-15 in a
 * column conflict 16 ways, one instance; a loop of 3 trips makes 3
 * instances, each lane's k-th trip with the others' k-th, counted from
 * the last barrier. */
static void test_partial_warps_and_loops(void **state) {
    (void)state;
    static char ir[IR_SIZE];
    kernel(ir, 32,
           "  %lo = icmp ult i32 %lane, 16\n  br i1 %lo, label %a, label %b\n"
           "a:\n  %off = mul i32 %lane, 128\n"
           "  %p = getelementptr i8, ptr addrspace(3) @S, i32 %off\n"
           "  %probe = load i32, ptr addrspace(3) %p, align 4\n  br label %b\n"
           "b:\n");
    emu_smem_stats st;
    run_counted(ir, &st);
    expect(probe(&st), EMU_SMEM_LOAD, 1, 16, 1);
    emu_smem_stats_free(&st);
    /* trip i: lane * 4 * (i + 1): strides of 1, 2 and 3 words: 1, 2, 1 */
    kernel(ir, 32,
           "  br label %loop\n"
           "loop:\n  %i = phi i32 [0, %0], [%i1, %loop]\n  %i1 = add i32 %i, 1\n"
           "  %s = mul i32 %i1, 4\n  %off = mul i32 %lane, %s\n"
           "  %p = getelementptr i8, ptr addrspace(3) @S, i32 %off\n"
           "  %probe = load i32, ptr addrspace(3) %p, align 4\n"
           "  %more = icmp ult i32 %i1, 3\n  br i1 %more, label %loop, label %out\n"
           "out:\n");
    run_counted(ir, &st);
    expect(probe(&st), EMU_SMEM_LOAD, 3, 4, 3);
    assert_int_equal(st.total[EMU_SMEM_LOAD].instances, 3);
    /* the fill: 16 stores of 16 bytes by one warp, conflict-free */
    assert_int_equal(st.total[EMU_SMEM_STORE].instances, SMEM_BYTES / (FILL_BYTES * 32));
    assert_int_equal(st.total[EMU_SMEM_STORE].wavefronts, st.total[EMU_SMEM_STORE].ideal);
    assert_int_equal(st.total[EMU_SMEM_STORE].ideal, 4 * SMEM_BYTES / (FILL_BYTES * 32));
    emu_smem_stats_free(&st);
    /* a barrier ends the instances before it: lanes 16-31 skip trip 0, so
     * their first access (trip 1) belongs with the others' second. Trip 0:
     * lanes 0-15 in a column of bank 0 (16); trip 1: all lanes in a
     * column of bank 1 (32). Paired by count alone it would be 16 + 16. */
    kernel(ir, 32,
           "  br label %loop\n"
           "loop:\n  %i = phi i32 [0, %0], [%i1, %next]\n"
           "  %hi = icmp uge i32 %lane, 16\n  %first = icmp eq i32 %i, 0\n  %skip = and i1 %hi, %first\n"
           "  br i1 %skip, label %next, label %do\n"
           "do:\n  %col = mul i32 %lane, 128\n  %bank = mul i32 %i, 4\n  %off = add i32 %col, %bank\n"
           "  %p = getelementptr i8, ptr addrspace(3) @S, i32 %off\n"
           "  %probe = load i32, ptr addrspace(3) %p, align 4\n  br label %next\n"
           "next:\n  call void @llvm.nvvm.barrier0()\n  %i1 = add i32 %i, 1\n"
           "  %more = icmp ult i32 %i1, 2\n  br i1 %more, label %loop, label %out\n"
           "out:\n");
    run_counted(ir, &st);
    expect(probe(&st), EMU_SMEM_LOAD, 2, 48, 2);
    emu_smem_stats_free(&st);
}

/* ldmatrix.x4 of a 32-row tile of 128-byte rows (64 halves), lane l giving
 * row l's first 16 bytes: each matrix's 8 rows on banks 0-3, 8 ways
 * (32 of 4); the same rows swizzled as Triton and CUTLASS do (16-byte
 * chunk c of row r stored at chunk c ^ r % 8) are conflict-free (4 of 4);
 * rows 16 bytes apart (a packed 8x8 tile after another) too. .x2.trans:
 * 2 of 2 on rows 16 bytes apart; .x1, 8 rows 32 bytes apart: 2 rows on
 * each of 4 bank groups, 2 of 1. */
static void test_ldmatrix(void **state) {
    (void)state;
    static const struct {
        const char *addr; /* %off from %lane */
        const char *call;
        uint64_t wavefronts, ideal;
    } cases[] = {
        {"  %off = mul i32 %lane, 128\n", "{i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16", 32, 4},
        {"  %r8 = and i32 %lane, 7\n  %c = mul i32 %r8, 16\n  %row = mul i32 %lane, 128\n"
         "  %off = add i32 %row, %c\n",
         "{i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16", 4, 4},
        {"  %off = mul i32 %lane, 16\n", "{i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16", 4, 4},
        {"  %off = mul i32 %lane, 16\n", "{i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16", 2, 2},
        {"  %off = mul i32 %lane, 32\n", "i32 @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x1.b16", 2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        static char body[2048], ir[IR_SIZE];
        snprintf(body, sizeof body,
                 "%s  %%p = getelementptr i8, ptr addrspace(3) @S, i32 %%off\n"
                 "  %%probe = call %s(ptr addrspace(3) %%p)\n",
                 cases[i].addr, cases[i].call);
        kernel(ir, 64, body);
        emu_smem_stats st;
        run_counted(ir, &st);
        expect(probe(&st), EMU_SMEM_LDMATRIX, 2, 2 * cases[i].wavefronts, 2 * cases[i].ideal); /* two warps */
        assert_int_equal(st.total[EMU_SMEM_LDMATRIX].wavefronts, 2 * cases[i].wavefronts);
        emu_smem_stats_free(&st);
    }
}

/* cp.async's shared write, 16 bytes a lane: consecutive, 4 of 4; rows 128
 * bytes apart, 32 of 4. The report names the conflicted instruction. */
static void test_cp_async_and_report(void **state) {
    (void)state;
    static char ir[IR_SIZE];
    kernel(ir, 32,
           "  %d = mul i32 %lane, 16\n  %q = getelementptr i8, ptr addrspace(3) @S, i32 %d\n"
           "  %gp = getelementptr i8, ptr addrspace(1) %g, i32 %d\n"
           "  call void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3) %q, ptr addrspace(1) %gp)\n"
           "  %d2 = mul i32 %lane, 128\n  %probe = getelementptr i8, ptr addrspace(3) @S, i32 %d2\n"
           "  %gp2 = getelementptr i8, ptr addrspace(1) %g, i32 %d2\n"
           "  call void @llvm.nvvm.cp.async.cg.shared.global.16(ptr addrspace(3) %probe, ptr addrspace(1) %gp2)\n"
           "  call void @llvm.nvvm.cp.async.wait.all()\n");
    emu_smem_stats st;
    run_counted(ir, &st);
    expect(probe(&st), EMU_SMEM_CP_ASYNC, 1, 32, 4);
    const emu_smem_count *c = &st.total[EMU_SMEM_CP_ASYNC];
    assert_int_equal(c->instances, 2);
    assert_int_equal(c->wavefronts, 4 + 32);
    assert_int_equal(c->ideal, 8);
    char text[4096];
    size_t n = emu_smem_report(&st, 3, text, sizeof text);
    assert_int_equal(n, strlen(text));
    if (!strstr(text, "cp.async") || !strstr(text, "36 / 8 (4.50x)") || !strstr(text, "28 excess, 32 / 4 (8.00x)") ||
        !strstr(text, "ptr addrspace(3) %probe"))
        fail_msg("report:\n%s", text);
    /* only the conflicted one is listed */
    if (strstr(text, "ptr addrspace(3) %q,")) fail_msg("report lists a conflict-free copy:\n%s", text);
    /* a short buffer gets a truncated, terminated report and the length it needed */
    char small[16];
    assert_int_equal(emu_smem_report(&st, 3, small, sizeof small), n);
    assert_int_equal(strlen(small), sizeof small - 1);
    /* launches add up */
    char err[ERR];
    emu_module *m = emu_module_load(ir, strlen(ir), err, sizeof err);
    assert_non_null(m);
    static uint8_t global[SMEM_BYTES];
    emu_buffer buf = {global, sizeof global};
    emu_arg arg = {true, 0, 0, 0};
    emu_launch l = {"k", {2, 1, 1}, &arg, 1, &buf, 1, NULL, NULL, 0, &st, 0};
    if (emu_run(m, &l, err, sizeof err) != EMU_OK) fail_msg("%s", err);
    expect(probe(&st), EMU_SMEM_CP_ASYNC, 3, 96, 12);
    emu_module_free(m);
    emu_smem_stats_free(&st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_words),
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_partial_warps_and_loops),
        cmocka_unit_test(test_ldmatrix),
        cmocka_unit_test(test_cp_async_and_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
