/* grammar.y - the tile language grammar (Lemon).
 *
 * Every action is one ast_* builder call; all nodes live in the arena, so
 * no symbol needs a destructor when Lemon discards it during error
 * recovery. Precedence, lowest to highest, is | ^ & (comparisons) (<< >>)
 * (+ -) (* / %) unary; comparisons are %nonassoc so `a < b < c` is a
 * syntax error and, unlike C, bind tighter than & ^ |.
 *
 * Error recovery uses Lemon's `error` symbol at two levels:
 *   - statement: `error ;` skips to the end of the statement, and
 *     `stmts error }` ends the kernel when the brace comes first;
 *   - kernel: `kernel error }` skips a kernel whose header is broken, and
 *     `kernels error` drops junk between kernels.
 * Lemon then reports nothing until three tokens were shifted, which keeps
 * one mistake from producing a cascade of messages (a completed kernel ends
 * that quiet period early). */

%name tcParse
%token_prefix TK_
%token_type {tc_span}
%extra_context {parse_ctx *ctx}
/* A few times PARSE_MAX_NESTING: each nesting level may hold several
 * symbols (`f(a, -(`). Checked against the limit in the %code below. */
%stack_size 1024
%start_symbol file

%include {
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser/internal.h"

/* Lists under construction: the head to hand on, the tail to append to. */
typedef struct parse_params { ast_param *head, *tail; } parse_params;
typedef struct parse_stmts { ast_stmt *head, *tail; } parse_stmts;
typedef struct parse_args { ast_arg *head, *tail; } parse_args;

struct yyParser;
static void parse_syntax_error(struct yyParser *p, int major, tc_span tok, parse_ctx *ctx);
}

/* Tokens the lexer makes but the grammar never shifts: the driver skips or
 * reports them before they reach the parser. */
%token SPACE COMMENT ILLEGAL BAD_COMMENT RESERVED BAD_STRING.

%syntax_error {
    parse_syntax_error(yypParser, yymajor, TOKEN, ctx);
}

%stack_overflow {
    /* The stack is gone; carrying on would only produce noise. */
    tc_error(ctx->b.diag, ctx->b.src, ctx->cur, "expression nested too deeply (limit is %d)",
             PARSE_MAX_NESTING);
    ctx->stop = true;
}

%left OR.
%left XOR.
%left AND.
%nonassoc EQ NE LT LE GT GE.
%left SHL SHR.
%left PLUS MINUS.
%left STAR SLASH PERCENT.
%right BANG.
%left LBRACKET.

/* Lists carry their last element so appending stays O(1). */
%type kernel {ast_kernel *}
%type params {parse_params}
%type param_list {parse_params}
%type param {ast_param *}
%type type {ast_type *}
%type stmts {parse_stmts}
%type stmt {ast_stmt *}
%type if_stmt {ast_stmt *}
%type expr {ast_expr *}
%type args {parse_args}
%type arg_list {parse_args}
%type arg {ast_arg *}
%type name {ast_name}
%type subs {ast_subs}
%type tuple {parse_args}

/* Arena memory: nothing to free when a symbol is popped. */
%default_destructor { (void)ctx; }

file ::= kernels.

kernels ::= .
/* A finished kernel ends any error recovery: the next kernel's mistakes
 * are its own, so Lemon's three-token quiet period is cut short. */
kernels ::= kernels kernel(K).  { if (K) ast_module_add(&ctx->b, K); yypParser->yyerrcnt = -1; }
kernels ::= kernels error.

kernel(K) ::= KERNEL(A) name(N) LPAREN params(P) RPAREN LBRACE stmts(S) RBRACE(Z).
    { K = ast_kernel_new(&ctx->b, N, P.head, S.head, tc_span_join(A, Z)); }
kernel(K) ::= KERNEL(A) name(N) LPAREN params(P) RPAREN LBRACE stmts(S) error RBRACE(Z).
    { K = ast_kernel_new(&ctx->b, N, P.head, S.head, tc_span_join(A, Z)); }
kernel(K) ::= KERNEL error RBRACE.  { K = NULL; }

name(N) ::= IDENT(T).  { N = ast_make_name(&ctx->b, T); }

