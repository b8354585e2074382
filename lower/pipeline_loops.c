/* pipeline_loops.c - software pipelining: the global loads that feed a
 * `dot` in a `for` loop are issued num_stages - 1 trips ahead, as
 * asynchronous copies into ring buffers in shared memory, so the memory
 * latency of later trips overlaps the math of this one.
 *
 * A load qualifies when it sits directly in the loop body, its value
 * reaches operand a or b of a dot in the same body (through casts,
 * transposes and layout conversions), it has no `other` but zero (the copies fill masked
 * elements with zeros), its copies can be cp.async of 4 bytes or more
 * (copy_run_bytes), and its pointers and mask are computed from the
 * induction variable, carried induction values and values defined before
 * the loop only, by pure ops (so they can be computed for any trip ahead
 * of time). With S stages, each such load gets a buffer of S slots, and:
 *
 *   before the loop   buf = local_alloc : smem<S x shape>
 *                     barrier          (only in a loop of its own: the
 *                                      last run's readers are done)
 *                     for s in 0 .. S-2: copy trip s into slot s, commit
 *                     (the pointer computation cloned for lo + s*step;
 *                     a trip that does not exist copies nothing)
 *   top of each trip  (trip t; the loop carries r = t % S, from 0)
 *                     async_wait S-2   (this trip's group has landed)
 *                     barrier          (everyone's has, and everyone is
 *                                      done reading the previous trip's
 *                                      slot, which the next copy reuses)
 *                     x = local_load buf, r     (replaces the load)
 *                     copy trip t + S-1 into slot (t + S-1) % S, commit:
 *                                      r == 0 ? S-1 : r - 1
 *   end of each trip  the next r: r == S-1 ? 0 : r + 1
 *   after the loop    async_wait 0     (no copy still writing)
 *
 * Counting groups: before trip t, S-1 + t groups are committed, one per
 * trip in order; trip t needs the first t+1 done, so S-2 may be in flight.
 * The ring index is carried, not computed from the induction variable:
 * ((iv - lo) / step) % S was a division and a signed remainder each trip
 * (issue 19); a compare and a select are all it takes.
 *
 * Carried induction values (lower_carried_step): a value the loop carries
 * whose yielded next value is `addptr v, d`, `add v, d` or `add d, v`, d
 * invariant in the loop (defined before it, or computed in the body by
 * pure ops from such values: `16 * stride` splat to the tile), as
 * Triton's tutorials advance `a_ptrs += BLOCK_K * stride_ak` or a k offset.
 * Its value k trips after a trip where it is v is v + k*d, so a clone for
 * trip s of the prologue uses init + s*d (init itself for s = 0), and the
 * copy in trip t for trip t + S-1 uses v + (S-1)*d, d's pure ops cloned
 * with the rest (the multiply for pointers in i64: S-1 times a 32-bit
 * step must not wrap where the trips' own 64-bit address additions do
 * not). The loop keeps carrying and updating the value; only the copies
 * read the clones. Not handled (the load stays as it is): a value advanced
 * by `sub`, by a step that changes from trip to trip, through another
 * carried value, or by several ops (`p = p + d1 + d2`); carried values of
 * `while` loops.
 *
 * The depth is the loop's num_stages, else the kernel's, else
 * LOWER_DEFAULT_NUM_STAGES; it shrinks (down to 2) until the loop's ring
 * buffers fit what is left of the kernel's budget (with, on sm_90a, the
 * two mbarriers a stage that bulk copies would add: ring_bytes), and a
 * loop whose buffers do not fit even then is left as it is. The budget counts every
 * buffer as if it had its own shared memory for the whole kernel
 * (lower/smem_plan.c may let buffers whose live ranges do not meet share
 * bytes: the budget is then conservative), the kernel's, shared by its
 * loops in order: the target's shared memory
 * per CTA (lower_smem_limit, with dynamic shared memory) less
 * LOWER_PIPELINE_SMEM_RESERVE for conversions and reductions beside the
 * rings, less buffers the kernel already has. Either way a note under
 * --verbose (lower_options.notes) says so at the loop. This is never an
 * error, not even for a depth the loop names itself: num_stages is a
 * performance hint that never changes results, the budget depends on the
 * target and on what else the kernel keeps in shared memory, and the loop
 * runs correctly unpipelined. One stage means no pipelining. The pass
 * runs after layout assignment: the copies take the loads' pointer
 * layouts, and local_load gives the load's layout, so everything after it
 * is unchanged. */
