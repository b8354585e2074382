/* arena.c - bump allocation in chunks; everything is freed at once.
 *
 * A compilation allocates many small, same-lifetime objects (AST nodes, IR
 * ops); freeing them one by one would cost time and invite leaks. Requests
 * larger than a chunk get a chunk of their own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/support.h"

enum { ARENA_CHUNK = 64 * 1024, ARENA_ALIGN = 16 };

typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char mem[];
} arena_chunk;

struct tc_arena {
    arena_chunk *head;
};

static void *xmalloc(size_t n) {
    void *p = malloc(n);
    if (!p) {
        fprintf(stderr, "tilec: out of memory (%zu bytes)\n", n);
        abort();
    }
    return p;
}

tc_arena *tc_arena_new(void) {
    tc_arena *a = xmalloc(sizeof *a);
    a->head = NULL;
    return a;
}

void tc_arena_free(tc_arena *a) {
    if (!a) return;
    for (arena_chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

void *tc_arena_alloc(tc_arena *a, size_t size) {
    size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (size == 0) size = ARENA_ALIGN;
    arena_chunk *c = a->head;
    if (!c || c->cap - c->used < size) {
        size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;
        c = xmalloc(sizeof *c + cap);
        c->used = 0;
        c->cap = cap;
        /* A big one-off block goes behind the current chunk so the current
         * chunk's free space is still used. */
        if (a->head && size > ARENA_CHUNK) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    void *p = c->mem + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

char *tc_arena_strndup(tc_arena *a, const char *s, size_t n) {
    char *p = tc_arena_alloc(a, n + 1);
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *tc_arena_strdup(tc_arena *a, const char *s) { return tc_arena_strndup(a, s, strlen(s)); }

char *tc_arena_printf(tc_arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    char *p = tc_arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}