params(L) ::= .                         { L.head = L.tail = NULL; }
params(L) ::= param_list(A).            { L = A; }
params(L) ::= param_list(A) COMMA.      { L = A; }
param_list(L) ::= param(P).             { L.head = L.tail = ast_param_append(NULL, P); }
param_list(L) ::= param_list(A) COMMA param(P).
    { L.head = A.head; ast_param_append(A.tail, P); L.tail = P; }

param(P) ::= name(N) COLON type(T).
    { P = ast_param_new(&ctx->b, false, N, T, NULL, tc_span_join(N.span, T->span)); }
param(P) ::= name(N) COLON type(T) ASSIGN expr(E).
    { P = ast_param_new(&ctx->b, false, N, T, E, tc_span_join(N.span, E->span)); }
param(P) ::= CONST(C) name(N) COLON type(T).
    { P = ast_param_new(&ctx->b, true, N, T, NULL, tc_span_join(C, T->span)); }
param(P) ::= CONST(C) name(N) COLON type(T) ASSIGN expr(E).
    { P = ast_param_new(&ctx->b, true, N, T, E, tc_span_join(C, E->span)); }

type(T) ::= name(N).            { T = ast_type_new(&ctx->b, N, 0, N.span); }
type(T) ::= STAR(S) type(U).    { T = ast_type_new(&ctx->b, U->base, U->pointer + 1, tc_span_join(S, U->span)); }

stmts(L) ::= .                  { L.head = L.tail = NULL; }
stmts(L) ::= stmts(A) stmt(S).
    { L = A; if (S) { if (A.tail) ast_stmt_append(A.tail, S); else L.head = S; L.tail = S; } }

stmt(S) ::= LET(K) name(N) ASSIGN expr(E) SEMI(Z).
    { S = ast_stmt_new(&ctx->b, AST_LET, tc_span_join(K, Z), &N, NULL, E); }
stmt(S) ::= LET(K) name(N) COLON type(T) ASSIGN expr(E) SEMI(Z).
    { S = ast_stmt_new(&ctx->b, AST_LET, tc_span_join(K, Z), &N, T, E); }
stmt(S) ::= VAR(K) name(N) ASSIGN expr(E) SEMI(Z).
    { S = ast_stmt_new(&ctx->b, AST_VAR, tc_span_join(K, Z), &N, NULL, E); }
stmt(S) ::= VAR(K) name(N) COLON type(T) ASSIGN expr(E) SEMI(Z).
    { S = ast_stmt_new(&ctx->b, AST_VAR, tc_span_join(K, Z), &N, T, E); }
stmt(S) ::= name(N) ASSIGN expr(E) SEMI(Z).
    { S = ast_stmt_new(&ctx->b, AST_ASSIGN, tc_span_join(N.span, Z), &N, NULL, E); }
stmt(S) ::= expr(E) SEMI(Z).
    { S = ast_stmt_new(&ctx->b, AST_EXPR, tc_span_join(E->span, Z), NULL, NULL, E); }
stmt(S) ::= FOR(K) name(N) IN expr(E) LBRACE stmts(B) RBRACE(Z).
    { S = ast_for(&ctx->b, tc_span_join(K, Z), N, E, B.head); }
stmt(S) ::= WHILE(K) expr(E) LBRACE stmts(B) RBRACE(Z).
    { S = ast_while(&ctx->b, tc_span_join(K, Z), E, B.head); }
stmt(S) ::= if_stmt(I).         { S = I; }
stmt(S) ::= error SEMI.         { S = NULL; }

/* if c { } [else { } | else if ...]: the braces are required, so an else
 * always belongs to the nearest if. */
if_stmt(S) ::= IF(K) expr(E) LBRACE stmts(A) RBRACE(Z).
    { S = ast_if(&ctx->b, tc_span_join(K, Z), E, A.head, NULL); }
if_stmt(S) ::= IF(K) expr(E) LBRACE stmts(A) RBRACE ELSE LBRACE stmts(B) RBRACE(Z).
    { S = ast_if(&ctx->b, tc_span_join(K, Z), E, A.head, B.head); }
if_stmt(S) ::= IF(K) expr(E) LBRACE stmts(A) RBRACE ELSE if_stmt(I).
    { S = ast_if(&ctx->b, tc_span_join(K, I->span), E, A.head, I); }

