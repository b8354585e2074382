/* reader.c - parses the text form the printer writes (tir_parse).
 *
 * Hand-written recursive descent over a tiny lexer: `%name`, `@name`,
 * words, numbers, punctuation; `//` comments are skipped (golden tests keep
 * their RUN and CHECK lines there). Values are looked up by name in a table
 * scoped like the IR: a loop body's names disappear at its closing brace.
 * The table is a stack with a hash index over it, so a function of many
 * values reads in linear time. The reader only builds; tir_verify judges
 * types afterwards. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tileir/tileir.h"

enum { READER_MAX_DEPTH = 64, READER_MAX_NAMES = 1 << 20 };

typedef struct named {
    const char *name;
    tir_value *v;
} named;

/* An entry of the hash index: a name and its position in the stack. It
 * is live while that position is below the stack's top and holds the name;
 * a name popped at a `}` leaves its entry, which its next definition
 * reuses. */
typedef struct name_slot {
    const char *name;
    uint32_t pos;
} name_slot;

typedef struct reader {
    const tc_source *src;
    tc_diag *diag;
    tc_arena *arena;
    tir_module *m;
    size_t pos;
    bool failed;
    named *names;      /* the names in scope, innermost last */
    uint32_t nnames, capnames;
    name_slot *index;  /* open addressing over every name defined; capacity a power of two */
    uint32_t nindex, capindex;
    name_slot *kernels; /* the kernel names read so far, likewise (pos unused) */
    uint32_t nkernels, capkernels;
    int depth;
} reader;

static bool at_end(reader *r) { return r->pos >= r->src->len; }
static char peekc(reader *r) { return at_end(r) ? 0 : r->src->text[r->pos]; }

static void skip_space(reader *r) {
    while (!at_end(r)) {
        char c = peekc(r);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            r->pos++;
        } else if (c == '/' && r->pos + 1 < r->src->len && r->src->text[r->pos + 1] == '/') {
            while (!at_end(r) && peekc(r) != '\n') r->pos++;
        } else {
            break;
        }
    }
}

static void error_here(reader *r, const char *what) {
    if (r->failed) return; /* one error per parse: after it, positions mean little */
    r->failed = true;
    tc_error(r->diag, r->src, (tc_span){.off = (uint32_t)r->pos, .len = 1}, "%s", what);
}

static bool is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

/* The next word ([A-Za-z0-9_.]+), or length 0. */
static size_t word(reader *r, const char **s) {
    skip_space(r);
    size_t start = r->pos;
    while (!at_end(r) && is_word_char(peekc(r))) r->pos++;
    *s = r->src->text + start;
    return r->pos - start;
}

static bool accept(reader *r, const char *tok) {
    skip_space(r);
    size_t n = strlen(tok);
    if (r->pos + n <= r->src->len && !memcmp(r->src->text + r->pos, tok, n)) {
        /* a keyword must not run into a longer word */
        if (is_word_char(tok[n - 1]) && r->pos + n < r->src->len && is_word_char(r->src->text[r->pos + n]))
            return false;
        r->pos += n;
        return true;
    }
    return false;
}

static bool expect(reader *r, const char *tok) {
    if (accept(r, tok)) return true;
    char msg[64];
    snprintf(msg, sizeof msg, "expected '%s'", tok);
    error_here(r, msg);
    return false;
}

static bool number(reader *r, int64_t *out) {
    skip_space(r);
    size_t start = r->pos;
    if (peekc(r) == '-') r->pos++;
    while (!at_end(r) && peekc(r) >= '0' && peekc(r) <= '9') r->pos++;
    if (r->pos == start || (r->pos == start + 1 && r->src->text[start] == '-')) {
        r->pos = start;
        error_here(r, "expected an integer");
        return false;
    }
    char buf[32];
    size_t n = r->pos - start;
    if (n >= sizeof buf) {
        error_here(r, "integer too long");
        return false;
    }
    memcpy(buf, r->src->text + start, n);
    buf[n] = 0;
    errno = 0;
    *out = strtoll(buf, NULL, 10);
    if (errno == ERANGE) {
        r->pos = start;
        error_here(r, "integer out of range (64 bits)");
        return false;
    }
    return true;
}

/* [a, b, ...]: up to TIR_MAX_RANK entries in 0..hi, into out (entries not
 * given keep out's). */
static bool index_list(reader *r, int64_t hi, const char *range_msg, int64_t *out) {
    if (!expect(r, "[")) return false;
    unsigned k = 0;
    do {
        int64_t d;
        if (k == TIR_MAX_RANK) {
            error_here(r, "too many dimensions (limit is 3)");
            return false;
        }
        if (!number(r, &d)) return false;
        if (d < 0 || d > hi) {
            error_here(r, range_msg);
            return false;
        }
        out[k++] = d;
    } while (accept(r, ","));
    return expect(r, "]");
}

