/* op.c - the op table, generated from ops.def, and the element types
 * the atomic ops and dot take. */
#include <string.h>

#include "tileir/tileir.h"

const tir_opinfo tir_ops[TIR_OP_COUNT] = {
#define OP(name, text, nmin, nmax, nres, flags, attr) {text, nmin, nmax, nres, flags, attr},
#include "tileir/ops.def"
#undef OP
};

bool tir_opcode_from_name(const char *s, size_t n, tir_opcode *out) {
    for (int i = 0; i < TIR_OP_COUNT; i++)
        if (strlen(tir_ops[i].name) == n && !memcmp(tir_ops[i].name, s, n)) {
            *out = (tir_opcode)i;
            return true;
        }
    return false;
}

/* add: the types PTX's atom.add has (f16 and bf16 natively on sm_90; LLVM
 * turns bf16 into a compare-and-swap loop on sm_80). max and min: signed
 * integers natively, floats by a compare-and-swap loop (codegen). xchg
 * and cas: 32- and 64-bit words. Narrower integers and i1 would need
 * sub-word emulation, which nobody has asked for. */
bool tir_atomic_supports(tir_opcode code, tir_elem e) {
    bool words = e == TIR_I32 || e == TIR_I64 || e == TIR_F32 || e == TIR_F64;
    switch (code) {
    case TIR_OP_ATOMIC_ADD: return words || e == TIR_F16 || e == TIR_BF16;
    case TIR_OP_ATOMIC_MAX:
    case TIR_OP_ATOMIC_MIN:
    case TIR_OP_ATOMIC_XCHG:
    case TIR_OP_ATOMIC_CAS: return words;
    default: return false;
    }
}

const char *tir_atomic_types(tir_opcode code) {
    return code == TIR_OP_ATOMIC_ADD ? "i32, i64, f16, bf16, f32 and f64" : "i32, i64, f32 and f64";
}

/* dot: the input/accumulator pairs mma.sync has on sm_80 and later (f16,
 * bf16 and tf32 into f32; s8 into s32). f32 inputs go through the tf32
 * instruction unless the op is dot_ieee. */
tir_elem tir_dot_acc_elem(tir_elem in) {
    switch (in) {
    case TIR_F16: case TIR_BF16: case TIR_F32: return TIR_F32;
    case TIR_I8: return TIR_I32;
    default: return TIR_ELEM_COUNT;
    }
}