expr(E) ::= expr(A) OR(O) expr(B).       { E = ast_binary(&ctx->b, AST_OP_OR, O, A, B); }
expr(E) ::= expr(A) XOR(O) expr(B).      { E = ast_binary(&ctx->b, AST_OP_XOR, O, A, B); }
expr(E) ::= expr(A) AND(O) expr(B).      { E = ast_binary(&ctx->b, AST_OP_AND, O, A, B); }
expr(E) ::= expr(A) EQ(O) expr(B).       { E = ast_binary(&ctx->b, AST_OP_EQ, O, A, B); }
expr(E) ::= expr(A) NE(O) expr(B).       { E = ast_binary(&ctx->b, AST_OP_NE, O, A, B); }
expr(E) ::= expr(A) LT(O) expr(B).       { E = ast_binary(&ctx->b, AST_OP_LT, O, A, B); }
expr(E) ::= expr(A) LE(O) expr(B).       { E = ast_binary(&ctx->b, AST_OP_LE, O, A, B); }
expr(E) ::= expr(A) GT(O) expr(B).       { E = ast_binary(&ctx->b, AST_OP_GT, O, A, B); }
expr(E) ::= expr(A) GE(O) expr(B).       { E = ast_binary(&ctx->b, AST_OP_GE, O, A, B); }
expr(E) ::= expr(A) SHL(O) expr(B).      { E = ast_binary(&ctx->b, AST_OP_SHL, O, A, B); }
expr(E) ::= expr(A) SHR(O) expr(B).      { E = ast_binary(&ctx->b, AST_OP_SHR, O, A, B); }
expr(E) ::= expr(A) PLUS(O) expr(B).     { E = ast_binary(&ctx->b, AST_OP_ADD, O, A, B); }
expr(E) ::= expr(A) MINUS(O) expr(B).    { E = ast_binary(&ctx->b, AST_OP_SUB, O, A, B); }
expr(E) ::= expr(A) STAR(O) expr(B).     { E = ast_binary(&ctx->b, AST_OP_MUL, O, A, B); }
expr(E) ::= expr(A) SLASH(O) expr(B).    { E = ast_binary(&ctx->b, AST_OP_DIV, O, A, B); }
expr(E) ::= expr(A) PERCENT(O) expr(B).  { E = ast_binary(&ctx->b, AST_OP_MOD, O, A, B); }
expr(E) ::= MINUS(O) expr(A). [BANG]     { E = ast_unary(&ctx->b, AST_OP_NEG, O, A); }
expr(E) ::= PLUS(O) expr(A). [BANG]      { E = ast_unary(&ctx->b, AST_OP_PLUS, O, A); }
expr(E) ::= BANG(O) expr(A).             { E = ast_unary(&ctx->b, AST_OP_NOT, O, A); }
/* No node for parentheses; the expression's span grows to cover them so
 * carets for an enclosing operation include the ')'. */
expr(E) ::= LPAREN(L) expr(A) RPAREN(R). { E = A; E->span = tc_span_join(L, R); }
expr(E) ::= INT(T).                      { E = ast_int(&ctx->b, T); }
expr(E) ::= FLOAT(T).                    { E = ast_float(&ctx->b, T); }
expr(E) ::= TRUE(T).                     { E = ast_bool(&ctx->b, T, true); }
expr(E) ::= FALSE(T).                    { E = ast_bool(&ctx->b, T, false); }
/* "text": the checker accepts it only as the message of print and assert */
expr(E) ::= STRING(T).                   { E = ast_string(&ctx->b, T); }
expr(E) ::= name(N).                     { E = ast_ident(&ctx->b, N); }
expr(E) ::= name(N) LPAREN args(A) RPAREN(R). { E = ast_call(&ctx->b, N, A.head, R); }
/* x[:, None]: postfix, binding tighter than any operator */
expr(E) ::= expr(A) LBRACKET subs(S) RBRACKET(R). { E = ast_index(&ctx->b, A, S, R); }
/* (a, b), (a, b,) and (a,): shapes and permutations */
expr(E) ::= LPAREN(L) tuple(T) RPAREN(R).         { E = ast_tuple(&ctx->b, T.head, L, R); }
expr(E) ::= LPAREN(L) tuple(T) COMMA RPAREN(R).   { E = ast_tuple(&ctx->b, T.head, L, R); }
expr(E) ::= LPAREN(L) expr(A) COMMA RPAREN(R).    { E = ast_tuple(&ctx->b, ast_arg_new(&ctx->b, NULL, A), L, R); }

