/* layout.c - gives every tile a layout: how its elements spread over the
 * threads of a program instance.
 *
 * A blocked layout gives each thread `spt` consecutive elements per dim;
 * `tpw` threads of a warp and `wpc` warps tile the rest, dims taken in
 * `ord` (fastest-varying first); the pattern repeats over larger tiles and
 * wraps (replicates) over smaller ones. A slice layout is a blocked layout
 * of one dim more with that dim dropped: what a reduction along the dim
 * gives and what expand_dims needs, so `sum(x, axis=1)[:, None]` and
 * `rows[:, None]` stay in registers.
 *
 * The algorithm:
 *  1. Classes. Values that must share a layout are joined (union-find):
 *     the tiles of an elementwise op (loads, stores, print and assert
 *     included), a broadcast's operand and result, a scan's (cumsum)
 *     operand and result, a loop's init, body argument, yielded value and
 *     result (a while's through both its blocks), and an if's result with
 *     what each branch yields for it.
 *  2. Wishes. Some ops ask for a layout derived from another class's: a
 *     reduction's result wants the slice of its operand's layout, an
 *     expand_dims operand wants the slice of its result's, a permute's
 *     result wants its operand's layout permuted (then it moves no data),
 *     and the a and b of a dot on FMAs (dot_ieee) want its result's
 *     blocked layout holding whole rows of a (spt[1] = K) and whole
 *     columns of b (spt[0] = K), so each thread has what its results need
 *     (but for operands loaded in a loop's body, which keep their loads'
 *     layouts: see collect_wishes).
 *  3. Choice. Classes are decided from the highest rank down (slices come
 *     from the rank above). Within a rank, every class whose first
 *     satisfiable wish has a decided source takes it, until none can; then
 *     the first undecided class in program order that waits on no other
 *     takes the default blocked layout for the smallest shape in it
 *     (per dim, ignoring broadcast sources' dims of 1);
 *     repeat. A class holding an
 *     expand_dims result stays blocked.
 *  3b. MMA regions. A dot on tensor cores (`dot`; see dot_uses_mma)
 *     gives its result the MMA layout (tileir.h; warps as Triton's
 *     MMAv2, or on a target with wgmma, for a dot that fits it,
 *     lower_wgmma_shape_ok, all along M: wgmma's accumulator is that
 *     layout, a warpgroup's four warps 64 rows). It spreads to the values joined to the result through
 *     values that live only in registers (register_only: dot results,
 *     elementwise ops that touch no memory, constants, splats, what loops
 *     and branches carry): a second union-find over the joins of step 1
 *     restricted to those. So the accumulator, the loop carrying it, and
 *     an epilogue's casts, adds and broadcasts take the MMA layout (and
 *     expand_dims of row statistics: expands_stat), while loads, stores,
 *     pointer arithmetic and other expand_dims keep their blocked
 *     classes (a broadcast only renames registers, in any layout, and
 *     the MMA layout takes a tile with a dim of 1).
 *  3c. Slices. A reduction of an MMA tile along a dim gives the MMA
 *     layout's slice there (tileir.h: the accumulator's rows or columns
 *     in the registers of the threads holding them), and the rank-1
 *     register-only values joined to its result take it too (regions as
 *     in 3b): attention's row max and sum, and what is computed from them
 *     and expanded back onto the scores, never leave registers.
 *  4. Repair. Where an op's operand still does not have the layout the op
 *     needs (two wishes disagreed: `offs[:, None]` and `offs[None, :]`;
 *     an MMA region meets a blocked value), a convert_layout goes in,
 *     which codegen does through shared memory: a dot's a and b into the
 *     DOT_OP layouts of its result's MMA layout (from the blocked layouts
 *     of their loads), a bias row (1 x N, before its broadcast) into
 *     the MMA layout, and an MMA value stored into the pointers'
 *     blocked layout (the epilogue
 *     conversion: the store then issues 16-byte accesses); scans of MMA
 *     tiles read a blocked copy; a loop's inits and yields
 *     and a branch's yields take the layout of what they feed. A
 *     conversion of a value defined before a loop goes before the loop
 *     (out of every loop it is invariant in), not into its body.
 *
 * Default blocked layouts: each thread's run along the last dim is 16
 * bytes of the narrowest element the class's own tile loads and stores
 * move (4 f32, 8 f16: an f16 row computed in f32 still gets 8, as
 * Triton's coalescing gives it), so codegen can use 16-byte accesses for
 * every one of them; a class with none takes 16 bytes of the widest
 * element the kernel loads or stores. The run shrinks when the tile is
 * too small to give every thread that many. Lanes then warps go to dims
 * fastest first, as far as each dim has elements for them; what is left
 * replicates. For rank 1 that is the layout the kernels of issue 3/4 were
 * tuned with.
 *
 * num_warps, unless the user chose it, follows the bytes of the largest
 * tile the kernel loads (or else stores, or else computes, as f32): one
 * warp per 512 bytes (a 16-byte access per thread) up to 4 warps at 2 KB,
 * then 4 warps below 8 KB, 8 below 16 KB, 16 below 128 KB, and 32. For
 * f32 rows that is Triton's softmax-tutorial choice up to 4096 elements.
 * Measured on an H100 (bench/RESULTS.md, 2026-11-22 sweep): f16 layernorm
 * rows of 1024, 4096 and 8192 ran fastest at 4, 8 and 16 warps, where
 * counting elements instead gave 16 warps to the 4096 row (13% slower);
 * 32 warps at 16384 f32 were 5-15% slower than 16, while at 32768 they
 * keep threads at 32 elements, where 16 warps made the softmax gradient
 * spill. Past that, warps double until no tile puts more than
 * TIR_MAX_THREAD_ELEMS on a thread (a small load beside arange(0, 1 << 20)). */
