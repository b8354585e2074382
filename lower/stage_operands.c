/* stage_operands.c - a dot's operands reach their mma fragments from
 * shared memory, in a swizzled layout that ldmatrix reads without bank
 * conflicts, instead of through the generic layout conversion (every
 * thread storing its registers to scratch, a barrier, and every thread
 * loading its fragment element by element).
 *
 * The layout pass gives a dot's a and b a `convert_layout` to their
 * dot_op layout. This pass (after pipeline_loops) replaces each such
 * conversion of a 2-D tile x:
 *
 *  1. x = local_load buf, slot (a pipelined ring, read by nothing else):
 *     the conversion becomes `local_load buf, slot` straight into the
 *     dot_op layout, and the ring gets the swizzled shared layout (its
 *     rows along the tile's last dim, as the copies write them).
 *  2. x = permute [1, 0] of such a local_load (an operand loaded
 *     transposed, e.g. B^T of a linear layer): the ring's slots take the
 *     permuted shape with dim 0 contiguous (the same bytes, where the
 *     copies' pointers are permuted to match, which only renames their
 *     registers), and the conversion again becomes a local_load.
 *  3. anything else, unless the conversion only renames registers (an
 *     accumulator of 16-bit elements as the next dot's a, with the warps
 *     all along M, as the layout pass arranges for attention's p v):
 *     x goes through a buffer of its own, placed right
 *     after x is defined (so an operand defined before a loop is staged
 *     once, not on every trip):
 *         buf = local_alloc : smem<1 x shape, #shared<...>>
 *         barrier                      (inside a loop: last trip's readers are done)
 *         local_store buf, 0, x
 *         barrier
 *         y = local_load buf, 0 : the dot_op layout
 *     while all the kernel's buffers fit its budget, the target's shared
 *     memory (lower_smem_limit) less LOWER_PIPELINE_SMEM_RESERVE, as the
 *     rings do; past it the conversion stays as it is.
 *
 * On a target with wgmma (sm_90a), a dot that fits it keeps b, and a
 * where its slot suits, in shared memory after any of the three cases:
 * its local_load gives a dot_smem tile just before the dot, the buffer
 * takes the layout wgmma's descriptors read, and `fence_async` goes
 * before the barrier the writers pass (leave_in_smem).
 *
 * dot_ieee (FMAs) takes cases 1 and 2 too: the layout pass leaves its
 * operands loaded in a loop in their loads' layouts, and a ring read only
 * by the conversion to the FMA dot's layout (whole rows of a, whole
 * columns of b a thread) is read straight into it, element by element
 * (a plain ring keeps no shared layout; a turned one gets the swizzle).
 *
 * The swizzle (tir_shared_for_dot) keeps 16-byte chunks together and
 * xors their position in a row with the row's index, so the 8 rows of an
 * 8x8 matrix that ldmatrix reads sit in 8 different bank groups. Values
 * do not change: the interpreter ignores shared layouts. */
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"

typedef struct stage_ctx {
    tir_func *f;
    uint64_t buffer_bytes; /* the kernel's local_alloc buffers so far */
    uint64_t budget;       /* what they may take */
} stage_ctx;

static unsigned elem_bytes(tir_elem e) { return (tir_elem_bits(e) + 7) / 8; }

/* The single user op of v (NULL when v has none or several), counting
 * each use: an op using v twice is two uses. */
typedef struct use_count {
    const tir_value *v;
    tir_op *user;
    uint32_t n;
} use_count;

static void count_use(tir_op *op, void *p) {
    use_count *u = p;
    for (uint32_t i = 0; i < op->noperands; i++)
        if (op->operands[i] == u->v) u->n++, u->user = op;
}

static tir_op *only_user(tir_func *f, const tir_value *v) {
    use_count u = {.v = v};
    tir_walk(f, count_use, &u);
    return u.n == 1 ? u.user : NULL;
}

/* Whether every use of buffer `buf` is an async_copy into it or the
 * local_load `ld`: then the pass may change where its elements sit. */
