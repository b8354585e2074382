/* codegen.c - laid-out tile IR to LLVM IR for the NVPTX target.
 *
 * Every tile value becomes the registers one thread owns under its layout
 * (any rank: see "layouts as registers" in cg_regs.c). For a rank-1 blocked
 * layout, register r is element (r / spt) * C + tid * spt + r % spt, where
 * C = spt * 32 * num_warps is the layout's coverage; over a tile smaller
 * than C the pattern wraps (index mod N) and several threads hold copies.
 * Elementwise ops then act register by register; scalars are one register,
 * the same in every thread.
 *
 * Loads and stores take a thread's registers in groups of `vec`, the
 * largest power of two the axis analysis proves contiguous (at most 16
 * bytes), and issue one vector access per group. A run-time test picks
 * between the vector accesses and one (predicated) access per lane: the
 * vectors need every lane of the mask on, and, where the analysis cannot
 * prove the groups aligned (a row starting at row * stride, with the stride
 * a run-time value), every group's address aligned; the test is left out
 * when it is known true. Stores of replicated elements are issued
 * by the owning thread only, and of scalars by thread 0; so are atomics,
 * whose old values the owners then share ("atomics" in cg_memory.c).
 *
 * A reduction to a scalar combines a thread's registers, then the lanes of
 * a warp by butterfly shuffles, then, when more than one warp holds
 * distinct elements, the warps through shared memory: lane 0 of each warp
 * writes its partial, a barrier, and every thread combines the partials in
 * the same order, so all threads end with the same bits. Only threads and
 * lanes holding distinct elements take part: over a tile smaller than the
 * layout's coverage, copies must not count twice. Each reduction has its
 * own slot of the kernel's shared memory; inside a loop a second barrier
 * keeps the next trip from overwriting partials still being read.
 *
 * A scan (cumsum) runs along any dim of any layout the same way, in
 * registers, then lanes (shfl.up), then warps (the scratch area): see
 * "scans" in cg_reduce.c.
 *
 * Tiles in a dot's MMA and DOT_OP layouts (tileir.h) take part in
 * elementwise ops, loops, branches, layout changes, loads, stores (one
 * access per element), prints and atomics through the same register walk,
 * with each register's coordinates from tir_mma_reg_offset plus a thread
 * part made once per layout (mma_thread_parts). Broadcasts, expand_dims,
 * reductions and scans need blocked layouts (the layout pass converts
 * first). `dot` itself: see cg_dot.c. A layout change of a tile over
 * CG_MOVE_ROUND_BYTES goes through shared memory in rounds.
 *
 * This file holds the driver (lower_codegen, gen_func with the kernel's
 * shared-memory plan), the op dispatch (gen_op) and structured control
 * flow (for, if, while); each concern has a file of its own, sharing the
 * context and helpers through lower/codegen_internal.h: cg_regs.c (layouts
 * as registers), cg_math.c (elementwise arithmetic), cg_memory.c (global
 * loads, stores, atomics), cg_smem.c (shared-memory buffers, cp.async,
 * ldmatrix), cg_reduce.c (reductions, scans), cg_xthread.c (layout
 * changes), cg_print.c
 * (print, assert), cg_dot.c with cg_dot_mma_sync.c (dot). */
#include <stdio.h>
#include <string.h>

#include "lower/codegen_internal.h"


void cg_error(cg *c, const tir_op *op, const char *what) {
    tc_error_loc(c->diag, c->file, op ? op->loc : c->f->loc, "code generation: %s", what);
    c->ok = false;
}

LLVMTypeRef elem_type(cg *c, tir_elem e) {
    switch (e) {
    case TIR_I1: return LLVMInt1TypeInContext(c->ctx);
    case TIR_I8: return LLVMInt8TypeInContext(c->ctx);
    case TIR_I16: return LLVMInt16TypeInContext(c->ctx);
    case TIR_I32: return LLVMInt32TypeInContext(c->ctx);
    case TIR_I64: return LLVMInt64TypeInContext(c->ctx);
    case TIR_F16: return LLVMHalfTypeInContext(c->ctx);
    case TIR_BF16: return LLVMBFloatTypeInContext(c->ctx);
    case TIR_F32: return LLVMFloatTypeInContext(c->ctx);
    case TIR_F64: return LLVMDoubleTypeInContext(c->ctx);
    default: return LLVMPointerTypeInContext(c->ctx, NVPTX_ADDRSPACE_GLOBAL);
    }
}

/* How an element sits in memory: i1 takes a whole byte (0 or 1), as in the
 * interpreter and the host; LLVM's <N x i1> would pack bits instead. */
LLVMTypeRef mem_type(cg *c, tir_elem e) { return e == TIR_I1 ? LLVMInt8TypeInContext(c->ctx) : elem_type(c, e); }

LLVMValueRef from_mem(cg *c, tir_elem e, LLVMValueRef v) {
    return e == TIR_I1 ? LLVMBuildICmp(c->b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "") : v;
}

LLVMValueRef to_mem(cg *c, tir_elem e, LLVMValueRef v) {
    return e == TIR_I1 ? LLVMBuildZExt(c->b, v, LLVMInt8TypeInContext(c->ctx), "") : v;
}

LLVMValueRef i32c(cg *c, int64_t v) { return LLVMConstInt(LLVMInt32TypeInContext(c->ctx), (unsigned long long)v, true); }

/* x + k for an i32 x; x itself for k = 0 (per-register index math makes
 * thousands of these: an add of 0 is one more instruction for LLVM to
 * fold away). */
