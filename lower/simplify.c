/* simplify.c - constant folding, identities and dead-code elimination.
 *
 * One forward walk folds integer ops whose operands are constants (scalar
 * or splatted) into constants, turns `splat` of a constant into a constant
 * tile, and replaces x+0, x-0, x*1, x/1 by x. Then ops without side effects
 * (loads included, atomics not) whose results nobody uses are removed,
 * last to first, counting uses once up front so the whole pass stays
 * linear. */
#include <string.h>

#include "lower/lower.h"

typedef struct simplify_ctx {
    tir_func *f;
    uint32_t *uses; /* by value id */
} simplify_ctx;

static bool const_int(const tir_value *v, int64_t *out) {
    if (!v->def || v->def->code != TIR_OP_CONST || !tir_elem_is_int(tir_type_elem(v->type))) return false;
    *out = v->def->attr.ival;
    return true;
}

static bool fold(tir_opcode code, int64_t a, int64_t b, unsigned bits, int64_t *r) {
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (code) {
    case TIR_OP_ADD: *r = (int64_t)(ua + ub); return true;
    case TIR_OP_SUB: *r = (int64_t)(ua - ub); return true;
    case TIR_OP_MUL: *r = (int64_t)(ua * ub); return true;
    case TIR_OP_AND: *r = a & b; return true;
    case TIR_OP_OR: *r = a | b; return true;
    case TIR_OP_XOR: *r = a ^ b; return true;
    case TIR_OP_DIV:
    case TIR_OP_REM:
        if (b == 0 || (b == -1 && bits == 64 && a == INT64_MIN)) return false; /* keep runtime behaviour */
        *r = code == TIR_OP_DIV ? a / b : a % b;
        return true;
    case TIR_OP_EQ: *r = a == b; return true;
    case TIR_OP_NE: *r = a != b; return true;
    case TIR_OP_LT: *r = a < b; return true;
    case TIR_OP_LE: *r = a <= b; return true;
    case TIR_OP_GT: *r = a > b; return true;
    case TIR_OP_GE: *r = a >= b; return true;
    default: return false;
    }
}

static void replace(simplify_ctx *c, tir_op *op, tir_value *with) {
    tir_replace_all_uses(c->f, op->results[0], with);
}

static void fold_op(tir_op *op, void *p) {
    simplify_ctx *c = p;
    if (!op->parent || op->nresults != 1) return;
    tir_value *r = op->results[0];
    int64_t a = 0, b = 0, v = 0;
    if (op->code == TIR_OP_SPLAT && op->operands[0]->def && op->operands[0]->def->code == TIR_OP_CONST) {
        /* a constant tile: later folds and codegen see the value directly */
        op->code = TIR_OP_CONST;
        op->attr = op->operands[0]->def->attr;
        op->noperands = 0;
        return;
    }
    if (op->noperands != 2 || !(tir_ops[op->code].flags & TIR_F_ELEMENTWISE) || (tir_ops[op->code].flags & TIR_F_WRITES))
        return;
    bool ca = const_int(op->operands[0], &a), cb = const_int(op->operands[1], &b);
    tir_elem el = tir_type_elem(op->operands[0]->type);
    if (ca && cb && tir_elem_is_int(el) && fold(op->code, a, b, tir_elem_bits(el), &v)) {
        op->code = TIR_OP_CONST;
        op->attr.ival = tir_wrap_int(v, tir_type_elem(r->type));
        op->noperands = 0;
        return;
    }
    /* identities on integers (floats: x+0 is not x for -0.0) */
    if (!tir_elem_is_int(el) || !tir_type_eq(op->operands[0]->type, r->type)) return;
    if (cb && ((b == 0 && (op->code == TIR_OP_ADD || op->code == TIR_OP_SUB || op->code == TIR_OP_OR ||
                           op->code == TIR_OP_XOR || op->code == TIR_OP_SHL || op->code == TIR_OP_SHR)) ||
               (b == 1 && el != TIR_I1 && (op->code == TIR_OP_MUL || op->code == TIR_OP_DIV))))
        replace(c, op, op->operands[0]);
    else if (ca && tir_type_eq(op->operands[1]->type, r->type) &&
             ((a == 0 && (op->code == TIR_OP_ADD || op->code == TIR_OP_OR || op->code == TIR_OP_XOR)) ||
              (a == 1 && el != TIR_I1 && op->code == TIR_OP_MUL)))
        replace(c, op, op->operands[1]);
}

static void count_uses(tir_op *op, void *p) {
    simplify_ctx *c = p;
    for (uint32_t i = 0; i < op->noperands; i++) c->uses[op->operands[i]->id]++;
}

static bool removable(const simplify_ctx *c, const tir_op *op) {
    unsigned fl = tir_ops[op->code].flags;
    /* a load is removable; an atomic (which reads and writes) is not */
    if (!(fl & (TIR_F_PURE | TIR_F_READS)) || (fl & TIR_F_WRITES) || op->body || op->nresults == 0) return false;
    for (uint32_t i = 0; i < op->nresults; i++)
        if (c->uses[op->results[i]->id]) return false;
    return true;
}

static void dce_block(simplify_ctx *c, tir_block *blk) {
    for (tir_op *op = blk->last, *prev; op; op = prev) {
        prev = op->prev;
        if (op->body) dce_block(c, op->body);
        if (op->body2) dce_block(c, op->body2);
        if (!removable(c, op)) continue;
        for (uint32_t i = 0; i < op->noperands; i++) c->uses[op->operands[i]->id]--;
        tir_op_remove(op);
    }
}

bool lower_simplify(tir_module *m, const lower_options *opt, tc_diag *diag) {
    for (tir_func *f = m->funcs; f; f = f->next) {
        tc_arena *a = tc_arena_new();
        simplify_ctx c = {.f = f};
        tir_walk(f, fold_op, &c);
        c.uses = TC_NEW_ARRAY(a, uint32_t, f->next_value_id + 1);
        tir_walk(f, count_uses, &c);
        dce_block(&c, f->body);
        tc_arena_free(a);
    }
    return true;
}
