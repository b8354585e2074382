/* cg_dot_wgmma.c - `dot` on Hopper's warpgroup MMA (sm_90a): wgmma.mma_async reading b,
 * and a where it can, from shared memory through matrix descriptors. The sibling of
 * cg_dot_mma_sync.c, chosen by cg_dot_lowering_for; the asm text is lower/ptx_wgmma.h's
 * contract, which the emulator (emu/wgmma.c) checks against the PTX ISA.
 *
 * The layout pass gives a dot that fits (lower_wgmma_shape_ok) the MMA
 * layout with the warps all along M, wpc [W, 1]: warp w holds rows
 * 16 w + g and + 8 of each 16 W-row piece of the accumulator, which is
 * wgmma's D fragment for warpgroup w / 4 (rows 64 (w / 4) + 16 (w % 4) +
 * g of a 64-row m64nNk instruction, columns 8 i + 2 q: mma.sync's C
 * fragment repeated along N, 9.7.15.5.1.1). stage_operands leaves b (and
 * a, when its slot suits) in its shared-memory slot (a dot_smem tile whose
 * one register is the slot's address) in the layout tir_shared_for_wgmma
 * gives, which is the ISA's canonical layout (9.7.15.5.1.2.1) for a
 * descriptor:
 *   K-major (rows along M or N, K contiguous): rows of S = 32, 64 or 128
 *     bytes, swizzled S bytes wide, 8-row groups SBO = 8 S apart; rows
 *     longer than 128 bytes in 128-byte pieces of all rows (atom), so a
 *     K step of 32 bytes lies in one piece;
 *   MN-major (f16/bf16, transposed: rows along K, M or N contiguous):
 *     K rows S bytes apart, groups of 8 SBO = 8 S apart, and the pieces
 *     along M or N LBO apart.
 * A descriptor is the slot's shared address >> 4 plus the piece's offset
 * >> 4 (both multiples of 16; buffers wgmma reads start on 1024 bytes,
 * smem_buffer_align, so the swizzle's base offset is 0), with the
 * constant LBO, SBO and swizzle fields.
 *
 * One dot: wgmma.fence (its accumulator registers were written by other
 * instructions), then for each K step, each 16 W-row piece rm and each
 * N piece of at most 256 columns, one wgmma.mma_async with scale-d 1
 * (D = A B + D, D starting as acc), a's warpgroup rows at 64 (tid / 128);
 * then wgmma.commit_group and wgmma.wait_group 0, through which every
 * accumulator register passes (ptx_wgmma_wait_asm), so nothing reads one
 * before the wait: the slots are free again after the dot. A dot_async
 * (lower/async_dots.c) stops at the commit, its registers pending, and
 * dot_wait is that wait on its own, passing its operands' registers
 * through. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/codegen_internal.h"
#include "lower/ptx_async.h"
#include "lower/ptx_wgmma.h"

enum {
    WGMMA_N_MAX = PTX_WGMMA_MAX_N, /* columns of one instruction */
    WGMMA_ROWS = PTX_WGMMA_M,      /* rows of one instruction: a warpgroup's */
    WGMMA_THREADS = LOWER_WARPGROUP_WARPS * LOWER_WARP_SIZE
};

static bool wgmma_elem(tir_elem e, ptx_wgmma_elem *out) {
    switch (e) {
    case TIR_F16: *out = PTX_WGMMA_F16; return true;
    case TIR_BF16: *out = PTX_WGMMA_BF16; return true;
    case TIR_I8: *out = PTX_WGMMA_S8; return true;
    default: return false; /* f32 (tf32) keeps mma.sync: wgmma would not round the inputs as `dot` says */
    }
}

/* Operand x (a: idx 0, [M, K]; b: idx 1, [K, N]) left in shared memory:
 * its descriptor's constant part and how to offset it. */
typedef struct smem_operand {
    LLVMValueRef addr;      /* i32: the slot's shared address >> 4, the descriptor's start field */
    uint64_t fixed;         /* the descriptor's other fields */
    bool mn_major;          /* rows along K (transposed) */
    uint32_t s;             /* swizzle width in bytes (a row of a piece) */
    uint32_t atom;          /* elements of a piece's row */
    uint32_t piece_bytes;   /* bytes of one piece (all rows) */
    uint32_t eb;
} smem_operand;

static unsigned swizzle_mode(uint32_t s) { return s == 128 ? 1 : s == 64 ? 2 : 3; }

