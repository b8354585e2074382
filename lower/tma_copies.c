/* tma_copies.c - on sm_90a, a pipelined loop's rings are filled by the
 * bulk tensor copy engine (TMA) instead of every thread's cp.async: one
 * thread starts one copy of a whole tile a trip, with no per-thread
 * pointers, masks or address arithmetic left in the loop, and the slots
 * complete on mbarriers that the readers wait on.
 *
 * The copy engine reads a tensor map: a base address, sizes, strides and
 * a box (tileir.h, tir_tmap), which the runtime encodes at launch from
 * the kernel's arguments. So the pass infers one from the copies'
 * pointer arithmetic, as a linear form: the pointers of a ring's
 * async_copy must be
 *     base + u + sum_d i_d * s_d        (element offsets)
 * where base is a pointer parameter of the kernel, i_d the tile index
 * along slot dim d, s_d a stride the host knows (a constant, or a
 * constant times an integer parameter), and u a scalar: a sum of
 * products of at most two scalars (affine in the induction variable,
 * program ids, parameters; a splatted scalar whose own form has a product
 * of two in it counts as one scalar, else times a stride it would have
 * three: attention backward's row block). Each of u's terms is placed along the dim
 * whose stride divides it (the one with a parameter stride it names
 * first, else a constant stride that divides its coefficient, else dim
 * 0, of stride 1), or along a dim of its own with a box of 1 when it is
 * a constant times a parameter no dim has (a batch: b * stride_ab) and
 * the copy engine can take as a stride (else dim 0: K, a loop's start);
 * its quotient is that dim's coordinate. The slot's contiguous dim (its
 * shared layout's ord[0]) must have stride 1 and every other stride must
 * be a multiple of 16 bytes the compiler can prove (a constant, or a
 * parameter under multiple_of): the copy engine's rules. So must the
 * coordinate along the contiguous dim, where the box starts (each of its
 * products' coefficient times what divides its factors, by axisinfo or
 * multiple_of): an H200 executes a copy starting elsewhere as an illegal
 * instruction, so `range(lo, K, 64)` keeps cp.async and
 * `range(multiple_of(lo, 8), K, 64)` (f16) converts. A parameter alone
 * in u is such an offset, never a batch stride.
 *
 * The mask becomes the map's sizes and the copy's predicate: a
 * conjunction of scalar conditions, which must be the pipeline's "this
 * trip exists" (`iv' < hi`: a copy it turns off is never waited for; a
 * copy the program's own scalar mask turned off would leave its trip
 * waiting forever), which becomes the predicate, and of compares i_d + x < y (x,
 * y scalars), each the bound of one dim: the copy engine fills elements
 * past a dim's size with zeros, as the mask fills masked-off ones, when
 * the coordinate plus i_d reaches size at the same i_d, i.e. size =
 * y - x + coordinate, which must be a constant or a constant times an
 * integer parameter (K - k + k = K: the K tail). A dim no mask bounds is
 * TIR_TMAP_UNBOUNDED. Below 0 the copy engine fills zeros too where a
 * pointer load would read memory: tma_load makes a negative coordinate an
 * error of the launch (ops.def), never a silent difference.
 *
 * The box is the slot along every dim but the contiguous one, where it
 * is the swizzle's span (boxes side by side: tir_tma_places checks that
 * the buffer's shared layout puts each element where the copy does,
 * trying 128, 64 and 32-byte swizzles, then none), and 1 along a batch
 * dim. A ring qualifies when every copy into it gives the same map (the
 * prologue's and the loop's are clones) and nothing but its copies and
 * local_loads touches it.
 *
 * Then, for the loop (its rings that qualify; others keep cp.async):
 *   before the first prologue copy   bars = local_alloc smem<S x 1 x i64>
 *                                    mbar_init N, bars   (N rings a slot)
 *                                    fence_async         (bytes threads wrote
 *                                                        before: smem_plan may
 *                                                        put a ring on them)
 *                                    barrier
 *   each async_copy                  tma_load M, buf, slot, bars, pred, coords
 *   top of each trip (trip t)        mbar_wait bars, r, phase   (r = t % S,
 *                                    the ring index pipeline_loops carries;
 *                                    phase = (t / S) % 2, carried too)
 *   after the loop                   mbar_inval bars
 * With no cp.async left in the loop, its async_commit and async_wait ops
 * go, and so does the fence_async before the trip's barrier (wgmma reads
 * what the copy engine wrote without one). The barrier at the top of each
 * trip stays: it keeps a slot from being refilled while a thread still
 * reads it (async_dots' barrier after its wait does the same). Every
 * thread's waits are done before mbar_inval: the last trip's barrier
 * follows its wait. */
#include <stdint.h>
#include <string.h>

#include "lower/lower.h"

enum {
    TMA_MAX_TERMS = 16, /* products in one linear form: past it, the copy keeps cp.async */
    TMA_MAX_DEPTH = 48, /* ops followed through one value */
    TMA_COPY_ALIGN = 16, /* bytes: the copy engine's strides and base */
    TMA_MAX_COPIES = 16, /* copies into one ring (the prologue's S - 1 and the loop's) */
    TMA_MAX_RINGS = 8,   /* shared buffers a loop's pass looks at */
};

/* coef * a * b, where a missing factor is 1 (a NULL: a constant) */
typedef struct mono {
    int64_t coef;
    tir_value *a, *b;
} mono;

typedef struct lin {
    mono m[TMA_MAX_TERMS];
    unsigned n;
    bool ok;
} lin;

typedef struct tma_ctx {
    tir_func *f;
    int64_t *param_div; /* by parameter: the largest multiple_of promised for it */
    lower_axis_map *axis; /* scalars' divisibility (the box's start along dim 0), per loop */
} tma_ctx;

