/* smem_plan.c - sizes each kernel's shared memory before codegen, checks
 * it against the target's, and records it in the IR.
 *
 * Codegen lays out one area per kernel: the rank-1 reductions' slots (one
 * per reduction, CG_SMEM_SLOT_BYTES for each of up to TILEC_MAX_NUM_WARPS
 * warps), then from a 16-byte boundary (1024 where wgmma reads a buffer:
 * smem_buffer_align) the local_alloc buffers, and the
 * scratch areas for the layout conversions, general reductions, scans and
 * atomics (each use sits between two barriers, so one area serves them
 * all). A walk over the kernel adds up the slots and keeps the largest
 * scratch need, with the op that needs it, by the same sizing functions
 * codegen uses to place its accesses (codegen_internal.h), so the plan and
 * the code agree.
 *
 * Buffers are placed by their live ranges (smem_buffers_of, which codegen
 * calls too). The ranges count the ops of the block that holds every
 * local_alloc (the kernel's body, or an `if` around it all, as the
 * stdlib's kernels have), an op standing for its regions: a buffer is
 * live from the first op that reads or writes it to its last, and on to
 * the first `async_wait 0` of that block that leaves no copy in flight (a
 * pipelined loop's rings are dead once the loop ends and its copies have
 * landed). Buffers whose ranges do not meet share bytes (first fit, in
 * the order the ranges start): flash attention's q staging buffer, read
 * into registers before the loop, lies under the K/V rings. A buffer that
 * takes bytes another held before it gets a barrier before its first use,
 * unless one already separates the two ranges, so that no thread writes
 * them while another still reads the old contents. Past
 * LOWER_MAX_SMEM_OVERLAP buffers each keeps bytes of its own.
 *
 * A scratch use inside the union of the ranges (an index tile's
 * conversion in the loop) goes in an area of its own after the buffers
 * (live_scratch); every other use goes on the buffers' own bytes, from
 * their start (scratch), so the area is the larger of the two parts, not
 * their sum. Every scratch use begins with a barrier (gen_move_scratch,
 * reduce_over_warps, gen_scan, share_from_owners), which separates the
 * buffers' last reads and writes from the scratch's first writes; a use
 * before the range has no barrier after it, so the pass puts a `barrier`
 * before the range's first op.
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
    const tir_op *longest_move; /* the move through scratch with the most steps (move_scratch) */
    uint64_t longest_steps;
} smem_need;

/* The scratch bytes op needs (0: none); local_alloc and rank-1
 * reductions add to n's buffers and slots instead. */
static uint32_t op_scratch(tir_op *op, smem_need *n, lower_memo *memo) {
    uint32_t s = 0;
    bool mma_operand = op->noperands && op->operands[0]->type.rank && is_mma_kind(&op->operands[0]->type.layout);
    bool reduction = op->code == TIR_OP_REDUCE_SUM || op->code == TIR_OP_REDUCE_MAX || op->code == TIR_OP_REDUCE_MIN;
    /* a permute reads any layout through scratch by row-major index
     * (needs_blocked lets it through), so it is sized below as a move */
    if (mma_operand && op->code != TIR_OP_CONVERT_LAYOUT && op->code != TIR_OP_RESHAPE && op->code != TIR_OP_PERMUTE &&
        !is_atomic(op->code) && !reduction) {
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
        uint64_t steps;
        s = move_scratch(op, memo, &steps);
        if (steps > n->longest_steps) n->longest_steps = steps, n->longest_move = op;
    }
    return s;
}

/* Calls fn on op and every op in its regions, in program order. */
static void walk_op(tir_op *op, void (*fn)(tir_op *, void *), void *ctx) {
    fn(op, ctx);
    tir_block *regions[2] = {op->body, op->body2};
    for (int k = 0; k < 2; k++)
        for (tir_op *o = regions[k] ? regions[k]->first : NULL; o; o = o->next) walk_op(o, fn, ctx);
}

/* What one op of the home block holds, itself or in its regions. */
typedef struct top_facts {
    const smem_buffers *s;
    bool touches[LOWER_MAX_SMEM_OVERLAP]; /* reads or writes buffer i (an operand is its local_alloc's value) */
    bool touches_any;                    /* some buffer (an op with an smem operand) */
    bool copies;                         /* starts an async copy */
    bool commits;                        /* closes a group of copies */
    bool uncommitted;                    /* a copy after its last async_commit, in program order */
} top_facts;