#include <string.h>

#include "lower/lower.h"

typedef struct wish {
    uint32_t from;   /* value id whose class's layout this derives from */
    uint8_t kind;    /* WISH_* */
    uint8_t dim;     /* slice: the dim; dot operand: 0 for a, 1 for b; permute: unused */
    uint32_t k;      /* dot operand: the dot's K */
    uint8_t perm[TIR_MAX_RANK];
    struct wish *next;
} wish;

enum { WISH_SLICE_OF, WISH_PARENT_OF, WISH_PERMUTE_OF, WISH_DOT_FMA_OF };

typedef struct layout_ctx {
    tir_func *f;
    tc_arena *arena;
    int num_warps;
    bool wgmma;            /* the target has wgmma (lower_has_wgmma) */
    unsigned widest_bytes; /* of any load or store: for classes without tile accesses */
    uint32_t n;           /* values */
    uint32_t *parent;     /* union-find over value ids */
    tir_value **value;    /* by id */
    /* per class root: */
    uint32_t *shape;      /* fitting shape, TIR_MAX_RANK per root */
    uint8_t *access_bytes; /* narrowest element its tile loads and stores move; 0: none */
    uint8_t *rank;        /* 0: not a tile */
    uint8_t *decided;
    uint8_t *must_block;  /* holds an expand_dims result */
    tir_layout *layout;
    wish **wishes;
    /* mma regions (step 3b): a second union-find over register-only values */
    bool joining_regions; /* join() builds regions instead of classes */
    uint8_t *stat_region; /* per rank-1 region root: it holds a reduction's result (3b's second walk) */
    uint32_t *region;
    tir_layout *region_layout; /* per region root: the mma layout, or kind NONE */
} layout_ctx;

static uint32_t find(layout_ctx *c, uint32_t v) {
    while (c->parent[v] != v) v = c->parent[v] = c->parent[c->parent[v]];
    return v;
}

static uint32_t find_region(layout_ctx *c, uint32_t v) {
    while (c->region[v] != v) v = c->region[v] = c->region[c->region[v]];
    return v;
}

static bool register_only(const tir_value *v);
static bool expands_stat(layout_ctx *c, const tir_value *v);

static void join(layout_ctx *c, const tir_value *a, const tir_value *b) {
    if (!a->type.rank || !b->type.rank || a->type.rank != b->type.rank) return;
    if (c->joining_regions) {
        if (!(register_only(a) || expands_stat(c, a)) || !(register_only(b) || expands_stat(c, b))) return;
        uint32_t x = find_region(c, a->id), y = find_region(c, b->id);
        if (x != y) c->region[x > y ? x : y] = x < y ? x : y;
        return;
    }
    uint32_t x = find(c, a->id), y = find(c, b->id);
    if (x == y) return;
    if (x > y) { /* the root is the earliest value: program order */
        uint32_t t = x;
        x = y;
        y = t;
    }
    c->parent[y] = x;
}

static void record(tir_value *v, layout_ctx *c) {
    if (v->type.space == TIR_SPACE_SHARED) return; /* buffers have no layout */
    if (v->id < c->n) c->value[v->id] = v;
}

static void collect(tir_op *op, void *p) {
    layout_ctx *c = p;
    for (uint32_t i = 0; i < op->nresults; i++) record(op->results[i], c);
    if (op->body)
        for (uint32_t i = 0; i < op->body->nargs; i++) record(op->body->args[i], c);
    if (op->body2)
        for (uint32_t i = 0; i < op->body2->nargs; i++) record(op->body2->args[i], c);
    const tir_opinfo *info = &tir_ops[op->code];
    /* mma regions hold registers only: memory ops and effects keep theirs */
    bool in_memory = info->flags & (TIR_F_READS | TIR_F_WRITES | TIR_F_EFFECT);
    if ((info->flags & TIR_F_ELEMENTWISE) && !(c->joining_regions && in_memory)) {
        const tir_value *anchor = op->nresults ? op->results[0] : op->operands[0];
        for (uint32_t i = 0; i < op->noperands; i++) join(c, anchor, op->operands[i]);
    }
    if (op->code == TIR_OP_BROADCAST) join(c, op->operands[0], op->results[0]);
    /* a scan takes whatever layout its operand has (codegen scans along any
     * dim of any layout), so it never costs a conversion */
    if (op->code == TIR_OP_CUMSUM || op->code == TIR_OP_CUMSUM_REV) join(c, op->operands[0], op->results[0]);
    /* an async copy's pointers and mask go element by element together */
    if (op->code == TIR_OP_ASYNC_COPY && op->noperands > 3) join(c, op->operands[2], op->operands[3]);
    /* a dot's result is its accumulator, updated in place */
    if (op->code == TIR_OP_DOT || op->code == TIR_OP_DOT_IEEE) join(c, op->operands[2], op->results[0]);
    if (op->code == TIR_OP_FOR) {
        const tir_op *y = op->body->last;
        for (uint32_t k = 0; k < op->nresults; k++) {
            join(c, op->results[k], op->operands[3 + k]);
            join(c, op->results[k], op->body->args[k + 1]);
            if (y && y->code == TIR_OP_YIELD && k < y->noperands) join(c, op->results[k], y->operands[k]);
        }
    }
    if (op->code == TIR_OP_IF || op->code == TIR_OP_WHILE) {
        /* an if's result is either branch's yield; a while carries its
         * inits through both blocks' arguments and the body's yield */
        const tir_op *y1 = op->body->last, *y2 = op->body2->last;
        for (uint32_t k = 0; k < op->nresults; k++) {
            if (op->code == TIR_OP_IF) {
                if (y1 && y1->code == TIR_OP_YIELD && k < y1->noperands) join(c, op->results[k], y1->operands[k]);
            } else {
                join(c, op->results[k], op->operands[k]);
                join(c, op->results[k], op->body->args[k]);
                join(c, op->results[k], op->body2->args[k]);
            }
            if (y2 && y2->code == TIR_OP_YIELD && k < y2->noperands) join(c, op->results[k], y2->operands[k]);
        }
    }
}