/* ---- linear forms over scalars ------------------------------------------ */

static lin lin_fail(void) { return (lin){.ok = false}; }

static lin lin_const(int64_t k) {
    lin l = {.ok = true};
    if (k) l.m[l.n++] = (mono){.coef = k};
    return l;
}

static lin lin_atom(tir_value *v) {
    lin l = {.ok = true, .n = 1};
    l.m[0] = (mono){.coef = 1, .a = v};
    return l;
}

static bool same_factors(const mono *x, const mono *y) {
    return (x->a == y->a && x->b == y->b) || (x->a == y->b && x->b == y->a);
}

/* x + sign * y, like products merged */
static lin lin_add(lin x, lin y, int64_t sign) {
    if (!x.ok || !y.ok) return lin_fail();
    for (unsigned i = 0; i < y.n; i++) {
        mono t = y.m[i];
        if (__builtin_mul_overflow(t.coef, sign, &t.coef)) return lin_fail(); /* constants past 64 bits: no map */
        unsigned j = 0;
        while (j < x.n && !same_factors(&x.m[j], &t)) j++;
        if (j < x.n) {
            if (__builtin_add_overflow(x.m[j].coef, t.coef, &x.m[j].coef)) return lin_fail();
            if (!x.m[j].coef) x.m[j] = x.m[--x.n];
        } else {
            if (x.n == TMA_MAX_TERMS) return lin_fail();
            x.m[x.n++] = t;
        }
    }
    return x;
}

static unsigned degree(const mono *t) { return (t->a != NULL) + (t->b != NULL); }

/* x * y, when no product has more than two factors */
static lin lin_mul(lin x, lin y) {
    if (!x.ok || !y.ok) return lin_fail();
    lin r = lin_const(0);
    for (unsigned i = 0; i < x.n; i++)
        for (unsigned j = 0; j < y.n; j++) {
            const mono *p = &x.m[i], *q = &y.m[j];
            if (degree(p) + degree(q) > 2) return lin_fail();
            tir_value *f[2] = {0}, *const g[4] = {p->a, p->b, q->a, q->b};
            unsigned k = 0;
            for (unsigned u = 0; u < 4; u++)
                if (g[u]) f[k++] = g[u];
            lin t = {.ok = true, .n = 1};
            t.m[0] = (mono){.a = f[0], .b = f[1]};
            if (__builtin_mul_overflow(p->coef, q->coef, &t.m[0].coef)) return lin_fail();
            r = lin_add(r, t, 1);
        }
    return r;
}

static bool is_int(tir_type t) {
    return t.rank == 0 && t.elem != TIR_PTR && t.elem != TIR_I1 && !tir_elem_is_float(t.elem);
}

static int param_of(const tir_func *f, const tir_value *v) {
    if (!v || v->def) return -1;
    for (uint32_t i = 0; i < f->nparams; i++)
        if (f->params[i] == v) return (int)i;
    return -1;
}

/* v, an integer scalar, as a linear form; multiple_of promises about
 * parameters are remembered for the strides' alignment. */
static lin scalar_lin(tma_ctx *c, tir_value *v, int depth) {
    if (depth > TMA_MAX_DEPTH || !is_int(v->type)) return lin_fail();
    const tir_op *op = v->def;
    if (!op) return lin_atom(v);
    tir_value *const *o = op->operands;
    switch (op->code) {
    case TIR_OP_CONST: return lin_const(op->attr.ival);
    case TIR_OP_ADD: return lin_add(scalar_lin(c, o[0], depth + 1), scalar_lin(c, o[1], depth + 1), 1);
    case TIR_OP_SUB: return lin_add(scalar_lin(c, o[0], depth + 1), scalar_lin(c, o[1], depth + 1), -1);
    case TIR_OP_NEG: return lin_add(lin_const(0), scalar_lin(c, o[0], depth + 1), -1);
    case TIR_OP_MUL: {
        lin r = lin_mul(scalar_lin(c, o[0], depth + 1), scalar_lin(c, o[1], depth + 1));
        return r.ok ? r : lin_atom(v);
    }
    case TIR_OP_CAST: /* a widening of an index: the same number */
        if (is_int(o[0]->type) && tir_elem_bits(o[0]->type.elem) <= tir_elem_bits(v->type.elem))
            return scalar_lin(c, o[0], depth + 1);
        return lin_atom(v);
    case TIR_OP_MULTIPLE_OF: {
        int p = param_of(c->f, o[0]);
        if (p >= 0 && op->attr.axis > c->param_div[p]) c->param_div[p] = op->attr.axis;
        return scalar_lin(c, o[0], depth + 1);
    }
    default: return lin_atom(v);
    }
}

/* ---- tiles of offsets, pointers and masks -------------------------------- */

/* value at tile index i = u + sum_d i_d * s[d] */
typedef struct tlin {
    lin u, s[TIR_MAX_RANK];
    bool ok;
} tlin;

static tlin tlin_fail(void) { return (tlin){.ok = false}; }

static tlin tlin_uniform(lin u) {
    tlin t = {.u = u, .ok = u.ok};
    for (unsigned d = 0; d < TIR_MAX_RANK; d++) t.s[d] = lin_const(0);
    return t;
}

static bool uniform(const tlin *t) {
    for (unsigned d = 0; d < TIR_MAX_RANK; d++)
        if (t->s[d].n) return false;
    return true;
}

static tlin tlin_add(tlin x, tlin y, int64_t sign) {
    if (!x.ok || !y.ok) return tlin_fail();
    x.u = lin_add(x.u, y.u, sign);
    bool ok = x.u.ok;
    for (unsigned d = 0; d < TIR_MAX_RANK; d++) ok = (x.s[d] = lin_add(x.s[d], y.s[d], sign)).ok && ok;
    return ok ? x : tlin_fail();
}

