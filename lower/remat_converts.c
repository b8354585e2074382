/* remat_converts.c - a layout conversion of a tile that a few cheap ops
 * build from scalars is replaced by those ops built again in the wanted
 * layout (issue 20).
 *
 * A conversion moves a tile through shared memory between two barriers
 * (codegen's scratch area). Where the tile is index arithmetic, `start +
 * arange(0, BLOCK_N)`, every thread can compute the elements the new
 * layout gives it at the cost of an add a register. Attention's loop
 * builds its key columns once, for the loads of k and v (a blocked
 * layout) and for the masks on the scores (the mma layout's slice): the
 * conversion between the two was two barriers on every trip.
 *
 * For each convert_layout in a loop's body (one outside runs once: its
 * barriers cost little, and the copy's registers could cost more, where
 * the stdlib matmul is at 255 registers) whose operand v is
 * rematerializable (below) and
 * whose result layout is not a dot operand's (the DOT_OP layout is tied
 * to one element type, which the ops building v need not have), the ops
 * building v are built again right before the conversion with every tile
 * result in the conversion's layout, and the conversion's uses read the
 * copy; the conversion goes (an expand_dims in the tree builds from its
 * operand in the wanted layout's slice, a broadcast keeps the layout, and
 * another conversion in the tree, one hoisted before the loop, is looked
 * through).
 * Rematerializable: made by a pure op from the list below, elementwise,
 * a shape op or making a tile from nothing but scalars, whose tile
 * operands are rematerializable in turn (scalars are read as they are),
 * at most REMAT_CONVERT_MAX_OPS ops in all. The
 * scalars dominate the conversion, since v does. The original stays for
 * its other uses (codegen drops it if it has none). */
#include "lower/lower.h"

enum {
    REMAT_CONVERT_MAX_OPS = 8 /* ops a copy may take: a conversion costs two barriers and a store
                                 and a load a register; eight integer ops a register cost less */
};

/* Ops whose tiles all have one shape, cheap to compute again. */
static bool cheap_op(tir_opcode code) {
    switch (code) {
    case TIR_OP_CONST: case TIR_OP_ARANGE: case TIR_OP_SPLAT: case TIR_OP_ADD: case TIR_OP_SUB: case TIR_OP_MUL:
    case TIR_OP_MIN: case TIR_OP_MAX: case TIR_OP_AND: case TIR_OP_OR: case TIR_OP_XOR: case TIR_OP_EQ:
    case TIR_OP_NE: case TIR_OP_LT: case TIR_OP_LE: case TIR_OP_GT: case TIR_OP_GE: case TIR_OP_CAST:
    case TIR_OP_ADDPTR: case TIR_OP_SELECT: case TIR_OP_EXPAND_DIMS: case TIR_OP_BROADCAST:
        return true;
    default: return false;
    }
}

/* The layout operand i of op takes when op's result takes `want`: the
 * same, but for expand_dims, whose operand takes want's slice along the
 * new dim (what the verifier asks). */
static tir_layout operand_layout(const tir_op *op, const tir_layout *want) {
    return op->code == TIR_OP_EXPAND_DIMS ? tir_layout_slice(want, (unsigned)op->attr.axis) : *want;
}

/* Ops a copy of v takes (0: v is a scalar, read as it is), or more than
 * `budget` when it cannot be copied. */
static uint32_t cost(const tir_value *v, const tir_layout *want, uint32_t budget) {
    if (!v->type.rank) return 0;
    const tir_op *op = v->def;
    /* a conversion in the tree (one hoisted before the loop) is looked
     * through: its operand is built in the wanted layout */
    if (op && op->code == TIR_OP_CONVERT_LAYOUT) return cost(op->operands[0], want, budget);
    if (!op || !cheap_op(op->code) || op->body || op->nresults != 1) return budget + 1;
    /* expand_dims builds a blocked or mma tile from its slice */
    if (op->code == TIR_OP_EXPAND_DIMS && want->kind != TIR_LAYOUT_BLOCKED && want->kind != TIR_LAYOUT_MMA)
        return budget + 1;
    tir_layout w = operand_layout(op, want);
    uint32_t n = 1;
    for (uint32_t i = 0; i < op->noperands && n <= budget; i++) n += cost(op->operands[i], &w, budget - n);
    return n;
}

static tir_value *copy(tir_builder *b, tir_value *v, const tir_layout *want) {
    if (!v->type.rank) return v;
    const tir_op *op = v->def;
    if (op->code == TIR_OP_CONVERT_LAYOUT) return copy(b, op->operands[0], want);
    tir_value *ops[TIR_MAX_OPERANDS];
    tir_layout w = operand_layout(op, want);
    for (uint32_t i = 0; i < op->noperands; i++) ops[i] = copy(b, op->operands[i], &w);
    tir_type t = v->type;
    t.layout = *want;
    tir_op *n = tir_build_op(b, op->code, op->noperands, ops, 1, &t);
    n->attr = op->attr;
    n->loc = op->loc;
    return n->results[0];
}

/* Whether op is in the body of a loop, at any depth. */
static bool in_loop(const tir_op *op) {
    for (const tir_op *o = op->parent ? op->parent->parent : NULL; o; o = o->parent ? o->parent->parent : NULL)
        if (o->code == TIR_OP_FOR || o->code == TIR_OP_WHILE) return true;
    return false;
}

/* The walk's find (p: a tir_op **): one conversion at a time, since
 * rewriting moves ops. */
static void find_one(tir_op *op, void *p) {
    tir_op **found = p;
    if (*found || op->code != TIR_OP_CONVERT_LAYOUT || !in_loop(op)) return;
    const tir_layout *want = &op->results[0]->type.layout;
    if (want->kind == TIR_LAYOUT_DOT_OP || want->kind == TIR_LAYOUT_SHARED) return;
    if (cost(op->operands[0], want, REMAT_CONVERT_MAX_OPS) > REMAT_CONVERT_MAX_OPS) return;
    *found = op;
}

bool lower_remat_converts(tir_module *m, const lower_options *opt, tc_diag *diag) {
    (void)opt, (void)diag;
    for (tir_func *f = m->funcs; f; f = f->next) {
        for (;;) {
            tir_op *cv = NULL;
            tir_walk(f, find_one, &cv);
            if (!cv) break;
            tir_builder b = {.module = m, .func = f, .block = cv->parent, .loc = cv->loc};
            tir_builder_before(&b, cv);
            tir_value *fresh = copy(&b, cv->operands[0], &cv->results[0]->type.layout);
            if (cv->results[0]->name) fresh->name = cv->results[0]->name;
            tir_replace_all_uses(f, cv->results[0], fresh);
            tir_op_remove(cv);
        }
    }
    return true;
}
