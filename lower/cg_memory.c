/* cg_memory.c - global memory: predicated and vector loads and stores with their masks and
 * run-time vector tests, guarded blocks, and atomics (issued by the owners, old values shared).
 * A file of its own because it is one concern of code generation; the context and the
 * helpers the concern files share are in lower/codegen_internal.h. */
#include <stdio.h>
#include <string.h>

#include "lower/codegen_internal.h"

static LLVMValueRef ptr_bits(cg *c, LLVMValueRef p);

uint32_t floor_pow2(int64_t v) {
    uint32_t w = 1;
    while ((int64_t)w * 2 <= v) w *= 2;
    return w;
}

/* How many consecutive registers of a thread hold consecutive elements of
 * the tile's last dim, from multiples of that number: its registers along
 * the layout's fastest dim when that is the last dim (the axis analysis
 * speaks of the last dim), else 1. */
static int64_t last_dim_regs(const tir_type *t) {
    if (t->rank == 0 || (t->layout.kind != TIR_LAYOUT_BLOCKED && t->layout.kind != TIR_LAYOUT_SLICE)) return 1;
    view vw = view_of(t);
    unsigned fast = vw.l.ord[0];
    if ((int)fast == vw.sliced || view_dim(&vw, t->rank - 1) != fast) return 1;
    return vw.l.spt[fast] < vw.nreg[fast] ? vw.l.spt[fast] : vw.nreg[fast];
}

/* How many consecutive registers of this pointer tile one access covers;
 * *check_align: only if each group's address is aligned, which the
 * analysis could not prove and codegen must test at run time. */
uint32_t vec_width(cg *c, const tir_value *ptrs, bool *check_align) {
    *check_align = false;
    if (ptrs->type.rank == 0) return 1;
    if (is_mma_kind(&ptrs->type.layout)) return 1; /* fragments hold pairs at most: one access each */
    lower_axis_info ai = lower_axis_get(c->axis, ptrs);
    int64_t eb = (tir_elem_bits(tir_type_pointee(ptrs->type)) + 7) / 8;
    int64_t v = last_dim_regs(&ptrs->type);
    if (ai.contiguity < v) v = ai.contiguity;
    if (LOWER_MAX_ACCESS_BYTES / eb < v) v = LOWER_MAX_ACCESS_BYTES / eb;
    uint32_t contiguous = floor_pow2(v), proven = floor_pow2(ai.divisibility / eb < v ? ai.divisibility / eb : v);
    *check_align = proven < contiguous;
    return contiguous;
}

/* How many consecutive registers of v (from multiples of that number)
 * hold one value, by the axis analysis: its constancy along the last dim,
 * over last_dim_regs; a power of two, 1 when unknown. */
uint32_t equal_run(cg *c, const tir_value *v) {
    int64_t k = last_dim_regs(&v->type);
    int64_t constancy = lower_axis_get(c->axis, v).constancy;
    constancy &= -constancy; /* runs start at multiples of their length: a power of two dividing it keeps that */
    return floor_pow2(constancy < k ? constancy : k);
}

/* True when the address of every group of `vec` registers is aligned to the
 * group's size. */
LLVMValueRef groups_aligned(cg *c, const tir_value *ptrs, uint32_t n, uint32_t vec) {
    uint32_t bytes = vec * ((tir_elem_bits(tir_type_pointee(ptrs->type)) + 7) / 8);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(c->ctx);
    LLVMValueRef low = NULL;
    for (uint32_t r = 0; r < n; r += vec) {
        LLVMValueRef a = ptr_bits(c, reg(c, ptrs, r));
        low = low ? LLVMBuildOr(c->b, low, a, "") : a;
    }
    low = LLVMBuildAnd(c->b, low, LLVMConstInt(i64, bytes - 1, false), "");
    return LLVMBuildICmp(c->b, LLVMIntEQ, low, LLVMConstNull(i64), "");
}

LLVMBasicBlockRef new_block(cg *c, const char *name) { return LLVMAppendBasicBlockInContext(c->ctx, c->fn, name); }

/* Code only some threads run: branches to a new block `name` where `pred`
 * holds (NULL: always, no branch), where the caller builds, and
 * guard_end joins in a block `join_name`. */
void guard_begin(cg *c, LLVMValueRef pred, const char *name, const char *join_name, LLVMBasicBlockRef *join) {
    *join = NULL;
    if (!pred) return;
    LLVMBasicBlockRef then = new_block(c, name);
    *join = new_block(c, join_name);
    LLVMBuildCondBr(c->b, pred, then, *join);
    LLVMPositionBuilderAtEnd(c->b, then);
}

void guard_end(cg *c, LLVMBasicBlockRef join) {
    if (!join) return;
    LLVMBuildBr(c->b, join);
    LLVMPositionBuilderAtEnd(c->b, join);
}

/* ---- memory ------------------------------------------------------------
 * Masks that are not provably constant across a thread's run are handled
 * per op: if every lane the thread holds is on (the common case: all but
 * the last program instance), the vector accesses run; otherwise each lane
 * is a predicated PTX instruction (inline asm), which keeps the code free
 * of per-lane branches, so LLVM and ptxas stay fast. */