#include <string.h>

#include "lower/lower.h"

typedef struct pl_ctx {
    tir_func *f;
    tir_value **clone; /* by value id: a value's copy in the slice being cloned */
    uint32_t nclone;
    tc_strbuf *notes;  /* lower_options.notes: where budget notes go, or NULL */
    const char *file;  /* the source, for notes */
    uint64_t smem_left; /* bytes of the kernel's ring budget not yet given to a loop */
    const lower_axis_map *axis; /* the kernel's, before the pass: what its loads' copies could issue */
    bool mbarriers;     /* the target's rings may be filled by bulk copies (sm_90a): count their mbarriers */
} pl_ctx;

/* The rings of `n` loads at `stages` slots each, with (where bulk copies
 * may fill them: c->mbarriers) the two mbarrier arrays lower/tma_copies.c
 * and lower/warp_specialize.c give a ring set, `full` and `empty`, of one
 * i64 a stage each. Counted whether or not the copies will qualify: the
 * pass cannot know, and 16 bytes a stage cost a stage only when the rings
 * fill the budget to the last bytes. */
static uint64_t ring_bytes(const pl_ctx *c, tir_op *const *loads, uint32_t n, int stages) {
    uint64_t total = 0;
    if (c->mbarriers) {
        uint32_t bshape[2] = {(uint32_t)stages, 1};
        total += 2 * lower_buffer_bytes(tir_smem(tir_scalar(TIR_I64), 2, bshape));
    }
    for (uint32_t j = 0; j < n; j++) {
        tir_type t = loads[j]->results[0]->type;
        uint32_t shape[TIR_MAX_RANK] = {(uint32_t)stages};
        for (unsigned d = 0; d < t.rank; d++) shape[d + 1] = t.shape[d];
        total += lower_buffer_bytes(tir_smem(tir_element_of(t), t.rank + 1u, shape));
    }
    return total;
}

/* Whether `v` can be computed for another trip: the induction variable,
 * a carried induction value, a value from before the loop, or a pure op of
 * the body on such values. */
static bool ahead_computable(const tir_block *body, const tir_value *v, int depth) {
    if (depth > 64) return false; /* deep chains: not worth cloning */
    if (!v->def) return v->block != body || v == body->args[0] || lower_carried_step(body->parent, v->index);
    if (v->def->parent != body) return true; /* defined before the loop */
    const tir_op *op = v->def;
    if (!(tir_ops[op->code].flags & TIR_F_PURE) || op->body || op->code == TIR_OP_LOCAL_ALLOC) return false;
    for (uint32_t i = 0; i < op->noperands; i++)
        if (!ahead_computable(body, op->operands[i], depth + 1)) return false;
    return true;
}

/* Whether value v of the body reaches operand a or b of a dot in it,
 * through casts, permutes and layout conversions. */
static bool feeds_dot(const tir_block *body, const tir_value *v, int depth) {
    if (depth > 8) return false;
    for (const tir_op *op = body->first; op; op = op->next)
        for (uint32_t i = 0; i < op->noperands; i++) {
            if (op->operands[i] != v) continue;
            if ((op->code == TIR_OP_DOT || op->code == TIR_OP_DOT_IEEE) && i < 2) return true;
            if ((op->code == TIR_OP_CAST || op->code == TIR_OP_CONVERT_LAYOUT || op->code == TIR_OP_PERMUTE) &&
                feeds_dot(body, op->results[0], depth + 1))
                return true;
        }
    return false;
}

static bool is_zero(const tir_value *v) {
    if (!v->def || v->def->code != TIR_OP_CONST) return false;
    return tir_elem_is_float(tir_type_elem(v->type)) ? v->def->attr.fval == 0.0 : v->def->attr.ival == 0;
}

/* The bytes of each cp.async that copies the tile of pointers `ptrs`:
 * the thread's run of registers along the last dim (its layout's fastest),
 * as far as the axis analysis proves it consecutive, at most 16 bytes;
 * what codegen's async_copy issues where the runs are aligned (which it
 * checks when the analysis cannot prove it: a row stride of K elements).
 * A layout other than blocked is given the benefit of the doubt (16). */
