/* ast.h - the AST the parser builds, and its builders: the part of the
 * language stage that the parser sees. It needs only support/, so nothing
 * before lang/ sees the tile IR; lang/lang.h, the stage's header, adds the
 * checks that turn an AST into tile IR.
 *
 * The parser calls only the ast_* builders below (one builder call per
 * grammar action). Everything is allocated in the compilation's arena. */
#ifndef TILEC_LANG_AST_H
#define TILEC_LANG_AST_H

#include "support/support.h"

/* An identifier: a view into the source text, copied into the arena. */
typedef struct ast_name {
    const char *str; /* NUL-terminated */
    uint32_t len;
    tc_span span;
} ast_name;

/* A written type: `f32`, `*f16`, `i1`. Resolved by the checker. */
typedef struct ast_type {
    ast_name base; /* scalar type name */
    int pointer;   /* number of leading `*`; v0 accepts 0 or 1 */
    tc_span span;
} ast_type;

typedef enum ast_op {
    AST_OP_ADD, AST_OP_SUB, AST_OP_MUL, AST_OP_DIV, AST_OP_MOD,
    AST_OP_LT, AST_OP_LE, AST_OP_GT, AST_OP_GE, AST_OP_EQ, AST_OP_NE,
    AST_OP_AND, AST_OP_OR, AST_OP_XOR, AST_OP_SHL, AST_OP_SHR,
    AST_OP_NEG, /* unary - */
    AST_OP_NOT, /* unary ! : logical not on i1, bitwise complement on ints */
    AST_OP_PLUS /* unary + (kept so the checker can reject it on pointers) */
} ast_op;
const char *ast_op_spelling(ast_op op); /* "+", "<=", "!" ... */

typedef enum ast_expr_kind {
    AST_INT,    /* 42, 0x2a: int_value; type from context (see docs) */
    AST_FLOAT,  /* 1.5, 1e-3: float_value */
    AST_BOOL,   /* true / false: int_value 1/0 */
    AST_NAME,   /* a variable or parameter */
    AST_UNARY,  /* op operand */
    AST_BINARY, /* lhs op rhs */
    AST_CALL,   /* builtin(args): program_id, arange, load, store, ... */
    AST_INDEX,  /* base[:, None]: one `:` per dim of base, None inserts a dim */
    AST_TUPLE,  /* (a, b) or (a,): only as a shape or permutation argument */
    AST_STRING  /* "text": only as the message of print and assert (str, escapes decoded) */
} ast_expr_kind;

enum { AST_MAX_SUBSCRIPTS = 16 }; /* items in one [...]; the checker's rank limit is lower */

/* The items of a subscript under construction: bit i of none_mask set
 * when item i is None (else it is ':'). */
typedef struct ast_subs {
    uint32_t n, none_mask;
} ast_subs;

typedef struct ast_expr ast_expr;

/* A call argument, positional (name.str == NULL) or named (`mask=m`). */
typedef struct ast_arg {
    ast_name name;
    ast_expr *value;
    struct ast_arg *next;
} ast_arg;

struct ast_expr {
    ast_expr_kind kind;
    tc_span span; /* the whole expression */
    union {
        uint64_t int_value;
        double float_value;
        ast_name name;
        struct { ast_op op; tc_span op_span; ast_expr *operand; } unary;
        struct { ast_op op; tc_span op_span; ast_expr *lhs, *rhs; } binary;
        struct { ast_name callee; ast_arg *args; uint32_t nargs; } call;
        struct { ast_expr *base; uint32_t n, none_mask; } index;
        struct { ast_arg *items; uint32_t n; } tuple; /* items are positional */
        struct { const char *text; uint32_t len; } str; /* NUL-terminated, no NUL inside */
    } u;
};

typedef enum ast_stmt_kind {
    AST_LET,    /* let name [: type] = value; immutable binding */
    AST_VAR,    /* var name [: type] = value; mutable binding */
    AST_ASSIGN, /* name = value; only to a var */
    AST_EXPR,   /* value; (a call such as store) */
    AST_FOR,    /* for name in value { body }: value is a call to range */
    AST_IF,     /* if value { body } else { alt }: alt NULL without else */
    AST_WHILE   /* while value { body } */
} ast_stmt_kind;