/* The integer type of an element's bits, and the PTX constraint letter
 * for it; false for 8-bit and 1-bit elements, which take branches. */
static bool lane_bits(cg *c, tir_elem e, LLVMTypeRef *ity, const char **cons, const char **suffix) {
    switch (tir_elem_bits(e)) {
    case 16: *ity = LLVMInt16TypeInContext(c->ctx), *cons = "h", *suffix = "b16"; return true;
    case 32: *ity = LLVMInt32TypeInContext(c->ctx), *cons = "r", *suffix = "b32"; return true;
    case 64: *ity = LLVMInt64TypeInContext(c->ctx), *cons = "l", *suffix = "b64"; return true;
    default: return false;
    }
}

LLVMValueRef inline_asm(cg *c, LLVMTypeRef ret, const char *text, const char *cons, LLVMValueRef *args,
                        unsigned nargs) {
    LLVMTypeRef *tys = nargs ? TC_NEW_ARRAY(c->arena, LLVMTypeRef, nargs) : NULL;
    for (unsigned i = 0; i < nargs; i++) tys[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef fty = LLVMFunctionType(ret, tys, nargs, false);
    /* side effects: keeps loads and stores in program order */
    LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), true, false,
                                       LLVMInlineAsmDialectATT, false);
    return LLVMBuildCall2(c->b, fty, fn, args, nargs, "");
}

static LLVMValueRef ptr_bits(cg *c, LLVMValueRef p) {
    return LLVMBuildPtrToInt(c->b, p, LLVMInt64TypeInContext(c->ctx), "");
}

/* One lane under its own predicate: `other` where the mask is off. */
LLVMValueRef predicated_load(cg *c, tir_elem e, LLVMValueRef p, LLVMValueRef m, LLVMValueRef other) {
    if (e == TIR_I1) return from_mem(c, e, predicated_load(c, TIR_I8, p, m, to_mem(c, e, other)));
    LLVMTypeRef ty = elem_type(c, e), ity;
    const char *cons, *suffix;
    if (lane_bits(c, e, &ity, &cons, &suffix)) {
        char text[64], cs[32];
        snprintf(text, sizeof text, "@$2 ld.global.%s $0, [$1];", suffix);
        snprintf(cs, sizeof cs, "=%s,l,b,0", cons);
        LLVMValueRef args[3] = {ptr_bits(c, p), m, LLVMBuildBitCast(c->b, other, ity, "")};
        return LLVMBuildBitCast(c->b, inline_asm(c, ity, text, cs, args, 3), ty, "");
    }
    /* bytes: a branch around a plain load */
    LLVMBasicBlockRef from = LLVMGetInsertBlock(c->b), ld = new_block(c, "ld.lane"), next = new_block(c, "ld.next");
    LLVMBuildCondBr(c->b, m, ld, next);
    LLVMPositionBuilderAtEnd(c->b, ld);
    LLVMValueRef v = LLVMBuildLoad2(c->b, ty, p, "");
    LLVMBuildBr(c->b, next);
    LLVMPositionBuilderAtEnd(c->b, next);
    LLVMValueRef phi = LLVMBuildPhi(c->b, ty, "");
    LLVMValueRef in_v[2] = {v, other};
    LLVMBasicBlockRef in_b[2] = {ld, from};
    LLVMAddIncoming(phi, in_v, in_b, 2);
    return phi;
}

static void predicated_store(cg *c, tir_elem e, LLVMValueRef p, LLVMValueRef v, LLVMValueRef m) {
    if (e == TIR_I1) {
        predicated_store(c, TIR_I8, p, to_mem(c, e, v), m);
        return;
    }
    LLVMTypeRef ity;
    const char *cons, *suffix;
    if (lane_bits(c, e, &ity, &cons, &suffix)) {
        char text[64], cs[32];
        snprintf(text, sizeof text, "@$2 st.global.%s [$0], $1;", suffix);
        snprintf(cs, sizeof cs, "l,%s,b", cons);
        LLVMValueRef args[3] = {ptr_bits(c, p), LLVMBuildBitCast(c->b, v, ity, ""), m};
        inline_asm(c, LLVMVoidTypeInContext(c->ctx), text, cs, args, 3);
        return;
    }
    LLVMBasicBlockRef st = new_block(c, "st.lane"), next = new_block(c, "st.next");
    LLVMBuildCondBr(c->b, m, st, next);
    LLVMPositionBuilderAtEnd(c->b, st);
    LLVMBuildStore(c->b, v, p);
    LLVMBuildBr(c->b, next);
    LLVMPositionBuilderAtEnd(c->b, next);
}

/* A run of `vec` registers from r as one predicated access of its whole
 * width (2 to LOWER_MAX_ACCESS_BYTES bytes): b16, b32, or a vector of two
 * or four b32 words, the form the PTX ISA gives a 4-, 8- or 16-byte
 * access; the registers packed into the words little-end first, as memory
 * holds them. Inline asm rather than a branch around a plain load: LLVM's
 * GVN walks back through every earlier branch for each load, which made
 * a kernel with hundreds of masked accesses a thread compile in time
 * quadratic in them (35 s for one kernel, fuzz seed 118), and ptxas turns
 * the branch into this same predicated instruction. */
