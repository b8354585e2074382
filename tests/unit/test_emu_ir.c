/* The emulator (emu/emu.h) on hand-written NVPTX LLVM IR: the
 * warp-collective tensor-core operations (mma.sync, ldmatrix) and cp.async
 * against scalar C references, shuffles and votes against PTX's rules, and
 * the errors it must report (out of bounds, misalignment, divergence,
 * unknown inline asm). The mma fragments here are packed by this file's
 * own reading of the PTX ISA's tables; the ldmatrix test cross-checks
 * them differently, feeding mma from ldmatrix as real kernels do. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/emu.h"
#include "half_float.h"

enum { LANES = 32, ERR = 4096 };

static const char header[] =
    "target datalayout = \"e-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\n"
    "target triple = \"nvptx64-nvidia-cuda\"\n"
    "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "declare void @llvm.nvvm.barrier0()\n";

/* "!nvvm.annotations" for kernel @k with `threads` threads. */
static void annotate(char *ir, size_t size, int threads) {
    size_t n = strlen(ir);
    snprintf(ir + n, size - n,
             "!nvvm.annotations = !{!0, !1}\n!0 = !{ptr @k, !\"kernel\", i32 1}\n!1 = !{ptr @k, !\"maxntidx\", i32 %d}\n",
             threads);
}

static emu_module *load(const char *ir) {
    char err[ERR];
    emu_module *m = emu_module_load(ir, strlen(ir), err, sizeof err);
    if (!m) fail_msg("%s\n%s", err, ir);
    return m;
}

/* Runs @k on one CTA with buffer arguments bufs[0..n). */
static emu_result run1(emu_module *m, emu_buffer *bufs, uint32_t n, char *err) {
    emu_arg args[8];
    for (uint32_t i = 0; i < n; i++) args[i] = (emu_arg){true, i, 0, 0};
    emu_launch l = {"k", {1, 1, 1}, args, n, bufs, n, NULL, NULL, 0, NULL, 0};
    return emu_run(m, &l, err, ERR);
}

static uint32_t rand_u32(void) { return (uint32_t)rand() << 16 ^ (uint32_t)rand(); }
static float rand_small(void) { return (float)(rand() % 2001 - 1000) / 500.0f; } /* [-2, 2], never all 0 */

/* ---- mma through registers ------------------------------------------------- */

typedef enum kind { K_F16, K_BF16, K_TF32, K_S8_K32, K_S8_K16, K_S8_K32_SAT } kind;
typedef struct mma_case {
    kind k;
    const char *name;
    int kdim, a_regs, b_regs;
} mma_case;

/* The ISA's fragment tables, as this test reads them (groupID g = lane / 4,
 * t = lane % 4); element i of A / B / C for a lane. */
static void frag_a(kind k, int lane, int i, int *row, int *col) {
    int g = lane / 4, t = lane % 4;
    if (k == K_TF32) {
        static const int dr[4] = {0, 8, 0, 8}, dc[4] = {0, 0, 4, 4};
        *row = g + dr[i], *col = t + dc[i];
    } else if (k == K_S8_K16) {
        *row = g + (i < 4 ? 0 : 8), *col = t * 4 + i % 4;
    } else if (k == K_S8_K32 || k == K_S8_K32_SAT) {
        static const int dr[4] = {0, 8, 0, 8}, dc[4] = {0, 0, 16, 16}; /* per register of 4 */
        *row = g + dr[i / 4], *col = t * 4 + i % 4 + dc[i / 4];
    } else {
        static const int dr[4] = {0, 8, 0, 8}, dc[4] = {0, 0, 8, 8}; /* per register of 2 */
        *row = g + dr[i / 2], *col = t * 2 + i % 2 + dc[i / 2];
    }
}
static void frag_b(kind k, int lane, int i, int *kk, int *col) {
    int g = lane / 4, t = lane % 4;
    *col = g;
    if (k == K_TF32) *kk = t + 4 * i;
    else if (k == K_S8_K16) *kk = t * 4 + i;
    else if (k == K_S8_K32 || k == K_S8_K32_SAT) *kk = t * 4 + i % 4 + (i < 4 ? 0 : 16);
    else *kk = t * 2 + i % 2 + (i < 2 ? 0 : 8);
}
static void frag_c(int lane, int i, int *row, int *col) {
    *row = lane / 4 + (i < 2 ? 0 : 8);
    *col = (lane % 4) * 2 + i % 2;
}

static int elem_bits(kind k) { return k == K_TF32 ? 32 : (k == K_F16 || k == K_BF16) ? 16 : 8; }

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The IR of a kernel that loads its lane's registers from `in` (nargs i32
 * each), calls the mma and stores the four results to `out`. */
static void mma_ir(const mma_case *c, char *ir, size_t size) {
    int nargs = c->a_regs + c->b_regs + 4;
    bool fl = c->k == K_F16 || c->k == K_BF16 || c->k == K_TF32;
    const char *rt = fl ? "float" : "i32";
    snprintf(ir, size, "%sdeclare {%s, %s, %s, %s} @%s(", header, rt, rt, rt, rt, c->name);
    for (int i = 0; i < nargs; i++) {
        const char *ty = i >= nargs - 4 ? rt : c->k == K_F16 ? "<2 x half>" : "i32";
        snprintf(ir + strlen(ir), size - strlen(ir), "%s%s", i ? ", " : "", ty);
    }
    snprintf(ir + strlen(ir), size - strlen(ir),
             ")\ndefine void @k(ptr addrspace(1) %%in, ptr addrspace(1) %%out) {\n"
             "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  %%base = mul i32 %%t, %d\n",
             nargs);
    for (int i = 0; i < nargs; i++) {
        const char *ty = i >= nargs - 4 ? rt : c->k == K_F16 ? "<2 x half>" : "i32";
        snprintf(ir + strlen(ir), size - strlen(ir),
                 "  %%i%d = add i32 %%base, %d\n  %%p%d = getelementptr i32, ptr addrspace(1) %%in, i32 %%i%d\n"
                 "  %%r%d = load i32, ptr addrspace(1) %%p%d, align 4\n  %%v%d = bitcast i32 %%r%d to %s\n",
                 i, i, i, i, i, i, i, i, ty);
    }
    snprintf(ir + strlen(ir), size - strlen(ir), "  %%d = call {%s, %s, %s, %s} @%s(", rt, rt, rt, rt, c->name);
    for (int i = 0; i < nargs; i++) {
        const char *ty = i >= nargs - 4 ? rt : c->k == K_F16 ? "<2 x half>" : "i32";
        snprintf(ir + strlen(ir), size - strlen(ir), "%s%s %%v%d", i ? ", " : "", ty, i);
    }
    snprintf(ir + strlen(ir), size - strlen(ir), ")\n  %%ob = mul i32 %%t, 4\n");
    for (int j = 0; j < 4; j++)
        snprintf(ir + strlen(ir), size - strlen(ir),
                 "  %%e%d = extractvalue {%s, %s, %s, %s} %%d, %d\n  %%b%d = bitcast %s %%e%d to i32\n"
                 "  %%o%d = add i32 %%ob, %d\n  %%q%d = getelementptr i32, ptr addrspace(1) %%out, i32 %%o%d\n"
                 "  store i32 %%b%d, ptr addrspace(1) %%q%d, align 4\n",
                 j, rt, rt, rt, rt, j, j, rt, j, j, j, j, j, j, j);
    snprintf(ir + strlen(ir), size - strlen(ir), "  ret void\n}\n");
    annotate(ir, size, LANES);
}

