/* cg_reduce.c - reductions and scans across threads: within a thread's
 * registers, across lanes by shuffles, across warps through the scratch
 * area.
 * A file of its own because it is one concern of code generation; the context and the
 * helpers the concern files share are in lower/codegen_internal.h. */
#include <stdio.h>
#include <string.h>

#include "lower/codegen_internal.h"

/* ---- reductions --------------------------------------------------------- */

static LLVMValueRef combine(cg *c, tir_opcode code, tir_elem e, LLVMValueRef a, LLVMValueRef b) {
    bool fl = tir_elem_is_float(e);
    LLVMValueRef args[2] = {a, b};
    switch (code) {
    case TIR_OP_REDUCE_SUM: return fl ? LLVMBuildFAdd(c->b, a, b, "") : LLVMBuildAdd(c->b, a, b, "");
    case TIR_OP_REDUCE_MAX:
        return intrinsic(c, fl ? "llvm.maximum" : "llvm.smax", elem_type(c, e), args, 2);
    default: return intrinsic(c, fl ? "llvm.minimum" : "llvm.smin", elem_type(c, e), args, 2);
    }
}

/* v from another lane by shfl.sync, in 32-bit pieces: `mode` is "bfly"
 * (the lane whose id is this one's xor b), "up" or "down" (this id minus
 * or plus b; a lane with none keeps its own v) or "idx" (lane b); `clamp`
 * is PTX's c operand for a whole warp: 0 for up, 31 for the others. */
static LLVMValueRef shuffle_sync(cg *c, tir_elem e, LLVMValueRef v, const char *mode, LLVMValueRef b, int clamp) {
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c->ctx), ty = elem_type(c, e);
    char name[40];
    snprintf(name, sizeof name, "llvm.nvvm.shfl.sync.%s.i32", mode);
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, NULL, 0);
    LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, NULL, 0);
    unsigned bits = tir_elem_bits(e);
    LLVMTypeRef ity = LLVMIntTypeInContext(c->ctx, bits);
    LLVMValueRef x = LLVMBuildBitCast(c->b, v, ity, "");
    if (bits < 32) x = LLVMBuildZExt(c->b, x, i32, "");
    unsigned pieces = bits > 32 ? bits / 32 : 1;
    LLVMValueRef out = NULL;
    for (unsigned k = 0; k < pieces; k++) {
        LLVMValueRef piece = x;
        if (bits > 32)
            piece = LLVMBuildTrunc(c->b, LLVMBuildLShr(c->b, x, LLVMConstInt(ity, 32ull * k, false), ""), i32, "");
        LLVMValueRef args[4] = {i32c(c, -1), piece, b, i32c(c, clamp)};
        LLVMValueRef got = LLVMBuildCall2(c->b, fty, fn, args, 4, "");
        if (bits > 32) {
            got = LLVMBuildShl(c->b, LLVMBuildZExt(c->b, got, ity, ""), LLVMConstInt(ity, 32ull * k, false), "");
            out = out ? LLVMBuildOr(c->b, out, got, "") : got;
        } else {
            out = got;
        }
    }
    if (bits < 32) out = LLVMBuildTrunc(c->b, out, ity, "");
    return LLVMBuildBitCast(c->b, out, ty, "");
}

/* v from the lane whose id is this lane's xor `mask`. */
static LLVMValueRef shuffle_xor(cg *c, tir_elem e, LLVMValueRef v, uint32_t mask) {
    return shuffle_sync(c, e, v, "bfly", i32c(c, mask), 31);
}


static void gen_reduce_general(cg *c, const tir_op *op);
static void gen_reduce_mma(cg *c, const tir_op *op);

