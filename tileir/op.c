/* op.c - the op table, generated from ops.def. */
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
