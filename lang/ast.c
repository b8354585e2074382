/* ast.c - the AST builders the grammar calls, and a debug dump.
 *
 * Builders never fail: a bad literal is reported and still yields a node
 * (value 0) so that parsing and checking carry on and find other errors. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/ast.h"

tc_span tc_span_join(tc_span a, tc_span b) {
    uint32_t start = a.off < b.off ? a.off : b.off;
    uint32_t end_a = a.off + a.len, end_b = b.off + b.len;
    uint32_t end = end_a > end_b ? end_a : end_b;
    return (tc_span){.off = start, .len = end - start};
}

const char *ast_op_spelling(ast_op op) {
    switch (op) {
    case AST_OP_ADD: return "+";
    case AST_OP_SUB: return "-";
    case AST_OP_MUL: return "*";
    case AST_OP_DIV: return "/";
    case AST_OP_MOD: return "%";
    case AST_OP_LT: return "<";
    case AST_OP_LE: return "<=";
    case AST_OP_GT: return ">";
    case AST_OP_GE: return ">=";
    case AST_OP_EQ: return "==";
    case AST_OP_NE: return "!=";
    case AST_OP_AND: return "&";
    case AST_OP_OR: return "|";
    case AST_OP_XOR: return "^";
    case AST_OP_SHL: return "<<";
    case AST_OP_SHR: return ">>";
    case AST_OP_NEG: return "-";
    case AST_OP_NOT: return "!";
    case AST_OP_PLUS: return "+";
    }
    return "?";
}

/* The span's bytes, clamped to the source so a bad span cannot overrun. */
static const char *span_text(const ast_builder *b, tc_span span, uint32_t *len) {
    size_t off = span.off <= b->src->len ? span.off : b->src->len;
    size_t n = span.len <= b->src->len - off ? span.len : b->src->len - off;
    *len = (uint32_t)n;
    return b->src->text + off;
}

ast_name ast_make_name(ast_builder *b, tc_span span) {
    uint32_t len;
    const char *t = span_text(b, span, &len);
    return (ast_name){.str = tc_arena_strndup(b->arena, t, len), .len = len, .span = span};
}

static ast_expr *new_expr(ast_builder *b, ast_expr_kind kind, tc_span span) {
    ast_expr *e = TC_NEW(b->arena, ast_expr);
    e->kind = kind;
    e->span = span;
    return e;
}

static int digit_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'z') return c - 'a' + 10;
    if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
    return 99;
}

ast_expr *ast_int(ast_builder *b, tc_span span) {
    ast_expr *e = new_expr(b, AST_INT, span);
    uint32_t len;
    const char *t = span_text(b, span, &len);
    unsigned base = 10;
    const char *what = "decimal";
    uint32_t i = 0;
    if (len >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
        base = 16, what = "hexadecimal", i = 2;
    } else if (len >= 2 && t[0] == '0' && (t[1] == 'b' || t[1] == 'B')) {
        base = 2, what = "binary", i = 2;
    }
    uint64_t v = 0;
    bool overflow = false;
    int ndigits = 0;
    for (; i < len; i++) {
        if (t[i] == '_') continue; /* digit separator */
        unsigned d = (unsigned)digit_value(t[i]);
        if (d >= base) {
            tc_error(b->diag, b->src, (tc_span){.off = span.off + i, .len = 1}, "invalid digit '%c' in %s literal", t[i],
                     what);
            return e;
        }
        ndigits++;
        if (v > (UINT64_MAX - d) / base) overflow = true;
        else v = v * base + d;
    }
    if (ndigits == 0) {
        tc_error(b->diag, b->src, span, "%s literal has no digits", what);
        return e;
    }
    if (overflow) {
        tc_error(b->diag, b->src, span, "integer literal is too large (the limit is %" PRIu64 ")", UINT64_MAX);
        return e;
    }
    e->u.int_value = v;
    return e;
}

ast_expr *ast_float(ast_builder *b, tc_span span) {
    ast_expr *e = new_expr(b, AST_FLOAT, span);
    uint32_t len;
    const char *t = span_text(b, span, &len);
    /* strtod needs a NUL-terminated string without separators. */
    char *s = tc_arena_alloc(b->arena, (size_t)len + 1);
    uint32_t n = 0;
    for (uint32_t i = 0; i < len; i++)
        if (t[i] != '_') s[n++] = t[i];
    s[n] = '\0';
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0') {
        tc_error(b->diag, b->src, span, "invalid floating-point literal");
        return e;
    }
    if (isinf(v)) {
        tc_error(b->diag, b->src, span, "floating-point literal is too large");
        return e;
    }
    e->u.float_value = v;
    return e;
}