/* The dims of a shape op's operand as its result's: result dim d is
 * operand dim from[d] (-1: a new dim, index-free). */
static tlin remap(tlin x, const int *from, unsigned rank) {
    if (!x.ok) return x;
    tlin r = tlin_uniform(x.u);
    for (unsigned d = 0; d < rank; d++)
        if (from[d] >= 0) r.s[d] = x.s[from[d]];
    return r;
}

/* How a shape op (expand_dims, broadcast, permute, convert_layout) maps
 * result dims to operand dims; false for other ops. A broadcast dim of
 * size 1 has index 0 in its operand: its stride drops. */
static bool dims_from(const tir_op *op, int *from) {
    const tir_type *x = &op->operands[0]->type, *r = &op->results[0]->type;
    switch (op->code) {
    case TIR_OP_CONVERT_LAYOUT:
        for (unsigned d = 0; d < r->rank; d++) from[d] = (int)d;
        return true;
    case TIR_OP_EXPAND_DIMS:
        for (unsigned d = 0; d < r->rank; d++)
            from[d] = d < op->attr.axis ? (int)d : d == op->attr.axis ? -1 : (int)d - 1;
        return x->rank + 1u == r->rank;
    case TIR_OP_BROADCAST:
        for (unsigned d = 0; d < r->rank; d++) from[d] = x->shape[d] == 1 && r->shape[d] != 1 ? -1 : (int)d;
        return x->rank == r->rank;
    case TIR_OP_PERMUTE:
        for (unsigned d = 0; d < r->rank; d++) from[d] = op->attr.perm[d];
        return true;
    default: return false;
    }
}

static tlin tile_lin(tma_ctx *c, tir_value *v, int depth) {
    if (depth > TMA_MAX_DEPTH) return tlin_fail();
    if (v->type.rank == 0) return tlin_uniform(scalar_lin(c, v, depth + 1));
    tir_elem e = v->type.elem;
    const tir_op *op = v->def;
    if (!op || e == TIR_PTR || e == TIR_I1 || tir_elem_is_float(e)) return tlin_fail();
    tir_value *const *o = op->operands;
    int from[TIR_MAX_RANK];
    switch (op->code) {
    case TIR_OP_ARANGE: {
        tlin t = tlin_uniform(lin_const(op->attr.range.lo));
        t.s[0] = lin_const(1);
        return t;
    }
    case TIR_OP_CONST: return tlin_uniform(lin_const(op->attr.ival));
    case TIR_OP_SPLAT: {
        /* a scalar with a product of two unknowns in it (attention
         * backward's query block, lo + (it - g nblk) BLOCK_M) stays one
         * unknown: times a stride it would have three factors. The mask
         * bounding the tile splats the same value, so the dim's size
         * still cancels it (y - x + coordinate). */
        lin l = scalar_lin(c, o[0], depth + 1);
        for (unsigned i = 0; l.ok && i < l.n; i++)
            if (degree(&l.m[i]) > 1) return tlin_uniform(lin_atom(o[0]));
        return tlin_uniform(l);
    }
    case TIR_OP_ADD: return tlin_add(tile_lin(c, o[0], depth + 1), tile_lin(c, o[1], depth + 1), 1);
    case TIR_OP_SUB: return tlin_add(tile_lin(c, o[0], depth + 1), tile_lin(c, o[1], depth + 1), -1);
    case TIR_OP_MUL: {
        tlin x = tile_lin(c, o[0], depth + 1), y = tile_lin(c, o[1], depth + 1);
        if (!x.ok || !y.ok || (!uniform(&x) && !uniform(&y))) return tlin_fail();
        if (!uniform(&x)) { tlin t = x; x = y; y = t; } /* x uniform */
        y.u = lin_mul(y.u, x.u);
        bool ok = y.u.ok;
        for (unsigned d = 0; d < TIR_MAX_RANK; d++) ok = (y.s[d] = lin_mul(y.s[d], x.u)).ok && ok;
        return ok ? y : tlin_fail();
    }
    case TIR_OP_CAST:
        if (o[0]->type.elem != TIR_PTR && o[0]->type.elem != TIR_I1 && !tir_elem_is_float(o[0]->type.elem) &&
            tir_elem_bits(o[0]->type.elem) <= tir_elem_bits(e))
            return tile_lin(c, o[0], depth + 1);
        return tlin_fail();
    default:
        if (!dims_from(op, from)) return tlin_fail();
        return remap(tile_lin(c, o[0], depth + 1), from, v->type.rank);
    }
}

/* A pointer (scalar or tile) as a parameter plus element offsets. */
static tlin ptr_lin(tma_ctx *c, tir_value *v, int *base, int depth) {
    if (depth > TMA_MAX_DEPTH || v->type.elem != TIR_PTR) return tlin_fail();
    const tir_op *op = v->def;
    if (!op) {
        *base = param_of(c->f, v);
        return *base >= 0 ? tlin_uniform(lin_const(0)) : tlin_fail();
    }
    int from[TIR_MAX_RANK];
    switch (op->code) {
    case TIR_OP_ADDPTR:
        return tlin_add(ptr_lin(c, op->operands[0], base, depth + 1), tile_lin(c, op->operands[1], depth + 1), 1);
    case TIR_OP_SPLAT: return ptr_lin(c, op->operands[0], base, depth + 1);
    default:
        if (!dims_from(op, from)) return tlin_fail();
        return remap(ptr_lin(c, op->operands[0], base, depth + 1), from, v->type.rank);
    }
}

/* A mask as scalar conditions and one bound a dim: i_d < bound[d]. */
typedef struct mask_form {
    tir_value *pred[TMA_MAX_TERMS];
    unsigned npred;
    lin bound[TIR_MAX_RANK];
    bool has[TIR_MAX_RANK];
} mask_form;

