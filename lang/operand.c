/* operand.c - what a checked expression is, and the typing rules.
 *
 * A checked expression is an `operand`: a value in the IR, or something
 * known at compile time that has not become IR yet: an untyped integer or
 * float literal (it takes its type from the other operand, like a Go
 * constant), or a typed compile-time integer (a const parameter, or
 * arithmetic on such). Keeping these out of the IR until an op needs them is
 * what lets `arange(0, BLOCK * 2)` see a number and `x + 1` add an f32 one.
 * A poison operand stands for an expression that already had an error, so
 * one mistake gives one message. */
#include <math.h>
#include <string.h>

#include "lang/check.h"

const char *lang_type_str(lang_ctx *c, tir_type t) {
    tc_strbuf b;
    tc_strbuf_init(&b);
    const char *el = t.elem == TIR_PTR ? tc_arena_printf(c->arena, "*%s", tir_elem_name(tir_type_pointee(t)))
                                       : tir_elem_name(tir_type_elem(t));
    if (t.rank == 0) {
        tc_strbuf_free(&b);
        return el;
    }
    tc_strbuf_puts(&b, "tile<");
    for (unsigned i = 0; i < t.rank; i++) tc_strbuf_printf(&b, "%ux", t.shape[i]);
    tc_strbuf_printf(&b, "%s>", el);
    const char *s = tc_arena_strdup(c->arena, b.data);
    tc_strbuf_free(&b);
    return s;
}

bool lang_int_fits(int64_t v, tir_elem e) {
    switch (e) {
    case TIR_I1: return v == 0 || v == 1;
    case TIR_I8: return v >= INT8_MIN && v <= INT8_MAX;
    case TIR_I16: return v >= INT16_MIN && v <= INT16_MAX;
    case TIR_I32: return v >= INT32_MIN && v <= INT32_MAX;
    default: return true;
    }
}

/* The type an operand has, or would take on its own. */
tir_type lang_operand_type(const operand *o) {
    switch (o->kind) {
    case OPND_INTLIT: return tir_scalar(lang_int_fits(o->ival, TIR_I32) ? TIR_I32 : TIR_I64);
    case OPND_FLOATLIT: return tir_scalar(TIR_F32);
    case OPND_CONST:
    case OPND_VALUE: return o->type;
    case OPND_POISON: break;
    }
    return tir_scalar(TIR_I32);
}

const char *lang_operand_str(lang_ctx *c, const operand *o) { return lang_type_str(c, lang_operand_type(o)); }

void lang_set_loc(lang_ctx *c, tc_span at) {
    /* binary search in the line table built once per module */
    uint32_t lo = 0, hi = c->nlines;
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (c->line_starts[mid] <= at.off)
            lo = mid;
        else
            hi = mid;
    }
    c->b.loc = (tc_loc){.line = lo + 1, .col = at.off - c->line_starts[lo] + 1};
}

/* Turns an operand into an IR value of element type `want` (a literal takes
 * it; a value is converted). Shape is untouched. */
tir_value *lang_materialize(lang_ctx *c, const operand *o, tir_elem want) {
    lang_set_loc(c, o->span);
    tir_value *v = NULL;
    switch (o->kind) {
    case OPND_POISON: return NULL;
    case OPND_INTLIT:
    case OPND_CONST:
        if (tir_elem_is_float(want)) return tir_build_const_float(&c->b, tir_scalar(want), (double)o->ival);
        if (o->kind == OPND_CONST && o->type.elem != want) {
            v = tir_build_const_int(&c->b, o->type, o->ival);
            break;
        }
        return tir_build_const_int(&c->b, tir_scalar(want), o->ival);
    case OPND_FLOATLIT:
        if (tir_elem_is_float(want)) return tir_build_const_float(&c->b, tir_scalar(want), o->fval);
        v = tir_build_const_float(&c->b, tir_scalar(TIR_F32), o->fval);
        break;
    case OPND_VALUE: v = o->v; break;
    }
    if (v->type.elem != want) v = tir_build_cast(&c->b, v, want);
    return v;
}

/* Checks that a literal fits the type it is about to take. */
bool lang_literal_fits(lang_ctx *c, const operand *o, tir_elem want) {
    if (o->kind == OPND_INTLIT && tir_elem_is_int(want) && !lang_int_fits(o->ival, want)) {
        lang_error(c, o->span, "integer literal %lld does not fit in %s", (long long)o->ival, tir_elem_name(want));
        return false;
    }
    if (o->kind == OPND_FLOATLIT && tir_elem_is_int(want)) {
        lang_error(c, o->span, "floating-point literal used where %s is needed", tir_elem_name(want));
        return false;
    }
    return true;
}

/* Broadcasts an IR value to a shape it is broadcastable to (see
 * lang_common_shape): a scalar splats; a tile of lower rank gains leading
 * dims of size 1; dims of size 1 repeat. */