static void add_wish(layout_ctx *c, const tir_value *to, const tir_value *from, int kind, unsigned dim,
                     const uint8_t *perm) {
    uint32_t r = find(c, to->id);
    wish *w = TC_NEW(c->arena, wish);
    w->from = from->id;
    w->kind = (uint8_t)kind;
    w->dim = (uint8_t)dim;
    if (perm) memcpy(w->perm, perm, TIR_MAX_RANK);
    /* appended: the first wish in program order is tried first */
    wish **at = &c->wishes[r];
    while (*at) at = &(*at)->next;
    *at = w;
}

/* Whether a dot runs on mma.sync (its result in the MMA layout) or on FMAs
 * (blocked layouts): `dot` always takes mma.sync, since every shape and
 * input type it accepts has an instruction (dims >= 16, powers of two);
 * dot_ieee (exact f32 products) always takes FMAs. The one place to
 * change when a dot cannot use mma (a target without it). */
static bool dot_uses_mma(const tir_op *op) { return op->code == TIR_OP_DOT; }

/* Values that live in registers only, whatever their layout, so they may
 * take the MMA layout: results of dot, of elementwise ops that touch no
 * memory, constants and splats, and the values loops and branches carry. */
static bool register_only(const tir_value *v) {
    if (!v->type.rank) return false;
    if (!v->def) return v->block && v->block->parent; /* a loop's or branch's block argument */
    const tir_op *op = v->def;
    unsigned fl = tir_ops[op->code].flags;
    switch (op->code) {
    case TIR_OP_DOT: return dot_uses_mma(op);
    case TIR_OP_FOR: case TIR_OP_IF: case TIR_OP_WHILE: case TIR_OP_CONST: case TIR_OP_SPLAT: return true;
    /* a broadcast renames its operand's registers, in the MMA layout too:
     * an epilogue's `acc + bias[None, :]` converts the 1 x N row into the
     * MMA layout, not the broadcast M x N tile (a shared-memory trip for
     * every element of the tile and as many registers again as the
     * accumulator: the bias epilogue spilled, issue 19) */
    case TIR_OP_BROADCAST: return true;
    /* a reduction's result carries its slice on to the row statistics
     * computed from it (step 3c); expand_dims of those: expands_stat */
    case TIR_OP_REDUCE_SUM: case TIR_OP_REDUCE_MAX: case TIR_OP_REDUCE_MIN: return true;
    default: return (fl & TIR_F_ELEMENTWISE) && !(fl & (TIR_F_READS | TIR_F_WRITES | TIR_F_EFFECT));
    }
}

/* An expand_dims of a row (column) statistic, a rank-1 value in a region
 * holding a reduction's result, renames registers from the mma layout's
 * slice to the mma layout (tir_mma_slice_source): `m[:, None]` of a row
 * max joins the accumulator's region where a blocked [M, 1] would go
 * through shared memory to meet it. Only those: an index tile's
 * `rows = rm[:, None]` used both in a mask on the accumulator and in the
 * store's pointers would take the pointers into the region, and the store
 * would stay in the mma layout, element by element (found in review).
 * False until the first region walk has marked the statistics. */
static bool expands_stat(layout_ctx *c, const tir_value *v) {
    if (!c->stat_region || !v->def || v->def->code != TIR_OP_EXPAND_DIMS) return false;
    const tir_value *x = v->def->operands[0];
    return x->type.rank == 1 && x->id < c->n && c->stat_region[find_region(c, x->id)];
}

static void mark_stats(tir_op *op, void *p) {
    layout_ctx *c = p;
    if ((op->code == TIR_OP_REDUCE_SUM || op->code == TIR_OP_REDUCE_MAX || op->code == TIR_OP_REDUCE_MIN) &&
        op->results[0]->type.rank == 1)
        c->stat_region[find_region(c, op->results[0]->id)] = 1;
}

