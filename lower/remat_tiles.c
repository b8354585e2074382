/* remat_tiles.c - a tile computed before a loop from scalars by a few
 * cheap ops, and used after the loop, is computed again after it, so that
 * it does not hold registers through the loop (issue 19).
 *
 * A matmul computes its row and column indices, `rm = pid_m * BM +
 * arange(0, BM)`, before its K loop (the loads' offsets need them) and
 * uses them again in the epilogue (C's offsets and edge masks). Those
 * tiles take a few registers a thread each for the whole loop, beside the
 * accumulator and the operand fragments, where ptxas is shortest of
 * registers; it spilled them around the loop (the stdlib matmul at
 * 128x128x32 with a K mask: 32 bytes on sm_80). Scalars are one uniform
 * register each and stay as they are.
 *
 * For each `for` and `while` op L and each use after L, in L's block or
 * inside later ops' regions, of a tile v defined in L's block before L:
 * when v is rematerializable, the use reads a copy of v built right after
 * L (one copy per v and L; sink_pure later moves each copy down to its
 * first use). Rematerializable: made by a pure op without a region from
 * cheap_op's list, whose tile operands are rematerializable in turn
 * (scalars and values from other blocks are read as they are), with at
 * most REMAT_MAX_OPS ops in all. The original stays for the uses before
 * and in the loop.
 *
 * The pass runs before the layout pass, so that a copy takes the layout
 * its uses after the loop want: the epilogue's index tiles are built in
 * the store's layout instead of being converted to it through shared
 * memory. */
#include <string.h>

#include "lower/lower.h"

enum {
    REMAT_MAX_OPS = 16 /* ops one rematerialized tile may take: computing more than this
                          again after a loop could cost more than the registers it frees */
};

typedef struct remat_ctx {
    tir_op *loop;
    tir_builder b;    /* right after the loop */
    tir_value **copy; /* by value id: v's copy after this loop */
    uint32_t ncopy;   /* values that existed before this loop was looked at: its own copies are not copied again */
} remat_ctx;

/* Ops cheap enough to compute twice: index arithmetic and comparisons on
 * tiles built from scalars. */
static bool cheap_op(tir_opcode code) {
    switch (code) {
    case TIR_OP_CONST: case TIR_OP_ARANGE: case TIR_OP_SPLAT: case TIR_OP_EXPAND_DIMS: case TIR_OP_BROADCAST:
    case TIR_OP_ADD: case TIR_OP_SUB: case TIR_OP_MUL: case TIR_OP_DIV: case TIR_OP_REM: case TIR_OP_MIN:
    case TIR_OP_MAX: case TIR_OP_AND: case TIR_OP_OR: case TIR_OP_XOR: case TIR_OP_EQ: case TIR_OP_NE:
    case TIR_OP_LT: case TIR_OP_LE: case TIR_OP_GT: case TIR_OP_GE: case TIR_OP_CAST: case TIR_OP_ADDPTR:
    case TIR_OP_SELECT: case TIR_OP_MULTIPLE_OF:
        return true;
    default: return false;
    }
}

/* Ops v's copy takes (0: v is read as it is: a scalar, or a value not of
 * block blk), or more than `budget` when it cannot be copied. */
static uint32_t remat_cost(const tir_block *blk, const tir_value *v, uint32_t budget) {
    if (!v->type.rank || !v->def || v->def->parent != blk) return 0;
    const tir_op *op = v->def;
    if (!cheap_op(op->code) || op->body || op->nresults != 1) return budget + 1;
    uint32_t n = 1;
    for (uint32_t i = 0; i < op->noperands && n <= budget; i++) n += remat_cost(blk, op->operands[i], budget - n);
    return n;
}

static tir_value *remat(remat_ctx *c, tir_value *v) {
    if (!v->type.rank || !v->def || v->def->parent != c->loop->parent) return v;
    if (c->copy[v->id]) return c->copy[v->id];
    const tir_op *op = v->def;
    tir_value *ops[TIR_MAX_OPERANDS];
    for (uint32_t i = 0; i < op->noperands; i++) ops[i] = remat(c, op->operands[i]);
    tir_op *n = tir_build_op(&c->b, op->code, op->noperands, ops, 1, &v->type);
    n->attr = op->attr;
    n->loc = op->loc;
    n->results[0]->name = v->name;
    return c->copy[v->id] = n->results[0];
}

/* Whether op comes before `loop` in their block. */
static bool before(const tir_op *op, const tir_op *loop) {
    for (const tir_op *o = op; o; o = o->next)
        if (o == loop) return o != op;
    return false;
}

static void remat_uses(remat_ctx *c, tir_op *user);

static void remat_block_uses(remat_ctx *c, tir_block *blk) {
    for (tir_op *op = blk ? blk->first : NULL; op; op = op->next) remat_uses(c, op);
}

static void remat_uses(remat_ctx *c, tir_op *user) {
    const tir_block *blk = c->loop->parent;
    for (uint32_t i = 0; i < user->noperands; i++) {
        tir_value *v = user->operands[i];
        if (!v->type.rank || !v->def || v->def->parent != blk || v->id >= c->ncopy || !before(v->def, c->loop))
            continue;
        if (remat_cost(blk, v, REMAT_MAX_OPS) > REMAT_MAX_OPS) continue;
        user->operands[i] = remat(c, v);
    }
    remat_block_uses(c, user->body);
    remat_block_uses(c, user->body2);
}

bool lower_remat_tiles(tir_module *m, const lower_options *opt, tc_diag *diag) {
    (void)opt, (void)diag;
    tc_arena *arena = tc_arena_new();
    for (tir_func *f = m->funcs; f; f = f->next) {
        uint32_t n;
        tir_op **loops = lower_loops(f, true, arena, &n);
        for (uint32_t i = 0; i < n; i++) {
            tir_op *loop = loops[i], *first = loop->next; /* copies go before it, and are not visited */
            if (!first) continue;
            remat_ctx c = {.loop = loop, .ncopy = f->next_value_id};
            c.copy = TC_NEW_ARRAY(arena, tir_value *, c.ncopy);
            c.b = (tir_builder){.module = m, .func = f};
            tir_builder_before(&c.b, first);
            for (tir_op *op = first; op; op = op->next) remat_uses(&c, op);
        }
    }
    tc_arena_free(arena);
    return true;
}
