/* support.h - the pieces every stage shares: an arena, a growable string
 * buffer, source files and clang-style diagnostics.
 *
 * Nothing here holds global state: a compilation owns one tc_arena and one
 * tc_diag, and several compilations may run on several threads at once. */
#ifndef TILEC_SUPPORT_H
#define TILEC_SUPPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- arena: one per compilation, freed at once ------------------------- */
typedef struct tc_arena tc_arena;

tc_arena *tc_arena_new(void);
void tc_arena_free(tc_arena *a);
/* Zeroed, 16-byte aligned memory that lives until tc_arena_free. Aborts
 * only when malloc itself fails. */
void *tc_arena_alloc(tc_arena *a, size_t size);
#define TC_NEW(a, T) ((T *)tc_arena_alloc((a), sizeof(T)))
#define TC_NEW_ARRAY(a, T, n) ((T *)tc_arena_alloc((a), sizeof(T) * (size_t)(n)))
char *tc_arena_strndup(tc_arena *a, const char *s, size_t n);
char *tc_arena_strdup(tc_arena *a, const char *s);
char *tc_arena_printf(tc_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- string buffer (heap, not arena: output outlives the compilation) -- */
typedef struct tc_strbuf {
    char *data; /* always NUL-terminated once anything was written */
    size_t len;
    size_t cap;
} tc_strbuf;

void tc_strbuf_init(tc_strbuf *b);
void tc_strbuf_free(tc_strbuf *b);
void tc_strbuf_putn(tc_strbuf *b, const char *s, size_t n);
void tc_strbuf_puts(tc_strbuf *b, const char *s);
void tc_strbuf_putc(tc_strbuf *b, char c);
void tc_strbuf_printf(tc_strbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tc_strbuf_vprintf(tc_strbuf *b, const char *fmt, va_list ap);
/* Hands the buffer's memory to the caller (free() it); b is left empty. */
char *tc_strbuf_take(tc_strbuf *b);

/* ---- sources and locations -------------------------------------------- */
typedef struct tc_source {
    const char *name; /* file name as given by the user */
    const char *text; /* need not be NUL-terminated; may hold NUL bytes */
    size_t len;
} tc_source;

/* A byte range in a source; line/col are computed when a message is made. */
typedef struct tc_span {
    uint32_t off;
    uint32_t len;
} tc_span;

/* A resolved position, 1-based; line 0 means "unknown". Used by the IR,
 * which outlives the source text. */
typedef struct tc_loc {
    uint32_t line;
    uint32_t col;
} tc_loc;

tc_loc tc_source_loc(const tc_source *src, uint32_t off);

/* ---- diagnostics --------------------------------------------------------
 * Messages are rendered clang-style into a buffer, never straight to stderr:
 *   file:line:col: error: message
 *     the source line
 *         ^~~~
 * The CLI prints the buffer; the runtime hands it to the user. */
enum { TC_MAX_ERRORS = 50 }; /* after this many, one "too many errors" line */

typedef struct tc_diag {
    tc_strbuf out;
    int nerrors;
    int nwarnings;
    bool color; /* reserved; output is plain text today */
    const tc_source *echo; /* the source an error at a tc_loc in a file of its
                              name echoes a line of, with a caret (the passes
                              and codegen report at the IR's tc_loc); NULL: none */
} tc_diag;

void tc_diag_init(tc_diag *d);
void tc_diag_free(tc_diag *d);
/* Error at a span of a source (src may be NULL: then no file/line/caret). */
void tc_error(tc_diag *d, const tc_source *src, tc_span at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void tc_verror(tc_diag *d, const tc_source *src, tc_span at, const char *fmt, va_list ap);
/* Error at a resolved location of a named file; the line and a caret
 * follow where d->echo is that file's text. */
void tc_error_loc(tc_diag *d, const char *file, tc_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A "note:" line following the previous error (same formats). */
void tc_note(tc_diag *d, const tc_source *src, tc_span at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Error with no location at all: "tilec: error: message". */
void tc_error_plain(tc_diag *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- files ------------------------------------------------------------- */
/* Reads a whole file into malloc'd memory; returns false and sets *err. */
bool tc_read_file(const char *path, char **data, size_t *len, const char **err);

/* ---- time -------------------------------------------------------------- */
double tc_now_ms(void);

/* ---- half precision (half.c): f16 and bf16 to and from double ---------- */
/* x rounded to nearest even into f16 bits (bf16: bfloat16 bits); past the
 * largest finite value, infinity of x's sign; a NaN, the quiet NaN of x's
 * sign (f16 0x7e00 or 0xfe00, bf16 0x7fc0 or 0xffc0). */
uint16_t tc_half_bits(double x, bool bf16);
/* The value of f16 (bf16) bits h, exact; a NaN is NAN with h's sign (its
 * payload is not kept). */
double tc_half_value(uint16_t h, bool bf16);

#endif
