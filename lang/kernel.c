/* kernel.c - checking kernels and statements; lang_to_tir.
 *
 * Each kernel is checked on its own: its const parameters are evaluated
 * first (from -D or their defaults) without building IR, then its runtime
 * parameters become IR parameters and its statements are checked in order.
 * A `var` is rebound on assignment, so its binding always names the latest
 * SSA value; around a loop or an if, the vars the statement assigns become
 * the IR op's carried values or results (changed_vars). */
#include <stdlib.h>
#include <string.h>

#include "lang/check.h"

static void build_line_table(lang_ctx *c) {
    uint32_t n = 1;
    for (size_t i = 0; i < c->src->len; i++) n += c->src->text[i] == '\n';
    c->line_starts = TC_NEW_ARRAY(c->arena, uint32_t, n);
    c->nlines = 0;
    c->line_starts[c->nlines++] = 0;
    for (size_t i = 0; i < c->src->len; i++)
        if (c->src->text[i] == '\n') c->line_starts[c->nlines++] = (uint32_t)(i + 1);
}

static bool bind(lang_ctx *c, const ast_name *name, binding_kind kind, operand value) {
    binding *old = lang_scope_find(c, name->str);
    if (old) {
        lang_error(c, name->span, "redefinition of '%s'", name->str);
        tc_note(c->diag, c->src, old->span, "'%s' was first defined here", name->str);
        return false;
    }
    if (c->nbinds == LANG_MAX_BINDINGS) {
        lang_error(c, name->span, "too many names in one kernel (limit is %d)", LANG_MAX_BINDINGS);
        return false;
    }
    lang_scope_add(c, name->str, kind, value, name->span);
    return true;
}

/* A written type: scalar or pointer-to-scalar. */
static bool resolve_type(lang_ctx *c, const ast_type *t, tir_type *out) {
    tir_elem e;
    if (!tir_elem_from_name(t->base.str, t->base.len, &e)) {
        lang_error(c, t->base.span, "unknown type '%s' (expected i1, i8, i16, i32, i64, f16, bf16, f32 or f64)",
                   t->base.str);
        return false;
    }
    if (t->pointer > 1) {
        lang_error(c, t->span, "pointers to pointers are not supported");
        return false;
    }
    *out = t->pointer ? tir_ptr(e) : tir_scalar(e);
    return true;
}

static void check_params(lang_ctx *c, const ast_kernel *k, tir_func *f) {
    for (const ast_param *p = k->params; p; p = p->next) {
        tir_type t;
        bool ok = resolve_type(c, &p->type, &t);
        if (!p->is_const) {
            if (p->default_value) {
                lang_error(c, p->default_value->span,
                           "only const parameters can have defaults ('%s' is a runtime parameter)", p->name.str);
            }
            operand o = lang_poison(p->name.span);
            if (ok) o = lang_value(tir_func_add_param(f, t, p->name.str), p->name.span);
            bind(c, &p->name, BIND_PARAM, o);
            continue;
        }
        operand o = lang_poison(p->name.span);
        if (ok && (t.elem == TIR_PTR || !tir_elem_is_int(tir_type_elem(t)))) {
            lang_error(c, p->type.span, "const parameters must be integers or i1, not %s", lang_type_str(c, t));
            ok = false;
        }
        const tilec_define *def = NULL;
        size_t used = 0;
        for (size_t i = 0; i < c->opt->ndefines; i++)
            if (!strcmp(c->opt->defines[i].name, p->name.str)) def = &c->opt->defines[i], used = i;
        if (ok && def) {
            c->define_used[used] = true;
            if (!lang_int_fits(def->value, tir_type_elem(t))) {
                lang_error(c, p->name.span, "%s = %lld (-D, or a define) does not fit in %s", p->name.str, (long long)def->value,
                           tir_elem_name(tir_type_elem(t)));
            } else {
                o.kind = OPND_CONST, o.type = t, o.ival = def->value;
            }
        } else if (ok && p->default_value) {
            c->emit = false;
            operand d = lang_check_expr(c, p->default_value);
            c->emit = true;
            c->depth = 0;
            if (d.kind == OPND_INTLIT || (d.kind == OPND_CONST)) {
                if (!lang_int_fits(d.ival, tir_type_elem(t)))
                    lang_error(c, p->default_value->span, "default %lld does not fit in %s", (long long)d.ival,
                               tir_elem_name(tir_type_elem(t)));
                else
                    o.kind = OPND_CONST, o.type = t, o.ival = d.ival;
            } else if (d.kind != OPND_POISON) {
                lang_error(c, p->default_value->span, "the default of '%s' must be an integer constant", p->name.str);
            }
        } else if (ok) {
            lang_error(c, p->name.span, "const parameter '%s' needs a value: give it a default, or a value with -D %s=... (or a define)",
                       p->name.str, p->name.str);
        }
        bind(c, &p->name, BIND_CONST_PARAM, o);
    }
}

