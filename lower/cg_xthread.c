/* cg_xthread.c - moving elements between layouts and shapes across threads (the scratch area,
 * rename and broadcast); reductions and scans are in cg_reduce.c.
 * A file of its own because it is one concern of code generation; the context and the
 * helpers the concern files share are in lower/codegen_internal.h. */
#include <stdio.h>
#include <string.h>

#include "lower/codegen_internal.h"

/* ---- shared memory ------------------------------------------------------ */

/* Every thread's barrier; in the consumers' role (codegen.c, gen_split)
 * theirs alone, a named barrier of their count: the producer warps meet
 * no barrier after the split. */
void barrier(cg *c) {
    if (c->role == CG_ROLE_CONSUMER) {
        LLVMValueRef args[2] = {i32c(c, CG_CONSUMER_BARRIER), i32c(c, c->f->num_warps * LOWER_WARP_SIZE)};
        call_intrinsic(c, "llvm.nvvm.barrier", args, 2);
        return;
    }
    call_intrinsic(c, "llvm.nvvm.barrier0", NULL, 0);
}

/* The address of byte `offset` of the kernel's shared memory. */
LLVMValueRef smem_at(cg *c, LLVMValueRef offset) {
    return LLVMBuildGEP2(c->b, LLVMInt8TypeInContext(c->ctx), c->smem, &offset, 1, "");
}

unsigned scratch_elem_bytes(tir_elem e) { return e == TIR_PTR ? 8 : e == TIR_I1 ? 1 : tir_elem_bits(e) / 8; }

/* ---- moving elements between layouts and shapes -----------------------------
 * A conversion, reshape or permute whose layouts do not line up goes
 * through the scratch area: every thread writes its registers at their
 * row-major index in the operand, a barrier, every thread reads the
 * elements its result registers hold. The plan (plan_move, a pure function
 * of the op and the warp count, so smem_plan sizes the area as codegen
 * uses it) picks:
 *  - the vector width of each side: the most elements (at most 16 bytes)
 *    such that each group of that many consecutive registers holds, in
 *    every thread, consecutive elements of one row from an aligned column
 *    (an mma accumulator's column pairs: 4-byte stores of 16-bit elements,
 *    8-byte of f32; a blocked layout's runs along its fastest dim: 16-byte
 *    loads). It is checked by evaluating every thread's elements
 *    (move_lin), not assumed from the layout's kind.
 *  - where each element goes in the scratch: at its index, or with the
 *    16-byte pieces of each row xor-ed by (row / per_phase) % max_phase
 *    (a swizzle, as the shared layouts of tileir.h; over the operand's
 *    rows or, for rank 1 or rows too short, rows of other lengths), or
 *    with a few bytes of padding after each of the operand's rows: of these
 *    candidates, the one whose accesses on both sides need the fewest bank
 *    wavefronts by the hardware's rule (the emulator's, emu/emu.h), counted
 *    for every warp (warp 0 alone for the largest moves), no change
 *    before a swizzle and a swizzle before padding on a tie. An mma
 *    accumulator's stores write, per warp instruction, 8 rows at one
 *    16-byte piece each (4 lanes of column pairs), which rows a multiple of
 *    128 bytes long put on the same 4 banks; xor-ing the piece by the row
 *    puts the 8 rows on 8 different pieces, and a row's 8 pieces stay 8
 *    different ones, so the 16-byte reads along a row are conflict-free
 *    too (the stdlib matmul's epilogue: both at 1.00x the ideal, and no
 *    padding bytes).
 *  - or, where it needs fewer accesses a thread at no more wavefronts and
 *    no more bytes, a gather plan: 16-byte accesses on both sides where
 *    neither side's registers hold 16 consecutive bytes (the mma
 *    accumulator's 4-byte column pairs of f16 into a blocked store layout's
 *    runs of 8). Its unit is the narrower side's vector (u elements); the
 *    unit index bits (row-major index / u) that are register bits on both
 *    sides (flipping one leaves every element with the same writer and the
 *    same reader: the accumulator's rows r + 8, r + 16 and the store
 *    layout's repetitions along rows) go to the bottom of the slot, so each
 *    16-byte piece holds units one writer holds and one reader holds: the
 *    writer stores its 4 (say) units as one vector and the reader loads it
 *    and spreads the words over its registers (no instruction: renaming),
 *    as Triton's epilogue does. The other bits follow, those the writer's
 *    lanes of one wavefront (8 at 16 bytes) vary first, and each bit the
 *    reader's lanes of one wavefront vary that sits higher is xor-ed into a
 *    free one of the lowest 3 piece bits, so 8 lanes on either side touch 8
 *    different groups of 4 banks. It needs every element held once, and
 *    each side's index to be the xor of a part of the thread and a part of
 *    the register (lin(tid, unit) = lin(tid, 0) ^ lin(0, unit) ^ lin(0, 0)),
 *    both checked on every thread and unit (move_units_of): then the slot
 *    (an xor-linear map of the index bits) is a per-thread base xor-ed with
 *    a constant per access, and a piece's partner units are found in thread
 *    0's registers once for all threads.
 * A tile larger than CG_MOVE_ROUND_BYTES moves in rounds of `chunk`
 * elements (by row-major index); a store group outside the round goes to
 * the thread's own spare slots past the round (branch-free; one spare area
 * for all would be a race of different values), and a load outside it
 * reads the in-round slot with its index modulo chunk, which some thread
 * wrote, and keeps its earlier value. A gather plan's bits lie below the
 * round's, so a piece is wholly in a round or out of it; its stores outside
 * the round are skipped (at compile time where the round's bits are the
 * register's, else under one branch per round and register part, uniform
 * where they are a warp's), so it needs no spare slots. */

enum {
    MOVE_MAX_VEC_BYTES = 16,  /* the widest shared access (ld/st.shared.v4.b32) */
    MOVE_WAVEFRONT_BYTES = 128, /* bytes one group of lanes moves per wavefront */
    MOVE_BANKS = 32,
    MOVE_MAX_PHASE = 8,         /* swizzles tried: rows in phases of up to 8, over up to 8 pieces */
    MOVE_MAX_SWIZZLE_ROW = 1024, /* and rows of up to this many bytes */
    MOVE_WEIGH_ACCESSES = 1 << 16, /* thread accesses a plan weighs for every warp; past it, warp 0's (compile time) */
    MOVE_PHASE_LANE_BITS = 3,   /* lanes of one wavefront of 16-byte accesses: 8 (128 bytes) */
    MOVE_MAX_UNIT_BITS = 16     /* unit index bits of a round a gather plan maps (CG_MOVE_ROUND_BYTES: 14 at most) */
};