LLVMValueRef add_i32c(cg *c, LLVMValueRef x, int64_t k) { return k ? LLVMBuildAdd(c->b, x, i32c(c, k), "") : x; }
/* x >> k and x << k for an i32 x and a constant k; x itself for k = 0. */
LLVMValueRef lshr_i32c(cg *c, LLVMValueRef x, uint32_t k) { return k ? LLVMBuildLShr(c->b, x, i32c(c, k), "") : x; }
LLVMValueRef shl_i32c(cg *c, LLVMValueRef x, uint32_t k) { return k ? LLVMBuildShl(c->b, x, i32c(c, k), "") : x; }

static void gen_op(cg *c, const tir_op *op);

/* Phis at the loop head for the registers of `args`, entered from `pre`
 * with the registers of `inits`. */
static void head_phis(cg *c, tir_value *const *args, uint32_t n, tir_value *const *inits, LLVMBasicBlockRef pre) {
    for (uint32_t a = 0; a < n; a++) {
        LLVMValueRef *r = new_regs(c, args[a]);
        LLVMTypeRef ty = elem_type(c, tir_type_elem(args[a]->type));
        for (uint32_t i = 0; i < c->nregs[args[a]->id]; i++) {
            r[i] = LLVMBuildPhi(c->b, ty, "");
            LLVMValueRef in = reg(c, inits[a], i);
            LLVMAddIncoming(r[i], &in, &pre, 1);
        }
    }
}

/* The back edge from `latch` into the head phis of `args`: `next`'s registers. */
static void back_edge(cg *c, tir_value *const *args, uint32_t n, tir_value *const *next, LLVMBasicBlockRef latch) {
    for (uint32_t a = 0; a < n; a++)
        for (uint32_t i = 0; i < c->nregs[args[a]->id]; i++) {
            LLVMValueRef in = reg(c, next[a], i);
            LLVMAddIncoming(c->regs[args[a]->id][i], &in, &latch, 1);
        }
}

/* dst[k] names the same registers as src[k] (a loop's results are its head phis). */
static void same_regs(cg *c, tir_value *const *dst, uint32_t n, tir_value *const *src) {
    for (uint32_t k = 0; k < n; k++) {
        LLVMValueRef *r = new_regs(c, dst[k]);
        for (uint32_t i = 0; i < c->nregs[dst[k]->id]; i++) r[i] = c->regs[src[k]->id][i];
    }
}

/* A block's ops; in the block where the shared-memory buffers live
 * (smem_plan.c), each op's scratch uses inside the buffers' range go in
 * the area after them, the rest on their bytes (nested blocks take their
 * op's). */
static void gen_split(cg *c, const tir_block *blk, const tir_op *split);

/* blk's ops from `from` on. Outside the buffers' live range the scratch
 * area lies on their bytes (gen_func), inside it apart. */
static void gen_ops(cg *c, const tir_block *blk, const tir_op *from) {
    bool home = c->buffers && blk == c->buffers->home;
    uint32_t at = c->scratch, bytes = c->scratch_bytes;
    for (const tir_op *o = from; o && c->ok; o = o->next) {
        if (home && o == c->buffers->first) {
            c->scratch = c->buffers_at + c->f->smem.buffers;
            c->scratch_bytes = c->f->smem.live_scratch;
        }
        if (home && o == c->buffers->end) c->scratch = c->buffers_at, c->scratch_bytes = c->f->smem.scratch;
        if (o->code == TIR_OP_WARP_SPECIALIZE) { /* the rest of the block, once a role */
            if (blk != c->f->body || c->role != CG_ROLE_ALL) cg_error(c, o, "warp_specialize outside the kernel's body");
            else gen_split(c, blk, o);
            break;
        }
        gen_op(c, o);
    }
    c->scratch = at, c->scratch_bytes = bytes;
}

static void gen_block_ops(cg *c, const tir_block *blk) { gen_ops(c, blk, blk->first); }

uint32_t cg_issuer_tid(const cg *c) {
    return c->role == CG_ROLE_PRODUCER ? (uint32_t)c->f->num_warps * LOWER_WARP_SIZE : 0;
}

static void setmaxnreg(cg *c, bool inc, uint32_t n) {
    LLVMValueRef x = i32c(c, n);
    call_intrinsic(c, inc ? "llvm.nvvm.setmaxnreg.inc.sync.aligned.u32" : "llvm.nvvm.setmaxnreg.dec.sync.aligned.u32",
                   &x, 1);
}

/* The registers a thread of a warp-specialized kernel starts with (its
 * maxnreg, gen_func): the file shared by every thread, in steps of 8. */
static uint32_t entry_regs(const tir_func *f) {
    return CG_REGISTER_FILE / (LOWER_WARP_SIZE * (uint32_t)(f->num_warps + f->producer_warps)) / 8 * 8;
}

/* The warps split: threads from num_warps * 32 on are the producer
 * warpgroup, which gives up registers (setmaxnreg.dec, all four warps:
 * it acts on whole warpgroups), then keeps only its first warp, the one
 * that issues the copies (the others would spin on the same mbarriers).
 * The consumers take the registers (setmaxnreg.inc, in steps of 8 as the
 * ISA asks): what the CTA started with (entry_regs a thread) less what
 * the producer keeps, shared among them. Not the whole file: the
 * registers setmaxnreg.inc takes come from the CTA's pool, which holds
 * only what the CTA's warps gave back, and it waits until the pool has
 * them (PTX ISA, setmaxnreg), for ever if it never will (16 warps: 640
 * threads start at 96, the producer gives back 128 x 56, so the
 * consumers may go to 96 + 14, i.e. 104, not to 65536's 112). Each
 * role's code is made from the same ops (the producer's: the values it
 * holds, others undefined), ending in its own return. */
