/* printer.c - the text form of tile IR (see tileir.h), which tir_parse reads
 * back.
 *
 * Values print under their source names when they have one (`%offs`), made
 * unique within the function by a numeric suffix, and as `%0`, `%1`, ...
 * otherwise, numbered in print order so the output is deterministic. */
#include <stdio.h>
#include <string.h>

#include "tileir/tileir.h"

typedef struct namer {
    tc_arena *arena;
    const char **by_id; /* printed name per value id */
    uint32_t nids;
    const char **set;   /* open-addressing set of names in use */
    uint32_t setcap;
    uint32_t next_number;
} namer;

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Adds name to the set; false if it was already there. */
static bool claim(namer *n, const char *name) {
    uint32_t i = hash_str(name) & (n->setcap - 1);
    while (n->set[i]) {
        if (!strcmp(n->set[i], name)) return false;
        i = (i + 1) & (n->setcap - 1);
    }
    n->set[i] = name;
    return true;
}

static void namer_init(namer *n, const tir_func *f, tc_arena *arena) {
    n->arena = arena;
    n->nids = f->next_value_id;
    n->by_id = TC_NEW_ARRAY(arena, const char *, n->nids + 1);
    n->setcap = 16;
    while (n->setcap < 2 * n->nids + 16) n->setcap *= 2;
    n->set = TC_NEW_ARRAY(arena, const char *, n->setcap);
    n->next_number = 0;
}

static const char *name_of(namer *n, const tir_value *v) {
    if (v->id < n->nids && n->by_id[v->id]) return n->by_id[v->id];
    const char *name = NULL;
    if (v->name && v->name[0]) {
        size_t len = strlen(v->name);
        char *clean = tc_arena_strndup(n->arena, v->name, len);
        for (size_t i = 0; i < len; i++) {
            char c = clean[i];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
                clean[i] = '_';
        }
        if (clean[0] >= '0' && clean[0] <= '9') clean = tc_arena_printf(n->arena, "_%s", clean);
        name = clean;
        for (uint32_t k = 1; !claim(n, name); k++) name = tc_arena_printf(n->arena, "%s_%u", clean, k);
    } else {
        do name = tc_arena_printf(n->arena, "%u", n->next_number++);
        while (!claim(n, name));
    }
    if (v->id < n->nids) n->by_id[v->id] = name;
    return name;
}

static void print_float(tc_strbuf *out, double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v);
    tc_strbuf_puts(out, buf);
    /* keep it recognizably a float for the reader */
    if (!strpbrk(buf, ".eEn")) tc_strbuf_puts(out, ".0");
}

/* A string attribute, quoted; tir_parse undoes the escapes. */
static void print_string(tc_strbuf *out, const char *s) {
    tc_strbuf_putc(out, '"');
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') tc_strbuf_printf(out, "\\%c", c);
        else if (c == '\n') tc_strbuf_puts(out, "\\n");
        else if (c == '\t') tc_strbuf_puts(out, "\\t");
        else if (c < 0x20 || c == 0x7f) tc_strbuf_printf(out, "\\x%02x", c);
        else tc_strbuf_putc(out, (char)c);
    }
    tc_strbuf_putc(out, '"');
}

static void print_block(tc_strbuf *out, namer *n, const tir_block *blk, int indent, unsigned flags);

/* ` {`, the block's arguments as `^(%a: type, ...):`, its ops, `}`. */
static void print_region(tc_strbuf *out, namer *n, const tir_block *blk, int indent, unsigned flags) {
    tc_strbuf_puts(out, " {\n");
    for (int i = 0; i < indent; i++) tc_strbuf_puts(out, "  ");
    tc_strbuf_puts(out, "^(");
    for (uint32_t i = 0; i < blk->nargs; i++) {
        tc_strbuf_printf(out, "%s%%%s: ", i ? ", " : "", name_of(n, blk->args[i]));
        tir_print_type(out, blk->args[i]->type);
    }
    tc_strbuf_puts(out, "):\n");
    print_block(out, n, blk, indent + 1, flags);
    for (int i = 0; i < indent; i++) tc_strbuf_puts(out, "  ");
    tc_strbuf_putc(out, '}');
}

