/* difftest_gen.c - the differential tester's random program generator
 * (difftest.h). A program is one kernel `k` over a BR x BC block of an
 * NR x NC matrix per program instance (grid cdiv(NR, BR) x cdiv(NC, BC),
 * NR and NC usually not multiples of the block: ragged edges, masked).
 * The body is a list of `let` statements, each one op on values made
 * before it (a pool), with loops, branches, a K-loop of `dot` and atomics
 * among them; the last values are stored to the outputs.
 *
 * Every value carries what the tolerance rule needs (difftest.c's header):
 *   mag  an upper bound of |value| (from the inputs' ranges),
 *   err  an upper bound of |cpu - emu| for it (0: the devices must agree
 *        bit for bit),
 *   q    for floats, a number of fractional bits every value is a multiple
 *        of (-1: unknown), so that sums and products known to stay exact
 *        (mag * 2^q <= 2^precision) keep err 0 whatever the order of
 *        their roundings.
 * Ops that would need more than a float's FLOAT_MAG_LIMIT, or a float
 * whose err is not 0 where a decision is taken on it (a comparison, a cast
 * to an integer, floor), are not generated. Everything comes from one
 * splitmix64 stream seeded by (seed, iter). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "difftest.h"

static const double LN2 = 0.69314718055994530942;

enum {
    MAX_POOL = 96,
    MAX_STMTS = 14,      /* top-level statements after the prologue */
    MAX_BODY = 3,        /* statements in a loop or branch body */
    MAX_TRIES = 24,      /* attempts at one op before falling back to a leaf */
    MAX_TRIPS = 4,       /* a loop's trip i reads layer i of an input */
    LAYERS = MAX_TRIPS + 2, /* layers of each input: room for strided and shifted accesses too */
    INPUT_SLACK = 8,     /* elements past the layers: accesses shifted by k (< 8) or by 1 */
    EXPR_MAX = 768,
};

static const double FLOAT_MAG_LIMIT[DT_NTYPES] = {0, 0, 0, 0, 16384.0, 1e6, 1e6};
static const int PRECISION[DT_NTYPES] = {0, 0, 0, 0, 11, 8, 24}; /* significand bits */
static const double INT_MAX_OF[DT_NTYPES] = {127.0, 32767.0, 2147483647.0, 9223372036854775807.0, 0, 0, 0};
/* The transcendental functions: the GPU's approximations against the
 * interpreter's exact values, absolutely for results of magnitude <= 1 and
 * relatively above (ex2.approx, lg2.approx, sin/cos.approx, rcp.approx
 * are within a few 2^-22; erf within 2e-7). */
static const double APPROX_ERR = 0x1p-19;

const char *const dt_type_names[DT_NTYPES] = {"i8", "i16", "i32", "i64", "f16", "bf16", "f32"};
const char *const dt_feature_names[DT_NFEATURES] = {"elementwise", "broadcast", "shape", "reduce", "scan",
                                                    "dot", "loop", "num_stages", "if", "while", "atomic",
                                                    "cast", "math"};
size_t dt_type_size(dt_type t) {
    static const size_t sizes[DT_NTYPES] = {1, 2, 4, 8, 2, 2, 4};
    return sizes[t];
}
bool dt_is_float(dt_type t) { return t >= DT_F16; }

typedef enum shp { SH_SCALAR, SH_ROW, SH_COL, SH_2D } shp; /* scalar, [BR], [BC], [BR, BC] */

typedef struct gval {
    int id; /* v<id>; -1: not a named value */
    dt_type ty;
    shp sh;
    double mag, err;
    int q;
} gval;

typedef struct sbuf {
    char *d;
    size_t n, cap;
} sbuf;

typedef struct gen {
    uint64_t rng;
    sbuf out;
    int indent;
    gval pool[MAX_POOL];
    int npool;
    int next_id;
    dt_program *p;
    int br, bc;
    bool square; /* br == bc: trans keeps the shape */
    bool dot_ok; /* br, bc >= 16: dot of [br, bc] by [bc, bc] */
    unsigned allow; /* DT_F_* this program may use */
} gen;

typedef struct opnd {
    char s[EXPR_MAX];
    gval v;
} opnd;

/* ---- PRNG: splitmix64 ---------------------------------------------------- */
static uint64_t next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int rnd(gen *g, int n) { return n > 0 ? (int)(next(&g->rng) % (uint64_t)n) : 0; }
static bool chance(gen *g, int percent) { return rnd(g, 100) < percent; }

/* ---- text ----------------------------------------------------------------- */
static void sb_vadd(sbuf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (b->n + (size_t)n + 1 > b->cap) {
        b->cap = (b->n + (size_t)n + 1) * 2;
        b->d = realloc(b->d, b->cap);
        if (!b->d) abort();
    }
    vsnprintf(b->d + b->n, (size_t)n + 1, fmt, ap);
    b->n += (size_t)n;
}
static void emit(gen *g, const char *fmt, ...) {
    sbuf *b = &g->out;
    va_list ap;
    va_start(ap, fmt);
    char pad[64];
    int ind = g->indent * 4 < 60 ? g->indent * 4 : 60;
    memset(pad, ' ', (size_t)ind);
    pad[ind] = 0;
    sbuf tmp = {0};
    sb_vadd(&tmp, fmt, ap);
    va_end(ap);
    /* a pad, the line, a newline: through sb_vadd's formatting */
    char *line = tmp.d ? tmp.d : "";
    size_t need = b->n + (size_t)ind + strlen(line) + 2;
    if (need > b->cap) {
        b->cap = need * 2;
        b->d = realloc(b->d, b->cap);
        if (!b->d) abort();
    }
    b->n += (size_t)sprintf(b->d + b->n, "%s%s\n", pad, line);
    free(tmp.d);
}
static void fmt(opnd *o, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(o->s, sizeof o->s, f, ap);
    va_end(ap);
    if (n >= (int)sizeof o->s) abort(); /* EXPR_MAX is generous: operands are names */
}

/* ---- the static analysis -------------------------------------------------- */
static double ulp_of(double mag, dt_type t) { return mag * ldexp(1.0, 1 - PRECISION[t]); }
/* Every value a multiple of 2^-q with |v| <= mag fits t exactly. */
static bool exact_in(double mag, int q, int prec) { return q >= 0 && ldexp(mag, q) <= ldexp(1.0, prec); }
static int max_q(int a, int b) { return a < 0 || b < 0 ? -1 : a > b ? a : b; }
static bool float_ok(const gval *v) { return !dt_is_float(v->ty) || (v->mag <= FLOAT_MAG_LIMIT[v->ty] && isfinite(v->err)); }
static dt_type widen_sum(dt_type t) { return t == DT_I8 || t == DT_I16 ? DT_I32 : t == DT_F16 || t == DT_BF16 ? DT_F32 : t; }
static double int_clip(double m, dt_type t) { return m > INT_MAX_OF[t] ? INT_MAX_OF[t] + 1 : m; }

/* v as type t: the cast's effect on the analysis; false if not allowed. */
static bool cast_info(const gval *v, dt_type t, gval *r) {
    *r = *v;
    r->ty = t;
    if (v->ty == t) return true;
    if (!dt_is_float(t)) {
        if (dt_is_float(v->ty) && v->err > 0) return false; /* truncation would amplify a rounding difference */
        r->mag = v->mag < INT_MAX_OF[t] ? v->mag : INT_MAX_OF[t] + 1;
        r->q = 0;
        return true;
    }
    if (v->mag > FLOAT_MAG_LIMIT[t]) return false;
    if (!dt_is_float(v->ty)) {
        r->q = 0;
        r->err = 0;
        return true;
    }
    if (!exact_in(v->mag, v->q, PRECISION[t])) r->q = -1;
    r->err = v->err > 0 ? v->err + ulp_of(v->mag, t) : 0;
    return true;
}

