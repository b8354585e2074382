/* ir.c - building and editing tile IR: modules, functions, blocks, ops.
 *
 * Ops sit in doubly linked lists inside blocks; a loop op owns one body
 * block. There are no use lists: kernels are small, so "replace all uses"
 * walks the function, which keeps every edit trivially consistent. */
#include <string.h>

#include "tileir/tileir.h"

tir_module *tir_module_new(tc_arena *arena, const char *source_name) {
    tir_module *m = TC_NEW(arena, tir_module);
    m->arena = arena;
    m->source_name = source_name ? tc_arena_strdup(arena, source_name) : NULL;
    return m;
}

static tir_block *block_new(tir_func *f, tir_op *parent) {
    tir_block *b = TC_NEW(f->module->arena, tir_block);
    b->func = f;
    b->parent = parent;
    return b;
}

tir_func *tir_func_new(tir_module *m, const char *name, tc_loc loc) {
    tir_func *f = TC_NEW(m->arena, tir_func);
    f->name = tc_arena_strdup(m->arena, name);
    f->module = m;
    f->loc = loc;
    f->body = block_new(f, NULL);
    if (m->last_func)
        m->last_func->next = f;
    else
        m->funcs = f;
    m->last_func = f;
    m->nfuncs++;
    return f;
}

int tir_func_add_tmap(tir_func *f, const tir_tmap *m) {
    for (uint32_t i = 0; i < f->ntmaps; i++)
        if (!memcmp(&f->tmaps[i], m, sizeof *m)) return (int)i;
    if (f->ntmaps == TIR_MAX_TMAPS) return -1;
    tir_tmap *n = TC_NEW_ARRAY(f->module->arena, tir_tmap, f->ntmaps + 1);
    if (f->ntmaps) memcpy(n, f->tmaps, sizeof *n * f->ntmaps);
    n[f->ntmaps] = *m;
    f->tmaps = n;
    return (int)f->ntmaps++;
}

int64_t tir_tmap_term_value(tir_tmap_term t, const int64_t *ints) {
    return t.param == TIR_TMAP_CONST ? t.scale : t.scale * ints[t.param];
}

tir_func *tir_module_find(const tir_module *m, const char *name) {
    for (tir_func *f = m->funcs; f; f = f->next)
        if (!strcmp(f->name, name)) return f;
    return NULL;
}

static tir_value *value_new(tir_func *f, tir_type t, const char *name) {
    tir_value *v = TC_NEW(f->module->arena, tir_value);
    v->id = f->next_value_id++;
    v->type = t;
    v->name = name ? tc_arena_strdup(f->module->arena, name) : NULL;
    return v;
}

/* Arrays grow by doubling into fresh arena memory; the old copy is simply
 * left behind (the arena frees it with everything else). */
static void **grow(tc_arena *a, void **arr, uint32_t n) {
    /* capacity is max(4, the next power of two >= n): full at 4, 8, 16 ... */
    if (n == 0) return TC_NEW_ARRAY(a, void *, 4);
    if (n < 4 || (n & (n - 1))) return arr;
    void **p = TC_NEW_ARRAY(a, void *, (size_t)n * 2);
    memcpy(p, arr, sizeof(void *) * n);
    return p;
}

tir_value *tir_func_add_param(tir_func *f, tir_type t, const char *name) {
    tir_value *v = value_new(f, t, name);
    v->index = f->nparams;
    f->params = (tir_value **)grow(f->module->arena, (void **)f->params, f->nparams);
    f->params[f->nparams++] = v;
    return v;
}

tir_value *tir_block_add_arg(tir_block *b, tir_type t, const char *name) {
    tir_value *v = value_new(b->func, t, name);
    v->block = b;
    v->index = b->nargs;
    b->args = (tir_value **)grow(b->func->module->arena, (void **)b->args, b->nargs);
    b->args[b->nargs++] = v;
    return v;
}

