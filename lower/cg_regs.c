/* cg_regs.c - layouts as registers: which elements a thread holds as which of its registers
 * (views of blocked, sliced, mma and dot_op layouts), their coordinates and thread bases, and the
 * block-entry helpers that make values once per kernel.
 * A file of its own because it is one concern of code generation; the context and the
 * helpers the concern files share are in lower/codegen_internal.h. */
#include <stdio.h>
#include <string.h>

#include "lower/codegen_internal.h"

/* ---- layouts as registers --------------------------------------------------
 * A tile's layout seen as a blocked layout over `rank` view dims: the
 * layout itself, or for a slice its parent with the sliced dim of size 1.
 * Along view dim d a thread holds nreg_d registers: all of its spt_d-runs
 * when the tile covers the layout (shape_d >= cover_d = spt_d tpw_d wpc_d),
 * else one run, wrapped (at most shape_d). Register r splits into per-dim
 * indices r_d with the dims taken in ord (fastest first), so a run along
 * the fastest dim is consecutive registers; r_d holds index
 *   base_d + (r_d / spt_d) cover_d + r_d % spt_d    (mod shape_d if smaller),
 * base_d = (warp_d tpw_d + lane_d) spt_d, where the lane and warp ids split
 * over the dims in ord the same way. For rank 1 this is the formula in the
 * header. */

view view_of(const tir_type *t) {
    view v;
    memset(&v, 0, sizeof v);
    v.l = t->layout;
    v.rank = v.l.rank;
    v.sliced = v.l.kind == TIR_LAYOUT_SLICE ? v.l.slice_dim : -1;
    for (unsigned d = 0, k = 0; d < v.rank; d++) {
        v.shape[d] = (int)d == v.sliced ? 1 : t->shape[k++];
        v.cover[d] = (uint32_t)v.l.spt[d] * v.l.tpw[d] * v.l.wpc[d];
        uint32_t spt = v.l.spt[d];
        v.nreg[d] = v.shape[d] >= v.cover[d] ? spt * (v.shape[d] / v.cover[d]) : spt < v.shape[d] ? spt : v.shape[d];
    }
    return v;
}

uint32_t view_regs(const view *v) {
    uint32_t n = 1;
    for (unsigned d = 0; d < v->rank; d++) n *= v->nreg[d];
    return n;
}

void reg_split(const view *v, uint32_t r, uint32_t *rd) {
    for (unsigned k = 0; k < v->rank; k++) {
        unsigned d = v->l.ord[k];
        rd[d] = r % v->nreg[d];
        r /= v->nreg[d];
    }
}

uint32_t reg_join(const view *v, const uint32_t *rd) {
    uint32_t r = 0;
    for (unsigned k = v->rank; k-- > 0;) r = r * v->nreg[v->l.ord[k]] + rd[v->l.ord[k]];
    return r;
}

/* Repetitions of an MMA layout's 16x8 pieces along N over n columns. */
static uint32_t mma_reps_n(const tir_layout *l, uint32_t n) {
    uint32_t cover = (uint32_t)TIR_MMA_TILE_N * l->wpc[1];
    return n > cover ? n / cover : 1;
}

/* The register of broadcast operand type xt that register r of its
 * result type rt repeats (the operand's dims of 1 at index 0). */
uint32_t broadcast_source_reg(const tir_type *xt, const tir_type *rt, uint32_t r) {
    if (rt->layout.kind == TIR_LAYOUT_MMA_SLICE) return xt->shape[0] == 1 ? 0 : r; /* [1] to [n]: any holds it */
    if (rt->layout.kind == TIR_LAYOUT_MMA) {
        /* register r is (rm, rn, i): rows rm * 16 wpc + 8 (i >> 1), columns
         * rn * 8 wpc + (i & 1) of the thread's. Along a dim of 1 every
         * register of the operand holds its one row (column): take the
         * first repetition there, and the same one along the other dim */
        uint32_t i = r % 4, t = r / 4, rn_r = mma_reps_n(&rt->layout, rt->shape[1]);
        uint32_t rm = t / rn_r, rn = t % rn_r, rn_x = mma_reps_n(&xt->layout, xt->shape[1]);
        if (xt->shape[0] == 1) rm = 0;
        if (xt->shape[1] == 1) rn = 0;
        return (rm * rn_x + rn) * 4 + i;
    }
    view vx = view_of(xt), vr = view_of(rt);
    uint32_t rd[TIR_MAX_RANK];
    reg_split(&vr, r, rd);
    for (unsigned d = 0; d < vx.rank; d++)
        if (vx.shape[d] == 1) rd[d] = 0;
    return reg_join(&vx, rd);
}

