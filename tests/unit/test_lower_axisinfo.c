/* Unit tests for lower/axisinfo.c: a few exact expectations, and a
 * soundness check that evaluates small kernels on concrete inputs and
 * verifies every claim the analysis makes:
 *   contiguity C: each aligned run of C elements steps by one element
 *                 (by the pointee's size in bytes for pointers);
 *   constancy K:  each aligned run of K elements is one value;
 *   divisibility D: holds at every element when C == 1, else at the first
 *                 element of each run of C. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"

enum { EVAL_MAX_ELEMS = 4096, EVAL_TRIALS = 64 };

typedef struct fx {
    tc_arena *arena;
    tc_diag diag;
    tc_source src;
    tir_module *m;
} fx;

static tir_func *parse(fx *f, const char *text) {
    f->arena = tc_arena_new();
    tc_diag_init(&f->diag);
    f->src = (tc_source){.name = "t.tir", .text = text, .len = strlen(text)};
    f->m = tir_parse(f->arena, &f->src, &f->diag);
    if (!f->m) fail_msg("%s", f->diag.out.data ? f->diag.out.data : "parse failed");
    return f->m->funcs;
}

static void done(fx *f) {
    tc_arena_free(f->arena);
    tc_diag_free(&f->diag);
}

static tir_value *named(tir_func *fn, const char *name) {
    for (tir_op *op = fn->body->first; op; op = op->next)
        for (uint32_t i = 0; i < op->nresults; i++)
            if (op->results[i]->name && !strcmp(op->results[i]->name, name)) return op->results[i];
    fail_msg("no value %%%s", name);
    return NULL;
}

/* ---- a tiny evaluator of integer and pointer tiles ----------------------- */
typedef struct eval {
    int64_t **vals; /* by value id: numel values (pointers as byte addresses) */
    uint64_t rng;
} eval;

static uint64_t next_rand(eval *e) {
    e->rng ^= e->rng << 13;
    e->rng ^= e->rng >> 7;
    e->rng ^= e->rng << 17;
    return e->rng;
}

/* Parameter values that exercise alignment: often multiples of large powers
 * of two, sometimes odd, sometimes negative. */
static int64_t random_int(eval *e) {
    int64_t v = (int64_t)(next_rand(e) % 5000) - 1000;
    return v * ((int64_t)1 << (next_rand(e) % 12));
}

static int64_t elem_bytes(tir_type t) { return (tir_elem_bits(tir_type_pointee(t)) + 7) / 8; }

static int64_t cmp(tir_opcode code, int64_t a, int64_t b) {
    switch (code) {
    case TIR_OP_EQ: return a == b;
    case TIR_OP_NE: return a != b;
    case TIR_OP_LT: return a < b;
    case TIR_OP_LE: return a <= b;
    case TIR_OP_GT: return a > b;
    default: return a >= b;
    }
}