typedef struct run_asm {
    unsigned words;      /* registers of the asm: 1, 2 or 4 */
    LLVMTypeRef word;    /* i16 (a 2-byte run), else i32 */
    const char *ld, *ld_cons, *st, *st_cons;
} run_asm;

static run_asm run_asm_of(cg *c, unsigned bytes) {
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c->ctx);
    switch (bytes) {
    case 2: return (run_asm){1, LLVMInt16TypeInContext(c->ctx), "@$2 ld.global.b16 $0, [$1];", "=h,l,b,0",
                             "@$2 st.global.b16 [$0], $1;", "l,h,b"};
    case 4: return (run_asm){1, i32, "@$2 ld.global.b32 $0, [$1];", "=r,l,b,0", "@$2 st.global.b32 [$0], $1;", "l,r,b"};
    case 8:
        return (run_asm){2, i32, "@$3 ld.global.v2.b32 {$0, $1}, [$2];", "=r,=r,l,b,0,1",
                         "@$3 st.global.v2.b32 [$0], {$1, $2};", "l,r,r,b"};
    default:
        return (run_asm){4, i32, "@$5 ld.global.v4.b32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l,b,0,1,2,3",
                         "@$5 st.global.v4.b32 [$0], {$1, $2, $3, $4};", "l,r,r,r,r,b"};
    }
}

/* vals[0..vec) of element e as the asm's words (to_words) and back. */
static void to_words(cg *c, tir_elem e, const LLVMValueRef *vals, uint32_t vec, const run_asm *a, LLVMValueRef *w) {
    LLVMValueRef v = LLVMGetUndef(LLVMVectorType(mem_type(c, e), vec));
    for (uint32_t i = 0; i < vec; i++) v = LLVMBuildInsertElement(c->b, v, to_mem(c, e, vals[i]), i32c(c, i), "");
    if (a->words == 1) {
        w[0] = LLVMBuildBitCast(c->b, v, a->word, "");
        return;
    }
    v = LLVMBuildBitCast(c->b, v, LLVMVectorType(a->word, a->words), "");
    for (unsigned k = 0; k < a->words; k++) w[k] = LLVMBuildExtractElement(c->b, v, i32c(c, k), "");
}

static void from_words(cg *c, tir_elem e, LLVMValueRef *w, uint32_t vec, const run_asm *a, LLVMValueRef *out) {
    LLVMValueRef v = w[0];
    if (a->words > 1) {
        v = LLVMGetUndef(LLVMVectorType(a->word, a->words));
        for (unsigned k = 0; k < a->words; k++) v = LLVMBuildInsertElement(c->b, v, w[k], i32c(c, k), "");
    }
    v = LLVMBuildBitCast(c->b, v, LLVMVectorType(mem_type(c, e), vec), "");
    for (uint32_t i = 0; i < vec; i++) out[i] = from_mem(c, e, LLVMBuildExtractElement(c->b, v, i32c(c, i), ""));
}

/* out[0..vec) = the run at p where m is on, else other[0..vec). */
static void predicated_run_load(cg *c, tir_elem e, LLVMValueRef p, uint32_t vec, LLVMValueRef m,
                                const LLVMValueRef *other, LLVMValueRef *out) {
    run_asm a = run_asm_of(c, vec * ((tir_elem_bits(e) + 7) / 8));
    LLVMValueRef args[2 + 4], w[4];
    args[0] = ptr_bits(c, p), args[1] = m;
    to_words(c, e, other, vec, &a, args + 2);
    LLVMTypeRef ret = a.word;
    if (a.words > 1) {
        LLVMTypeRef fields[4] = {a.word, a.word, a.word, a.word};
        ret = LLVMStructTypeInContext(c->ctx, fields, a.words, false);
    }
    LLVMValueRef r = inline_asm(c, ret, a.ld, a.ld_cons, args, 2 + a.words);
    for (unsigned k = 0; k < a.words; k++) w[k] = a.words > 1 ? LLVMBuildExtractValue(c->b, r, k, "") : r;
    from_words(c, e, w, vec, &a, out);
}

/* The run of `vec` registers of val from r at p, where m is on. */
static void predicated_run_store(cg *c, tir_elem e, LLVMValueRef p, const tir_value *val, uint32_t r, uint32_t vec,
                                 LLVMValueRef m) {
    run_asm a = run_asm_of(c, vec * ((tir_elem_bits(e) + 7) / 8));
    LLVMValueRef vals[LOWER_MAX_ACCESS_BYTES], args[1 + 4 + 1];
    for (uint32_t i = 0; i < vec; i++) vals[i] = reg(c, val, r + i);
    args[0] = ptr_bits(c, p);
    to_words(c, e, vals, vec, &a, args + 1);
    args[1 + a.words] = m;
    inline_asm(c, LLVMVoidTypeInContext(c->ctx), a.st, a.st_cons, args, 2 + a.words);
}

/* The address of register r of a tile of pointers whose runs of `vec`
 * registers are consecutive elements (vec_width): the run's first
 * address plus r's place in it. A slow path lane by lane then needs only
 * the pointers the fast path uses, not a live register for every element
 * (32 of 64 bits each for a 128x32 operand tile a thread copies). */