/* ---- the pool --------------------------------------------------------------- */
static int add_val(gen *g, gval v) {
    if (g->npool >= MAX_POOL) abort();
    v.id = g->next_id++;
    g->pool[g->npool++] = v;
    return v.id;
}
static bool bcast_ok(shp from, shp to) {
    return from == to || from == SH_SCALAR || (to == SH_2D && (from == SH_ROW || from == SH_COL));
}
static const char *shape_text(gen *g, shp s, char *buf, size_t n) {
    if (s == SH_ROW) snprintf(buf, n, "(%d,)", g->br);
    else if (s == SH_COL) snprintf(buf, n, "(%d,)", g->bc);
    else snprintf(buf, n, "(%d, %d)", g->br, g->bc);
    return buf;
}
static int shape_len(gen *g, shp s) { return s == SH_ROW ? g->br : s == SH_COL ? g->bc : s == SH_2D ? g->br * g->bc : 1; }

/* Value v as type t in shape `to` (broadcast; `full`: a tile of exactly
 * that shape, else the short form an operator broadcasts). */
static bool coerce(gen *g, const gval *v, dt_type t, shp to, bool full, opnd *o) {
    if (!bcast_ok(v->sh, to) || !cast_info(v, t, &o->v)) return false;
    char name[32];
    snprintf(name, sizeof name, "v%d", v->id);
    char base[EXPR_MAX];
    if (v->ty != t) snprintf(base, sizeof base, "cast(%s, %s)", name, dt_type_names[t]);
    else snprintf(base, sizeof base, "%s", name);
    o->v.sh = v->sh;
    if (v->sh != to) {
        char sh[32];
        if (v->sh == SH_ROW) fmt(o, full ? "broadcast_to(%s[:, None], %s)" : "%s[:, None]", base, shape_text(g, to, sh, sizeof sh));
        else if (v->sh == SH_COL) fmt(o, full ? "broadcast_to(%s[None, :], %s)" : "%s[None, :]", base, shape_text(g, to, sh, sizeof sh));
        else if (full) fmt(o, "full(%s, %s)", shape_text(g, to, sh, sizeof sh), base);
        else fmt(o, "%s", base);
        if (full) o->v.sh = to;
    } else {
        fmt(o, "%s", base);
    }
    return true;
}

/* A random pool value that can serve as type t in shape `to`; `exact`:
 * only values the devices agree on bit for bit. */
static const gval *pick_val(gen *g, dt_type t, shp to, bool same_shape, bool exact) {
    const gval *c[MAX_POOL];
    int n = 0, nsame = 0;
    const gval *same[MAX_POOL];
    for (int i = 0; i < g->npool; i++) {
        const gval *v = &g->pool[i];
        gval tmp;
        if (same_shape ? v->sh != to : !bcast_ok(v->sh, to)) continue;
        if (exact && v->err > 0) continue;
        if (!cast_info(v, t, &tmp)) continue;
        c[n++] = v;
        if (v->ty == t) same[nsame++] = v;
    }
    if (!n) return NULL;
    /* recent values half the time: chains of ops on ops' results (a dot's
     * through reshapes and reductions) are where layouts meet */
    if (chance(g, 50)) return c[n - 1 - rnd(g, n < 3 ? n : 3)];
    if (nsame && chance(g, 70)) return same[rnd(g, nsame)];
    return c[rnd(g, n)];
}

/* ---- leaves: loads, parameters ------------------------------------------ */
static int input_of(gen *g, dt_type t) {
    dt_program *p = g->p;
    int have[DT_MAX_BUFS], n = 0;
    for (int i = 0; i < p->nbufs; i++)
        if (!p->bufs[i].output && p->bufs[i].type == t && p->bufs[i].count == (size_t)p->nr * p->nc * LAYERS + INPUT_SLACK)
            have[n++] = i;
    if (n && (chance(g, 60) || p->nbufs >= DT_MAX_BUFS - 6)) return have[rnd(g, n)];
    dt_buf *b = &p->bufs[p->nbufs];
    *b = (dt_buf){.type = t, .count = (size_t)p->nr * p->nc * LAYERS + INPUT_SLACK};
    b->fill = dt_is_float(t) ? (chance(g, 50) ? DT_FILL_EXACT : DT_FILL_ROUGH) : (chance(g, 60) ? DT_FILL_SMALL : DT_FILL_FULL);
    snprintf(b->name, sizeof b->name, "in%d", p->nbufs);
    return p->nbufs++;
}
static gval fill_info(const dt_buf *b, shp sh) {
    gval v = {.ty = b->type, .sh = sh};
    switch (b->fill) {
    case DT_FILL_EXACT: v.mag = 8, v.q = 3; break;
    case DT_FILL_ROUGH: v.mag = 4, v.q = -1; break;
    case DT_FILL_SMALL: v.mag = 100; break;
    case DT_FILL_FULL: v.mag = INT_MAX_OF[b->type] + 1; break;
    }
    return v;
}
static const dt_type ALL_TYPES[] = {DT_I8, DT_I16, DT_I32, DT_I64, DT_F16, DT_BF16, DT_F32};
static dt_type any_type(gen *g) { return ALL_TYPES[rnd(g, DT_NTYPES)]; }

/* A load of shape sh from a new or shared input of type t; `layer`: an
 * expression for the layer (a loop's trip), or NULL for layer 0. */
static int leaf(gen *g, dt_type t, shp sh, const char *layer) {
    int bi = input_of(g, t);
    const dt_buf *b = &g->p->bufs[bi];
    gval v = fill_info(b, sh);
    int other = rnd(g, 3) - 1; /* masked-off lanes: -1, 0 or 1 */
    char base[96];
    if (layer) snprintf(base, sizeof base, "%s + %s * lay", b->name, layer);
    else snprintf(base, sizeof base, "%s", b->name);
    int id = g->next_id;
    switch (sh) {
    case SH_2D: {
        /* the access patterns the axis analysis and the vectorized,
         * masked loads see differently: row-major, shifted by one or by a
         * run-time amount (unaligned), column-major, strided, repeated
         * (c / 2), 64-bit offsets; masks the same over each vector or not */
        static const char *const addr[] = {"off", "off", "off", "1 + off", "k + off", "c[None, :] * NR + r[:, None]",
                                           "off * 2", "r[:, None] * NC + c[None, :] / 2", "cast(off, i64)"};
        static const char *const mask[] = {"m", "m", "m", "m & (r[:, None] + c[None, :]) % 3 != 0", "m & c[None, :] != 2"};
        emit(g, "let v%d = load(%s + %s, %s, other = %d);", id, base, addr[rnd(g, 9)], mask[rnd(g, 5)], other);
        break;
    }
    case SH_ROW: emit(g, "let v%d = load(%s + r * NC, r < NR, other = %d);", id, base, other); break;
    case SH_COL: emit(g, "let v%d = load(%s + c, c < NC, other = %d);", id, base, other); break;
    case SH_SCALAR: emit(g, "let v%d = load(%s + pid0);", id, base); break;
    }
    if (v.mag < 1) v.mag = 1;
    return add_val(g, v);
}
/* rand/randint of the element's offset: the same bits on every device. */
static int rand_leaf(gen *g, shp sh) {
    static const char *const offs[] = {"0", "r", "c", "off"};
    int id = g->next_id;
    bool f = chance(g, 50);
    emit(g, "let v%d = %s(%s, %s);", id, f ? "rand" : "randint", chance(g, 50) ? "k" : "12345", offs[sh]);
    return add_val(g, f ? (gval){.ty = DT_F32, .sh = sh, .mag = 1, .q = -1}
                        : (gval){.ty = DT_I32, .sh = sh, .mag = INT_MAX_OF[DT_I32] + 1});
}

static int scalar_leaf(gen *g) {
    int id = g->next_id;
    switch (rnd(g, 4)) {
    case 0: emit(g, "let v%d = pid0;", id); return add_val(g, (gval){.ty = DT_I32, .sh = SH_SCALAR, .mag = g->p->grid[0]});
    case 1: emit(g, "let v%d = k;", id); return add_val(g, (gval){.ty = DT_I32, .sh = SH_SCALAR, .mag = 8});
    case 2: emit(g, "let v%d = s;", id); return add_val(g, (gval){.ty = DT_F32, .sh = SH_SCALAR, .mag = 4, .q = 2});
    default: return leaf(g, any_type(g), SH_SCALAR, NULL);
    }
}