/* i_d + x < y from a compare (le: + 1) */
static bool add_bound(tma_ctx *c, mask_form *m, tir_value *lo, tir_value *hi, int64_t plus, int depth) {
    tlin x = tile_lin(c, lo, depth + 1), y = tile_lin(c, hi, depth + 1);
    if (!x.ok || !y.ok || !uniform(&y)) return false;
    int dim = -1;
    for (unsigned d = 0; d < TIR_MAX_RANK; d++)
        if (x.s[d].n) {
            if (dim >= 0 || x.s[d].n != 1 || x.s[d].m[0].a || x.s[d].m[0].coef != 1) return false;
            dim = (int)d;
        }
    if (dim < 0 || m->has[dim]) return false; /* two bounds on a dim would be their minimum */
    m->bound[dim] = lin_add(lin_add(y.u, x.u, -1), lin_const(plus), 1);
    m->has[dim] = m->bound[dim].ok;
    return m->has[dim];
}

static bool mask_terms(tma_ctx *c, tir_value *v, mask_form *m, int depth) {
    if (depth > TMA_MAX_DEPTH) return false;
    if (v->type.rank == 0) {
        if (m->npred == TMA_MAX_TERMS) return false;
        m->pred[m->npred++] = v;
        return true;
    }
    const tir_op *op = v->def;
    if (!op) return false;
    tir_value *const *o = op->operands;
    switch (op->code) {
    case TIR_OP_SPLAT: return mask_terms(c, o[0], m, depth + 1);
    case TIR_OP_CONST: return op->attr.ival != 0; /* all true: nothing; all false: no copy to make */
    case TIR_OP_AND: return mask_terms(c, o[0], m, depth + 1) && mask_terms(c, o[1], m, depth + 1);
    case TIR_OP_LT: return add_bound(c, m, o[0], o[1], 0, depth);
    case TIR_OP_LE: return add_bound(c, m, o[0], o[1], 1, depth);
    case TIR_OP_GT: return add_bound(c, m, o[1], o[0], 0, depth);
    case TIR_OP_GE: return add_bound(c, m, o[1], o[0], 1, depth);
    default: {
        int from[TIR_MAX_RANK];
        if (!dims_from(op, from)) return false;
        mask_form inner = {0};
        if (!mask_terms(c, o[0], &inner, depth + 1)) return false;
        for (unsigned i = 0; i < inner.npred; i++) {
            if (m->npred == TMA_MAX_TERMS) return false;
            m->pred[m->npred++] = inner.pred[i];
        }
        bool used[TIR_MAX_RANK] = {false};
        for (unsigned d = 0; d < v->type.rank; d++) {
            if (from[d] < 0 || !inner.has[from[d]]) continue;
            if (m->has[d]) return false;
            m->bound[d] = inner.bound[from[d]], m->has[d] = true, used[from[d]] = true;
        }
        for (unsigned d = 0; d < TIR_MAX_RANK; d++)
            if (inner.has[d] && !used[d]) return false; /* a bound on a dim the op drops */
        return true;
    }
    }
}

/* ---- one copy's tensor map -------------------------------------------- */

typedef struct tma_copy {
    tir_tmap map;
    lin coord[TIR_TMAP_MAX_RANK];
    tir_value *pred[TMA_MAX_TERMS];
    unsigned npred;
} tma_copy;

/* A stride the host knows, as a map term: a constant, or a constant times
 * an integer parameter; and whether its bytes are a multiple of 16. */
/* x * y * z (each >= 1) a multiple of TMA_COPY_ALIGN, a power of two,
 * computed modulo it: the product itself may pass 64 bits */
static bool aligned_product(int64_t x, int64_t y, int64_t z) {
    uint64_t k = TMA_COPY_ALIGN;
    return ((uint64_t)x % k) * ((uint64_t)y % k) % k * ((uint64_t)z % k) % k == 0;
}

/* A stride (need_align; a positive one) or a size the host knows, as a
 * map term: a constant, or a constant times an integer parameter; a
 * stride's bytes provably a multiple of 16. */
static bool host_term(tma_ctx *c, const lin *l, tir_tmap_term *t, uint32_t eb, bool need_align) {
    if (l->n == 0) return false; /* 0: a stride or size the copy engine does not take */
    if (l->n != 1 || degree(&l->m[0]) > 1) return false;
    const mono *m = &l->m[0];
    if (need_align && m->coef < 1) return false; /* the copy engine's strides are positive (rows read in reverse) */
    if (!m->a) {
        *t = (tir_tmap_term){.scale = m->coef, .param = TIR_TMAP_CONST};
        return !need_align || aligned_product(m->coef, eb, 1);
    }
    int p = param_of(c->f, m->a);
    if (p < 0 || !is_int(m->a->type)) return false;
    *t = (tir_tmap_term){.scale = m->coef, .param = p};
    return !need_align || aligned_product(m->coef, eb, c->param_div[p] ? c->param_div[p] : 1);
}

/* What divides scalar v: axisinfo's, or a multiple_of promised for it
 * (a parameter: scalar_lin looks through multiple_of to the parameter). */
static int64_t scalar_div(const tma_ctx *c, const tir_value *v) {
    if (!v) return 1;
    int64_t d = lower_axis_get(c->axis, v).divisibility;
    int p = param_of(c->f, v);
    if (p >= 0 && c->param_div[p] > d) d = c->param_div[p];
    return d;
}

/* Whether coordinate l, in elements of eb bytes, is provably a multiple
 * of 16 bytes: the copy engine's box must start there along the
 * innermost dim (an illegal instruction otherwise, on an H200: emu/async.c,
 * coord_aligned). Each product's coefficient times what divides its
 * factors, a multiple of 16 / eb elements, makes the sum one. */