typedef struct ring_users {
    const tir_value *buf;
    const tir_op *ld;
    bool ok;
} ring_users;

static void check_ring_user(tir_op *op, void *p) {
    ring_users *r = p;
    for (uint32_t i = 0; i < op->noperands; i++)
        if (op->operands[i] == r->buf && !(i == 0 && (op->code == TIR_OP_ASYNC_COPY || op == r->ld))) r->ok = false;
}

static bool ring_only(tir_func *f, const tir_value *buf, const tir_op *ld) {
    ring_users r = {.buf = buf, .ld = ld, .ok = true};
    tir_walk(f, check_ring_user, &r);
    return r.ok;
}

/* A local_load of buf at cv, in cv's result type, in cv's place. */
static tir_op *load_in_place(stage_ctx *c, tir_op *cv, tir_value *buf, tir_value *slot) {
    tir_builder b = {0};
    b.module = c->f->module;
    b.func = c->f;
    b.loc = cv->loc;
    tir_builder_before(&b, cv);
    tir_value *ops[2] = {buf, slot};
    tir_op *ld = tir_build_op(&b, TIR_OP_LOCAL_LOAD, 2, ops, 1, &cv->results[0]->type);
    ld->results[0]->name = cv->operands[0]->name;
    tir_replace_all_uses(c->f, cv->results[0], ld->results[0]);
    tir_op_remove(cv);
    return ld;
}

static void remove_if_unused(tir_func *f, tir_op *op) {
    if (op && !tir_value_has_uses(f, op->results[0])) tir_op_remove(op);
}

/* Case 1: x is read from a ring by nothing but this conversion. */
static tir_op *stage_from_ring(stage_ctx *c, tir_op *cv) {
    tir_value *x = cv->operands[0];
    tir_op *ld = x->def;
    if (!ld || ld->code != TIR_OP_LOCAL_LOAD || !ring_only(c->f, ld->operands[0], ld)) return NULL;
    tir_value *buf = ld->operands[0];
    if (buf->type.layout.kind == TIR_LAYOUT_NONE && cv->results[0]->type.layout.kind == TIR_LAYOUT_DOT_OP)
        buf->type.layout = tir_shared_for_dot(&buf->type.shape[1], 1, elem_bytes(tir_type_elem(buf->type)));
    tir_op *y = load_in_place(c, cv, buf, ld->operands[1]);
    remove_if_unused(c->f, ld);
    return y;
}

/* Case 2: x = permute [1, 0] (local_load ring): the ring turns around. */
typedef struct copies {
    const tir_value *buf;
    tir_op *op[TIR_MAX_OPERANDS];
    uint32_t n;
    bool overflow;
} copies;

static void find_copy(tir_op *op, void *p) {
    copies *k = p;
    if (op->code != TIR_OP_ASYNC_COPY || op->operands[0] != k->buf) return;
    if (k->n < TIR_MAX_OPERANDS) k->op[k->n++] = op;
    else k->overflow = true;
}

static tir_value *permuted(tir_builder *b, tir_value *v) {
    static const unsigned swap[2] = {1, 0};
    static const uint8_t swap8[2] = {1, 0};
    tir_value *p = tir_build_permute(b, v, swap);
    p->type.layout = tir_layout_permute(&v->type.layout, swap8); /* the same registers */
    return p;
}

