/* cg_smem.c - shared-memory buffers: local_alloc, asynchronous copies (cp.async), ldmatrix,
 * local_load and local_store.
 * A file of its own because it is one concern of code generation; the context and the
 * helpers the concern files share are in lower/codegen_internal.h. */
#include <stdio.h>
#include <string.h>

#include "lower/codegen_internal.h"

/* ---- shared-memory buffers and asynchronous copies ---------------------------
 * A buffer (local_alloc) is a 16-byte aligned piece of the kernel's shared
 * memory between the reductions' slots and the scratch area, its own while
 * it is live (buffers whose live ranges do not meet may share bytes:
 * smem_plan.c places them); its register is its address. Slots are row-major
 * tiles, one after another. async_copy moves each thread's runs of
 * contiguous elements with cp.async (4, 8 or 16 bytes; a masked-off run
 * copies 0 bytes, which zero-fills); where a run's mask lanes differ, or
 * the run is narrower than 4 bytes or not known aligned, the thread copies
 * element by element with plain loads and shared stores, which have landed
 * by the barrier that must follow the wait anyway. */
uint32_t buffer_bytes(const tir_type *t) { return (uint32_t)lower_buffer_bytes(*t); }

void gen_local_alloc(cg *c, const tir_op *op) {
    uint32_t at = smem_buffer_offset(c->buffers, op);
    if (at == UINT32_MAX) { /* more buffers than smem_plan places: each after the last */
        uint32_t a = smem_buffer_align(c->f, op);
        c->apart_next = (c->apart_next + a - 1) & ~(a - 1); /* buffers_at is aligned for all */
        at = c->apart_next - c->buffers_at;
        c->apart_next += (buffer_bytes(&op->results[0]->type) + 15) & ~15u;
    }
    new_regs(c, op->results[0])[0] = smem_at(c, i32c(c, c->buffers_at + at));
}

/* The slot dim whose elements a buffer keeps contiguous (its shared
 * layout's ord[0]; without one, row-major: the last). */
static unsigned slot_contig_dim(const tir_type *bt) {
    return bt->layout.kind == TIR_LAYOUT_SHARED ? bt->layout.ord[0] : bt->rank - 2u;
}

/* How slot_addr_at adds the slot and the element: SLOT_SPLIT for the
 * few wide accesses of a pipelined loop (16-byte cp.async, ldmatrix): the
 * slot's address, then the element's byte offset. The slot's is one value for
 * all of a trip's accesses and the offset does not depend on the trip, so
 * each access is a hoisted offset plus the slot's address, which ptxas
 * folds into the access ([R+UR+imm]); as one element index, slot * elems
 * + off, it was an or and a shift-add each. SLOT_INDEX for narrower
 * accesses, element by element or nearly, whose hoisted offsets, one per
 * access, would stay live through the loop (it spilled tf32's general
 * path, 4-byte copies). */
typedef enum slot_form { SLOT_INDEX, SLOT_SPLIT } slot_form;

/* The shared address of the element at `coord` (one per slot dim) of the
 * slot in register 0 of operand 1 of buffer op `op`, under the buffer's
 * shared layout: tir_shared_offset in LLVM IR. */