LLVMValueRef lane_ptr(cg *c, const tir_value *ptrs, uint32_t r, uint32_t vec) {
    if (vec <= 1 || r % vec == 0) return reg(c, ptrs, r);
    LLVMValueRef at = i32c(c, r % vec);
    return LLVMBuildGEP2(c->b, mem_type(c, tir_type_pointee(ptrs->type)), reg(c, ptrs, r - r % vec), &at, 1, "");
}

/* Plain (unmasked) vector load of `vec` registers starting at r. */
static void vector_load(cg *c, const tir_value *ptrs, tir_elem e, uint32_t r, uint32_t vec, LLVMValueRef *out) {
    LLVMTypeRef ty = mem_type(c, e);
    unsigned eb = (tir_elem_bits(e) + 7) / 8;
    if (vec == 1) {
        LLVMValueRef v = LLVMBuildLoad2(c->b, ty, reg(c, ptrs, r), "");
        LLVMSetAlignment(v, eb);
        out[0] = from_mem(c, e, v);
        return;
    }
    LLVMValueRef v = LLVMBuildLoad2(c->b, LLVMVectorType(ty, vec), reg(c, ptrs, r), "");
    LLVMSetAlignment(v, eb * vec);
    for (uint32_t i = 0; i < vec; i++) out[i] = from_mem(c, e, LLVMBuildExtractElement(c->b, v, i32c(c, i), ""));
}

static void vector_store(cg *c, const tir_value *ptrs, const tir_value *val, uint32_t r, uint32_t vec) {
    tir_elem e = tir_type_elem(val->type);
    unsigned eb = (tir_elem_bits(e) + 7) / 8;
    LLVMValueRef x = to_mem(c, e, reg(c, val, r));
    if (vec > 1) {
        x = LLVMGetUndef(LLVMVectorType(mem_type(c, e), vec));
        for (uint32_t i = 0; i < vec; i++)
            x = LLVMBuildInsertElement(c->b, x, to_mem(c, e, reg(c, val, r + i)), i32c(c, i), "");
    }
    LLVMSetAlignment(LLVMBuildStore(c->b, x, reg(c, ptrs, r)), eb * vec);
}

/* Branches on `all`: the fast block runs with every lane on, the slow one
 * lane by lane; returns both blocks and leaves the builder in the fast one. */
void split_on(cg *c, LLVMValueRef all, LLVMBasicBlockRef *fast, LLVMBasicBlockRef *slow,
                     LLVMBasicBlockRef *join) {
    *fast = new_block(c, "mem.all");
    *slow = new_block(c, "mem.lanes");
    *join = new_block(c, "mem.join");
    LLVMBuildCondBr(c->b, all, *fast, *slow);
    LLVMPositionBuilderAtEnd(c->b, *fast);
}

/* The number of leading true lanes, as an i32, of the run of `vec`
 * registers from r of i1 tile m, when the run is proven a prefix pattern
 * (true up to some lane, false after); NULL when it is not. Proven: a run
 * the axis analysis finds constant (vec or 0); `x < y` and `x <= y` (or
 * `y > x`, `y >= x`) on integers where x is consecutive along the run and
 * y constant over it (y - x0 lanes, clamped to 0..vec: the K tail and
 * the edge columns of a tile); `and` and `or` of such runs (the shorter
 * and the longer prefix); a broadcast that keeps the last dim (the run's
 * lanes are its operand's). So a masked async_copy issues one cp.async per
 * run, src-size covering the prefix and the rest zero-filled, where the
 * lane-by-lane path would need every lane's mask and pointer live. */
