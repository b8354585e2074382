/* The emulator's asynchronous-copy machinery (emu/async.c) on hand-written
 * NVPTX LLVM IR using lower/ptx_async.h's inline-asm strings: mbarrier
 * phases and parity (PTX ISA "mbarrier"), bulk and bulk tensor copies
 * completing on them ("cp.async.bulk(.tensor)"; "Tensors": tile mode, bounding
 * box and out-of-bounds fill), the swizzle modes' placement of 16-byte chunks ("Tensors", the
 * tensor swizzling figures), a producer/consumer ring as the compiler will
 * generate it, bulk tensor stores with fence.proxy.async, setmaxnreg, a
 * warp-specialized kernel (a producer warpgroup, consumers syncing on
 * bar.sync 1, 256 without it), and the errors the emulator must report
 * (misuse, races, a hang). Expected
 * values are computed here from the ISA's rules, not from emu/async.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/emu.h"
#include "lower/ptx_async.h"

enum { ERR = 4096, IR = 32768 };

static const struct {
    const char *name, *text, *cons;
} asms[] = {
#define ROW(n, t, c) {#n, t, c},
    PTX_ASYNC_ASMS(ROW)
#undef ROW
};

/* Copies src to dst, replacing each {NAME} of a ptx_async.h row by
 * `asm sideeffect "text", "constraints"`. */
static void expand(const char *src, char *dst, size_t size) {
    size_t n = 0;
    for (const char *p = src; *p && n + 1 < size;) {
        if (*p == '{' && p[1] >= 'A' && p[1] <= 'Z') {
            size_t len = strcspn(p + 1, "}");
            bool found = false;
            for (size_t i = 0; i < sizeof asms / sizeof asms[0]; i++)
                if (strlen(asms[i].name) == len && !memcmp(asms[i].name, p + 1, len)) {
                    n += (size_t)snprintf(dst + n, size - n, "asm sideeffect \"%s\", \"%s\"", asms[i].text, asms[i].cons);
                    found = true;
                    break;
                }
            if (!found) fail_msg("no asm row %.*s", (int)len, p + 1);
            p += len + 2;
            continue;
        }
        dst[n++] = *p++;
    }
    dst[n < size ? n : size - 1] = 0;
}

static const char header[] =
    "target datalayout = \"e-p3:64:64-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\n"
    "target triple = \"nvptx64-nvidia-cuda\"\n"
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "declare void @llvm.nvvm.barrier0()\n"
    "declare void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 immarg)\n"
    "declare void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 immarg)\n";

/* A module of kernel @k (body: IR with {ASM} rows) with `threads` threads
 * and, when maxnreg is not 0, that "maxnreg" annotation (.maxnreg). */
static emu_module *load_kernel_regs(const char *body, int threads, int maxnreg, char *err) {
    static char raw[IR], ir[IR];
    int len = snprintf(raw, sizeof raw,
                       "%s%s\n!nvvm.annotations = !{!0, !1%s}\n!0 = !{ptr @k, !\"kernel\", i32 1}\n!1 = !{ptr @k, "
                       "!\"maxntidx\", i32 %d}\n",
                       header, body, maxnreg ? ", !2" : "", threads);
    if (len > 0 && maxnreg && (size_t)len < sizeof raw)
        len += snprintf(raw + len, sizeof raw - (size_t)len, "!2 = !{ptr @k, !\"maxnreg\", i32 %d}\n", maxnreg);
    if (len < 0 || (size_t)len >= sizeof raw) fail_msg("the kernel's IR is over %d bytes", IR);
    expand(raw, ir, sizeof ir);
    emu_module *m = emu_module_load(ir, strlen(ir), err, ERR);
    if (!m) fail_msg("%s\n%s", err, ir);
    return m;
}

static emu_module *load_kernel(const char *body, int threads, char *err) { return load_kernel_regs(body, threads, 0, err); }

/* Runs @k on one CTA with buffers bufs[0..nbufs): pointer arguments to
 * the first nb, then scalars. */
static emu_result launch_n(emu_module *m, emu_buffer *bufs, uint32_t nbufs, uint32_t nb, const uint32_t *scalars, uint32_t ns,
                           char *err) {
    emu_arg args[16];
    for (uint32_t i = 0; i < nb; i++) args[i] = (emu_arg){true, i, 0, 0};
    for (uint32_t i = 0; i < ns; i++) args[nb + i] = (emu_arg){false, 0, 0, scalars[i]};
    emu_launch l = {"k", {1, 1, 1}, args, nb + ns, bufs, nbufs, NULL, NULL, 0, NULL, 0};
    return emu_run(m, &l, err, ERR);
}

static emu_result launch(emu_module *m, emu_buffer *bufs, uint32_t nb, const uint32_t *scalars, uint32_t ns, char *err) {
    return launch_n(m, bufs, nb, nb, scalars, ns, err);
}

static void expect_error_n(const char *body, int threads, emu_buffer *bufs, uint32_t nbufs, uint32_t nb, const char *want) {
    char err[ERR];
    emu_module *m = load_kernel(body, threads, err);
    emu_result res = launch_n(m, bufs, nbufs, nb, NULL, 0, err);
    if (res != EMU_ERROR || !strstr(err, want)) fail_msg("want an error with '%s', got %d: %s\n%s", want, res, err, body);
    emu_module_free(m);
}

static void expect_error(const char *body, int threads, emu_buffer *bufs, uint32_t nb, const char *want) {
    expect_error_n(body, threads, bufs, nb, nb, want);
}

/* expect_error for a kernel with a maxnreg annotation and no arguments */
static void expect_error_regs(const char *body, int threads, int maxnreg, const char *want) {
    char err[ERR];
    emu_module *m = load_kernel_regs(body, threads, maxnreg, err);
    emu_result res = launch(m, NULL, 0, NULL, 0, err);
    if (res != EMU_ERROR || !strstr(err, want)) fail_msg("want an error with '%s', got %d: %s\n%s", want, res, err, body);
    emu_module_free(m);
}

static uint32_t rand_u32(void) { return (uint32_t)rand() << 16 ^ (uint32_t)rand(); }

/* ---- phases and parity --------------------------------------------------------
 * "mbarrier" (phase completion, test_wait): a phase completes when its pending arrival count reaches zero
 * AND its tx-count is zero; then the next phase begins with the expected
 * count. test_wait.parity p is true when the phase of parity p (the current
 * one or the one just before it) has completed: before any completion,
 * parity 1 (the phase "before" phase 0) reads complete. Each thread
 * records six test_wait results; arrivals are from several threads, tx
 * bytes come from expect_tx / arrive.expect_tx and bulk copies. */
static const char phases_ir[] =
    "@bar = internal addrspace(3) global i64 undef, align 8\n"
    "@dst = internal addrspace(3) global [48 x i8] undef, align 16\n"
    "define void @k(ptr addrspace(1) %src, ptr addrspace(1) %out) {\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %is0 = icmp eq i32 %t, 0\n"
    "  %o = mul i32 %t, 6\n"
    "  br i1 %is0, label %init, label %s1\n"
    "init:\n"
    "  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 3)\n"
    "  call void {FENCE_MBAR_INIT}()\n"
    "  call void {MBAR_EXPECT_TX}(ptr addrspace(3) @bar, i32 32)\n"
    "  br label %s1\n"
    "s1:\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  br i1 %is0, label %s2, label %arr\n"
    "arr:\n" /* threads 1..3: the phase's three arrivals; tx 32 keeps it open */
    "  call void {MBAR_ARRIVE}(ptr addrspace(3) @bar)\n"
    "  br label %s2\n"
    "s2:\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  %r0 = call i32 {MBAR_TEST_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n"
    "  %r1 = call i32 {MBAR_TEST_WAIT_PARITY}(ptr addrspace(3) @bar, i32 1)\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  br i1 %is0, label %cp, label %s3\n"
    "cp:\n" /* 32 bytes complete the tx */
    "  call void {BULK_G2S}(ptr addrspace(3) @dst, ptr addrspace(1) %src, i32 32, ptr addrspace(3) @bar)\n"
    "  br label %s3\n"
    "s3:\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  %r2 = call i32 {MBAR_TEST_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  %lt2 = icmp ult i32 %t, 2\n"
    "  br i1 %is0, label %p1a, label %p1b\n"
    "p1a:\n" /* phase 1: thread 0 arrives with 16 tx bytes and copies them */
    "  call void {MBAR_ARRIVE_EXPECT_TX}(ptr addrspace(3) @bar, i32 16)\n"
    "  %d2 = getelementptr i8, ptr addrspace(3) @dst, i32 32\n"
    "  %s2p = getelementptr i8, ptr addrspace(1) %src, i32 32\n"
    "  call void {BULK_G2S}(ptr addrspace(3) %d2, ptr addrspace(1) %s2p, i32 16, ptr addrspace(3) @bar)\n"
    "  br label %s4\n"
    "p1b:\n"
    "  br i1 %lt2, label %p1c, label %s4\n"
    "p1c:\n" /* thread 1: the second of three arrivals */
    "  call void {MBAR_ARRIVE}(ptr addrspace(3) @bar)\n"
    "  br label %s4\n"
    "s4:\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  %r3 = call i32 {MBAR_TEST_WAIT_PARITY}(ptr addrspace(3) @bar, i32 1)\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  %is2 = icmp eq i32 %t, 2\n"
    "  br i1 %is2, label %p1d, label %s5\n"
    "p1d:\n" /* the third arrival completes phase 1 (its copy landed at r3's wait) */
    "  call void {MBAR_ARRIVE}(ptr addrspace(3) @bar)\n"
    "  br label %s5\n"
    "s5:\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  %r4 = call i32 {MBAR_TEST_WAIT_PARITY}(ptr addrspace(3) @bar, i32 1)\n"
    "  %r5 = call i32 {MBAR_TEST_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n"
    "  %q0 = getelementptr i32, ptr addrspace(1) %out, i32 %o\n"
    "  store i32 %r0, ptr addrspace(1) %q0, align 4\n"
    "  %q1 = getelementptr i32, ptr addrspace(1) %q0, i32 1\n"
    "  store i32 %r1, ptr addrspace(1) %q1, align 4\n"
    "  %q2 = getelementptr i32, ptr addrspace(1) %q0, i32 2\n"
    "  store i32 %r2, ptr addrspace(1) %q2, align 4\n"
    "  %q3 = getelementptr i32, ptr addrspace(1) %q0, i32 3\n"
    "  store i32 %r3, ptr addrspace(1) %q3, align 4\n"
    "  %q4 = getelementptr i32, ptr addrspace(1) %q0, i32 4\n"
    "  store i32 %r4, ptr addrspace(1) %q4, align 4\n"
    "  %q5 = getelementptr i32, ptr addrspace(1) %q0, i32 5\n"
    "  store i32 %r5, ptr addrspace(1) %q5, align 4\n"
    /* every thread reads the 48 copied bytes back (the copies landed) */
    "  %ti = mul i32 %t, 12\n"
    "  %dp = getelementptr i8, ptr addrspace(3) @dst, i32 %ti\n"
    "  %v = load i32, ptr addrspace(3) %dp, align 4\n"
    "  %ob = getelementptr i32, ptr addrspace(1) %out, i32 24\n"
    "  %op = getelementptr i8, ptr addrspace(1) %ob, i32 %ti\n"
    "  store i32 %v, ptr addrspace(1) %op, align 4\n"
    "  ret void\n"
    "}\n";