static uint32_t copy_run_bytes(const lower_axis_map *axis, const tir_value *ptrs) {
    const tir_type *t = &ptrs->type;
    if (t->layout.kind != TIR_LAYOUT_BLOCKED) return LOWER_MAX_ACCESS_BYTES;
    unsigned last = t->rank - 1u;
    int64_t eb = (tir_elem_bits(tir_type_pointee(*t)) + 7) / 8;
    if (t->layout.ord[0] != last) return (uint32_t)eb;
    lower_axis_info ai = lower_axis_get(axis, ptrs);
    int64_t run = t->layout.spt[last] < t->shape[last] ? t->layout.spt[last] : t->shape[last];
    if (ai.contiguity < run) run = ai.contiguity;
    if (LOWER_MAX_ACCESS_BYTES / eb < run) run = LOWER_MAX_ACCESS_BYTES / eb;
    uint32_t p = 1;
    while ((int64_t)p * 2 <= run) p *= 2;
    return p * (uint32_t)eb;
}

static bool qualifies(const tir_block *body, const tir_op *op, const lower_axis_map *axis) {
    if (op->code != TIR_OP_LOAD || op->results[0]->type.rank == 0 || op->results[0]->type.rank >= TIR_MAX_RANK)
        return false;
    if (op->noperands > 2 && !is_zero(op->operands[2])) return false;
    /* cp.async copies 4, 8 or 16 bytes; narrower runs (f16 at unknown
     * strides) would be plain loads whose shared stores wait for them right
     * there: no overlap, only the registers of the pointers of trips ahead
     * (as Triton, which pipelines only copies of 32 bits and more) */
    if (copy_run_bytes(axis, op->operands[0]) < LOWER_CP_ASYNC_MIN_BYTES) return false;
    for (uint32_t i = 0; i < op->noperands && i < 2; i++)
        if (!ahead_computable(body, op->operands[i], 0)) return false;
    return feeds_dot(body, op->results[0], 0);
}

/* The trip a clone computes values for: its induction variable, and the
 * carried values (by body argument - 1) of the trip `ahead` trips before
 * it, from which its carried induction values follow. */
typedef struct trip_ref {
    tir_value *iv;
    tir_value *const *base;
    int ahead;
} trip_ref;

static tir_value *clone_for_trip(pl_ctx *c, tir_builder *b, const tir_block *body, tir_value *v,
                                 const trip_ref *trip);

/* Carried induction value `v` (body argument i) at the trip: base + ahead*d,
 * built as the body's own step is (addptr or add, same operand order).
 * Pointer steps are widened to i64 before the multiply, so that ahead*d
 * cannot wrap where the trips' own additions, in 64-bit addresses, do
 * not; an integer's wraps the same as `ahead` additions would. */
static tir_value *carried_ahead(pl_ctx *c, tir_builder *b, const tir_block *body, tir_value *v,
                                const trip_ref *trip) {
    tir_value *base = trip->base[v->index - 1];
    if (!trip->ahead) return base;
    tir_value *dk = clone_for_trip(c, b, body, lower_carried_step(body->parent, v->index), trip);
    const tir_op *step = body->last->operands[v->index - 1]->def;
    if (trip->ahead > 1) {
        if (step->code == TIR_OP_ADDPTR && tir_elem_bits(tir_type_elem(dk->type)) < 64) dk = tir_build_cast(b, dk, TIR_I64);
        dk = tir_build_binary(b, TIR_OP_MUL, dk, tir_build_const_int(b, dk->type, trip->ahead));
    }
    tir_value *ops[2] = {base, dk};
    if (step->operands[0] != v) ops[0] = dk, ops[1] = base; /* add d, v */
    tir_value *r = tir_build1(b, step->code, v->type, 2, ops);
    r->name = v->name;
    return r;
}

/* The copy of v for the trip: the body's pure ops that v depends on,
 * rebuilt at the builder. */
static tir_value *clone_for_trip(pl_ctx *c, tir_builder *b, const tir_block *body, tir_value *v,
                                 const trip_ref *trip) {
    if (v == body->args[0]) return trip->iv;
    if (!v->def && v->block != body) return v; /* from before the loop */
    if (v->def && v->def->parent != body) return v;
    if (v->id < c->nclone && c->clone[v->id]) return c->clone[v->id];
    if (!v->def) { /* a carried induction value (qualifies checked) */
        tir_value *r = carried_ahead(c, b, body, v, trip);
        if (v->id < c->nclone) c->clone[v->id] = r;
        return r;
    }
    const tir_op *op = v->def;
    tir_value *ops[TIR_MAX_OPERANDS];
    for (uint32_t i = 0; i < op->noperands; i++) ops[i] = clone_for_trip(c, b, body, op->operands[i], trip);
    tir_type types[1] = {v->type};
    tir_op *n = tir_build_op(b, op->code, op->noperands, ops, 1, types);
    n->attr = op->attr;
    n->loc = op->loc;
    if (v->id < c->nclone) c->clone[v->id] = n->results[0];
    return n->results[0];
}

