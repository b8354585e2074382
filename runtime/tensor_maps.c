/* tensor_maps.c - a kernel's tensor maps at launch (internal.h, "tensor
 * maps"): each tir_tmap of the kernel evaluated on the launch's arguments
 * (tir_tmap_term_value) into what the encoders take, and checked against
 * what cuTensorMapEncodeTiled requires of it. One place for every device:
 * the emulator's and the CUDA device's launches encode what this gives
 * (device_emu_code.c, device_cuda.c), the CPU device only checks, so a
 * launch fails alike, with the same message, wherever it runs. */
#include <stdio.h>

#include "runtime/internal.h"

enum { RT_TMAP_WHY_MAX = 512 }; /* bytes of what is wrong with one map */

static const char *param_name(const tir_func *f, uint32_t i) {
    const char *n = f->params[i]->name;
    return n ? n : "?";
}

trt_status rt_tmap_fail(trt_kernel *k, uint32_t i, const char *why) {
    const tir_func *f = k->func;
    return rt_fail(k->mod->dev, TRT_ERR_ARGUMENTS,
                   "kernel '%s' reads '%s' through a tensor map (a bulk tensor copy, sm_90a): %s", f->name,
                   param_name(f, f->tmaps[i].base), why);
}

/* What term t says in a message: "(M)", "(4 * M)", or nothing for a
 * constant; with `value`, also its value in elements ("(sa = 10 f16)"). */
static void term_text(const tir_func *f, tir_tmap_term t, const char *value, char *buf, size_t n) {
    if (t.param == TIR_TMAP_CONST) {
        snprintf(buf, n, "%s%s%s", value ? " (" : "", value ? value : "", value ? ")" : "");
        return;
    }
    char scale[32] = "";
    if (t.scale != 1) snprintf(scale, sizeof scale, "%lld * ", (long long)t.scale);
    snprintf(buf, n, " (%s%s%s%s)", scale, param_name(f, (uint32_t)t.param), value ? " = " : "", value ? value : "");
}

/* Term t's value, or false where scale * the parameter does not fit in 64
 * bits (tir_tmap_term_value would overflow). */
static bool term_value(tir_tmap_term t, const int64_t *ints, int64_t *v) {
    int64_t unused;
    if (t.param != TIR_TMAP_CONST && __builtin_mul_overflow(t.scale, ints[t.param], &unused)) return false;
    *v = tir_tmap_term_value(t, ints);
    return true;
}

/* The map's descriptor, or false with what is wrong in why. */
static bool describe(const tir_func *f, const tir_tmap *m, const rt_arg *args, rt_tmap_desc *out, char *why,
                     size_t n) {
    int64_t ints[RT_MAX_ARGS] = {0};
    for (uint32_t p = 0; p < f->nparams && p < RT_MAX_ARGS; p++)
        if (args[p].kind == RT_ARG_INT) ints[p] = args[p].i;
    tir_elem e = tir_type_pointee(f->params[m->base]->type);
    const rt_arg *base = &args[m->base];
    *out = (rt_tmap_desc){.address = base->bits, .buffer = base->buffer, .offset = (uint64_t)base->offset,
                          .elem_bytes = (tir_elem_bits(e) + 7) / 8, .rank = m->rank, .swizzle = m->swizzle};
    if (out->address % RT_TMAP_ADDR_ALIGN)
        return snprintf(why, n, "its address is not %d-byte aligned (offset %lld bytes into its buffer)",
                        RT_TMAP_ADDR_ALIGN, (long long)base->offset),
               false;
    char text[128];
    for (unsigned d = 0; d < m->rank; d++) {
        int64_t v = 0;
        out->box[d] = m->box[d];
        bool fits = term_value(m->dim[d], ints, &v);
        if (!fits || v < 1 || v > RT_TMAP_MAX_DIM) {
            term_text(f, m->dim[d], NULL, text, sizeof text);
            if (!fits) return snprintf(why, n, "its dim %u%s overflows; a tensor map needs 1 to 2^32 elements", d, text), false;
            return snprintf(why, n, "its dim %u is %lld elements%s; a tensor map needs 1 to 2^32", d, (long long)v,
                            text),
                   false;
        }
        out->dim[d] = (uint64_t)v;
        if (d == 0) continue; /* stride 1: the copy engine reads dim 0 contiguous */
        v = 0;
        fits = term_value(m->stride[d], ints, &v);
        char value[64];
        snprintf(value, sizeof value, "%lld %s", (long long)v, tir_elem_name(e));
        term_text(f, m->stride[d], fits ? value : NULL, text, sizeof text);
        if (!fits || v < 0 || v >= RT_TMAP_MAX_STRIDE / out->elem_bytes)
            return snprintf(why, n, "its stride %u%s is not in 0 to 2^40 bytes", d, text), false;
        int64_t bytes = v * out->elem_bytes;
        /* the copy engine takes no stride 0; where the stride never
         * multiplies anything but 0 any other does: a dim of one element
         * (the stdlib's matrices of one row), or a batch dim (box 1), whose
         * coordinate the kernel makes 0 when its stride is (tma_copies.c) */
        if (bytes == 0 && (out->dim[d] == 1 || m->box[d] == 1)) bytes = RT_TMAP_STRIDE_ALIGN;
        if (bytes == 0)
            return snprintf(why, n, "its stride %u is 0 bytes%s; the copy engine needs a nonzero stride", d, text),
                   false;
        if (bytes % RT_TMAP_STRIDE_ALIGN)
            return snprintf(why, n, "its stride %u is %lld bytes%s; the copy engine needs a multiple of %d bytes", d,
                            (long long)bytes, text, RT_TMAP_STRIDE_ALIGN),
                   false;
        out->stride[d - 1] = (uint64_t)bytes;
    }
    return true;
}

trt_status rt_tmap_desc_make(trt_kernel *k, uint32_t i, const rt_arg *args, rt_tmap_desc *out) {
    char why[RT_TMAP_WHY_MAX];
    if (!describe(k->func, &k->func->tmaps[i], args, out, why, sizeof why)) return rt_tmap_fail(k, i, why);
    return TRT_OK;
}

trt_status rt_tmaps_check(trt_kernel *k, const rt_arg *args) {
    for (uint32_t i = 0; i < k->func->ntmaps; i++) {
        rt_tmap_desc unused;
        trt_status st = rt_tmap_desc_make(k, i, args, &unused);
        if (st != TRT_OK) return st;
    }
    return TRT_OK;
}