static void gen_split(cg *c, const tir_block *blk, const tir_op *split) {
    tir_func *f = c->f;
    /* setmaxnreg is sm_90a's (LLVM cannot select it for sm_90: a fatal
     * error, not a message), and the pass makes the split there only */
    if (!lower_has_wgmma(c->arch)) {
        cg_error(c, split, "warp specialization needs sm_90a (setmaxnreg)");
        return;
    }
    uint32_t consumers = (uint32_t)f->num_warps * LOWER_WARP_SIZE;
    LLVMBasicBlockRef prod = new_block(c, "ws.producer"), issue = new_block(c, "ws.issuer"),
                      idle = new_block(c, "ws.idle"), cons = new_block(c, "ws.consumer");
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntUGE, c->tid, i32c(c, consumers), ""), prod, cons);
    bool rebalance = f->num_warps >= CG_SETMAXNREG_MIN_WARPS;
    /* each role from the same place: its scratch, and (past smem_plan's
     * LOWER_MAX_SMEM_OVERLAP buffers, handed out as codegen meets their
     * local_allocs: gen_local_alloc) the next buffer's bytes, else the
     * consumers' buffers would follow the producer role's copies of them,
     * past the end of shared memory */
    uint32_t scratch = c->scratch, scratch_bytes = c->scratch_bytes, apart_next = c->apart_next;
    LLVMPositionBuilderAtEnd(c->b, prod);
    if (rebalance) setmaxnreg(c, false, CG_PRODUCER_REGS);
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntULT, c->tid, i32c(c, consumers + LOWER_WARP_SIZE), ""), issue, idle);
    LLVMPositionBuilderAtEnd(c->b, idle);
    LLVMBuildRetVoid(c->b);
    LLVMPositionBuilderAtEnd(c->b, issue);
    c->role = CG_ROLE_PRODUCER;
    c->held = tir_producer_values(f, c->arena);
    gen_ops(c, blk, split->next);
    LLVMPositionBuilderAtEnd(c->b, cons);
    c->scratch = scratch, c->scratch_bytes = scratch_bytes, c->apart_next = apart_next;
    if (rebalance) {
        uint32_t all = entry_regs(f) * (consumers + TIR_WS_PRODUCER_WARPS * LOWER_WARP_SIZE);
        uint32_t per = (all - CG_PRODUCER_REGS * TIR_WS_PRODUCER_WARPS * LOWER_WARP_SIZE) / consumers;
        per = per / 8 * 8;
        setmaxnreg(c, true, per > 256 ? 256 : per);
    }
    c->role = CG_ROLE_CONSUMER;
    gen_ops(c, blk, split->next);
    c->role = CG_ROLE_ALL;
    c->held = NULL;
}

/* Whether the role being made runs op: the producer runs its regions,
 * the loops and ifs holding them, and the ops that make what it holds; the
 * consumers run all but the producer regions. */
static bool role_runs(const cg *c, const tir_op *op) {
    if (c->role == CG_ROLE_ALL || c->in_producer) return true;
    if (c->role == CG_ROLE_CONSUMER) return op->code != TIR_OP_PRODUCER;
    switch (op->code) {
    case TIR_OP_PRODUCER: case TIR_OP_RETURN: case TIR_OP_YIELD: return true;
    case TIR_OP_FOR: case TIR_OP_IF: /* the loops and ifs around its regions */
        return tir_block_has_producer(op->body) || (op->body2 && tir_block_has_producer(op->body2));
    default: break;
    }
    if (op->body || !op->nresults) return false;
    for (uint32_t i = 0; i < op->nresults; i++)
        if (!c->held[op->results[i]->id]) return false;
    return true;
}

/* A loop: the header holds one phi per induction variable and per register
 * of each carried value; the body's block arguments are those phis; the
 * yield at the body's end feeds the back edge. The loop runs while iv < hi
 * (signed), so a step must be positive. */
