/* mma.c - mma.sync and ldmatrix for the emulator (mma.h), from the PTX
 * ISA's fragment tables. With groupID = lane / 4 and tig (thread in
 * group) = lane % 4, the m16n8 shapes place:
 *   C/D (16x8, 4 regs):  c_i at row groupID + 8*(i >= 2), col 2*tig + (i & 1)
 *   A f16/bf16 (16x16, 8 elems in 4 regs): a_i at row groupID + 8*((i / 2) & 1),
 *       col 2*tig + (i & 1) + 8*(i >= 4)
 *   B f16/bf16 (16x8, 4 elems in 2 regs): b_i at k 2*tig + (i & 1) + 8*(i >= 2), col groupID
 *   A tf32 (16x8, 4 regs): a_i at row groupID + 8*(i & 1), col tig + 4*(i >= 2)
 *   B tf32 (8x8, 2 regs):  b_i at k tig + 4*i, col groupID
 *   A s8 k32 (16x32, 16 elems in 4 regs): a_i at row groupID + 8*((i / 4) & 1),
 *       col 4*tig + (i & 3) + 16*(i >= 8)
 *   B s8 k32 (32x8, 8 elems in 2 regs): b_i at k 4*tig + (i & 3) + 16*(i >= 4), col groupID
 *   A s8 k16 (16x16, 8 elems in 2 regs): a_i at row groupID + 8*(i >= 4), col 4*tig + (i & 3)
 *   B s8 k16 (16x8, 4 elems in 1 reg):   b_i at k 4*tig + i, col groupID
 * Element i of a fragment is in register i / (32 / bits), lowest bits
 * first. */
#include "emu/mma.h"

#include <math.h>
#include <string.h>

#include "support/support.h"

typedef enum elem { E_F16, E_BF16, E_TF32, E_S8 } elem;

typedef struct shape {
    const char *name;
    int k;
    elem in;
    bool satfinite;
    unsigned a_regs, b_regs; /* C and D: 4 each */
} shape;

static const shape shapes[] = {
    {"llvm.nvvm.mma.m16n8k16.row.col.f32.f32", 16, E_F16, false, 4, 2},
    {"llvm.nvvm.mma.m16n8k16.row.col.bf16", 16, E_BF16, false, 4, 2},
    {"llvm.nvvm.mma.m16n8k8.row.col.tf32", 8, E_TF32, false, 4, 2},
    {"llvm.nvvm.mma.m16n8k32.row.col.s8", 32, E_S8, false, 4, 2},
    {"llvm.nvvm.mma.m16n8k32.row.col.satfinite.s8", 32, E_S8, true, 4, 2},
    {"llvm.nvvm.mma.m16n8k16.row.col.s8", 16, E_S8, false, 2, 1},
    {"llvm.nvvm.mma.m16n8k16.row.col.satfinite.s8", 16, E_S8, true, 2, 1},
};
enum { NSHAPES = sizeof shapes / sizeof shapes[0], M = 16, N = 8, KMAX = 32 };

int emu_mma_kind(const char *name) {
    for (int i = 0; i < NSHAPES; i++)
        if (!strcmp(name, shapes[i].name)) return i;
    return -1;
}

unsigned emu_mma_nargs(int kind) { return shapes[kind].a_regs + shapes[kind].b_regs + 4; }

static int bits_of(elem e) { return e == E_TF32 ? 32 : e == E_S8 ? 8 : 16; }

/* Element i of a fragment as a number. */
static double element(const uint32_t *regs, elem e, unsigned i) {
    int bits = bits_of(e), per = 32 / bits;
    uint32_t r = regs[i / (unsigned)per];
    uint32_t v = (r >> ((i % (unsigned)per) * (unsigned)bits)) & (bits == 32 ? 0xffffffffu : (1u << bits) - 1);
    switch (e) {
    case E_F16: return tc_half_value((uint16_t)v, false);
    case E_BF16: return tc_half_value((uint16_t)v, true);
    case E_TF32: {
        uint32_t t = v & 0xffffe000u; /* the tensor core reads 19 bits */
        float f;
        memcpy(&f, &t, 4);
        return f;
    }
    default: return (double)(int8_t)v;
    }
}

static void a_coord(const shape *s, unsigned lane, unsigned i, unsigned *row, unsigned *col) {
    unsigned g = lane / 4, t = lane % 4;
    switch (s->in) {
    case E_TF32: *row = g + 8 * (i & 1), *col = t + 4 * (i >= 2); return;
    case E_S8:
        if (s->k == 32) *row = g + 8 * ((i / 4) & 1), *col = 4 * t + (i & 3) + 16 * (i >= 8);
        else *row = g + 8 * (i >= 4), *col = 4 * t + (i & 3);
        return;
    default: *row = g + 8 * ((i / 2) & 1), *col = 2 * t + (i & 1) + 8 * (i >= 4); return;
    }
}

static void b_coord(const shape *s, unsigned lane, unsigned i, unsigned *k, unsigned *col) {
    unsigned g = lane / 4, t = lane % 4;
    *col = g;
    switch (s->in) {
    case E_TF32: *k = t + 4 * i; return;
    case E_S8: *k = s->k == 32 ? 4 * t + (i & 3) + 16 * (i >= 4) : 4 * t + i; return;
    default: *k = 2 * t + (i & 1) + 8 * (i >= 2); return;
    }
}