static void test_mbarrier_phases_and_parity(void **state) {
    (void)state;
    uint8_t src[48];
    int32_t out[24 + 12];
    for (int i = 0; i < 48; i++) src[i] = (uint8_t)(rand() % 255 + 1);
    memset(out, 0x5a, sizeof out);
    char err[ERR];
    emu_module *m = load_kernel(phases_ir, 4, err);
    emu_buffer bufs[2] = {{src, sizeof src}, {out, sizeof out}};
    if (launch(m, bufs, 2, NULL, 0, err) != EMU_OK) fail_msg("%s", err);
    /* r0: phase 0 open (3 of 3 arrived, 32 tx bytes outstanding); r1: the
     * phase before phase 0 counts as complete; r2: the copy's 32 bytes
     * complete phase 0; r3: phase 1 has one arrival pending although its
     * tx is done; r4: the last arrival completes it; r5: phase 2 (even)
     * is open. */
    static const int32_t want[6] = {0, 1, 1, 0, 1, 0};
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 6; i++)
            if (out[t * 6 + i] != want[i]) fail_msg("thread %d, result %d: %d, want %d", t, i, out[t * 6 + i], want[i]);
    for (int t = 0; t < 4; t++) {
        int32_t v;
        memcpy(&v, src + t * 12, 4);
        if (out[24 + t * 3] != v) fail_msg("thread %d read %#x of the copied bytes, want %#x", t, out[24 + t * 3], v);
    }
    emu_module_free(m);
}

/* ---- the ring: bulk tensor copies, swizzles, out-of-bounds fill ---------------
 * The pipeline codegen will generate: thread 0 produces, for each tile t
 * into stage s = t % 3 (round k = t / 3): it waits on empty[s] for parity
 * (k & 1) ^ 1 (the first round passes: the phase before phase 0 counts as
 * complete), arrive.expect_tx(full[s], tile bytes) and issues the 2-D
 * tensor copy of box (x0, y0) = (-8 + box0 * bx, -5 + 16 * by): negative
 * coordinates and the tensor's far edges (W = 100, H = 70) make ragged
 * boxes whose outside elements arrive as zeros ("Tensors", tile mode bounding
 * box). Threads 1..4 consume: wait on full[s] for parity k & 1, each copy
 * its quarter of the stage's bytes, as they lie in shared memory, to out,
 * and arrive on empty[s] (expected count 4). The test places every element
 * by the ISA's swizzle figures: the box's rows are packed from the
 * (1024-aligned) stage; with span S, in each 128-byte line i the 16-byte
 * chunk j of each S-byte segment moves to chunk j ^ (i mod S/16). */
enum { RW = 100, RH = 70, PITCH = 224, BOXH = 16, STAGES = 3, STAGE_BYTES = 2048, CONSUMERS = 4 };

static const char ring_ir[] =
    "@bars = internal addrspace(3) global [6 x i64] undef, align 8\n"
    "@stage = internal addrspace(3) global [6144 x i8] undef, align 1024\n"
    "define void @k(ptr addrspace(1) %tmap, ptr addrspace(1) %out, i32 %box0, i32 %nx, i32 %ntiles) {\n"
    "entry:\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %bytes = mul i32 %box0, 32\n" /* box0 x 16 rows x 2 bytes */
    "  %is0 = icmp eq i32 %t, 0\n"
    "  br i1 %is0, label %init, label %go\n"
    "init:\n"
    "  %e0 = getelementptr i64, ptr addrspace(3) @bars, i32 0\n"
    "  call void {MBAR_INIT}(ptr addrspace(3) %e0, i32 1)\n"
    "  %e1 = getelementptr i64, ptr addrspace(3) @bars, i32 1\n"
    "  call void {MBAR_INIT}(ptr addrspace(3) %e1, i32 1)\n"
    "  %e2 = getelementptr i64, ptr addrspace(3) @bars, i32 2\n"
    "  call void {MBAR_INIT}(ptr addrspace(3) %e2, i32 1)\n"
    "  %e3 = getelementptr i64, ptr addrspace(3) @bars, i32 3\n"
    "  call void {MBAR_INIT}(ptr addrspace(3) %e3, i32 4)\n"
    "  %e4 = getelementptr i64, ptr addrspace(3) @bars, i32 4\n"
    "  call void {MBAR_INIT}(ptr addrspace(3) %e4, i32 4)\n"
    "  %e5 = getelementptr i64, ptr addrspace(3) @bars, i32 5\n"
    "  call void {MBAR_INIT}(ptr addrspace(3) %e5, i32 4)\n"
    "  call void {FENCE_MBAR_INIT}()\n"
    "  br label %go\n"
    "go:\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  br i1 %is0, label %prod, label %cons\n"
    /* producer */
    "prod:\n"
    "  %pt = phi i32 [0, %go], [%pt1, %pissue]\n"
    "  %pdone = icmp eq i32 %pt, %ntiles\n"
    "  br i1 %pdone, label %end, label %pwait\n"
    "pwait:\n"
    "  %ps = urem i32 %pt, 3\n"
    "  %pk = udiv i32 %pt, 3\n"
    "  %pk1 = and i32 %pk, 1\n"
    "  %ppar = xor i32 %pk1, 1\n"
    "  %pes = add i32 %ps, 3\n"
    "  %pe = getelementptr i64, ptr addrspace(3) @bars, i32 %pes\n"
    "  %pok = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) %pe, i32 %ppar)\n"
    "  %pgo = icmp ne i32 %pok, 0\n"
    "  br i1 %pgo, label %pissue, label %pwait\n"
    "pissue:\n"
    "  %pf = getelementptr i64, ptr addrspace(3) @bars, i32 %ps\n"
    "  call void {MBAR_ARRIVE_EXPECT_TX}(ptr addrspace(3) %pf, i32 %bytes)\n"
    "  %bx = urem i32 %pt, %nx\n"
    "  %by = udiv i32 %pt, %nx\n"
    "  %xs = mul i32 %bx, %box0\n"
    "  %x0 = sub i32 %xs, 8\n"
    "  %ys = mul i32 %by, 16\n"
    "  %y0 = sub i32 %ys, 5\n"
    "  %soff = mul i32 %ps, 2048\n"
    "  %sp = getelementptr i8, ptr addrspace(3) @stage, i32 %soff\n"
    "  call void {TENSOR_G2S_2D}(ptr addrspace(3) %sp, ptr addrspace(1) %tmap, ptr addrspace(3) %pf, i32 %x0, i32 %y0)\n"
    "  %pt1 = add i32 %pt, 1\n"
    "  br label %prod\n"
    /* consumers */
    "cons:\n"
    "  %c = sub i32 %t, 1\n"
    "  %quarter = udiv i32 %bytes, 4\n"
    "  %words = udiv i32 %quarter, 8\n"
    "  br label %ctile\n"
    "ctile:\n"
    "  %ct = phi i32 [0, %cons], [%ct1, %carrive]\n"
    "  %cdone = icmp eq i32 %ct, %ntiles\n"
    "  br i1 %cdone, label %end, label %cwait\n"
    "cwait:\n"
    "  %cs = urem i32 %ct, 3\n"
    "  %ck = udiv i32 %ct, 3\n"
    "  %cpar = and i32 %ck, 1\n"
    "  %cf = getelementptr i64, ptr addrspace(3) @bars, i32 %cs\n"
    "  %cok = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) %cf, i32 %cpar)\n"
    "  %cgo = icmp ne i32 %cok, 0\n"
    "  br i1 %cgo, label %ccopy, label %cwait\n"
    "ccopy:\n"
    "  %cw = phi i32 [0, %cwait], [%cw1, %ccopy]\n"
    "  %cso = mul i32 %cs, 2048\n"
    "  %cqo = mul i32 %c, %quarter\n"
    "  %cwo = mul i32 %cw, 8\n"
    "  %co1 = add i32 %cso, %cqo\n"
    "  %co = add i32 %co1, %cwo\n"
    "  %cp = getelementptr i8, ptr addrspace(3) @stage, i32 %co\n"
    "  %cv = load i64, ptr addrspace(3) %cp, align 8\n"
    "  %oo1 = mul i32 %ct, 2048\n"
    "  %oo2 = add i32 %oo1, %cqo\n"
    "  %oo = add i32 %oo2, %cwo\n"
    "  %op = getelementptr i8, ptr addrspace(1) %out, i32 %oo\n"
    "  store i64 %cv, ptr addrspace(1) %op, align 8\n"
    "  %cw1 = add i32 %cw, 1\n"
    "  %cmore = icmp ult i32 %cw1, %words\n"
    "  br i1 %cmore, label %ccopy, label %carrive\n"
    "carrive:\n"
    "  %ces = add i32 %cs, 3\n"
    "  %ce = getelementptr i64, ptr addrspace(3) @bars, i32 %ces\n"
    "  call void {MBAR_ARRIVE}(ptr addrspace(3) %ce)\n"
    "  %ct1 = add i32 %ct, 1\n"
    "  br label %ctile\n"
    "end:\n"
    "  ret void\n"
    "}\n";

