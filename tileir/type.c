/* type.c - tile types: element kinds, shapes, layouts, and their spelling. */
#include <string.h>

#include "tileir/tileir.h"

static const char *const elem_names[TIR_ELEM_COUNT] = {
    "i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64", "ptr",
};
static const unsigned elem_bits[TIR_ELEM_COUNT] = {1, 8, 16, 32, 64, 16, 16, 32, 64, 64};

const char *tir_elem_name(tir_elem e) { return e < TIR_ELEM_COUNT ? elem_names[e] : "?"; }
unsigned tir_elem_bits(tir_elem e) { return e < TIR_ELEM_COUNT ? elem_bits[e] : 0; }
bool tir_elem_is_int(tir_elem e) { return e <= TIR_I64; }
bool tir_elem_is_float(tir_elem e) { return e >= TIR_F16 && e <= TIR_F64; }

int64_t tir_wrap_int(int64_t v, tir_elem e) {
    switch (e) {
    case TIR_I1: return v & 1;
    case TIR_I8: return (int8_t)(uint8_t)v;
    case TIR_I16: return (int16_t)(uint16_t)v;
    case TIR_I32: return (int32_t)(uint32_t)v;
    default: return v;
    }
}

bool tir_elem_from_name(const char *s, size_t n, tir_elem *out) {
    for (int e = 0; e < TIR_PTR; e++)
        if (strlen(elem_names[e]) == n && !memcmp(elem_names[e], s, n)) {
            *out = (tir_elem)e;
            return true;
        }
    return false;
}

tir_type tir_scalar(tir_elem e) {
    tir_type t;
    memset(&t, 0, sizeof t);
    t.elem = (uint8_t)e;
    return t;
}

tir_type tir_ptr(tir_elem pointee) {
    tir_type t = tir_scalar(TIR_PTR);
    t.pointee = (uint8_t)pointee;
    return t;
}

tir_type tir_tile(tir_type element, unsigned rank, const uint32_t *shape) {
    tir_type t = tir_element_of(element);
    t.rank = (uint8_t)rank;
    for (unsigned i = 0; i < rank && i < TIR_MAX_RANK; i++) t.shape[i] = shape[i];
    return t;
}

tir_type tir_tile1(tir_type element, uint32_t n) { return tir_tile(element, 1, &n); }

tir_type tir_smem(tir_type element, unsigned rank, const uint32_t *shape) {
    tir_type t = tir_tile(element, rank, shape);
    t.space = TIR_SPACE_SHARED;
    return t;
}

tir_type tir_element_of(tir_type t) {
    tir_type e = tir_scalar(tir_type_elem(t));
    e.pointee = t.pointee;
    return e;
}

tir_type tir_with_elem(tir_type shape_of, tir_type element) {
    tir_type t = shape_of;
    t.elem = element.elem;
    t.pointee = element.pointee;
    return t;
}

uint64_t tir_type_numel(tir_type t) {
    uint64_t n = 1;
    for (unsigned i = 0; i < t.rank; i++) n *= t.shape[i];
    return n;
}

bool tir_layout_eq(const tir_layout *a, const tir_layout *b) {
    if (a->kind != b->kind) return false;
    if (a->kind == TIR_LAYOUT_NONE) return true;
    if (a->rank != b->rank) return false;
    if ((a->kind == TIR_LAYOUT_SLICE || a->kind == TIR_LAYOUT_MMA_SLICE) && a->slice_dim != b->slice_dim) return false;
    if (a->kind == TIR_LAYOUT_SHARED) {
        for (unsigned i = 0; i < a->rank; i++)
            if (a->ord[i] != b->ord[i]) return false;
        return a->sw_vec == b->sw_vec && a->sw_per_phase == b->sw_per_phase && a->sw_max_phase == b->sw_max_phase &&
               a->sw_atom == b->sw_atom;
    }
    if (a->kind == TIR_LAYOUT_DOT_SMEM)
        return a->wpc[0] == b->wpc[0] && a->wpc[1] == b->wpc[1] && a->dot_idx == b->dot_idx;
    if (tir_layout_is_mma(a))
        return a->wpc[0] == b->wpc[0] && a->wpc[1] == b->wpc[1] &&
               (a->kind == TIR_LAYOUT_MMA || (a->dot_idx == b->dot_idx && a->dot_kw == b->dot_kw));
    for (unsigned i = 0; i < a->rank; i++)
        if (a->spt[i] != b->spt[i] || a->tpw[i] != b->tpw[i] || a->wpc[i] != b->wpc[i] || a->ord[i] != b->ord[i])
            return false;
    return true;
}