subs(S) ::= COLON(T).                  { S = ast_subs_push(&ctx->b, (ast_subs){.n = 0, .none_mask = 0}, false, T); }
subs(S) ::= NONE(T).                   { S = ast_subs_push(&ctx->b, (ast_subs){.n = 0, .none_mask = 0}, true, T); }
subs(S) ::= subs(A) COMMA COLON(T).    { S = ast_subs_push(&ctx->b, A, false, T); }
subs(S) ::= subs(A) COMMA NONE(T).     { S = ast_subs_push(&ctx->b, A, true, T); }

tuple(L) ::= expr(A) COMMA expr(B).
    { L.head = ast_arg_new(&ctx->b, NULL, A); L.tail = ast_arg_append(L.head, ast_arg_new(&ctx->b, NULL, B))->next; }
tuple(L) ::= tuple(A) COMMA expr(B).
    { L.head = A.head; L.tail = ast_arg_append(A.tail, ast_arg_new(&ctx->b, NULL, B))->next; }

args(L) ::= .                       { L.head = L.tail = NULL; }
args(L) ::= arg_list(A).            { L = A; }
args(L) ::= arg_list(A) COMMA.      { L = A; }
arg_list(L) ::= arg(X).             { L.head = L.tail = ast_arg_append(NULL, X); }
arg_list(L) ::= arg_list(A) COMMA arg(X).
    { L.head = A.head; ast_arg_append(A.tail, X); L.tail = X; }

arg(X) ::= expr(E).                 { X = ast_arg_new(&ctx->b, NULL, E); }
arg(X) ::= name(N) ASSIGN expr(E).  { X = ast_arg_new(&ctx->b, &N, E); }