/* Step 3b: the region of each mma dot's result takes its MMA layout.
 * A dot whose a is computed in registers from another dot's result (in
 * its region: attention's p = exp(s - m) of s = q k^T, then p v) takes,
 * with that region, the warps all along M (wpc [W, 1]) where the two
 * have one M that W warps of 16 rows cover: then every warp holds whole
 * rows of the first result, which are rows of the second's a, and the
 * conversion between them only renames registers (lower_convert_renames),
 * as FlashAttention-2 keeps p in registers. Dots are visited in program
 * order, so the first dot's region is decided when the second is seen. */
static void mark_mma_regions(tir_op *op, void *p) {
    layout_ctx *c = p;
    if ((op->code != TIR_OP_DOT && op->code != TIR_OP_DOT_IEEE) || !dot_uses_mma(op)) return;
    const tir_type *t = &op->results[0]->type;
    uint32_t mine = find_region(c, op->results[0]->id);
    uint32_t mnk[3] = {t->shape[0], t->shape[1], op->operands[0]->type.shape[1]};
    if (c->wgmma && lower_wgmma_shape_ok(tir_type_elem(op->operands[0]->type), mnk, (unsigned)c->num_warps))
        c->region_layout[mine] = tir_layout_mma((unsigned)c->num_warps, 1);
    else
        c->region_layout[mine] = tir_layout_mma_for(t->shape[0], t->shape[1], (unsigned)c->num_warps);
    const tir_value *a = op->operands[0];
    if (!a->type.rank || !register_only(a)) return;
    uint32_t from = find_region(c, a->id);
    unsigned w = (unsigned)c->num_warps;
    if (from == mine || c->region_layout[from].kind != TIR_LAYOUT_MMA || a->type.shape[0] != t->shape[0] ||
        t->shape[0] < (uint32_t)TIR_MMA_TILE_M * w)
        return;
    c->region_layout[from] = c->region_layout[mine] = tir_layout_mma(w, 1);
}

/* Step 3c: a reduction of an MMA tile along a dim gives the MMA layout's
 * slice there (the accumulator's rows or columns, in the registers of
 * the threads holding them: gen_reduce_mma), and so do the rank-1 values
 * of its region: FlashAttention's row max m and row sum l, the rescale
 * factor exp2(m_old - m_new), the loop carrying them. The first
 * reduction in program order decides a region another would want
 * differently; repair converts the rest. */
static void mark_slice_regions(tir_op *op, void *p) {
    layout_ctx *c = p;
    if (op->code != TIR_OP_REDUCE_SUM && op->code != TIR_OP_REDUCE_MAX && op->code != TIR_OP_REDUCE_MIN) return;
    const tir_value *x = op->operands[0], *r = op->results[0];
    if (r->type.rank != 1 || x->type.layout.kind != TIR_LAYOUT_MMA) return;
    tir_layout *l = &c->region_layout[find_region(c, r->id)];
    if (l->kind == TIR_LAYOUT_NONE) *l = tir_layout_slice(&x->type.layout, (unsigned)op->attr.axis);
}

static void collect_wishes(tir_op *op, void *p) {
    layout_ctx *c = p;
    switch (op->code) {
    case TIR_OP_REDUCE_SUM: case TIR_OP_REDUCE_MAX: case TIR_OP_REDUCE_MIN:
        if (op->results[0]->type.rank)
            add_wish(c, op->results[0], op->operands[0], WISH_SLICE_OF, (unsigned)op->attr.axis, NULL);
        break;
    case TIR_OP_EXPAND_DIMS:
        c->must_block[find(c, op->results[0]->id)] = 1;
        if (op->operands[0]->type.rank)
            add_wish(c, op->operands[0], op->results[0], WISH_PARENT_OF, (unsigned)op->attr.axis, NULL);
        break;
    case TIR_OP_PERMUTE: add_wish(c, op->results[0], op->operands[0], WISH_PERMUTE_OF, 0, op->attr.perm); break;
    case TIR_OP_DOT: case TIR_OP_DOT_IEEE:
        /* the FMA path: a and b want the result's blocked layout holding
         * whole rows of a and columns of b (the mma path converts them at
         * the dot instead: their producers are loads in blocked layouts) */
        if (dot_uses_mma(op)) break;
        /* and its result stays blocked (the FMAs' layout), never the slice
         * an expand_dims of it would want backwards */
        c->must_block[find(c, op->results[0]->id)] = 1;
        for (unsigned i = 0; i < 2; i++) {
            /* an operand loaded in a loop's body keeps its load's
             * coalesced layout: the whole-row layout spreads a tile over
             * more threads than it has elements (a 32x16 a on 8 warps:
             * each element loaded by 8 threads, 16 pointers a thread),
             * and pipelined, the copies take the load's layout while the
             * ring is read straight into the dot's (stage_operands; a
             * transposed load's ring turned). Elsewhere the load takes
             * the dot's layout: a warp's copies of an element are one
             * access, cheaper than a conversion through shared memory */
            const tir_op *src = op->operands[i]->def;
            if (src && src->code == TIR_OP_PERMUTE) src = src->operands[0]->def; /* trans(load(...)) */
            if (src && src->code == TIR_OP_LOAD && src->parent->parent && src->parent->parent->code == TIR_OP_FOR) continue;
            add_wish(c, op->operands[i], op->results[0], WISH_DOT_FMA_OF, i, NULL);
            wish *w = c->wishes[find(c, op->operands[i]->id)];
            while (w->next) w = w->next;
            w->k = op->operands[0]->type.shape[1];
        }
        break;
    default: break;
    }
}

