/* axisinfo.c - what is known about the integers (and pointers) in a tile.
 *
 * For each value, along its last dim: `contiguity`, the length of runs of
 * consecutive elements that increase by one; `constancy`, the length of
 * runs of equal elements; `divisibility`, a power of two dividing the first
 * element of each run (in bytes for pointers). Runs start at multiples of
 * their length. Codegen turns a thread's elements into one vector access
 * when the pointers are contiguous and aligned across it (Triton calls
 * this AxisInfo). One forward walk in program order: every operand is
 * analyzed before its users. Unknown values get (1, 1, 1).
 *
 * Divisibility is a fact about run starts only: with contiguity C > 1 it
 * holds for the elements at multiples of C, and otherwise for every element.
 * So when an op's result has shorter runs than a contiguous operand (or
 * none), that operand contributes only gcd(divisibility, new run length):
 * arange(0, 8) is divisible by 2^30 at element 0 but by 1 at element 1.
 * Integer arithmetic is assumed not to wrap inside a run (as Triton does):
 * index arithmetic that overflows i32 is out of bounds anyway.
 *
 * A value carried around a loop is unknown, except a carried induction
 * value (lower_carried_step: `p = p + d` each trip, d invariant): on trip t
 * it is init + t*d, which has the facts of `init + x` for an x with d's
 * constancy and divisibility (t*d is no longer contiguous). d is usually
 * computed in the body, after the loop's arguments are analyzed, so the
 * walk runs twice: the second takes d's facts from the first. Facts from
 * the first walk are sound (a step not yet analyzed counts as unknown),
 * only weaker where they depend on carried values, so the second walk's,
 * which replace them, are sound too. */
#include "lower/lower.h"

enum { AXIS_MAX_DIVISIBILITY = 1 << 30 }; /* what "divisible by anything" becomes (0) */

struct lower_axis_map {
    lower_axis_info *info; /* by value id */
    uint32_t n;
};

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a < 0 ? -a : a;
}

