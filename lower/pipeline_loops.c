/* pipeline_loops.c - software pipelining: the global loads that feed a
 * `dot` in a `for` loop are issued num_stages - 1 trips ahead, as
 * asynchronous copies into ring buffers in shared memory, so the memory
 * latency of later trips overlaps the math of this one.
 *
 * A load qualifies when it sits directly in the loop body, its value
 * reaches operand a or b of a dot in the same body (through casts and
 * layout conversions), it has no `other` but zero (the copies fill masked
 * elements with zeros), and its pointers and mask are computed from the
 * induction variable and values defined before the loop only, by pure ops
 * (so they can be computed for any trip ahead of time; pointers carried
 * from trip to trip are not handled yet). With S stages, each such load
 * gets a buffer of S slots, and:
 *
 *   before the loop   buf = local_alloc : smem<S x shape>
 *                     for s in 0 .. S-2: copy trip s into slot s, commit
 *                     (the pointer computation cloned for lo + s*step;
 *                     a trip that does not exist copies nothing)
 *   top of each trip  t = (iv - lo) / step
 *                     async_wait S-2   (this trip's group has landed)
 *                     barrier          (everyone's has, and everyone is
 *                                      done reading the previous trip's
 *                                      slot, which the next copy reuses)
 *                     x = local_load buf, t % S     (replaces the load)
 *                     copy trip t + S-1 into slot (t + S-1) % S, commit
 *   after the loop    async_wait 0     (no copy still writing)
 *
 * Counting groups: before trip t, S-1 + t groups are committed, one per
 * trip in order; trip t needs the first t+1 done, so S-2 may be in flight.
 *
 * The depth is the loop's num_stages, else the kernel's, else
 * LOWER_DEFAULT_NUM_STAGES; it shrinks (down to 2) until the loop's ring
 * buffers fit what is left of the kernel's budget, and a loop whose
 * buffers do not fit even then is left as it is. Every buffer has its own
 * shared memory for the whole kernel (lower/codegen.c), so the budget is
 * the kernel's, shared by its loops in order: the target's shared memory
 * per CTA (lower_smem_limit, with dynamic shared memory) less
 * LOWER_PIPELINE_SMEM_RESERVE for conversions and reductions beside the
 * rings, less buffers the kernel already has. One stage means no pipelining. The pass
 * runs after layout assignment: the copies take the loads' pointer
 * layouts, and local_load gives the load's layout, so everything after it
 * is unchanged. */
#include <string.h>

#include "lower/lower.h"

typedef struct pl_ctx {
    tir_func *f;
    tir_value **clone; /* by value id: a value's copy in the slice being cloned */
    uint32_t nclone;
    uint64_t smem_left; /* bytes of the kernel's ring budget not yet given to a loop */
} pl_ctx;

/* Shared memory of a buffer of `t`'s elements, as codegen lays buffers out
 * (each 16-byte aligned). */
static uint64_t smem_buffer_bytes(tir_type t, uint64_t slots) {
    uint64_t eb = t.elem == TIR_PTR ? 8 : (tir_elem_bits((tir_elem)t.elem) + 7) / 8;
    return (slots * tir_type_numel(t) * eb + 15) & ~(uint64_t)15;
}

/* The rings of `n` loads at `stages` slots each. */
static uint64_t ring_bytes(tir_op *const *loads, uint32_t n, int stages) {
    uint64_t total = 0;
    for (uint32_t j = 0; j < n; j++) total += smem_buffer_bytes(loads[j]->results[0]->type, (uint64_t)stages);
    return total;
}

/* Buffers the kernel has before this pass (hand-written IR, earlier passes). */
static void count_buffers(tir_op *op, void *p) {
    if (op->code == TIR_OP_LOCAL_ALLOC) *(uint64_t *)p += smem_buffer_bytes(op->results[0]->type, 1);
}