typedef struct move_plan {
    uint32_t numel, chunk, rounds; /* elements */
    uint32_t row;    /* the operand's rows (last dim): a vector stays in one */
    uint32_t n, pad; /* the scratch's rows (the operand's, or others for a swizzle), and the padding after each */
    uint32_t per_phase, max_phase; /* the swizzle: 16-byte piece k of row i goes to k ^ (i / per_phase % max_phase) */
    uint32_t vx, vr; /* elements per store (operand registers) and per load (result registers) */
    uint32_t nx, nr; /* registers per thread of the operand and the result */
    uint32_t threads;
    unsigned eb;
    /* a gather plan (gk > 0): each access moves 2^gk units of gu elements;
     * the slot of a unit is the xor of gmap[b] (units) over the set bits b
     * of its index within the round; gsel: the index bits gathered */
    uint32_t gu, gk, gsel;
    uint32_t gmap[MOVE_MAX_UNIT_BITS];
} move_plan;

/* Elements of a tile of type x that one round of a move through scratch
 * holds: all of them, or CG_MOVE_ROUND_BYTES' worth for larger tiles. */
static uint32_t move_chunk(const tir_type *x) {
    uint32_t eb = scratch_elem_bytes(tir_type_elem(*x)), numel = (uint32_t)tir_type_numel(*x);
    return numel * eb > CG_MOVE_ROUND_BYTES ? CG_MOVE_ROUND_BYTES / eb : numel;
}

/* Tile coordinates of the element thread tid holds in register r under
 * t's layout (the same arithmetic as tile_coord, on numbers). */
static void elem_coord(const tir_type *t, const view *v, uint32_t tid, uint32_t r, uint32_t *coord) {
    if (is_mma_kind(&t->layout)) {
        tir_mma_coord(&t->layout, t->shape, tid, r, coord);
        return;
    }
    uint32_t lane = tid & 31u, warp = tid >> 5, rd[TIR_MAX_RANK], vc[TIR_MAX_RANK];
    reg_split(v, r, rd);
    for (unsigned k = 0; k < v->rank; k++) {
        unsigned d = v->l.ord[k];
        uint32_t lane_d = lane & (v->l.tpw[d] - 1u), warp_d = warp & (v->l.wpc[d] - 1u);
        lane >>= log2u(v->l.tpw[d]), warp >>= log2u(v->l.wpc[d]);
        uint32_t spt = v->l.spt[d];
        uint32_t idx = (warp_d * v->l.tpw[d] + lane_d) * spt + rd[d] / spt * v->cover[d] + rd[d] % spt;
        vc[d] = v->shape[d] == 1 ? 0 : v->shape[d] < v->cover[d] ? idx & (v->shape[d] - 1u) : idx;
    }
    for (unsigned d = 0, k = 0; d < v->rank; d++)
        if ((int)d != v->sliced) coord[k++] = vc[d];
}

/* Row-major index in the operand of the element thread tid holds in
 * register r of the operand (result false) or of the result (true). */
static uint32_t move_lin(const tir_op *op, bool result, const view *v, uint32_t tid, uint32_t r) {
    const tir_type *x = &op->operands[0]->type, *t = result ? &op->results[0]->type : x;
    uint32_t c[TIR_MAX_RANK], xc[TIR_MAX_RANK];
    elem_coord(t, v, tid, r, c);
    const uint32_t *at = c, *shape = t->shape;
    if (result && op->code == TIR_OP_PERMUTE) { /* operand index along dim perm[i] is the result's along dim i */
        for (unsigned i = 0; i < t->rank; i++) xc[op->attr.perm[i]] = c[i];
        at = xc, shape = x->shape;
    } /* reshape and conversion keep row-major order */
    uint32_t lin = 0;
    for (unsigned d = 0; d < t->rank; d++) lin = lin * shape[d] + at[d];
    return lin;
}

/* One side of a move, as plan_move weighs it: the row-major index
 * move_lin gives for each thread and every step-th register (plan_move's
 * every one; codegen's gather plan asks of units only), computed once:
 * every question below is asked of it, many times. */
typedef struct move_lins {
    const uint32_t *lin; /* lin[tid * (nregs / step) + r / step] */
    uint32_t nregs, step;
} move_lins;

static move_lins side_lins(tc_arena *a, const tir_op *op, bool result, uint32_t nregs, uint32_t threads,
                           uint32_t step) {
    const tir_type *t = result ? &op->results[0]->type : &op->operands[0]->type;
    view v = {0};
    if (!is_mma_kind(&t->layout)) v = view_of(t);
    uint32_t per = nregs / step;
    uint32_t *lin = TC_NEW_ARRAY(a, uint32_t, (size_t)threads * per + 1);
    for (uint32_t tid = 0; tid < threads; tid++)
        for (uint32_t k = 0; k < per; k++) lin[(size_t)tid * per + k] = move_lin(op, result, &v, tid, k * step);
    return (move_lins){.lin = lin, .nregs = nregs, .step = step};
}

static uint32_t lin_at(const move_lins *s, uint32_t tid, uint32_t r) {
    return s->lin[(size_t)tid * (s->nregs / s->step) + r / s->step];
}

/* The widest vector (elements, a power of two) in which one side's
 * registers can go: each group of that many consecutive registers holds,
 * in every thread, consecutive indices from a multiple of the width, in
 * one row (the width divides the row). */
static uint32_t move_vec(const tir_type *t, const move_lins *s, uint32_t n, unsigned eb, uint32_t threads) {
    if (tir_type_elem(*t) == TIR_PTR || !t->rank) return 1;
    for (uint32_t w = MOVE_MAX_VEC_BYTES / eb; w > 1; w /= 2) {
        if (s->nregs % w || n % w) continue;
        bool ok = true;
        for (uint32_t tid = 0; tid < threads && ok; tid++)
            for (uint32_t g = 0; g < s->nregs && ok; g += w) {
                uint32_t lin = lin_at(s, tid, g);
                ok = lin % w == 0;
                for (uint32_t j = 1; j < w && ok; j++) ok = lin_at(s, tid, g + j) == lin + j;
            }
        if (ok) return w;
    }
    return 1;
}