void gen_reduce(cg *c, const tir_op *op) {
    const tir_value *x = op->operands[0], *res = op->results[0];
    if (is_mma_kind(&x->type.layout)) {
        gen_reduce_mma(c, op);
        return;
    }
    if (!is_rank1_blocked(&x->type)) {
        gen_reduce_general(c, op);
        return;
    }
    tir_elem e = tir_type_elem(x->type);
    uint32_t n = x->type.shape[0], spt = x->type.layout.spt[0], threads = 32u * (uint32_t)c->f->num_warps;
    /* threads holding distinct elements: all, or the first n / spt (the
     * layout pass keeps spt <= n, so a thread's own registers differ) */
    uint32_t distinct = n >= spt * threads ? threads : n / spt;
    LLVMValueRef acc = reg(c, x, 0);
    for (uint32_t r = 1; r < c->nregs[x->id]; r++) acc = combine(c, op->code, e, acc, reg(c, x, r));
    for (uint32_t m = 1; m < distinct && m < 32; m *= 2) acc = combine(c, op->code, e, acc, shuffle_xor(c, e, acc, m));
    uint32_t warps = distinct > 32 ? distinct / 32 : 1;
    if (warps > 1) {
        LLVMTypeRef ty = elem_type(c, e);
        uint32_t base = c->smem_used;
        c->smem_used += CG_SMEM_SLOT_BYTES * (uint32_t)c->f->num_warps;
        LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, i32c(c, 31), "");
        LLVMValueRef warp = LLVMBuildLShr(c->b, c->tid, i32c(c, 5), "");
        LLVMBasicBlockRef after;
        guard_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, lane, i32c(c, 0), ""), "red.write", "red.read", &after);
        LLVMValueRef slot = LLVMBuildAdd(c->b, i32c(c, base), LLVMBuildMul(c->b, warp, i32c(c, CG_SMEM_SLOT_BYTES), ""), "");
        LLVMBuildStore(c->b, acc, smem_at(c, slot));
        guard_end(c, after);
        barrier(c);
        acc = LLVMBuildLoad2(c->b, ty, smem_at(c, i32c(c, base)), "");
        for (uint32_t w = 1; w < warps; w++)
            acc = combine(c, op->code, e, acc,
                          LLVMBuildLoad2(c->b, ty, smem_at(c, i32c(c, base + w * CG_SMEM_SLOT_BYTES)), ""));
        if (op->parent && op->parent->parent) barrier(c); /* in a loop: the next trip writes this slot again */
    }
    new_regs(c, res)[0] = acc;
}

/* Distinct lanes and warps along view dim d: past these, threads hold
 * copies (the tile is smaller than the layout there). */
static uint32_t distinct_lanes(const view *v, unsigned d) {
    uint32_t spt = v->l.spt[d], tpw = v->l.tpw[d];
    if (v->shape[d] >= spt * tpw) return tpw;
    return v->shape[d] / spt ? v->shape[d] / spt : 1;
}

static uint32_t distinct_warps(const view *v, unsigned d) {
    uint32_t run = (uint32_t)v->l.spt[d] * v->l.tpw[d];
    if (v->shape[d] >= run * v->l.wpc[d]) return v->l.wpc[d];
    return v->shape[d] / run ? v->shape[d] / run : 1;
}

/* Lane (or warp) id stride of view dim d: the product of tpw (wpc) over
 * the dims before it in ord. */
static uint32_t id_stride(const view *v, unsigned d, bool warps) {
    uint32_t st = 1;
    for (unsigned k = 0; k < v->rank && v->l.ord[k] != d; k++) st *= warps ? v->l.wpc[v->l.ord[k]] : v->l.tpw[v->l.ord[k]];
    return st;
}


/* Bytes of scratch a general reduction needs (0: none). */
static unsigned mma_reduced_dim(const tir_op *op);
static uint32_t mma_distinct_warps(const tir_layout *l, unsigned d, uint32_t n);