static void eval_func(eval *e, tir_func *fn, int64_t pid) {
    for (uint32_t i = 0; i < fn->nparams; i++) {
        tir_value *p = fn->params[i];
        e->vals[p->id] = malloc(sizeof(int64_t));
        e->vals[p->id][0] = p->type.elem == TIR_PTR ? (int64_t)(next_rand(e) % 100000) * LOWER_ASSUMED_PTR_ALIGN
                                                    : tir_wrap_int(random_int(e), tir_type_elem(p->type));
    }
    for (tir_op *op = fn->body->first; op; op = op->next) {
        if (op->nresults != 1 || tir_elem_is_float(tir_type_elem(op->results[0]->type))) continue; /* loads */
        tir_value *r = op->results[0];
        uint64_t n = tir_type_numel(r->type);
        assert_true(n <= EVAL_MAX_ELEMS);
        int64_t *out = malloc(sizeof(int64_t) * n);
        e->vals[r->id] = out;
        int64_t *a = op->noperands > 0 ? e->vals[op->operands[0]->id] : NULL;
        int64_t *b = op->noperands > 1 ? e->vals[op->operands[1]->id] : NULL;
        uint64_t na = op->noperands > 0 ? tir_type_numel(op->operands[0]->type) : 0;
        tir_elem el = tir_type_elem(r->type);
        for (uint64_t i = 0; i < n; i++) {
            int64_t x = a ? a[na == 1 ? 0 : i] : 0, y = b ? b[i % tir_type_numel(op->operands[1]->type)] : 0, v;
            switch (op->code) {
            case TIR_OP_CONST: v = op->attr.ival; break;
            case TIR_OP_PROGRAM_ID: v = pid; break;
            case TIR_OP_ARANGE: v = op->attr.range.lo + (int64_t)i; break;
            case TIR_OP_SPLAT: v = x; break;
            case TIR_OP_ADD: v = (int64_t)((uint64_t)x + (uint64_t)y); break;
            case TIR_OP_SUB: v = (int64_t)((uint64_t)x - (uint64_t)y); break;
            case TIR_OP_MUL: v = (int64_t)((uint64_t)x * (uint64_t)y); break;
            case TIR_OP_AND: v = x & y; break;
            case TIR_OP_OR: v = x | y; break;
            case TIR_OP_XOR: v = x ^ y; break;
            case TIR_OP_CAST: v = x; break; /* widening integer casts only */
            case TIR_OP_MULTIPLE_OF: v = x - x % op->attr.axis; break; /* a program that keeps the promise */
            case TIR_OP_SELECT: v = x ? y : e->vals[op->operands[2]->id][i]; break;
            case TIR_OP_ADDPTR: v = x + y * elem_bytes(op->operands[0]->type); break;
            case TIR_OP_EQ: case TIR_OP_NE: case TIR_OP_LT: case TIR_OP_LE: case TIR_OP_GT: case TIR_OP_GE:
                v = cmp(op->code, x, y);
                break;
            default: fail_msg("the evaluator does not know %s", tir_ops[op->code].name); return;
            }
            out[i] = el == TIR_PTR ? v : tir_wrap_int(v, el);
        }
    }
}

static void check_value(eval *e, const lower_axis_map *map, const tir_value *v) {
    lower_axis_info ai = lower_axis_get(map, v);
    int64_t n = (int64_t)tir_type_numel(v->type);
    int64_t *x = e->vals[v->id];
    int64_t step = v->type.elem == TIR_PTR ? elem_bytes(v->type) : 1;
    const char *name = v->name ? v->name : "?";
    assert_true(ai.contiguity >= 1 && ai.constancy >= 1 && ai.divisibility >= 1);
    for (int64_t i = 0; i < n; i++) {
        if (i % ai.contiguity && x[i] != x[i - 1] + step)
            fail_msg("%%%s: contiguity %lld is wrong at element %lld", name, (long long)ai.contiguity, (long long)i);
        if (i % ai.constancy && x[i] != x[i - 1])
            fail_msg("%%%s: constancy %lld is wrong at element %lld", name, (long long)ai.constancy, (long long)i);
        bool run_start = ai.contiguity == 1 || i % ai.contiguity == 0;
        if (run_start && x[i] % ai.divisibility)
            fail_msg("%%%s: divisibility %lld is wrong at element %lld (value %lld)", name,
                     (long long)ai.divisibility, (long long)i, (long long)x[i]);
    }
}

/* Evaluates fn on random inputs and checks every claim about every value. */
static void check_sound(const char *text) {
    fx f;
    tir_func *fn = parse(&f, text);
    lower_axis_map *map = lower_axis_analyze(fn, f.arena);
    eval e = {calloc(fn->next_value_id + 1, sizeof(int64_t *)), 0x9e3779b97f4a7c15ull};
    for (int t = 0; t < EVAL_TRIALS; t++) {
        eval_func(&e, fn, t % 2 ? t : (int64_t)(next_rand(&e) % 1000));
        for (uint32_t i = 0; i < fn->nparams; i++) check_value(&e, map, fn->params[i]);
        for (tir_op *op = fn->body->first; op; op = op->next)
            if (op->nresults == 1 && e.vals[op->results[0]->id]) check_value(&e, map, op->results[0]);
        for (uint32_t i = 0; i <= fn->next_value_id; i++) {
            free(e.vals[i]);
            e.vals[i] = NULL;
        }
    }
    free(e.vals);
    done(&f);
}

