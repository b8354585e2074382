/* async_dots.c - on sm_90a, a pipelined loop's wgmma dot keeps running
 * while the next trip begins: the dot becomes dot_async, waited for one
 * trip later, so the tensor cores work through the barrier, the copies
 * and the address arithmetic of the trip after (Triton's pipelined
 * wgmma does the same).
 *
 * A `for` loop qualifies when its body holds, at its top level:
 *  - a dot that wgmma takes (lower_wgmma_dot_ok, b a dot_smem tile) whose
 *    acc is one of the body's carried arguments and whose result is
 *    yielded as that argument and used by nothing else: wgmma's next dot
 *    may read a pending accumulator of its own shape, nothing else may;
 *  - no other dot (a dot waits for every wgmma before it, which would
 *    undo the overlap; flash attention's scores are read in the trip);
 *  - for each buffer a dot_smem operand names, no write in the body but
 *    async_copy ops standing before the dot, among them only async_copy,
 *    async_commit and ops without effects: the refills of the ring slot
 *    the previous trip read (pipeline_loops), which can wait.
 * Then:
 *    the dot becomes dot_async (same operands, same value);
 *    right after it, `dot_wait 1`: the previous trip's dot_async is done,
 *      so the slots it read may be refilled; with more than one warpgroup
 *      a barrier after it, since each warpgroup's wait covers only its
 *      own wgmmas (wgmma.wait_group waits for the executing threads'
 *      groups) and a refill's copies do not follow warpgroup lines;
 *    the body's async_copy and async_commit ops before the dot move, in
 *      their order, to after that wait (one group a trip still: the
 *      top-of-trip async_wait counts the same);
 *    after the loop, `r = dot_wait 0, result` gives the carried value
 *      back, and the loop's other users read r.
 * A loop of no trips carries its initial value, which no dot_async
 * wrote: the wait finds nothing pending. */
#include "lower/lower.h"

static void walk_block(tir_block *b, void (*fn)(tir_op *, void *), void *ctx) {
    for (tir_op *op = b->first; op; op = op->next) {
        fn(op, ctx);
        if (op->body) walk_block(op->body, fn, ctx);
        if (op->body2) walk_block(op->body2, fn, ctx);
    }
}

typedef struct use_count {
    const tir_value *a, *b;
    uint32_t n; /* operands that are a or b */
} use_count;

static void count_uses(tir_op *op, void *p) {
    use_count *u = p;
    for (uint32_t k = 0; k < op->noperands; k++) u->n += op->operands[k] == u->a || op->operands[k] == u->b;
}

/* The loop's dot that could run asynchronously, or NULL. */
static tir_op *loop_dot(const tir_op *loop, unsigned num_warps) {
    tir_block *body = loop->body;
    tir_op *dot = NULL, *y = body->last;
    if (!y || y->code != TIR_OP_YIELD) return NULL;
    for (tir_op *op = body->first; op; op = op->next) /* top level: a nested dot's wait 0 only waits sooner */
        if (op->code == TIR_OP_DOT || op->code == TIR_OP_DOT_IEEE || op->code == TIR_OP_DOT_ASYNC) {
            if (dot) return NULL;
            dot = op;
        }
    if (!dot || !lower_wgmma_dot_ok(dot, num_warps) || dot->operands[1]->type.layout.kind != TIR_LAYOUT_DOT_SMEM)
        return NULL;
    const tir_value *acc = dot->operands[2], *res = dot->results[0];
    if (acc->block != body || acc->def || acc->index == 0) return NULL; /* a carried argument */
    uint32_t i = acc->index - 1;
    if (i >= y->noperands || y->operands[i] != res) return NULL;
    use_count u = {.a = acc, .b = res};
    walk_block(body, count_uses, &u); /* nested regions too: an `if` storing acc reads it */
    return u.n == 2 ? dot : NULL;     /* the yield's and the dot's: nothing else reads them */
}

/* Whether op, inside the body or below it, writes buffer buf. */
typedef struct writes {
    const tir_value *buf;
    const tir_op *dot;
    bool other; /* a write that cannot wait: not an async_copy before the dot at the top level */
} writes;

