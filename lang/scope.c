/* scope.c - the names of one kernel: parameters, lets, vars, loop variables.
 *
 * Bindings live in an array in definition order (a for body's names are
 * dropped by truncating it); a hash index over the array makes every lookup
 * constant time, so a kernel with tens of thousands of names checks in
 * linear time. A name is bound at most once at a time (redefinition is an
 * error), so the index never holds two live entries for one name. */
#include "lang/check.h"

enum {
    SCOPE_MIN_SLOTS = 64,  /* power of two */
    SCOPE_EMPTY = 0,       /* slot values: binding index + 1, or these */
    SCOPE_TOMB = UINT32_MAX
};

static uint32_t hash_name(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* The slot that holds `name`, or the empty slot that ends its probe chain. */
static uint32_t *find_slot(lang_ctx *c, const char *name) {
    uint32_t mask = c->nslots - 1;
    for (uint32_t i = hash_name(name) & mask;; i = (i + 1) & mask) {
        uint32_t v = c->slots[i];
        if (v == SCOPE_EMPTY) return &c->slots[i];
        if (v != SCOPE_TOMB && !strcmp(c->binds[v - 1].name, name)) return &c->slots[i];
    }
}

/* Rebuilds the index with room for the live bindings; drops tombstones. */
static void rehash(lang_ctx *c) {
    uint32_t n = SCOPE_MIN_SLOTS;
    while (n < 4 * (c->nbinds + 1)) n *= 2;
    c->slots = TC_NEW_ARRAY(c->arena, uint32_t, n); /* zeroed: all empty */
    c->nslots = n;
    c->nused = 0;
    for (uint32_t i = 0; i < c->nbinds; i++) {
        *find_slot(c, c->binds[i].name) = i + 1;
        c->nused++;
    }
}

void lang_scope_reset(lang_ctx *c) {
    c->nbinds = 0;
    rehash(c);
}

binding *lang_scope_find(lang_ctx *c, const char *name) {
    if (!c->slots) return NULL;
    uint32_t v = *find_slot(c, name);
    return v == SCOPE_EMPTY ? NULL : &c->binds[v - 1];
}

binding *lang_scope_add(lang_ctx *c, const char *name, binding_kind kind, operand value, tc_span span) {
    if (c->nbinds == c->capbinds) {
        uint32_t cap = c->capbinds ? c->capbinds * 2 : 32;
        binding *nb = TC_NEW_ARRAY(c->arena, binding, cap);
        if (c->nbinds) memcpy(nb, c->binds, sizeof(binding) * c->nbinds);
        c->binds = nb;
        c->capbinds = cap;
    }
    c->binds[c->nbinds++] = (binding){.name = name, .kind = kind, .value = value, .span = span};
    if (!c->slots || 2 * (c->nused + 1) > c->nslots) {
        rehash(c); /* indexes the new binding too */
    } else {
        *find_slot(c, name) = c->nbinds;
        c->nused++;
    }
    return &c->binds[c->nbinds - 1];
}

void lang_scope_truncate(lang_ctx *c, uint32_t mark) {
    while (c->nbinds > mark) {
        /* the bindings above mark are live and indexed: each has a slot */
        uint32_t *slot = find_slot(c, c->binds[c->nbinds - 1].name);
        *slot = SCOPE_TOMB;
        c->nbinds--;
    }
}
