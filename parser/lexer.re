/* lexer.re - finds one token (re2c).
 *
 * Like SQLite's tokenizer, the lexer only says what kind of token starts at
 * a pointer and how long it is; the caller keeps the position, skips
 * whitespace and comments, and reports bad tokens. Literal values are
 * parsed later by the AST builders from the token's span.
 *
 * A string literal is one token, quotes and escapes included; the builder
 * (ast_string) decodes the escapes and reports bad ones. A string that
 * meets the end of its line (or a NUL byte) before its closing quote is
 * TK_BAD_STRING, reaching to there.
 *
 * The text may hold NUL bytes and need not end in one, so the caller copies
 * it with a NUL sentinel at `limit`; re2c's sentinel-with-bounds-check mode
 * (re2c:eof) treats a NUL before `limit` as an ordinary byte and never reads
 * past `limit`. */
#include <stdint.h>

#include "grammar.h"
#include "parser/internal.h"

uint32_t parse_lex(const char *z, const char *limit, int *kind) {
    const unsigned char *YYCURSOR = (const unsigned char *)z;
    const unsigned char *YYLIMIT = (const unsigned char *)limit;
    const unsigned char *YYMARKER = YYCURSOR;
    const unsigned char *start = YYCURSOR;
#define LEN() ((uint32_t)(YYCURSOR - start))
    /*!re2c
    re2c:define:YYCTYPE = "unsigned char";
    re2c:yyfill:enable = 0;
    re2c:eof = 0;

    ident  = [a-zA-Z_] [a-zA-Z0-9_]*;
    digits = [0-9] [0-9_]*;
    exp    = [eE] [+-]? [0-9] [0-9_]*;
    float  = digits "." [0-9_]* exp? | "." [0-9] [0-9_]* exp? | digits exp;
    // Any digit-led word is one integer token; the builder names a bad digit
    // ("invalid digit 'g' in hexadecimal literal") instead of the parser
    // seeing `12` followed by an identifier.
    int    = [0-9] [0-9a-zA-Z_]*;
    // Bytes that cannot start any token: a run of them is one error.
    junk   = [^a-zA-Z0-9_ \t\r\n\v\f+\-*/%<>=!&|^(){}[\],;:."];
    // Inside quotes: any byte but the quote, a backslash, a newline or NUL;
    // a backslash takes the next byte with it (a bad escape is the
    // builder's to report).
    strch  = [^"\\\n\x00] | "\\" [^\n\x00];

    $ { *kind = PARSE_TK_EOF; return 0; }

    [ \t\r\n\v\f]+                        { *kind = TK_SPACE; return LEN(); }
    "//" [^\n]*                           { *kind = TK_COMMENT; return LEN(); }
    "/*" ([^*] | "*"+ [^*/])* "*"+ "/"    { *kind = TK_COMMENT; return LEN(); }
    // Only matched when the full comment above is not: the comment runs to
    // the end of the text.
    "/*"                                  { *kind = TK_BAD_COMMENT; return (uint32_t)(YYLIMIT - start); }

    ["] strch* ["]                        { *kind = TK_STRING; return LEN(); }
    ["] strch* "\\"?                      { *kind = TK_BAD_STRING; return LEN(); }

    "kernel" { *kind = TK_KERNEL; return LEN(); }
    "let"    { *kind = TK_LET; return LEN(); }
    "var"    { *kind = TK_VAR; return LEN(); }
    "const"  { *kind = TK_CONST; return LEN(); }
    "true"   { *kind = TK_TRUE; return LEN(); }
    "false"  { *kind = TK_FALSE; return LEN(); }
    "for"    { *kind = TK_FOR; return LEN(); }
    "in"     { *kind = TK_IN; return LEN(); }
    "None"   { *kind = TK_NONE; return LEN(); }
    "if"     { *kind = TK_IF; return LEN(); }
    "else"   { *kind = TK_ELSE; return LEN(); }
    "while"  { *kind = TK_WHILE; return LEN(); }
    "return" | "break" | "continue"
             { *kind = TK_RESERVED; return LEN(); }
    ident    { *kind = TK_IDENT; return LEN(); }
    float    { *kind = TK_FLOAT; return LEN(); }
    int      { *kind = TK_INT; return LEN(); }

    "+"  { *kind = TK_PLUS; return LEN(); }
    "-"  { *kind = TK_MINUS; return LEN(); }
    "*"  { *kind = TK_STAR; return LEN(); }
    "/"  { *kind = TK_SLASH; return LEN(); }
    "%"  { *kind = TK_PERCENT; return LEN(); }
    "<"  { *kind = TK_LT; return LEN(); }
    "<=" { *kind = TK_LE; return LEN(); }
    ">"  { *kind = TK_GT; return LEN(); }
    ">=" { *kind = TK_GE; return LEN(); }
    "==" { *kind = TK_EQ; return LEN(); }
    "!=" { *kind = TK_NE; return LEN(); }
    "<<" { *kind = TK_SHL; return LEN(); }
    ">>" { *kind = TK_SHR; return LEN(); }
    "&"  { *kind = TK_AND; return LEN(); }
    "|"  { *kind = TK_OR; return LEN(); }
    "^"  { *kind = TK_XOR; return LEN(); }
    "!"  { *kind = TK_BANG; return LEN(); }
    "="  { *kind = TK_ASSIGN; return LEN(); }
    "("  { *kind = TK_LPAREN; return LEN(); }
    ")"  { *kind = TK_RPAREN; return LEN(); }
    "{"  { *kind = TK_LBRACE; return LEN(); }
    "}"  { *kind = TK_RBRACE; return LEN(); }
    "["  { *kind = TK_LBRACKET; return LEN(); }
    "]"  { *kind = TK_RBRACKET; return LEN(); }
    ","  { *kind = TK_COMMA; return LEN(); }
    ";"  { *kind = TK_SEMI; return LEN(); }
    ":"  { *kind = TK_COLON; return LEN(); }

    junk+ { *kind = TK_ILLEGAL; return LEN(); }
    *     { *kind = TK_ILLEGAL; return LEN(); }
    */
#undef LEN
}
