/* The emulator's barriers with ids and thread counts (emu/exec.c) on
 * hand-written NVPTX LLVM IR, from the PTX ISA's "bar, barrier": a CTA has
 * sixteen barriers 0..15; bar.sync a, b waits for b threads (a multiple of
 * the warp size, counted per warp) at barrier a, and orders memory accesses
 * only among its participants; threads that exited do not take part.
 * Checked: two groups of warps each making progress on its own barrier
 * (which one barrier for all would deadlock), 256 of 384 threads syncing
 * while the other warpgroup exits early, arrivals past a count starting
 * the next phase, the errors (an id outside 0..15,
 * a bad count, different counts in one phase, the lanes of a warp at
 * different barriers, a deadlock), and the race check: a named barrier
 * neither hides a race with a thread outside it nor reports accesses it
 * orders. Expected values are computed here from those rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/emu.h"

enum { ERR = 4096, IR = 16384, MODULE = 2 * IR, SENTINEL = 0x5eed5eed };

static const char header[] =
    "target datalayout = \"e-p3:64:64-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\n"
    "target triple = \"nvptx64-nvidia-cuda\"\n"
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "declare void @llvm.nvvm.barrier0()\n"
    "declare void @llvm.nvvm.barrier(i32, i32)\n"
    "declare void @llvm.nvvm.barrier.n(i32)\n"
    "declare void @llvm.nvvm.barrier.sync(i32)\n"
    "declare void @llvm.nvvm.barrier.sync.cnt(i32, i32)\n"
    "@S = internal addrspace(3) global [512 x i32] undef, align 4\n";

/* A module of kernel @k(ptr addrspace(1) %out) (body: IR after the
 * header) with `threads` threads. */
static emu_module *load_kernel(const char *body, int threads, char *err) {
    static char ir[MODULE];
    snprintf(ir, sizeof ir,
             "%s%s\n!nvvm.annotations = !{!0, !1}\n!0 = !{ptr @k, !\"kernel\", i32 1}\n!1 = !{ptr @k, !\"maxntidx\", i32 %d}\n",
             header, body, threads);
    emu_module *m = emu_module_load(ir, strlen(ir), err, ERR);
    if (!m) fail_msg("%s\n%s", err, ir);
    return m;
}

/* Runs @k on one CTA with out (n words, filled with SENTINEL first). */
static emu_result run_out(const char *body, int threads, uint32_t *out, size_t n, char *err) {
    for (size_t i = 0; i < n; i++) out[i] = SENTINEL;
    emu_module *m = load_kernel(body, threads, err);
    emu_buffer buf = {out, n * sizeof *out};
    emu_arg arg = {true, 0, 0, 0};
    emu_launch l = {"k", {1, 1, 1}, &arg, 1, &buf, 1, NULL, NULL, 0, NULL, 0};
    emu_result res = emu_run(m, &l, err, ERR);
    emu_module_free(m);
    return res;
}

static uint32_t out[2048];

static void expect_ok(const char *body, int threads) {
    char err[ERR];
    emu_result res = run_out(body, threads, out, sizeof out / sizeof out[0], err);
    if (res != EMU_OK) fail_msg("want a clean run, got %d: %s\n%s", res, err, body);
}

static void expect_error(const char *body, int threads, const char *want) {
    char err[ERR];
    emu_result res = run_out(body, threads, out, sizeof out / sizeof out[0], err);
    if (res != EMU_ERROR || !strstr(err, want)) fail_msg("want an error with '%s', got %d: %s\n%s", want, res, err, body);
    print_message("  reported: %.*s\n", (int)strcspn(err, "\n"), err);
}

static void expect_words(const uint32_t *want, size_t from, size_t n, const char *what) {
    for (size_t i = from; i < from + n; i++)
        if (out[i] != want[i - from]) fail_msg("%s: out[%zu] = %#x, want %#x", what, i, out[i], want[i - from]);
}