/* async_copy of load `ld` for the trip into `slot` of `buf`, the mask cut
 * to trips that exist (in_range: iv < hi). */
static void copy_trip(pl_ctx *c, tir_builder *b, const tir_op *loop, const tir_op *ld, tir_value *buf,
                      tir_value *slot, const trip_ref *trip, tir_value *in_range) {
    const tir_block *body = loop->body;
    tir_value *ptrs = clone_for_trip(c, b, body, ld->operands[0], trip);
    tir_value *mask = tir_build_splat(b, in_range, tir_with_elem(ptrs->type, in_range->type));
    if (ld->noperands > 1) mask = tir_build_binary(b, TIR_OP_AND, clone_for_trip(c, b, body, ld->operands[1], trip), mask);
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

/* c ? x : y, for i32 scalars */
static tir_value *select_i32(tir_builder *b, tir_value *c, tir_value *x, tir_value *y) {
    tir_value *ops[3] = {c, x, y};
    return tir_build1(b, TIR_OP_SELECT, tir_scalar(TIR_I32), 3, ops);
}

/* Under --verbose: the loop gets `stages` stages (0: none) instead of the
 * `asked` ones, because the ring buffers of `asked` (or of 2) stages would
 * not fit the budget. */
static void note_budget(const pl_ctx *c, const tir_op *loop, int asked, int stages, tir_op *const *loads,
                        uint32_t n) {
    if (!c->notes) return;
    const char *file = c->file ? c->file : "<input>";
    if (loop->loc.line) tc_strbuf_printf(c->notes, "%s:%u:%u: note: ", file, loop->loc.line, loop->loc.col);
    else tc_strbuf_printf(c->notes, "%s: note: ", file); /* IR read without locations */
    const char *with = c->mbarriers ? " (with their mbarriers)" : "";
    if (stages)
        tc_strbuf_printf(c->notes, "software pipelining: %d stages instead of %d: the ring buffers of %d stages%s "
                                   "need %llu bytes of shared memory (budget %llu)\n",
                         stages, asked, asked, with, (unsigned long long)ring_bytes(c, loads, n, asked),
                         (unsigned long long)c->smem_left);
    else
        tc_strbuf_printf(c->notes, "software pipelining dropped (%d stages asked): even the ring buffers of 2 "
                                   "stages%s need %llu bytes of shared memory (budget %llu)\n",
                         asked, with, (unsigned long long)ring_bytes(c, loads, n, 2), (unsigned long long)c->smem_left);
}

/* Whether op runs more than once a program: inside a `for` or `while`. */
static bool inside_loop(const tir_op *op) {
    for (const tir_op *o = op->parent ? op->parent->parent : NULL; o; o = o->parent ? o->parent->parent : NULL)
        if (o->code == TIR_OP_FOR || o->code == TIR_OP_WHILE) return true;
    return false;
}

static void pipeline_loop(pl_ctx *c, tir_op *loop) {
    tir_block *body = loop->body;
    tir_op *loads[TIR_MAX_OPERANDS];
    uint32_t n = 0;
    for (tir_op *op = body->first; op && n < TIR_MAX_OPERANDS; op = op->next)
        if (qualifies(body, op, c->axis)) loads[n++] = op;
    if (!n) return;
    int asked = loop->num_stages ? loop->num_stages : c->f->num_stages ? c->f->num_stages : LOWER_DEFAULT_NUM_STAGES;
    int stages = asked;
    while (stages > 2 && ring_bytes(c, loads, n, stages) > c->smem_left) stages--;
    bool fits = ring_bytes(c, loads, n, stages) <= c->smem_left;
    if (asked >= 2 && (stages != asked || !fits)) note_budget(c, loop, asked, fits ? stages : 0, loads, n);
    if (stages < 2 || !fits) return;
    c->smem_left -= ring_bytes(c, loads, n, stages);

    tir_builder b = {0};
    b.module = c->f->module;
    b.func = c->f;
    b.loc = loop->loc;
    tir_value *lo = loop->operands[0], *step = loop->operands[2];

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
    /* run again by an outer loop, the prologue's copies (plain stores on
     * the element path) overwrite slots the last run read after its last
     * barrier: the last trip's and the fragments prefetched for a trip
     * that never came (prefetch_fragments) */
    if (inside_loop(loop)) tir_build_op(&b, TIR_OP_BARRIER, 0, NULL, 0, NULL);
    for (int s = 0; s < stages - 1; s++) {
        tir_value *iv = s ? tir_build_binary(&b, TIR_OP_ADD, lo,
                                             tir_build_binary(&b, TIR_OP_MUL, step, tir_build_const_int(&b, lo->type, s)))
                          : lo;
        reset_clones(c);
        trip_ref trip = {.iv = iv, .base = loop->operands + 3, .ahead = s}; /* carried values: the inits, s trips before */
        tir_value *in_range = tir_build_binary(&b, TIR_OP_LT, iv, loop->operands[1]), *slot = i32c(&b, s);
        for (uint32_t j = 0; j < n; j++) copy_trip(c, &b, loop, loads[j], bufs[j], slot, &trip, in_range);
        tir_build_op(&b, TIR_OP_ASYNC_COMMIT, 0, NULL, 0, NULL);
    }

    /* the ring index, carried: this trip's slot, 0 on the first */
    tir_value *rslot = tir_for_add_carried(loop, i32c(&b, 0));

    /* top of each trip: wait, read this trip's slot, start trip t + S-1
     * into the slot before this one (the one trip t - 1 read) */
    tir_builder_before(&b, body->first);
    tir_value *iv = body->args[0];
    tir_value *last = i32c(&b, stages - 1);
    tir_value *wslot = select_i32(&b, tir_build_binary(&b, TIR_OP_EQ, rslot, i32c(&b, 0)), last,
                                        tir_build_binary(&b, TIR_OP_SUB, rslot, i32c(&b, 1)));
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
    trip_ref next = {.iv = next_iv, .base = body->args + 1, .ahead = stages - 1}; /* carried values: this trip's */
    tir_value *next_in_range = tir_build_binary(&b, TIR_OP_LT, next_iv, loop->operands[1]);
    for (uint32_t j = 0; j < n; j++) copy_trip(c, &b, loop, loads[j], bufs[j], wslot, &next, next_in_range);
    tir_build_op(&b, TIR_OP_ASYNC_COMMIT, 0, NULL, 0, NULL);
    for (uint32_t j = 0; j < n; j++) tir_op_remove(loads[j]);
    remove_dead(c->f, body);

    /* the next trip's slot: the one after this, wrapping */
    tir_op *yield = body->last;
    tir_builder_before(&b, yield);
    yield->operands[yield->noperands - 1] = select_i32(
        &b, tir_build_binary(&b, TIR_OP_EQ, rslot, last), i32c(&b, 0), tir_build_binary(&b, TIR_OP_ADD, rslot, i32c(&b, 1)));

    /* after the loop: no copy may still be writing the buffers */
    if (loop->next) tir_builder_before(&b, loop->next);
    else tir_builder_at_end(&b, loop->parent);
    tir_build_op(&b, TIR_OP_ASYNC_WAIT, 0, NULL, 0, NULL)->attr.axis = 0;
}

bool lower_pipeline_loops(tir_module *m, const lower_options *opt, tc_diag *diag) {
    (void)diag;
    uint64_t budget = lower_buffer_budget(opt->compile.arch);
    tc_arena *arena = tc_arena_new();
    for (tir_func *f = m->funcs; f; f = f->next) {
        /* the option wins over the kernel's own depth and is recorded on
         * it, as the layout pass does with num_warps (the front end has
         * already recorded it on kernels from .tile source) */
        if (opt->compile.num_stages) f->num_stages = opt->compile.num_stages;
        uint32_t nloops;
        tir_op **loops = lower_loops(f, false, arena, &nloops);
        uint64_t have = lower_func_buffer_bytes(f);
        pl_ctx c = {.f = f, .notes = opt->notes, .file = m->source_name, .smem_left = budget > have ? budget - have : 0,
                    .axis = lower_axis_analyze(f, arena), .mbarriers = lower_has_wgmma(opt->compile.arch)};
        /* clones are memoized by the ids of values that exist now; the
         * values the pass makes are never cloned */
        c.nclone = f->next_value_id;
        c.clone = TC_NEW_ARRAY(arena, tir_value *, c.nclone + 1);
        for (uint32_t i = 0; i < nloops; i++) pipeline_loop(&c, loops[i]);
    }
    tc_arena_free(arena);
    return true;
}
