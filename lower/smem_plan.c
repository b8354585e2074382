/* smem_plan.c - sizes each kernel's shared memory before codegen, checks
 * it against the target's, and records it in the IR.
 *
 * Codegen lays out one area per kernel: the rank-1 reductions' slots (one
 * per reduction, CG_SMEM_SLOT_BYTES for each of up to TILEC_MAX_NUM_WARPS
 * warps), then from a 16-byte boundary the local_alloc buffers (each its
 * own), and one scratch area as large as the largest layout conversion,
 * general reduction, scan or atomic needs (each use sits between two
 * barriers, so one area serves them all). One walk over the kernel adds up
 * the slots and buffers and keeps the largest scratch need, with the op
 * that needs it, by the same sizing functions codegen uses to place its
 * accesses (codegen_internal.h), so the plan and the code agree.
 *
 * The scratch area goes after the buffers, unless it can share their
 * bytes: where every scratch use (counted at the kernel's top-level op
 * that holds it) comes either before any op reads or writes a buffer, or
 * after the last op that does and after a top-level `async_wait 0` that
 * leaves no copy in flight (the pipelined loop's epilogue: its rings are
 * dead once the loop ends and its copies have landed). Then the scratch
 * sits at the buffers' start and the area is the larger of the two, not
 * their sum. Every scratch use begins with a barrier (gen_move_scratch,
 * gen_reduce_general, gen_scan, share_from_owners), which separates the
 * buffers' last reads and writes from the scratch's first writes; a use
 * before the buffers has no barrier after it, so the pass puts a `barrier`
 * before the first op that touches a buffer. Top-level granularity keeps
 * this simple and safe: a scratch use in the loop that uses a buffer, or
 * between two buffer uses, keeps the area after the buffers.
 *
 * A kernel over the target's opt-in limit (lower_smem_limit) is the
 * kernel's error, reported at the op that needs the most: the largest
 * buffer when the buffers are the larger part, else the scratch op; the
 * pipeline then stops with lower_options.over_limit set, so the driver
 * calls it an error in the source, not the compiler's. Otherwise the pass
 * records the sizes and the scratch's place (tir_func.smem) and, above the
 * 48 KB of static shared memory every target has, the total as
 * dynamic_smem, which reaches the runtime with the kernel's IR. Codegen
 * only reads them. */
#include <stdio.h>

#include "lower/codegen_internal.h"

typedef struct smem_need {
    const tir_func *f;
    uint32_t buffers; /* local_alloc: each its own */
    uint32_t slots;   /* rank-1 reductions: one slot each */
    uint32_t scratch; /* the largest layout change, general reduction or scan */
    const tir_op *largest; /* the op that needs `scratch` */
    const tir_op *largest_buffer; /* the largest local_alloc */
    uint32_t largest_buffer_bytes;
} smem_need;

/* The scratch bytes op needs (0: none); local_alloc and rank-1
 * reductions add to n's buffers and slots instead. */
static uint32_t op_scratch(tir_op *op, smem_need *n) {
    uint32_t s = 0;
    bool mma_operand = op->noperands && op->operands[0]->type.rank && is_mma_kind(&op->operands[0]->type.layout);
    if (mma_operand && op->code != TIR_OP_CONVERT_LAYOUT && op->code != TIR_OP_RESHAPE && !is_atomic(op->code)) {
        /* codegen refuses the rest (needs_blocked) */
    } else if (op->code == TIR_OP_REDUCE_SUM || op->code == TIR_OP_REDUCE_MAX || op->code == TIR_OP_REDUCE_MIN) {
        if (is_rank1_blocked(&op->operands[0]->type)) n->slots += CG_SMEM_SLOT_BYTES * TILEC_MAX_NUM_WARPS;
        else s = reduce_scratch(op);
    } else if (op->code == TIR_OP_CUMSUM || op->code == TIR_OP_CUMSUM_REV) {
        s = scan_scratch(op);
    } else if (is_atomic(op->code)) {
        s = atomic_scratch(n->f, op);
    } else if (op->code == TIR_OP_LOCAL_ALLOC) {
        uint32_t b = buffer_bytes(&op->results[0]->type);
        n->buffers += b;
        if (b > n->largest_buffer_bytes) n->largest_buffer_bytes = b, n->largest_buffer = op;
    } else if (op->nresults == 1 && op->noperands == 1) {
        s = move_scratch(op);
    }
    return s;
}

static void count_smem(tir_op *op, void *p) {
    smem_need *n = p;
    uint32_t s = op_scratch(op, n);
    if (s > n->scratch) n->scratch = s, n->largest = op;
}

/* What one top-level op of the kernel holds, itself or in its regions. */
typedef struct top_facts {
    const tir_func *f;
    bool touches;    /* reads or writes a buffer (an op with an smem operand) */
    bool scratch;    /* uses the scratch area */
    bool copies;     /* starts an async copy */
    bool commits;    /* closes a group of copies */
    bool uncommitted; /* a copy after its last async_commit, in program order */
} top_facts;