/* Where byte L of the unswizzled box lands, from the ISA's figures. */
static unsigned swizzled_at(unsigned lin, unsigned span) {
    if (!span) return lin;
    unsigned line = lin / 128, within = lin % 128, seg = within / span, chunk = within % span / 16;
    return line * 128 + seg * span + 16 * (chunk ^ (line % (span / 16))) + lin % 16;
}

static void test_ring_of_tensor_copies(void **state) {
    (void)state;
    static uint16_t g[RH * PITCH / 2];
    for (size_t i = 0; i < sizeof g / 2; i++) g[i] = (uint16_t)(rand_u32() % 65535 + 1); /* never 0: fill shows */
    static const struct {
        emu_swizzle sw;
        unsigned span, box0;
    } modes[] = {{EMU_SWIZZLE_NONE, 0, 64}, {EMU_SWIZZLE_32B, 32, 16}, {EMU_SWIZZLE_64B, 64, 32}, {EMU_SWIZZLE_128B, 128, 64}};
    char err[ERR];
    emu_module *m = load_kernel(ring_ir, 1 + CONSUMERS, err);
    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
        unsigned box0 = modes[mi].box0, nx = (RW + 8 + box0 - 1) / box0, ny = (RH + 5 + BOXH - 1) / BOXH;
        unsigned ntiles = nx * ny, tile_bytes = box0 * BOXH * 2;
        _Alignas(64) uint8_t map[EMU_TENSOR_MAP_BYTES];
        uint8_t *out = malloc((size_t)ntiles * STAGE_BYTES);
        memset(out, 0xee, (size_t)ntiles * STAGE_BYTES);
        emu_buffer bufs[3] = {{map, sizeof map}, {out, (size_t)ntiles * STAGE_BYTES}, {g, sizeof g}};
        emu_tensor_map_desc d = {.global_address = emu_buffer_address(bufs, 2, 0),
                                 .elem_bytes = 2,
                                 .rank = 2,
                                 .global_dim = {RW, RH},
                                 .global_stride = {PITCH},
                                 .box_dim = {box0, BOXH},
                                 .swizzle = modes[mi].sw};
        if (!emu_tensor_map_encode(map, &d, err, sizeof err)) fail_msg("%s", err);
        uint32_t sc[3] = {box0, nx, ntiles};
        if (launch_n(m, bufs, 3, 2, sc, 3, err) != EMU_OK) fail_msg("swizzle %u: %s", modes[mi].span, err);
        for (unsigned t = 0; t < ntiles; t++) {
            int x0 = -8 + (int)(box0 * (t % nx)), y0 = -5 + BOXH * (int)(t / nx);
            for (unsigned r = 0; r < BOXH; r++)
                for (unsigned c = 0; c < box0; c++) {
                    int x = x0 + (int)c, y = y0 + (int)r;
                    uint16_t want = x >= 0 && x < RW && y >= 0 && y < RH ? g[y * (PITCH / 2) + x] : 0, got;
                    memcpy(&got, out + (size_t)t * STAGE_BYTES + swizzled_at((r * box0 + c) * 2, modes[mi].span), 2);
                    if (got != want)
                        fail_msg("swizzle %u, tile %u, box element (%u, %u) = tensor (%d, %d): %#x, want %#x", modes[mi].span, t,
                                 r, c, y, x, got, want);
                }
            for (unsigned b = tile_bytes; b < STAGE_BYTES; b++)
                if (out[(size_t)t * STAGE_BYTES + b] != 0xee) fail_msg("tile %u: byte %u written", t, b);
        }
        free(out);
    }
    emu_module_free(m);
}

/* ---- a 3-D box and a 1-D bulk copy into other ranks' coordinates ----------- */

static const char rank3_ir[] =
    "@bar = internal addrspace(3) global i64 undef, align 8\n"
    "@s = internal addrspace(3) global [512 x i8] undef, align 128\n"
    "define void @k(ptr addrspace(1) %tmap, ptr addrspace(1) %out) {\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %is0 = icmp eq i32 %t, 0\n"
    "  br i1 %is0, label %a, label %b\n"
    "a:\n"
    "  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
    "  call void {MBAR_ARRIVE_EXPECT_TX}(ptr addrspace(3) @bar, i32 512)\n"
    "  call void {TENSOR_G2S_3D}(ptr addrspace(3) @s, ptr addrspace(1) %tmap, ptr addrspace(3) @bar, i32 -4, i32 6, "
    "i32 1)\n"
    "  br label %b\n"
    "b:\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  br label %w\n"
    "w:\n"
    "  %ok = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n"
    "  %go = icmp ne i32 %ok, 0\n"
    "  br i1 %go, label %c, label %w\n"
    "c:\n"
    "  %o = mul i32 %t, 16\n"
    "  %p = getelementptr i8, ptr addrspace(3) @s, i32 %o\n"
    "  %v = load <4 x i32>, ptr addrspace(3) %p, align 16\n"
    "  %q = getelementptr i8, ptr addrspace(1) %out, i32 %o\n"
    "  store <4 x i32> %v, ptr addrspace(1) %q, align 16\n"
    "  ret void\n"
    "}\n";

/* "Tensors", tile mode: a 3-D box of 4-byte elements, box (8, 4, 4) at (-4, 6, 1) in a
 * (6, 9, 4) tensor: dimension 2 runs past its end, 1 past its end, 0
 * starts before 0 (16 bytes before: the innermost start is a multiple of
 * 16 bytes, test_tensor_copy_misuse). */
static void test_tensor_copy_rank3(void **state) {
    (void)state;
    enum { D0 = 6, D1 = 9, D2 = 4, S1 = 32, S2 = S1 * 10 };
    static uint32_t g[S2 * D2 / 4];
    for (size_t i = 0; i < sizeof g / 4; i++) g[i] = rand_u32() | 1;
    _Alignas(64) uint8_t map[EMU_TENSOR_MAP_BYTES];
    static uint32_t out[128];
    emu_buffer bufs[3] = {{map, sizeof map}, {out, sizeof out}, {g, sizeof g}};
    emu_tensor_map_desc d = {.global_address = emu_buffer_address(bufs, 2, 0),
                             .elem_bytes = 4,
                             .rank = 3,
                             .global_dim = {D0, D1, D2},
                             .global_stride = {S1, S2},
                             .box_dim = {8, 4, 4}};
    char err[ERR];
    if (!emu_tensor_map_encode(map, &d, err, sizeof err)) fail_msg("%s", err);
    emu_module *m = load_kernel(rank3_ir, 32, err);
    if (launch_n(m, bufs, 3, 2, NULL, 0, err) != EMU_OK) fail_msg("%s", err);
    for (int z = 0; z < 4; z++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 8; x++) {
                int gx = x - 4, gy = y + 6, gz = z + 1;
                uint32_t want = gx >= 0 && gx < D0 && gy < D1 && gz < D2 ? g[(gz * S2 + gy * S1) / 4 + gx] : 0;
                uint32_t got = out[(z * 4 + y) * 8 + x];
                if (got != want) fail_msg("box (%d, %d, %d): %#x, want %#x", x, y, z, got, want);
            }
    emu_module_free(m);
}

/* 1-D and 5-D boxes: a (40) tensor of bytes read from -16 in a 128-byte box,
 * and a 5-D box (16, 2, 2, 2, 2) of bytes at (0, -1, 1, 0, 1) in a
 * (16, 3, 2, 3, 2) tensor: each dimension's out-of-range part is zeros. */
static const char rank15_ir[] =
    "@bar = internal addrspace(3) global i64 undef, align 8\n"
    "@s = internal addrspace(3) global [384 x i8] undef, align 128\n"
    "define void @k(ptr addrspace(1) %m1, ptr addrspace(1) %m5, ptr addrspace(1) %out) {\n"
    "  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
    "  call void {MBAR_ARRIVE_EXPECT_TX}(ptr addrspace(3) @bar, i32 384)\n"
    "  call void {TENSOR_G2S_1D}(ptr addrspace(3) @s, ptr addrspace(1) %m1, ptr addrspace(3) @bar, i32 -16)\n"
    "  %s5 = getelementptr i8, ptr addrspace(3) @s, i32 128\n"
    "  call void {TENSOR_G2S_5D}(ptr addrspace(3) %s5, ptr addrspace(1) %m5, ptr addrspace(3) @bar, i32 0, i32 -1, "
    "i32 1, i32 0, i32 1)\n"
    "  br label %w\n"
    "w:\n"
    "  %ok = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n"
    "  %go = icmp ne i32 %ok, 0\n"
    "  br i1 %go, label %c, label %w\n"
    "c:\n"
    "  %i = phi i32 [0, %w], [%i1, %c]\n"
    "  %p = getelementptr i8, ptr addrspace(3) @s, i32 %i\n"
    "  %v = load i8, ptr addrspace(3) %p, align 1\n"
    "  %q = getelementptr i8, ptr addrspace(1) %out, i32 %i\n"
    "  store i8 %v, ptr addrspace(1) %q, align 1\n"
    "  %i1 = add i32 %i, 1\n"
    "  %more = icmp ult i32 %i1, 384\n"
    "  br i1 %more, label %c, label %e\n"
    "e:\n"
    "  ret void\n"
    "}\n";