uint32_t reduce_scratch(const tir_op *op) {
    const tir_type *x = &op->operands[0]->type;
    if (is_rank1_blocked(x)) return 0;
    if (is_mma_kind(&x->layout)) {
        unsigned d = mma_reduced_dim(op);
        uint32_t n = x->layout.kind == TIR_LAYOUT_MMA_SLICE ? x->shape[0] : x->shape[d];
        uint32_t dw = n == 1 ? 1 : mma_distinct_warps(&x->layout, d, n);
        return dw > 1 ? dw * (uint32_t)tir_type_numel(op->results[0]->type) * scratch_elem_bytes(tir_type_elem(*x)) : 0;
    }
    view v = view_of(x);
    uint32_t dw = distinct_warps(&v, view_dim(&v, (unsigned)op->attr.axis));
    return dw > 1 ? dw * (uint32_t)tir_type_numel(op->results[0]->type) * scratch_elem_bytes(tir_type_elem(*x)) : 0;
}

/* The last step of a reduction whose dw warps along the dim each hold a
 * partial of every result element (acc, the result's registers): through
 * the scratch area, slot [warp][element of the result], written by the
 * threads `writer` names (the first lane along the dim) of warps
 * warp_d < dw, read back in warp order by every thread. */
static void reduce_over_warps(cg *c, const tir_op *op, LLVMValueRef *acc, LLVMValueRef writer, LLVMValueRef warp_d,
                              uint32_t dw) {
    const tir_value *res = op->results[0];
    tir_elem e = tir_type_elem(op->operands[0]->type);
    uint32_t nres = reg_count(&res->type), nel = (uint32_t)tir_type_numel(res->type);
    unsigned eb = scratch_elem_bytes(e); /* reductions keep the element type: i1 is not reduced */
    LLVMTypeRef ty = elem_type(c, e);
    LLVMValueRef *lin = TC_NEW_ARRAY(c->arena, LLVMValueRef, nres);
    for (uint32_t k = 0; k < nres; k++) lin[k] = linear_index(c, &res->type, k);
    barrier(c); /* the scratch area's last readers are done */
    writer = LLVMBuildAnd(c->b, writer, LLVMBuildICmp(c->b, LLVMIntULT, warp_d, i32c(c, dw), ""), "");
    LLVMBasicBlockRef after;
    guard_begin(c, writer, "red.write", "red.read", &after);
    LLVMValueRef row = LLVMBuildMul(c->b, warp_d, i32c(c, nel), "");
    for (uint32_t k = 0; k < nres; k++) {
        LLVMValueRef at = LLVMBuildAdd(c->b, row, lin[k], "");
        at = LLVMBuildAdd(c->b, i32c(c, c->scratch), LLVMBuildMul(c->b, at, i32c(c, eb), ""), "");
        LLVMBuildStore(c->b, acc[k], smem_at(c, at));
    }
    guard_end(c, after);
    barrier(c);
    for (uint32_t k = 0; k < nres; k++) {
        LLVMValueRef v = NULL;
        for (uint32_t w = 0; w < dw; w++) {
            LLVMValueRef at = LLVMBuildAdd(c->b, i32c(c, (int64_t)w * nel), lin[k], "");
            at = LLVMBuildAdd(c->b, i32c(c, c->scratch), LLVMBuildMul(c->b, at, i32c(c, eb), ""), "");
            LLVMValueRef got = LLVMBuildLoad2(c->b, ty, smem_at(c, at), "");
            v = v ? combine(c, op->code, e, v, got) : got;
        }
        acc[k] = v;
    }
}

/* A reduction along a dim of any tile: within each thread over the
 * registers along the dim, then over the lanes along it (butterfly, only
 * lanes with distinct elements), then over the warps along it through the
 * scratch area: slot [warp][element of the result], written by lane 0 of
 * the dim, read back in warp order by every thread. The result's registers
 * are the operand's with the dim's index fixed at 0, which is how a slice
 * layout enumerates them. */
