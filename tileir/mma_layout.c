/* mma_layout.c - the MMA and DOT_OP layouts of a dot (mma.sync m16n8kK):
 * which element each thread's registers hold. The fragment shapes and the
 * register order are described in tileir.h ("mma and dot-operand
 * layouts"); codegen builds the same arithmetic in LLVM IR from
 * tir_mma_reg_offset and tir_mma_thread_coeffs, and the unit tests check
 * that every element is held. */
#include <stdlib.h>
#include <string.h>

#include "tileir/tileir.h"

enum { MMA_LANES_PER_ROW = 4 }; /* q = lane & 3: four lanes share a row of c */

tir_layout tir_layout_mma(unsigned wpc_m, unsigned wpc_n) {
    tir_layout l;
    memset(&l, 0, sizeof l);
    l.kind = TIR_LAYOUT_MMA;
    l.rank = 2;
    l.wpc[0] = (uint16_t)wpc_m;
    l.wpc[1] = (uint16_t)wpc_n;
    return l;
}

tir_layout tir_layout_dot_op(const tir_layout *mma, unsigned idx, unsigned kw) {
    tir_layout l = *mma;
    l.kind = TIR_LAYOUT_DOT_OP;
    l.dot_idx = (uint8_t)idx;
    l.dot_kw = (uint8_t)kw;
    return l;
}

tir_layout tir_layout_dot_smem(const tir_layout *mma, unsigned idx) {
    tir_layout l = tir_layout_mma(mma->wpc[0], mma->wpc[1]);
    l.kind = TIR_LAYOUT_DOT_SMEM;
    l.dot_idx = (uint8_t)idx;
    return l;
}

tir_layout tir_layout_mma_parent(const tir_layout *dot_op) {
    return tir_layout_mma(dot_op->wpc[0], dot_op->wpc[1]);
}

/* Triton's warpsPerTileV2: double the warps along M while M has more
 * 16-row pieces per warp than N has 16-column pairs of pieces, as long as
 * M has pieces left, else along N. */
tir_layout tir_layout_mma_for(uint32_t m, uint32_t n, unsigned num_warps) {
    uint32_t wm = 1, wn = 1;
    while (wm * wn < num_warps) {
        if (m / TIR_MMA_TILE_M / wm >= n / (TIR_MMA_TILE_N * 2) / wn) {
            if (wm < m / TIR_MMA_TILE_M) wm *= 2;
            else wn *= 2;
        } else {
            wn *= 2;
        }
    }
    return tir_layout_mma(wm, wn);
}

unsigned tir_dot_kw(tir_elem in) {
    switch (in) {
    case TIR_F16: case TIR_BF16: return 2;
    case TIR_F32: return 1;
    case TIR_I8: return 4;
    default: return 0;
    }
}

/* Repetitions of the warps' pieces along M (rows of c and a) and N. */
static uint32_t reps_m(const tir_layout *l, uint32_t m) {
    uint32_t cover = (uint32_t)TIR_MMA_TILE_M * l->wpc[0];
    return m > cover ? m / cover : 1;
}

static uint32_t reps_n(const tir_layout *l, uint32_t n) {
    uint32_t cover = (uint32_t)TIR_MMA_TILE_N * l->wpc[1];
    return n > cover ? n / cover : 1;
}

/* Chunks of 4 kw along K: half an instruction's K. */
static uint32_t k_chunks(const tir_layout *l, uint32_t k) {
    uint32_t chunk = 4u * l->dot_kw;
    return k > chunk ? k / chunk : 1;
}

bool tir_layout_is_mma(const tir_layout *l) {
    return l->kind == TIR_LAYOUT_MMA || l->kind == TIR_LAYOUT_DOT_OP || l->kind == TIR_LAYOUT_MMA_SLICE;
}

