/* smem_plan.c - sizes each kernel's shared memory before codegen, checks
 * it against the target's, and records it in the IR.
 *
 * Codegen lays out one area per kernel: the rank-1 reductions' slots (one
 * per reduction, CG_SMEM_SLOT_BYTES for each of up to TILEC_MAX_NUM_WARPS
 * warps), then from a 16-byte boundary the local_alloc buffers (each its
 * own), then one scratch area as large as the largest layout conversion,
 * general reduction, scan or atomic needs (each use sits between two
 * barriers, so one area serves them all). One walk over the kernel adds up
 * the slots and buffers and keeps the largest scratch need, with the op
 * that needs it, by the same sizing functions codegen uses to place its
 * accesses (codegen_internal.h), so the plan and the code agree.
 *
 * A kernel over the target's opt-in limit (lower_smem_limit) is the
 * kernel's error, reported at the op that needs the most: the largest
 * buffer when the buffers are the larger part, else the scratch op; the
 * pipeline then stops with lower_options.over_limit set, so the driver
 * calls it an error in the source, not the compiler's. Otherwise the pass
 * records the three sizes (tir_func.smem) and, above the 48 KB of static
 * shared memory every target has, the total as dynamic_smem, which reaches
 * the runtime with the kernel's IR. Codegen only reads them. */
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

static void count_smem(tir_op *op, void *p) {
    smem_need *n = p;
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
    if (s > n->scratch) n->scratch = s, n->largest = op;
}

uint32_t lower_smem_bytes(const tir_func *f) {
    uint32_t scratch_at = ((f->smem.slots + 15) & ~15u) + f->smem.buffers;
    return f->smem.scratch ? scratch_at + f->smem.scratch : f->smem.buffers ? scratch_at : f->smem.slots;
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