static void gen_reduce_general(cg *c, const tir_op *op) {
    const tir_value *x = op->operands[0], *res = op->results[0];
    tir_elem e = tir_type_elem(x->type);
    view vx = view_of(&x->type);
    unsigned va = view_dim(&vx, (unsigned)op->attr.axis);
    view vr = vx;
    vr.shape[va] = 1;
    vr.nreg[va] = 1;
    uint32_t nres = view_regs(&vr);
    if (nres != reg_count(&res->type)) {
        cg_error(c, op, "reduction result layout does not match its operand's");
        return;
    }
    LLVMValueRef *acc = new_regs(c, res);
    for (uint32_t k = 0; k < nres; k++) {
        uint32_t rd[TIR_MAX_RANK];
        reg_split(&vr, k, rd);
        rd[va] = 0;
        acc[k] = reg(c, x, reg_join(&vx, rd));
        for (uint32_t j = 1; j < vx.nreg[va]; j++) {
            rd[va] = j;
            acc[k] = combine(c, op->code, e, acc[k], reg(c, x, reg_join(&vx, rd)));
        }
    }
    uint32_t dl = distinct_lanes(&vx, va), ls = id_stride(&vx, va, false);
    for (uint32_t m = 1; m < dl; m *= 2)
        for (uint32_t k = 0; k < nres; k++) acc[k] = combine(c, op->code, e, acc[k], shuffle_xor(c, e, acc[k], m * ls));
    uint32_t dw = distinct_warps(&vx, va);
    if (dw <= 1) return;
    uint32_t ws = id_stride(&vx, va, true);
    LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, i32c(c, 31), "");
    LLVMValueRef warp = LLVMBuildLShr(c->b, c->tid, i32c(c, 5), "");
    LLVMValueRef lane_a = LLVMBuildAnd(c->b, LLVMBuildUDiv(c->b, lane, i32c(c, ls), ""), i32c(c, vx.l.tpw[va] - 1), "");
    LLVMValueRef warp_a = LLVMBuildAnd(c->b, LLVMBuildUDiv(c->b, warp, i32c(c, ws), ""), i32c(c, vx.l.wpc[va] - 1), "");
    reduce_over_warps(c, op, acc, LLVMBuildICmp(c->b, LLVMIntEQ, lane_a, i32c(c, 0), ""), warp_a, dw);
}

/* ---- reductions of mma tiles --------------------------------------------
 * An accumulator's rows (reduced along dim 1) or columns (dim 0), and a
 * slice of one reduced to a scalar, stay in registers (tileir.h, "mma and
 * dot-operand layouts"): register (rm, rn, i) of the accumulator holds row
 * .. + 8 (i >> 1) and column .. + (i & 1), so the row sum's register
 * (rm, h) combines the thread's (rm, rn, 2h + j) over rn and j, then the
 * four lanes of a row group (q: shfl.bfly 1, 2), as FlashAttention-2's row
 * max and sum; a column's (rn, j) combines (rm, rn, 2h + j) over rm and h,
 * then the eight row groups (g: 4, 8, 16). Warps along the dim, where
 * there are several, meet in the scratch area (reduce_over_warps).
 * Registers that hold the same element (a dim of 1, or rows past a
 * smaller tile's end wrapping onto others) count once. */

/* The accumulator dim a reduction of an mma-kind operand runs along. */
static unsigned mma_reduced_dim(const tir_op *op) {
    const tir_type *x = &op->operands[0]->type;
    return x->layout.kind == TIR_LAYOUT_MMA_SLICE ? 1u - x->layout.slice_dim : (unsigned)op->attr.axis;
}

/* Warps holding distinct elements along accumulator dim d, for a tile
 * n long there. */
static uint32_t mma_distinct_warps(const tir_layout *l, unsigned d, uint32_t n) {
    uint32_t piece = d == 0 ? TIR_MMA_TILE_M : TIR_MMA_TILE_N, w = l->wpc[d];
    return n >= piece * w ? w : n / piece ? n / piece : 1;
}