static tir_op *stage_from_turned_ring(stage_ctx *c, tir_op *cv) {
    tir_op *perm = cv->operands[0]->def;
    if (!perm || perm->code != TIR_OP_PERMUTE || perm->attr.perm[0] != 1 || perm->attr.perm[1] != 0) return NULL;
    tir_op *ld = perm->operands[0]->def;
    if (!ld || ld->code != TIR_OP_LOCAL_LOAD || only_user(c->f, ld->results[0]) != perm ||
        only_user(c->f, perm->results[0]) != cv)
        return NULL;
    tir_value *buf = ld->operands[0];
    if (buf->type.layout.kind != TIR_LAYOUT_NONE || !ring_only(c->f, buf, ld)) return NULL;
    copies k = {.buf = buf};
    tir_walk(c->f, find_copy, &k);
    if (k.overflow) return NULL;
    for (uint32_t i = 0; i < k.n; i++)
        if (k.op[i]->operands[2]->type.layout.kind != TIR_LAYOUT_BLOCKED) return NULL;
    /* the slot dims swap; what was the last (contiguous) dim is now dim 0 */
    uint32_t t = buf->type.shape[1];
    buf->type.shape[1] = buf->type.shape[2];
    buf->type.shape[2] = t;
    buf->type.layout = tir_shared_for_dot(&buf->type.shape[1], 0, elem_bytes(tir_type_elem(buf->type)));
    tir_builder b = {0};
    b.module = c->f->module;
    b.func = c->f;
    for (uint32_t i = 0; i < k.n; i++) {
        tir_op *cp = k.op[i];
        b.loc = cp->loc;
        tir_builder_before(&b, cp);
        for (uint32_t j = 2; j < cp->noperands; j++) cp->operands[j] = permuted(&b, cp->operands[j]);
    }
    tir_op *y = load_in_place(c, cv, buf, ld->operands[1]);
    tir_op_remove(perm);
    tir_op_remove(ld);
    return y;
}

/* Whether op sits in a loop's body (its buffer is then rewritten on the
 * next trip). */
static bool in_loop(const tir_block *blk) {
    for (; blk && blk->parent; blk = blk->parent->parent)
        if (blk->parent->code == TIR_OP_FOR || blk->parent->code == TIR_OP_WHILE) return true;
    return false;
}

/* Case 3: x through a buffer of its own, right after x is defined. */
static tir_op *stage_through_buffer(stage_ctx *c, tir_op *cv) {
    tir_value *x = cv->operands[0];
    tir_type xt = x->type;
    if (xt.rank != 2 || xt.elem == TIR_PTR || xt.elem == TIR_I1) return NULL;
    if (c->buffer_bytes + lower_buffer_bytes(xt) > c->budget) return NULL;
    c->buffer_bytes += lower_buffer_bytes(xt);
    tir_builder b = {0};
    b.module = c->f->module;
    b.func = c->f;
    b.loc = cv->loc;
    tir_block *blk = x->def ? x->def->parent : x->block;
    if (x->def && x->def->next) tir_builder_before(&b, x->def->next);
    else if (x->def) tir_builder_at_end(&b, blk);
    else if (blk->first) tir_builder_before(&b, blk->first);
    else tir_builder_at_end(&b, blk);
    /* rows along the dim whose elements a thread holds together, so its
     * stores go in runs */
    unsigned contig = xt.layout.kind == TIR_LAYOUT_BLOCKED ? xt.layout.ord[0] : 1;
    uint32_t shape[3] = {1, xt.shape[0], xt.shape[1]};
    tir_type bt = tir_smem(tir_element_of(xt), 3, shape);
    bt.layout = tir_shared_for_dot(xt.shape, contig, elem_bytes(tir_type_elem(xt)));
    tir_value *buf = tir_build_op(&b, TIR_OP_LOCAL_ALLOC, 0, NULL, 1, &bt)->results[0];
    tir_value *slot = tir_build_const_int(&b, tir_scalar(TIR_I32), 0);
    if (in_loop(blk)) tir_build_op(&b, TIR_OP_BARRIER, 0, NULL, 0, NULL);
    tir_value *ops[3] = {buf, slot, x};
    tir_build_op(&b, TIR_OP_LOCAL_STORE, 3, ops, 0, NULL);
    tir_build_op(&b, TIR_OP_BARRIER, 0, NULL, 0, NULL);
    tir_value *lops[2] = {buf, slot};
    tir_op *ld = tir_build_op(&b, TIR_OP_LOCAL_LOAD, 2, lops, 1, &cv->results[0]->type);
    ld->results[0]->name = x->name;
    tir_replace_all_uses(c->f, cv->results[0], ld->results[0]);
    tir_op_remove(cv);
    return ld;
}