static LLVMValueRef slot_addr_at(cg *c, const tir_op *op, LLVMValueRef const *coord, slot_form form) {
    const tir_type *bt = &op->operands[0]->type;
    const tir_layout *l = &bt->layout;
    unsigned rank = bt->rank - 1u;
    const uint32_t *shape = &bt->shape[1];
    uint8_t ord[TIR_MAX_RANK] = {0};
    for (unsigned k = 0; k < rank; k++) ord[k] = l->kind == TIR_LAYOUT_SHARED ? l->ord[k] : (uint8_t)(rank - 1 - k);
    LLVMValueRef col = coord[ord[0]], pieces = NULL; /* atom: the elements of the pieces before col's */
    uint32_t row_len = shape[ord[0]];
    if (l->kind == TIR_LAYOUT_SHARED && rank == 2 && l->sw_atom && l->sw_atom < row_len) {
        pieces = LLVMBuildMul(c->b, lshr_i32c(c, col, log2u(l->sw_atom)),
                              i32c(c, l->sw_atom * shape[ord[1]]), "");
        col = LLVMBuildAnd(c->b, col, i32c(c, l->sw_atom - 1), "");
        row_len = l->sw_atom;
    }
    if (l->kind == TIR_LAYOUT_SHARED && rank == 2 && l->sw_max_phase > 1) {
        LLVMValueRef phase = LLVMBuildAnd(c->b, lshr_i32c(c, coord[ord[1]], log2u(l->sw_per_phase)),
                                          i32c(c, l->sw_max_phase - 1), "");
        LLVMValueRef chunk = LLVMBuildXor(c->b, lshr_i32c(c, col, log2u(l->sw_vec)), phase, "");
        col = LLVMBuildOr(c->b, shl_i32c(c, chunk, log2u(l->sw_vec)),
                          LLVMBuildAnd(c->b, col, i32c(c, l->sw_vec - 1), ""), "");
    }
    LLVMValueRef off = NULL;
    for (unsigned k = rank; k-- > 1;)
        off = off ? LLVMBuildAdd(c->b, LLVMBuildMul(c->b, off, i32c(c, shape[ord[k]]), ""), coord[ord[k]], "") : coord[ord[k]];
    off = off ? LLVMBuildAdd(c->b, LLVMBuildMul(c->b, off, i32c(c, row_len), ""), col, "") : col;
    if (pieces) off = LLVMBuildAdd(c->b, pieces, off, "");
    uint32_t slot_elems = (uint32_t)(tir_type_numel(*bt) / bt->shape[0]), eb = scratch_elem_bytes(tir_type_elem(*bt));
    LLVMValueRef slot = reg(c, op->operands[1], 0);
    if (form == SLOT_INDEX) {
        LLVMValueRef at = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, slot, i32c(c, slot_elems), ""), off, "");
        return LLVMBuildGEP2(c->b, mem_type(c, tir_type_elem(*bt)), reg(c, op->operands[0], 0), &at, 1, "");
    }
    LLVMTypeRef i8 = LLVMInt8TypeInContext(c->ctx);
    LLVMValueRef first = LLVMBuildMul(c->b, slot, i32c(c, slot_elems * eb), "");
    LLVMValueRef base = LLVMBuildGEP2(c->b, i8, reg(c, op->operands[0], 0), &first, 1, "");
    off = LLVMBuildMul(c->b, off, i32c(c, eb), "");
    return LLVMBuildGEP2(c->b, i8, base, &off, 1, "");
}

/* Where a local_load's part of the slot starts along dim d (0 for the
 * whole slot and for the other buffer ops). */
static uint32_t part_offset(const tir_op *op, unsigned d) {
    return op->code == TIR_OP_LOCAL_LOAD ? op->attr.offset[d] : 0;
}

/* The shared address of the element register r of a tile of type t (one
 * slot's shape, or a local_load's part of it) stands for. */
static LLVMValueRef slot_addr(cg *c, const tir_op *op, const tir_type *t, uint32_t r, slot_form form) {
    LLVMValueRef coord[TIR_MAX_RANK];
    for (unsigned d = 0; d < t->rank; d++) {
        coord[d] = tile_coord(c, t, r, d);
        if (part_offset(op, d)) coord[d] = LLVMBuildAdd(c->b, coord[d], i32c(c, part_offset(op, d)), "");
    }
    return slot_addr_at(c, op, coord, form);
}

/* How many consecutive registers of a tile of type t are consecutive
 * elements in the buffer of op too (a run along the layout's fastest dim,
 * which the buffer keeps contiguous, inside one swizzled chunk), at most
 * 16 bytes: one shared access each. */
