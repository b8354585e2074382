/* builtins.c - the built-in functions: program_id, num_programs, arange,
 * load, store, the atomics, the rest of docs/language.md's table, and the
 * debugging statements print and assert.
 *
 * Arguments bind to named parameter slots as in Python: positional first,
 * then by name (`mask=m`); every mismatch is its own clear error. */
#include <string.h>

#include "lang/check.h"

enum {
    BUILTIN_MAX_PARAMS = 4,        /* atomic_cas: ptr, cmp, val, mask */
    BUILTIN_MAX_PRINT_VALUES = 16 /* values after print's message: one GPU printf each line */
};

typedef enum builtin_id {
    B_PROGRAM_ID, B_NUM_PROGRAMS, B_ARANGE, B_LOAD, B_STORE,
    B_WHERE, B_MINIMUM, B_MAXIMUM, B_ABS, B_SQRT, B_FLOOR, B_CEIL, B_FMA, B_CDIV, B_CAST, B_ZEROS, B_FULL,
    B_EXP, B_EXP2, B_LOG, B_LOG2, B_SIN, B_COS, B_RSQRT, B_SIGMOID, B_TANH,
    B_SUM, B_MAX, B_MIN,
    B_EXPAND_DIMS, B_BROADCAST_TO, B_RESHAPE, B_PERMUTE, B_TRANS, B_ARGMAX, B_ARGMIN,
    B_ERF, B_RAND, B_RANDINT, B_CUMSUM, B_DOT,
    B_ATOMIC_ADD, B_ATOMIC_MAX, B_ATOMIC_MIN, B_ATOMIC_XCHG, B_ATOMIC_CAS,
    B_ASSERT, B_MULTIPLE_OF
} builtin_id;

typedef struct builtin {
    const char *name;
    builtin_id id;
    int nparams, nrequired;
    const char *params[BUILTIN_MAX_PARAMS];
} builtin;

static const builtin builtins[] = {
    {"program_id", B_PROGRAM_ID, 1, 1, {"axis"}},
    {"num_programs", B_NUM_PROGRAMS, 1, 1, {"axis"}},
    {"arange", B_ARANGE, 2, 2, {"lo", "hi"}},
    {"load", B_LOAD, 3, 1, {"ptr", "mask", "other"}},
    {"store", B_STORE, 3, 2, {"ptr", "value", "mask"}},
    {"where", B_WHERE, 3, 3, {"cond", "a", "b"}},
    {"minimum", B_MINIMUM, 2, 2, {"a", "b"}},
    {"maximum", B_MAXIMUM, 2, 2, {"a", "b"}},
    {"abs", B_ABS, 1, 1, {"x"}},
    {"sqrt", B_SQRT, 1, 1, {"x"}},
    {"floor", B_FLOOR, 1, 1, {"x"}},
    {"ceil", B_CEIL, 1, 1, {"x"}},
    {"fma", B_FMA, 3, 3, {"a", "b", "c"}},
    {"cdiv", B_CDIV, 2, 2, {"a", "b"}},
    {"cast", B_CAST, 2, 2, {"x", "dtype"}},
    {"zeros", B_ZEROS, 2, 2, {"shape", "dtype"}},
    {"full", B_FULL, 2, 2, {"shape", "value"}},
    {"exp", B_EXP, 1, 1, {"x"}},
    {"exp2", B_EXP2, 1, 1, {"x"}},
    {"log", B_LOG, 1, 1, {"x"}},
    {"log2", B_LOG2, 1, 1, {"x"}},
    {"sin", B_SIN, 1, 1, {"x"}},
    {"cos", B_COS, 1, 1, {"x"}},
    {"rsqrt", B_RSQRT, 1, 1, {"x"}},
    {"sigmoid", B_SIGMOID, 1, 1, {"x"}},
    {"tanh", B_TANH, 1, 1, {"x"}},
    {"sum", B_SUM, 2, 1, {"x", "axis"}},
    {"max", B_MAX, 2, 1, {"x", "axis"}},
    {"min", B_MIN, 2, 1, {"x", "axis"}},
    {"expand_dims", B_EXPAND_DIMS, 2, 2, {"x", "axis"}},
    {"broadcast_to", B_BROADCAST_TO, 2, 2, {"x", "shape"}},
    {"reshape", B_RESHAPE, 2, 2, {"x", "shape"}},
    {"permute", B_PERMUTE, 2, 2, {"x", "dims"}},
    {"trans", B_TRANS, 1, 1, {"x"}},
    {"argmax", B_ARGMAX, 2, 1, {"x", "axis"}},
    {"argmin", B_ARGMIN, 2, 1, {"x", "axis"}},
    {"erf", B_ERF, 1, 1, {"x"}},
    {"rand", B_RAND, 2, 2, {"seed", "offsets"}},
    {"randint", B_RANDINT, 2, 2, {"seed", "offsets"}},
    {"cumsum", B_CUMSUM, 3, 1, {"x", "axis", "reverse"}},
    {"dot", B_DOT, 4, 2, {"a", "b", "acc", "input_precision"}},
    {"atomic_add", B_ATOMIC_ADD, 3, 2, {"ptr", "val", "mask"}},
    {"atomic_max", B_ATOMIC_MAX, 3, 2, {"ptr", "val", "mask"}},
    {"atomic_min", B_ATOMIC_MIN, 3, 2, {"ptr", "val", "mask"}},
    {"atomic_xchg", B_ATOMIC_XCHG, 3, 2, {"ptr", "val", "mask"}},
    {"atomic_cas", B_ATOMIC_CAS, 4, 3, {"ptr", "cmp", "val", "mask"}},
    {"assert", B_ASSERT, 3, 2, {"cond", "message", "mask"}},
    {"multiple_of", B_MULTIPLE_OF, 2, 2, {"x", "n"}},
};

/* Fills slots[] from the call's arguments; false after reporting. */
static bool bind_args(lang_ctx *c, const ast_expr *call, const builtin *bi, const ast_expr **slots) {
    bool ok = true, seen_named = false;
    int pos = 0;
    for (const ast_arg *a = call->u.call.args; a; a = a->next) {
        if (!a->name.str) {
            if (seen_named) {
                lang_error(c, a->value->span, "positional argument after a named one in call to '%s'", bi->name);
                ok = false;
            } else if (pos >= bi->nparams) {
                lang_error(c, a->value->span, "too many arguments to '%s' (it takes %d)", bi->name, bi->nparams);
                return false;
            } else {
                slots[pos++] = a->value;
            }
            continue;
        }
        seen_named = true;
        int k = -1;
        for (int i = 0; i < bi->nparams; i++)
            if (!strcmp(bi->params[i], a->name.str)) k = i;
        if (k < 0) {
            lang_error(c, a->name.span, "'%s' has no parameter named '%s'", bi->name, a->name.str);
            ok = false;
        } else if (slots[k]) {
            lang_error(c, a->name.span, "argument '%s' given twice in call to '%s'", a->name.str, bi->name);
            ok = false;
        } else {
            slots[k] = a->value;
        }
    }
    for (int i = 0; i < bi->nrequired && ok; i++)
        if (!slots[i]) {
            lang_error(c, call->span, "missing argument '%s' in call to '%s'", bi->params[i], bi->name);
            ok = false;
        }
    return ok;
}

/* What a name that holds a run-time value is, for messages. */
static const char *runtime_kind(lang_ctx *c, const char *name) {
    const binding *bd = lang_scope_find(c, name);
    return bd && bd->kind == BIND_PARAM ? "runtime parameter" : "runtime value";
}

/* A compile-time integer argument, or false after reporting. `need` says
 * what must be constant ("arange bounds must be compile-time constants"). */
static bool const_int_arg(lang_ctx *c, const ast_expr *e, const char *need, int64_t *out) {
    operand o = lang_check_expr(c, e);
    if (o.kind == OPND_POISON) return false;
    if (o.kind != OPND_INTLIT && !(o.kind == OPND_CONST && o.type.elem != TIR_I1)) {
        if (o.kind == OPND_VALUE && e->kind == AST_NAME)
            lang_error(c, e->span, "%s; '%s' is a %s", need, e->u.name.str, runtime_kind(c, e->u.name.str));
        else if (o.kind == OPND_VALUE)
            lang_error(c, e->span, "%s; this expression is computed at run time", need);
        else
            lang_error(c, e->span, "%s: expected an integer, not %s", need, lang_operand_str(c, &o));
        return false;
    }
    *out = o.ival;
    return true;
}