static void gen_reduce_mma(cg *c, const tir_op *op) {
    const tir_value *x = op->operands[0], *res = op->results[0];
    const tir_type *xt = &x->type;
    tir_elem e = tir_type_elem(*xt);
    unsigned d = mma_reduced_dim(op);
    bool slice = xt->layout.kind == TIR_LAYOUT_MMA_SLICE;
    uint32_t n = slice ? xt->shape[0] : xt->shape[d], nx = c->nregs[x->id], nres = reg_count(&res->type);
    uint32_t rn_count = slice ? 1 : (xt->shape[1] > TIR_MMA_TILE_N * xt->layout.wpc[1] ? xt->shape[1] / (TIR_MMA_TILE_N * xt->layout.wpc[1]) : 1);
    LLVMValueRef *acc = new_regs(c, res);
    for (uint32_t k = 0; k < nres; k++) acc[k] = NULL;
    /* within the thread: each register to its result register, once per
     * element (by its offset along d, mod n) */
    uint32_t *seen = TC_NEW_ARRAY(c->arena, uint32_t, nx), nseen = 0;
    for (uint32_t r = 0; r < nx; r++) {
        uint32_t off[2], k = 0;
        tir_mma_reg_offset(&xt->layout, xt->shape, r, off);
        if (!slice) {
            uint32_t i = r % 4, rm = r / 4 / rn_count, rn = r / 4 % rn_count;
            k = d == 1 ? rm * 2 + (i >> 1) : rn * 2 + (i & 1);
        }
        uint32_t along = (slice ? off[0] : off[d]) & (n - 1), key = k * n + along, j = 0;
        while (j < nseen && seen[j] != key) j++;
        if (j < nseen) continue; /* a copy of an element already taken */
        seen[nseen++] = key;
        acc[k] = acc[k] ? combine(c, op->code, e, acc[k], reg(c, x, r)) : reg(c, x, r);
    }
    for (uint32_t k = 0; k < nres; k++)
        if (!acc[k]) {
            cg_error(c, op, "reduction result layout does not match its operand's");
            return;
        }
    if (n == 1) return; /* every thread holds the one element along d */
    /* lanes: q (bits 0-1) along columns, g (bits 2-4) along rows */
    uint32_t lo = d == 0 ? 4 : 1, hi = d == 0 ? 32 : 4;
    for (uint32_t m = lo; m < hi; m *= 2)
        for (uint32_t k = 0; k < nres; k++) acc[k] = combine(c, op->code, e, acc[k], shuffle_xor(c, e, acc[k], m));
    uint32_t dw = mma_distinct_warps(&xt->layout, d, n);
    if (dw <= 1) return;
    LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, i32c(c, 31), "");
    LLVMValueRef warp = LLVMBuildLShr(c->b, c->tid, i32c(c, 5), "");
    if (d == 1) warp = LLVMBuildLShr(c->b, warp, i32c(c, log2u(xt->layout.wpc[0])), ""); /* wn = warp / wpc[0] */
    LLVMValueRef warp_d = LLVMBuildAnd(c->b, warp, i32c(c, xt->layout.wpc[d] - 1), "");
    LLVMValueRef first = LLVMBuildICmp(c->b, LLVMIntULT, lane, i32c(c, d == 0 ? 4 : 1), ""); /* g == 0, or q == 0 */
    if (d == 1) first = LLVMBuildICmp(c->b, LLVMIntEQ, LLVMBuildAnd(c->b, lane, i32c(c, 3), ""), i32c(c, 0), "");
    reduce_over_warps(c, op, acc, first, warp_d, dw);
}

/* ---- scans ----------------------------------------------------------------
 * cumsum along view dim a of any layout (cumsum_rev is its mirror image:
 * every "before" below becomes "after"). Along a, register j of a thread
 * holds index (j / spt) cover + base + j % spt (wrapped to the shape where
 * that is smaller than the cover), base = (warp_a tpw + lane_a) spt. So
 * the dim is `segs` segments of `cover` elements (1 where the shape is not
 * larger), each spread over the warps along a, then the lanes, then a run
 * of spt registers in one thread, slowest first:
 *  1. each thread sums its run in every segment, in order;
 *  2. the lanes along a scan their run totals (Hillis-Steele over shfl.up,
 *     only the lanes that hold distinct elements), and each run adds the
 *     inclusive total of the lane before it;
 *  3. where several warps hold distinct elements along a, the last lane of
 *     each writes its warp's total, per segment and element of the other
 *     dims, to the scratch area; after a barrier every thread adds the
 *     totals of the warps before its own, in warp order;
 *  4. each segment adds the totals of the segments before it.
 * Lanes and warps past the tile (copies) compute exactly what the ones
 * they copy do. Where one thread holds the whole dim, step 1 alone runs
 * over all its registers. The float additions are in this order, not the
 * interpreter's left-to-right one (ops.def leaves it to the device). */