/* The scratch slot (elements) of row-major index lin within its round. */
static uint32_t plan_slot(const move_plan *p, uint32_t lin) {
    uint32_t i = lin & (p->chunk - 1u);
    if (p->gk) {
        uint32_t lu = log2u(p->gu), s = 0;
        for (uint32_t b = 0; i >> lu >> b; b++)
            if (i >> (lu + b) & 1u) s ^= p->gmap[b];
        return s * p->gu + (i & (p->gu - 1u));
    }
    if (p->max_phase > 1) i ^= (i / p->n / p->per_phase % p->max_phase) * (MOVE_MAX_VEC_BYTES / p->eb);
    return p->pad ? i + i / p->n * p->pad : i;
}

/* The row-major indices one side of a move accesses, for the threads
 * the plan weighs (all, or warp 0 where they and their accesses are more
 * than MOVE_WEIGH_ACCESSES): lin[g * lanes + l] for thread l's register
 * group g. */
typedef struct move_side {
    uint32_t *lin;
    uint32_t groups, lanes, bytes; /* bytes: of one access */
} move_side;

static move_side weighed_side(tc_arena *a, const move_lins *lins, bool result, const move_plan *p) {
    uint32_t vec = result ? p->vr : p->vx;
    uint32_t accesses = (p->nx / p->vx + p->nr / p->vr) * p->threads;
    move_side s = {.groups = (result ? p->nr : p->nx) / vec,
                   .lanes = p->threads < 32 || accesses <= MOVE_WEIGH_ACCESSES ? p->threads : 32, .bytes = vec * p->eb};
    s.lin = TC_NEW_ARRAY(a, uint32_t, (size_t)s.groups * s.lanes);
    for (uint32_t g = 0; g < s.groups; g++)
        for (uint32_t l = 0; l < s.lanes; l++) s.lin[g * s.lanes + l] = lin_at(lins, l, g * vec);
    return s;
}

/* Bank wavefronts of one side's weighed accesses under plan p, by the rule
 * emu/emu.h states: lanes in groups moving at most 128 bytes; in each, the
 * most distinct words any bank holds. Counting stops once the count reaches
 * `stop` (what a candidate plan must stay below to win), and returns it
 * then: most candidates lose early, and the winner is the same. */
static uint64_t side_wavefronts(const move_side *s, const move_plan *p, uint64_t stop) {
    uint32_t group = s->bytes <= 4 ? 32 : MOVE_WAVEFRONT_BYTES / s->bytes;
    uint64_t total = 0;
    for (uint32_t g = 0; g < s->groups; g++)
        for (uint32_t l0 = 0; l0 < s->lanes; l0 += group) {
            uint32_t words[MOVE_BANKS][32 * 4]; /* distinct words per bank: at most the group's lanes x 4 */
            uint32_t nw[MOVE_BANKS] = {0}, most = 0;
            for (uint32_t l = l0; l < l0 + group && l < s->lanes; l++) {
                uint32_t at = plan_slot(p, s->lin[g * s->lanes + l]) * p->eb;
                for (uint32_t w = at / 4; w <= (at + s->bytes - 1) / 4; w++) {
                    uint32_t b = w % MOVE_BANKS, k = 0;
                    while (k < nw[b] && words[b][k] != w) k++;
                    if (k == nw[b]) words[b][nw[b]++] = w;
                    if (nw[b] > most) most = nw[b];
                }
            }
            total += most;
            if (total >= stop) return total;
        }
    return total;
}

/* The fewest wavefronts a side can take under any plan: one for each
 * group of lanes side_wavefronts counts. */
static uint64_t side_floor(const move_side *s) {
    uint32_t group = s->bytes <= 4 ? 32 : MOVE_WAVEFRONT_BYTES / s->bytes;
    return (uint64_t)s->groups * ((s->lanes + group - 1) / group);
}

/* Both sides' wavefronts under p, counted until `stop` (side_wavefronts). */
static uint64_t plan_wavefronts(const move_side *x, const move_side *r, const move_plan *p, uint64_t stop) {
    uint64_t w = side_wavefronts(x, p, stop);
    return w >= stop ? w : w + side_wavefronts(r, p, stop - w);
}

/* One side of a move in units of u elements, for a gather plan: thread
 * 0's units, and how every thread's relate to them. */
typedef struct move_units {
    uint32_t n;          /* units a thread holds */
    uint32_t *lin;       /* lin[g]: the first index of thread 0's unit g */
    int32_t *unit_at;    /* unit_at[i / u]: thread 0's unit holding index i, or -1 */
    uint32_t tid_bits;   /* the index bits a thread's part may set */
    uint32_t lane[MOVE_PHASE_LANE_BITS]; /* the thread part of lanes 1, 2, 4 */
} move_units;

/* Fills *m and says whether every element of the side is held once and
 * every thread's unit g starts at T(tid) ^ lin[g], T(tid) = lin(tid, 0) ^
 * lin(0, 0) (the section's header), checked on every thread and unit. */
static bool move_units_of(tc_arena *a, const move_lins *lins, const move_plan *p, move_units *m) {
    uint32_t u = p->gu, units = p->numel / u, nregs = lins->nregs;
    if ((uint64_t)p->threads * nregs != p->numel) return false; /* copies of elements, or too few registers */
    memset(m, 0, sizeof *m);
    m->n = nregs / u;
    m->lin = TC_NEW_ARRAY(a, uint32_t, m->n);
    m->unit_at = TC_NEW_ARRAY(a, int32_t, units);
    bool *seen = TC_NEW_ARRAY(a, bool, units);
    for (uint32_t i = 0; i < units; i++) m->unit_at[i] = -1, seen[i] = false;
    for (uint32_t g = 0; g < m->n; g++) m->lin[g] = lin_at(lins, 0, g * u);
    for (uint32_t tid = 0; tid < p->threads; tid++) {
        uint32_t tpart = lin_at(lins, tid, 0) ^ m->lin[0];
        for (uint32_t g = 0; g < m->n; g++) {
            uint32_t lin = lin_at(lins, tid, g * u);
            if (lin != (tpart ^ m->lin[g]) || lin >= p->numel || seen[lin / u]) return false;
            seen[lin / u] = true;
            if (!tid) m->unit_at[lin / u] = (int32_t)g;
        }
        m->tid_bits |= tpart;
        for (unsigned j = 0; j < MOVE_PHASE_LANE_BITS; j++)
            if (tid == 1u << j) m->lane[j] = tpart;
    }
    return true;
}

/* Whether flipping index bit `bit` leaves every element of the side with
 * its thread (thread 0's units: the same for all, by move_units_of). */