static void check_mma(const mma_case *c) {
    enum { M = 16, N = 8, KMAX = 32 };
    int kd = c->kdim, nargs = c->a_regs + c->b_regs + 4, bits = elem_bits(c->k), per = 32 / bits;
    double a[M][KMAX], b[KMAX][N], cm[M][N];
    uint32_t a_raw[M][KMAX], b_raw[KMAX][N], c_raw[M][N];
    for (int i = 0; i < M; i++)
        for (int k = 0; k < kd; k++) {
            float v = rand_small();
            switch (c->k) {
            case K_F16: a_raw[i][k] = f16_bits(v), a[i][k] = f16_value((uint16_t)a_raw[i][k]); break;
            case K_BF16: a_raw[i][k] = bf16_bits(v), a[i][k] = bf16_value((uint16_t)a_raw[i][k]); break;
            case K_TF32: a_raw[i][k] = f32_bits(v) & 0xffffe000u, a[i][k] = bits_f32(a_raw[i][k]); break;
            default: a[i][k] = (double)(int8_t)(rand() % 256 - 128), a_raw[i][k] = (uint8_t)(int8_t)a[i][k]; break;
            }
        }
    for (int k = 0; k < kd; k++)
        for (int j = 0; j < N; j++) {
            float v = rand_small();
            switch (c->k) {
            case K_F16: b_raw[k][j] = f16_bits(v), b[k][j] = f16_value((uint16_t)b_raw[k][j]); break;
            case K_BF16: b_raw[k][j] = bf16_bits(v), b[k][j] = bf16_value((uint16_t)b_raw[k][j]); break;
            case K_TF32: b_raw[k][j] = f32_bits(v) & 0xffffe000u, b[k][j] = bits_f32(b_raw[k][j]); break;
            default: b[k][j] = (double)(int8_t)(rand() % 256 - 128), b_raw[k][j] = (uint8_t)(int8_t)b[k][j]; break;
            }
        }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            if (bits == 8) {
                int32_t v = c->k == K_S8_K32_SAT && i == 0 ? INT32_MAX - 5 : (int32_t)(rand() % 20001 - 10000);
                c_raw[i][j] = (uint32_t)v, cm[i][j] = v;
            } else {
                float v = rand_small() * 10;
                c_raw[i][j] = f32_bits(v), cm[i][j] = v;
            }
        }
    uint32_t *in = calloc(LANES * (size_t)nargs, 4), *out = calloc(LANES * 4, 4);
    for (int lane = 0; lane < LANES; lane++) {
        uint32_t *r = in + lane * nargs;
        for (int e = 0; e < c->a_regs * per; e++) {
            int row, col;
            frag_a(c->k, lane, e, &row, &col);
            r[e / per] |= (bits == 32 ? a_raw[row][col] : (a_raw[row][col] & ((1u << bits) - 1))) << (bits * (e % per) % 32);
        }
        for (int e = 0; e < c->b_regs * per; e++) {
            int kk, col;
            frag_b(c->k, lane, e, &kk, &col);
            r[c->a_regs + e / per] |= (bits == 32 ? b_raw[kk][col] : (b_raw[kk][col] & ((1u << bits) - 1)))
                                      << (bits * (e % per) % 32);
        }
        for (int e = 0; e < 4; e++) {
            int row, col;
            frag_c(lane, e, &row, &col);
            r[c->a_regs + c->b_regs + e] = c_raw[row][col];
        }
    }
    for (int i = 0; i < LANES * 4; i++) out[i] = 0xdeadbeefu; /* poison */
    static char ir[32768];
    mma_ir(c, ir, sizeof ir);
    emu_module *m = load(ir);
    emu_buffer bufs[2] = {{in, LANES * (size_t)nargs * 4}, {out, LANES * 4 * 4}};
    char err[ERR];
    if (run1(m, bufs, 2, err) != EMU_OK) fail_msg("%s: %s", c->name, err);
    for (int lane = 0; lane < LANES; lane++)
        for (int e = 0; e < 4; e++) {
            int row, col;
            frag_c(lane, e, &row, &col);
            double want = cm[row][col], mag = fabs(want);
            for (int k = 0; k < kd; k++) want += a[row][k] * b[k][col], mag += fabs(a[row][k] * b[k][col]);
            uint32_t got_raw = out[lane * 4 + e];
            if (bits == 8) {
                int64_t w = (int64_t)want;
                if (c->k == K_S8_K32_SAT) w = w > INT32_MAX ? INT32_MAX : w < INT32_MIN ? INT32_MIN : w;
                else w = (int32_t)(uint32_t)w;
                if ((int32_t)got_raw != w)
                    fail_msg("%s: D[%d][%d] = %d, want %lld", c->name, row, col, (int32_t)got_raw, (long long)w);
            } else {
                double got = bits_f32(got_raw), tol = mag * 0x1p-23; /* one f32 rounding of the exact sum */
                if (!(fabs(got - want) <= tol))
                    fail_msg("%s: D[%d][%d] = %.9g, want %.9g (tolerance %g)", c->name, row, col, got, want, tol);
            }
        }
    emu_module_free(m);
    free(in), free(out);
}