/* ---- ops ---------------------------------------------------------------------- */
typedef enum bop { B_ADD, B_SUB, B_MUL, B_MIN, B_MAX, B_AND, B_OR, B_XOR, B_SHL, B_SHR, B_DIV, B_REM, B_NOPS } bop;

/* The analysis of a op b, both of type t (already coerced). */
static gval bin_info(bop op, const gval *a, const gval *b, dt_type t) {
    gval r = {.ty = t, .sh = a->sh};
    bool fl = dt_is_float(t);
    switch (op) {
    case B_ADD:
    case B_SUB:
        r.mag = a->mag + b->mag, r.q = max_q(a->q, b->q), r.err = a->err + b->err;
        /* unless exact, the GPU code may contract a product into an fma */
        if (fl && !exact_in(r.mag, r.q, PRECISION[t])) r.err += ulp_of(r.mag, t);
        break;
    case B_MUL:
        r.mag = a->mag * b->mag;
        r.q = a->q < 0 || b->q < 0 ? -1 : a->q + b->q;
        r.err = a->err * b->mag + b->err * a->mag + a->err * b->err;
        if (fl && r.err > 0) r.err += ulp_of(r.mag, t);
        break;
    case B_MIN:
    case B_MAX:
        r.mag = fmax(a->mag, b->mag), r.q = max_q(a->q, b->q), r.err = fmax(a->err, b->err);
        break;
    default: r.mag = INT_MAX_OF[t] + 1; break; /* integer bit ops, shifts, div, rem */
    }
    if (!fl) r.mag = int_clip(r.mag, t), r.err = 0, r.q = 0;
    /* |a / d| and |a % d| are at most |a|; a & b is not (-3 & b is b's
     * high bits), so it keeps the full range of the default above */
    if (op == B_DIV || op == B_REM) r.mag = fl ? r.mag : fmin(a->mag, INT_MAX_OF[t] + 1);
    return r;
}

static shp pick_shape(gen *g) {
    int x = rnd(g, 10);
    return x < 6 ? SH_2D : x < 7 ? SH_ROW : x < 8 ? SH_COL : SH_SCALAR;
}

/* One operand of type t for a result of shape sh: a pool value (exactly of
 * that shape when `same_shape`), else a new load. */
static void operand_as(gen *g, dt_type t, shp sh, bool same_shape, bool exact, bool full, opnd *o) {
    const gval *v = chance(g, 85) ? pick_val(g, t, sh, same_shape, exact) : NULL;
    if (!v) {
        if (sh == SH_SCALAR && chance(g, 50)) scalar_leaf(g);
        else if (chance(g, 8)) rand_leaf(g, sh);
        else leaf(g, t, same_shape ? sh : (chance(g, 70) ? sh : SH_SCALAR), NULL);
        v = &g->pool[g->npool - 1];
        gval tmp; /* a leaf that does not fit: a load of exactly what is asked */
        if (!cast_info(v, t, &tmp) || (exact && v->err > 0) || !bcast_ok(v->sh, sh)) {
            leaf(g, t, sh, NULL);
            v = &g->pool[g->npool - 1];
        }
    }
    if (!coerce(g, v, t, sh, full, o)) abort();
}
static void operand(gen *g, dt_type t, shp sh, bool same_shape, bool exact, opnd *o) {
    operand_as(g, t, sh, same_shape, exact, false, o);
}

static const char *const BOP_TEXT[B_NOPS] = {"+", "-", "*", "", "", "&", "|", "^", "<<", ">>", "/", "%"};

/* A binary elementwise op into a new value; false if the result would
 * leave the float limits. */
static bool gen_binary(gen *g) {
    dt_type t = any_type(g);
    shp sh = pick_shape(g);
    bool fl = dt_is_float(t);
    bop op;
    if (fl) {
        static const bop fops[] = {B_ADD, B_SUB, B_MUL, B_MIN, B_MAX, B_ADD, B_MUL, B_DIV};
        op = fops[rnd(g, 8)];
    } else {
        op = (bop)rnd(g, B_NOPS);
    }
    opnd a, b;
    operand(g, t, sh, true, false, &a);
    if (fl && op == B_DIV) { /* IEEE division by a constant: 1 ulp if the dividend already differs */
        static const double divs[] = {3.0, 0.25, 10.0, -7.0, 2.0};
        double dv = divs[rnd(g, 5)];
        gval r = a.v;
        r.sh = sh;
        r.mag = a.v.mag / fabs(dv);
        r.q = dv == 0.25 ? (a.v.q < 0 ? -1 : a.v.q) : dv == 2.0 ? (a.v.q < 0 ? -1 : a.v.q + 1) : -1;
        if (dv == 0.25) r.mag = a.v.mag * 4;
        r.err = a.v.err > 0 ? a.v.err / fmin(fabs(dv), 1.0) * (dv == 0.25 ? 4 : 1) + ulp_of(r.mag, t) : 0;
        bool rem = a.v.err == 0 && chance(g, 30); /* fmod is exact, but a step function of its operand */
        if (rem) r = a.v, r.sh = sh, r.q = dv == 0.25 || a.v.q < 0 ? -1 : a.v.q;
        if (!float_ok(&r)) return false;
        emit(g, "let v%d = %s %s %g;", g->next_id, a.s, rem ? "%" : "/", dv);
        add_val(g, r);
        g->p->features |= DT_F_ELEM;
        return true;
    }
    operand(g, t, sh, false, false, &b);
    gval r = bin_info(op, &a.v, &b.v, t);
    r.sh = sh;
    if (!float_ok(&r)) return false;
    int id = g->next_id;
    if (op == B_MIN || op == B_MAX) emit(g, "let v%d = %s(%s, %s);", id, op == B_MIN ? "minimum" : "maximum", a.s, b.s);
    else if (op == B_DIV || op == B_REM) /* divisors 1..8 or -2..-9: never 0, nor -1 (INT_MIN / -1 differs by device) */
        emit(g, chance(g, 50) ? "let v%d = %s %s ((%s & 7) + 1);" : "let v%d = %s %s (-2 - (%s & 7));", id, a.s, BOP_TEXT[op], b.s);
    else if ((op == B_SHL || op == B_SHR) && chance(g, 50)) emit(g, "let v%d = %s %s (%s & %d);", id, a.s, BOP_TEXT[op], b.s, (int)dt_type_size(t) * 8 - 1);
    else emit(g, "let v%d = %s %s %s;", id, a.s, BOP_TEXT[op], b.s);
    add_val(g, r);
    g->p->features |= DT_F_ELEM;
    return true;
}

/* A comparison of two values the devices agree on, in shape sh (text). */
static void gen_cond(gen *g, shp sh, char *out, size_t n) {
    dt_type t = any_type(g);
    opnd a, b;
    operand(g, t, sh, false, true, &a);
    operand(g, t, sh, false, true, &b);
    static const char *const cmp[] = {"<", "<=", ">", ">=", "==", "!="};
    snprintf(out, n, "%s %s %s", a.s, cmp[rnd(g, 6)], b.s);
}

static bool gen_where(gen *g) {
    dt_type t = any_type(g);
    shp sh = pick_shape(g);
    char cond[2 * EXPR_MAX + 8];
    gen_cond(g, sh, cond, sizeof cond);
    opnd a, b;
    operand(g, t, sh, true, false, &a);
    operand(g, t, sh, false, false, &b);
    gval r = bin_info(B_MAX, &a.v, &b.v, t);
    r.sh = sh;
    emit(g, "let v%d = where(%s, %s, %s);", g->next_id, cond, a.s, b.s);
    add_val(g, r);
    g->p->features |= DT_F_ELEM;
    return true;
}

/* Unary ops: neg, abs, not (integers); the float functions, each with the
 * argument brought into the range where the analysis holds. */