/* The default blocked layout for a shape whose narrowest memory element
 * is elem_bytes wide. */
static tir_layout default_blocked(const layout_ctx *c, unsigned rank, const uint32_t *shape, unsigned elem_bytes) {
    tir_layout l;
    memset(&l, 0, sizeof l);
    l.kind = TIR_LAYOUT_BLOCKED;
    l.rank = (uint8_t)rank;
    uint64_t numel = 1;
    for (unsigned d = 0; d < rank; d++) {
        numel *= shape[d];
        l.spt[d] = l.tpw[d] = l.wpc[d] = 1;
        l.ord[d] = (uint8_t)(rank - 1 - d);
    }
    unsigned last = rank - 1;
    uint32_t threads = 32u * (uint32_t)c->num_warps;
    uint32_t spt = LOWER_MAX_ACCESS_BYTES / elem_bytes;
    while (spt > 1 && (uint64_t)spt * threads > numel) spt /= 2;
    if (spt > shape[last]) spt = shape[last];
    l.spt[last] = (uint16_t)spt;
    if (rank == 1) { /* the 1-D rule, unchanged: every lane and warp along the one dim */
        l.tpw[0] = 32;
        l.wpc[0] = (uint16_t)c->num_warps;
        return l;
    }
    uint32_t lanes = 32, warps = (uint32_t)c->num_warps;
    for (unsigned k = 0; k < rank; k++) { /* fastest dim first */
        unsigned d = l.ord[k];
        uint32_t room = shape[d] / l.spt[d];
        uint32_t t = lanes < room ? lanes : room ? room : 1;
        l.tpw[d] = (uint16_t)t;
        lanes /= t;
    }
    l.tpw[l.ord[0]] = (uint16_t)(l.tpw[l.ord[0]] * lanes); /* left over: replicate along the fastest dim */
    for (unsigned k = 0; k < rank; k++) {
        unsigned d = l.ord[k];
        uint32_t room = shape[d] / ((uint32_t)l.spt[d] * l.tpw[d]);
        uint32_t w = warps < room ? warps : room ? room : 1;
        l.wpc[d] = (uint16_t)w;
        warps /= w;
    }
    l.wpc[l.ord[rank - 1]] = (uint16_t)(l.wpc[l.ord[rank - 1]] * warps); /* left over: along the slowest dim */
    return l;
}

/* The layout a wish gives, if its source is decided and the result fits. */
static bool try_wish(layout_ctx *c, uint32_t root, const wish *w, tir_layout *out) {
    uint32_t src = find(c, w->from);
    if (!c->decided[src]) return false;
    const tir_layout *sl = &c->layout[src];
    switch (w->kind) {
    case WISH_SLICE_OF:
        if (sl->kind != TIR_LAYOUT_BLOCKED) return false;
        *out = tir_layout_slice(sl, w->dim);
        return !c->must_block[root];
    case WISH_PARENT_OF:
        return false; /* handled from the other side: see decide() */
    case WISH_PERMUTE_OF:
        if (sl->kind != TIR_LAYOUT_BLOCKED) return false;
        *out = tir_layout_permute(sl, w->perm);
        return true;
    case WISH_DOT_FMA_OF:
        if (sl->kind != TIR_LAYOUT_BLOCKED) return false;
        *out = tir_layout_dot_fma(sl, w->k, w->dim);
        return true;
    }
    return false;
}

/* Decides root from its first wish whose source is decided; with
 * use_default, from the default when no wish can be met. False if nothing
 * was decided. */
static bool decide(layout_ctx *c, uint32_t root, bool use_default) {
    tir_layout l;
    bool got = false;
    for (const wish *w = c->wishes[root]; w && !got; w = w->next) {
        if (w->kind == WISH_PARENT_OF) {
            /* expand_dims(x, axis): x's class wants the slice of the result's */
            uint32_t src = find(c, w->from);
            if (c->decided[src] && c->layout[src].kind == TIR_LAYOUT_BLOCKED && !c->must_block[root]) {
                l = tir_layout_slice(&c->layout[src], w->dim);
                got = true;
            }
            continue;
        }
        got = try_wish(c, root, w, &l);
    }
    if (!got && !use_default) return false;
    if (!got) {
        unsigned bytes = c->access_bytes[root] ? c->access_bytes[root] : c->widest_bytes;
        l = default_blocked(c, c->rank[root], &c->shape[root * TIR_MAX_RANK], bytes);
    }
    c->layout[root] = l;
    c->decided[root] = 1;
    return true;
}

/* The classes of one rank: every class whose wish can be met takes it,
 * until none can; then the first undecided one (in program order) takes
 * its default, which may let others' wishes be met; and so on. So a
 * transpose whose class starts earlier than its operand's still gets the
 * permuted layout. */
