/* cg_math.c - elementwise arithmetic: constants, binary ops, casts, intrinsic calls, math and
 * approximate functions, erf and random numbers.
 * A file of its own because it is one concern of code generation; the context and the
 * helpers the concern files share are in lower/codegen_internal.h. */
#include <stdio.h>
#include <string.h>

#include "lower/erf_f32.h"
#include "lower/codegen_internal.h"

void gen_const(cg *c, const tir_op *op) {
    const tir_value *v = op->results[0];
    tir_elem e = tir_type_elem(v->type);
    LLVMTypeRef ty = elem_type(c, e);
    LLVMValueRef k = tir_elem_is_float(e) ? LLVMConstReal(ty, op->attr.fval)
                                          : LLVMConstInt(ty, (unsigned long long)op->attr.ival, true);
    LLVMValueRef *r = new_regs(c, v);
    for (uint32_t i = 0; i < c->nregs[v->id]; i++) r[i] = k;
}

LLVMValueRef gen_binary(cg *c, tir_opcode code, tir_elem e, LLVMValueRef a, LLVMValueRef b) {
    bool fl = tir_elem_is_float(e);
    unsigned bits = tir_elem_bits(e);
    LLVMTypeRef ty = elem_type(c, e);
    switch (code) {
    case TIR_OP_ADD: return fl ? LLVMBuildFAdd(c->b, a, b, "") : LLVMBuildAdd(c->b, a, b, "");
    case TIR_OP_SUB: return fl ? LLVMBuildFSub(c->b, a, b, "") : LLVMBuildSub(c->b, a, b, "");
    case TIR_OP_MUL: return fl ? LLVMBuildFMul(c->b, a, b, "") : LLVMBuildMul(c->b, a, b, "");
    case TIR_OP_DIV:
    case TIR_OP_REM: {
        if (fl && code == TIR_OP_DIV) return LLVMBuildFDiv(c->b, a, b, "");
        if (fl) { /* LLVM 19's InstCombine shrinks fptrunc(frem(fpext x)) to the narrow
                   * type, and between f16 and bf16 it bitcasts one to the other (or rounds
                   * a bf16 operand to f16, infinite beyond its range): the fence keeps
                   * the remainder in the type the tile IR computes it in */
            LLVMValueRef r = LLVMBuildFRem(c->b, a, b, "");
            return intrinsic(c, "llvm.arithmetic.fence", LLVMTypeOf(r), &r, 1);
        }
        /* LLVM's sdiv/srem by 0 and of MIN by -1 are undefined behaviour the
         * optimizer may exploit. Dividing by 1 instead keeps ops.def's
         * wrapping results there (MIN / -1 = MIN, MIN % -1 = 0); by 0 the
         * GPU cannot report an error, so x / 0 = x and x % 0 = 0. Constant
         * divisors fold the guard away. */
        LLVMValueRef one = LLVMConstInt(ty, 1, false);
        LLVMValueRef zero = LLVMBuildICmp(c->b, LLVMIntEQ, b, LLVMConstNull(ty), "");
        LLVMValueRef ovf = LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, a, LLVMConstInt(ty, 1ull << (bits - 1), false), ""),
                                        LLVMBuildICmp(c->b, LLVMIntEQ, b, LLVMConstAllOnes(ty), ""), "");
        LLVMValueRef safe = LLVMBuildSelect(c->b, LLVMBuildOr(c->b, zero, ovf, ""), one, b, "");
        return code == TIR_OP_DIV ? LLVMBuildSDiv(c->b, a, safe, "") : LLVMBuildSRem(c->b, a, safe, "");
    }
    case TIR_OP_AND: return LLVMBuildAnd(c->b, a, b, "");
    case TIR_OP_OR: return LLVMBuildOr(c->b, a, b, "");
    case TIR_OP_XOR: return LLVMBuildXor(c->b, a, b, "");
    case TIR_OP_SHL:
    case TIR_OP_SHR: {
        /* ops.def: shifting by the width or more gives 0 (shl) or the sign
         * (shr); LLVM would give poison, so clamp explicitly */
        LLVMValueRef w = LLVMConstInt(ty, bits, false);
        LLVMValueRef over = LLVMBuildICmp(c->b, LLVMIntUGE, b, w, "");
        if (code == TIR_OP_SHL)
            return LLVMBuildSelect(c->b, over, LLVMConstNull(ty), LLVMBuildShl(c->b, a, b, ""), "");
        LLVMValueRef amt = LLVMBuildSelect(c->b, over, LLVMConstInt(ty, bits - 1, false), b, "");
        return LLVMBuildAShr(c->b, a, amt, "");
    }
    case TIR_OP_EQ: return fl ? LLVMBuildFCmp(c->b, LLVMRealOEQ, a, b, "") : LLVMBuildICmp(c->b, LLVMIntEQ, a, b, "");
    case TIR_OP_NE: return fl ? LLVMBuildFCmp(c->b, LLVMRealUNE, a, b, "") : LLVMBuildICmp(c->b, LLVMIntNE, a, b, "");
    case TIR_OP_LT: return fl ? LLVMBuildFCmp(c->b, LLVMRealOLT, a, b, "") : LLVMBuildICmp(c->b, LLVMIntSLT, a, b, "");
    case TIR_OP_LE: return fl ? LLVMBuildFCmp(c->b, LLVMRealOLE, a, b, "") : LLVMBuildICmp(c->b, LLVMIntSLE, a, b, "");
    case TIR_OP_GT: return fl ? LLVMBuildFCmp(c->b, LLVMRealOGT, a, b, "") : LLVMBuildICmp(c->b, LLVMIntSGT, a, b, "");
    case TIR_OP_GE: return fl ? LLVMBuildFCmp(c->b, LLVMRealOGE, a, b, "") : LLVMBuildICmp(c->b, LLVMIntSGE, a, b, "");
    default: return NULL;
    }
}