static void find_writes(tir_op *op, void *p) {
    writes *w = p;
    if ((op->code != TIR_OP_ASYNC_COPY && op->code != TIR_OP_LOCAL_STORE) || op->operands[0] != w->buf) return;
    bool before = false;
    for (const tir_op *o = op; o && !before; o = o->next) before = o == w->dot;
    if (op->code != TIR_OP_ASYNC_COPY || op->parent != w->dot->parent || !before) w->other = true;
}

/* The copies can move past the dot: between the first of them and the
 * dot, nothing with an effect but copies and commits (the dot's own
 * local_loads read). */
static bool copies_can_wait(const tir_op *dot, tir_op **first) {
    *first = NULL;
    for (tir_op *op = dot->parent->first; op != dot; op = op->next)
        if (op->code == TIR_OP_ASYNC_COPY && !*first) *first = op;
    for (const tir_op *op = *first ? *first : dot; op != dot; op = op->next) {
        unsigned fl = tir_ops[op->code].flags;
        if (op->code != TIR_OP_ASYNC_COPY && op->code != TIR_OP_ASYNC_COMMIT && (fl & (TIR_F_EFFECT | TIR_F_REGION)))
            return false;
    }
    return true;
}

static void make_async(tir_func *f, tir_op *loop, tir_op *dot) {
    tir_builder b = {0};
    b.module = f->module;
    b.func = f;
    b.loc = dot->loc;
    /* the dot_async in the dot's place */
    tir_builder_before(&b, dot);
    tir_value *ops[3] = {dot->operands[0], dot->operands[1], dot->operands[2]};
    tir_op *da = tir_build_op(&b, TIR_OP_DOT_ASYNC, 3, ops, 1, &dot->results[0]->type);
    da->results[0]->name = dot->results[0]->name;
    tir_replace_all_uses(f, dot->results[0], da->results[0]);
    tir_op_remove(dot);
    /* the wait for the trip before, then the refills */
    tir_op *after = da->next;
    tir_builder_before(&b, after);
    tir_op *wait = tir_build_op(&b, TIR_OP_DOT_WAIT, 0, NULL, 0, NULL);
    wait->attr.axis = 1;
    /* a warpgroup's wait covers its own wgmmas only (wgmma.wait_group):
     * with several, every one must be past its wait before any thread
     * refills a slot another warpgroup's wgmma may still read */
    if (f->num_warps > LOWER_WARPGROUP_WARPS) tir_build_op(&b, TIR_OP_BARRIER, 0, NULL, 0, NULL);
    tir_op *next;
    for (tir_op *op = da->parent->first; op != da; op = next) {
        next = op->next;
        if (op->code == TIR_OP_ASYNC_COPY || op->code == TIR_OP_ASYNC_COMMIT) tir_op_move_before(op, after);
    }
    /* after the loop: the carried value given back */
    tir_value *out = loop->results[da->operands[2]->index - 1];
    b.loc = loop->loc;
    if (loop->next) tir_builder_before(&b, loop->next);
    else tir_builder_at_end(&b, loop->parent);
    tir_op *back = tir_build_op(&b, TIR_OP_DOT_WAIT, 1, &out, 1, &out->type);
    back->attr.axis = 0;
    back->results[0]->name = out->name;
    tir_replace_all_uses(f, out, back->results[0]);
    back->operands[0] = out; /* the wait itself reads the loop's */
}

bool lower_async_dots(tir_module *m, const lower_options *opt, tc_diag *diag) {
    (void)diag;
    if (!lower_has_wgmma(opt->compile.arch)) return true;
    tc_arena *arena = tc_arena_new();
    for (tir_func *f = m->funcs; f; f = f->next) {
        uint32_t n;
        tir_op **loops = lower_loops(f, false, arena, &n);
        for (uint32_t i = 0; i < n; i++) {
            tir_op *dot = loop_dot(loops[i], f->num_warps ? (unsigned)f->num_warps : 1), *first;
            if (!dot || !copies_can_wait(dot, &first)) continue;
            bool ok = true;
            for (uint32_t k = 0; k < 2 && ok; k++) {
                const tir_value *x = dot->operands[k];
                if (x->type.layout.kind != TIR_LAYOUT_DOT_SMEM) continue;
                writes w = {.buf = x->def->operands[0], .dot = dot};
                walk_block(loops[i]->body, find_writes, &w);
                ok = !w.other;
            }
            if (ok) make_async(f, loops[i], dot);
        }
    }
    tc_arena_free(arena);
    return true;
}
