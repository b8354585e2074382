/* arith.c - the emulator's arithmetic: integer and float operations,
 * comparisons, conversions and rounding (f16/bf16 through support/half.c),
 * and the math intrinsics; pure functions of words, which translation and
 * execution share. */
#include "emu/emu_internal.h"

#include <math.h>

#include "support/support.h"

double emu_fget(uint64_t w, ek e) {
    switch (e) {
    case EK_F16: return tc_half_value((uint16_t)w, false);
    case EK_BF16: return tc_half_value((uint16_t)w, true);
    case EK_F32: return f32_of(w);
    default: return f64_of(w);
    }
}
/* x as the bits of a float of kind e, rounded once. */
uint64_t emu_fput(double x, ek e) {
    switch (e) {
    case EK_F16: return tc_half_bits(x, false);
    case EK_BF16: return tc_half_bits(x, true);
    case EK_F32: return bits_f32((float)x);
    default: return bits_f64(x);
    }
}

/* ---- arithmetic ---- */

uint64_t emu_int_bin(uint16_t op, uint64_t a, uint64_t b, int bits) {
    int64_t sa = sx(a, bits), sb = sx(b, bits);
    uint64_t ones = mask_bits(~UINT64_C(0), bits);
    switch (op) {
    case LLVMAdd: return mask_bits(a + b, bits);
    case LLVMSub: return mask_bits(a - b, bits);
    case LLVMMul: return mask_bits(a * b, bits);
    case LLVMUDiv: return b ? a / b : ones; /* PTX: division by zero gives all ones */
    case LLVMURem: return b ? a % b : a;
    case LLVMSDiv:
        if (!b) return ones;
        if (sb == -1) return mask_bits(0 - a, bits); /* INT_MIN / -1 wraps */
        return mask_bits((uint64_t)(sa / sb), bits);
    case LLVMSRem:
        if (!b) return a;
        if (sb == -1) return 0;
        return mask_bits((uint64_t)(sa % sb), bits);
    case LLVMShl: return b >= (uint64_t)bits ? 0 : mask_bits(a << b, bits); /* PTX clamps the shift */
    case LLVMLShr: return b >= (uint64_t)bits ? 0 : a >> b;
    case LLVMAShr: return mask_bits((uint64_t)(sa >> (b >= (uint64_t)bits ? bits - 1 : (int)b)), bits);
    case LLVMAnd: return a & b;
    case LLVMOr: return a | b;
    default: return a ^ b;
    }
}

uint64_t emu_float_bin(uint16_t op, uint64_t a, uint64_t b, ek e) {
    if (e == EK_F32) {
        float x = f32_of(a), y = f32_of(b), z;
        switch (op) {
        case LLVMFAdd: z = x + y; break;
        case LLVMFSub: z = x - y; break;
        case LLVMFMul: z = x * y; break;
        case LLVMFDiv: z = x / y; break;
        default: z = fmodf(x, y); break;
        }
        return bits_f32(z);
    }
    double x = emu_fget(a, e), y = emu_fget(b, e), z;
    switch (op) {
    case LLVMFAdd: z = x + y; break;
    case LLVMFSub: z = x - y; break;
    case LLVMFMul: z = x * y; break;
    case LLVMFDiv: z = x / y; break;
    default: z = fmod(x, y); break;
    }
    return emu_fput(z, e); /* f16, bf16: exact in double, rounded once */
}

bool emu_icmp(int pred, uint64_t a, uint64_t b, int bits) {
    int64_t sa = sx(a, bits), sb = sx(b, bits);
    switch (pred) {
    case LLVMIntEQ: return a == b;
    case LLVMIntNE: return a != b;
    case LLVMIntUGT: return a > b;
    case LLVMIntUGE: return a >= b;
    case LLVMIntULT: return a < b;
    case LLVMIntULE: return a <= b;
    case LLVMIntSGT: return sa > sb;
    case LLVMIntSGE: return sa >= sb;
    case LLVMIntSLT: return sa < sb;
    default: return sa <= sb;
    }
}

bool emu_fcmp(int pred, double x, double y) {
    bool uno = isnan(x) || isnan(y);
    switch (pred) {
    case LLVMRealPredicateFalse: return false;
    case LLVMRealOEQ: return !uno && x == y;
    case LLVMRealOGT: return !uno && x > y;
    case LLVMRealOGE: return !uno && x >= y;
    case LLVMRealOLT: return !uno && x < y;
    case LLVMRealOLE: return !uno && x <= y;
    case LLVMRealONE: return !uno && x != y;
    case LLVMRealORD: return !uno;
    case LLVMRealUNO: return uno;
    case LLVMRealUEQ: return uno || x == y;
    case LLVMRealUGT: return uno || x > y;
    case LLVMRealUGE: return uno || x >= y;
    case LLVMRealULT: return uno || x < y;
    case LLVMRealULE: return uno || x <= y;
    case LLVMRealUNE: return uno || x != y;
    default: return true;
    }
}

/* float to integer as PTX's cvt.rzi: toward zero, saturating, NaN -> 0 */
static uint64_t f_to_int(double v, int bits, bool is_signed) {
    if (isnan(v)) return 0;
    v = trunc(v);
    if (is_signed) {
        double lo = -ldexp(1.0, bits - 1), hi = ldexp(1.0, bits - 1);
        if (v < lo) return mask_bits(UINT64_C(1) << (bits - 1), bits);
        if (v >= hi) return mask_bits((UINT64_C(1) << (bits - 1)) - 1, bits);
        return mask_bits((uint64_t)(int64_t)v, bits);
    }
    if (v <= 0) return 0;
    if (v >= ldexp(1.0, bits)) return mask_bits(~UINT64_C(0), bits);
    return (uint64_t)v;
}