/* ---- two groups, two barriers ------------------------------------------------
 * 128 threads: warps 0-1 (group A) loop 3 times on barrier 1, warps 2-3
 * (group B) 5 times on barrier 2, each with 64 threads: every trip, a
 * thread writes S[t], syncs, reads its partner's word (written by the
 * other warp of its group), stores it, and syncs again before the next
 * write. Group A exits while group B still syncs: with one barrier for
 * all (or the count ignored) B would wait for A forever; with no ordering
 * by the named barrier the reads would be races. `call` is the intrinsic
 * with (id, count). */
static void two_groups(const char *call) {
    static char body[IR];
    snprintf(body, sizeof body,
             "define void @k(ptr addrspace(1) %%out) {\n"
             "entry:\n"
             "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %%a = icmp ult i32 %%t, 64\n"
             "  %%id = select i1 %%a, i32 1, i32 2\n"
             "  %%iters = select i1 %%a, i32 3, i32 5\n"
             "  %%base = select i1 %%a, i32 0, i32 64\n"
             "  %%local = sub i32 %%t, %%base\n"
             "  %%pl = xor i32 %%local, 63\n"
             "  %%partner = add i32 %%pl, %%base\n"
             "  %%ps = getelementptr i32, ptr addrspace(3) @S, i32 %%t\n"
             "  %%pp = getelementptr i32, ptr addrspace(3) @S, i32 %%partner\n"
             "  br label %%loop\n"
             "loop:\n"
             "  %%i = phi i32 [0, %%entry], [%%i1, %%loop]\n"
             "  %%v = mul i32 %%i, 1000\n"
             "  %%v2 = add i32 %%v, %%t\n"
             "  store i32 %%v2, ptr addrspace(3) %%ps, align 4\n"
             "  call void @%s(i32 %%id, i32 64)\n"
             "  %%r = load i32, ptr addrspace(3) %%pp, align 4\n"
             "  %%o = mul i32 %%t, 5\n"
             "  %%o2 = add i32 %%o, %%i\n"
             "  %%po = getelementptr i32, ptr addrspace(1) %%out, i32 %%o2\n"
             "  store i32 %%r, ptr addrspace(1) %%po, align 4\n"
             "  call void @%s(i32 %%id, i32 64)\n"
             "  %%i1 = add i32 %%i, 1\n"
             "  %%c = icmp ult i32 %%i1, %%iters\n"
             "  br i1 %%c, label %%loop, label %%done\n"
             "done:\n"
             "  ret void\n"
             "}\n",
             call, call);
    expect_ok(body, 128);
    for (uint32_t t = 0; t < 128; t++) {
        uint32_t base = t < 64 ? 0 : 64, partner = ((t - base) ^ 63) + base, iters = t < 64 ? 3 : 5;
        for (uint32_t i = 0; i < 5; i++) {
            uint32_t want = i < iters ? i * 1000 + partner : SENTINEL;
            if (out[t * 5 + i] != want)
                fail_msg("%s: thread %u trip %u read %#x, want %#x", call, t, i, out[t * 5 + i], want);
        }
    }
}

static void test_two_groups_progress(void **state) {
    (void)state;
    two_groups("llvm.nvvm.barrier");         /* bar.sync a, b */
    two_groups("llvm.nvvm.barrier.sync.cnt"); /* barrier.sync a, b */
}

/* ---- a count: 256 of 384 threads ------------------------------------------------
 * Warps 0-7 (two warpgroups) sync on barrier 1 with 256 threads: write
 * S[t], sync, read S[255 - t] (another warp's), sync, write S[t] again
 * (after the others' reads), sync, read S[(t + 32) % 256]. The third
 * warpgroup (warps 8-11) `producer` does its own thing and exits: the
 * barrier waits for 256 threads, not for the CTA. */
