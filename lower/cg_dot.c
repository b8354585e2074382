/* cg_dot.c - dot: on tensor cores for an MMA result (cg_dot_mma_sync.c), on FMAs for a blocked one.
 * A file of its own because it is one concern of code generation; the context and the
 * helpers the concern files share are in lower/codegen_internal.h. */
#include <stdio.h>
#include <string.h>

#include "lower/codegen_internal.h"

/* ---- dot --------------------------------------------------------------------
 * A dot with a blocked result (dot_ieee: exact f32 products) runs on FMAs:
 * each thread holds whole rows of a and columns of b for its result
 * elements (tir_layout_dot_fma) and adds the products along k in order,
 * one fused multiply-add each, as the interpreter does, so dot_ieee gives
 * the interpreter's bits. */
/* An operand element as the accumulator's type: f16 and bf16 widen to f32
 * (exactly), f32 stays or, for `dot`, rounds to tf32; i8 widens to i32. */
static LLVMValueRef fma_input(cg *c, const tir_op *op, LLVMValueRef v, tir_elem e) {
    if (e == TIR_I8) return LLVMBuildSExt(c->b, v, LLVMInt32TypeInContext(c->ctx), "");
    if (e != TIR_F32) return LLVMBuildFPExt(c->b, v, LLVMFloatTypeInContext(c->ctx), "");
    if (op->code == TIR_OP_DOT_IEEE) return v;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c->ctx), f32 = LLVMFloatTypeInContext(c->ctx);
    LLVMTypeRef fty = LLVMFunctionType(i32, &f32, 1, false);
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, "llvm.nvvm.f2tf32.rna");
    if (!fn) fn = LLVMAddFunction(c->mod, "llvm.nvvm.f2tf32.rna", fty);
    return LLVMBuildBitCast(c->b, LLVMBuildCall2(c->b, fty, fn, &v, 1, ""), f32, "");
}

static void gen_dot_fma(cg *c, const tir_op *op) {
    const tir_value *a = op->operands[0], *b = op->operands[1], *acc = op->operands[2], *res = op->results[0];
    tir_elem in = tir_type_elem(a->type);
    uint32_t k = a->type.shape[1];
    view vr = view_of(&res->type), va = view_of(&a->type), vb = view_of(&b->type);
    if (va.nreg[1] != k || vb.nreg[0] != k || va.nreg[0] != vr.nreg[0] || vb.nreg[1] != vr.nreg[1]) {
        cg_error(c, op, "dot: operand layouts do not hold whole rows of a and columns of b");
        return;
    }
    LLVMTypeRef f32 = LLVMFloatTypeInContext(c->ctx);
    LLVMValueRef *out = new_regs(c, res);
    for (uint32_t r = 0; r < c->nregs[res->id]; r++) {
        uint32_t rd[TIR_MAX_RANK], ad[TIR_MAX_RANK], bd[TIR_MAX_RANK];
        reg_split(&vr, r, rd);
        LLVMValueRef sum = reg(c, acc, r);
        for (uint32_t kk = 0; kk < k; kk++) {
            ad[0] = rd[0], ad[1] = kk, bd[0] = kk, bd[1] = rd[1];
            LLVMValueRef x = fma_input(c, op, reg(c, a, reg_join(&va, ad)), in);
            LLVMValueRef y = fma_input(c, op, reg(c, b, reg_join(&vb, bd)), in);
            if (in == TIR_I8) {
                sum = LLVMBuildAdd(c->b, sum, LLVMBuildMul(c->b, x, y, ""), "");
            } else {
                LLVMValueRef args[3] = {x, y, sum};
                sum = intrinsic(c, "llvm.fma", f32, args, 3);
            }
        }
        out[r] = sum;
    }
}

void gen_dot(cg *c, const tir_op *op) {
    const tir_layout *l = &op->results[0]->type.layout;
    if (c->dot->takes(c, op)) c->dot->emit(c, op);
    else if (l->kind == TIR_LAYOUT_BLOCKED) gen_dot_fma(c, op);
    else cg_error(c, op, "dot's result needs an mma or a blocked layout");
}

/* The tensor-core lowering for `arch`: wgmma where the target has it
 * (sm_90a; it falls back to mma.sync for the dots it does not take),
 * else mma.sync. */
const cg_dot_lowering *cg_dot_lowering_for(const char *arch) {
    return lower_has_wgmma(arch) ? &cg_dot_wgmma : &cg_dot_mma_sync;
}