static void test_mma_fragments(void **state) {
    (void)state;
    static const mma_case cases[] = {
        {K_F16, "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", 16, 4, 2},
        {K_BF16, "llvm.nvvm.mma.m16n8k16.row.col.bf16", 16, 4, 2},
        {K_TF32, "llvm.nvvm.mma.m16n8k8.row.col.tf32", 8, 4, 2},
        {K_S8_K32, "llvm.nvvm.mma.m16n8k32.row.col.s8", 32, 4, 2},
        {K_S8_K16, "llvm.nvvm.mma.m16n8k16.row.col.s8", 16, 2, 1},
        {K_S8_K32_SAT, "llvm.nvvm.mma.m16n8k32.row.col.satfinite.s8", 32, 4, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int rep = 0; rep < 3; rep++) check_mma(&cases[i]);
}

/* ---- ldmatrix feeding mma ----------------------------------------------------
 * A (16x16 f16, row-major) goes to shared memory and comes back with
 * ldmatrix.x4 (lane l points at row l % 16, column 8 * (l / 16)); B twice:
 * as B^T (8x16, row n) with ldmatrix.x2 and as B (16x8, row k) with
 * ldmatrix.x2.trans. Both mma results must be A * B + C. */
static const char ldmatrix_ir[] =
    "declare {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16(ptr addrspace(3))\n"
    "declare {i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.b16(ptr addrspace(3))\n"
    "declare {i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16(ptr addrspace(3))\n"
    "declare {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.f32.f32(<2 x half>, <2 x half>, <2 x half>, "
    "<2 x half>, <2 x half>, <2 x half>, float, float, float, float)\n"
    "@As = internal addrspace(3) global [256 x half] undef, align 16\n"
    "@Bts = internal addrspace(3) global [128 x half] undef, align 16\n"
    "@Bs = internal addrspace(3) global [128 x half] undef, align 16\n"
    "define void @k(ptr addrspace(1) %a, ptr addrspace(1) %bt, ptr addrspace(1) %b, ptr addrspace(1) %c,\n"
    "               ptr addrspace(1) %d1, ptr addrspace(1) %d2) {\n"
    "entry:\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %t8 = mul i32 %t, 8\n"
    "  %t4 = mul i32 %t, 4\n"
    "  br label %copy\n"
    "copy:\n"
    "  %i = phi i32 [0, %entry], [%inext, %copy]\n"
    "  %ea = add i32 %t8, %i\n"
    "  %pa = getelementptr half, ptr addrspace(1) %a, i32 %ea\n"
    "  %va = load half, ptr addrspace(1) %pa, align 2\n"
    "  %sa = getelementptr half, ptr addrspace(3) @As, i32 %ea\n"
    "  store half %va, ptr addrspace(3) %sa, align 2\n"
    "  %i4 = and i32 %i, 3\n"
    "  %eb = add i32 %t4, %i4\n"
    "  %pbt = getelementptr half, ptr addrspace(1) %bt, i32 %eb\n"
    "  %vbt = load half, ptr addrspace(1) %pbt, align 2\n"
    "  %sbt = getelementptr half, ptr addrspace(3) @Bts, i32 %eb\n"
    "  store half %vbt, ptr addrspace(3) %sbt, align 2\n"
    "  %pb = getelementptr half, ptr addrspace(1) %b, i32 %eb\n"
    "  %vb = load half, ptr addrspace(1) %pb, align 2\n"
    "  %sb = getelementptr half, ptr addrspace(3) @Bs, i32 %eb\n"
    "  store half %vb, ptr addrspace(3) %sb, align 2\n"
    "  %inext = add i32 %i, 1\n"
    "  %more = icmp ult i32 %inext, 8\n"
    "  br i1 %more, label %copy, label %mma\n"
    "mma:\n"
    "  call void @llvm.nvvm.barrier0()\n"
    /* A: row l % 16, column 8 * (l / 16) */
    "  %arow = and i32 %t, 15\n"
    "  %ahalf = lshr i32 %t, 4\n"
    "  %acol = mul i32 %ahalf, 8\n"
    "  %arow16 = mul i32 %arow, 16\n"
    "  %aidx = add i32 %arow16, %acol\n"
    "  %aptr = getelementptr half, ptr addrspace(3) @As, i32 %aidx\n"
    "  %af = call {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16(ptr addrspace(3) %aptr)\n"
    /* B^T: lane l < 16 points at row n = l % 8, column k = 8 * (l / 8) */
    "  %l16 = and i32 %t, 15\n"
    "  %btn = and i32 %l16, 7\n"
    "  %btm = lshr i32 %l16, 3\n"
    "  %btk = mul i32 %btm, 8\n"
    "  %btn16 = mul i32 %btn, 16\n"
    "  %btidx = add i32 %btn16, %btk\n"
    "  %btptr = getelementptr half, ptr addrspace(3) @Bts, i32 %btidx\n"
    "  %btf = call {i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.b16(ptr addrspace(3) %btptr)\n"
    /* B: lane l < 16 points at row k = l */
    "  %bidx = mul i32 %l16, 8\n"
    "  %bptr = getelementptr half, ptr addrspace(3) @Bs, i32 %bidx\n"
    "  %bf = call {i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16(ptr addrspace(3) %bptr)\n"
    "  %a0 = extractvalue {i32, i32, i32, i32} %af, 0\n"
    "  %a1 = extractvalue {i32, i32, i32, i32} %af, 1\n"
    "  %a2 = extractvalue {i32, i32, i32, i32} %af, 2\n"
    "  %a3 = extractvalue {i32, i32, i32, i32} %af, 3\n"
    "  %h0 = bitcast i32 %a0 to <2 x half>\n"
    "  %h1 = bitcast i32 %a1 to <2 x half>\n"
    "  %h2 = bitcast i32 %a2 to <2 x half>\n"
    "  %h3 = bitcast i32 %a3 to <2 x half>\n"
    "  %bt0 = extractvalue {i32, i32} %btf, 0\n"
    "  %bt1 = extractvalue {i32, i32} %btf, 1\n"
    "  %g0 = bitcast i32 %bt0 to <2 x half>\n"
    "  %g1 = bitcast i32 %bt1 to <2 x half>\n"
    "  %b0 = extractvalue {i32, i32} %bf, 0\n"
    "  %b1 = extractvalue {i32, i32} %bf, 1\n"
    "  %k0 = bitcast i32 %b0 to <2 x half>\n"
    "  %k1 = bitcast i32 %b1 to <2 x half>\n"
    /* C and D: element i at row t / 4 + 8 * (i / 2), column 2 * (t % 4) + i % 2 */
    "  %g = lshr i32 %t, 2\n"
    "  %tg = and i32 %t, 3\n"
    "  %col = mul i32 %tg, 2\n"
    "  %r0 = mul i32 %g, 8\n"
    "  %i0 = add i32 %r0, %col\n"
    "  %i1 = add i32 %i0, 1\n"
    "  %i2 = add i32 %i0, 64\n"
    "  %i3 = add i32 %i0, 65\n"
    "  %pc0 = getelementptr float, ptr addrspace(1) %c, i32 %i0\n"
    "  %pc1 = getelementptr float, ptr addrspace(1) %c, i32 %i1\n"
    "  %pc2 = getelementptr float, ptr addrspace(1) %c, i32 %i2\n"
    "  %pc3 = getelementptr float, ptr addrspace(1) %c, i32 %i3\n"
    "  %c0 = load float, ptr addrspace(1) %pc0, align 4\n"
    "  %c1 = load float, ptr addrspace(1) %pc1, align 4\n"
    "  %c2 = load float, ptr addrspace(1) %pc2, align 4\n"
    "  %c3 = load float, ptr addrspace(1) %pc3, align 4\n"
    "  %m1 = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.f32.f32(<2 x half> %h0, <2 x half> %h1, "
    "<2 x half> %h2, <2 x half> %h3, <2 x half> %g0, <2 x half> %g1, float %c0, float %c1, float %c2, float %c3)\n"
    "  %m2 = call {float, float, float, float} @llvm.nvvm.mma.m16n8k16.row.col.f32.f32(<2 x half> %h0, <2 x half> %h1, "
    "<2 x half> %h2, <2 x half> %h3, <2 x half> %k0, <2 x half> %k1, float %c0, float %c1, float %c2, float %c3)\n"
    "  %x0 = extractvalue {float, float, float, float} %m1, 0\n"
    "  %x1 = extractvalue {float, float, float, float} %m1, 1\n"
    "  %x2 = extractvalue {float, float, float, float} %m1, 2\n"
    "  %x3 = extractvalue {float, float, float, float} %m1, 3\n"
    "  %y0 = extractvalue {float, float, float, float} %m2, 0\n"
    "  %y1 = extractvalue {float, float, float, float} %m2, 1\n"
    "  %y2 = extractvalue {float, float, float, float} %m2, 2\n"
    "  %y3 = extractvalue {float, float, float, float} %m2, 3\n"
    "  %pd0 = getelementptr float, ptr addrspace(1) %d1, i32 %i0\n"
    "  %pd1 = getelementptr float, ptr addrspace(1) %d1, i32 %i1\n"
    "  %pd2 = getelementptr float, ptr addrspace(1) %d1, i32 %i2\n"
    "  %pd3 = getelementptr float, ptr addrspace(1) %d1, i32 %i3\n"
    "  store float %x0, ptr addrspace(1) %pd0, align 4\n"
    "  store float %x1, ptr addrspace(1) %pd1, align 4\n"
    "  store float %x2, ptr addrspace(1) %pd2, align 4\n"
    "  store float %x3, ptr addrspace(1) %pd3, align 4\n"
    "  %pe0 = getelementptr float, ptr addrspace(1) %d2, i32 %i0\n"
    "  %pe1 = getelementptr float, ptr addrspace(1) %d2, i32 %i1\n"
    "  %pe2 = getelementptr float, ptr addrspace(1) %d2, i32 %i2\n"
    "  %pe3 = getelementptr float, ptr addrspace(1) %d2, i32 %i3\n"
    "  store float %y0, ptr addrspace(1) %pe0, align 4\n"
    "  store float %y1, ptr addrspace(1) %pe1, align 4\n"
    "  store float %y2, ptr addrspace(1) %pe2, align 4\n"
    "  store float %y3, ptr addrspace(1) %pe3, align 4\n"
    "  ret void\n"
    "}\n";

static void test_ldmatrix_feeds_mma(void **state) {
    (void)state;
    uint16_t a[256], bt[128], b[128];
    float c[128], d1[128], d2[128];
    for (int i = 0; i < 256; i++) a[i] = f16_bits(rand_small());
    for (int k = 0; k < 16; k++)
        for (int n = 0; n < 8; n++) b[k * 8 + n] = bt[n * 16 + k] = f16_bits(rand_small());
    for (int i = 0; i < 128; i++) c[i] = rand_small(), d1[i] = d2[i] = NAN;
    static char ir[16384];
    snprintf(ir, sizeof ir, "%s%s", header, ldmatrix_ir);
    annotate(ir, sizeof ir, LANES);
    emu_module *m = load(ir);
    emu_buffer bufs[6] = {{a, sizeof a}, {bt, sizeof bt}, {b, sizeof b}, {c, sizeof c}, {d1, sizeof d1}, {d2, sizeof d2}};
    char err[ERR];
    if (run1(m, bufs, 6, err) != EMU_OK) fail_msg("%s", err);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 8; j++) {
            double want = c[i * 8 + j], mag = fabs(want);
            for (int k = 0; k < 16; k++) {
                double p = (double)f16_value(a[i * 16 + k]) * f16_value(b[k * 8 + j]);
                want += p, mag += fabs(p);
            }
            double tol = mag * 0x1p-23;
            if (!(fabs(d1[i * 8 + j] - want) <= tol) || !(fabs(d2[i * 8 + j] - want) <= tol))
                fail_msg("D[%d][%d] = %.9g (B^T) and %.9g (B, .trans), want %.9g", i, j, d1[i * 8 + j], d2[i * 8 + j],
                         want);
        }
    emu_module_free(m);
}

/* ---- cp.async ------------------------------------------------------------------
 * Each thread copies 16 bytes (odd threads: 8, the rest zero-filled) into
 * shared memory; after wait_group 0 and a barrier every thread reads a
 * neighbour's copy. Reading the destination before the wait is an error. */