/* The operand a let/var binds, after an optional annotation. */
static operand annotated(lang_ctx *c, const ast_stmt *s, operand v) {
    if (!s->type || v.kind == OPND_POISON) return v;
    tir_type t;
    if (!resolve_type(c, s->type, &t)) return lang_poison(s->span);
    tir_type have = lang_operand_type(&v);
    if (v.kind == OPND_INTLIT || v.kind == OPND_FLOATLIT) {
        if (t.elem == TIR_PTR) {
            lang_error(c, s->value->span, "cannot initialize '%s' of type %s with a number", s->name.str,
                       lang_type_str(c, t));
            return lang_poison(s->span);
        }
        return lang_value(lang_convert(c, &v, tir_type_elem(t), t, "the initializer"), s->value->span);
    }
    if (!tir_type_eq(tir_element_of(have), t)) {
        lang_error(c, s->value->span, "cannot initialize '%s' of type %s with %s", s->name.str, lang_type_str(c, t),
                   lang_type_str(c, have));
        return lang_poison(s->span);
    }
    return v;
}

static void name_value(operand *o, const char *name) {
    if (o->kind == OPND_VALUE && !o->v->name && o->v->def) o->v->name = name;
}

static void check_assign(lang_ctx *c, const ast_stmt *s) {
    operand v = lang_check_expr(c, s->value);
    binding *bd = lang_scope_find(c, s->name.str);
    if (!bd) {
        lang_error(c, s->name.span, "use of undeclared identifier '%s'", s->name.str);
        return;
    }
    if (bd->kind != BIND_VAR) {
        if (bd->kind == BIND_LET)
            lang_error(c, s->name.span, "cannot assign to '%s': it is declared with let (use var)", s->name.str);
        else
            lang_error(c, s->name.span, "cannot assign to parameter '%s'", s->name.str);
        return;
    }
    if (v.kind == OPND_POISON || bd->value.kind == OPND_POISON) return;
    tir_type want = bd->value.type, have = lang_operand_type(&v);
    if (v.kind == OPND_INTLIT || v.kind == OPND_FLOATLIT ||
        (v.kind == OPND_CONST && tir_type_eq(tir_element_of(want), have))) {
        tir_value *x = lang_convert(c, &v, tir_type_elem(want), want, "the assigned value");
        if (x) bd->value = lang_value(x, s->span);
        return;
    }
    if (!tir_type_eq(have, want)) {
        if (have.rank == 0 && want.rank && tir_type_eq(have, tir_element_of(want))) {
            bd->value = lang_value(lang_broadcast(c, lang_materialize(c, &v, tir_type_elem(want)), want), s->span);
            return;
        }
        lang_error(c, s->value->span, "cannot assign %s to '%s' of type %s", lang_type_str(c, have), s->name.str,
                   lang_type_str(c, want));
        return;
    }
    name_value(&v, bd->name);
    bd->value = v;
}

static void check_stmt(lang_ctx *c, const ast_stmt *s);

