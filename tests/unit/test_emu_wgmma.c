/* The emulator's warpgroup MMA (emu/wgmma.c) on hand-written NVPTX LLVM IR,
 * against this file's own reading of the PTX ISA, chapter 9.7.15:
 *   - the D fragment (9.7.15.5.1.1, figures 149/151/153): thread t =
 *     32w + lane holds D[16w + lane/4 + 8*(i%4 >= 2)][8*(i/4) + 2*(lane%4)
 *     + i%2] in its register i; every test checks each register of each
 *     thread against a float64 reference of A*B (+D) at that place;
 *   - A in registers (figures 148/150/152), packed here per register;
 *   - shared-memory operands placed by the canonical layouts of
 *     9.7.15.5.1.2.1.3, evaluated here as CuTe layouts (shape : stride,
 *     in elements, T = 128 / element bits) then swizzled as
 *     Swizzle<b,4,3> on byte addresses from the pattern's start (byte bits
 *     4.. XOR bits 7..; the pattern repeats every 256/512/1024 bytes, the
 *     descriptor table's boundaries), described by descriptors encoded
 *     here from the bit table of 9.7.15.5.1.2.2;
 *   - scale-d, imm-scale, imm-trans (9.7.15.5.2), and the misuse the
 *     emulator must report: a pending accumulator read, a missing
 *     wgmma.fence, bad descriptors, a warpgroup short of 128 threads,
 *     shared-memory races with a pending wgmma, forms outside the
 *     contract (lower/ptx_wgmma.h, whose generator gives the asm text).
 * Tolerance for floats: the emulator sums each output's exact products and
 * rounds once; the reference sums in double: |got - ref| <= 2^-22 * (|C| +
 * sum |a*b|). Integers are compared exactly. */
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
#include "lower/ptx_wgmma.h"

enum {
    ERR = 4096,
    PAD = 1024,          /* @pad, before @smem: @smem's shared-window offset */
    SMEM = 48 * 1024,    /* @smem's bytes, copied in from the image */
    A_AT = 0,            /* where the tests place A and B in @smem */
    B_AT = 12 * 1024,
    MAXR = 128           /* D registers a thread at N = 256 */
};

static uint32_t rnd(void) { return (uint32_t)rand() << 16 ^ (uint32_t)rand(); }

/* ---- the IR ------------------------------------------------------------------ */

typedef enum misuse {
    OK_RUN,
    NO_FENCE,         /* no wgmma.fence at all */
    ACC_AFTER_FENCE,  /* accumulator d0 rewritten between the fence and the wgmma */
    READ_PENDING,     /* an fadd of d0 after commit, before the wait */
    NO_COMMIT,        /* wait 0 without a commit: the group is not complete */
    RACE_WRITE,       /* thread 0 stores into B while the wgmma is pending */
    NO_BARRIER,       /* the wgmma reads what threads wrote without a barrier */
    NO_PROXY_FENCE,   /* threads write the operands with no fence.proxy.async before the barrier */
    CHAIN,            /* a second wgmma accumulating on the first's pending D */
    WAIT1_SECOND,     /* two groups, wait 1, then the second's D read */
    WARP3_EXITS,      /* threads 96..127 return before the wgmma */
    PLAIN_WAIT        /* (no misuse) the operand-free wgmma.wait_group, then D read where the wgmma left it */
} misuse;

typedef struct wg_case {
    ptx_wgmma_form f;
    bool scale_d;
    misuse m;
    unsigned threads; /* 0: 128 */
    unsigned ksteps;  /* > 1: a loop over K, each trip one wgmma 32 bytes of K further (128B K-major) */
    bool fence_once;  /* the loop's wgmma.fence before it, not in it */
    unsigned loop_wait; /* the loop's wgmma.wait_group N (1: a group stays in flight, wait 0 after the loop) */
} wg_case;