/* Whether `v` can be computed for another trip: the induction variable,
 * a value from before the loop, or a pure op of the body on such values. */
static bool ahead_computable(const tir_block *body, const tir_value *v, int depth) {
    if (depth > 64) return false; /* deep chains: not worth cloning */
    if (!v->def) return v->block != body || v == body->args[0];
    if (v->def->parent != body) return true; /* defined before the loop */
    const tir_op *op = v->def;
    if (!(tir_ops[op->code].flags & TIR_F_PURE) || op->body || op->code == TIR_OP_LOCAL_ALLOC) return false;
    for (uint32_t i = 0; i < op->noperands; i++)
        if (!ahead_computable(body, op->operands[i], depth + 1)) return false;
    return true;
}

/* Whether value v of the body reaches operand a or b of a dot in it,
 * through casts and layout conversions. */
static bool feeds_dot(const tir_block *body, const tir_value *v, int depth) {
    if (depth > 8) return false;
    for (const tir_op *op = body->first; op; op = op->next)
        for (uint32_t i = 0; i < op->noperands; i++) {
            if (op->operands[i] != v) continue;
            if ((op->code == TIR_OP_DOT || op->code == TIR_OP_DOT_IEEE) && i < 2) return true;
            if ((op->code == TIR_OP_CAST || op->code == TIR_OP_CONVERT_LAYOUT) &&
                feeds_dot(body, op->results[0], depth + 1))
                return true;
        }
    return false;
}

static bool is_zero(const tir_value *v) {
    if (!v->def || v->def->code != TIR_OP_CONST) return false;
    return tir_elem_is_float((tir_elem)v->type.elem) ? v->def->attr.fval == 0.0 : v->def->attr.ival == 0;
}

static bool qualifies(const tir_block *body, const tir_op *op) {
    if (op->code != TIR_OP_LOAD || op->results[0]->type.rank == 0 || op->results[0]->type.rank >= TIR_MAX_RANK)
        return false;
    if (op->noperands > 2 && !is_zero(op->operands[2])) return false;
    for (uint32_t i = 0; i < op->noperands && i < 2; i++)
        if (!ahead_computable(body, op->operands[i], 0)) return false;
    return feeds_dot(body, op->results[0], 0);
}

/* The copy of v for the trip whose induction variable is `iv`: the body's
 * pure ops that v depends on, rebuilt at the builder. */
static tir_value *clone_for_trip(pl_ctx *c, tir_builder *b, const tir_block *body, tir_value *v, tir_value *iv) {
    if (v == body->args[0]) return iv;
    if (!v->def || v->def->parent != body) return v;
    if (v->id < c->nclone && c->clone[v->id]) return c->clone[v->id];
    const tir_op *op = v->def;
    tir_value *ops[TIR_MAX_OPERANDS];
    for (uint32_t i = 0; i < op->noperands; i++) ops[i] = clone_for_trip(c, b, body, op->operands[i], iv);
    tir_type types[1] = {v->type};
    tir_op *n = tir_build_op(b, op->code, op->noperands, ops, 1, types);
    n->attr = op->attr;
    n->loc = op->loc;
    if (v->id < c->nclone) c->clone[v->id] = n->results[0];
    return n->results[0];
}

/* async_copy of load `ld` for the trip at `iv` into `slot` of `buf`, the
 * mask cut to trips that exist (in_range: iv < hi). */
static void copy_trip(pl_ctx *c, tir_builder *b, const tir_op *loop, const tir_op *ld, tir_value *buf,
                      tir_value *slot, tir_value *iv, tir_value *in_range) {
    const tir_block *body = loop->body;
    tir_value *ptrs = clone_for_trip(c, b, body, ld->operands[0], iv);
    tir_value *mask = tir_build_splat(b, in_range, tir_with_elem(ptrs->type, in_range->type));
    if (ld->noperands > 1) mask = tir_build_binary(b, TIR_OP_AND, clone_for_trip(c, b, body, ld->operands[1], iv), mask);
    tir_value *ops[4] = {buf, slot, ptrs, mask};
    tir_build_op(b, TIR_OP_ASYNC_COPY, 4, ops, 0, NULL);
}