/* Marks the outer bindings (index < mark) that the statements assign. */
static void mark_assigned(lang_ctx *c, const ast_stmt *s, uint32_t mark, bool *assigned) {
    for (; s; s = s->next) {
        if (s->kind == AST_FOR || s->kind == AST_IF || s->kind == AST_WHILE) mark_assigned(c, s->body, mark, assigned);
        if (s->kind == AST_IF) mark_assigned(c, s->alt, mark, assigned);
        if (s->kind != AST_ASSIGN) continue;
        binding *bd = lang_scope_find(c, s->name.str);
        if (bd && (uint32_t)(bd - c->binds) < mark) assigned[bd - c->binds] = true;
    }
}

/* The vars of the enclosing code (bindings below c->nbinds) that `a` or
 * `b` assign and that hold IR values: what a loop carries or an if
 * yields. Their binding indices go to *out; returns how many. */
static uint32_t changed_vars(lang_ctx *c, const ast_stmt *a, const ast_stmt *b, uint32_t **out) {
    uint32_t mark = c->nbinds;
    bool *assigned = TC_NEW_ARRAY(c->arena, bool, mark + 1);
    mark_assigned(c, a, mark, assigned);
    mark_assigned(c, b, mark, assigned);
    uint32_t *idx = TC_NEW_ARRAY(c->arena, uint32_t, mark + 1), n = 0;
    for (uint32_t i = 0; i < mark; i++)
        if (assigned[i] && c->binds[i].kind == BIND_VAR && c->binds[i].value.kind == OPND_VALUE) idx[n++] = i;
    *out = idx;
    return n;
}

/* Checks a block of statements in a scope of its own: names it binds end
 * with it; assignments to enclosing vars stay. */
static void check_scoped(lang_ctx *c, const ast_stmt *list) {
    uint32_t mark = c->nbinds;
    for (; list; list = list->next) check_stmt(c, list);
    lang_scope_truncate(c, mark);
}

typedef enum cond_kind { COND_ERROR, COND_CONST, COND_VALUE } cond_kind;

/* The condition of an if or while: a scalar i1, either known now (a const
 * parameter, a literal, arithmetic on them: *known) or an IR value (*v). */
static cond_kind check_cond(lang_ctx *c, const ast_expr *e, const char *stmt, tir_value **v, bool *known) {
    operand o = lang_check_expr(c, e);
    if (o.kind == OPND_POISON) return COND_ERROR;
    tir_type t = lang_operand_type(&o);
    if (t.rank) {
        lang_error(c, e->span,
                   "the condition of '%s' must be a scalar, not %s (reduce the tile first, e.g. with max(...), "
                   "or choose per element with where)",
                   stmt, lang_operand_str(c, &o));
        return COND_ERROR;
    }
    if (o.kind == OPND_INTLIT || o.kind == OPND_FLOATLIT || t.elem != TIR_I1) {
        lang_error(c, e->span, "the condition of '%s' must be i1, not %s (compare it, e.g. x != 0)", stmt,
                   lang_operand_str(c, &o));
        return COND_ERROR;
    }
    if (o.kind == OPND_CONST) {
        *known = o.ival != 0;
        return COND_CONST;
    }
    *v = o.v;
    return COND_VALUE;
}

static void set_var(binding *bd, tir_value *v) {
    v->name = bd->name;
    bd->value = lang_value(v, bd->span);
}

/* The current values of the given vars, or `fallback`'s after an error. */
static tir_value **current_values(lang_ctx *c, const uint32_t *idx, uint32_t n, tir_value *const *fallback) {
    tir_value **out = TC_NEW_ARRAY(c->arena, tir_value *, n + 1);
    for (uint32_t k = 0; k < n; k++) {
        const operand *v = &c->binds[idx[k]].value;
        out[k] = v->kind == OPND_VALUE ? v->v : fallback[k];
    }
    return out;
}

/* if c { a } else { b }. A condition known at compile time (a const
 * parameter, say) folds the statement away: only the branch taken is
 * checked, so the other may use what only other specializations allow.
 * Otherwise one IR `if`: the vars either branch assigns become its
 * results, each branch yielding its own final values of them. */
