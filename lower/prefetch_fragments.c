/* prefetch_fragments.c - a pipelined loop reads the first K piece of its
 * dots' operands for the next trip before the back-edge, as Triton's and
 * FlashAttention-2's loops do, so that the first mma.sync of a trip does
 * not wait for ldmatrixes issued after the trip's barrier (issue 19).
 *
 * After pipeline_loops and stage_operands, trip t of such a loop waits
 * for its slot, then reads it straight into the mma fragments:
 *
 *     for (iv, ..., s) {                     s: the carried ring slot
 *         [pure ops]                         (the slots' arithmetic)
 *         async_wait N
 *         barrier
 *         ...                                (copies of trip t+S-1, commit)
 *         x = local_load A, s : dot_op      (a: M x K)
 *         y = local_load B, s : dot_op      (b: K x N)
 *         acc2 = dot x, y, acc
 *         ...
 *         yield ..., s'
 *     }
 *
 * The pass splits x and y along K into pieces of P (one mma.sync's K:
 * 16 for 16-bit elements, 32 for i8) and moves the wait and the barrier
 * to the end of the trip, where they are followed by the first piece of
 * the next trip, which the loop carries:
 *
 *     async_wait N; barrier
 *     x0 = local_load [0, 0], A, s0; y0 = local_load [0, 0], B, s0
 *     for (iv, ..., s, x0, y0) {
 *         [pure ops]
 *         ...
 *         xi = local_load [0, iP], A, s; yi = local_load [iP, 0], B, s   (i = 1 .. K/P - 1)
 *         acc1 = dot x0, y0, acc; acc2 = dot x1, y1, acc1; ...
 *         ...
 *         async_wait N; barrier
 *         x0' = local_load [0, 0], A, s'; y0' = local_load [0, 0], B, s'
 *         yield ..., s', x0', y0'
 *     }
 *
 * Why it stays correct. The waits count the same groups: at the end of
 * trip t, S-1 + t+1 groups are committed and trip t+1's must have landed,
 * so N = S-2 may be in flight, as at the top of trip t+1 before; the
 * prologue's wait is the first trip's. Moving a wait and a barrier ahead
 * of pure ops only waits sooner. The copies of trip t write the slot trip
 * t-1 read, and every read of it (trip t-1's pieces, and trip t-2's
 * prefetch of its first piece) comes before the barrier at the end of
 * trip t-1, as before it came before the barrier at the top of trip t.
 * The last trip's prefetch reads a slot whose copies were masked off
 * (zeros, landed by the wait): read, never used. Still one barrier a
 * trip; the dots add the pieces in K order, as one dot does.
 *
 * Only where every piece of this is plain: exactly one async_wait in the
 * body, directly followed by a barrier and preceded by pure ops only; a
 * dot whose a and b are local_loads of whole slots of the carried slot
 * value, each used by the dot alone, in dot_op layouts, of rings nothing
 * else reads; a K that P divides. tf32 is left out: its fragments hold
 * one element a register, so a carried piece costs twice the registers of
 * f16's where matmul_f32's configurations are nearest the limit. */
#include <string.h>

#include "lower/lower.h"

enum {
    PREFETCH_MAX_DOTS = 8,   /* dots of one loop the pass prefetches for */
    PREFETCH_MAX_PIECES = 16 /* pieces of one dot: K up to 256 of f16 */
};

typedef struct use_count {
    const tir_value *v;
    uint32_t n;
    bool other; /* for a ring: a user other than async_copy and the allowed local_load */
    const tir_op *allowed;
} use_count;

static void count_use(tir_op *op, void *p) {
    use_count *u = p;
    for (uint32_t i = 0; i < op->noperands; i++)
        if (op->operands[i] == u->v) {
            u->n++;
            if (!(i == 0 && (op->code == TIR_OP_ASYNC_COPY || op == u->allowed))) u->other = true;
        }
}