static void decide_rank(layout_ctx *c, unsigned rank) {
    for (;;) {
        bool progress = true;
        while (progress) {
            progress = false;
            for (uint32_t i = 0; i < c->n; i++)
                if (c->value[i] && c->value[i]->type.rank == rank && find(c, i) == i && !c->decided[i])
                    progress |= decide(c, i, false);
        }
        /* a default for the first class that waits on nobody, else the first */
        uint32_t first = c->n, free_one = c->n;
        for (uint32_t i = 0; i < c->n && free_one == c->n; i++) {
            if (!(c->value[i] && c->value[i]->type.rank == rank && find(c, i) == i && !c->decided[i])) continue;
            if (first == c->n) first = i;
            bool waits = false;
            for (const wish *w = c->wishes[i]; w; w = w->next) waits |= !c->decided[find(c, w->from)];
            if (!waits) free_one = i;
        }
        if (first == c->n) return;
        decide(c, free_one < c->n ? free_one : first, true);
    }
}

/* ---- repair ---------------------------------------------------------------- */

/* Whether v is defined outside `loop` (before it: a parameter, an outer
 * block's argument, or an op not in its regions). */
static bool defined_outside(const tir_value *v, const tir_op *loop) {
    const tir_block *b = v->def ? v->def->parent : v->block;
    for (; b; b = b->parent ? b->parent->parent : NULL)
        if (b->parent == loop) return false;
    return true;
}

static tir_value *convert(layout_ctx *c, tir_op *before, tir_value *v, tir_layout want) {
    /* a value the loop does not change converts once, before the loop,
     * not on every trip: each conversion is a trip through shared memory
     * between two barriers (a user's matmul converting `offs_k` for its
     * masks paid two a trip, issue 19) */
    for (tir_op *loop = before->parent ? before->parent->parent : NULL;
         loop && (loop->code == TIR_OP_FOR || loop->code == TIR_OP_WHILE) && defined_outside(v, loop);
         loop = before->parent ? before->parent->parent : NULL)
        before = loop;
    tir_builder b = {.module = c->f->module, .func = c->f, .block = before->parent, .loc = before->loc};
    tir_builder_before(&b, before);
    tir_type t = v->type;
    t.layout = want;
    return tir_build1(&b, TIR_OP_CONVERT_LAYOUT, t, 1, &v);
}

/* Operand i of op (a tile) gets layout `want`, through a convert_layout
 * put before `before`, when it has another. */
static void fix_operand(layout_ctx *c, tir_op *before, tir_op *op, uint32_t i, const tir_layout *want) {
    tir_value *x = op->operands[i];
    if (!x->type.rank || tir_layout_eq(&x->type.layout, want)) return;
    op->operands[i] = convert(c, before, x, *want);
}

static void repair(tir_op *op, void *p) {
    layout_ctx *c = p;
    switch (op->code) {
    case TIR_OP_EXPAND_DIMS: {
        tir_value *x = op->operands[0];
        if (!x->type.rank) break;
        tir_layout want = tir_layout_slice(&op->results[0]->type.layout, (unsigned)op->attr.axis);
        if (!tir_layout_eq(&x->type.layout, &want)) op->operands[0] = convert(c, op, x, want);
        break;
    }
    case TIR_OP_REDUCE_SUM: case TIR_OP_REDUCE_MAX: case TIR_OP_REDUCE_MIN: {
        tir_value *x = op->operands[0], *r = op->results[0];
        if (!r->type.rank) break; /* to a scalar: any operand layout */
        /* blocked, or an accumulator (its slice: step 3c) */
        if (x->type.layout.kind != TIR_LAYOUT_BLOCKED && x->type.layout.kind != TIR_LAYOUT_MMA) {
            tir_layout want = default_blocked(c, x->type.rank, x->type.shape, c->widest_bytes);
            op->operands[0] = x = convert(c, op, x, want);
        }
        tir_layout want = tir_layout_slice(&x->type.layout, (unsigned)op->attr.axis);
        if (!tir_layout_eq(&r->type.layout, &want)) {
            /* the reduction gives the slice; a conversion after it gives
             * the layout its users were laid out for */
            tir_layout users = r->type.layout;
            r->type.layout = want;
            tir_value *fixed = convert(c, op->next, r, users);
            tir_replace_all_uses(c->f, r, fixed);
            fixed->def->operands[0] = r;
        }
        break;
    }
    case TIR_OP_DOT: case TIR_OP_DOT_IEEE: {
        tir_value *r = op->results[0];
        tir_layout want[3];
        if (r->type.layout.kind == TIR_LAYOUT_MMA) {
            want[0] = tir_layout_dot_op(&r->type.layout, 0, tir_dot_kw(tir_type_elem(op->operands[0]->type)));
            want[1] = tir_layout_dot_op(&r->type.layout, 1, tir_dot_kw(tir_type_elem(op->operands[1]->type)));
        } else {
            want[0] = tir_layout_dot_fma(&r->type.layout, op->operands[0]->type.shape[1], 0);
            want[1] = tir_layout_dot_fma(&r->type.layout, op->operands[0]->type.shape[1], 1);
        }
        want[2] = r->type.layout;
        for (unsigned i = 0; i < 3; i++)
            if (!tir_layout_eq(&op->operands[i]->type.layout, &want[i])) op->operands[i] = convert(c, op, op->operands[i], want[i]);
        break;
    }
    case TIR_OP_BROADCAST: case TIR_OP_CUMSUM: case TIR_OP_CUMSUM_REV:
        fix_operand(c, op, op, 0, &op->results[0]->type.layout);
        break;
    case TIR_OP_FOR: {
        const tir_op *y = op->body->last;
        for (uint32_t k = 0; k + 1 < op->body->nargs; k++) {
            const tir_layout *want = &op->body->args[k + 1]->type.layout;
            fix_operand(c, op, op, 3 + k, want);
            if (y && y->code == TIR_OP_YIELD && k < y->noperands) fix_operand(c, (tir_op *)y, (tir_op *)y, k, want);
        }
        break;
    }
    case TIR_OP_IF: case TIR_OP_WHILE:
        for (uint32_t k = 0; k < op->nresults; k++) {
            const tir_layout *want = &op->results[k]->type.layout;
            tir_op *y1 = op->body->last, *y2 = op->body2->last;
            if (op->code == TIR_OP_WHILE) fix_operand(c, op, op, k, want);
            else if (y1 && y1->code == TIR_OP_YIELD && k < y1->noperands) fix_operand(c, y1, y1, k, want);
            if (y2 && y2->code == TIR_OP_YIELD && k < y2->noperands) fix_operand(c, y2, y2, k, want);
        }
        break;
    default:
        /* the tiles of an elementwise op share the layout of its result (or
         * of its first operand: a store's pointers), so a store of an mma
         * tile converts the value to the pointers' blocked layout: the
         * epilogue conversion, giving coalesced 16-byte stores */
        if (tir_ops[op->code].flags & TIR_F_ELEMENTWISE) {
            const tir_value *anchor = op->nresults ? op->results[0] : op->noperands ? op->operands[0] : NULL;
            if (!anchor || !anchor->type.rank) break;
            for (uint32_t i = 0; i < op->noperands; i++) fix_operand(c, op, op, i, &anchor->type.layout);
        }
        break;
    }
}

