/* internal.h - private to parser/ (and the unit tests of its lexer and
 * grammar): the lexer's entry point, token names, and the state the
 * grammar actions share. Users of the parser need only parser/parser.h. */
#ifndef TILEC_PARSER_INTERNAL_H
#define TILEC_PARSER_INTERNAL_H

#include "parser/parser.h"

/* ---- inside the parser stage (shared by lexer, grammar and unit tests) --
 * Token codes are TK_* from the generated grammar.h; 0 is end of input. */
enum { PARSE_TK_EOF = 0 };

/* Finds the token at z. limit is the end of the text and *limit must be a
 * NUL byte (a sentinel; NUL bytes before it are ordinary invalid bytes).
 * Stores the token code in *kind and returns its length in bytes; at the
 * end returns 0 with PARSE_TK_EOF. Whitespace and comments come back as
 * TK_SPACE / TK_COMMENT; a run of invalid bytes as one TK_ILLEGAL; an
 * unterminated block comment as TK_BAD_COMMENT reaching to limit. */
uint32_t parse_lex(const char *z, const char *limit, int *kind);

/* How a token kind is named in messages: "';'", "'let'", "identifier". */
const char *parse_token_desc(int kind);

/* What the grammar actions and error hooks see (Lemon's %extra_context). */
enum { PARSE_SNAPSHOT = 64 };
typedef struct parse_ctx {
    ast_builder b;
    tc_span cur;       /* the token being fed to the parser */
    bool stop;         /* nesting overflow: the parse was abandoned */
    bool synthetic;    /* cur is a token the driver made up; don't report it */
    int quiet;         /* tokens left during which syntax errors are not reported */
    bool quiet_to_end; /* quiet up to and including the next ';' or '}' (after an
                          unterminated string, which swallowed the line's ')' and ';') */
    /* The parser's state stack before the current token, when it is at
     * most PARSE_SNAPSHOT deep (nsnapshot 0 otherwise): Lemon's default
     * reductions run before a syntax error is seen, and the states they
     * popped tell best what was expected. */
    uint16_t snapshot[PARSE_SNAPSHOT];
    int nsnapshot;
} parse_ctx;

/* Saves the parser's state stack into ctx->snapshot (grammar.y). */
void tcParseSnapshot(void *parser, parse_ctx *ctx);

#endif