static void check_if(lang_ctx *c, const ast_stmt *s) {
    if (!c->emit) return;
    tir_value *cv = NULL;
    bool known = false;
    cond_kind kind = check_cond(c, s->value, "if", &cv, &known);
    if (kind != COND_VALUE) {
        if (kind == COND_ERROR || known) check_scoped(c, s->body);
        if (kind == COND_ERROR || !known) check_scoped(c, s->alt);
        return;
    }
    uint32_t *idx;
    uint32_t n = changed_vars(c, s->body, s->alt, &idx);
    if (n > TIR_MAX_OPERANDS) {
        lang_error(c, s->span, "too many variables change in this if (limit is %d)", TIR_MAX_OPERANDS);
        return;
    }
    tir_value **before = current_values(c, idx, n, NULL);
    tir_type *types = TC_NEW_ARRAY(c->arena, tir_type, n + 1);
    for (uint32_t k = 0; k < n; k++) types[k] = before[k]->type;
    lang_set_loc(c, s->span);
    tir_op *op = tir_build_if(&c->b, cv, n, types);
    tir_builder outside = c->b;
    for (int branch = 0; branch < 2; branch++) {
        tir_builder_at_end(&c->b, branch ? op->body2 : op->body);
        c->b.loc = outside.loc;
        for (uint32_t k = 0; k < n; k++) c->binds[idx[k]].value = lang_value(before[k], c->binds[idx[k]].span);
        check_scoped(c, branch ? s->alt : s->body);
        lang_set_loc(c, (tc_span){.off = s->span.off + s->span.len - 1, .len = 1});
        tir_build_op(&c->b, TIR_OP_YIELD, n, current_values(c, idx, n, before), 0, NULL);
    }
    c->b = outside;
    for (uint32_t k = 0; k < n; k++) set_var(&c->binds[idx[k]], op->results[k]);
}

/* while c { body }: one IR `while`. The vars the body assigns are carried:
 * the test block computes c from them, the body block the next ones. A
 * condition known false drops the loop (its body is not checked); known
 * true is an error, as the loop could never end. */
static void check_while(lang_ctx *c, const ast_stmt *s) {
    if (!c->emit) return;
    uint32_t *idx;
    uint32_t n = changed_vars(c, s->body, NULL, &idx);
    if (n > TIR_MAX_OPERANDS) {
        lang_error(c, s->span, "too many variables change in this loop (limit is %d)", TIR_MAX_OPERANDS);
        return;
    }
    tir_value **inits = current_values(c, idx, n, NULL);
    lang_set_loc(c, s->span);
    tir_op *op = tir_build_while(&c->b, n, inits);
    tir_builder outside = c->b;
    tir_builder_at_end(&c->b, op->body);
    c->b.loc = outside.loc;
    for (uint32_t k = 0; k < n; k++) set_var(&c->binds[idx[k]], op->body->args[k]);
    tir_value *cv = NULL;
    bool known = false;
    cond_kind kind = check_cond(c, s->value, "while", &cv, &known);
    if (kind == COND_CONST) {
        c->b = outside;
        tir_op_remove(op);
        for (uint32_t k = 0; k < n; k++) c->binds[idx[k]].value = lang_value(inits[k], c->binds[idx[k]].span);
        if (known) lang_error(c, s->value->span, "this loop never ends: its condition is always true");
        return;
    }
    if (cv) tir_build_op(&c->b, TIR_OP_YIELD, 1, &cv, 0, NULL);
    tir_builder_at_end(&c->b, op->body2);
    for (uint32_t k = 0; k < n; k++) set_var(&c->binds[idx[k]], op->body2->args[k]);
    check_scoped(c, s->body);
    lang_set_loc(c, (tc_span){.off = s->span.off + s->span.len - 1, .len = 1});
    tir_build_op(&c->b, TIR_OP_YIELD, n, current_values(c, idx, n, op->body2->args), 0, NULL);
    c->b = outside;
    for (uint32_t k = 0; k < n; k++) set_var(&c->binds[idx[k]], op->results[k]);
}