ast_expr *ast_bool(ast_builder *b, tc_span span, bool value) {
    ast_expr *e = new_expr(b, AST_BOOL, span);
    e->u.int_value = value ? 1 : 0;
    return e;
}

ast_expr *ast_string(ast_builder *b, tc_span span) {
    ast_expr *e = new_expr(b, AST_STRING, span);
    uint32_t len;
    const char *t = span_text(b, span, &len);
    /* the lexer gave a whole token: a quote at each end */
    char *s = tc_arena_alloc(b->arena, (size_t)len + 1);
    uint32_t n = 0;
    for (uint32_t i = 1; i + 1 < len; i++) {
        if (t[i] != '\\') {
            s[n++] = t[i];
            continue;
        }
        char c = t[++i];
        switch (c) {
        case 'n': s[n++] = '\n'; break;
        case 't': s[n++] = '\t'; break;
        case '"': s[n++] = '"'; break;
        case '\\': s[n++] = '\\'; break;
        default:
            if (!b->diag) break;
            if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
                tc_error(b->diag, b->src, (tc_span){.off = span.off + i - 1, .len = 2},
                         "invalid escape '\\%c' in string literal (use \\n, \\t, \\\" or \\\\)", c);
            else
                tc_error(b->diag, b->src, (tc_span){.off = span.off + i - 1, .len = 2},
                         "invalid escape in string literal (use \\n, \\t, \\\" or \\\\)");
            break;
        }
    }
    s[n] = '\0';
    e->u.str.text = s;
    e->u.str.len = n;
    return e;
}

ast_expr *ast_ident(ast_builder *b, ast_name name) {
    ast_expr *e = new_expr(b, AST_NAME, name.span);
    e->u.name = name;
    return e;
}

ast_expr *ast_unary(ast_builder *b, ast_op op, tc_span op_span, ast_expr *operand) {
    ast_expr *e = new_expr(b, AST_UNARY, tc_span_join(op_span, operand->span));
    e->u.unary.op = op;
    e->u.unary.op_span = op_span;
    e->u.unary.operand = operand;
    return e;
}

ast_expr *ast_binary(ast_builder *b, ast_op op, tc_span op_span, ast_expr *lhs, ast_expr *rhs) {
    ast_expr *e = new_expr(b, AST_BINARY, tc_span_join(lhs->span, rhs->span));
    e->u.binary.op = op;
    e->u.binary.op_span = op_span;
    e->u.binary.lhs = lhs;
    e->u.binary.rhs = rhs;
    return e;
}

ast_expr *ast_call(ast_builder *b, ast_name callee, ast_arg *args, tc_span close_paren) {
    ast_expr *e = new_expr(b, AST_CALL, tc_span_join(callee.span, close_paren));
    e->u.call.callee = callee;
    e->u.call.args = args;
    for (ast_arg *a = args; a; a = a->next) e->u.call.nargs++;
    return e;
}

ast_arg *ast_arg_new(ast_builder *b, ast_name *name, ast_expr *value) {
    ast_arg *a = TC_NEW(b->arena, ast_arg);
    if (name) a->name = *name;
    a->value = value;
    return a;
}

ast_subs ast_subs_push(ast_builder *b, ast_subs s, bool is_none, tc_span at) {
    if (s.n == AST_MAX_SUBSCRIPTS) {
        if (b->diag) tc_error(b->diag, b->src, at, "too many subscripts (limit is %d)", AST_MAX_SUBSCRIPTS);
        s.n++; /* reported once: later items are past the limit too */
        return s;
    }
    if (s.n > AST_MAX_SUBSCRIPTS) return s;
    if (is_none) s.none_mask |= 1u << s.n;
    s.n++;
    return s;
}

ast_expr *ast_index(ast_builder *b, ast_expr *base, ast_subs subs, tc_span close_bracket) {
    ast_expr *e = new_expr(b, AST_INDEX, tc_span_join(base->span, close_bracket));
    e->u.index.base = base;
    e->u.index.n = subs.n > AST_MAX_SUBSCRIPTS ? AST_MAX_SUBSCRIPTS : subs.n;
    e->u.index.none_mask = subs.none_mask;
    return e;
}

ast_expr *ast_tuple(ast_builder *b, ast_arg *items, tc_span open_paren, tc_span close_paren) {
    ast_expr *e = new_expr(b, AST_TUPLE, tc_span_join(open_paren, close_paren));
    e->u.tuple.items = items;
    for (ast_arg *a = items; a; a = a->next) e->u.tuple.n++;
    return e;
}

/* The append builders walk from `list` to its end: pass the last element
 * (as the grammar does) to append in constant time. */
ast_arg *ast_arg_append(ast_arg *list, ast_arg *arg) {
    if (!list) return arg;
    ast_arg *t = list;
    while (t->next) t = t->next;
    t->next = arg;
    return list;
}

