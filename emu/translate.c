/* translate.c - translation of an LLVM module into the emulator's form: each
 * kernel walked once into an array of emu_inst over a frame of 64-bit words
 * (phis become copies on the edges, constants a frame image, intrinsics and
 * inline asm recognized by name, anything else refused by name). */
#include "emu/emu_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>

#include "emu/mma.h"
#include "lower/ptx_async.h"

static void xfail(xlate *x, LLVMValueRef at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void xfail(xlate *x, LLVMValueRef at, const char *fmt, ...) {
    if (x->failed) return;
    x->failed = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *text = at ? LLVMPrintValueToString(at) : NULL;
    snprintf(x->err, x->err_size, "emulator: %s%s%s%s%s", x->f ? "in kernel '" : "", x->f ? x->f->name : "",
             x->f ? "': " : "", msg, text ? ": " : "");
    if (text) {
        size_t n = strlen(x->err);
        snprintf(x->err + n, x->err_size - n, "%s", text + strspn(text, " "));
        LLVMDisposeMessage(text);
    }
}

static uint32_t *map_find(xlate *x, LLVMValueRef k) {
    if (!x->mapcap) return NULL;
    size_t h = ((uintptr_t)k >> 4) * 0x9E3779B97F4A7C15ull;
    for (uint32_t i = (uint32_t)(h >> 32) & (x->mapcap - 1);; i = (i + 1) & (x->mapcap - 1)) {
        if (x->map[i].key == k) return &x->map[i].val;
        if (!x->map[i].key) return NULL;
    }
}

static void map_put(xlate *x, LLVMValueRef k, uint32_t v) {
    if (2 * (x->mapn + 1) > x->mapcap) {
        uint32_t oldcap = x->mapcap;
        map_entry *old = x->map;
        x->mapcap = oldcap ? oldcap * 2 : 1024;
        x->map = calloc(x->mapcap, sizeof *x->map);
        if (!x->map) abort();
        x->mapn = 0;
        for (uint32_t i = 0; i < oldcap; i++)
            if (old[i].key) map_put(x, old[i].key, old[i].val);
        free(old);
    }
    size_t h = ((uintptr_t)k >> 4) * 0x9E3779B97F4A7C15ull;
    uint32_t i = (uint32_t)(h >> 32) & (x->mapcap - 1);
    while (x->map[i].key && x->map[i].key != k) i = (i + 1) & (x->mapcap - 1);
    if (!x->map[i].key) x->mapn++;
    x->map[i] = (map_entry){.key = k, .val = v};
}

void *emu_grow(void *p, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return p;
    uint32_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *q = realloc(p, (size_t)n * elem);
    if (!q) abort();
    memset((char *)q + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
    *cap = n;
    return q;
}

static uint32_t new_words(xlate *x, uint32_t n) {
    emu_func *f = x->f;
    f->init = emu_grow(f->init, &f->capwords, f->nwords + n, sizeof *f->init);
    uint32_t s = f->nwords;
    f->nwords += n;
    return s;
}

static uint32_t add_aux(xlate *x, uint32_t v) {
    emu_func *f = x->f;
    f->aux = emu_grow(f->aux, &f->capaux, f->naux + 1, sizeof *f->aux);
    f->aux[f->naux] = v;
    return f->naux++;
}

static emu_inst *emit(xlate *x, eop op, LLVMValueRef src) {
    emu_func *f = x->f;
    f->code = emu_grow(f->code, &f->capcode, f->ncode + 1, sizeof *f->code);
    emu_inst *in = &f->code[f->ncode++];
    memset(in, 0, sizeof *in);
    in->op = (uint16_t)op;
    in->src = src;
    in->ek = in->ek2 = EK_NONE;
    return in;
}

/* The element kind of a scalar type (EK_NONE: not one we know). */
static ek scalar_ek(LLVMTypeRef t) {
    switch (LLVMGetTypeKind(t)) {
    case LLVMIntegerTypeKind:
        switch (LLVMGetIntTypeWidth(t)) {
        case 1: return EK_I1;
        case 8: return EK_I8;
        case 16: return EK_I16;
        case 32: return EK_I32;
        case 64: return EK_I64;
        default: return EK_NONE;
        }
    case LLVMHalfTypeKind: return EK_F16;
    case LLVMBFloatTypeKind: return EK_BF16;
    case LLVMFloatTypeKind: return EK_F32;
    case LLVMDoubleTypeKind: return EK_F64;
    case LLVMPointerTypeKind: return EK_PTR;
    default: return EK_NONE;
    }
}

/* Words a value of type t takes (0: a type we do not know). */
static uint32_t type_words(LLVMTypeRef t) {
    switch (LLVMGetTypeKind(t)) {
    case LLVMVectorTypeKind: return scalar_ek(LLVMGetElementType(t)) == EK_NONE ? 0 : LLVMGetVectorSize(t);
    case LLVMArrayTypeKind: return LLVMGetArrayLength(t) * type_words(LLVMGetElementType(t));
    case LLVMStructTypeKind: {
        uint32_t n = 0, k = LLVMCountStructElementTypes(t);
        for (uint32_t i = 0; i < k; i++) {
            uint32_t w = type_words(LLVMStructGetTypeAtIndex(t, i));
            if (!w) return 0;
            n += w;
        }
        return n;
    }
    case LLVMVoidTypeKind: return 0;
    default: return scalar_ek(t) == EK_NONE ? 0 : 1;
    }
}

/* Element kind and lanes of a scalar or vector type. */
static ek elem_of(LLVMTypeRef t, uint32_t *lanes) {
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) {
        *lanes = LLVMGetVectorSize(t);
        return scalar_ek(LLVMGetElementType(t));
    }
    *lanes = 1;
    return scalar_ek(t);
}

static bool global_addr(xlate *x, LLVMValueRef g, uint64_t *addr) {
    for (uint32_t i = 0; i < x->m->nglobals; i++)
        if (x->m->globals[i] == g) {
            *addr = x->m->global_addr[i];
            return true;
        }
    xfail(x, g, "a global the emulator did not place");
    return false;
}

/* Evaluates a constant into words[0..type_words). */
static bool const_eval(xlate *x, LLVMValueRef v, uint64_t *words) {
    LLVMTypeRef t = LLVMTypeOf(v);
    uint32_t n = type_words(t);
    if (!n) {
        xfail(x, v, "a constant of a type the emulator does not know");
        return false;
    }
    if (LLVMIsUndef(v) || LLVMIsAConstantAggregateZero(v) || LLVMIsAConstantPointerNull(v)) {
        memset(words, 0, n * sizeof *words);
        return true;
    }
    if (LLVMIsAConstantInt(v)) {
        words[0] = mask_bits(LLVMConstIntGetZExtValue(v), ek_bits[scalar_ek(t)]);
        return true;
    }
    if (LLVMIsAConstantFP(v)) {
        LLVMBool loses;
        words[0] = emu_fput(LLVMConstRealGetDouble(v, &loses), scalar_ek(t));
        return true;
    }
    if (LLVMIsAGlobalVariable(v)) return global_addr(x, v, &words[0]);
    if (LLVMIsAConstantDataSequential(v) || LLVMIsAConstantVector(v) || LLVMIsAConstantStruct(v) ||
        LLVMIsAConstantArray(v)) {
        LLVMTypeKind tk = LLVMGetTypeKind(t);
        uint32_t k = tk == LLVMStructTypeKind  ? LLVMCountStructElementTypes(t)
                     : tk == LLVMArrayTypeKind ? LLVMGetArrayLength(t)
                                               : LLVMGetVectorSize(t);
        uint32_t at = 0;
        for (uint32_t i = 0; i < k; i++) {
            LLVMValueRef e = LLVMGetAggregateElement(v, i);
            if (!e) {
                xfail(x, v, "an aggregate constant the emulator cannot read");
                return false;
            }
            if (!const_eval(x, e, words + at)) return false;
            at += type_words(LLVMTypeOf(e));
        }
        return true;
    }
    if (LLVMIsAConstantExpr(v)) {
        LLVMOpcode op = LLVMGetConstOpcode(v);
        uint64_t a = 0;
        if (op == LLVMBitCast || op == LLVMAddrSpaceCast || op == LLVMPtrToInt || op == LLVMIntToPtr) {
            if (type_words(LLVMTypeOf(LLVMGetOperand(v, 0))) != 1 || n != 1) {
                xfail(x, v, "a constant cast of a vector");
                return false;
            }
            if (!const_eval(x, LLVMGetOperand(v, 0), &a)) return false;
            words[0] = op == LLVMPtrToInt ? mask_bits(a, ek_bits[scalar_ek(t)]) : a;
            if ((op == LLVMPtrToInt && LLVMGetPointerAddressSpace(LLVMTypeOf(LLVMGetOperand(v, 0))) == 3) ||
                (op == LLVMIntToPtr && LLVMGetPointerAddressSpace(t) == 3))
                words[0] = emu_shared_cast((uint16_t)op, a, scalar_ek(t));
            return true;
        }
        if (op == LLVMGetElementPtr) {
            if (!const_eval(x, LLVMGetOperand(v, 0), &a)) return false;
            LLVMTypeRef ty = LLVMGetGEPSourceElementType(v);
            uint32_t nops = (uint32_t)LLVMGetNumOperands(v);
            for (uint32_t i = 1; i < nops; i++) {
                LLVMValueRef idx = LLVMGetOperand(v, i);
                if (!LLVMIsAConstantInt(idx)) {
                    xfail(x, v, "a constant GEP with a vector index");
                    return false;
                }
                int64_t k = LLVMConstIntGetSExtValue(idx);
                if (i == 1) {
                    a += (uint64_t)k * LLVMABISizeOfType(x->m->td, ty);
                } else if (LLVMGetTypeKind(ty) == LLVMStructTypeKind) {
                    a += LLVMOffsetOfElement(x->m->td, ty, (unsigned)k);
                    ty = LLVMStructGetTypeAtIndex(ty, (unsigned)k);
                } else {
                    ty = LLVMGetElementType(ty);
                    a += (uint64_t)k * LLVMABISizeOfType(x->m->td, ty);
                }
            }
            words[0] = a;
            return true;
        }
    }
    xfail(x, v, "a constant the emulator does not know");
    return false;
}

/* Slot of a value: an instruction's or parameter's (assigned before), or
 * a constant's, evaluated into the frame image on first use. */
static uint32_t slot(xlate *x, LLVMValueRef v) {
    uint32_t *s = map_find(x, v);
    if (s) return *s;
    if (LLVMIsAInstruction(v) || LLVMIsAArgument(v) || LLVMIsABasicBlock(v)) {
        xfail(x, v, "a value the emulator gave no slot");
        return 0;
    }
    uint32_t n = type_words(LLVMTypeOf(v));
    if (!n) {
        xfail(x, v, "an operand of a type the emulator does not know");
        return 0;
    }
    uint32_t at = new_words(x, n);
    if (!const_eval(x, v, x->f->init + at)) return 0;
    map_put(x, v, at);
    return at;
}

/* Writes a constant's bytes in memory layout (the constant region). */
static bool const_bytes(xlate *x, LLVMValueRef v, uint8_t *out) {
    LLVMTypeRef t = LLVMTypeOf(v);
    LLVMTypeKind tk = LLVMGetTypeKind(t);
    if (LLVMIsAConstantDataSequential(v) && LLVMIsConstantString(v)) {
        size_t len;
        const char *s = LLVMGetAsString(v, &len);
        memcpy(out, s, len);
        return true;
    }
    if (LLVMIsUndef(v) || LLVMIsAConstantAggregateZero(v)) return true; /* zeroed already */
    if (tk == LLVMStructTypeKind || tk == LLVMArrayTypeKind || tk == LLVMVectorTypeKind) {
        uint32_t k = tk == LLVMStructTypeKind ? LLVMCountStructElementTypes(t)
                     : tk == LLVMArrayTypeKind ? LLVMGetArrayLength(t)
                                               : LLVMGetVectorSize(t);
        for (uint32_t i = 0; i < k; i++) {
            LLVMValueRef e = LLVMGetAggregateElement(v, i);
            uint64_t off = tk == LLVMStructTypeKind ? LLVMOffsetOfElement(x->m->td, t, i)
                                                    : i * LLVMABISizeOfType(x->m->td, LLVMTypeOf(e));
            if (!e || !const_bytes(x, e, out + off)) return false;
        }
        return true;
    }
    uint64_t w;
    if (!const_eval(x, v, &w)) return false;
    memcpy(out, &w, (size_t)ek_bytes[scalar_ek(t)]);
    return true;
}

/* Places every global: addrspace 3 in the shared region, the others (with
 * initializers) in the constant region. An addrspace 3 global without an
 * initializer is the dynamic shared array (extern __shared__): all of them
 * start after the static ones, 16-byte aligned, at the same address, and
 * the launch says how many bytes it has (emu_launch.dynamic_smem). */
bool emu_place_globals(xlate *x) {
    emu_module *m = x->m;
    uint32_t n = 0;
    for (LLVMValueRef g = LLVMGetFirstGlobal(m->mod); g; g = LLVMGetNextGlobal(g)) n++;
    m->globals = calloc(n + 1, sizeof *m->globals);
    m->global_addr = calloc(n + 1, sizeof *m->global_addr);
    if (!m->globals || !m->global_addr) abort();
    uint64_t cend = 0;
    for (LLVMValueRef g = LLVMGetFirstGlobal(m->mod); g; g = LLVMGetNextGlobal(g)) {
        LLVMTypeRef ty = LLVMGlobalGetValueType(g);
        uint64_t size = LLVMABISizeOfType(m->td, ty);
        uint64_t align = LLVMGetAlignment(g) ? LLVMGetAlignment(g) : LLVMABIAlignmentOfType(m->td, ty);
        unsigned space = LLVMGetPointerAddressSpace(LLVMTypeOf(g));
        m->globals[m->nglobals] = g;
        if (space == 3 && !LLVMGetInitializer(g)) {
            m->global_addr[m->nglobals++] = 0; /* placed below, after the static ones */
        } else if (space == 3) {
            m->shared_size = (m->shared_size + align - 1) / align * align;
            m->global_addr[m->nglobals++] = make_ptr(REGION_SHARED, m->shared_size);
            m->shared_size += size;
        } else {
            if (!LLVMGetInitializer(g)) {
                xfail(x, g, "a global in address space %u without an initializer", space);
                return false;
            }
            cend = (cend + align - 1) / align * align;
            m->global_addr[m->nglobals++] = make_ptr(REGION_CONST, cend);
            cend += size;
        }
    }
    /* the dynamic arrays all start where the static part ends, at the
     * most any of them asks (.extern .shared .align N), at least 16 */
    uint64_t dyn_align = 0;
    for (uint32_t i = 0; i < m->nglobals; i++) {
        LLVMValueRef g = m->globals[i];
        if (LLVMGetPointerAddressSpace(LLVMTypeOf(g)) != 3 || LLVMGetInitializer(g)) continue;
        if (LLVMGetAlignment(g) > DYNAMIC_SMEM_MAX_ALIGN) {
            xfail(x, g, "a dynamic shared array aligned to more than %d bytes", DYNAMIC_SMEM_MAX_ALIGN);
            return false;
        }
        uint64_t a = LLVMGetAlignment(g) > DYNAMIC_SMEM_ALIGN ? LLVMGetAlignment(g) : DYNAMIC_SMEM_ALIGN;
        if (a > dyn_align) dyn_align = a;
    }
    if (dyn_align) /* the static part's exact end stays checked in modules without one */
        m->shared_size = (m->shared_size + dyn_align - 1) / dyn_align * dyn_align;
    for (uint32_t i = 0; i < m->nglobals; i++) {
        LLVMValueRef g = m->globals[i];
        if (LLVMGetPointerAddressSpace(LLVMTypeOf(g)) != 3 || LLVMGetInitializer(g)) continue;
        m->global_addr[i] = make_ptr(REGION_SHARED, m->shared_size);
    }
    m->consts_size = cend;
    m->consts = calloc(1, cend + 16);
    if (!m->consts) abort();
    for (uint32_t i = 0; i < m->nglobals; i++) {
        if (m->global_addr[i] >> REGION_SHIFT != REGION_CONST) continue;
        if (!const_bytes(x, LLVMGetInitializer(m->globals[i]), m->consts + (m->global_addr[i] & OFFSET_MASK)))
            return false;
    }
    return true;
}

/* ---- translating instructions ---------------------------------------------- */

typedef struct intrinsic_row {
    const char *prefix; /* the name up to its type suffix, or all of it */
    eop op;
    int sub;
} intrinsic_row;

static const intrinsic_row intrinsics[] = {
    {"llvm.nvvm.read.ptx.sreg.tid.x", EOP_SREG, SREG_TID_X},
    {"llvm.nvvm.read.ptx.sreg.tid.y", EOP_SREG, SREG_TID_Y},
    {"llvm.nvvm.read.ptx.sreg.tid.z", EOP_SREG, SREG_TID_Z},
    {"llvm.nvvm.read.ptx.sreg.ntid.x", EOP_SREG, SREG_NTID_X},
    {"llvm.nvvm.read.ptx.sreg.ntid.y", EOP_SREG, SREG_NTID_Y},
    {"llvm.nvvm.read.ptx.sreg.ntid.z", EOP_SREG, SREG_NTID_Z},
    {"llvm.nvvm.read.ptx.sreg.ctaid.x", EOP_SREG, SREG_CTAID_X},
    {"llvm.nvvm.read.ptx.sreg.ctaid.y", EOP_SREG, SREG_CTAID_Y},
    {"llvm.nvvm.read.ptx.sreg.ctaid.z", EOP_SREG, SREG_CTAID_Z},
    {"llvm.nvvm.read.ptx.sreg.nctaid.x", EOP_SREG, SREG_NCTAID_X},
    {"llvm.nvvm.read.ptx.sreg.nctaid.y", EOP_SREG, SREG_NCTAID_Y},
    {"llvm.nvvm.read.ptx.sreg.nctaid.z", EOP_SREG, SREG_NCTAID_Z},
    {"llvm.nvvm.read.ptx.sreg.laneid", EOP_SREG, SREG_LANEID},
    {"llvm.nvvm.read.ptx.sreg.warpid", EOP_SREG, SREG_WARPID},
    {"llvm.nvvm.read.ptx.sreg.warpsize", EOP_SREG, SREG_WARPSIZE},
    /* bar.sync 0 / bar.sync a / bar.sync a, b (LLVM 19 prints barrier.n and
     * bar.sync as "bar.sync a", barrier as "bar.sync a, b", barrier.sync
     * and barrier.sync.cnt as the non-aligned barrier.sync a{, b}) */
    {"llvm.nvvm.barrier0", EOP_BARRIER, 0},
    {"llvm.nvvm.barrier.n", EOP_BARRIER, BAR_HAS_ID},
    {"llvm.nvvm.bar.sync", EOP_BARRIER, BAR_HAS_ID},
    {"llvm.nvvm.barrier", EOP_BARRIER, BAR_HAS_ID | BAR_HAS_COUNT},
    {"llvm.nvvm.barrier.sync", EOP_BARRIER, BAR_HAS_ID},
    {"llvm.nvvm.barrier.sync.cnt", EOP_BARRIER, BAR_HAS_ID | BAR_HAS_COUNT},
    {"llvm.nvvm.bar.warp.sync", EOP_WARPSYNC, 0},
    {"llvm.nvvm.shfl.sync.up.", EOP_SHFL, SHFL_UP},
    {"llvm.nvvm.shfl.sync.down.", EOP_SHFL, SHFL_DOWN},
    {"llvm.nvvm.shfl.sync.bfly.", EOP_SHFL, SHFL_BFLY},
    {"llvm.nvvm.shfl.sync.idx.", EOP_SHFL, SHFL_IDX},
    {"llvm.nvvm.vote.all.sync", EOP_VOTE, VOTE_ALL},
    {"llvm.nvvm.vote.any.sync", EOP_VOTE, VOTE_ANY},
    {"llvm.nvvm.vote.uni.sync", EOP_VOTE, VOTE_UNI},
    {"llvm.nvvm.vote.ballot.sync", EOP_VOTE, VOTE_BALLOT},
    {"llvm.fabs.", EOP_MATH, M_FABS},
    {"llvm.copysign.", EOP_MATH, M_COPYSIGN},
    {"llvm.fma.", EOP_MATH, M_FMA},
    {"llvm.fmuladd.", EOP_MATH, M_FMULADD},
    {"llvm.sqrt.", EOP_MATH, M_SQRT},
    {"llvm.floor.", EOP_MATH, M_FLOOR},
    {"llvm.ceil.", EOP_MATH, M_CEIL},
    {"llvm.trunc.", EOP_MATH, M_TRUNC},
    {"llvm.round.", EOP_MATH, M_ROUND},
    {"llvm.rint.", EOP_MATH, M_RINT},
    {"llvm.nearbyint.", EOP_MATH, M_RINT},
    {"llvm.roundeven.", EOP_MATH, M_RINT},
    {"llvm.minnum.", EOP_MATH, M_MINNUM},
    {"llvm.maxnum.", EOP_MATH, M_MAXNUM},
    {"llvm.minimum.", EOP_MATH, M_MINIMUM},
    {"llvm.maximum.", EOP_MATH, M_MAXIMUM},
    {"llvm.smin.", EOP_MATH, M_SMIN},
    {"llvm.smax.", EOP_MATH, M_SMAX},
    {"llvm.umin.", EOP_MATH, M_UMIN},
    {"llvm.umax.", EOP_MATH, M_UMAX},
    {"llvm.abs.", EOP_MATH, M_ABS},
    {"llvm.fptosi.sat.", EOP_MATH, M_FPTOSI_SAT},
    {"llvm.fptoui.sat.", EOP_MATH, M_FPTOUI_SAT},
    {"llvm.ctpop.", EOP_MATH, M_CTPOP},
    {"llvm.ctlz.", EOP_MATH, M_CTLZ},
    {"llvm.cttz.", EOP_MATH, M_CTTZ},
    {"llvm.exp2.", EOP_MATH, M_EXP2},
    {"llvm.log2.", EOP_MATH, M_LOG2},
    {"llvm.exp.", EOP_MATH, M_EXP},
    {"llvm.log.", EOP_MATH, M_LOG},
    {"llvm.sin.", EOP_MATH, M_SIN},
    {"llvm.cos.", EOP_MATH, M_COS},
    {"llvm.nvvm.ex2.approx.", EOP_MATH, M_EX2_APPROX},
    {"llvm.nvvm.lg2.approx.", EOP_MATH, M_LG2_APPROX},
    {"llvm.nvvm.sin.approx.", EOP_MATH, M_SIN_APPROX},
    {"llvm.nvvm.cos.approx.", EOP_MATH, M_COS_APPROX},
    {"llvm.nvvm.rsqrt.approx.", EOP_MATH, M_RSQRT_APPROX},
    {"llvm.nvvm.rcp.approx.", EOP_MATH, M_RCP_APPROX},
    {"llvm.nvvm.mulhi.ui", EOP_MATH, M_MULHI_U},
    {"llvm.nvvm.mulhi.ull", EOP_MATH, M_MULHI_U},
    {"llvm.nvvm.mulhi.i", EOP_MATH, M_MULHI_S},
    {"llvm.nvvm.mulhi.ll", EOP_MATH, M_MULHI_S},
    {"llvm.nvvm.f2tf32.rna", EOP_F2TF32, 0},
    /* what LLVM's vectorizers leave of a min/max/mul/xor chain, e.g. a value
     * carried through a loop and combined with the same value every trip
     * (fadd and fmul, ordered with a start value, are not made here) */
    {"llvm.vector.reduce.add.", EOP_VREDUCE_BIN, LLVMAdd},
    {"llvm.vector.reduce.mul.", EOP_VREDUCE_BIN, LLVMMul},
    {"llvm.vector.reduce.and.", EOP_VREDUCE_BIN, LLVMAnd},
    {"llvm.vector.reduce.or.", EOP_VREDUCE_BIN, LLVMOr},
    {"llvm.vector.reduce.xor.", EOP_VREDUCE_BIN, LLVMXor},
    {"llvm.vector.reduce.smin.", EOP_VREDUCE_MATH, M_SMIN},
    {"llvm.vector.reduce.smax.", EOP_VREDUCE_MATH, M_SMAX},
    {"llvm.vector.reduce.umin.", EOP_VREDUCE_MATH, M_UMIN},
    {"llvm.vector.reduce.umax.", EOP_VREDUCE_MATH, M_UMAX},
    {"llvm.vector.reduce.fmin.", EOP_VREDUCE_MATH, M_MINNUM},
    {"llvm.vector.reduce.fmax.", EOP_VREDUCE_MATH, M_MAXNUM},
    {"llvm.vector.reduce.fminimum.", EOP_VREDUCE_MATH, M_MINIMUM},
    {"llvm.vector.reduce.fmaximum.", EOP_VREDUCE_MATH, M_MAXIMUM},
    {"llvm.nvvm.cp.async.commit.group", EOP_CPCOMMIT, 0},
    {"llvm.nvvm.cp.async.wait.group", EOP_CPWAIT, 0},
    {"llvm.nvvm.cp.async.wait.all", EOP_CPWAIT, -1},
    {"llvm.nvvm.setmaxnreg.inc.sync.aligned.u32", EOP_ASYNC, ASYNC_SETMAXNREG_INC},
    {"llvm.nvvm.setmaxnreg.dec.sync.aligned.u32", EOP_ASYNC, ASYNC_SETMAXNREG_DEC},
};

/* Intrinsics that are hints without effect here. */
static const char *const no_effect[] = {"llvm.assume", "llvm.lifetime.start.", "llvm.lifetime.end.",
                                        "llvm.experimental.noalias.scope.decl", "llvm.dbg."};

static bool exact_or_prefix(const char *name, const char *pat) {
    size_t n = strlen(pat);
    return pat[n - 1] == '.' ? !strncmp(name, pat, n) : !strcmp(name, pat);
}

/* The inline asm codegen emits, recognized by exact text and constraints:
 * predicated global loads and stores of one register (b16, b32, b64) or a
 * vector of two or four b32 registers (v2, v4: 8 or 16 bytes, which the
 * PTX ISA requires aligned to the whole vector). A load's operands are the
 * address, the predicate, then the values its registers keep when the
 * predicate is off (tied to the outputs); a store's the address, its
 * registers, then the predicate. */
typedef struct asm_row {
    const char *text, *cons;
    eop op;
    int bytes, regs;
} asm_row;

static const asm_row asms[] = {
    {"@$2 ld.global.b16 $0, [$1];", "=h,l,b,0", EOP_ASM_LD, 2, 1},
    {"@$2 ld.global.b32 $0, [$1];", "=r,l,b,0", EOP_ASM_LD, 4, 1},
    {"@$2 ld.global.b64 $0, [$1];", "=l,l,b,0", EOP_ASM_LD, 8, 1},
    {"@$3 ld.global.v2.b32 {$0, $1}, [$2];", "=r,=r,l,b,0,1", EOP_ASM_LD, 8, 2},
    {"@$5 ld.global.v4.b32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l,b,0,1,2,3", EOP_ASM_LD, 16, 4},
    {"@$2 st.global.b16 [$0], $1;", "l,h,b", EOP_ASM_ST, 2, 1},
    {"@$2 st.global.b32 [$0], $1;", "l,r,b", EOP_ASM_ST, 4, 1},
    {"@$2 st.global.b64 [$0], $1;", "l,l,b", EOP_ASM_ST, 8, 1},
    {"@$3 st.global.v2.b32 [$0], {$1, $2};", "l,r,r,b", EOP_ASM_ST, 8, 2},
    {"@$5 st.global.v4.b32 [$0], {$1, $2, $3, $4};", "l,r,r,r,r,b", EOP_ASM_ST, 16, 4},
    {"fence.acq_rel.gpu;", "~{memory}", EOP_NOP, 0, 0},
};

static uint32_t arg_slot(xlate *x, LLVMValueRef call, unsigned i) { return slot(x, LLVMGetOperand(call, i)); }

/* mma and ldmatrix intrinsic names -> emu_mma kinds (mma.h). */
static bool xlate_tensor_call(xlate *x, LLVMValueRef in, const char *name, uint32_t dst) {
    int kind = emu_mma_kind(name);
    unsigned nargs = LLVMGetNumArgOperands(in);
    if (kind >= 0) {
        emu_inst *e = emit(x, EOP_MMA, in);
        e->sub = (uint16_t)kind;
        e->dst = dst;
        uint32_t at = (uint32_t)(e - x->f->code);
        uint32_t args[3 * EMU_MMA_MAX_REGS];
        if (nargs != emu_mma_nargs(kind) || nargs > EMU_MMA_MAX_REGS) {
            xfail(x, in, "an mma call with %u arguments", nargs);
            return true;
        }
        for (unsigned i = 0; i < nargs; i++) {
            LLVMTypeRef t = LLVMTypeOf(LLVMGetOperand(in, i));
            uint32_t l;
            ek k = elem_of(t, &l);
            args[3 * i] = arg_slot(x, in, i), args[3 * i + 1] = l, args[3 * i + 2] = k;
            if (l * ek_bits[k] != 32) xfail(x, in, "an mma operand that is not 32 bits");
        }
        e = &x->f->code[at]; /* slot() may have grown nothing here, but stay safe */
        e->aux = x->f->naux;
        e->naux = nargs;
        for (unsigned i = 0; i < 3 * nargs; i++) add_aux(x, args[i]);
        return true;
    }
    int ld = emu_ldmatrix_kind(name);
    if (ld >= 0) {
        emu_inst *e = emit(x, EOP_LDMATRIX, in);
        e->sub = (uint16_t)ld;
        e->dst = dst;
        e->a = arg_slot(x, in, 0);
        return true;
    }
    /* llvm.nvvm.cp.async.{ca,cg}.shared.global.{4,8,16}[.s] */
    if (!strncmp(name, "llvm.nvvm.cp.async.c", 20) && strstr(name, ".shared.global.")) {
        const char *p = strstr(name, ".shared.global.") + strlen(".shared.global.");
        int size = atoi(p);
        bool has_size = strstr(p, ".s") != NULL;
        if ((size != 4 && size != 8 && size != 16) || nargs != (has_size ? 3u : 2u)) return false;
        emu_inst *e = emit(x, EOP_CPASYNC, in);
        e->a = arg_slot(x, in, 0);
        e->b = arg_slot(x, in, 1);
        e->c = has_size ? arg_slot(x, in, 2) : UINT32_MAX;
        e->imm = size;
        return true;
    }
    return false;
}

static void xlate_call(xlate *x, LLVMValueRef in, uint32_t dst) {
    LLVMValueRef callee = LLVMGetCalledValue(in);
    unsigned nargs = LLVMGetNumArgOperands(in);
    if (LLVMIsAInlineAsm(callee)) {
        size_t tl, cl;
        const char *text = LLVMGetInlineAsmAsmString(callee, &tl);
        const char *cons = LLVMGetInlineAsmConstraintString(callee, &cl);
        unsigned nops;
        int kind = emu_async_asm_kind(text, tl, cons, cl, &nops);
        if (kind == PTX_ASYNC_ELECT_SYNC) { /* a warp collective, not one thread's */
            emu_inst *e = emit(x, EOP_ELECT, in);
            e->dst = dst;
            return;
        }
        if (kind >= 0) { /* async.c's strings: every operand's slot in aux */
            uint32_t slots[16];
            if (nops != nargs || nargs > 16) {
                xfail(x, in, "an asm call with %u operands where its text takes %u", nargs, nops);
                return;
            }
            for (unsigned i = 0; i < nargs; i++) slots[i] = arg_slot(x, in, i);
            emu_inst *e = emit(x, EOP_ASYNC, in);
            e->sub = (uint16_t)kind;
            e->dst = dst;
            e->aux = x->f->naux;
            e->naux = nargs;
            for (unsigned i = 0; i < nargs; i++) add_aux(x, slots[i]);
            return;
        }
        if (emu_wgmma_xlate_asm(x, in, text, tl, cons, cl, dst)) return;
        for (size_t i = 0; i < sizeof asms / sizeof asms[0]; i++) {
            if (strlen(asms[i].text) != tl || memcmp(asms[i].text, text, tl) || strlen(asms[i].cons) != cl ||
                memcmp(asms[i].cons, cons, cl))
                continue;
            const asm_row *row = &asms[i];
            if (row->op == EOP_NOP) {
                emit(x, EOP_NOP, in);
                return;
            }
            /* a: the address, b: the predicate, aux: the registers (a
             * load's values kept when off, a store's values) */
            bool ld = row->op == EOP_ASM_LD;
            uint32_t addr = arg_slot(x, in, 0), pred = arg_slot(x, in, ld ? 1 : (unsigned)row->regs + 1);
            uint32_t vals[4];
            for (int k = 0; k < row->regs; k++) vals[k] = arg_slot(x, in, (unsigned)(ld ? 2 + k : 1 + k));
            emu_inst *e = emit(x, row->op, in);
            e->dst = dst, e->a = addr, e->b = pred;
            e->imm = row->bytes;
            e->lanes = (uint16_t)row->regs;
            e->aux = x->f->naux;
            e->naux = (uint32_t)row->regs;
            for (int k = 0; k < row->regs; k++) add_aux(x, vals[k]);
            return;
        }
        xfail(x, in, "inline asm the emulator does not know (only the exact strings codegen emits)");
        return;
    }
    size_t len;
    const char *name = LLVMIsAFunction(callee) ? LLVMGetValueName2(callee, &len) : NULL;
    if (!name) {
        xfail(x, in, "an indirect call");
        return;
    }
    if (!strcmp(name, "vprintf")) {
        emu_inst *e = emit(x, EOP_VPRINTF, in);
        e->dst = dst;
        e->a = arg_slot(x, in, 0);
        e->b = arg_slot(x, in, 1);
        return;
    }
    if (!strcmp(name, "llvm.trap")) { /* PTX trap: the launch stops with an error */
        emit(x, EOP_TRAP, in);
        return;
    }
    if (!strcmp(name, "__assertfail")) {
        emu_inst *e = emit(x, EOP_ASSERTFAIL, in);
        e->a = arg_slot(x, in, 0);
        e->b = arg_slot(x, in, 1);
        e->c = arg_slot(x, in, 2);
        e->imm = arg_slot(x, in, 3);
        return;
    }
    if (exact_or_prefix(name, "llvm.arithmetic.fence.")) { /* an optimization barrier: its operand */
        emu_inst *e = emit(x, EOP_COPY, in);
        e->lanes = (uint16_t)type_words(LLVMTypeOf(in)), e->dst = dst, e->a = arg_slot(x, in, 0);
        return;
    }
    for (size_t i = 0; i < sizeof no_effect / sizeof no_effect[0]; i++)
        if (exact_or_prefix(name, no_effect[i])) {
            emit(x, EOP_NOP, in);
            return;
        }
    for (size_t i = 0; i < sizeof intrinsics / sizeof intrinsics[0]; i++) {
        const intrinsic_row *r = &intrinsics[i];
        if (!exact_or_prefix(name, r->prefix)) continue;
        emu_inst *e = emit(x, r->op, in);
        e->sub = (uint16_t)r->sub;
        e->dst = dst;
        uint32_t lanes = 1;
        LLVMTypeRef rt = LLVMGetReturnType(LLVMGetCalledFunctionType(in));
        e->ek2 = LLVMGetTypeKind(rt) == LLVMVoidTypeKind || LLVMGetTypeKind(rt) == LLVMStructTypeKind
                     ? EK_NONE
                     : (uint8_t)elem_of(rt, &lanes);
        e->ek = nargs ? (uint8_t)elem_of(LLVMTypeOf(LLVMGetOperand(in, 0)), &lanes) : e->ek2;
        if (LLVMGetTypeKind(rt) == LLVMVectorTypeKind) lanes = LLVMGetVectorSize(rt);
        e->lanes = (uint16_t)lanes;
        if (nargs > 0) e->a = arg_slot(x, in, 0);
        /* a scalar operand of a vector call is a flag (llvm.abs, ctlz and
         * cttz's i1 "poison" argument), which nothing reads; left 0 so the
         * lanes loop does not read one slot a lane past it */
        bool vec = lanes > 1;
        if (nargs > 1 && (!vec || LLVMGetTypeKind(LLVMTypeOf(LLVMGetOperand(in, 1))) == LLVMVectorTypeKind))
            e->b = arg_slot(x, in, 1);
        if (nargs > 2 && (!vec || LLVMGetTypeKind(LLVMTypeOf(LLVMGetOperand(in, 2))) == LLVMVectorTypeKind))
            e->c = arg_slot(x, in, 2);
        if (r->op == EOP_MATH) e->imm = strstr(name, ".ftz") != NULL; /* flush subnormals */
        if (r->op == EOP_SHFL) {
            if (nargs != 4 || LLVMGetTypeKind(rt) == LLVMStructTypeKind) {
                xfail(x, in, "a shuffle form the emulator does not know");
                return;
            }
            e->imm = arg_slot(x, in, 3);
        }
        if (r->op == EOP_CPWAIT && r->sub == 0) {
            LLVMValueRef n = LLVMGetOperand(in, 0);
            if (!LLVMIsAConstantInt(n)) xfail(x, in, "cp.async.wait_group needs a constant");
            else e->imm = LLVMConstIntGetZExtValue(n);
        } else if (r->op == EOP_CPWAIT) {
            e->imm = 0;
        }
        return;
    }
    if (xlate_tensor_call(x, in, name, dst)) return;
    xfail(x, in, "a call the emulator does not know ('%s')", name);
}

/* Copies into the phis of `to` for the edge from `from`: aux gets
 * [target pc block key, count, (dst, src, words) ...]; returns its index. */
static uint32_t edge(xlate *x, LLVMBasicBlockRef from, LLVMBasicBlockRef to, LLVMValueRef at) {
    uint32_t *pc = map_find(x, LLVMBasicBlockAsValue(to));
    uint32_t start = add_aux(x, pc ? *pc : 0);
    uint32_t count = add_aux(x, 0);
    for (LLVMValueRef phi = LLVMGetFirstInstruction(to); phi && LLVMIsAPHINode(phi);
         phi = LLVMGetNextInstruction(phi)) {
        unsigned n = LLVMCountIncoming(phi);
        LLVMValueRef v = NULL;
        for (unsigned i = 0; i < n && !v; i++)
            if (LLVMGetIncomingBlock(phi, i) == from) v = LLVMGetIncomingValue(phi, i);
        if (!v) {
            xfail(x, at, "a phi without a value for this edge");
            return start;
        }
        uint32_t d = slot(x, phi), s = slot(x, v), w = type_words(LLVMTypeOf(phi));
        add_aux(x, d), add_aux(x, s), add_aux(x, w);
        x->f->aux[count]++;
    }
    return start;
}

static uint16_t binop_of(LLVMOpcode op) { return (uint16_t)op; }

static void xlate_inst(xlate *x, LLVMValueRef in) {
    LLVMOpcode op = LLVMGetInstructionOpcode(in);
    LLVMTypeRef ty = LLVMTypeOf(in);
    uint32_t *ds = map_find(x, in);
    uint32_t dst = ds ? *ds : 0;
    uint32_t lanes = 1;
    ek rek = LLVMGetTypeKind(ty) == LLVMVoidTypeKind ? EK_NONE : elem_of(ty, &lanes);
    unsigned nops = (unsigned)LLVMGetNumOperands(in);
    emu_inst *e;
    switch (op) {
    case LLVMPHI: return; /* on the edges */
    case LLVMBr: {
        LLVMBasicBlockRef from = LLVMGetInstructionParent(in);
        if (!LLVMIsConditional(in)) {
            uint32_t ed = edge(x, from, LLVMGetSuccessor(in, 0), in);
            e = emit(x, EOP_BR, in);
            e->aux = ed;
        } else {
            uint32_t cond = slot(x, LLVMGetCondition(in));
            uint32_t e0 = edge(x, from, LLVMGetSuccessor(in, 0), in), e1 = edge(x, from, LLVMGetSuccessor(in, 1), in);
            e = emit(x, EOP_CONDBR, in);
            e->a = cond;
            e->aux = e0;
            e->naux = e1;
        }
        return;
    }
    case LLVMSwitch: {
        LLVMBasicBlockRef from = LLVMGetInstructionParent(in);
        uint32_t cond = slot(x, LLVMGetOperand(in, 0)), l; /* LLVMGetCondition is for br only */
        ek cek = elem_of(LLVMTypeOf(LLVMGetOperand(in, 0)), &l);
        unsigned ncases = LLVMGetNumSuccessors(in) - 1;
        uint32_t *edges = calloc(ncases + 1, sizeof *edges);
        if (!edges) abort();
        for (unsigned i = 0; i <= ncases; i++) edges[i] = edge(x, from, LLVMGetSuccessor(in, i), in);
        uint32_t table = add_aux(x, ncases);
        add_aux(x, edges[0]);
        for (unsigned i = 0; i < ncases; i++) {
            uint64_t v = LLVMConstIntGetZExtValue(LLVMGetOperand(in, 2 + 2 * i));
            add_aux(x, (uint32_t)v), add_aux(x, (uint32_t)(v >> 32)), add_aux(x, edges[i + 1]);
        }
        free(edges);
        e = emit(x, EOP_SWITCH, in);
        e->a = cond, e->ek = (uint8_t)cek, e->aux = table;
        return;
    }
    case LLVMRet: emit(x, EOP_RET, in); return;
    case LLVMUnreachable: emit(x, EOP_UNREACHABLE, in); return;
    case LLVMAdd: case LLVMSub: case LLVMMul: case LLVMUDiv: case LLVMSDiv: case LLVMURem: case LLVMSRem:
    case LLVMShl: case LLVMLShr: case LLVMAShr: case LLVMAnd: case LLVMOr: case LLVMXor:
    case LLVMFAdd: case LLVMFSub: case LLVMFMul: case LLVMFDiv: case LLVMFRem: {
        uint32_t a = slot(x, LLVMGetOperand(in, 0)), b = slot(x, LLVMGetOperand(in, 1));
        e = emit(x, EOP_BIN, in);
        e->sub = binop_of(op);
        e->ek = (uint8_t)rek;
        e->lanes = (uint16_t)lanes;
        e->dst = dst, e->a = a, e->b = b;
        return;
    }
    case LLVMFNeg: {
        uint32_t a = slot(x, LLVMGetOperand(in, 0));
        e = emit(x, EOP_FNEG, in);
        e->ek = (uint8_t)rek, e->lanes = (uint16_t)lanes, e->dst = dst, e->a = a;
        return;
    }
    case LLVMICmp: case LLVMFCmp: {
        uint32_t a = slot(x, LLVMGetOperand(in, 0)), b = slot(x, LLVMGetOperand(in, 1));
        uint32_t l;
        ek oek = elem_of(LLVMTypeOf(LLVMGetOperand(in, 0)), &l);
        e = emit(x, op == LLVMICmp ? EOP_ICMP : EOP_FCMP, in);
        e->sub = (uint16_t)(op == LLVMICmp ? (int)LLVMGetICmpPredicate(in) : (int)LLVMGetFCmpPredicate(in));
        e->ek = (uint8_t)oek, e->lanes = (uint16_t)lanes, e->dst = dst, e->a = a, e->b = b;
        return;
    }
    case LLVMSelect: {
        uint32_t c = slot(x, LLVMGetOperand(in, 0)), a = slot(x, LLVMGetOperand(in, 1)), b = slot(x, LLVMGetOperand(in, 2));
        uint32_t cl;
        elem_of(LLVMTypeOf(LLVMGetOperand(in, 0)), &cl);
        e = emit(x, EOP_SELECT, in);
        e->lanes = (uint16_t)type_words(ty);
        e->imm = cl; /* 1: one condition for every word */
        e->dst = dst, e->a = a, e->b = b, e->c = c;
        return;
    }
    case LLVMTrunc: case LLVMZExt: case LLVMSExt: case LLVMFPTrunc: case LLVMFPExt: case LLVMFPToSI:
    case LLVMFPToUI: case LLVMSIToFP: case LLVMUIToFP: case LLVMPtrToInt: case LLVMIntToPtr: {
        uint32_t a = slot(x, LLVMGetOperand(in, 0)), l;
        ek sek = elem_of(LLVMTypeOf(LLVMGetOperand(in, 0)), &l);
        LLVMTypeRef pt = op == LLVMPtrToInt ? LLVMTypeOf(LLVMGetOperand(in, 0)) : op == LLVMIntToPtr ? ty : NULL;
        if (pt && LLVMGetTypeKind(pt) == LLVMVectorTypeKind) pt = LLVMGetElementType(pt);
        e = emit(x, EOP_CAST, in);
        e->sub = (uint16_t)op;
        e->ek = (uint8_t)sek, e->ek2 = (uint8_t)rek, e->lanes = (uint16_t)lanes, e->dst = dst, e->a = a;
        e->imm = pt ? LLVMGetPointerAddressSpace(pt) : 0; /* 3: a shared pointer as its window offset */
        return;
    }
    case LLVMAddrSpaceCast: {
        uint32_t a = slot(x, LLVMGetOperand(in, 0));
        e = emit(x, EOP_ASCAST, in);
        e->lanes = (uint16_t)lanes, e->dst = dst, e->a = a;
        e->imm = LLVMGetPointerAddressSpace(LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? LLVMGetElementType(ty) : ty);
        return;
    }
    case LLVMFreeze: {
        uint32_t a = slot(x, LLVMGetOperand(in, 0));
        e = emit(x, EOP_COPY, in);
        e->lanes = (uint16_t)type_words(ty), e->dst = dst, e->a = a;
        return;
    }
    case LLVMBitCast: {
        uint32_t a = slot(x, LLVMGetOperand(in, 0)), sl;
        ek sek = elem_of(LLVMTypeOf(LLVMGetOperand(in, 0)), &sl);
        if (sek == EK_NONE || rek == EK_NONE || (uint64_t)sl * ek_bytes[sek] > MAX_BITCAST_BYTES ||
            sek == EK_I1 || rek == EK_I1) {
            xfail(x, in, "a bitcast the emulator does not know");
            return;
        }
        e = emit(x, EOP_BITCAST, in);
        e->ek = (uint8_t)sek, e->ek2 = (uint8_t)rek, e->lanes = (uint16_t)lanes, e->imm = sl, e->dst = dst, e->a = a;
        return;
    }
    case LLVMGetElementPtr: {
        if (LLVMGetTypeKind(ty) == LLVMVectorTypeKind) {
            xfail(x, in, "a vector GEP");
            return;
        }
        uint32_t base = slot(x, LLVMGetOperand(in, 0));
        LLVMTypeRef t = LLVMGetGEPSourceElementType(in);
        int64_t off = 0;
        uint32_t terms[64][3], nterms = 0;
        for (unsigned i = 1; i < nops; i++) {
            LLVMValueRef idx = LLVMGetOperand(in, i);
            uint64_t scale;
            if (i == 1) {
                scale = LLVMABISizeOfType(x->m->td, t);
            } else if (LLVMGetTypeKind(t) == LLVMStructTypeKind) {
                unsigned k = (unsigned)LLVMConstIntGetZExtValue(idx);
                off += (int64_t)LLVMOffsetOfElement(x->m->td, t, k);
                t = LLVMStructGetTypeAtIndex(t, k);
                continue;
            } else {
                t = LLVMGetElementType(t);
                scale = LLVMABISizeOfType(x->m->td, t);
            }
            if (LLVMIsAConstantInt(idx)) {
                off += LLVMConstIntGetSExtValue(idx) * (int64_t)scale;
            } else {
                uint32_t l;
                ek iek = elem_of(LLVMTypeOf(idx), &l);
                if (nterms == 64 || l != 1) {
                    xfail(x, in, "a GEP the emulator does not know");
                    return;
                }
                terms[nterms][0] = slot(x, idx), terms[nterms][1] = (uint32_t)scale, terms[nterms][2] = iek;
                nterms++;
            }
        }
        e = emit(x, EOP_GEP, in);
        e->dst = dst, e->a = base, e->imm = off, e->naux = nterms, e->aux = x->f->naux;
        for (uint32_t i = 0; i < nterms; i++) add_aux(x, terms[i][0]), add_aux(x, terms[i][1]), add_aux(x, terms[i][2]);
        return;
    }
    case LLVMLoad: case LLVMStore: {
        LLVMValueRef ptr = LLVMGetOperand(in, op == LLVMLoad ? 0 : 1);
        LLVMTypeRef vt = op == LLVMLoad ? ty : LLVMTypeOf(LLVMGetOperand(in, 0));
        uint32_t l;
        ek vek = elem_of(vt, &l);
        if (vek == EK_NONE) {
            xfail(x, in, "a load or store of a type the emulator does not know");
            return;
        }
        uint32_t p = slot(x, ptr), v = op == LLVMStore ? slot(x, LLVMGetOperand(in, 0)) : 0;
        e = emit(x, op == LLVMLoad ? EOP_LOAD : EOP_STORE, in);
        e->ek = (uint8_t)vek, e->lanes = (uint16_t)l, e->a = p, e->b = v, e->dst = dst;
        e->imm = LLVMGetAlignment(in) ? LLVMGetAlignment(in) : 1;
        return;
    }
    case LLVMAlloca: {
        LLVMTypeRef at = LLVMGetAllocatedType(in);
        LLVMValueRef count = LLVMGetOperand(in, 0);
        LLVMBasicBlockRef bb = LLVMGetInstructionParent(in);
        if (!LLVMIsAConstantInt(count) || bb != LLVMGetEntryBasicBlock(LLVMGetBasicBlockParent(bb))) {
            xfail(x, in, "an alloca outside the entry block or of a variable size");
            return;
        }
        uint64_t align = LLVMGetAlignment(in) ? LLVMGetAlignment(in) : 8;
        uint64_t size = LLVMABISizeOfType(x->m->td, at) * LLVMConstIntGetZExtValue(count);
        x->f->local_size = (x->f->local_size + align - 1) / align * align;
        e = emit(x, EOP_ALLOCA, in);
        e->dst = dst, e->imm = (int64_t)x->f->local_size;
        x->f->local_size += size;
        return;
    }
    case LLVMExtractElement: case LLVMInsertElement: {
        bool ins = op == LLVMInsertElement;
        uint32_t vec = slot(x, LLVMGetOperand(in, 0)), v = ins ? slot(x, LLVMGetOperand(in, 1)) : 0;
        LLVMValueRef idx = LLVMGetOperand(in, ins ? 2 : 1);
        uint32_t il, vl;
        ek iek = elem_of(LLVMTypeOf(idx), &il);
        elem_of(LLVMTypeOf(LLVMGetOperand(in, 0)), &vl);
        uint32_t is = slot(x, idx);
        e = emit(x, ins ? EOP_INSERTELT : EOP_EXTRACTELT, in);
        e->dst = dst, e->a = vec, e->b = v, e->c = is, e->ek2 = (uint8_t)iek, e->lanes = (uint16_t)vl;
        return;
    }
    case LLVMShuffleVector: {
        uint32_t a = slot(x, LLVMGetOperand(in, 0)), b = slot(x, LLVMGetOperand(in, 1)), al;
        elem_of(LLVMTypeOf(LLVMGetOperand(in, 0)), &al);
        unsigned n = LLVMGetNumMaskElements(in);
        uint32_t start = x->f->naux;
        for (unsigned i = 0; i < n; i++) {
            int mv = LLVMGetMaskValue(in, i);
            add_aux(x, mv == LLVMGetUndefMaskElem() ? UINT32_MAX : (uint32_t)mv);
        }
        e = emit(x, EOP_SHUFFLE, in);
        e->dst = dst, e->a = a, e->b = b, e->aux = start, e->naux = n, e->imm = al;
        return;
    }
    case LLVMExtractValue: case LLVMInsertValue: {
        bool ins = op == LLVMInsertValue;
        LLVMValueRef agg = LLVMGetOperand(in, 0);
        LLVMTypeRef t = LLVMTypeOf(agg);
        uint32_t woff = 0;
        const unsigned *idx = LLVMGetIndices(in);
        for (unsigned i = 0; i < LLVMGetNumIndices(in); i++) {
            if (LLVMGetTypeKind(t) == LLVMStructTypeKind) {
                for (unsigned k = 0; k < idx[i]; k++) woff += type_words(LLVMStructGetTypeAtIndex(t, k));
                t = LLVMStructGetTypeAtIndex(t, idx[i]);
            } else {
                t = LLVMGetElementType(t);
                woff += idx[i] * type_words(t);
            }
        }
        uint32_t a = slot(x, agg), v = ins ? slot(x, LLVMGetOperand(in, 1)) : 0;
        e = emit(x, ins ? EOP_INSERTVALUE : EOP_EXTRACTVALUE, in);
        e->dst = dst, e->a = a, e->b = v, e->imm = woff;
        e->lanes = (uint16_t)type_words(LLVMTypeOf(agg));
        e->naux = type_words(t);
        return;
    }
    case LLVMAtomicRMW: {
        uint32_t p = slot(x, LLVMGetOperand(in, 0)), v = slot(x, LLVMGetOperand(in, 1));
        e = emit(x, EOP_ATOMICRMW, in);
        e->sub = (uint16_t)LLVMGetAtomicRMWBinOp(in);
        e->ek = (uint8_t)rek, e->dst = dst, e->a = p, e->b = v;
        if (lanes != 1) xfail(x, in, "a vector atomic");
        return;
    }
    case LLVMAtomicCmpXchg: {
        uint32_t p = slot(x, LLVMGetOperand(in, 0)), c = slot(x, LLVMGetOperand(in, 1)), v = slot(x, LLVMGetOperand(in, 2));
        uint32_t l;
        ek vek = elem_of(LLVMTypeOf(LLVMGetOperand(in, 1)), &l);
        e = emit(x, EOP_CMPXCHG, in);
        e->ek = (uint8_t)vek, e->dst = dst, e->a = p, e->b = c, e->c = v;
        return;
    }
    case LLVMCall: xlate_call(x, in, dst); return;
    case LLVMFence: emit(x, EOP_NOP, in); return;
    default: xfail(x, in, "an instruction the emulator does not know"); return;
    }
}

/* maxntidx of each kernel from !nvvm.annotations; 0 for a function that
 * is not a kernel. *maxnreg: its "maxnreg" (the registers a thread has at
 * launch, PTX's .maxnreg), 0 if it has none. */
uint32_t emu_func_threads(LLVMModuleRef mod, LLVMValueRef fn, bool *is_kernel, uint32_t *maxnreg) {
    unsigned n = LLVMGetNamedMetadataNumOperands(mod, "nvvm.annotations");
    LLVMValueRef *nodes = calloc(n + 1, sizeof *nodes);
    if (!nodes) abort();
    LLVMGetNamedMetadataOperands(mod, "nvvm.annotations", nodes);
    uint32_t threads = 0;
    *is_kernel = false;
    *maxnreg = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned k = LLVMGetMDNodeNumOperands(nodes[i]);
        LLVMValueRef ops[16];
        if (k > 16) continue;
        LLVMGetMDNodeOperands(nodes[i], ops);
        if (ops[0] != fn) continue;
        for (unsigned j = 1; j + 1 < k; j += 2) {
            unsigned len;
            const char *key = ops[j] ? LLVMGetMDString(ops[j], &len) : NULL;
            if (!key || !LLVMIsAConstantInt(ops[j + 1])) continue;
            if (len == 6 && !memcmp(key, "kernel", 6)) *is_kernel = true;
            if (len == 8 && !memcmp(key, "maxntidx", 8)) threads = (uint32_t)LLVMConstIntGetZExtValue(ops[j + 1]);
            if (len == 7 && !memcmp(key, "maxnreg", 7)) *maxnreg = (uint32_t)LLVMConstIntGetZExtValue(ops[j + 1]);
        }
    }
    free(nodes);
    return threads;
}