static void count_case(const char *producer) {
    static char body[IR];
    snprintf(body, sizeof body,
             "define void @k(ptr addrspace(1) %%out) {\n"
             "entry:\n"
             "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %%prod = icmp uge i32 %%t, 256\n"
             "  br i1 %%prod, label %%producer, label %%cons\n"
             "cons:\n"
             "  %%ps = getelementptr i32, ptr addrspace(3) @S, i32 %%t\n"
             "  %%v = mul i32 %%t, 3\n"
             "  %%v1 = add i32 %%v, 1\n"
             "  store i32 %%v1, ptr addrspace(3) %%ps, align 4\n"
             "  call void @llvm.nvvm.barrier(i32 1, i32 256)\n"
             "  %%m = sub i32 255, %%t\n"
             "  %%pm = getelementptr i32, ptr addrspace(3) @S, i32 %%m\n"
             "  %%r = load i32, ptr addrspace(3) %%pm, align 4\n"
             "  %%po = getelementptr i32, ptr addrspace(1) %%out, i32 %%t\n"
             "  store i32 %%r, ptr addrspace(1) %%po, align 4\n"
             "  call void @llvm.nvvm.barrier(i32 1, i32 256)\n"
             "  %%w = mul i32 %%t, 7\n"
             "  store i32 %%w, ptr addrspace(3) %%ps, align 4\n"
             "  call void @llvm.nvvm.barrier(i32 1, i32 256)\n"
             "  %%n0 = add i32 %%t, 32\n"
             "  %%n = and i32 %%n0, 255\n"
             "  %%pn = getelementptr i32, ptr addrspace(3) @S, i32 %%n\n"
             "  %%r2 = load i32, ptr addrspace(3) %%pn, align 4\n"
             "  %%o2 = add i32 %%t, 256\n"
             "  %%po2 = getelementptr i32, ptr addrspace(1) %%out, i32 %%o2\n"
             "  store i32 %%r2, ptr addrspace(1) %%po2, align 4\n"
             "  ret void\n"
             "producer:\n"
             "%s"
             "}\n",
             producer);
    expect_ok(body, 384);
    uint32_t want[512];
    for (uint32_t t = 0; t < 256; t++) want[t] = (255 - t) * 3 + 1, want[256 + t] = ((t + 32) % 256) * 7;
    expect_words(want, 0, 512, "bar.sync 1, 256");
}

static void test_count_of_a_subset(void **state) {
    (void)state;
    count_case("  ret void\n"); /* exits at once */
    /* syncs twice among itself on barrier 2 (128 threads), writing its own
     * part of S in between (no race: bytes no consumer touches), then exits */
    count_case("  %q = getelementptr i32, ptr addrspace(3) @S, i32 %t\n"
               "  store i32 1, ptr addrspace(3) %q, align 4\n"
               "  call void @llvm.nvvm.barrier(i32 2, i32 128)\n"
               "  %qo = xor i32 %t, 127\n"
               "  %qp = getelementptr i32, ptr addrspace(3) @S, i32 %qo\n"
               "  %qv = load i32, ptr addrspace(3) %qp, align 4\n"
               "  call void @llvm.nvvm.barrier(i32 2, i32 128)\n"
               "  ret void\n");
}

/* ---- errors ------------------------------------------------------------------- */

/* 128 threads, each calling `call` (its operands may use %t and %w, the
 * warp) once, then exiting. */
static void expect_call_error(const char *call, int threads, const char *want) {
    static char body[IR];
    snprintf(body, sizeof body,
             "define void @k(ptr addrspace(1) %%out) {\n"
             "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %%w = lshr i32 %%t, 5\n"
             "%s"
             "  ret void\n"
             "}\n",
             call);
    expect_error(body, threads, want);
}

static void test_operand_errors(void **state) {
    (void)state;
    /* sixteen barriers, 0..15 */
    expect_call_error("  call void @llvm.nvvm.barrier(i32 16, i32 128)\n", 128, "barrier id 16");
    expect_call_error("  call void @llvm.nvvm.barrier.n(i32 99)\n", 128, "barrier id 99");
    /* a count: a nonzero multiple of the warp size, at most the CTA */
    expect_call_error("  call void @llvm.nvvm.barrier(i32 1, i32 0)\n", 128, "nonzero multiple of the warp size");
    expect_call_error("  call void @llvm.nvvm.barrier(i32 1, i32 48)\n", 128, "nonzero multiple of the warp size");
    expect_call_error("  call void @llvm.nvvm.barrier(i32 1, i32 512)\n", 384, "more threads than the CTA's 384");
    /* the largest legal ones run */
    expect_call_error("  call void @llvm.nvvm.barrier(i32 15, i32 128)\n  call void @llvm.nvvm.barrier(i32 16, i32 32)\n",
                      128, "barrier id 16");
}

