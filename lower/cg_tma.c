/* cg_tma.c - Hopper's bulk tensor copies (sm_90a): the mbarriers that count
 * them (mbar_init, mbar_wait, mbar_inval) and tma_load, as the inline PTX
 * of lower/ptx_async.h, the text the emulator knows.
 *
 * Thread 0 initializes and ends the mbarriers; warp 0's elected lane
 * (elect.sync) issues the copies: a copy moves a whole box, so one
 * thread's instruction does what every thread's cp.async did. It first announces the slot's bytes on the
 * slot's mbarrier (mbarrier.arrive.expect_tx: one arrival, and the phase
 * waits for that many bytes), then starts the copies, which complete_tx
 * on it as they land. Every thread that reads the slot waits on the
 * mbarrier's phase (try_wait.parity in a loop): the copy engine's writes
 * are visible to a thread once it has seen the phase complete, so no
 * barrier is needed for the data.
 *
 * A slot wider than a box along map dim 0 (rows of 128-byte pieces, the
 * `atom` of a shared layout, as wgmma's descriptors read them) is filled
 * box by box: box p lands p box-sizes after the slot's start, at
 * coordinate c0 + p * box0 (tir_shared_offset's pieces are that order).
 * Dims of the map past the slot's rank have a box of 1. */
#include <stdlib.h>
#include <string.h>

#include "lower/codegen_internal.h"
#include "lower/ptx_async.h"

static const struct {
    const char *text, *cons;
} ptx_async[PTX_ASYNC_COUNT] = {
#define PTX_ASYNC_ROW(name, t, cs) [PTX_ASYNC_##name] = {t, cs},
    PTX_ASYNC_ASMS(PTX_ASYNC_ROW)
#undef PTX_ASYNC_ROW
};

static LLVMValueRef emit(cg *c, ptx_async_asm which, LLVMTypeRef ret, LLVMValueRef *args, unsigned n) {
    return inline_asm(c, ret ? ret : LLVMVoidTypeInContext(c->ctx), ptx_async[which].text, ptx_async[which].cons, args,
                      n);
}

/* The shared address of byte `bytes` of slot `slot` of buffer `buf`. */
static LLVMValueRef slot_byte(cg *c, const tir_value *buf, LLVMValueRef slot, uint32_t slot_bytes, uint32_t bytes) {
    LLVMValueRef at = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, slot, i32c(c, slot_bytes), ""), i32c(c, bytes), "");
    return LLVMBuildGEP2(c->b, LLVMInt8TypeInContext(c->ctx), reg(c, buf, 0), &at, 1, "");
}

/* A slot's bytes: its elements, packed (as slot_addr_at places slots; the
 * buffer's own size may round up past them) */
static uint32_t slot_bytes_of(const tir_type *bt) {
    return (uint32_t)(tir_type_numel(*bt) / bt->shape[0]) * scratch_elem_bytes(tir_type_elem(*bt));
}

/* The mbarrier of slot `slot` (an i32 register) of buffer bars. */
static LLVMValueRef mbar(cg *c, const tir_value *bars, LLVMValueRef slot) {
    return slot_byte(c, bars, slot, slot_bytes_of(&bars->type), 0);
}

static bool needs_sm90(cg *c, const tir_op *op) {
    long cc = c->arch && strncmp(c->arch, "sm_", 3) == 0 ? strtol(c->arch + 3, NULL, 10) : 0;
    if (cc >= 90) return true;
    cg_error(c, op, "bulk tensor copies and mbarriers need sm_90 or later");
    return false;
}

static LLVMValueRef thread0(cg *c) { return LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, i32c(c, 0), ""); }

/* mbar_init N, bars: thread 0 makes each slot an mbarrier of N arrivals,
 * and makes the inits visible to the copy engine (fence.mbarrier_init);
 * the barrier that follows makes them visible to the other threads. */
void gen_mbar_init(cg *c, const tir_op *op) {
    if (!needs_sm90(c, op)) return;
    const tir_value *bars = op->operands[0];
    LLVMBasicBlockRef join;
    guard_begin(c, thread0(c), "mbar.init", "mbar.init.done", &join);
    for (uint32_t s = 0; s < bars->type.shape[0]; s++) {
        LLVMValueRef args[2] = {mbar(c, bars, i32c(c, s)), i32c(c, (uint32_t)op->attr.axis)};
        emit(c, PTX_ASYNC_MBAR_INIT, NULL, args, 2);
    }
    emit(c, PTX_ASYNC_FENCE_MBAR_INIT, NULL, NULL, 0);
    guard_end(c, join);
}

/* mbar_inval bars: thread 0 ends each mbarrier (every wait on them is
 * done: the pass puts this after the loop whose trips waited). */
void gen_mbar_inval(cg *c, const tir_op *op) {
    if (!needs_sm90(c, op)) return;
    const tir_value *bars = op->operands[0];
    LLVMBasicBlockRef join;
    guard_begin(c, thread0(c), "mbar.inval", "mbar.inval.done", &join);
    for (uint32_t s = 0; s < bars->type.shape[0]; s++) {
        LLVMValueRef args[1] = {mbar(c, bars, i32c(c, s))};
        emit(c, PTX_ASYNC_MBAR_INVAL, NULL, args, 1);
    }
    guard_end(c, join);
}

/* mbar_wait bars, slot, parity: try_wait until the phase completed (the
 * instruction itself waits a while before it says no). */
