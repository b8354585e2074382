/* warp_specialize.c - on sm_90a, a loop whose rings the bulk copy engine
 * fills (tma_copies) gets a producer warpgroup of its own: one warp of it
 * issues every copy, running ahead of the consumers by the ring's depth,
 * and the kernel's num_warps warps (the consumers) only wait, compute and
 * release slots. The consumers' trip loses its barriers (a slot is handed
 * back by mbarrier arrivals, not by stopping every warp), and registers
 * move from the producer, which needs few, to the consumers (setmaxnreg,
 * in codegen).
 *
 * Ops (ops.def): `warp_specialize bufs...` splits the warps, once, in the
 * kernel's body; `producer { ... }` regions hold what only the producer
 * runs; `mbar_arrive` hands a slot back. The kernel's producer_warps
 * becomes TIR_WS_PRODUCER_WARPS: a launch has that many more warps.
 *
 * The loop (the kernel's only one with bulk copies, in the kernel's body
 * or in the then block of an `if` around the rest of it, as the stdlib
 * guards its programs; no cp.async, local_store or other barrier use in
 * it) changes so:
 *   kernel start   bufs and full = the rings and their mbarriers, moved up
 *                  empty = local_alloc smem<S x 1 x i64>
 *                  mbar_init full; mbar_init C, empty (C = consumer threads:
 *                  each arrives); fence_async; barrier (every warp)
 *                  warp_specialize bufs..., full, empty
 *   prologue       producer { tma_load ... }           (the first S - 1 trips)
 *   trip t         mbar_wait full, r, phase              (as before)
 *                  ... dot_async, dot_wait 1 ...         (its barriers gone)
 *                  if t != lo { mbar_arrive empty, r' }  (r' the slot of trip
 *                                                        t - 1, whose wgmma
 *                                                        the wait completed)
 *                  producer { if pred { mbar_wait empty, r', pphase }
 *                             tma_load ... into r' }     (for trip t + S - 1)
 *   after          barrier; mbar_inval full; mbar_inval empty   (after the if)
 * The producer's wait for slot r' is for the consumers' release of its
 * use by trip t - 1: that completes phase (t - 1) / S of empty[r'], whose
 * parity is the full phase trip t - 1 waited with, carried as pphase (1
 * before the loop: trip 0 refills a slot no trip used yet, and a fresh
 * mbarrier's preceding phase, parity 1, counts as complete: PTX ISA,
 * "mbarrier.test_wait"). Trips past the end neither copy nor wait (pred),
 * so the producer's last access to the mbarriers comes before the
 * copies the consumers wait on last: once every consumer is past the
 * barrier after the loop, nothing uses them and thread 0 ends them.
 *
 * The producer computes only scalars (tileir/warp_roles.c): the copies'
 * coordinates, predicates and slots must come from parameters, program
 * ids, the loop's index and carried scalars, never from a tile or a load
 * (else the loop is left alone). A loop asks for it with
 * range(..., warp_specialize = true) or refuses it with false; otherwise
 * the compile's option says (tilec --warp-specialize=on|off), and by
 * default (auto) it is on when the kernel has two or more consumer warpgroups, where a
 * trip's barriers stop warpgroups that would otherwise run apart and the
 * registers the producer gives up raise the consumers' limit from 168 to
 * 232 (lower/codegen.c). */
#include <string.h>

#include "lower/lower.h"

_Static_assert((int)TIR_WS_ON == (int)TILEC_WARP_SPECIALIZE_ON && (int)TIR_WS_OFF == (int)TILEC_WARP_SPECIALIZE_OFF &&
                   (int)TIR_WS_AUTO == (int)TILEC_WARP_SPECIALIZE_AUTO,
               "a loop's warp_specialize and the compile's option share their values");

enum {
    WS_MAX_BUFS = 8, /* rings of the loop, with their mbarriers */
    WS_MAX_COPIES = 16, /* bulk copies in the loop's trip (two per dot and
                           a few for attention; more is not a matmul loop) */
    WS_MIN_AUTO_WARPS = 8, /* the heuristic: two consumer warpgroups or more */
};

typedef struct ws_loop {
    tir_block *home;     /* the loop's block: the kernel's body, or the then
                            block of an `if` around the rest (the stdlib's) */
    tir_op *guard;       /* that if, or NULL */
    tir_op *loop;
    tir_op *wait;        /* mbar_wait full, slot, phase at the trip's top */
    tir_value *full;     /* the rings' mbarriers */
    tir_op *full_init;   /* their mbar_init, and what follows it */
    tir_op *loads[WS_MAX_COPIES]; /* the loop's tma_loads */
    uint32_t nloads;
    tir_value *bufs[WS_MAX_BUFS];
    uint32_t nbufs;
} ws_loop;