tir_layout tir_layout_slice(const tir_layout *parent, unsigned dim) {
    tir_layout l = *parent;
    l.kind = parent->kind == TIR_LAYOUT_MMA ? TIR_LAYOUT_MMA_SLICE : TIR_LAYOUT_SLICE;
    l.slice_dim = (uint8_t)dim;
    return l;
}

tir_layout tir_layout_parent(const tir_layout *slice) {
    tir_layout l = *slice;
    l.kind = slice->kind == TIR_LAYOUT_MMA_SLICE ? TIR_LAYOUT_MMA : TIR_LAYOUT_BLOCKED;
    l.slice_dim = 0;
    return l;
}

tir_layout tir_layout_permute(const tir_layout *src, const uint8_t *perm) {
    tir_layout l = *src;
    uint8_t inv[TIR_MAX_RANK];
    for (unsigned i = 0; i < src->rank; i++) inv[perm[i]] = (uint8_t)i;
    for (unsigned i = 0; i < src->rank; i++) {
        l.spt[i] = src->spt[perm[i]];
        l.tpw[i] = src->tpw[perm[i]];
        l.wpc[i] = src->wpc[perm[i]];
        l.ord[i] = inv[src->ord[i]];
    }
    return l;
}

tir_layout tir_layout_shared(unsigned rank, const uint8_t *ord, unsigned vec, unsigned per_phase, unsigned max_phase) {
    tir_layout l;
    memset(&l, 0, sizeof l);
    l.kind = TIR_LAYOUT_SHARED;
    l.rank = (uint8_t)rank;
    for (unsigned i = 0; i < rank; i++) l.ord[i] = ord[i];
    l.sw_vec = (uint8_t)vec;
    l.sw_per_phase = (uint8_t)per_phase;
    l.sw_max_phase = (uint8_t)max_phase;
    return l;
}

enum {
    SHARED_CHUNK_BYTES = 16,   /* what one lane of ldmatrix reads, and the widest shared access */
    SHARED_BANK_BYTES = 128,   /* 32 banks of 4 bytes */
    SHARED_ROWS_PER_READ = 8,  /* rows of one 8x8 ldmatrix matrix */
    WGMMA_MIN_ROW_BYTES = 32   /* the narrowest swizzle (32B) wgmma's descriptors know */
};

tir_layout tir_shared_for_dot(const uint32_t *shape, unsigned contig, unsigned elem_bytes) {
    uint8_t ord[2] = {(uint8_t)contig, (uint8_t)(1 - contig)};
    uint32_t row_bytes = shape[contig] * elem_bytes;
    unsigned vec = SHARED_CHUNK_BYTES / elem_bytes;
    if (row_bytes < SHARED_CHUNK_BYTES || vec == 0) return tir_layout_shared(2, ord, 1, 1, 1);
    unsigned per_phase = row_bytes >= SHARED_BANK_BYTES ? 1 : SHARED_BANK_BYTES / row_bytes;
    unsigned chunks = row_bytes / SHARED_CHUNK_BYTES;
    unsigned max_phase = SHARED_ROWS_PER_READ / per_phase;
    if (max_phase > chunks) max_phase = chunks;
    if (max_phase < 1) max_phase = 1;
    return tir_layout_shared(2, ord, vec, per_phase, max_phase);
}