ast_type *ast_type_new(ast_builder *b, ast_name base, int pointer, tc_span span) {
    ast_type *t = TC_NEW(b->arena, ast_type);
    t->base = base;
    t->pointer = pointer;
    t->span = span;
    return t;
}

ast_stmt *ast_stmt_new(ast_builder *b, ast_stmt_kind kind, tc_span span, ast_name *name, ast_type *type,
                       ast_expr *value) {
    ast_stmt *s = TC_NEW(b->arena, ast_stmt);
    s->kind = kind;
    s->span = span;
    if (name) s->name = *name;
    s->type = type;
    s->value = value;
    return s;
}

ast_stmt *ast_for(ast_builder *b, tc_span span, ast_name var, ast_expr *range, ast_stmt *body) {
    ast_stmt *s = ast_stmt_new(b, AST_FOR, span, &var, NULL, range);
    s->body = body;
    return s;
}

ast_stmt *ast_if(ast_builder *b, tc_span span, ast_expr *cond, ast_stmt *then, ast_stmt *alt) {
    ast_stmt *s = ast_stmt_new(b, AST_IF, span, NULL, NULL, cond);
    s->body = then;
    s->alt = alt;
    return s;
}

ast_stmt *ast_while(ast_builder *b, tc_span span, ast_expr *cond, ast_stmt *body) {
    ast_stmt *s = ast_stmt_new(b, AST_WHILE, span, NULL, NULL, cond);
    s->body = body;
    return s;
}

ast_stmt *ast_stmt_append(ast_stmt *list, ast_stmt *stmt) {
    if (!list) return stmt;
    ast_stmt *t = list;
    while (t->next) t = t->next;
    t->next = stmt;
    return list;
}

ast_param *ast_param_new(ast_builder *b, bool is_const, ast_name name, ast_type *type, ast_expr *default_value,
                         tc_span span) {
    ast_param *p = TC_NEW(b->arena, ast_param);
    p->is_const = is_const;
    p->name = name;
    if (type) p->type = *type;
    p->default_value = default_value;
    p->span = span;
    return p;
}

ast_param *ast_param_append(ast_param *list, ast_param *p) {
    if (!list) return p;
    ast_param *t = list;
    while (t->next) t = t->next;
    t->next = p;
    return list;
}

ast_kernel *ast_kernel_new(ast_builder *b, ast_name name, ast_param *params, ast_stmt *body, tc_span span) {
    ast_kernel *k = TC_NEW(b->arena, ast_kernel);
    k->name = name;
    k->params = params;
    for (ast_param *p = params; p; p = p->next) k->nparams++;
    k->body = body;
    k->span = span;
    return k;
}

void ast_module_add(ast_builder *b, ast_kernel *k) {
    ast_module *m = b->module;
    ast_kernel **at = &m->kernels;
    while (*at) at = &(*at)->next;
    *at = k;
    m->nkernels++;
}

/* ---- dump ---------------------------------------------------------------- */

static void dump_type(tc_strbuf *out, const ast_type *t) {
    for (int i = 0; i < t->pointer; i++) tc_strbuf_putc(out, '*');
    tc_strbuf_puts(out, t->base.str ? t->base.str : "?");
}

/* Whole numbers print as "25000.0"; others in the shortest %g form that
 * reads back as the same double. Either way a '.' or exponent shows it is
 * not an integer. */
static void dump_float(tc_strbuf *out, double v) {
    char buf[64];
    if (v == (double)(int64_t)v && v > -1e15 && v < 1e15) {
        snprintf(buf, sizeof buf, "%.1f", v);
    } else {
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, v);
            if (strtod(buf, NULL) == v) break;
        }
    }
    tc_strbuf_puts(out, buf);
    if (!strpbrk(buf, ".eEn")) tc_strbuf_puts(out, ".0");
}

