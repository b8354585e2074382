/* expr.c - checking expressions and building their IR.
 *
 * Bottom-up: each subexpression becomes an operand (operand.c). Compile-time
 * integers fold right here, so const parameters work in arange bounds;
 * everything else becomes IR with the promotion rules of docs/language.md:
 * a common element type (casts inserted), a common shape (scalars splat). */
#include <stdio.h>
#include <string.h>

#include "lang/check.h"

static tir_opcode binary_opcode(ast_op op) {
    switch (op) {
    case AST_OP_ADD: return TIR_OP_ADD;
    case AST_OP_SUB: return TIR_OP_SUB;
    case AST_OP_MUL: return TIR_OP_MUL;
    case AST_OP_DIV: return TIR_OP_DIV;
    case AST_OP_MOD: return TIR_OP_REM;
    case AST_OP_LT: return TIR_OP_LT;
    case AST_OP_LE: return TIR_OP_LE;
    case AST_OP_GT: return TIR_OP_GT;
    case AST_OP_GE: return TIR_OP_GE;
    case AST_OP_EQ: return TIR_OP_EQ;
    case AST_OP_NE: return TIR_OP_NE;
    case AST_OP_AND: return TIR_OP_AND;
    case AST_OP_OR: return TIR_OP_OR;
    case AST_OP_XOR: return TIR_OP_XOR;
    case AST_OP_SHL: return TIR_OP_SHL;
    case AST_OP_SHR: return TIR_OP_SHR;
    default: return TIR_OP_COUNT;
    }
}

static bool is_int_operand(const operand *o) {
    return o->kind == OPND_INTLIT || ((o->kind == OPND_CONST || o->kind == OPND_VALUE) && tir_elem_is_int(tir_type_elem(o->type)));
}

static bool is_ptr_operand(const operand *o) { return o->kind == OPND_VALUE && o->type.elem == TIR_PTR; }

/* Folds an integer op on two compile-time integers (C semantics, wrapping
 * done in unsigned arithmetic). False on division by zero. */
static bool fold_int(ast_op op, int64_t a, int64_t b, int64_t *r) {
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case AST_OP_ADD: *r = (int64_t)(ua + ub); return true;
    case AST_OP_SUB: *r = (int64_t)(ua - ub); return true;
    case AST_OP_MUL: *r = (int64_t)(ua * ub); return true;
    case AST_OP_DIV:
    case AST_OP_MOD:
        if (b == 0) return false;
        if (a == INT64_MIN && b == -1) *r = op == AST_OP_DIV ? a : 0;
        else *r = op == AST_OP_DIV ? a / b : a % b;
        return true;
    case AST_OP_LT: *r = a < b; return true;
    case AST_OP_LE: *r = a <= b; return true;
    case AST_OP_GT: *r = a > b; return true;
    case AST_OP_GE: *r = a >= b; return true;
    case AST_OP_EQ: *r = a == b; return true;
    case AST_OP_NE: *r = a != b; return true;
    case AST_OP_AND: *r = a & b; return true;
    case AST_OP_OR: *r = a | b; return true;
    case AST_OP_XOR: *r = a ^ b; return true;
    case AST_OP_SHL: *r = b < 0 || b >= 64 ? 0 : (int64_t)(ua << b); return true;
    case AST_OP_SHR: *r = b < 0 || b >= 64 ? (a < 0 ? -1 : 0) : a >> b; return true;
    default: return false;
    }
}

static bool is_compare(ast_op op) { return op >= AST_OP_LT && op <= AST_OP_NE; }
static bool is_bitwise(ast_op op) { return op == AST_OP_AND || op == AST_OP_OR || op == AST_OP_XOR; }
static bool is_shift(ast_op op) { return op == AST_OP_SHL || op == AST_OP_SHR; }

static double literal_double(const operand *o) { return o->kind == OPND_FLOATLIT ? o->fval : (double)o->ival; }

/* + - * / or a comparison on two untyped literals, at least one a float:
 * the result is again an untyped float literal (or an i1 constant), kept in
 * double precision until it takes a type. (% is left to the IR's rem, so
 * lang needs no libm.) */
