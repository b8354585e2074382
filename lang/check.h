/* check.h - private to lang/: the checker's state and operands. */
#ifndef TILEC_LANG_CHECK_H
#define TILEC_LANG_CHECK_H

#include <string.h>

#include "lang/lang.h"

enum {
    LANG_MAX_EXPR_DEPTH = 1000, /* nested subexpressions in one expression */
    LANG_MAX_BINDINGS = 1 << 16 /* names in one kernel */
};

typedef enum operand_kind {
    OPND_POISON,   /* already reported */
    OPND_INTLIT,   /* untyped integer literal (ival) */
    OPND_FLOATLIT, /* untyped float literal (fval) */
    OPND_CONST,    /* compile-time integer of scalar type `type` (ival) */
    OPND_VALUE     /* an IR value (v, type) */
} operand_kind;

typedef struct operand {
    operand_kind kind;
    tir_type type;
    tir_value *v;
    int64_t ival;
    double fval;
    tc_span span;
} operand;

typedef enum binding_kind { BIND_LET, BIND_VAR, BIND_PARAM, BIND_CONST_PARAM } binding_kind;

typedef struct binding {
    const char *name;
    binding_kind kind;
    operand value;
    tc_span span;
} binding;

typedef struct lang_ctx {
    tc_arena *arena;
    const tc_source *src;
    tc_diag *diag;
    const tilec_options *opt;
    bool *define_used;       /* per opt->defines[i]: some kernel took it */
    tir_builder b;
    uint32_t *line_starts; /* byte offset of each line, for op locations */
    uint32_t nlines;
    binding *binds;          /* scope.c: in definition order */
    uint32_t nbinds, capbinds;
    uint32_t *slots;         /* scope.c: hash index into binds */
    uint32_t nslots, nused;  /* nused counts tombstones too */
    int depth;
    bool emit; /* false while checking const defaults: no IR may be built */
    bool stmt_call; /* the call being checked is a whole statement */
} lang_ctx;

#define lang_error(c, span, ...) tc_error((c)->diag, (c)->src, (span), __VA_ARGS__)

/* scope.c: the kernel's names. find gives NULL for an unbound name; add
 * does not check for redefinition; truncate drops the names bound after
 * `mark` (the end of a loop body). */
void lang_scope_reset(lang_ctx *c);
binding *lang_scope_find(lang_ctx *c, const char *name);
binding *lang_scope_add(lang_ctx *c, const char *name, binding_kind kind, operand value, tc_span span);
void lang_scope_truncate(lang_ctx *c, uint32_t mark);

const char *lang_type_str(lang_ctx *c, tir_type t);
const char *lang_operand_str(lang_ctx *c, const operand *o);
tir_type lang_operand_type(const operand *o);
bool lang_int_fits(int64_t v, tir_elem e);
void lang_set_loc(lang_ctx *c, tc_span at);
tir_value *lang_materialize(lang_ctx *c, const operand *o, tir_elem want);
bool lang_literal_fits(lang_ctx *c, const operand *o, tir_elem want);
tir_value *lang_broadcast(lang_ctx *c, tir_value *v, tir_type shape_of);
bool lang_common_elem(const operand *a, const operand *b, tir_elem *out);
bool lang_common_shape(const operand *a, const operand *b, tir_type *shape);
bool lang_broadcast_shapes(tir_type a, tir_type b, tir_type *shape);
bool lang_check_tile_size(lang_ctx *c, tc_span at, tir_type t);

operand lang_check_expr(lang_ctx *c, const ast_expr *e);
operand lang_check_call(lang_ctx *c, const ast_expr *e);
/* A value of element type `want` broadcast to `shape_of`, or NULL after an
 * error. `what` names the role in messages ("mask", "stored value"). */
tir_value *lang_convert(lang_ctx *c, const operand *o, tir_elem want, tir_type shape_of, const char *what);

static inline operand lang_poison(tc_span at) {
    operand o;
    memset(&o, 0, sizeof o);
    o.kind = OPND_POISON;
    o.span = at;
    return o;
}

static inline operand lang_value(tir_value *v, tc_span at) {
    operand o;
    memset(&o, 0, sizeof o);
    o.kind = v ? OPND_VALUE : OPND_POISON;
    o.v = v;
    if (v) o.type = v->type;
    o.span = at;
    return o;
}

#endif