void gen_mbar_wait(cg *c, const tir_op *op) {
    if (!needs_sm90(c, op)) return;
    LLVMValueRef args[2] = {mbar(c, op->operands[0], reg(c, op->operands[1], 0)), reg(c, op->operands[2], 0)};
    LLVMBasicBlockRef loop = new_block(c, "mbar.wait"), done = new_block(c, "mbar.waited");
    LLVMBuildBr(c->b, loop);
    LLVMPositionBuilderAtEnd(c->b, loop);
    LLVMValueRef ok = emit(c, PTX_ASYNC_MBAR_TRY_WAIT_PARITY, LLVMInt32TypeInContext(c->ctx), args, 2);
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntNE, ok, i32c(c, 0), ""), done, loop);
    LLVMPositionBuilderAtEnd(c->b, done);
}

/* mbar_arrive bars, slot: every thread running it arrives once (release:
 * its reads before it are done when the phase completes); the mbarrier
 * expects one arrival per consumer thread (warp_specialize.c). */
void gen_mbar_arrive(cg *c, const tir_op *op) {
    if (!needs_sm90(c, op)) return;
    LLVMValueRef args[1] = {mbar(c, op->operands[0], reg(c, op->operands[1], 0))};
    emit(c, PTX_ASYNC_MBAR_ARRIVE, NULL, args, 1);
}

/* tma_load N, buf, slot, bars, pred, c...: thread 0, when pred, announces
 * the slot's bytes on bars' slot and copies the slot's boxes. */
void gen_tma_load(cg *c, const tir_op *op) {
    if (!needs_sm90(c, op)) return;
    const tir_func *f = c->f;
    const tir_tmap *m = &f->tmaps[op->attr.axis];
    const tir_value *buf = op->operands[0];
    LLVMValueRef slot = reg(c, op->operands[1], 0);
    uint32_t slot_bytes = slot_bytes_of(&buf->type);
    uint32_t eb = scratch_elem_bytes(tir_type_elem(buf->type)), box_bytes = eb;
    for (unsigned d = 0; d < m->rank; d++) box_bytes *= m->box[d];
    uint32_t nbox = slot_bytes / box_bytes; /* the verifier: boxes side by side along dim 0 fill the slot */
    /* the issuer: warp 0's lane that elect.sync elects (every lane runs
     * it), not tid == 0: ptxas then knows one lane issues, and puts the
     * copies on the uniform datapath (VOTEU.ANY, @UP UTMALDG) instead of
     * wrapping each in an ELECT loop that makes its operands uniform */
    LLVMValueRef elected = emit(c, PTX_ASYNC_ELECT_SYNC, LLVMInt32TypeInContext(c->ctx), NULL, 0);
    uint32_t first = cg_issuer_tid(c);
    LLVMValueRef in_warp = first ? LLVMBuildSub(c->b, c->tid, i32c(c, first), "") : c->tid; /* below 0: past 2^31 */
    LLVMValueRef issuer = LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntULT, in_warp, i32c(c, LOWER_WARP_SIZE), ""),
                                       LLVMBuildICmp(c->b, LLVMIntNE, elected, i32c(c, 0), ""), "");
    LLVMBasicBlockRef join;
    LLVMValueRef go = LLVMBuildAnd(c->b, issuer, reg(c, op->operands[3], 0), "");
    guard_begin(c, go, "tma.issue", "tma.issued", &join);
    /* below 0 the copy engine reads zeros where a pointer load would
     * read memory (ops.def): an error, not a silent difference. A trap,
     * not __assertfail with a message: a call anywhere in the loop makes
     * ptxas serialize every wgmma of the kernel (C7510, "wgmma pipeline
     * crossing function boundary"); the emulator names the line */
    LLVMValueRef any = reg(c, op->operands[4], 0); /* the sign bits or'ed: one compare */
    for (unsigned d = 1; d < m->rank; d++) any = LLVMBuildOr(c->b, any, reg(c, op->operands[4 + d], 0), "");
    LLVMBasicBlockRef bad = new_block(c, "tma.negative"), ok = new_block(c, "tma.coords");
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, any, i32c(c, 0), ""), bad, ok);
    LLVMPositionBuilderAtEnd(c->b, bad);
    call_intrinsic(c, "llvm.trap", NULL, 0);
    LLVMBuildUnreachable(c->b); /* cold: off the loop's path */
    LLVMPositionBuilderAtEnd(c->b, ok);
    LLVMValueRef bar = mbar(c, op->operands[2], slot);
    LLVMValueRef expect[2] = {bar, i32c(c, slot_bytes)};
    emit(c, PTX_ASYNC_MBAR_ARRIVE_EXPECT_TX, NULL, expect, 2);
    LLVMValueRef map = LLVMGetParam(c->fn, f->nparams + (unsigned)op->attr.axis);
    static const ptx_async_asm copy[TIR_TMAP_MAX_RANK] = {PTX_ASYNC_TENSOR_G2S_1D, PTX_ASYNC_TENSOR_G2S_2D,
                                                          PTX_ASYNC_TENSOR_G2S_3D, PTX_ASYNC_TENSOR_G2S_4D,
                                                          PTX_ASYNC_TENSOR_G2S_5D};
    for (uint32_t p = 0; p < nbox; p++) {
        LLVMValueRef args[3 + TIR_TMAP_MAX_RANK] = {slot_byte(c, buf, slot, slot_bytes, p * box_bytes), map, bar};
        for (unsigned d = 0; d < m->rank; d++) {
            LLVMValueRef x = reg(c, op->operands[4 + d], 0);
            args[3 + d] = d == 0 && p ? LLVMBuildAdd(c->b, x, i32c(c, p * m->box[0]), "") : x;
        }
        emit(c, copy[m->rank - 1], NULL, args, 3u + m->rank);
    }
    guard_end(c, join);
}