static bool coord_aligned(const tma_ctx *c, const lin *l, uint32_t eb) {
    for (unsigned i = 0; i < l->n; i++) {
        const mono *t = &l->m[i];
        int64_t k = t->coef < 0 ? -t->coef : t->coef; /* coef > INT32_MIN: copy_form's check */
        if (!aligned_product(k * eb, scalar_div(c, t->a), scalar_div(c, t->b))) return false;
    }
    return true;
}

/* Whether product t names parameter p as a factor, and t / (scale * p)
 * as `rest`. */
static bool divides(const mono *t, const tir_tmap_term *s, tma_ctx *c, lin *rest) {
    if (s->scale < 1 || t->coef % s->scale) return false; /* strides are positive (host_term) */
    tir_value *p = s->param == TIR_TMAP_CONST ? NULL : c->f->params[s->param];
    tir_value *other;
    if (!p) {
        if (degree(t) == 2) return false; /* a product of two scalars over a constant stride: ambiguous */
        other = t->a;
    } else if (t->a == p) {
        other = t->b;
    } else if (t->b == p) {
        other = t->a;
    } else {
        return false;
    }
    lin r = {.ok = true, .n = 1};
    r.m[0] = (mono){.coef = t->coef / s->scale, .a = other};
    *rest = r;
    return true;
}

/* The slot's swizzle and box along its contiguous dim; false if no copy
 * puts the elements where the buffer's layout has them. */
static bool pick_swizzle(const tir_type *bt, uint32_t *box0, unsigned *swizzle) {
    static const unsigned spans[3] = {128, 64, 32};
    uint32_t eb = (tir_elem_bits(bt->elem) + 7) / 8, at[2];
    unsigned cd = bt->layout.kind == TIR_LAYOUT_SHARED ? bt->layout.ord[0] : 1u;
    uint32_t cols = bt->shape[1 + cd];
    for (unsigned i = 0; i < 3; i++) {
        uint32_t b = spans[i] / eb;
        if (cols % b == 0 && (uint64_t)bt->shape[1] * bt->shape[2] * eb % (spans[i] * 8u) == 0 &&
            tir_tma_places(bt, b, spans[i], at)) {
            *box0 = b, *swizzle = spans[i];
            return true;
        }
    }
    if (cols * eb % TMA_COPY_ALIGN || cols > TIR_TMAP_MAX_BOX || !tir_tma_places(bt, cols, 0, at)) return false;
    *box0 = cols, *swizzle = 0;
    return true;
}

/* Whether scalar p is pipeline_loops' "this trip exists" (`lt iv', hi` for
 * the trip's induction value and the loop's bound): a copy it turns off
 * belongs to a trip that never waits for it. Any other condition is the
 * program's own mask: off, the pointer load reads zeros, but a copy not
 * issued would leave its mbarrier's phase incomplete, and the trip that
 * waits for it would hang; such loads keep cp.async. */
static bool same_value(const tir_value *a, const tir_value *b) { /* passes may copy constants */
    if (a == b) return true;
    return a->def && b->def && a->def->code == TIR_OP_CONST && b->def->code == TIR_OP_CONST &&
           a->def->attr.ival == b->def->attr.ival && tir_type_eq(a->type, b->type);
}

/* x is a trip's induction value as pipeline_loops builds it: lo, or lo or
 * iv plus step times a constant */
static bool trip_iv(const tir_value *x, const tir_op *loop) {
    const tir_value *lo = loop->operands[0], *step = loop->operands[2], *iv = loop->body->args[0];
    if (same_value(x, lo)) return true;
    const tir_op *a = x->def, *m = a && a->code == TIR_OP_ADD ? a->operands[1]->def : NULL;
    return m && (same_value(a->operands[0], lo) || a->operands[0] == iv) && m->code == TIR_OP_MUL &&
           same_value(m->operands[0], step) && m->operands[1]->def && m->operands[1]->def->code == TIR_OP_CONST;
}

static bool trip_exists(const tir_value *p, const tir_op *loop) {
    return p->def && p->def->code == TIR_OP_LT && same_value(p->def->operands[1], loop->operands[1]) &&
           trip_iv(p->def->operands[0], loop);
}