/* The view dim of a tile dim. */
unsigned view_dim(const view *v, unsigned td) { return v->sliced >= 0 && (int)td >= v->sliced ? td + 1 : td; }

bool is_rank1_blocked(const tir_type *t) { return t->rank == 1 && t->layout.kind == TIR_LAYOUT_BLOCKED; }

bool is_mma_kind(const tir_layout *l) { return tir_layout_is_mma(l); }

/* Registers per thread for a type: 1 for scalars and for shared-memory
 * buffers (their address). */
uint32_t reg_count(const tir_type *t) {
    if (t->rank == 0 || t->space == TIR_SPACE_SHARED || t->layout.kind == TIR_LAYOUT_DOT_SMEM) return 1;
    if (is_mma_kind(&t->layout)) return tir_mma_regs(&t->layout, t->shape);
    view v = view_of(t);
    return view_regs(&v);
}

LLVMValueRef *new_regs(cg *c, const tir_value *v) {
    uint32_t n = reg_count(&v->type);
    LLVMValueRef *r = TC_NEW_ARRAY(c->arena, LLVMValueRef, n);
    c->regs[v->id] = r;
    c->nregs[v->id] = n;
    return r;
}

/* Register `r` of operand v, broadcasting scalars. */
LLVMValueRef reg(cg *c, const tir_value *v, uint32_t r) {
    LLVMValueRef *rs = c->regs[v->id];
    return c->nregs[v->id] == 1 ? rs[0] : rs[r];
}

LLVMValueRef sreg(cg *c, const char *name) {
    LLVMTypeRef ty = LLVMFunctionType(LLVMInt32TypeInContext(c->ctx), NULL, 0, false);
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
    if (!fn) fn = LLVMAddFunction(c->mod, name, ty);
    return LLVMBuildCall2(c->b, ty, fn, NULL, 0, "");
}

/* The element index register r of a tile of this type holds. */
LLVMValueRef elem_index(cg *c, const tir_type *t, uint32_t r) {
    uint32_t n = t->shape[0], spt = t->layout.spt[0];
    uint32_t cover = spt * 32u * (uint32_t)c->f->num_warps;
    LLVMValueRef base;
    if (spt <= CG_MAX_SPT) {
        if (!c->tid_times[spt]) {
            /* in the entry block, so it dominates every later use, loops too */
            LLVMBasicBlockRef here = LLVMGetInsertBlock(c->b);
            LLVMValueRef term = LLVMGetBasicBlockTerminator(c->entry);
            if (term) LLVMPositionBuilderBefore(c->b, term);
            else LLVMPositionBuilderAtEnd(c->b, c->entry);
            c->tid_times[spt] = LLVMBuildMul(c->b, c->tid, i32c(c, spt), "");
            LLVMPositionBuilderAtEnd(c->b, here);
        }
        base = c->tid_times[spt];
    } else {
        base = LLVMBuildMul(c->b, c->tid, i32c(c, spt), "");
    }
    LLVMValueRef idx = add_i32c(c, base, (int64_t)(r / spt) * cover + r % spt);
    if (n < cover) idx = LLVMBuildAnd(c->b, idx, i32c(c, n - 1), "");
    return idx;
}

uint32_t log2u(uint32_t x) {
    return x <= 1 ? 0 : 32u - (uint32_t)__builtin_clz(x - 1u); /* the least k with 2^k >= x */
}

/* Builds in the entry block (so the values dominate every use, loops too)
 * by calling fn, and comes back to where the builder was. */
void position_at_entry(cg *c) {
    LLVMValueRef term = LLVMGetBasicBlockTerminator(c->entry);
    if (term) LLVMPositionBuilderBefore(c->b, term);
    else LLVMPositionBuilderAtEnd(c->b, c->entry);
}