static operand fold_float(lang_ctx *c, const ast_expr *e, const operand *a, const operand *b) {
    double x = literal_double(a), y = literal_double(b);
    operand o;
    memset(&o, 0, sizeof o);
    o.kind = OPND_FLOATLIT;
    o.span = e->span;
    switch (e->u.binary.op) {
    case AST_OP_ADD: o.fval = x + y; break;
    case AST_OP_SUB: o.fval = x - y; break;
    case AST_OP_MUL: o.fval = x * y; break;
    case AST_OP_DIV: o.fval = x / y; break; /* IEEE: 1.0 / 0.0 is inf, as at run time */
    default:
        o.kind = OPND_CONST;
        o.type = tir_scalar(TIR_I1);
        switch (e->u.binary.op) {
        case AST_OP_LT: o.ival = x < y; break;
        case AST_OP_LE: o.ival = x <= y; break;
        case AST_OP_GT: o.ival = x > y; break;
        case AST_OP_GE: o.ival = x >= y; break;
        case AST_OP_EQ: o.ival = x == y; break;
        default: o.ival = x != y; break; /* NE: true on NaN, like the IR's ne */
        }
    }
    return o;
}

static operand invalid_operands(lang_ctx *c, const ast_expr *e, const operand *a, const operand *b) {
    lang_error(c, e->u.binary.op_span, "invalid operands to '%s': %s and %s", ast_op_spelling(e->u.binary.op),
               lang_operand_str(c, a), lang_operand_str(c, b));
    return lang_poison(e->span);
}

static operand pointer_arith(lang_ctx *c, const ast_expr *e, operand *a, operand *b) {
    ast_op op = e->u.binary.op;
    if (op == AST_OP_ADD && is_ptr_operand(b) && !is_ptr_operand(a)) {
        operand *t = a;
        a = b;
        b = t;
    }
    if (!is_ptr_operand(a) || is_ptr_operand(b) || !is_int_operand(b) || (op != AST_OP_ADD && op != AST_OP_SUB) ||
        (b->kind != OPND_INTLIT && b->type.elem == TIR_I1))
        return invalid_operands(c, e, a, b);
    if (!c->emit) {
        lang_error(c, e->span, "this expression must be a compile-time constant");
        return lang_poison(e->span);
    }
    tir_type shape;
    if (!lang_common_shape(a, b, &shape)) {
        lang_error(c, e->u.binary.op_span, "shape mismatch in '%s': %s and %s", ast_op_spelling(op),
                   lang_operand_str(c, a), lang_operand_str(c, b));
        return lang_poison(e->span);
    }
    tir_elem oe = b->kind == OPND_INTLIT ? tir_type_elem(lang_operand_type(b)) : tir_type_elem(b->type);
    tir_value *off = lang_materialize(c, b, oe);
    lang_set_loc(c, e->u.binary.op_span);
    if (op == AST_OP_SUB) off = tir_build_unary(&c->b, TIR_OP_NEG, off);
    tir_value *p = lang_broadcast(c, a->v, shape);
    off = lang_broadcast(c, off, shape);
    return lang_value(tir_build_binary(&c->b, TIR_OP_ADDPTR, p, off), e->span);
}

static operand check_binary(lang_ctx *c, const ast_expr *e) {
    operand a = lang_check_expr(c, e->u.binary.lhs);
    operand b = lang_check_expr(c, e->u.binary.rhs);
    if (a.kind == OPND_POISON || b.kind == OPND_POISON) return lang_poison(e->span);
    ast_op op = e->u.binary.op;
    if (is_ptr_operand(&a) || is_ptr_operand(&b)) return pointer_arith(c, e, &a, &b);

    if (!is_compare(op) && !is_bitwise(op) && !is_shift(op)) {
        tir_elem el;
        if (lang_common_elem(&a, &b, &el) && el == TIR_I1) {
            lang_error(c, e->u.binary.op_span, "operator '%s' is not defined on i1 (use & | ^ for logic)",
                       ast_op_spelling(op));
            return lang_poison(e->span);
        }
    }
    /* untyped float literals fold, so `x * (1.0 / 3.0)` keeps x's type */
    if ((a.kind == OPND_FLOATLIT || b.kind == OPND_FLOATLIT) && (a.kind == OPND_FLOATLIT || a.kind == OPND_INTLIT) &&
        (b.kind == OPND_FLOATLIT || b.kind == OPND_INTLIT) && !is_bitwise(op) && !is_shift(op) && op != AST_OP_MOD)
        return fold_float(c, e, &a, &b);
    /* compile-time integers fold */
    bool ca = a.kind == OPND_INTLIT || a.kind == OPND_CONST, cb = b.kind == OPND_INTLIT || b.kind == OPND_CONST;
    if (ca && cb) {
        if (a.kind != b.kind) {
            /* a literal next to a typed constant takes its type, as at run time */
            tir_elem el;
            lang_common_elem(&a, &b, &el);
            if (!lang_literal_fits(c, &a, el) || !lang_literal_fits(c, &b, el)) return lang_poison(e->span);
        }
        int64_t r;
        if (!fold_int(op, a.ival, b.ival, &r)) {
            lang_error(c, e->u.binary.op_span, "division by zero in a constant expression");
            return lang_poison(e->span);
        }
        operand o = a;
        o.span = e->span;
        o.ival = r;
        if (is_compare(op)) {
            o.kind = OPND_CONST;
            o.type = tir_scalar(TIR_I1);
        } else if (a.kind == OPND_CONST || b.kind == OPND_CONST) {
            tir_elem el;
            lang_common_elem(&a, &b, &el);
            if (is_bitwise(op) && el == TIR_I1) el = TIR_I1;
            o.kind = OPND_CONST;
            o.type = tir_scalar(el);
            o.ival = tir_wrap_int(r, el);
        }
        return o;
    }

    tir_elem el;
    tir_type shape;
    if (!lang_common_elem(&a, &b, &el)) return invalid_operands(c, e, &a, &b);
    if ((is_bitwise(op) && !tir_elem_is_int(el)) || (is_shift(op) && (!tir_elem_is_int(el) || el == TIR_I1))) {
        lang_error(c, e->u.binary.op_span, "operator '%s' needs %s operands, not %s and %s", ast_op_spelling(op),
                   is_shift(op) ? "integer" : "integer or i1", lang_operand_str(c, &a), lang_operand_str(c, &b));
        return lang_poison(e->span);
    }
    if (!lang_common_shape(&a, &b, &shape)) {
        lang_error(c, e->u.binary.op_span, "shape mismatch in '%s': %s and %s", ast_op_spelling(op),
                   lang_operand_str(c, &a), lang_operand_str(c, &b));
        return lang_poison(e->span);
    }
    if (!lang_literal_fits(c, &a, el) || !lang_literal_fits(c, &b, el)) return lang_poison(e->span);
    if (!c->emit) {
        lang_error(c, e->span, "this expression must be a compile-time constant");
        return lang_poison(e->span);
    }
    tir_value *va = lang_broadcast(c, lang_materialize(c, &a, el), shape);
    tir_value *vb = lang_broadcast(c, lang_materialize(c, &b, el), shape);
    lang_set_loc(c, e->u.binary.op_span);
    return lang_value(tir_build_binary(&c->b, binary_opcode(op), va, vb), e->span);
}

