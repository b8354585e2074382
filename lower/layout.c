/* layout.c - gives every tile a blocked layout.
 *
 * A blocked layout spreads a tile over the threads of a program instance:
 * each thread owns `spt` consecutive elements, 32 threads form a warp,
 * `num_warps` warps the instance, and the pattern repeats over larger tiles
 * and wraps (replicates) over smaller ones. spt is chosen so one thread's
 * run is 16 bytes of the widest element the kernel loads or stores (4 f32,
 * 8 f16), which is what lets codegen use 16-byte vector accesses; it
 * shrinks when the tile is too small to give every thread that many. All
 * tiles of one shape get one layout, so elementwise ops never convert.
 *
 * num_warps, unless the user chose it, follows the bytes of the largest
 * tile the kernel loads (or else stores, or else computes, as f32): one
 * warp per 512 bytes (a 16-byte access per thread) up to 4 warps at 2 KB,
 * then 4 warps below 8 KB, 8 below 16 KB, 16 below 128 KB, and 32. For
 * f32 rows that is Triton's softmax-tutorial choice up to 4096 elements.
 * Measured on an H100 (bench/RESULTS.md, 2026-11-22 sweep): f16 layernorm
 * rows of 1024, 4096 and 8192 ran fastest at 4, 8 and 16 warps, where
 * counting elements instead gave 16 warps to the 4096 row (13% slower);
 * 32 warps at 16384 f32 were 5-15% slower than 16, while at 32768 they
 * keep threads at 32 elements, where 16 warps made the softmax gradient
 * spill. */
#include "lower/lower.h"

enum { LAYOUT_ACCESS_BYTES = 16 };

typedef struct layout_ctx {
    int num_warps;
    unsigned widest_bytes;
    bool ok;
    tc_diag *diag;
    const char *file;
} layout_ctx;

static void find_widest(tir_op *op, void *p) {
    layout_ctx *c = p;
    if (op->code != TIR_OP_LOAD && op->code != TIR_OP_STORE) return;
    unsigned bytes = (tir_elem_bits((tir_elem)op->operands[0]->type.pointee) + 7) / 8;
    if (bytes > c->widest_bytes) c->widest_bytes = bytes;
}

static void assign(layout_ctx *c, tir_value *v, tc_loc loc) {
    tir_type *t = &v->type;
    if (t->rank == 0) return;
    if (t->rank > 1) {
        if (c->ok)
            tc_error_loc(c->diag, c->file, loc, "tiles of rank %u are not supported by code generation yet (limit is 1)",
                         t->rank);
        c->ok = false;
        return;
    }
    uint32_t n = t->shape[0];
    uint32_t threads = 32u * (uint32_t)c->num_warps;
    uint32_t spt = LAYOUT_ACCESS_BYTES / c->widest_bytes;
    while (spt > 1 && (uint64_t)spt * threads > n) spt /= 2;
    if (spt > n) spt = n;
    tir_layout l = {0};
    l.kind = TIR_LAYOUT_BLOCKED;
    l.rank = 1;
    l.spt[0] = (uint16_t)spt;
    l.tpw[0] = 32;
    l.wpc[0] = (uint16_t)c->num_warps;
    l.ord[0] = 0;
    t->layout = l;
}

/* The bytes of the largest tile loaded, stored, and computed (as f32). */
typedef struct tile_bytes {
    uint64_t loaded, stored, computed;
} tile_bytes;

static void find_largest(tir_op *op, void *p) {
    tile_bytes *t = p;
    for (uint32_t i = 0; i < op->nresults; i++)
        if (op->results[i]->type.rank && 4 * tir_type_numel(op->results[i]->type) > t->computed)
            t->computed = 4 * tir_type_numel(op->results[i]->type);
    if ((op->code != TIR_OP_LOAD && op->code != TIR_OP_STORE) || !op->operands[0]->type.rank) return;
    tir_type ptrs = op->operands[0]->type;
    uint64_t bytes = tir_type_numel(ptrs) * ((tir_elem_bits((tir_elem)ptrs.pointee) + 7) / 8);
    uint64_t *slot = op->code == TIR_OP_LOAD ? &t->loaded : &t->stored;
    if (bytes > *slot) *slot = bytes;
}

static int heuristic_num_warps(tir_func *f) {
    tile_bytes t = {0, 0, 0};
    tir_walk(f, find_largest, &t);
    uint64_t b = t.loaded ? t.loaded : t.stored ? t.stored : t.computed;
    if (b < 2048) return b < 1024 ? 1 : 2;
    return b < 8192 ? LOWER_DEFAULT_NUM_WARPS : b < 16384 ? 8 : b < 131072 ? 16 : 32;
}

static void assign_op(tir_op *op, void *p) {
    layout_ctx *c = p;
    for (uint32_t i = 0; i < op->nresults; i++) assign(c, op->results[i], op->loc);
    if (op->body)
        for (uint32_t i = 0; i < op->body->nargs; i++) assign(c, op->body->args[i], op->loc);
}

bool lower_layout(tir_module *m, const lower_options *opt, tc_diag *diag) {
    bool ok = true;
    for (tir_func *f = m->funcs; f; f = f->next) {
        int w = opt->num_warps ? opt->num_warps : f->num_warps ? f->num_warps : heuristic_num_warps(f);
        /* a .tir file may ask for any count; layouts and codegen's index
         * arithmetic need a power of two, and a CTA holds 1024 threads */
        if (w < 1 || w > LOWER_MAX_NUM_WARPS || (w & (w - 1))) {
            tc_error_loc(diag, m->source_name, f->loc, "num_warps(%d) of kernel '%s' must be a power of two from 1 to %d",
                         w, f->name, LOWER_MAX_NUM_WARPS);
            ok = false;
            continue;
        }
        f->num_warps = w;
        layout_ctx c = {w, 0, true, diag, m->source_name};
        tir_walk(f, find_widest, &c);
        if (!c.widest_bytes) c.widest_bytes = 4; /* no memory access: any size will do */
        tir_walk(f, assign_op, &c);
        ok = ok && c.ok;
    }
    return ok;
}