uint32_t tir_mma_regs(const tir_layout *l, const uint32_t *shape) {
    if (l->kind == TIR_LAYOUT_MMA_SLICE) return 2 * (l->slice_dim == 1 ? reps_m(l, shape[0]) : reps_n(l, shape[0]));
    if (l->kind == TIR_LAYOUT_MMA) return reps_m(l, shape[0]) * reps_n(l, shape[1]) * 4;
    if (l->dot_idx == 0) return reps_m(l, shape[0]) * k_chunks(l, shape[1]) * 2 * l->dot_kw;
    return k_chunks(l, shape[0]) * reps_n(l, shape[1]) * l->dot_kw;
}

void tir_mma_reg_offset(const tir_layout *l, const uint32_t *shape, uint32_t r, uint32_t off[2]) {
    uint32_t step_m = (uint32_t)TIR_MMA_TILE_M * l->wpc[0], step_n = (uint32_t)TIR_MMA_TILE_N * l->wpc[1];
    if (l->kind == TIR_LAYOUT_MMA_SLICE) { /* rows rm 16 wpc[0] + 8h, or columns rn 8 wpc[1] + j */
        off[0] = l->slice_dim == 1 ? (r / 2) * step_m + 8 * (r % 2) : (r / 2) * step_n + r % 2;
        off[1] = 0;
        return;
    }
    if (l->kind == TIR_LAYOUT_MMA) {
        uint32_t i = r % 4, t = r / 4, rn_count = reps_n(l, shape[1]);
        off[0] = (t / rn_count) * step_m + 8 * (i >> 1);
        off[1] = (t % rn_count) * step_n + (i & 1);
        return;
    }
    uint32_t kw = l->dot_kw, e = r % kw, t = r / kw;
    if (l->dot_idx == 0) {
        uint32_t h = t % 2, nkc = k_chunks(l, shape[1]);
        t /= 2;
        off[0] = (t / nkc) * step_m + 8 * h;
        off[1] = (t % nkc) * 4 * kw + e;
    } else {
        uint32_t rn_count = reps_n(l, shape[1]);
        off[0] = (t / rn_count) * 4 * kw + e;
        off[1] = (t % rn_count) * step_n;
    }
}

void tir_mma_thread_coeffs(const tir_layout *l, uint32_t k[2][4]) {
    memset(k, 0, sizeof(uint32_t[2][4]));
    if (l->kind == TIR_LAYOUT_MMA_SLICE) { /* the accumulator's: the kept dim's, then the dropped one's */
        tir_layout parent = tir_layout_mma(l->wpc[0], l->wpc[1]);
        uint32_t pk[2][4];
        tir_mma_thread_coeffs(&parent, pk);
        memcpy(k[0], pk[1 - l->slice_dim], sizeof pk[0]);
        memcpy(k[1], pk[l->slice_dim], sizeof pk[0]);
        return;
    }
    if (l->kind == TIR_LAYOUT_MMA) {
        k[0][0] = TIR_MMA_TILE_M, k[0][2] = 1;     /* row 16 wm + g */
        k[1][1] = TIR_MMA_TILE_N, k[1][3] = 2;     /* col 8 wn + 2q */
    } else if (l->dot_idx == 0) {
        k[0][0] = TIR_MMA_TILE_M, k[0][2] = 1;     /* row 16 wm + g */
        k[1][3] = l->dot_kw;                       /* col kw q */
    } else {
        k[0][3] = l->dot_kw;                       /* row kw q */
        k[1][1] = TIR_MMA_TILE_N, k[1][2] = 1;     /* col 8 wn + g */
    }
}

static void thread_offset(const tir_layout *l, uint32_t tid, uint32_t off[2]) {
    uint32_t lane = tid % 32, warp = tid / 32;
    uint32_t ids[4] = {warp % l->wpc[0], warp / l->wpc[0] % l->wpc[1], lane / MMA_LANES_PER_ROW,
                       lane % MMA_LANES_PER_ROW};
    uint32_t k[2][4];
    tir_mma_thread_coeffs(l, k);
    for (int d = 0; d < 2; d++) off[d] = k[d][0] * ids[0] + k[d][1] * ids[1] + k[d][2] * ids[2] + k[d][3] * ids[3];
}