static operand check_axis(lang_ctx *c, const ast_expr *call, const ast_expr *arg, tir_opcode code) {
    int64_t axis;
    if (!const_int_arg(c, arg, "the axis must be a compile-time integer constant", &axis)) return lang_poison(call->span);
    if (axis < 0 || axis > 2) {
        lang_error(c, arg->span, "axis must be 0, 1 or 2, not %lld", (long long)axis);
        return lang_poison(call->span);
    }
    lang_set_loc(c, call->span);
    return lang_value(tir_build_axis(&c->b, code, axis), call->span);
}

static operand check_arange(lang_ctx *c, const ast_expr *call, const ast_expr **a) {
    int64_t lo, hi;
    bool ok = const_int_arg(c, a[0], "arange bounds must be compile-time constants", &lo);
    ok = const_int_arg(c, a[1], "arange bounds must be compile-time constants", &hi) && ok;
    if (!ok) return lang_poison(call->span);
    if (lo < INT32_MIN || lo > INT32_MAX || hi < INT32_MIN || hi > INT32_MAX) {
        lang_error(c, call->span, "arange bounds must fit in i32");
        return lang_poison(call->span);
    }
    int64_t n = hi - lo;
    if (n <= 0) {
        lang_error(c, call->span, "arange(%lld, %lld) is empty: the upper bound must be greater", (long long)lo,
                   (long long)hi);
        return lang_poison(call->span);
    }
    if (n & (n - 1)) {
        lang_error(c, call->span, "arange length %lld is not a power of two", (long long)n);
        return lang_poison(call->span);
    }
    if (n > TIR_MAX_TILE_ELEMS) {
        lang_error(c, call->span, "arange length %lld is too large (limit is %d)", (long long)n, TIR_MAX_TILE_ELEMS);
        return lang_poison(call->span);
    }
    lang_set_loc(c, call->span);
    return lang_value(tir_build_arange(&c->b, lo, hi), call->span);
}

static tir_value *pointer_arg(lang_ctx *c, const ast_expr *e, const char *fn, operand *o) {
    *o = lang_check_expr(c, e);
    if (o->kind == OPND_POISON) return NULL;
    if (o->kind != OPND_VALUE || o->type.elem != TIR_PTR) {
        lang_error(c, e->span, "%s needs a pointer or a tile of pointers, not %s", fn, lang_operand_str(c, o));
        return NULL;
    }
    return o->v;
}

static tir_value *mask_arg(lang_ctx *c, const ast_expr *e, tir_type shape) {
    operand m = lang_check_expr(c, e);
    if (m.kind == OPND_POISON) return NULL;
    tir_type t = lang_operand_type(&m);
    if (m.kind == OPND_INTLIT || m.kind == OPND_FLOATLIT || t.elem != TIR_I1) {
        lang_error(c, e->span, "mask must be i1 (a comparison), not %s", lang_operand_str(c, &m));
        return NULL;
    }
    return lang_convert(c, &m, TIR_I1, shape, "the mask");
}

static operand check_load(lang_ctx *c, const ast_expr *call, const ast_expr **a) {
    operand po;
    tir_value *p = pointer_arg(c, a[0], "load", &po);
    tir_value *ops[3] = {p, NULL, NULL};
    uint32_t n = 1;
    bool ok = p != NULL;
    tir_type shape = p ? p->type : tir_scalar(TIR_I32);
    if (a[1]) {
        ops[1] = mask_arg(c, a[1], shape);
        ok = ok && ops[1];
        n = 2;
    }
    if (a[2]) {
        if (!a[1]) {
            lang_error(c, a[2]->span, "'other' needs a mask: without one every element is loaded");
            return lang_poison(call->span);
        }
        operand oo = lang_check_expr(c, a[2]);
        if (p) ops[2] = lang_convert(c, &oo, tir_type_pointee(p->type), shape, "'other'");
        ok = ok && ops[2];
        n = 3;
    }
    if (!ok) return lang_poison(call->span);
    lang_set_loc(c, call->span);
    tir_type rt = tir_with_elem(p->type, tir_scalar(tir_type_pointee(p->type)));
    return lang_value(tir_build1(&c->b, TIR_OP_LOAD, rt, n, ops), call->span);
}

static operand check_store(lang_ctx *c, const ast_expr *call, const ast_expr **a) {
    operand po;
    tir_value *p = pointer_arg(c, a[0], "store", &po);
    operand vo = lang_check_expr(c, a[1]);
    tir_value *ops[3] = {p, NULL, NULL};
    uint32_t n = 2;
    bool ok = p != NULL && vo.kind != OPND_POISON;
    if (ok) {
        tir_type vt = lang_operand_type(&vo);
        if (vt.rank && !p->type.rank) {
            lang_error(c, a[1]->span, "cannot store %s through a single pointer %s", lang_operand_str(c, &vo),
                       lang_operand_str(c, &po));
            ok = false;
        } else {
            ops[1] = lang_convert(c, &vo, tir_type_pointee(p->type), p->type, "the stored value");
            ok = ops[1] != NULL;
        }
    }
    if (a[2]) {
        tir_value *m = p ? mask_arg(c, a[2], p->type) : NULL;
        ops[2] = m;
        ok = ok && m;
        n = 3;
    }
    if (!ok) return lang_poison(call->span);
    lang_set_loc(c, call->span);
    tir_build_op(&c->b, TIR_OP_STORE, n, ops, 0, NULL);
    return lang_poison(call->span); /* a statement: nothing uses its value */
}

/* A type written as an argument: cast(x, f16), zeros(128, i32). */
static bool type_arg(lang_ctx *c, const ast_expr *e, tir_elem *out) {
    if (e->kind == AST_NAME && tir_elem_from_name(e->u.name.str, e->u.name.len, out)) return true;
    lang_error(c, e->span, "expected a scalar type name (i1, i8, i16, i32, i64, f16, bf16, f32 or f64)");
    return false;
}

/* Elementwise math on n promoted operands (see docs: as for arithmetic).
 * floats_only: ints are an error, untyped literals become f32. */
static operand math(lang_ctx *c, const ast_expr *call, const ast_expr **args, int n, tir_opcode code, bool floats_only) {
    operand o[3] = {0}; /* n is 1 to 3; zeroed for compilers that cannot see it is at least 1 */
    bool ok = true;
    for (int i = 0; i < n; i++) {
        o[i] = lang_check_expr(c, args[i]);
        ok = ok && o[i].kind != OPND_POISON;
    }
    if (!ok) return lang_poison(call->span);
    tir_elem el;
    operand acc = o[0];
    tir_type shape = lang_operand_type(&o[0]);
    for (int i = 0; i < n; i++) {
        if (lang_operand_type(&o[i]).elem == TIR_PTR) {
            lang_error(c, args[i]->span, "'%s' needs numbers, not %s", call->u.call.callee.str, lang_operand_str(c, &o[i]));
            return lang_poison(call->span);
        }
        if (i && !lang_common_shape(&acc, &o[i], &shape)) {
            lang_error(c, args[i]->span, "shape mismatch in '%s': %s and %s", call->u.call.callee.str,
                       lang_type_str(c, shape), lang_operand_str(c, &o[i]));
            return lang_poison(call->span);
        }
        if (i) {
            lang_common_elem(&acc, &o[i], &el);
            acc = (operand){.kind = OPND_CONST, .type = tir_with_elem(shape, tir_scalar(el))};
        } else if (o[0].kind == OPND_INTLIT || o[0].kind == OPND_FLOATLIT) {
            acc = o[0];
        }
    }
    el = tir_type_elem(lang_operand_type(&acc));
    if (floats_only && acc.kind == OPND_INTLIT) el = TIR_F32;
    if (floats_only && !tir_elem_is_float(el)) {
        lang_error(c, call->span, "'%s' needs floats, not %s (cast first)", call->u.call.callee.str, tir_elem_name(el));
        return lang_poison(call->span);
    }
    if (el == TIR_I1) {
        lang_error(c, call->span, "'%s' is not defined on i1", call->u.call.callee.str);
        return lang_poison(call->span);
    }
    tir_value *v[3];
    for (int i = 0; i < n; i++) {
        if (!lang_literal_fits(c, &o[i], el)) return lang_poison(call->span);
        v[i] = lang_broadcast(c, lang_materialize(c, &o[i], el), shape);
    }
    lang_set_loc(c, call->span);
    return lang_value(tir_build1(&c->b, code, tir_with_elem(shape, tir_scalar(el)), (uint32_t)n, v), call->span);
}