static uint32_t slot_run(const tir_op *op, const tir_type *t) {
    const tir_type *bt = &op->operands[0]->type;
    if (t->rank == 0 || t->layout.kind != TIR_LAYOUT_BLOCKED) return 1;
    view v = view_of(t);
    unsigned fast = v.l.ord[0];
    if (fast != slot_contig_dim(bt)) return 1;
    uint32_t w = v.l.spt[fast] < v.nreg[fast] ? v.l.spt[fast] : v.nreg[fast];
    uint32_t eb = scratch_elem_bytes(tir_type_elem(*bt));
    if (w > LOWER_MAX_ACCESS_BYTES / eb) w = LOWER_MAX_ACCESS_BYTES / eb;
    if (bt->layout.kind == TIR_LAYOUT_SHARED && bt->layout.sw_max_phase > 1 && w > bt->layout.sw_vec) w = bt->layout.sw_vec;
    w = floor_pow2(w);
    while (w > 1 && part_offset(op, fast) % w) w /= 2; /* a part's runs start where its offset puts them */
    return w;
}

static void cp_async(cg *c, LLVMValueRef dst, LLVMValueRef src, uint32_t bytes, LLVMValueRef src_bytes) {
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.cp.async.%s.shared.global.%u.s", bytes == 16 ? "cg" : "ca", bytes);
    LLVMValueRef args[3] = {dst, src, src_bytes};
    call_intrinsic(c, name, args, 3);
}

void gen_async_copy(cg *c, const tir_op *op) {
    const tir_value *ptrs = op->operands[2], *mask = op->noperands > 3 ? op->operands[3] : NULL;
    tir_elem e = tir_type_pointee(ptrs->type);
    unsigned eb = scratch_elem_bytes(e);
    uint32_t n = reg_count(&ptrs->type);
    bool check_align;
    /* a permute of pointers that only renames registers (stage_operands'
     * turned rings) has its operand's runs */
    const tir_value *runs_of = ptrs;
    while (runs_of->def && runs_of->def->code == TIR_OP_PERMUTE && !move_needs_scratch(runs_of->def)) runs_of = runs_of->def->operands[0];
    uint32_t vec = vec_width(c, runs_of, &check_align);
    if (vec > slot_run(op, &ptrs->type)) vec = slot_run(op, &ptrs->type);
    LLVMValueRef *count = TC_NEW_ARRAY(c->arena, LLVMValueRef, n);
    LLVMValueRef *m = mask ? mask_lanes(c, mask, n, vec, count) : NULL;
    bool prefix = m && count[0], copies = vec * eb >= LOWER_CP_ASYNC_MIN_BYTES;
    /* one cp.async per run: src-size the run's mask prefix (the rest
     * zero-fills), or all or nothing where its mask lanes agree; where that
     * is not proven, nor that the runs are aligned, a check picks between
     * that and the lane-by-lane path */
    LLVMValueRef cond = copies && check_align ? groups_aligned(c, ptrs, n, vec) : NULL;
    for (uint32_t r = 0; copies && m && !prefix && vec > 1 && r < n; r += vec)
        for (uint32_t i = 1; i < vec; i++) {
            LLVMValueRef same = LLVMBuildICmp(c->b, LLVMIntEQ, m[r], m[r + i], "");
            cond = cond ? LLVMBuildAnd(c->b, cond, same, "") : same;
        }
    /* the slots' addresses, before the paths split: each run's first where
     * the copies are all there is (the other registers' would be dead code
     * for LLVM to remove, a swizzled address each), else every register's */
    LLVMValueRef *dst = TC_NEW_ARRAY(c->arena, LLVMValueRef, n);
    for (uint32_t r = 0; r < n; r += copies && !cond ? vec : 1)
        dst[r] = slot_addr(c, op, &ptrs->type, r, vec * eb >= 16 ? SLOT_SPLIT : SLOT_INDEX);
    LLVMBasicBlockRef join = NULL;
    if (copies) {
        LLVMBasicBlockRef fast = NULL, slow = NULL;
        if (cond) split_on(c, cond, &fast, &slow, &join);
        for (uint32_t r = 0; r < n; r += vec) {
            LLVMValueRef full = i32c(c, vec * eb);
            LLVMValueRef size = !m      ? full
                                : prefix ? LLVMBuildMul(c->b, count[r], i32c(c, eb), "")
                                         : LLVMBuildSelect(c->b, m[r], full, i32c(c, 0), "");
            cp_async(c, dst[r], reg(c, ptrs, r), vec * eb, size);
        }
        if (!cond) return;
        LLVMBuildBr(c->b, join);
        LLVMPositionBuilderAtEnd(c->b, slow);
    }
    LLVMTypeRef ty = mem_type(c, e);
    for (uint32_t r = 0; r < n; r++) {
        LLVMValueRef p = lane_ptr(c, ptrs, r, vec);
        LLVMValueRef v = m ? predicated_load(c, e, p, m[r], LLVMConstNull(elem_type(c, e)))
                           : from_mem(c, e, LLVMBuildLoad2(c->b, ty, p, ""));
        LLVMSetAlignment(LLVMBuildStore(c->b, to_mem(c, e, v), dst[r]), eb);
    }
    if (join) {
        LLVMBuildBr(c->b, join);
        LLVMPositionBuilderAtEnd(c->b, join);
    }
}