static bool smem_operand_of(cg *c, const tir_op *op, const tir_value *x, unsigned idx, smem_operand *o) {
    const tir_type *bt = &x->def->operands[0]->type;
    const tir_layout *l = &bt->layout;
    const uint32_t *slot = &bt->shape[1];
    unsigned kdim = idx == 0 ? 1 : 0, contig = l->kind == TIR_LAYOUT_SHARED ? l->ord[0] : 1;
    o->eb = scratch_elem_bytes(tir_type_elem(*bt));
    o->mn_major = contig != kdim;
    o->atom = l->sw_atom ? l->sw_atom : slot[contig];
    o->s = o->atom * o->eb;
    o->piece_bytes = o->s * slot[1 - contig];
    tir_layout want = tir_shared_for_wgmma(slot, contig, o->eb);
    if (l->kind != TIR_LAYOUT_SHARED || !tir_layout_eq(l, &want) || (o->s != 32 && o->s != 64 && o->s != 128)) {
        cg_error(c, op, "dot: an operand left in shared memory is not in a layout wgmma's descriptors read");
        return false;
    }
    uint32_t sbo = 8 * o->s, lbo = o->mn_major ? o->piece_bytes : 16; /* K-major with a swizzle: LBO unused */
    /* in 32 bits: a shared address is below 2^18, so the field and the
     * offsets added to it (a piece, a K step: inside the buffer) stay in
     * its 14 bits, and the constant fields join last, as one 64-bit or;
     * in 64 bits every descriptor was a carry chain and a funnel shift */
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c->ctx);
    LLVMValueRef start = LLVMBuildPtrToInt(c->b, reg(c, x, 0), i32, "");
    o->addr = LLVMBuildAnd(c->b, LLVMBuildLShr(c->b, start, i32c(c, 4), ""), i32c(c, 0x3fff), "");
    o->fixed = ptx_wgmma_desc(0, lbo, sbo, 0, swizzle_mode(o->s));
    return true;
}

/* The byte offset, in the slot, of the 8-row group at mn0 (a multiple of
 * 8; of the piece width when MN-major) and K step at k0. */
static uint32_t smem_offset(const smem_operand *o, uint32_t mn0, uint32_t k0) {
    if (o->mn_major) return mn0 / o->atom * o->piece_bytes + k0 * o->s;
    return k0 / o->atom * o->piece_bytes + mn0 / 8 * (8 * o->s) + k0 % o->atom * o->eb;
}

static LLVMValueRef desc_at(cg *c, const smem_operand *o, LLVMValueRef extra, uint32_t off) {
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c->ctx);
    LLVMValueRef a = LLVMBuildAdd(c->b, o->addr, i32c(c, off >> 4), "");
    if (extra) a = LLVMBuildAdd(c->b, a, extra, "");
    return LLVMBuildOr(c->b, LLVMBuildZExt(c->b, a, i64, ""), LLVMConstInt(i64, o->fixed, false), "");
}

/* A 32-bit fragment register of a in registers: kw elements along K from
 * register `first` (as mma.sync's, whose a fragment wgmma's is). */
static LLVMValueRef pack_a(cg *c, const tir_value *a, uint32_t first) {
    tir_elem e = tir_type_elem(a->type);
    unsigned kw = tir_dot_kw(e);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c->ctx);
    LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(elem_type(c, e), kw));
    for (unsigned i = 0; i < kw; i++) vec = LLVMBuildInsertElement(c->b, vec, reg(c, a, first + i), i32c(c, i), "");
    return LLVMBuildBitCast(c->b, vec, i32, "");
}

static void sync_asm(cg *c, ptx_wgmma_sync which) {
    inline_asm(c, LLVMVoidTypeInContext(c->ctx), ptx_wgmma_sync_asms[which].text, ptx_wgmma_sync_asms[which].cons,
               NULL, 0);
}

static void wait_through(cg *c, const tir_op *op, unsigned n, LLVMValueRef *regs, uint32_t k, char letter);
static bool takes_wgmma(cg *c, const tir_op *op);

/* The dot's wgmmas; with `wait`, its wait too (else the registers stay
 * pending until a dot_wait: dot_async). */
