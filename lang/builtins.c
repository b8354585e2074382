/* builtins.c - the built-in functions: program_id, num_programs, arange,
 * load, store.
 *
 * Arguments bind to named parameter slots as in Python: positional first,
 * then by name (`mask=m`); every mismatch is its own clear error. */
#include <string.h>

#include "lang/check.h"

enum { BUILTIN_MAX_PARAMS = 3 };

typedef enum builtin_id { B_PROGRAM_ID, B_NUM_PROGRAMS, B_ARANGE, B_LOAD, B_STORE } builtin_id;

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

/* A compile-time integer argument, or false after reporting. */
static bool const_int_arg(lang_ctx *c, const ast_expr *e, const char *what, int64_t *out) {
    bool emit = c->emit;
    operand o = lang_check_expr(c, e);
    c->emit = emit;
    if (o.kind == OPND_POISON) return false;
    if (o.kind != OPND_INTLIT && !(o.kind == OPND_CONST && o.type.elem != TIR_I1)) {
        if (o.kind == OPND_VALUE && e->kind == AST_NAME)
            lang_error(c, e->span, "%s must be a compile-time constant; '%s' is a runtime value", what,
                       e->u.name.str);
        else
            lang_error(c, e->span, "%s must be a compile-time integer constant", what);
        return false;
    }
    *out = o.ival;
    return true;
}

static operand check_axis(lang_ctx *c, const ast_expr *call, const ast_expr *arg, tir_opcode code) {
    int64_t axis;
    if (!const_int_arg(c, arg, "the axis", &axis)) return lang_poison(call->span);
    if (axis < 0 || axis > 2) {
        lang_error(c, arg->span, "axis must be 0, 1 or 2, not %lld", (long long)axis);
        return lang_poison(call->span);
    }
    lang_set_loc(c, call->span);
    return lang_value(tir_build_axis(&c->b, code, axis), call->span);
}

static operand check_arange(lang_ctx *c, const ast_expr *call, const ast_expr **a) {
    int64_t lo, hi;
    bool ok = const_int_arg(c, a[0], "arange's lower bound", &lo);
    ok = const_int_arg(c, a[1], "arange's upper bound", &hi) && ok;
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
        if (p) ops[2] = lang_convert(c, &oo, (tir_elem)p->type.pointee, shape, "'other'");
        ok = ok && ops[2];
        n = 3;
    }
    if (!ok) return lang_poison(call->span);
    lang_set_loc(c, call->span);
    tir_type rt = tir_with_elem(p->type, tir_scalar((tir_elem)p->type.pointee));
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
            ops[1] = lang_convert(c, &vo, (tir_elem)p->type.pointee, p->type, "the stored value");
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

operand lang_check_call(lang_ctx *c, const ast_expr *e) {
    const char *name = e->u.call.callee.str;
    bool whole_stmt = c->stmt_call;
    c->stmt_call = false;
    const builtin *bi = NULL;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (!strcmp(builtins[i].name, name)) bi = &builtins[i];
    if (!bi) {
        lang_error(c, e->u.call.callee.span, "unknown function '%s'", name);
        return lang_poison(e->span);
    }
    if (!c->emit && bi->id != B_ARANGE) {
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
    }
    return lang_poison(e->span);
}
