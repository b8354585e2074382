/* interp.c - the tile IR interpreter behind the CPU device.
 *
 * Each value of the kernel gets a slot of cells, one per tile element, and
 * each op runs as one loop over whole tiles (the dispatch is per op, never
 * per element). Program instances run one after another, reusing the slots.
 *
 * Numbers follow the GPU's: integers wrap to their width; every float
 * result is rounded to its type (f16, bf16, f32) to nearest even, so f16
 * code gives f16 answers; float-to-int conversion truncates and saturates
 * (NaN gives 0), as PTX's cvt.rzi does. Integer division by zero, which the
 * GPU leaves undefined, is an error here. Tiles are stored row-major (the
 * last dim varies fastest); a float sum reduces pairwise, rounding each
 * partial sum, the order closest to the GPU's tree of partials. print
 * writes its lines in program order, elements row-major; a false assert
 * stops the launch like any other error, flagged as an assert's. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "runtime/interp.h"

typedef union cell {
    int64_t i;
    double f;
    struct {
        uint32_t buf;
        int64_t off; /* bytes */
    } p;
} cell;

typedef struct slot {
    cell *cells;
    uint32_t n;
} slot;

typedef struct interp {
    const rt_launch *l;
    tc_diag *diag;
    slot *slots; /* by value id */
    uint32_t pid[3];
    bool failed;
    bool asserted; /* the failure was an assert's */
    const rt_print_sink *print; /* NULL: stdout */
    double deadline; /* tc_now_ms() past which the launch stops; 0: none */
    uint32_t ticks;  /* loop trips and programs since the clock was last read */
} interp;

enum { INTERP_CLOCK_EVERY = 256 }; /* trips between readings of the clock (a reading costs ~20 ns) */

static void run_error(interp *in, const tir_op *op, const char *fmt, const char *detail) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, detail);
    tc_error_loc(in->diag, in->l->file, op ? op->loc : in->l->func->loc,
                 "in kernel '%s', program (%u, %u, %u): %s", in->l->func->name, in->pid[0], in->pid[1], in->pid[2],
                 msg);
    in->failed = true;
}

/* Whether the launch has run past its time limit (then an error at op,
 * the loop it was in): checked at every loop trip and program, reading the
 * clock every INTERP_CLOCK_EVERY of them, so that a kernel that never ends
 * (a while whose condition stays true) stops instead of hanging. */
static bool out_of_time(interp *in, const tir_op *op) {
    if (!in->deadline || ++in->ticks < INTERP_CLOCK_EVERY) return false;
    in->ticks = 0;
    if (tc_now_ms() <= in->deadline) return false;
    char limit[64];
    snprintf(limit, sizeof limit, "%g s", in->l->time_limit_ms / 1e3);
    run_error(in, op, "the launch ran past its time limit of %s (trt_set_time_limit), here", limit);
    return true;
}

/* Rounds to a binary float format with `mant` stored mantissa bits, least
 * normal exponent `emin` and largest finite value `max`, to nearest even. */
static double round_format(double x, int mant, int emin, double max) {
    if (!isfinite(x) || x == 0) return x;
    int e;
    frexp(x, &e);
    int exp = e - 1 < emin ? emin : e - 1; /* below emin: subnormal, fixed step */
    double step = ldexp(1.0, exp - mant);
    double r = nearbyint(x / step) * step;
    return fabs(r) > max ? copysign(INFINITY, x) : r;
}

static double round_to(tir_elem e, double x) {
    switch (e) {
    case TIR_F16: return round_format(x, 10, -14, 65504.0);
    case TIR_BF16: return round_format(x, 7, -126, 3.38953138925153547590470800371487866880e38);
    case TIR_F32: return (double)(float)x;
    default: return x;
    }
}