static void top_fact(tir_op *op, void *p) {
    top_facts *t = p;
    for (uint32_t i = 0; i < op->noperands; i++) {
        const tir_value *x = op->operands[i];
        /* a dot reads the slot of an operand left in shared memory (dot_smem) when it runs */
        if (x->type.layout.kind == TIR_LAYOUT_DOT_SMEM && x->def && x->def->code == TIR_OP_LOCAL_LOAD)
            x = x->def->operands[0];
        if (x->type.space != TIR_SPACE_SHARED) continue;
        t->touches_any = true;
        for (uint32_t j = 0; j < t->s->n && !t->s->apart; j++)
            if (x == t->s->b[j].alloc->results[0]) t->touches[j] = true;
    }
    if (op->code == TIR_OP_ASYNC_COPY) t->copies = t->uncommitted = true;
    if (op->code == TIR_OP_ASYNC_COMMIT) t->commits = true, t->uncommitted = false;
}

/* Where a buffer may start: LOWER_WGMMA_SMEM_ALIGN when wgmma reads it
 * (a local_load leaves a dot operand in it, dot_smem) or a bulk tensor
 * copy writes it (tma_load), since their swizzles follow the shared
 * address's bits; else 16 bytes. */
typedef struct align_walk {
    const tir_value *buf; /* NULL: any buffer */
    uint32_t align;
} align_walk;

static void find_align(tir_op *op, void *p) {
    align_walk *w = p;
    if (op->code == TIR_OP_LOCAL_LOAD && op->results[0]->type.layout.kind == TIR_LAYOUT_DOT_SMEM &&
        (!w->buf || op->operands[0] == w->buf))
        w->align = LOWER_WGMMA_SMEM_ALIGN;
    /* a bulk tensor copy's swizzle follows the address bits too (at most
     * 128 bytes, repeating every 1024) */
    if (op->code == TIR_OP_TMA_LOAD && (!w->buf || op->operands[0] == w->buf)) w->align = LOWER_WGMMA_SMEM_ALIGN;
}

uint32_t smem_buffer_align(const tir_func *f, const tir_op *alloc) {
    align_walk w = {.buf = alloc ? alloc->results[0] : NULL, .align = 16};
    tir_walk((tir_func *)f, find_align, &w);
    return w.align;
}

uint32_t smem_buffers_base(const tir_func *f) {
    uint32_t a = smem_buffer_align(f, NULL);
    return (f->smem.slots + a - 1) & ~(a - 1);
}

static uint32_t align_up(uint32_t x, uint32_t a) { return (x + a - 1) & ~(a - 1); }

static void add_bytes(tir_op *op, void *p) {
    smem_buffers *s = p;
    if (op->code == TIR_OP_LOCAL_ALLOC)
        s->extent = align_up(s->extent, smem_buffer_align(s->f, op)) + align_up(buffer_bytes(&op->results[0]->type), 16);
}

/* The innermost block that holds both a and b (itself or in an op's
 * regions): where the ranges of buffers allocated in both are counted. */
static const tir_block *common_block(const tir_block *a, const tir_block *b) {
    for (const tir_block *x = a; x; x = x->parent ? x->parent->parent : NULL)
        for (const tir_block *y = b; y; y = y->parent ? y->parent->parent : NULL)
            if (x == y) return x;
    return NULL; /* blocks of two kernels: not reached */
}

static void find_allocs(tir_op *op, void *p) {
    smem_buffers *s = p;
    if (op->code != TIR_OP_LOCAL_ALLOC) return;
    if (s->n == LOWER_MAX_SMEM_OVERLAP) s->apart = true;
    else s->b[s->n++].alloc = op;
}

/* The ranges over the ops of s->home: each buffer's (with `apart`, the
 * union for all), and the union's ends. */
static void live_ranges(smem_buffers *s) {
    uint32_t n = 0, first = UINT32_MAX, last = 0;
    bool any = false;
    for (tir_op *op = s->home->first; op; op = op->next, n++) {
        top_facts t = {.s = s};
        walk_op(op, top_fact, &t);
        if (t.touches_any) first = any ? first : n, last = n, any = true;
        for (uint32_t j = 0; j < s->n && !s->apart; j++)
            if (t.touches[j]) {
                if (!s->b[j].used) s->b[j].from = n, s->b[j].used = true;
                s->b[j].last = n;
            }
    }
    /* each range ends at the first op after its last use at which no copy
     * is in flight: the pipelined loop's rings are dead once the loop ends
     * and its copies have landed (a top-level `async_wait 0` with none
     * started after it) */
    uint32_t ends[LOWER_MAX_SMEM_OVERLAP + 1], nb = s->apart ? 0 : s->n, i = 0;
    for (uint32_t j = 0; j <= nb; j++) ends[j] = n;
    bool in_flight = false, uncommitted = false;
    s->first = s->end = NULL;
    for (tir_op *op = s->home->first; op; op = op->next, i++) {
        for (uint32_t j = 0; j <= nb; j++) {
            uint32_t l = j < nb ? s->b[j].last : last;
            bool used = j < nb ? s->b[j].used : any;
            if (used && ends[j] == n && i > l && !in_flight) ends[j] = i;
        }
        if (any && i == first) s->first = op;
        if (any && i == ends[nb]) s->end = op;
        top_facts t = {.s = s};
        walk_op(op, top_fact, &t);
        if (t.copies) in_flight = true, uncommitted = t.uncommitted;
        else if (t.commits) uncommitted = false;
        if (op->code == TIR_OP_ASYNC_WAIT && op->attr.axis == 0 && !uncommitted) in_flight = false;
    }
    for (uint32_t j = 0; j < nb; j++) s->b[j].to = s->b[j].used ? ends[j] : 0; /* unused: an empty range */
}