emu_func *emu_xlate_func(xlate *x, LLVMValueRef fn, uint32_t threads) {
    emu_func *f = calloc(1, sizeof *f);
    if (!f) abort();
    size_t len;
    f->name = strdup(LLVMGetValueName2(fn, &len));
    f->threads = threads;
    x->f = f;
    x->mapn = 0;
    if (x->map) memset(x->map, 0, x->mapcap * sizeof *x->map);
    f->nparams = LLVMCountParams(fn);
    if (f->nparams > EMU_MAX_ARGS) {
        xfail(x, NULL, "more than %d parameters", EMU_MAX_ARGS);
        return f;
    }
    for (uint32_t i = 0; i < f->nparams; i++) {
        LLVMValueRef p = LLVMGetParam(fn, i);
        uint32_t l;
        ek pek = elem_of(LLVMTypeOf(p), &l);
        if (pek == EK_NONE || l != 1) {
            xfail(x, p, "a parameter of a type the emulator does not know");
            return f;
        }
        f->param_slot[i] = new_words(x, 1);
        f->param_ek[i] = (uint8_t)pek;
        size_t nlen;
        const char *pname = LLVMGetValueName2(p, &nlen);
        if (nlen && !(f->param_name[i] = strndup(pname, nlen))) abort();
        map_put(x, p, f->param_slot[i]);
    }
    /* slots for every value and a pc for every block, before any operand is read */
    uint32_t pc = 0;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
        map_put(x, LLVMBasicBlockAsValue(bb), pc);
        for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
            if (!LLVMIsAPHINode(in)) pc++;
            LLVMTypeRef t = LLVMTypeOf(in);
            if (LLVMGetTypeKind(t) == LLVMVoidTypeKind) continue;
            uint32_t w = type_words(t);
            if (!w) {
                xfail(x, in, "a value of a type the emulator does not know");
                return f;
            }
            map_put(x, in, new_words(x, w));
        }
    }
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb && !x->failed; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in && !x->failed; in = LLVMGetNextInstruction(in))
            xlate_inst(x, in);
    return f;
}

/* For the files that translate their own calls (wgmma.c). */
emu_inst *emu_xemit(xlate *x, eop op, LLVMValueRef src) { return emit(x, op, src); }
uint32_t emu_xslot(xlate *x, LLVMValueRef v) { return slot(x, v); }
uint32_t emu_xaux(xlate *x, uint32_t v) { return add_aux(x, v); }
void emu_xfail(xlate *x, LLVMValueRef at, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    xfail(x, at, "%s", msg);
}