/* This thread's position along each dim of a blocked layout: lane and
 * warp ids split over the dims fastest first. */
static void thread_pos(cg *c, const tir_layout *l, LLVMValueRef *lane_d, LLVMValueRef *warp_d) {
    LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, i32c(c, 31), "");
    LLVMValueRef warp = LLVMBuildLShr(c->b, c->tid, i32c(c, 5), "");
    for (unsigned k = 0; k < l->rank; k++) {
        unsigned d = l->ord[k];
        lane_d[d] = LLVMBuildAnd(c->b, lane, i32c(c, l->tpw[d] - 1), "");
        lane = LLVMBuildLShr(c->b, lane, i32c(c, log2u(l->tpw[d])), "");
        warp_d[d] = LLVMBuildAnd(c->b, warp, i32c(c, l->wpc[d] - 1), "");
        warp = LLVMBuildLShr(c->b, warp, i32c(c, log2u(l->wpc[d])), "");
    }
}

/* base_d = (warp_d tpw_d + lane_d) spt_d for every view dim, made once per
 * layout in the entry block. */
static const LLVMValueRef *thread_bases(cg *c, const view *v) {
    tir_layout key = tir_layout_parent(&v->l);
    for (uint32_t i = 0; i < c->nbases; i++)
        if (tir_layout_eq(&c->bases[i].key, &key)) return c->bases[i].base;
    struct base_cache *slot = c->nbases < CG_MAX_LAYOUTS ? &c->bases[c->nbases++] : &c->bases[CG_MAX_LAYOUTS - 1];
    slot->key = key;
    LLVMBasicBlockRef here = LLVMGetInsertBlock(c->b);
    position_at_entry(c);
    LLVMValueRef lane_d[TIR_MAX_RANK], warp_d[TIR_MAX_RANK];
    thread_pos(c, &key, lane_d, warp_d);
    for (unsigned d = 0; d < key.rank; d++) {
        LLVMValueRef p = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, warp_d[d], i32c(c, key.tpw[d]), ""), lane_d[d], "");
        slot->base[d] = LLVMBuildMul(c->b, p, i32c(c, key.spt[d]), "");
    }
    LLVMPositionBuilderAtEnd(c->b, here);
    return slot->base;
}

/* Index along view dim d of the element register r holds. */
LLVMValueRef view_coord(cg *c, const view *v, uint32_t r, unsigned d) {
    if (v->shape[d] == 1) return i32c(c, 0);
    uint32_t rd[TIR_MAX_RANK];
    reg_split(v, r, rd);
    uint32_t spt = v->l.spt[d];
    LLVMValueRef idx = add_i32c(c, thread_bases(c, v)[d], (int64_t)(rd[d] / spt) * v->cover[d] + rd[d] % spt);
    if (v->shape[d] < v->cover[d]) idx = LLVMBuildAnd(c->b, idx, i32c(c, v->shape[d] - 1), "");
    return idx;
}

/* ---- mma and dot_op layouts as registers ----------------------------------
 * tileir.h ("mma and dot-operand layouts") gives each register's element
 * as a thread part plus a register part (tir_mma_reg_offset), mod the
 * tile's dims. The thread part, k0 wm + k1 wn + k2 g + k3 q per dim
 * (tir_mma_thread_coeffs), is built once per layout in the entry block. */