static bool register_bit(const move_units *m, uint32_t bit, uint32_t u) {
    for (uint32_t g = 0; g < m->n; g++)
        if (m->unit_at[(m->lin[g] ^ (1u << bit)) / u] < 0) return false;
    return true;
}

/* The unit index bit (of nb) a thread part of one set index bit sets, or
 * -1 (none, several, or within a unit). */
static int unit_bit(uint32_t tpart, uint32_t lu, uint32_t nb) {
    if (!tpart || tpart & (tpart - 1u) || tpart >> lu == 0 || log2u(tpart) >= lu + nb) return -1;
    return (int)(log2u(tpart) - lu);
}

/* Whether the nb images gmap are linearly independent over GF(2) (the
 * slot map a bijection of the round's units). */
static bool gmap_bijective(const uint32_t *gmap, uint32_t nb) {
    uint32_t basis[32] = {0}; /* basis[h]: a vector whose highest set bit is h */
    for (uint32_t b = 0; b < nb; b++) {
        uint32_t x = gmap[b], h = 31;
        for (; x; x ^= basis[h]) {
            while (!(x >> h)) h--;
            if (!basis[h]) break;
        }
        if (!x) return false;
        basis[h] = x;
    }
    return true;
}

/* The gather plan of p's move (the section's header), or false where it
 * does not apply; *ux, *ur get both sides' units. */
static bool plan_gather(tc_arena *a, const tir_op *op, const move_lins *lx, const move_lins *lr, const move_plan *p,
                        move_plan *g, move_units *ux, move_units *ur) {
    uint32_t u = p->vx < p->vr ? p->vx : p->vr;
    if (tir_type_elem(op->operands[0]->type) == TIR_PTR || u * p->eb >= MOVE_MAX_VEC_BYTES ||
        p->numel & (p->numel - 1u) || p->chunk < u)
        return false;
    uint32_t lu = log2u(u), nb = log2u(p->chunk / u), k = log2u(MOVE_MAX_VEC_BYTES / (u * p->eb));
    if (nb > MOVE_MAX_UNIT_BITS || k > nb) return false;
    *g = *p;
    g->gu = u, g->gk = k, g->gsel = 0;
    memset(g->gmap, 0, sizeof g->gmap);
    if (!move_units_of(a, lx, g, ux) || !move_units_of(a, lr, g, ur)) return false;
    /* the lowest unit index bits of the round that are register bits on both sides */
    int home[MOVE_MAX_UNIT_BITS]; /* a bit's place in the piece index (the slot's bits above the gathered ones) */
    uint32_t chosen = 0;
    for (uint32_t b = 0; b < nb; b++) home[b] = -1;
    for (uint32_t b = 0; b < nb && chosen < k; b++)
        if (register_bit(ux, b + lu, u) && register_bit(ur, b + lu, u)) g->gmap[b] = 1u << chosen++, g->gsel |= 1u << b;
    if (chosen < k) return false;
    /* the other bits: the writer's wavefront lanes' first, then in order */
    uint32_t place = 0;
    for (unsigned j = 0; j < MOVE_PHASE_LANE_BITS; j++) {
        int b = unit_bit(ux->lane[j], lu, nb);
        if (b >= 0 && !(g->gsel >> b & 1u) && home[b] < 0) home[b] = (int)place++;
    }
    for (uint32_t b = 0; b < nb; b++)
        if (!(g->gsel >> b & 1u) && home[b] < 0) home[b] = (int)place++;
    for (uint32_t b = 0; b < nb; b++)
        if (!(g->gsel >> b & 1u)) g->gmap[b] = 1u << (k + (uint32_t)home[b]);
    /* the reader's wavefront lanes: a bit placed above the lowest
     * MOVE_PHASE_LANE_BITS is xor-ed into a free one of them (one whose
     * own bit is not the reader's lanes') */
    bool taken[MOVE_PHASE_LANE_BITS] = {false};
    for (unsigned j = 0; j < MOVE_PHASE_LANE_BITS; j++) {
        int b = unit_bit(ur->lane[j], lu, nb);
        if (b >= 0 && !(g->gsel >> b & 1u) && home[b] < MOVE_PHASE_LANE_BITS) taken[home[b]] = true;
    }
    for (unsigned j = 0; j < MOVE_PHASE_LANE_BITS; j++) {
        int b = unit_bit(ur->lane[j], lu, nb);
        if (b < 0 || g->gsel >> b & 1u || home[b] < MOVE_PHASE_LANE_BITS || g->gmap[b] & (g->gmap[b] - 1u)) continue;
        for (uint32_t f = 0; f < MOVE_PHASE_LANE_BITS && f < place; f++)
            if (!taken[f]) {
                g->gmap[b] |= 1u << (k + f), taken[f] = true;
                break;
            }
    }
    return gmap_bijective(g->gmap, nb);
}

/* One side's accesses of a gather plan, weighed over `lanes` threads as
 * weighed_side's: one per piece (its first unit's index). */
static move_side gather_side(tc_arena *a, const move_lins *lins, const move_plan *p, const move_units *m,
                             uint32_t lanes) {
    move_side s = {.groups = m->n >> p->gk, .lanes = lanes, .bytes = MOVE_MAX_VEC_BYTES};
    s.lin = TC_NEW_ARRAY(a, uint32_t, (size_t)s.groups * s.lanes);
    uint32_t lu = log2u(p->gu);
    for (uint32_t g = 0, k = 0; g < m->n; g++) {
        if (m->lin[g] >> lu & p->gsel) continue; /* not a piece's first unit */
        for (uint32_t l = 0; l < lanes; l++) s.lin[k * lanes + l] = lin_at(lins, l, g * p->gu);
        k++;
    }
    return s;
}

/* The scratch bytes of a plan: the round's rows, padded, and spare slots
 * for the stores of other rounds (a gather plan skips those stores). */
static uint32_t move_bytes(const move_plan *p) {
    uint32_t bytes = (p->chunk + p->pad * (p->chunk / p->n)) * p->eb;
    return p->rounds > 1 && !p->gk ? bytes + p->eb * p->vx * p->threads : bytes;
}