static void gen_dot_wgmma(cg *c, const tir_op *op, bool wait) {
    const tir_value *a = op->operands[0], *b = op->operands[1], *acc = op->operands[2], *res = op->results[0];
    tir_elem in = tir_type_elem(a->type);
    uint32_t w = res->type.layout.wpc[0], m = res->type.shape[0], n = res->type.shape[1], k = a->type.shape[1];
    ptx_wgmma_form f = {.scale_a = 1, .scale_b = 1};
    if (!wgmma_elem(in, &f.a)) {
        cg_error(c, op, "dot: no wgmma for these inputs");
        return;
    }
    f.b = f.a;
    f.a_regs = a->type.layout.kind != TIR_LAYOUT_DOT_SMEM;
    uint32_t kin = ptx_wgmma_k(&f), rm_n = m / (TIR_MMA_TILE_M * w), rn_n = n / TIR_MMA_TILE_N;
    uint32_t nc = n < WGMMA_N_MAX ? n : WGMMA_N_MAX, kw = tir_dot_kw(in), nkc = k / (4 * kw);
    if (c->nregs[acc->id] != rm_n * rn_n * 4 ||
        (f.a_regs && tir_mma_regs(&a->type.layout, a->type.shape) != rm_n * nkc * 2 * kw)) {
        cg_error(c, op, "dot: operand layouts do not match the result's mma layout");
        return;
    }
    smem_operand sa = {0}, sb;
    if ((!f.a_regs && !smem_operand_of(c, op, a, 0, &sa)) || !smem_operand_of(c, op, b, 1, &sb)) return;
    f.trans_a = !f.a_regs && sa.mn_major;
    f.trans_b = sb.mn_major;
    f.n = nc;
    char text[PTX_WGMMA_MAX_TEXT], cons[PTX_WGMMA_MAX_CONS];
    if (!ptx_wgmma_asm(&f, text, sizeof text, cons, sizeof cons)) {
        cg_error(c, op, "dot: no wgmma instruction of this shape");
        return;
    }
    bool fl = in != TIR_I8;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c->ctx);
    LLVMTypeRef dty = fl ? LLVMFloatTypeInContext(c->ctx) : i32;
    unsigned nr = ptx_wgmma_dregs(&f), na = f.a_regs ? 4 : 1;
    LLVMTypeRef *fields = TC_NEW_ARRAY(c->arena, LLVMTypeRef, nr);
    for (unsigned i = 0; i < nr; i++) fields[i] = dty;
    LLVMTypeRef ret = LLVMStructTypeInContext(c->ctx, fields, nr, false);

    LLVMValueRef *out = new_regs(c, res);
    for (uint32_t i = 0; i < c->nregs[res->id]; i++) out[i] = reg(c, acc, i);
    /* a's rows: this warpgroup's 64 in each 16 W-row piece */
    LLVMValueRef wg = LLVMBuildUDiv(c->b, c->tid, i32c(c, WGMMA_THREADS), "");
    LLVMValueRef a_extra = NULL;
    if (!f.a_regs) {
        uint32_t per_wg = sa.mn_major ? WGMMA_ROWS / sa.atom * sa.piece_bytes : WGMMA_ROWS / 8 * (8 * sa.s);
        a_extra = LLVMBuildMul(c->b, wg, i32c(c, per_wg >> 4), "");
    }
    LLVMValueRef *fa = NULL;
    if (f.a_regs) {
        fa = TC_NEW_ARRAY(c->arena, LLVMValueRef, rm_n * nkc * 2);
        for (uint32_t i = 0; i < rm_n * nkc * 2; i++) fa[i] = pack_a(c, a, i * kw);
    }
    sync_asm(c, PTX_WGMMA_FENCE);
    LLVMValueRef one = LLVMConstInt(LLVMInt1TypeInContext(c->ctx), 1, false);
    LLVMValueRef *args = TC_NEW_ARRAY(c->arena, LLVMValueRef, nr + 4 + 2);
    uint32_t per_step = kin / (4 * kw); /* a's K chunks an instruction takes */
    for (uint32_t s = 0; s < k / kin; s++)
        for (uint32_t rm = 0; rm < rm_n; rm++)
            for (uint32_t ni = 0; ni < n / nc; ni++) {
                unsigned at = 0;
                for (unsigned i = 0; i < nr; i++) args[at++] = out[(rm * rn_n + ni * (nc / 8) + i / 4) * 4 + i % 4];
                if (f.a_regs)
                    for (unsigned j = 0; j < 4; j++) args[at++] = fa[(rm * nkc + s * per_step + j / 2) * 2 + j % 2];
                else
                    args[at++] = desc_at(c, &sa, a_extra, smem_offset(&sa, rm * TIR_MMA_TILE_M * w, s * kin));
                args[at++] = desc_at(c, &sb, NULL, smem_offset(&sb, ni * nc, s * kin));
                args[at++] = one;
                LLVMValueRef d = inline_asm(c, ret, text, cons, args, nr + na + 2);
                for (unsigned i = 0; i < nr; i++)
                    out[(rm * rn_n + ni * (nc / 8) + i / 4) * 4 + i % 4] = LLVMBuildExtractValue(c->b, d, i, "");
            }
    sync_asm(c, PTX_WGMMA_COMMIT);
    if (wait) wait_through(c, op, 0, out, c->nregs[res->id], fl ? 'f' : 'r');
}