static uint64_t int_to_f(uint64_t a, int bits, bool is_signed, ek to) {
    if (is_signed) {
        int64_t v = sx(a, bits);
        return to == EK_F32 ? bits_f32((float)v) : emu_fput((double)v, to);
    }
    return to == EK_F32 ? bits_f32((float)a) : emu_fput((double)a, to);
}

uint64_t emu_cast(uint16_t op, uint64_t a, ek from, ek to) {
    switch (op) {
    case LLVMTrunc: case LLVMPtrToInt: return mask_bits(a, ek_bits[to]);
    case LLVMZExt: case LLVMIntToPtr: return a;
    case LLVMSExt: return mask_bits((uint64_t)sx(a, ek_bits[from]), ek_bits[to]);
    case LLVMFPTrunc: case LLVMFPExt: return emu_fput(emu_fget(a, from), to);
    case LLVMFPToSI: return f_to_int(emu_fget(a, from), ek_bits[to], true);
    case LLVMFPToUI: return f_to_int(emu_fget(a, from), ek_bits[to], false);
    case LLVMSIToFP: return int_to_f(a, ek_bits[from], true, to);
    default: return int_to_f(a, ek_bits[from], false, to);
    }
}

/* .ftz: a subnormal f32 becomes a zero of its sign; NaN is not
 * subnormal (the compare below is false for it: it flushed to 0 before) */
static double flush(double v, ek e, bool ftz) {
    if (!ftz || e != EK_F32 || v == 0 || isnan(v) || fabs(v) >= 0x1p-126) return v;
    return copysign(0.0, v);
}

double emu_fmin_ieee(double x, double y, bool propagate_nan, bool want_max) {
    if (isnan(x) || isnan(y)) return propagate_nan ? NAN : isnan(x) ? y : x;
    if (x == y) return want_max ? (signbit(x) ? y : x) : (signbit(x) ? x : y); /* -0 < +0 */
    return want_max ? (x > y ? x : y) : (x < y ? x : y);
}

uint64_t emu_math(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c) {
    ek e = (ek)in->ek;
    int bits = ek_bits[e];
    if (!ek_is_float(e) || in->sub == M_FPTOSI_SAT || in->sub == M_FPTOUI_SAT) {
        int64_t sa = sx(a, bits), sb = sx(b, bits);
        switch (in->sub) {
        case M_SMIN: return sa < sb ? a : b;
        case M_SMAX: return sa > sb ? a : b;
        case M_UMIN: return a < b ? a : b;
        case M_UMAX: return a > b ? a : b;
        case M_ABS: return mask_bits(sa < 0 ? 0 - a : a, bits);
        case M_CTPOP: return (uint64_t)__builtin_popcountll(a);
        case M_CTLZ: return a ? (uint64_t)(__builtin_clzll(a) - (64 - bits)) : (uint64_t)bits;
        case M_CTTZ: return a ? (uint64_t)__builtin_ctzll(a) : (uint64_t)bits;
        case M_MULHI_U:
            return bits == 32 ? (a * b) >> 32 : (uint64_t)(((unsigned __int128)a * b) >> 64);
        case M_MULHI_S:
            return bits == 32 ? mask_bits((uint64_t)((sa * sb) >> 32), 32)
                              : (uint64_t)(((__int128)sa * sb) >> 64);
        case M_FPTOSI_SAT: return f_to_int(emu_fget(a, e), ek_bits[in->ek2], true);
        case M_FPTOUI_SAT: return f_to_int(emu_fget(a, e), ek_bits[in->ek2], false);
        default: return 0;
        }
    }
    bool ftz = in->imm != 0;
    double x = flush(emu_fget(a, e), e, ftz), y = emu_fget(b, e), z = emu_fget(c, e), v;
    switch (in->sub) {
    case M_FABS: return e == EK_F64 ? a & ~(UINT64_C(1) << 63) : a & ~(UINT64_C(1) << (bits - 1));
    case M_COPYSIGN: {
        uint64_t s = UINT64_C(1) << (bits - 1);
        return (a & ~s) | (b & s);
    }
    case M_FMA: case M_FMULADD:
        if (e == EK_F32) return bits_f32(fmaf(f32_of(a), f32_of(b), f32_of(c)));
        v = fma(x, y, z);
        break;
    case M_SQRT: v = sqrt(x); break;
    case M_FLOOR: v = floor(x); break;
    case M_CEIL: v = ceil(x); break;
    case M_TRUNC: v = trunc(x); break;
    case M_ROUND: v = round(x); break;
    case M_RINT: v = nearbyint(x); break;
    case M_MINNUM: v = emu_fmin_ieee(x, y, false, false); break;
    case M_MAXNUM: v = emu_fmin_ieee(x, y, false, true); break;
    case M_MINIMUM: v = emu_fmin_ieee(x, y, true, false); break;
    case M_MAXIMUM: v = emu_fmin_ieee(x, y, true, true); break;
    /* .approx: the correctly rounded value, within PTX's bounds */
    case M_EX2_APPROX: case M_EXP2: v = exp2(x); break;
    case M_LG2_APPROX: case M_LOG2: v = log2(x); break;
    case M_EXP: v = exp(x); break;
    case M_LOG: v = log(x); break;
    case M_SIN_APPROX: case M_SIN: v = sin(x); break;
    case M_COS_APPROX: case M_COS: v = cos(x); break;
    case M_RSQRT_APPROX: v = 1.0 / sqrt(x); break;
    case M_RCP_APPROX: v = 1.0 / x; break;
    default: v = 0; break;
    }
    return emu_fput(flush(v, e, ftz), e);
}