static int64_t float_to_int(double x, tir_elem e) {
    if (e == TIR_I1) return x != 0;
    if (isnan(x)) return 0;
    unsigned bits = tir_elem_bits(e);
    double hi = ldexp(1.0, (int)bits - 1);
    if (x >= hi) return (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
    if (x < -hi) return bits == 64 ? INT64_MIN : -(int64_t)((uint64_t)1 << (bits - 1));
    return (int64_t)trunc(x);
}

static slot *out_slot(interp *in, const tir_value *v) {
    slot *s = &in->slots[v->id];
    uint32_t n = (uint32_t)tir_type_numel(v->type);
    if (!s->cells || s->n != n) {
        free(s->cells);
        s->cells = calloc(n ? n : 1, sizeof(cell));
        if (!s->cells) abort();
        s->n = n;
    }
    return s;
}

static cell *val(interp *in, const tir_value *v) { return in->slots[v->id].cells; }

static unsigned elem_bytes(tir_elem e) { return e == TIR_I1 ? 1 : (tir_elem_bits(e) + 7) / 8; }

/* ---- memory ------------------------------------------------------------ */

static bool check_access(interp *in, const tir_op *op, cell p, unsigned bytes) {
    const rt_launch *l = in->l;
    if (p.p.buf >= l->nbuffers) {
        run_error(in, op, "%s", "access through a pointer that is not into any buffer");
        return false;
    }
    if (p.p.off < 0 || (uint64_t)p.p.off + bytes > l->buffers[p.p.buf].size) {
        /* name the buffer by the first argument that points into it */
        const char *arg = "?";
        for (uint32_t i = l->nargs; i-- > 0;)
            if (l->args[i].kind == RT_ARG_PTR && l->args[i].buffer == p.p.buf && l->func->params[i]->name)
                arg = l->func->params[i]->name;
        char detail[256];
        snprintf(detail, sizeof detail, "byte offset %lld of the %zu-byte buffer passed as '%s'", (long long)p.p.off,
                 l->buffers[p.p.buf].size, arg);
        run_error(in, op, "out-of-bounds access at %s", detail);
        return false;
    }
    return true;
}

/* The shared conversion (support/half.c) for numbers, which arrive here
 * already rounded to their format (round_to). A NaN keeps the encoding
 * this file always gave it: f16 the positive quiet NaN 0x7e00 whatever its
 * sign, bf16 the top half of the float NaN (sign and payload kept); and a
 * bf16 NaN read back keeps its payload the same way. */
static uint16_t half_bits(double x, bool bf) {
    if (!isnan(x)) return tc_half_bits(x, bf);
    if (!bf) return 0x7e00;
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static double half_value(uint16_t h, bool bf) {
    if (!bf || (h & 0x7f80) != 0x7f80 || !(h & 0x7f)) return tc_half_value(h, bf);
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t rt_half_bits(double x, tir_elem e) { return half_bits(round_to(e, x), e == TIR_BF16); }

static cell read_elem(const unsigned char *p, tir_elem e) {
    cell c;
    memset(&c, 0, sizeof c);
    switch (e) {
    case TIR_I1: c.i = *p != 0; break;
    case TIR_I8: c.i = (int8_t)*p; break;
    case TIR_I16: { int16_t v; memcpy(&v, p, 2); c.i = v; break; }
    case TIR_I32: { int32_t v; memcpy(&v, p, 4); c.i = v; break; }
    case TIR_I64: memcpy(&c.i, p, 8); break;
    case TIR_F16:
    case TIR_BF16: { uint16_t h; memcpy(&h, p, 2); c.f = half_value(h, e == TIR_BF16); break; }
    case TIR_F32: { float f; memcpy(&f, p, 4); c.f = f; break; }
    case TIR_F64: memcpy(&c.f, p, 8); break;
    default: break;
    }
    return c;
}

static void write_elem(unsigned char *p, tir_elem e, cell c) {
    switch (e) {
    case TIR_I1: *p = c.i != 0; break;
    case TIR_I8: *p = (unsigned char)c.i; break;
    case TIR_I16: { int16_t v = (int16_t)c.i; memcpy(p, &v, 2); break; }
    case TIR_I32: { int32_t v = (int32_t)c.i; memcpy(p, &v, 4); break; }
    case TIR_I64: memcpy(p, &c.i, 8); break;
    case TIR_F16:
    case TIR_BF16: { uint16_t h = half_bits(c.f, e == TIR_BF16); memcpy(p, &h, 2); break; }
    case TIR_F32: { float f = (float)c.f; memcpy(p, &f, 4); break; }
    case TIR_F64: memcpy(p, &c.f, 8); break;
    default: break;
    }
}

static void do_load(interp *in, const tir_op *op) {
    const tir_value *res = op->results[0];
    tir_elem e = tir_type_elem(res->type);
    slot *s = out_slot(in, res);
    cell *ptr = val(in, op->operands[0]);
    cell *mask = op->noperands > 1 ? val(in, op->operands[1]) : NULL;
    cell *other = op->noperands > 2 ? val(in, op->operands[2]) : NULL;
    for (uint32_t k = 0; k < s->n; k++) {
        if (mask && !mask[k].i) {
            if (other) s->cells[k] = other[k];
            else memset(&s->cells[k], 0, sizeof(cell));
            continue;
        }
        if (!check_access(in, op, ptr[k], elem_bytes(e))) return;
        s->cells[k] = read_elem((unsigned char *)in->l->buffers[ptr[k].p.buf].data + ptr[k].p.off, e);
    }
}

static void do_store(interp *in, const tir_op *op) {
    tir_elem e = tir_type_elem(op->operands[1]->type);
    uint32_t n = (uint32_t)tir_type_numel(op->operands[0]->type);
    cell *ptr = val(in, op->operands[0]), *v = val(in, op->operands[1]);
    cell *mask = op->noperands > 2 ? val(in, op->operands[2]) : NULL;
    for (uint32_t k = 0; k < n; k++) {
        if (mask && !mask[k].i) continue;
        if (!check_access(in, op, ptr[k], elem_bytes(e))) return;
        write_elem((unsigned char *)in->l->buffers[ptr[k].p.buf].data + ptr[k].p.off, e, v[k]);
    }
}

/* ---- arithmetic -------------------------------------------------------- */

static void do_binary(interp *in, const tir_op *op) {
    const tir_value *res = op->results[0];
    tir_elem e = tir_type_elem(op->operands[0]->type), re = tir_type_elem(res->type);
    slot *s = out_slot(in, res);
    cell *a = val(in, op->operands[0]), *b = val(in, op->operands[1]), *r = s->cells;
    uint32_t n = s->n;
    bool fl = tir_elem_is_float(e);
    unsigned bits = tir_elem_bits(e);
    for (uint32_t k = 0; k < n; k++) {
        int64_t x = a[k].i, y = b[k].i;
        double fx = a[k].f, fy = b[k].f;
        switch (op->code) {
        case TIR_OP_ADD: if (fl) r[k].f = fx + fy; else r[k].i = (int64_t)((uint64_t)x + (uint64_t)y); break;
        case TIR_OP_SUB: if (fl) r[k].f = fx - fy; else r[k].i = (int64_t)((uint64_t)x - (uint64_t)y); break;
        case TIR_OP_MUL: if (fl) r[k].f = fx * fy; else r[k].i = (int64_t)((uint64_t)x * (uint64_t)y); break;
        case TIR_OP_DIV:
        case TIR_OP_REM:
            if (fl) {
                r[k].f = op->code == TIR_OP_DIV ? fx / fy : fmod(fx, fy);
            } else if (y == 0) {
                run_error(in, op, "%s", "integer division by zero");
                return;
            } else if (x == INT64_MIN && y == -1) {
                r[k].i = op->code == TIR_OP_DIV ? x : 0;
            } else {
                r[k].i = op->code == TIR_OP_DIV ? x / y : x % y;
            }
            break;
        case TIR_OP_MIN:
        case TIR_OP_MAX: {
            bool want_min = op->code == TIR_OP_MIN;
            if (!fl) {
                r[k].i = (x < y) == want_min ? x : y;
            } else if (isnan(fx) || isnan(fy)) {
                r[k].f = NAN;
            } else if (fx == fy) { /* -0 is the smaller zero */
                r[k].f = (signbit(fx) != 0) == want_min ? fx : fy;
            } else {
                r[k].f = (fx < fy) == want_min ? fx : fy;
            }
            break;
        }
        case TIR_OP_AND: r[k].i = x & y; break;
        case TIR_OP_OR: r[k].i = x | y; break;
        case TIR_OP_XOR: r[k].i = x ^ y; break;
        case TIR_OP_SHL: r[k].i = (uint64_t)y >= bits ? 0 : (int64_t)((uint64_t)x << y); break;
        case TIR_OP_SHR: r[k].i = x >> ((uint64_t)y >= bits ? bits - 1 : (uint64_t)y); break;
        case TIR_OP_EQ: r[k].i = fl ? fx == fy : x == y; break;
        case TIR_OP_NE: r[k].i = fl ? !(fx == fy) : x != y; break;
        case TIR_OP_LT: r[k].i = fl ? fx < fy : x < y; break;
        case TIR_OP_LE: r[k].i = fl ? fx <= fy : x <= y; break;
        case TIR_OP_GT: r[k].i = fl ? fx > fy : x > y; break;
        case TIR_OP_GE: r[k].i = fl ? fx >= fy : x >= y; break;
        default: break;
        }
    }
    /* results to their type's precision or width, in one more pass */
    if (tir_elem_is_float(re))
        for (uint32_t k = 0; k < n; k++) r[k].f = round_to(re, r[k].f);
    else
        for (uint32_t k = 0; k < n; k++) r[k].i = tir_wrap_int(r[k].i, re);
}

static void do_cast(interp *in, const tir_op *op) {
    tir_elem from = tir_type_elem(op->operands[0]->type), to = tir_type_elem(op->results[0]->type);
    slot *s = out_slot(in, op->results[0]);
    cell *a = val(in, op->operands[0]);
    bool ff = tir_elem_is_float(from), tf = tir_elem_is_float(to);
    for (uint32_t k = 0; k < s->n; k++) {
        if (ff && tf) s->cells[k].f = round_to(to, a[k].f);
        else if (ff) s->cells[k].i = float_to_int(a[k].f, to);
        else if (tf) s->cells[k].f = round_to(to, (double)a[k].i);
        else s->cells[k].i = to == TIR_I1 ? a[k].i != 0 : tir_wrap_int(a[k].i, to);
    }
}

/* ---- reductions ----------------------------------------------------------- */

/* a op b for a reduction, rounded or wrapped to e. */
static cell combine(tir_opcode code, tir_elem e, cell a, cell b) {
    bool fl = tir_elem_is_float(e);
    cell r;
    if (code == TIR_OP_REDUCE_SUM) {
        if (fl) r.f = round_to(e, a.f + b.f);
        else r.i = tir_wrap_int((int64_t)((uint64_t)a.i + (uint64_t)b.i), e);
        return r;
    }
    bool want_min = code == TIR_OP_REDUCE_MIN;
    if (!fl) return (a.i < b.i) == want_min ? a : b;
    if (isnan(a.f) || isnan(b.f)) r.f = NAN;
    else if (a.f == b.f) r.f = (signbit(a.f) != 0) == want_min ? a.f : b.f; /* -0 is the smaller zero */
    else r.f = (a.f < b.f) == want_min ? a.f : b.f;
    return r;
}

/* Pairwise over v[0..n): the order a GPU's tree of partial results is
 * closest to, and more accurate than a running sum. */
static cell combine_all(tir_opcode code, tir_elem e, const cell *v, uint32_t n) {
    if (n == 1) return v[0];
    uint32_t h = n / 2;
    return combine(code, e, combine_all(code, e, v, h), combine_all(code, e, v + h, n - h));
}

/* Along `axis` of a row-major tile: for every index of the other dims
 * (`outer` before the axis times `stride` after it), the `len` elements
 * `stride` apart. */
static void axis_lines(const tir_type *t, unsigned axis, uint32_t *len, uint32_t *stride, uint32_t *outer) {
    *len = t->shape[axis], *stride = 1, *outer = 1;
    for (unsigned d = axis + 1; d < t->rank; d++) *stride *= t->shape[d];
    for (unsigned d = 0; d < axis; d++) *outer *= t->shape[d];
}

static void do_reduce(interp *in, const tir_op *op) {
    const tir_value *x = op->operands[0];
    tir_elem e = tir_type_elem(x->type);
    uint32_t len, stride, outer;
    axis_lines(&x->type, (unsigned)op->attr.axis, &len, &stride, &outer);
    slot *s = out_slot(in, op->results[0]);
    const cell *a = val(in, x);
    cell *line = malloc(sizeof(cell) * len);
    if (!line) abort();
    for (uint32_t o = 0; o < outer; o++)
        for (uint32_t i = 0; i < stride; i++) {
            for (uint32_t k = 0; k < len; k++) line[k] = a[((size_t)o * len + k) * stride + i];
            s->cells[(size_t)o * stride + i] = combine_all(op->code, e, line, len);
        }
    free(line);
}

/* cumsum and cumsum_rev: along `axis`, each element plus the running sum
 * before it (after it, reversed), rounded or wrapped after each addition:
 * a plain left-to-right (right-to-left) sum. */
static void do_scan(interp *in, const tir_op *op) {
    const tir_value *x = op->operands[0];
    tir_elem e = tir_type_elem(x->type);
    uint32_t len, stride, outer;
    axis_lines(&x->type, (unsigned)op->attr.axis, &len, &stride, &outer);
    bool reverse = op->code == TIR_OP_CUMSUM_REV;
    slot *s = out_slot(in, op->results[0]);
    const cell *a = val(in, x);
    for (uint32_t o = 0; o < outer; o++)
        for (uint32_t i = 0; i < stride; i++)
            for (uint32_t k = 0; k < len; k++) {
                size_t at = ((size_t)o * len + (reverse ? len - 1 - k : k)) * stride + i;
                size_t before = reverse ? at + stride : at - stride;
                s->cells[at] = k ? combine(TIR_OP_REDUCE_SUM, e, s->cells[before], a[at]) : a[at];
            }
}

/* ---- dot -------------------------------------------------------------------
 * r = acc + a.b, each element summed along k in order by f32 fused
 * multiply-adds (one rounding each) (the GPU's tensor cores add in groups of k; results
 * agree within accumulation-order tolerance). Products are exact: f16 and
 * bf16 products fit f32's mantissa, and so do tf32's. i8 products sum in
 * i32, wrapping. */

/* f32 to tf32 as PTX's cvt.rna.tf32.f32: 10 mantissa bits, to nearest with
 * ties away from zero (half of the 13 dropped bits added to the
 * magnitude, then dropped); NaN and infinities stay. */
static double round_tf32(double x) {
    float f = (float)x;
    if (!isfinite(f)) return f;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    bits = (bits + 0x1000u) & ~0x1fffu;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void do_dot(interp *in, const tir_op *op) {
    const tir_type at = op->operands[0]->type;
    uint32_t m = at.shape[0], kk = at.shape[1], n = op->operands[1]->type.shape[1];
    const cell *a = val(in, op->operands[0]), *b = val(in, op->operands[1]), *acc = val(in, op->operands[2]);
    slot *s = out_slot(in, op->results[0]);
    bool integer = at.elem == TIR_I8, tf32 = at.elem == TIR_F32 && op->code != TIR_OP_DOT_IEEE;
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            cell r = acc[(size_t)i * n + j];
            for (uint32_t k = 0; k < kk; k++) {
                cell x = a[(size_t)i * kk + k], y = b[(size_t)k * n + j];
                if (integer) {
                    r.i = tir_wrap_int((int64_t)((uint64_t)r.i + (uint64_t)(x.i * y.i)), TIR_I32);
                } else {
                    double xv = tf32 ? round_tf32(x.f) : x.f, yv = tf32 ? round_tf32(y.f) : y.f;
                    r.f = fmaf((float)xv, (float)yv, (float)r.f);
                }
            }
            s->cells[(size_t)i * n + j] = r;
        }
}

/* ---- shared-memory buffers ---------------------------------------------------
 * Program instances run one at a time, so a copy is done when it starts:
 * async_copy copies at once, and commit, wait and barrier have nothing to
 * do. A new buffer is poisoned (NaN, or a marker integer) so that reading a
 * slot no copy filled shows in results. */
static void do_local_alloc(interp *in, const tir_op *op) {
    slot *s = out_slot(in, op->results[0]);
    bool fl = tir_elem_is_float(tir_type_elem(op->results[0]->type));
    for (uint32_t k = 0; k < s->n; k++) {
        if (fl) s->cells[k].f = NAN;
        else s->cells[k].i = tir_wrap_int(0x5eed5eed5eedLL, tir_type_elem(op->results[0]->type));
    }
}

/* The first cell of the buffer's slot, or NULL after reporting. */
static cell *buffer_slot(interp *in, const tir_op *op) {
    const tir_type *bt = &op->operands[0]->type;
    int64_t k = val(in, op->operands[1])[0].i;
    if (k < 0 || k >= bt->shape[0]) {
        char what[64];
        snprintf(what, sizeof what, "%lld of %u", (long long)k, bt->shape[0]);
        run_error(in, op, "buffer slot %s out of range", what);
        return NULL;
    }
    return val(in, op->operands[0]) + (size_t)k * (tir_type_numel(*bt) / bt->shape[0]);
}

static void do_async_copy(interp *in, const tir_op *op) {
    cell *dst = buffer_slot(in, op);
    if (!dst) return;
    tir_elem e = tir_type_elem(op->operands[0]->type);
    const cell *ptr = val(in, op->operands[2]), *mask = op->noperands > 3 ? val(in, op->operands[3]) : NULL;
    uint32_t n = (uint32_t)tir_type_numel(op->operands[2]->type);
    for (uint32_t k = 0; k < n; k++) {
        if (mask && !mask[k].i) {
            memset(&dst[k], 0, sizeof(cell));
            continue;
        }
        if (!check_access(in, op, ptr[k], elem_bytes(e))) return;
        dst[k] = read_elem((unsigned char *)in->l->buffers[ptr[k].p.buf].data + ptr[k].p.off, e);
    }
}

/* tma_load: the box of tensor map N at the coordinates into the slot,
 * elements outside the map's dims as 0 (ops.def; the map's sizes and
 * strides from this launch's integer arguments). Map dim d is the slot's
 * dim ord[d] (the last first without a shared layout). */
static int64_t tmap_term(interp *in, const tir_func *f, tir_tmap_term t) {
    return t.param == TIR_TMAP_CONST ? t.scale : t.scale * val(in, f->params[t.param])[0].i;
}

static void do_tma_load(interp *in, const tir_op *op) {
    if (!val(in, op->operands[3])[0].i) return;
    cell *dst = buffer_slot(in, op);
    if (!dst) return;
    const tir_func *f = op->parent->func;
    const tir_tmap *m = &f->tmaps[op->attr.axis];
    const tir_type *bt = &op->operands[0]->type;
    unsigned srank = bt->rank - 1u;
    tir_elem e = tir_type_elem(*bt);
    int64_t dim[TIR_TMAP_MAX_RANK], stride[TIR_TMAP_MAX_RANK], c[TIR_TMAP_MAX_RANK];
    unsigned sd[TIR_TMAP_MAX_RANK]; /* the slot dim along map dim d < srank */
    for (unsigned d = 0; d < m->rank; d++) {
        dim[d] = tmap_term(in, f, m->dim[d]);
        stride[d] = tmap_term(in, f, m->stride[d]);
        c[d] = val(in, op->operands[4 + d])[0].i;
        if (d < srank) sd[d] = bt->layout.kind == TIR_LAYOUT_SHARED ? bt->layout.ord[d] : srank - 1u - d;
        if (c[d] < 0) {
            char what[64];
            snprintf(what, sizeof what, "%lld along dim %u", (long long)c[d], d);
            run_error(in, op, "a bulk tensor copy's coordinate is below 0 (%s)", what);
            return;
        }
    }
    cell base = val(in, f->params[m->base])[0];
    uint64_t n = tir_type_numel(*bt) / bt->shape[0];
    for (uint64_t k = 0; k < n; k++) {
        uint32_t idx[TIR_MAX_RANK] = {0}; /* k's index in the slot, row-major */
        uint64_t rest = k;
        for (unsigned d = srank; d-- > 0;) idx[d] = (uint32_t)(rest % bt->shape[d + 1]), rest /= bt->shape[d + 1];
        int64_t off = 0;
        bool inside = true;
        for (unsigned d = 0; d < m->rank; d++) {
            int64_t x = c[d] + (d < srank ? idx[sd[d]] : 0);
            inside = inside && x >= 0 && x < dim[d];
            off += x * stride[d];
        }
        if (!inside) {
            memset(&dst[k], 0, sizeof(cell));
            continue;
        }
        cell p = base;
        p.p.off += off * (int64_t)elem_bytes(e);
        if (!check_access(in, op, p, elem_bytes(e))) return;
        dst[k] = read_elem((unsigned char *)in->l->buffers[p.p.buf].data + p.p.off, e);
    }
}

/* The slot's tile, or the part of the result's shape at the op's offsets
 * (row-major both). */
static void do_local_load(interp *in, const tir_op *op) {
    const cell *src = buffer_slot(in, op);
    if (!src) return;
    slot *s = out_slot(in, op->results[0]);
    const tir_type *t = &op->results[0]->type, *bt = &op->operands[0]->type;
    for (uint32_t k = 0; k < s->n; k++) {
        uint64_t at = 0, rest = k, stride = 1, tstride = 1;
        for (unsigned d = t->rank; d-- > 0;) {
            uint64_t i = rest / tstride % t->shape[d];
            at += (i + op->attr.offset[d]) * stride;
            stride *= bt->shape[d + 1], tstride *= t->shape[d];
        }
        s->cells[k] = src[at];
    }
}

static void do_local_store(interp *in, const tir_op *op) {
    cell *dst = buffer_slot(in, op);
    if (!dst) return;
    memcpy(dst, val(in, op->operands[2]), sizeof(cell) * tir_type_numel(op->operands[2]->type));
}

/* ---- atomics -------------------------------------------------------------
 * Program instances run one after another, so an atomic is a plain
 * read-modify-write here, element by element in row-major order (a
 * duplicate address sees the elements before it). Masked-off lanes give 0
 * and touch no memory. */

/* f32 atomic add flushes subnormal inputs and results to zero, keeping the
 * sign, as PTX's atom.add.f32 does (f16, bf16 and f64 do not). */
static double flush_subnormal_f32(double x) { return fabs(x) < FLT_MIN ? copysign(0.0, x) : x; }

static cell atomic_combine(tir_opcode code, tir_elem e, cell old, cell v) {
    bool fl = tir_elem_is_float(e);
    cell r = v; /* xchg */
    switch (code) {
    case TIR_OP_ATOMIC_ADD:
        if (!fl) r.i = tir_wrap_int((int64_t)((uint64_t)old.i + (uint64_t)v.i), e);
        else if (e == TIR_F32) r.f = flush_subnormal_f32(round_to(e, flush_subnormal_f32(old.f) + flush_subnormal_f32(v.f)));
        else r.f = round_to(e, old.f + v.f);
        break;
    case TIR_OP_ATOMIC_MAX: r = combine(TIR_OP_REDUCE_MAX, e, old, v); break;
    case TIR_OP_ATOMIC_MIN: r = combine(TIR_OP_REDUCE_MIN, e, old, v); break;
    default: break;
    }
    return r;
}

static void do_atomic(interp *in, const tir_op *op) {
    const tir_value *res = op->results[0];
    tir_elem e = tir_type_elem(res->type);
    unsigned bytes = elem_bytes(e);
    bool cas = op->code == TIR_OP_ATOMIC_CAS;
    uint32_t nvals = cas ? 2 : 1;
    slot *s = out_slot(in, res);
    cell *ptr = val(in, op->operands[0]), *v = val(in, op->operands[nvals]);
    cell *cmp = cas ? val(in, op->operands[1]) : NULL;
    cell *mask = op->noperands > 1 + nvals ? val(in, op->operands[1 + nvals]) : NULL;
    for (uint32_t k = 0; k < s->n; k++) {
        memset(&s->cells[k], 0, sizeof(cell));
        if (mask && !mask[k].i) continue;
        if (!check_access(in, op, ptr[k], bytes)) return;
        unsigned char *at = (unsigned char *)in->l->buffers[ptr[k].p.buf].data + ptr[k].p.off;
        cell old = read_elem(at, e);
        s->cells[k] = old;
        if (cas) { /* compares the bits in memory with cmp's, as the GPU's atom.cas */
            unsigned char want[sizeof(int64_t)]; /* the widest element */
            write_elem(want, e, cmp[k]);
            if (!memcmp(at, want, bytes)) write_elem(at, e, v[k]);
            continue;
        }
        write_elem(at, e, atomic_combine(op->code, e, old, v[k]));
    }
}

/* ---- shapes ---------------------------------------------------------------- */

/* broadcast and permute: each result element comes from the operand
 * element whose index along operand dim d is the result's index along dim
 * from[d] (0 where the operand's dim has size 1). */
static void do_move(interp *in, const tir_op *op) {
    const tir_value *x = op->operands[0], *res = op->results[0];
    unsigned rank = res->type.rank;
    unsigned from[TIR_MAX_RANK];
    for (unsigned d = 0; d < rank; d++) from[d] = d;
    if (op->code == TIR_OP_PERMUTE)
        for (unsigned i = 0; i < rank; i++) from[op->attr.perm[i]] = i;
    uint64_t xstride[TIR_MAX_RANK];
    for (unsigned d = rank, st = 1; d-- > 0;) {
        xstride[d] = x->type.shape[d] == 1 ? 0 : st;
        st *= x->type.shape[d];
    }
    slot *s = out_slot(in, res);
    const cell *a = val(in, x);
    uint32_t idx[TIR_MAX_RANK] = {0, 0, 0};
    for (uint32_t k = 0; k < s->n; k++) {
        uint64_t at = 0;
        for (unsigned d = 0; d < rank; d++) at += idx[from[d]] * xstride[d];
        s->cells[k] = a[at];
        for (unsigned d = rank; d-- > 0;) { /* next row-major index */
            if (++idx[d] < res->type.shape[d]) break;
            idx[d] = 0;
        }
    }
}

/* ---- random numbers ------------------------------------------------------
 * Philox4x32-10 as docs/language.md spells it out: the first word of the
 * output for counter (c0, 0, 0, 0) and key (k0, k1). */

static uint32_t philox_word0(uint32_t c0, uint32_t k0, uint32_t k1) {
    uint32_t c1 = 0, c2 = 0, c3 = 0;
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p2 = (uint64_t)0xCD9E8D57u * c2;
        c0 = (uint32_t)(p2 >> 32) ^ c1 ^ k0;
        c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p2;
        c3 = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c0;
}

static void do_randint(interp *in, const tir_op *op) {
    slot *s = out_slot(in, op->results[0]);
    cell *seed = val(in, op->operands[0]), *offs = val(in, op->operands[1]);
    for (uint32_t k = 0; k < s->n; k++) {
        uint64_t sd = (uint64_t)seed[k].i; /* an i32 seed is held sign-extended */
        uint32_t w = philox_word0((uint32_t)offs[k].i, (uint32_t)sd, (uint32_t)(sd >> 32));
        s->cells[k].i = tir_wrap_int(w, TIR_I32);
    }
}

/* ---- print and assert -------------------------------------------------------
 * The format is docs/language.md's, the same the GPU's printf gives:
 *   pid (X, Y, Z)[ idx (I, J)][ MESSAGE][ VALUE]...
 * one line per program for scalars, per element (row-major) for tiles. */

/* " (I, J)": element k's index in a row-major tile of type t. */
static void put_index(tc_strbuf *out, tir_type t, uint32_t k) {
    uint32_t idx[TIR_MAX_RANK];
    for (unsigned d = t.rank; d-- > 0;) {
        idx[d] = k % t.shape[d];
        k /= t.shape[d];
    }
    tc_strbuf_puts(out, " (");
    for (unsigned d = 0; d < t.rank; d++) tc_strbuf_printf(out, "%s%u", d ? ", " : "", idx[d]);
    tc_strbuf_putc(out, ')');
}

static void put_value(interp *in, tc_strbuf *out, tir_type t, cell c) {
    switch (tir_type_elem(t)) {
    case TIR_I1: tc_strbuf_puts(out, c.i ? " true" : " false"); break;
    case TIR_I8: case TIR_I16: case TIR_I32: tc_strbuf_printf(out, " %d", (int)c.i); break;
    case TIR_I64: tc_strbuf_printf(out, " %lld", (long long)c.i); break;
    /* enough digits to tell any two values of the type apart */
    case TIR_F16: tc_strbuf_printf(out, " %.5g", c.f); break;
    case TIR_BF16: tc_strbuf_printf(out, " %.4g", c.f); break;
    case TIR_F32: tc_strbuf_printf(out, " %.9g", c.f); break;
    case TIR_F64: tc_strbuf_printf(out, " %.17g", c.f); break;
    case TIR_PTR: { /* the address, as trt_buffer_ptr gives it */
        uintptr_t base = c.p.buf < in->l->nbuffers ? (uintptr_t)in->l->buffers[c.p.buf].data : 0;
        tc_strbuf_printf(out, " 0x%llx", (unsigned long long)(base + (uint64_t)c.p.off));
        break;
    }
    default: break;
    }
}

static void do_print(interp *in, const tir_op *op) {
    tir_type t = op->noperands ? op->operands[0]->type : tir_scalar(TIR_I32);
    uint32_t n = (uint32_t)tir_type_numel(t);
    tc_strbuf line;
    tc_strbuf_init(&line);
    for (uint32_t k = 0; k < n; k++) {
        line.len = 0;
        tc_strbuf_printf(&line, "pid (%u, %u, %u)", in->pid[0], in->pid[1], in->pid[2]);
        if (t.rank) {
            tc_strbuf_puts(&line, " idx");
            put_index(&line, t, k);
        }
        if (op->attr.text[0]) tc_strbuf_printf(&line, " %s", op->attr.text);
        for (uint32_t i = 0; i < op->noperands; i++) put_value(in, &line, op->operands[i]->type, val(in, op->operands[i])[k]);
        tc_strbuf_putc(&line, '\n');
        if (in->print) in->print->fn(in->print->user, line.data, line.len);
        else fwrite(line.data, 1, line.len, stdout);
    }
    if (!in->print) fflush(stdout);
    tc_strbuf_free(&line);
}

/* Stops the launch at the first false element, in row-major order. */
static void do_assert(interp *in, const tir_op *op) {
    const tir_value *cond = op->operands[0];
    const cell *c = val(in, cond);
    uint32_t n = (uint32_t)tir_type_numel(cond->type);
    for (uint32_t k = 0; k < n; k++) {
        if (c[k].i) continue;
        tc_strbuf where;
        tc_strbuf_init(&where);
        tc_strbuf_printf(&where, "kernel '%s', program (%u, %u, %u)", in->l->func->name, in->pid[0], in->pid[1],
                         in->pid[2]);
        if (cond->type.rank) {
            tc_strbuf_puts(&where, ", idx");
            put_index(&where, cond->type, k);
        }
        tc_diag *d = in->diag;
        if (op->loc.line)
            tc_strbuf_printf(&d->out, "%s:%u:%u: ", in->l->file ? in->l->file : "<input>", op->loc.line, op->loc.col);
        else
            tc_strbuf_printf(&d->out, "%s: ", in->l->file ? in->l->file : "<input>");
        tc_strbuf_printf(&d->out, "assertion failed: %s (%s)\n", op->attr.text, where.data);
        d->nerrors++;
        tc_strbuf_free(&where);
        in->failed = in->asserted = true;
        return;
    }
}

/* ---- ops ---------------------------------------------------------------- */

static void run_block(interp *in, const tir_block *blk);

/* Copies the values a yield gives into `dst` (block arguments or an op's
 * results) through scratch copies, as a yield may permute them. */
static void take_yield(interp *in, const tir_op *y, tir_value *const *dst) {
    uint32_t nc = y->noperands;
    cell **tmp = calloc(nc + 1, sizeof(cell *));
    if (!tmp) abort();
    for (uint32_t a = 0; a < nc; a++) {
        uint32_t n = in->slots[y->operands[a]->id].n;
        tmp[a] = malloc(sizeof(cell) * n);
        if (!tmp[a]) abort();
        memcpy(tmp[a], val(in, y->operands[a]), sizeof(cell) * n);
    }
    for (uint32_t a = 0; a < nc; a++) {
        slot *s = out_slot(in, dst[a]);
        memcpy(s->cells, tmp[a], sizeof(cell) * s->n);
        free(tmp[a]);
    }
    free(tmp);
}

static void do_if(interp *in, const tir_op *op) {
    const tir_block *blk = val(in, op->operands[0])->i ? op->body : op->body2;
    run_block(in, blk);
    if (!in->failed) take_yield(in, blk->last, op->results);
}

static void do_while(interp *in, const tir_op *op) {
    const tir_block *test = op->body, *body = op->body2;
    for (uint32_t a = 0; a < test->nargs; a++) {
        slot *s = out_slot(in, test->args[a]);
        memcpy(s->cells, val(in, op->operands[a]), sizeof(cell) * s->n);
    }
    for (;;) {
        run_block(in, test);
        if (in->failed) return;
        if (!val(in, test->last->operands[0])->i) break;
        for (uint32_t a = 0; a < body->nargs; a++) {
            slot *s = out_slot(in, body->args[a]);
            memcpy(s->cells, val(in, test->args[a]), sizeof(cell) * s->n);
        }
        run_block(in, body);
        if (in->failed) return;
        take_yield(in, body->last, test->args);
        if (out_of_time(in, op)) return;
    }
    for (uint32_t k = 0; k < op->nresults; k++) {
        slot *s = out_slot(in, op->results[k]);
        memcpy(s->cells, val(in, test->args[k]), sizeof(cell) * s->n);
    }
}

static void do_for(interp *in, const tir_op *op) {
    const tir_block *body = op->body;
    int64_t lo = val(in, op->operands[0])->i, hi = val(in, op->operands[1])->i, step = val(in, op->operands[2])->i;
    tir_elem ivt = tir_type_elem(op->operands[0]->type);
    /* carried values start as the inits */
    for (uint32_t a = 1; a < body->nargs; a++) {
        slot *s = out_slot(in, body->args[a]);
        memcpy(s->cells, val(in, op->operands[2 + a]), sizeof(cell) * s->n);
    }
    if (lo < hi && step <= 0) {
        run_error(in, op, "%s", "loop step must be positive");
        return;
    }
    for (int64_t i = lo; i < hi && !in->failed; i = tir_wrap_int((int64_t)((uint64_t)i + (uint64_t)step), ivt)) {
        out_slot(in, body->args[0])->cells[0].i = i;
        run_block(in, body);
        if (in->failed) return;
        take_yield(in, body->last, body->args + 1);
        if (out_of_time(in, op)) return;
        if (i > INT64_MAX - step) break;
    }
    for (uint32_t k = 0; k < op->nresults; k++) {
        slot *s = out_slot(in, op->results[k]);
        memcpy(s->cells, val(in, body->args[k + 1]), sizeof(cell) * s->n);
    }
}

static void run_op(interp *in, const tir_op *op) {
    const tir_value *res = op->nresults ? op->results[0] : NULL;
    switch (op->code) {
    case TIR_OP_CONST: {
        slot *s = out_slot(in, res);
        bool fl = tir_elem_is_float(tir_type_elem(res->type));
        for (uint32_t k = 0; k < s->n; k++) {
            if (fl) s->cells[k].f = round_to(tir_type_elem(res->type), op->attr.fval);
            else s->cells[k].i = tir_wrap_int(op->attr.ival, tir_type_elem(res->type));
        }
        return;
    }
    case TIR_OP_PROGRAM_ID: out_slot(in, res)->cells[0].i = in->pid[op->attr.axis]; return;
    case TIR_OP_NUM_PROGRAMS: out_slot(in, res)->cells[0].i = in->l->grid[op->attr.axis]; return;
    case TIR_OP_ARANGE: {
        slot *s = out_slot(in, res);
        for (uint32_t k = 0; k < s->n; k++) s->cells[k].i = op->attr.range.lo + k;
        return;
    }
    case TIR_OP_SPLAT: {
        slot *s = out_slot(in, res);
        cell v = val(in, op->operands[0])[0];
        for (uint32_t k = 0; k < s->n; k++) s->cells[k] = v;
        return;
    }
    case TIR_OP_BROADCAST:
    case TIR_OP_PERMUTE: do_move(in, op); return;
    case TIR_OP_MULTIPLE_OF: { /* the reference semantics check the promise */
        const cell *x = val(in, op->operands[0]);
        if (x->i % op->attr.axis) {
            char detail[96];
            snprintf(detail, sizeof detail, "%lld is not a multiple of %lld", (long long)x->i, (long long)op->attr.axis);
            run_error(in, op, "multiple_of: %s", detail);
            return;
        }
        out_slot(in, res)->cells[0] = *x;
        return;
    }
    case TIR_OP_EXPAND_DIMS: /* row-major order is unchanged by these */
    case TIR_OP_RESHAPE:
    case TIR_OP_CONVERT_LAYOUT: {
        slot *s = out_slot(in, res);
        memcpy(s->cells, val(in, op->operands[0]), sizeof(cell) * s->n);
        return;
    }
    case TIR_OP_NEG:
    case TIR_OP_NOT: {
        slot *s = out_slot(in, res);
        cell *a = val(in, op->operands[0]);
        tir_elem e = tir_type_elem(res->type);
        for (uint32_t k = 0; k < s->n; k++) {
            if (op->code == TIR_OP_NOT) s->cells[k].i = e == TIR_I1 ? !a[k].i : ~a[k].i;
            else if (tir_elem_is_float(e)) s->cells[k].f = -a[k].f;
            else s->cells[k].i = tir_wrap_int((int64_t)(0 - (uint64_t)a[k].i), e);
        }
        return;
    }
    case TIR_OP_EXP2:
    case TIR_OP_LOG2:
    case TIR_OP_SIN:
    case TIR_OP_COS:
    case TIR_OP_RSQRT:
    case TIR_OP_RCP: {
        slot *s = out_slot(in, res);
        cell *a = val(in, op->operands[0]);
        tir_elem e = tir_type_elem(res->type);
        for (uint32_t k = 0; k < s->n; k++) {
            double x = a[k].f;
            double r = op->code == TIR_OP_EXP2 ? exp2(x) : op->code == TIR_OP_LOG2 ? log2(x)
                     : op->code == TIR_OP_SIN ? sin(x) : op->code == TIR_OP_COS ? cos(x)
                     : op->code == TIR_OP_RSQRT ? 1.0 / sqrt(x) : 1.0 / x;
            s->cells[k].f = round_to(e, r);
        }
        return;
    }
    case TIR_OP_ERF: {
        slot *s = out_slot(in, res);
        cell *a = val(in, op->operands[0]);
        for (uint32_t k = 0; k < s->n; k++) s->cells[k].f = round_to(tir_type_elem(res->type), erf(a[k].f));
        return;
    }
    case TIR_OP_RANDINT: do_randint(in, op); return;
    case TIR_OP_ABS:
    case TIR_OP_SQRT:
    case TIR_OP_FLOOR:
    case TIR_OP_CEIL: {
        slot *s = out_slot(in, res);
        cell *a = val(in, op->operands[0]);
        tir_elem e = tir_type_elem(res->type);
        for (uint32_t k = 0; k < s->n; k++) {
            if (op->code == TIR_OP_ABS && !tir_elem_is_float(e))
                s->cells[k].i = tir_wrap_int(a[k].i < 0 ? (int64_t)(0 - (uint64_t)a[k].i) : a[k].i, e);
            else if (op->code == TIR_OP_ABS) s->cells[k].f = fabs(a[k].f);
            else if (op->code == TIR_OP_SQRT) s->cells[k].f = round_to(e, e == TIR_F32 ? (double)sqrtf((float)a[k].f) : sqrt(a[k].f));
            else if (op->code == TIR_OP_FLOOR) s->cells[k].f = floor(a[k].f);
            else s->cells[k].f = ceil(a[k].f);
        }
        return;
    }
    case TIR_OP_FMA: {
        slot *s = out_slot(in, res);
        cell *a = val(in, op->operands[0]), *b = val(in, op->operands[1]), *c = val(in, op->operands[2]);
        tir_elem e = tir_type_elem(res->type);
        for (uint32_t k = 0; k < s->n; k++)
            s->cells[k].f = e == TIR_F32 ? (double)fmaf((float)a[k].f, (float)b[k].f, (float)c[k].f)
                                         : round_to(e, fma(a[k].f, b[k].f, c[k].f));
        return;
    }
    case TIR_OP_CAST: do_cast(in, op); return;
    case TIR_OP_REDUCE_SUM:
    case TIR_OP_REDUCE_MAX:
    case TIR_OP_REDUCE_MIN: do_reduce(in, op); return;
    case TIR_OP_CUMSUM:
    case TIR_OP_CUMSUM_REV: do_scan(in, op); return;
    case TIR_OP_DOT:
    case TIR_OP_DOT_ASYNC: /* the same value; when it is computed is the GPU's concern */
    case TIR_OP_DOT_IEEE: do_dot(in, op); return;
    case TIR_OP_DOT_WAIT:
        for (uint32_t i = 0; i < op->nresults; i++) {
            slot *s = out_slot(in, op->results[i]);
            memcpy(s->cells, val(in, op->operands[i]), sizeof(cell) * s->n);
        }
        return;
    case TIR_OP_LOCAL_ALLOC: do_local_alloc(in, op); return;
    case TIR_OP_ASYNC_COPY: do_async_copy(in, op); return;
    case TIR_OP_LOCAL_LOAD: do_local_load(in, op); return;
    case TIR_OP_LOCAL_STORE: do_local_store(in, op); return;
    case TIR_OP_ASYNC_COMMIT:
    case TIR_OP_ASYNC_WAIT:
    case TIR_OP_BARRIER: return;
    case TIR_OP_FENCE_ASYNC: return; /* orders proxies on the GPU; values are the same */
    case TIR_OP_TMA_LOAD: do_tma_load(in, op); return;
    case TIR_OP_MBAR_INIT: case TIR_OP_MBAR_WAIT: case TIR_OP_MBAR_INVAL: return; /* the copy above is done */
    /* warp roles run in program order: the producer's ops where they stand */
    case TIR_OP_MBAR_ARRIVE: case TIR_OP_WARP_SPECIALIZE: return;
    case TIR_OP_PRODUCER: run_block(in, op->body); return;
    case TIR_OP_SELECT: {
        slot *s = out_slot(in, res);
        cell *c = val(in, op->operands[0]), *a = val(in, op->operands[1]), *b = val(in, op->operands[2]);
        for (uint32_t k = 0; k < s->n; k++) s->cells[k] = c[k].i ? a[k] : b[k];
        return;
    }
    case TIR_OP_ADDPTR: {
        slot *s = out_slot(in, res);
        cell *p = val(in, op->operands[0]), *o = val(in, op->operands[1]);
        int64_t eb = elem_bytes(tir_type_pointee(op->operands[0]->type));
        for (uint32_t k = 0; k < s->n; k++) {
            s->cells[k] = p[k];
            s->cells[k].p.off = (int64_t)((uint64_t)p[k].p.off + (uint64_t)o[k].i * (uint64_t)eb);
        }
        return;
    }
    case TIR_OP_LOAD: do_load(in, op); return;
    case TIR_OP_STORE: do_store(in, op); return;
    case TIR_OP_ATOMIC_ADD:
    case TIR_OP_ATOMIC_MAX:
    case TIR_OP_ATOMIC_MIN:
    case TIR_OP_ATOMIC_XCHG:
    case TIR_OP_ATOMIC_CAS: do_atomic(in, op); return;
    case TIR_OP_FOR: do_for(in, op); return;
    case TIR_OP_IF: do_if(in, op); return;
    case TIR_OP_WHILE: do_while(in, op); return;
    case TIR_OP_PRINT: do_print(in, op); return;
    case TIR_OP_ASSERT: do_assert(in, op); return;
    case TIR_OP_YIELD:
    case TIR_OP_RETURN: return;
    default: do_binary(in, op); return;
    }
}

static void run_block(interp *in, const tir_block *blk) {
    for (const tir_op *op = blk->first; op && !in->failed; op = op->next) run_op(in, op);
}

static bool bind_args(interp *in) {
    const rt_launch *l = in->l;
    const tir_func *f = l->func;
    if (l->nargs != f->nparams) {
        char detail[64];
        snprintf(detail, sizeof detail, "%u given, %u expected", l->nargs, f->nparams);
        run_error(in, NULL, "wrong number of arguments: %s", detail);
        return false;
    }
    for (uint32_t i = 0; i < f->nparams; i++) {
        const tir_value *p = f->params[i];
        const rt_arg *a = &l->args[i];
        tir_elem e = tir_type_elem(p->type);
        rt_arg_kind want = e == TIR_PTR ? RT_ARG_PTR : tir_elem_is_float(e) ? RT_ARG_FLOAT : RT_ARG_INT;
        if (a->kind != want || (want == RT_ARG_PTR && a->buffer >= l->nbuffers)) {
            run_error(in, NULL, "argument '%s' has the wrong kind", p->name ? p->name : "?");
            return false;
        }
        cell *c = out_slot(in, p)->cells;
        if (want == RT_ARG_PTR) c->p.buf = a->buffer, c->p.off = a->offset;
        else if (want == RT_ARG_FLOAT) c->f = round_to(e, a->f);
        else c->i = tir_wrap_int(a->i, e);
    }
    return true;
}

rt_run_result rt_interp_launch(const rt_launch *l, const rt_print_sink *print, tc_diag *diag) {
    interp in = {.l = l, .diag = diag, .slots = calloc(l->func->next_value_id + 1, sizeof(slot)),
                 .print = print && print->fn ? print : NULL,
                 .deadline = l->time_limit_ms > 0 ? tc_now_ms() + l->time_limit_ms : 0};
    if (!in.slots) abort();
    if (bind_args(&in)) {
        for (uint32_t z = 0; z < l->grid[2] && !in.failed; z++)
            for (uint32_t y = 0; y < l->grid[1] && !in.failed; y++)
                for (uint32_t x = 0; x < l->grid[0] && !in.failed; x++) {
                    in.pid[0] = x, in.pid[1] = y, in.pid[2] = z;
                    if (!out_of_time(&in, NULL)) run_block(&in, l->func->body);
                }
    }
    for (uint32_t i = 0; i <= l->func->next_value_id; i++) free(in.slots[i].cells);
    free(in.slots);
    return in.asserted ? RT_RUN_ASSERT : in.failed ? RT_RUN_ERROR : RT_RUN_OK;
}

bool rt_interp_run(const rt_launch *l, tc_diag *diag) { return rt_interp_launch(l, NULL, diag) == RT_RUN_OK; }
