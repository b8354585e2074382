/* strbuf.c - a growable, always NUL-terminated string buffer on the heap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/support.h"

void tc_strbuf_init(tc_strbuf *b) {
    b->data = NULL;
    b->len = b->cap = 0;
}

void tc_strbuf_free(tc_strbuf *b) {
    free(b->data);
    tc_strbuf_init(b);
}

static void reserve(tc_strbuf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        fprintf(stderr, "tilec: out of memory (%zu bytes)\n", cap);
        abort();
    }
    b->data = p;
    b->cap = cap;
}

void tc_strbuf_putn(tc_strbuf *b, const char *s, size_t n) {
    reserve(b, n);
    if (n) memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void tc_strbuf_puts(tc_strbuf *b, const char *s) { tc_strbuf_putn(b, s, strlen(s)); }
void tc_strbuf_putc(tc_strbuf *b, char c) { tc_strbuf_putn(b, &c, 1); }

void tc_strbuf_vprintf(tc_strbuf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n <= 0) return;
    reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void tc_strbuf_printf(tc_strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tc_strbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *tc_strbuf_take(tc_strbuf *b) {
    if (!b->data) {
        char *p = malloc(1);
        if (!p) abort();
        p[0] = 0;
        return p;
    }
    char *p = b->data;
    tc_strbuf_init(b);
    return p;
}