static void print_op_line(tc_strbuf *out, namer *n, const tir_op *op, int indent, unsigned flags) {
    const tir_opinfo *info = &tir_ops[op->code];
    for (int i = 0; i < indent; i++) tc_strbuf_puts(out, "  ");
    for (uint32_t i = 0; i < op->nresults; i++)
        tc_strbuf_printf(out, "%s%%%s", i ? ", " : "", name_of(n, op->results[i]));
    if (op->nresults) tc_strbuf_puts(out, " = ");
    tc_strbuf_puts(out, info->name);
    bool first = true;
    switch (info->attr) {
    case TIR_ATTR_AXIS: tc_strbuf_printf(out, " %lld", (long long)op->attr.axis), first = false; break;
    case TIR_ATTR_RANGE:
        tc_strbuf_printf(out, " %lld, %lld", (long long)op->attr.range.lo, (long long)op->attr.range.hi);
        first = false;
        break;
    case TIR_ATTR_VALUE:
        tc_strbuf_putc(out, ' ');
        if (op->nresults && tir_elem_is_float(tir_type_elem(op->results[0]->type)))
            print_float(out, op->attr.fval);
        else
            tc_strbuf_printf(out, "%lld", (long long)op->attr.ival);
        first = false;
        break;
    case TIR_ATTR_PERM: {
        unsigned rank = op->noperands ? op->operands[0]->type.rank : 0;
        tc_strbuf_puts(out, " [");
        for (unsigned i = 0; i < rank && i < TIR_MAX_RANK; i++) tc_strbuf_printf(out, "%s%u", i ? ", " : "", op->attr.perm[i]);
        tc_strbuf_putc(out, ']');
        first = false;
        break;
    }
    case TIR_ATTR_OFFSET: {
        /* printed for a part of the slot (a result smaller than it, or
         * offsets that are not 0), as the verifier reads it; a bad entry
         * past the rank too, so that the verifier's message shows it */
        unsigned rank = op->nresults ? op->results[0]->type.rank : 0, n = rank;
        bool part = false;
        for (unsigned i = 0; i < TIR_MAX_RANK; i++) {
            if (op->attr.offset[i] && i >= n) n = i + 1;
            part |= op->attr.offset[i] != 0 || (i < rank && i + 1 < TIR_MAX_RANK && op->noperands &&
                                                op->operands[0]->type.rank == rank + 1 &&
                                                op->operands[0]->type.shape[i + 1] != op->results[0]->type.shape[i]);
        }
        if (!part) break;
        tc_strbuf_puts(out, " [");
        for (unsigned i = 0; i < n; i++) tc_strbuf_printf(out, "%s%u", i ? ", " : "", op->attr.offset[i]);
        tc_strbuf_putc(out, ']');
        first = false;
        break;
    }
    case TIR_ATTR_STRING:
        tc_strbuf_putc(out, ' ');
        print_string(out, op->attr.text);
        first = false;
        break;
    case TIR_ATTR_NONE: break;
    }
    for (uint32_t i = 0; i < op->noperands; i++) {
        tc_strbuf_puts(out, first ? " " : ", ");
        first = false;
        tc_strbuf_printf(out, "%%%s", name_of(n, op->operands[i]));
    }
    if (op->nresults) {
        tc_strbuf_puts(out, " : ");
        for (uint32_t i = 0; i < op->nresults; i++) {
            if (i) tc_strbuf_puts(out, ", ");
            tir_print_type(out, op->results[i]->type);
        }
    }
    if (op->code == TIR_OP_FOR && op->num_stages) tc_strbuf_printf(out, " num_stages(%d)", op->num_stages);
    if (op->code == TIR_OP_FOR && op->warp_specialize)
        tc_strbuf_printf(out, " warp_specialize(%s)", op->warp_specialize == TIR_WS_ON ? "true" : "false");
    if (op->body) print_region(out, n, op->body, indent, flags);
    if (op->body2) {
        tc_strbuf_puts(out, op->code == TIR_OP_WHILE ? " do" : " else");
        print_region(out, n, op->body2, indent, flags);
    }
    if ((flags & TIR_PRINT_LOCS) && op->loc.line) tc_strbuf_printf(out, " loc(%u:%u)", op->loc.line, op->loc.col);
    tc_strbuf_putc(out, '\n');
}

static void print_block(tc_strbuf *out, namer *n, const tir_block *blk, int indent, unsigned flags) {
    for (const tir_op *op = blk->first; op; op = op->next) print_op_line(out, n, op, indent, flags);
}