static bool gen_unary(gen *g) {
    dt_type t = any_type(g);
    shp sh = pick_shape(g);
    opnd a;
    operand(g, t, sh, true, false, &a);
    gval r = a.v;
    r.sh = sh;
    int id = g->next_id;
    if (!dt_is_float(t)) {
        static const char *const ops[] = {"-", "abs", "!"};
        int o = rnd(g, 3);
        if (o == 1) emit(g, "let v%d = abs(%s);", id, a.s);
        else emit(g, "let v%d = %s%s;", id, ops[o], a.s);
        r.mag = INT_MAX_OF[t] + 1;
        add_val(g, r);
        g->p->features |= DT_F_ELEM;
        return true;
    }
    double m = a.v.mag, e = a.v.err, u = ulp_of(1.0, t);
    bool narrow = t != DT_F32; /* computed in f32, rounded to t */
    int fn = rnd(g, 15);
    switch (fn) {
    case 0: emit(g, "let v%d = -%s;", id, a.s); break;
    case 1: emit(g, "let v%d = abs(%s);", id, a.s); break;
    case 2: /* sqrt of a value >= 1: its derivative is at most 1/2 */
        emit(g, "let v%d = sqrt(abs(%s) + 1.0);", id, a.s);
        r.mag = sqrt(m + 1), r.q = -1;
        r.err = e > 0 || !exact_in(m + 1, a.v.q, PRECISION[t]) ? 0.5 * e + ulp_of(m + 1, t) + ulp_of(r.mag, t) : 0;
        break;
    case 3:
    case 4:
        if (e > 0) return false; /* a step function of a value the devices round differently */
        emit(g, "let v%d = %s(%s);", id, fn == 3 ? "floor" : "ceil", a.s);
        r.mag = m + 1, r.q = 0;
        break;
    case 5: /* exp2 of an argument scaled into [-8, 8] */
    case 6: {
        double sc = m > 8 ? 8 / m : 1;
        emit(g, "let v%d = %s(%s * %.9g);", id, fn == 5 ? "exp2" : "exp", a.s, sc);
        double am = m * sc, ln = fn == 5 ? LN2 : 1.0;
        r.mag = exp(am * (fn == 5 ? LN2 : 1.0)), r.q = -1;
        /* the scaling multiply, the argument's err, the approximation */
        r.err = r.mag * (ln * (e * sc + 2 * ulp_of(am, t) + 8 * ulp_of(1, DT_F32)) + APPROX_ERR) +
                (narrow ? ulp_of(r.mag, t) : 0);
        g->p->features |= DT_F_MATH;
        break;
    }
    case 7:
    case 8: /* log of a value >= 1: derivative at most 1 / ln 2 */
        emit(g, "let v%d = %s(abs(%s) + 1.0);", id, fn == 7 ? "log2" : "log", a.s);
        r.mag = log2(m + 1) + 1, r.q = -1;
        r.err = (e + ulp_of(m + 1, t)) / LN2 + APPROX_ERR * r.mag + (narrow ? ulp_of(r.mag, t) : 0);
        g->p->features |= DT_F_MATH;
        break;
    case 9:
    case 10: { /* sin, cos of an argument scaled into [-pi, pi] */
        double sc = m > 3 ? 3 / m : 1;
        emit(g, "let v%d = %s(%s * %.9g);", id, fn == 9 ? "sin" : "cos", a.s, sc);
        r.mag = 1, r.q = -1;
        r.err = e * sc + ulp_of(m * sc, t) + APPROX_ERR + (narrow ? u : 0);
        g->p->features |= DT_F_MATH;
        break;
    }
    case 11: /* rsqrt of a value >= 1 */
        emit(g, "let v%d = rsqrt(abs(%s) + 1.0);", id, a.s);
        r.mag = 1, r.q = -1;
        r.err = 0.5 * (e + ulp_of(m + 1, t)) + APPROX_ERR + (narrow ? u : 0);
        g->p->features |= DT_F_MATH;
        break;
    case 12:
    case 13:
    case 14: { /* sigmoid, tanh, erf: bounded by 1, slopes at most 1 (erf 1.13) */
        static const char *const f[] = {"sigmoid", "tanh", "erf"};
        double sc = m > 16 ? 16 / m : 1;
        emit(g, "let v%d = %s(%s * %.9g);", id, f[fn - 12], a.s, sc);
        r.mag = 1, r.q = -1;
        r.err = 1.2 * (e * sc + ulp_of(m * sc, t)) + 4 * APPROX_ERR + (narrow ? u : 0);
        g->p->features |= DT_F_MATH;
        break;
    }
    }
    if (!float_ok(&r)) { /* the line is out: its name is taken, the value left unused */
        g->next_id++;
        return false;
    }
    add_val(g, r);
    g->p->features |= DT_F_ELEM;
    return true;
}

/* fma(a, b, c) on floats. */
static bool gen_fma(gen *g) {
    static const dt_type ft[] = {DT_F16, DT_BF16, DT_F32};
    dt_type t = ft[rnd(g, 3)];
    shp sh = pick_shape(g);
    opnd a, b, c;
    operand(g, t, sh, true, false, &a);
    operand(g, t, sh, false, false, &b);
    operand(g, t, sh, false, false, &c);
    gval p = bin_info(B_MUL, &a.v, &b.v, t);
    p.err = a.v.err * b.v.mag + b.v.err * a.v.mag + a.v.err * b.v.err;
    gval r = bin_info(B_ADD, &p, &c.v, t);
    r.sh = sh;
    if (!float_ok(&r)) return false;
    emit(g, "let v%d = fma(%s, %s, %s);", g->next_id, a.s, b.s, c.s);
    add_val(g, r);
    g->p->features |= DT_F_ELEM;
    return true;
}

static bool gen_cast(gen *g) {
    dt_type t = any_type(g);
    shp sh = pick_shape(g);
    const gval *v = pick_val(g, t, sh, true, false);
    if (!v || v->ty == t) return false;
    opnd a;
    if (!coerce(g, v, t, sh, false, &a)) return false;
    emit(g, "let v%d = %s;", g->next_id, a.s);
    add_val(g, a.v);
    g->p->features |= DT_F_CAST;
    return true;
}

/* A row and a column combined into a 2-D tile. */
static bool gen_outer(gen *g) {
    dt_type t = any_type(g);
    opnd a, b;
    operand(g, t, SH_ROW, true, false, &a);
    operand(g, t, SH_COL, true, false, &b);
    static const bop ops[] = {B_ADD, B_MUL, B_MAX, B_SUB};
    bop op = ops[rnd(g, 4)];
    gval r = bin_info(op, &a.v, &b.v, t);
    r.sh = SH_2D;
    if (!float_ok(&r)) return false;
    if (op == B_MAX) emit(g, "let v%d = maximum(%s[:, None], %s[None, :]);", g->next_id, a.s, b.s);
    else emit(g, "let v%d = %s[:, None] %s %s[None, :];", g->next_id, a.s, BOP_TEXT[op], b.s);
    add_val(g, r);
    g->p->features |= DT_F_BCAST;
    return true;
}

/* The analysis of a sum (or running sum) of n values like v, in type t. */
static gval sum_info(const gval *v, int n, dt_type t) {
    gval r = *v;
    r.ty = t;
    r.mag = v->mag * n;
    if (!dt_is_float(t)) {
        r.mag = int_clip(r.mag, t);
        return r;
    }
    if (v->err == 0 && exact_in(r.mag, v->q, PRECISION[t])) return r;
    /* each order is within (n - 1) 2^-p sum|x| of the exact sum */
    r.err = n * v->err + 2.0 * n * ulp_of(r.mag, t);
    r.q = exact_in(r.mag, v->q, PRECISION[t]) ? v->q : -1;
    return r;
}

/* Moves of a 2-D tile's elements: transposes, reshapes, 3-D permutes and
 * broadcasts. The values (and so the analysis) are the operand's. */