/* wgmma.wait_group `n` with the k registers `regs` passed through it (the
 * values after the wait replace them). */
static void wait_through(cg *c, const tir_op *op, unsigned n, LLVMValueRef *regs, uint32_t k, char letter) {
    if (!k) {
        sync_asm(c, (ptx_wgmma_sync)(PTX_WGMMA_WAIT0 + n));
        return;
    }
    char cons[PTX_WGMMA_MAX_CONS * 4];
    if (!ptx_wgmma_wait_asm(n, k, letter, cons, sizeof cons)) {
        cg_error(c, op, "dot: too many accumulator registers for one wgmma.wait_group");
        return;
    }
    LLVMTypeRef ty = letter == 'f' ? LLVMFloatTypeInContext(c->ctx) : LLVMInt32TypeInContext(c->ctx);
    LLVMTypeRef *fields = TC_NEW_ARRAY(c->arena, LLVMTypeRef, k);
    for (uint32_t i = 0; i < k; i++) fields[i] = ty;
    LLVMValueRef waited = inline_asm(c, LLVMStructTypeInContext(c->ctx, fields, k, false),
                                     ptx_wgmma_sync_asms[PTX_WGMMA_WAIT0 + n].text, cons, regs, k);
    for (uint32_t i = 0; i < k; i++) regs[i] = LLVMBuildExtractValue(c->b, waited, i, "");
}

void gen_dot_async(cg *c, const tir_op *op) {
    if (takes_wgmma(c, op)) gen_dot_wgmma(c, op, false);
    else cg_error(c, op, "dot_async: wgmma does not take this dot (sm_90a, b left in shared memory)");
}

/* dot_wait N, x...: each operand's registers through a wait (one each, so
 * each has one register type; the first waits, the rest find nothing
 * more to wait for). */
void gen_dot_wait(cg *c, const tir_op *op) {
    if (!op->noperands) wait_through(c, op, (unsigned)op->attr.axis, NULL, 0, 'r');
    for (uint32_t i = 0; i < op->noperands; i++) {
        const tir_value *x = op->operands[i], *r = op->results[i];
        uint32_t n = reg_count(&x->type);
        LLVMValueRef *out = new_regs(c, r);
        for (uint32_t j = 0; j < n; j++) out[j] = reg(c, x, j);
        wait_through(c, op, (unsigned)op->attr.axis, out, n,
                     tir_elem_is_float(tir_type_elem(x->type)) ? 'f' : 'r');
    }
}

/* Dots that fit wgmma (lower_wgmma_dot_ok) whose b stayed in shared
 * memory; the rest go to mma.sync, as on sm_80. */
static bool takes_wgmma(cg *c, const tir_op *op) {
    return lower_wgmma_dot_ok(op, c->f->num_warps ? (unsigned)c->f->num_warps : 1) &&
           op->operands[1]->type.layout.kind == TIR_LAYOUT_DOT_SMEM;
}

static void gen_dot_hopper(cg *c, const tir_op *op) {
    if (takes_wgmma(c, op)) gen_dot_wgmma(c, op, true);
    else if (op->operands[0]->type.layout.kind == TIR_LAYOUT_DOT_SMEM ||
             op->operands[1]->type.layout.kind == TIR_LAYOUT_DOT_SMEM)
        cg_error(c, op, "dot: an operand left in shared memory, but wgmma does not take this dot");
    else cg_dot_mma_sync.emit(c, op);
}

static bool takes_mma_kind(cg *c, const tir_op *op) { return op->results[0]->type.layout.kind == TIR_LAYOUT_MMA; }

const cg_dot_lowering cg_dot_wgmma = {.name = "wgmma", .takes = takes_mma_kind, .emit = gen_dot_hopper};

/* fence_async: fence.proxy.async.shared::cta (sm_90 and later). */
void gen_fence_async(cg *c, const tir_op *op) {
    long cc = c->arch && strncmp(c->arch, "sm_", 3) == 0 ? strtol(c->arch + 3, NULL, 10) : 0;
    if (cc < 90) {
        cg_error(c, op, "fence_async needs sm_90 or later");
        return;
    }
    const char *text = NULL, *cons = NULL;
#define PICK_FENCE(name, t, cs) \
    if (PTX_ASYNC_##name == PTX_ASYNC_FENCE_PROXY_ASYNC) text = t, cons = cs;
    PTX_ASYNC_ASMS(PICK_FENCE)
#undef PICK_FENCE
    inline_asm(c, LLVMVoidTypeInContext(c->ctx), text, cons, NULL, 0);
}