static void gen_for(cg *c, const tir_op *op) {
    const tir_block *body = op->body;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
    LLVMBasicBlockRef head = new_block(c, "for.head"), loop = new_block(c, "for.body"), exit = new_block(c, "for.exit");
    LLVMBuildBr(c->b, head);
    LLVMPositionBuilderAtEnd(c->b, head);
    uint32_t nargs = body->nargs;
    tir_value **inits = TC_NEW_ARRAY(c->arena, tir_value *, nargs);
    inits[0] = op->operands[0];
    for (uint32_t a = 1; a < nargs; a++) inits[a] = op->operands[2 + a];
    head_phis(c, body->args, nargs, inits, pre);
    LLVMValueRef iv = reg(c, body->args[0], 0);
    LLVMValueRef cond = LLVMBuildICmp(c->b, LLVMIntSLT, iv, reg(c, op->operands[1], 0), "");
    LLVMBuildCondBr(c->b, cond, loop, exit);
    LLVMPositionBuilderAtEnd(c->b, loop);
    gen_block_ops(c, body);
    if (!c->ok) return;
    const tir_op *y = body->last; /* the verifier made it a yield */
    LLVMValueRef next_iv = LLVMBuildAdd(c->b, iv, reg(c, op->operands[2], 0), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
    LLVMAddIncoming(iv, &next_iv, &latch, 1);
    back_edge(c, body->args + 1, nargs - 1, y->operands, latch);
    LLVMBuildBr(c->b, head);
    LLVMPositionBuilderAtEnd(c->b, exit);
    same_regs(c, op->results, op->nresults, body->args + 1);
}

/* Phis at the top of the current block for `dst`'s registers, one incoming
 * value from each of n (block, yield) pairs, operand `first + k` of the
 * yield feeding dst[k]. */
static void gen_merge(cg *c, tir_value *const *dst, uint32_t ndst, LLVMBasicBlockRef *from,
                      const tir_op *const *yields, uint32_t n) {
    for (uint32_t k = 0; k < ndst; k++) {
        LLVMValueRef *r = new_regs(c, dst[k]);
        LLVMTypeRef ty = elem_type(c, tir_type_elem(dst[k]->type));
        for (uint32_t i = 0; i < c->nregs[dst[k]->id]; i++) {
            r[i] = LLVMBuildPhi(c->b, ty, "");
            for (uint32_t j = 0; j < n; j++) {
                LLVMValueRef in = reg(c, yields[j]->operands[k], i);
                LLVMAddIncoming(r[i], &in, &from[j], 1);
            }
        }
    }
}

/* An if: a branch on the condition's one register (scalars hold the same
 * value in every thread, so the whole CTA takes one side and barriers in
 * either branch are safe), each block ending in a jump to the merge,
 * whose phis are the results. */
static void gen_if(cg *c, const tir_op *op) {
    LLVMBasicBlockRef then_bb = new_block(c, "if.then"), else_bb = new_block(c, "if.else"),
                      merge = new_block(c, "if.end");
    LLVMBuildCondBr(c->b, reg(c, op->operands[0], 0), then_bb, else_bb);
    LLVMBasicBlockRef from[2];
    const tir_op *yields[2] = {op->body->last, op->body2->last};
    LLVMPositionBuilderAtEnd(c->b, then_bb);
    gen_block_ops(c, op->body);
    if (!c->ok) return;
    from[0] = LLVMGetInsertBlock(c->b);
    LLVMBuildBr(c->b, merge);
    LLVMPositionBuilderAtEnd(c->b, else_bb);
    gen_block_ops(c, op->body2);
    if (!c->ok) return;
    from[1] = LLVMGetInsertBlock(c->b);
    LLVMBuildBr(c->b, merge);
    LLVMPositionBuilderAtEnd(c->b, merge);
    gen_merge(c, op->results, op->nresults, from, yields, 2);
}

/* A while: the header's phis are the test block's arguments (from the
 * inits and from the body's yield on the back edge); the test's ops follow
 * them and branch, on its uniform condition, to the body or the exit. The
 * body block's arguments and the results are those phis. */
static void gen_while(cg *c, const tir_op *op) {
    const tir_block *test = op->body, *body = op->body2;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
    LLVMBasicBlockRef head = new_block(c, "while.test"), loop = new_block(c, "while.body"),
                      exit = new_block(c, "while.exit");
    LLVMBuildBr(c->b, head);
    LLVMPositionBuilderAtEnd(c->b, head);
    head_phis(c, test->args, test->nargs, op->operands, pre);
    gen_block_ops(c, test);
    if (!c->ok) return;
    LLVMBuildCondBr(c->b, reg(c, test->last->operands[0], 0), loop, exit);
    LLVMPositionBuilderAtEnd(c->b, loop);
    same_regs(c, body->args, body->nargs, test->args);
    gen_block_ops(c, body);
    if (!c->ok) return;
    const tir_op *y = body->last;
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
    back_edge(c, test->args, test->nargs, y->operands, latch);
    LLVMBuildBr(c->b, head);
    LLVMPositionBuilderAtEnd(c->b, exit);
    same_regs(c, op->results, op->nresults, test->args);
}

/* Whether an elementwise op's operands in register i are those of
 * register i - 1 (a broadcast scalar's, or a tile constant along the
 * thread's registers): its result is then the same value, made once
 * rather than left for LLVM's CSE to find among thousands of unrolled
 * instructions (compile time). */
static bool same_operands(cg *c, const tir_op *op, uint32_t i) {
    if (!i) return false;
    for (uint32_t k = 0; k < op->noperands; k++)
        if (reg(c, op->operands[k], i) != reg(c, op->operands[k], i - 1)) return false;
    return true;
}

static bool needs_blocked(cg *c, const tir_op *op);

static void gen_op(cg *c, const tir_op *op) {
    if (c->dib) /* line_info: what this op builds carries its .tile position */
        LLVMSetCurrentDebugLocation2(c->b, op->loc.line ? LLVMDIBuilderCreateDebugLocation(c->ctx, op->loc.line,
                                                                                           op->loc.col, c->di_sub, NULL)
                                                        : NULL);
    const tir_opinfo *info = &tir_ops[op->code];
    const tir_value *res = op->nresults ? op->results[0] : NULL;
    if (!role_runs(c, op)) { /* another role's: its values undefined here, and unused */
        for (uint32_t i = 0; i < op->nresults; i++) {
            LLVMValueRef *r = new_regs(c, op->results[i]);
            LLVMValueRef u = LLVMGetUndef(elem_type(c, tir_type_elem(op->results[i]->type)));
            for (uint32_t k = 0; k < c->nregs[op->results[i]->id]; k++) r[k] = u;
        }
        return;
    }
    if (needs_blocked(c, op)) return;
    switch (op->code) {
    case TIR_OP_CONST: gen_const(c, op); return;
    case TIR_OP_PROGRAM_ID:
    case TIR_OP_NUM_PROGRAMS: {
        static const char *const names[2][3] = {
            {"llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y", "llvm.nvvm.read.ptx.sreg.ctaid.z"},
            {"llvm.nvvm.read.ptx.sreg.nctaid.x", "llvm.nvvm.read.ptx.sreg.nctaid.y", "llvm.nvvm.read.ptx.sreg.nctaid.z"}};
        new_regs(c, res)[0] = sreg(c, names[op->code == TIR_OP_NUM_PROGRAMS][op->attr.axis]);
        return;
    }
    case TIR_OP_ARANGE: {
        LLVMValueRef *r = new_regs(c, res);
        for (uint32_t i = 0; i < c->nregs[res->id]; i++) {
            /* tile_coord: any layout, the mma layout's slices too */
            LLVMValueRef idx = is_rank1_blocked(&res->type) ? elem_index(c, &res->type, i) : tile_coord(c, &res->type, i, 0);
            r[i] = add_i32c(c, idx, op->attr.range.lo);
        }
        return;
    }
    case TIR_OP_CONVERT_LAYOUT:
    case TIR_OP_PERMUTE:
    case TIR_OP_RESHAPE:
        if (move_needs_scratch(op)) gen_move_scratch(c, op);
        else gen_rename(c, op);
        return;
    case TIR_OP_EXPAND_DIMS: gen_rename(c, op); return;
    case TIR_OP_BROADCAST: gen_broadcast(c, op); return;
    case TIR_OP_MULTIPLE_OF: /* a scalar: the promise is for the axis analysis, codegen passes it on */
        new_regs(c, res)[0] = reg(c, op->operands[0], 0);
        return;
    case TIR_OP_SPLAT: {
        LLVMValueRef *r = new_regs(c, res);
        for (uint32_t i = 0; i < c->nregs[res->id]; i++) r[i] = reg(c, op->operands[0], i);
        return;
    }
    case TIR_OP_NEG:
    case TIR_OP_NOT: {
        tir_elem e = tir_type_elem(res->type);
        LLVMValueRef *r = new_regs(c, res);
        for (uint32_t i = 0; i < c->nregs[res->id]; i++) {
            LLVMValueRef a = reg(c, op->operands[0], i);
            r[i] = op->code == TIR_OP_NOT ? LLVMBuildNot(c->b, a, "")
                   : tir_elem_is_float(e) ? LLVMBuildFNeg(c->b, a, "")
                                          : LLVMBuildNeg(c->b, a, "");
        }
        return;
    }
    case TIR_OP_CAST: {
        LLVMValueRef *r = new_regs(c, res);
        for (uint32_t i = 0; i < c->nregs[res->id]; i++)
            r[i] = same_operands(c, op, i) ? r[i - 1]
                                           : gen_cast(c, reg(c, op->operands[0], i), tir_type_elem(op->operands[0]->type),
                                                      tir_type_elem(res->type));
        return;
    }
    case TIR_OP_SELECT: {
        LLVMValueRef *r = new_regs(c, res);
        for (uint32_t i = 0; i < c->nregs[res->id]; i++)
            r[i] = same_operands(c, op, i) ? r[i - 1]
                                           : LLVMBuildSelect(c->b, reg(c, op->operands[0], i), reg(c, op->operands[1], i),
                                                             reg(c, op->operands[2], i), "");
        return;
    }
    case TIR_OP_ADDPTR: {
        LLVMTypeRef pointee = mem_type(c, tir_type_pointee(op->operands[0]->type));
        LLVMValueRef *r = new_regs(c, res);
        for (uint32_t i = 0; i < c->nregs[res->id]; i++) {
            if (same_operands(c, op, i)) {
                r[i] = r[i - 1];
                continue;
            }
            LLVMValueRef off = reg(c, op->operands[1], i);
            if (op->operands[1]->type.elem != TIR_I64)
                off = LLVMBuildSExt(c->b, off, LLVMInt64TypeInContext(c->ctx), "");
            r[i] = LLVMBuildGEP2(c->b, pointee, reg(c, op->operands[0], i), &off, 1, "");
        }
        return;
    }
    case TIR_OP_MIN: case TIR_OP_MAX: case TIR_OP_ABS: case TIR_OP_SQRT: case TIR_OP_FLOOR: case TIR_OP_CEIL:
    case TIR_OP_FMA: gen_math(c, op); return;
    case TIR_OP_EXP2: case TIR_OP_LOG2: case TIR_OP_SIN: case TIR_OP_COS: case TIR_OP_RSQRT: case TIR_OP_RCP: gen_approx(c, op); return;
    case TIR_OP_ERF: gen_erf(c, op); return;
    case TIR_OP_RANDINT: gen_randint(c, op); return;
    case TIR_OP_LOAD: gen_load(c, op); return;
    case TIR_OP_STORE: gen_store(c, op); return;
    case TIR_OP_ATOMIC_ADD: case TIR_OP_ATOMIC_MAX: case TIR_OP_ATOMIC_MIN: case TIR_OP_ATOMIC_XCHG:
    case TIR_OP_ATOMIC_CAS: gen_atomic(c, op); return;
    case TIR_OP_RETURN: LLVMBuildRetVoid(c->b); return;
    case TIR_OP_FOR: gen_for(c, op); return;
    case TIR_OP_IF: gen_if(c, op); return;
    case TIR_OP_WHILE: gen_while(c, op); return;
    case TIR_OP_REDUCE_SUM: case TIR_OP_REDUCE_MAX: case TIR_OP_REDUCE_MIN: gen_reduce(c, op); return;
    case TIR_OP_CUMSUM: case TIR_OP_CUMSUM_REV: gen_scan(c, op); return;
    case TIR_OP_YIELD: return; /* read by gen_for */
    case TIR_OP_PRINT: gen_print(c, op); return;
    case TIR_OP_ASSERT: gen_assert(c, op); return;
    case TIR_OP_LOCAL_ALLOC: gen_local_alloc(c, op); return;
    case TIR_OP_ASYNC_COPY: gen_async_copy(c, op); return;
    case TIR_OP_LOCAL_LOAD: gen_local_load(c, op); return;
    case TIR_OP_LOCAL_STORE: gen_local_store(c, op); return;
    case TIR_OP_ASYNC_COMMIT: call_intrinsic(c, "llvm.nvvm.cp.async.commit.group", NULL, 0); return;
    case TIR_OP_ASYNC_WAIT: {
        LLVMValueRef n = i32c(c, op->attr.axis);
        call_intrinsic(c, "llvm.nvvm.cp.async.wait.group", &n, 1);
        return;
    }
    case TIR_OP_BARRIER: barrier(c); return;
    case TIR_OP_FENCE_ASYNC: gen_fence_async(c, op); return;
    case TIR_OP_MBAR_INIT: gen_mbar_init(c, op); return;
    case TIR_OP_MBAR_WAIT: gen_mbar_wait(c, op); return;
    case TIR_OP_MBAR_INVAL: gen_mbar_inval(c, op); return;
    case TIR_OP_TMA_LOAD: gen_tma_load(c, op); return;
    case TIR_OP_MBAR_ARRIVE: gen_mbar_arrive(c, op); return;
    case TIR_OP_PRODUCER: {
        bool was = c->in_producer;
        c->in_producer = true;
        gen_block_ops(c, op->body);
        c->in_producer = was;
        return;
    }
    case TIR_OP_DOT: case TIR_OP_DOT_IEEE: gen_dot(c, op); return;
    case TIR_OP_DOT_ASYNC: gen_dot_async(c, op); return;
    case TIR_OP_DOT_WAIT: gen_dot_wait(c, op); return;
    default: break;
    }
    if ((info->flags & TIR_F_ELEMENTWISE) && op->noperands == 2) {
        tir_elem e = tir_type_elem(op->operands[0]->type);
        LLVMValueRef *r = new_regs(c, res);
        /* a comparison the analysis finds constant over runs of k registers
         * (cols < n with n a multiple of 8) is made once per run: LLVM
         * cannot see that the other k - 1 give the same answer */
        uint32_t k = (info->flags & TIR_F_COMPARE) ? equal_run(c, res) : 1;
        for (uint32_t i = 0; i < c->nregs[res->id]; i++)
            r[i] = i % k               ? r[i - i % k]
                   : same_operands(c, op, i) ? r[i - 1]
                                             : gen_binary(c, op->code, e, reg(c, op->operands[0], i), reg(c, op->operands[1], i));
        return;
    }
    cg_error(c, op, "unsupported op");
}

/* Ops that walk blocked layouts' dims (broadcast, expand_dims, reductions,
 * scans, permute): the layout pass gives them blocked operands, but for
 * the mma-layout cases codegen knows (below); a .tir file that gives them
 * other mma-kind tiles gets an error, not wrong code. */
static bool needs_blocked(cg *c, const tir_op *op) {
    switch (op->code) {
    case TIR_OP_BROADCAST: case TIR_OP_EXPAND_DIMS: case TIR_OP_REDUCE_SUM: case TIR_OP_REDUCE_MAX:
    case TIR_OP_REDUCE_MIN: case TIR_OP_CUMSUM: case TIR_OP_CUMSUM_REV: case TIR_OP_PERMUTE: break;
    default: return false; /* and the ops below have an operand and a result */
    }
    const tir_layout *x = &op->operands[0]->type.layout, *r = &op->results[0]->type.layout;
    bool x_tile = op->operands[0]->type.rank > 0;
    /* in the mma layout and its slices too, operand and result alike
     * (broadcast_source_reg) */
    if (op->code == TIR_OP_BROADCAST && x_tile && tir_layout_eq(x, r) &&
        (x->kind == TIR_LAYOUT_MMA || x->kind == TIR_LAYOUT_MMA_SLICE))
        return false;
    /* an accumulator's rows or columns (gen_reduce_mma), and back
     * (tir_mma_slice_source) */
    if ((op->code == TIR_OP_REDUCE_SUM || op->code == TIR_OP_REDUCE_MAX || op->code == TIR_OP_REDUCE_MIN) &&
        (x->kind == TIR_LAYOUT_MMA || x->kind == TIR_LAYOUT_MMA_SLICE))
        return false;
    if (op->code == TIR_OP_EXPAND_DIMS && x_tile && x->kind == TIR_LAYOUT_MMA_SLICE && r->kind == TIR_LAYOUT_MMA)
        return false;
    bool bad = op->nresults && op->results[0]->type.rank && is_mma_kind(&op->results[0]->type.layout);
    /* a permute reads its operand through scratch by row-major index, any layout */
    for (uint32_t i = 0; i < op->noperands && op->code != TIR_OP_PERMUTE; i++)
        bad |= op->operands[i]->type.rank && is_mma_kind(&op->operands[i]->type.layout);
    if (bad) cg_error(c, op, "this op needs blocked layouts, not mma or dot_op ones (convert_layout first)");
    return bad;
}

static void annotate(cg *c, const char *key, int value) {
    LLVMMetadataRef md[3] = {
        LLVMValueAsMetadata(c->fn),
        LLVMMDStringInContext2(c->ctx, key, strlen(key)),
        LLVMValueAsMetadata(i32c(c, value)),
    };
    LLVMAddNamedMetadataOperand(c->mod, "nvvm.annotations",
                                LLVMMetadataAsValue(c->ctx, LLVMMDNodeInContext2(c->ctx, md, 3)));
}

static bool gen_func(cg *c, tir_func *f) {
    c->f = f;
    c->regs = TC_NEW_ARRAY(c->arena, LLVMValueRef *, f->next_value_id + 1);
    c->nregs = TC_NEW_ARRAY(c->arena, uint32_t, f->next_value_id + 1);
    c->axis = lower_axis_analyze(f, c->arena);
    LLVMTypeRef *pt = TC_NEW_ARRAY(c->arena, LLVMTypeRef, f->nparams + f->ntmaps + 1);
    for (uint32_t i = 0; i < f->nparams; i++) {
        tir_elem e = tir_type_elem(f->params[i]->type);
        /* i1 travels as a byte: the launch ABI has no 1-bit parameters */
        pt[i] = e == TIR_I1 ? LLVMInt8TypeInContext(c->ctx) : elem_type(c, e);
    }
    /* then the tensor maps, hidden parameters the runtime adds at launch:
     * each the global address of its 128-byte map (tileir.h, tir_tmap) */
    for (uint32_t i = 0; i < f->ntmaps; i++)
        pt[f->nparams + i] = LLVMPointerTypeInContext(c->ctx, NVPTX_ADDRSPACE_GLOBAL);
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), pt, f->nparams + f->ntmaps, false);
    c->fn = LLVMAddFunction(c->mod, f->name, fty);
    if (c->dib) {
        LLVMMetadataRef sty = LLVMDIBuilderCreateSubroutineType(c->dib, c->di_file, NULL, 0, LLVMDIFlagZero);
        size_t n = strlen(f->name);
        c->di_sub = LLVMDIBuilderCreateFunction(c->dib, c->di_file, f->name, n, f->name, n, c->di_file, f->loc.line, sty,
                                                false, true, f->loc.line, LLVMDIFlagZero, true);
        LLVMSetSubprogram(c->fn, c->di_sub);
        LLVMSetCurrentDebugLocation2(c->b, NULL); /* the entry's own code: no op's */
    }
    annotate(c, "kernel", 1);
    annotate(c, "maxntidx", LOWER_WARP_SIZE * (f->num_warps + f->producer_warps));
    /* setmaxnreg moves registers between the roles (gen_split), which
     * ptxas does only from a register count it knows at entry (else it
     * ignores them: C7508): the file shared by every thread, in steps of 8 */
    if (f->producer_warps && f->num_warps >= CG_SETMAXNREG_MIN_WARPS)
        annotate(c, "maxnreg", (int)entry_regs(f));
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "entry");
    c->entry = entry;
    LLVMPositionBuilderAtEnd(c->b, entry);
    unsigned align_kind = LLVMGetEnumAttributeKindForName("align", 5);
    for (uint32_t i = 0; i < f->nparams; i++) {
        const tir_value *p = f->params[i];
        LLVMValueRef arg = LLVMGetParam(c->fn, i);
        if (p->name) LLVMSetValueName2(arg, p->name, strlen(p->name));
        if (p->type.elem == TIR_PTR)
            LLVMAddAttributeAtIndex(c->fn, i + 1, LLVMCreateEnumAttribute(c->ctx, align_kind, LOWER_ASSUMED_PTR_ALIGN));
        if (p->type.elem == TIR_I1) arg = LLVMBuildTrunc(c->b, arg, LLVMInt1TypeInContext(c->ctx), "");
        new_regs(c, p)[0] = arg;
    }
    c->tid = sreg(c, "llvm.nvvm.read.ptx.sreg.tid.x");
    c->role = CG_ROLE_ALL, c->held = NULL, c->in_producer = false;
    memset(c->tid_times, 0, sizeof c->tid_times);
    /* the area the smem_plan pass sized: slots, buffers, live scratch;
     * the other scratch on the buffers (gen_block_ops switches it in the
     * buffers' block) */
    c->buffers_at = c->apart_next = smem_buffers_base(f);
    uint32_t smem_bytes = lower_smem_bytes(f);
    c->smem = NULL;
    c->smem_used = 0;
    c->nbases = 0;
    if (f->dynamic_smem) {
        /* the extern __shared__ array: one per module, shared by its
         * kernels (each CTA has its own); the launch gives it
         * f->dynamic_smem bytes, which reach the runtime with the kernel's
         * tile IR (the sidecar) */
        static const char dyn_name[] = "tilec$dynamic_smem"; /* no kernel can have this name */
        c->smem = LLVMGetNamedGlobal(c->mod, dyn_name);
        if (!c->smem) {
            c->smem = LLVMAddGlobalInAddressSpace(c->mod, LLVMArrayType2(LLVMInt8TypeInContext(c->ctx), 0), dyn_name,
                                                  NVPTX_ADDRSPACE_SHARED);
            LLVMSetLinkage(c->smem, LLVMExternalLinkage);
            LLVMSetAlignment(c->smem, c->dyn_smem_align);
        }
    } else if (smem_bytes) {
        char name[300];
        snprintf(name, sizeof name, "%s.smem", f->name);
        LLVMTypeRef ty = LLVMArrayType2(LLVMInt8TypeInContext(c->ctx), smem_bytes);
        c->smem = LLVMAddGlobalInAddressSpace(c->mod, ty, name, NVPTX_ADDRSPACE_SHARED);
        LLVMSetInitializer(c->smem, LLVMGetUndef(ty));
        LLVMSetLinkage(c->smem, LLVMInternalLinkage);
        LLVMSetAlignment(c->smem, smem_buffer_align(f, NULL));
    }
    smem_buffers bufs;
    smem_buffers_of(f, &bufs);
    c->buffers = &bufs;
    /* outside the buffers' range the scratch area lies on their bytes */
    c->scratch = c->buffers_at;
    c->scratch_bytes = f->smem.scratch;
    gen_block_ops(c, f->body);
    c->buffers = NULL;
    return c->ok;
}