tir_layout tir_shared_for_wgmma(const uint32_t *shape, unsigned contig, unsigned elem_bytes) {
    uint32_t row_bytes = shape[contig] * elem_bytes;
    tir_layout none;
    memset(&none, 0, sizeof none);
    if (row_bytes < WGMMA_MIN_ROW_BYTES || elem_bytes == 0 || elem_bytes > SHARED_CHUNK_BYTES) return none;
    if (row_bytes <= SHARED_BANK_BYTES) return tir_shared_for_dot(shape, contig, elem_bytes);
    uint32_t piece[2] = {shape[0], shape[1]};
    piece[contig] = SHARED_BANK_BYTES / elem_bytes;
    tir_layout l = tir_shared_for_dot(piece, contig, elem_bytes);
    l.sw_atom = (uint8_t)piece[contig];
    return l;
}

uint32_t tir_shared_offset(const tir_layout *l, unsigned rank, const uint32_t *shape, const uint32_t *coord) {
    uint8_t ord[TIR_MAX_RANK] = {0};
    for (unsigned k = 0; k < rank; k++) ord[k] = l->kind == TIR_LAYOUT_SHARED ? l->ord[k] : (uint8_t)(rank - 1 - k);
    uint32_t c = coord[ord[0]], before = 0; /* elements of the pieces before c's (atom) */
    if (l->kind == TIR_LAYOUT_SHARED && rank == 2 && l->sw_atom && l->sw_atom < shape[ord[0]]) {
        before = c / l->sw_atom * l->sw_atom * shape[ord[1]];
        c %= l->sw_atom;
        uint32_t piece = l->sw_atom;
        if (l->sw_max_phase > 1) {
            uint32_t row = coord[ord[1]], vec = l->sw_vec;
            uint32_t chunk = (c / vec) ^ ((row / l->sw_per_phase) % l->sw_max_phase);
            c = chunk * vec + c % vec;
        }
        return before + coord[ord[1]] * piece + c;
    }
    if (l->kind == TIR_LAYOUT_SHARED && rank == 2 && l->sw_max_phase > 1) {
        uint32_t row = coord[ord[1]], vec = l->sw_vec;
        uint32_t chunk = (c / vec) ^ ((row / l->sw_per_phase) % l->sw_max_phase);
        c = chunk * vec + c % vec;
    }
    uint32_t off = 0;
    for (unsigned k = rank; k-- > 1;) off = off * shape[ord[k]] + coord[ord[k]];
    return off * shape[ord[0]] + c;
}

bool tir_type_same_shape(tir_type a, tir_type b) {
    if (a.rank != b.rank) return false;
    for (unsigned i = 0; i < a.rank; i++)
        if (a.shape[i] != b.shape[i]) return false;
    return true;
}

bool tir_type_eq(tir_type a, tir_type b) {
    if (a.elem != b.elem || (a.elem == TIR_PTR && a.pointee != b.pointee) || a.space != b.space) return false;
    if (!tir_type_same_shape(a, b)) return false;
    return a.rank == 0 || tir_layout_eq(&a.layout, &b.layout);
}

static void print_list(tc_strbuf *out, const char *key, const uint16_t *v, unsigned n) {
    tc_strbuf_printf(out, "%s=[", key);
    for (unsigned i = 0; i < n; i++) tc_strbuf_printf(out, "%s%u", i ? ", " : "", v[i]);
    tc_strbuf_putc(out, ']');
}

static void print_elem(tc_strbuf *out, tir_type t) {
    if (t.elem == TIR_PTR)
        tc_strbuf_printf(out, "ptr<%s>", tir_elem_name(tir_type_pointee(t)));
    else
        tc_strbuf_puts(out, tir_elem_name(tir_type_elem(t)));
}