static const LLVMValueRef *mma_thread_parts(cg *c, const tir_layout *l) {
    for (uint32_t i = 0; i < c->nbases; i++)
        if (tir_layout_eq(&c->bases[i].key, l)) return c->bases[i].base;
    struct base_cache *slot = c->nbases < CG_MAX_LAYOUTS ? &c->bases[c->nbases++] : &c->bases[CG_MAX_LAYOUTS - 1];
    slot->key = *l;
    LLVMBasicBlockRef here = LLVMGetInsertBlock(c->b);
    position_at_entry(c);
    LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, i32c(c, 31), "");
    LLVMValueRef warp = LLVMBuildLShr(c->b, c->tid, i32c(c, 5), "");
    LLVMValueRef ids[4] = {
        LLVMBuildAnd(c->b, warp, i32c(c, l->wpc[0] - 1), ""),
        LLVMBuildAnd(c->b, LLVMBuildLShr(c->b, warp, i32c(c, log2u(l->wpc[0])), ""), i32c(c, l->wpc[1] - 1), ""),
        LLVMBuildLShr(c->b, lane, i32c(c, 2), ""), /* g: the lane's row group */
        LLVMBuildAnd(c->b, lane, i32c(c, 3), ""),  /* q: the lane within it */
    };
    uint32_t k[2][4];
    tir_mma_thread_coeffs(l, k);
    for (unsigned d = 0; d < 2; d++) {
        LLVMValueRef sum = i32c(c, 0);
        for (unsigned j = 0; j < 4; j++)
            if (k[d][j]) sum = LLVMBuildAdd(c->b, sum, LLVMBuildMul(c->b, ids[j], i32c(c, k[d][j]), ""), "");
        slot->base[d] = sum;
    }
    /* base[2]: for a and b, whether this thread's warp is the first of
     * those holding copies (a is copied over wn, b over wm) */
    slot->base[2] = l->kind == TIR_LAYOUT_DOT_OP ? LLVMBuildICmp(c->b, LLVMIntEQ, ids[l->dot_idx == 0 ? 1 : 0], i32c(c, 0), "")
                                                  : NULL;
    LLVMPositionBuilderAtEnd(c->b, here);
    return slot->base;
}

/* Index along tile dim td of the element register r holds, any layout. */
LLVMValueRef tile_coord(cg *c, const tir_type *t, uint32_t r, unsigned td) {
    if (is_mma_kind(&t->layout)) {
        uint32_t off[2];
        tir_mma_reg_offset(&t->layout, t->shape, r, off);
        LLVMValueRef idx = LLVMBuildAdd(c->b, mma_thread_parts(c, &t->layout)[td], i32c(c, off[td]), "");
        return LLVMBuildAnd(c->b, idx, i32c(c, t->shape[td] - 1), "");
    }
    view v = view_of(t);
    return view_coord(c, &v, r, view_dim(&v, td));
}

/* Row-major index, within a tile of type t, of the element register r
 * holds (0 for a scalar). */
LLVMValueRef linear_index(cg *c, const tir_type *t, uint32_t r) {
    if (!t->rank) return i32c(c, 0);
    LLVMValueRef lin = NULL;
    for (unsigned td = 0; td < t->rank; td++) {
        LLVMValueRef x = tile_coord(c, t, r, td);
        lin = lin ? LLVMBuildAdd(c->b, LLVMBuildMul(c->b, lin, i32c(c, t->shape[td]), ""), x, "") : x;
    }
    return lin;
}

/* True in the first thread holding each element of a tile of this type:
 * along every dim the tile does not cover, the thread's base is inside the
 * tile. NULL when every thread's elements are its own. */
LLVMValueRef first_holder(cg *c, const tir_type *t) {
    if (is_mma_kind(&t->layout)) {
        /* tir_mma_owner: the thread part inside the tile along both dims,
         * and for a and b the first warp along the dim they are copied over */
        const LLVMValueRef *tp = mma_thread_parts(c, &t->layout);
        if (t->layout.kind == TIR_LAYOUT_MMA_SLICE) /* inside the tile, and no copy along the dropped dim */
            return LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntULT, tp[0], i32c(c, t->shape[0]), ""),
                                LLVMBuildICmp(c->b, LLVMIntEQ, tp[1], i32c(c, 0), ""), "");
        LLVMValueRef own = t->layout.kind == TIR_LAYOUT_DOT_OP ? tp[2] : NULL;
        for (unsigned d = 0; d < 2; d++) {
            LLVMValueRef in = LLVMBuildICmp(c->b, LLVMIntULT, tp[d], i32c(c, t->shape[d]), "");
            own = own ? LLVMBuildAnd(c->b, own, in, "") : in;
        }
        return own;
    }
    view v = view_of(t);
    LLVMValueRef own = NULL;
    for (unsigned d = 0; d < v.rank; d++) {
        if (v.shape[d] >= v.cover[d]) continue;
        LLVMValueRef in = LLVMBuildICmp(c->b, LLVMIntULT, thread_bases(c, &v)[d], i32c(c, v.shape[d]), "");
        own = own ? LLVMBuildAnd(c->b, own, in, "") : in;
    }
    return own;
}