static LLVMValueRef run_count(cg *c, const tir_value *m, uint32_t r, uint32_t vec, int depth) {
    if (lower_axis_get(c->axis, m).constancy >= vec)
        return LLVMBuildSelect(c->b, reg(c, m, r), i32c(c, vec), i32c(c, 0), "");
    const tir_op *op = m->def;
    if (!op || depth > LOWER_MAX_MASK_DEPTH || m->type.layout.kind != TIR_LAYOUT_BLOCKED) return NULL;
    switch (op->code) {
    case TIR_OP_AND:
    case TIR_OP_OR: {
        LLVMValueRef a = run_count(c, op->operands[0], r, vec, depth + 1);
        LLVMValueRef b = a ? run_count(c, op->operands[1], r, vec, depth + 1) : NULL;
        if (!b) return NULL;
        LLVMValueRef a_less = LLVMBuildICmp(c->b, LLVMIntULT, a, b, "");
        return op->code == TIR_OP_AND ? LLVMBuildSelect(c->b, a_less, a, b, "") : LLVMBuildSelect(c->b, a_less, b, a, "");
    }
    case TIR_OP_PERMUTE:
        /* a permute that only renames registers (stage_operands' turned
         * rings: the copy's runs are its operand's runs along its last
         * dim, gen_async_copy's runs_of) has its operand's run counts,
         * where the operand's registers run along its own last dim (the
         * facts run_count reads are about that dim; an operand in a
         * permuted layout runs along another: found in review) */
        if (move_needs_scratch(op) || last_dim_regs(&op->operands[0]->type) < vec) return NULL;
        return run_count(c, op->operands[0], r, vec, depth + 1);
    case TIR_OP_BROADCAST: {
        const tir_value *x = op->operands[0];
        if (x->type.shape[x->type.rank - 1] != m->type.shape[m->type.rank - 1] ||
            x->type.layout.kind != TIR_LAYOUT_BLOCKED)
            return NULL;
        return run_count(c, x, broadcast_source_reg(&x->type, &m->type, r), vec, depth + 1);
    }
    case TIR_OP_LT: case TIR_OP_LE: case TIR_OP_GT: case TIR_OP_GE: {
        const tir_value *x = op->operands[0], *y = op->operands[1];
        if (!tir_elem_is_int(tir_type_elem(x->type)) || x->type.elem == TIR_I1) return NULL;
        bool lt = op->code == TIR_OP_LT || op->code == TIR_OP_GT;
        if (op->code == TIR_OP_GT || op->code == TIR_OP_GE) { /* y > x: x < y */
            const tir_value *t = x;
            x = y, y = t;
        }
        if (lower_axis_get(c->axis, x).contiguity < vec || lower_axis_get(c->axis, y).constancy < vec) return NULL;
        /* lanes x0 + i < y0 (or <=) for i < vec: y0 - x0 of them (+1),
         * none when x0 >= y0 (>); the difference, unsigned, cannot wrap
         * where it is used */
        LLVMValueRef x0 = reg(c, x, r), y0 = reg(c, y, r);
        LLVMValueRef some = LLVMBuildICmp(c->b, lt ? LLVMIntSLT : LLVMIntSLE, x0, y0, "");
        LLVMValueRef diff = LLVMBuildSub(c->b, y0, x0, "");
        LLVMTypeRef ty = LLVMTypeOf(diff);
        LLVMValueRef cap = LLVMConstInt(ty, lt ? vec : vec - 1, false);
        LLVMValueRef n = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntULT, diff, cap, ""), diff, cap, "");
        n = LLVMBuildIntCast2(c->b, n, LLVMInt32TypeInContext(c->ctx), false, "");
        if (!lt) n = LLVMBuildAdd(c->b, n, i32c(c, 1), "");
        return LLVMBuildSelect(c->b, some, n, i32c(c, 0), "");
    }
    default: return NULL;
    }
}

/* The lanes of mask tile `mask` over an access in runs of `vec` registers
 * (vec_width): where every run has a prefix count (run_count), lane r is
 * r's place in its run below the count, so one value per run stays live
 * rather than every lane, and count[r] holds the count at each run's
 * first register r (a run's last lane on then means all of it is); else
 * the mask's own registers, and count[0] is NULL. */
LLVMValueRef *mask_lanes(cg *c, const tir_value *mask, uint32_t n, uint32_t vec, LLVMValueRef *count) {
    LLVMValueRef *lane = TC_NEW_ARRAY(c->arena, LLVMValueRef, n);
    bool all = vec > 1;
    for (uint32_t r = 0; r < n && all; r += vec) all = (count[r] = run_count(c, mask, r, vec, 0)) != NULL;
    if (all) {
        for (uint32_t r = 0; r < n; r += vec)
            for (uint32_t i = 0; i < vec; i++) lane[r + i] = LLVMBuildICmp(c->b, LLVMIntULT, i32c(c, i), count[r], "");
        return lane;
    }
    count[0] = NULL;
    for (uint32_t r = 0; r < n; r++) lane[r] = reg(c, mask, r);
    return lane;
}