static void count_loads(const tir_block *blk, uint32_t *n) {
    for (const tir_op *op = blk->first; op; op = op->next) {
        *n += op->code == TIR_OP_TMA_LOAD;
        if (op->body) count_loads(op->body, n);
        if (op->body2) count_loads(op->body2, n);
    }
}

/* The producer computes v: a parameter, a pure op's scalar (or buffer)
 * over such values, the loop's index, a carried scalar whose init and
 * next value are such values (tileir/warp_roles.c, ahead of the split). */
static bool producer_can(const tir_func *f, const tir_op *loop, const tir_value *v, uint8_t *seen, int depth) {
    if (depth > 64) return false;
    if (v->type.rank && v->type.space != TIR_SPACE_SHARED) return false;
    if (!v->def) {
        if (!v->block) return true; /* a parameter */
        if (v->block != loop->body) return false;
        if (v->index == 0) /* the index: the bounds */
            return producer_can(f, loop, loop->operands[0], seen, depth + 1) &&
                   producer_can(f, loop, loop->operands[1], seen, depth + 1) &&
                   producer_can(f, loop, loop->operands[2], seen, depth + 1);
        if (seen[v->id]) return true; /* assumed while its next value is looked at */
        seen[v->id] = 1;
        const tir_op *y = loop->body->last;
        return producer_can(f, loop, loop->operands[2 + v->index], seen, depth + 1) &&
               producer_can(f, loop, y->operands[v->index - 1], seen, depth + 1);
    }
    const tir_op *d = v->def;
    if (!(tir_ops[d->code].flags & TIR_F_PURE) || d->body) return false;
    if (d->parent != f->body && d->parent != loop->parent && d->parent != loop->body) return false;
    for (uint32_t i = 0; i < d->noperands; i++)
        if (!producer_can(f, loop, d->operands[i], seen, depth + 1)) return false;
    return true;
}

static bool loads_ok(const tir_func *f, ws_loop *w, const tir_op *op, uint8_t *seen) {
    for (uint32_t i = 1; i < op->noperands; i++)
        if (!producer_can(f, w->loop, op->operands[i], seen, 0)) return false;
    return true;
}

static void add_buf(ws_loop *w, tir_value *b, bool *ok) {
    for (uint32_t i = 0; i < w->nbufs; i++)
        if (w->bufs[i] == b) return;
    if (w->nbufs == WS_MAX_BUFS || !b->def || b->def->code != TIR_OP_LOCAL_ALLOC) *ok = false;
    else w->bufs[w->nbufs++] = b;
}