LLVMValueRef gen_cast(cg *c, LLVMValueRef v, tir_elem from, tir_elem to) {
    if (from == to) return v;
    LLVMTypeRef ty = elem_type(c, to);
    bool ff = tir_elem_is_float(from), tf = tir_elem_is_float(to);
    if (to == TIR_I1) /* nonzero is true */
        return ff ? LLVMBuildFCmp(c->b, LLVMRealUNE, v, LLVMConstNull(elem_type(c, from)), "")
                  : LLVMBuildICmp(c->b, LLVMIntNE, v, LLVMConstNull(elem_type(c, from)), "");
    if (!ff && !tf) {
        if (from == TIR_I1) return LLVMBuildZExt(c->b, v, ty, "");
        return tir_elem_bits(from) < tir_elem_bits(to) ? LLVMBuildSExt(c->b, v, ty, "") : LLVMBuildTrunc(c->b, v, ty, "");
    }
    if (!ff) return from == TIR_I1 ? LLVMBuildUIToFP(c->b, v, ty, "") : LLVMBuildSIToFP(c->b, v, ty, "");
    if (!tf) { /* saturating, NaN -> 0 (as the interpreter; plain fptosi would be poison) */
        LLVMTypeRef tys[2] = {ty, elem_type(c, from)};
        unsigned id = LLVMLookupIntrinsicID("llvm.fptosi.sat", 15);
        LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, tys, 2);
        return LLVMBuildCall2(c->b, LLVMIntrinsicGetType(c->ctx, id, tys, 2), fn, &v, 1, "");
    }
    if ((from == TIR_F16 && to == TIR_BF16) || (from == TIR_BF16 && to == TIR_F16))
        v = LLVMBuildFPExt(c->b, v, LLVMFloatTypeInContext(c->ctx), ""), from = TIR_F32;
    return tir_elem_bits(from) < tir_elem_bits(to) ? LLVMBuildFPExt(c->b, v, ty, "") : LLVMBuildFPTrunc(c->b, v, ty, "");
}

