/* parser.h - the front door: source text to AST.
 *
 * The lexer (parser/lexer.re, re2c) only finds a token and its length; the
 * grammar (parser/grammar.y, Lemon) calls one ast_* builder per action.
 * Both are generated at build time. */
#ifndef TILEC_PARSER_H
#define TILEC_PARSER_H

#include "lang/ast.h"
#include "support/support.h"

enum {
    PARSE_MAX_NESTING = 256,            /* parentheses/blocks deep */
    PARSE_MAX_SOURCE = 64 * 1024 * 1024 /* bytes in one source file */
};

/* Parses a whole file. Always returns a module (possibly partial); syntax
 * errors are in diag (diag->nerrors > 0). */
ast_module *parse_module(tc_arena *arena, const tc_source *src, tc_diag *diag);

#endif