static operand check_where(lang_ctx *c, const ast_expr *call, const ast_expr **a) {
    operand cond = lang_check_expr(c, a[0]);
    if (cond.kind == OPND_POISON) return cond;
    tir_type ct = lang_operand_type(&cond);
    if (ct.elem != TIR_I1 || cond.kind == OPND_INTLIT) {
        lang_error(c, a[0]->span, "where's condition must be i1 (a comparison), not %s", lang_operand_str(c, &cond));
        return lang_poison(call->span);
    }
    operand x = lang_check_expr(c, a[1]), y = lang_check_expr(c, a[2]);
    if (x.kind == OPND_POISON || y.kind == OPND_POISON) return lang_poison(call->span);
    tir_elem el;
    tir_type shape;
    if (!lang_common_elem(&x, &y, &el) || !lang_common_shape(&x, &y, &shape)) {
        lang_error(c, call->span, "where's values do not match: %s and %s", lang_operand_str(c, &x), lang_operand_str(c, &y));
        return lang_poison(call->span);
    }
    operand sh = {.kind = OPND_VALUE, .type = shape};
    if (!lang_common_shape(&cond, &sh, &shape)) {
        lang_error(c, a[0]->span, "where's condition has shape %s but the values have %s", lang_operand_str(c, &cond),
                   lang_type_str(c, shape));
        return lang_poison(call->span);
    }
    if (!lang_literal_fits(c, &x, el) || !lang_literal_fits(c, &y, el)) return lang_poison(call->span);
    tir_value *v[3] = {lang_broadcast(c, lang_materialize(c, &cond, TIR_I1), shape),
                       lang_broadcast(c, lang_materialize(c, &x, el), shape),
                       lang_broadcast(c, lang_materialize(c, &y, el), shape)};
    lang_set_loc(c, call->span);
    return lang_value(tir_build1(&c->b, TIR_OP_SELECT, tir_with_elem(shape, tir_scalar(el)), 3, v), call->span);
}

/* cdiv(a, b) = (a + b - 1) / b on integers: the number of blocks of b that
 * cover a; folded when both are known. */
static operand check_cdiv(lang_ctx *c, const ast_expr *call, const ast_expr **a) {
    operand x = lang_check_expr(c, a[0]), y = lang_check_expr(c, a[1]);
    if (x.kind == OPND_POISON || y.kind == OPND_POISON) return lang_poison(call->span);
    tir_elem el;
    if (!lang_common_elem(&x, &y, &el) || !tir_elem_is_int(el) || el == TIR_I1 || x.kind == OPND_FLOATLIT ||
        y.kind == OPND_FLOATLIT) {
        lang_error(c, call->span, "cdiv needs integers, not %s and %s", lang_operand_str(c, &x), lang_operand_str(c, &y));
        return lang_poison(call->span);
    }
    bool kx = x.kind == OPND_INTLIT || x.kind == OPND_CONST, ky = y.kind == OPND_INTLIT || y.kind == OPND_CONST;
    if (kx && ky) {
        if (y.ival == 0) {
            lang_error(c, a[1]->span, "division by zero in a constant expression");
            return lang_poison(call->span);
        }
        bool typed = x.kind == OPND_CONST || y.kind == OPND_CONST;
        if (typed && (!lang_literal_fits(c, &x, el) || !lang_literal_fits(c, &y, el))) return lang_poison(call->span);
        /* as the IR would compute it: wrapping add and sub, C division */
        int64_t sum = (int64_t)((uint64_t)x.ival + (uint64_t)y.ival - 1u);
        if (typed) sum = tir_wrap_int(sum, el);
        operand r = x.kind == OPND_CONST ? x : y;
        r.span = call->span;
        r.ival = (sum == INT64_MIN && y.ival == -1) ? sum : sum / y.ival;
        if (typed) {
            r.type = tir_scalar(el);
            r.ival = tir_wrap_int(r.ival, el);
        } else {
            r.kind = OPND_INTLIT;
        }
        return r;
    }
    if (!c->emit) {
        lang_error(c, call->span, "this expression must be a compile-time constant");
        return lang_poison(call->span);
    }
    tir_type shape;
    if (!lang_common_shape(&x, &y, &shape)) {
        lang_error(c, call->span, "shape mismatch in 'cdiv': %s and %s", lang_operand_str(c, &x), lang_operand_str(c, &y));
        return lang_poison(call->span);
    }
    if (!lang_literal_fits(c, &x, el) || !lang_literal_fits(c, &y, el)) return lang_poison(call->span);
    lang_set_loc(c, call->span);
    tir_value *vx = lang_broadcast(c, lang_materialize(c, &x, el), shape);
    tir_value *vy = lang_broadcast(c, lang_materialize(c, &y, el), shape);
    tir_value *one = tir_build_const_int(&c->b, tir_element_of(vy->type), 1);
    one = lang_broadcast(c, one, shape);
    tir_value *sum = tir_build_binary(&c->b, TIR_OP_SUB, tir_build_binary(&c->b, TIR_OP_ADD, vx, vy), one);
    return lang_value(tir_build_binary(&c->b, TIR_OP_DIV, sum, vy), call->span);
}

/* A float literal cast to an integer type, as the IR's cast does it:
 * truncated toward zero, saturated to the type's range, NaN giving 0.
 * (Converting an out-of-range double straight to int64_t is undefined.) */
static int64_t saturate_to_int(double v, tir_elem to) {
    int64_t lo, hi;
    switch (to) {
    case TIR_I1: lo = 0, hi = 1; break;
    case TIR_I8: lo = INT8_MIN, hi = INT8_MAX; break;
    case TIR_I16: lo = INT16_MIN, hi = INT16_MAX; break;
    case TIR_I32: lo = INT32_MIN, hi = INT32_MAX; break;
    default: lo = INT64_MIN, hi = INT64_MAX; break;
    }
    if (v != v) return 0;
    if (v <= (double)lo) return lo;
    if (v >= (double)hi) return hi; /* (double)INT64_MAX rounds up to 2^63: >= catches it */
    return (int64_t)v;
}

static operand check_cast(lang_ctx *c, const ast_expr *call, const ast_expr **a) {
    tir_elem to;
    operand x = lang_check_expr(c, a[0]);
    if (!type_arg(c, a[1], &to) || x.kind == OPND_POISON) return lang_poison(call->span);
    if (lang_operand_type(&x).elem == TIR_PTR) {
        lang_error(c, a[0]->span, "cannot cast a pointer (%s)", lang_operand_str(c, &x));
        return lang_poison(call->span);
    }
    if (x.kind == OPND_INTLIT || x.kind == OPND_FLOATLIT) {
        /* a literal simply takes the type, if it fits */
        if (x.kind == OPND_FLOATLIT && tir_elem_is_int(to)) {
            x.kind = OPND_INTLIT;
            x.ival = saturate_to_int(x.fval, to);
        }
        if (!lang_literal_fits(c, &x, to)) return lang_poison(call->span);
    }
    lang_set_loc(c, call->span);
    return lang_value(lang_materialize(c, &x, to), call->span);
}

static bool tile_length(lang_ctx *c, const ast_expr *e, uint32_t *n) {
    bool emit = c->emit;
    operand o = lang_check_expr(c, e);
    c->emit = emit;
    if (o.kind == OPND_POISON) return false;
    if ((o.kind != OPND_INTLIT && o.kind != OPND_CONST) || o.ival <= 0 || (o.ival & (o.ival - 1)) ||
        o.ival > TIR_MAX_TILE_ELEMS) {
        lang_error(c, e->span, "a tile dimension must be a power of two known at compile time (at most %d)",
                   TIR_MAX_TILE_ELEMS);
        return false;
    }
    *n = (uint32_t)o.ival;
    return true;
}

/* A shape: one length (a 1-D tile) or a tuple of them, `(M, N)`. Gives a
 * tile type of element `el`. */
static bool shape_arg(lang_ctx *c, const ast_expr *e, tir_elem el, tir_type *out) {
    uint32_t dims[TIR_MAX_RANK];
    unsigned rank = 0;
    if (e->kind != AST_TUPLE) {
        if (!tile_length(c, e, &dims[0])) return false;
        rank = 1;
    } else {
        if (e->u.tuple.n > TIR_MAX_RANK) {
            lang_error(c, e->span, "too many dimensions (limit is %d)", TIR_MAX_RANK);
            return false;
        }
        bool ok = true;
        for (const ast_arg *a = e->u.tuple.items; a; a = a->next) ok = tile_length(c, a->value, &dims[rank++]) && ok;
        if (!ok) return false;
    }
    *out = tir_tile(tir_scalar(el), rank, dims);
    if (tir_type_numel(*out) > TIR_MAX_TILE_ELEMS) {
        lang_error(c, e->span, "a tile of %llu elements is too large (limit is %d)",
                   (unsigned long long)tir_type_numel(*out), TIR_MAX_TILE_ELEMS);
        return false;
    }
    return true;
}