void tir_print_type(tc_strbuf *out, tir_type t) {
    if (t.rank == 0) {
        print_elem(out, t);
        return;
    }
    tc_strbuf_puts(out, t.space == TIR_SPACE_SHARED ? "smem<" : "tile<");
    for (unsigned i = 0; i < t.rank; i++) tc_strbuf_printf(out, "%ux", t.shape[i]);
    print_elem(out, t);
    if (t.layout.kind == TIR_LAYOUT_BLOCKED || t.layout.kind == TIR_LAYOUT_SLICE) {
        const tir_layout *l = &t.layout;
        uint16_t ord[TIR_MAX_RANK];
        for (unsigned i = 0; i < l->rank; i++) ord[i] = l->ord[i];
        if (l->kind == TIR_LAYOUT_SLICE)
            tc_strbuf_printf(out, ", #slice<dim=%u, ", l->slice_dim);
        else
            tc_strbuf_puts(out, ", #blocked<");
        print_list(out, "spt", l->spt, l->rank);
        tc_strbuf_puts(out, ", ");
        print_list(out, "tpw", l->tpw, l->rank);
        tc_strbuf_puts(out, ", ");
        print_list(out, "wpc", l->wpc, l->rank);
        tc_strbuf_puts(out, ", ");
        print_list(out, "ord", ord, l->rank);
        tc_strbuf_putc(out, '>');
    } else if (t.layout.kind == TIR_LAYOUT_SHARED) {
        const tir_layout *l = &t.layout;
        uint16_t ord[TIR_MAX_RANK];
        for (unsigned i = 0; i < l->rank; i++) ord[i] = l->ord[i];
        tc_strbuf_printf(out, ", #shared<vec=%u, per_phase=%u, max_phase=%u, ", l->sw_vec, l->sw_per_phase,
                         l->sw_max_phase);
        print_list(out, "ord", ord, l->rank);
        if (l->sw_atom) tc_strbuf_printf(out, ", atom=%u", l->sw_atom);
        tc_strbuf_putc(out, '>');
    } else if (t.layout.kind == TIR_LAYOUT_DOT_SMEM) {
        const tir_layout *l = &t.layout;
        tc_strbuf_printf(out, ", #dot_smem<idx=%u, parent=#mma<wpc=[%u, %u]>>", l->dot_idx, l->wpc[0], l->wpc[1]);
    } else if (tir_layout_is_mma(&t.layout)) {
        const tir_layout *l = &t.layout;
        if (l->kind == TIR_LAYOUT_DOT_OP) tc_strbuf_printf(out, ", #dot_op<idx=%u, kw=%u, parent=", l->dot_idx, l->dot_kw);
        else if (l->kind == TIR_LAYOUT_MMA_SLICE) tc_strbuf_printf(out, ", #slice<dim=%u, parent=", l->slice_dim);
        else tc_strbuf_puts(out, ", ");
        tc_strbuf_printf(out, "#mma<wpc=[%u, %u]>", l->wpc[0], l->wpc[1]);
        if (l->kind != TIR_LAYOUT_MMA) tc_strbuf_putc(out, '>');
    }
    tc_strbuf_putc(out, '>');
}

/* Where the copy engine puts element (row, col) of a 2-D slot [rows x
 * cols] along map dims (0: cols, 1: rows), boxes of box0 columns side by
 * side, with a swizzle of sw bytes (0: none): its element offset in the
 * slot. The PTX ISA's swizzle ("Tensors", swizzling modes) moves the
 * 16-byte chunk at shared address a to a ^ ((a >> 7) % (sw / 16)) << 4,
 * from a slot aligned to sw * 8 bytes. */
static uint32_t tma_offset(uint32_t rows, uint32_t box0, uint32_t eb, uint32_t sw, uint32_t row, uint32_t col) {
    uint32_t a = ((col / box0) * rows * box0 + row * box0 + col % box0) * eb;
    if (sw) a ^= ((a >> 7) & (sw / 16 - 1)) << 4;
    return a / eb;
}

bool tir_tma_places(const tir_type *buf, uint32_t box0, unsigned swizzle, uint32_t *at) {
    const uint32_t *slot = &buf->shape[1];
    unsigned cd = buf->layout.kind == TIR_LAYOUT_SHARED ? buf->layout.ord[0] : 1u; /* the slot dim along map dim 0 */
    uint32_t rows = slot[1 - cd], cols = slot[cd], eb = (tir_elem_bits(buf->elem) + 7) / 8;
    if (buf->rank != 3 || !box0 || cols % box0) {
        at[0] = at[1] = 0;
        return false;
    }
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t c = 0; c < cols; c++) {
            at[cd] = c, at[1 - cd] = r;
            if (tir_shared_offset(&buf->layout, 2, slot, at) != tma_offset(rows, box0, eb, swizzle, r, c)) return false;
        }
    return true;
}