/* ---- local_load and local_store ---------------------------------------------
 * Element by element, or a vector access per run (slot_run); a local_load
 * into a dot_op layout from a 2-D slot whose 16-byte chunks run along one
 * of its dims uses ldmatrix: each 32-bit fragment register of a and b
 * (tileir.h) is one row of an 8x8 matrix of 16-bit elements that lane l
 * gets from the 8 rows at the addresses lanes 8i..8i+7 give (matrix i of
 * an .x4, .x2 or .x1). When the slot keeps the operand's K dim
 * contiguous, a matrix row is 16 bytes along K at one index of the other
 * dim (M for a, N for b) and lane l = 4g + q gets row g's bytes 4q..4q+3:
 * the fragment's kw elements of row g at kw q (any element size). Else,
 * for 16-bit elements, .trans: rows run along the other dim at 8
 * consecutive K, and lane l gets K rows 2q and 2q+1 at index g. */
static bool ldmatrix_fits(const tir_op *op) {
    const tir_type *t = &op->results[0]->type, *bt = &op->operands[0]->type;
    if (t->layout.kind != TIR_LAYOUT_DOT_OP || bt->rank != 3) return false;
    unsigned eb = scratch_elem_bytes(tir_type_elem(*t)), kw = t->layout.dot_kw;
    unsigned kdim = t->layout.dot_idx == 0 ? 1 : 0, cd = slot_contig_dim(bt);
    if (cd != kdim && (kw != 2 || eb != 2)) return false; /* .trans moves 16-bit elements only */
    if (kw * eb != 4 || t->shape[cd] * eb < 16) return false;
    if (part_offset(op, cd) * eb % 16) return false; /* a part's matrix rows start on 16 bytes */
    /* a matrix row's 16 bytes stay together under the swizzle */
    return bt->layout.kind != TIR_LAYOUT_SHARED || bt->layout.sw_max_phase == 1 || bt->layout.sw_vec * eb >= 16;
}

/* Which 32-bit fragment registers each ldmatrix fills, in order: cnt at a
 * time from the list. One ldmatrix writes its cnt results to consecutive
 * hardware registers, and an mma.sync reads each operand's fragment
 * registers as one aligned group, so an instruction's fragments should
 * come out of one ldmatrix, in the order the instruction takes them:
 * else ptxas assembles every operand with moves before each mma. a's
 * registers are already in that order, (rm, kc, h): an instruction's four
 * are (rm, 2s, 0..1) and (rm, 2s + 1, 0..1). b's are (kc, rn), and an
 * instruction takes (2s, rn) and (2s + 1, rn): so they go in K pairs at
 * each rn (when the chunks pair up: one chunk an instruction, i8's k16,
 * needs no pairing). */
