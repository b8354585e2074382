/* cg_dot_mma_sync.c - `dot` on mma.sync: the instruction for the inputs, packing the
 * operands' registers into fragments, and the loops issuing the instructions. A file of its
 * own so that another tensor-core lowering (sm_90's wgmma) is a sibling file; the context
 * and shared helpers are in lower/codegen_internal.h.
 *
 * `dot` with an MMA result runs on mma.sync. Its operands arrive in the
 * DOT_OP layouts (the layout pass converts them), whose registers are
 * grouped so that one instruction's fragments are neighbours
 * (tileir.h); each 32-bit fragment register packs kw elements along K
 * (two f16 or bf16 as <2 x half> or an i32, one f32 rounded to tf32 by
 * cvt.rna, four i8). The loops: over K in instruction steps, then over the
 * warp's repetitions along M and N, each mma.sync updating four
 * accumulator registers in place.
 *
 * Which mma.sync instruction a dot uses is decided in mma_instr_for alone;
 * a later lowering (sm_90's wgmma) is a sibling file with its own
 * cg_dot_lowering (codegen_internal.h). The names are
 * NVVM intrinsics (not inline asm), which the host emulator of our LLVM IR
 * recognizes. */
#include <string.h>

#include "lower/codegen_internal.h"

typedef struct mma_instr {
    const char *name;  /* the NVVM intrinsic */
    uint32_t k;        /* K of one instruction */
    unsigned a_regs, b_regs; /* 32-bit fragment registers of a and b */
    bool packs_as_vector; /* f16: operands are <2 x half>, else i32 */
} mma_instr;

/* The mma.sync instruction for inputs of type `in` and a K of k (sm_80 and
 * sm_90 alike for now). False where there is none. */
static bool mma_instr_for(tir_elem in, uint32_t k, mma_instr *out) {
    switch (in) {
    case TIR_F16:
        *out = (mma_instr){.name = "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", .k = 16, .a_regs = 4, .b_regs = 2,
                           .packs_as_vector = true};
        return true;
    case TIR_BF16:
        *out = (mma_instr){.name = "llvm.nvvm.mma.m16n8k16.row.col.bf16", .k = 16, .a_regs = 4, .b_regs = 2};
        return true;
    case TIR_F32:
        *out = (mma_instr){.name = "llvm.nvvm.mma.m16n8k8.row.col.tf32", .k = 8, .a_regs = 4, .b_regs = 2};
        return true;
    case TIR_I8:
        if (k % 32 == 0)
            *out = (mma_instr){.name = "llvm.nvvm.mma.m16n8k32.row.col.s8", .k = 32, .a_regs = 4, .b_regs = 2};
        else
            *out = (mma_instr){.name = "llvm.nvvm.mma.m16n8k16.row.col.s8", .k = 16, .a_regs = 2, .b_regs = 1};
        return true;
    default: return false;
    }
}

/* The vector registers first .. first + kw - 1 of x were extracted from,
 * element i from lane i, when they all were (an ldmatrix's word, split
 * into elements): that word again, rather than kw insertions that LLVM
 * would fold back into it. NULL otherwise. */
static LLVMValueRef unpacked_whole(cg *c, const tir_value *x, uint32_t first, unsigned kw, LLVMTypeRef vty) {
    LLVMValueRef src = NULL;
    for (unsigned i = 0; i < kw; i++) {
        LLVMValueRef r = reg(c, x, first + i);
        if (!LLVMIsAExtractElementInst(r)) return NULL;
        LLVMValueRef v = LLVMGetOperand(r, 0), at = LLVMGetOperand(r, 1);
        if ((src && v != src) || LLVMTypeOf(v) != vty || !LLVMIsAConstantInt(at) || LLVMConstIntGetZExtValue(at) != i)
            return NULL;
        src = v;
    }
    return src;
}

/* One 32-bit fragment register from kw elements of a dot operand,
 * starting at register `first`. */
static LLVMValueRef pack_fragment(cg *c, const tir_value *x, uint32_t first, bool as_vector) {
    tir_elem e = tir_type_elem(x->type);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c->ctx);
    if (e == TIR_F32) { /* tf32: cvt.rna.tf32.f32, the bits in an i32 */
        LLVMValueRef v = reg(c, x, first);
        LLVMTypeRef fty = LLVMFunctionType(i32, (LLVMTypeRef[]){LLVMFloatTypeInContext(c->ctx)}, 1, false);
        LLVMValueRef fn = LLVMGetNamedFunction(c->mod, "llvm.nvvm.f2tf32.rna");
        if (!fn) fn = LLVMAddFunction(c->mod, "llvm.nvvm.f2tf32.rna", fty);
        return LLVMBuildCall2(c->b, fty, fn, &v, 1, "");
    }
    unsigned kw = tir_dot_kw(e);
    LLVMTypeRef vty = LLVMVectorType(elem_type(c, e), kw);
    LLVMValueRef whole = unpacked_whole(c, x, first, kw, vty);
    if (whole) return LLVMBuildBitCast(c->b, whole, as_vector ? vty : i32, "");
    LLVMValueRef vec = LLVMGetUndef(vty);
    for (unsigned i = 0; i < kw; i++) vec = LLVMBuildInsertElement(c->b, vec, reg(c, x, first + i), i32c(c, i), "");
    return as_vector ? vec : LLVMBuildBitCast(c->b, vec, i32, "");
}