static void test_tensor_copy_rank1_and_5(void **state) {
    (void)state;
    enum { N1 = 40, P1 = 16, P2 = 64, P3 = 128, P4 = 512 };
    static uint8_t g1[64], g5[P4 * 2], out[384];
    for (size_t i = 0; i < sizeof g1; i++) g1[i] = (uint8_t)(rand() % 255 + 1);
    for (size_t i = 0; i < sizeof g5; i++) g5[i] = (uint8_t)(rand() % 255 + 1);
    memset(out, 0xee, sizeof out);
    _Alignas(64) uint8_t m1[EMU_TENSOR_MAP_BYTES], m5[EMU_TENSOR_MAP_BYTES];
    emu_buffer bufs[5] = {{m1, sizeof m1}, {m5, sizeof m5}, {out, sizeof out}, {g1, sizeof g1}, {g5, sizeof g5}};
    emu_tensor_map_desc d1 = {.global_address = emu_buffer_address(bufs, 3, 0), .elem_bytes = 1, .rank = 1,
                              .global_dim = {N1}, .box_dim = {128}};
    emu_tensor_map_desc d5 = {.global_address = emu_buffer_address(bufs, 4, 0),
                              .elem_bytes = 1,
                              .rank = 5,
                              .global_dim = {16, 3, 2, 3, 2},
                              .global_stride = {P1, P2, P3, P4},
                              .box_dim = {16, 2, 2, 2, 2}};
    char err[ERR];
    if (!emu_tensor_map_encode(m1, &d1, err, sizeof err) || !emu_tensor_map_encode(m5, &d5, err, sizeof err))
        fail_msg("%s", err);
    emu_module *m = load_kernel(rank15_ir, 1, err);
    if (launch_n(m, bufs, 5, 3, NULL, 0, err) != EMU_OK) fail_msg("%s", err);
    for (int i = 0; i < 128; i++) {
        int x = i - 16;
        uint8_t want = x >= 0 && x < N1 ? g1[x] : 0;
        if (out[i] != want) fail_msg("1-D box element %d: %#x, want %#x", i, out[i], want);
    }
    static const int dim[5] = {16, 3, 2, 3, 2}, start[5] = {0, -1, 1, 0, 1}, box[5] = {16, 2, 2, 2, 2},
                     stride[5] = {1, P1, P2, P3, P4};
    for (int i = 0; i < 256; i++) {
        int rest = i, off = 0;
        bool in = true;
        for (int k = 0; k < 5; k++) {
            int c = start[k] + rest % box[k];
            rest /= box[k];
            in = in && c >= 0 && c < dim[k];
            off += c * stride[k];
        }
        uint8_t want = in ? g5[off] : 0;
        if (out[128 + i] != want) fail_msg("5-D box element %d: %#x, want %#x", i, out[128 + i], want);
    }
    emu_module_free(m);
}

/* tx-count below -(2^20 - 1): one copy of 2^20 bytes with no expect_tx. */
static void test_tx_count_underflow(void **state) {
    (void)state;
    char err[ERR];
    emu_module *m = load_kernel("@bar = internal addrspace(3) global i64 undef, align 8\n"
                                "@dyn = external addrspace(3) global [0 x i8], align 16\n"
                                "define void @k(ptr addrspace(1) %g) {\n"
                                "  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
                                "  call void {BULK_G2S}(ptr addrspace(3) @dyn, ptr addrspace(1) %g, i32 1048576, ptr "
                                "addrspace(3) @bar)\n"
                                "  %r = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n"
                                "  ret void\n"
                                "}\n",
                                1, err);
    uint8_t *g = calloc(1, 1 << 20);
    g[0] = 1;
    emu_buffer bufs[1] = {{g, 1 << 20}};
    emu_arg args[1] = {{true, 0, 0, 0}};
    emu_launch l = {"k", {1, 1, 1}, args, 1, bufs, 1, NULL, NULL, 1 << 20, NULL, 0};
    if (emu_run(m, &l, err, ERR) != EMU_ERROR || !strstr(err, "a bulk copy's complete_tx takes the tx-count of the mbarrier "
                                                              "at shared byte 0 to -1048576, outside the ISA's range"))
        fail_msg("%s", err);
    free(g);
    emu_module_free(m);
}

/* ---- bulk stores and fence.proxy.async ---------------------------------------
 * "fence.proxy.async", "cp.async.bulk.tensor": threads write a tile to shared memory; before the
 * async proxy (a bulk tensor store) reads it, each writer must execute
 * fence.proxy.async.shared::cta, and a barrier must order the writes
 * before the storing thread. The store of a box at (4, 1) in a (7, 3)
 * tensor writes only its in-bounds elements; the source stays in use until
 * wait_group.read covers its group. */
static const char store_ir_fmt[] =
    "@s = internal addrspace(3) global [128 x i8] undef, align 128\n"
    "define void @k(ptr addrspace(1) %%tmap, ptr addrspace(1) %%src) {\n"
    "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %%o = mul i32 %%t, 4\n"
    "  %%sp = getelementptr i8, ptr addrspace(1) %%src, i32 %%o\n"
    "  %%v = load i32, ptr addrspace(1) %%sp, align 4\n"
    "  %%p = getelementptr i8, ptr addrspace(3) @s, i32 %%o\n"
    "  store i32 %%v, ptr addrspace(3) %%p, align 4\n"
    "%s" /* the fence, or not */
    "  call void @llvm.nvvm.barrier0()\n"
    "  %%is0 = icmp eq i32 %%t, 0\n"
    "  br i1 %%is0, label %%st, label %%end\n"
    "st:\n"
    "  call void {TENSOR_S2G_2D}(ptr addrspace(1) %%tmap, ptr addrspace(3) @s, i32 4, i32 1)\n"
    "  call void {BULK_COMMIT}()\n"
    "%s" /* the wait, or not */
    "  br label %%end\n"
    "end:\n"
    "  ret void\n"
    "}\n";

static void test_bulk_store_and_proxy_fence(void **state) {
    (void)state;
    enum { W = 7, H = 3, GP = 32 };
    static uint32_t src[32], g[H * GP / 4], keep[H * GP / 4];
    for (int i = 0; i < 32; i++) src[i] = rand_u32() | 1;
    for (int i = 0; i < H * GP / 4; i++) keep[i] = g[i] = rand_u32() | 1;
    _Alignas(64) uint8_t map[EMU_TENSOR_MAP_BYTES];
    emu_buffer bufs[3] = {{map, sizeof map}, {src, sizeof src}, {g, sizeof g}};
    emu_tensor_map_desc d = {.global_address = emu_buffer_address(bufs, 2, 0),
                             .elem_bytes = 4,
                             .rank = 2,
                             .global_dim = {W, H},
                             .global_stride = {GP},
                             .box_dim = {4, 8}};
    char err[ERR];
    if (!emu_tensor_map_encode(map, &d, err, sizeof err)) fail_msg("%s", err);
    static char body[IR];
    const char *fence = "  call void {FENCE_PROXY_ASYNC}()\n", *wait = "  call void {BULK_WAIT_READ}(i32 0)\n";
    /* no fence: the async proxy may not see the writes */
    snprintf(body, sizeof body, store_ir_fmt, "", wait);
    expect_error_n(body, 32, bufs, 3, 2, "without a fence.proxy.async.shared::cta");
    /* no wait before exiting */
    snprintf(body, sizeof body, store_ir_fmt, fence, "");
    expect_error_n(body, 32, bufs, 3, 2, "still reading shared bytes 0..127");
    /* in order */
    memcpy(g, keep, sizeof g);
    snprintf(body, sizeof body, store_ir_fmt, fence, wait);
    emu_module *m = load_kernel(body, 32, err);
    if (launch_n(m, bufs, 3, 2, NULL, 0, err) != EMU_OK) fail_msg("%s", err);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int bx = x - 4, by = y - 1; /* the box element this tensor element is */
            uint32_t want = bx >= 0 && bx < 4 && by >= 0 && by < 8 ? src[by * 4 + bx] : keep[y * GP / 4 + x];
            if (g[y * GP / 4 + x] != want) fail_msg("tensor (%d, %d): %#x, want %#x", y, x, g[y * GP / 4 + x], want);
        }
    emu_module_free(m);
}

/* ---- a hang ---------------------------------------------------------------------
 * A phase that can never complete: the barrier expects two arrivals, only
 * thread 1 arrives, and threads 0 and 2 wait. On the GPU: a hang. */
static void test_deadlock_is_reported(void **state) {
    (void)state;
    expect_error("@bar = internal addrspace(3) global i64 undef, align 8\n"
                 "define void @k() {\n"
                 "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
                 "  %is0 = icmp eq i32 %t, 0\n"
                 "  br i1 %is0, label %a, label %b\n"
                 "a:\n"
                 "  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 2)\n"
                 "  br label %b\n"
                 "b:\n"
                 "  call void @llvm.nvvm.barrier0()\n"
                 "  %is1 = icmp eq i32 %t, 1\n"
                 "  br i1 %is1, label %arr, label %w\n"
                 "arr:\n"
                 "  call void {MBAR_ARRIVE}(ptr addrspace(3) @bar)\n"
                 "  ret void\n"
                 "w:\n"
                 "  %ok = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n"
                 "  %go = icmp ne i32 %ok, 0\n"
                 "  br i1 %go, label %e, label %w\n"
                 "e:\n"
                 "  ret void\n"
                 "}\n",
                 3, NULL, 0,
                 "a deadlock (the kernel would hang on the GPU): no thread can go on. Threads 0, 2 wait for the phase of "
                 "parity 0 of the mbarrier at shared byte 0 (phase 0 in progress: 1 of 2 arrivals pending, tx-count 0). 1 "
                 "thread exited.");
    /* the producer's classic mistake: waiting on an empty barrier with
     * parity 0 in the first round (the consumers only arrive after data) */
    expect_error("@bars = internal addrspace(3) global [2 x i64] undef, align 8\n"
                 "define void @k() {\n"
                 "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
                 "  %f = getelementptr i64, ptr addrspace(3) @bars, i32 0\n"
                 "  %e = getelementptr i64, ptr addrspace(3) @bars, i32 1\n"
                 "  %is0 = icmp eq i32 %t, 0\n"
                 "  br i1 %is0, label %a, label %b\n"
                 "a:\n"
                 "  call void {MBAR_INIT}(ptr addrspace(3) %f, i32 1)\n"
                 "  call void {MBAR_INIT}(ptr addrspace(3) %e, i32 1)\n"
                 "  br label %b\n"
                 "b:\n"
                 "  call void @llvm.nvvm.barrier0()\n"
                 "  br i1 %is0, label %pw, label %cw\n"
                 "pw:\n"
                 "  %pok = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) %e, i32 0)\n"
                 "  %pgo = icmp ne i32 %pok, 0\n"
                 "  br i1 %pgo, label %pa, label %pw\n"
                 "pa:\n"
                 "  call void {MBAR_ARRIVE}(ptr addrspace(3) %f)\n"
                 "  ret void\n"
                 "cw:\n"
                 "  %cok = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) %f, i32 0)\n"
                 "  %cgo = icmp ne i32 %cok, 0\n"
                 "  br i1 %cgo, label %ca, label %cw\n"
                 "ca:\n"
                 "  call void {MBAR_ARRIVE}(ptr addrspace(3) %e)\n"
                 "  ret void\n"
                 "}\n",
                 2, NULL, 0, "Thread 0 waits for the phase of parity 0 of the mbarrier at shared byte 8");
}