/* The plan of a move through scratch (the section's header comment). */
static move_plan plan_move(const tir_op *op, uint32_t num_warps) {
    const tir_type *x = &op->operands[0]->type, *r = &op->results[0]->type;
    move_plan p = {.eb = scratch_elem_bytes(tir_type_elem(*x)), .threads = 32u * num_warps};
    p.numel = (uint32_t)tir_type_numel(*x);
    p.chunk = move_chunk(x);
    p.rounds = p.numel / p.chunk;
    p.row = p.n = x->rank ? x->shape[x->rank - 1u] : 1;
    p.nx = reg_count(x), p.nr = reg_count(r);
    tc_arena *a = tc_arena_new();
    move_lins lx = side_lins(a, op, false, p.nx, p.threads, 1), lr = side_lins(a, op, true, p.nr, p.threads, 1);
    p.vx = move_vec(x, &lx, p.row, p.eb, p.threads);
    p.vr = move_vec(r, &lr, p.row, p.eb, p.threads);
    uint32_t widest = (p.vx > p.vr ? p.vx : p.vr) * p.eb, piece = MOVE_MAX_VEC_BYTES / p.eb;
    if (p.eb > MOVE_MAX_VEC_BYTES || p.chunk < 2 * piece) {
        tc_arena_free(a);
        return p;
    }
    move_side sx = weighed_side(a, &lx, false, &p), sr = weighed_side(a, &lr, true, &p);
    /* candidates in order of preference on a tie: as it is; swizzles (no
     * bytes more) over the operand's rows, then over rows of other
     * lengths (for rank 1, or rows too short to swizzle); paddings of the
     * operand's rows (bytes more) */
    move_plan best = p;
    uint64_t fewest = plan_wavefronts(&sx, &sr, &p, UINT64_MAX), least = side_floor(&sx) + side_floor(&sr);
    bool tile_rows = x->rank >= 2 && p.row % piece == 0 && p.row <= p.chunk / 2;
    uint32_t rows[24], nrows = 0;
    if (tile_rows) rows[nrows++] = p.row;
    for (uint32_t n = 2 * piece; n <= p.chunk / 2 && n * p.eb <= MOVE_MAX_SWIZZLE_ROW; n *= 2)
        if (!tile_rows || n != p.row) rows[nrows++] = n;
    /* (a plan at the least a side can take is not beaten: the search stops
     * there) */
    for (uint32_t i = 0; i < nrows && fewest > least; i++) {
        uint32_t n = rows[i];
        for (uint32_t mp = 2; mp <= MOVE_MAX_PHASE && mp * piece <= n && fewest > least; mp *= 2)
            for (uint32_t pp = 1; pp <= MOVE_MAX_PHASE && n * pp * mp <= p.chunk && fewest > least; pp *= 2) {
                move_plan c = p;
                c.n = n, c.per_phase = pp, c.max_phase = mp;
                uint64_t w = plan_wavefronts(&sx, &sr, &c, fewest);
                if (w < fewest) fewest = w, best = c;
            }
    }
    static const uint32_t pads[] = {4, 8, 16, 32}; /* bytes */
    for (size_t i = 0; i < sizeof pads / sizeof pads[0] && tile_rows && fewest > least; i++) {
        if (pads[i] % widest || pads[i] % p.eb || 2 * pads[i] > p.row * p.eb) continue;
        move_plan c = p;
        c.pad = pads[i] / p.eb;
        uint64_t w = plan_wavefronts(&sx, &sr, &c, fewest);
        if (w < fewest) fewest = w, best = c;
    }
    /* the gather plan, where it needs fewer accesses at no more wavefronts
     * and bytes (weighed over the same lanes) */
    move_plan g;
    move_units ux, ur;
    if (plan_gather(a, op, &lx, &lr, &p, &g, &ux, &ur) &&
        (ux.n + ur.n) >> g.gk < p.nx / p.vx + p.nr / p.vr && move_bytes(&g) <= move_bytes(&best)) {
        move_side gx = gather_side(a, &lx, &g, &ux, sx.lanes), gr = gather_side(a, &lr, &g, &ur, sx.lanes);
        if (plan_wavefronts(&gx, &gr, &g, fewest + 1) <= fewest) best = g;
    }
    tc_arena_free(a);
    return best;
}

/* A move's plan kept by smem_plan for codegen (lower_memo), with what it
 * was made from: an op whose types or warps a later pass changed gets a
 * new plan, not a stale one. */
typedef struct kept_plan {
    const tir_op *op;
    tir_opcode code;
    tir_type x, r;
    uint8_t perm[TIR_MAX_RANK];
    uint32_t warps;
    move_plan plan;
    struct kept_plan *next;
} kept_plan;

enum { MEMO_BUCKETS = 64 }; /* by op address; a kernel's moves are few */

struct lower_memo {
    tc_arena *arena;
    kept_plan *moves[MEMO_BUCKETS];
};

lower_memo *lower_memo_new(tc_arena *a) {
    lower_memo *m = TC_NEW(a, lower_memo);
    *m = (lower_memo){.arena = a};
    return m;
}

size_t lower_memo_moves(const lower_memo *m) {
    size_t n = 0;
    for (size_t b = 0; b < MEMO_BUCKETS; b++)
        for (const kept_plan *k = m->moves[b]; k; k = k->next) n++;
    return n;
}

static size_t memo_slot(const tir_op *op) {
    return ((uintptr_t)op >> 4) % MEMO_BUCKETS;
}

/* The plan memo keeps for op and num_warps, or NULL. */
static const move_plan *kept_move(const lower_memo *memo, const tir_op *op, uint32_t num_warps) {
    const tir_type *x = &op->operands[0]->type, *r = &op->results[0]->type;
    bool permute = op->code == TIR_OP_PERMUTE;
    for (const kept_plan *k = memo ? memo->moves[memo_slot(op)] : NULL; k; k = k->next)
        if (k->op == op && k->code == op->code && k->warps == num_warps && tir_type_eq(k->x, *x) &&
            tir_type_eq(k->r, *r) && (!permute || !memcmp(k->perm, op->attr.perm, sizeof k->perm)))
            return &k->plan;
    return NULL;
}

static void keep_move(lower_memo *memo, const tir_op *op, uint32_t num_warps, const move_plan *p) {
    kept_plan *k = TC_NEW(memo->arena, kept_plan);
    size_t b = memo_slot(op);
    *k = (kept_plan){.op = op, .code = op->code, .x = op->operands[0]->type, .r = op->results[0]->type,
                     .warps = num_warps, .plan = *p, .next = memo->moves[b]};
    if (op->code == TIR_OP_PERMUTE) memcpy(k->perm, op->attr.perm, sizeof k->perm);
    memo->moves[b] = k;
}