void gen_load(cg *c, const tir_op *op) {
    const tir_value *ptrs = op->operands[0], *res = op->results[0];
    const tir_value *mask = op->noperands > 1 ? op->operands[1] : NULL;
    tir_elem e = tir_type_elem(res->type);
    LLVMTypeRef ty = elem_type(c, e);
    bool check_align;
    uint32_t vec = vec_width(c, ptrs, &check_align);
    LLVMValueRef *out = new_regs(c, res);
    uint32_t n = c->nregs[res->id];
    if (!mask && !check_align) {
        for (uint32_t r = 0; r < n; r += vec) vector_load(c, ptrs, e, r, vec, out + r);
        return;
    }
    LLVMValueRef *other = TC_NEW_ARRAY(c->arena, LLVMValueRef, n);
    for (uint32_t r = 0; r < n; r++) other[r] = op->noperands > 2 ? reg(c, op->operands[2], r) : LLVMConstNull(ty);
    if (vec == 1) { /* nothing to vectorize: every lane predicated */
        for (uint32_t r = 0; r < n; r++) out[r] = predicated_load(c, e, reg(c, ptrs, r), reg(c, mask, r), other[r]);
        return;
    }
    if (mask && !check_align && equal_run(c, mask) >= vec) { /* one bit per access: each access predicated */
        for (uint32_t r = 0; r < n; r += vec) predicated_run_load(c, e, reg(c, ptrs, r), vec, reg(c, mask, r), other + r, out + r);
        return;
    }
    LLVMValueRef *count = TC_NEW_ARRAY(c->arena, LLVMValueRef, n);
    LLVMValueRef *m = mask ? mask_lanes(c, mask, n, vec, count) : NULL;
    bool prefix = m && count[0];
    LLVMValueRef all = check_align ? groups_aligned(c, ptrs, n, vec) : NULL;
    for (uint32_t r = prefix ? vec - 1 : 0; m && r < n; r += prefix ? vec : 1)
        all = all ? LLVMBuildAnd(c->b, all, m[r], "") : m[r];
    LLVMBasicBlockRef fast, slow, join;
    split_on(c, all, &fast, &slow, &join);
    LLVMValueRef *vals = TC_NEW_ARRAY(c->arena, LLVMValueRef, n);
    for (uint32_t r = 0; r < n; r += vec) vector_load(c, ptrs, e, r, vec, vals + r);
    LLVMBuildBr(c->b, join);
    LLVMPositionBuilderAtEnd(c->b, slow);
    LLVMValueRef *lanes = TC_NEW_ARRAY(c->arena, LLVMValueRef, n);
    for (uint32_t r = 0; r < n; r++) {
        LLVMValueRef p = lane_ptr(c, ptrs, r, vec);
        if (mask) {
            lanes[r] = predicated_load(c, e, p, m[r], other[r]);
        } else {
            LLVMValueRef v = LLVMBuildLoad2(c->b, mem_type(c, e), p, "");
            LLVMSetAlignment(v, (tir_elem_bits(e) + 7) / 8);
            lanes[r] = from_mem(c, e, v);
        }
    }
    LLVMBasicBlockRef slow_end = LLVMGetInsertBlock(c->b);
    LLVMBuildBr(c->b, join);
    LLVMPositionBuilderAtEnd(c->b, join);
    for (uint32_t r = 0; r < n; r++) {
        LLVMValueRef phi = LLVMBuildPhi(c->b, ty, "");
        LLVMValueRef in_v[2] = {vals[r], lanes[r]};
        LLVMBasicBlockRef in_b[2] = {fast, slow_end};
        LLVMAddIncoming(phi, in_v, in_b, 2);
        out[r] = phi;
    }
}

/* True in the one thread that handles each element of a tile of this type
 * (stores it, updates it atomically, prints or asserts it): over a layout
 * that replicates elements, the first thread holding each; for a scalar,
 * thread 0. NULL when every thread's elements are its own. */
LLVMValueRef element_owner(cg *c, const tir_type *t) {
    if (!t->rank) return LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, i32c(c, 0), "");
    if (!is_rank1_blocked(t)) return first_holder(c, t);
    uint32_t spt = t->layout.spt[0], cover = spt * 32u * (uint32_t)c->f->num_warps;
    if (t->shape[0] >= cover) return NULL;
    return LLVMBuildICmp(c->b, LLVMIntULT, LLVMBuildMul(c->b, c->tid, i32c(c, spt), ""), i32c(c, t->shape[0]), "");
}

void gen_store(cg *c, const tir_op *op) {
    const tir_value *ptrs = op->operands[0], *val = op->operands[1];
    const tir_value *mask = op->noperands > 2 ? op->operands[2] : NULL;
    tir_elem e = tir_type_elem(val->type);
    bool check_align;
    uint32_t vec = vec_width(c, ptrs, &check_align);
    uint32_t n = reg_count(&ptrs->type);
    LLVMValueRef owner = element_owner(c, &ptrs->type);
    if (mask && !check_align && vec > 1 && equal_run(c, mask) >= vec) { /* as in gen_load */
        for (uint32_t r = 0; r < n; r += vec) {
            LLVMValueRef on = reg(c, mask, r);
            if (owner) on = LLVMBuildAnd(c->b, on, owner, "");
            predicated_run_store(c, e, reg(c, ptrs, r), val, r, vec, on);
        }
        return;
    }
    LLVMValueRef *count = TC_NEW_ARRAY(c->arena, LLVMValueRef, n);
    LLVMValueRef *lanes = mask ? mask_lanes(c, mask, n, vec, count) : NULL;
    bool prefix = lanes && count[0];
    LLVMValueRef *m = TC_NEW_ARRAY(c->arena, LLVMValueRef, n);
    for (uint32_t r = 0; r < n; r++) {
        m[r] = lanes ? lanes[r] : NULL;
        if (owner) m[r] = m[r] ? LLVMBuildAnd(c->b, m[r], owner, "") : owner;
    }
    if (!m[0] && !check_align) {
        for (uint32_t r = 0; r < n; r += vec) vector_store(c, ptrs, val, r, vec);
        return;
    }
    if (vec == 1) {
        for (uint32_t r = 0; r < n; r++) predicated_store(c, e, reg(c, ptrs, r), reg(c, val, r), m[r]);
        return;
    }
    LLVMValueRef all = check_align ? groups_aligned(c, ptrs, n, vec) : NULL;
    for (uint32_t r = prefix ? vec - 1 : 0; m[0] && r < n; r += prefix ? vec : 1)
        all = all ? LLVMBuildAnd(c->b, all, m[r], "") : m[r];
    LLVMBasicBlockRef fast, slow, join;
    split_on(c, all, &fast, &slow, &join);
    for (uint32_t r = 0; r < n; r += vec) vector_store(c, ptrs, val, r, vec);
    LLVMBuildBr(c->b, join);
    LLVMPositionBuilderAtEnd(c->b, slow);
    for (uint32_t r = 0; r < n; r++) {
        LLVMValueRef p = lane_ptr(c, ptrs, r, vec);
        if (m[r]) {
            predicated_store(c, e, p, reg(c, val, r), m[r]);
        } else {
            LLVMSetAlignment(LLVMBuildStore(c->b, to_mem(c, e, reg(c, val, r)), p), (tir_elem_bits(e) + 7) / 8);
        }
    }
    LLVMBuildBr(c->b, join);
    LLVMPositionBuilderAtEnd(c->b, join);
}