/* On a target with wgmma, a staged operand of a dot that fits it
 * (lower_wgmma_dot_ok) stays in shared memory, where wgmma reads it
 * through matrix descriptors: its local_load ld gives a dot_smem tile,
 * moved to just before the dot (nothing may write the slot between the
 * two: the verifier's rule), and the buffer takes the layout the
 * descriptors know (tir_shared_for_wgmma: its rows along K, or, for f16
 * and bf16 only, along M or N, transposed). The slot's writers (copies
 * that landed by the async_wait, or a local_store) write in the generic
 * proxy and wgmma reads in the async one, so each thread fences its
 * writes before the barrier that precedes ld: `fence_async`. Stays in
 * registers where any of that does not hold. */
static tir_op *smem_barrier(const tir_op *ld) { /* the barrier before ld, which its writers pass */
    tir_op *bar = ld->prev;
    while (bar && bar->code != TIR_OP_BARRIER) bar = bar->prev;
    return bar;
}

/* Whether operand idx of dot, made by local_load ld, may stay in shared
 * memory; *wl gets the buffer's layout for it. */
static bool can_leave_in_smem(stage_ctx *c, const tir_op *dot, unsigned idx, const tir_op *ld, tir_layout *wl) {
    const tir_value *y = ld->results[0], *buf = ld->operands[0];
    const tir_block *in = dot->parent; /* ld's block holds the dot's (an operand staged before a loop) */
    while (in && in != ld->parent) in = in->parent ? in->parent->parent : NULL;
    if (only_user(c->f, y) != dot || !in || ld->attr.offset[0] || ld->attr.offset[1]) return false;
    tir_elem e = tir_type_elem(buf->type);
    if (buf->type.rank != 3 || buf->type.shape[1] != y->type.shape[0] || buf->type.shape[2] != y->type.shape[1])
        return false;
    unsigned contig = buf->type.layout.kind == TIR_LAYOUT_SHARED ? buf->type.layout.ord[0] : 1;
    bool k_major = contig == (idx == 0 ? 1u : 0u);
    if (!k_major && e != TIR_F16 && e != TIR_BF16) return false; /* wgmma transposes only 16-bit operands */
    *wl = tir_shared_for_wgmma(&buf->type.shape[1], contig, elem_bytes(e));
    return wl->kind == TIR_LAYOUT_SHARED && smem_barrier(ld);
}

static void leave_in_smem(stage_ctx *c, tir_op *dot, unsigned idx, tir_op *ld, const tir_layout *wl) {
    tir_value *y = ld->results[0], *buf = ld->operands[0];
    tir_op *bar = smem_barrier(ld);
    buf->type.layout = *wl;
    y->type.layout = tir_layout_dot_smem(&dot->results[0]->type.layout, idx);
    tir_op_move_before(ld, dot);
    if (bar->prev && bar->prev->code == TIR_OP_FENCE_ASYNC) return; /* the other operand's */
    tir_builder b = {0};
    b.module = c->f->module;
    b.func = c->f;
    b.loc = bar->loc;
    tir_builder_before(&b, bar);
    tir_build_op(&b, TIR_OP_FENCE_ASYNC, 0, NULL, 0, NULL);
}

/* Whether conversion cv only renames registers (an accumulator as the
 * next dot's a, the warps all along M: tir_mma_rename_map): nothing to
 * stage. */
static bool renames_registers(const tir_func *f, const tir_op *cv) {
    const tir_type *x = &cv->operands[0]->type, *r = &cv->results[0]->type;
    uint32_t n = r->rank == 2 && (r->layout.kind == TIR_LAYOUT_DOT_OP) ? tir_mma_regs(&r->layout, r->shape) : 0;
    if (!n || !x->rank || (x->layout.kind != TIR_LAYOUT_MMA && x->layout.kind != TIR_LAYOUT_DOT_OP)) return false;
    uint32_t *map = malloc(sizeof(uint32_t) * n);
    bool ok = map && tir_mma_rename_map(x, r, (uint32_t)LOWER_WARP_SIZE * (uint32_t)(f->num_warps ? f->num_warps : 1), map);
    free(map);
    return ok;
}