static bool gen_shape(gen *g) {
    const gval *v = pick_val(g, any_type(g), SH_2D, true, false);
    if (!v) return false;
    int id = g->next_id, br = g->br, bc = g->bc;
    gval r = *v;
    switch (rnd(g, 6)) {
    case 0:
        if (g->square) emit(g, "let v%d = trans(v%d);", id, v->id);
        else emit(g, "let v%d = reshape(trans(v%d), (%d, %d));", id, v->id, br, bc);
        break;
    case 1:
        if (bc < 2) return false;
        emit(g, "let v%d = reshape(permute(reshape(v%d, (%d, 2, %d)), (1, 0, 2)), (%d, %d));", id, v->id, br, bc / 2, br, bc);
        break;
    case 2: emit(g, "let v%d = reshape(reshape(v%d, (%d,)), (%d, %d));", id, v->id, br * bc, br, bc); break;
    case 3:
        emit(g, "let v%d = max(broadcast_to(expand_dims(v%d, 2), (%d, %d, 2)), axis = 2);", id, v->id, br, bc);
        break;
    case 4:
        if (br < 2) return false;
        emit(g, "let v%d = reshape(permute(reshape(v%d, (2, %d, %d)), (2, 0, 1)), (%d, %d));", id, v->id, br / 2, bc, br, bc);
        break;
    case 5: { /* a row or column broadcast through expand_dims */
        const gval *w = pick_val(g, any_type(g), chance(g, 50) ? SH_ROW : SH_COL, true, false);
        if (!w) return false;
        r = *w;
        r.sh = SH_2D;
        emit(g, "let v%d = broadcast_to(expand_dims(v%d, %d), (%d, %d));", id, w->id, w->sh == SH_ROW ? 1 : 0, br, bc);
        g->p->features |= DT_F_BCAST;
        break;
    }
    }
    add_val(g, r);
    g->p->features |= DT_F_SHAPE;
    return true;
}

/* Through 3-D tiles: a product of a 2-D tile's rows with another's
 * columns summed along the middle dim, x[:, :, None] * y[None, :, :]
 * (a [br, bc] by [bc, bc] product by broadcasts, no dot), or a 2-D tile
 * broadcast along a new last dim and reduced along it again. */
static bool gen_3d(gen *g) {
    dt_type t = any_type(g);
    int id = g->next_id, br = g->br, bc = g->bc;
    if (chance(g, 50) && br * bc * bc <= 8192) {
        opnd a;
        operand(g, t, SH_2D, true, false, &a);
        int bi = input_of(g, t), yid = g->next_id++;
        emit(g, "let v%d = load(%s + arange(0, %d)[:, None] * NC + c[None, :], arange(0, %d)[:, None] < NR & c[None, :] < NC, other = 0);",
             yid, g->p->bufs[bi].name, bc, bc);
        gval y = fill_info(&g->p->bufs[bi], SH_2D);
        gval prod = bin_info(B_MUL, &a.v, &y, t);
        gval r = sum_info(&prod, bc, widen_sum(t));
        r.sh = SH_2D;
        if (!float_ok(&prod) || !float_ok(&r)) return false;
        id = g->next_id;
        emit(g, "let v%d = sum((%s)[:, :, None] * v%d[None, :, :], axis = 1);", id, a.s, yid);
        add_val(g, r);
    } else {
        const gval *v = pick_val(g, t, SH_2D, true, false);
        if (!v) return false;
        int reps = 2 << rnd(g, 2), kind = rnd(g, 3);
        static const char *const fn[] = {"sum", "max", "min"};
        gval r = kind == 0 ? sum_info(v, reps, widen_sum(v->ty)) : *v;
        r.sh = SH_2D;
        if (!float_ok(&r)) return false;
        switch (rnd(g, 4)) { /* the new dim last, first or in the middle, or permuted away */
        case 0: emit(g, "let v%d = %s(broadcast_to(v%d[:, :, None], (%d, %d, %d)), axis = 2);", id, fn[kind], v->id, br, bc, reps); break;
        case 1: emit(g, "let v%d = %s(broadcast_to(v%d[None, :, :], (%d, %d, %d)), axis = 0);", id, fn[kind], v->id, reps, br, bc); break;
        case 2: emit(g, "let v%d = %s(broadcast_to(v%d[:, None, :], (%d, %d, %d)), axis = 1);", id, fn[kind], v->id, br, reps, bc); break;
        default: /* a transpose through 3-D: a reshape of a permute, no reduction */
            r = *v;
            emit(g, "let v%d = reshape(permute(v%d[:, :, None], (1, 0, 2)), (%d, %d));", id, v->id, br, bc);
            break;
        }
        add_val(g, r);
    }
    g->p->features |= DT_F_SHAPE | DT_F_REDUCE;
    return true;
}

/* sum/max/min along an axis, or of all elements; cumsum along an axis. */
static bool gen_reduce(gen *g, bool scan) {
    dt_type t = any_type(g);
    shp from = chance(g, 70) ? SH_2D : chance(g, 50) ? SH_ROW : SH_COL;
    const gval *v = pick_val(g, t, from, true, false);
    if (!v) return false;
    int id = g->next_id;
    int kind = scan ? 0 : rnd(g, 5);
    static const char *const fn[] = {"sum", "max", "min", "argmax", "argmin"};
    if (kind >= 3 && v->err > 0) return false; /* the first index of the extreme: a decision */
    int axis = rnd(g, 2);
    shp to;
    int n;
    if (scan) to = from, n = from == SH_2D ? (axis ? g->bc : g->br) : shape_len(g, from);
    else if (from == SH_2D && chance(g, 80)) to = axis ? SH_ROW : SH_COL, n = axis ? g->bc : g->br;
    else to = SH_SCALAR, n = shape_len(g, from);
    if (from != SH_2D) axis = 0;
    gval r = kind == 0 ? sum_info(v, n, widen_sum(v->ty)) : *v;
    if (kind >= 3) r = (gval){.ty = DT_I32, .mag = shape_len(g, from)};
    r.sh = to;
    if (!float_ok(&r)) return false;
    if (scan) {
        bool rev = chance(g, 30);
        emit(g, "let v%d = cumsum(v%d, axis = %d%s);", id, v->id, axis, rev ? ", reverse = true" : "");
    } else if (to == SH_SCALAR && from == SH_2D) {
        emit(g, "let v%d = %s(v%d);", id, fn[kind], v->id);
    } else {
        emit(g, "let v%d = %s(v%d, axis = %d);", id, fn[kind], v->id, axis);
    }
    add_val(g, r);
    g->p->features |= scan ? DT_F_SCAN : DT_F_REDUCE;
    return true;
}

/* ---- dot ------------------------------------------------------------------------ */
static const dt_type DOT_TYPES[] = {DT_F16, DT_BF16, DT_F32, DT_I8};

/* The analysis of dot(a, b[, acc]) over k terms; tf32: f32 inputs rounded. */
static gval dot_info(const gval *a, const gval *b, const gval *acc, int k, dt_type in, bool tf32) {
    dt_type at = in == DT_I8 ? DT_I32 : DT_F32;
    gval r = {.ty = at, .sh = SH_2D};
    if (in == DT_I8) {
        r.mag = int_clip(k * a->mag * b->mag + (acc ? acc->mag : 0), at);
        return r;
    }
    gval x = *a, y = *b;
    if (tf32) { /* rounded to 11 significant bits; equal inputs round equally */
        if (!exact_in(x.mag, x.q, 11)) x.q = -1, x.err = x.err > 0 ? x.err + ldexp(x.mag, -10) : 0;
        if (!exact_in(y.mag, y.q, 11)) y.q = -1, y.err = y.err > 0 ? y.err + ldexp(y.mag, -10) : 0;
    }
    gval prod = {.ty = at, .mag = x.mag * y.mag, .q = x.q < 0 || y.q < 0 ? -1 : x.q + y.q,
                 .err = x.err * y.mag + y.err * x.mag + x.err * y.err};
    r = sum_info(&prod, k, at);
    if (acc) {
        /* acc joins the sum anywhere in the order (the interpreter starts
         * from it: k roundings at its magnitude): k + 1 terms at the whole
         * sum's magnitude */
        gval exact = bin_info(B_ADD, &r, acc, at);
        r.mag = exact.mag, r.q = exact.q;
        if (prod.err == 0 && acc->err == 0 && exact_in(r.mag, r.q, PRECISION[at])) r.err = 0;
        else r.err = k * prod.err + acc->err + 2.0 * (k + 1) * ulp_of(r.mag, at);
    }
    r.sh = SH_2D;
    return r;
}