static bool ranges_meet(const smem_buffer *a, const smem_buffer *b) {
    return a->from < b->to && b->from < a->to;
}

static bool bytes_meet(const smem_buffer *a, const smem_buffer *b) {
    return a->offset < b->offset + b->bytes && b->offset < a->offset + a->bytes;
}

/* Each buffer at the lowest offset where it meets no buffer placed before
 * it whose range meets its own, in the order the ranges start (first fit
 * of an interval graph: a few buffers, so quadratic is fine). */
static void place(smem_buffers *s) {
    uint32_t order[LOWER_MAX_SMEM_OVERLAP];
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t j = i;
        for (; j > 0 && s->b[order[j - 1]].from > s->b[i].from; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    for (uint32_t i = 0; i < s->n; i++) {
        smem_buffer *b = &s->b[order[i]];
        b->offset = 0;
        for (bool moved = true; moved;) {
            moved = false;
            for (uint32_t j = 0; j < i; j++) {
                const smem_buffer *o = &s->b[order[j]];
                if (ranges_meet(b, o) && bytes_meet(b, o)) b->offset = align_up(o->offset + o->bytes, b->align), moved = true;
            }
        }
        if (b->offset + b->bytes > s->extent) s->extent = b->offset + b->bytes;
    }
}

void smem_buffers_of(const tir_func *f, smem_buffers *s) {
    *s = (smem_buffers){.f = f};
    for (tir_op *op = f->body->first; op; op = op->next) walk_op(op, find_allocs, s);
    if (!s->n) return;
    s->home = s->b[0].alloc->parent;
    for (uint32_t j = 1; j < s->n && s->home; j++) s->home = common_block(s->home, s->b[j].alloc->parent);
    if (!s->home) s->home = f->body;
    /* a block that runs more than once (inside a loop) would need its
     * ranges to wrap around from one trip to the next, and the uses after
     * them fenced from the next trip's first: such buffers are placed as
     * the kernel body's, where the whole loop is one op */
    for (const tir_block *b = s->home; b->parent; b = b->parent->parent)
        if (b->parent->code == TIR_OP_FOR || b->parent->code == TIR_OP_WHILE) s->home = f->body;
    if (s->apart) {
        /* too many to place: each its own bytes, in program order (codegen
         * hands them out as it meets them), over the union of their ranges
         * in the kernel's body */
        s->home = f->body;
        for (tir_op *op = f->body->first; op; op = op->next) walk_op(op, add_bytes, s);
        live_ranges(s);
        return;
    }
    for (uint32_t j = 0; j < s->n; j++) {
        s->b[j].bytes = (buffer_bytes(&s->b[j].alloc->results[0]->type) + 15) & ~15u;
        s->b[j].align = smem_buffer_align(f, s->b[j].alloc);
    }
    live_ranges(s);
    if (!s->end && s->home != f->body) {
        /* copies still in flight at the end of home: count the kernel's body */
        s->home = f->body;
        for (uint32_t j = 0; j < s->n; j++) s->b[j].from = s->b[j].last = s->b[j].to = 0, s->b[j].used = false;
        live_ranges(s);
    }
    place(s);
}

uint32_t smem_buffer_offset(const smem_buffers *s, const tir_op *alloc) {
    for (uint32_t j = 0; j < s->n && !s->apart; j++)
        if (s->b[j].alloc == alloc) return s->b[j].offset;
    return UINT32_MAX; /* apart: the caller's running sum */
}

uint32_t lower_smem_bytes(const tir_func *f) {
    uint32_t base = smem_buffers_base(f), buffers_end = base + f->smem.buffers + f->smem.live_scratch;
    if (!f->smem.scratch && !f->smem.buffers) return f->smem.slots;
    return base + f->smem.scratch > buffers_end ? base + f->smem.scratch : buffers_end;
}

/* The walk that adds up a kernel's needs: scratch uses inside the
 * buffers' range (live) apart from the rest (need). */
typedef struct plan_walk {
    const smem_buffers *s;
    smem_need need, live;
    bool passed; /* the walk has reached the range's first op */
    bool early;  /* a scratch use before it */
    lower_memo *memo; /* where move plans are kept (lower_options.memo) */
} plan_walk;

static void count_block(plan_walk *w, tir_block *blk, bool inside) {
    bool home = blk == w->s->home;
    for (tir_op *op = blk->first; op; op = op->next) {
        if (home && op == w->s->first) inside = w->passed = true;
        if (home && op == w->s->end) inside = false;
        smem_need *n = inside ? &w->live : &w->need;
        uint32_t sc = op_scratch(op, n, w->memo);
        if (sc > n->scratch) n->scratch = sc, n->largest = op;
        if (sc && !w->passed) w->early = true;
        if (op->body) count_block(w, op->body, inside);
        if (op->body2) count_block(w, op->body2, inside);
    }
}

static tir_op *home_op(const smem_buffers *s, uint32_t pos) {
    tir_op *op = s->home->first;
    while (op && pos--) op = op->next;
    return op;
}

/* A buffer that takes bytes another used before it (whose range ended
 * first) must not write them before every thread is done with the other:
 * a barrier between the other's range and its first use, at the home
 * block's level. Adds the first one missing; false when none is. */
static bool add_reuse_barrier(const smem_buffers *s) {
    for (uint32_t i = 0; i < s->n && !s->apart; i++)
        for (uint32_t j = 0; j < s->n; j++) {
            const smem_buffer *a = &s->b[i], *b = &s->b[j];
            if (i == j || a->to == 0 || b->to == 0 || a->to > b->from || !bytes_meet(a, b)) continue;
            bool fenced = false;
            tir_op *op = home_op(s, a->to);
            for (uint32_t k = a->to; k < b->from && op; k++, op = op->next) fenced |= op->code == TIR_OP_BARRIER;
            if (fenced) continue;
            tir_op *at = home_op(s, b->from);
            tir_builder bld = {0};
            tir_builder_before(&bld, at);
            bld.loc = at->loc;
            tir_build_op(&bld, TIR_OP_BARRIER, 0, NULL, 0, NULL);
            return true;
        }
    return false;
}

bool lower_smem_plan(tir_module *m, const lower_options *opt, tc_diag *diag) {
    const char *arch = opt->compile.arch ? opt->compile.arch : TILEC_DEFAULT_ARCH;
    uint32_t limit = lower_smem_limit(opt->compile.arch);
    bool ok = true;
    for (tir_func *f = m->funcs; f; f = f->next) {
        smem_buffers s;
        smem_buffers_of(f, &s);
        /* one barrier a buffer at most: each fences every reuse of the
         * bytes before that buffer's first use */
        for (uint32_t k = 0; k < s.n && add_reuse_barrier(&s); k++) smem_buffers_of(f, &s); /* the positions moved */
        plan_walk w = {.s = &s, .need = {.f = f}, .live = {.f = f}, .memo = opt->memo};
        count_block(&w, f->body, false);
        smem_need need = w.need, live = w.live;
        if (live.longest_steps > need.longest_steps)
            need.longest_steps = live.longest_steps, need.longest_move = live.longest_move;
        f->smem.slots = need.slots + live.slots;
        f->smem.buffers = s.extent;
        f->smem.scratch = need.scratch;
        f->smem.live_scratch = live.scratch;
        if (live.scratch > need.scratch) need.scratch = live.scratch, need.largest = live.largest;
        if (live.largest_buffer_bytes > need.largest_buffer_bytes)
            need.largest_buffer_bytes = live.largest_buffer_bytes, need.largest_buffer = live.largest_buffer;
        need.buffers = f->smem.buffers;
        if (w.early && s.first && !(s.first->prev && s.first->prev->code == TIR_OP_BARRIER)) {
            /* the scratch uses before the buffers' range read their last before it writes its first */
            tir_builder b = {0};
            tir_builder_before(&b, (tir_op *)s.first);
            b.loc = s.first->loc;
            tir_build_op(&b, TIR_OP_BARRIER, 0, NULL, 0, NULL);
        }
        uint32_t bytes = lower_smem_bytes(f);
        f->dynamic_smem = bytes > CG_MAX_STATIC_SMEM ? bytes : 0;
        if (bytes <= limit) {
            if (need.longest_steps > LOWER_MAX_MOVE_STEPS) {
                /* the kernel's error, before LLVM spends minutes on the code */
                const tir_op *at = need.longest_move;
                tc_error_loc(diag, m->source_name ? m->source_name : "<tir>", at->loc,
                             "this moves a tile of %llu elements across threads through shared memory: %llu steps of "
                             "code a thread (limit is %d); use smaller tiles",
                             (unsigned long long)tir_type_numel(at->operands[0]->type),
                             (unsigned long long)need.longest_steps, LOWER_MAX_MOVE_STEPS);
                if (opt->over_limit) *opt->over_limit = true;
                ok = false;
            }
            continue;
        }
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