/* A kernel's code is its tiles unrolled over each thread's registers, so
 * a few ops on tiles of many elements a thread make a very long block,
 * which LLVM's optimization takes time to more than the block's length
 * (lower.h, LOWER_MAX_KERNEL_INSTRS). Counted before LLVM sees the
 * module, so that such a kernel is an error in milliseconds, not a
 * compile of minutes. */
static void check_code_size(cg *c, const tir_func *f) {
    uint64_t n = 0;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(c->fn); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) n++;
    if (n <= LOWER_MAX_KERNEL_INSTRS) return;
    uint32_t most = 0; /* the most registers of one value: its largest tile's elements a thread */
    for (uint32_t id = 0; id <= f->next_value_id; id++)
        if (c->nregs[id] > most) most = c->nregs[id];
    tc_error_loc(c->diag, c->file, f->loc,
                 "kernel '%s' is %llu LLVM instructions a thread (limit is %d), too many to optimize in reasonable "
                 "time: its tiles are unrolled over each thread's registers (the largest, %u elements a thread); "
                 "use smaller tiles, more warps, or a loop over parts of a tile",
                 f->name, (unsigned long long)n, LOWER_MAX_KERNEL_INSTRS, most);
    if (c->over_limit) *c->over_limit = true;
    c->ok = false;
}