static uint32_t *ldmatrix_order(cg *c, const tir_layout *l, const uint32_t *shape, uint32_t n32) {
    uint32_t *order = TC_NEW_ARRAY(c->arena, uint32_t, n32);
    uint32_t rn_count = l->wpc[1] * (uint32_t)TIR_MMA_TILE_N < shape[1] ? shape[1] / (TIR_MMA_TILE_N * l->wpc[1]) : 1;
    uint32_t nkc = n32 / rn_count;
    if (l->dot_idx == 0 || nkc % 2 || nkc * rn_count != n32) {
        for (uint32_t j = 0; j < n32; j++) order[j] = j;
        return order;
    }
    uint32_t at = 0;
    for (uint32_t kc = 0; kc < nkc; kc += 2)
        for (uint32_t rn = 0; rn < rn_count; rn++) {
            order[at++] = kc * rn_count + rn;
            order[at++] = (kc + 1) * rn_count + rn;
        }
    return order;
}

/* One ldmatrix of a local_load: its matrices' origins (register offsets,
 * tir_mma_reg_offset), whether no lane's row wraps around the tile, and
 * its address. */
typedef struct ldm_call {
    uint32_t cnt;
    uint32_t o[4][2];
    bool whole;
    LLVMValueRef addr;
} ldm_call;

/* The address of ldmatrix `at` as an earlier one's plus a constant, or
 * NULL. Where every matrix of the two sits the same (rows, columns) apart,
 * neither wraps, and the buffer's swizzle moves both alike (rows a
 * multiple of its phase period apart, columns a multiple of its chunk
 * period), each lane's address is the earlier one's plus that many bytes:
 * one hoisted offset serves both, and ptxas folds the constant into the
 * access ([R+UR+imm]), where each ldmatrix had an offset of its own live
 * through the loop (registers the fused epilogues spilled for). */
static LLVMValueRef ldmatrix_near(cg *c, const tir_op *op, const ldm_call *calls, uint32_t at) {
    const ldm_call *me = &calls[at];
    const tir_type *bt = &op->operands[0]->type;
    const tir_layout *sl = &bt->layout;
    unsigned contig = slot_contig_dim(bt), other = 1 - contig;
    bool swizzled = sl->kind == TIR_LAYOUT_SHARED && sl->sw_max_phase > 1;
    if (!me->whole) return NULL;
    for (uint32_t b = 0; b < at; b++) {
        const ldm_call *e = &calls[b];
        if (e->cnt != me->cnt || !e->whole) continue;
        int64_t delta[2] = {(int64_t)me->o[0][0] - e->o[0][0], (int64_t)me->o[0][1] - e->o[0][1]};
        bool same = true;
        for (uint32_t i = 1; i < me->cnt; i++)
            for (unsigned d = 0; d < 2; d++) same &= (int64_t)me->o[i][d] - e->o[i][d] == delta[d];
        if (!same) continue;
        if (swizzled && (delta[other] % ((int64_t)sl->sw_per_phase * sl->sw_max_phase) != 0 ||
                         delta[contig] % ((int64_t)sl->sw_vec * sl->sw_max_phase) != 0))
            continue;
        int64_t bytes = (delta[other] * bt->shape[1 + contig] + delta[contig]) * scratch_elem_bytes(tir_type_elem(*bt));
        LLVMValueRef off = LLVMConstInt(LLVMInt32TypeInContext(c->ctx), (unsigned long long)bytes, true);
        return LLVMBuildGEP2(c->b, LLVMInt8TypeInContext(c->ctx), e->addr, &off, 1, "");
    }
    return NULL;
}