static bool gen_dot(gen *g) {
    if (!g->dot_ok) return false;
    dt_type in = DOT_TYPES[rnd(g, 4)];
    bool ieee = in == DT_F32 && chance(g, 40);
    opnd a, b, acc;
    operand(g, in, SH_2D, true, in == DT_I8, &a);
    if (g->square && chance(g, 60)) {
        operand(g, in, SH_2D, true, in == DT_I8, &b);
    } else { /* b: a [bc, bc] block loaded for it (rows 0..bc-1 of an input) */
        int bi = input_of(g, in), id = g->next_id++;
        emit(g, "let v%d = load(%s + arange(0, %d)[:, None] * NC + c[None, :], arange(0, %d)[:, None] < NR & c[None, :] < NC, other = 0);",
             id, g->p->bufs[bi].name, g->bc, g->bc);
        gval fb = fill_info(&g->p->bufs[bi], SH_2D);
        if (fb.mag < 1) fb.mag = 1;
        fmt(&b, "v%d", id);
        b.v = fb;
    }
    bool with_acc = chance(g, 40);
    dt_type at = in == DT_I8 ? DT_I32 : DT_F32;
    if (with_acc) operand(g, at, SH_2D, true, false, &acc);
    if (g->square && chance(g, 30)) { /* an operand transposed: another staging of it */
        opnd *x = chance(g, 50) ? &a : &b;
        char t[EXPR_MAX + 16];
        snprintf(t, sizeof t, "trans(%s)", x->s);
        fmt(x, "%s", t);
    }
    gval r = dot_info(&a.v, &b.v, with_acc ? &acc.v : NULL, g->bc, in, in == DT_F32 && !ieee);
    if (!float_ok(&r)) return false;
    emit(g, "let v%d = dot(%s, %s%s%s%s);", g->next_id, a.s, b.s, with_acc ? ", " : "", with_acc ? acc.s : "",
         ieee ? ", input_precision = \"ieee\"" : "");
    add_val(g, r);
    g->p->features |= DT_F_DOT;
    return true;
}

/* A K loop of dot over two inputs of its own: A (NR x KT) and B (KT x NC),
 * ragged along K too, with num_stages sometimes. */
static bool gen_dot_loop(gen *g) {
    if (!g->dot_ok) return false;
    dt_program *p = g->p;
    if (p->nbufs > DT_MAX_BUFS - 6) return false;
    dt_type in = DOT_TYPES[rnd(g, 4)];
    bool ieee = in == DT_F32 && chance(g, 40);
    int ia = p->nbufs++, ib = p->nbufs++;
    p->bufs[ia] = (dt_buf){.type = in, .count = (size_t)p->nr * p->kt};
    p->bufs[ib] = (dt_buf){.type = in, .count = (size_t)p->kt * p->nc};
    for (int i = ia; i <= ib; i++) {
        p->bufs[i].fill = in == DT_I8 ? DT_FILL_FULL : chance(g, 50) ? DT_FILL_EXACT : DT_FILL_ROUGH;
        snprintf(p->bufs[i].name, sizeof p->bufs[i].name, "in%d", i);
    }
    static const int kblocks[] = {16, 32, 64};
    int d = kblocks[rnd(g, 3)], id = g->next_id, kk = g->next_id + 1, u = g->next_id + 2;
    dt_type at = in == DT_I8 ? DT_I32 : DT_F32;
    g->next_id += 3;
    emit(g, "var v%d = zeros((%d, %d), %s);", id, g->br, g->bc, dt_type_names[at]);
    char stages[48] = "";
    if (chance(g, 60)) {
        snprintf(stages, sizeof stages, ", num_stages = %d", 1 + rnd(g, 4));
        p->features |= DT_F_STAGES;
    }
    /* the operands' pointers: from the loop variable, or carried and
     * advanced by the K block every trip (both are staged) */
    bool carried = chance(g, 40);
    if (carried) {
        emit(g, "var pa%d = %s + r[:, None] * KT + arange(0, %d)[None, :];", u, p->bufs[ia].name, d);
        emit(g, "var pb%d = %s + arange(0, %d)[:, None] * NC + c[None, :];", u, p->bufs[ib].name, d);
    }
    emit(g, "for v%d in range(0, KT, %d%s) {", kk, d, stages);
    emit(g, "    let ka%d = v%d + arange(0, %d);", u, kk, d);
    /* what masked-off elements read: 0, or 1, which a staged copy (zeros
     * where masked) must not lose */
    int oa = chance(g, 25), ob = chance(g, 25);
    if (carried) {
        emit(g, "    let a%d = load(pa%d, r[:, None] < NR & ka%d[None, :] < KT, other = %d);", u, u, u, oa);
        emit(g, "    let b%d = load(pb%d, ka%d[:, None] < KT & c[None, :] < NC, other = %d);", u, u, u, ob);
    } else {
        emit(g, "    let a%d = load(%s + r[:, None] * KT + ka%d[None, :], r[:, None] < NR & ka%d[None, :] < KT, other = %d);", u,
             p->bufs[ia].name, u, u, oa);
        emit(g, "    let b%d = load(%s + ka%d[:, None] * NC + c[None, :], ka%d[:, None] < KT & c[None, :] < NC, other = %d);", u,
             p->bufs[ib].name, u, u, ob);
    }
    /* an operand computed from its load (exact: a power-of-two scale, a negation) */
    int xf = rnd(g, 4);
    const char *xa = xf == 1 ? "a%d * 2" : xf == 2 ? "-a%d" : "a%d";
    char aexpr[32];
    snprintf(aexpr, sizeof aexpr, xa, u);
    if (xf == 3) { /* the accumulator scaled each trip: acc * 2 stays exact, a rounding otherwise */
        emit(g, "    v%d = dot(%s, b%d, v%d * 2%s);", id, aexpr, u, id, ieee ? ", input_precision = \"ieee\"" : "");
    } else {
        emit(g, "    v%d = dot(%s, b%d, v%d%s);", id, aexpr, u, id, ieee ? ", input_precision = \"ieee\"" : "");
    }
    if (carried) {
        emit(g, "    pa%d = pa%d + %d;", u, u, d);
        emit(g, "    pb%d = pb%d + %d * NC;", u, u, d);
    }
    emit(g, "}");
    gval fa = fill_info(&p->bufs[ia], SH_2D), fb = fill_info(&p->bufs[ib], SH_2D);
    int ktot = (p->kt + d - 1) / d * d;
    if (xf == 1) fa.mag *= 2;
    /* acc * 2 each trip: the earliest terms doubled once a trip, at most
     * 2^trips; exact as long as the bound says so */
    int trips = (p->kt + d - 1) / d;
    if (xf == 3) fa.mag *= ldexp(1.0, trips);
    gval r = dot_info(&fa, &fb, NULL, ktot, in, in == DT_F32 && !ieee);
    r.id = 0;
    r.sh = SH_2D;
    g->pool[g->npool] = r;
    g->pool[g->npool].id = id;
    g->npool++;
    p->features |= DT_F_DOT | DT_F_LOOP;
    return true;
}

/* ---- control flow ------------------------------------------------------------------ */
static bool gen_stmt(gen *g, int depth);
static void gen_store(gen *g, const gval *v);

/* Statements in a nested scope; the pool forgets their values after. */
static void gen_body(gen *g, int depth) {
    int n = 1 + rnd(g, MAX_BODY);
    for (int i = 0; i < n; i++) gen_stmt(g, depth + 1);
}

/* The combine of a carried value with a body's value, as an op. */
static bop carry_op(gen *g, dt_type t) {
    static const bop fo[] = {B_ADD, B_MAX, B_MIN};
    static const bop io[] = {B_ADD, B_XOR, B_MAX, B_MUL};
    return dt_is_float(t) ? fo[rnd(g, 3)] : io[rnd(g, 4)];
}
static void emit_combine(gen *g, int var, bop op, const char *val) {
    if (op == B_MAX || op == B_MIN) emit(g, "v%d = %s(v%d, %s);", var, op == B_MAX ? "maximum" : "minimum", var, val);
    else emit(g, "v%d = v%d %s %s;", var, var, BOP_TEXT[op], val);
}