void tir_builder_at_end(tir_builder *b, tir_block *blk) {
    b->block = blk;
    b->func = blk->func;
    b->module = blk->func->module;
    b->before = NULL;
}

void tir_builder_before(tir_builder *b, tir_op *op) {
    b->block = op->parent;
    b->func = op->parent->func;
    b->module = b->func->module;
    b->before = op;
}

static void insert(tir_builder *b, tir_op *op) {
    tir_block *blk = b->block;
    op->parent = blk;
    if (b->before) {
        op->next = b->before;
        op->prev = b->before->prev;
        if (op->prev)
            op->prev->next = op;
        else
            blk->first = op;
        b->before->prev = op;
    } else {
        op->prev = blk->last;
        if (blk->last)
            blk->last->next = op;
        else
            blk->first = op;
        blk->last = op;
    }
}

tir_op *tir_build_op(tir_builder *b, tir_opcode code, uint32_t noperands, tir_value *const *operands,
                     uint32_t nresults, const tir_type *result_types) {
    tc_arena *a = b->module->arena;
    tir_op *op = TC_NEW(a, tir_op);
    op->code = code;
    op->loc = b->loc;
    op->noperands = noperands;
    op->operands = TC_NEW_ARRAY(a, tir_value *, noperands + 1);
    for (uint32_t i = 0; i < noperands; i++) op->operands[i] = operands[i];
    op->nresults = nresults;
    op->results = TC_NEW_ARRAY(a, tir_value *, nresults + 1);
    for (uint32_t i = 0; i < nresults; i++) {
        tir_value *v = value_new(b->func, result_types[i], NULL);
        v->def = op;
        v->index = i;
        op->results[i] = v;
    }
    insert(b, op);
    return op;
}

tir_value *tir_build1(tir_builder *b, tir_opcode code, tir_type result, uint32_t noperands,
                      tir_value *const *operands) {
    return tir_build_op(b, code, noperands, operands, 1, &result)->results[0];
}

tir_value *tir_build_const_int(tir_builder *b, tir_type t, int64_t v) {
    tir_value *r = tir_build1(b, TIR_OP_CONST, t, 0, NULL);
    r->def->attr.ival = v;
    return r;
}

tir_value *tir_build_const_float(tir_builder *b, tir_type t, double v) {
    tir_value *r = tir_build1(b, TIR_OP_CONST, t, 0, NULL);
    r->def->attr.fval = v;
    return r;
}

tir_value *tir_build_axis(tir_builder *b, tir_opcode code, int64_t axis) {
    tir_value *r = tir_build1(b, code, tir_scalar(TIR_I32), 0, NULL);
    r->def->attr.axis = axis;
    return r;
}

tir_value *tir_build_arange(tir_builder *b, int64_t lo, int64_t hi) {
    tir_value *r = tir_build1(b, TIR_OP_ARANGE, tir_tile1(tir_scalar(TIR_I32), (uint32_t)(hi - lo)), 0, NULL);
    r->def->attr.range.lo = lo;
    r->def->attr.range.hi = hi;
    return r;
}

tir_value *tir_build_unary(tir_builder *b, tir_opcode code, tir_value *a) {
    return tir_build1(b, code, a->type, 1, &a);
}

tir_value *tir_build_binary(tir_builder *b, tir_opcode code, tir_value *a, tir_value *c) {
    tir_value *ops[2] = {a, c};
    tir_type t = a->type;
    if (tir_ops[code].flags & TIR_F_COMPARE) t = tir_with_elem(a->type, tir_scalar(TIR_I1));
    if (code == TIR_OP_ADDPTR && c->type.rank > a->type.rank) t = tir_with_elem(c->type, a->type);
    return tir_build1(b, code, t, 2, ops);
}

tir_value *tir_build_cast(tir_builder *b, tir_value *a, tir_elem to) {
    return tir_build1(b, TIR_OP_CAST, tir_with_elem(a->type, tir_scalar(to)), 1, &a);
}