static operand check_fill(lang_ctx *c, const ast_expr *call, const ast_expr **a, bool zeros) {
    tir_type shape;
    if (!shape_arg(c, a[0], TIR_I32, &shape)) return lang_poison(call->span);
    operand v;
    tir_elem el;
    if (zeros) {
        if (!type_arg(c, a[1], &el)) return lang_poison(call->span);
        v = (operand){.kind = OPND_INTLIT, .ival = 0, .span = call->span};
    } else {
        v = lang_check_expr(c, a[1]);
        if (v.kind == OPND_POISON) return v;
        tir_type t = lang_operand_type(&v);
        if (t.rank || t.elem == TIR_PTR) {
            lang_error(c, a[1]->span, "full's value must be a scalar number, not %s", lang_operand_str(c, &v));
            return lang_poison(call->span);
        }
        el = tir_type_elem(t);
    }
    lang_set_loc(c, call->span);
    tir_value *s = lang_materialize(c, &v, el);
    return lang_value(tir_build_splat(&c->b, s, tir_with_elem(shape, tir_scalar(el))), call->span);
}

/* ---- shapes --------------------------------------------------------------
 * expand_dims, broadcast_to, reshape, permute and trans move elements
 * without computing: any element type, pointers too. */

/* The tile argument of a shape function, or NULL after reporting. */
static tir_value *tile_arg(lang_ctx *c, const ast_expr *call, const ast_expr *e, bool scalar_ok) {
    operand x = lang_check_expr(c, e);
    if (x.kind == OPND_POISON) return NULL;
    if (x.kind != OPND_VALUE || (!scalar_ok && !x.type.rank)) {
        lang_error(c, e->span, "'%s' needs a tile%s, not %s", call->u.call.callee.str, scalar_ok ? " or a run-time scalar" : "",
                   lang_operand_str(c, &x));
        return NULL;
    }
    return x.v;
}

static operand check_shape_op(lang_ctx *c, const ast_expr *call, const ast_expr **a, builtin_id id) {
    tir_value *x = tile_arg(c, call, a[0], id == B_BROADCAST_TO || id == B_EXPAND_DIMS);
    if (!x) {
        if (id != B_TRANS && a[1]->kind == AST_TUPLE) { /* its own mistakes; a shape may be a tuple */
            for (const ast_arg *d = a[1]->u.tuple.items; d; d = d->next) lang_check_expr(c, d->value);
        } else if (id != B_TRANS) {
            lang_check_expr(c, a[1]);
        }
        return lang_poison(call->span);
    }
    tir_type t = x->type;
    switch (id) {
    case B_EXPAND_DIMS: {
        int64_t axis;
        if (!const_int_arg(c, a[1], "the axis must be a compile-time integer constant", &axis))
            return lang_poison(call->span);
        if (axis < 0 || axis > t.rank) {
            lang_error(c, a[1]->span, "axis %lld is out of range for expand_dims of %s (0 to %u)", (long long)axis,
                       lang_type_str(c, t), t.rank);
            return lang_poison(call->span);
        }
        if (t.rank + 1 > TIR_MAX_RANK) {
            lang_error(c, call->span, "too many dimensions (limit is %d)", TIR_MAX_RANK);
            return lang_poison(call->span);
        }
        lang_set_loc(c, call->span);
        if (!t.rank) return lang_value(tir_build_splat(&c->b, x, tir_tile1(t, 1)), call->span);
        return lang_value(tir_build_expand_dims(&c->b, x, (unsigned)axis), call->span);
    }
    case B_BROADCAST_TO:
    case B_RESHAPE: {
        tir_type shape, common;
        if (!shape_arg(c, a[1], tir_type_elem(t), &shape)) return lang_poison(call->span);
        shape = tir_with_elem(shape, t);
        if (id == B_RESHAPE && tir_type_numel(shape) != tir_type_numel(t)) {
            lang_error(c, call->span, "cannot reshape %s (%llu elements) to %s", lang_type_str(c, t),
                       (unsigned long long)tir_type_numel(t), lang_type_str(c, shape));
            return lang_poison(call->span);
        }
        if (id == B_BROADCAST_TO &&
            (!lang_broadcast_shapes(t, shape, &common) || !tir_type_same_shape(common, shape))) {
            lang_error(c, call->span, "cannot broadcast %s to %s: each dim must match or be 1", lang_type_str(c, t),
                       lang_type_str(c, shape));
            return lang_poison(call->span);
        }
        lang_set_loc(c, call->span);
        if (id == B_BROADCAST_TO) return lang_value(lang_broadcast(c, x, shape), call->span);
        if (tir_type_same_shape(t, shape)) return lang_value(x, call->span);
        return lang_value(tir_build_reshape(&c->b, x, shape), call->span);
    }
    case B_PERMUTE:
    case B_TRANS: {
        unsigned perm[TIR_MAX_RANK] = {1, 0, 2}, n = 0, seen = 0;
        if (id == B_TRANS) {
            if (t.rank != 2) {
                lang_error(c, a[0]->span, "trans swaps the two dims of a 2-D tile, not %s (use permute)",
                           lang_type_str(c, t));
                return lang_poison(call->span);
            }
            n = 2;
        } else {
            const ast_expr *d = a[1];
            bool ok = true;
            if (d->kind != AST_TUPLE) {
                lang_error(c, d->span, "permute needs the dims as a tuple, e.g. (1, 0)");
                return lang_poison(call->span);
            }
            for (const ast_arg *it = d->u.tuple.items; it && ok; it = it->next) {
                int64_t v;
                ok = const_int_arg(c, it->value, "permute's dims must be compile-time integer constants", &v);
                if (ok && (v < 0 || v >= t.rank || (seen >> v & 1) || n >= TIR_MAX_RANK)) {
                    lang_error(c, it->value->span, "permute's dims must name each dim of %s once (0 to %u)",
                               lang_type_str(c, t), t.rank - 1);
                    ok = false;
                }
                if (ok) perm[n++] = (unsigned)v, seen |= 1u << v;
            }
            if (!ok) return lang_poison(call->span);
            if (n != t.rank) {
                lang_error(c, d->span, "permute of %s needs %u dims, not %u", lang_type_str(c, t), t.rank, n);
                return lang_poison(call->span);
            }
        }
        bool identity = true;
        for (unsigned i = 0; i < n; i++) identity &= perm[i] == i;
        lang_set_loc(c, call->span);
        return lang_value(identity ? x : tir_build_permute(&c->b, x, perm), call->span);
    }
    default: break;
    }
    return lang_poison(call->span);
}

/* ---- transcendental functions ------------------------------------------
 * exp2, log2, sin, cos and rsqrt are IR ops (PTX .approx on the GPU); the
 * rest are built from them: exp(x) = exp2(x log2 e), log(x) = log2(x) ln 2,
 * sigmoid(x) = 1 / (1 + exp(-x)), tanh(x) = 2 sigmoid(2x) - 1, the
 * reciprocal an op of its own (rcp: rcp.approx on the GPU). */

static tir_value *float_arg(lang_ctx *c, const ast_expr *call, const ast_expr *arg, bool allow_f64) {
    operand o = lang_check_expr(c, arg);
    if (o.kind == OPND_POISON) return NULL;
    tir_type t = lang_operand_type(&o);
    tir_elem el = (o.kind == OPND_INTLIT || o.kind == OPND_FLOATLIT) ? TIR_F32 : tir_type_elem(t);
    if (t.elem == TIR_PTR || !tir_elem_is_float(el)) {
        lang_error(c, call->span, "'%s' needs floats, not %s (cast first)", call->u.call.callee.str,
                   lang_operand_str(c, &o));
        return NULL;
    }
    if (el == TIR_F64 && !allow_f64) {
        lang_error(c, call->span, "'%s' on f64 is not supported yet (f32, f16 and bf16 are)", call->u.call.callee.str);
        return NULL;
    }
    return lang_materialize(c, &o, el);
}

static tir_value *fconst(lang_ctx *c, const tir_value *like, double v) {
    return lang_broadcast(c, tir_build_const_float(&c->b, tir_element_of(like->type), v), like->type);
}