typedef struct buf {
    char *s;
    size_t n, cap;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if ((size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        b->cap = b->cap * 2 + (size_t)k + 1024;
        b->s = realloc(b->s, b->cap);
        assert_non_null(b->s);
    }
}

static const char header[] = "target datalayout = \"e-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\n"
                             "target triple = \"nvptx64-nvidia-cuda\"\n"
                             "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
                             "declare void @llvm.nvvm.barrier0()\n";

static void annotate(buf *b, unsigned threads) {
    put(b, "!nvvm.annotations = !{!0, !1}\n!0 = !{ptr @k, !\"kernel\", i32 1}\n!1 = !{ptr @k, !\"maxntidx\", i32 %u}\n",
        threads);
}

/* "{T, T, ...}" of r elements */
static void struct_ty(buf *b, const char *t, unsigned r) {
    put(b, "{");
    for (unsigned i = 0; i < r; i++) put(b, "%s%s", i ? ", " : "", t);
    put(b, "}");
}

/* One wgmma call %<name> on accumulator values %<acc><i>. */
static void wgmma_call(buf *b, const wg_case *c, const char *name, const char *acc) {
    static char text[PTX_WGMMA_MAX_TEXT], cons[PTX_WGMMA_MAX_CONS];
    assert_true(ptx_wgmma_asm(&c->f, text, sizeof text, cons, sizeof cons));
    unsigned r = ptx_wgmma_dregs(&c->f);
    const char *t = ptx_wgmma_is_int(c->f.a) ? "i32" : "float";
    put(b, "  %%%s = call ", name);
    struct_ty(b, t, r);
    put(b, " asm sideeffect \"%s\", \"%s\"(", text, cons);
    for (unsigned i = 0; i < r; i++) /* ACC_AFTER_FENCE: d0 in is %x0, written after the fence */
        put(b, "%s %%%s%u, ", t, c->m == ACC_AFTER_FENCE && !i && !strcmp(acc, "c") ? "x" : acc, i);
    if (c->f.a_regs) put(b, "i32 %%a0, i32 %%a1, i32 %%a2, i32 %%a3, ");
    else put(b, "i64 %%da%s, ", c->ksteps > 1 ? "3" : "2");
    put(b, "i64 %%db%s, i1 %%sd)\n", c->ksteps > 1 ? "3" : "2");
    for (unsigned i = 0; i < r; i++) {
        put(b, "  %%%s%u = extractvalue ", name, i);
        struct_ty(b, t, r);
        put(b, " %%%s, %u\n", name, i);
    }
}

static void wait_call(buf *b, const wg_case *c, unsigned n, const char *name, const char *vals) {
    unsigned r = ptx_wgmma_dregs(&c->f);
    bool in = ptx_wgmma_is_int(c->f.a);
    const char *t = in ? "i32" : "float";
    static char cons[8 * PTX_WGMMA_MAX_CONS];
    assert_true(ptx_wgmma_wait_asm(n, r, in ? 'r' : 'f', cons, sizeof cons));
    put(b, "  %%%s = call ", name);
    struct_ty(b, t, r);
    put(b, " asm sideeffect \"wgmma.wait_group.sync.aligned %u;\", \"%s\"(", n, cons);
    for (unsigned i = 0; i < r; i++) put(b, "%s%s %%%s%u", i ? ", " : "", t, vals, i);
    put(b, ")\n");
    for (unsigned i = 0; i < r; i++) {
        put(b, "  %%%s%u = extractvalue ", name, i);
        struct_ty(b, t, r);
        put(b, " %%%s, %u\n", name, i);
    }
}

static const char fence[] = "  call void asm sideeffect \"wgmma.fence.sync.aligned;\", \"~{memory}\"()\n";
static const char commit[] = "  call void asm sideeffect \"wgmma.commit_group.sync.aligned;\", \"~{memory}\"()\n";

/* @k(img, in, out, da, db, sd): copies img into @smem, then each thread
 * loads its R accumulator values and 4 A registers from in[t * (R + 4)..],
 * runs the wgmma (descriptors relative to @smem: the kernel adds @smem's
 * encoded address, from ptrtoint) and stores D to out[t * R..]. */
static char *kernel(const wg_case *c) {
    buf b = {0};
    unsigned r = ptx_wgmma_dregs(&c->f), th = c->threads ? c->threads : 128;
    bool in = ptx_wgmma_is_int(c->f.a);
    const char *t = in ? "i32" : "float";
    put(&b, "%s@pad = internal addrspace(3) global [%d x i8] undef, align 1024\n"
            "@smem = internal addrspace(3) global [%d x i8] undef, align 1024\n"
            "define void @k(ptr addrspace(1) %%img, ptr addrspace(1) %%in, ptr addrspace(1) %%out, i64 %%da, i64 %%db, "
            "i1 %%sd) {\nentry:\n  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  br label %%copy\ncopy:\n"
            "  %%i = phi i32 [%%t, %%entry], [%%i2, %%copy]\n"
            "  %%src = getelementptr i32, ptr addrspace(1) %%img, i32 %%i\n"
            "  %%v = load i32, ptr addrspace(1) %%src, align 4\n"
            "  %%dst = getelementptr i32, ptr addrspace(3) @smem, i32 %%i\n"
            "  store i32 %%v, ptr addrspace(3) %%dst, align 4\n"
            "  %%i2 = add i32 %%i, %u\n  %%more = icmp ult i32 %%i2, %d\n  br i1 %%more, label %%copy, label %%go\ngo:\n",
        header, PAD, SMEM, th, SMEM / 4);
    /* the operands reach the async proxy, which wgmma reads through, by a
     * fence.proxy.async of the writers (9.7.15.4, 9.7.13.4.x) */
    if (c->m != NO_PROXY_FENCE)
        put(&b, "  call void asm sideeffect \"fence.proxy.async.shared::cta;\", \"~{memory}\"()\n");
    if (c->m != NO_BARRIER) put(&b, "  call void @llvm.nvvm.barrier0()\n");
    if (c->m == WARP3_EXITS) put(&b, "  %%hi = icmp uge i32 %%t, 96\n  br i1 %%hi, label %%end, label %%mma\nmma:\n");
    put(&b, "  %%base = ptrtoint ptr addrspace(3) @smem to i64\n  %%enc0 = and i64 %%base, 262143\n"
            "  %%enc = lshr i64 %%enc0, 4\n  %%da2 = add i64 %%da, %%enc\n  %%db2 = add i64 %%db, %%enc\n"
            "  %%ib = mul i32 %%t, %u\n",
        r + 4);
    for (unsigned i = 0; i < r + 4; i++) {
        bool acc = i < r;
        put(&b, "  %%q%u = add i32 %%ib, %u\n  %%p%u = getelementptr i32, ptr addrspace(1) %%in, i32 %%q%u\n", i, i, i, i);
        if (acc) put(&b, "  %%c%u = load %s, ptr addrspace(1) %%p%u, align 4\n", i, t, i);
        else put(&b, "  %%a%u = load i32, ptr addrspace(1) %%p%u, align 4\n", i - r, i);
    }
    if (c->ksteps > 1) { /* for k: fence; D = A_k * B_k + D; commit; wait 0; with the accumulators in phis */
        const char *loop_t = in ? "i32" : "float";
        if (c->fence_once) put(&b, "%s", fence);
        put(&b, "  br label %%pre\npre:\n  br label %%loop\nloop:\n  %%s = phi i32 [0, %%pre], [%%s2, %%loop]\n");
        for (unsigned i = 0; i < r; i++) put(&b, "  %%l%u = phi %s [%%c%u, %%pre], [%%w%u, %%loop]\n", i, loop_t, i, i);
        put(&b, "  %%s64 = zext i32 %%s to i64\n  %%step = mul i64 %%s64, 2\n" /* 32 bytes, encoded */
                "  %%da3 = add i64 %%da2, %%step\n  %%db3 = add i64 %%db2, %%step\n");
        if (!c->fence_once) put(&b, "%s", fence);
        wgmma_call(&b, c, "d", "l");
        put(&b, "%s", commit);
        wait_call(&b, c, c->loop_wait, "w", "d");
        put(&b, "  %%s2 = add i32 %%s, 1\n  %%again = icmp ult i32 %%s2, %u\n  br i1 %%again, label %%loop, label %%done\n"
                "done:\n  %%ob = mul i32 %%t, %u\n",
            c->ksteps, r);
        if (c->loop_wait) wait_call(&b, c, 0, "fin", "w");
        for (unsigned i = 0; i < r; i++)
            put(&b, "  %%oi%u = add i32 %%ob, %u\n  %%op%u = getelementptr i32, ptr addrspace(1) %%out, i32 %%oi%u\n"
                    "  store %s %%%s%u, ptr addrspace(1) %%op%u, align 4\n",
                i, i, i, i, t, c->loop_wait ? "fin" : "w", i, i);
        put(&b, "  ret void\n}\n");
        annotate(&b, th);
        return b.s;
    }
    if (c->m != NO_FENCE) put(&b, "%s", fence);
    if (c->m == ACC_AFTER_FENCE) put(&b, "  %%x0 = fmul float %%c0, 2.0\n");
    wgmma_call(&b, c, "d", "c");
    const char *res = "d";
    if (c->m == CHAIN) wgmma_call(&b, c, "e", "d"), res = "e";
    if (c->m == READ_PENDING) {
        put(&b, "%s  %%bad = fadd float %%d0, 1.0\n", commit);
        put(&b, "  store float %%bad, ptr addrspace(1) %%out, align 4\n");
    } else if (c->m == RACE_WRITE) {
        put(&b, "%s  %%z = icmp eq i32 %%t, 0\n  br i1 %%z, label %%wr, label %%nw\nwr:\n"
                "  %%bp = getelementptr i8, ptr addrspace(3) @smem, i32 %d\n  store i32 0, ptr addrspace(3) %%bp, align 4\n"
                "  br label %%nw\nnw:\n",
            commit, B_AT + 64);
    } else if (c->m == WAIT1_SECOND) {
        put(&b, "%s", commit);
        wgmma_call(&b, c, "e", "c");
        put(&b, "%s", commit);
    } else if (c->m != NO_COMMIT) {
        put(&b, "%s", commit);
    }
    if (c->m == PLAIN_WAIT) {
        put(&b, "  call void asm sideeffect \"wgmma.wait_group.sync.aligned 0;\", \"~{memory}\"()\n");
        for (unsigned i = 0; i < r; i++) put(&b, "  %%w%u = %s %s %%%s%u, %s\n", i, in ? "or" : "fadd", t, res, i, in ? "0" : "-0.0");
    } else {
        wait_call(&b, c, c->m == WAIT1_SECOND ? 1 : 0, "w", res);
    }
    put(&b, "  %%ob = mul i32 %%t, %u\n", r);
    for (unsigned i = 0; i < r; i++)
        put(&b, "  %%oi%u = add i32 %%ob, %u\n  %%op%u = getelementptr i32, ptr addrspace(1) %%out, i32 %%oi%u\n"
                "  store %s %%w%u, ptr addrspace(1) %%op%u, align 4\n",
            i, i, i, i, t, i, i);
    if (c->m == WAIT1_SECOND) put(&b, "  store %s %%e0, ptr addrspace(1) %%out, align 4\n", t);
    put(&b, "  br label %%end\nend:\n  ret void\n}\n");
    annotate(&b, th);
    return b.s;
}

/* ---- elements, the layouts, the reference ------------------------------------------ */

static unsigned ebytes(ptx_wgmma_elem e) { return e == PTX_WGMMA_TF32 ? 4 : (e == PTX_WGMMA_S8 || e == PTX_WGMMA_U8) ? 1 : 2; }

/* A random element's bits and value (what the tensor core reads: tf32
 * keeps the top 19 bits, 9.7.15.5.2; its low 13 bits here are noise). */
static uint32_t rand_elem(ptx_wgmma_elem e, double *v) {
    float x = (float)((int)(rnd() % 61) - 30) / 8.0f; /* [-3.75, 3.75] in 1/8: exact in each type */
    if (x == 0) x = 0.125f;
    switch (e) {
    case PTX_WGMMA_F16: *v = x; return f16_bits(x);
    case PTX_WGMMA_BF16: *v = x; return bf16_bits(x);
    case PTX_WGMMA_TF32: {
        float y = x * (1.0f + (float)(rnd() % 1024) / 1024.0f), yt;
        uint32_t u, ut;
        memcpy(&u, &y, 4);
        ut = u & 0xffffe000u; /* "truncate lower 13 bits of the 32-bit input data" */
        memcpy(&yt, &ut, 4);
        *v = yt;
        return u;
    }
    case PTX_WGMMA_S8: {
        int8_t s = (int8_t)(rnd() % 255 - 127);
        *v = s;
        return (uint8_t)s;
    }
    default: {
        uint8_t u = (uint8_t)(rnd() % 256);
        *v = u;
        return u;
    }
    }
}

/* A canonical layout (9.7.15.5.1.2.1.3): its start (bytes into @smem),
 * the repeating pattern's start (bytes into @smem, for swizzling), LBO,
 * SBO (bytes), swizzle bytes (0, 32, 64, 128), base offset, major-ness. */
typedef struct lay {
    unsigned start, pattern, lbo, sbo, swz, base;
    bool mn_major;
} lay;

/* The byte offset in @smem of element (mn, k): the CuTe layout, in
 * elements, written as in the ISA's table (T = 16 / element bytes):
 *   K-major:  ((8,m),(T,2k)) : ((ST, SBO), (1, K1)), ST = T (none) or S/16*T,
 *             K1 = LBO (none) or T
 *   MN-major: ((T,P,m),(8,k)) : ((1, T, M2), (RT, K2)), P = 1 (none) or S/16,
 *             RT = T or S/16*T; M2, K2 = SBO, LBO (none) or LBO, SBO
 * then Swizzle<log2(S/16),4,3> on the byte offset from the pattern start. */
static unsigned place(const lay *l, unsigned eb, unsigned mn, unsigned k) {
    unsigned T = 16 / eb, lbo = l->lbo / eb, sbo = l->sbo / eb, off;
    if (!l->mn_major) {
        unsigned st = l->swz ? l->swz / 16 * T : T, k1 = l->swz ? T : lbo;
        unsigned c0 = mn % 8, c1 = mn / 8, c2 = k % T, c3 = k / T;
        off = c0 * st + c1 * sbo + c2 * 1 + c3 * k1;
    } else {
        unsigned p = l->swz ? l->swz / 16 : 1, rt = p * T, m2 = l->swz ? lbo : sbo, k2 = l->swz ? sbo : lbo;
        unsigned c0 = mn % T, c1 = mn / T % p, c2 = mn / (T * p), c3 = k % 8, c4 = k / 8;
        off = c0 * 1 + c1 * T + c2 * m2 + c3 * rt + c4 * k2;
    }
    unsigned byte = l->start - l->pattern + off * eb; /* from the pattern's start */
    if (l->swz) {
        unsigned bbits = l->swz == 128 ? 3 : l->swz == 64 ? 2 : 1, mask = ((1u << bbits) - 1) << 7;
        byte ^= (byte & mask) >> 3; /* Swizzle<b,4,3> */
    }
    return l->pattern + byte;
}

/* The descriptor, from the ISA's bit table: start, LBO, SBO each
 * (x & 0x3FFFF) >> 4 at bits 0, 16, 32; base offset at 49; the mode at 62
 * (1: 128B, 2: 64B, 3: 32B). Relative to @smem (the kernel adds it). */
static uint64_t encode(const lay *l) {
    uint64_t mode = l->swz == 128 ? 1 : l->swz == 64 ? 2 : l->swz == 32 ? 3 : 0;
    return ((uint64_t)(l->start & 0x3FFFF) >> 4) | ((uint64_t)(l->lbo & 0x3FFFF) >> 4) << 16 |
           ((uint64_t)(l->sbo & 0x3FFFF) >> 4) << 32 | (uint64_t)l->base << 49 | mode << 62;
}

/* A typical layout of a rows x K operand at `at` for swizzle swz. */
static lay layout_for(unsigned at, unsigned rows, unsigned eb, unsigned swz, bool mn_major) {
    lay l = {.start = at, .pattern = at, .swz = swz, .mn_major = mn_major};
    if (!mn_major && !swz) l.lbo = rows / 8 * 128, l.sbo = 128;       /* K chunk 1 after every 8-row group of chunk 0 */
    else if (!mn_major) l.lbo = 16, l.sbo = 8 * swz;                  /* LBO unused: "assumed 1" */
    else if (!swz) l.sbo = 128, l.lbo = rows * eb / 16 * 128;         /* 8 K-rows x 16 B cores, MN first */
    else l.sbo = 8 * swz, l.lbo = 2 * 8 * swz;                        /* two K atoms, then the next MN atom */
    if (!mn_major && swz >= 64) l.start += 32;                        /* the second K step of a row */
    (void)eb;
    return l;
}

typedef struct run_out {
    emu_result res;
    char err[ERR];
} run_out;

/* Runs case c with A (64 x K) and B (K x N) in the given layouts (la
 * unused with A in registers), accumulators cin, and checks every D
 * register of every thread against the reference (when the run is OK). */
static run_out run_case(const wg_case *c, const lay *la, const lay *lb) {
    const ptx_wgmma_form *f = &c->f;
    unsigned n = f->n, r = n / 2, kd = 32 / ebytes(f->a) * (c->ksteps > 1 ? c->ksteps : 1), ea = ebytes(f->a),
             eb = ebytes(f->b);
    bool in = ptx_wgmma_is_int(f->a);
    double *a = calloc(64 * kd, sizeof *a), *bm = calloc((size_t)kd * n, sizeof *bm);
    uint8_t *img = malloc(SMEM);
    uint32_t *inp = calloc(128 * (r + 4), 4), *out = malloc(128 * (size_t)r * 4);
    assert_true(a && bm && img && inp && out);
    for (unsigned i = 0; i < SMEM; i++) img[i] = (uint8_t)rnd(); /* noise where nothing is placed */
    static uint32_t abits[64][128];
    for (unsigned m = 0; m < 64; m++)
        for (unsigned k = 0; k < kd; k++) {
            abits[m][k] = rand_elem(f->a, &a[m * kd + k]);
            unsigned at = f->a_regs ? SMEM : place(la, ea, m, k);
            if (at + ea <= SMEM) memcpy(img + at, &abits[m][k], ea); /* a bad layout may fall outside */
        }
    for (unsigned k = 0; k < kd; k++)
        for (unsigned j = 0; j < n; j++) {
            uint32_t bits = rand_elem(f->b, &bm[k * n + j]);
            unsigned at = place(lb, eb, j, k);
            if (at + eb <= SMEM) memcpy(img + at, &bits, eb);
        }
    /* per thread: accumulators (D's fragment), then A's registers */
    for (unsigned t = 0; t < 128; t++) {
        unsigned w = t / 32, lane = t % 32, g = lane / 4, q = lane % 4;
        for (unsigned i = 0; i < r; i++) {
            float cv = (float)((int)(rnd() % 2001) - 1000) / 64.0f;
            int32_t ci = (int)(rnd() % 20001) - 10000;
            if (in) memcpy(&inp[t * (r + 4) + i], &ci, 4);
            else memcpy(&inp[t * (r + 4) + i], &cv, 4);
        }
        /* A's fragment (figures 148, 150, 152): register j's elements, low first */
        for (unsigned j = 0; j < 4; j++) {
            uint32_t word = 0;
            if (f->a == PTX_WGMMA_TF32) { /* a0: (g, q) a1: (g+8, q) a2: (g, q+4) a3: (g+8, q+4) */
                static const unsigned dr[4] = {0, 8, 0, 8}, dk[4] = {0, 0, 4, 4};
                word = abits[16 * w + g + dr[j]][q + dk[j]];
            } else if (in) { /* 4 elements a register: rows g, g+8, g, g+8; k 4q.. and 16 + 4q.. */
                static const unsigned dr[4] = {0, 8, 0, 8}, dk[4] = {0, 0, 16, 16};
                for (unsigned e = 0; e < 4; e++) word |= abits[16 * w + g + dr[j]][4 * q + e + dk[j]] << (8 * e);
            } else { /* 2 elements a register: rows g, g+8, g, g+8; k 2q, 2q+1 and + 8 */
                static const unsigned dr[4] = {0, 8, 0, 8}, dk[4] = {0, 0, 8, 8};
                for (unsigned e = 0; e < 2; e++) word |= abits[16 * w + g + dr[j]][2 * q + e + dk[j]] << (16 * e);
            }
            inp[t * (r + 4) + r + j] = word;
        }
    }
    memset(out, 0xA5, 128 * (size_t)r * 4); /* poisoned */
    char *ir = kernel(c);
    char err[ERR];
    emu_module *m = emu_module_load(ir, strlen(ir), err, sizeof err);
    if (!m) fail_msg("%s", err);
    uint64_t da = f->a_regs ? 0 : encode(la), db = encode(lb);
    emu_buffer bufs[3] = {{img, SMEM}, {inp, 128 * (size_t)(r + 4) * 4}, {out, 128 * (size_t)r * 4}};
    emu_arg args[6] = {{true, 0, 0, 0}, {true, 1, 0, 0}, {true, 2, 0, 0}, {false, 0, 0, da}, {false, 0, 0, db},
                       {false, 0, 0, c->scale_d}};
    emu_launch l = {"k", {1, 1, 1}, args, 6, bufs, 3, NULL, NULL, 0, NULL, 0};
    run_out ro;
    ro.res = emu_run(m, &l, ro.err, sizeof ro.err);
    if (ro.res == EMU_OK) {
        double sgn = f->scale_a * f->scale_b;
        unsigned times = c->m == CHAIN ? 2 : 1;
        for (unsigned t = 0; t < 128; t++)
            for (unsigned i = 0; i < r; i++) {
                /* figure 149: D register i of thread t */
                unsigned w = t / 32, lane = t % 32;
                unsigned row = 16 * w + lane / 4 + (i % 4 >= 2 ? 8 : 0), col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
                uint32_t cin = inp[t * (r + 4) + i];
                double ref = 0, mag = 0, cv;
                if (in) cv = (int32_t)cin;
                else {
                    float cf;
                    memcpy(&cf, &cin, 4);
                    cv = cf;
                }
                if (c->scale_d) ref = cv, mag = fabs(cv);
                for (unsigned k = 0; k < kd; k++) {
                    double p = sgn * a[row * kd + k] * bm[k * n + col];
                    ref += times * p, mag += times * fabs(p);
                }
                uint32_t got = out[t * r + i];
                if (in) {
                    if ((int32_t)got != (int32_t)(int64_t)ref)
                        fail_msg("thread %u d%u (D[%u][%u]): got %d, want %lld", t, i, row, col, (int32_t)got, (long long)ref);
                } else {
                    float gf;
                    memcpy(&gf, &got, 4);
                    if (!(fabs(gf - ref) <= ldexp(mag, -22)))
                        fail_msg("thread %u d%u (D[%u][%u]): got %.9g, want %.9g", t, i, row, col, gf, ref);
                }
            }
    }
    emu_module_free(m);
    free(ir), free(a), free(bm), free(img), free(inp), free(out);
    return ro;
}

static void expect_ok(const wg_case *c, const lay *la, const lay *lb) {
    run_out ro = run_case(c, la, lb);
    if (ro.res != EMU_OK) fail_msg("%s", ro.err);
}

static void expect_error(const wg_case *c, const lay *la, const lay *lb, const char *want) {
    run_out ro = run_case(c, la, lb);
    if (ro.res != EMU_ERROR) fail_msg("the run did not fail (want '%s')", want);
    if (!strstr(ro.err, want)) fail_msg("the error '%s' does not say '%s'", ro.err, want);
}

static ptx_wgmma_form form(ptx_wgmma_elem e, unsigned n) {
    return (ptx_wgmma_form){.n = n, .a = e, .b = e, .scale_a = 1, .scale_b = 1};
}

/* ---- the tests ---------------------------------------------------------------------- */

/* f16, both K-major, each swizzle mode (none, 32B, 64B, 128B), N = 64,
 * D = A*B + D. */
static void test_f16_k_major_each_swizzle(void **state) {
    (void)state;
    static const unsigned swz[] = {0, 32, 64, 128};
    for (int i = 0; i < 4; i++) {
        wg_case c = {.f = form(PTX_WGMMA_F16, 64), .scale_d = true};
        lay la = layout_for(A_AT, 64, 2, swz[i], false), lb = layout_for(B_AT, 64, 2, swz[i], false);
        expect_ok(&c, &la, &lb);
    }
}

/* bf16, A M-major and B N-major (imm-trans 1), each swizzle, N = 128,
 * imm-scale-a -1 (A negated). */
static void test_bf16_mn_major_each_swizzle(void **state) {
    (void)state;
    static const unsigned swz[] = {0, 32, 64, 128};
    for (int i = 0; i < 4; i++) {
        wg_case c = {.f = form(PTX_WGMMA_BF16, 128), .scale_d = true};
        c.f.trans_a = c.f.trans_b = 1, c.f.scale_a = -1;
        lay la = layout_for(A_AT, 64, 2, swz[i], true), lb = layout_for(B_AT, 128, 2, swz[i], true);
        expect_ok(&c, &la, &lb);
    }
}

/* tf32 (k8: the low 13 bits of each input ignored), N = 256, scale-d 0
 * (the accumulators in are random and must not count), imm-scale-b -1;
 * A K-major 128B, B K-major without swizzling; and N = 24 with A in
 * registers. */
static void test_tf32(void **state) {
    (void)state;
    wg_case c = {.f = form(PTX_WGMMA_TF32, 256), .scale_d = false};
    c.f.scale_b = -1;
    lay la = layout_for(A_AT, 64, 4, 128, false), lb = layout_for(B_AT, 256, 4, 0, false);
    expect_ok(&c, &la, &lb);
    wg_case c2 = {.f = form(PTX_WGMMA_TF32, 24), .scale_d = true};
    c2.f.a_regs = true;
    lay lb2 = layout_for(B_AT, 24, 4, 32, false);
    expect_ok(&c2, NULL, &lb2);
}

/* Integers (k32, s32 D, wrapping): s8 x s8 at N = 64 (64B swizzle), u8 x
 * s8 with A in registers at N = 256 (32B), s8 x u8 at N = 48. */
static void test_int8(void **state) {
    (void)state;
    wg_case c = {.f = form(PTX_WGMMA_S8, 64), .scale_d = true};
    lay la = layout_for(A_AT, 64, 1, 64, false), lb = layout_for(B_AT, 64, 1, 64, false);
    expect_ok(&c, &la, &lb);
    wg_case c2 = {.f = form(PTX_WGMMA_U8, 256), .scale_d = true};
    c2.f.b = PTX_WGMMA_S8, c2.f.a_regs = true;
    lay lb2 = layout_for(B_AT, 256, 1, 32, false);
    expect_ok(&c2, NULL, &lb2);
    wg_case c3 = {.f = form(PTX_WGMMA_S8, 48), .scale_d = false};
    c3.f.b = PTX_WGMMA_U8;
    lay la3 = layout_for(A_AT, 64, 1, 0, false), lb3 = layout_for(B_AT, 48, 1, 128, false);
    expect_ok(&c3, &la3, &lb3);
}

/* A in registers (figure 148): f16 at N = 256 with B K-major 128B, and
 * bf16 at N = 8 with B N-major (imm-trans-b 1) without swizzling. */
static void test_a_in_registers(void **state) {
    (void)state;
    wg_case c = {.f = form(PTX_WGMMA_F16, 256), .scale_d = true};
    c.f.a_regs = true;
    lay lb = layout_for(B_AT, 256, 2, 128, false);
    expect_ok(&c, NULL, &lb);
    wg_case c2 = {.f = form(PTX_WGMMA_BF16, 8), .scale_d = true};
    c2.f.a_regs = true, c2.f.trans_b = 1, c2.f.scale_a = -1, c2.f.scale_b = -1;
    lay lb2 = layout_for(B_AT, 8, 2, 0, true);
    expect_ok(&c2, NULL, &lb2);
}

/* The base offset (9.7.15.5.1.2.2): a 128B pattern starting 512 bytes
 * past a 1024-byte boundary needs base offset (start >> 7) & 7 = 4 (with
 * @smem at shared byte 1024); with 0 the matrix does not start in the
 * first row of a pattern, which is reported. A 64B pattern at +256 needs
 * (256 >> 7) & 7 = 2. */
static void test_base_offset(void **state) {
    (void)state;
    wg_case c = {.f = form(PTX_WGMMA_F16, 64), .scale_d = true};
    lay la = layout_for(A_AT + 512, 64, 2, 128, false), lb = layout_for(B_AT + 256, 64, 2, 64, false);
    la.start = la.pattern = A_AT + 512, lb.start = lb.pattern = B_AT + 256;
    la.base = ((PAD + A_AT + 512) >> 7) & 7, lb.base = ((PAD + B_AT + 256) >> 7) & 7;
    assert_int_equal(la.base, 4);
    assert_int_equal(lb.base, 2);
    expect_ok(&c, &la, &lb);
    la.base = 0;
    expect_error(&c, &la, &lb, "A's matrix starts at byte");
}

/* Two wgmmas of one shape in one group, the second accumulating on the
 * first's pending D (ordered without a fence): D = 2*A*B + C. */
static void test_accumulate_chain(void **state) {
    (void)state;
    wg_case c = {.f = form(PTX_WGMMA_F16, 32), .scale_d = true, .m = CHAIN};
    lay la = layout_for(A_AT, 64, 2, 64, false), lb = layout_for(B_AT, 32, 2, 32, false);
    expect_ok(&c, &la, &lb);
}

/* The operand-free wgmma.wait_group 0: after it, D's registers (here the
 * wgmma's results themselves, computed on: fadd -0.0, or 0) are values. */
static void test_plain_wait(void **state) {
    (void)state;
    wg_case c = {.f = form(PTX_WGMMA_BF16, 16), .scale_d = true, .m = PLAIN_WAIT};
    lay la = layout_for(A_AT, 64, 2, 32, false), lb = layout_for(B_AT, 16, 2, 0, false);
    expect_ok(&c, &la, &lb);
    wg_case c2 = {.f = form(PTX_WGMMA_S8, 16), .scale_d = true, .m = PLAIN_WAIT};
    lay la2 = layout_for(A_AT, 64, 1, 128, false), lb2 = layout_for(B_AT, 16, 1, 0, false);
    expect_ok(&c2, &la2, &lb2);
}

/* A main loop as codegen will write it: K = 64 in 128B-swizzled K-major
 * tiles (a row of the pattern holds all of K, 9.7.15.5.1.2.1.3's
 * (T,2k):(1,T)), four wgmmas each 32 bytes of K further (the descriptors'
 * start + 2, encoded), the accumulators carried in phis through
 * wgmma.wait_group's results; the fence in the loop, then once before
 * it (the ISA orders accumulator accesses of wgmmas of one shape), then
 * with wgmma.wait_group 1 in the loop (each trip's wgmma accumulating on
 * the previous trip's, still pending) and 0 after it. */
static void test_k_loop(void **state) {
    (void)state;
    for (int v = 0; v < 3; v++) {
        wg_case c = {.f = form(v == 1 ? PTX_WGMMA_BF16 : PTX_WGMMA_F16, 64), .scale_d = true, .ksteps = 4,
                     .fence_once = v == 1, .loop_wait = v == 2};
        lay la = layout_for(A_AT, 64, 2, 128, false), lb = layout_for(B_AT, 64, 2, 128, false);
        la.start = la.pattern, lb.start = lb.pattern;
        expect_ok(&c, &la, &lb);
    }
}

/* The asynchrony (9.7.15.5.2, wgmma.fence, wgmma.wait_group): reading a
 * D register before the wait that completes its group, a group never
 * committed, a second group left pending by wait_group 1, no fence before
 * the first wgmma, an accumulator written after the fence; a write to
 * shared bytes a pending wgmma reads, and a wgmma reading what threads
 * wrote without a barrier. */
static void test_async_misuse(void **state) {
    (void)state;
    lay la = layout_for(A_AT, 64, 2, 128, false), lb = layout_for(B_AT, 64, 2, 0, false);
    struct {
        misuse m;
        const char *want;
    } cases[] = {
        {READ_PENDING, "accumulator read before wgmma.wait_group"},
        {NO_COMMIT, "is not even committed"},
        {WAIT1_SECOND, "accumulator read before wgmma.wait_group"},
        {NO_FENCE, "without a wgmma.fence before it"},
        {ACC_AFTER_FENCE, "missing wgmma.fence: accumulator d0 was written after the last wgmma.fence"},
        {RACE_WRITE, "which the wgmma.mma_async at pc"},
        {NO_BARRIER, "a data race in shared memory: wgmma reads byte"},
        {NO_PROXY_FENCE, "wrote without a fence.proxy.async.shared::cta after it"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wg_case c = {.f = form(PTX_WGMMA_F16, 64), .scale_d = true, .m = cases[i].m};
        expect_error(&c, &la, &lb, cases[i].want);
    }
}

/* A warpgroup is 128 threads that all execute the instruction (.sync.aligned). */
static void test_warpgroup_must_be_whole(void **state) {
    (void)state;
    lay la = layout_for(A_AT, 64, 2, 0, false), lb = layout_for(B_AT, 64, 2, 0, false);
    wg_case c = {.f = form(PTX_WGMMA_F16, 64), .scale_d = true, .threads = 64};
    expect_error(&c, &la, &lb, "warpgroup 0, which has 64 threads");
    wg_case c2 = {.f = form(PTX_WGMMA_F16, 64), .scale_d = true, .m = WARP3_EXITS};
    expect_error(&c2, &la, &lb, "exited while its warpgroup waits at wgmma.fence");
}

/* Descriptors that break the ISA's rules: a base offset without swizzling,
 * bits the table does not define, a matrix outside shared memory, an
 * MN-major matrix that does not start at its pattern's start. */
static void test_bad_descriptors(void **state) {
    (void)state;
    wg_case c = {.f = form(PTX_WGMMA_F16, 64), .scale_d = true};
    lay la = layout_for(A_AT, 64, 2, 0, false), lb = layout_for(B_AT, 64, 2, 0, false);
    la.base = 1;
    expect_error(&c, &la, &lb, "base offset 1 without swizzling");
    /* B's SBO so large that its last rows fall past the end of shared memory */
    la.base = 0, lb.sbo = 7 * 1024;
    expect_error(&c, &la, &lb, "outside the CTA's");
    wg_case c2 = {.f = form(PTX_WGMMA_F16, 64), .scale_d = true};
    c2.f.trans_b = 1;
    lay lb2 = layout_for(B_AT + 128, 64, 2, 128, true);
    expect_error(&c2, &la, &lb2, "an MN-major operand starts at the pattern's start");
}

/* Descriptor bits outside the ISA's table (bit 46 here) are reported. */
static void test_undefined_descriptor_bits(void **state) {
    (void)state;
    wg_case c = {.f = form(PTX_WGMMA_F16, 8), .scale_d = true};
    c.f.a_regs = true;
    lay lb = layout_for(B_AT, 8, 2, 0, false);
    char *ir = kernel(&c);
    char err[ERR];
    emu_module *m = emu_module_load(ir, strlen(ir), err, sizeof err);
    if (!m) fail_msg("%s", err);
    static uint8_t img[SMEM];
    memset(img, 1, sizeof img);
    static uint32_t inp[128 * 8], out[128 * 4];
    emu_buffer bufs[3] = {{img, SMEM}, {inp, sizeof inp}, {out, sizeof out}};
    emu_arg args[6] = {{true, 0, 0, 0}, {true, 1, 0, 0}, {true, 2, 0, 0}, {false, 0, 0, 0},
                       {false, 0, 0, encode(&lb) | UINT64_C(1) << 46}, {false, 0, 0, 1}};
    emu_launch l = {"k", {1, 1, 1}, args, 6, bufs, 3, NULL, NULL, 0, NULL, 0};
    assert_int_equal(emu_run(m, &l, err, sizeof err), EMU_ERROR);
    if (!strstr(err, "sets bits the ISA's table leaves undefined")) fail_msg("%s", err);
    emu_module_free(m);
    free(ir);
}

/* Forms outside the contract are refused by name when the module loads. */
static void expect_load_error(const char *text, const char *cons, const char *ret, const char *args, const char *want) {
    static char ir[8192];
    snprintf(ir, sizeof ir,
             "%sdefine void @k(i64 %%d) {\n  %s call %s asm sideeffect \"%s\", \"%s\"(%s)\n  ret void\n}\n"
             "!nvvm.annotations = !{!0, !1}\n!0 = !{ptr @k, !\"kernel\", i32 1}\n!1 = !{ptr @k, !\"maxntidx\", i32 128}\n",
             header, strcmp(ret, "void") ? "%r =" : "", ret, text, cons, args);
    char err[ERR];
    emu_module *m = emu_module_load(ir, strlen(ir), err, sizeof err);
    if (m) fail_msg("loaded '%s'", text);
    if (!strstr(err, want)) fail_msg("the error '%s' does not say '%s'", err, want);
}

static void test_unknown_forms(void **state) {
    (void)state;
    static const char f4[] = "{float, float, float, float}";
    static const char a4[] = "float 0.0, float 0.0, float 0.0, float 0.0, i64 %d, i64 %d, i1 true";
    static const char c4[] = "=f,=f,=f,=f,0,1,2,3,l,l,b";
    expect_load_error("wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {$0, $1}, $4, $5, $6, 1, 1, 0, 0;", c4, f4, a4,
                      ".f16 accumulators");
    expect_load_error("wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {$0, $1, $2, $3}, $8, $9, $10, 1, 1;", c4, f4,
                      a4, "'.e4m3' inputs");
    expect_load_error("wgmma.mma_async.sync.aligned.m64n12k16.f32.f16.f16 {$0, $1, $2, $3}, $8, $9, $10, 1, 1, 0, 0;", c4,
                      f4, a4, "N outside 8..256");
    expect_load_error("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {$0, $1, $2, $3}, $8, $9, $10, 1, 1, 1, 0;", c4,
                      f4, a4, "cannot read");
    expect_load_error("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, $8, $9, $10, 2, 1, 0, 0;", c4,
                      f4, a4, "imm-scale other than 1 or -1");
    expect_load_error("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, $8, $9, $10, 1, 1, 0, 0;",
                      "=f,=f,=f,=f,0,1,2,3,l,l,n", f4, a4, "not exactly what lower/ptx_wgmma.h generates");
    expect_load_error("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, $8, $9, $10, 1, 1, 0, 0; ", c4,
                      f4, a4, "cannot read");
    expect_load_error("wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.s8.satfinite {$0, $1, $2, $3}, $8, $9, $10;",
                      "=r,=r,=r,=r,0,1,2,3,l,l,b", "{i32, i32, i32, i32}",
                      "i32 0, i32 0, i32 0, i32 0, i64 %d, i64 %d, i1 true", ".satfinite");
    expect_load_error("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {$0, $1, $2, $3}, $8, $9, $10, 1, 1, 0, 0;", c4,
                      "{i32, i32, i32, i32}", "i32 0, i32 0, i32 0, i32 0, i64 %d, i64 %d, i1 true", "operand types");
    expect_load_error("wgmma.wait_group.sync.aligned 8;", "~{memory}", "void", "", "takes 0..7");
    expect_load_error("wgmma.fence.sync.aligned;", "", "void", "", "that are not the contract's");
}

/* ptrtoint of a shared pointer is its byte offset in the CTA's shared
 * window (what a descriptor's start address encodes), i32 or i64, as an
 * instruction or a constant expression; inttoptr gives back a pointer
 * that reaches the same bytes. Thread t writes t at @smem[t] through the
 * round trip and reads it back directly; out[0..2] get the integers. */
static void test_shared_pointer_integers(void **state) {
    (void)state;
    static char ir[4096];
    snprintf(ir, sizeof ir,
             "%s@pad = internal addrspace(3) global [%d x i8] undef, align 1024\n"
             "@smem = internal addrspace(3) global [64 x i32] undef, align 16\n"
             "define void @k(ptr addrspace(1) %%out) {\n  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %%p = getelementptr i32, ptr addrspace(3) @smem, i32 %%t\n"
             "  %%n64 = ptrtoint ptr addrspace(3) %%p to i64\n  %%n32 = ptrtoint ptr addrspace(3) %%p to i32\n"
             "  %%back = inttoptr i64 %%n64 to ptr addrspace(3)\n  store i32 %%t, ptr addrspace(3) %%back, align 4\n"
             "  call void @llvm.nvvm.barrier0()\n  %%v = load i32, ptr addrspace(3) %%p, align 4\n"
             "  %%ok = icmp eq i32 %%v, %%t\n  %%z = icmp eq i32 %%t, 5\n  br i1 %%z, label %%w, label %%e\nw:\n"
             "  %%o1 = getelementptr i64, ptr addrspace(1) %%out, i32 1\n  %%o2 = getelementptr i64, ptr addrspace(1) %%out, i32 2\n"
             "  %%o3 = getelementptr i64, ptr addrspace(1) %%out, i32 3\n"
             "  store i64 %%n64, ptr addrspace(1) %%out, align 8\n  %%x = zext i32 %%n32 to i64\n"
             "  store i64 %%x, ptr addrspace(1) %%o1, align 8\n"
             "  store i64 ptrtoint (ptr addrspace(3) @smem to i64), ptr addrspace(1) %%o2, align 8\n"
             "  %%okx = zext i1 %%ok to i64\n  store i64 %%okx, ptr addrspace(1) %%o3, align 8\n  br label %%e\n"
             "e:\n  ret void\n}\n"
             "!nvvm.annotations = !{!0, !1}\n!0 = !{ptr @k, !\"kernel\", i32 1}\n!1 = !{ptr @k, !\"maxntidx\", i32 64}\n",
             header, PAD);
    char err[ERR];
    emu_module *m = emu_module_load(ir, strlen(ir), err, sizeof err);
    if (!m) fail_msg("%s", err);
    uint64_t out[4] = {7, 7, 7, 7};
    emu_buffer bufs[1] = {{out, sizeof out}};
    emu_arg args[1] = {{true, 0, 0, 0}};
    emu_launch l = {"k", {1, 1, 1}, args, 1, bufs, 1, NULL, NULL, 0, NULL, 0};
    if (emu_run(m, &l, err, sizeof err) != EMU_OK) fail_msg("%s", err);
    assert_int_equal(out[0], PAD + 4 * 5);
    assert_int_equal(out[1], PAD + 4 * 5);
    assert_int_equal(out[2], PAD);
    assert_int_equal(out[3], 1);
    emu_module_free(m);
}

int main(void) {
    srand(22);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_pointer_integers),
        cmocka_unit_test(test_f16_k_major_each_swizzle),
        cmocka_unit_test(test_bf16_mn_major_each_swizzle),
        cmocka_unit_test(test_tf32),
        cmocka_unit_test(test_int8),
        cmocka_unit_test(test_a_in_registers),
        cmocka_unit_test(test_base_offset),
        cmocka_unit_test(test_accumulate_chain),
        cmocka_unit_test(test_plain_wait),
        cmocka_unit_test(test_k_loop),
        cmocka_unit_test(test_async_misuse),
        cmocka_unit_test(test_warpgroup_must_be_whole),
        cmocka_unit_test(test_bad_descriptors),
        cmocka_unit_test(test_undefined_descriptor_bits),
        cmocka_unit_test(test_unknown_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
