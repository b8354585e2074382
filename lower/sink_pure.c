/* sink_pure.c - each pure op moves down to just before the first op of
 * its block that uses it, so that its registers are taken as late as they
 * can be (issue 19).
 *
 * Codegen emits ops in the order of the IR, and the order a kernel's
 * source gives them is seldom the one that needs the fewest registers: the
 * stdlib matmul's epilogue computed C's 64-bit offsets and masks (dozens
 * of registers a thread) while the f32 accumulator (128 registers at
 * 128x128 with 4 warps) and its GELU were still live, before the
 * accumulator was rounded to f16 and moved to the store's layout, and
 * ptxas spilled. Moved down to the store, they are computed once the
 * accumulator has been narrowed.
 *
 * The walk goes over each block from its last op to its first, so that
 * an op follows its users down. An op moves when it is pure (no memory
 * effect, no region; not local_alloc, whose place the shared-memory plan
 * reads; not const, which costs nothing where it is; not a dot, whose
 * operands and result take the same registers wherever it is, and which
 * a pipelined loop issues before its end-of-trip barrier so that the
 * tensor cores overlap the wait), to just before its
 * first user in the block (the op itself or one whose regions use it); an
 * op that may go through the scratch area (a conversion, reduction, scan
 * or permute) does not land inside the range where the shared-memory
 * buffers are live (a pipelined loop's prologue and loop), where
 * smem_plan would have to give it scratch beside the rings: it stops
 * before the range. It never moves into a region: a value computed before a
 * loop and used in it stays before it, computed once. Values do not
 * change; only the order of pure ops does. */
#include "lower/codegen_internal.h" /* smem_buffers_of, the range smem_plan reckons */

/* Whether op, or an op in its regions, reads v. */
static bool uses_value(const tir_op *op, const tir_value *v);

static bool block_uses(const tir_block *blk, const tir_value *v) {
    for (const tir_op *op = blk ? blk->first : NULL; op; op = op->next)
        if (uses_value(op, v)) return true;
    return false;
}

static bool uses_value(const tir_op *op, const tir_value *v) {
    for (uint32_t i = 0; i < op->noperands; i++)
        if (op->operands[i] == v) return true;
    return block_uses(op->body, v) || block_uses(op->body2, v);
}

static bool movable(const tir_op *op) {
    return (tir_ops[op->code].flags & TIR_F_PURE) && !op->body && op->nresults == 1 &&
           op->code != TIR_OP_LOCAL_ALLOC && op->code != TIR_OP_CONST && op->code != TIR_OP_DOT &&
           op->code != TIR_OP_DOT_IEEE;
}

/* Ops that stay in registers: elementwise ones and those that only build
 * or reshape a tile of registers; the others (conversions, reductions,
 * scans, permutes) may go through the scratch area in codegen. */
static bool register_only(const tir_op *op) {
    switch (op->code) {
    case TIR_OP_SPLAT: case TIR_OP_ARANGE: case TIR_OP_EXPAND_DIMS: case TIR_OP_BROADCAST: case TIR_OP_MULTIPLE_OF:
        return true;
    default: return (tir_ops[op->code].flags & TIR_F_ELEMENTWISE) != 0;
    }
}

/* Whether a comes before b in their block (or is b). */
static bool at_or_before(const tir_op *a, const tir_op *b) {
    for (; a; a = a->next)
        if (a == b) return true;
    return false;
}

/* The buffers' live range in their block as smem_plan reckons it
 * (smem_buffers_of): ops from `first` through `last` (NULL: to the end).
 * Both are ops that never move (a copy, a buffer's reader, `async_wait`):
 * the op after the range that smem_buffers_of names may be a pure one
 * this pass moves down, which would stretch the range with it. */
typedef struct live_range {
    const tir_op *first, *last;
} live_range;

/* Whether an op put right before `to` (NULL: at the end) lands inside r. */
static bool lands_inside(const live_range *r, const tir_op *to) {
    if (!r->first || to == r->first || (to && !at_or_before(r->first, to))) return false;
    return !r->last || (to && at_or_before(to, r->last));
}

/* range: the live range of the block that holds the buffers (home), or
 * NULL for another block (a region is inside the range or not as a whole). */
static void sink_block(tir_block *blk, const tir_block *home, const live_range *range) {
    const live_range *here = blk == home ? range : NULL; /* the range's ops are this block's */
    for (tir_op *op = blk->last, *prev; op; op = prev) {
        prev = op->prev;
        if (op->body) sink_block(op->body, home, range);
        if (op->body2) sink_block(op->body2, home, range);
        if (!movable(op)) continue;
        tir_op *to = op->next;
        while (to && !uses_value(to, op->results[0])) to = to->next;
        /* an op that may use scratch does not move into the range from
         * outside it: it stops before the range */
        if (here && !register_only(op) && !lands_inside(here, op) && lands_inside(here, to))
            to = (tir_op *)here->first;
        if (to && to != op->next && to != op) tir_op_move_before(op, to);
    }
}

bool lower_sink_pure(tir_module *m, const lower_options *opt, tc_diag *diag) {
    (void)opt, (void)diag;
    for (tir_func *f = m->funcs; f; f = f->next) {
        smem_buffers s;
        smem_buffers_of(f, &s);
        live_range r = {.first = s.first, .last = s.end ? s.end->prev : NULL};
        sink_block(f->body, s.home, &r);
    }
    return true;
}