static bool copy_form(tma_ctx *c, const tir_op *loop, const tir_op *cp, tma_copy *out) {
    const tir_type *bt = &cp->operands[0]->type;
    tir_value *ptrs = cp->operands[2];
    if (bt->rank != 3 || ptrs->type.rank != 2) return false;
    uint32_t eb = (tir_elem_bits(bt->elem) + 7) / 8;
    memset(out, 0, sizeof *out); /* maps compare bytewise */
    int base = -1;
    tlin p = ptr_lin(c, ptrs, &base, 0);
    if (!p.ok || base < 0) return false;
    mask_form m = {0};
    if (cp->noperands > 3 && !mask_terms(c, cp->operands[3], &m, 0)) return false;
    unsigned cd = bt->layout.kind == TIR_LAYOUT_SHARED ? bt->layout.ord[0] : 1u, rd = 1u - cd;
    tir_tmap *map = &out->map;
    map->base = (uint32_t)base;
    uint32_t box0;
    unsigned swizzle;
    if (!pick_swizzle(bt, &box0, &swizzle) || bt->shape[1 + rd] > TIR_TMAP_MAX_BOX) return false;
    map->swizzle = (uint8_t)swizzle;
    map->box[0] = box0, map->box[1] = bt->shape[1 + rd];
    /* dim 0 the contiguous one, of stride 1; dim 1 the other */
    if (p.s[cd].n != 1 || p.s[cd].m[0].a || p.s[cd].m[0].coef != 1) return false;
    map->stride[0] = (tir_tmap_term){.scale = 1, .param = TIR_TMAP_CONST};
    if (!host_term(c, &p.s[rd], &map->stride[1], eb, true)) return false;
    map->rank = 2;
    out->coord[0] = lin_const(0), out->coord[1] = lin_const(0);
    for (unsigned i = 0; i < p.u.n; i++) {
        const mono *t = &p.u.m[i];
        lin rest;
        unsigned d = 0;
        while (d < map->rank && !(d > 0 && divides(t, &map->stride[d], c, &rest))) d++;
        if (d == map->rank) { /* a parameter times something: a dim of its own (a batch), else dim 0 */
            /* (a parameter alone is an offset, not a stride: a loop's
             * start under multiple_of, `range(multiple_of(lo, 8), ...)`) */
            for (int k = 0; k < 2 && d == map->rank && degree(t) == 2; k++) {
                tir_value *f = k ? t->b : t->a;
                int q = param_of(c->f, f);
                if (q < 0 || !is_int(f->type)) continue;
                tir_tmap_term s = {.scale = t->coef, .param = q};
                lin one = {.ok = true, .n = 1};
                one.m[0] = (mono){.coef = t->coef, .a = f};
                /* a stride the copy engine cannot take (K, a loop's
                 * start, not a multiple of 16 bytes): dim 0 (below) */
                if (!host_term(c, &one, &s, eb, true) || map->rank == TIR_TMAP_MAX_RANK) continue;
                map->stride[d] = s;
                map->dim[d] = (tir_tmap_term){.scale = TIR_TMAP_UNBOUNDED, .param = TIR_TMAP_CONST};
                map->box[d] = 1;
                out->coord[d] = lin_const(0);
                map->rank++;
                if (!divides(t, &s, c, &rest)) return false;
            }
            if (d == map->rank) d = 0, rest = lin_add(lin_const(0), (lin){.ok = true, .n = 1, .m = {*t}}, 1);
        }
        out->coord[d] = lin_add(out->coord[d], rest, 1);
        if (!out->coord[d].ok) return false;
    }
    /* the copy engine's coordinates are i32s: a constant past them (a step
     * of 2^31 - 1) would wrap, where the pointers' i64 offsets do not */
    for (unsigned d = 0; d < map->rank; d++)
        for (unsigned i = 0; i < out->coord[d].n; i++)
            if (out->coord[d].m[i].coef < INT32_MIN || out->coord[d].m[i].coef > INT32_MAX) return false;
    /* a coordinate below 0 traps (tma_load) where the pointers may read
     * memory: along an inner dim the outer ones make up for it (`(rm + 1)
     * * sa + k - 8` reads the row before's last 8), along the outermost
     * the base may point into its buffer (rows rm - 1 of a passed rows
     * in). A coordinate with a negative term (a constant or a product)
     * keeps cp.async; program ids, k from 0 and row offsets have none. */
    for (unsigned d = 0; d < map->rank; d++)
        for (unsigned i = 0; i < out->coord[d].n; i++)
            if (out->coord[d].m[i].coef < 0) return false;
    /* the box starts at a multiple of 16 bytes along the contiguous dim:
     * `range(lo, K, 64)` with lo unknown keeps cp.async, and
     * `range(multiple_of(lo, 8), ...)` (f16) takes the copy engine */
    if (!coord_aligned(c, &out->coord[0], eb)) return false;
    /* sizes: a bound's y - x plus the coordinate, else unbounded */
    unsigned tile_dim[2] = {cd, rd};
    for (unsigned d = 0; d < map->rank; d++) {
        if (d >= 2 || !m.has[tile_dim[d]]) {
            if (d < 2) map->dim[d] = (tir_tmap_term){.scale = TIR_TMAP_UNBOUNDED, .param = TIR_TMAP_CONST};
            continue;
        }
        lin size = lin_add(m.bound[tile_dim[d]], out->coord[d], 1);
        if (!size.ok || !host_term(c, &size, &map->dim[d], eb, false) || map->dim[d].scale <= 0) return false;
    }
    for (unsigned i = 0; i < m.npred; i++)
        if (!trip_exists(m.pred[i], loop)) return false;
    memcpy(out->pred, m.pred, sizeof m.pred[0] * m.npred);
    out->npred = m.npred;
    return true;
}

/* ---- rewriting -------------------------------------------------------- */

static tir_value *i32c(tir_builder *b, int64_t v) { return tir_build_const_int(b, tir_scalar(TIR_I32), v); }

static tir_value *as_i32(tir_builder *b, tir_value *v) {
    return v->type.elem == TIR_I32 ? v : tir_build_cast(b, v, TIR_I32);
}

/* A linear form's value, in i32 (coordinates are the copy engine's i32s). */
static tir_value *build_lin(tir_builder *b, const lin *l) {
    tir_value *sum = NULL;
    int64_t k = 0;
    for (unsigned i = 0; i < l->n; i++) {
        const mono *t = &l->m[i];
        if (!t->a) {
            k += t->coef;
            continue;
        }
        tir_value *x = as_i32(b, t->a);
        if (t->b) x = tir_build_binary(b, TIR_OP_MUL, x, as_i32(b, t->b));
        if (t->coef != 1) x = tir_build_binary(b, TIR_OP_MUL, x, i32c(b, t->coef));
        sum = sum ? tir_build_binary(b, TIR_OP_ADD, sum, x) : x;
    }
    if (!sum) return i32c(b, k);
    return k ? tir_build_binary(b, TIR_OP_ADD, sum, i32c(b, k)) : sum;
}

typedef struct ring {
    tir_value *buf;
    tir_op *copies[TMA_MAX_COPIES];
    tma_copy form[TMA_MAX_COPIES];
    uint32_t ncopies;
    int map;
    bool bad; /* another op touches it, or a copy does not fit a map */
} ring;