/* A call to an overloaded LLVM intrinsic on type ty. */
/* A call of the NVVM intrinsic `name`, which has no overloaded types. */
LLVMValueRef call_intrinsic(cg *c, const char *name, LLVMValueRef *args, unsigned n) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    return LLVMBuildCall2(c->b, LLVMIntrinsicGetType(c->ctx, id, NULL, 0),
                          LLVMGetIntrinsicDeclaration(c->mod, id, NULL, 0), args, n, "");
}

LLVMValueRef intrinsic(cg *c, const char *name, LLVMTypeRef ty, LLVMValueRef *args, unsigned n) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, &ty, 1);
    LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, &ty, 1);
    return LLVMBuildCall2(c->b, fty, fn, args, n, "");
}

void gen_math(cg *c, const tir_op *op) {
    const tir_value *res = op->results[0];
    tir_elem e = tir_type_elem(res->type);
    bool fl = tir_elem_is_float(e);
    LLVMTypeRef ty = elem_type(c, e);
    LLVMValueRef *r = new_regs(c, res);
    for (uint32_t i = 0; i < c->nregs[res->id]; i++) {
        LLVMValueRef a[3];
        for (uint32_t k = 0; k < op->noperands; k++) a[k] = reg(c, op->operands[k], i);
        switch (op->code) {
        case TIR_OP_MIN: r[i] = fl ? intrinsic(c, "llvm.minimum", ty, a, 2) : intrinsic(c, "llvm.smin", ty, a, 2); break;
        case TIR_OP_MAX: r[i] = fl ? intrinsic(c, "llvm.maximum", ty, a, 2) : intrinsic(c, "llvm.smax", ty, a, 2); break;
        case TIR_OP_ABS:
            if (fl) {
                r[i] = intrinsic(c, "llvm.fabs", ty, a, 1);
            } else {
                a[1] = LLVMConstInt(LLVMInt1TypeInContext(c->ctx), 0, false); /* abs(min) is min, not poison */
                r[i] = intrinsic(c, "llvm.abs", ty, a, 2);
            }
            break;
        case TIR_OP_SQRT: r[i] = intrinsic(c, "llvm.sqrt", ty, a, 1); break;
        case TIR_OP_FLOOR: r[i] = intrinsic(c, "llvm.floor", ty, a, 1); break;
        case TIR_OP_CEIL: r[i] = intrinsic(c, "llvm.ceil", ty, a, 1); break;
        case TIR_OP_FMA: r[i] = intrinsic(c, "llvm.fma", ty, a, 3); break;
        default: break;
        }
    }
}

/* The PTX .approx functions exist for f32 (and rsqrt for f64); f16 and
 * bf16 go through f32. */