static const char cp_async_ir[] =
    "declare void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3), ptr addrspace(1), i32)\n"
    "declare void @llvm.nvvm.cp.async.commit.group()\n"
    "declare void @llvm.nvvm.cp.async.wait.group(i32)\n"
    "@S = internal addrspace(3) global [128 x float] undef, align 16\n"
    "define void @k(ptr addrspace(1) %src, ptr addrspace(1) %early, ptr addrspace(1) %out) {\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %e = mul i32 %t, 4\n"
    "  %odd = and i32 %t, 1\n"
    "  %size = select i1 true, i32 16, i32 0\n"
    "  %isodd = icmp ne i32 %odd, 0\n"
    "  %n = select i1 %isodd, i32 8, i32 16\n"
    "  %s = getelementptr float, ptr addrspace(1) %src, i32 %e\n"
    "  %d = getelementptr float, ptr addrspace(3) @S, i32 %e\n"
    "  call void @llvm.nvvm.cp.async.cg.shared.global.16.s(ptr addrspace(3) %d, ptr addrspace(1) %s, i32 %n)\n"
    "; EARLY\n"
    "  call void @llvm.nvvm.cp.async.commit.group()\n"
    "  call void @llvm.nvvm.cp.async.wait.group(i32 0)\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  %nb = add i32 %t, 1\n"
    "  %nbm = and i32 %nb, 31\n"
    "  %ne = mul i32 %nbm, 4\n"
    "  %pn = getelementptr float, ptr addrspace(3) @S, i32 %ne\n"
    "  %w = load <4 x float>, ptr addrspace(3) %pn, align 16\n"
    "  %po = getelementptr float, ptr addrspace(1) %out, i32 %e\n"
    "  store <4 x float> %w, ptr addrspace(1) %po, align 16\n"
    "  ret void\n"
    "}\n";

static void test_cp_async_groups(void **state) {
    (void)state;
    float src[128], out[128];
    uint32_t early[32];
    for (int i = 0; i < 128; i++) src[i] = rand_small() + 3.0f, out[i] = NAN;
    static char ir[8192];
    char err[ERR];
    emu_buffer bufs[3] = {{src, sizeof src}, {early, sizeof early}, {out, sizeof out}};
    /* too early */
    const char *mark = strstr(cp_async_ir, "; EARLY\n");
    snprintf(ir, sizeof ir, "%s%.*s%s%s", header, (int)(mark - cp_async_ir), cp_async_ir,
             "  %v = load i32, ptr addrspace(3) %d, align 16\n"
             "  %pe = getelementptr i32, ptr addrspace(1) %early, i32 %t\n"
             "  store i32 %v, ptr addrspace(1) %pe, align 4\n",
             mark);
    annotate(ir, sizeof ir, LANES);
    emu_module *m = load(ir);
    assert_int_equal(run1(m, bufs, 3, err), EMU_ERROR);
    if (!strstr(err, "thread 0: a read of byte 0 of shared memory, which a cp.async is still writing (no "
                     "cp.async.wait_group of its thread covers it yet)"))
        fail_msg("%s", err);
    emu_module_free(m);
    /* in order */
    snprintf(ir, sizeof ir, "%s%s", header, cp_async_ir);
    annotate(ir, sizeof ir, LANES);
    m = load(ir);
    if (run1(m, bufs, 3, err) != EMU_OK) fail_msg("%s", err);
    for (int t = 0; t < 32; t++) {
        int from = (t + 1) % 32;
        for (int j = 0; j < 4; j++) {
            float want = (from & 1) && j >= 2 ? 0.0f : src[from * 4 + j];
            if (out[t * 4 + j] != want) fail_msg("thread %d element %d: %g, want %g", t, j, out[t * 4 + j], want);
        }
    }
    emu_module_free(m);
}

/* cp.async and the race check (PTX ISA, "cp.async": the copy's write may
 * happen at any time until the wait that covers it, so it is ordered with
 * other threads' accesses only by a barrier after that wait):
 *  - a refill of bytes another thread read in the same barrier interval is
 *    a write-after-read race (the barrier between the reads and the
 *    refill is missing): reported at the refill, and fine with the
 *    barrier;
 *  - two threads' copies landing in one interval on the same bytes: the
 *    same value is harmless (replicated layouts do it), different values
 *    are a race. */
static const char cp_race_ir[] =
    "declare void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3), ptr addrspace(1))\n"
    "declare void @llvm.nvvm.cp.async.commit.group()\n"
    "declare void @llvm.nvvm.cp.async.wait.group(i32)\n"
    "@S = internal addrspace(3) global [32 x i32] undef, align 16\n"
    "define void @k(ptr addrspace(1) %src, ptr addrspace(1) %out) {\n"
    "  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
    "  %p = getelementptr i32, ptr addrspace(3) @S, i32 %t\n"
    "  store i32 %t, ptr addrspace(3) %p, align 4\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  %n1 = add i32 %t, 1\n"
    "  %n = and i32 %n1, 31\n"
    "  %q = getelementptr i32, ptr addrspace(3) @S, i32 %n\n"
    "  %v = load i32, ptr addrspace(3) %q, align 4\n"
    "; BETWEEN\n"
    "  %dst = getelementptr i32, ptr addrspace(3) @S, i32 %DST\n"
    "  %s = getelementptr i32, ptr addrspace(1) %src, i32 %t\n"
    "  call void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3) %dst, ptr addrspace(1) %s)\n"
    "  call void @llvm.nvvm.cp.async.commit.group()\n"
    "  call void @llvm.nvvm.cp.async.wait.group(i32 0)\n"
    "  call void @llvm.nvvm.barrier0()\n"
    "  %w = load i32, ptr addrspace(3) %p, align 4\n"
    "  %sum = add i32 %v, %w\n"
    "  %o = getelementptr i32, ptr addrspace(1) %out, i32 %t\n"
    "  store i32 %sum, ptr addrspace(1) %o, align 4\n"
    "  ret void\n"
    "}\n";

/* cp_race_ir with `between` at BETWEEN and each thread copying src[t] to
 * S[dst], where dst is an IR expression of %t defined in `between`; with
 * `barrier_first`, the barrier after the copies comes before their wait
 * (so the copies land in the next interval). */
static emu_result run_cp_race(const char *between, bool barrier_first, int32_t *src, int32_t *out, char *err) {
    static char ir[8192], body[4096];
    const char *mark = strstr(cp_race_ir, "; BETWEEN\n");
    snprintf(body, sizeof body, "%.*s%s%s", (int)(mark - cp_race_ir), cp_race_ir, between, mark);
    static const char wait_then_barrier[] = "  call void @llvm.nvvm.cp.async.wait.group(i32 0)\n"
                                            "  call void @llvm.nvvm.barrier0()\n";
    char *at = strstr(body, wait_then_barrier);
    if (barrier_first && at) /* the same two lines, swapped */
        memcpy(at, "  call void @llvm.nvvm.barrier0()\n  call void @llvm.nvvm.cp.async.wait.group(i32 0)\n",
               sizeof wait_then_barrier - 1);
    snprintf(ir, sizeof ir, "%s%s", header, body);
    annotate(ir, sizeof ir, LANES);
    emu_module *m = load(ir);
    emu_buffer bufs[2] = {{src, sizeof(int32_t) * LANES}, {out, sizeof(int32_t) * LANES}};
    emu_result res = run1(m, bufs, 2, err);
    emu_module_free(m);
    return res;
}

static void test_cp_async_races(void **state) {
    (void)state;
    int32_t src[LANES], out[LANES];
    char err[ERR];
    for (int i = 0; i < LANES; i++) src[i] = 1000 + i;
    /* each thread reads the next one's word, then refills its own, which the
     * thread before it read (and which ran first): a write-after-read race
     * without a barrier in between */
    assert_int_equal(run_cp_race("  %DST = add i32 %t, 0\n", false, src, out, err), EMU_ERROR);
    if (!strstr(err, "thread 1: a data race in shared memory: a cp.async to byte 4, which another thread read since "
                     "the last barrier"))
        fail_msg("%s", err);
    /* the barrier moved after the refill (the copies then land in the next
     * interval, after it): the same race, seen at the refill */
    assert_int_equal(run_cp_race("  %DST = add i32 %t, 0\n", true, src, out, err), EMU_ERROR);
    if (!strstr(err, "thread 1: a data race in shared memory: a cp.async to byte 4, which another thread read since "
                     "the last barrier"))
        fail_msg("%s", err);
    if (run_cp_race("  call void @llvm.nvvm.barrier0()\n  %DST = add i32 %t, 0\n", false, src, out, err) != EMU_OK)
        fail_msg("%s", err);
    for (int t = 0; t < LANES; t++)
        if (out[t] != ((t + 1) & 31) + 1000 + t) fail_msg("thread %d: %d, want %d", t, out[t], ((t + 1) & 31) + 1000 + t);
    /* pairs of threads copying into one word (after the barrier): the same value is fine */
    for (int i = 0; i < LANES; i++) src[i] = 2000 + (i & ~1);
    const char *pairs = "  call void @llvm.nvvm.barrier0()\n  %DST = and i32 %t, -2\n";
    if (run_cp_race(pairs, false, src, out, err) != EMU_OK) fail_msg("%s", err);
    for (int t = 0; t < LANES; t++) {
        int want = ((t + 1) & 31) + ((t & 1) ? t : 2000 + t); /* odd threads' own words: no copy wrote them */
        if (out[t] != want) fail_msg("pairs: thread %d: %d, want %d", t, out[t], want);
    }
    /* ... and two values are a race, whichever lands first */
    for (int i = 0; i < LANES; i++) src[i] = 3000 + i;
    assert_int_equal(run_cp_race(pairs, false, src, out, err), EMU_ERROR);
    if (!strstr(err, "thread 1: a data race in shared memory: this thread's cp.async lands a value in byte 0 other "
                     "than the one another thread wrote there since the last barrier"))
        fail_msg("%s", err);
}