typedef struct ring_walk {
    ring *r;
    uint32_t n;
    uint32_t cap;
} ring_walk;

static ring *ring_of(ring_walk *w, tir_value *buf) {
    for (uint32_t i = 0; i < w->n; i++)
        if (w->r[i].buf == buf) return &w->r[i];
    if (w->n == w->cap) return NULL;
    w->r[w->n] = (ring){.buf = buf};
    return &w->r[w->n++];
}

static void find_rings(tir_op *op, void *p) {
    ring_walk *w = p;
    for (uint32_t i = 0; i < op->noperands; i++) {
        tir_value *x = op->operands[i];
        if (x->type.space != TIR_SPACE_SHARED) continue;
        ring *r = ring_of(w, x);
        if (!r) continue;
        if (op->code == TIR_OP_LOCAL_LOAD && i == 0) continue;
        if (op->code != TIR_OP_ASYNC_COPY || i != 0 || r->ncopies == TMA_MAX_COPIES) {
            r->bad = true;
            continue;
        }
        r->copies[r->ncopies++] = op;
    }
}

/* Whether ring r's copies are this loop's: in its body's top level, or
 * its prologue's (the loop's own block, before it). */
static bool ring_of_loop(const ring *r, const tir_op *loop) {
    bool in_body = false;
    for (uint32_t i = 0; i < r->ncopies; i++) {
        const tir_op *cp = r->copies[i];
        if (cp->parent == loop->body) in_body = true;
        else if (cp->parent != loop->parent) return false;
        else {
            const tir_op *o = cp;
            while (o && o != loop) o = o->next;
            if (!o) return false; /* after the loop */
        }
    }
    return in_body;
}

/* The slot every local_load of buf in the loop body reads: a carried
 * argument (pipeline_loops' ring index), else NULL. */
static tir_value *ring_index(const tir_op *loop, const tir_value *buf) {
    tir_value *slot = NULL;
    for (const tir_op *op = loop->body->first; op; op = op->next) {
        if (op->code != TIR_OP_LOCAL_LOAD || op->operands[0] != buf) continue;
        tir_value *s = op->operands[1];
        if (s->def || s->block != loop->body || s->index == 0 || (slot && slot != s)) return NULL;
        slot = s;
    }
    return slot;
}

static void remove_dead(tir_func *f, tir_block *blk) {
    for (tir_op *op = blk->last, *prev; op; op = prev) {
        prev = op->prev;
        if (!(tir_ops[op->code].flags & TIR_F_PURE) || op->body || op->nresults != 1) continue;
        if (!tir_value_has_uses(f, op->results[0])) tir_op_remove(op);
    }
}