/* ---- atomics ------------------------------------------------------------------
 * Every element is one atomic, issued by the thread that owns it (the
 * owner rule of stores: over a layout that replicates elements, the first
 * thread holding each; for a scalar, thread 0); masked-off lanes and the
 * other holders branch around it. Where the layout replicates and the old
 * values are used, the owners then hand them to the other holders through
 * the scratch area (write, barrier, read). That beats asking the layout
 * pass for a layout without copies, which a tile smaller than the threads
 * of an instance cannot have.
 *
 * The atomics are LLVM atomicrmw and cmpxchg, monotonic, which NVPTX turns
 * into atom.global (relaxed, gpu scope). acq_rel comes from a
 * fence.acq_rel.gpu before and after the op's atomics (inline asm: LLVM
 * 19's NVPTX drops the ordering of an acq_rel atomicrmw and cannot select
 * `fence`), which makes each a release and an acquire at gpu scope, as
 * Triton's default atom.acq_rel.gpu. Float max and min are a cmpxchg loop
 * around llvm.maximum / llvm.minimum, so NaN and signed zeros behave as the
 * max and min ops (atomicrmw fmax would ignore NaN); cas compares bits. */

bool is_atomic(tir_opcode code) {
    return code == TIR_OP_ATOMIC_ADD || code == TIR_OP_ATOMIC_MAX || code == TIR_OP_ATOMIC_MIN ||
           code == TIR_OP_ATOMIC_XCHG || code == TIR_OP_ATOMIC_CAS;
}

/* Whether some element of a tile of this type is held by several threads
 * (a scalar is held by all). */
static bool replicates(const tir_type *t) {
    if (!t->rank || is_mma_kind(&t->layout)) return true; /* mma and dot_op: may (a is copied over warps) */
    view v = view_of(t);
    for (unsigned d = 0; d < v.rank; d++)
        if (v.shape[d] < v.cover[d]) return true;
    return false;
}

/* Scratch bytes an atomic needs to hand its old values from the owners to
 * the other holders: 0 when nobody else holds them or nobody uses them. */
uint32_t atomic_scratch(const tir_func *f, const tir_op *op) {
    const tir_value *res = op->results[0];
    if (!replicates(&res->type) || !tir_value_has_uses(f, res)) return 0;
    return (uint32_t)tir_type_numel(res->type) * scratch_elem_bytes(tir_type_elem(res->type));
}

static void fence_acq_rel_gpu(cg *c) {
    inline_asm(c, LLVMVoidTypeInContext(c->ctx), "fence.acq_rel.gpu;", "~{memory}", NULL, 0);
}

/* new = maximum(old, v) (or minimum) by compare-and-swap on the bits until
 * no other thread got in between; gives the old value. */
static LLVMValueRef float_cas_loop(cg *c, tir_opcode code, tir_elem e, LLVMValueRef p, LLVMValueRef v) {
    LLVMTypeRef ty = elem_type(c, e), ity = LLVMIntTypeInContext(c->ctx, tir_elem_bits(e));
    LLVMValueRef guess = LLVMBuildLoad2(c->b, ity, p, ""); /* any guess is right; a fresh one saves a trip */
    LLVMSetVolatile(guess, true);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b), loop = new_block(c, "atom.cas"), done = new_block(c, "atom.done");
    LLVMBuildBr(c->b, loop);
    LLVMPositionBuilderAtEnd(c->b, loop);
    LLVMValueRef cur = LLVMBuildPhi(c->b, ity, "");
    LLVMAddIncoming(cur, &guess, &pre, 1);
    LLVMValueRef args[2] = {LLVMBuildBitCast(c->b, cur, ty, ""), v};
    LLVMValueRef next = intrinsic(c, code == TIR_OP_ATOMIC_MAX ? "llvm.maximum" : "llvm.minimum", ty, args, 2);
    LLVMValueRef pair = LLVMBuildAtomicCmpXchg(c->b, p, cur, LLVMBuildBitCast(c->b, next, ity, ""),
                                               LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, false);
    LLVMValueRef seen = LLVMBuildExtractValue(c->b, pair, 0, "");
    LLVMAddIncoming(cur, &seen, &loop, 1);
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, seen, cur, ""), done, loop);
    LLVMPositionBuilderAtEnd(c->b, done);
    return args[0];
}