LLVMModuleRef lower_codegen(tir_module *m, const tir_func *only, LLVMContextRef ctx, const lower_options *opt,
                            tc_diag *diag) {
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(m->source_name ? m->source_name : "tilec", ctx);
    LLVMSetTarget(mod, "nvptx64-nvidia-cuda");
    LLVMSetDataLayout(mod, "e-i64:64-i128:128-v16:16-v32:32-n16:32:64");
    tc_arena *arena = tc_arena_new();
    cg c = {.ctx = ctx, .mod = mod, .b = LLVMCreateBuilderInContext(ctx), .arena = arena, .diag = diag,
            .file = m->source_name ? m->source_name : "<tir>", .ok = true,
            .arch = opt->compile.arch ? opt->compile.arch : TILEC_DEFAULT_ARCH, .exp2_ftz = opt->compile.exp2_ftz,
            .dot = cg_dot_lowering_for(opt->compile.arch ? opt->compile.arch : TILEC_DEFAULT_ARCH),
            .memo = opt->memo, .over_limit = opt->over_limit};
    if (opt->compile.line_info) { /* positions only: no variables, types or debug sections */
        c.dib = LLVMCreateDIBuilder(mod);
        c.di_file = LLVMDIBuilderCreateFile(c.dib, c.file, strlen(c.file), "", 0);
        LLVMDIBuilderCreateCompileUnit(c.dib, LLVMDWARFSourceLanguageC, c.di_file, "tilec", 5, true, "", 0, 0, "", 0,
                                       (LLVMDWARFEmissionKind)CG_DWARF_DIRECTIVES_ONLY, 0, false, false, "", 0, "", 0);
        LLVMAddModuleFlag(mod, LLVMModuleFlagBehaviorWarning, "Debug Info Version", 18,
                          LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(ctx), LLVMDebugMetadataVersion(), 0)));
    }
    /* The extern array is one per PTX module, every kernel's, aligned for
     * the most demanding kernel of the file, whichever of them this module
     * holds: the driver builds a module a kernel and merges their PTX, in
     * which the declarations must agree. */
    for (const tir_func *f = m->funcs; f; f = f->next) {
        uint32_t a = f->dynamic_smem ? smem_buffer_align(f, NULL) : 0;
        if (a > c.dyn_smem_align) c.dyn_smem_align = a;
    }
    for (tir_func *f = m->funcs; f && c.ok; f = f->next) {
        if (only && f != only) continue;
        c.f = f;
        if (!f->num_warps) {
            cg_error(&c, NULL, "kernel has no layout (run the layout pass first)");
            break;
        }
        if (gen_func(&c, f)) check_code_size(&c, f);
    }
    if (c.dib) {
        LLVMDIBuilderFinalize(c.dib);
        LLVMDisposeDIBuilder(c.dib);
    }
    LLVMDisposeBuilder(c.b);
    tc_arena_free(arena);
    if (!c.ok) {
        LLVMDisposeModule(mod);
        return NULL;
    }
    return mod;
}