/* ---- shuffles -------------------------------------------------------------------
 * CUDA's __shfl_*_sync(v, x, width), which encode c as ((32 - width) << 8)
 * | (up ? 0 : 31), against their documented meaning. */
static void test_shuffles_follow_ptx(void **state) {
    (void)state;
    static const struct { const char *mode; int arg, width; } cases[] = {
        {"bfly", 5, 32}, {"down", 3, 32}, {"up", 2, 32}, {"idx", 7, 32},
        {"bfly", 3, 8},  {"down", 3, 8},  {"up", 5, 8},  {"idx", 11, 8},
    };
    enum { NC = sizeof cases / sizeof cases[0] };
    static char ir[16384];
    snprintf(ir, sizeof ir, "%s", header);
    for (int i = 0; i < NC; i++)
        if (i < 4)
            snprintf(ir + strlen(ir), sizeof ir - strlen(ir), "declare i32 @llvm.nvvm.shfl.sync.%s.i32(i32, i32, i32, i32)\n",
                     cases[i].mode);
    snprintf(ir + strlen(ir), sizeof ir - strlen(ir),
             "define void @k(ptr addrspace(1) %%out) {\n  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %%v3 = mul i32 %%t, 3\n  %%v = add i32 %%v3, 1\n  %%base = mul i32 %%t, %d\n",
             NC);
    for (int i = 0; i < NC; i++) {
        bool up = !strcmp(cases[i].mode, "up");
        int c = ((32 - cases[i].width) << 8) | (up ? 0 : 31);
        snprintf(ir + strlen(ir), sizeof ir - strlen(ir),
                 "  %%s%d = call i32 @llvm.nvvm.shfl.sync.%s.i32(i32 -1, i32 %%v, i32 %d, i32 %d)\n"
                 "  %%o%d = add i32 %%base, %d\n  %%p%d = getelementptr i32, ptr addrspace(1) %%out, i32 %%o%d\n"
                 "  store i32 %%s%d, ptr addrspace(1) %%p%d, align 4\n",
                 i, cases[i].mode, cases[i].arg, c, i, i, i, i, i, i);
    }
    snprintf(ir + strlen(ir), sizeof ir - strlen(ir), "  ret void\n}\n");
    annotate(ir, sizeof ir, LANES);
    emu_module *m = load(ir);
    int32_t out[LANES * NC];
    emu_buffer bufs[1] = {{out, sizeof out}};
    char err[ERR];
    if (run1(m, bufs, 1, err) != EMU_OK) fail_msg("%s", err);
    for (int lane = 0; lane < LANES; lane++)
        for (int i = 0; i < NC; i++) {
            int w = cases[i].width, x = cases[i].arg, pos = lane % w, from;
            if (!strcmp(cases[i].mode, "bfly")) from = lane ^ x;
            else if (!strcmp(cases[i].mode, "down")) from = pos + x < w ? lane + x : lane;
            else if (!strcmp(cases[i].mode, "up")) from = pos >= x ? lane - x : lane;
            else from = lane - pos + x % w;
            if (out[lane * NC + i] != from * 3 + 1)
                fail_msg("shfl.%s(%d, width %d) at lane %d gave lane %d's value, want lane %d's", cases[i].mode, x, w,
                         lane, (out[lane * NC + i] - 1) / 3, from);
        }
    emu_module_free(m);
}

/* ---- f2tf32 and the predicated accesses codegen emits ------------------------ */

static uint32_t tf32_reference(float x) {
    if (!isfinite(x)) return f32_bits(x);
    int e;
    frexpf(x, &e); /* |x| in [2^(e-1), 2^e): 10 fraction bits are units of 2^(e-11) */
    double units = ldexp((double)x, 11 - e);
    return f32_bits((float)ldexp(round(units), e - 11)); /* round(): halves away from zero */
}

static void test_f2tf32_and_predicated_asm(void **state) {
    (void)state;
    enum { N = 64 };
    float x[N];
    uint32_t got[N], other[N];
    uint32_t special[] = {0x3f801000u, 0xbf801000u, 0x3f800fffu, 0x3f803000u, 0x00801000u, 0x7f7ff000u};
    for (int i = 0; i < N; i++) {
        uint32_t u = i < 6 ? special[i] : (rand_u32() & 0xbfffffffu) | 0x00800000u; /* finite, normal */
        memcpy(&x[i], &u, 4);
        got[i] = other[i] = 0xabcdef01u;
    }
    static char ir[4096];
    snprintf(ir, sizeof ir,
             "%sdeclare i32 @llvm.nvvm.f2tf32.rna(float)\n"
             "define void @k(ptr addrspace(1) %%x, ptr addrspace(1) %%out, ptr addrspace(1) %%other) {\n"
             "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %%p = getelementptr float, ptr addrspace(1) %%x, i32 %%t\n"
             "  %%v = load float, ptr addrspace(1) %%p, align 4\n"
             "  %%r = call i32 @llvm.nvvm.f2tf32.rna(float %%v)\n"
             "  %%q = getelementptr i32, ptr addrspace(1) %%out, i32 %%t\n"
             "  %%qi = ptrtoint ptr addrspace(1) %%q to i64\n"
             "  call void asm sideeffect \"@$2 st.global.b32 [$0], $1;\", \"l,r,b\"(i64 %%qi, i32 %%r, i1 true)\n"
             /* off: no access (the pointer is null), the `other` value comes back */
             "  %%z = call i32 asm sideeffect \"@$2 ld.global.b32 $0, [$1];\", \"=r,l,b,0\"(i64 0, i1 false, i32 7)\n"
             "  call void asm sideeffect \"@$2 st.global.b32 [$0], $1;\", \"l,r,b\"(i64 0, i32 1, i1 false)\n"
             "  %%o = getelementptr i32, ptr addrspace(1) %%other, i32 %%t\n"
             "  store i32 %%z, ptr addrspace(1) %%o, align 4\n"
             "  ret void\n}\n",
             header);
    annotate(ir, sizeof ir, N);
    emu_module *m = load(ir);
    emu_buffer bufs[3] = {{x, sizeof x}, {got, sizeof got}, {other, sizeof other}};
    char err[ERR];
    if (run1(m, bufs, 3, err) != EMU_OK) fail_msg("%s", err);
    for (int i = 0; i < N; i++) {
        if (got[i] != tf32_reference(x[i])) fail_msg("f2tf32(%#x) = %#x, want %#x", f32_bits(x[i]), got[i], tf32_reference(x[i]));
        assert_int_equal(other[i], 7);
    }
    emu_module_free(m);
}

/* Predicated vector loads and stores as codegen writes them (ld.global.v2
 * and .v4 of b32 registers), by the PTX ISA's rules: a vector's registers
 * come from consecutive addresses, the first register at the lowest
 * ("Vectors", and ld's and st's {d0, d1, ...} operands); a guard predicate
 * that is false makes the instruction do nothing, so the destination
 * registers keep what they held (here the tied `other` values), and
 * nothing is read or written even at an invalid address; a vector
 * access must be aligned to the vector's whole size (8 or 16 bytes).
 * Thread t loads x[4t..4t+3] under (t % 3 != 0) and stores the four words
 * reversed to out[4t..] under (t % 2 == 0); and the same for v2 at
 * x[2t..2t+1] into out2. */
