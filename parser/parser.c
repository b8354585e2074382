/* parser.c - drives the lexer and the Lemon parser over one source file.
 *
 * The loop here owns everything between tokens: it skips whitespace and
 * comments, reports invalid bytes, unterminated comments and unterminated
 * strings (which never reach the grammar), enforces PARSE_MAX_NESTING on
 * parentheses, and turns a reserved word into an identifier after
 * reporting it so that one misuse does not also become a syntax error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "parser/internal.h"

/* Lemon's entry points (%name tcParse); grammar.h only has token codes. */
void *tcParseAlloc(void *(*mallocProc)(size_t), parse_ctx *ctx);
void tcParse(void *parser, int major, tc_span minor);
void tcParseFree(void *parser, void (*freeProc)(void *));

/* After a lexical error the parser sees a token stream with a hole in it;
 * its complaint about the hole would repeat ours, so syntax errors stay
 * quiet for this many tokens. */
enum { PARSE_QUIET_TOKENS = 4 };

const char *parse_token_desc(int kind) {
    switch (kind) {
    case PARSE_TK_EOF: return "end of file";
    case TK_IDENT: return "identifier";
    case TK_INT: return "integer literal";
    case TK_FLOAT: return "floating-point literal";
    case TK_STRING: return "string literal";
    case TK_KERNEL: return "'kernel'";
    case TK_FOR: return "'for'";
    case TK_IN: return "'in'";
    case TK_LET: return "'let'";
    case TK_VAR: return "'var'";
    case TK_CONST: return "'const'";
    case TK_TRUE: return "'true'";
    case TK_FALSE: return "'false'";
    case TK_PLUS: return "'+'";
    case TK_MINUS: return "'-'";
    case TK_STAR: return "'*'";
    case TK_SLASH: return "'/'";
    case TK_PERCENT: return "'%'";
    case TK_LT: return "'<'";
    case TK_LE: return "'<='";
    case TK_GT: return "'>'";
    case TK_GE: return "'>='";
    case TK_EQ: return "'=='";
    case TK_NE: return "'!='";
    case TK_SHL: return "'<<'";
    case TK_SHR: return "'>>'";
    case TK_AND: return "'&'";
    case TK_OR: return "'|'";
    case TK_XOR: return "'^'";
    case TK_BANG: return "'!'";
    case TK_ASSIGN: return "'='";
    case TK_LPAREN: return "'('";
    case TK_RPAREN: return "')'";
    case TK_LBRACE: return "'{'";
    case TK_RBRACE: return "'}'";
    case TK_LBRACKET: return "'['";
    case TK_RBRACKET: return "']'";
    case TK_NONE: return "'None'";
    case TK_IF: return "'if'";
    case TK_ELSE: return "'else'";
    case TK_WHILE: return "'while'";
    case TK_COMMA: return "','";
    case TK_SEMI: return "';'";
    case TK_COLON: return "':'";
    case TK_SPACE: return "whitespace";
    case TK_COMMENT: return "comment";
    case TK_ILLEGAL: return "invalid character";
    case TK_BAD_COMMENT: return "unterminated comment";
    case TK_RESERVED: return "reserved word";
    case TK_BAD_STRING: return "unterminated string";
    default: return "token";
    }
}

static void feed(void *parser, parse_ctx *ctx, int kind, tc_span span, bool synthetic) {
    ctx->cur = span;
    ctx->synthetic = synthetic;
    tcParseSnapshot(parser, ctx);
    tcParse(parser, kind, span);
    ctx->synthetic = false;
    if (ctx->quiet_to_end && (kind == TK_SEMI || kind == TK_RBRACE)) ctx->quiet_to_end = false, ctx->quiet = 0;
    if (ctx->quiet > 0 && !ctx->quiet_to_end) ctx->quiet--;
}

