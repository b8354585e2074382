/* smem_plan.c - sizes each kernel's shared memory before codegen, checks
 * it against the target's, and records it in the IR.
 *
 * Codegen lays out one area per kernel: the rank-1 reductions' slots (one
 * per reduction, CG_SMEM_SLOT_BYTES for each of up to TILEC_MAX_NUM_WARPS
 * warps), then from a 16-byte boundary the local_alloc buffers (each its
 * own), and the scratch areas for the layout conversions, general
 * reductions, scans and atomics (each use sits between two barriers, so
 * one area serves them all). A walk over the kernel adds up the slots and
 * buffers and keeps the largest scratch need, with the op that needs it,
 * by the same sizing functions codegen uses to place its accesses
 * (codegen_internal.h), so the plan and the code agree.
 *
 * The buffers are live over a range of the kernel's top-level ops
 * (smem_live_range): from the first that reads or writes one to the last,
 * and on to the first top-level `async_wait 0` that leaves no copy in
 * flight (the pipelined loop's epilogue: its rings are dead once the loop
 * ends and its copies have landed). A scratch use inside that range (an
 * index tile's conversion in the loop) goes in an area of its own after
 * the buffers (live_scratch); every other use goes on the buffers' own
 * bytes, from their start (scratch), so the area is the larger of the two
 * parts, not their sum. Every scratch use begins with a barrier
 * (gen_move_scratch, reduce_over_warps, gen_scan, share_from_owners),
 * which separates the buffers' last reads and writes from the scratch's
 * first writes; a use before the range has no barrier after it, so the
 * pass puts a `barrier` before the range's first op. Top-level granularity
 * keeps this simple and safe.
 *
 * A kernel over the target's opt-in limit (lower_smem_limit) is the
 * kernel's error, reported at the op that needs the most: the largest
 * buffer when the buffers are the larger part, else the scratch op; the
 * pipeline then stops with lower_options.over_limit set, so the driver
 * calls it an error in the source, not the compiler's. Otherwise the pass
 * records the sizes (tir_func.smem) and, above the 48 KB of static shared
 * memory every target has, the total as dynamic_smem, which reaches the
 * runtime with the kernel's IR. Codegen only reads them. */
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
    bool reduction = op->code == TIR_OP_REDUCE_SUM || op->code == TIR_OP_REDUCE_MAX || op->code == TIR_OP_REDUCE_MIN;
    if (mma_operand && op->code != TIR_OP_CONVERT_LAYOUT && op->code != TIR_OP_RESHAPE && !is_atomic(op->code) &&
        !reduction) {
        /* codegen refuses the rest (needs_blocked) */
    } else if (reduction) {
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

/* Calls fn on op and every op in its regions, in program order. */
static void walk_op(tir_op *op, void (*fn)(tir_op *, void *), void *ctx) {
    fn(op, ctx);
    tir_block *regions[2] = {op->body, op->body2};
    for (int k = 0; k < 2; k++)
        for (tir_op *o = regions[k] ? regions[k]->first : NULL; o; o = o->next) walk_op(o, fn, ctx);
}

/* What one top-level op of the kernel holds, itself or in its regions. */
typedef struct top_facts {
    bool touches;     /* reads or writes a buffer (an op with an smem operand) */
    bool copies;      /* starts an async copy */
    bool commits;     /* closes a group of copies */
    bool uncommitted; /* a copy after its last async_commit, in program order */
} top_facts;

static void top_fact(tir_op *op, void *p) {
    top_facts *t = p;
    for (uint32_t i = 0; i < op->noperands; i++)
        if (op->operands[i]->type.space == TIR_SPACE_SHARED) t->touches = true;
    if (op->code == TIR_OP_ASYNC_COPY) t->copies = t->uncommitted = true;
    if (op->code == TIR_OP_ASYNC_COMMIT) t->commits = true, t->uncommitted = false;
}

void smem_live_range(const tir_func *f, const tir_op **first, const tir_op **end) {
    *first = *end = NULL;
    const tir_op *last = NULL;
    for (tir_op *op = f->body->first; op; op = op->next) {
        top_facts t = {0};
        walk_op(op, top_fact, &t);
        if (t.touches) {
            if (!*first) *first = op;
            last = op;
        }
    }
    bool after = false, in_flight = false, uncommitted = false;
    for (tir_op *op = f->body->first; op && last; op = op->next) {
        if (after && !in_flight) {
            *end = op;
            return;
        }
        top_facts t = {0};
        walk_op(op, top_fact, &t);
        if (t.copies) in_flight = true, uncommitted = t.uncommitted;
        else if (t.commits) uncommitted = false;
        if (op->code == TIR_OP_ASYNC_WAIT && op->attr.axis == 0 && !uncommitted) in_flight = false;
        if (op == last) after = true;
    }
}

uint32_t lower_smem_bytes(const tir_func *f) {
    uint32_t base = (f->smem.slots + 15) & ~15u, buffers_end = base + f->smem.buffers + f->smem.live_scratch;
    if (!f->smem.scratch && !f->smem.buffers) return f->smem.slots;
    return base + f->smem.scratch > buffers_end ? base + f->smem.scratch : buffers_end;
}

bool lower_smem_plan(tir_module *m, const lower_options *opt, tc_diag *diag) {
    const char *arch = opt->compile.arch ? opt->compile.arch : TILEC_DEFAULT_ARCH;
    uint32_t limit = lower_smem_limit(opt->compile.arch);
    bool ok = true;
    for (tir_func *f = m->funcs; f; f = f->next) {
        /* the scratch uses inside the buffers' live range apart (live), the rest (shared) */
        const tir_op *first, *end;
        smem_live_range(f, &first, &end);
        smem_need need = {.f = f}, live = {.f = f};
        bool inside = false, early = false;
        for (tir_op *op = f->body->first; op; op = op->next) {
            if (op == first) inside = true, early = need.scratch != 0; /* a scratch use before the range */
            if (op == end) inside = false;
            walk_op(op, count_smem, inside ? &live : &need);
        }
        f->smem.slots = need.slots + live.slots;
        f->smem.buffers = need.buffers + live.buffers;
        f->smem.scratch = need.scratch;
        f->smem.live_scratch = live.scratch;
        if (live.scratch > need.scratch) need.scratch = live.scratch, need.largest = live.largest;
        if (live.largest_buffer_bytes > need.largest_buffer_bytes)
            need.largest_buffer_bytes = live.largest_buffer_bytes, need.largest_buffer = live.largest_buffer;
        need.buffers = f->smem.buffers;
        if (early && !(first->prev && first->prev->code == TIR_OP_BARRIER)) {
            /* the scratch uses before the buffers' range read their last before it writes its first */
            tir_builder b = {0};
            tir_builder_before(&b, (tir_op *)first);
            b.loc = first->loc;
            tir_build_op(&b, TIR_OP_BARRIER, 0, NULL, 0, NULL);
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