static void test_predicated_vector_asm(void **state) {
    (void)state;
    enum { N = 32 };
    uint32_t x[4 * N], out[4 * N], out2[2 * N];
    for (int i = 0; i < 4 * N; i++) x[i] = rand_u32() | 1u, out[i] = 0xdeadbeefu;
    for (int i = 0; i < 2 * N; i++) out2[i] = 0xdeadbeefu;
    static char ir[8192];
    snprintf(ir, sizeof ir,
             "%sdefine void @k(ptr addrspace(1) %%x, ptr addrspace(1) %%out, ptr addrspace(1) %%out2) {\n"
             "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %%t3 = urem i32 %%t, 3\n  %%ld = icmp ne i32 %%t3, 0\n"
             "  %%t2 = urem i32 %%t, 2\n  %%st = icmp eq i32 %%t2, 0\n"
             "  %%i4 = mul i32 %%t, 4\n"
             "  %%p = getelementptr i32, ptr addrspace(1) %%x, i32 %%i4\n  %%pi = ptrtoint ptr addrspace(1) %%p to i64\n"
             "  %%v = call { i32, i32, i32, i32 } asm sideeffect \"@$5 ld.global.v4.b32 {$0, $1, $2, $3}, [$4];\", "
             "\"=r,=r,=r,=r,l,b,0,1,2,3\"(i64 %%pi, i1 %%ld, i32 11, i32 12, i32 13, i32 14)\n"
             "  %%v0 = extractvalue { i32, i32, i32, i32 } %%v, 0\n  %%v1 = extractvalue { i32, i32, i32, i32 } %%v, 1\n"
             "  %%v2 = extractvalue { i32, i32, i32, i32 } %%v, 2\n  %%v3 = extractvalue { i32, i32, i32, i32 } %%v, 3\n"
             "  %%q = getelementptr i32, ptr addrspace(1) %%out, i32 %%i4\n  %%qi = ptrtoint ptr addrspace(1) %%q to i64\n"
             "  call void asm sideeffect \"@$5 st.global.v4.b32 [$0], {$1, $2, $3, $4};\", \"l,r,r,r,r,b\""
             "(i64 %%qi, i32 %%v3, i32 %%v2, i32 %%v1, i32 %%v0, i1 %%st)\n"
             /* off: nothing at a null address */
             "  %%z = call { i32, i32, i32, i32 } asm sideeffect \"@$5 ld.global.v4.b32 {$0, $1, $2, $3}, [$4];\", "
             "\"=r,=r,=r,=r,l,b,0,1,2,3\"(i64 0, i1 false, i32 1, i32 2, i32 3, i32 4)\n"
             "  call void asm sideeffect \"@$5 st.global.v4.b32 [$0], {$1, $2, $3, $4};\", \"l,r,r,r,r,b\""
             "(i64 0, i32 1, i32 2, i32 3, i32 4, i1 false)\n"
             "  %%i2 = mul i32 %%t, 2\n"
             "  %%p2 = getelementptr i32, ptr addrspace(1) %%x, i32 %%i2\n  %%p2i = ptrtoint ptr addrspace(1) %%p2 to i64\n"
             "  %%w = call { i32, i32 } asm sideeffect \"@$3 ld.global.v2.b32 {$0, $1}, [$2];\", \"=r,=r,l,b,0,1\""
             "(i64 %%p2i, i1 %%ld, i32 21, i32 22)\n"
             "  %%w0 = extractvalue { i32, i32 } %%w, 0\n  %%w1 = extractvalue { i32, i32 } %%w, 1\n"
             "  %%q2 = getelementptr i32, ptr addrspace(1) %%out2, i32 %%i2\n  %%q2i = ptrtoint ptr addrspace(1) %%q2 to i64\n"
             "  call void asm sideeffect \"@$3 st.global.v2.b32 [$0], {$1, $2};\", \"l,r,r,b\""
             "(i64 %%q2i, i32 %%w1, i32 %%w0, i1 true)\n"
             "  ret void\n}\n",
             header);
    annotate(ir, sizeof ir, N);
    emu_module *m = load(ir);
    emu_buffer bufs[3] = {{x, sizeof x}, {out, sizeof out}, {out2, sizeof out2}};
    char err[ERR];
    if (run1(m, bufs, 3, err) != EMU_OK) fail_msg("%s", err);
    for (int t = 0; t < N; t++) {
        for (int i = 0; i < 4; i++) {
            uint32_t loaded = t % 3 ? x[4 * t + 3 - i] : 14u - (uint32_t)i, want = t % 2 ? 0xdeadbeefu : loaded;
            if (out[4 * t + i] != want) fail_msg("thread %d v4 word %d: %#x, want %#x", t, i, out[4 * t + i], want);
        }
        for (int i = 0; i < 2; i++) {
            uint32_t want = t % 3 ? x[2 * t + 1 - i] : 22u - (uint32_t)i;
            if (out2[2 * t + i] != want) fail_msg("thread %d v2 word %d: %#x, want %#x", t, i, out2[2 * t + i], want);
        }
    }
    emu_module_free(m);
}

/* got[t] = intrinsic(in[t]) (float -> float) on n threads of the emulator. */
static void run_f32_intrinsic(const char *intrinsic, const float *in, float *got, int n) {
    for (int i = 0; i < n; i++) got[i] = 12345.678f;
    static char ir[4096];
    snprintf(ir, sizeof ir,
             "%sdeclare float @%s(float)\n"
             "define void @k(ptr addrspace(1) %%x, ptr addrspace(1) %%out) {\n"
             "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %%p = getelementptr float, ptr addrspace(1) %%x, i32 %%t\n"
             "  %%v = load float, ptr addrspace(1) %%p, align 4\n"
             "  %%r = call float @%s(float %%v)\n"
             "  %%q = getelementptr float, ptr addrspace(1) %%out, i32 %%t\n"
             "  store float %%r, ptr addrspace(1) %%q, align 4\n"
             "  ret void\n}\n",
             header, intrinsic, intrinsic);
    annotate(ir, sizeof ir, n);
    emu_module *m = load(ir);
    emu_buffer bufs[2] = {{(void *)in, sizeof(float) * (size_t)n}, {got, sizeof(float) * (size_t)n}};
    char err[ERR];
    if (run1(m, bufs, 2, err) != EMU_OK) fail_msg("%s", err);
    emu_module_free(m);
}

/* rcp.approx.ftz.f32 (llvm.nvvm.rcp.approx.ftz.f, sigmoid's reciprocal),
 * by the PTX ISA's description of rcp: "rcp.approx.f32 implements a fast
 * approximation to reciprocal. The maximum ulp error is 1 across the full
 * range of inputs"; ".ftz: subnormal inputs and results are flushed to
 * sign-preserving zero"; 1/+-0 is +-Inf, 1/+-Inf is +-0, 1/NaN is NaN. */
static void test_rcp_approx_ftz(void **state) {
    (void)state;
    enum { N = 32 };
    const float in[N] = {1.0f, -1.0f, 2.0f, 3.0f, 0.1f, -7.5f, 0x1p126f, 0x1p127f, -0x1p127f, 0x1.8p-149f /* subnormal */,
                         -0x1p-130f, 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e10f, 1.5f, 0x1p-126f, 0x1.fffffep127f,
                         12345.0f, -0.001f, 1.0f / 3.0f, 8.0f, 0.25f, 100.0f, -100.0f, 0.5f, 65504.0f, 1e-20f, 7.0f, 9.0f};
    float got[N];
    run_f32_intrinsic("llvm.nvvm.rcp.approx.ftz.f", in, got, N);
    for (int i = 0; i < N; i++) {
        float x = in[i], y = got[i];
        if (isnan(x)) {
            if (!isnan(y)) fail_msg("rcp(NaN) = %a, want NaN", (double)y);
            continue;
        }
        bool sub_in = x != 0 && fabsf(x) < 0x1p-126f;
        double want = sub_in ? (signbit(x) ? -INFINITY : INFINITY) : 1.0 / (double)x;
        if (want != 0 && fabs(want) < 0x1p-126) want = signbit(x) ? -0.0 : 0.0; /* a subnormal result flushes */
        if (isinf(want) || want == 0) {
            if ((double)y != want || !signbit(y) != !signbit(want)) fail_msg("rcp(%a) = %a, want %a", (double)x, (double)y, want);
            continue;
        }
        double ulp = ldexp(1.0, ilogb(want) - 23);
        if (fabs((double)y - want) > ulp) fail_msg("rcp(%a) = %a, want %a within 1 ulp", (double)x, (double)y, want);
    }
}