tir_value *tir_build_splat(tir_builder *b, tir_value *scalar, tir_type shape_of) {
    return tir_build1(b, TIR_OP_SPLAT, tir_with_elem(shape_of, scalar->type), 1, &scalar);
}

tir_value *tir_build_expand_dims(tir_builder *b, tir_value *a, unsigned axis) {
    tir_type t = tir_element_of(a->type);
    t.rank = (uint8_t)(a->type.rank + 1);
    for (unsigned d = 0, k = 0; d < t.rank && d < TIR_MAX_RANK; d++) t.shape[d] = d == axis ? 1 : a->type.shape[k++];
    tir_value *r = tir_build1(b, TIR_OP_EXPAND_DIMS, t, 1, &a);
    r->def->attr.axis = axis;
    return r;
}

tir_value *tir_build_broadcast(tir_builder *b, tir_value *a, tir_type shape_of) {
    return tir_build1(b, TIR_OP_BROADCAST, tir_with_elem(tir_tile(a->type, shape_of.rank, shape_of.shape), a->type), 1, &a);
}

tir_value *tir_build_reshape(tir_builder *b, tir_value *a, tir_type shape_of) {
    return tir_build1(b, TIR_OP_RESHAPE, tir_with_elem(tir_tile(a->type, shape_of.rank, shape_of.shape), a->type), 1, &a);
}

tir_value *tir_build_permute(tir_builder *b, tir_value *a, const unsigned *perm) {
    uint32_t shape[TIR_MAX_RANK];
    for (unsigned i = 0; i < a->type.rank; i++) shape[i] = a->type.shape[perm[i]];
    tir_value *r = tir_build1(b, TIR_OP_PERMUTE, tir_tile(a->type, a->type.rank, shape), 1, &a);
    for (unsigned i = 0; i < a->type.rank; i++) r->def->attr.perm[i] = (uint8_t)perm[i];
    return r;
}

tir_op *tir_build_print(tir_builder *b, const char *msg, uint32_t nvals, tir_value *const *vals) {
    tir_op *op = tir_build_op(b, TIR_OP_PRINT, nvals, vals, 0, NULL);
    op->attr.text = tc_arena_strdup(b->module->arena, msg);
    return op;
}

tir_op *tir_build_assert(tir_builder *b, const char *msg, tir_value *cond) {
    tir_op *op = tir_build_op(b, TIR_OP_ASSERT, 1, &cond, 0, NULL);
    op->attr.text = tc_arena_strdup(b->module->arena, msg);
    return op;
}

tir_op *tir_build_for(tir_builder *b, tir_value *lo, tir_value *hi, tir_value *step, uint32_t ninits,
                      tir_value *const *inits) {
    tc_arena *a = b->module->arena;
    tir_value **ops = TC_NEW_ARRAY(a, tir_value *, ninits + 3);
    tir_type *types = TC_NEW_ARRAY(a, tir_type, ninits + 1);
    ops[0] = lo, ops[1] = hi, ops[2] = step;
    for (uint32_t i = 0; i < ninits; i++) {
        ops[3 + i] = inits[i];
        types[i] = inits[i]->type;
    }
    tir_op *op = tir_build_op(b, TIR_OP_FOR, ninits + 3, ops, ninits, types);
    op->body = block_new(b->func, op);
    tir_block_add_arg(op->body, lo->type, NULL);
    for (uint32_t i = 0; i < ninits; i++) tir_block_add_arg(op->body, inits[i]->type, NULL);
    return op;
}

/* Arrays of an op are sized when it is built: one more element is a new
 * array with the old ones copied (the arena keeps the old). */
static tir_value **append_value(tc_arena *a, tir_value **arr, uint32_t n, tir_value *v) {
    tir_value **p = TC_NEW_ARRAY(a, tir_value *, n + 2);
    if (n) memcpy(p, arr, sizeof *p * n);
    p[n] = v;
    return p;
}