static uint32_t uses(tir_func *f, const tir_value *v) {
    use_count u = {.v = v};
    tir_walk(f, count_use, &u);
    return u.n;
}

/* Whether buffer buf is written by async_copy and read by ld alone. */
static bool ring_of(tir_func *f, const tir_value *buf, const tir_op *ld) {
    use_count u = {.v = buf, .allowed = ld};
    tir_walk(f, count_use, &u);
    return !u.other;
}

/* K of a piece for dots of element type e (one mma.sync's), or 0: not
 * prefetched (the header's tf32). */
static uint32_t piece_k(tir_elem e) {
    switch (e) {
    case TIR_F16: case TIR_BF16: return 16;
    case TIR_I8: return 32;
    default: return 0;
    }
}

/* Whether v is local_load buf, s of a whole slot in a dot_op layout, used
 * once, from a ring it alone reads. */
static bool whole_fragment_load(tir_func *f, const tir_value *v, const tir_value *s) {
    const tir_op *ld = v->def;
    if (!ld || ld->code != TIR_OP_LOCAL_LOAD || ld->operands[1] != s || v->type.layout.kind != TIR_LAYOUT_DOT_OP)
        return false;
    const tir_type *bt = &ld->operands[0]->type;
    for (unsigned d = 0; d < v->type.rank; d++)
        if (ld->attr.offset[d] || v->type.shape[d] != bt->shape[d + 1]) return false;
    return uses(f, v) == 1 && ring_of(f, ld->operands[0], ld);
}

/* local_load [off], buf, slot in type t (with shape), built by b. */
static tir_value *load_piece(tir_builder *b, tir_value *buf, tir_value *slot, tir_type t, const uint32_t *shape,
                             const uint32_t *off) {
    tir_type pt = t;
    pt.shape[0] = shape[0], pt.shape[1] = shape[1];
    tir_value *ops[2] = {buf, slot};
    tir_op *op = tir_build_op(b, TIR_OP_LOCAL_LOAD, 2, ops, 1, &pt);
    op->attr.offset[0] = off[0], op->attr.offset[1] = off[1];
    return op->results[0];
}

typedef struct pf_dot {
    tir_op *dot;
    tir_value *bufs[2];
    uint32_t k, p; /* the dot's K, the piece's */
} pf_dot;