/* for i in range(0, trips): a carried value combined with one made from
 * the trip's layer of an input. */
static bool gen_for(gen *g, int depth, bool is_while) {
    shp sh = chance(g, 70) ? SH_2D : chance(g, 50) ? SH_ROW : SH_COL;
    dt_type t = any_type(g);
    opnd init;
    operand(g, t, sh, true, false, &init);
    int var = g->next_id++, iv = g->next_id++, cnt = g->next_id++;
    emit(g, "var v%d = %s;", var, init.s);
    if (is_while) {
        emit(g, "var v%d = 0;", cnt);
        char cond[2 * EXPR_MAX + 8] = "";
        /* a data-dependent test on an exact value from before the loop */
        if (chance(g, 60)) {
            const gval *w = pick_val(g, DT_I32, SH_2D, true, true);
            if (w && sum_info(w, g->br * g->bc, widen_sum(w->ty)).err == 0) snprintf(cond, sizeof cond, " & sum(v%d) %s %d", w->id, chance(g, 50) ? "!=" : ">", rnd(g, 9) - 4);
        } else if (!dt_is_float(t) && chance(g, 70)) { /* on the carried value itself: trips vary by instance */
            snprintf(cond, sizeof cond, " & (sum(v%d) & 3) != %d", var, rnd(g, 4));
        }
        emit(g, "while v%d < T%s {", cnt, cond);
        g->p->features |= DT_F_WHILE;
    } else {
        char stages[40] = "";
        if (chance(g, 30)) snprintf(stages, sizeof stages, ", 1, num_stages = %d", 1 + rnd(g, 4)), g->p->features |= DT_F_STAGES;
        emit(g, "for v%d in range(0, T%s) {", iv, stages);
        g->p->features |= DT_F_LOOP;
    }
    g->indent++;
    int save = g->npool;
    char layer[16];
    snprintf(layer, sizeof layer, "v%d", is_while ? cnt : iv);
    leaf(g, chance(g, 50) ? t : any_type(g), sh, layer);
    gen_body(g, depth);
    opnd v;
    operand(g, t, sh, false, false, &v);
    bop op = carry_op(g, t);
    gval cur = init.v;
    cur.sh = sh;
    for (int i = 0; i < g->p->trips; i++) cur = bin_info(op, &cur, &v.v, t), cur.sh = sh;
    if (!float_ok(&cur)) { /* fall back to max, which cannot grow */
        op = B_MAX;
        cur = bin_info(B_MAX, &init.v, &v.v, t);
        cur.sh = sh;
    }
    emit_combine(g, var, op, v.s);
    if (is_while) emit(g, "v%d = v%d + 1;", cnt, cnt);
    g->npool = save;
    g->indent--;
    emit(g, "}");
    g->pool[g->npool] = cur;
    g->pool[g->npool++].id = var;
    return true;
}

/* if on a scalar condition the devices agree on; each branch may assign. */
static bool gen_if(gen *g, int depth) {
    shp sh = pick_shape(g);
    dt_type t = any_type(g);
    opnd init;
    operand(g, t, sh, true, false, &init);
    int var = g->next_id++;
    emit(g, "var v%d = %s;", var, init.s);
    char cond[2 * EXPR_MAX + 16];
    switch (rnd(g, 3)) {
    case 0: snprintf(cond, sizeof cond, "pid0 %% 2 == %d", rnd(g, 2)); break;
    case 1: snprintf(cond, sizeof cond, "k > %d", rnd(g, 8)); break;
    default: gen_cond(g, SH_SCALAR, cond, sizeof cond); break;
    }
    emit(g, "if %s {", cond);
    gval res = init.v;
    res.sh = sh;
    for (int br = 0; br < 2; br++) {
        if (br) {
            if (chance(g, 30)) break;
            emit(g, "} else {");
        }
        g->indent++;
        int save = g->npool;
        gen_body(g, depth);
        opnd v;
        operand_as(g, t, sh, false, false, true, &v); /* an assignment keeps the var's shape */
        emit(g, "v%d = %s;", var, v.s);
        if (chance(g, 25)) { /* a store under the branch: what it skips stays poisoned */
            gval sv = v.v;
            sv.sh = sh, sv.ty = t, sv.id = var;
            gen_store(g, &sv);
        }
        res = bin_info(B_MAX, &res, &v.v, t);
        res.sh = sh;
        g->npool = save;
        g->indent--;
    }
    emit(g, "}");
    g->pool[g->npool] = res;
    g->pool[g->npool++].id = var;
    g->p->features |= DT_F_IF;
    return true;
}

/* Atomics whose final memory is independent of their order: integer add,
 * max and min, float max and min, at DT_ATOMIC_SLOTS addresses picked by
 * an integer value. The values they return are dropped (order-dependent). */
static bool gen_atomic(gen *g) {
    dt_program *p = g->p;
    if (p->nbufs >= DT_MAX_BUFS) return false;
    static const dt_type at[] = {DT_I32, DT_I64, DT_F32, DT_I32};
    dt_type t = at[rnd(g, 4)];
    shp sh = chance(g, 70) ? SH_2D : chance(g, 50) ? SH_ROW : SH_COL;
    opnd idx, val, full_idx;
    operand(g, DT_I32, sh, false, true, &idx); /* so that the pool has an index */
    /* the index must have the pointers' full shape */
    const gval *src = NULL;
    for (int i = g->npool - 1; i >= 0; i--)
        if (bcast_ok(g->pool[i].sh, sh) && g->pool[i].err == 0 && cast_info(&g->pool[i], DT_I32, &full_idx.v)) {
            src = &g->pool[i];
            if (chance(g, 50)) break;
        }
    if (!src || !coerce(g, src, DT_I32, sh, true, &full_idx)) return false;
    operand(g, t, sh, false, true, &val);
    int bi = p->nbufs++;
    p->bufs[bi] = (dt_buf){.type = t, .count = DT_ATOMIC_SLOTS, .output = true, .inout = true,
                           .fill = dt_is_float(t) ? DT_FILL_EXACT : DT_FILL_SMALL};
    snprintf(p->bufs[bi].name, sizeof p->bufs[bi].name, "out%d", bi);
    const char *fn = dt_is_float(t) ? (chance(g, 50) ? "atomic_max" : "atomic_min")
                                    : (const char *[]){"atomic_add", "atomic_max", "atomic_min"}[rnd(g, 3)];
    /* a float sum is order-independent when every partial sum is exact:
     * all the launch's elements into one slot, on top of its k/8 start */
    double all = (double)p->grid[0] * p->grid[1] * shape_len(g, sh) * val.v.mag + 8;
    if (t == DT_F32 && chance(g, 50) && exact_in(all, max_q(val.v.q, 3), PRECISION[DT_F32])) fn = "atomic_add";
    const char *mask = sh == SH_2D ? "m" : sh == SH_ROW ? "r < NR" : "c < NC";
    emit(g, "%s(%s + (%s & %d), %s, mask = %s);", fn, p->bufs[bi].name, full_idx.s, DT_ATOMIC_SLOTS - 1, val.s, mask);
    p->features |= DT_F_ATOMIC;
    return true;
}