void gen_approx(cg *c, const tir_op *op) {
    const tir_value *res = op->results[0];
    tir_elem e = tir_type_elem(res->type);
    /* rcp: the .ftz form is the one NVVM has for f32 (a subnormal
     * reciprocal flushes to 0, which sigmoid's 1 / (1 + e) only reaches
     * for e > 2^126); unlike IEEE division it has no slow path, whose
     * calls made the GELU epilogue spill (issue 19). ex2 keeps
     * subnormal results unless the compilation asks otherwise (exp2_ftz),
     * which costs a compare and two multiplies around each MUFU.EX2 (3 of
     * about 13 instructions a score in attention's loop,
     * bench/sass_attention.py); the .ftz form, as Triton's exp2, drops
     * them, but made the stdlib matmul's GELU epilogue at 128x128 on 4
     * warps spill (ptxas schedules its MUFUs closer together), so it is
     * an option, which the stdlib's attention takes */
    static const char *const f32_names[] = {"llvm.nvvm.ex2.approx.f", "llvm.nvvm.lg2.approx.f", "llvm.nvvm.sin.approx.f",
                                            "llvm.nvvm.cos.approx.f", "llvm.nvvm.rsqrt.approx.f",
                                            "llvm.nvvm.rcp.approx.ftz.f"};
    const char *name = f32_names[op->code - TIR_OP_EXP2];
    if (op->code == TIR_OP_EXP2 && c->exp2_ftz) name = "llvm.nvvm.ex2.approx.ftz.f";
    if (e == TIR_F64) {
        if (op->code != TIR_OP_RSQRT && op->code != TIR_OP_RCP) {
            cg_error(c, op, "exp2, log2, sin and cos on f64 are not supported yet (f32 math only)");
            return;
        }
        name = op->code == TIR_OP_RSQRT ? "llvm.nvvm.rsqrt.approx.d" : "llvm.nvvm.rcp.approx.ftz.d";
    }
    LLVMTypeRef f32 = LLVMFloatTypeInContext(c->ctx), ty = elem_type(c, e);
    LLVMTypeRef cty = e == TIR_F64 ? ty : f32;
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, NULL, 0);
    LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, NULL, 0);
    LLVMValueRef *r = new_regs(c, res);
    for (uint32_t i = 0; i < c->nregs[res->id]; i++) {
        LLVMValueRef x = reg(c, op->operands[0], i);
        if (cty != ty) x = LLVMBuildFPExt(c->b, x, cty, "");
        LLVMValueRef y = LLVMBuildCall2(c->b, fty, fn, &x, 1, "");
        r[i] = cty != ty ? LLVMBuildFPTrunc(c->b, y, ty, "") : y;
    }
}

/* ---- erf: lower/erf_f32.h describes it, and models it for a test ---------- */

/* k[0] + x * (k[1] + x * (... + x * k[n-1])), one fma a step. */
static LLVMValueRef horner_f32(cg *c, const float *k, int n, LLVMValueRef x) {
    LLVMTypeRef f32 = LLVMFloatTypeInContext(c->ctx);
    LLVMValueRef p = LLVMConstReal(f32, k[n - 1]);
    for (int j = n - 2; j >= 0; j--) {
        LLVMValueRef a[3] = {p, x, LLVMConstReal(f32, k[j])};
        p = intrinsic(c, "llvm.fma", f32, a, 3);
    }
    return p;
}

void gen_erf(cg *c, const tir_op *op) {
    const tir_value *res = op->results[0];
    LLVMTypeRef f32 = LLVMFloatTypeInContext(c->ctx), ty = elem_type(c, tir_type_elem(res->type));
    const char *name = "llvm.nvvm.ex2.approx.f";
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef ex2 = LLVMGetIntrinsicDeclaration(c->mod, id, NULL, 0);
    LLVMTypeRef ex2_ty = LLVMIntrinsicGetType(c->ctx, id, NULL, 0);
    if (res->type.elem == TIR_F64) {
        cg_error(c, op, "erf on f64 is not supported yet (f32 math only)");
        return;
    }
    LLVMValueRef one = LLVMConstReal(f32, 1.0);
    LLVMValueRef *r = new_regs(c, res);
    for (uint32_t i = 0; i < c->nregs[res->id]; i++) {
        LLVMValueRef x = reg(c, op->operands[0], i);
        if (ty != f32) x = LLVMBuildFPExt(c->b, x, f32, "");
        LLVMValueRef ax = intrinsic(c, "llvm.fabs", f32, &x, 1);
        LLVMValueRef u = LLVMBuildFMul(c->b, x, x, "");
        LLVMValueRef small = LLVMBuildFMul(c->b, x, horner_f32(c, lower_erf_small, 6, u), "");
        LLVMValueRef clamp[2] = {ax, LLVMConstReal(f32, LOWER_ERF_CLAMP)};
        LLVMValueRef l = horner_f32(c, lower_erf_large, 7, intrinsic(c, "llvm.minnum", f32, clamp, 2));
        LLVMValueRef sign[2] = {LLVMBuildFSub(c->b, one, LLVMBuildCall2(c->b, ex2_ty, ex2, &l, 1, ""), ""), x};
        LLVMValueRef large = intrinsic(c, "llvm.copysign", f32, sign, 2);
        LLVMValueRef split = LLVMBuildFCmp(c->b, LLVMRealOGE, ax, LLVMConstReal(f32, LOWER_ERF_SPLIT), "");
        LLVMValueRef y = LLVMBuildSelect(c->b, split, large, small, "");
        r[i] = ty != f32 ? LLVMBuildFPTrunc(c->b, y, ty, "") : y;
    }
}