/* The kernel's one loop that qualifies, in *w. */
static bool find_loop(tir_func *f, ws_loop *w, const lower_options *opt, tc_arena *arena) {
    memset(w, 0, sizeof *w);
    uint32_t n = 0;
    /* the body, or an if's then block when the if (no results, nothing
     * else) holds the rest of the kernel */
    w->home = f->body;
    for (tir_op *op = f->body->first; op; op = op->next)
        if (op->code == TIR_OP_IF && !op->nresults && op->body2->first == op->body2->last && tir_block_has_op(op->body, TIR_OP_TMA_LOAD, TIR_OP_TMA_LOAD))
            w->home = op->body, w->guard = op;
    for (tir_op *op = w->home->first; op; op = op->next)
        if (op->code == TIR_OP_FOR && tir_block_has_op(op->body, TIR_OP_TMA_LOAD, TIR_OP_TMA_LOAD)) w->loop = op, n++;
    if (n != 1) return false;
    /* one producer program per kernel: no bulk copies but the loop's and its prologue's */
    uint32_t all = 0, mine = 0;
    count_loads(f->body, &all);
    count_loads(w->loop->body, &mine);
    for (tir_op *op = w->home->first; op != w->loop; op = op->next) mine += op->code == TIR_OP_TMA_LOAD;
    if (all != mine) return false;
    tir_op *loop = w->loop;
    /* the loop's choice, else the compile's (tilec_options.warp_specialize: the same values) */
    int want = loop->warp_specialize ? loop->warp_specialize : opt->compile.warp_specialize;
    if (want == TIR_WS_OFF) return false;
    if (want == TIR_WS_AUTO && f->num_warps < WS_MIN_AUTO_WARPS) return false;
    if (f->num_warps % LOWER_WARPGROUP_WARPS || (f->num_warps + TIR_WS_PRODUCER_WARPS) * LOWER_WARP_SIZE > 1024)
        return false;
    /* everything else in the loop is the consumers': nothing of theirs
     * may need the barriers that go (staging through shared memory) */
    if (tir_block_has_op(loop->body, TIR_OP_ASYNC_COPY, TIR_OP_LOCAL_STORE) || tir_block_has_op(loop->body, TIR_OP_ASYNC_WAIT, TIR_OP_PRODUCER))
        return false;
    for (tir_op *op = loop->body->first; op; op = op->next) {
        if (op->code == TIR_OP_MBAR_WAIT && !w->wait) w->wait = op;
        if (op->code == TIR_OP_TMA_LOAD) {
            if (w->nloads == WS_MAX_COPIES) return false;
            w->loads[w->nloads++] = op;
        }
    }
    if (!w->wait || !w->nloads) return false;
    for (tir_op *op = loop->body->first; op; op = op->next) /* no copies deeper than the trip's own ops */
        if ((op->body && tir_block_has_op(op->body, TIR_OP_TMA_LOAD, TIR_OP_MBAR_WAIT)) ||
            (op->body2 && tir_block_has_op(op->body2, TIR_OP_TMA_LOAD, TIR_OP_MBAR_WAIT)))
            return false;
    w->full = w->wait->operands[0];
    /* the trip's wait is on its own carried slot and phase */
    if (w->wait->operands[1]->block != loop->body || w->wait->operands[2]->block != loop->body) return false;
    bool ok = true;
    for (uint32_t i = 0; i < w->nloads; i++) {
        const tir_op *t = w->loads[i];
        if (t->operands[2] != w->full || t->operands[1] != w->loads[0]->operands[1] ||
            t->operands[3] != w->loads[0]->operands[3])
            return false; /* one slot refilled a trip, under one predicate */
        add_buf(w, t->operands[0], &ok);
    }
    add_buf(w, w->full, &ok);
    if (!ok) return false;
    /* the mbar_init of full, then fence_async and barrier, before the loop */
    for (tir_op *op = w->home->first; op && op != loop; op = op->next)
        if (op->code == TIR_OP_MBAR_INIT && op->operands[0] == w->full) w->full_init = op;
    tir_op *i = w->full_init;
    if (!i || !i->next || i->next->code != TIR_OP_FENCE_ASYNC || !i->next->next || i->next->next->code != TIR_OP_BARRIER)
        return false;
    /* the prologue's copies into the rings, and the guard's condition */
    uint8_t *seen = TC_NEW_ARRAY(arena, uint8_t, f->next_value_id + 1);
    if (w->guard && !producer_can(f, loop, w->guard->operands[0], seen, 0)) return false;
    for (tir_op *op = w->home->first; op != loop; op = op->next)
        if (op->code == TIR_OP_TMA_LOAD && !loads_ok(f, w, op, seen)) return false;
    for (uint32_t k = 0; k < w->nloads; k++)
        if (!loads_ok(f, w, w->loads[k], seen)) return false;
    return true;
}

static void wrap(tir_builder *b, tir_op *const *ops, uint32_t n, tir_op *at) {
    tir_builder_before(b, at);
    tir_op *p = tir_build_producer(b);
    tir_builder inner = *b;
    tir_builder_at_end(&inner, p->body);
    tir_build_op(&inner, TIR_OP_YIELD, 0, NULL, 0, NULL);
    for (uint32_t i = 0; i < n; i++) tir_op_move_before(ops[i], p->body->last);
}