static operand check_unary(lang_ctx *c, const ast_expr *e) {
    operand a = lang_check_expr(c, e->u.unary.operand);
    if (a.kind == OPND_POISON) return a;
    ast_op op = e->u.unary.op;
    tir_elem el = tir_type_elem(lang_operand_type(&a));
    if (el == TIR_PTR || (op == AST_OP_NOT && a.kind == OPND_FLOATLIT) || (op == AST_OP_NOT && tir_elem_is_float(el) && a.kind != OPND_INTLIT)) {
        lang_error(c, e->u.unary.op_span, "invalid operand to unary '%s': %s", ast_op_spelling(op), lang_operand_str(c, &a));
        return lang_poison(e->span);
    }
    if (op == AST_OP_NEG && el == TIR_I1 && a.kind != OPND_INTLIT) {
        lang_error(c, e->u.unary.op_span, "invalid operand to unary '-': i1");
        return lang_poison(e->span);
    }
    operand o = a;
    o.span = e->span;
    if (op == AST_OP_PLUS) return o;
    if (a.kind == OPND_INTLIT || a.kind == OPND_CONST) {
        if (op == AST_OP_NEG) o.ival = (int64_t)(0 - (uint64_t)a.ival);
        else o.ival = (a.kind == OPND_CONST && el == TIR_I1) ? !a.ival : ~a.ival;
        if (a.kind == OPND_CONST) o.ival = tir_wrap_int(o.ival, el);
        return o;
    }
    if (a.kind == OPND_FLOATLIT) {
        o.fval = -a.fval;
        return o;
    }
    if (!c->emit) {
        lang_error(c, e->span, "this expression must be a compile-time constant");
        return lang_poison(e->span);
    }
    lang_set_loc(c, e->u.unary.op_span);
    return lang_value(tir_build_unary(&c->b, op == AST_OP_NEG ? TIR_OP_NEG : TIR_OP_NOT, a.v), e->span);
}

/* x[:, None]: one ':' per dim of x, in order; each None inserts a dim of
 * size 1 there (expand_dims). */