/* The conversions to stage: each dot's a and b, where a convert_layout
 * to a dot_op layout makes them, with the (first) dot and operand. */
typedef struct conv_list {
    tir_op *op[LOWER_MAX_STAGED_OPERANDS], *dot[LOWER_MAX_STAGED_OPERANDS];
    tir_op *ld[LOWER_MAX_STAGED_OPERANDS]; /* what staged it (the local_load), or NULL */
    unsigned idx[LOWER_MAX_STAGED_OPERANDS];
    uint32_t n;
} conv_list;

static void find_conversions(tir_op *op, void *p) {
    conv_list *l = p;
    if (op->code != TIR_OP_DOT && op->code != TIR_OP_DOT_IEEE) return;
    for (uint32_t i = 0; i < 2; i++) {
        tir_op *cv = op->operands[i]->def;
        tir_layout_kind want = op->code == TIR_OP_DOT ? TIR_LAYOUT_DOT_OP : TIR_LAYOUT_BLOCKED;
        if (!cv || cv->code != TIR_OP_CONVERT_LAYOUT || cv->results[0]->type.layout.kind != want) continue;
        bool seen = false;
        for (uint32_t k = 0; k < l->n; k++) seen |= l->op[k] == cv;
        if (!seen && l->n < LOWER_MAX_STAGED_OPERANDS) l->op[l->n] = cv, l->dot[l->n] = op, l->idx[l->n++] = i;
    }
}

bool lower_stage_operands(tir_module *m, const lower_options *opt, tc_diag *diag) {
    (void)diag;
    uint64_t budget = lower_buffer_budget(opt->compile.arch);
    bool wgmma = lower_has_wgmma(opt->compile.arch);
    tc_arena *arena = tc_arena_new();
    for (tir_func *f = m->funcs; f; f = f->next) {
        stage_ctx c = {.f = f, .buffer_bytes = lower_func_buffer_bytes(f), .budget = budget};
        conv_list *l = TC_NEW(arena, conv_list);
        tir_walk(f, find_conversions, l);
        for (uint32_t i = 0; i < l->n; i++) {
            tir_op *cv = l->op[i];
            l->ld[i] = NULL;
            if (!tir_value_has_uses(f, cv->results[0])) continue;
            if (cv->results[0]->type.layout.kind != TIR_LAYOUT_DOT_OP) { /* dot_ieee's, from a ring only */
                if (!stage_from_ring(&c, cv)) stage_from_turned_ring(&c, cv);
                continue;
            }
            if (renames_registers(f, cv)) continue;
            tir_op *ld = stage_from_ring(&c, cv);
            if (!ld) ld = stage_from_turned_ring(&c, cv);
            if (!ld) ld = stage_through_buffer(&c, cv);
            l->ld[i] = ld;
        }
        /* wgmma reads b from shared memory, and a from there or registers */
        for (uint32_t i = 0; wgmma && i < l->n; i++) {
            tir_op *dot = l->dot[i];
            tir_layout wl[2];
            if (l->idx[i] != 1 || !l->ld[i] || !lower_wgmma_dot_ok(dot, (unsigned)f->num_warps) ||
                !can_leave_in_smem(&c, dot, 1, l->ld[i], &wl[1]))
                continue;
            for (uint32_t j = 0; j < l->n; j++)
                if (l->dot[j] == dot && l->idx[j] == 0 && l->ld[j] && can_leave_in_smem(&c, dot, 0, l->ld[j], &wl[0]))
                    leave_in_smem(&c, dot, 0, l->ld[j], &wl[0]);
            leave_in_smem(&c, dot, 1, l->ld[i], &wl[1]);
        }
    }
    tc_arena_free(arena);
    return true;
}