static uint32_t op_warps(const tir_op *op) {
    return op->parent && op->parent->func && op->parent->func->num_warps ? (uint32_t)op->parent->func->num_warps
                                                                          : TILEC_MAX_NUM_WARPS;
}

/* Whether a conversion between mma-kind layouts only renames registers
 * (tir_mma_rename_map), and the map (when map is not NULL, room for the
 * result's registers). */
static bool renames_mma(const tir_op *op, uint32_t *map) {
    const tir_type *x = &op->operands[0]->type, *r = &op->results[0]->type;
    if (op->code != TIR_OP_CONVERT_LAYOUT || !x->rank || !is_mma_kind(&x->layout) || !is_mma_kind(&r->layout) ||
        reg_count(r) > TIR_MAX_THREAD_ELEMS)
        return false;
    uint32_t mine[TIR_MAX_THREAD_ELEMS];
    return tir_mma_rename_map(x, r, LOWER_WARP_SIZE * op_warps(op), map ? map : mine);
}

/* Whether op moves data through the scratch area (else registers are
 * renamed). */
bool move_needs_scratch(const tir_op *op) {
    const tir_type *x = &op->operands[0]->type, *r = &op->results[0]->type;
    switch (op->code) {
    case TIR_OP_CONVERT_LAYOUT: return !tir_layout_eq(&x->layout, &r->layout) && !renames_mma(op, NULL);
    case TIR_OP_PERMUTE:
        if (x->layout.kind == TIR_LAYOUT_BLOCKED && r->layout.kind == TIR_LAYOUT_BLOCKED) {
            tir_layout want = tir_layout_permute(&x->layout, op->attr.perm);
            if (tir_layout_eq(&want, &r->layout)) return false;
        }
        return true;
    case TIR_OP_RESHAPE: return true;
    default: return false;
    }
}

/* The scratch bytes op's move needs (0: it renames registers) and, in
 * *steps, the straight-line steps a thread's code takes for it: in every
 * round it passes over all of its operand's and result's registers to
 * pick those of the round, so the code grows as rounds x registers, the
 * square of the tile's size. One plan for both: planning weighs every
 * candidate layout of the scratch area, the most time a move takes to
 * compile. */
uint32_t move_scratch(const tir_op *op, lower_memo *memo, uint64_t *steps) {
    *steps = 0;
    if (!move_needs_scratch(op)) return 0;
    uint32_t warps = op_warps(op);
    const move_plan *kept = kept_move(memo, op, warps);
    move_plan p = kept ? *kept : plan_move(op, warps);
    if (memo && !kept) keep_move(memo, op, warps, &p);
    *steps = (uint64_t)p.rounds * (p.nx + p.nr);
    return move_bytes(&p);
}

/* The scratch slot (elements) of the element at row-major index lin
 * within its round (plan_slot, in code). */
static LLVMValueRef padded_slot(cg *c, const move_plan *p, LLVMValueRef lin) {
    LLVMValueRef i = LLVMBuildAnd(c->b, lin, i32c(c, p->chunk - 1), "");
    if (p->max_phase > 1) {
        LLVMValueRef phase = LLVMBuildLShr(c->b, i, i32c(c, log2u(p->n) + log2u(p->per_phase)), "");
        phase = LLVMBuildAnd(c->b, phase, i32c(c, p->max_phase - 1), "");
        i = LLVMBuildXor(c->b, i, LLVMBuildShl(c->b, phase, i32c(c, log2u(MOVE_MAX_VEC_BYTES / p->eb)), ""), "");
    }
    if (!p->pad) return i;
    return LLVMBuildAdd(c->b, i, LLVMBuildMul(c->b, LLVMBuildLShr(c->b, i, i32c(c, log2u(p->n)), ""), i32c(c, p->pad), ""),
                        "");
}

/* The operand index the result's register r holds (as move_lin). */
static LLVMValueRef result_lin(cg *c, const tir_op *op, uint32_t r) {
    const tir_value *x = op->operands[0], *res = op->results[0];
    if (op->code != TIR_OP_PERMUTE) return linear_index(c, &res->type, r);
    view vr = view_of(&res->type); /* blocked: needs_blocked() */
    LLVMValueRef xc[TIR_MAX_RANK];
    for (unsigned i = 0; i < res->type.rank; i++) xc[op->attr.perm[i]] = view_coord(c, &vr, r, view_dim(&vr, i));
    LLVMValueRef lin = xc[0];
    for (unsigned d = 1; d < x->type.rank; d++)
        lin = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, lin, i32c(c, x->type.shape[d]), ""), xc[d], "");
    return lin;
}

/* A gather plan's slot, in bytes, of the thread part `tpart` of an index
 * (plan_slot on it, in code: tid_bits are the bits it may set); *bits gets
 * the bits the result may set. */
static LLVMValueRef gather_base(cg *c, const move_plan *p, LLVMValueRef tpart, uint32_t tid_bits, uint32_t *bits) {
    uint32_t lu = log2u(p->gu), ub = log2u(p->gu * p->eb), nb = log2u(p->chunk / p->gu);
    int32_t shift[MOVE_MAX_UNIT_BITS];
    uint32_t mask[MOVE_MAX_UNIT_BITS], nshift = 0;
    LLVMValueRef at = i32c(c, 0);
    *bits = 0;
    for (uint32_t b = 0; b < nb; b++) {
        if (!(tid_bits >> (b + lu) & 1u)) continue;
        uint32_t img = p->gmap[b] << ub;
        *bits |= img;
        if (img & (img - 1u)) { /* xor-ed into a second bit */
            LLVMValueRef set = LLVMBuildICmp(c->b, LLVMIntNE, LLVMBuildAnd(c->b, tpart, i32c(c, 1u << (b + lu)), ""),
                                             i32c(c, 0), "");
            at = LLVMBuildXor(c->b, at, LLVMBuildSelect(c->b, set, i32c(c, img), i32c(c, 0), ""), "");
            continue;
        }
        int32_t sh = (int32_t)log2u(img) - (int32_t)(b + lu); /* bits moving the same way go together */
        uint32_t k = 0;
        while (k < nshift && shift[k] != sh) k++;
        if (k == nshift) shift[nshift] = sh, mask[nshift++] = 0;
        mask[k] |= 1u << (b + lu);
    }
    for (uint32_t k = 0; k < nshift; k++) {
        LLVMValueRef v = LLVMBuildAnd(c->b, tpart, i32c(c, mask[k]), "");
        if (shift[k] > 0) v = LLVMBuildShl(c->b, v, i32c(c, shift[k]), "");
        if (shift[k] < 0) v = LLVMBuildLShr(c->b, v, i32c(c, -shift[k]), "");
        at = LLVMBuildXor(c->b, at, v, "");
    }
    return at;
}