static void test_phase_errors(void **state) {
    (void)state;
    /* one phase of barrier 1, warps 0-1 giving 128 threads, warps 2-3 96 */
    expect_call_error("  %lo = icmp ult i32 %w, 2\n"
                      "  %n = select i1 %lo, i32 128, i32 96\n"
                      "  call void @llvm.nvvm.barrier(i32 1, i32 %n)\n",
                      128, "different thread counts in one phase");
    /* the lanes of warp 0 at two bar.sync instructions (the same barrier) */
    expect_call_error("  %lane = and i32 %t, 31\n"
                      "  %lo = icmp ult i32 %lane, 16\n"
                      "  br i1 %lo, label %a, label %b\n"
                      "a:\n  call void @llvm.nvvm.barrier(i32 1, i32 128)\n  br label %e\n"
                      "b:\n  call void @llvm.nvvm.barrier(i32 1, i32 128)\n  br label %e\n"
                      "e:\n",
                      128, "threads wait at different barriers (lanes of warp 0");
    /* the lanes of a warp at one bar.sync with different ids */
    expect_call_error("  %lane = and i32 %t, 31\n"
                      "  %lo = icmp ult i32 %lane, 16\n"
                      "  %id = select i1 %lo, i32 1, i32 2\n"
                      "  call void @llvm.nvvm.barrier(i32 %id, i32 64)\n",
                      128, "lanes of warp 0 execute one bar.sync with different operands");
    /* without a count: every thread at the same instruction, as barrier0 */
    expect_call_error("  %lo = icmp ult i32 %w, 2\n"
                      "  br i1 %lo, label %a, label %b\n"
                      "a:\n  call void @llvm.nvvm.barrier.n(i32 3)\n  br label %e\n"
                      "b:\n  call void @llvm.nvvm.barrier.n(i32 3)\n  br label %e\n"
                      "e:\n",
                      128, "threads wait at different barriers (barrier 3");
    /* and a thread that exits while others wait at it is an error there,
     * as with barrier0 */
    expect_call_error("  %lo = icmp ult i32 %w, 3\n"
                      "  br i1 %lo, label %a, label %e\n"
                      "a:\n  call void @llvm.nvvm.barrier.n(i32 2)\n  br label %e\n"
                      "e:\n",
                      128, "the thread exited while others wait at a barrier");
    expect_call_error("  %lo = icmp ult i32 %w, 3\n"
                      "  br i1 %lo, label %a, label %e\n"
                      "a:\n  call void @llvm.nvvm.barrier0()\n  br label %e\n"
                      "e:\n",
                      128, "the thread exited while others wait at a barrier");
    /* with a count, the same exit is fine: 96 threads of warps 0-2 (the
     * bad id after it is the mark that it completed) */
    expect_call_error("  %lo = icmp ult i32 %w, 3\n"
                      "  br i1 %lo, label %a, label %e\n"
                      "a:\n  call void @llvm.nvvm.barrier(i32 2, i32 96)\n"
                      "  call void @llvm.nvvm.barrier(i32 16, i32 32)\n  br label %e\n"
                      "e:\n",
                      128, "barrier id 16");
}

/* A barrier is ready for its next phase as soon as one completes: four
 * warps at bar.sync 1, 64 make two phases of two warps each, and all go
 * on (the bad id after it is the mark); three warps leave the third
 * alone in a phase that never completes. */
static void test_phases(void **state) {
    (void)state;
    expect_call_error("  call void @llvm.nvvm.barrier(i32 1, i32 64)\n"
                      "  call void @llvm.nvvm.barrier(i32 16, i32 32)\n",
                      128, "barrier id 16");
    expect_call_error("  %lo = icmp ult i32 %w, 3\n"
                      "  br i1 %lo, label %a, label %e\n"
                      "a:\n  call void @llvm.nvvm.barrier(i32 1, i32 64)\n  br label %e\n"
                      "e:\n",
                      128, "barrier 1: 32 threads wait (1 warp arrived of the 64 threads it waits for; warps 2)");
}