/* ex2.approx.ftz.f32 (llvm.nvvm.ex2.approx.ftz.f, the f32 exp2 codegen
 * emits), by the PTX ISA's description of ex2: "ex2.approx.f32 implements
 * a fast approximation to 2^a", maximum relative error 2^-22 across the
 * full range; ".ftz: subnormal inputs and results are flushed to
 * sign-preserving zero"; 2^-Inf is +0, 2^+-0 is 1 (a subnormal input is
 * a zero, so 1 too), 2^+Inf is +Inf, 2^NaN is NaN. Results below 2^-126
 * (inputs below -126) are subnormal: +0. */
static void test_ex2_approx_ftz(void **state) {
    (void)state;
    enum { N = 32 };
    const float in[N] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 10.25f, -10.25f, 127.0f, 127.99f, 128.0f,
                         -126.0f, -126.5f, -130.0f, -149.0f, -200.0f, 0x1p-140f /* subnormal */, -0x1p-130f,
                         INFINITY, -INFINITY, NAN, 3.3f, -77.7f, 0.001f, 1e-10f, 100.0f, -100.0f, 64.0f, -0.75f,
                         20.0f, -125.9f, 0x1p-126f};
    float got[N];
    run_f32_intrinsic("llvm.nvvm.ex2.approx.ftz.f", in, got, N);
    for (int i = 0; i < N; i++) {
        float x = in[i], y = got[i];
        if (isnan(x)) {
            if (!isnan(y)) fail_msg("ex2(NaN) = %a, want NaN", (double)y);
            continue;
        }
        bool sub_in = x != 0 && fabsf(x) < 0x1p-126f;
        double want = sub_in ? 1.0 : exp2((double)x);
        if (want != 0 && want < 0x1p-126) want = 0.0; /* a subnormal result flushes (2^a is positive) */
        if (want > FLT_MAX) want = INFINITY;           /* past f32's range */
        if (isinf(want) || want == 0 || want == 1) {
            if ((double)y != want || signbit(y)) fail_msg("ex2(%a) = %a, want %a", (double)x, (double)y, want);
            continue;
        }
        if (fabs((double)y - want) > ldexp(want, -22)) fail_msg("ex2(%a) = %a, want %a within 2^-22", (double)x, (double)y, want);
    }
}

/* ---- what the emulator must refuse ---------------------------------------------- */

/* @k's body (with %t the thread id and %out a 32-float buffer) run on 32
 * threads must fail with a message holding `want`. */
static void expect_run_error(const char *body, const char *want) {
    static char ir[8192];
    snprintf(ir, sizeof ir,
             "%sdeclare i32 @llvm.nvvm.shfl.sync.bfly.i32(i32, i32, i32, i32)\n"
             "define void @k(ptr addrspace(1) %%out) {\nentry:\n  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n%s}\n",
             header, body);
    annotate(ir, sizeof ir, 64);
    emu_module *m = load(ir);
    float out[32];
    emu_buffer bufs[1] = {{out, sizeof out}};
    char err[ERR];
    assert_int_equal(run1(m, bufs, 1, err), EMU_ERROR);
    if (!strstr(err, want)) fail_msg("the error '%s' does not say '%s'", err, want);
    emu_module_free(m);
}

static void test_errors_are_reported(void **state) {
    (void)state;
    /* one past the end */
    expect_run_error("  %p = getelementptr float, ptr addrspace(1) %out, i32 %t\n"
                     "  store float 1.0, ptr addrspace(1) %p, align 4\n  ret void\n",
                     "thread 32: an access of 4 bytes at byte 128 of buffer 0 (parameter 'out'), which has 128: out of "
                     "bounds");
    expect_run_error("  %p = getelementptr i8, ptr addrspace(1) %out, i32 2\n"
                     "  %v = load i32, ptr addrspace(1) %p, align 4\n  ret void\n",
                     "misaligned");
    expect_run_error("  %v = load i32, ptr addrspace(1) null, align 4\n  ret void\n", "null pointer");
    /* a v4 access 8 but not 16 bytes aligned; a v2 one past the end */
    expect_run_error("  %p = getelementptr i8, ptr addrspace(1) %out, i32 8\n"
                     "  %pi = ptrtoint ptr addrspace(1) %p to i64\n"
                     "  %v = call { i32, i32, i32, i32 } asm sideeffect \"@$5 ld.global.v4.b32 {$0, $1, $2, $3}, [$4];\", "
                     "\"=r,=r,=r,=r,l,b,0,1,2,3\"(i64 %pi, i1 true, i32 0, i32 0, i32 0, i32 0)\n  ret void\n",
                     "a misaligned access (16-byte alignment)");
    expect_run_error("  %p = getelementptr i8, ptr addrspace(1) %out, i32 124\n"
                     "  %pi = ptrtoint ptr addrspace(1) %p to i64\n"
                     "  call void asm sideeffect \"@$3 st.global.v2.b32 [$0], {$1, $2};\", \"l,r,r,b\""
                     "(i64 %pi, i32 1, i32 2, i1 true)\n  ret void\n",
                     "an access of 8 bytes at byte 124 of buffer 0 (parameter 'out'), which has 128: out of bounds");
    expect_run_error("  %lo = icmp ult i32 %t, 16\n  br i1 %lo, label %a, label %b\n"
                     "a:\n  call void @llvm.nvvm.barrier0()\n  ret void\nb:\n  ret void\n",
                     "divergence: the thread exited while others wait at a barrier");
    expect_run_error("  %lo = icmp ult i32 %t, 16\n  br i1 %lo, label %a, label %b\n"
                     "a:\n  %x = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %t, i32 1, i32 31)\n  ret void\n"
                     "b:\n  call void @llvm.nvvm.barrier0()\n  ret void\n",
                     "divergence");
    expect_run_error("  %lo = icmp ult i32 %t, 16\n  br i1 %lo, label %a, label %b\n"
                     "a:\n  call void @llvm.nvvm.barrier0()\n  ret void\n"
                     "b:\n  call void @llvm.nvvm.barrier0()\n  ret void\n",
                     "threads wait at different barriers");
    /* inline asm other than codegen's is refused when loading */
    static char ir[4096];
    snprintf(ir, sizeof ir,
             "%sdefine void @k() {\n  call void asm sideeffect \"nanosleep.u32 100;\", \"\"()\n  ret void\n}\n", header);
    annotate(ir, sizeof ir, 32);
    char err[ERR];
    assert_null(emu_module_load(ir, strlen(ir), err, sizeof err));
    assert_non_null(strstr(err, "inline asm the emulator does not know"));
}

/* The dynamic shared array (an external addrspace(3) global, as codegen
 * makes for kernels over 48 KB): the launch gives it its size, it lies
 * after the static arrays (thread t writes D[t], threads 0-3 S[t], and
 * each reads D[t + 1] and S[t % 4]: any overlap would change the sums
 * and be reported as a race), and an access past the launch's size is
 * out of bounds. */
static void test_dynamic_shared_array(void **state) {
    (void)state;
    static char ir[4096];
    snprintf(ir, sizeof ir,
             "%s@S = internal addrspace(3) global [4 x i32] undef, align 16\n"
             "@D = external addrspace(3) global [0 x i8], align 16\n"
             "define void @k(ptr addrspace(1) %%out) {\n"
             "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %%p = getelementptr i32, ptr addrspace(3) @D, i32 %%t\n"
             "  store i32 %%t, ptr addrspace(3) %%p, align 4\n"
             "  %%lo = icmp ult i32 %%t, 4\n  br i1 %%lo, label %%st, label %%sync\n"
             "st:\n"
             "  %%sp = getelementptr i32, ptr addrspace(3) @S, i32 %%t\n"
             "  %%h = add i32 %%t, 100\n"
             "  store i32 %%h, ptr addrspace(3) %%sp, align 4\n  br label %%sync\n"
             "sync:\n"
             "  call void @llvm.nvvm.barrier0()\n"
             "  %%n = add i32 %%t, 1\n  %%w = and i32 %%n, 31\n"
             "  %%q = getelementptr i32, ptr addrspace(3) @D, i32 %%w\n"
             "  %%a = load i32, ptr addrspace(3) %%q, align 4\n"
             "  %%i = and i32 %%t, 3\n"
             "  %%sq = getelementptr i32, ptr addrspace(3) @S, i32 %%i\n"
             "  %%b = load i32, ptr addrspace(3) %%sq, align 4\n"
             "  %%v = add i32 %%a, %%b\n"
             "  %%o = getelementptr i32, ptr addrspace(1) %%out, i32 %%t\n"
             "  store i32 %%v, ptr addrspace(1) %%o, align 4\n"
             "  ret void\n}\n",
             header);
    annotate(ir, sizeof ir, 32);
    emu_module *m = load(ir);
    int32_t out[32];
    emu_buffer bufs[1] = {{out, sizeof out}};
    emu_arg arg = {true, 0, 0, 0};
    emu_launch l = {"k", {1, 1, 1}, &arg, 1, bufs, 1, NULL, NULL, 32 * 4, NULL, 0};
    char err[ERR];
    memset(out, 0xa5, sizeof out);
    if (emu_run(m, &l, err, sizeof err) != EMU_OK) fail_msg("%s", err);
    for (int t = 0; t < 32; t++) assert_int_equal(out[t], (t + 1) % 32 + 100 + t % 4);
    /* one i32 short: thread 31's store is out of bounds */
    l.dynamic_smem = 31 * 4;
    assert_int_equal(emu_run(m, &l, err, sizeof err), EMU_ERROR);
    if (!strstr(err, "thread 31") || !strstr(err, "shared memory") || !strstr(err, "out of bounds"))
        fail_msg("unexpected error: %s", err);
    /* none given: the first access is out of bounds */
    l.dynamic_smem = 0;
    assert_int_equal(emu_run(m, &l, err, sizeof err), EMU_ERROR);
    if (!strstr(err, "shared memory") || !strstr(err, "out of bounds")) fail_msg("unexpected error: %s", err);
    l.dynamic_smem = EMU_MAX_DYNAMIC_SMEM + 1;
    assert_int_equal(emu_run(m, &l, err, sizeof err), EMU_ERROR);
    emu_module_free(m);
}