static void gen_ldmatrix(cg *c, const tir_op *op) {
    const tir_value *res = op->results[0];
    const tir_type *t = &res->type;
    const tir_layout *l = &t->layout;
    tir_elem e = tir_type_elem(*t);
    unsigned kw = l->dot_kw, kdim = l->dot_idx == 0 ? 1 : 0, gdim = 1 - kdim;
    unsigned cd = slot_contig_dim(&op->operands[0]->type);
    bool trans = cd != kdim;
    unsigned row_dim = trans ? kdim : gdim; /* the dim the 8 row addresses step along */
    uint32_t n32 = tir_mma_regs(l, t->shape) / kw;
    uint32_t k[2][4];
    tir_mma_thread_coeffs(l, k);
    LLVMValueRef lane = LLVMBuildAnd(c->b, c->tid, i32c(c, 31), ""), warp = LLVMBuildLShr(c->b, c->tid, i32c(c, 5), "");
    LLVMValueRef wm = LLVMBuildAnd(c->b, warp, i32c(c, l->wpc[0] - 1), "");
    LLVMValueRef wn = LLVMBuildAnd(c->b, LLVMBuildLShr(c->b, warp, i32c(c, log2u(l->wpc[0])), ""), i32c(c, l->wpc[1] - 1), "");
    LLVMValueRef mat = LLVMBuildLShr(c->b, lane, i32c(c, 3), ""), row = LLVMBuildAnd(c->b, lane, i32c(c, 7), "");
    LLVMValueRef wpart[2];
    for (unsigned d = 0; d < 2; d++)
        wpart[d] = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, wm, i32c(c, k[d][0]), ""), LLVMBuildMul(c->b, wn, i32c(c, k[d][1]), ""), "");
    LLVMTypeRef pty = LLVMPointerTypeInContext(c->ctx, NVPTX_ADDRSPACE_SHARED);
    LLVMValueRef *out = new_regs(c, res);
    uint32_t *order = ldmatrix_order(c, l, t->shape, n32);
    ldm_call *calls = TC_NEW_ARRAY(c->arena, ldm_call, n32);
    uint32_t ncalls = 0;
    for (uint32_t j0 = 0; j0 < n32;) {
        uint32_t cnt = n32 - j0 >= 4 ? 4 : n32 - j0 >= 2 ? 2 : 1;
        ldm_call *me = &calls[ncalls++];
        *me = (ldm_call){.cnt = cnt};
        for (uint32_t i = 0; i < cnt; i++) tir_mma_reg_offset(l, t->shape, order[j0 + i] * kw, me->o[i]);
        /* the largest coordinate a lane's row address can have: below the
         * shape, nothing wraps (the & below) */
        me->whole = true;
        for (unsigned d = 0; d < 2; d++) {
            uint32_t most = k[d][0] * (l->wpc[0] - 1u) + k[d][1] * (l->wpc[1] - 1u) + (d == row_dim ? 7u : 0u), o = 0;
            for (uint32_t i = 0; i < cnt; i++) o = me->o[i][d] > o ? me->o[i][d] : o;
            me->whole &= most + o < t->shape[d];
        }
        LLVMValueRef addr = ldmatrix_near(c, op, calls, ncalls - 1);
        if (!addr) {
            LLVMValueRef mi = LLVMBuildAnd(c->b, mat, i32c(c, cnt - 1), "");
            LLVMValueRef coord[2];
            for (unsigned d = 0; d < 2; d++) {
                /* matrix mi's origin: register j0 + mi's part, chosen by mi */
                LLVMValueRef o = NULL;
                for (uint32_t i = 0; i < cnt; i++) {
                    LLVMValueRef v = i32c(c, me->o[i][d]);
                    o = o ? LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, mi, i32c(c, i), ""), v, o, "") : v;
                }
                LLVMValueRef x = LLVMBuildAdd(c->b, wpart[d], o, "");
                if (d == row_dim) x = LLVMBuildAdd(c->b, x, row, "");
                coord[d] = LLVMBuildAnd(c->b, x, i32c(c, t->shape[d] - 1), "");
                if (part_offset(op, d)) coord[d] = LLVMBuildAdd(c->b, coord[d], i32c(c, part_offset(op, d)), "");
            }
            addr = slot_addr_at(c, op, coord, SLOT_SPLIT);
        }
        me->addr = addr;
        char name[80];
        snprintf(name, sizeof name, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x%u%s.b16", cnt, trans ? ".trans" : "");
        unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
        if (!id) {
            cg_error(c, op, "local_load: this LLVM does not know ldmatrix");
            return;
        }
        LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, &pty, 1);
        LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, &pty, 1);
        LLVMValueRef got = LLVMBuildCall2(c->b, fty, fn, &addr, 1, "");
        for (uint32_t i = 0; i < cnt; i++) {
            LLVMValueRef w = cnt == 1 ? got : LLVMBuildExtractValue(c->b, got, i, "");
            uint32_t j = order[j0 + i];
            if (kw == 1) {
                out[j] = LLVMBuildBitCast(c->b, w, elem_type(c, e), "");
                continue;
            }
            LLVMValueRef vec = LLVMBuildBitCast(c->b, w, LLVMVectorType(elem_type(c, e), kw), "");
            for (unsigned q = 0; q < kw; q++) out[j * kw + q] = LLVMBuildExtractElement(c->b, vec, i32c(c, q), "");
        }
        j0 += cnt;
    }
}