/* ---- num_warps ---------------------------------------------------------------- */

/* The bytes of the largest tile loaded, stored, and computed (as f32), and
 * the op making the tile of most elements. */
typedef struct tile_bytes {
    uint64_t loaded, stored, computed;
    const tir_op *largest;
} tile_bytes;

static void find_largest(tir_op *op, void *p) {
    tile_bytes *t = p;
    for (uint32_t i = 0; i < op->nresults; i++)
        if (op->results[i]->type.rank && 4 * tir_type_numel(op->results[i]->type) > t->computed) {
            t->computed = 4 * tir_type_numel(op->results[i]->type);
            t->largest = op;
        }
    if ((op->code != TIR_OP_LOAD && op->code != TIR_OP_STORE) || !op->operands[0]->type.rank) return;
    tir_type ptrs = op->operands[0]->type;
    uint64_t bytes = tir_type_numel(ptrs) * ((tir_elem_bits(tir_type_pointee(ptrs)) + 7) / 8);
    uint64_t *slot = op->code == TIR_OP_LOAD ? &t->loaded : &t->stored;
    if (bytes > *slot) *slot = bytes;
}

/* The elements each thread holds of the largest tile with `w` warps. */
static uint64_t elems_per_thread(const tile_bytes *t, int w) {
    return t->computed / 4 / (LOWER_WARP_SIZE * (uint64_t)w);
}

static int heuristic_num_warps(const tile_bytes *t) {
    uint64_t b = t->loaded ? t->loaded : t->stored ? t->stored : t->computed;
    int w = b < 1024 ? 1 : b < 2048 ? 2 : b < 8192 ? LOWER_DEFAULT_NUM_WARPS : b < 16384 ? 8 : b < 131072 ? 16 : 32;
    /* a small load beside a large computed tile (arange(0, 1 << 20)) */
    while (w < TILEC_MAX_NUM_WARPS && elems_per_thread(t, w) > TIR_MAX_THREAD_ELEMS) w *= 2;
    return w;
}

static void find_widest(tir_op *op, void *p) {
    layout_ctx *c = p;
    if (op->code != TIR_OP_LOAD && op->code != TIR_OP_STORE) return;
    unsigned bytes = (tir_elem_bits(tir_type_pointee(op->operands[0]->type)) + 7) / 8;
    if (bytes > c->widest_bytes) c->widest_bytes = bytes;
}

/* After the classes are joined: each class's narrowest element among the
 * tile loads and stores of its pointers. */
static void find_access_bytes(tir_op *op, void *p) {
    layout_ctx *c = p;
    if (op->code != TIR_OP_LOAD && op->code != TIR_OP_STORE) return;
    const tir_value *ptrs = op->operands[0];
    if (!ptrs->type.rank) return;
    unsigned bytes = (tir_elem_bits(tir_type_pointee(ptrs->type)) + 7) / 8;
    uint8_t *a = &c->access_bytes[find(c, ptrs->id)];
    if (!*a || bytes < *a) *a = (uint8_t)bytes;
}