/* ---- misuse ------------------------------------------------------------------- */

/* A kernel of one thread (tid 0 runs `body`) over @bar (8-aligned) and @s. */
static void expect_misuse(const char *body, const char *want) {
    static char ir[IR];
    snprintf(ir, sizeof ir,
             "@bar = internal addrspace(3) global [2 x i64] undef, align 8\n"
             "@s = internal addrspace(3) global [256 x i8] undef, align 128\n"
             "define void @k(ptr addrspace(1) %%g) {\n"
             "  %%b1 = getelementptr i64, ptr addrspace(3) @bar, i32 1\n"
             "%s"
             "  ret void\n"
             "}\n",
             body);
    static uint8_t g[256];
    emu_buffer bufs[1] = {{g, sizeof g}};
    expect_error(ir, 1, bufs, 1, want);
}

static void test_mbarrier_misuse(void **state) {
    (void)state;
    expect_misuse("  call void {MBAR_ARRIVE}(ptr addrspace(3) @bar)\n", "holds no initialized mbarrier");
    /* "mbarrier.init": init of an object that is live is undefined: inval first */
    expect_misuse("  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
                  "  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n",
                  "mbarrier.init of the live mbarrier at shared byte 0 (mbarrier.inval it first)");
    /* an mbarrier is 8 bytes, 8-byte aligned */
    expect_misuse("  %m = getelementptr i8, ptr addrspace(3) @bar, i32 4\n"
                  "  call void {MBAR_INIT}(ptr addrspace(3) %m, i32 1)\n",
                  "8-byte aligned");
    /* the expected count is in 1 .. 2^20 - 1 */
    expect_misuse("  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 0)\n", "count 0 (limit is 1..1048575)");
    expect_misuse("  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1048576)\n", "limit is 1..1048575");
    /* an arrival beyond the expected count while tx keeps the phase open */
    expect_misuse("  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
                  "  call void {MBAR_EXPECT_TX}(ptr addrspace(3) @bar, i32 16)\n"
                  "  call void {MBAR_ARRIVE}(ptr addrspace(3) @bar)\n"
                  "  call void {MBAR_ARRIVE}(ptr addrspace(3) @bar)\n",
                  "more arrivals than the 1 the mbarrier at shared byte 0 expects in its phase 0");
    /* tx-count in -(2^20 - 1) .. 2^20 - 1 */
    expect_misuse("  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
                  "  call void {MBAR_EXPECT_TX}(ptr addrspace(3) @bar, i32 1048575)\n"
                  "  call void {MBAR_ARRIVE_EXPECT_TX}(ptr addrspace(3) @bar, i32 1)\n",
                  "to 1048576, outside the ISA's range (limit is +-1048575)");
    /* parity is 0 or 1 */
    expect_misuse("  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
                  "  %r = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) @bar, i32 2)\n",
                  "phase parity 2 (0 or 1)");
    /* the object's bytes belong to the mbarrier until inval */
    expect_misuse("  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
                  "  store i64 0, ptr addrspace(3) @bar, align 8\n",
                  "holds a live mbarrier");
    /* inval, then init again, is allowed; a wait on an invalidated one is not */
    expect_misuse("  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
                  "  call void {MBAR_INVAL}(ptr addrspace(3) @bar)\n"
                  "  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 2)\n"
                  "  call void {MBAR_INVAL}(ptr addrspace(3) @bar)\n"
                  "  %r = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n",
                  "mbarrier.try_wait.parity on shared byte 0, which holds no initialized mbarrier");
    /* cp.async.bulk: size a multiple of 16, addresses 16-aligned */
    expect_misuse("  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
                  "  call void {BULK_G2S}(ptr addrspace(3) @s, ptr addrspace(1) %g, i32 24, ptr addrspace(3) @bar)\n",
                  "cp.async.bulk of 24 bytes: the size must be a nonzero multiple of 16");
    expect_misuse("  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
                  "  %d = getelementptr i8, ptr addrspace(3) @s, i32 8\n"
                  "  call void {BULK_G2S}(ptr addrspace(3) %d, ptr addrspace(1) %g, i32 16, ptr addrspace(3) @bar)\n",
                  "cp.async.bulk's destination at shared byte 136: it must be 16-byte aligned");
    /* a copy still in flight when the CTA ends (nobody waited) */
    expect_misuse("  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
                  "  call void {BULK_G2S}(ptr addrspace(3) @s, ptr addrspace(1) %g, i32 16, ptr addrspace(3) @bar)\n",
                  "the CTA ended with a bulk copy into shared bytes 128..143 in flight");
}

/* cp.async.bulk.tensor: the shared address 128-byte aligned, the map's
 * rank the instruction's; inval while a copy is in flight on it; a thread
 * writing a bulk store's source before wait_group.read covers it; a
 * test_wait spin that nothing can end (a hang). */
static void test_tensor_copy_misuse(void **state) {
    (void)state;
    _Alignas(64) uint8_t map[EMU_TENSOR_MAP_BYTES];
    static uint8_t g[4096];
    static _Alignas(64) uint8_t out[EMU_TENSOR_MAP_BYTES]; /* not a tensor map */
    for (size_t i = 0; i < sizeof out; i++) out[i] = (uint8_t)(rand() % 255 + 1);
    emu_buffer bufs[3] = {{map, sizeof map}, {out, sizeof out}, {g, sizeof g}};
    emu_tensor_map_desc d = {.global_address = emu_buffer_address(bufs, 2, 0),
                             .elem_bytes = 4,
                             .rank = 2,
                             .global_dim = {16, 16},
                             .global_stride = {64},
                             .box_dim = {4, 4}};
    char err[ERR];
    if (!emu_tensor_map_encode(map, &d, err, sizeof err)) fail_msg("%s", err);
    static const char head[] = "@bar = internal addrspace(3) global i64 undef, align 8\n"
                               "@s = internal addrspace(3) global [256 x i8] undef, align 128\n"
                               "define void @k(ptr addrspace(1) %m, ptr addrspace(1) %o) {\n"
                               "  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n";
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"  %d = getelementptr i8, ptr addrspace(3) @s, i32 64\n"
         "  call void {TENSOR_G2S_2D}(ptr addrspace(3) %d, ptr addrspace(1) %m, ptr addrspace(3) @bar, i32 0, i32 0)\n",
         "cp.async.bulk.tensor's destination at shared byte 192: it must be 128-byte aligned"},
        {"  call void {TENSOR_G2S_3D}(ptr addrspace(3) @s, ptr addrspace(1) %m, ptr addrspace(3) @bar, i32 0, i32 0, i32 0)\n",
         "a 3d tensor copy with a tensor map of rank 2"},
        /* the innermost coordinate: a multiple of 16 bytes (emu/async.c,
         * coord_aligned: an illegal instruction on the GPU), either way,
         * below 0 too; the other dims' are free (3 above) */
        {"  call void {TENSOR_G2S_2D}(ptr addrspace(3) @s, ptr addrspace(1) %m, ptr addrspace(3) @bar, i32 1, i32 3)\n",
         "cp.async.bulk.tensor (global to shared): the box starts 1 elements (4 bytes) into the innermost dim, not a "
         "multiple of 16 bytes: an illegal instruction on the GPU"},
        {"  call void {TENSOR_G2S_2D}(ptr addrspace(3) @s, ptr addrspace(1) %m, ptr addrspace(3) @bar, i32 -2, i32 0)\n",
         "the box starts -2 elements (-8 bytes) into the innermost dim"},
        {"  call void {TENSOR_S2G_2D}(ptr addrspace(1) %m, ptr addrspace(3) @s, i32 6, i32 4)\n",
         "cp.async.bulk.tensor (shared to global): the box starts 6 elements (24 bytes) into the innermost dim"},
        {"  call void {TENSOR_G2S_2D}(ptr addrspace(3) @s, ptr addrspace(1) %o, ptr addrspace(3) @bar, i32 0, i32 0)\n",
         "is not one emu_tensor_map_encode made"},
        {"  call void {TENSOR_G2S_2D}(ptr addrspace(3) @s, ptr addrspace(1) %m, ptr addrspace(3) @bar, i32 0, i32 0)\n"
         "  call void {MBAR_INVAL}(ptr addrspace(3) @bar)\n",
         "mbarrier.inval of the mbarrier at shared byte 0 with 1 bulk copies in flight on it"},
        {"  call void {MBAR_ARRIVE_EXPECT_TX}(ptr addrspace(3) @bar, i32 64)\n"
         "  call void {TENSOR_G2S_2D}(ptr addrspace(3) @s, ptr addrspace(1) %m, ptr addrspace(3) @bar, i32 0, i32 0)\n"
         "  %r = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n"
         "  call void {FENCE_PROXY_ASYNC}()\n"
         "  call void {TENSOR_S2G_2D}(ptr addrspace(1) %m, ptr addrspace(3) @s, i32 4, i32 4)\n"
         "  call void {BULK_COMMIT}()\n"
         "  store i32 1, ptr addrspace(3) @s, align 4\n",
         "a write to byte 128 of shared memory, which a bulk store is still reading (cp.async.bulk.wait_group.read first)"},
        {"  br label %w\n"
         "w:\n"
         "  %r = call i32 {MBAR_TEST_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n"
         "  %go = icmp ne i32 %r, 0\n"
         "  br i1 %go, label %e, label %w\n"
         "e:\n",
         "a deadlock (the kernel would hang on the GPU): no thread can go on. Thread 0 waits for the phase of parity 0"},
    };
    static char body[IR];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(body, sizeof body, "%s%s  ret void\n}\n", head, cases[i].body);
        expect_error_n(body, 1, bufs, 3, 2, cases[i].want);
    }
}