static void convert_loop(tma_ctx *c, tir_op *loop, ring *const *rings, uint32_t n, tir_value *rslot) {
    tir_func *f = c->f;
    tir_builder b = {0};
    b.module = f->module;
    b.func = f;
    b.loc = loop->loc;
    uint32_t stages = rings[0]->buf->type.shape[0];
    /* the mbarriers, before the first prologue copy */
    tir_op *first = loop;
    for (tir_op *o = loop->parent->first; o != loop; o = o->next)
        for (uint32_t i = 0; i < n && first == loop; i++)
            for (uint32_t k = 0; k < rings[i]->ncopies; k++)
                if (rings[i]->copies[k] == o) first = o;
    tir_builder_before(&b, first);
    uint32_t bshape[2] = {stages, 1};
    tir_type bt = tir_smem(tir_scalar(TIR_I64), 2, bshape);
    tir_op *start = tir_build_op(&b, TIR_OP_LOCAL_ALLOC, 0, NULL, 1, &bt); /* first stays only until converted */
    tir_value *bars = start->results[0];
    tir_build_op(&b, TIR_OP_MBAR_INIT, 1, &bars, 0, NULL)->attr.axis = n;
    /* the rings may lie on bytes threads wrote before (smem_plan lets
     * buffers whose ranges do not meet share bytes: attention's q staging
     * under its K/V rings): generic-proxy writes the copy engine's would
     * follow, ordered only by a proxy fence before the barrier */
    tir_build_op(&b, TIR_OP_FENCE_ASYNC, 0, NULL, 0, NULL);
    tir_build_op(&b, TIR_OP_BARRIER, 0, NULL, 0, NULL);
    /* the copies */
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < rings[i]->ncopies; k++) {
            tir_op *cp = rings[i]->copies[k];
            const tma_copy *t = &rings[i]->form[k];
            b.loc = cp->loc;
            tir_builder_before(&b, cp);
            tir_value *ops[4 + TIR_TMAP_MAX_RANK] = {cp->operands[0], cp->operands[1], bars};
            tir_value *pred = NULL;
            for (unsigned j = 0; j < t->npred; j++)
                pred = pred ? tir_build_binary(&b, TIR_OP_AND, pred, t->pred[j]) : t->pred[j];
            ops[3] = pred ? pred : tir_build_const_int(&b, tir_scalar(TIR_I1), 1);
            for (unsigned d = 0; d < t->map.rank; d++) {
                ops[4 + d] = build_lin(&b, &t->coord[d]);
                /* a dim of its own (a batch) whose stride is 0 at launch (a
                 * broadcast operand, or a batch of one): the copy engine
                 * takes no stride 0, so the runtime gives it another
                 * (runtime/tensor_maps.c), and the coordinate is 0 */
                const tir_tmap_term *st = &t->map.stride[d];
                if (d >= 2 && st->param != TIR_TMAP_CONST) {
                    tir_value *p = f->params[st->param];
                    tir_value *zero = tir_build_binary(&b, TIR_OP_EQ, p, tir_build_const_int(&b, p->type, 0));
                    tir_value *sel[3] = {zero, i32c(&b, 0), ops[4 + d]};
                    ops[4 + d] = tir_build1(&b, TIR_OP_SELECT, tir_scalar(TIR_I32), 3, sel);
                }
            }
            tir_build_op(&b, TIR_OP_TMA_LOAD, 4u + t->map.rank, ops, 0, NULL)->attr.axis = rings[i]->map;
            tir_op_remove(cp);
        }
    /* the phase, carried: flips when the ring index wraps */
    b.loc = loop->loc;
    tir_builder_before(&b, loop);
    tir_value *phase = tir_for_add_carried(loop, i32c(&b, 0));
    tir_op *yield = loop->body->last;
    tir_builder_before(&b, yield);
    tir_value *wraps = tir_build_binary(&b, TIR_OP_EQ, rslot, i32c(&b, stages - 1));
    tir_value *sel[3] = {wraps, tir_build_binary(&b, TIR_OP_XOR, phase, i32c(&b, 1)), phase};
    yield->operands[yield->noperands - 1] = tir_build1(&b, TIR_OP_SELECT, tir_scalar(TIR_I32), 3, sel);
    /* the wait, where the trip waited for its cp.async group */
    tir_op *wait = loop->body->first;
    while (wait->code != TIR_OP_ASYNC_WAIT) wait = wait->next; /* convertible checked there is one */
    tir_builder_before(&b, wait);
    tir_value *wops[3] = {bars, rslot, phase};
    tir_build_op(&b, TIR_OP_MBAR_WAIT, 3, wops, 0, NULL);
    /* after the loop */
    if (loop->next) tir_builder_before(&b, loop->next);
    else tir_builder_at_end(&b, loop->parent);
    tir_build_op(&b, TIR_OP_MBAR_INVAL, 1, &bars, 0, NULL);
    /* no cp.async left: no groups to commit or wait for, and nothing the
     * generic proxy wrote for wgmma in the loop */
    bool cp_left = tir_block_has_op(loop->body, TIR_OP_ASYNC_COPY, TIR_OP_ASYNC_COPY);
    for (tir_op *o = loop->parent->first; o != loop && !cp_left; o = o->next) cp_left = o->code == TIR_OP_ASYNC_COPY;
    if (!cp_left) {
        for (tir_op *o = loop->body->first, *next; o; o = next) {
            next = o->next;
            if (o->code == TIR_OP_ASYNC_COMMIT || o->code == TIR_OP_ASYNC_WAIT) tir_op_remove(o);
            else if (o->code == TIR_OP_FENCE_ASYNC && !tir_block_has_op(loop->body, TIR_OP_LOCAL_STORE, TIR_OP_ASYNC_COPY))
                tir_op_remove(o);
        }
        for (tir_op *o = start, *next; o != loop; o = next) {
            next = o->next;
            if (o->code == TIR_OP_ASYNC_COMMIT) tir_op_remove(o);
        }
        /* pipeline_loops' wait after the loop (async_dots' dot_wait may stand between) */
        for (tir_op *o = loop->next; o; o = o->next)
            if (o->code == TIR_OP_ASYNC_WAIT) {
                if (o->attr.axis == 0) tir_op_remove(o);
                break;
            }
    }
    remove_dead(f, loop->body);
    remove_dead(f, loop->parent);
}

static void tma_loop(tma_ctx *c, tir_op *loop, tc_arena *arena) {
    ring_walk w = {.cap = TMA_MAX_RINGS};
    w.r = TC_NEW_ARRAY(arena, ring, w.cap);
    tir_walk(c->f, find_rings, &w);
    ring *ok[TMA_MAX_RINGS];
    uint32_t n = 0;
    tir_value *rslot = NULL;
    bool has_wait = false;
    for (const tir_op *o = loop->body->first; o; o = o->next) has_wait |= o->code == TIR_OP_ASYNC_WAIT;
    if (!has_wait) return;
    c->axis = lower_axis_analyze(c->f, arena); /* afresh: an earlier loop's conversion made new values */
    for (uint32_t i = 0; i < w.n; i++) {
        ring *r = &w.r[i];
        if (r->bad || !r->ncopies || !ring_of_loop(r, loop)) continue;
        tir_value *s = ring_index(loop, r->buf);
        if (!s || (rslot && s != rslot) || (n && r->buf->type.shape[0] != ok[0]->buf->type.shape[0])) continue;
        bool fits = true;
        for (uint32_t k = 0; k < r->ncopies && fits; k++) {
            fits = copy_form(c, loop, r->copies[k], &r->form[k]) &&
                   !memcmp(&r->form[k].map, &r->form[0].map, sizeof r->form[0].map);
            tir_type base = c->f->params[r->form[k].map.base]->type;
            fits = fits && tir_type_pointee(base) == r->buf->type.elem;
        }
        if (!fits) continue;
        r->map = tir_func_add_tmap(c->f, &r->form[0].map);
        if (r->map < 0) continue;
        rslot = s;
        ok[n++] = r;
    }
    if (n) convert_loop(c, loop, ok, n, rslot);
}

bool lower_tma_copies(tir_module *m, const lower_options *opt, tc_diag *diag) {
    (void)diag;
    if (!lower_has_wgmma(opt->compile.arch)) return true;
    tc_arena *arena = tc_arena_new();
    for (tir_func *f = m->funcs; f; f = f->next) {
        tma_ctx c = {.f = f, .param_div = TC_NEW_ARRAY(arena, int64_t, f->nparams + 1)};
        memset(c.param_div, 0, sizeof(int64_t) * (f->nparams + 1));
        uint32_t nloops;
        tir_op **loops = lower_loops(f, false, arena, &nloops);
        for (uint32_t i = 0; i < nloops; i++) tma_loop(&c, loops[i], arena);
    }
    tc_arena_free(arena);
    return true;
}