static int64_t pow2_divisor(int64_t v) {
    if (v == 0) return AXIS_MAX_DIVISIBILITY;
    uint64_t u = (uint64_t)v, d = u & (~u + 1); /* the lowest set bit; unsigned, as INT64_MIN has no negation */
    return d > AXIS_MAX_DIVISIBILITY ? AXIS_MAX_DIVISIBILITY : (int64_t)d;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* The facts are about the last dim, the one that is contiguous in memory
 * in row-major tiles; for rank 1 the only one. */
static int64_t length(const tir_value *v) { return v->type.rank ? (int64_t)v->type.shape[v->type.rank - 1] : 1; }

/* What divides x's elements at multiples of `run` (a power of two), given
 * that x's facts hold at multiples of its own contiguity. `unit` is the step
 * between consecutive elements of a contiguous run (bytes for pointers). */
static int64_t div_at(lower_axis_info x, int64_t run, int64_t unit) {
    if (x.contiguity <= 1 || run >= x.contiguity) return x.divisibility;
    return gcd64(x.divisibility, run * unit);
}

/* What is known of a value nothing is known of: always safe. */
static const lower_axis_info unknown = {.contiguity = 1, .constancy = 1, .divisibility = 1};

lower_axis_info lower_axis_get(const lower_axis_map *map, const tir_value *v) {
    if (v->id < map->n && map->info[v->id].divisibility) return map->info[v->id];
    return unknown;
}

static void set(lower_axis_map *map, const tir_value *v, lower_axis_info i) {
    int64_t n = length(v);
    i.contiguity = max64(1, min64(i.contiguity, n));
    i.constancy = max64(1, min64(i.constancy, n));
    i.divisibility = max64(1, min64(i.divisibility, AXIS_MAX_DIVISIBILITY));
    if (v->id < map->n) map->info[v->id] = i;
}

/* add, sub, addptr of a and b (`op` gives the kind and the pointee). */
static lower_axis_info sum_facts(const tir_op *op, lower_axis_info a, lower_axis_info b) {
    lower_axis_info out;
    int64_t scale = 1; /* offsets count elements; pointer facts count bytes */
    if (op->code == TIR_OP_ADDPTR) scale = (tir_elem_bits(tir_type_pointee(op->operands[0]->type)) + 7) / 8;
    /* a run stays contiguous when the other side is constant across it */
    out.contiguity = max64(min64(a.contiguity, b.constancy), op->code == TIR_OP_SUB ? 1 : min64(b.contiguity, a.constancy));
    out.constancy = gcd64(a.constancy, b.constancy);
    int64_t run = max64(out.contiguity, 1);
    out.divisibility = gcd64(div_at(a, run, scale), div_at(b, run, 1) * scale);
    return out;
}

/* The loop's carried induction values: init + t*d on trip t. */
static void carried_facts(lower_axis_map *map, const tir_op *loop) {
    for (uint32_t i = 1; i < loop->body->nargs; i++) {
        const tir_value *d = lower_carried_step(loop, i);
        if (!d) continue;
        const tir_value *init = loop->operands[2 + i];
        const tir_op *next = loop->body->last->operands[i - 1]->def;
        lower_axis_info di = lower_axis_get(map, d);
        /* t*d, for any t */
        lower_axis_info td = {.contiguity = 1, .constancy = di.constancy, .divisibility = div_at(di, 1, 1)};
        set(map, loop->body->args[i], sum_facts(next, lower_axis_get(map, init), td));
    }
}

enum { AXIS_NONNEG_DEPTH = 16 }; /* how far back nonneg looks: index arithmetic is a few ops deep */

/* Whether every element of v is >= 0, by how it is made: program ids,
 * aranges from 0 up, constants >= 0, and sums, products, quotients and
 * remainders (C's: the sign of the dividend) of such, through shape ops
 * and widening casts. As elsewhere here, index arithmetic is assumed not
 * to wrap. False when unsure. */
static bool nonneg(const tir_value *v, int depth) {
    const tir_op *op = v->def;
    if (!op || depth > AXIS_NONNEG_DEPTH || !tir_elem_is_int(tir_type_elem(v->type))) return false;
    switch (op->code) {
    case TIR_OP_PROGRAM_ID: case TIR_OP_NUM_PROGRAMS: return true;
    case TIR_OP_CONST: return op->attr.ival >= 0;
    case TIR_OP_ARANGE: return op->attr.range.lo >= 0;
    case TIR_OP_ADD: case TIR_OP_MUL: case TIR_OP_DIV:
        return nonneg(op->operands[0], depth + 1) && nonneg(op->operands[1], depth + 1);
    case TIR_OP_REM: return nonneg(op->operands[0], depth + 1);
    case TIR_OP_CAST:
        return tir_elem_is_int(tir_type_elem(op->operands[0]->type)) && tir_type_elem(op->operands[0]->type) != TIR_I1 &&
               tir_elem_bits(tir_type_elem(v->type)) >= tir_elem_bits(tir_type_elem(op->operands[0]->type)) &&
               nonneg(op->operands[0], depth + 1);
    case TIR_OP_SPLAT: case TIR_OP_BROADCAST: case TIR_OP_EXPAND_DIMS: case TIR_OP_RESHAPE: case TIR_OP_PERMUTE:
    case TIR_OP_CONVERT_LAYOUT: case TIR_OP_MULTIPLE_OF:
        return nonneg(op->operands[0], depth + 1);
    default: return false;
    }
}

static void analyze(tir_op *op, void *p) {
    lower_axis_map *map = p;
    if (op->code == TIR_OP_FOR) {
        /* iv = lo + k * step: divisible by what divides both; other values
         * carried around the loop stay unknown (1, 1, 1), which is always
         * safe, except carried induction values */
        lower_axis_info lo = lower_axis_get(map, op->operands[0]), st = lower_axis_get(map, op->operands[2]);
        set(map, op->body->args[0],
            (lower_axis_info){.contiguity = 1, .constancy = 1, .divisibility = gcd64(lo.divisibility, st.divisibility)});
        carried_facts(map, op);
        return;
    }
    if (op->nresults != 1) return;
    const tir_value *r = op->results[0];
    int64_t n = length(r);
    lower_axis_info a = unknown, b = unknown, out = unknown;
    if (op->noperands > 0) a = lower_axis_get(map, op->operands[0]);
    if (op->noperands > 1) b = lower_axis_get(map, op->operands[1]);
    switch (op->code) {
    case TIR_OP_CONST:
        out = (lower_axis_info){.contiguity = 1, .constancy = n,
                                .divisibility = tir_elem_is_int(tir_type_elem(r->type)) ? pow2_divisor(op->attr.ival) : 1};
        break;
    case TIR_OP_ARANGE:
        out = (lower_axis_info){.contiguity = n, .constancy = 1, .divisibility = pow2_divisor(op->attr.range.lo)};
        break;
    case TIR_OP_SPLAT: out = (lower_axis_info){.contiguity = 1, .constancy = n, .divisibility = a.divisibility}; break;
    case TIR_OP_MULTIPLE_OF: /* the promise, except of a constant (a `var` the front end could not check),
                                whose own divisor is the truth */
        out = (lower_axis_info){.contiguity = 1, .constancy = 1,
                                .divisibility = op->operands[0]->def && op->operands[0]->def->code == TIR_OP_CONST
                                                    ? a.divisibility : max64(a.divisibility, op->attr.axis)};
        break;
    case TIR_OP_PROGRAM_ID:
    case TIR_OP_NUM_PROGRAMS: out = unknown; break;
    case TIR_OP_ADD:
    case TIR_OP_SUB:
    case TIR_OP_ADDPTR: out = sum_facts(op, a, b); break;
    case TIR_OP_MUL: /* no runs survive (x * 1 is folded away by simplify) */
        out.constancy = gcd64(a.constancy, b.constancy);
        out.divisibility = min64(div_at(a, 1, 1) * div_at(b, 1, 1), AXIS_MAX_DIVISIBILITY);
        break;
    case TIR_OP_REM:
        /* x % m, m the same across the run and divisible by d, x >= 0: a
         * run of x cut into blocks of g = gcd(contiguity, div(start), d)
         * elements starting at multiples of g never crosses a multiple of
         * m inside a block, so each block stays consecutive (Triton's
         * `(pid * BN + arange(0, BN)) % N` with N a multiple of 16). A
         * negative x wraps differently (C's remainder keeps its sign:
         * -32 % 16 is 0, -31 % 16 is -15), hence nonneg. */
        out.constancy = gcd64(a.constancy, b.constancy);
        /* every element: each side's divisor at every element, not only at
         * its runs' starts (a contiguous divisor's holds at those only) */
        out.divisibility = gcd64(div_at(a, 1, 1), div_at(b, 1, 1));
        if (b.constancy >= n && a.contiguity > 1 && nonneg(op->operands[0], 0)) {
            int64_t g = gcd64(gcd64(a.contiguity, a.divisibility), b.divisibility);
            if (g > 1) {
                out.contiguity = g;
                out.divisibility = gcd64(div_at(a, g, 1), b.divisibility);
            }
        }
        break;
    case TIR_OP_EQ: case TIR_OP_NE: case TIR_OP_LT: case TIR_OP_LE: case TIR_OP_GT: case TIR_OP_GE: {
        /* constant compared with constant stays constant. A contiguous run
         * s, s+1, ... compared with a constant c splits into blocks of g
         * elements whose values start at multiples of g; when g also
         * divides c, c can only fall on a block's first value, so a test
         * that changes between c - 1 and c (x < c, x >= c) compares each
         * block one way: g = gcd(contiguity, div(s), div(c)). One that
         * changes between c and c + 1 (x <= c, x > c) or only at c (==,
         * !=) splits the block holding c after its first element. */
        tir_opcode k = op->code;
        bool a_run_splits_at_edge = k == TIR_OP_LT || k == TIR_OP_GE; /* run OP c */
        bool b_run_splits_at_edge = k == TIR_OP_GT || k == TIR_OP_LE; /* c OP run */
        out.constancy = gcd64(a.constancy, b.constancy);
        if (a_run_splits_at_edge && b.constancy >= n && a.contiguity > 1)
            out.constancy = max64(out.constancy, gcd64(gcd64(a.contiguity, a.divisibility), b.divisibility));
        if (b_run_splits_at_edge && a.constancy >= n && b.contiguity > 1)
            out.constancy = max64(out.constancy, gcd64(gcd64(b.contiguity, b.divisibility), a.divisibility));
        break;
    }
    case TIR_OP_AND:
    case TIR_OP_OR:
    case TIR_OP_XOR:
    case TIR_OP_SELECT:
        out.constancy = gcd64(a.constancy, b.constancy);
        if (op->code == TIR_OP_SELECT) out.constancy = gcd64(out.constancy, lower_axis_get(map, op->operands[2]).constancy);
        break;
    case TIR_OP_CAST: {
        /* sign-extending an integer keeps its values, so keeps every fact */
        tir_elem from = tir_type_elem(op->operands[0]->type), to = tir_type_elem(r->type);
        if (tir_elem_is_int(from) && from != TIR_I1 && tir_elem_is_int(to) && tir_elem_bits(to) >= tir_elem_bits(from)) {
            out = a;
            break;
        }
        out.constancy = a.constancy;
        break;
    }
    case TIR_OP_EXPAND_DIMS:
    case TIR_OP_BROADCAST:
    case TIR_OP_RESHAPE:
    case TIR_OP_PERMUTE: {
        /* shape ops keep the facts when the last dim keeps its elements in
         * order; where the last dim is new (a dim of size 1 added, or a
         * size-1 last dim repeated, or another dim moved there), its
         * elements are unrelated except by divisibility */
        const tir_value *x = op->operands[0];
        unsigned rr = r->type.rank, xr = x->type.rank;
        int64_t unit = r->type.elem == TIR_PTR ? (tir_elem_bits(tir_type_pointee(r->type)) + 7) / 8 : 1;
        lower_axis_info loose = {.contiguity = 1, .constancy = 1, .divisibility = div_at(a, 1, unit)};
        if (op->code == TIR_OP_EXPAND_DIMS) out = (unsigned)op->attr.axis == rr - 1 ? loose : a;
        else if (op->code == TIR_OP_BROADCAST)
            out = x->type.shape[xr - 1] == 1 && n > 1
                      ? (lower_axis_info){.contiguity = 1, .constancy = n, .divisibility = a.divisibility}
                      : a;
        else if (op->code == TIR_OP_PERMUTE) out = op->attr.perm[rr - 1] == rr - 1 ? a : loose;
        else { /* reshape: row-major order is kept; runs can only get shorter */
            out.contiguity = min64(a.contiguity, n);
            out.constancy = min64(a.constancy, n);
            out.divisibility = div_at(a, out.contiguity, unit);
        }
        break;
    }
    case TIR_OP_NEG:
    case TIR_OP_NOT:
    case TIR_OP_CONVERT_LAYOUT:
        out.constancy = a.constancy;
        if (op->code == TIR_OP_CONVERT_LAYOUT) out = a;
        break;
    default: break;
    }
    set(map, r, out);
}

lower_axis_map *lower_axis_analyze(tir_func *f, tc_arena *arena) {
    lower_axis_map *map = TC_NEW(arena, lower_axis_map);
    map->n = f->next_value_id;
    map->info = TC_NEW_ARRAY(arena, lower_axis_info, map->n + 1);
    for (uint32_t i = 0; i < f->nparams; i++) {
        const tir_value *p = f->params[i];
        lower_axis_info info = {.contiguity = 1, .constancy = 1,
                                .divisibility = p->type.elem == TIR_PTR ? LOWER_ASSUMED_PTR_ALIGN : 1};
        set(map, p, info);
    }
    tir_walk(f, analyze, map);
    tir_walk(f, analyze, map); /* carried induction values with their steps' facts */
    return map;
}

enum { AXIS_MAX_INVARIANT_DEPTH = 64 }; /* longer chains count as varying, which is always safe */

static bool invariant_at(const tir_block *body, const tir_value *v, int depth) {
    if (depth > AXIS_MAX_INVARIANT_DEPTH) return false;
    if (!v->def) return v->block != body; /* the body's arguments vary */
    if (v->def->parent != body) return true; /* defined before the loop */
    const tir_op *op = v->def;
    if (!(tir_ops[op->code].flags & TIR_F_PURE) || op->body || op->code == TIR_OP_LOCAL_ALLOC) return false;
    for (uint32_t i = 0; i < op->noperands; i++)
        if (!invariant_at(body, op->operands[i], depth + 1)) return false;
    return true;
}

bool lower_loop_invariant(const tir_block *body, const tir_value *v) { return invariant_at(body, v, 0); }

tir_value *lower_carried_step(const tir_op *loop, uint32_t arg) {
    const tir_block *body = loop->body;
    if (loop->code != TIR_OP_FOR || arg == 0 || arg >= body->nargs || !body->last ||
        body->last->code != TIR_OP_YIELD || body->last->noperands != body->nargs - 1)
        return NULL;
    const tir_value *v = body->args[arg];
    const tir_op *next = body->last->operands[arg - 1]->def;
    if (!next || next->parent != body || next->noperands != 2) return NULL;
    /* float additions round: k of them are not one add of k*d */
    if (next->code != TIR_OP_ADDPTR && !(next->code == TIR_OP_ADD && tir_elem_is_int(tir_type_elem(v->type))))
        return NULL;
    tir_value *d = next->operands[0] == v ? next->operands[1]
                   : next->code == TIR_OP_ADD && next->operands[1] == v ? next->operands[0]
                                                                         : NULL;
    return d && lower_loop_invariant(body, d) ? d : NULL;
}

typedef struct loop_list {
    tir_op **loop;
    uint32_t n;
    bool whiles;
} loop_list;

static void find_loops(tir_op *op, void *p) {
    loop_list *l = p;
    if ((op->code == TIR_OP_FOR || (l->whiles && op->code == TIR_OP_WHILE)) && l->n < LOWER_MAX_PIPELINED_LOOPS)
        l->loop[l->n++] = op;
}

tir_op **lower_loops(tir_func *f, bool whiles, tc_arena *a, uint32_t *n) {
    loop_list l = {.loop = TC_NEW_ARRAY(a, tir_op *, LOWER_MAX_PIPELINED_LOOPS), .whiles = whiles};
    tir_walk(f, find_loops, &l);
    *n = l.n;
    return l.loop;
}