/* num_stages = N in range(...): a compile-time integer from 1 to
 * TILEC_MAX_NUM_STAGES; false after reporting. */
static bool check_num_stages(lang_ctx *c, const ast_expr *e, int *out) {
    operand o = lang_check_expr(c, e);
    if (o.kind == OPND_POISON) return false;
    if (o.kind != OPND_INTLIT && !(o.kind == OPND_CONST && o.type.elem != TIR_I1)) {
        lang_error(c, e->span, "num_stages must be a compile-time integer, not %s",
                   o.kind == OPND_VALUE ? "a value computed at run time" : lang_operand_str(c, &o));
        return false;
    }
    if (o.ival < 1 || o.ival > TILEC_MAX_NUM_STAGES) {
        lang_error(c, e->span, "num_stages must be from 1 to %d, not %lld", TILEC_MAX_NUM_STAGES, (long long)o.ival);
        return false;
    }
    *out = (int)o.ival;
    return true;
}

/* warp_specialize = true or false in range(...): a compile-time bool;
 * false after reporting. */
static bool check_warp_specialize(lang_ctx *c, const ast_expr *e, int *out) {
    operand o = lang_check_expr(c, e);
    if (o.kind == OPND_POISON) return false;
    if (o.kind != OPND_CONST || o.type.elem != TIR_I1) {
        lang_error(c, e->span, "warp_specialize must be true or false, not %s",
                   o.kind == OPND_VALUE ? "a value computed at run time" : lang_operand_str(c, &o));
        return false;
    }
    *out = o.ival ? TIR_WS_ON : TIR_WS_OFF;
    return true;
}

/* range(hi), range(lo, hi) or range(lo, hi, step), with an optional
 * num_stages = N (the software-pipelining depth of this loop) and
 * warp_specialize = true/false (a producer warpgroup for its copies, on
 * sm_90a: lower/warp_specialize.c): scalar integers of one type; false
 * after reporting. */
static bool check_range(lang_ctx *c, const ast_stmt *s, tir_value **bounds, int *num_stages, int *ws) {
    const ast_expr *r = s->value;
    int npos = 0;
    if (r->kind == AST_CALL)
        for (const ast_arg *a = r->u.call.args; a; a = a->next) npos += !a->name.str;
    if (r->kind != AST_CALL || strcmp(r->u.call.callee.str, "range") || npos < 1 || npos > 3) {
        lang_error(c, r->span, "a for loop runs over range(hi), range(lo, hi) or range(lo, hi, step)");
        return false;
    }
    operand o[3] = {0}; /* n >= 1 below, which -O3 cannot see */
    int n = 0;
    bool ok = true;
    for (const ast_arg *a = r->u.call.args; a; a = a->next) {
        if (a->name.str) {
            if (!strcmp(a->name.str, "warp_specialize")) {
                if (*ws) {
                    lang_error(c, a->name.span, "warp_specialize given twice");
                    ok = false;
                } else {
                    ok = check_warp_specialize(c, a->value, ws) && ok;
                }
            } else if (strcmp(a->name.str, "num_stages")) {
                lang_error(c, a->name.span, "range's named arguments are num_stages and warp_specialize, not '%s'",
                           a->name.str);
                ok = false;
            } else if (*num_stages) {
                lang_error(c, a->name.span, "num_stages given twice");
                ok = false;
            } else {
                ok = check_num_stages(c, a->value, num_stages) && ok;
            }
            continue;
        }
        if (n == 3) break;
        o[n] = lang_check_expr(c, a->value);
        tir_type t = lang_operand_type(&o[n]);
        if (o[n].kind == OPND_POISON) {
            ok = false;
        } else if (t.rank || !tir_elem_is_int(tir_type_elem(t)) || t.elem == TIR_I1 || o[n].kind == OPND_FLOATLIT) {
            lang_error(c, a->value->span, "range bounds must be scalar integers, not %s", lang_operand_str(c, &o[n]));
            ok = false;
        }
        n++;
    }
    if (!ok) return false;
    operand lo = n == 1 ? (operand){.kind = OPND_INTLIT, .ival = 0, .span = r->span} : o[0];
    operand hi = n == 1 ? o[0] : o[1];
    operand step = n == 3 ? o[2] : (operand){.kind = OPND_INTLIT, .ival = 1, .span = r->span};
    if ((step.kind == OPND_INTLIT || step.kind == OPND_CONST) && step.ival <= 0) {
        lang_error(c, step.span, "range step must be positive, not %lld", (long long)step.ival);
        return false;
    }
    tir_elem el, e2;
    lang_common_elem(&lo, &hi, &el);
    operand typed = {.kind = OPND_CONST, .type = tir_scalar(el)};
    lang_common_elem(&typed, &step, &e2);
    if (!lang_literal_fits(c, &lo, e2) || !lang_literal_fits(c, &hi, e2) || !lang_literal_fits(c, &step, e2))
        return false;
    bounds[0] = lang_materialize(c, &lo, e2);
    bounds[1] = lang_materialize(c, &hi, e2);
    bounds[2] = lang_materialize(c, &step, e2);
    return true;
}