/* ---- random numbers ---------------------------------------------------------
 * The first word of Philox4x32-10 (docs/language.md) in integer arithmetic
 * only, so it matches the interpreter bit for bit. A 32x32 product's high
 * half is llvm.nvvm.mulhi.ui (PTX mul.hi.u32), its low half a 32-bit mul:
 * built as zext, 64-bit mul and lshr instead, LLVM's combiner merged the
 * xors across the halves into 64-bit ones and left 64-bit multiplies. */
static void mul_halves(cg *c, uint32_t k, LLVMValueRef x, LLVMValueRef *lo, LLVMValueRef *hi) {
    LLVMValueRef args[2] = {x, LLVMConstInt(LLVMInt32TypeInContext(c->ctx), k, false)};
    *hi = call_intrinsic(c, "llvm.nvvm.mulhi.ui", args, 2);
    *lo = LLVMBuildMul(c->b, x, args[1], "");
}

void gen_randint(cg *c, const tir_op *op) {
    enum { ROUNDS = 10 };
    const tir_value *res = op->results[0], *seed = op->operands[0];
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c->ctx), i64 = LLVMInt64TypeInContext(c->ctx);
    LLVMValueRef *r = new_regs(c, res), last = NULL, keys[ROUNDS][2] = {{NULL}};
    for (uint32_t i = 0; i < c->nregs[res->id]; i++) {
        LLVMValueRef s = reg(c, seed, i);
        if (s != last) { /* the key schedule, once per distinct seed register (once for a splat) */
            last = s;
            if (seed->type.elem == TIR_I32) s = LLVMBuildSExt(c->b, s, i64, "");
            keys[0][0] = LLVMBuildTrunc(c->b, s, i32, "");
            keys[0][1] = LLVMBuildTrunc(c->b, LLVMBuildLShr(c->b, s, LLVMConstInt(i64, 32, false), ""), i32, "");
            for (int k = 1; k < ROUNDS; k++) {
                keys[k][0] = LLVMBuildAdd(c->b, keys[k - 1][0], LLVMConstInt(i32, 0x9E3779B9u, false), "");
                keys[k][1] = LLVMBuildAdd(c->b, keys[k - 1][1], LLVMConstInt(i32, 0xBB67AE85u, false), "");
            }
        }
        LLVMValueRef c0 = reg(c, op->operands[1], i), c1 = LLVMConstNull(i32), c2 = c1, c3 = c1;
        for (int k = 0; k < ROUNDS; k++) {
            LLVMValueRef lo0, hi0, lo2 = c2, hi2 = c2; /* c2 * K is 0 in the first round */
            mul_halves(c, 0xD2511F53u, c0, &lo0, &hi0);
            if (k) mul_halves(c, 0xCD9E8D57u, c2, &lo2, &hi2);
            c0 = LLVMBuildXor(c->b, LLVMBuildXor(c->b, hi2, c1, ""), keys[k][0], "");
            c2 = LLVMBuildXor(c->b, LLVMBuildXor(c->b, hi0, c3, ""), keys[k][1], "");
            c1 = lo2;
            c3 = lo0;
        }
        r[i] = c0;
    }
}