/* Prefetches for the dots of loop as the header says; whether it did. */
static bool prefetch_loop(tir_func *f, tir_op *loop) {
    tir_block *body = loop->body;
    tir_op *wait = NULL, *yield = body->last;
    for (tir_op *op = body->first; op; op = op->next) {
        if (op->code != TIR_OP_ASYNC_WAIT) continue;
        if (wait) return false; /* two: not the plain loop of the header */
        wait = op;
    }
    if (!wait || !wait->next || wait->next->code != TIR_OP_BARRIER) return false;
    for (tir_op *op = body->first; op != wait; op = op->next)
        if (!(tir_ops[op->code].flags & TIR_F_PURE) || op->code == TIR_OP_LOCAL_ALLOC) return false;
    tir_value *slot = NULL;
    uint32_t slot_arg = 0;
    pf_dot dots[PREFETCH_MAX_DOTS];
    uint32_t ndots = 0;
    for (tir_op *op = wait->next; op && ndots < PREFETCH_MAX_DOTS; op = op->next) {
        if (op->code != TIR_OP_DOT || op->results[0]->type.layout.kind != TIR_LAYOUT_MMA) continue;
        tir_value *a = op->operands[0], *b = op->operands[1];
        uint32_t p = piece_k(tir_type_elem(a->type)), k = a->type.shape[1];
        if (!p || k % p || k / p > PREFETCH_MAX_PIECES || !a->def || a->def->code != TIR_OP_LOCAL_LOAD) continue;
        tir_value *s = a->def->operands[1];
        if (s->def || s->block != body || s->index == 0 || (slot && s != slot)) continue; /* a carried value of this loop */
        if (!whole_fragment_load(f, a, s) || !whole_fragment_load(f, b, s)) continue;
        slot = s, slot_arg = s->index;
        dots[ndots++] = (pf_dot){.dot = op, .bufs = {a->def->operands[0], b->def->operands[0]}, .k = k, .p = p};
    }
    if (!ndots) return false;
    tir_value *first_slot = loop->operands[3 + slot_arg - 1], *next_slot = yield->operands[slot_arg - 1];
    uint32_t n_wait = (uint32_t)wait->attr.axis;
    tir_builder pro = {.module = f->module, .func = f, .loc = wait->loc}, end = pro, in = pro;
    tir_builder_before(&pro, loop);
    tir_builder_before(&end, yield);
    tir_build_op(&pro, TIR_OP_ASYNC_WAIT, 0, NULL, 0, NULL)->attr.axis = n_wait;
    tir_build_op(&pro, TIR_OP_BARRIER, 0, NULL, 0, NULL);
    tir_build_op(&end, TIR_OP_ASYNC_WAIT, 0, NULL, 0, NULL)->attr.axis = n_wait;
    tir_build_op(&end, TIR_OP_BARRIER, 0, NULL, 0, NULL);
    tir_op_remove(wait->next);
    tir_op_remove(wait);
    for (uint32_t i = 0; i < ndots; i++) {
        pf_dot *d = &dots[i];
        tir_op *dot = d->dot;
        tir_value *x = dot->operands[0], *y = dot->operands[1];
        const uint32_t xs[2] = {x->type.shape[0], d->p}, ys[2] = {d->p, y->type.shape[1]}, zero[2] = {0, 0};
        /* the first piece: before the loop for trip 0, at the end of each
         * trip for the next, carried */
        tir_value *x0 = tir_for_add_carried(loop, load_piece(&pro, d->bufs[0], first_slot, x->type, xs, zero));
        tir_value *y0 = tir_for_add_carried(loop, load_piece(&pro, d->bufs[1], first_slot, y->type, ys, zero));
        yield->operands[yield->noperands - 2] = load_piece(&end, d->bufs[0], next_slot, x->type, xs, zero);
        yield->operands[yield->noperands - 1] = load_piece(&end, d->bufs[1], next_slot, y->type, ys, zero);
        /* the others where the whole operands were read, then the dots in
         * K order */
        in.loc = dot->loc;
        tir_builder_before(&in, dot);
        uint32_t n = d->k / d->p;
        tir_value *xp[PREFETCH_MAX_PIECES], *yp[PREFETCH_MAX_PIECES];
        xp[0] = x0, yp[0] = y0;
        for (uint32_t j = 1; j < n; j++) {
            const uint32_t xo[2] = {0, j * d->p}, yo[2] = {j * d->p, 0};
            xp[j] = load_piece(&in, d->bufs[0], slot, x->type, xs, xo);
            yp[j] = load_piece(&in, d->bufs[1], slot, y->type, ys, yo);
        }
        tir_value *acc = dot->operands[2];
        for (uint32_t j = 0; j < n; j++) {
            tir_value *ops[3] = {xp[j], yp[j], acc};
            acc = tir_build1(&in, TIR_OP_DOT, dot->results[0]->type, 3, ops);
        }
        acc->name = dot->results[0]->name;
        tir_replace_all_uses(f, dot->results[0], acc);
        tir_op_remove(dot);
        tir_op_remove(x->def);
        tir_op_remove(y->def);
    }
    return true;
}

bool lower_prefetch_fragments(tir_module *m, const lower_options *opt, tc_diag *diag) {
    (void)opt, (void)diag;
    tc_arena *arena = tc_arena_new();
    for (tir_func *f = m->funcs; f; f = f->next) {
        uint32_t n;
        tir_op **loops = lower_loops(f, false, arena, &n);
        for (uint32_t i = 0; i < n; i++) prefetch_loop(f, loops[i]);
    }
    tc_arena_free(arena);
    return true;
}
