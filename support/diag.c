/* diag.c - clang-style diagnostics rendered into a buffer.
 *
 *   vadd.tile:3:17: error: invalid operands to '*': *f32 and i32
 *       let y = x * 2;
 *                 ^
 * Columns count bytes from 1; tabs in the echoed line are kept so the caret
 * lines up in a terminal. Lines longer than DIAG_MAX_ECHO bytes are echoed
 * as a window around the column. Control bytes are shown as '?'. */
#include <stdio.h>
#include <string.h>

#include "support/support.h"

enum { DIAG_MAX_ECHO = 160 };

void tc_diag_init(tc_diag *d) {
    tc_strbuf_init(&d->out);
    d->nerrors = d->nwarnings = 0;
    d->color = false;
    d->echo = NULL;
}

void tc_diag_free(tc_diag *d) { tc_strbuf_free(&d->out); }

tc_loc tc_source_loc(const tc_source *src, uint32_t off) {
    tc_loc loc = {.line = 1, .col = 1};
    if (!src || !src->text) return loc;
    if (off > src->len) off = (uint32_t)src->len;
    for (uint32_t i = 0; i < off; i++) {
        if (src->text[i] == '\n') {
            loc.line++;
            loc.col = 1;
        } else {
            loc.col++;
        }
    }
    return loc;
}

/* Too many errors: report once that we stop, then swallow the rest. */
static bool over_limit(tc_diag *d) {
    if (d->nerrors < TC_MAX_ERRORS) return false;
    if (d->nerrors == TC_MAX_ERRORS)
        tc_strbuf_printf(&d->out, "tilec: error: too many errors (limit is %d), stopping\n", TC_MAX_ERRORS);
    d->nerrors++;
    return true;
}

static void echo_line(tc_diag *d, const tc_source *src, tc_span at) {
    size_t off = at.off > src->len ? src->len : at.off;
    size_t start = off, end = off;
    while (start > 0 && src->text[start - 1] != '\n') start--;
    while (end < src->len && src->text[end] != '\n') end++;
    size_t from = start, to = end;
    if (to - from > DIAG_MAX_ECHO) { /* window around the column */
        from = off > start + DIAG_MAX_ECHO / 2 ? off - DIAG_MAX_ECHO / 2 : start;
        to = from + DIAG_MAX_ECHO < end ? from + DIAG_MAX_ECHO : end;
    }
    tc_strbuf_puts(&d->out, "    ");
    for (size_t i = from; i < to; i++) {
        unsigned char c = (unsigned char)src->text[i];
        tc_strbuf_putc(&d->out, (c == '\t' || (c >= 0x20 && c < 0x7f) || c >= 0x80) ? (char)c : '?');
    }
    tc_strbuf_puts(&d->out, "\n    ");
    for (size_t i = from; i < off; i++) tc_strbuf_putc(&d->out, src->text[i] == '\t' ? '\t' : ' ');
    tc_strbuf_putc(&d->out, '^');
    size_t len = at.len;
    if (off + len > to) len = to > off ? to - off : 0;
    for (size_t i = 1; i < len; i++) tc_strbuf_putc(&d->out, '~');
    tc_strbuf_putc(&d->out, '\n');
}

static void report(tc_diag *d, const char *kind, const tc_source *src, tc_span at, const char *fmt,
                   va_list ap) {
    if (src) {
        tc_loc loc = tc_source_loc(src, at.off);
        tc_strbuf_printf(&d->out, "%s:%u:%u: %s: ", src->name ? src->name : "<input>", loc.line, loc.col,
                         kind);
    } else {
        tc_strbuf_printf(&d->out, "tilec: %s: ", kind);
    }
    tc_strbuf_vprintf(&d->out, fmt, ap);
    tc_strbuf_putc(&d->out, '\n');
    if (src && src->text) echo_line(d, src, at);
}

void tc_verror(tc_diag *d, const tc_source *src, tc_span at, const char *fmt, va_list ap) {
    if (over_limit(d)) return;
    d->nerrors++;
    report(d, "error", src, at, fmt, ap);
}

void tc_error(tc_diag *d, const tc_source *src, tc_span at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tc_verror(d, src, at, fmt, ap);
    va_end(ap);
}

void tc_note(tc_diag *d, const tc_source *src, tc_span at, const char *fmt, ...) {
    if (d->nerrors > TC_MAX_ERRORS) return;
    va_list ap;
    va_start(ap, fmt);
    report(d, "note", src, at, fmt, ap);
    va_end(ap);
}

/* The byte offset of a line and column of src, kept within the line (a
 * location from IR text read back may point past it). */
static size_t offset_at(const tc_source *src, tc_loc loc) {
    size_t off = 0;
    for (uint32_t line = 1; line < loc.line && off < src->len; off++)
        if (src->text[off] == '\n') line++;
    size_t end = off;
    while (end < src->len && src->text[end] != '\n') end++;
    size_t col = loc.col ? loc.col - 1 : 0;
    return off + col < end ? off + col : end;
}

void tc_error_loc(tc_diag *d, const char *file, tc_loc loc, const char *fmt, ...) {
    if (over_limit(d)) return;
    d->nerrors++;
    if (loc.line)
        tc_strbuf_printf(&d->out, "%s:%u:%u: error: ", file ? file : "<input>", loc.line, loc.col);
    else
        tc_strbuf_printf(&d->out, "%s: error: ", file ? file : "tilec");
    va_list ap;
    va_start(ap, fmt);
    tc_strbuf_vprintf(&d->out, fmt, ap);
    va_end(ap);
    tc_strbuf_putc(&d->out, '\n');
    const tc_source *src = d->echo;
    if (loc.line && src && src->text && src->name && file && !strcmp(file, src->name))
        echo_line(d, src, (tc_span){.off = (uint32_t)offset_at(src, loc), .len = 1});
}

void tc_error_plain(tc_diag *d, const char *fmt, ...) {
    if (over_limit(d)) return;
    d->nerrors++;
    va_list ap;
    va_start(ap, fmt);
    tc_strbuf_puts(&d->out, "tilec: error: ");
    tc_strbuf_vprintf(&d->out, fmt, ap);
    tc_strbuf_putc(&d->out, '\n');
    va_end(ap);
}