tir_value *tir_for_add_carried(tir_op *loop, tir_value *init) {
    tir_func *f = loop->body->func;
    tc_arena *a = f->module->arena;
    tir_op *yield = loop->body->last;
    tir_value *arg = tir_block_add_arg(loop->body, init->type, NULL);
    tir_value *res = value_new(f, init->type, NULL);
    res->def = loop;
    res->index = loop->nresults;
    loop->operands = append_value(a, loop->operands, loop->noperands++, init);
    loop->results = append_value(a, loop->results, loop->nresults++, res);
    yield->operands = append_value(a, yield->operands, yield->noperands++, arg);
    return arg;
}

tir_op *tir_build_if(tir_builder *b, tir_value *cond, uint32_t nresults, const tir_type *types) {
    tir_op *op = tir_build_op(b, TIR_OP_IF, 1, &cond, nresults, types);
    op->body = block_new(b->func, op);
    op->body2 = block_new(b->func, op);
    return op;
}

tir_op *tir_build_producer(tir_builder *b) {
    tir_op *op = tir_build_op(b, TIR_OP_PRODUCER, 0, NULL, 0, NULL);
    op->body = block_new(b->func, op);
    return op;
}

tir_op *tir_build_while(tir_builder *b, uint32_t ninits, tir_value *const *inits) {
    tir_type *types = TC_NEW_ARRAY(b->module->arena, tir_type, ninits + 1);
    for (uint32_t i = 0; i < ninits; i++) types[i] = inits[i]->type;
    tir_op *op = tir_build_op(b, TIR_OP_WHILE, ninits, inits, ninits, types);
    op->body = block_new(b->func, op);
    op->body2 = block_new(b->func, op);
    for (uint32_t i = 0; i < ninits; i++) {
        tir_block_add_arg(op->body, inits[i]->type, NULL);
        tir_block_add_arg(op->body2, inits[i]->type, NULL);
    }
    return op;
}

void tir_op_remove(tir_op *op) {
    tir_block *blk = op->parent;
    if (op->prev)
        op->prev->next = op->next;
    else
        blk->first = op->next;
    if (op->next)
        op->next->prev = op->prev;
    else
        blk->last = op->prev;
    op->prev = op->next = NULL;
    op->parent = NULL;
}

void tir_op_move_before(tir_op *op, tir_op *before) {
    tir_op_remove(op);
    tir_builder b = {.block = before->parent, .before = before};
    insert(&b, op);
}

static void walk_block(tir_block *blk, tir_walk_fn fn, void *ctx) {
    for (tir_op *op = blk->first, *next; op; op = next) {
        next = op->next; /* fn may remove op */
        fn(op, ctx);
        if (op->body) walk_block(op->body, fn, ctx);
        if (op->body2) walk_block(op->body2, fn, ctx);
    }
}

void tir_walk(tir_func *f, tir_walk_fn fn, void *ctx) { walk_block(f->body, fn, ctx); }

bool tir_block_has_op(const tir_block *blk, tir_opcode a, tir_opcode b) {
    for (const tir_op *op = blk->first; op; op = op->next) {
        if (op->code == a || op->code == b) return true;
        if ((op->body && tir_block_has_op(op->body, a, b)) || (op->body2 && tir_block_has_op(op->body2, a, b)))
            return true;
    }
    return false;
}

typedef struct replace_ctx {
    tir_value *from, *to;
    bool found;
} replace_ctx;

static void replace_in_op(tir_op *op, void *p) {
    replace_ctx *c = p;
    for (uint32_t i = 0; i < op->noperands; i++)
        if (op->operands[i] == c->from) {
            if (c->to) op->operands[i] = c->to;
            c->found = true;
        }
}

void tir_replace_all_uses(tir_func *f, tir_value *from, tir_value *to) {
    replace_ctx c = {.from = from, .to = to};
    tir_walk(f, replace_in_op, &c);
}

bool tir_value_has_uses(const tir_func *f, const tir_value *v) {
    replace_ctx c = {.from = (tir_value *)v};
    tir_walk((tir_func *)f, replace_in_op, &c);
    return c.found;
}
