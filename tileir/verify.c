/* verify.c - structural and type checks on tile IR, run after every pass.
 *
 * One walk per function: ops are visited in order while a set of the
 * values defined so far (indexed by value id) grows; a value is in scope
 * when it was defined earlier in its block or in an enclosing one, so the
 * set is trimmed back when a loop body ends. Every problem is reported, each
 * naming the op, and the walk goes on. */
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "tileir/tileir.h"

typedef struct verifier {
    const tir_module *m;
    const tir_func *f;
    const char *after;
    tc_diag *diag;
    uint8_t *defined; /* by value id */
    bool any_layout, any_missing;
    bool ok;
} verifier;

static void fail(verifier *v, const tir_op *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(verifier *v, const tir_op *op, const char *fmt, ...) {
    tc_strbuf line, what;
    tc_strbuf_init(&line);
    tc_strbuf_init(&what);
    va_list ap;
    va_start(ap, fmt);
    tc_strbuf_vprintf(&what, fmt, ap);
    va_end(ap);
    if (op) tir_print_op(&line, op);
    tc_loc loc = op ? op->loc : v->f->loc;
    tc_error_loc(v->diag, v->m->source_name ? v->m->source_name : "<tir>", loc, "verifier%s%s: %s%s%s%s",
                 v->after ? " after " : "", v->after ? v->after : "", what.data ? what.data : "", op ? " in '" : "",
                 op ? line.data : "", op ? "'" : "");
    tc_strbuf_free(&line);
    tc_strbuf_free(&what);
    v->ok = false;
}

static bool is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

static void check_layout(verifier *v, const tir_op *op, tir_type t) {
    if (t.rank == 0 || t.space == TIR_SPACE_SHARED) return; /* buffers: local_alloc's rule */
    for (unsigned i = 0; i < t.rank; i++)
        if (!is_pow2(t.shape[i])) {
            fail(v, op, "tile dimensions must be powers of two");
            return;
        }
    if (tir_type_numel(t) > TIR_MAX_TILE_ELEMS) { /* the front end's limit, which every pass keeps */
        fail(v, op, "a tile may hold at most 1048576 (TIR_MAX_TILE_ELEMS) elements");
        return;
    }
    if (t.layout.kind == TIR_LAYOUT_NONE) {
        v->any_missing = true;
        return;
    }
    v->any_layout = true;
    const tir_layout *l = &t.layout;
    if (l->kind == TIR_LAYOUT_MMA_SLICE) {
        /* rows or columns of an mma tile: as long as its dims (or 1) */
        if (t.rank != 1 || l->rank != 2 || l->slice_dim > 1 || (t.shape[0] < TIR_MMA_MIN_DIM && t.shape[0] != 1))
            fail(v, op, "a slice of an mma layout is for 1-D tiles of at least 16 elements (or 1), dropping dim 0 or 1");
        else if (!is_pow2(l->wpc[0]) || !is_pow2(l->wpc[1]))
            fail(v, op, "layout sizes must be powers of two");
        else if (v->f->num_warps && (uint64_t)l->wpc[0] * l->wpc[1] != (uint64_t)v->f->num_warps)
            fail(v, op, "layout warps differ from num_warps");
        return;
    }
    if (l->kind == TIR_LAYOUT_DOT_SMEM) {
        if (t.rank != 2 || l->rank != 2 || t.shape[0] < TIR_MMA_MIN_DIM || t.shape[1] < TIR_MMA_MIN_DIM || l->dot_idx > 1)
            fail(v, op, "a dot_smem layout is for a dot's a or b, 2-D with dims of at least 16");
        else if (!is_pow2(l->wpc[0]) || !is_pow2(l->wpc[1]))
            fail(v, op, "layout sizes must be powers of two");
        else if (v->f->num_warps && (uint64_t)l->wpc[0] * l->wpc[1] != (uint64_t)v->f->num_warps)
            fail(v, op, "layout warps differ from num_warps");
        return;
    }
    if (l->kind == TIR_LAYOUT_MMA || l->kind == TIR_LAYOUT_DOT_OP) {
        /* an mma tile's dims may be 1: a row, a column or a scalar
         * broadcast over the accumulator (every thread holds it whole
         * along such a dim) */
        bool ok = t.rank == 2 && l->rank == 2;
        for (unsigned d = 0; ok && d < 2; d++)
            ok = t.shape[d] >= TIR_MMA_MIN_DIM || (l->kind == TIR_LAYOUT_MMA && t.shape[d] == 1);
        if (!ok) fail(v, op, "mma and dot_op layouts are for 2-D tiles with dims of at least 16 (an mma tile's may be 1)");
        else if (!is_pow2(l->wpc[0]) || !is_pow2(l->wpc[1]))
            fail(v, op, "layout sizes must be powers of two");
        else if (v->f->num_warps && (uint64_t)l->wpc[0] * l->wpc[1] != (uint64_t)v->f->num_warps)
            fail(v, op, "layout warps differ from num_warps");
        else if (l->kind == TIR_LAYOUT_DOT_OP && (l->dot_idx > 1 || tir_dot_kw(tir_type_elem(t)) != l->dot_kw))
            fail(v, op, "a dot_op layout's kw must be its element type's (2 f16/bf16, 1 f32, 4 i8)");
        return;
    }
    bool slice = l->kind == TIR_LAYOUT_SLICE;
    if ((l->kind != TIR_LAYOUT_BLOCKED && !slice) || l->rank != t.rank + slice || l->rank > TIR_MAX_RANK) {
        fail(v, op, slice ? "a slice layout's parent must have one dim more than the tile" : "layout rank differs from the tile's rank");
        return;
    }
    if (slice && l->slice_dim > t.rank) fail(v, op, "slice dim out of range");
    unsigned seen = 0;
    for (unsigned i = 0; i < l->rank; i++) seen |= 1u << l->ord[i];
    if (seen != (1u << l->rank) - 1) fail(v, op, "layout order must list every dim once");
    uint64_t tpw = 1, wpc = 1;
    for (unsigned i = 0; i < l->rank; i++) {
        if (!is_pow2(l->spt[i]) || !is_pow2(l->tpw[i]) || !is_pow2(l->wpc[i]))
            fail(v, op, "layout sizes must be powers of two");
        tpw *= l->tpw[i];
        wpc *= l->wpc[i];
    }
    if (tpw != 32) fail(v, op, "layout threads per warp must multiply to 32");
    if (v->f->num_warps && wpc != (uint64_t)v->f->num_warps) fail(v, op, "layout warps differ from num_warps");
}

static bool numeric(tir_type t) { return t.elem != TIR_PTR; }
static bool integer(tir_type t) { return tir_elem_is_int(tir_type_elem(t)); }

/* The yield ending `blk` gives one value of each result type of `op`. */
static void check_yield(verifier *v, const tir_op *op, const tir_block *blk, const char *which) {
    const tir_op *y = blk->last;
    if (!y || y->code != TIR_OP_YIELD) return; /* verify_block reports it */
    if (y->noperands != op->nresults) {
        fail(v, y, "%s block must yield one value per result", which);
        return;
    }
    for (uint32_t i = 0; i < y->noperands; i++)
        if (!tir_type_eq(y->operands[i]->type, op->results[i]->type)) fail(v, y, "yielded value type differs from the result");
}

static void verify_block(verifier *v, const tir_block *blk, bool is_body);

/* A buffer's shared layout: none, or one over its slot dims whose swizzle
 * keeps every chunk inside its row. */
static bool mbarriers(tir_type t) {
    return t.space == TIR_SPACE_SHARED && t.rank == 2 && t.elem == TIR_I64 && t.shape[1] == 1;
}

static bool i32_scalar(tir_type t) { return t.rank == 0 && t.elem == TIR_I32 && t.space == TIR_SPACE_REGS; }

/* tma_load's checks: its tensor map, operands, and the slot's layout
 * against where the copy puts each element. */
static void check_tma_load(verifier *v, const tir_op *op) {
    tir_value *const *o = op->operands;
    if (op->attr.axis < 0 || op->attr.axis >= (int64_t)v->f->ntmaps) {
        fail(v, op, "tma_load names tensor map %lld; the kernel has %u", (long long)op->attr.axis, v->f->ntmaps);
        return;
    }
    const tir_tmap *m = &v->f->tmaps[op->attr.axis];
    tir_type buf = o[0]->type, bars = o[2]->type;
    if (buf.space != TIR_SPACE_SHARED || buf.rank < 2 || !i32_scalar(o[1]->type) || !mbarriers(bars) ||
        bars.shape[0] != buf.shape[0] || o[3]->type.rank || o[3]->type.elem != TIR_I1) {
        fail(v, op, "tma_load takes a buffer, an i32 slot, a buffer of as many mbarriers (smem<Sx1xi64>) and an i1 "
                    "predicate");
        return;
    }
    unsigned srank = buf.rank - 1u;
    if (op->noperands != 4u + m->rank || srank > m->rank) {
        fail(v, op, "tma_load takes one i32 coordinate a dimension of its tensor map (%u), at least the slot's rank",
             m->rank);
        return;
    }
    for (uint32_t i = 4; i < op->noperands; i++)
        if (!i32_scalar(o[i]->type)) fail(v, op, "tma_load's coordinates are i32 scalars");
    tir_type base = v->f->params[m->base]->type;
    if (tir_type_pointee(base) != buf.elem) {
        fail(v, op, "tma_load's buffer holds %s; tensor map %lld reads %s", tir_elem_name(buf.elem),
             (long long)op->attr.axis, tir_elem_name(tir_type_pointee(base)));
        return;
    }
    /* map dim d is slot dim ord[d]; the slot's row-major order without a layout */
    bool shared = buf.layout.kind == TIR_LAYOUT_SHARED;
    const uint32_t *slot = &buf.shape[1];
    for (unsigned d = 0; d < m->rank; d++) {
        unsigned sd = d >= srank ? 0 : shared ? buf.layout.ord[d] : srank - 1u - d; /* past the slot: a box of 1 */
        uint32_t want = d >= srank ? 1 : d == 0 ? m->box[0] : slot[sd];
        bool ok = d == 0 && srank ? slot[sd] % m->box[0] == 0 : m->box[d] == want;
        if (!ok) {
            fail(v, op, "tensor map %lld's box (dim %u: %u) does not fit the slot", (long long)op->attr.axis, d, m->box[d]);
            return;
        }
    }
    uint32_t eb = (tir_elem_bits(buf.elem) + 7) / 8;
    if (srank != 2) {
        if (m->swizzle || (shared && buf.layout.sw_max_phase > 1))
            fail(v, op, "tma_load with a swizzle fills 2-D slots only");
        return;
    }
    if (m->swizzle && (slot[0] * slot[1] * eb) % (m->swizzle * 8u)) {
        fail(v, op, "a slot that tma_load fills with a %u-byte swizzle is a multiple of %u bytes", m->swizzle,
             m->swizzle * 8u);
        return;
    }
    uint32_t at[2];
    if (!tir_tma_places(&buf, m->box[0], m->swizzle, at))
        fail(v, op, "the buffer's layout does not place element (%u, %u) of the slot where tensor map %lld's copy "
                    "(swizzle %u) puts it",
             at[0], at[1], (long long)op->attr.axis, m->swizzle);
}

/* The func's tensor maps, as the runtime will encode them. */
static void check_tmaps(verifier *v) {
    const tir_func *f = v->f;
    for (uint32_t i = 0; i < f->ntmaps; i++) {
        const tir_tmap *m = &f->tmaps[i];
        if (m->base >= f->nparams || f->params[m->base]->type.elem != TIR_PTR) {
            fail(v, NULL, "tensor map %u's base is not a pointer parameter", i);
            continue;
        }
        uint32_t eb = (tir_elem_bits(tir_type_pointee(f->params[m->base]->type)) + 7) / 8;
        if (m->rank < 1 || m->rank > TIR_TMAP_MAX_RANK)
            fail(v, NULL, "tensor map %u has %u dimensions (1 to %d)", i, m->rank, TIR_TMAP_MAX_RANK);
        else if (m->stride[0].param != TIR_TMAP_CONST || m->stride[0].scale != 1)
            fail(v, NULL, "tensor map %u's dim 0 has stride 1 (the copy engine reads it contiguous)", i);
        else if (m->box[0] * eb % 16 || (m->swizzle && m->box[0] * eb != m->swizzle))
            fail(v, NULL, "tensor map %u's box is %u bytes along dim 0: a multiple of 16, the swizzle's span with one", i,
                 m->box[0] * eb);
        if (m->swizzle != 0 && m->swizzle != 32 && m->swizzle != 64 && m->swizzle != 128)
            fail(v, NULL, "tensor map %u's swizzle is %u bytes (0, 32, 64 or 128)", i, m->swizzle);
        for (unsigned d = 0; d < m->rank && d < TIR_TMAP_MAX_RANK; d++) {
            const tir_tmap_term t[2] = {m->dim[d], m->stride[d]};
            for (int k = 0; k < 2; k++) {
                if (t[k].param == TIR_TMAP_CONST) continue;
                tir_type pt = t[k].param >= 0 && (uint32_t)t[k].param < f->nparams ? f->params[t[k].param]->type
                                                                                   : tir_scalar(TIR_F32);
                if (pt.elem == TIR_PTR || pt.elem == TIR_I1 || tir_elem_is_float(pt.elem))
                    fail(v, NULL, "tensor map %u's %s %u is not an integer parameter", i, k ? "stride" : "dim", d);
            }
            /* what the host cannot get wrong at launch: constant sizes and strides */
            if (m->dim[d].param == TIR_TMAP_CONST && m->dim[d].scale != TIR_TMAP_UNBOUNDED &&
                (m->dim[d].scale < 1 || m->dim[d].scale > TIR_TMAP_UNBOUNDED))
                fail(v, NULL, "tensor map %u's dim %u is %lld elements (1 to 2^31, or * for unbounded)", i, d,
                     (long long)m->dim[d].scale);
            if (d > 0 && m->stride[d].param == TIR_TMAP_CONST &&
                (m->stride[d].scale < 1 || (m->stride[d].scale * (int64_t)eb) % 16))
                fail(v, NULL, "tensor map %u's stride %u is %lld elements: the copy engine takes a positive multiple "
                              "of 16 bytes",
                     i, d, (long long)m->stride[d].scale);
            if (m->box[d] < 1 || m->box[d] > TIR_TMAP_MAX_BOX)
                fail(v, NULL, "tensor map %u's box is %u elements along dim %u (1 to %d)", i, m->box[d], d,
                     TIR_TMAP_MAX_BOX);
        }
    }
}

static void check_shared_layout(verifier *v, const tir_op *op, tir_type t) {
    const tir_layout *l = &t.layout;
    if (l->kind == TIR_LAYOUT_NONE) return;
    if (l->kind != TIR_LAYOUT_SHARED || l->rank + 1u != t.rank) {
        fail(v, op, "a buffer's layout is a shared layout over its slot dims");
        return;
    }
    bool seen[TIR_MAX_RANK] = {false};
    for (unsigned i = 0; i < l->rank; i++) {
        if (l->ord[i] >= l->rank || seen[l->ord[i]]) {
            fail(v, op, "a shared layout's order must list each slot dim once");
            return;
        }
        seen[l->ord[i]] = true;
    }
    if (!is_pow2(l->sw_vec) || !is_pow2(l->sw_per_phase) || !is_pow2(l->sw_max_phase))
        fail(v, op, "a shared layout's vec, per_phase and max_phase must be powers of two");
    else if (l->sw_max_phase > 1 &&
             (l->rank != 2 || (uint64_t)l->sw_vec * l->sw_max_phase > (l->sw_atom ? l->sw_atom : t.shape[1 + l->ord[0]])))
        fail(v, op, "a swizzled shared layout needs a 2-D slot whose rows (or atoms) hold vec x max_phase elements");
    else if (l->sw_atom && (l->rank != 2 || !is_pow2(l->sw_atom) || l->sw_atom > t.shape[1 + l->ord[0]]))
        fail(v, op, "a shared layout's atom must be a power of two no longer than the rows of its 2-D slot");
}

/* Whether x is a dot_async's result not yet given back by a dot_wait:
 * that result, what a `for` carries of it (its body argument and its
 * result, when the body yields a pending value there), or an `if`'s
 * result that a branch yields pending. */
enum { PENDING_MAX_CARRIES = 16 }; /* loop carries pending() follows back to a dot_async */

static bool pending_in(const tir_value *x, unsigned depth) {
    if (x->def && x->def->code == TIR_OP_DOT_ASYNC) return true;
    if (depth > PENDING_MAX_CARRIES) return false; /* carried values swapping from trip to trip: not followed further */
    if (x->def && x->def->code == TIR_OP_IF) { /* either branch's yield */
        const tir_block *br[2] = {x->def->body, x->def->body2};
        for (int k = 0; k < 2; k++) {
            const tir_op *y = br[k] ? br[k]->last : NULL;
            if (y && y->code == TIR_OP_YIELD && x->index < y->noperands && pending_in(y->operands[x->index], depth + 1))
                return true;
        }
        return false;
    }
    const tir_op *loop = x->def ? x->def : x->block ? x->block->parent : NULL;
    if (!loop || loop->code != TIR_OP_FOR || !loop->body || !loop->body->last) return false;
    const tir_op *y = loop->body->last;
    uint32_t i = x->def ? x->index : x->index - 1; /* body arg 0 is the induction variable */
    if (y->code != TIR_OP_YIELD || (!x->def && x->index == 0) || i >= y->noperands || y->operands[i] == x) return false;
    return pending_in(y->operands[i], depth + 1);
}

static bool pending(const tir_value *x) { return pending_in(x, 0); }

/* Operand i of op is a dot_smem tile: a view of a slot that the dot reads
 * when it runs (tir_layout_kind), so its uses are dots of the same block as
 * the local_load with nothing between that could change the slot. */
static void check_dot_smem_use(verifier *v, const tir_op *op, uint32_t i) {
    const tir_value *x = op->operands[i];
    if ((op->code != TIR_OP_DOT && op->code != TIR_OP_DOT_ASYNC) || i != x->type.layout.dot_idx) {
        fail(v, op, "a dot_smem tile is only operand %s of a dot", x->type.layout.dot_idx ? "b" : "a");
        return;
    }
    const tir_op *ld = x->def;
    if (!ld || ld->code != TIR_OP_LOCAL_LOAD || ld->parent != op->parent) {
        fail(v, op, "a dot's dot_smem operand must come from a local_load in its block");
        return;
    }
    for (const tir_op *p = ld->next; p && p != op; p = p->next) {
        unsigned fl = tir_ops[p->code].flags;
        if ((fl & (TIR_F_WRITES | TIR_F_EFFECT | TIR_F_REGION)) && p->code != TIR_OP_LOCAL_LOAD) {
            fail(v, op, "a dot's dot_smem operand is read when the dot runs: no op that writes memory, waits or "
                        "branches may stand between its local_load and the dot (here: %s)",
                 tir_ops[p->code].name);
            return;
        }
    }
}

static void check_types(verifier *v, const tir_op *op) {
    const tir_opinfo *info = &tir_ops[op->code];
    tir_value *const *o = op->operands;
    tir_type r = op->nresults ? op->results[0]->type : tir_scalar(TIR_I1);
    unsigned fl = info->flags;
    if (fl & TIR_F_ELEMENTWISE)
        for (uint32_t i = 0; i < op->noperands; i++)
            if (!(op->code == TIR_OP_STORE || op->code == TIR_OP_LOAD) &&
                !tir_type_same_shape(o[i]->type, o[0]->type))
                fail(v, op, "operands of an elementwise op must have one shape");
    bool buffer_op = op->code == TIR_OP_LOCAL_ALLOC || op->code == TIR_OP_ASYNC_COPY || op->code == TIR_OP_LOCAL_LOAD ||
                     op->code == TIR_OP_LOCAL_STORE || op->code == TIR_OP_MBAR_INIT || op->code == TIR_OP_MBAR_WAIT ||
                     op->code == TIR_OP_MBAR_INVAL || op->code == TIR_OP_TMA_LOAD || op->code == TIR_OP_MBAR_ARRIVE ||
                     op->code == TIR_OP_WARP_SPECIALIZE;
    for (uint32_t i = 0; i < op->noperands + op->nresults; i++) {
        const tir_value *x = i < op->noperands ? o[i] : op->results[i - op->noperands];
        /* the buffer is local_alloc's result, the others' first operand:
         * index 0 either way; tma_load's mbarriers are its third */
        bool buffer_slot = i == 0 || (op->code == TIR_OP_TMA_LOAD && i == 2) || op->code == TIR_OP_WARP_SPECIALIZE;
        if (x->type.space == TIR_SPACE_SHARED && (!buffer_op || !buffer_slot)) {
            fail(v, op, "only local_alloc makes, and only the buffer and mbarrier ops take, shared-memory buffers");
            return;
        }
    }
    for (uint32_t i = 0; i < op->nresults; i++)
        if (op->results[i]->type.layout.kind == TIR_LAYOUT_DOT_SMEM && op->code != TIR_OP_LOCAL_LOAD)
            fail(v, op, "only local_load gives a dot_smem tile (a dot operand left in shared memory)");
    for (uint32_t i = 0; i < op->noperands; i++) {
        if (o[i]->type.layout.kind == TIR_LAYOUT_DOT_SMEM) check_dot_smem_use(v, op, i);
        if (pending(o[i]) && !((op->code == TIR_OP_DOT_ASYNC && i == 2) || op->code == TIR_OP_DOT_WAIT ||
                               op->code == TIR_OP_YIELD))
            fail(v, op, "a dot_async's result is read before a dot_wait gives it back (only a dot_async's acc, a "
                        "dot_wait or a loop's yield may take it)");
    }
    switch (op->code) {
    case TIR_OP_LOCAL_ALLOC:
        if (r.space != TIR_SPACE_SHARED || r.rank < 2 || r.elem == TIR_PTR) {
            fail(v, op, "local_alloc makes an smem<SxD...> buffer of numbers");
            break;
        }
        for (unsigned d = 1; d < r.rank; d++)
            if (!is_pow2(r.shape[d])) fail(v, op, "a buffer's tile dimensions must be powers of two");
        check_shared_layout(v, op, r);
        break;
    case TIR_OP_ASYNC_COPY: case TIR_OP_LOCAL_LOAD: case TIR_OP_LOCAL_STORE: {
        tir_type buf = o[0]->type, slot = o[1]->type;
        tir_type t = op->code == TIR_OP_LOCAL_LOAD ? r : o[2]->type;
        bool values = op->code != TIR_OP_ASYNC_COPY; /* local_load and local_store move values, async_copy reads pointers */
        if (buf.space != TIR_SPACE_SHARED || slot.rank || slot.elem != TIR_I32) {
            fail(v, op, "a buffer op takes an smem buffer and an i32 slot");
            break;
        }
        bool same = t.rank + 1 == buf.rank && t.space == TIR_SPACE_REGS &&
                    (values ? t.elem == buf.elem : t.elem == TIR_PTR && t.pointee == buf.elem);
        /* local_load [off]: the part of the result's shape at off, inside the slot */
        for (unsigned d = 0; same && d < t.rank; d++)
            same = op->code == TIR_OP_LOCAL_LOAD ? (uint64_t)op->attr.offset[d] + t.shape[d] <= buf.shape[d + 1]
                                                 : t.shape[d] == buf.shape[d + 1];
        for (unsigned d = t.rank; same && op->code == TIR_OP_LOCAL_LOAD && d < TIR_MAX_RANK; d++)
            same = op->attr.offset[d] == 0;
        if (same && op->code == TIR_OP_LOCAL_LOAD && t.layout.kind == TIR_LAYOUT_DOT_SMEM &&
            (buf.layout.kind != TIR_LAYOUT_SHARED || t.shape[0] != buf.shape[1] || t.shape[1] != buf.shape[2]))
            fail(v, op, "a local_load giving a dot_smem tile reads a whole 2-D slot of a buffer with a shared layout");
        if (!same)
            fail(v, op, op->code == TIR_OP_LOCAL_LOAD    ? "local_load gives a tile of one slot's shape and element type, or a part of it inside the slot"
                        : op->code == TIR_OP_LOCAL_STORE ? "local_store takes a tile of one slot's shape and element type"
                                                         : "async_copy needs pointers to the buffer's element type, in one slot's shape");
        else if (op->code == TIR_OP_ASYNC_COPY && op->noperands == 4 &&
                 (o[3]->type.elem != TIR_I1 || !tir_type_same_shape(o[3]->type, t) || !tir_layout_eq(&o[3]->type.layout, &t.layout)))
            fail(v, op, "async_copy's mask is i1 in the pointers' shape and layout");
        break;
    }
    case TIR_OP_ASYNC_WAIT:
        if (op->attr.axis < 0) fail(v, op, "async_wait needs a count of at least 0");
        break;
    case TIR_OP_MBAR_INIT: case TIR_OP_MBAR_INVAL:
        if (!mbarriers(o[0]->type)) fail(v, op, "%s takes a buffer of mbarriers, smem<Sx1xi64>", tir_ops[op->code].name);
        else if (op->code == TIR_OP_MBAR_INIT && (op->attr.axis < 1 || op->attr.axis > TIR_MBAR_MAX_ARRIVALS))
            fail(v, op, "mbar_init's arrivals a phase are 1 to %d", TIR_MBAR_MAX_ARRIVALS);
        break;
    case TIR_OP_MBAR_WAIT:
        if (!mbarriers(o[0]->type) || !i32_scalar(o[1]->type) || !i32_scalar(o[2]->type))
            fail(v, op, "mbar_wait takes a buffer of mbarriers, smem<Sx1xi64>, an i32 slot and an i32 parity");
        break;
    case TIR_OP_TMA_LOAD: check_tma_load(v, op); break;
    case TIR_OP_MBAR_ARRIVE:
        if (!mbarriers(o[0]->type) || !i32_scalar(o[1]->type))
            fail(v, op, "mbar_arrive takes a buffer of mbarriers, smem<Sx1xi64>, and an i32 slot");
        break;
    case TIR_OP_WARP_SPECIALIZE:
        for (uint32_t i = 0; i < op->noperands; i++)
            if (o[i]->type.space != TIR_SPACE_SHARED) {
                fail(v, op, "warp_specialize takes buffers only (those the producer fills, and its mbarriers)");
                break;
            }
        break;
    case TIR_OP_PRODUCER:
        if (op->body && (op->body->nargs || (op->body->last && op->body->last->code == TIR_OP_YIELD &&
                                             op->body->last->noperands)))
            fail(v, op, "a producer region takes no arguments and yields nothing");
        break;
    case TIR_OP_CONST:
        if (r.elem == TIR_PTR) fail(v, op, "a constant cannot be a pointer");
        /* the front end wraps its constants; passes fold them as values of the type */
        else if (integer(r) && tir_wrap_int(op->attr.ival, tir_type_elem(r)) != op->attr.ival)
            fail(v, op, "an integer constant must fit its type (i1: 0 or 1)");
        break;
    case TIR_OP_PROGRAM_ID:
    case TIR_OP_NUM_PROGRAMS:
        if (op->attr.axis < 0 || op->attr.axis > 2) fail(v, op, "axis must be 0, 1 or 2");
        if (!tir_type_eq(r, tir_scalar(TIR_I32))) fail(v, op, "result must be i32");
        break;
    case TIR_OP_ARANGE: {
        /* as the front end's rule: the elements are i32, and hi - lo must not overflow */
        int64_t lo = op->attr.range.lo, hi = op->attr.range.hi;
        if (lo < INT32_MIN || lo > INT32_MAX || hi < INT32_MIN || hi > INT32_MAX) {
            fail(v, op, "arange bounds must fit in i32");
            break;
        }
        int64_t n = hi - lo;
        if (n <= 0 || !is_pow2((uint64_t)n)) fail(v, op, "arange length must be a positive power of two");
        if (r.rank != 1 || r.elem != TIR_I32 || r.shape[0] != (uint64_t)n)
            fail(v, op, "arange result must be tile<Nxi32> with N = hi - lo");
        break;
    }
    case TIR_OP_SPLAT:
        if (o[0]->type.rank != 0 || r.rank == 0) fail(v, op, "splat takes a scalar and gives a tile");
        else if (!tir_type_eq(tir_element_of(r), o[0]->type)) fail(v, op, "splat result element differs from operand");
        break;
    case TIR_OP_ADD: case TIR_OP_SUB: case TIR_OP_MUL: case TIR_OP_DIV: case TIR_OP_REM: case TIR_OP_NEG:
    case TIR_OP_AND: case TIR_OP_OR: case TIR_OP_XOR: case TIR_OP_NOT: case TIR_OP_SHL: case TIR_OP_SHR:
        for (uint32_t i = 0; i < op->noperands; i++)
            if (!tir_type_eq(o[i]->type, r)) fail(v, op, "operands and result must have one type");
        if (!numeric(r)) fail(v, op, "arithmetic on pointers (use addptr)");
        else if (op->code >= TIR_OP_AND && op->code <= TIR_OP_SHR && !integer(r))
            fail(v, op, "bitwise ops need integer or i1 operands");
        break;
    case TIR_OP_MIN: case TIR_OP_MAX: case TIR_OP_ABS: case TIR_OP_SQRT: case TIR_OP_FLOOR: case TIR_OP_CEIL:
    case TIR_OP_FMA: case TIR_OP_EXP2: case TIR_OP_LOG2: case TIR_OP_SIN: case TIR_OP_COS: case TIR_OP_RSQRT:
    case TIR_OP_RCP: case TIR_OP_ERF:
        for (uint32_t i = 0; i < op->noperands; i++)
            if (!tir_type_eq(o[i]->type, r)) fail(v, op, "operands and result must have one type");
        if (!numeric(r) || r.elem == TIR_I1) fail(v, op, "math ops need numbers");
        else if (op->code != TIR_OP_MIN && op->code != TIR_OP_MAX && op->code != TIR_OP_ABS &&
                 !tir_elem_is_float(tir_type_elem(r)))
            fail(v, op, "this op needs floats");
        break;
    case TIR_OP_EQ: case TIR_OP_NE: case TIR_OP_LT: case TIR_OP_LE: case TIR_OP_GT: case TIR_OP_GE:
        if (!tir_type_eq(tir_element_of(o[0]->type), tir_element_of(o[1]->type)))
            fail(v, op, "compared operands must have one type");
        if (r.elem != TIR_I1 || !tir_type_same_shape(r, o[0]->type)) fail(v, op, "comparison result must be i1 of the operands' shape");
        break;
    case TIR_OP_REDUCE_SUM: case TIR_OP_REDUCE_MAX: case TIR_OP_REDUCE_MIN: {
        tir_type x = o[0]->type;
        if (x.rank == 0 || op->attr.axis < 0 || op->attr.axis >= x.rank) {
            fail(v, op, "a reduction needs a tile and an axis below its rank");
            break;
        }
        if (!numeric(x)) fail(v, op, "a reduction needs numbers");
        if (op->code == TIR_OP_REDUCE_SUM && x.elem == TIR_I1) fail(v, op, "reduce_sum of i1 (cast to an integer first)");
        bool same = r.elem == x.elem && r.rank == x.rank - 1;
        for (unsigned d = 0, k = 0; same && d < x.rank; d++)
            if (d != (unsigned)op->attr.axis) same = r.shape[k++] == x.shape[d];
        if (!same) fail(v, op, "a reduction's result is its operand's type without dim `axis`");
        else if (r.rank && x.layout.kind != TIR_LAYOUT_NONE) {
            tir_layout want = tir_layout_slice(&x.layout, (unsigned)op->attr.axis);
            if ((x.layout.kind != TIR_LAYOUT_BLOCKED && x.layout.kind != TIR_LAYOUT_MMA) || !tir_layout_eq(&r.layout, &want))
                fail(v, op, "a reduction's result layout must be its operand's slice along `axis`");
        }
        break;
    }
    case TIR_OP_CUMSUM: case TIR_OP_CUMSUM_REV: {
        tir_type x = o[0]->type;
        if (x.rank == 0 || op->attr.axis < 0 || op->attr.axis >= x.rank) fail(v, op, "a scan needs a tile and an axis below its rank");
        else if (!numeric(x) || x.elem == TIR_I1) fail(v, op, "a scan needs numbers (cast i1 to an integer first)");
        else if (!tir_type_eq(r, x)) fail(v, op, "a scan's result has its operand's type and layout");
        break;
    }
    case TIR_OP_DOT_WAIT: {
        bool same = op->nresults == op->noperands;
        for (uint32_t i = 0; same && i < op->nresults; i++) same = tir_type_eq(o[i]->type, op->results[i]->type);
        if (!same) fail(v, op, "dot_wait gives back its operands: one result of each operand's type");
        if (op->attr.axis < 0 || op->attr.axis > TIR_MAX_DOT_WAIT)
            fail(v, op, "dot_wait's count must be from 0 to %d", TIR_MAX_DOT_WAIT);
        break;
    }
    case TIR_OP_DOT: case TIR_OP_DOT_IEEE: case TIR_OP_DOT_ASYNC: {
        tir_type a = o[0]->type, b = o[1]->type, acc = o[2]->type;
        if (op->code == TIR_OP_DOT_ASYNC && r.layout.kind != TIR_LAYOUT_MMA && r.layout.kind != TIR_LAYOUT_NONE)
            fail(v, op, "dot_async's result needs an mma layout (it runs on wgmma)");
        if (a.rank != 2 || b.rank != 2 || acc.rank != 2) {
            fail(v, op, "dot takes 2-D tiles");
            break;
        }
        if (a.shape[1] != b.shape[0] || acc.shape[0] != a.shape[0] || acc.shape[1] != b.shape[1])
            fail(v, op, "dot needs a: MxK, b: KxN and acc: MxN");
        else if (a.shape[0] < TIR_DOT_MIN_DIM || a.shape[1] < TIR_DOT_MIN_DIM || b.shape[1] < TIR_DOT_MIN_DIM)
            fail(v, op, "dot needs M, N and K of at least 16");
        if (a.elem != b.elem || tir_dot_acc_elem(tir_type_elem(a)) != acc.elem)
            fail(v, op, "dot takes f16, bf16 or f32 inputs with an f32 acc, or i8 inputs with an i32 acc");
        else if (op->code == TIR_OP_DOT_IEEE && a.elem != TIR_F32)
            fail(v, op, "dot_ieee takes f32 inputs");
        if (!tir_type_eq(r, acc)) fail(v, op, "dot's result has acc's type and layout");
        else if (r.layout.kind == TIR_LAYOUT_MMA) {
            tir_layout wa = tir_layout_dot_op(&r.layout, 0, tir_dot_kw(tir_type_elem(a))),
                       wb = tir_layout_dot_op(&r.layout, 1, tir_dot_kw(tir_type_elem(b)));
            tir_layout sa = tir_layout_dot_smem(&r.layout, 0), sb = tir_layout_dot_smem(&r.layout, 1);
            if (op->code == TIR_OP_DOT_IEEE) fail(v, op, "dot_ieee's result needs a blocked layout (it runs on FMAs)");
            else if ((!tir_layout_eq(&a.layout, &wa) && !tir_layout_eq(&a.layout, &sa)) ||
                     (!tir_layout_eq(&b.layout, &wb) && !tir_layout_eq(&b.layout, &sb)))
                fail(v, op, "dot with an mma result needs a and b in the dot_op (or dot_smem) layouts of that mma layout");
        } else if (r.layout.kind == TIR_LAYOUT_BLOCKED) {
            tir_layout wa = tir_layout_dot_fma(&r.layout, a.shape[1], 0), wb = tir_layout_dot_fma(&r.layout, a.shape[1], 1);
            if (!tir_layout_eq(&a.layout, &wa) || !tir_layout_eq(&b.layout, &wb))
                fail(v, op, "dot with a blocked result needs a and b in its blocked layout with whole rows of a and columns of b per thread");
        } else if (r.layout.kind != TIR_LAYOUT_NONE) {
            fail(v, op, "dot's result needs an mma or a blocked layout");
        }
        break;
    }
    case TIR_OP_EXPAND_DIMS: {
        tir_type x = o[0]->type;
        bool same = r.rank == x.rank + 1 && op->attr.axis >= 0 && op->attr.axis <= x.rank &&
                    tir_type_eq(tir_element_of(r), tir_element_of(x));
        for (unsigned d = 0, k = 0; same && d < r.rank; d++)
            same = d == (unsigned)op->attr.axis ? r.shape[d] == 1 : r.shape[d] == x.shape[k++];
        if (!same) {
            fail(v, op, "expand_dims inserts one dim of size 1 at `axis` (at most the operand's rank)");
            break;
        }
        if (x.rank && r.layout.kind != TIR_LAYOUT_NONE) {
            tir_layout want = tir_layout_slice(&r.layout, (unsigned)op->attr.axis);
            if ((r.layout.kind != TIR_LAYOUT_BLOCKED && r.layout.kind != TIR_LAYOUT_MMA) || !tir_layout_eq(&x.layout, &want))
                fail(v, op, "expand_dims operand layout must be the result's slice along `axis`");
        }
        break;
    }
    case TIR_OP_BROADCAST: {
        tir_type x = o[0]->type;
        bool ok = x.rank == r.rank && r.rank > 0 && tir_type_eq(tir_element_of(r), tir_element_of(x));
        for (unsigned d = 0; ok && d < r.rank; d++) ok = x.shape[d] == r.shape[d] || x.shape[d] == 1;
        if (!ok) fail(v, op, "broadcast keeps the rank and repeats dims of size 1");
        else if (!tir_layout_eq(&x.layout, &r.layout)) fail(v, op, "broadcast operand and result must have one layout");
        break;
    }
    case TIR_OP_RESHAPE:
        if (!o[0]->type.rank || !r.rank || tir_type_numel(o[0]->type) != tir_type_numel(r) ||
            !tir_type_eq(tir_element_of(r), tir_element_of(o[0]->type)))
            fail(v, op, "reshape keeps the element type and the number of elements");
        break;
    case TIR_OP_PERMUTE: {
        tir_type x = o[0]->type;
        unsigned seen = 0;
        bool ok = x.rank && r.rank == x.rank && tir_type_eq(tir_element_of(r), tir_element_of(x));
        for (unsigned i = 0; ok && i < x.rank; i++) {
            ok = op->attr.perm[i] < x.rank && r.shape[i] == x.shape[op->attr.perm[i]];
            if (ok) seen |= 1u << op->attr.perm[i];
        }
        if (!ok || seen != (1u << x.rank) - 1) fail(v, op, "permute's result dim i is the operand's dim perm[i], perm a permutation");
        break;
    }
    case TIR_OP_RANDINT:
        if (o[0]->type.elem != TIR_I32 && o[0]->type.elem != TIR_I64) fail(v, op, "randint seed must be i32 or i64");
        if (o[1]->type.elem != TIR_I32 || !tir_type_eq(o[1]->type, r))
            fail(v, op, "randint offsets and result must be i32 of one type");
        break;
    case TIR_OP_CAST:
        if (!numeric(o[0]->type) || !numeric(r) || !tir_type_same_shape(r, o[0]->type))
            fail(v, op, "cast converts numbers and keeps the shape");
        break;
    case TIR_OP_SELECT:
        if (o[0]->type.elem != TIR_I1) fail(v, op, "select condition must be i1");
        if (!tir_type_eq(tir_element_of(o[1]->type), tir_element_of(r)) ||
            !tir_type_eq(tir_element_of(o[2]->type), tir_element_of(r)) || !tir_type_same_shape(r, o[0]->type))
            fail(v, op, "select values and result must have one type, in the condition's shape");
        break;
    case TIR_OP_MULTIPLE_OF:
        if (o[0]->type.rank != 0 || !integer(o[0]->type) || o[0]->type.elem == TIR_I1 || !tir_type_eq(o[0]->type, r))
            fail(v, op, "multiple_of takes a scalar integer and gives it back");
        if (op->attr.axis < 1 || op->attr.axis > TIR_MULTIPLE_OF_MAX || !is_pow2((uint64_t)op->attr.axis))
            fail(v, op, "multiple_of needs a power of two from 1 to 2^30");
        break;
    case TIR_OP_ADDPTR:
        if (o[0]->type.elem != TIR_PTR || !integer(o[1]->type) || o[1]->type.elem == TIR_I1)
            fail(v, op, "addptr takes a pointer and an integer offset");
        if (!tir_type_eq(tir_element_of(r), tir_element_of(o[0]->type)) || !tir_type_same_shape(r, o[0]->type))
            fail(v, op, "addptr result must be the pointer type in the operands' shape");
        break;
    case TIR_OP_LOAD:
        if (o[0]->type.elem != TIR_PTR) {
            fail(v, op, "load needs pointers");
            break;
        }
        if (r.elem != o[0]->type.pointee || !tir_type_same_shape(r, o[0]->type))
            fail(v, op, "load result must be the pointee type in the pointers' shape");
        if (op->noperands > 1 && (o[1]->type.elem != TIR_I1 || !tir_type_same_shape(o[1]->type, o[0]->type)))
            fail(v, op, "load mask must be i1 in the pointers' shape");
        if (op->noperands > 2 && (!tir_type_eq(tir_element_of(o[2]->type), tir_element_of(r)) ||
                                  !tir_type_same_shape(o[2]->type, o[0]->type)))
            fail(v, op, "load other must have the result type in the pointers' shape");
        break;
    case TIR_OP_STORE:
        if (o[0]->type.elem != TIR_PTR) {
            fail(v, op, "store needs pointers");
            break;
        }
        if (o[1]->type.elem != o[0]->type.pointee || !tir_type_same_shape(o[1]->type, o[0]->type))
            fail(v, op, "stored value must be the pointee type in the pointers' shape");
        if (op->noperands > 2 && (o[2]->type.elem != TIR_I1 || !tir_type_same_shape(o[2]->type, o[0]->type)))
            fail(v, op, "store mask must be i1 in the pointers' shape");
        /* codegen reads register i of the value and mask for the address in
         * register i of the pointers (a load or atomic gets this from the
         * rule for results below; a store has no result) */
        for (uint32_t i = 1; i < op->noperands; i++)
            if (o[0]->type.rank && tir_type_same_shape(o[i]->type, o[0]->type) &&
                !tir_layout_eq(&o[i]->type.layout, &o[0]->type.layout)) {
                fail(v, op, "store's pointers, value and mask must share one layout");
                break;
            }
        break;
    case TIR_OP_ATOMIC_ADD: case TIR_OP_ATOMIC_MAX: case TIR_OP_ATOMIC_MIN: case TIR_OP_ATOMIC_XCHG:
    case TIR_OP_ATOMIC_CAS: {
        /* ptrs, the values (cas: cmp and val), then an optional mask */
        uint32_t nvals = op->code == TIR_OP_ATOMIC_CAS ? 2 : 1;
        if (o[0]->type.elem != TIR_PTR) {
            fail(v, op, "atomics need pointers");
            break;
        }
        if (r.elem != o[0]->type.pointee || !tir_type_same_shape(r, o[0]->type))
            fail(v, op, "an atomic's result must be the pointee type in the pointers' shape");
        else if (!tir_atomic_supports(op->code, tir_type_elem(r)))
            fail(v, op, "this atomic does not support the pointee type");
        for (uint32_t i = 1; i <= nvals; i++)
            if (o[i]->type.elem != o[0]->type.pointee) fail(v, op, "an atomic's values must be the pointee type");
        if (op->noperands > 1 + nvals && o[1 + nvals]->type.elem != TIR_I1) fail(v, op, "atomic mask must be i1");
        break;
    }
    case TIR_OP_PRINT:
    case TIR_OP_ASSERT:
        if (!op->attr.text) fail(v, op, "print and assert need a message string");
        if (op->code == TIR_OP_ASSERT && o[0]->type.elem != TIR_I1) fail(v, op, "assert condition must be i1");
        for (uint32_t i = 1; i < op->noperands; i++)
            if (o[0]->type.rank && !tir_layout_eq(&o[i]->type.layout, &o[0]->type.layout))
                fail(v, op, "print operands must share one layout");
        break;
    case TIR_OP_CONVERT_LAYOUT:
        if (!tir_type_eq(tir_element_of(o[0]->type), tir_element_of(r)) || !tir_type_same_shape(o[0]->type, r))
            fail(v, op, "convert_layout keeps shape and element type");
        break;
    case TIR_OP_FOR: {
        tir_type iv = o[0]->type;
        if (iv.rank || !integer(iv) || !tir_type_eq(o[1]->type, iv) || !tir_type_eq(o[2]->type, iv))
            fail(v, op, "loop bounds and step must be one integer scalar type");
        if (!op->body || op->body->nargs != op->noperands - 2) {
            fail(v, op, "loop body must take the induction variable and one argument per carried value");
            break;
        }
        if (op->nresults != op->noperands - 3) {
            fail(v, op, "a loop has one result per carried value");
            break;
        }
        if (!tir_type_eq(op->body->args[0]->type, iv)) fail(v, op, "induction variable type differs from the bounds");
        for (uint32_t i = 3; i < op->noperands; i++)
            if (!tir_type_eq(op->body->args[i - 2]->type, o[i]->type) || !tir_type_eq(op->results[i - 3]->type, o[i]->type))
                fail(v, op, "carried value types differ between init, body argument and result");
        const tir_op *y = op->body->last;
        if (y && y->code == TIR_OP_YIELD) {
            if (y->noperands != op->nresults) fail(v, y, "yield must give one value per loop result");
            else
                for (uint32_t i = 0; i < y->noperands; i++)
                    if (!tir_type_eq(y->operands[i]->type, op->results[i]->type))
                        fail(v, y, "yielded value type differs from the loop result");
        }
        break;
    }
    case TIR_OP_IF:
        if (o[0]->type.rank || o[0]->type.elem != TIR_I1) fail(v, op, "if condition must be a scalar i1");
        if (!op->body || !op->body2 || op->body->nargs || op->body2->nargs) {
            fail(v, op, "if needs a then and an else block, without arguments");
            break;
        }
        check_yield(v, op, op->body, "then");
        check_yield(v, op, op->body2, "else");
        break;
    case TIR_OP_WHILE: {
        if (!op->body || !op->body2 || op->body->nargs != op->noperands || op->body2->nargs != op->noperands ||
            op->nresults != op->noperands) {
            fail(v, op, "while needs a test block and a body, each taking one argument per carried value, and one result per carried value");
            break;
        }
        for (uint32_t i = 0; i < op->noperands; i++)
            if (!tir_type_eq(op->body->args[i]->type, o[i]->type) || !tir_type_eq(op->body2->args[i]->type, o[i]->type) ||
                !tir_type_eq(op->results[i]->type, o[i]->type))
                fail(v, op, "carried value types differ between init, block arguments and result");
        const tir_op *t = op->body->last;
        if (t && t->code == TIR_OP_YIELD &&
            (t->noperands != 1 || t->operands[0]->type.rank || t->operands[0]->type.elem != TIR_I1))
            fail(v, t, "a while test must yield one scalar i1");
        check_yield(v, op, op->body2, "while body");
        break;
    }
    default: break;
    }
    /* elementwise ops keep one layout across their tiles */
    if ((fl & TIR_F_ELEMENTWISE) && op->nresults) {
        for (uint32_t i = 0; i < op->noperands; i++)
            if (o[i]->type.rank && r.rank && !tir_layout_eq(&o[i]->type.layout, &r.layout))
                fail(v, op, "elementwise operand layout differs from the result's");
    }
}


/* ---- warp roles (ops.def: warp_specialize, producer) ---- */

/* What a producer region may hold: scalars, mbarrier waits, bulk copies
 * and branches over them; nothing that needs the consumer warps' layouts
 * or barriers (the producer warps take part in none after the split). */
static void check_producer_ops(verifier *v, const tir_op *region, const tir_block *blk, const uint8_t *held) {
    for (const tir_op *op = blk->first; op; op = op->next) {
        bool ok = op->code == TIR_OP_YIELD || op->code == TIR_OP_IF || op->code == TIR_OP_TMA_LOAD ||
                  op->code == TIR_OP_MBAR_WAIT || op->code == TIR_OP_MBAR_ARRIVE ||
                  ((tir_ops[op->code].flags & TIR_F_PURE) && op->code != TIR_OP_LOCAL_ALLOC);
        for (uint32_t i = 0; i < op->nresults; i++) ok = ok && op->results[i]->type.rank == 0;
        if (!ok) {
            fail(v, op, "a producer region holds scalars, mbar_wait, mbar_arrive, tma_load and if only");
            continue;
        }
        /* a value from outside the region: one the producer warps hold */
        for (uint32_t i = 0; i < op->noperands && held; i++) {
            const tir_value *x = op->operands[i];
            const tir_block *home = x->def ? x->def->parent : x->block;
            bool inside = false;
            for (const tir_block *b = home; b && !inside; b = b->parent ? b->parent->parent : NULL)
                inside = b == region->body;
            if (!inside && !held[x->id])
                fail(v, op, "a producer region reads a value the producer warps do not have (a tile, or a scalar "
                            "made from one after warp_specialize)");
        }
        if (op->body) check_producer_ops(v, region, op->body, held);
        if (op->body2) check_producer_ops(v, region, op->body2, held);
    }
}

/* Producer regions sit in the kernel's body, after warp_specialize, or
 * in its fors and ifs (the producer role runs those whose bounds and
 * conditions it holds: lower/codegen.c), nowhere else. */
static void check_places(verifier *v, const tir_block *blk, const uint8_t *held, bool after, const tir_op *split,
                         bool in_while) {
    for (const tir_op *op = blk->first; op; op = op->next) {
        after |= op == split;
        if (op->code == TIR_OP_PRODUCER) {
            if (in_while) fail(v, op, "a producer region sits in the kernel's body or its fors and ifs, not a while");
            else if (!after) fail(v, op, "a producer region comes after warp_specialize");
            else if (held) check_producer_ops(v, op, op->body, held);
            continue;
        }
        if (!op->body) continue;
        bool loop_or_if = op->code == TIR_OP_FOR || op->code == TIR_OP_IF;
        bool has = loop_or_if && (tir_block_has_producer(op->body) || (op->body2 && tir_block_has_producer(op->body2)));
        if (has && after && held && !in_while) {
            uint32_t n = op->code == TIR_OP_FOR ? 3 : 1; /* bounds, or the condition */
            for (uint32_t i = 0; i < n; i++)
                if (!held[op->operands[i]->id]) {
                    fail(v, op, "a producer region's loops and ifs need bounds and conditions the producer warps have");
                    break;
                }
        }
        check_places(v, op->body, held, after, split, in_while || !loop_or_if);
        if (op->body2) check_places(v, op->body2, held, after, split, in_while || !loop_or_if);
    }
}

static void find_roles(tir_op *op, void *p) {
    const tir_op **found = p; /* [0]: a warp_specialize, [1]: a second one, [2]: a producer */
    if (op->code == TIR_OP_WARP_SPECIALIZE) found[found[0] ? 1 : 0] = op;
    if (op->code == TIR_OP_PRODUCER && !found[2]) found[2] = op;
}

static void check_warp_roles(verifier *v, tc_arena *a) {
    const tir_func *f = v->f;
    const tir_op *found[3] = {NULL, NULL, NULL};
    tir_walk((tir_func *)f, find_roles, found);
    const tir_op *split = found[0];
    if (found[1]) fail(v, found[1], "a kernel splits its warps once (one warp_specialize)");
    if (split && split->parent != f->body) fail(v, split, "warp_specialize belongs in the kernel's body, not a region");
    if (!split) {
        if (found[2]) fail(v, found[2], "a producer region needs a warp_specialize before it");
        if (f->producer_warps) fail(v, NULL, "producer_warps(%d) without a warp_specialize", f->producer_warps);
        return;
    }
    if (f->producer_warps != TIR_WS_PRODUCER_WARPS)
        fail(v, NULL, "a kernel with warp_specialize has producer_warps(%d) (one warpgroup)", TIR_WS_PRODUCER_WARPS);
    if (f->num_warps % TIR_WS_PRODUCER_WARPS)
        fail(v, NULL, "warp_specialize needs num_warps in whole warpgroups (a multiple of %d)", TIR_WS_PRODUCER_WARPS);
    if (!v->ok || split->parent != f->body) return;
    /* before the split every warp runs the ops: none that needs the
     * consumers' layouts to be right (stores, atomics, prints) */
    for (const tir_op *op = f->body->first; op != split; op = op->next)
        if (!(tir_ops[op->code].flags & TIR_F_PURE) && op->code != TIR_OP_MBAR_INIT && op->code != TIR_OP_BARRIER &&
            op->code != TIR_OP_FENCE_ASYNC)
            fail(v, op, "before warp_specialize only pure ops, mbar_init, fence_async and barrier (every warp runs them)");
    uint8_t *held = tir_producer_values(f, a);
    check_places(v, f->body, held, false, split, false);
}

static void verify_op(verifier *v, const tir_op *op) {
    if ((unsigned)op->code >= TIR_OP_COUNT) {
        fail(v, NULL, "unknown opcode");
        return;
    }
    const tir_opinfo *info = &tir_ops[op->code];
    if ((int)op->noperands < info->min_operands || (int)op->noperands > info->max_operands) {
        fail(v, op, "wrong number of operands");
        return;
    }
    if (info->results != TIR_VARIADIC && (int)op->nresults != info->results) {
        fail(v, op, "wrong number of results");
        return;
    }
    if (op->num_stages && (op->code != TIR_OP_FOR || op->num_stages < 1 || op->num_stages > TILEC_MAX_NUM_STAGES))
        fail(v, op, "num_stages is a for loop's, from 1 to %d", TILEC_MAX_NUM_STAGES);
    for (uint32_t i = 0; i < op->noperands; i++) {
        const tir_value *x = op->operands[i];
        if (!x || x->id >= v->f->next_value_id || !v->defined[x->id]) {
            fail(v, op, "operand used before its definition or out of its scope");
            return;
        }
    }
    for (uint32_t i = 0; i < op->nresults; i++) check_layout(v, op, op->results[i]->type);
    check_types(v, op);
    if ((info->flags & TIR_F_REGION) && !op->body) fail(v, op, "region op without a body");
    if (op->body) verify_block(v, op->body, false);
    if (op->body2) verify_block(v, op->body2, false);
    for (uint32_t i = 0; i < op->nresults; i++)
        if (op->results[i]->id < v->f->next_value_id) v->defined[op->results[i]->id] = 1;
}

static void verify_block(verifier *v, const tir_block *blk, bool is_body) {
    for (uint32_t i = 0; i < blk->nargs; i++) {
        check_layout(v, NULL, blk->args[i]->type);
        v->defined[blk->args[i]->id] = 1;
    }
    for (const tir_op *op = blk->first; op; op = op->next) {
        if ((unsigned)op->code >= TIR_OP_COUNT) { /* nothing else about it can be read */
            verify_op(v, op);
            continue;
        }
        if (op->parent != blk) fail(v, op, "op's parent link is wrong");
        bool term = tir_ops[op->code].flags & TIR_F_TERMINATOR;
        if (term && op->next) fail(v, op, "terminator in the middle of a block");
        verify_op(v, op);
    }
    const tir_op *last = blk->last;
    tir_opcode want = is_body ? TIR_OP_RETURN : TIR_OP_YIELD;
    if (!last || last->code != want) {
        if (last)
            fail(v, last, is_body ? "kernel body must end with return" : "a region must end with yield");
        else
            fail(v, NULL, is_body ? "kernel body must end with return" : "a region must end with yield");
    }
    /* leaving the block: its values go out of scope */
    for (const tir_op *op = blk->first; op; op = op->next)
        for (uint32_t i = 0; i < op->nresults; i++)
            if (op->results[i]->id < v->f->next_value_id && !is_body) v->defined[op->results[i]->id] = 0;
    if (!is_body)
        for (uint32_t i = 0; i < blk->nargs; i++) v->defined[blk->args[i]->id] = 0;
}

bool tir_verify(const tir_module *m, const char *after_pass, tc_diag *diag) {
    bool ok = true;
    for (const tir_func *f = m->funcs; f; f = f->next) {
        tc_arena *a = tc_arena_new();
        verifier v = {.m = m, .f = f, .after = after_pass, .diag = diag, .defined = tc_arena_alloc(a, f->next_value_id + 1), .ok = true};
        if (f->num_stages < 0 || f->num_stages > TILEC_MAX_NUM_STAGES) fail(&v, NULL, "num_stages must be from 1 to %d", TILEC_MAX_NUM_STAGES);
        for (uint32_t i = 0; i < f->nparams; i++) {
            if (f->params[i]->type.rank) fail(&v, NULL, "kernel parameters must be scalars or pointers");
            v.defined[f->params[i]->id] = 1;
        }
        /* scratch apart from the buffers is for uses inside their lifetime */
        if (f->smem.live_scratch && !f->smem.buffers) fail(&v, NULL, "smem live_scratch needs buffers");
        check_tmaps(&v);
        verify_block(&v, f->body, true);
        if (v.ok) check_warp_roles(&v, a);
        if (v.any_layout && v.any_missing) fail(&v, NULL, "some tiles have layouts and others do not");
        ok = ok && v.ok;
        tc_arena_free(a);
    }
    return ok;
}