static operand check_transcendental(lang_ctx *c, const ast_expr *call, const ast_expr **a, builtin_id id) {
    tir_value *x = float_arg(c, call, a[0], id == B_RSQRT);
    if (!x) return lang_poison(call->span);
    lang_set_loc(c, call->span);
    const double log2e = 1.4426950408889634, ln2 = 0.6931471805599453;
    tir_builder *b = &c->b;
    tir_value *r = NULL;
    switch (id) {
    case B_EXP2: r = tir_build_unary(b, TIR_OP_EXP2, x); break;
    case B_LOG2: r = tir_build_unary(b, TIR_OP_LOG2, x); break;
    case B_SIN: r = tir_build_unary(b, TIR_OP_SIN, x); break;
    case B_COS: r = tir_build_unary(b, TIR_OP_COS, x); break;
    case B_RSQRT: r = tir_build_unary(b, TIR_OP_RSQRT, x); break;
    case B_ERF: r = tir_build_unary(b, TIR_OP_ERF, x); break;
    case B_EXP: r = tir_build_unary(b, TIR_OP_EXP2, tir_build_binary(b, TIR_OP_MUL, x, fconst(c, x, log2e))); break;
    case B_LOG: r = tir_build_binary(b, TIR_OP_MUL, tir_build_unary(b, TIR_OP_LOG2, x), fconst(c, x, ln2)); break;
    case B_SIGMOID:
    case B_TANH: {
        double k = id == B_TANH ? -2 * log2e : -log2e; /* e^-x, or e^-2x for tanh */
        tir_value *e = tir_build_unary(b, TIR_OP_EXP2, tir_build_binary(b, TIR_OP_MUL, x, fconst(c, x, k)));
        tir_value *den = tir_build_binary(b, TIR_OP_ADD, fconst(c, x, 1.0), e);
        r = tir_build_unary(b, TIR_OP_RCP, den); /* approximate on the GPU, as exp2 */
        if (id == B_TANH) r = tir_build_binary(b, TIR_OP_SUB, tir_build_binary(b, TIR_OP_MUL, r, fconst(c, x, 2.0)), fconst(c, x, 1.0));
        break;
    }
    default: break;
    }
    return lang_value(r, call->span);
}

/* The optional `axis` argument of a reduction: a compile-time dim of x,
 * or -1 (every dim) when absent; false after reporting. */
static bool optional_axis(lang_ctx *c, const ast_expr *arg, const operand *x, int64_t *axis) {
    *axis = -1;
    if (!arg) return true;
    if (!const_int_arg(c, arg, "the axis must be a compile-time integer constant", axis)) return false;
    if (*axis < 0 || *axis >= x->type.rank) {
        lang_error(c, arg->span, "axis %lld is out of range for %s (rank %u)", (long long)*axis,
                   lang_operand_str(c, x), x->type.rank);
        return false;
    }
    return true;
}

static tir_value *reduce_along(lang_ctx *c, tir_opcode code, tir_value *v, unsigned axis) {
    tir_type rt = tir_element_of(v->type);
    rt.rank = (uint8_t)(v->type.rank - 1);
    for (unsigned d = 0, k = 0; d < v->type.rank; d++)
        if (d != axis) rt.shape[k++] = v->type.shape[d];
    tir_value *r = tir_build1(&c->b, code, rt, 1, &v);
    r->def->attr.axis = axis;
    return r;
}

/* A tile about to be summed (sum, cumsum): i1, i8 and i16 as i32, f16 and
 * bf16 as f32, so a sum of booleans counts and a sum of halves does not
 * overflow; other types as they are. */
static tir_value *widen_for_sum(lang_ctx *c, tir_value *v) {
    tir_elem el = tir_type_elem(v->type);
    if (el == TIR_I1 || el == TIR_I8 || el == TIR_I16) return tir_build_cast(&c->b, v, TIR_I32);
    if (el == TIR_F16 || el == TIR_BF16) return tir_build_cast(&c->b, v, TIR_F32);
    return v;
}

/* ---- reductions -------------------------------------------------------------
 * sum(x), max(x), min(x) over every element (a scalar), or along `axis`
 * (the result drops that dim; a rank-1 tile gives a scalar either way).
 * Sums widen first: i1, i8 and i16 to i32, f16 and bf16 to f32, so a sum
 * of booleans counts and a sum of halves does not overflow. */
static operand check_reduce(lang_ctx *c, const ast_expr *call, const ast_expr **a, builtin_id id) {
    operand x = lang_check_expr(c, a[0]);
    if (x.kind == OPND_POISON) return x;
    tir_type t = lang_operand_type(&x);
    const char *name = call->u.call.callee.str;
    if (x.kind != OPND_VALUE || t.rank == 0 || t.elem == TIR_PTR) {
        lang_error(c, a[0]->span, "'%s' reduces a tile of numbers, not %s", name, lang_operand_str(c, &x));
        return lang_poison(call->span);
    }
    int64_t axis = -1; /* every axis */
    if (!optional_axis(c, a[1], &x, &axis)) return lang_poison(call->span);
    tir_elem el = tir_type_elem(t);
    if (id != B_SUM && el == TIR_I1) {
        lang_error(c, call->span, "'%s' is not defined on i1 (use sum to count, or cast first)", name);
        return lang_poison(call->span);
    }
    lang_set_loc(c, call->span);
    tir_value *v = id == B_SUM ? widen_for_sum(c, x.v) : x.v;
    tir_opcode code = id == B_SUM ? TIR_OP_REDUCE_SUM : id == B_MAX ? TIR_OP_REDUCE_MAX : TIR_OP_REDUCE_MIN;
    /* over every axis: the last first, down to a scalar */
    for (int64_t ax = axis >= 0 ? axis : (int64_t)t.rank - 1; ax >= 0; ax--) {
        v = reduce_along(c, code, v, (unsigned)ax);
        if (axis >= 0) break;
    }
    return lang_value(v, call->span);
}

/* An i32 tile of `shape` whose elements are their index along dim d. */
static tir_value *index_along(lang_ctx *c, tir_type shape, unsigned d) {
    tir_value *v = tir_build_arange(&c->b, 0, shape.shape[d]);
    for (unsigned k = 0; k < d; k++) v = tir_build_expand_dims(&c->b, v, 0);
    for (unsigned k = d + 1; k < shape.rank; k++) v = tir_build_expand_dims(&c->b, v, k);
    if (!tir_type_same_shape(v->type, shape)) v = tir_build_broadcast(&c->b, v, tir_with_elem(shape, v->type));
    return v;
}

/* argmax(x), argmin(x) and with an axis: the i32 index of the first
 * largest (smallest) element, over all elements (row-major) or along the
 * axis. Built from two reductions: the extreme m, then the smallest index
 * where x == m; a NaN counts as the extreme (max and min give NaN then),
 * and -0 ties with +0. */
static operand check_argext(lang_ctx *c, const ast_expr *call, const ast_expr **a, builtin_id id) {
    operand x = lang_check_expr(c, a[0]);
    if (x.kind == OPND_POISON) return x;
    tir_type t = lang_operand_type(&x);
    const char *name = call->u.call.callee.str;
    if (x.kind != OPND_VALUE || t.rank == 0 || t.elem == TIR_PTR || t.elem == TIR_I1) {
        lang_error(c, a[0]->span, "'%s' needs a tile of numbers, not %s", name, lang_operand_str(c, &x));
        return lang_poison(call->span);
    }
    int64_t axis = -1;
    if (!optional_axis(c, a[1], &x, &axis)) return lang_poison(call->span);
    if (axis < 0 && t.rank == 1) axis = 0;
    lang_set_loc(c, call->span);
    tir_builder *b = &c->b;
    tir_opcode ext = id == B_ARGMAX ? TIR_OP_REDUCE_MAX : TIR_OP_REDUCE_MIN;
    tir_value *v = x.v, *m, *idx;
    int64_t none;
    if (axis >= 0) {
        m = reduce_along(c, ext, v, (unsigned)axis);
        m = lang_broadcast(c, m->type.rank ? tir_build_expand_dims(b, m, (unsigned)axis) : m, t);
        idx = index_along(c, t, (unsigned)axis);
        none = t.shape[axis];
    } else {
        m = v;
        for (int64_t d = t.rank - 1; d >= 0; d--) m = reduce_along(c, ext, m, (unsigned)d);
        m = tir_build_splat(b, m, t);
        idx = NULL; /* the row-major index */
        for (unsigned d = 0; d < t.rank; d++) {
            tir_value *i = index_along(c, t, d);
            idx = idx ? tir_build_binary(b, TIR_OP_ADD,
                                          tir_build_binary(b, TIR_OP_MUL, idx,
                                                           tir_build_splat(b, tir_build_const_int(b, tir_scalar(TIR_I32), t.shape[d]), t)),
                                          i)
                      : i;
        }
        none = (int64_t)tir_type_numel(t);
    }
    tir_value *hit = tir_build_binary(b, TIR_OP_EQ, v, m);
    if (tir_elem_is_float(tir_type_elem(t))) /* NaN: where x is NaN and so is the extreme */
        hit = tir_build_binary(b, TIR_OP_OR, hit,
                               tir_build_binary(b, TIR_OP_AND, tir_build_binary(b, TIR_OP_NE, v, v),
                                                tir_build_binary(b, TIR_OP_NE, m, m)));
    tir_value *miss = tir_build_splat(b, tir_build_const_int(b, tir_scalar(TIR_I32), none), t);
    tir_value *sel[3] = {hit, idx, miss};
    tir_value *cand = tir_build1(b, TIR_OP_SELECT, tir_with_elem(t, tir_scalar(TIR_I32)), 3, sel);
    if (axis >= 0) return lang_value(reduce_along(c, TIR_OP_REDUCE_MIN, cand, (unsigned)axis), call->span);
    for (int64_t d = t.rank - 1; d >= 0; d--) cand = reduce_along(c, TIR_OP_REDUCE_MIN, cand, (unsigned)d);
    return lang_value(cand, call->span);
}