/* for v in range(...) { body }: one IR loop. Vars of the enclosing code
 * that the body assigns are carried around it: they enter as the loop's
 * inits, are the body's block arguments inside, leave as its results. */
static void check_for(lang_ctx *c, const ast_stmt *s) {
    if (!c->emit) return;
    tir_value *bounds[3];
    int num_stages = 0, ws = TIR_WS_AUTO;
    if (!check_range(c, s, bounds, &num_stages, &ws)) return;
    uint32_t mark = c->nbinds;
    uint32_t *carried;
    uint32_t ncarried = changed_vars(c, s->body, NULL, &carried);
    tir_value **inits = current_values(c, carried, ncarried, NULL);
    if (ncarried + 3 > TIR_MAX_OPERANDS) {
        lang_error(c, s->span, "too many variables change in this loop (limit is %d)", TIR_MAX_OPERANDS - 3);
        return;
    }
    lang_set_loc(c, s->span);
    tir_op *loop = tir_build_for(&c->b, bounds[0], bounds[1], bounds[2], ncarried, inits);
    loop->num_stages = num_stages;
    loop->warp_specialize = ws;
    tir_builder outside = c->b;
    tir_builder_at_end(&c->b, loop->body);
    c->b.loc = outside.loc;
    loop->body->args[0]->name = s->name.str;
    bind(c, &s->name, BIND_LET, lang_value(loop->body->args[0], s->name.span));
    for (uint32_t k = 0; k < ncarried; k++) {
        binding *bd = &c->binds[carried[k]];
        loop->body->args[k + 1]->name = bd->name;
        bd->value = lang_value(loop->body->args[k + 1], bd->span);
    }
    for (const ast_stmt *b = s->body; b; b = b->next) check_stmt(c, b);
    tir_value **yields = TC_NEW_ARRAY(c->arena, tir_value *, ncarried + 1);
    for (uint32_t k = 0; k < ncarried; k++) {
        operand *v = &c->binds[carried[k]].value;
        yields[k] = v->kind == OPND_VALUE ? v->v : loop->body->args[k + 1]; /* after an error: anything typed */
    }
    lang_set_loc(c, (tc_span){.off = s->span.off + s->span.len - 1, .len = 1});
    tir_build_op(&c->b, TIR_OP_YIELD, ncarried, yields, 0, NULL);
    lang_scope_truncate(c, mark); /* the loop variable and the body's names end here */
    c->b = outside;
    for (uint32_t k = 0; k < ncarried; k++) {
        binding *bd = &c->binds[carried[k]];
        loop->results[k]->name = bd->name;
        bd->value = lang_value(loop->results[k], bd->span);
    }
}