/* The address of the piece whose first unit starts at thread part ^ lin:
 * the thread's base (bytes) with the constant part's slot, added where
 * their bits are apart (ptxas folds it into the access), else xor-ed. */
static LLVMValueRef gather_at(cg *c, const move_plan *p, LLVMValueRef base, uint32_t base_bits, uint32_t lin) {
    uint32_t off = plan_slot(p, lin) * p->eb;
    LLVMValueRef area = i32c(c, c->scratch);
    if (!(off & base_bits)) return LLVMBuildAdd(c->b, LLVMBuildAdd(c->b, area, base, ""), i32c(c, off), "");
    return LLVMBuildAdd(c->b, area, LLVMBuildXor(c->b, base, i32c(c, off), ""), "");
}

/* The registers of thread 0's units in piece h of side m, in the piece's
 * order (the gathered bits' values): regs[w] is unit w's first. */
static void piece_regs(const move_plan *p, const move_units *m, uint32_t h, uint32_t *regs) {
    uint32_t lu = log2u(p->gu);
    for (uint32_t w = 0; w < 1u << p->gk; w++) {
        uint32_t lin = m->lin[h];
        for (uint32_t b = 0, i = 0; b < MOVE_MAX_UNIT_BITS; b++)
            if (p->gsel >> b & 1u) lin ^= (w >> i++ & 1u) << (b + lu);
        regs[w] = (uint32_t)m->unit_at[lin >> lu] * p->gu;
    }
}

/* A move by a gather plan (the section's header): per round, each writer
 * stores each of its pieces as one vector, a barrier, each reader loads
 * its pieces and spreads their units over its registers. The pieces go by
 * the round of their register part (m->lin): where the thread part has
 * round bits too, under a branch (stores) or a select (loads) on the sum,
 * else only the round's. */
static void gen_move_gather(cg *c, const tir_op *op, const move_plan *p) {
    const tir_value *x = op->operands[0], *res = op->results[0];
    tir_elem e = tir_type_elem(x->type);
    move_units ux, ur;
    move_plan g;
    uint32_t unit = p->vx < p->vr ? p->vx : p->vr; /* plan_gather's: it asks of units only */
    move_lins lx = side_lins(c->arena, op, false, p->nx, p->threads, unit),
              lr = side_lins(c->arena, op, true, p->nr, p->threads, unit);
    if (!plan_gather(c->arena, op, &lx, &lr, p, &g, &ux, &ur)) { /* plan_move found it: never, unless a bug */
        cg_error(c, op, "a move's gather plan does not hold in codegen");
        return;
    }
    uint32_t u = p->gu, lu = log2u(u), lc = log2u(p->chunk), pieces = 1u << p->gk, regs[MOVE_MAX_VEC_BYTES];
    LLVMTypeRef vty = LLVMVectorType(mem_type(c, e), u * pieces);
    const move_units *side[2] = {&ux, &ur};
    LLVMValueRef tpart[2] = {LLVMBuildXor(c->b, linear_index(c, &x->type, 0), i32c(c, ux.lin[0]), ""),
                             LLVMBuildXor(c->b, result_lin(c, op, 0), i32c(c, ur.lin[0]), "")};
    LLVMValueRef base[2], round_of[2];
    uint32_t base_bits[2];
    for (int s = 0; s < 2; s++) {
        base[s] = gather_base(c, p, tpart[s], side[s]->tid_bits, &base_bits[s]);
        round_of[s] = side[s]->tid_bits >> lc ? LLVMBuildLShr(c->b, tpart[s], i32c(c, lc), "") : NULL;
    }
    LLVMValueRef *out = new_regs(c, res);
    for (uint32_t q = 0; q < p->rounds; q++)
        for (int s = 0; s < 2; s++) { /* s 0: the stores, 1: the loads */
            const move_units *m = side[s];
            barrier(c); /* the stores wait for the scratch area's last readers; the loads for the stores */
            for (uint32_t cr = 0; cr < p->rounds; cr++) {
                if (!round_of[s] && cr != q) continue;
                LLVMValueRef in = NULL;
                if (round_of[s]) {
                    LLVMValueRef round = LLVMBuildXor(c->b, round_of[s], i32c(c, cr), "");
                    in = LLVMBuildICmp(c->b, LLVMIntEQ, round, i32c(c, q), "");
                }
                LLVMBasicBlockRef after = NULL;
                for (uint32_t h = 0; h < m->n; h++) {
                    if (m->lin[h] >> lu & p->gsel || m->lin[h] >> lc != cr) continue; /* not a piece's first unit */
                    if (s == 0 && !after) guard_begin(c, in, "move.write", "move.written", &after);
                    LLVMValueRef at = smem_at(c, gather_at(c, p, base[s], base_bits[s], m->lin[h]));
                    piece_regs(p, m, h, regs);
                    if (s == 0) {
                        LLVMValueRef v = LLVMGetUndef(vty);
                        for (uint32_t i = 0; i < u * pieces; i++) {
                            LLVMValueRef el = to_mem(c, e, reg(c, x, regs[i / u] + i % u));
                            v = LLVMBuildInsertElement(c->b, v, el, i32c(c, i), "");
                        }
                        LLVMSetAlignment(LLVMBuildStore(c->b, v, at), MOVE_MAX_VEC_BYTES);
                        continue;
                    }
                    LLVMValueRef v = LLVMBuildLoad2(c->b, vty, at, "");
                    LLVMSetAlignment(v, MOVE_MAX_VEC_BYTES);
                    for (uint32_t i = 0; i < u * pieces; i++) {
                        uint32_t r = regs[i / u] + i % u;
                        LLVMValueRef el = from_mem(c, e, LLVMBuildExtractElement(c->b, v, i32c(c, i), ""));
                        out[r] = in && q > 0 ? LLVMBuildSelect(c->b, in, el, out[r], "") : el;
                    }
                }
                guard_end(c, after);
            }
        }
}

/* Every thread writes its registers at their row-major index in the
 * operand, a barrier, every thread reads the elements its result registers
 * hold, in the plan's vectors and rows (the section's header). Copies of an
 * element write the same value to the same place. */