/* One element's atomic; gives the old value. cmp: atomic_cas's. */
static LLVMValueRef atomic_elem(cg *c, tir_opcode code, tir_elem e, LLVMValueRef p, LLVMValueRef v, LLVMValueRef cmp) {
    bool fl = tir_elem_is_float(e);
    LLVMAtomicRMWBinOp rmw;
    switch (code) {
    case TIR_OP_ATOMIC_ADD: rmw = fl ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd; break;
    case TIR_OP_ATOMIC_MAX:
    case TIR_OP_ATOMIC_MIN:
        if (fl) return float_cas_loop(c, code, e, p, v);
        rmw = code == TIR_OP_ATOMIC_MAX ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpMin; /* signed */
        break;
    case TIR_OP_ATOMIC_XCHG: rmw = LLVMAtomicRMWBinOpXchg; break;
    default: { /* cas, on the bits */
        LLVMTypeRef ity = LLVMIntTypeInContext(c->ctx, tir_elem_bits(e));
        LLVMValueRef pair = LLVMBuildAtomicCmpXchg(c->b, p, LLVMBuildBitCast(c->b, cmp, ity, ""),
                                                   LLVMBuildBitCast(c->b, v, ity, ""), LLVMAtomicOrderingMonotonic,
                                                   LLVMAtomicOrderingMonotonic, false);
        return LLVMBuildBitCast(c->b, LLVMBuildExtractValue(c->b, pair, 0, ""), elem_type(c, e), "");
    }
    }
    return LLVMBuildAtomicRMW(c->b, rmw, p, v, LLVMAtomicOrderingMonotonic, false);
}

/* Old values, owned or not, from the owners: each owner writes its
 * registers at their row-major index, a barrier, every thread reads. */
static void share_from_owners(cg *c, const tir_value *res, LLVMValueRef owner, LLVMValueRef *old) {
    tir_elem e = tir_type_elem(res->type);
    unsigned eb = scratch_elem_bytes(e);
    uint32_t n = c->nregs[res->id];
    barrier(c); /* the scratch area's last readers are done */
    LLVMBasicBlockRef after;
    guard_begin(c, owner, "atom.share", "atom.shared", &after);
    LLVMValueRef *at = TC_NEW_ARRAY(c->arena, LLVMValueRef, n);
    for (uint32_t r = 0; r < n; r++) {
        at[r] = smem_at(c, LLVMBuildAdd(c->b, i32c(c, c->scratch),
                                        LLVMBuildMul(c->b, linear_index(c, &res->type, r), i32c(c, eb), ""), ""));
        LLVMSetAlignment(LLVMBuildStore(c->b, old[r], at[r]), eb);
    }
    guard_end(c, after);
    barrier(c);
    for (uint32_t r = 0; r < n; r++) {
        LLVMValueRef where = smem_at(c, LLVMBuildAdd(c->b, i32c(c, c->scratch),
                                                     LLVMBuildMul(c->b, linear_index(c, &res->type, r), i32c(c, eb), ""), ""));
        old[r] = LLVMBuildLoad2(c->b, elem_type(c, e), where, "");
        LLVMSetAlignment(old[r], eb);
    }
}

void gen_atomic(cg *c, const tir_op *op) {
    const tir_value *ptrs = op->operands[0], *res = op->results[0];
    uint32_t nvals = op->code == TIR_OP_ATOMIC_CAS ? 2 : 1;
    const tir_value *val = op->operands[nvals], *cmp = nvals == 2 ? op->operands[1] : NULL;
    const tir_value *mask = op->noperands > 1 + nvals ? op->operands[1 + nvals] : NULL;
    tir_elem e = tir_type_elem(res->type);
    if (!tir_atomic_supports(op->code, e)) { /* the verifier says so too */
        cg_error(c, op, "this atomic does not support its element type");
        return;
    }
    LLVMValueRef owner = element_owner(c, &ptrs->type);
    LLVMValueRef *old = new_regs(c, res);
    fence_acq_rel_gpu(c);
    for (uint32_t r = 0; r < c->nregs[res->id]; r++) {
        LLVMValueRef on = mask ? reg(c, mask, r) : NULL;
        if (owner) on = on ? LLVMBuildAnd(c->b, on, owner, "") : owner;
        LLVMValueRef p = reg(c, ptrs, r), v = reg(c, val, r), k = cmp ? reg(c, cmp, r) : NULL;
        if (!on) {
            old[r] = atomic_elem(c, op->code, e, p, v, k);
            continue;
        }
        /* off: no memory touched, and 0 */
        LLVMBasicBlockRef from = LLVMGetInsertBlock(c->b), lane = new_block(c, "atom.lane"), next = new_block(c, "atom.next");
        LLVMBuildCondBr(c->b, on, lane, next);
        LLVMPositionBuilderAtEnd(c->b, lane);
        LLVMValueRef got = atomic_elem(c, op->code, e, p, v, k);
        LLVMBasicBlockRef lane_end = LLVMGetInsertBlock(c->b); /* a cas loop ends elsewhere */
        LLVMBuildBr(c->b, next);
        LLVMPositionBuilderAtEnd(c->b, next);
        old[r] = LLVMBuildPhi(c->b, elem_type(c, e), "");
        LLVMValueRef in_v[2] = {got, LLVMConstNull(elem_type(c, e))};
        LLVMBasicBlockRef in_b[2] = {lane_end, from};
        LLVMAddIncoming(old[r], in_v, in_b, 2);
    }
    fence_acq_rel_gpu(c);
    if (owner && atomic_scratch(c->f, op)) share_from_owners(c, res, owner, old);
}