void gen_local_load(cg *c, const tir_op *op) {
    if (op->results[0]->type.layout.kind == TIR_LAYOUT_DOT_SMEM) { /* left in shared memory: the slot's address */
        const tir_type *bt = &op->operands[0]->type;
        uint32_t slot_bytes = (uint32_t)(tir_type_numel(*bt) / bt->shape[0]) * scratch_elem_bytes(tir_type_elem(*bt));
        LLVMValueRef first = LLVMBuildMul(c->b, reg(c, op->operands[1], 0), i32c(c, slot_bytes), "");
        new_regs(c, op->results[0])[0] =
            LLVMBuildGEP2(c->b, LLVMInt8TypeInContext(c->ctx), reg(c, op->operands[0], 0), &first, 1, "");
        return;
    }
    if (ldmatrix_fits(op)) {
        gen_ldmatrix(c, op);
        return;
    }
    const tir_value *res = op->results[0];
    tir_elem e = tir_type_elem(res->type);
    uint32_t w = slot_run(op, &res->type), eb = scratch_elem_bytes(e);
    LLVMValueRef *out = new_regs(c, res);
    for (uint32_t r = 0; r < c->nregs[res->id]; r += w) {
        LLVMTypeRef ty = w > 1 ? LLVMVectorType(mem_type(c, e), w) : mem_type(c, e);
        LLVMValueRef v = LLVMBuildLoad2(c->b, ty, slot_addr(c, op, &res->type, r, SLOT_INDEX), "");
        LLVMSetAlignment(v, w * eb);
        for (uint32_t i = 0; i < w; i++)
            out[r + i] = from_mem(c, e, w > 1 ? LLVMBuildExtractElement(c->b, v, i32c(c, i), "") : v);
    }
}

void gen_local_store(cg *c, const tir_op *op) {
    const tir_value *x = op->operands[2];
    tir_elem e = tir_type_elem(x->type);
    uint32_t w = slot_run(op, &x->type), eb = scratch_elem_bytes(e), n = reg_count(&x->type);
    for (uint32_t r = 0; r < n; r += w) {
        LLVMValueRef v = to_mem(c, e, reg(c, x, r));
        if (w > 1) {
            v = LLVMGetUndef(LLVMVectorType(mem_type(c, e), w));
            for (uint32_t i = 0; i < w; i++) v = LLVMBuildInsertElement(c->b, v, to_mem(c, e, reg(c, x, r + i)), i32c(c, i), "");
        }
        LLVMSetAlignment(LLVMBuildStore(c->b, v, slot_addr(c, op, &x->type, r, SLOT_INDEX)), w * eb);
    }
}