static void check_stmt(lang_ctx *c, const ast_stmt *s) {
    c->depth = 0;
    switch (s->kind) {
    case AST_LET:
    case AST_VAR: {
        operand v = annotated(c, s, lang_check_expr(c, s->value));
        if (s->kind == AST_VAR && v.kind != OPND_POISON && v.kind != OPND_VALUE) {
            /* a var needs a fixed type from the start: literals take their default */
            tir_type t = lang_operand_type(&v);
            v = lang_value(lang_materialize(c, &v, tir_type_elem(t)), v.span);
        }
        name_value(&v, s->name.str);
        bind(c, &s->name, s->kind == AST_LET ? BIND_LET : BIND_VAR, v);
        break;
    }
    case AST_ASSIGN: check_assign(c, s); break;
    case AST_FOR: check_for(c, s); break;
    case AST_IF: check_if(c, s); break;
    case AST_WHILE: check_while(c, s); break;
    case AST_EXPR:
        if (s->value->kind != AST_CALL) {
            operand v = lang_check_expr(c, s->value);
            if (v.kind != OPND_POISON) lang_error(c, s->value->span, "expression result unused");
            break;
        }
        c->stmt_call = true;
        lang_check_expr(c, s->value);
        c->stmt_call = false;
        break;
    }
}

/* Whether a kernel of m, compiled or not, has a const parameter `name`:
 * with one kernel asked for (tilec_options.kernel), a define the file's
 * other kernels take is not a mistake (the runtime gives a stdlib file's
 * defines to whichever of its kernels a call launches). */
static bool any_const_named(const ast_module *m, const char *name) {
    for (const ast_kernel *k = m->kernels; k; k = k->next)
        for (const ast_param *p = k->params; p; p = p->next)
            if (p->is_const && !strcmp(p->name.str, name)) return true;
    return false;
}

tir_module *lang_to_tir(ast_module *m, const tilec_options *opt, tc_arena *arena, tc_diag *diag) {
    static const tilec_options defaults; /* what lang reads of it is 0 by default */
    if (!opt) opt = &defaults;
    int errors_before = diag->nerrors;
    lang_ctx c;
    memset(&c, 0, sizeof c);
    c.arena = arena;
    c.src = m->src;
    c.diag = diag;
    c.opt = opt;
    c.define_used = TC_NEW_ARRAY(arena, bool, opt->ndefines + 1);
    build_line_table(&c);
    tir_module *tm = tir_module_new(arena, m->src->name);
    bool found = false;
    for (const ast_kernel *k = m->kernels; k; k = k->next) {
        for (const ast_kernel *p = m->kernels; p != k; p = p->next)
            if (!strcmp(p->name.str, k->name.str)) {
                lang_error(&c, k->name.span, "redefinition of kernel '%s'", k->name.str);
                tc_note(diag, m->src, p->name.span, "'%s' was first defined here", p->name.str);
                break;
            }
        if (opt->kernel && strcmp(opt->kernel, k->name.str)) continue;
        found = true;
        lang_set_loc(&c, k->name.span);
        tir_func *f = tir_func_new(tm, k->name.str, c.b.loc);
        f->num_warps = opt->num_warps;
        f->num_stages = opt->num_stages;
        tir_builder_at_end(&c.b, f->body);
        lang_scope_reset(&c);
        c.emit = true;
        check_params(&c, k, f);
        for (const ast_stmt *s = k->body; s; s = s->next) check_stmt(&c, s);
        lang_set_loc(&c, (tc_span){.off = k->span.off + k->span.len ? k->span.off + k->span.len - 1 : 0, .len = 1});
        tir_build_op(&c.b, TIR_OP_RETURN, 0, NULL, 0, NULL);
    }
    if (opt->kernel && !found)
        tc_error_plain(diag, "no kernel named '%s' in %s", opt->kernel, m->src->name ? m->src->name : "the input");
    if (diag->nerrors > errors_before) return NULL;
    for (size_t i = 0; i < opt->ndefines; i++)
        if (!c.define_used[i] && !(opt->kernel && any_const_named(m, opt->defines[i].name)))
            tc_error_plain(diag, "%s (-D, or a define): no kernel compiled here has a const parameter of that name",
                           opt->defines[i].name);
    return diag->nerrors > errors_before ? NULL : tm;
}