/* ---- random numbers ----------------------------------------------------------
 * randint(seed, offsets) is the IR op (Philox4x32-10, one number per
 * offset); rand is built from it as Triton's uint_to_uniform_float does:
 * u ^ (u >> 31) (u < 0 ? -u - 1 : u, in [0, 2^31)) converted to f32, times
 * the f32 0x1.fffffep-32, so the largest result is 1 - 2^-24 < 1. */
static operand check_rand(lang_ctx *c, const ast_expr *call, const ast_expr **a, bool uniform) {
    const char *name = call->u.call.callee.str;
    operand seed = lang_check_expr(c, a[0]), offs = lang_check_expr(c, a[1]);
    if (seed.kind == OPND_POISON || offs.kind == OPND_POISON) return lang_poison(call->span);
    tir_type st = lang_operand_type(&seed), ot = lang_operand_type(&offs);
    bool ok = true;
    if (st.rank || !tir_elem_is_int(tir_type_elem(st)) || st.elem == TIR_I1) {
        lang_error(c, a[0]->span, "'%s' needs a scalar integer seed (i32 or i64), not %s", name,
                   lang_operand_str(c, &seed));
        ok = false;
    }
    if (offs.kind == OPND_INTLIT) {
        ok = lang_literal_fits(c, &offs, TIR_I32) && ok;
    } else if (!tir_elem_is_int(tir_type_elem(ot)) || ot.elem == TIR_I1 || ot.elem == TIR_I64) {
        lang_error(c, a[1]->span, "'%s' needs i32 offsets, not %s%s", name, lang_operand_str(c, &offs),
                   ot.elem == TIR_I64 ? " (64-bit offsets are not supported)" : "");
        ok = false;
    }
    if (!ok) return lang_poison(call->span);
    tir_builder *b = &c->b;
    tir_value *sv = lang_materialize(c, &seed, st.elem == TIR_I64 ? TIR_I64 : TIR_I32);
    tir_value *ov = lang_materialize(c, &offs, TIR_I32);
    tir_value *ops[2] = {lang_broadcast(c, sv, ov->type), ov};
    lang_set_loc(c, call->span);
    tir_value *u = tir_build1(b, TIR_OP_RANDINT, ov->type, 2, ops);
    if (!uniform) return lang_value(u, call->span);
    tir_value *k31 = lang_broadcast(c, tir_build_const_int(b, tir_scalar(TIR_I32), 31), u->type);
    tir_value *x = tir_build_binary(b, TIR_OP_XOR, u, tir_build_binary(b, TIR_OP_SHR, u, k31));
    tir_value *f = tir_build_cast(b, x, TIR_F32);
    return lang_value(tir_build_binary(b, TIR_OP_MUL, f, fconst(c, f, 0x1.fffffep-32)), call->span);
}

/* ---- scans ------------------------------------------------------------------
 * cumsum(x, axis = 0, reverse = false): running sums along `axis`, in x's
 * shape (Triton's tl.cumsum). It widens as sum does (i1, i8 and i16 to i32,
 * f16 and bf16 to f32), so the last running sum is sum(x, axis) and a
 * cumsum of a mask counts. reverse = true sums from the end (suffix sums). */

/* A compile-time i1 argument (true, false, or an i1 const parameter), or
 * false after reporting. */
static bool const_bool_arg(lang_ctx *c, const ast_expr *e, const char *what, bool *out) {
    operand o = lang_check_expr(c, e);
    if (o.kind == OPND_POISON) return false;
    if (o.kind != OPND_CONST || o.type.elem != TIR_I1) {
        lang_error(c, e->span, "%s must be a compile-time true or false, not %s", what,
                   o.kind == OPND_VALUE ? "a value computed at run time" : lang_operand_str(c, &o));
        return false;
    }
    *out = o.ival != 0;
    return true;
}

static operand check_cumsum(lang_ctx *c, const ast_expr *call, const ast_expr **a) {
    operand x = lang_check_expr(c, a[0]);
    if (x.kind == OPND_POISON) return x;
    tir_type t = lang_operand_type(&x);
    if (x.kind != OPND_VALUE || t.rank == 0 || t.elem == TIR_PTR) {
        lang_error(c, a[0]->span, "'cumsum' needs a tile of numbers, not %s", lang_operand_str(c, &x));
        return lang_poison(call->span);
    }
    int64_t axis;
    bool reverse = false;
    bool ok = optional_axis(c, a[1], &x, &axis);
    if (a[2]) ok = const_bool_arg(c, a[2], "'reverse'", &reverse) && ok;
    if (!ok) return lang_poison(call->span);
    if (axis < 0) axis = 0; /* Triton's default */
    lang_set_loc(c, call->span);
    tir_value *v = widen_for_sum(c, x.v);
    tir_value *r = tir_build1(&c->b, reverse ? TIR_OP_CUMSUM_REV : TIR_OP_CUMSUM, v->type, 1, &v);
    r->def->attr.axis = axis;
    return lang_value(r, call->span);
}

/* ---- matrix products --------------------------------------------------------
 * dot(a, b, acc = zeros, input_precision = "tf32"): a (MxK) times b (KxN)
 * plus acc (MxN), each dim at least 16, as Triton's tl.dot. Inputs f16,
 * bf16 or f32 with an f32 acc, or i8 with an i32 acc; a and b must have one
 * element type (no silent casts: the type picks the tensor-core
 * instruction). f32 inputs round to tf32 unless input_precision = "ieee";
 * the option means nothing for the other types and is accepted there. */
static bool dot_operand(lang_ctx *c, const ast_expr *e, const char *what, operand *o) {
    *o = lang_check_expr(c, e);
    if (o->kind == OPND_POISON) return false;
    tir_type t = lang_operand_type(o);
    if (o->kind != OPND_VALUE || t.rank != 2 || tir_dot_acc_elem(tir_type_elem(t)) == TIR_ELEM_COUNT) {
        lang_error(c, e->span, "'dot' needs %s to be a 2-D tile of f16, bf16, f32 or i8, not %s", what,
                   lang_operand_str(c, o));
        return false;
    }
    return true;
}