/* ---- expectations ---------------------------------------------------------- */
static const char vadd_tir[] =
    "kernel @vadd(%x: ptr<f32>, %n: i32) {\n"
    "  %pid = program_id 0 : i32\n"
    "  %c = const 1024 : i32\n"
    "  %base = mul %pid, %c : i32\n"
    "  %r = arange 0, 1024 : tile<1024xi32>\n"
    "  %b = splat %base : tile<1024xi32>\n"
    "  %offs = add %b, %r : tile<1024xi32>\n"
    "  %nn = splat %n : tile<1024xi32>\n"
    "  %mask = lt %offs, %nn : tile<1024xi1>\n"
    "  %xs = splat %x : tile<1024xptr<f32>>\n"
    "  %xp = addptr %xs, %offs : tile<1024xptr<f32>>\n"
    "  %v = load %xp, %mask : tile<1024xf32>\n"
    "  store %xp, %v, %mask\n"
    "  return\n"
    "}\n";

static void test_vadd_pointer(void **state) {
    (void)state;
    fx f;
    tir_func *fn = parse(&f, vadd_tir);
    lower_axis_map *map = lower_axis_analyze(fn, f.arena);
    lower_axis_info xp = lower_axis_get(map, named(fn, "xp"));
    assert_int_equal(xp.contiguity, 1024);
    assert_int_equal(xp.divisibility, LOWER_ASSUMED_PTR_ALIGN);
    assert_int_equal(lower_axis_get(map, named(fn, "base")).divisibility, 1024);
    assert_int_equal(lower_axis_get(map, named(fn, "mask")).constancy, 1);
    assert_int_equal(lower_axis_get(map, fn->params[1]).divisibility, 1); /* int params: nothing known */
    done(&f);
    check_sound(vadd_tir);
}

/* A row of f16 at row * stride, masked by cols < n, with n and stride
 * promised multiples of 8 and 16 (multiple_of): the row start is 16-byte
 * aligned, and the mask one value over each run of 8. */
static const char promised_tir[] =
    "kernel @rows(%x: ptr<f16>, %n: i32, %stride: i64) {\n"
    "  %m = multiple_of 8, %n : i32\n"
    "  %s = multiple_of 16, %stride : i64\n"
    "  %pid = program_id 0 : i32\n"
    "  %row = cast %pid : i64\n"
    "  %off = mul %row, %s : i64\n"
    "  %base = addptr %x, %off : ptr<f16>\n"
    "  %cols = arange 0, 256 : tile<256xi32>\n"
    "  %ms = splat %m : tile<256xi32>\n"
    "  %live = lt %cols, %ms : tile<256xi1>\n"
    "  %bs = splat %base : tile<256xptr<f16>>\n"
    "  %p = addptr %bs, %cols : tile<256xptr<f16>>\n"
    "  %v = load %p, %live : tile<256xf16>\n"
    "  return\n"
    "}\n";

static void test_multiple_of_promise(void **state) {
    (void)state;
    fx f;
    tir_func *fn = parse(&f, promised_tir);
    lower_axis_map *map = lower_axis_analyze(fn, f.arena);
    assert_int_equal(lower_axis_get(map, named(fn, "m")).divisibility, 8);
    assert_int_equal(lower_axis_get(map, named(fn, "off")).divisibility, 16);
    assert_int_equal(lower_axis_get(map, named(fn, "live")).constancy, 8);
    lower_axis_info p = lower_axis_get(map, named(fn, "p"));
    assert_int_equal(p.contiguity, 256);
    assert_int_equal(p.divisibility, 16); /* bytes: the pointer's 16 and 16 f16 of the row */
    assert_int_equal(lower_axis_get(map, fn->params[1]).divisibility, 1); /* the parameter itself: still unknown */
    done(&f);
    check_sound(promised_tir);
    /* a broken promise about a constant (a `var` the front end did not
     * check) is ignored: the constant's own divisor is the truth */
    fn = parse(&f, "kernel @k() {\n  %c = const 12 : i32\n  %m = multiple_of 8, %c : i32\n  return\n}\n");
    map = lower_axis_analyze(fn, f.arena);
    assert_int_equal(lower_axis_get(map, named(fn, "m")).divisibility, 4);
    done(&f);
}