static operand check_index(lang_ctx *c, const ast_expr *e) {
    operand x = lang_check_expr(c, e->u.index.base);
    if (x.kind == OPND_POISON) return lang_poison(e->span);
    tir_type t = lang_operand_type(&x);
    uint32_t n = e->u.index.n, nones = 0;
    for (uint32_t i = 0; i < n; i++) nones += e->u.index.none_mask >> i & 1;
    if (x.kind != OPND_VALUE) {
        lang_error(c, e->u.index.base->span, "only tiles and run-time scalars can be indexed, not %s",
                   lang_operand_str(c, &x));
        return lang_poison(e->span);
    }
    if (n - nones != t.rank) {
        lang_error(c, e->span, "%s has %u dims but the subscript has %u ':' (one per dim, and None for a new one)",
                   lang_operand_str(c, &x), t.rank, n - nones);
        return lang_poison(e->span);
    }
    if (n > TIR_MAX_RANK) {
        lang_error(c, e->span, "too many dimensions (limit is %d)", TIR_MAX_RANK);
        return lang_poison(e->span);
    }
    if (!c->emit) {
        lang_error(c, e->span, "this expression must be a compile-time constant");
        return lang_poison(e->span);
    }
    lang_set_loc(c, e->span);
    tir_value *v = x.v;
    if (!t.rank) { /* a scalar: a tile of ones */
        uint32_t ones[TIR_MAX_RANK] = {1, 1, 1};
        return lang_value(tir_build_splat(&c->b, v, tir_tile(v->type, n, ones)), e->span);
    }
    for (uint32_t i = 0; i < n; i++)
        if (e->u.index.none_mask >> i & 1) v = tir_build_expand_dims(&c->b, v, i);
    return lang_value(v, e->span);
}

operand lang_check_expr(lang_ctx *c, const ast_expr *e) {
    if (c->depth >= LANG_MAX_EXPR_DEPTH) {
        lang_error(c, e->span, "expression nested too deeply (limit is %d)", LANG_MAX_EXPR_DEPTH);
        c->depth = -1000000; /* report once per statement: the caller resets */
        return lang_poison(e->span);
    }
    if (c->depth < 0) return lang_poison(e->span);
    c->depth++;
    operand o;
    memset(&o, 0, sizeof o);
    o.span = e->span;
    switch (e->kind) {
    case AST_INT:
        if (e->u.int_value > (uint64_t)INT64_MAX) {
            lang_error(c, e->span, "integer literal does not fit in i64");
            o = lang_poison(e->span);
        } else {
            o.kind = OPND_INTLIT;
            o.ival = (int64_t)e->u.int_value;
        }
        break;
    case AST_FLOAT:
        o.kind = OPND_FLOATLIT;
        o.fval = e->u.float_value;
        break;
    case AST_BOOL:
        o.kind = OPND_CONST;
        o.type = tir_scalar(TIR_I1);
        o.ival = e->u.int_value != 0;
        break;
    case AST_NAME: {
        binding *bd = lang_scope_find(c, e->u.name.str);
        if (!bd) {
            lang_error(c, e->span, "use of undeclared identifier '%s'", e->u.name.str);
            o = lang_poison(e->span);
        } else {
            o = bd->value;
            o.span = e->span;
            if (!c->emit && o.kind == OPND_VALUE) {
                lang_error(c, e->span, "'%s' is a runtime value; a compile-time constant is needed here",
                           e->u.name.str);
                o = lang_poison(e->span);
            }
        }
        break;
    }
    case AST_UNARY: o = check_unary(c, e); break;
    case AST_BINARY: o = check_binary(c, e); break;
    case AST_CALL: o = lang_check_call(c, e); break;
    case AST_INDEX: o = check_index(c, e); break;
    case AST_TUPLE:
        lang_error(c, e->span, "a tuple is only allowed as a shape or a list of dims (zeros, full, reshape, "
                               "broadcast_to, permute)");
        o = lang_poison(e->span);
        break;
    case AST_STRING:
        lang_error(c, e->span, "a string is only allowed as the message of print or assert");
        o = lang_poison(e->span);
        break;
    }
    if (c->depth > 0) c->depth--;
    if (o.kind == OPND_VALUE && !lang_check_tile_size(c, e->span, o.type)) o = lang_poison(e->span);
    return o;
}

tir_value *lang_convert(lang_ctx *c, const operand *o, tir_elem want, tir_type shape_of, const char *what) {
    if (o->kind == OPND_POISON) return NULL;
    tir_type t = lang_operand_type(o);
    if (t.elem == TIR_PTR || want == TIR_PTR) {
        lang_error(c, o->span, "%s must be a number, not %s", what, lang_operand_str(c, o));
        return NULL;
    }
    tir_type common;
    if (t.rank && (!lang_broadcast_shapes(t, shape_of, &common) || !tir_type_same_shape(common, shape_of))) {
        lang_error(c, o->span, "%s has shape %s but %s is needed", what, lang_operand_str(c, o),
                   lang_type_str(c, tir_with_elem(shape_of, tir_scalar(want))));
        return NULL;
    }
    if (!lang_literal_fits(c, o, want)) return NULL;
    return lang_broadcast(c, lang_materialize(c, o, want), shape_of);
}