static void test_deadlock(void **state) {
    (void)state;
    /* warps 0-1 wait on barrier 1 for 128 threads; the others exit */
    expect_call_error("  %lo = icmp ult i32 %w, 2\n"
                      "  br i1 %lo, label %a, label %e\n"
                      "a:\n  call void @llvm.nvvm.barrier(i32 1, i32 128)\n  br label %e\n"
                      "e:\n",
                      128, "barrier 1: 64 threads wait (2 warps arrived of the 128 threads it waits for; warps 0 1). 64 "
                           "threads exited");
    /* warps 0-1 on barrier 1 for 96, warps 2-3 on barrier 2 for 128: neither completes */
    expect_call_error("  %lo = icmp ult i32 %w, 2\n"
                      "  br i1 %lo, label %a, label %b\n"
                      "a:\n  call void @llvm.nvvm.barrier(i32 1, i32 96)\n  br label %e\n"
                      "b:\n  call void @llvm.nvvm.barrier(i32 2, i32 128)\n  br label %e\n"
                      "e:\n",
                      128, "every live thread waits at a barrier and none can complete. barrier 1: 64 threads wait (2 "
                           "warps arrived of the 96 threads it waits for; warps 0 1). barrier 2: 64 threads wait (2 "
                           "warps arrived of the 128 threads it waits for; warps 2 3)");
    /* a warp with exited lanes arrives when its live ones do: with half
     * of warp 1 exited (and warps 2-3), barrier 1 of 64 threads completes
     * with warps 0 and 1 (the bad id after it is the mark) */
    expect_call_error("  %lo = icmp ult i32 %w, 2\n"
                      "  %hi = icmp uge i32 %t, 48\n"
                      "  %stay = xor i1 %hi, true\n"
                      "  %go = and i1 %lo, %stay\n"
                      "  br i1 %go, label %a, label %x\n"
                      "a:\n  call void @llvm.nvvm.barrier(i32 1, i32 64)\n"
                      "  call void @llvm.nvvm.barrier(i32 16, i32 32)\n  br label %x\n"
                      "x:\n",
                      128, "barrier id 16");
}

/* ---- the race check ----------------------------------------------------------
 * 384 threads: warps 0-7 (consumers) write S[t] and sync on barrier 1 of
 * 256; `producer` is what warps 8-11 do. */
static void race_case(const char *consumer_after, const char *producer, const char *want) {
    static char body[IR];
    snprintf(body, sizeof body,
             "define void @k(ptr addrspace(1) %%out) {\n"
             "entry:\n"
             "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %%ps = getelementptr i32, ptr addrspace(3) @S, i32 %%t\n"
             "  %%other = xor i32 %%t, 255\n"
             "  %%po = getelementptr i32, ptr addrspace(3) @S, i32 %%other\n"
             "  %%prod = icmp uge i32 %%t, 256\n"
             "  br i1 %%prod, label %%producer, label %%cons\n"
             "cons:\n"
             "  store i32 %%t, ptr addrspace(3) %%ps, align 4\n"
             "  call void @llvm.nvvm.barrier(i32 1, i32 256)\n"
             "%s"
             "  ret void\n"
             "producer:\n"
             "  %%q = sub i32 %%t, 256\n"
             "  %%pq = getelementptr i32, ptr addrspace(3) @S, i32 %%q\n"
             "%s"
             "  ret void\n"
             "}\n",
             consumer_after, producer);
    if (want) expect_error(body, 384, want);
    else expect_ok(body, 384);
}