typedef struct scan_plan {
    view vx, vo;        /* the operand's view; vo: the same with one register along a */
    unsigned a;         /* the view dim scanned */
    uint32_t segs, run; /* segments along a, and a thread's registers in each */
    uint32_t dl, dw;    /* lanes and warps along a that hold distinct elements */
    bool rev;
} scan_plan;

static scan_plan plan_scan(const tir_op *op) {
    scan_plan p;
    p.vx = view_of(&op->operands[0]->type);
    p.a = view_dim(&p.vx, (unsigned)op->attr.axis);
    p.vo = p.vx;
    p.vo.nreg[p.a] = 1;
    p.dl = distinct_lanes(&p.vx, p.a);
    p.dw = distinct_warps(&p.vx, p.a);
    uint32_t n = p.vx.shape[p.a], cover = p.vx.cover[p.a];
    p.segs = n > cover && (p.dl > 1 || p.dw > 1) ? n / cover : 1;
    p.run = p.vx.nreg[p.a] / p.segs;
    p.rev = op->code == TIR_OP_CUMSUM_REV;
    return p;
}

/* The register holding element s of the run of segment g (both counted
 * in scan order) for other-dims register k. */
static uint32_t scan_reg(const scan_plan *p, uint32_t k, uint32_t g, uint32_t s) {
    uint32_t rd[TIR_MAX_RANK];
    reg_split(&p->vo, k, rd);
    if (p->rev) g = p->segs - 1 - g, s = p->run - 1 - s;
    rd[p->a] = g * p->run + s;
    return reg_join(&p->vx, rd);
}

/* Bytes of scratch a scan needs: a total per warp, segment and element of
 * the other dims, where several warps share the dim (else 0). */
uint32_t scan_scratch(const tir_op *op) {
    scan_plan p = plan_scan(op);
    if (p.dw <= 1) return 0;
    const tir_type *t = &op->operands[0]->type;
    uint32_t others = (uint32_t)(tir_type_numel(*t) / p.vx.shape[p.a]);
    return p.segs * p.dw * others * scratch_elem_bytes(tir_type_elem(*t));
}

/* v + carry where `when` is true (always when it is NULL), else v: an
 * element with nothing before it is itself (-0 stays -0). */
static LLVMValueRef add_when(cg *c, tir_elem e, LLVMValueRef when, LLVMValueRef v, LLVMValueRef carry) {
    LLVMValueRef sum = combine(c, TIR_OP_REDUCE_SUM, e, v, carry);
    return when ? LLVMBuildSelect(c->b, when, sum, v, "") : sum;
}

/* This thread's position along the scan among the lanes (warps) holding
 * distinct elements: 0 for the first, in scan order; *id gets the raw
 * lane (warp) index along the dim. */
static LLVMValueRef scan_pos(cg *c, const scan_plan *p, bool warps, LLVMValueRef *id) {
    uint32_t stride = id_stride(&p->vx, p->a, warps);
    uint32_t count = warps ? p->vx.l.wpc[p->a] : p->vx.l.tpw[p->a], distinct = warps ? p->dw : p->dl;
    LLVMValueRef t = warps ? LLVMBuildLShr(c->b, c->tid, i32c(c, 5), "") : LLVMBuildAnd(c->b, c->tid, i32c(c, 31), "");
    *id = LLVMBuildAnd(c->b, LLVMBuildLShr(c->b, t, i32c(c, log2u(stride)), ""), i32c(c, count - 1), "");
    LLVMValueRef pos = LLVMBuildAnd(c->b, *id, i32c(c, distinct - 1), "");
    return p->rev ? LLVMBuildSub(c->b, i32c(c, distinct - 1), pos, "") : pos;
}