static void dump_expr(tc_strbuf *out, const ast_expr *e) {
    if (!e) {
        tc_strbuf_puts(out, "<null>");
        return;
    }
    switch (e->kind) {
    case AST_INT: tc_strbuf_printf(out, "%" PRIu64, e->u.int_value); break;
    case AST_FLOAT: dump_float(out, e->u.float_value); break;
    case AST_BOOL: tc_strbuf_puts(out, e->u.int_value ? "true" : "false"); break;
    case AST_NAME: tc_strbuf_puts(out, e->u.name.str); break;
    case AST_UNARY:
        tc_strbuf_printf(out, "(%s ", ast_op_spelling(e->u.unary.op));
        dump_expr(out, e->u.unary.operand);
        tc_strbuf_putc(out, ')');
        break;
    case AST_BINARY:
        tc_strbuf_printf(out, "(%s ", ast_op_spelling(e->u.binary.op));
        dump_expr(out, e->u.binary.lhs);
        tc_strbuf_putc(out, ' ');
        dump_expr(out, e->u.binary.rhs);
        tc_strbuf_putc(out, ')');
        break;
    case AST_CALL:
        tc_strbuf_printf(out, "(call %s", e->u.call.callee.str);
        for (const ast_arg *a = e->u.call.args; a; a = a->next) {
            tc_strbuf_putc(out, ' ');
            if (a->name.str) tc_strbuf_printf(out, "%s=", a->name.str);
            dump_expr(out, a->value);
        }
        tc_strbuf_putc(out, ')');
        break;
    case AST_INDEX:
        tc_strbuf_puts(out, "(index ");
        dump_expr(out, e->u.index.base);
        for (uint32_t i = 0; i < e->u.index.n; i++)
            tc_strbuf_puts(out, e->u.index.none_mask >> i & 1 ? " None" : " :");
        tc_strbuf_putc(out, ')');
        break;
    case AST_STRING:
        tc_strbuf_putc(out, '"');
        for (uint32_t i = 0; i < e->u.str.len; i++) {
            char c = e->u.str.text[i];
            if (c == '\n') tc_strbuf_puts(out, "\\n");
            else if (c == '\t') tc_strbuf_puts(out, "\\t");
            else if (c == '"' || c == '\\') tc_strbuf_printf(out, "\\%c", c);
            else tc_strbuf_putc(out, c);
        }
        tc_strbuf_putc(out, '"');
        break;
    case AST_TUPLE:
        tc_strbuf_puts(out, "(tuple");
        for (const ast_arg *a = e->u.tuple.items; a; a = a->next) {
            tc_strbuf_putc(out, ' ');
            dump_expr(out, a->value);
        }
        tc_strbuf_putc(out, ')');
        break;
    }
}

static void dump_stmt(tc_strbuf *out, const ast_stmt *s);

/* ` s1 s2 ...`, wrapped as `(then s1 ...)` when a group name is given. */
static void dump_stmts(tc_strbuf *out, const char *group, const ast_stmt *list) {
    tc_strbuf_puts(out, group);
    for (const ast_stmt *b = list; b; b = b->next) {
        tc_strbuf_putc(out, ' ');
        dump_stmt(out, b);
    }
    if (*group) tc_strbuf_putc(out, ')');
}

static void dump_stmt(tc_strbuf *out, const ast_stmt *s) {
    switch (s->kind) {
    case AST_LET:
    case AST_VAR:
        tc_strbuf_printf(out, "(%s %s", s->kind == AST_LET ? "let" : "var", s->name.str);
        if (s->type) {
            tc_strbuf_putc(out, ':');
            dump_type(out, s->type);
        }
        tc_strbuf_putc(out, ' ');
        dump_expr(out, s->value);
        tc_strbuf_putc(out, ')');
        break;
    case AST_ASSIGN:
        tc_strbuf_printf(out, "(= %s ", s->name.str);
        dump_expr(out, s->value);
        tc_strbuf_putc(out, ')');
        break;
    case AST_EXPR: dump_expr(out, s->value); break;
    case AST_FOR:
        tc_strbuf_printf(out, "(for %s ", s->name.str);
        dump_expr(out, s->value);
        for (const ast_stmt *b = s->body; b; b = b->next) {
            tc_strbuf_putc(out, ' ');
            dump_stmt(out, b);
        }
        tc_strbuf_putc(out, ')');
        break;
    case AST_IF:
    case AST_WHILE:
        tc_strbuf_puts(out, s->kind == AST_IF ? "(if " : "(while ");
        dump_expr(out, s->value);
        dump_stmts(out, s->kind == AST_IF ? " (then" : "", s->body);
        if (s->alt) dump_stmts(out, " (else", s->alt);
        tc_strbuf_putc(out, ')');
        break;
    }
}

void ast_dump(tc_strbuf *out, const ast_module *m) {
    for (const ast_kernel *k = m->kernels; k; k = k->next) {
        tc_strbuf_printf(out, "(kernel %s", k->name.str);
        for (const ast_param *p = k->params; p; p = p->next) {
            tc_strbuf_printf(out, " (param %s%s ", p->is_const ? "const " : "", p->name.str);
            dump_type(out, &p->type);
            if (p->default_value) {
                tc_strbuf_putc(out, ' ');
                dump_expr(out, p->default_value);
            }
            tc_strbuf_putc(out, ')');
        }
        for (const ast_stmt *s = k->body; s; s = s->next) {
            tc_strbuf_putc(out, ' ');
            dump_stmt(out, s);
        }
        tc_strbuf_puts(out, ")\n");
    }
}