void gen_move_scratch(cg *c, const tir_op *op) {
    const tir_value *x = op->operands[0], *res = op->results[0];
    tir_elem e = tir_type_elem(x->type);
    /* the plan smem_plan kept; codegen only reads the memo (its kernels
     * run on several threads) */
    const move_plan *kept = kept_move(c->memo, op, (uint32_t)c->f->num_warps);
    move_plan p = kept ? *kept : plan_move(op, (uint32_t)c->f->num_warps);
    if (c->nregs[x->id] != p.nx) {
        cg_error(c, op, "operand registers do not match its layout");
        return;
    }
    if (move_bytes(&p) > c->scratch_bytes) { /* smem_plan sized it with the same plan: never, unless a bug */
        cg_error(c, op, "the kernel's smem scratch is smaller than this move needs");
        return;
    }
    if (p.gk) {
        gen_move_gather(c, op, &p);
        return;
    }
    LLVMTypeRef ty = e == TIR_PTR ? elem_type(c, e) : mem_type(c, e);
    LLVMTypeRef vx_ty = p.vx > 1 ? LLVMVectorType(ty, p.vx) : ty, vr_ty = p.vr > 1 ? LLVMVectorType(ty, p.vr) : ty;
    /* each group's first row-major index, written and read */
    uint32_t gx = p.nx / p.vx, gr = p.nr / p.vr;
    LLVMValueRef *lin_x = TC_NEW_ARRAY(c->arena, LLVMValueRef, gx), *lin_r = TC_NEW_ARRAY(c->arena, LLVMValueRef, gr);
    for (uint32_t g = 0; g < gx; g++) lin_x[g] = linear_index(c, &x->type, g * p.vx);
    for (uint32_t g = 0; g < gr; g++) lin_r[g] = result_lin(c, op, g * p.vr);
    uint32_t area = p.chunk + p.pad * (p.chunk / p.n); /* the round's slots; the spares follow */
    LLVMValueRef spare = p.rounds > 1 ? LLVMBuildAdd(c->b, LLVMBuildMul(c->b, c->tid, i32c(c, p.vx), ""), i32c(c, area), "")
                                      : NULL;
    LLVMValueRef *out = new_regs(c, res);
    for (uint32_t q = 0; q < p.rounds; q++) {
        barrier(c); /* the scratch area's last readers are done */
        for (uint32_t g = 0; g < gx; g++) {
            LLVMValueRef slot = padded_slot(c, &p, lin_x[g]);
            if (p.rounds > 1) {
                LLVMValueRef in = LLVMBuildICmp(c->b, LLVMIntEQ, LLVMBuildLShr(c->b, lin_x[g], i32c(c, log2u(p.chunk)), ""),
                                                i32c(c, q), "");
                slot = LLVMBuildSelect(c->b, in, slot, spare, "");
            }
            LLVMValueRef v = p.vx > 1 ? LLVMGetUndef(vx_ty) : NULL;
            for (uint32_t j = 0; j < p.vx; j++) {
                LLVMValueRef el = e == TIR_PTR ? reg(c, x, g * p.vx + j) : to_mem(c, e, reg(c, x, g * p.vx + j));
                v = p.vx > 1 ? LLVMBuildInsertElement(c->b, v, el, i32c(c, j), "") : el;
            }
            LLVMValueRef at = LLVMBuildAdd(c->b, i32c(c, c->scratch), LLVMBuildMul(c->b, slot, i32c(c, p.eb), ""), "");
            LLVMSetAlignment(LLVMBuildStore(c->b, v, smem_at(c, at)), p.eb * p.vx);
        }
        barrier(c);
        for (uint32_t g = 0; g < gr; g++) {
            LLVMValueRef slot = padded_slot(c, &p, lin_r[g]), in = NULL;
            if (p.rounds > 1)
                in = LLVMBuildICmp(c->b, LLVMIntEQ, LLVMBuildLShr(c->b, lin_r[g], i32c(c, log2u(p.chunk)), ""),
                                   i32c(c, q), "");
            LLVMValueRef at = LLVMBuildAdd(c->b, i32c(c, c->scratch), LLVMBuildMul(c->b, slot, i32c(c, p.eb), ""), "");
            LLVMValueRef v = LLVMBuildLoad2(c->b, vr_ty, smem_at(c, at), "");
            LLVMSetAlignment(v, p.eb * p.vr);
            for (uint32_t j = 0; j < p.vr; j++) {
                LLVMValueRef el = p.vr > 1 ? LLVMBuildExtractElement(c->b, v, i32c(c, j), "") : v;
                el = e == TIR_PTR ? el : from_mem(c, e, el);
                uint32_t r = g * p.vr + j;
                out[r] = in && q > 0 ? LLVMBuildSelect(c->b, in, el, out[r], "") : el;
            }
        }
    }
}

/* expand_dims from the slice layout, and a conversion or permute that
 * only renames: the registers are the same, or, between mma-kind layouts,
 * the ones renames_mma maps, or from an mma slice, the ones
 * tir_mma_slice_source names. */
void gen_rename(cg *c, const tir_op *op) {
    const tir_value *x = op->operands[0], *res = op->results[0];
    LLVMValueRef *out = new_regs(c, res);
    uint32_t *map = TC_NEW_ARRAY(c->arena, uint32_t, c->nregs[res->id]);
    if (!tir_layout_eq(&x->type.layout, &res->type.layout) && renames_mma(op, map)) {
        for (uint32_t r = 0; r < c->nregs[res->id]; r++) out[r] = reg(c, x, map[r]);
        return;
    }
    if (op->code == TIR_OP_EXPAND_DIMS && x->type.rank && x->type.layout.kind == TIR_LAYOUT_MMA_SLICE) {
        for (uint32_t r = 0; r < c->nregs[res->id]; r++)
            out[r] = reg(c, x, tir_mma_slice_source(&x->type.layout, res->type.shape, r));
        return;
    }
    if (c->nregs[res->id] != c->nregs[x->id] && c->nregs[x->id] != 1) {
        cg_error(c, op, "operand and result layouts do not line up");
        return;
    }
    for (uint32_t r = 0; r < c->nregs[res->id]; r++) out[r] = reg(c, x, r);
}

/* broadcast: same layout; a result register reads the operand register
 * with the same indices, 0 along the operand's dims of size 1. */
void gen_broadcast(cg *c, const tir_op *op) {
    const tir_value *x = op->operands[0], *res = op->results[0];
    LLVMValueRef *out = new_regs(c, res);
    for (uint32_t r = 0; r < c->nregs[res->id]; r++) out[r] = reg(c, x, broadcast_source_reg(&x->type, &res->type, r));
}