/* A size or stride of a tensor map: 64, %K, 8 * %s, or * (unbounded). */
static void print_tmap_term(tc_strbuf *out, namer *n, const tir_func *f, tir_tmap_term t, bool dim) {
    if (dim && t.param == TIR_TMAP_CONST && t.scale == TIR_TMAP_UNBOUNDED) tc_strbuf_putc(out, '*');
    else if (t.param == TIR_TMAP_CONST) tc_strbuf_printf(out, "%lld", (long long)t.scale);
    else if (t.scale == 1) tc_strbuf_printf(out, "%%%s", name_of(n, f->params[t.param]));
    else tc_strbuf_printf(out, "%lld * %%%s", (long long)t.scale, name_of(n, f->params[t.param]));
}

static void print_tmap(tc_strbuf *out, namer *n, const tir_func *f, const tir_tmap *m) {
    tc_strbuf_printf(out, " tensor_map(%%%s, dims=[", name_of(n, f->params[m->base]));
    for (unsigned d = 0; d < m->rank; d++) {
        if (d) tc_strbuf_puts(out, ", ");
        print_tmap_term(out, n, f, m->dim[d], true);
    }
    tc_strbuf_puts(out, "], strides=[");
    for (unsigned d = 0; d < m->rank; d++) {
        if (d) tc_strbuf_puts(out, ", ");
        print_tmap_term(out, n, f, m->stride[d], false);
    }
    tc_strbuf_puts(out, "], box=[");
    for (unsigned d = 0; d < m->rank; d++) tc_strbuf_printf(out, "%s%u", d ? ", " : "", m->box[d]);
    tc_strbuf_printf(out, "], swizzle=%u)", m->swizzle);
}

void tir_print_func(tc_strbuf *out, const tir_func *f, unsigned flags) {
    tc_arena *arena = tc_arena_new();
    namer n;
    namer_init(&n, f, arena);
    tc_strbuf_printf(out, "kernel @%s(", f->name);
    for (uint32_t i = 0; i < f->nparams; i++) {
        tc_strbuf_printf(out, "%s%%%s: ", i ? ", " : "", name_of(&n, f->params[i]));
        tir_print_type(out, f->params[i]->type);
    }
    tc_strbuf_putc(out, ')');
    if (f->num_warps) tc_strbuf_printf(out, " num_warps(%d)", f->num_warps);
    if (f->num_stages) tc_strbuf_printf(out, " num_stages(%d)", f->num_stages);
    if (f->producer_warps) tc_strbuf_printf(out, " producer_warps(%d)", f->producer_warps);
    if (f->smem.slots || f->smem.buffers || f->smem.scratch || f->smem.live_scratch)
        tc_strbuf_printf(out, " smem(slots=%u, buffers=%u, scratch=%u, live_scratch=%u)", f->smem.slots,
                         f->smem.buffers, f->smem.scratch, f->smem.live_scratch);
    if (f->dynamic_smem) tc_strbuf_printf(out, " dynamic_smem(%u)", f->dynamic_smem);
    for (uint32_t i = 0; i < f->ntmaps; i++) print_tmap(out, &n, f, &f->tmaps[i]);
    if ((flags & TIR_PRINT_LOCS) && f->loc.line) tc_strbuf_printf(out, " loc(%u:%u)", f->loc.line, f->loc.col);
    tc_strbuf_puts(out, " {\n");
    print_block(out, &n, f->body, 1, flags);
    tc_strbuf_puts(out, "}\n");
    tc_arena_free(arena);
}

void tir_print_module(tc_strbuf *out, const tir_module *m, unsigned flags) {
    for (const tir_func *f = m->funcs; f; f = f->next) {
        if (f != m->funcs) tc_strbuf_putc(out, '\n');
        tir_print_func(out, f, flags);
    }
}

void tir_print_op(tc_strbuf *out, const tir_op *op) {
    tc_arena *arena = tc_arena_new();
    namer n;
    const tir_func *f = op->parent ? op->parent->func : NULL;
    tir_func dummy;
    memset(&dummy, 0, sizeof dummy);
    namer_init(&n, f ? f : &dummy, arena);
    /* one line: drop the body */
    tir_op copy = *op;
    copy.body = copy.body2 = NULL;
    print_op_line(out, &n, &copy, 0, 0);
    if (out->len && out->data[out->len - 1] == '\n') out->data[--out->len] = 0;
    tc_arena_free(arena);
}