static operand check_dot(lang_ctx *c, const ast_expr *call, const ast_expr **a) {
    operand x, y;
    bool ok = dot_operand(c, a[0], "a", &x);
    ok = dot_operand(c, a[1], "b", &y) && ok;
    bool ieee = false;
    if (a[3]) {
        if (a[3]->kind == AST_STRING && (!strcmp(a[3]->u.str.text, "tf32") || !strcmp(a[3]->u.str.text, "ieee"))) {
            ieee = !strcmp(a[3]->u.str.text, "ieee");
        } else {
            lang_error(c, a[3]->span, "'dot''s input_precision is \"tf32\" or \"ieee\"");
            ok = false;
        }
    }
    if (!ok) {
        if (a[2]) lang_check_expr(c, a[2]);
        return lang_poison(call->span);
    }
    tir_type at = x.v->type, bt = y.v->type;
    if (at.elem != bt.elem) {
        lang_error(c, call->span, "'dot' needs a and b of one element type, not %s and %s (cast one)",
                   tir_elem_name(tir_type_elem(at)), tir_elem_name(tir_type_elem(bt)));
        ok = false;
    } else if (at.shape[1] != bt.shape[0]) {
        lang_error(c, call->span, "'dot' needs a's columns to match b's rows: a is %s, b is %s",
                   lang_type_str(c, at), lang_type_str(c, bt));
        ok = false;
    } else if (at.shape[0] < TIR_DOT_MIN_DIM || at.shape[1] < TIR_DOT_MIN_DIM || bt.shape[1] < TIR_DOT_MIN_DIM) {
        lang_error(c, call->span, "'dot' needs M, N and K of at least %d; here M = %u, N = %u, K = %u",
                   TIR_DOT_MIN_DIM, at.shape[0], bt.shape[1], at.shape[1]);
        ok = false;
    }
    tir_elem acc_el = tir_dot_acc_elem(tir_type_elem(at));
    uint32_t shape[2] = {at.shape[0], bt.shape[1]};
    tir_type rt = tir_tile(tir_scalar(acc_el), 2, shape);
    tir_value *acc = NULL;
    if (a[2]) {
        operand o = lang_check_expr(c, a[2]);
        if (o.kind == OPND_POISON) return lang_poison(call->span);
        tir_type t = lang_operand_type(&o);
        if (ok && (o.kind != OPND_VALUE || !tir_type_eq(t, rt))) {
            lang_error(c, a[2]->span, "'dot' with %s inputs needs acc to be %s, not %s",
                       tir_elem_name(tir_type_elem(at)), lang_type_str(c, rt), lang_operand_str(c, &o));
            ok = false;
        }
        acc = o.v;
    }
    if (ok && ieee && at.elem == TIR_F32 && at.rank == 2 && at.shape[1] > TIR_MAX_THREAD_ELEMS) {
        /* its FMAs keep whole rows of a and columns of b in each thread */
        lang_error(c, call->span,
                   "'dot' with input_precision = \"ieee\" holds a K of %u elements of a row in each thread (limit "
                   "is %d); split K in a loop",
                   at.shape[1], TIR_MAX_THREAD_ELEMS);
        ok = false;
    }
    if (!ok) return lang_poison(call->span);
    lang_set_loc(c, call->span);
    if (!acc)
        acc = acc_el == TIR_F32 ? tir_build_const_float(&c->b, rt, 0.0) : tir_build_const_int(&c->b, rt, 0);
    tir_value *ops[3] = {x.v, y.v, acc};
    tir_opcode code = ieee && at.elem == TIR_F32 ? TIR_OP_DOT_IEEE : TIR_OP_DOT;
    return lang_value(tir_build1(&c->b, code, rt, 3, ops), call->span);
}

/* ---- atomics ---------------------------------------------------------------
 * atomic_add(ptr, val, mask), atomic_max, atomic_min, atomic_xchg and
 * atomic_cas(ptr, cmp, val, mask): the values are converted to the pointee
 * type and broadcast to the pointers' shape as store's value is; the
 * result is the old values (0 where the mask is off), which a statement
 * drops. */
static operand check_atomic(lang_ctx *c, const ast_expr *call, const ast_expr **a, tir_opcode code) {
    const char *name = call->u.call.callee.str;
    operand po;
    tir_value *p = pointer_arg(c, a[0], name, &po);
    bool ok = p != NULL;
    if (p && !tir_atomic_supports(code, tir_type_pointee(p->type))) {
        lang_error(c, a[0]->span, "'%s' does not support %s (it takes %s)", name, tir_elem_name(tir_type_pointee(p->type)),
                   tir_atomic_types(code));
        ok = false;
        p = NULL;
    }
    bool cas = code == TIR_OP_ATOMIC_CAS;
    uint32_t nvals = cas ? 2 : 1;
    tir_value *ops[4] = {p, NULL, NULL, NULL};
    for (uint32_t i = 1; i <= nvals; i++) {
        operand vo = lang_check_expr(c, a[i]);
        if (vo.kind == OPND_POISON || !p) {
            ok = false;
            continue;
        }
        const char *what = cas && i == 1 ? "'cmp'" : "'val'";
        if (lang_operand_type(&vo).rank && !p->type.rank) {
            lang_error(c, a[i]->span, "'%s' through a single pointer %s needs a scalar %s, not %s", name,
                       lang_operand_str(c, &po), what, lang_operand_str(c, &vo));
            ok = false;
            continue;
        }
        ops[i] = lang_convert(c, &vo, tir_type_pointee(p->type), p->type, what);
        ok = ok && ops[i];
    }
    uint32_t n = 1 + nvals;
    if (a[n]) {
        tir_value *m = p ? mask_arg(c, a[n], p->type) : NULL;
        ops[n++] = m;
        ok = ok && m;
    }
    if (!ok) return lang_poison(call->span);
    lang_set_loc(c, call->span);
    tir_type rt = tir_with_elem(p->type, tir_scalar(tir_type_pointee(p->type)));
    return lang_value(tir_build1(&c->b, code, rt, n, ops), call->span);
}

/* ---- print and assert ------------------------------------------------------
 * Statements with an effect and no value. Their values are broadcast to
 * one shape (scalars splatted when there is a tile) so that the IR op is
 * elementwise and every device handles element i of each value together.
 * With the options' no_asserts an assert is checked and then left out. */

static bool message_arg(lang_ctx *c, const ast_expr *e, const char *fn, const char **msg) {
    if (e && e->kind == AST_STRING) {
        *msg = e->u.str.text;
        return true;
    }
    if (e) lang_error(c, e->span, "%s's message must be a string literal, e.g. %s", fn,
                      !strcmp(fn, "print") ? "print(\"x =\", x)" : "assert(n > 0, \"n must be positive\")");
    return false;
}

static operand check_print(lang_ctx *c, const ast_expr *call) {
    const ast_arg *args = call->u.call.args;
    if (!args) {
        lang_error(c, call->span, "print needs a message string first, e.g. print(\"x =\", x)");
        return lang_poison(call->span);
    }
    bool ok = true;
    for (const ast_arg *a = args; a; a = a->next)
        if (a->name.str) {
            lang_error(c, a->name.span, "'print' takes no named arguments");
            ok = false;
        }
    const char *msg = NULL;
    ok = message_arg(c, args->value, "print", &msg) && ok;
    operand vals[BUILTIN_MAX_PRINT_VALUES];
    uint32_t n = 0;
    tir_type shape = tir_scalar(TIR_I32);
    for (const ast_arg *a = args->next; a; a = a->next) {
        if (n == BUILTIN_MAX_PRINT_VALUES) {
            lang_error(c, a->value->span, "too many values to print (limit is %d)", BUILTIN_MAX_PRINT_VALUES);
            return lang_poison(call->span);
        }
        operand o = lang_check_expr(c, a->value);
        if (o.kind == OPND_POISON) {
            ok = false;
            continue;
        }
        tir_type t = lang_operand_type(&o), common;
        if (!lang_broadcast_shapes(shape, t, &common)) {
            lang_error(c, a->value->span, "shape mismatch in 'print': %s and %s (the values broadcast together)",
                       lang_type_str(c, shape), lang_operand_str(c, &o));
            ok = false;
            continue;
        }
        shape = tir_with_elem(common, tir_scalar(TIR_I32));
        vals[n++] = o;
    }
    if (!ok || !lang_check_tile_size(c, call->span, shape)) return lang_poison(call->span);
    tir_value *v[BUILTIN_MAX_PRINT_VALUES];
    for (uint32_t i = 0; i < n; i++)
        v[i] = lang_broadcast(c, lang_materialize(c, &vals[i], tir_type_elem(lang_operand_type(&vals[i]))), shape);
    lang_set_loc(c, call->span);
    tir_build_print(&c->b, msg, n, v);
    return lang_poison(call->span); /* a statement: nothing uses its value */
}