/* arange(0, 1024) + 1 < 1024 is true except at the last element: the
 * run's start (1) is odd, so no block of it compares one way. */
static const char shifted_compare_tir[] =
    "kernel @k(%x: ptr<f32>) {\n"
    "  %r = arange 0, 1024 : tile<1024xi32>\n"
    "  %one = const 1 : tile<1024xi32>\n"
    "  %o = add %r, %one : tile<1024xi32>\n"
    "  %lim = const 1024 : tile<1024xi32>\n"
    "  %m = lt %o, %lim : tile<1024xi1>\n"
    "  %m2 = lt %r, %lim : tile<1024xi1>\n"
    "  %c64 = const 64 : tile<1024xi32>\n"
    "  %m3 = ge %r, %c64 : tile<1024xi1>\n"
    "  return\n"
    "}\n";

static void test_compare_constancy(void **state) {
    (void)state;
    fx f;
    tir_func *fn = parse(&f, shifted_compare_tir);
    lower_axis_map *map = lower_axis_analyze(fn, f.arena);
    assert_int_equal(lower_axis_get(map, named(fn, "o")).contiguity, 1024);
    assert_int_equal(lower_axis_get(map, named(fn, "o")).divisibility, 1);
    assert_int_equal(lower_axis_get(map, named(fn, "m")).constancy, 1);
    assert_int_equal(lower_axis_get(map, named(fn, "m2")).constancy, 1024);
    assert_int_equal(lower_axis_get(map, named(fn, "m3")).constancy, 64);
    done(&f);
    check_sound(shifted_compare_tir);
}

/* Every predicate both ways round against a constant that divides the
 * runs (found by tests/fuzz/difftest.c: a load masked with `c != 2` had
 * its mask taken as one bit per two f16 lanes, so element 3 read `other`).
 * Blocks of a run start at multiples of 64 and so does the constant:
 * x < 64 and x >= 64 (64 > x, 64 <= x) split at a block's edge, but
 * x == 64, x != 64, x <= 64 and x > 64 differ at the block's first element. */
static const char compare_preds_tir[] =
    "kernel @k(%x: ptr<f32>) {\n"
    "  %r = arange 0, 1024 : tile<1024xi32>\n"
    "  %c = const 64 : tile<1024xi32>\n"
    "  %lt = lt %r, %c : tile<1024xi1>\n"
    "  %ge = ge %r, %c : tile<1024xi1>\n"
    "  %le = le %r, %c : tile<1024xi1>\n"
    "  %gt = gt %r, %c : tile<1024xi1>\n"
    "  %eq = eq %r, %c : tile<1024xi1>\n"
    "  %ne = ne %r, %c : tile<1024xi1>\n"
    "  %rgt = gt %c, %r : tile<1024xi1>\n"
    "  %rle = le %c, %r : tile<1024xi1>\n"
    "  %rlt = lt %c, %r : tile<1024xi1>\n"
    "  %rge = ge %c, %r : tile<1024xi1>\n"
    "  %req = eq %c, %r : tile<1024xi1>\n"
    "  return\n"
    "}\n";

static void test_compare_predicates(void **state) {
    (void)state;
    fx f;
    tir_func *fn = parse(&f, compare_preds_tir);
    lower_axis_map *map = lower_axis_analyze(fn, f.arena);
    static const char *const whole[] = {"lt", "ge", "rgt", "rle"};
    static const char *const split[] = {"le", "gt", "eq", "ne", "rlt", "rge", "req"};
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++)
        assert_int_equal(lower_axis_get(map, named(fn, whole[i])).constancy, 64);
    for (size_t i = 0; i < sizeof split / sizeof split[0]; i++)
        if (lower_axis_get(map, named(fn, split[i])).constancy != 1)
            fail_msg("%%%s: constancy %lld, want 1", split[i], (long long)lower_axis_get(map, named(fn, split[i])).constancy);
    done(&f);
    check_sound(compare_preds_tir);
}