static void test_races(void **state) {
    (void)state;
    static const char read_other[] = "  %r = load i32, ptr addrspace(3) %po, align 4\n";
    /* ordered by barrier 1: the consumers read each other's words */
    race_case(read_other, "", NULL);
    /* the producer reads consumer-written words with no barrier between:
     * a race, first while the consumers wait at barrier 1 ... */
    race_case(read_other, "  %x = load i32, ptr addrspace(3) %pq, align 4\n",
              "a data race in shared memory: a read of byte 0, which another thread wrote since the last barrier");
    /* ... and after barrier 1 completed (the producer waits at its own
     * barrier 2 first, which completes after barrier 1): barrier 1 does not
     * order the producer, barrier 2 does not order the consumers */
    race_case(read_other,
              "  call void @llvm.nvvm.barrier(i32 2, i32 128)\n"
              "  %x = load i32, ptr addrspace(3) %pq, align 4\n",
              "a data race in shared memory: a read of byte 0, which another thread wrote since the last barrier");
    /* the producer writes bytes the consumers read after their barrier */
    race_case(read_other,
              "  call void @llvm.nvvm.barrier(i32 2, i32 128)\n"
              "  %p2 = getelementptr i32, ptr addrspace(3) @S, i32 %t\n"
              "  store i32 0, ptr addrspace(3) %p2, align 4\n"
              "  call void @llvm.nvvm.barrier(i32 2, i32 128)\n"
              "  %p3 = getelementptr i32, ptr addrspace(3) @S, i32 128\n"
              "  %y = load i32, ptr addrspace(3) %p3, align 4\n",
              "a data race in shared memory: a read of byte 512, which another thread wrote since the last barrier");
    /* a write after reads: the producer reads words a barrier of all 384
     * threads ordered (barrier 4, from two places), then the consumers sync on barrier 1 and
     * overwrite them: barrier 1 does not order the producer's read */
    race_case("  call void @llvm.nvvm.barrier(i32 4, i32 384)\n"
              "  call void @llvm.nvvm.barrier(i32 1, i32 256)\n"
              "  store i32 0, ptr addrspace(3) %ps, align 4\n",
              "  call void @llvm.nvvm.barrier(i32 4, i32 384)\n"
              "  %x = load i32, ptr addrspace(3) %pq, align 4\n",
              "a data race in shared memory: a write to byte 0, which another thread read since the last barrier");
    /* the same with the producer in barrier 1's phase too (a 384-thread
     * count): ordered, no race */
    race_case("  call void @llvm.nvvm.barrier(i32 4, i32 384)\n"
              "  call void @llvm.nvvm.barrier(i32 1, i32 384)\n"
              "  store i32 0, ptr addrspace(3) %ps, align 4\n",
              "  call void @llvm.nvvm.barrier(i32 4, i32 384)\n"
              "  %x = load i32, ptr addrspace(3) %pq, align 4\n"
              "  call void @llvm.nvvm.barrier(i32 1, i32 384)\n",
              NULL);
    /* ordering is transitive: warps 0-7 on barrier 1, then warps 4-11 on
     * barrier 3 (the producer and the second consumer warpgroup): the
     * producer reads what warp 0 wrote before barrier 1, ordered through
     * warps 4-7 */
    race_case("  %g2 = icmp uge i32 %t, 128\n"
              "  br i1 %g2, label %j, label %z\n"
              "j:\n  call void @llvm.nvvm.barrier(i32 3, i32 256)\n  br label %z\n"
              "z:\n",
              "  call void @llvm.nvvm.barrier(i32 3, i32 256)\n"
              "  %x = load i32, ptr addrspace(3) %pq, align 4\n",
              NULL);
    /* but what warps 0-3 write after barrier 1 is not ordered before the
     * producer's read by warps 4-7's barrier 3 */
    race_case("  %v1 = add i32 %t, 1\n"
              "  store i32 %v1, ptr addrspace(3) %ps, align 4\n"
              "  %g2 = icmp uge i32 %t, 128\n"
              "  br i1 %g2, label %j, label %z\n"
              "j:\n  call void @llvm.nvvm.barrier(i32 3, i32 256)\n  br label %z\n"
              "z:\n",
              "  call void @llvm.nvvm.barrier(i32 3, i32 256)\n"
              "  %x = load i32, ptr addrspace(3) %pq, align 4\n",
              "a data race in shared memory: a read of byte 0, which another thread wrote since the last barrier");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_groups_progress),
        cmocka_unit_test(test_count_of_a_subset),
        cmocka_unit_test(test_operand_errors),
        cmocka_unit_test(test_phase_errors),
        cmocka_unit_test(test_phases),
        cmocka_unit_test(test_deadlock),
        cmocka_unit_test(test_races),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