void gen_scan(cg *c, const tir_op *op) {
    const tir_value *x = op->operands[0], *res = op->results[0];
    tir_elem e = tir_type_elem(x->type);
    scan_plan p = plan_scan(op);
    LLVMValueRef *out = new_regs(c, res);
    if (c->nregs[res->id] != c->nregs[x->id]) {
        cg_error(c, op, "scan result layout differs from its operand's");
        return;
    }
    uint32_t nother = view_regs(&p.vo), nrun = nother * p.segs; /* runs: index k * segs + g */
    LLVMValueRef *tot = TC_NEW_ARRAY(c->arena, LLVMValueRef, nrun);
    /* 1. within each run */
    for (uint32_t k = 0; k < nother; k++)
        for (uint32_t g = 0; g < p.segs; g++) {
            LLVMValueRef acc = NULL;
            for (uint32_t s = 0; s < p.run; s++) {
                uint32_t r = scan_reg(&p, k, g, s);
                acc = acc ? combine(c, TIR_OP_REDUCE_SUM, e, acc, reg(c, x, r)) : reg(c, x, r);
                out[r] = acc;
            }
            tot[k * p.segs + g] = acc;
        }
    /* 2. across the lanes: tot becomes the inclusive scan of run totals */
    const char *mode = p.rev ? "down" : "up";
    int clamp = p.rev ? 31 : 0;
    uint32_t ls = id_stride(&p.vx, p.a, false);
    LLVMValueRef lane_a, lpos = scan_pos(c, &p, false, &lane_a);
    if (p.dl > 1) {
        for (uint32_t m = 1; m < p.dl; m *= 2) {
            LLVMValueRef has = LLVMBuildICmp(c->b, LLVMIntUGE, lpos, i32c(c, m), "");
            for (uint32_t i = 0; i < nrun; i++)
                tot[i] = add_when(c, e, has, tot[i], shuffle_sync(c, e, tot[i], mode, i32c(c, (int64_t)m * ls), clamp));
        }
        LLVMValueRef has = LLVMBuildICmp(c->b, LLVMIntNE, lpos, i32c(c, 0), "");
        for (uint32_t i = 0; i < nrun; i++) {
            LLVMValueRef before = shuffle_sync(c, e, tot[i], mode, i32c(c, ls), clamp);
            for (uint32_t s = 0; s < p.run; s++) {
                uint32_t r = scan_reg(&p, i / p.segs, i % p.segs, s);
                out[r] = add_when(c, e, has, out[r], before);
            }
        }
    }
    /* segment totals, for step 4 */
    LLVMValueRef *seg_total = TC_NEW_ARRAY(c->arena, LLVMValueRef, nrun);
    if (p.segs > 1 && p.dw <= 1) {
        if (p.dl > 1) { /* the last lane's inclusive total */
            uint32_t tpw = p.vx.l.tpw[p.a];
            LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, i32c(c, 31), "");
            LLVMValueRef src = LLVMBuildOr(c->b, LLVMBuildAnd(c->b, lane, i32c(c, ~(int64_t)((tpw - 1) * ls)), ""),
                                           i32c(c, (int64_t)(p.rev ? 0 : p.dl - 1) * ls), "");
            for (uint32_t i = 0; i < nrun; i++) seg_total[i] = shuffle_sync(c, e, tot[i], "idx", src, 31);
        } else {
            for (uint32_t i = 0; i < nrun; i++) seg_total[i] = tot[i];
        }
    }
    /* 3. across the warps, through the scratch area: slot [segment][warp in scan order][element of the other dims] */
    if (p.dw > 1) {
        LLVMValueRef warp_a, wpos = scan_pos(c, &p, true, &warp_a);
        uint32_t others = (uint32_t)(tir_type_numel(x->type) / p.vx.shape[p.a]);
        unsigned eb = scratch_elem_bytes(e);
        LLVMTypeRef ty = elem_type(c, e);
        LLVMValueRef *lin = TC_NEW_ARRAY(c->arena, LLVMValueRef, nother);
        for (uint32_t k = 0; k < nother; k++) {
            uint32_t r0 = scan_reg(&p, k, 0, 0);
            lin[k] = i32c(c, 0);
            for (unsigned d = 0; d < p.vx.rank; d++)
                if (d != p.a)
                    lin[k] = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, lin[k], i32c(c, p.vx.shape[d]), ""),
                                          view_coord(c, &p.vx, r0, d), "");
        }
        barrier(c); /* the scratch area's last readers are done */
        LLVMValueRef last_lane = LLVMBuildICmp(c->b, LLVMIntEQ, lane_a, i32c(c, p.rev ? 0 : p.dl - 1), "");
        LLVMValueRef writer = LLVMBuildAnd(c->b, last_lane, LLVMBuildICmp(c->b, LLVMIntULT, warp_a, i32c(c, p.dw), ""), "");
        LLVMBasicBlockRef after;
        guard_begin(c, writer, "scan.write", "scan.read", &after);
        for (uint32_t i = 0; i < nrun; i++) {
            LLVMValueRef slot = LLVMBuildAdd(c->b, i32c(c, (int64_t)(i % p.segs) * p.dw), wpos, "");
            LLVMValueRef at = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, slot, i32c(c, others), ""), lin[i / p.segs], "");
            at = LLVMBuildAdd(c->b, i32c(c, c->scratch), LLVMBuildMul(c->b, at, i32c(c, eb), ""), "");
            LLVMBuildStore(c->b, tot[i], smem_at(c, at));
        }
        guard_end(c, after);
        barrier(c);
        LLVMValueRef has = LLVMBuildICmp(c->b, LLVMIntNE, wpos, i32c(c, 0), "");
        for (uint32_t i = 0; i < nrun; i++) {
            uint32_t g = i % p.segs;
            bool need_total = g + 1 < p.segs; /* the last segment's total carries into nothing */
            LLVMValueRef before = NULL, total = NULL;
            for (uint32_t q = 0; q < p.dw; q++) {
                if (q + 1 == p.dw && !need_total) break;
                LLVMValueRef at = LLVMBuildAdd(c->b, i32c(c, ((int64_t)g * p.dw + q) * others), lin[i / p.segs], "");
                at = LLVMBuildAdd(c->b, i32c(c, c->scratch), LLVMBuildMul(c->b, at, i32c(c, eb), ""), "");
                LLVMValueRef got = LLVMBuildLoad2(c->b, ty, smem_at(c, at), "");
                if (need_total) total = total ? combine(c, TIR_OP_REDUCE_SUM, e, total, got) : got;
                if (q + 1 < p.dw) /* the warps before this one: q < wpos */
                    before = before ? add_when(c, e, LLVMBuildICmp(c->b, LLVMIntULT, i32c(c, q), wpos, ""), before, got) : got;
            }
            for (uint32_t s = 0; s < p.run; s++) {
                uint32_t r = scan_reg(&p, i / p.segs, g, s);
                out[r] = add_when(c, e, has, out[r], before);
            }
            seg_total[i] = total;
        }
    }
    /* 4. each segment adds the totals of those before it */
    for (uint32_t k = 0; k < nother && p.segs > 1; k++) {
        LLVMValueRef carry = NULL;
        for (uint32_t g = 1; g < p.segs; g++) {
            LLVMValueRef t = seg_total[k * p.segs + g - 1];
            carry = carry ? combine(c, TIR_OP_REDUCE_SUM, e, carry, t) : t;
            for (uint32_t s = 0; s < p.run; s++) {
                uint32_t r = scan_reg(&p, k, g, s);
                out[r] = combine(c, TIR_OP_REDUCE_SUM, e, out[r], carry);
            }
        }
    }
}