/* Thread t writes S[t] and reads its neighbour's S[t ^ 1]: a race without
 * a barrier between, which sequential execution would otherwise hide
 * (thread 0 reads the old value, thread 1 overwrites it); fine with one.
 * Reading S before any thread of the CTA wrote it is an error too. */
static void test_shared_memory_races(void **state) {
    (void)state;
    for (int with_barrier = 0; with_barrier < 2; with_barrier++) {
        static char ir[4096];
        snprintf(ir, sizeof ir,
                 "%s@S = internal addrspace(3) global [64 x float] undef, align 16\n"
                 "define void @k(ptr addrspace(1) %%out) {\n"
                 "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
                 "  %%p = getelementptr float, ptr addrspace(3) @S, i32 %%t\n"
                 "  store float -1.0, ptr addrspace(3) %%p, align 4\n"
                 "  call void @llvm.nvvm.barrier0()\n"
                 "  %%f = uitofp i32 %%t to float\n"
                 "  store float %%f, ptr addrspace(3) %%p, align 4\n"
                 "%s"
                 "  %%n = xor i32 %%t, 1\n"
                 "  %%q = getelementptr float, ptr addrspace(3) @S, i32 %%n\n"
                 "  %%v = load float, ptr addrspace(3) %%q, align 4\n"
                 "  %%o = getelementptr float, ptr addrspace(1) %%out, i32 %%t\n"
                 "  store float %%v, ptr addrspace(1) %%o, align 4\n"
                 "  ret void\n}\n",
                 header, with_barrier ? "  call void @llvm.nvvm.barrier0()\n" : "");
        annotate(ir, sizeof ir, 64);
        emu_module *m = load(ir);
        float out[64];
        emu_buffer bufs[1] = {{out, sizeof out}};
        char err[ERR];
        emu_result res = run1(m, bufs, 1, err);
        if (with_barrier) {
            if (res != EMU_OK) fail_msg("%s", err);
            for (int i = 0; i < 64; i++) assert_true(out[i] == (float)(i ^ 1));
        } else {
            assert_int_equal(res, EMU_ERROR);
            /* thread 0 ran first and read S[1] early; thread 1's write to it is the race */
            if (!strstr(err, "thread 1: a data race in shared memory: a write to byte 4, which another thread read"))
                fail_msg("%s", err);
        }
        emu_module_free(m);
    }
}

/* ---- printf and assert ----------------------------------------------------------- */

typedef struct lines {
    char text[1024];
} lines;

static void collect(void *user, const char *text, size_t len) {
    lines *l = user;
    strncat(l->text, text, len);
}

static void test_printf_and_assert(void **state) {
    (void)state;
    static char ir[4096];
    snprintf(ir, sizeof ir,
             "%sdeclare i32 @vprintf(ptr, ptr)\n"
             "declare void @__assertfail(ptr, ptr, i32, ptr, i64)\n"
             "@fmt = private unnamed_addr addrspace(1) constant [24 x i8] c\"t %%d: %%.3f %%lld %%5s|%%c\\0A\\00\"\n"
             "@s = private unnamed_addr addrspace(1) constant [3 x i8] c\"ab\\00\"\n"
             "@msg = private unnamed_addr addrspace(1) constant [6 x i8] c\"x > 0\\00\"\n"
             "@file = private unnamed_addr addrspace(1) constant [6 x i8] c\"k.cu\\00\\00\"\n"
             "define void @k(i32 %%fail) {\nentry:\n"
             "  %%buf = alloca { i32, double, i64, ptr, i32 }, align 8\n"
             "  %%t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
             "  %%show = icmp ult i32 %%t, 2\n  br i1 %%show, label %%print, label %%next\n"
             "print:\n"
             "  %%f0 = getelementptr { i32, double, i64, ptr, i32 }, ptr %%buf, i32 0, i32 0\n"
             "  store i32 %%t, ptr %%f0, align 4\n"
             "  %%f1 = getelementptr { i32, double, i64, ptr, i32 }, ptr %%buf, i32 0, i32 1\n"
             "  store double 2.5, ptr %%f1, align 8\n"
             "  %%f2 = getelementptr { i32, double, i64, ptr, i32 }, ptr %%buf, i32 0, i32 2\n"
             "  store i64 -12345678901, ptr %%f2, align 8\n"
             "  %%f3 = getelementptr { i32, double, i64, ptr, i32 }, ptr %%buf, i32 0, i32 3\n"
             "  %%sp = addrspacecast ptr addrspace(1) @s to ptr\n"
             "  store ptr %%sp, ptr %%f3, align 8\n"
             "  %%f4 = getelementptr { i32, double, i64, ptr, i32 }, ptr %%buf, i32 0, i32 4\n"
             "  store i32 90, ptr %%f4, align 4\n"
             "  %%fp = addrspacecast ptr addrspace(1) @fmt to ptr\n"
             "  %%n = call i32 @vprintf(ptr %%fp, ptr %%buf)\n  br label %%next\n"
             "next:\n"
             "  %%bad = icmp eq i32 %%t, %%fail\n  br i1 %%bad, label %%die, label %%done\n"
             "die:\n"
             "  %%mp = addrspacecast ptr addrspace(1) @msg to ptr\n"
             "  %%fl = addrspacecast ptr addrspace(1) @file to ptr\n"
             "  call void @__assertfail(ptr %%mp, ptr %%fl, i32 7, ptr %%fl, i64 1)\n  unreachable\n"
             "done:\n  ret void\n}\n",
             header);
    annotate(ir, sizeof ir, 32);
    emu_module *m = load(ir);
    lines got = {""};
    emu_arg arg = {false, 0, 0, 99};
    emu_launch l = {"k", {1, 1, 1}, &arg, 1, NULL, 0, collect, &got, 0, NULL, 0};
    char err[ERR];
    if (emu_run(m, &l, err, sizeof err) != EMU_OK) fail_msg("%s", err);
    assert_string_equal(got.text, "t 0: 2.500 -12345678901    ab|Z\nt 1: 2.500 -12345678901    ab|Z\n");
    arg.bits = 5;
    got.text[0] = 0;
    assert_int_equal(emu_run(m, &l, err, sizeof err), EMU_ASSERT);
    assert_string_equal(err, "k.cu:7: k.cu: block [0,0,0], thread [5,0,0] Assertion `x > 0` failed.\n");
    emu_module_free(m);
}

int main(void) {
    srand(2026);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mma_fragments),
        cmocka_unit_test(test_ldmatrix_feeds_mma),
        cmocka_unit_test(test_cp_async_groups),
        cmocka_unit_test(test_cp_async_races),
        cmocka_unit_test(test_shuffles_follow_ptx),
        cmocka_unit_test(test_f2tf32_and_predicated_asm),
        cmocka_unit_test(test_predicated_vector_asm),
        cmocka_unit_test(test_rcp_approx_ftz),
        cmocka_unit_test(test_ex2_approx_ftz),
        cmocka_unit_test(test_errors_are_reported),
        cmocka_unit_test(test_shared_memory_races),
        cmocka_unit_test(test_dynamic_shared_array),
        cmocka_unit_test(test_printf_and_assert),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