static void test_tensor_map_encode_checks(void **state) {
    (void)state;
    _Alignas(64) uint8_t map[EMU_TENSOR_MAP_BYTES + 64];
    static uint8_t g[4096];
    emu_buffer bufs[1] = {{g, sizeof g}};
    const emu_tensor_map_desc ok = {.global_address = emu_buffer_address(bufs, 0, 0),
                                    .elem_bytes = 2,
                                    .rank = 2,
                                    .global_dim = {64, 16},
                                    .global_stride = {128},
                                    .box_dim = {64, 16},
                                    .swizzle = EMU_SWIZZLE_128B};
    char err[ERR];
    if (!emu_tensor_map_encode(map, &ok, err, sizeof err)) fail_msg("%s", err);
    static const struct {
        int field;
        const char *want;
    } cases[] = {
        {0, "not 64-byte aligned"},          /* the map itself */
        {1, "tensor rank 6 (limit is 1..5)"},
        {2, "is not 16-byte aligned"},       /* the global address */
        {3, "box dimension 1 is 257 (limit is 1..256)"},
        {4, "a nonzero multiple of 16 below 2^40"},
        {5, "the inner box dimension is 24 bytes (a multiple of 16)"},
        {6, "over the swizzle span (limit is 64)"},
        {7, "global dimension 0 is 0"},
        {8, "element stride 0 is 9 (limit is 1..8)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        emu_tensor_map_desc d = ok;
        void *where = map;
        switch (cases[i].field) {
        case 0: where = map + 16; break;
        case 1: d.rank = 6; break;
        case 2: d.global_address += 8; break;
        case 3: d.box_dim[1] = 257; break;
        case 4: d.global_stride[0] = 136; break;
        case 5: d.box_dim[0] = 12, d.swizzle = EMU_SWIZZLE_NONE; break;
        case 6: d.swizzle = EMU_SWIZZLE_64B; break;
        case 7: d.global_dim[0] = 0; break;
        default: d.element_stride[0] = 9; break;
        }
        if (emu_tensor_map_encode(where, &d, err, sizeof err) || !strstr(err, cases[i].want))
            fail_msg("case %d: want '%s', got '%s'", cases[i].field, cases[i].want, err);
    }
}

/* ---- races ------------------------------------------------------------------------ */

static const char race_head[] =
    "@bar = internal addrspace(3) global i64 undef, align 8\n"
    "@s = internal addrspace(3) global [64 x i8] undef, align 128\n"
    "define void @k(ptr addrspace(1) %g) {\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %is0 = icmp eq i32 %t, 0\n"
    "  br i1 %is0, label %a, label %b\n"
    "a:\n"
    "  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
    "  call void {MBAR_ARRIVE_EXPECT_TX}(ptr addrspace(3) @bar, i32 32)\n"
    "  call void {BULK_G2S}(ptr addrspace(3) @s, ptr addrspace(1) %g, i32 32, ptr addrspace(3) @bar)\n";

static void expect_race(const char *rest, int threads, const char *want) {
    static char ir[IR];
    snprintf(ir, sizeof ir, "%s%s", race_head, rest);
    static uint8_t g[64];
    for (int i = 0; i < 64; i++) g[i] = (uint8_t)(rand() % 255 + 1);
    emu_buffer bufs[1] = {{g, sizeof g}};
    expect_error(ir, threads, bufs, 1, want);
}

static void test_async_races(void **state) {
    (void)state;
    /* reading the destination before waiting on the mbarrier */
    expect_race("  %v = load i32, ptr addrspace(3) @s, align 4\n"
                "  br label %b\n"
                "b:\n"
                "  ret void\n"
                "}\n",
                1, "a read of byte 128 of shared memory, which a bulk copy is still writing");
    /* another thread writes into the copy's bytes while it is in flight */
    expect_race("  br label %b\n"
                "b:\n"
                "  call void @llvm.nvvm.barrier0()\n"
                "  br i1 %is0, label %w, label %x\n"
                "x:\n"
                "  %p = getelementptr i8, ptr addrspace(3) @s, i32 16\n"
                "  store i32 7, ptr addrspace(3) %p, align 4\n"
                "  ret void\n"
                "w:\n" /* thread 0 leaves without waiting: the copy is still in flight */
                "  ret void\n"
                "}\n",
                2, "thread 1: a race with a bulk copy: a write to byte 144 of shared memory, which a bulk copy in flight writes");
    /* two copies in flight over the same bytes */
    expect_race("  %d = getelementptr i8, ptr addrspace(3) @s, i32 16\n"
                "  call void {BULK_G2S}(ptr addrspace(3) %d, ptr addrspace(1) %g, i32 32, ptr addrspace(3) @bar)\n"
                "  br label %b\n"
                "b:\n"
                "  ret void\n"
                "}\n",
                1, "two copies in flight write byte 144 of shared memory");
    /* generic-proxy writes, then a bulk copy over them: the ISA orders the
     * two proxies only through fence.proxy.async */
    static const char waw[] = "@bar = internal addrspace(3) global i64 undef, align 8\n"
                              "@s = internal addrspace(3) global [64 x i8] undef, align 128\n"
                              "define void @k(ptr addrspace(1) %%g) {\n"
                              "  store i32 5, ptr addrspace(3) @s, align 4\n"
                              "%s"
                              "  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
                              "  call void {MBAR_ARRIVE_EXPECT_TX}(ptr addrspace(3) @bar, i32 32)\n"
                              "  call void {BULK_G2S}(ptr addrspace(3) @s, ptr addrspace(1) %%g, i32 32, ptr addrspace(3) "
                              "@bar)\n"
                              "  %%ok = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n"
                              "  %%v = load i32, ptr addrspace(3) @s, align 4\n"
                              "  store i32 %%v, ptr addrspace(1) %%g, align 4\n"
                              "  ret void\n"
                              "}\n";
    static char body[IR];
    static uint8_t g[64];
    for (int i = 0; i < 64; i++) g[i] = (uint8_t)(rand() % 255 + 1);
    emu_buffer bufs[1] = {{g, sizeof g}};
    snprintf(body, sizeof body, waw, "");
    expect_error(body, 1, bufs, 1, "a bulk copy writes byte 128 of shared memory, which thread 0 wrote through the generic "
                                   "proxy with no fence.proxy.async.shared::cta after it");
    snprintf(body, sizeof body, waw, "  call void {FENCE_PROXY_ASYNC}()\n");
    uint8_t first[4];
    memcpy(first, g, 4);
    char err[ERR];
    emu_module *m = load_kernel(body, 1, err);
    if (launch(m, bufs, 1, NULL, 0, err) != EMU_OK) fail_msg("%s", err);
    assert_memory_equal(g, first, 4); /* the copy's bytes, not the thread's 5 */
    emu_module_free(m);
    /* the producer refills the slot after thread 1 arrived but before it
     * read: the arrival does not order the later read */
    expect_race("  %ok0 = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n"
                "  br label %pw\n"
                "pw:\n" /* wait for thread 1's arrival: phase 1 */
                "  %ok = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) @bar, i32 1)\n"
                "  %go = icmp ne i32 %ok, 0\n"
                "  br i1 %go, label %refill, label %pw\n"
                "refill:\n"
                "  call void {BULK_G2S}(ptr addrspace(3) @s, ptr addrspace(1) %g, i32 32, ptr addrspace(3) @bar)\n"
                "  ret void\n"
                "b:\n"
                "  br label %cw\n"
                "cw:\n"
                "  %cok = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n"
                "  %cgo = icmp ne i32 %cok, 0\n"
                "  br i1 %cgo, label %c, label %cw\n"
                "c:\n"
                "  call void {MBAR_ARRIVE}(ptr addrspace(3) @bar)\n"
                "  %v = load i32, ptr addrspace(3) @s, align 4\n"
                "  ret void\n"
                "}\n",
                2, "a bulk copy writes byte 128, which thread 1 read and has not released since");
}

/* ---- elect.sync ---------------------------------------------------------------------
 * "elect.sync": one leader among the threads of membermask (here the whole
 * warp) gets p true, every other false; the election is deterministic (the
 * same leader each time for the same mask; which lane, the ISA leaves
 * open); .sync: every thread of membermask executes it before any goes
 * on. Each of 64 threads (two warps) records its result twice. */
static void test_elect_sync(void **state) {
    (void)state;
    char err[ERR];
    static const char body[] = "define void @k(ptr addrspace(1) %out) {\n"
                               "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
                               "  %e1 = call i32 {ELECT_SYNC}()\n"
                               "  %e2 = call i32 {ELECT_SYNC}()\n"
                               "  %i1 = mul i32 %t, 2\n"
                               "  %p1 = getelementptr i32, ptr addrspace(1) %out, i32 %i1\n"
                               "  store i32 %e1, ptr addrspace(1) %p1, align 4\n"
                               "  %i2 = add i32 %i1, 1\n"
                               "  %p2 = getelementptr i32, ptr addrspace(1) %out, i32 %i2\n"
                               "  store i32 %e2, ptr addrspace(1) %p2, align 4\n"
                               "  ret void\n"
                               "}\n";
    emu_module *m = load_kernel(body, 64, err);
    uint32_t out[128];
    memset(out, 0xab, sizeof out);
    emu_buffer bufs[1] = {{out, sizeof out}};
    if (launch(m, bufs, 1, NULL, 0, err) != EMU_OK) fail_msg("%s", err);
    emu_module_free(m);
    for (int w = 0; w < 2; w++) {
        int leaders = 0, leader = -1;
        for (int lane = 0; lane < 32; lane++) {
            uint32_t a = out[2 * (32 * w + lane)], b = out[2 * (32 * w + lane) + 1];
            if (a > 1 || a != b) fail_msg("warp %d lane %d: elected %u then %u (0 or 1, the same both times)", w, lane, a, b);
            if (a) leaders++, leader = lane;
        }
        if (leaders != 1) fail_msg("warp %d: %d leaders, want one", w, leaders);
        print_message("warp %d elects lane %d\n", w, leader);
    }
    /* .sync: a lane that does not reach it (half the warp branches around) */
    expect_error("define void @k() {\n"
                 "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
                 "  %h = icmp ult i32 %t, 16\n"
                 "  br i1 %h, label %e, label %x\n"
                 "e:\n"
                 "  %v = call i32 {ELECT_SYNC}()\n"
                 "  ret void\n"
                 "x:\n"
                 "  ret void\n"
                 "}\n",
                 32, NULL, 0, "divergence");
}

/* ---- setmaxnreg ---------------------------------------------------------------------
 * "setmaxnreg": the count is in 24..256 and a multiple of 8; .sync.aligned:
 * every thread of the warpgroup executes the same setmaxnreg; it needs the
 * register count at entry (.maxnreg: the "maxnreg" annotation). */
static void test_setmaxnreg(void **state) {
    (void)state;
    expect_error("define void @k() {\n  call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 20)\n  ret void\n}\n", 128,
                 NULL, 0, "the count must be a multiple of 8 in 24..256");
    expect_error("define void @k() {\n  call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 260)\n  ret void\n}\n", 128,
                 NULL, 0, "the count must be a multiple of 8 in 24..256");
    expect_error("define void @k() {\n  call void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 100)\n  ret void\n}\n", 128,
                 NULL, 0, "the count must be a multiple of 8 in 24..256");
    expect_error_regs("define void @k() {\n"
                      "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
                      "  %w = icmp ult i32 %t, 96\n"
                      "  br i1 %w, label %dec, label %e\n"
                      "dec:\n"
                      "  call void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 40)\n"
                      "  ret void\n"
                      "e:\n"
                      "  ret void\n"
                      "}\n",
                      128, 168, "thread 96: setmaxnreg is .sync.aligned: every thread of warpgroup 0 executes it");
    expect_error_regs("define void @k() {\n  call void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 40)\n  ret void\n}\n", 64,
                      168, "whole warpgroups of 128");
    /* no maxnreg: ptxas would drop the setmaxnreg (C7508) */
    expect_error("define void @k() {\n  call void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 40)\n  ret void\n}\n", 128,
                 NULL, 0, "setmaxnreg.dec in a kernel without a maxnreg annotation");
}

/* ---- setmaxnreg's register pool ------------------------------------------------------
 * "setmaxnreg": a warpgroup's threads start with the kernel's register
 * count (maxnreg); .dec n releases (count - n) a thread to the CTA's pool
 * (empty at launch), .inc n requests (n - count) a thread from it and
 * blocks until the pool has them (for ever if nothing will release them:
 * a hang). .dec may only lower the count, .inc only raise it. 128 threads
 * a warpgroup. The warp-specialized pattern: warpgroups below `split`
 * threads consume (.inc), the one at and above it produces (.dec), then
 * each thread writes 1 to out[tid]. */
static const char *split_ir(char *buf, size_t size, int split, int dec, int inc) {
    snprintf(buf, size,
             "define void @k(ptr addrspace(1) %%out) {\n"
             "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %%c = icmp ult i32 %%t, %d\n"
             "  br i1 %%c, label %%inc, label %%dec\n"
             "dec:\n"
             "  call void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 %d)\n"
             "  br label %%e\n"
             "inc:\n"
             "  call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 %d)\n"
             "  br label %%e\n"
             "e:\n"
             "  %%p = getelementptr i32, ptr addrspace(1) %%out, i32 %%t\n"
             "  store i32 1, ptr addrspace(1) %%p, align 4\n"
             "  ret void\n"
             "}\n",
             split, dec, inc);
    return buf;
}

/* The split kernel runs to its end: every thread wrote its 1. */
static void expect_split_runs(int threads, int maxnreg, int dec, int inc) {
    char err[ERR], ir[2048];
    uint32_t out[640] = {0};
    emu_buffer buf = {out, sizeof out};
    emu_module *m = load_kernel_regs(split_ir(ir, sizeof ir, threads - 128, dec, inc), threads, maxnreg, err);
    if (launch(m, &buf, 1, NULL, 0, err) != EMU_OK) fail_msg("maxnreg %d, dec %d, inc %d: %s", maxnreg, dec, inc, err);
    for (int i = 0; i < threads; i++)
        if (out[i] != 1) fail_msg("maxnreg %d, dec %d, inc %d: thread %d did not get through", maxnreg, dec, inc, i);
    emu_module_free(m);
}

static void expect_split_fails(int threads, int maxnreg, int dec, int inc, const char *want, const char *want2) {
    char err[ERR], ir[2048];
    uint32_t out[640] = {0};
    emu_buffer buf = {out, sizeof out};
    emu_module *m = load_kernel_regs(split_ir(ir, sizeof ir, threads - 128, dec, inc), threads, maxnreg, err);
    emu_result res = launch(m, &buf, 1, NULL, 0, err);
    if (res != EMU_ERROR || !strstr(err, want) || (want2 && !strstr(err, want2)))
        fail_msg("maxnreg %d, dec %d, inc %d: want an error with '%s' and '%s', got %d: %s", maxnreg, dec, inc, want,
                 want2 ? want2 : "", res, err);
    emu_module_free(m);
}

static void test_setmaxnreg_pool(void **state) {
    (void)state;
    /* 8 consumer warps and a producer warpgroup: 384 threads start at
     * 65536 / 384 = 170, 168 in steps of 8. The producer releases
     * 128 x (168 - 40) = 16384; the consumers ask 256 x (232 - 168) = 16384:
     * all of it. One more step (240) asks 256 x 72 = 18432: a hang. The
     * consumers (threads 0-255) come first: their .inc waits for the .dec. */
    expect_split_runs(384, 168, 40, 232);
    expect_split_fails(384, 168, 40, 240, "a deadlock (the kernel would hang on the GPU)", "waits at setmaxnreg.inc 240");
    /* 16 consumer warps: 640 threads start at 65536 / 640 = 102, 96. The
     * producer releases 128 x 56 = 7168; 512 x (112 - 96) = 8192 is more:
     * each of the 4 consumer warpgroups asks 128 x 16 = 2048, three get
     * theirs (6144) and the last waits with 1024 in the pool, for ever.
     * 104 asks 512 x 8 = 4096: runs. */
    expect_split_fails(640, 96, 40, 112, "a deadlock (the kernel would hang on the GPU): no thread can go on. Warpgroup ",
                       "waits at setmaxnreg.inc 112: it asks 2048 registers (128 x (112 - 96)) and the CTA's pool holds 1024. "
                       "512 threads exited.");
    expect_split_runs(640, 96, 40, 104);
    /* .dec lowers the count, .inc raises it (dec 96 from 96 releases 0:
     * an .inc to 96 is then free too) */
    expect_split_runs(640, 96, 96, 96);
    expect_split_fails(640, 96, 104, 96, "setmaxnreg.dec 104 in warpgroup 4, whose threads own 96 registers", NULL);
    expect_split_fails(640, 96, 40, 88, "setmaxnreg.inc 88 in warpgroup ", "whose threads own 96 registers");
    /* more than the SM's 64K registers at launch: 384 x 256 */
    expect_split_fails(384, 256, 40, 256, "more than the register file's 65536", NULL);
    /* a warpgroup takes back what it gave: 40 -> 96 (7168 of the 7168), not 104 (8192) */
    expect_error_regs("define void @k() {\n"
                      "  call void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 40)\n"
                      "  call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 104)\n"
                      "  ret void\n"
                      "}\n",
                      128, 96,
                      "no thread can go on. Warpgroup 0 (threads 0..127; 128 of them parked) waits at setmaxnreg.inc 104: "
                      "it asks 8192 registers (128 x (104 - 40)) and the CTA's pool holds 7168.");
    char err[ERR];
    emu_module *m = load_kernel_regs("define void @k() {\n"
                                     "  call void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 40)\n"
                                     "  call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 96)\n"
                                     "  ret void\n"
                                     "}\n",
                                     128, 96, err);
    if (launch(m, NULL, 0, NULL, 0, err) != EMU_OK) fail_msg("%s", err);
    emu_module_free(m);
}

/* An .inc before the .dec that pays for it, made so whatever order the
 * threads run in: the producer warpgroup (0) releases only after thread
 * 128 of the consumer warpgroup (1) arrived on an mbarrier, which it does
 * just before its .inc; the consumers wait at the .inc (128 x (200 - 128)
 * = 9216 asked of an empty pool) until the producer's .dec 56 releases
 * 128 x 72 = 9216. */
static void test_setmaxnreg_inc_waits(void **state) {
    (void)state;
    char err[ERR];
    emu_module *m = load_kernel_regs("@bar = internal addrspace(3) global i64 undef, align 8\n"
                                     "define void @k() {\n"
                                     "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
                                     "  %is0 = icmp eq i32 %t, 0\n"
                                     "  br i1 %is0, label %init, label %go\n"
                                     "init:\n"
                                     "  call void {MBAR_INIT}(ptr addrspace(3) @bar, i32 1)\n"
                                     "  br label %go\n"
                                     "go:\n"
                                     "  call void @llvm.nvvm.barrier0()\n"
                                     "  %prod = icmp ult i32 %t, 128\n"
                                     "  br i1 %prod, label %w, label %cons\n"
                                     "w:\n"
                                     "  %ok = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) @bar, i32 0)\n"
                                     "  %done = icmp ne i32 %ok, 0\n"
                                     "  br i1 %done, label %dec, label %w\n"
                                     "dec:\n"
                                     "  call void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 56)\n"
                                     "  ret void\n"
                                     "cons:\n"
                                     "  %is128 = icmp eq i32 %t, 128\n"
                                     "  br i1 %is128, label %arr, label %inc\n"
                                     "arr:\n"
                                     "  call void {MBAR_ARRIVE}(ptr addrspace(3) @bar)\n"
                                     "  br label %inc\n"
                                     "inc:\n"
                                     "  call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 200)\n"
                                     "  ret void\n"
                                     "}\n",
                                     256, 128, err);
    if (launch(m, NULL, 0, NULL, 0, err) != EMU_OK) fail_msg("%s", err);
    emu_module_free(m);
    /* without the producer's .dec: the consumers wait for ever */
    expect_error_regs("define void @k() {\n"
                      "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
                      "  %prod = icmp ult i32 %t, 128\n"
                      "  br i1 %prod, label %e, label %inc\n"
                      "inc:\n"
                      "  call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 200)\n"
                      "  ret void\n"
                      "e:\n"
                      "  ret void\n"
                      "}\n",
                      256, 128,
                      "Warpgroup 1 (threads 128..255; 128 of them parked) waits at setmaxnreg.inc 200: it asks 9216 "
                      "registers (128 x (200 - 128)) and the CTA's pool holds 0. 128 threads exited.");
}

/* ---- warp specialization: a producer warpgroup, consumers on a named barrier ----
 * 384 threads: thread 256 (warpgroup 2) produces, the rest of its
 * warpgroup exits; warps 0-7 consume. Tile k (256 words from src + 1 KB k)
 * lands by cp.async.bulk in stage k % 2 on full[k % 2]; each consumer
 * reads its word, arrives on empty[k % 2] (256 arrivals), and the
 * consumers exchange the words among themselves through red[] between
 * two bar.sync 1, 256 (PTX ISA "bar, barrier": 256 threads, the
 * producer's warpgroup not among them): out[t] = sum over k of tile k's
 * word 255 - t. `count` is bar.sync's count; `second` the barrier before
 * the next tile's write of red[]. */
enum { WS_TILES = 5, WS_WORDS = 256 };

static void warp_specialized(const char *count, const char *second, const char *want) {
    static char body[IR];
    snprintf(body, sizeof body,
             "declare void @llvm.nvvm.barrier(i32, i32)\n"
             "@full = internal addrspace(3) global [2 x i64] undef, align 8\n"
             "@empty = internal addrspace(3) global [2 x i64] undef, align 8\n"
             "@stage = internal addrspace(3) global [2048 x i8] undef, align 128\n"
             "@red = internal addrspace(3) global [256 x i32] undef, align 4\n"
             "define void @k(ptr addrspace(1) %%src, ptr addrspace(1) %%out) {\n"
             "entry:\n"
             "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %%is0 = icmp eq i32 %%t, 0\n"
             "  br i1 %%is0, label %%init, label %%go\n"
             "init:\n"
             "  %%f0 = getelementptr i64, ptr addrspace(3) @full, i32 0\n"
             "  call void {MBAR_INIT}(ptr addrspace(3) %%f0, i32 1)\n"
             "  %%f1 = getelementptr i64, ptr addrspace(3) @full, i32 1\n"
             "  call void {MBAR_INIT}(ptr addrspace(3) %%f1, i32 1)\n"
             "  %%e0 = getelementptr i64, ptr addrspace(3) @empty, i32 0\n"
             "  call void {MBAR_INIT}(ptr addrspace(3) %%e0, i32 256)\n"
             "  %%e1 = getelementptr i64, ptr addrspace(3) @empty, i32 1\n"
             "  call void {MBAR_INIT}(ptr addrspace(3) %%e1, i32 256)\n"
             "  call void {FENCE_MBAR_INIT}()\n"
             "  br label %%go\n"
             "go:\n"
             "  call void @llvm.nvvm.barrier0()\n"
             "  %%isp = icmp eq i32 %%t, 256\n"
             "  br i1 %%isp, label %%prod, label %%notp\n"
             "notp:\n"
             "  %%isc = icmp ult i32 %%t, 256\n"
             "  br i1 %%isc, label %%cons, label %%end\n"
             "prod:\n"
             "  %%pk = phi i32 [0, %%go], [%%pk1, %%pissue]\n"
             "  %%pdone = icmp eq i32 %%pk, %d\n"
             "  br i1 %%pdone, label %%end, label %%pwait\n"
             "pwait:\n"
             "  %%ps = and i32 %%pk, 1\n"
             "  %%pr = lshr i32 %%pk, 1\n"
             "  %%pr1 = and i32 %%pr, 1\n"
             "  %%ppar = xor i32 %%pr1, 1\n"
             "  %%pe = getelementptr i64, ptr addrspace(3) @empty, i32 %%ps\n"
             "  %%pok = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) %%pe, i32 %%ppar)\n"
             "  %%pgo = icmp ne i32 %%pok, 0\n"
             "  br i1 %%pgo, label %%pissue, label %%pwait\n"
             "pissue:\n"
             "  %%pf = getelementptr i64, ptr addrspace(3) @full, i32 %%ps\n"
             "  call void {MBAR_ARRIVE_EXPECT_TX}(ptr addrspace(3) %%pf, i32 1024)\n"
             "  %%soff = mul i32 %%ps, 1024\n"
             "  %%sp = getelementptr i8, ptr addrspace(3) @stage, i32 %%soff\n"
             "  %%goff = mul i32 %%pk, 1024\n"
             "  %%gp = getelementptr i8, ptr addrspace(1) %%src, i32 %%goff\n"
             "  call void {BULK_G2S}(ptr addrspace(3) %%sp, ptr addrspace(1) %%gp, i32 1024, ptr addrspace(3) %%pf)\n"
             "  %%pk1 = add i32 %%pk, 1\n"
             "  br label %%prod\n"
             "cons:\n"
             "  %%mine = getelementptr i32, ptr addrspace(3) @red, i32 %%t\n"
             "  %%m = sub i32 255, %%t\n"
             "  %%theirs = getelementptr i32, ptr addrspace(3) @red, i32 %%m\n"
             "  br label %%ctile\n"
             "ctile:\n"
             "  %%ck = phi i32 [0, %%cons], [%%ck1, %%cnext]\n"
             "  %%sum = phi i32 [0, %%cons], [%%sum1, %%cnext]\n"
             "  %%cdone = icmp eq i32 %%ck, %d\n"
             "  br i1 %%cdone, label %%cout, label %%cwait\n"
             "cwait:\n"
             "  %%cs = and i32 %%ck, 1\n"
             "  %%cr = lshr i32 %%ck, 1\n"
             "  %%cpar = and i32 %%cr, 1\n"
             "  %%cf = getelementptr i64, ptr addrspace(3) @full, i32 %%cs\n"
             "  %%cok = call i32 {MBAR_TRY_WAIT_PARITY}(ptr addrspace(3) %%cf, i32 %%cpar)\n"
             "  %%cgo = icmp ne i32 %%cok, 0\n"
             "  br i1 %%cgo, label %%cread, label %%cwait\n"
             "cread:\n"
             "  %%cso = mul i32 %%cs, 256\n"
             "  %%cwo = add i32 %%cso, %%t\n"
             "  %%cp = getelementptr i32, ptr addrspace(3) @stage, i32 %%cwo\n"
             "  %%v = load i32, ptr addrspace(3) %%cp, align 4\n"
             "  %%ce = getelementptr i64, ptr addrspace(3) @empty, i32 %%cs\n"
             "  call void {MBAR_ARRIVE}(ptr addrspace(3) %%ce)\n"
             "  store i32 %%v, ptr addrspace(3) %%mine, align 4\n"
             "  call void @llvm.nvvm.barrier(i32 1, i32 %s)\n"
             "  %%x = load i32, ptr addrspace(3) %%theirs, align 4\n"
             "  %%sum1 = add i32 %%sum, %%x\n"
             "%s"
             "  br label %%cnext\n"
             "cnext:\n"
             "  %%ck1 = add i32 %%ck, 1\n"
             "  br label %%ctile\n"
             "cout:\n"
             "  %%op = getelementptr i32, ptr addrspace(1) %%out, i32 %%t\n"
             "  store i32 %%sum, ptr addrspace(1) %%op, align 4\n"
             "  br label %%end\n"
             "end:\n"
             "  ret void\n"
             "}\n",
             WS_TILES, WS_TILES, count, second);
    static uint32_t src[WS_TILES * WS_WORDS], out[WS_WORDS];
    for (int i = 0; i < WS_TILES * WS_WORDS; i++) src[i] = rand_u32() % 100000;
    memset(out, 0, sizeof out);
    emu_buffer bufs[2] = {{src, sizeof src}, {out, sizeof out}};
    if (want) {
        expect_error(body, 384, bufs, 2, want);
        return;
    }
    char err[ERR];
    emu_module *m = load_kernel(body, 384, err);
    if (launch(m, bufs, 2, NULL, 0, err) != EMU_OK) fail_msg("%s", err);
    emu_module_free(m);
    for (uint32_t t = 0; t < WS_WORDS; t++) {
        uint32_t sum = 0;
        for (int k = 0; k < WS_TILES; k++) sum += src[k * WS_WORDS + 255 - t];
        if (out[t] != sum) fail_msg("consumer %u: %u, want %u", t, out[t], sum);
    }
}

static void test_warp_specialized_named_barrier(void **state) {
    (void)state;
    static const char again[] = "  call void @llvm.nvvm.barrier(i32 1, i32 256)\n";
    warp_specialized("256", again, NULL);
    /* without the second barrier, the next tile's write of red[] races
     * with the other consumers' reads of this one's (the emulator runs
     * consumer 127 into the next tile before consumer 128 reads red[127]) */
    warp_specialized("256", "", "thread 128: a data race in shared memory: a read of byte 2684, which another thread "
                                "wrote since the last barrier");
    /* counting the producer's warpgroup in: it exited (but thread 256,
     * which issued tiles 0-2 and parks on empty[1] for tile 3), the
     * barrier never completes */
    warp_specialized("384", "  call void @llvm.nvvm.barrier(i32 1, i32 384)\n",
                     "a deadlock (the kernel would hang on the GPU): no thread can go on. Thread 256 waits for the phase "
                     "of parity 0 of the mbarrier at shared byte 24 (phase 0 in progress: 256 of 256 arrivals pending");
    warp_specialized("384", "  call void @llvm.nvvm.barrier(i32 1, i32 384)\n",
                     "barrier 1: 256 threads wait (8 warps arrived of the 384 threads it waits for;");
}

int main(void) {
    srand(22);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mbarrier_phases_and_parity),
        cmocka_unit_test(test_ring_of_tensor_copies),
        cmocka_unit_test(test_tensor_copy_rank3),
        cmocka_unit_test(test_tensor_copy_rank1_and_5),
        cmocka_unit_test(test_tx_count_underflow),
        cmocka_unit_test(test_bulk_store_and_proxy_fence),
        cmocka_unit_test(test_deadlock_is_reported),
        cmocka_unit_test(test_mbarrier_misuse),
        cmocka_unit_test(test_tensor_copy_misuse),
        cmocka_unit_test(test_tensor_map_encode_checks),
        cmocka_unit_test(test_async_races),
        cmocka_unit_test(test_setmaxnreg),
        cmocka_unit_test(test_setmaxnreg_pool),
        cmocka_unit_test(test_setmaxnreg_inc_waits),
        cmocka_unit_test(test_elect_sync),
        cmocka_unit_test(test_warp_specialized_named_barrier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