/* A strided index has no runs, so what divides its first element says
 * nothing about the others: arange * 4 is divisible by 4, not by 2^30. */
static const char strided_tir[] =
    "kernel @k(%x: ptr<f32>, %s: i32) {\n"
    "  %r = arange 0, 256 : tile<256xi32>\n"
    "  %c4 = const 4 : tile<256xi32>\n"
    "  %m = mul %r, %c4 : tile<256xi32>\n"
    "  %r2 = arange 0, 256 : tile<256xi32>\n"
    "  %sum = add %r, %r2 : tile<256xi32>\n"
    "  %xs = splat %x : tile<256xptr<f32>>\n"
    "  %p = addptr %xs, %m : tile<256xptr<f32>>\n"
    "  %ss = splat %s : tile<256xi32>\n"
    "  %o = add %r, %ss : tile<256xi32>\n"
    "  %q = addptr %xs, %o : tile<256xptr<f32>>\n"
    "  return\n"
    "}\n";

static void test_strided_divisibility(void **state) {
    (void)state;
    fx f;
    tir_func *fn = parse(&f, strided_tir);
    lower_axis_map *map = lower_axis_analyze(fn, f.arena);
    lower_axis_info m = lower_axis_get(map, named(fn, "m"));
    assert_int_equal(m.contiguity, 1);
    assert_int_equal(m.divisibility, 4);
    assert_int_equal(lower_axis_get(map, named(fn, "sum")).divisibility, 1);
    assert_int_equal(lower_axis_get(map, named(fn, "p")).divisibility, 16);
    lower_axis_info q = lower_axis_get(map, named(fn, "q"));
    assert_int_equal(q.contiguity, 256);
    assert_int_equal(q.divisibility, 4); /* only the element size is known */
    done(&f);
    check_sound(strided_tir);
}

/* Widening an index to i64 keeps what is known about it. */
static const char widen_tir[] =
    "kernel @k(%x: ptr<f16>) {\n"
    "  %pid = program_id 0 : i32\n"
    "  %c = const 512 : i32\n"
    "  %base = mul %pid, %c : i32\n"
    "  %r = arange 0, 512 : tile<512xi32>\n"
    "  %b = splat %base : tile<512xi32>\n"
    "  %o = add %b, %r : tile<512xi32>\n"
    "  %w = cast %o : tile<512xi64>\n"
    "  %xs = splat %x : tile<512xptr<f16>>\n"
    "  %p = addptr %xs, %w : tile<512xptr<f16>>\n"
    "  return\n"
    "}\n";

static void test_widening_cast(void **state) {
    (void)state;
    fx f;
    tir_func *fn = parse(&f, widen_tir);
    lower_axis_map *map = lower_axis_analyze(fn, f.arena);
    lower_axis_info p = lower_axis_get(map, named(fn, "p"));
    assert_int_equal(p.contiguity, 512);
    assert_int_equal(p.divisibility, 16);
    done(&f);
    check_sound(widen_tir);
}

/* Runs shorter than the operand's: an aligned block index plus an offset
 * that is constant over blocks of 4 (a splat here, so over everything). */
static const char mixed_tir[] =
    "kernel @k(%x: ptr<i8>, %a: i32, %b: i32) {\n"
    "  %r = arange 8, 72 : tile<64xi32>\n"
    "  %sa = splat %a : tile<64xi32>\n"
    "  %c16 = const 16 : i32\n"
    "  %a16 = mul %a, %c16 : i32\n"
    "  %s16 = splat %a16 : tile<64xi32>\n"
    "  %o1 = add %r, %s16 : tile<64xi32>\n"
    "  %o2 = sub %o1, %sa : tile<64xi32>\n"
    "  %o3 = sub %sa, %o1 : tile<64xi32>\n"
    "  %sb = splat %b : tile<64xi32>\n"
    "  %lt = lt %o1, %sb : tile<64xi1>\n"
    "  %sel = select %lt, %o1, %s16 : tile<64xi32>\n"
    "  %x8 = and %o1, %s16 : tile<64xi32>\n"
    "  %xs = splat %x : tile<64xptr<i8>>\n"
    "  %p = addptr %xs, %o1 : tile<64xptr<i8>>\n"
    "  %p2 = addptr %p, %s16 : tile<64xptr<i8>>\n"
    "  return\n"
    "}\n";