void tir_mma_coord(const tir_layout *l, const uint32_t *shape, uint32_t tid, uint32_t r, uint32_t coord[2]) {
    uint32_t t[2], o[2];
    thread_offset(l, tid, t);
    tir_mma_reg_offset(l, shape, r, o);
    if (l->kind == TIR_LAYOUT_MMA_SLICE) {
        coord[0] = (t[0] + o[0]) & (shape[0] - 1);
        coord[1] = 0;
        return;
    }
    for (int d = 0; d < 2; d++) coord[d] = (t[d] + o[d]) & (shape[d] - 1);
}

bool tir_mma_owner(const tir_layout *l, const uint32_t *shape, uint32_t tid) {
    uint32_t warp = tid / 32, t[2];
    thread_offset(l, tid, t);
    if (l->kind == TIR_LAYOUT_MMA_SLICE) return t[0] < shape[0] && t[1] == 0; /* copies along the dropped dim */
    if (l->kind == TIR_LAYOUT_DOT_OP && warp / l->wpc[0] % l->wpc[1] && l->dot_idx == 0) return false; /* a: copies over wn */
    if (l->kind == TIR_LAYOUT_DOT_OP && warp % l->wpc[0] && l->dot_idx == 1) return false;            /* b: copies over wm */
    return t[0] < shape[0] && t[1] < shape[1];
}

tir_layout tir_layout_dot_fma(const tir_layout *res, uint32_t k, unsigned idx) {
    tir_layout l = *res;
    l.spt[idx == 0 ? 1 : 0] = (uint16_t)k;
    return l;
}

bool tir_mma_rename_map(const tir_type *from, const tir_type *to, uint32_t threads, uint32_t *map) {
    const tir_layout *lf = &from->layout, *lt = &to->layout;
    bool mma_kind = (lf->kind == TIR_LAYOUT_MMA || lf->kind == TIR_LAYOUT_DOT_OP) &&
                    (lt->kind == TIR_LAYOUT_MMA || lt->kind == TIR_LAYOUT_DOT_OP);
    if (!mma_kind || from->rank != 2 || to->rank != 2 || from->shape[0] != to->shape[0] ||
        from->shape[1] != to->shape[1])
        return false;
    const uint32_t *shape = from->shape;
    uint32_t nf = tir_mma_regs(lf, shape), nt = tir_mma_regs(lt, shape), n = shape[1];
    int32_t *where = malloc(sizeof(int32_t) * shape[0] * n); /* by element: its `from` register in this thread */
    if (!where) return false;
    for (uint32_t i = 0; i < shape[0] * n; i++) where[i] = -1;
    bool ok = true;
    for (uint32_t tid = 0; tid < threads && ok; tid++) {
        uint32_t c[2];
        for (uint32_t r = 0; r < nf; r++) {
            tir_mma_coord(lf, shape, tid, r, c);
            where[c[0] * n + c[1]] = (int32_t)r;
        }
        for (uint32_t r = 0; r < nt && ok; r++) {
            tir_mma_coord(lt, shape, tid, r, c);
            int32_t w = where[c[0] * n + c[1]];
            if (w < 0 || (tid && map[r] != (uint32_t)w)) ok = false;
            else map[r] = (uint32_t)w;
        }
        for (uint32_t r = 0; r < nf; r++) { /* back to none for the next thread */
            tir_mma_coord(lf, shape, tid, r, c);
            where[c[0] * n + c[1]] = -1;
        }
    }
    free(where);
    return ok;
}

uint32_t tir_mma_slice_source(const tir_layout *slice, const uint32_t *shape, uint32_t r) {
    tir_layout parent = tir_layout_mma(slice->wpc[0], slice->wpc[1]);
    uint32_t i = r % 4, t = r / 4, rn_count = reps_n(&parent, shape[1]);
    uint32_t rm = t / rn_count, rn = t % rn_count;
    /* register (rm, rn, i) holds row ... + 8 (i >> 1), column ... + (i & 1) */
    return slice->slice_dim == 1 ? rm * 2 + (i >> 1) : rn * 2 + (i & 1);
}