static bool gen_stmt(gen *g, int depth) {
    unsigned a = g->allow;
    for (int tries = 0; tries < MAX_TRIES; tries++) {
        int x = rnd(g, 100);
        bool ok = false;
        if (x < 30) ok = gen_binary(g);
        else if (x < 40) ok = gen_unary(g);
        else if (x < 45) ok = gen_where(g);
        else if (x < 48) ok = gen_fma(g);
        else if (x < 53) ok = (a & DT_F_CAST) && gen_cast(g);
        else if (x < 58) ok = (a & DT_F_BCAST) && gen_outer(g);
        else if (x < 62) ok = (a & DT_F_SHAPE) && gen_shape(g);
        else if (x < 64) ok = (a & DT_F_SHAPE) && gen_3d(g);
        else if (x < 72) ok = (a & DT_F_REDUCE) && gen_reduce(g, false);
        else if (x < 76) ok = (a & DT_F_SCAN) && gen_reduce(g, true);
        else if (x < 82) ok = (a & DT_F_DOT) && gen_dot(g);
        else if (x >= 92 && x < 95 && depth < 2) ok = (a & DT_F_IF) && gen_if(g, depth); /* ifs nest in bodies */
        else if (x >= 95) ok = (a & DT_F_ATOMIC) && gen_atomic(g); /* atomics in bodies too */
        else if (depth > 0) continue; /* loops at the top level only */
        else if (x < 85) ok = (a & DT_F_DOT) && gen_dot_loop(g);
        else if (x < 89) ok = (a & DT_F_LOOP) && gen_for(g, depth, false);
        else if (x < 92) ok = (a & DT_F_WHILE) && gen_for(g, depth, true);
        if (ok) return true;
        if (g->npool >= MAX_POOL - 8) return false;
    }
    return false;
}

/* ---- outputs --------------------------------------------------------------------- */
/* Stores the value v (the last of its shape, usually) to a new output of
 * its type or another one it converts to. */
static void gen_store(gen *g, const gval *v) {
    dt_program *p = g->p;
    if (p->nbufs >= DT_MAX_BUFS) return;
    dt_type t = v->ty;
    gval r;
    if (chance(g, 20)) { /* store converts to the pointee type */
        dt_type u = any_type(g);
        if (cast_info(v, u, &r) && float_ok(&r)) t = u;
    }
    cast_info(v, t, &r);
    int bi = p->nbufs++;
    dt_buf *b = &p->bufs[bi];
    size_t g0 = p->grid[0], g1 = p->grid[1];
    *b = (dt_buf){.type = t, .output = true, .tol = r.err};
    if (r.err > 0) b->tol += ulp_of(r.mag, t) + 1e-30;
    snprintf(b->name, sizeof b->name, "out%d", bi);
    switch (v->sh) {
    case SH_2D: {
        /* row- or column-major (a transposed store), masks regular or not;
         * what a mask skips stays poisoned on both devices */
        static const char *const addr[] = {"off", "off", "c[None, :] * NR + r[:, None]"};
        static const char *const mask[] = {"m", "m", "m & (r[:, None] + c[None, :]) % 3 != 0", "m & c[None, :] != 1"};
        b->count = (size_t)p->nr * p->nc;
        emit(g, "store(%s + %s, v%d, %s);", b->name, addr[rnd(g, 3)], v->id, mask[rnd(g, 4)]);
        break;
    }
    case SH_ROW: /* one row vector per column block */
        b->count = (size_t)p->nr * g1;
        emit(g, "store(%s + pid1 * NR + r, v%d, r < NR);", b->name, v->id);
        break;
    case SH_COL:
        b->count = (size_t)p->nc * g0;
        emit(g, "store(%s + pid0 * NC + c, v%d, c < NC);", b->name, v->id);
        break;
    case SH_SCALAR:
        b->count = g0 * g1;
        emit(g, "store(%s + pid0 * %d + pid1, v%d);", b->name, (int)g1, v->id);
        break;
    }
}

void dt_generate(uint64_t seed, uint64_t iter, dt_program *p) {
    gen *g = calloc(1, sizeof *g);
    if (!g) abort();
    g->rng = seed * 0x9e3779b97f4a7c15ull ^ (iter + 1) * 0xd1b54a32d192ed03ull;
    next(&g->rng);
    *p = (dt_program){0};
    g->p = p;
    /* a feature set grows with the iteration's luck: about a third of the
     * programs are elementwise only, the rest draw each feature */
    g->allow = DT_F_ELEM;
    if (!chance(g, 25)) {
        g->allow |= DT_F_CAST | DT_F_BCAST | DT_F_SHAPE;
        unsigned more[] = {DT_F_REDUCE, DT_F_SCAN, DT_F_DOT, DT_F_LOOP, DT_F_WHILE, DT_F_IF, DT_F_ATOMIC};
        for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
            if (chance(g, 55)) g->allow |= more[i];
    }
    static const int dims[] = {1, 2, 4, 8, 16, 32, 64};
    if ((g->allow & DT_F_DOT) && chance(g, 85)) {
        g->br = dims[4 + rnd(g, 3)];
        g->bc = chance(g, 40) ? g->br : dims[4 + rnd(g, 3)];
    } else { /* mostly 4 to 64, sometimes a sliver */
        g->br = chance(g, 15) ? dims[rnd(g, 2)] : dims[2 + rnd(g, 5)];
        g->bc = chance(g, 15) ? dims[rnd(g, 2)] : dims[2 + rnd(g, 5)];
        if (g->br * g->bc < 2) g->bc = 2;
    }
    g->square = g->br == g->bc;
    g->dot_ok = g->br >= 16 && g->bc >= 16;
    static const int warps[] = {1, 2, 4, 8};
    p->num_warps = warps[rnd(g, 4)];
    p->grid[0] = 1 + (uint32_t)rnd(g, 3);
    p->grid[1] = 1 + (uint32_t)rnd(g, 2);
    /* ragged: the last block of each axis partly outside the matrix */
    p->nr = (int32_t)(p->grid[0] - 1) * g->br + 1 + rnd(g, g->br);
    p->nc = (int32_t)(p->grid[1] - 1) * g->bc + 1 + rnd(g, g->bc);
    p->kt = g->bc * (1 + rnd(g, 3)) - (chance(g, 50) ? rnd(g, g->bc) : 0);
    p->trips = 1 + rnd(g, MAX_TRIPS);
    p->k = rnd(g, 8);
    p->s = (float)(rnd(g, 33) - 16) / 4.0f; /* a multiple of 1/4, |s| <= 4 */
    if (p->s == 0) p->s = 1.25f;

    g->indent = 1;
    emit(g, "let pid0 = program_id(0);");
    emit(g, "let pid1 = program_id(1);");
    emit(g, "let r = pid0 * %d + arange(0, %d);", g->br, g->br);
    emit(g, "let c = pid1 * %d + arange(0, %d);", g->bc, g->bc);
    emit(g, "let off = r[:, None] * NC + c[None, :];");
    emit(g, "let m = r[:, None] < NR & c[None, :] < NC;");
    emit(g, "let lay = NR * NC;");
    leaf(g, any_type(g), SH_2D, NULL);
    int n = 2 + rnd(g, MAX_STMTS);
    for (int i = 0; i < n; i++) gen_stmt(g, 0);
    /* the outputs: the last value of each shape, and sometimes another */
    for (int i = g->npool - 1; i >= 0 && p->nbufs < DT_MAX_BUFS; i--) {
        const gval *v = &g->pool[i];
        bool last_of_shape = true;
        for (int j = i + 1; j < g->npool; j++)
            if (g->pool[j].sh == v->sh) last_of_shape = false;
        if (last_of_shape || chance(g, 15)) {
            gen_store(g, v);
        }
    }

    /* the kernel: pointers in buffer order, then the scalars */
    char head[4096];
    size_t hn = (size_t)snprintf(head, sizeof head, "kernel dt(");
    for (int i = 0; i < p->nbufs; i++)
        hn += (size_t)snprintf(head + hn, sizeof head - hn, "%s: *%s, ", p->bufs[i].name, dt_type_names[p->bufs[i].type]);
    snprintf(head + hn, sizeof head - hn, "NR: i32, NC: i32, KT: i32, T: i32, k: i32, s: f32) {\n");
    /* drawn last, so the programs of a seed are what they were before it;
     * sm_90a's dots run on wgmma (lower/cg_dot_wgmma.c), sm_90's on mma.sync */
    p->arch = chance(g, 40) ? (chance(g, 50) ? "sm_90a" : "sm_90") : "sm_80";
    size_t total = strlen(head) + g->out.n + 4;
    p->src = malloc(total);
    if (!p->src) abort();
    snprintf(p->src, total, "%s%s}\n", head, g->out.d ? g->out.d : "");
    free(g->out.d);
    free(g);
}

void dt_program_free(dt_program *p) {
    free(p->src);
    p->src = NULL;
}