static void test_mixed_soundness(void **state) {
    (void)state;
    fx f;
    tir_func *fn = parse(&f, mixed_tir);
    lower_axis_map *map = lower_axis_analyze(fn, f.arena);
    lower_axis_info o1 = lower_axis_get(map, named(fn, "o1"));
    assert_int_equal(o1.contiguity, 64);
    assert_int_equal(o1.divisibility, 8);
    lower_axis_info p2 = lower_axis_get(map, named(fn, "p2"));
    assert_int_equal(p2.contiguity, 64);
    assert_int_equal(p2.divisibility, 8);
    done(&f);
    check_sound(mixed_tir);
}

/* Values a loop carries: one advanced by the same step every trip (a
 * carried induction value, init + t*d on trip t) keeps what init and d
 * have in common, with the step's facts found although it is computed in
 * the body; one advanced by a step that changes (the induction variable)
 * stays unknown. */
static const char carried_tir[] =
    "kernel @k(%x: ptr<f16>, %n: i32, %s: i32) {\n"
    "  %r = arange 0, 64 : tile<64xi32>\n"
    "  %xs = splat %x : tile<64xptr<f16>>\n"
    "  %p0 = addptr %xs, %r : tile<64xptr<f16>>\n"
    "  %lo = const 0 : i32\n"
    "  %one = const 1 : i32\n"
    "  %pe, %qe, %ue = for %lo, %n, %one, %p0, %p0, %p0 : tile<64xptr<f16>>, tile<64xptr<f16>>, tile<64xptr<f16>> {\n"
    "  ^(%i: i32, %p: tile<64xptr<f16>>, %q: tile<64xptr<f16>>, %u: tile<64xptr<f16>>):\n"
    "    %c16 = const 16 : i32\n"
    "    %c2 = const 2 : i32\n"
    "    %c32 = mul %c16, %c2 : i32\n"
    "    %d = splat %c32 : tile<64xi32>\n"
    "    %pn = addptr %p, %d : tile<64xptr<f16>>\n"
    "    %ds = splat %s : tile<64xi32>\n"
    "    %qn = addptr %q, %ds : tile<64xptr<f16>>\n"
    "    %di = splat %i : tile<64xi32>\n"
    "    %un = addptr %u, %di : tile<64xptr<f16>>\n"
    "    yield %pn, %qn, %un\n"
    "  }\n"
    "  return\n"
    "}\n";

static void test_carried_induction_values(void **state) {
    (void)state;
    fx f;
    tir_func *fn = parse(&f, carried_tir);
    lower_axis_map *map = lower_axis_analyze(fn, f.arena);
    tir_op *loop = fn->body->first;
    while (loop && loop->code != TIR_OP_FOR) loop = loop->next;
    assert_non_null(loop);
    assert_non_null(lower_carried_step(loop, 1));
    assert_non_null(lower_carried_step(loop, 2));
    assert_null(lower_carried_step(loop, 3)); /* the step is the induction variable */
    lower_axis_info p = lower_axis_get(map, loop->body->args[1]);
    assert_int_equal(p.contiguity, 64);
    assert_int_equal(p.divisibility, 16); /* init 16, each step 64 bytes */
    lower_axis_info q = lower_axis_get(map, loop->body->args[2]);
    assert_int_equal(q.contiguity, 64);
    assert_int_equal(q.divisibility, 2); /* a run-time step: only the element size */
    lower_axis_info u = lower_axis_get(map, loop->body->args[3]);
    assert_int_equal(u.contiguity, 1);
    assert_int_equal(u.divisibility, 1);
    done(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vadd_pointer),           cmocka_unit_test(test_multiple_of_promise),
        cmocka_unit_test(test_compare_constancy), cmocka_unit_test(test_compare_predicates),
        cmocka_unit_test(test_strided_divisibility), cmocka_unit_test(test_widening_cast),
        cmocka_unit_test(test_mixed_soundness),
        cmocka_unit_test(test_carried_induction_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