static bool float_number(reader *r, double *out) {
    skip_space(r);
    size_t start = r->pos;
    while (!at_end(r) && (is_word_char(peekc(r)) || peekc(r) == '-' || peekc(r) == '+')) r->pos++;
    char buf[64];
    size_t n = r->pos - start;
    if (!n || n >= sizeof buf) {
        error_here(r, "expected a number");
        return false;
    }
    memcpy(buf, r->src->text + start, n);
    buf[n] = 0;
    char *end;
    *out = strtod(buf, &end);
    if (*end) {
        r->pos = start;
        error_here(r, "bad number");
        return false;
    }
    return true;
}

static int hex_digit(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* "text" with the printer's escapes (\n \t \" \\ \xHH) -> an arena copy. */
static bool quoted(reader *r, const char **out) {
    if (!expect(r, "\"")) return false;
    tc_strbuf b;
    tc_strbuf_init(&b);
    tc_strbuf_puts(&b, "");
    bool ok = false;
    for (;;) {
        char c = peekc(r);
        if (at_end(r) || c == '\n') {
            error_here(r, "unterminated string");
            break;
        }
        r->pos++;
        if (c == '"') {
            ok = true;
            break;
        }
        if (c != '\\') {
            if (c == 0) {
                r->pos--;
                error_here(r, "NUL byte in a string");
                break;
            }
            tc_strbuf_putc(&b, c);
            continue;
        }
        char e = peekc(r);
        r->pos++;
        int hi, lo;
        if (e == 'n') tc_strbuf_putc(&b, '\n');
        else if (e == 't') tc_strbuf_putc(&b, '\t');
        else if (e == '"' || e == '\\') tc_strbuf_putc(&b, e);
        else if (e == 'x' && r->pos + 2 <= r->src->len && (hi = hex_digit(r->src->text[r->pos])) >= 0 &&
                 (lo = hex_digit(r->src->text[r->pos + 1])) >= 0 && (hi || lo)) {
            tc_strbuf_putc(&b, (char)(hi * 16 + lo));
            r->pos += 2;
        } else {
            r->pos -= 2;
            error_here(r, "bad escape in a string (\\n, \\t, \\\", \\\\ or \\xHH, not \\x00)");
            break;
        }
    }
    if (ok) *out = tc_arena_strndup(r->arena, b.data, b.len);
    tc_strbuf_free(&b);
    return ok;
}

static bool parse_elem(reader *r, tir_type *t) {
    if (accept(r, "ptr")) {
        tir_type inner;
        if (!expect(r, "<") || !parse_elem(r, &inner) || !expect(r, ">")) return false;
        if (inner.elem == TIR_PTR) {
            error_here(r, "pointers to pointers are not supported");
            return false;
        }
        *t = tir_ptr(tir_type_elem(inner));
        return true;
    }
    const char *s;
    size_t n = word(r, &s);
    tir_elem e;
    if (!n || !tir_elem_from_name(s, n, &e)) {
        r->pos -= n;
        error_here(r, "expected an element type");
        return false;
    }
    *t = tir_scalar(e);
    return true;
}

static bool parse_list(reader *r, const char *key, uint16_t *v, unsigned *n, int64_t min) {
    if (!expect(r, key) || !expect(r, "=") || !expect(r, "[")) return false;
    *n = 0;
    do {
        int64_t x;
        if (*n >= TIR_MAX_RANK) {
            error_here(r, "too many dimensions (limit is 3)");
            return false;
        }
        if (!number(r, &x)) return false;
        if (x < min || x > 65535) {
            error_here(r, "layout size out of range");
            return false;
        }
        v[(*n)++] = (uint16_t)x;
    } while (accept(r, ","));
    return expect(r, "]");
}

/* After `#mma`: <wpc=[M, N]>; after `#dot_op`: <idx=I, kw=W, parent=#mma<...>>. */
static bool parse_mma_layout(reader *r, unsigned rank, bool dot_op, tir_layout *l) {
    int64_t idx = 0, kw = 0;
    if (!expect(r, "<")) return false;
    if (dot_op) {
        if (!expect(r, "idx") || !expect(r, "=") || !number(r, &idx) || !expect(r, ",") || !expect(r, "kw") ||
            !expect(r, "=") || !number(r, &kw) || !expect(r, ",") || !expect(r, "parent") || !expect(r, "=") ||
            !expect(r, "#mma") || !expect(r, "<"))
            return false;
        if (idx < 0 || idx > 1 || (kw != 1 && kw != 2 && kw != 4)) {
            error_here(r, "a dot_op layout needs idx 0 or 1 and kw 1, 2 or 4");
            return false;
        }
    }
    uint16_t wpc[TIR_MAX_RANK];
    unsigned n;
    if (!parse_list(r, "wpc", wpc, &n, 1) || !expect(r, ">") || (dot_op && !expect(r, ">"))) return false;
    if (n != 2 || rank != 2) {
        error_here(r, "mma and dot_op layouts are for 2-D tiles and list two warp counts");
        return false;
    }
    *l = tir_layout_mma(wpc[0], wpc[1]);
    if (dot_op) *l = tir_layout_dot_op(l, (unsigned)idx, (unsigned)kw);
    return true;
}

/* A smem type's `#shared<vec=V, per_phase=P, max_phase=M, ord=[...]>`
 * over its slot dims (all but the first). */
static bool parse_shared_layout(reader *r, unsigned rank, tir_layout *l) {
    int64_t sw[3];
    static const char *const keys[3] = {"vec", "per_phase", "max_phase"};
    if (!expect(r, "#shared") || !expect(r, "<")) return false;
    for (int i = 0; i < 3; i++) {
        if (!expect(r, keys[i]) || !expect(r, "=") || !number(r, &sw[i]) || !expect(r, ",")) return false;
        if (sw[i] < 1 || sw[i] > 128 || (sw[i] & (sw[i] - 1))) {
            error_here(r, "a shared layout's vec, per_phase and max_phase are powers of two up to 128");
            return false;
        }
    }
    uint16_t ord16[TIR_MAX_RANK];
    unsigned n;
    int64_t atom = 0;
    if (!parse_list(r, "ord", ord16, &n, 0)) return false;
    if (accept(r, ",")) { /* atom=A: rows in pieces of A elements */
        if (!expect(r, "atom") || !expect(r, "=") || !number(r, &atom)) return false;
        if (atom < 1 || atom > 128 || (atom & (atom - 1))) {
            error_here(r, "a shared layout's atom is a power of two up to 128");
            return false;
        }
    }
    if (!expect(r, ">")) return false;
    if (rank < 2 || n != rank - 1) {
        error_here(r, "a shared layout's order lists the slot's dims (all but the first)");
        return false;
    }
    uint8_t ord[TIR_MAX_RANK];
    for (unsigned i = 0; i < n; i++) {
        if (ord16[i] >= n) {
            error_here(r, "layout order names a dimension the layout does not have");
            return false;
        }
        ord[i] = (uint8_t)ord16[i];
    }
    *l = tir_layout_shared(n, ord, (unsigned)sw[0], (unsigned)sw[1], (unsigned)sw[2]);
    l->sw_atom = (uint8_t)atom;
    return true;
}

static bool parse_type(reader *r, tir_type *t) {
    skip_space(r);
    bool shared = accept(r, "smem");
    if (!shared && !accept(r, "tile")) return parse_elem(r, t);
    if (!expect(r, "<")) return false;
    uint32_t shape[TIR_MAX_RANK];
    unsigned rank = 0;
    /* dims: 1024x or 16x16x, then the element */
    for (;;) {
        skip_space(r);
        if (!(peekc(r) >= '0' && peekc(r) <= '9')) break;
        int64_t d = 0;
        while (!at_end(r) && peekc(r) >= '0' && peekc(r) <= '9') {
            d = d * 10 + (peekc(r) - '0');
            if (d > TIR_MAX_TILE_ELEMS) {
                error_here(r, "tile dimension too large");
                return false;
            }
            r->pos++;
        }
        if (rank == TIR_MAX_RANK) {
            error_here(r, "too many dimensions (limit is 3)");
            return false;
        }
        if (d < 1) {
            error_here(r, "tile dimensions must be positive");
            return false;
        }
        shape[rank++] = (uint32_t)d;
        if (peekc(r) != 'x') {
            error_here(r, "expected 'x' after a tile dimension");
            return false;
        }
        r->pos++;
    }
    if (rank == 0) {
        error_here(r, "a tile needs at least one dimension");
        return false;
    }
    tir_type el;
    if (!parse_elem(r, &el)) return false;
    *t = shared ? tir_smem(el, rank, shape) : tir_tile(el, rank, shape);
    if (tir_type_numel(*t) > TIR_MAX_TILE_ELEMS) {
        error_here(r, "tile too large");
        return false;
    }
    if (shared && accept(r, ",")) {
        if (!parse_shared_layout(r, rank, &t->layout)) return false;
        return expect(r, ">");
    }
    if (!shared && accept(r, ",")) {
        tir_layout l = {0};
        unsigned n1, n2, n3, n4;
        uint16_t ord[TIR_MAX_RANK];
        unsigned lrank = rank;
        skip_space(r);
        if (accept(r, "#dot_smem")) { /* <idx=I, parent=#mma<wpc=[M, N]>> */
            int64_t idx;
            if (!expect(r, "<") || !expect(r, "idx") || !expect(r, "=") || !number(r, &idx) || !expect(r, ",") ||
                !expect(r, "parent") || !expect(r, "=") || !expect(r, "#mma") || !parse_mma_layout(r, rank, false, &l) ||
                !expect(r, ">"))
                return false;
            if (idx < 0 || idx > 1) {
                error_here(r, "a dot_smem layout needs idx 0 or 1");
                return false;
            }
            t->layout = tir_layout_dot_smem(&l, (unsigned)idx);
            return expect(r, ">");
        }
        bool is_dot_op = accept(r, "#dot_op");
        if (is_dot_op || accept(r, "#mma")) {
            if (!parse_mma_layout(r, rank, is_dot_op, &l)) return false;
            t->layout = l;
            return expect(r, ">");
        }
        if (accept(r, "#slice")) {
            /* #slice<dim=K, spt=..., ...>: the parent blocked layout has one dim more */
            int64_t dim;
            if (!expect(r, "<") || !expect(r, "dim") || !expect(r, "=") || !number(r, &dim) || !expect(r, ","))
                return false;
            if (dim < 0 || dim > (int64_t)rank || rank + 1 > TIR_MAX_RANK) {
                error_here(r, "slice dim out of range");
                return false;
            }
            if (accept(r, "parent")) { /* #slice<dim=K, parent=#mma<wpc=[...]>>: a rank-1 tile of an mma one */
                if (!expect(r, "=") || !expect(r, "#mma") || !parse_mma_layout(r, 2, false, &l) || !expect(r, ">"))
                    return false;
                if (rank != 1 || dim > 1) {
                    error_here(r, "a slice of an mma layout is for 1-D tiles and drops dim 0 or 1");
                    return false;
                }
                t->layout = tir_layout_slice(&l, (unsigned)dim);
                return expect(r, ">");
            }
            l.kind = TIR_LAYOUT_SLICE;
            l.slice_dim = (uint8_t)dim;
            lrank = rank + 1;
        } else {
            if (!expect(r, "#blocked") || !expect(r, "<")) return false;
            l.kind = TIR_LAYOUT_BLOCKED;
        }
        if (!parse_list(r, "spt", l.spt, &n1, 1) || !expect(r, ",") || !parse_list(r, "tpw", l.tpw, &n2, 1) ||
            !expect(r, ",") || !parse_list(r, "wpc", l.wpc, &n3, 1) || !expect(r, ",") ||
            !parse_list(r, "ord", ord, &n4, 0) || !expect(r, ">"))
            return false;
        if (n1 != lrank || n2 != lrank || n3 != lrank || n4 != lrank) {
            error_here(r, l.kind == TIR_LAYOUT_SLICE ? "slice layout lists must have one entry per dimension of the parent"
                                                     : "layout lists must have one entry per dimension");
            return false;
        }
        l.rank = (uint8_t)lrank;
        for (unsigned i = 0; i < lrank; i++) {
            if (ord[i] >= lrank) {
                error_here(r, "layout order names a dimension the layout does not have");
                return false;
            }
            l.ord[i] = (uint8_t)ord[i];
        }
        t->layout = l;
    }
    return expect(r, ">");
}

/* `%name` -> the name (arena copy), or NULL after an error. */
static const char *value_name(reader *r) {
    skip_space(r);
    if (peekc(r) != '%') {
        error_here(r, "expected a value name like %x");
        return NULL;
    }
    r->pos++;
    const char *s;
    size_t n = word(r, &s);
    if (!n) {
        error_here(r, "expected a value name after '%'");
        return NULL;
    }
    return tc_arena_strndup(r->arena, s, n);
}

static uint32_t hash_name(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* A table's entry for name: its own, or the empty one where it would go
 * (cap a power of two, the table never full). */
static name_slot *find_slot(name_slot *table, uint32_t cap, const char *name) {
    uint32_t i = hash_name(name) & (cap - 1);
    while (table[i].name && strcmp(table[i].name, name)) i = (i + 1) & (cap - 1);
    return &table[i];
}

/* Makes room for one more entry in a table of n, keeping it at most half
 * full. */
static void reserve_slot(reader *r, name_slot **table, uint32_t *cap, uint32_t n) {
    if (2 * (n + 1) <= *cap) return;
    uint32_t old = *cap;
    name_slot *prev = *table;
    *cap = old ? old * 2 : 64;
    *table = TC_NEW_ARRAY(r->arena, name_slot, *cap);
    for (uint32_t i = 0; i < old; i++)
        if (prev[i].name) *find_slot(*table, *cap, prev[i].name) = prev[i];
}

/* Adds a kernel name to the set; false if it is there already. */
static bool claim_kernel_name(reader *r, const char *name) {
    reserve_slot(r, &r->kernels, &r->capkernels, r->nkernels);
    name_slot *slot = find_slot(r->kernels, r->capkernels, name);
    if (slot->name) return false;
    *slot = (name_slot){.name = name, .pos = 0};
    r->nkernels++;
    return true;
}

static bool slot_live(const reader *r, const name_slot *s) {
    return s->name && s->pos < r->nnames && !strcmp(r->names[s->pos].name, s->name);
}

static tir_value *lookup(reader *r, const char *name) {
    if (!r->capindex) return NULL;
    name_slot *s = find_slot(r->index, r->capindex, name);
    return slot_live(r, s) ? r->names[s->pos].v : NULL;
}

/* Defines name (read at source offset `at`, where an error points). */
static bool define(reader *r, const char *name, size_t at, tir_value *v) {
    if (r->nnames == READER_MAX_NAMES) {
        error_here(r, "too many values (limit is 1048576)");
        return false;
    }
    reserve_slot(r, &r->index, &r->capindex, r->nindex);
    name_slot *slot = find_slot(r->index, r->capindex, name);
    if (slot_live(r, slot)) {
        r->pos = at;
        error_here(r, "value defined twice");
        return false;
    }
    if (!slot->name) r->nindex++;
    *slot = (name_slot){.name = name, .pos = r->nnames};
    if (r->nnames == r->capnames) {
        uint32_t cap = r->capnames ? r->capnames * 2 : 64;
        named *p = TC_NEW_ARRAY(r->arena, named, cap);
        if (r->nnames) memcpy(p, r->names, sizeof(named) * r->nnames);
        r->names = p;
        r->capnames = cap;
    }
    /* numbers are the printer's; keep only real names as hints */
    if (!(name[0] >= '0' && name[0] <= '9')) v->name = name;
    r->names[r->nnames++] = (named){.name = name, .v = v};
    return true;
}

static bool parse_loc(reader *r, tc_loc *loc) {
    if (!accept(r, "loc")) return true;
    int64_t line, col;
    if (!expect(r, "(") || !number(r, &line) || !expect(r, ":") || !number(r, &col) || !expect(r, ")")) return false;
    loc->line = (uint32_t)(line < 0 ? 0 : line);
    loc->col = (uint32_t)(col < 0 ? 0 : col);
    return true;
}

static bool parse_block(reader *r, tir_builder *b);
static bool count_arg(reader *r, const char *what, int64_t lo, int *out);

/* `{ ^(%a: type, ...): ops }`: a block linked to its op and function like
 * the builders make it; its names go out of scope at the `}`. */
static tir_block *parse_region(reader *r, tir_builder *b, tir_op *op) {
    if (!expect(r, "{") || !expect(r, "^") || !expect(r, "(")) return NULL;
    tir_block *body = TC_NEW(r->arena, tir_block);
    body->func = b->func;
    body->parent = op;
    uint32_t mark = r->nnames;
    if (!accept(r, ")")) {
        do {
            skip_space(r);
            size_t at = r->pos;
            const char *name = value_name(r);
            tir_type t;
            if (!name || !expect(r, ":") || !parse_type(r, &t)) return NULL;
            if (!define(r, name, at, tir_block_add_arg(body, t, NULL))) return NULL;
        } while (accept(r, ","));
        if (!expect(r, ")")) return NULL;
    }
    if (!expect(r, ":")) return NULL;
    if (++r->depth > READER_MAX_DEPTH) {
        error_here(r, "regions nested too deeply (limit is 64)");
        return NULL;
    }
    tir_builder inner = *b;
    tir_builder_at_end(&inner, body);
    if (!parse_block(r, &inner) || !expect(r, "}")) return NULL;
    r->depth--;
    r->nnames = mark;
    return body;
}

static bool parse_op(reader *r, tir_builder *b) {
    const char *results[TIR_MAX_OPERANDS];
    size_t result_pos[TIR_MAX_OPERANDS];
    uint32_t nres = 0;
    skip_space(r);
    if (peekc(r) == '%') {
        do {
            if (nres == TIR_MAX_OPERANDS) {
                error_here(r, "too many results (limit is 64)");
                return false;
            }
            skip_space(r);
            result_pos[nres] = r->pos;
            if (!(results[nres++] = value_name(r))) return false;
        } while (accept(r, ","));
        if (!expect(r, "=")) return false;
    }
    const char *s;
    size_t n = word(r, &s);
    tir_opcode code;
    if (!n || !tir_opcode_from_name(s, n, &code)) {
        r->pos -= n;
        error_here(r, "expected an op name");
        return false;
    }
    const tir_opinfo *info = &tir_ops[code];
    int64_t a0 = 0, a1 = 0;
    double fv = 0;
    bool need_comma = false;
    size_t attr_pos = 0, attr_end = 0;
    uint8_t perm[TIR_MAX_RANK] = {0, 1, 2};
    uint32_t offset[TIR_MAX_RANK] = {0};
    int64_t list[TIR_MAX_RANK] = {0, 1, 2}; /* entries not given keep these: perm's identity */
    const char *text = NULL;
    switch (info->attr) {
    case TIR_ATTR_AXIS:
        if (!number(r, &a0)) return false;
        need_comma = true;
        break;
    case TIR_ATTR_RANGE:
        if (!number(r, &a0) || !expect(r, ",") || !number(r, &a1)) return false;
        need_comma = true;
        break;
    case TIR_ATTR_VALUE:
        skip_space(r);
        attr_pos = r->pos; /* read once the result type says int or float */
        if (!float_number(r, &fv)) return false;
        attr_end = r->pos;
        need_comma = true;
        break;
    case TIR_ATTR_PERM: /* [1, 0]: checked against the operand's rank by the verifier */
        if (!index_list(r, TIR_MAX_RANK - 1, "permutation entry out of range", list)) return false;
        for (unsigned k = 0; k < TIR_MAX_RANK; k++) perm[k] = (uint8_t)list[k];
        need_comma = true;
        break;
    case TIR_ATTR_OFFSET: /* optional [0, 16]: checked against the result's shape by the verifier */
        skip_space(r);
        if (peekc(r) != '[') break;
        memset(list, 0, sizeof list); /* dims not given start at 0 */
        if (!index_list(r, UINT32_MAX, "offset out of range", list)) return false;
        for (unsigned k = 0; k < TIR_MAX_RANK; k++) offset[k] = (uint32_t)list[k];
        need_comma = true;
        break;
    case TIR_ATTR_STRING:
        if (!quoted(r, &text)) return false;
        need_comma = true;
        break;
    case TIR_ATTR_NONE: break;
    }
    tir_value *ops[TIR_MAX_OPERANDS];
    uint32_t nops = 0;
    skip_space(r);
    /* after an attribute only a comma brings operands: `print "hi"` may be
     * followed by the next line's `%x = ...`; so may `barrier`, which
     * takes none */
    bool more = info->max_operands > 0 && (need_comma ? peekc(r) == ',' : peekc(r) == '%');
    while (more) {
        if ((nops || need_comma) && !expect(r, ",")) return false;
        const char *name = value_name(r);
        if (!name) return false;
        tir_value *v = lookup(r, name);
        if (!v) {
            error_here(r, "use of an undefined value");
            return false;
        }
        if (nops == TIR_MAX_OPERANDS) {
            error_here(r, "too many operands (limit is 64)");
            return false;
        }
        ops[nops++] = v;
        skip_space(r);
        more = peekc(r) == ',';
    }
    tir_type types[TIR_MAX_OPERANDS];
    uint32_t ntypes = 0;
    if (accept(r, ":")) {
        do {
            if (ntypes == TIR_MAX_OPERANDS) {
                error_here(r, "too many result types");
                return false;
            }
            if (!parse_type(r, &types[ntypes++])) return false;
        } while (accept(r, ","));
    }
    if (ntypes != nres) {
        error_here(r, "the number of result types differs from the number of results");
        return false;
    }
    if ((int)nops < info->min_operands || (int)nops > info->max_operands ||
        (info->results != TIR_VARIADIC && (int)nres != info->results)) {
        error_here(r, "wrong number of operands or results for this op");
        return false;
    }
    tir_op *op = tir_build_op(b, code, nops, ops, nres, types);
    if (info->attr == TIR_ATTR_AXIS) op->attr.axis = a0;
    if (info->attr == TIR_ATTR_RANGE) op->attr.range.lo = a0, op->attr.range.hi = a1;
    if (info->attr == TIR_ATTR_PERM) memcpy(op->attr.perm, perm, sizeof perm);
    if (info->attr == TIR_ATTR_OFFSET) memcpy(op->attr.offset, offset, sizeof offset);
    if (info->attr == TIR_ATTR_STRING) op->attr.text = text;
    if (info->attr == TIR_ATTR_VALUE) {
        if (nres && tir_elem_is_float(tir_type_elem(types[0]))) {
            op->attr.fval = fv;
        } else {
            size_t save = r->pos;
            r->pos = attr_pos;
            if (!number(r, &op->attr.ival)) return false;
            if (r->pos != attr_end) { /* 1.5, 1e3 or 0x10 read as a float: not an integer */
                r->pos = attr_pos;
                error_here(r, "expected an integer constant for an integer type");
                return false;
            }
            r->pos = save;
        }
    }
    if (op->code == TIR_OP_FOR && accept(r, "num_stages") && !count_arg(r, "num_stages", 0, &op->num_stages)) return false;
    if (op->code == TIR_OP_FOR && accept(r, "warp_specialize")) {
        if (!expect(r, "(")) return false;
        if (accept(r, "true")) op->warp_specialize = TIR_WS_ON;
        else if (accept(r, "false")) op->warp_specialize = TIR_WS_OFF;
        else {
            error_here(r, "expected true or false");
            return false;
        }
        if (!expect(r, ")")) return false;
    }
    if (info->flags & TIR_F_REGION) {
        if (!(op->body = parse_region(r, b, op))) return false;
        if (op->code != TIR_OP_FOR && op->code != TIR_OP_PRODUCER) {
            if (!expect(r, op->code == TIR_OP_WHILE ? "do" : "else")) return false;
            if (!(op->body2 = parse_region(r, b, op))) return false;
        }
    }
    if (!parse_loc(r, &op->loc)) return false;
    for (uint32_t i = 0; i < nres; i++)
        if (!define(r, results[i], result_pos[i], op->results[i])) return false;
    return true;
}

/* `(N)` after num_warps, num_stages or producer_warps. The reader bounds N
 * only so that it fits an int; the verifier checks the real ranges. The
 * error names the count, since a kernel's line has several. */
enum { READER_MAX_COUNT = 1024 };

static bool count_arg(reader *r, const char *what, int64_t lo, int *out) {
    int64_t n;
    if (!expect(r, "(")) return false;
    skip_space(r);
    size_t at = r->pos;
    if (!number(r, &n) || !expect(r, ")")) return false;
    if (n < lo || n > READER_MAX_COUNT) {
        r->pos = at; /* the caret on the number */
        char msg[64];
        snprintf(msg, sizeof msg, "%s out of range", what);
        error_here(r, msg);
        return false;
    }
    *out = (int)n;
    return true;
}

static bool parse_block(reader *r, tir_builder *b) {
    for (;;) {
        skip_space(r);
        if (at_end(r) || peekc(r) == '}') return true;
        if (!parse_op(r, b)) return false;
    }
}

/* A parameter of f by `%name` (the reader's names are the params' now). */
static int param_index(reader *r, const tir_func *f, bool pointer) {
    size_t at = r->pos;
    const char *name = value_name(r);
    if (!name) return -1;
    tir_value *v = lookup(r, name);
    for (uint32_t i = 0; v && i < f->nparams; i++)
        if (f->params[i] == v) {
            bool is_ptr = v->type.elem == TIR_PTR;
            bool is_int = !is_ptr && v->type.rank == 0 && !tir_elem_is_float(v->type.elem) && v->type.elem != TIR_I1;
            if (pointer ? is_ptr : is_int) return (int)i;
            break;
        }
    r->pos = at;
    error_here(r, pointer ? "a tensor map's base is a pointer parameter of the kernel"
                          : "a tensor map's sizes and strides are integers or integer parameters of the kernel");
    return -1;
}

/* 64, %K, 8 * %s, or (a dim) * */
static bool tmap_term(reader *r, const tir_func *f, bool dim, tir_tmap_term *t) {
    *t = (tir_tmap_term){.scale = 1, .param = TIR_TMAP_CONST};
    if (dim && accept(r, "*")) {
        t->scale = TIR_TMAP_UNBOUNDED;
        return true;
    }
    skip_space(r);
    if (peekc(r) != '%') {
        if (!number(r, &t->scale)) return false;
        if (!accept(r, "*")) return true;
    }
    return (t->param = param_index(r, f, false)) >= 0;
}

static bool tmap_terms(reader *r, const tir_func *f, const char *key, bool dim, tir_tmap_term *t, unsigned *n) {
    if (!expect(r, key) || !expect(r, "=") || !expect(r, "[")) return false;
    *n = 0;
    do {
        if (*n == TIR_TMAP_MAX_RANK) {
            error_here(r, tc_arena_printf(r->arena, "too many tensor map dimensions (limit is %d)", TIR_TMAP_MAX_RANK));
            return false;
        }
        if (!tmap_term(r, f, dim, &t[(*n)++])) return false;
    } while (accept(r, ","));
    return expect(r, "]");
}

/* tensor_map(%base, dims=[...], strides=[...], box=[...], swizzle=N):
 * what the verifier checks is left to it */
static bool parse_tmap(reader *r, tir_func *f) {
    tir_tmap m;
    memset(&m, 0, sizeof m); /* compared bytewise (tir_func_add_tmap) */
    unsigned nd, ns, nb = 0;
    if (!expect(r, "(")) return false;
    int base = param_index(r, f, true);
    if (base < 0 || !expect(r, ",") || !tmap_terms(r, f, "dims", true, m.dim, &nd) || !expect(r, ",") ||
        !tmap_terms(r, f, "strides", false, m.stride, &ns) || !expect(r, ",") || !expect(r, "box") ||
        !expect(r, "=") || !expect(r, "["))
        return false;
    do {
        int64_t x;
        if (nb == TIR_TMAP_MAX_RANK) {
            error_here(r, tc_arena_printf(r->arena, "too many tensor map dimensions (limit is %d)", TIR_TMAP_MAX_RANK));
            return false;
        }
        if (!number(r, &x)) return false;
        if (x < 1 || x > TIR_TMAP_MAX_BOX) {
            error_here(r, tc_arena_printf(r->arena, "a box dimension is 1 to %d elements", TIR_TMAP_MAX_BOX));
            return false;
        }
        m.box[nb++] = (uint32_t)x;
    } while (accept(r, ","));
    int64_t sw;
    if (!expect(r, "]") || !expect(r, ",") || !expect(r, "swizzle") || !expect(r, "=") || !number(r, &sw)) return false;
    if (sw != 0 && sw != 32 && sw != 64 && sw != 128) {
        error_here(r, "a tensor map's swizzle is 0, 32, 64 or 128 (bytes)");
        return false;
    }
    if (!expect(r, ")")) return false;
    if (nd != ns || nd != nb) {
        error_here(r, "a tensor map's dims, strides and box have one entry a dimension");
        return false;
    }
    m.base = (uint32_t)base;
    m.rank = (uint8_t)nd;
    m.swizzle = (uint8_t)sw;
    if (f->ntmaps == TIR_MAX_TMAPS) {
        error_here(r, tc_arena_printf(r->arena, "too many tensor maps (limit is %d)", TIR_MAX_TMAPS));
        return false;
    }
    /* each as written, even a repeat: tma_load names maps by position */
    tir_tmap *n = TC_NEW_ARRAY(r->arena, tir_tmap, f->ntmaps + 1);
    if (f->ntmaps) memcpy(n, f->tmaps, sizeof *n * f->ntmaps);
    n[f->ntmaps++] = m;
    f->tmaps = n;
    return true;
}

static bool parse_kernel(reader *r) {
    if (!expect(r, "kernel")) return false;
    skip_space(r);
    if (!expect(r, "@")) return false;
    const char *s;
    size_t n = word(r, &s);
    if (!n) {
        error_here(r, "expected a kernel name");
        return false;
    }
    /* the name becomes the PTX entry's and the runtime's: an identifier,
     * one per module (LLVM would rename a second one) */
    bool identifier = !(s[0] >= '0' && s[0] <= '9');
    for (size_t i = 0; i < n; i++) identifier = identifier && s[i] != '.';
    const char *name = tc_arena_strndup(r->arena, s, n);
    if (!identifier || !claim_kernel_name(r, name)) {
        r->pos -= n;
        error_here(r, identifier ? tc_arena_printf(r->arena, "kernel '%s' defined twice", name)
                                 : "a kernel name is an identifier (letters, digits and _, not first a digit)");
        return false;
    }
    tc_loc loc = tc_source_loc(r->src, (uint32_t)r->pos);
    tir_func *f = tir_func_new(r->m, name, loc);
    f->loc = (tc_loc){.line = 0, .col = 0};
    r->nnames = 0;
    if (!expect(r, "(")) return false;
    if (!accept(r, ")")) {
        do {
            skip_space(r);
            size_t at = r->pos;
            const char *name = value_name(r);
            tir_type t;
            if (!name || !expect(r, ":") || !parse_type(r, &t)) return false;
            if (!define(r, name, at, tir_func_add_param(f, t, NULL))) return false;
        } while (accept(r, ","));
        if (!expect(r, ")")) return false;
    }
    if (accept(r, "num_warps") && !count_arg(r, "num_warps", 1, &f->num_warps)) return false;
    if (accept(r, "num_stages") && !count_arg(r, "num_stages", 0, &f->num_stages)) return false;
    if (accept(r, "producer_warps") && !count_arg(r, "producer_warps", 0, &f->producer_warps)) return false;
    if (accept(r, "smem")) {
        static const char *const parts[3] = {"slots", "buffers", "scratch"};
        uint32_t *field[3] = {&f->smem.slots, &f->smem.buffers, &f->smem.scratch};
        if (!expect(r, "(")) return false;
        for (int i = 0; i < 3; i++) {
            int64_t bytes;
            if ((i && !expect(r, ",")) || !expect(r, parts[i]) || !expect(r, "=") || !number(r, &bytes)) return false;
            if (bytes < 0 || bytes > TIR_MAX_DYNAMIC_SMEM) {
                error_here(r, "smem out of range");
                return false;
            }
            *field[i] = (uint32_t)bytes;
        }
        f->smem.live_scratch = 0; /* optional */
        if (accept(r, ",")) {
            int64_t live;
            if (!expect(r, "live_scratch") || !expect(r, "=") || !number(r, &live)) return false;
            if (live < 0 || live > TIR_MAX_DYNAMIC_SMEM) {
                error_here(r, "smem out of range");
                return false;
            }
            f->smem.live_scratch = (uint32_t)live;
        }
        if (!expect(r, ")")) return false;
    }
    if (accept(r, "dynamic_smem")) {
        int64_t bytes;
        if (!expect(r, "(") || !number(r, &bytes) || !expect(r, ")")) return false;
        if (bytes < 0 || bytes > TIR_MAX_DYNAMIC_SMEM) {
            error_here(r, "dynamic_smem out of range");
            return false;
        }
        f->dynamic_smem = (uint32_t)bytes;
    }
    while (accept(r, "tensor_map"))
        if (!parse_tmap(r, f)) return false;
    if (!parse_loc(r, &f->loc) || !expect(r, "{")) return false;
    tir_builder b = {0};
    tir_builder_at_end(&b, f->body);
    return parse_block(r, &b) && expect(r, "}");
}

tir_module *tir_parse(tc_arena *arena, const tc_source *src, tc_diag *diag) {
    reader r = {0};
    r.src = src;
    r.diag = diag;
    r.arena = arena;
    r.m = tir_module_new(arena, src->name);
    for (;;) {
        skip_space(&r);
        if (at_end(&r)) break;
        if (!parse_kernel(&r)) return NULL;
    }
    return r.m;
}