static void gen_dot_mma(cg *c, const tir_op *op) {
    const tir_value *a = op->operands[0], *b = op->operands[1], *acc = op->operands[2], *res = op->results[0];
    tir_elem in = tir_type_elem(a->type);
    const tir_layout *l = &res->type.layout;
    uint32_t m = res->type.shape[0], n = res->type.shape[1], k = a->type.shape[1];
    mma_instr ins;
    if (!mma_instr_for(in, k, &ins)) {
        cg_error(c, op, "dot: no mma instruction for these inputs");
        return;
    }
    unsigned kw = tir_dot_kw(in);
    uint32_t chunk = 4 * kw;                      /* K of one chunk: two a registers (rows g, g+8) */
    uint32_t nkc = k / chunk, per_step = ins.k / chunk; /* chunks, and chunks per instruction */
    uint32_t rm_n = m > TIR_MMA_TILE_M * l->wpc[0] ? m / (TIR_MMA_TILE_M * l->wpc[0]) : 1;
    uint32_t rn_n = n > TIR_MMA_TILE_N * l->wpc[1] ? n / (TIR_MMA_TILE_N * l->wpc[1]) : 1;
    if (tir_mma_regs(&a->type.layout, a->type.shape) != rm_n * nkc * 2 * kw ||
        tir_mma_regs(&b->type.layout, b->type.shape) != nkc * rn_n * kw || c->nregs[acc->id] != rm_n * rn_n * 4) {
        cg_error(c, op, "dot: operand layouts do not match the result's mma layout");
        return;
    }
    /* fragments: a's (rm, kc, h) and b's (kc, rn), 32 bits each */
    LLVMValueRef *fa = TC_NEW_ARRAY(c->arena, LLVMValueRef, rm_n * nkc * 2);
    LLVMValueRef *fb = TC_NEW_ARRAY(c->arena, LLVMValueRef, nkc * rn_n);
    for (uint32_t i = 0; i < rm_n * nkc * 2; i++) fa[i] = pack_fragment(c, a, i * kw, ins.packs_as_vector);
    for (uint32_t i = 0; i < nkc * rn_n; i++) fb[i] = pack_fragment(c, b, i * kw, ins.packs_as_vector);
    LLVMValueRef *out = new_regs(c, res);
    for (uint32_t i = 0; i < c->nregs[res->id]; i++) out[i] = reg(c, acc, i);
    unsigned id = LLVMLookupIntrinsicID(ins.name, strlen(ins.name));
    if (!id) {
        cg_error(c, op, "dot: this LLVM does not know the mma intrinsic");
        return;
    }
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, NULL, 0);
    LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, NULL, 0);
    for (uint32_t s = 0; s < k / ins.k; s++)
        for (uint32_t rm = 0; rm < rm_n; rm++)
            for (uint32_t rn = 0; rn < rn_n; rn++) {
                LLVMValueRef args[4 + 2 + 4];
                unsigned na = 0;
                for (unsigned j = 0; j < ins.a_regs; j++) /* a_j: chunk j >> 1, row half j & 1 */
                    args[na++] = fa[(rm * nkc + s * per_step + j / 2) * 2 + j % 2];
                for (unsigned j = 0; j < ins.b_regs; j++) args[na++] = fb[(s * per_step + j) * rn_n + rn];
                LLVMValueRef *cr = out + (rm * rn_n + rn) * 4;
                for (unsigned j = 0; j < 4; j++) args[na++] = cr[j];
                LLVMValueRef d = LLVMBuildCall2(c->b, fty, fn, args, na, "");
                for (unsigned j = 0; j < 4; j++) cr[j] = LLVMBuildExtractValue(c->b, d, j, "");
            }
}

/* Dots whose result has the MMA layout: every one on mma.sync (gen_dot_mma
 * says so when the inputs have no instruction). */
static bool takes_mma(cg *c, const tir_op *op) { return op->results[0]->type.layout.kind == TIR_LAYOUT_MMA; }

const cg_dot_lowering cg_dot_mma_sync = {.name = "mma.sync", .takes = takes_mma, .emit = gen_dot_mma};
