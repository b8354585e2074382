/* compile.c - trt_compile: .tile source to a module, through libtilec.
 *
 * Apart from runtime.c so that programs that only load prebuilt cubins
 * (trt_load) do not pull in the compiler and LLVM. libtilec turns the
 * source into tile IR text (with source locations, for runtime errors) and,
 * for the CUDA device, a cubin for the device's architecture; both are
 * cached per device by a hash of the file name, source and options. */
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"
#include "tilec.h"

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t cache_key(const char *file, const char *src, size_t len, const trt_compile_options *o) {
    uint64_t h = 14695981039346656037ull;
    h = hash_bytes(h, file, strlen(file) + 1);
    h = hash_bytes(h, src, len);
    h = hash_bytes(h, &len, sizeof len);
    if (o) {
        h = hash_bytes(h, &o->num_warps, sizeof o->num_warps);
        if (o->arch) h = hash_bytes(h, o->arch, strlen(o->arch) + 1);
        for (size_t i = 0; i < o->ndefines; i++) {
            h = hash_bytes(h, o->defines[i].name, strlen(o->defines[i].name) + 1);
            h = hash_bytes(h, &o->defines[i].value, sizeof o->defines[i].value);
        }
    }
    return h;
}

/* Tile IR text (and, for the GPU, a cubin) for source and options, from the
 * cache or from libtilec. */
static const cache_entry *compile_cached(trt_device *d, const char *file, const char *src, size_t len,
                                         const trt_compile_options *o, trt_status *st) {
    uint64_t key = cache_key(file, src, len, o);
    key = hash_bytes(key, &d->kind, sizeof d->kind);
    for (cache_entry *e = d->cache; e; e = e->next)
        if (e->key == key) return e;
    tilec_options opt;
    tilec_options_init(&opt);
    opt.emit = TILEC_EMIT_TIR;
    /* the interpreter needs no layouts; the GPU's launch needs num_warps */
    opt.passes = d->cuda ? NULL : "simplify";
    opt.print_locs = true; /* runtime errors name the source line */
    if (o) {
        opt.num_warps = o->num_warps;
        opt.defines = o->defines;
        opt.ndefines = o->ndefines;
    }
    tilec_output tir, bin;
    memset(&bin, 0, sizeof bin);
    if (tilec_compile(file, src, len, &opt, &tir) != TILEC_OK) {
        *st = rt_fail(d, TRT_ERR_COMPILE, "%s", tir.diagnostics);
        tilec_output_free(&tir);
        return NULL;
    }
    if (d->cuda) {
        opt.emit = TILEC_EMIT_CUBIN;
        opt.arch = o && o->arch ? o->arch : rt_cuda_arch(d->cuda);
        if (tilec_compile(file, src, len, &opt, &bin) != TILEC_OK) {
            *st = rt_fail(d, TRT_ERR_COMPILE, "%s", bin.diagnostics);
            tilec_output_free(&tir);
            tilec_output_free(&bin);
            return NULL;
        }
    }
    cache_entry *e = calloc(1, sizeof *e);
    if (!e) {
        tilec_output_free(&tir);
        tilec_output_free(&bin);
        *st = rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    e->key = key;
    e->tir = tir.data;
    e->cubin = bin.data;
    tir.data = bin.data = NULL;
    e->next = d->cache;
    d->cache = e;
    tilec_output_free(&tir);
    tilec_output_free(&bin);
    return e;
}

trt_status trt_compile(trt_device *d, const char *file, const char *src, size_t len, const trt_compile_options *o,
                       trt_module **out) {
    if (!d || !out) return TRT_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (!src) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "source is NULL");
    if (!file) file = "<source>";
    trt_status st = TRT_OK;
    const cache_entry *ce = compile_cached(d, file, src, len, o, &st);
    if (!ce) return st;
    return rt_module_make(d, file, ce->tir, ce->cubin, out);
}