tir_value *lang_broadcast(lang_ctx *c, tir_value *v, tir_type shape_of) {
    if (!v || shape_of.rank == 0) return v;
    if (!v->type.rank) return tir_build_splat(&c->b, v, shape_of);
    while (v->type.rank < shape_of.rank) v = tir_build_expand_dims(&c->b, v, 0);
    if (!tir_type_same_shape(v->type, shape_of)) v = tir_build_broadcast(&c->b, v, shape_of);
    return v;
}

static int rank_of(tir_elem e) { /* for int promotion: wider wins */
    return (int)tir_elem_bits(e);
}

/* The common element type of two operands for arithmetic/comparison, per
 * docs/language.md; false (with no message) if there is none. */
bool lang_common_elem(const operand *a, const operand *b, tir_elem *out) {
    bool at = a->kind == OPND_VALUE || a->kind == OPND_CONST;
    bool bt = b->kind == OPND_VALUE || b->kind == OPND_CONST;
    tir_elem ea = tir_type_elem(lang_operand_type(a)), eb = tir_type_elem(lang_operand_type(b));
    if (ea == TIR_PTR || eb == TIR_PTR) return false;
    if (at && !bt) {
        /* a typed operand gives its type to a literal; an int one meeting a
         * float literal becomes f32 */
        *out = (b->kind == OPND_FLOATLIT && !tir_elem_is_float(ea)) ? TIR_F32 : ea;
        return true;
    }
    if (bt && !at) {
        *out = (a->kind == OPND_FLOATLIT && !tir_elem_is_float(eb)) ? TIR_F32 : eb;
        return true;
    }
    if (!at && !bt) {
        *out = (a->kind == OPND_FLOATLIT || b->kind == OPND_FLOATLIT) ? TIR_F32 : (ea == TIR_I64 || eb == TIR_I64) ? TIR_I64 : TIR_I32;
        return true;
    }
    bool fa = tir_elem_is_float(ea), fb = tir_elem_is_float(eb);
    if (fa && fb) {
        if (ea == eb) *out = ea;
        else if ((ea == TIR_F16 && eb == TIR_BF16) || (ea == TIR_BF16 && eb == TIR_F16)) *out = TIR_F32;
        else *out = rank_of(ea) >= rank_of(eb) ? ea : eb;
    } else if (fa) {
        *out = ea;
    } else if (fb) {
        *out = eb;
    } else {
        *out = rank_of(ea) >= rank_of(eb) ? ea : eb;
    }
    return true;
}

/* The shape two types broadcast to, as in NumPy: aligned at the last dim,
 * each pair of dims equal or one of them 1 (which repeats), a missing
 * leading dim counting as 1; a scalar goes with anything. False if some
 * pair differs. */
bool lang_broadcast_shapes(tir_type ta, tir_type tb, tir_type *shape) {
    if (!ta.rank || !tb.rank) {
        *shape = ta.rank ? ta : tb;
        return true;
    }
    tir_type out = ta.rank >= tb.rank ? ta : tb;
    for (unsigned k = 0; k < out.rank; k++) {
        uint32_t da = k < ta.rank ? ta.shape[ta.rank - 1 - k] : 1, db = k < tb.rank ? tb.shape[tb.rank - 1 - k] : 1;
        if (da != db && da != 1 && db != 1) return false;
        out.shape[out.rank - 1 - k] = da > db ? da : db;
    }
    out.layout = (tir_layout){0};
    *shape = out;
    return true;
}

/* Broadcasting and dot make tiles larger than their operands, so the limit
 * arange and zeros keep must hold for every value: false (reported at `at`)
 * for a tile over TIR_MAX_TILE_ELEMS, which no later stage could compile in
 * reasonable time and memory. */
bool lang_check_tile_size(lang_ctx *c, tc_span at, tir_type t) {
    uint64_t n = tir_type_numel(t), threads = 32 * (uint64_t)c->opt->num_warps; /* 32 lanes a warp */
    if (n > TIR_MAX_TILE_ELEMS) {
        lang_error(c, at, "%s has %llu elements, too many for one tile (limit is %d)", lang_type_str(c, t),
                   (unsigned long long)n, TIR_MAX_TILE_ELEMS);
        return false;
    }
    /* with num_warps chosen (else the layout pass gives a tile enough) */
    if (threads && n / threads > TIR_MAX_THREAD_ELEMS) {
        lang_error(c, at, "%s puts %llu elements on each thread with num_warps = %d (limit is %d a thread); "
                   "use more warps or a smaller tile",
                   lang_type_str(c, t), (unsigned long long)(n / threads), c->opt->num_warps, TIR_MAX_THREAD_ELEMS);
        return false;
    }
    return true;
}

/* The shape two operands broadcast to; false if two tiles disagree. */
bool lang_common_shape(const operand *a, const operand *b, tir_type *shape) {
    return lang_broadcast_shapes(lang_operand_type(a), lang_operand_type(b), shape);
}