/* The loads' address computations in the body are dead now: removes the
 * body's pure ops whose results nobody uses, last to first. */
static void remove_dead(tir_func *f, tir_block *body) {
    for (tir_op *op = body->last, *prev; op; op = prev) {
        prev = op->prev;
        if (!(tir_ops[op->code].flags & TIR_F_PURE) || op->body || op->nresults != 1) continue;
        if (!tir_value_has_uses(f, op->results[0])) tir_op_remove(op);
    }
}

static void reset_clones(pl_ctx *c) { memset(c->clone, 0, sizeof(tir_value *) * c->nclone); }

static tir_value *i32c(tir_builder *b, int64_t v) { return tir_build_const_int(b, tir_scalar(TIR_I32), v); }

static tir_value *to_i32(tir_builder *b, tir_value *v) {
    return v->type.elem == TIR_I32 ? v : tir_build_cast(b, v, TIR_I32);
}

static void pipeline_loop(pl_ctx *c, tir_op *loop) {
    tir_block *body = loop->body;
    tir_op *loads[TIR_MAX_OPERANDS];
    uint32_t n = 0;
    for (tir_op *op = body->first; op && n < TIR_MAX_OPERANDS; op = op->next)
        if (qualifies(body, op)) loads[n++] = op;
    if (!n) return;
    int stages = loop->num_stages ? loop->num_stages : c->f->num_stages ? c->f->num_stages : LOWER_DEFAULT_NUM_STAGES;
    while (stages > 2 && ring_bytes(loads, n, stages) > c->smem_left) stages--;
    if (stages < 2 || ring_bytes(loads, n, stages) > c->smem_left) return;
    c->smem_left -= ring_bytes(loads, n, stages);

    tir_builder b = {0};
    b.module = c->f->module;
    b.func = c->f;
    b.loc = loop->loc;
    tir_value *lo = loop->operands[0], *step = loop->operands[2];
    tir_elem ie = (tir_elem)lo->type.elem;

    /* before the loop: the buffers and the first S-1 trips' copies */
    tir_builder_before(&b, loop);
    tir_value *bufs[TIR_MAX_OPERANDS];
    for (uint32_t j = 0; j < n; j++) {
        tir_type t = loads[j]->results[0]->type;
        uint32_t shape[TIR_MAX_RANK] = {(uint32_t)stages};
        for (unsigned d = 0; d < t.rank; d++) shape[d + 1] = t.shape[d];
        tir_type bt = tir_smem(tir_element_of(t), t.rank + 1u, shape);
        bufs[j] = tir_build_op(&b, TIR_OP_LOCAL_ALLOC, 0, NULL, 1, &bt)->results[0];
    }
    for (int s = 0; s < stages - 1; s++) {
        tir_value *iv = s ? tir_build_binary(&b, TIR_OP_ADD, lo,
                                             tir_build_binary(&b, TIR_OP_MUL, step, tir_build_const_int(&b, lo->type, s)))
                          : lo;
        reset_clones(c);
        tir_value *in_range = tir_build_binary(&b, TIR_OP_LT, iv, loop->operands[1]), *slot = i32c(&b, s);
        for (uint32_t j = 0; j < n; j++) copy_trip(c, &b, loop, loads[j], bufs[j], slot, iv, in_range);
        tir_build_op(&b, TIR_OP_ASYNC_COMMIT, 0, NULL, 0, NULL);
    }

    /* top of each trip: wait, read this trip's slot, start trip t + S-1 */
    tir_builder_before(&b, body->first);
    tir_value *iv = body->args[0];
    tir_value *trip = tir_build_binary(&b, TIR_OP_DIV, tir_build_binary(&b, TIR_OP_SUB, iv, lo), step);
    tir_value *sv = tir_build_const_int(&b, tir_scalar(ie), stages);
    tir_value *rslot = to_i32(&b, tir_build_binary(&b, TIR_OP_REM, trip, sv));
    tir_value *ahead = tir_build_binary(&b, TIR_OP_ADD, trip, tir_build_const_int(&b, tir_scalar(ie), stages - 1));
    tir_value *wslot = to_i32(&b, tir_build_binary(&b, TIR_OP_REM, ahead, sv));
    tir_op *wait = tir_build_op(&b, TIR_OP_ASYNC_WAIT, 0, NULL, 0, NULL);
    wait->attr.axis = stages - 2;
    tir_build_op(&b, TIR_OP_BARRIER, 0, NULL, 0, NULL);
    for (uint32_t j = 0; j < n; j++) {
        tir_value *ops[2] = {bufs[j], rslot};
        tir_type t = loads[j]->results[0]->type;
        tir_value *x = tir_build_op(&b, TIR_OP_LOCAL_LOAD, 2, ops, 1, &t)->results[0];
        x->name = loads[j]->results[0]->name;
        tir_replace_all_uses(c->f, loads[j]->results[0], x);
    }
    tir_value *next_iv = tir_build_binary(&b, TIR_OP_ADD, iv,
                                          tir_build_binary(&b, TIR_OP_MUL, step, tir_build_const_int(&b, lo->type, stages - 1)));
    reset_clones(c);
    tir_value *next_in_range = tir_build_binary(&b, TIR_OP_LT, next_iv, loop->operands[1]);
    for (uint32_t j = 0; j < n; j++) copy_trip(c, &b, loop, loads[j], bufs[j], wslot, next_iv, next_in_range);
    tir_build_op(&b, TIR_OP_ASYNC_COMMIT, 0, NULL, 0, NULL);
    for (uint32_t j = 0; j < n; j++) tir_op_remove(loads[j]);
    remove_dead(c->f, body);

    /* after the loop: no copy may still be writing the buffers */
    if (loop->next) tir_builder_before(&b, loop->next);
    else tir_builder_at_end(&b, loop->parent);
    tir_build_op(&b, TIR_OP_ASYNC_WAIT, 0, NULL, 0, NULL)->attr.axis = 0;
}