/* assert(cond, "message", mask = m): fails where cond is false and m true. */
static operand check_assert(lang_ctx *c, const ast_expr *call, const ast_expr **a) {
    const char *msg = NULL;
    bool ok = message_arg(c, a[1], "assert", &msg);
    operand cond = lang_check_expr(c, a[0]);
    if (cond.kind == OPND_POISON) return cond;
    tir_type ct = lang_operand_type(&cond);
    if (ct.elem != TIR_I1 || cond.kind == OPND_INTLIT) {
        lang_error(c, a[0]->span, "assert's condition must be i1 (a comparison), not %s", lang_operand_str(c, &cond));
        return lang_poison(call->span);
    }
    operand mask = {0};
    tir_type shape = ct;
    if (a[2]) {
        mask = lang_check_expr(c, a[2]);
        if (mask.kind == OPND_POISON) return mask;
        tir_type mt = lang_operand_type(&mask);
        if (mt.elem != TIR_I1 || mask.kind == OPND_INTLIT) {
            lang_error(c, a[2]->span, "mask must be i1 (a comparison), not %s", lang_operand_str(c, &mask));
            return lang_poison(call->span);
        }
        if (!lang_broadcast_shapes(ct, mt, &shape)) {
            lang_error(c, a[2]->span, "the mask has shape %s but the condition has %s", lang_operand_str(c, &mask),
                       lang_operand_str(c, &cond));
            return lang_poison(call->span);
        }
    }
    if (!ok || !lang_check_tile_size(c, call->span, shape)) return lang_poison(call->span);
    tir_value *v = lang_broadcast(c, lang_materialize(c, &cond, TIR_I1), shape);
    if (a[2]) { /* holds where the mask is off: cond | !mask */
        tir_value *m = lang_broadcast(c, lang_materialize(c, &mask, TIR_I1), shape);
        lang_set_loc(c, call->span);
        v = tir_build_binary(&c->b, TIR_OP_OR, v, tir_build_unary(&c->b, TIR_OP_NOT, m));
    }
    lang_set_loc(c, call->span);
    if (!c->opt->no_asserts) tir_build_assert(&c->b, msg, v);
    return lang_poison(call->span);
}

/* multiple_of(x, n): x, a scalar integer the program promises is a
 * multiple of n (a power of two), so that the compiler can prove alignments
 * and masks from it (a row start row * stride whose stride is a multiple of
 * 8 f16 elements is 16-byte aligned). A constant x is checked here, a
 * run-time one by the interpreter; on the GPU a broken promise is undefined
 * (as Triton's), since a check there would cost what the promise saves. */
static operand check_multiple_of(lang_ctx *c, const ast_expr *call, const ast_expr **a) {
    int64_t n;
    operand x = lang_check_expr(c, a[0]);
    if (!const_int_arg(c, a[1], "multiple_of's n must be a compile-time integer constant", &n) ||
        x.kind == OPND_POISON)
        return lang_poison(call->span);
    if (n < 1 || n > TIR_MULTIPLE_OF_MAX || (n & (n - 1))) {
        lang_error(c, a[1]->span, "multiple_of's n must be a power of two from 1 to 2^30, not %lld", (long long)n);
        return lang_poison(call->span);
    }
    tir_type t = lang_operand_type(&x);
    if (x.kind == OPND_FLOATLIT || t.rank != 0 || !tir_elem_is_int(tir_type_elem(t)) || t.elem == TIR_I1) {
        lang_error(c, a[0]->span, "multiple_of takes a scalar integer, not %s", lang_operand_str(c, &x));
        return lang_poison(call->span);
    }
    if (x.kind == OPND_INTLIT || x.kind == OPND_CONST) {
        if (x.ival % n) {
            lang_error(c, a[0]->span, "%lld is not a multiple of %lld", (long long)x.ival, (long long)n);
            return lang_poison(call->span);
        }
        return x;
    }
    tir_value *v = lang_materialize(c, &x, tir_type_elem(t));
    lang_set_loc(c, call->span);
    tir_value *r = tir_build_unary(&c->b, TIR_OP_MULTIPLE_OF, v);
    r->def->attr.axis = n;
    return lang_value(r, call->span);
}

operand lang_check_call(lang_ctx *c, const ast_expr *e) {
    const char *name = e->u.call.callee.str;
    bool whole_stmt = c->stmt_call;
    c->stmt_call = false;
    bool is_print = !strcmp(name, "print");
    if ((is_print || !strcmp(name, "assert")) && !c->emit) {
        lang_error(c, e->span, "'%s' cannot be used in a compile-time constant", name);
        return lang_poison(e->span);
    }
    if ((is_print || !strcmp(name, "assert")) && !whole_stmt) {
        lang_error(c, e->span, "'%s' gives no value; call it as a statement", name);
        return lang_poison(e->span);
    }
    if (is_print) return check_print(c, e);
    const builtin *bi = NULL;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (!strcmp(builtins[i].name, name)) bi = &builtins[i];
    if (!bi) {
        lang_error(c, e->u.call.callee.span, "unknown function '%s'", name);
        /* the arguments' own mistakes are independent of the name's */
        for (const ast_arg *a = e->u.call.args; a; a = a->next) lang_check_expr(c, a->value);
        return lang_poison(e->span);
    }
    if (!c->emit && bi->id != B_ARANGE && bi->id != B_CDIV) {
        lang_error(c, e->span, "'%s' cannot be used in a compile-time constant", name);
        return lang_poison(e->span);
    }
    if (bi->id == B_STORE && !whole_stmt) {
        lang_error(c, e->span, "'store' gives no value; call it as a statement");
        return lang_poison(e->span);
    }
    const ast_expr *slots[BUILTIN_MAX_PARAMS] = {0};
    if (!bind_args(c, e, bi, slots)) return lang_poison(e->span);
    switch (bi->id) {
    case B_PROGRAM_ID: return check_axis(c, e, slots[0], TIR_OP_PROGRAM_ID);
    case B_NUM_PROGRAMS: return check_axis(c, e, slots[0], TIR_OP_NUM_PROGRAMS);
    case B_ARANGE:
        if (!c->emit) {
            lang_error(c, e->span, "'arange' cannot be used in a compile-time constant");
            return lang_poison(e->span);
        }
        return check_arange(c, e, slots);
    case B_LOAD: return check_load(c, e, slots);
    case B_STORE: return check_store(c, e, slots);
    case B_WHERE: return check_where(c, e, slots);
    case B_MINIMUM: return math(c, e, slots, 2, TIR_OP_MIN, false);
    case B_MAXIMUM: return math(c, e, slots, 2, TIR_OP_MAX, false);
    case B_ABS: return math(c, e, slots, 1, TIR_OP_ABS, false);
    case B_SQRT: return math(c, e, slots, 1, TIR_OP_SQRT, true);
    case B_FLOOR: return math(c, e, slots, 1, TIR_OP_FLOOR, true);
    case B_CEIL: return math(c, e, slots, 1, TIR_OP_CEIL, true);
    case B_FMA: return math(c, e, slots, 3, TIR_OP_FMA, true);
    case B_CDIV: return check_cdiv(c, e, slots);
    case B_CAST: return check_cast(c, e, slots);
    case B_ZEROS: return check_fill(c, e, slots, true);
    case B_FULL: return check_fill(c, e, slots, false);
    case B_EXP: case B_EXP2: case B_LOG: case B_LOG2: case B_SIN: case B_COS: case B_RSQRT: case B_SIGMOID:
    case B_TANH: case B_ERF: return check_transcendental(c, e, slots, bi->id);
    case B_SUM: case B_MAX: case B_MIN: return check_reduce(c, e, slots, bi->id);
    case B_EXPAND_DIMS: case B_BROADCAST_TO: case B_RESHAPE: case B_PERMUTE: case B_TRANS:
        return check_shape_op(c, e, slots, bi->id);
    case B_ARGMAX: case B_ARGMIN: return check_argext(c, e, slots, bi->id);
    case B_RAND: case B_RANDINT: return check_rand(c, e, slots, bi->id == B_RAND);
    case B_CUMSUM: return check_cumsum(c, e, slots);
    case B_DOT: return check_dot(c, e, slots);
    case B_ATOMIC_ADD: return check_atomic(c, e, slots, TIR_OP_ATOMIC_ADD);
    case B_ATOMIC_MAX: return check_atomic(c, e, slots, TIR_OP_ATOMIC_MAX);
    case B_ATOMIC_MIN: return check_atomic(c, e, slots, TIR_OP_ATOMIC_MIN);
    case B_ATOMIC_XCHG: return check_atomic(c, e, slots, TIR_OP_ATOMIC_XCHG);
    case B_ATOMIC_CAS: return check_atomic(c, e, slots, TIR_OP_ATOMIC_CAS);
    case B_ASSERT: return check_assert(c, e, slots);
    case B_MULTIPLE_OF: return check_multiple_of(c, e, slots);
    }
    return lang_poison(e->span);
}