static void specialize(tir_func *f, ws_loop *w) {
    tir_op *loop = w->loop;
    tir_builder b = {0};
    b.module = f->module;
    b.func = f;
    b.loc = loop->loc;
    /* the kernel's start: buffers, mbarriers, the split, before the first
     * op that stays where it is */
    tir_op *init = w->full_init, *fence = init->next, *bar = fence->next;
    tir_op *top = f->body->first;
    for (bool moved = true; moved && top;) {
        moved = top == init || top == fence || top == bar;
        for (uint32_t i = 0; i < w->nbufs; i++) moved |= top == w->bufs[i]->def;
        if (moved) top = top->next;
    }
    for (uint32_t i = 0; i < w->nbufs; i++) tir_op_move_before(w->bufs[i]->def, top);
    tir_op_move_before(init, top);
    tir_builder_before(&b, top);
    tir_type et = w->full->type;
    tir_value *empty = tir_build_op(&b, TIR_OP_LOCAL_ALLOC, 0, NULL, 1, &et)->results[0];
    tir_build_op(&b, TIR_OP_MBAR_INIT, 1, &empty, 0, NULL)->attr.axis = f->num_warps * LOWER_WARP_SIZE;
    tir_op_move_before(fence, top);
    tir_op_move_before(bar, top);
    tir_value *split_ops[WS_MAX_BUFS + 1];
    memcpy(split_ops, w->bufs, sizeof(tir_value *) * w->nbufs);
    split_ops[w->nbufs] = empty;
    tir_build_op(&b, TIR_OP_WARP_SPECIALIZE, w->nbufs + 1, split_ops, 0, NULL);
    f->producer_warps = TIR_WS_PRODUCER_WARPS;
    /* the prologue's copies */
    for (tir_op *op = w->home->first, *next; op != loop; op = next) {
        next = op->next;
        if (op->code == TIR_OP_TMA_LOAD) wrap(&b, &op, 1, next);
    }
    /* the trip: no barriers; the slot of trip t - 1 handed back, then refilled */
    for (tir_op *op = loop->body->first, *next; op; op = next) {
        next = op->next;
        if (op->code == TIR_OP_BARRIER) tir_op_remove(op);
    }
    tir_builder_before(&b, loop);
    tir_value *pphase = tir_for_add_carried(loop, tir_build_const_int(&b, tir_scalar(TIR_I32), 1));
    tir_op *yield = loop->body->last;
    yield->operands[yield->noperands - 1] = w->wait->operands[2];
    tir_op *last = w->loads[w->nloads - 1];
    tir_value *refill = last->operands[1], *pred = last->operands[3];
    b.loc = last->loc;
    tir_builder_before(&b, last);
    tir_value *later = tir_build_binary(&b, TIR_OP_NE, loop->body->args[0], loop->operands[0]);
    tir_op *arrive_if = tir_build_if(&b, later, 0, NULL);
    tir_builder in = b;
    tir_builder_at_end(&in, arrive_if->body);
    tir_value *aops[2] = {empty, refill};
    tir_build_op(&in, TIR_OP_MBAR_ARRIVE, 2, aops, 0, NULL);
    tir_build_op(&in, TIR_OP_YIELD, 0, NULL, 0, NULL);
    tir_builder_at_end(&in, arrive_if->body2);
    tir_build_op(&in, TIR_OP_YIELD, 0, NULL, 0, NULL);
    tir_op *next_of_last = last->next;
    wrap(&b, w->loads, w->nloads, next_of_last);
    tir_op *region = next_of_last->prev;
    tir_builder_before(&b, region->body->first);
    tir_op *wait_if = tir_build_if(&b, pred, 0, NULL);
    tir_builder_at_end(&in, wait_if->body);
    tir_value *wops[3] = {empty, refill, pphase};
    tir_build_op(&in, TIR_OP_MBAR_WAIT, 3, wops, 0, NULL);
    tir_build_op(&in, TIR_OP_YIELD, 0, NULL, 0, NULL);
    tir_builder_at_end(&in, wait_if->body2);
    tir_build_op(&in, TIR_OP_YIELD, 0, NULL, 0, NULL);
    /* after the loop (after the guard: every thread initialized the
     * mbarriers): every consumer past its last wait, then the ends */
    for (tir_op *op = loop->next; op; op = op->next)
        if (op->code == TIR_OP_MBAR_INVAL && op->operands[0] == w->full) {
            tir_op_remove(op);
            break;
        }
    b.loc = loop->loc;
    tir_op *after = w->guard ? w->guard : loop;
    tir_builder_before(&b, after->next); /* a return or yield ends the block */
    tir_build_op(&b, TIR_OP_BARRIER, 0, NULL, 0, NULL);
    tir_build_op(&b, TIR_OP_MBAR_INVAL, 1, &w->full, 0, NULL);
    tir_build_op(&b, TIR_OP_MBAR_INVAL, 1, &empty, 0, NULL);
}

bool lower_warp_specialize(tir_module *m, const lower_options *opt, tc_diag *diag) {
    (void)diag;
    if (!lower_has_wgmma(opt->compile.arch)) return true;
    tc_arena *arena = tc_arena_new();
    for (tir_func *f = m->funcs; f; f = f->next) {
        ws_loop w;
        if (!tir_ws_split(f) && find_loop(f, &w, opt, arena)) specialize(f, &w);
    }
    tc_arena_free(arena);
    return true;
}