static void layout_func(tir_func *f, int num_warps, bool wgmma) {
    tc_arena *arena = tc_arena_new();
    layout_ctx c;
    memset(&c, 0, sizeof c);
    c.f = f;
    c.arena = arena;
    c.num_warps = num_warps;
    c.wgmma = wgmma;
    c.n = f->next_value_id;
    c.parent = TC_NEW_ARRAY(arena, uint32_t, c.n + 1);
    c.value = TC_NEW_ARRAY(arena, tir_value *, c.n + 1);
    c.shape = TC_NEW_ARRAY(arena, uint32_t, (c.n + 1) * TIR_MAX_RANK);
    c.rank = TC_NEW_ARRAY(arena, uint8_t, c.n + 1);
    c.access_bytes = TC_NEW_ARRAY(arena, uint8_t, c.n + 1);
    c.decided = TC_NEW_ARRAY(arena, uint8_t, c.n + 1);
    c.must_block = TC_NEW_ARRAY(arena, uint8_t, c.n + 1);
    c.layout = TC_NEW_ARRAY(arena, tir_layout, c.n + 1);
    c.wishes = TC_NEW_ARRAY(arena, wish *, c.n + 1);
    c.region = TC_NEW_ARRAY(arena, uint32_t, c.n + 1);
    c.region_layout = TC_NEW_ARRAY(arena, tir_layout, c.n + 1);
    for (uint32_t i = 0; i < c.n; i++) c.parent[i] = c.region[i] = i;
    tir_walk(f, find_widest, &c);
    if (!c.widest_bytes) c.widest_bytes = 4; /* no memory access: any size will do */
    tir_walk(f, collect, &c);
    tir_walk(f, collect_wishes, &c);
    /* each class's rank and fitting shape: per dim the smallest size over
     * 1 among its tiles (1 where all are 1). Tiles of one class differ only
     * where broadcasts join them: an edge mask `rows[:, None] < M` both
     * A's 128x32 tile and C's 128x128 use. A layout sized for the largest
     * would wrap over the smaller tiles, giving each of their elements to
     * several threads (4 times over for A: 4 times the loads and
     * registers); one sized for the smallest only repeats over the larger,
     * each element still on one thread. */
    for (uint32_t i = 0; i < c.n; i++) {
        const tir_value *v = c.value[i];
        if (!v || !v->type.rank) continue;
        uint32_t r = find(&c, i);
        c.rank[r] = v->type.rank;
        for (unsigned d = 0; d < v->type.rank; d++) {
            uint32_t *fit = &c.shape[r * TIR_MAX_RANK + d], s = v->type.shape[d];
            if (*fit == 0 || (s > 1 && (*fit == 1 || s < *fit))) *fit = s;
        }
    }
    tir_walk(f, find_access_bytes, &c);
    for (unsigned rank = TIR_MAX_RANK; rank >= 1; rank--) decide_rank(&c, rank);
    for (uint32_t i = 0; i < c.n; i++)
        if (c.value[i] && c.value[i]->type.rank) c.value[i]->type.layout = c.layout[find(&c, i)];
    /* 3b: mma regions */
    c.joining_regions = true;
    tir_walk(f, collect, &c);
    /* again, with the expand_dims of row statistics (expands_stat): joins
     * of rank 1 are all made by now, so the statistics' roots stay */
    c.stat_region = TC_NEW_ARRAY(arena, uint8_t, c.n + 1);
    tir_walk(f, mark_stats, &c);
    tir_walk(f, collect, &c);
    c.joining_regions = false;
    tir_walk(f, mark_mma_regions, &c);
    for (uint32_t i = 0; i < c.n; i++) {
        const tir_layout *l = &c.region_layout[find_region(&c, i)];
        if (c.value[i] && c.value[i]->type.rank && l->kind == TIR_LAYOUT_MMA) c.value[i]->type.layout = *l;
    }
    /* 3c: their reductions' slices */
    tir_walk(f, mark_slice_regions, &c);
    for (uint32_t i = 0; i < c.n; i++) {
        const tir_layout *l = &c.region_layout[find_region(&c, i)];
        if (c.value[i] && c.value[i]->type.rank == 1 && l->kind == TIR_LAYOUT_MMA_SLICE) c.value[i]->type.layout = *l;
    }
    tir_walk(f, repair, &c);
    tc_arena_free(arena);
}

bool lower_layout(tir_module *m, const lower_options *opt, tc_diag *diag) {
    bool ok = true;
    for (tir_func *f = m->funcs; f; f = f->next) {
        tile_bytes t = {0};
        tir_walk(f, find_largest, &t);
        int w = opt->compile.num_warps ? opt->compile.num_warps : f->num_warps ? f->num_warps : heuristic_num_warps(&t);
        /* a .tir file may ask for any count; layouts and codegen's index
         * arithmetic need a power of two, and a CTA holds 1024 threads */
        if (w < 1 || w > TILEC_MAX_NUM_WARPS || (w & (w - 1))) {
            tc_error_loc(diag, m->source_name, f->loc, "num_warps(%d) of kernel '%s' must be a power of two from 1 to %d",
                         w, f->name, TILEC_MAX_NUM_WARPS);
            ok = false;
            continue;
        }
        /* a count a .tir file chose (the front end checks --num-warps) */
        if (elems_per_thread(&t, w) > TIR_MAX_THREAD_ELEMS) {
            tc_error_loc(diag, m->source_name, t.largest->loc,
                         "a tile of %llu elements puts %llu on each thread with num_warps(%d) (limit is %d a thread); "
                         "use more warps or a smaller tile",
                         (unsigned long long)(t.computed / 4), (unsigned long long)elems_per_thread(&t, w), w,
                         TIR_MAX_THREAD_ELEMS);
            ok = false;
            continue;
        }
        f->num_warps = w;
        layout_func(f, w, lower_has_wgmma(opt->compile.arch));
    }
    return ok;
}