typedef struct ast_stmt {
    ast_stmt_kind kind;
    tc_span span;
    ast_name name;   /* LET, VAR, ASSIGN */
    ast_type *type;  /* optional annotation on LET/VAR, else NULL */
    ast_expr *value;
    struct ast_stmt *body; /* AST_FOR, AST_WHILE; AST_IF's then branch */
    struct ast_stmt *alt;  /* AST_IF's else branch (an `else if` is one AST_IF) */
    struct ast_stmt *next;
} ast_stmt;

typedef struct ast_param {
    ast_name name;
    ast_type type;
    bool is_const;           /* `const N: i32 = 4`: specialized at compile time */
    ast_expr *default_value; /* only for const parameters; NULL if none */
    tc_span span;
    struct ast_param *next;
} ast_param;

typedef struct ast_kernel {
    ast_name name;
    ast_param *params;
    uint32_t nparams;
    ast_stmt *body;
    tc_span span;
    struct ast_kernel *next;
} ast_kernel;

typedef struct ast_module {
    const tc_source *src;
    ast_kernel *kernels;
    uint32_t nkernels;
} ast_module;

/* ---- builders (what the grammar actions call) -------------------------- */
typedef struct ast_builder {
    tc_arena *arena;
    const tc_source *src;
    tc_diag *diag;
    ast_module *module;
} ast_builder;

ast_name ast_make_name(ast_builder *b, tc_span span); /* copies the text */
ast_expr *ast_int(ast_builder *b, tc_span span);      /* parses the literal text; errors on overflow */
ast_expr *ast_float(ast_builder *b, tc_span span);
ast_expr *ast_bool(ast_builder *b, tc_span span, bool value);
/* Decodes \n \t \" \\ in the quoted token; reports any other escape. */
ast_expr *ast_string(ast_builder *b, tc_span span);
ast_expr *ast_ident(ast_builder *b, ast_name name);
ast_expr *ast_unary(ast_builder *b, ast_op op, tc_span op_span, ast_expr *operand);
ast_expr *ast_binary(ast_builder *b, ast_op op, tc_span op_span, ast_expr *lhs, ast_expr *rhs);
ast_expr *ast_call(ast_builder *b, ast_name callee, ast_arg *args, tc_span close_paren);
ast_arg *ast_arg_new(ast_builder *b, ast_name *name /* NULL: positional */, ast_expr *value);
ast_subs ast_subs_push(ast_builder *b, ast_subs s, bool is_none, tc_span at); /* errors past the limit */
ast_expr *ast_index(ast_builder *b, ast_expr *base, ast_subs subs, tc_span close_bracket);
ast_expr *ast_tuple(ast_builder *b, ast_arg *items, tc_span open_paren, tc_span close_paren);
ast_arg *ast_arg_append(ast_arg *list, ast_arg *arg); /* returns list head */
ast_type *ast_type_new(ast_builder *b, ast_name base, int pointer, tc_span span);
ast_stmt *ast_stmt_new(ast_builder *b, ast_stmt_kind kind, tc_span span, ast_name *name,
                       ast_type *type, ast_expr *value);
ast_stmt *ast_stmt_append(ast_stmt *list, ast_stmt *stmt);
ast_stmt *ast_for(ast_builder *b, tc_span span, ast_name var, ast_expr *range, ast_stmt *body);
ast_stmt *ast_if(ast_builder *b, tc_span span, ast_expr *cond, ast_stmt *then, ast_stmt *alt);
ast_stmt *ast_while(ast_builder *b, tc_span span, ast_expr *cond, ast_stmt *body);
ast_param *ast_param_new(ast_builder *b, bool is_const, ast_name name, ast_type *type,
                         ast_expr *default_value, tc_span span);
ast_param *ast_param_append(ast_param *list, ast_param *p);
ast_kernel *ast_kernel_new(ast_builder *b, ast_name name, ast_param *params, ast_stmt *body,
                           tc_span span);
void ast_module_add(ast_builder *b, ast_kernel *k);
tc_span tc_span_join(tc_span a, tc_span b);

/* Debug dump of the AST (for tests): an S-expression, one kernel a line. */
void ast_dump(tc_strbuf *out, const ast_module *m);

#endif