static void top_fact(tir_op *op, void *p) {
    top_facts *t = p;
    smem_need scratch_only = {.f = t->f};
    if (op_scratch(op, &scratch_only)) t->scratch = true;
    for (uint32_t i = 0; i < op->noperands; i++)
        if (op->operands[i]->type.space == TIR_SPACE_SHARED) t->touches = true;
    if (op->code == TIR_OP_ASYNC_COPY) t->copies = t->uncommitted = true;
    if (op->code == TIR_OP_ASYNC_COMMIT) t->commits = true, t->uncommitted = false;
}

static void op_facts(tir_op *op, top_facts *t) {
    top_fact(op, t);
    tir_block *regions[2] = {op->body, op->body2};
    for (int k = 0; k < 2; k++)
        for (tir_op *o = regions[k] ? regions[k]->first : NULL; o; o = o->next) op_facts(o, t);
}

/* Whether f's scratch area can share its buffers' bytes (the header says
 * when); *fence gets the top-level op to put a barrier before (the first
 * to touch a buffer, where a scratch use comes before it), else NULL. */
static bool scratch_shares_buffers(tir_func *f, tir_op **fence) {
    *fence = NULL;
    tir_op *first = NULL, *last = NULL;
    for (tir_op *op = f->body->first; op; op = op->next) {
        top_facts t = {.f = f};
        op_facts(op, &t);
        if (t.touches) {
            if (!first) first = op;
            last = op;
        }
    }
    bool before = true, after = false, in_flight = false, uncommitted = false, early = false;
    for (tir_op *op = f->body->first; op; op = op->next) {
        top_facts t = {.f = f};
        op_facts(op, &t);
        if (op == first) before = false;
        if (t.scratch) {
            if (before) early = true;
            else if (!after || in_flight) return false;
        }
        if (t.copies) in_flight = true;
        if (t.copies) uncommitted = t.uncommitted;
        else if (t.commits) uncommitted = false;
        if (op->code == TIR_OP_ASYNC_WAIT && op->attr.axis == 0 && !uncommitted) in_flight = false;
        if (op == last) after = true;
    }
    if (early && first) *fence = first;
    return true;
}

uint32_t lower_smem_bytes(const tir_func *f) {
    uint32_t buffers_end = ((f->smem.slots + 15) & ~15u) + f->smem.buffers;
    uint32_t scratch_end = f->smem.scratch_at + f->smem.scratch;
    if (!f->smem.scratch) return f->smem.buffers ? buffers_end : f->smem.slots;
    return scratch_end > buffers_end ? scratch_end : buffers_end;
}

bool lower_smem_plan(tir_module *m, const lower_options *opt, tc_diag *diag) {
    const char *arch = opt->compile.arch ? opt->compile.arch : TILEC_DEFAULT_ARCH;
    uint32_t limit = lower_smem_limit(opt->compile.arch);
    bool ok = true;
    for (tir_func *f = m->funcs; f; f = f->next) {
        smem_need need = {.f = f};
        tir_walk(f, count_smem, &need);
        f->smem.slots = need.slots;
        f->smem.buffers = need.buffers;
        f->smem.scratch = need.scratch;
        uint32_t base = (need.slots + 15) & ~15u;
        f->smem.scratch_at = base + need.buffers;
        tir_op *fence = NULL;
        if (need.buffers && need.scratch && scratch_shares_buffers(f, &fence)) {
            f->smem.scratch_at = base;
            if (fence && !(fence->prev && fence->prev->code == TIR_OP_BARRIER)) {
                /* the early scratch use's reads are done before the buffers' first writes */
                tir_builder b = {0};
                tir_builder_before(&b, fence);
                b.loc = fence->loc;
                tir_build_op(&b, TIR_OP_BARRIER, 0, NULL, 0, NULL);
            }
        }
        uint32_t bytes = lower_smem_bytes(f);
        f->dynamic_smem = bytes > CG_MAX_STATIC_SMEM ? bytes : 0;
        if (bytes <= limit) continue;
        /* say which op, not ptxas or the launch */
        bool buffers = need.buffers > need.scratch;
        const tir_op *at = buffers ? need.largest_buffer : need.largest;
        if (!buffers)
            tc_error_loc(diag, m->source_name ? m->source_name : "<tir>", at ? at->loc : f->loc,
                         "this needs %u bytes of shared memory to move or reduce a tile across threads (limit is %u "
                         "on %s); use smaller tiles",
                         bytes, limit, arch);
        else
            tc_error_loc(diag, m->source_name ? m->source_name : "<tir>", at ? at->loc : f->loc,
                         "the kernel's shared-memory buffers need %u bytes (limit is %u on %s); use smaller tiles or "
                         "fewer stages",
                         bytes, limit, arch);
        if (opt->over_limit) *opt->over_limit = true;
        ok = false;
    }
    return ok;
}