%code {
_Static_assert(YYSTACKDEPTH >= 4 * PARSE_MAX_NESTING, "parser stack too small for PARSE_MAX_NESTING");

/* The set of terminals the parser would shift in its current state, found
 * by replaying the reductions each candidate would cause on a copy of the
 * state stack (Lemon's default reductions make a plain table look-up
 * miss tokens). */
static int expected_tokens(struct yyParser *p, bool *ok) {
    enum { SIM_MAX = YYSTACKDEPTH + 16 };
    YYACTIONTYPE base[SIM_MAX];
    int nbase = 0, count = 0;
    if (p->ctx->nsnapshot > 0) {
        for (int i = 0; i < p->ctx->nsnapshot; i++) base[nbase++] = (YYACTIONTYPE)p->ctx->snapshot[i];
    } else {
        for (yyStackEntry *e = p->yystack; e <= p->yytos && nbase < SIM_MAX; e++) base[nbase++] = e->stateno;
    }
    for (int tok = 1; tok < YYNTOKEN; tok++) {
        YYACTIONTYPE st[SIM_MAX];
        memcpy(st, base, sizeof(YYACTIONTYPE) * (size_t)nbase);
        int n = nbase;
        YYACTIONTYPE act = st[n - 1];
        ok[tok] = false;
        for (;;) {
            act = yy_find_shift_action((YYCODETYPE)tok, act);
            if (act >= YY_MIN_REDUCE && act <= YY_MAX_REDUCE) {
                int rule = act - YY_MIN_REDUCE;
                n += yyRuleInfoNRhs[rule];
                if (n < 1 || n >= SIM_MAX) break;
                act = yy_find_reduce_action(st[n - 1], (YYCODETYPE)yyRuleInfoLhs[rule]);
                st[n++] = act;
            } else {
                ok[tok] = act <= YY_MAX_SHIFTREDUCE || act == YY_ACCEPT_ACTION;
                break;
            }
        }
        count += ok[tok];
    }
    return count;
}

_Static_assert(sizeof(YYACTIONTYPE) <= sizeof(uint16_t), "parser states must fit the snapshot");

void tcParseSnapshot(void *parser, parse_ctx *ctx) {
    yyParser *p = parser;
    int n = (int)(p->yytos - p->yystack) + 1;
    if (n > PARSE_SNAPSHOT) {
        ctx->nsnapshot = 0;
        return;
    }
    for (int i = 0; i < n; i++) ctx->snapshot[i] = p->yystack[i].stateno;
    ctx->nsnapshot = n;
}

static bool is_comparison(int tok) {
    return tok == TK_EQ || tok == TK_NE || tok == TK_LT || tok == TK_LE || tok == TK_GT || tok == TK_GE;
}

/* "';'", "expression", "statement": what the parser wanted, condensed so
 * that the message names the few things that make sense, e.g. "expected
 * ';'" rather than every operator that could continue an expression. */
static void parse_syntax_error(struct yyParser *p, int major, tc_span tok, parse_ctx *ctx) {
    if (ctx->synthetic || ctx->quiet > 0) return;
    const tc_source *src = ctx->b.src;
    char found[96];
    if (major == 0) {
        snprintf(found, sizeof found, "end of file");
    } else {
        const char *t = src->text + tok.off;
        int len = tok.len > 32 ? 32 : (int)tok.len;
        snprintf(found, sizeof found, "'%.*s%s'", len, t, tok.len > 32 ? "..." : "");
    }
    /* `a < b < c`: the parser stands on `expr CMP expr` with a comparison
     * ahead, which %nonassoc made an error. */
    if (is_comparison(major) && p->yytos - p->yystack >= 2 && is_comparison(p->yytos[-1].major)) {
        tc_error(ctx->b.diag, src, tok,
                 "comparison operators cannot be chained; use parentheses and '&', e.g. '(a < b) & (b < c)'");
        return;
    }
    bool ok[YYNTOKEN];
    expected_tokens(p, ok);
    static const int expr_start[] = {TK_INT, TK_FLOAT, TK_TRUE, TK_FALSE, TK_IDENT, TK_LPAREN,
                                     TK_MINUS, TK_PLUS, TK_BANG, TK_STRING};
    static const int binops[] = {TK_OR, TK_XOR, TK_AND, TK_EQ, TK_NE, TK_LT, TK_LE, TK_GT,
                                 TK_GE, TK_SHL, TK_SHR, TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH,
                                 TK_PERCENT, TK_LBRACKET};
    enum { NSTART = sizeof expr_start / sizeof expr_start[0], NBIN = sizeof binops / sizeof binops[0] };
    const char *items[YYNTOKEN + 2];
    int nitems = 0;
    bool all_start = true;
    for (int i = 0; i < NSTART; i++) all_start &= ok[expr_start[i]];
    if (all_start) {
        for (int i = 0; i < NSTART; i++) ok[expr_start[i]] = false;
        if (ok[TK_LET] && ok[TK_VAR]) {
            ok[TK_LET] = ok[TK_VAR] = false;
            items[nitems++] = "statement";
        } else {
            items[nitems++] = "expression";
        }
    }
    /* Operators that could continue an expression are noise when a
     * terminator is also possible. */
    int others = 0;
    for (int t = 1; t < YYNTOKEN; t++) others += ok[t];
    int nops = 0;
    for (int i = 0; i < NBIN; i++) nops += ok[binops[i]];
    if (others > nops || nitems > 0)
        for (int i = 0; i < NBIN; i++) ok[binops[i]] = false;
    if (others > nops && ok[TK_LPAREN] && !all_start) ok[TK_LPAREN] = false; /* call after a name */
    for (int t = 1; t < YYNTOKEN; t++)
        if (ok[t]) items[nitems++] = parse_token_desc(t);
    if (nitems == 0 || nitems > 3) {
        tc_error(ctx->b.diag, src, tok, "unexpected %s", found);
    } else if (nitems == 1) {
        tc_error(ctx->b.diag, src, tok, "expected %s, found %s", items[0], found);
    } else if (nitems == 2) {
        tc_error(ctx->b.diag, src, tok, "expected %s or %s, found %s", items[0], items[1], found);
    } else {
        tc_error(ctx->b.diag, src, tok, "expected %s, %s or %s, found %s", items[0], items[1], items[2],
                 found);
    }
}
}
