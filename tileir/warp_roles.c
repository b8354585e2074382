/* warp_roles.c - what the producer warps of a warp-specialized kernel hold
 * (ops.def: warp_specialize, producer; tileir.h: tir_producer_values).
 *
 * After the split the producer warps run only the producer regions, and
 * for them the scalars those read: codegen's producer role walks the
 * kernel making the values this file marks and nothing else (the others
 * are undefined there), and the verifier checks that a producer region
 * reads only marked values. A value is marked when every thread has it
 * the same way: a parameter; a scalar or a buffer made before the split
 * (all the warps ran those ops); a pure op's scalar or buffer result
 * whose operands are marked; in a loop holding a producer region (at any
 * depth, through loops and ifs), its index when its bounds are marked,
 * and a carried scalar (with the loop's result) when its init and its
 * next value are marked: the producer runs the loop with those alone; an
 * if holding one it runs too (its results are not marked). Other loops,
 * ifs and whiles it skips. A
 * tile is never marked: its registers follow a layout over the consumer
 * warps only. Carried values are decided optimistically and unmarked
 * until nothing changes (a carried value's next value may depend on it). */
#include "tileir/tileir.h"

tir_op *tir_ws_split(const tir_func *f) {
    for (tir_op *op = f->body->first; op; op = op->next)
        if (op->code == TIR_OP_WARP_SPECIALIZE) return op;
    return NULL;
}

bool tir_block_has_producer(const tir_block *blk) {
    for (const tir_op *op = blk->first; op; op = op->next) {
        if (op->code == TIR_OP_PRODUCER) return true;
        if ((op->code == TIR_OP_FOR || op->code == TIR_OP_IF) &&
            (tir_block_has_producer(op->body) || (op->body2 && tir_block_has_producer(op->body2))))
            return true;
    }
    return false;
}

static bool held_type(tir_type t) { return t.rank == 0 || t.space == TIR_SPACE_SHARED; }

typedef struct marker {
    uint8_t *m;
    uint8_t *veto; /* carried values found not the producer's */
    bool changed;
} marker;

static void mark_all(marker *k, const tir_block *blk);

static bool operands_marked(const marker *k, const tir_op *op) {
    for (uint32_t i = 0; i < op->noperands; i++)
        if (!k->m[op->operands[i]->id]) return false;
    return true;
}

static void mark_op(marker *k, const tir_op *op) {
    const tir_opinfo *info = &tir_ops[op->code];
    if (op->code == TIR_OP_PRODUCER) { /* the producer runs it: all of it */
        for (const tir_op *in = op->body->first; in; in = in->next) {
            for (uint32_t i = 0; i < in->nresults; i++) k->m[in->results[i]->id] = 1;
            if (in->body) mark_all(k, in->body);
            if (in->body2) mark_all(k, in->body2);
        }
        return;
    }
    if (op->code == TIR_OP_FOR && tir_block_has_producer(op->body)) {
        bool bounds = k->m[op->operands[0]->id] && k->m[op->operands[1]->id] && k->m[op->operands[2]->id];
        tir_block *body = op->body;
        k->m[body->args[0]->id] = bounds;
        for (uint32_t i = 0; i < op->nresults; i++) { /* optimistic, unless found wrong before */
            const tir_value *arg = body->args[1 + i];
            k->m[arg->id] = bounds && held_type(arg->type) && k->m[op->operands[3 + i]->id] && !k->veto[arg->id];
        }
        mark_all(k, body);
        const tir_op *y = body->last;
        for (uint32_t i = 0; i < op->nresults; i++) {
            const tir_value *arg = body->args[1 + i];
            bool next = y && y->code == TIR_OP_YIELD && i < y->noperands && k->m[y->operands[i]->id];
            if (k->m[arg->id] && !next) k->veto[arg->id] = 1, k->changed = true;
            k->m[op->results[i]->id] = k->m[arg->id] && next;
        }
        return;
    }
    if (op->code == TIR_OP_IF && (tir_block_has_producer(op->body) || tir_block_has_producer(op->body2))) {
        mark_all(k, op->body); /* the producer takes the branch; its results are not the producer's */
        mark_all(k, op->body2);
        for (uint32_t i = 0; i < op->nresults; i++) k->m[op->results[i]->id] = 0;
        return;
    }
    if (op->body) return; /* while, loops and ifs without producer regions: not the producer's */
    bool ok = (info->flags & TIR_F_PURE) && operands_marked(k, op);
    for (uint32_t i = 0; i < op->nresults; i++) k->m[op->results[i]->id] = ok && held_type(op->results[i]->type);
}

static void mark_all(marker *k, const tir_block *blk) {
    for (const tir_op *op = blk->first; op; op = op->next) mark_op(k, op);
}

uint8_t *tir_producer_values(const tir_func *f, tc_arena *arena) {
    const tir_op *split = tir_ws_split(f);
    if (!split) return NULL;
    uint8_t *m = TC_NEW_ARRAY(arena, uint8_t, f->next_value_id + 1);
    for (uint32_t i = 0; i < f->nparams; i++) m[f->params[i]->id] = 1;
    const tir_op *op = f->body->first;
    for (; op != split; op = op->next) /* every thread ran these */
        for (uint32_t i = 0; i < op->nresults; i++) m[op->results[i]->id] = held_type(op->results[i]->type);
    marker k = {.m = m, .veto = TC_NEW_ARRAY(arena, uint8_t, f->next_value_id + 1)};
    /* carried values start marked and lose it when their next value is
     * not: rerun until a pass unmarks nothing */
    do {
        k.changed = false;
        for (const tir_op *o = split->next; o; o = o->next) mark_op(&k, o);
    } while (k.changed);
    return m;
}