typedef struct loop_list {
    tir_op *loop[LOWER_MAX_PIPELINED_LOOPS];
    uint32_t n;
} loop_list;

static void find_loops(tir_op *op, void *p) {
    loop_list *l = p;
    if (op->code == TIR_OP_FOR && l->n < LOWER_MAX_PIPELINED_LOOPS) l->loop[l->n++] = op;
}

bool lower_pipeline_loops(tir_module *m, const lower_options *opt, tc_diag *diag) {
    (void)diag;
    uint64_t limit = lower_smem_limit(opt ? opt->arch : NULL);
    uint64_t budget = limit > LOWER_PIPELINE_SMEM_RESERVE ? limit - LOWER_PIPELINE_SMEM_RESERVE : 0;
    tc_arena *arena = tc_arena_new();
    for (tir_func *f = m->funcs; f; f = f->next) {
        loop_list *loops = TC_NEW(arena, loop_list);
        tir_walk(f, find_loops, loops);
        uint64_t have = 0;
        tir_walk(f, count_buffers, &have);
        pl_ctx c = {f, NULL, 0, budget > have ? budget - have : 0};
        /* clones are memoized by the ids of values that exist now; the
         * values the pass makes are never cloned */
        c.nclone = f->next_value_id;
        c.clone = TC_NEW_ARRAY(arena, tir_value *, c.nclone + 1);
        for (uint32_t i = 0; i < loops->n; i++) pipeline_loop(&c, loops->loop[i]);
    }
    tc_arena_free(arena);
    return true;
}