ast_module *parse_module(tc_arena *arena, const tc_source *src, tc_diag *diag) {
    ast_module *m = TC_NEW(arena, ast_module);
    m->src = src;
    if (src->len > PARSE_MAX_SOURCE) {
        tc_error(diag, NULL, (tc_span){.off = 0, .len = 0}, "%s: source file is too large (limit is %d bytes)",
                 src->name ? src->name : "<input>", PARSE_MAX_SOURCE);
        return m;
    }
    /* The arena zeroes memory, so text[len] is the NUL sentinel the lexer
     * needs; the source itself may lack one. */
    uint32_t len = (uint32_t)src->len;
    char *text = tc_arena_alloc(arena, (size_t)len + 1);
    if (len) memcpy(text, src->text, len);

    parse_ctx ctx = {.b = {.arena = arena, .src = src, .diag = diag, .module = m}};
    void *parser = tcParseAlloc(malloc, &ctx);
    if (!parser) {
        tc_error_plain(diag, "out of memory");
        return m;
    }
    int parens = 0, braces = 0;
    int kernel_errors = diag->nerrors; /* errors before the current kernel */
    uint32_t pos = 0;
    while (!ctx.stop) {
        /* Past the error limit nothing more gets reported: stop working. */
        if (diag->nerrors > TC_MAX_ERRORS) {
            ctx.stop = true;
            break;
        }
        int kind;
        uint32_t n = parse_lex(text + pos, text + len, &kind);
        if (kind == PARSE_TK_EOF) break;
        tc_span span = {.off = pos, .len = n};
        pos += n;
        switch (kind) {
        case TK_SPACE:
        case TK_COMMENT:
            continue;
        case TK_ILLEGAL: {
            unsigned char c = (unsigned char)text[span.off];
            if (c >= 0x20 && c < 0x7f)
                tc_error(diag, src, span, "invalid character '%c'", c);
            else
                tc_error(diag, src, span, "invalid character '\\x%02x'", c);
            ctx.quiet = PARSE_QUIET_TOKENS;
            continue;
        }
        case TK_BAD_COMMENT:
            tc_error(diag, src, (tc_span){.off = span.off, .len = 2}, "unterminated block comment");
            ctx.quiet = PARSE_QUIET_TOKENS;
            continue;
        case TK_BAD_STRING:
            tc_error(diag, src, (tc_span){.off = span.off, .len = 1}, "unterminated string literal (strings end on their line)");
            ctx.quiet = PARSE_QUIET_TOKENS;
            ctx.quiet_to_end = true;
            continue;
        case TK_RESERVED:
            tc_error(diag, src, span, "'%.*s' is a reserved word and cannot be used yet", (int)span.len,
                     text + span.off);
            ctx.quiet = PARSE_QUIET_TOKENS;
            kind = TK_IDENT;
            break;
        case TK_LPAREN:
            if (++parens > PARSE_MAX_NESTING) {
                tc_error(diag, src, span, "expression nested too deeply (limit is %d)", PARSE_MAX_NESTING);
                ctx.stop = true;
                continue;
            }
            break;
        case TK_RPAREN:
            if (parens > 0) parens--;
            break;
        /* Parentheses never span these, so a stray '(' is forgotten here
         * rather than counting against later expressions. */
        case TK_SEMI:
            parens = 0;
            break;
        case TK_LBRACE:
            parens = 0;
            if (++braces > PARSE_MAX_NESTING) {
                tc_error(diag, src, span, "blocks nested too deeply (limit is %d)", PARSE_MAX_NESTING);
                ctx.stop = true;
                continue;
            }
            break;
        case TK_RBRACE:
            parens = 0;
            if (braces > 0) braces--;
            break;
        case TK_KERNEL:
            parens = 0;
            /* Kernels don't nest, so 'kernel' inside an open body means its
             * '}' is missing: close the body for the parser rather than let
             * it swallow the next kernel. Reported only if nothing else in
             * this kernel was, since that error likely caused this one. */
            if (braces > 0) {
                if (diag->nerrors == kernel_errors)
                    tc_error(diag, src, span, "expected '}' before 'kernel'");
                for (; braces > 0 && !ctx.stop; braces--) feed(parser, &ctx, TK_RBRACE, (tc_span){.off = span.off, .len = 0}, true);
                braces = 0;
                if (ctx.stop) continue;
            }
            kernel_errors = diag->nerrors;
            break;
        default:
            break;
        }
        feed(parser, &ctx, kind, span, false);
    }
    if (!ctx.stop && braces > 0) {
        /* Same repair as for 'kernel' above, so the truncated kernel is
         * still in the module for later stages to check. */
        if (diag->nerrors == kernel_errors)
            tc_error(diag, src, (tc_span){.off = len, .len = 0}, "expected '}' at end of file");
        feed(parser, &ctx, TK_RBRACE, (tc_span){.off = len, .len = 0}, true);
    }
    if (!ctx.stop) feed(parser, &ctx, PARSE_TK_EOF, (tc_span){.off = len, .len = 0}, false);
    tcParseFree(parser, free);
    return m;
}