static void c_coord(unsigned lane, unsigned i, unsigned *row, unsigned *col) {
    *row = lane / 4 + 8 * (i >= 2);
    *col = 2 * (lane % 4) + (i & 1);
}

void emu_mma_compute(int kind, const uint32_t regs[EMU_MMA_LANES][EMU_MMA_MAX_REGS], uint32_t out[EMU_MMA_LANES][4]) {
    const shape *s = &shapes[kind];
    double a[M][KMAX], b[KMAX][N];
    uint32_t c[M][N];
    unsigned per_a = (unsigned)(32 / bits_of(s->in)) * s->a_regs, per_b = (unsigned)(32 / bits_of(s->in)) * s->b_regs;
    for (unsigned lane = 0; lane < EMU_MMA_LANES; lane++) {
        for (unsigned i = 0; i < per_a; i++) {
            unsigned r, col;
            a_coord(s, lane, i, &r, &col);
            a[r][col] = element(regs[lane], s->in, i);
        }
        for (unsigned i = 0; i < per_b; i++) {
            unsigned k, col;
            b_coord(s, lane, i, &k, &col);
            b[k][col] = element(regs[lane] + s->a_regs, s->in, i);
        }
        for (unsigned i = 0; i < 4; i++) {
            unsigned r, col;
            c_coord(lane, i, &r, &col);
            c[r][col] = regs[lane][s->a_regs + s->b_regs + i];
        }
    }
    uint32_t d[M][N];
    for (unsigned i = 0; i < M; i++)
        for (unsigned j = 0; j < N; j++) {
            if (s->in == E_S8) {
                int64_t acc = (int32_t)c[i][j];
                for (int k = 0; k < s->k; k++) acc += (int64_t)a[i][k] * (int64_t)b[k][j];
                if (s->satfinite) acc = acc > INT32_MAX ? INT32_MAX : acc < INT32_MIN ? INT32_MIN : acc;
                d[i][j] = (uint32_t)acc; /* wraps without .satfinite */
            } else {
                /* products of 11-bit (f16), 8-bit (bf16) or 11-bit (tf32)
                 * significands are exact in double; so is the sum of 16
                 * of them unless exponents spread wide, then one rounding */
                float cf;
                memcpy(&cf, &c[i][j], 4);
                double acc = cf;
                for (int k = 0; k < s->k; k++) acc += a[i][k] * b[k][j];
                float r = (float)acc;
                memcpy(&d[i][j], &r, 4);
            }
        }
    for (unsigned lane = 0; lane < EMU_MMA_LANES; lane++)
        for (unsigned i = 0; i < 4; i++) {
            unsigned r, col;
            c_coord(lane, i, &r, &col);
            out[lane][i] = d[r][col];
        }
}

/* ---- ldmatrix ---------------------------------------------------------------
 * kind = log2(count) * 2 + trans. Matrix i's row r comes from the address
 * of lane 8*i + r; without .trans, lane l's register of a matrix holds
 * row l / 4, columns 2*(l % 4) and +1 (16 bits each, the lower column in
 * the low half); with .trans it holds column l / 4 of rows 2*(l % 4) and +1. */

int emu_ldmatrix_kind(const char *name) {
    static const char prefix[] = "llvm.nvvm.ldmatrix.sync.aligned.m8n8.";
    if (strncmp(name, prefix, sizeof prefix - 1)) return -1;
    const char *p = name + sizeof prefix - 1;
    int lg = !strncmp(p, "x1.", 3) ? 0 : !strncmp(p, "x2.", 3) ? 1 : !strncmp(p, "x4.", 3) ? 2 : -1;
    if (lg < 0) return -1;
    p += 3;
    /* the pointer's address space may follow as an overload suffix: .p3 */
    bool trans = !strncmp(p, "trans.", 6);
    if (trans) p += 6;
    if (strcmp(p, "b16") && strcmp(p, "b16.p3") && strcmp(p, "b16.p0")) return -1;
    return lg * 2 + trans;
}

unsigned emu_ldmatrix_count(int kind) { return 1u << (kind / 2); }
bool emu_ldmatrix_trans(int kind) { return kind & 1; }

static uint16_t elem16(const uint8_t *row, unsigned col) { return (uint16_t)(row[2 * col] | row[2 * col + 1] << 8); }

void emu_ldmatrix_compute(int kind, const uint8_t *const rows[EMU_MMA_LANES], uint32_t out[EMU_MMA_LANES][4]) {
    unsigned count = emu_ldmatrix_count(kind);
    bool trans = emu_ldmatrix_trans(kind);
    for (unsigned lane = 0; lane < EMU_MMA_LANES; lane++)
        for (unsigned m = 0; m < count; m++) {
            unsigned q = lane / 4, p = 2 * (lane % 4);
            uint16_t lo, hi;
            if (!trans) {
                lo = elem16(rows[8 * m + q], p), hi = elem16(rows[8 * m + q], p + 1);
            } else {
                lo = elem16(rows[8 * m + p], q), hi = elem16(rows[8 * m + p + 1], q);
            }
            out[lane][m] = (uint32_t)lo | (uint32_t)hi << 16;
        }
}

uint32_t emu_f2tf32_rna(uint32_t u) {
    if ((u & 0x7f800000u) == 0x7f800000u) /* inf stays; NaN stays NaN */
        return (u & 0x7fffffu) ? 0x7fffffffu : u;
    return (u + 0x1000u) & 0xffffe000u; /* on the magnitude: ties away from zero */
}
