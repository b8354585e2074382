/* device_cuda.c - the CUDA device: the GPU through the driver API of
 * cuda.c (loaded with dlopen), its state an rt_cuda. Buffers are device
 * allocations, copies and launches may go on a stream, modules load a
 * cubin or PTX image and look up each kernel's function. Every failing
 * call leaves a message naming it in the device's last error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda.h"
#include "runtime/internal.h"

static rt_cuda *cuda_of(const trt_device *d) { return d->impl; }

/* The status of a failed CUDA call (d->err says which). After an assert
 * fails in a kernel the driver answers CUDA_ERROR_ASSERT to every call:
 * the context is lost, so the message says what the user must do. */
static trt_status cuda_failure(trt_device *d) {
    if (!rt_cuda_asserted(cuda_of(d))) return TRT_ERR_LAUNCH;
    return rt_fail(d, TRT_ERR_ASSERT,
                   "an assert failed in a kernel on the GPU (the kernel printed which, with its program and element, "
                   "on stdout): %s; the GPU context is lost: close this device (trt_close) and open it again "
                   "(if other code in this process uses the GPU too, the process must restart)",
                   d->err);
}

static bool cuda_open(void **impl, char *why, size_t why_size) {
    rt_cuda *c = NULL;
    bool ok = rt_cuda_open(&c, why, why_size);
    *impl = c;
    return ok;
}

static void cuda_close(void *impl) { rt_cuda_close(impl); }

static const char *cuda_name(const trt_device *d) { return rt_cuda_name(cuda_of(d)); }
static const char *cuda_arch(const trt_device *d) { return rt_cuda_arch(cuda_of(d)); }
/* What trt_compile builds for: the GPU's arch, with the arch-specific
 * features where the compiler uses them (an sm_90 GPU: sm_90a, wgmma),
 * which run on that arch only, as this GPU is. */
static const char *cuda_code_arch(const trt_device *d) {
    return strcmp(rt_cuda_arch(cuda_of(d)), "sm_90") == 0 ? "sm_90a" : rt_cuda_arch(cuda_of(d));
}
static int cuda_sm_count(const trt_device *d) { return rt_cuda_sm_count(cuda_of(d)); }

/* ---- memory ------------------------------------------------------------ */

static trt_status cuda_alloc(trt_device *d, size_t bytes, uint64_t *addr) {
    return rt_cuda_alloc(cuda_of(d), bytes, addr, d->err, sizeof d->err) ? TRT_OK : TRT_ERR_OUT_OF_MEMORY;
}

static void cuda_free(trt_device *d, uint64_t addr) { rt_cuda_free(cuda_of(d), addr, NULL, 0); }

/* Only memory of this GPU's context, within one allocation. */
static trt_status cuda_check_wrap(trt_device *d, uint64_t ptr, size_t bytes) {
    uint64_t base;
    size_t size;
    if (!rt_cuda_range(cuda_of(d), ptr, &base, &size, d->err, sizeof d->err))
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "cannot wrap %#llx: %s", (unsigned long long)ptr, d->err);
    if (bytes > size - (ptr - base))
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT,
                       "%zu bytes at %#llx run past the end of its %zu-byte allocation at %#llx", bytes,
                       (unsigned long long)ptr, size, (unsigned long long)base);
    return TRT_OK;
}

static trt_status cuda_write(trt_device *d, uint64_t dst, const void *src, size_t bytes, void *stream) {
    return rt_cuda_write(cuda_of(d), dst, src, bytes, stream, d->err, sizeof d->err) ? TRT_OK : cuda_failure(d);
}

static trt_status cuda_read(trt_device *d, void *dst, uint64_t src, size_t bytes, void *stream) {
    return rt_cuda_read(cuda_of(d), dst, src, bytes, stream, d->err, sizeof d->err) ? TRT_OK : cuda_failure(d);
}

/* ---- streams ----------------------------------------------------------- */

static trt_status cuda_stream_create(trt_device *d, void **stream) {
    return rt_cuda_stream_create(cuda_of(d), stream, d->err, sizeof d->err) ? TRT_OK : cuda_failure(d);
}

static trt_status cuda_stream_sync(trt_device *d, void *stream) {
    return rt_cuda_stream_sync(cuda_of(d), stream, d->err, sizeof d->err) ? TRT_OK : cuda_failure(d);
}

static void cuda_stream_destroy(trt_device *d, void *stream) { /* the driver lets queued work finish first */
    rt_cuda_stream_sync(cuda_of(d), stream, NULL, 0);
    rt_cuda_stream_destroy(cuda_of(d), stream);
}

static trt_status cuda_sync(trt_device *d) {
    return rt_cuda_sync(cuda_of(d), d->err, sizeof d->err) ? TRT_OK : cuda_failure(d);
}

/* ---- modules and launches ---------------------------------------------- */

/* A kernel with more than 48 KB of shared memory has it as the dynamic
 * array (lower/codegen.c), whose size its tile IR says (dynamic_smem):
 * checked against what the GPU allows a block, then opted in to once per
 * loaded function; every launch passes that size. False with the message
 * in d->err. */
static bool allow_dynamic_smem(trt_device *d, trt_kernel *k) {
    uint32_t need = k->func->dynamic_smem, most = rt_cuda_smem_optin(cuda_of(d));
    if (!need) return true;
    if (most && need > most) {
        snprintf(d->err, sizeof d->err,
                 "kernel '%s' needs %u bytes of shared memory per block, and this GPU (%s) allows at most %u; "
                 "compile it for this GPU's arch, with smaller tiles or fewer stages",
                 k->func->name, need, rt_cuda_arch(cuda_of(d)), most);
        return false;
    }
    return rt_cuda_allow_dynamic_smem(cuda_of(d), k->fn, need, d->err, sizeof d->err);
}

/* The cubin or PTX image (the driver reads PTX to its NUL), then each
 * kernel's function. */
static trt_status cuda_load(trt_module *m, const void *image, size_t size) {
    trt_device *d = m->dev;
    bool ok = rt_cuda_load(cuda_of(d), image, &m->code, d->err, sizeof d->err);
    for (uint32_t k = 0; ok && k < m->nkernels; k++)
        ok = rt_cuda_function(cuda_of(d), m->code, m->kernels[k].func->name, &m->kernels[k].fn, d->err,
                              sizeof d->err) &&
             allow_dynamic_smem(d, &m->kernels[k]);
    if (ok) return TRT_OK;
    if (m->code) rt_cuda_unload(cuda_of(d), m->code);
    m->code = NULL;
    return TRT_ERR_COMPILE;
}



/* ---- tensor maps ----------------------------------------------------------
 * A kernel with tensor maps (internal.h) gets, after its own parameters,
 * the device address of each map's 128 bytes. The maps live in device
 * memory that the module keeps (trt_module.tmaps) until it is unloaded,
 * one copy per distinct map, found again by what it was made from (the
 * base address, dims, strides, box, swizzle): a launch whose map was made
 * before passes the same address and copies nothing, so a launch that a
 * graph captured replays with maps that are still there and unchanged (a
 * graph holds its modules). A map is made, encoded by the driver and
 * copied synchronously, only outside a capture: a capture cannot hold
 * the copy, so one that meets a new map fails, asking for the work to run
 * once first, as module loads do. Maps are never freed before the module:
 * a launch still queued, or a graph, may read any of them. */
enum {
    RT_TMAP_SLAB = 64,                     /* maps one device allocation holds */
    RT_TMAP_KEY_WORDS = 4 + 3 * TIR_TMAP_MAX_RANK /* address, elem, rank, swizzle; dims, strides, box */
};

typedef struct cuda_tmap {
    uint64_t key[RT_TMAP_KEY_WORDS];
    uint64_t dptr; /* its 128 bytes on the device */
} cuda_tmap;

typedef struct cuda_tmaps {
    cuda_tmap *maps;
    uint32_t n, cap;
    uint64_t *slabs; /* device allocations of RT_TMAP_SLAB maps each; map i is in slab i / RT_TMAP_SLAB */
} cuda_tmaps;

static void tmap_key(const rt_tmap_desc *t, uint64_t *key) {
    memset(key, 0, sizeof(uint64_t) * RT_TMAP_KEY_WORDS);
    key[0] = t->address, key[1] = t->elem_bytes, key[2] = t->rank, key[3] = t->swizzle;
    for (uint32_t d = 0; d < t->rank; d++) {
        key[4 + d] = t->dim[d];
        key[4 + TIR_TMAP_MAX_RANK + d] = d ? t->stride[d - 1] : 0;
        key[4 + 2 * TIR_TMAP_MAX_RANK + d] = t->box[d];
    }
}

static void tmaps_free(trt_device *d, cuda_tmaps *c) {
    if (!c) return;
    for (uint32_t i = 0; i < c->n; i += RT_TMAP_SLAB) rt_cuda_free(cuda_of(d), c->slabs[i / RT_TMAP_SLAB], NULL, 0);
    free(c->maps), free(c->slabs), free(c);
}

/* A new map's device copy: encoded by the driver, in the next free place
 * of the last slab (a new slab when it is full). */
static trt_status tmap_make(trt_kernel *k, uint32_t i, cuda_tmaps *c, const rt_tmap_desc *t, const uint64_t *key,
                            uint64_t *dptr) {
    trt_device *d = k->mod->dev;
    char what[256];
    snprintf(what, sizeof what,
             "make a tensor map for kernel '%s' (run the work once before capturing it, so that its tensor maps "
             "are made and kept)", k->func->name);
    trt_status st = rt_refuse_capturing(d, what);
    if (st != TRT_OK) return st;
    _Alignas(RT_TMAP_ALIGN) unsigned char map[RT_TMAP_BYTES];
    memset(map, 0, sizeof map);
    char why[RT_ERR_MAX / 2];
    if (!rt_cuda_tensor_map(cuda_of(d), map, t->elem_bytes, t->rank, t->address, t->dim, t->stride, t->box,
                            t->swizzle, why, sizeof why))
        return rt_tmap_fail(k, i, why);
    if (c->n == c->cap) {
        uint32_t cap = c->cap ? c->cap * 2 : RT_TMAP_SLAB;
        cuda_tmap *maps = realloc(c->maps, sizeof *maps * cap);
        if (maps) c->maps = maps;
        uint64_t *slabs = maps ? realloc(c->slabs, sizeof *slabs * (cap / RT_TMAP_SLAB)) : NULL;
        if (!slabs) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
        c->slabs = slabs;
        c->cap = cap;
    }
    if (c->n % RT_TMAP_SLAB == 0 &&
        !rt_cuda_alloc(cuda_of(d), (size_t)RT_TMAP_SLAB * RT_TMAP_BYTES, &c->slabs[c->n / RT_TMAP_SLAB], d->err,
                       sizeof d->err)) /* cuMemAlloc aligns to 256 bytes at least */
        return TRT_ERR_OUT_OF_MEMORY;
    uint64_t at = c->slabs[c->n / RT_TMAP_SLAB] + (uint64_t)(c->n % RT_TMAP_SLAB) * RT_TMAP_BYTES;
    /* synchronous, on the legacy stream: every blocking stream's later work waits for it */
    if (!rt_cuda_write(cuda_of(d), at, map, sizeof map, NULL, d->err, sizeof d->err)) {
        if (c->n % RT_TMAP_SLAB == 0) rt_cuda_free(cuda_of(d), c->slabs[c->n / RT_TMAP_SLAB], NULL, 0);
        return cuda_failure(d);
    }
    memcpy(c->maps[c->n].key, key, sizeof c->maps[c->n].key);
    c->maps[c->n++].dptr = at;
    *dptr = at;
    return TRT_OK;
}

/* The device addresses of kernel k's maps for this launch into cells. */
static trt_status cuda_tensor_maps(trt_kernel *k, const rt_arg *args, uint64_t *cells) {
    trt_module *m = k->mod;
    for (uint32_t i = 0; i < k->func->ntmaps; i++) {
        rt_tmap_desc t;
        trt_status st = rt_tmap_desc_make(k, i, args, &t);
        if (st != TRT_OK) return st;
        uint64_t key[RT_TMAP_KEY_WORDS];
        tmap_key(&t, key);
        if (!m->tmaps && !(m->tmaps = calloc(1, sizeof(cuda_tmaps))))
            return rt_fail(m->dev, TRT_ERR_OUT_OF_MEMORY, "out of memory");
        cuda_tmaps *c = m->tmaps;
        uint32_t j = 0;
        while (j < c->n && memcmp(c->maps[j].key, key, sizeof key)) j++;
        if (j < c->n) cells[i] = c->maps[j].dptr;
        else if ((st = tmap_make(k, i, c, &t, key, &cells[i])) != TRT_OK) return st;
    }
    return TRT_OK;
}

static void cuda_unload(trt_module *m) { /* the context lives until the device's last release */
    tmaps_free(m->dev, m->tmaps);
    m->tmaps = NULL;
    if (m->code) rt_cuda_unload(cuda_of(m->dev), m->code);
}

/* One 8-byte cell per parameter, of which the driver reads the
 * parameter's size from the start, then one per tensor map (its device
 * address); a block of num_warps warps (4 if the IR does not say), and
 * the producer's (producer_warps) of a warp-specialized kernel. */
static trt_status cuda_launch(trt_kernel *k, void *stream, const uint32_t grid[3], const rt_arg *args,
                              uint32_t nargs) {
    trt_device *d = k->mod->dev;
    const tir_func *f = k->func;
    uint64_t cells[RT_TMAP_MAX_ARGS];
    void *params[RT_TMAP_MAX_ARGS];
    trt_status st = cuda_tensor_maps(k, args, cells + nargs);
    if (st != TRT_OK) return st;
    for (uint32_t i = 0; i < nargs + f->ntmaps; i++) {
        if (i < nargs) cells[i] = args[i].bits;
        params[i] = &cells[i];
    }
    if (!rt_cuda_launch(cuda_of(d), k->fn, grid, 32u * (uint32_t)((f->num_warps ? f->num_warps : 4) + f->producer_warps), f->dynamic_smem,
                        params, stream, d->err, sizeof d->err))
        return cuda_failure(d);
    return TRT_OK;
}

/* ---- graphs ------------------------------------------------------------ */

static trt_status cuda_capture_begin(trt_device *d, void *stream) {
    return rt_cuda_capture_begin(cuda_of(d), stream, d->err, sizeof d->err) ? TRT_OK : cuda_failure(d);
}

static trt_status cuda_capture_end(trt_device *d, void *stream, void **exec) {
    return rt_cuda_capture_end(cuda_of(d), stream, exec, d->err, sizeof d->err) ? TRT_OK : cuda_failure(d);
}

static trt_status cuda_graph_launch(trt_device *d, void *exec, void *stream) {
    return rt_cuda_graph_launch(cuda_of(d), exec, stream, d->err, sizeof d->err) ? TRT_OK : cuda_failure(d);
}

static void cuda_graph_destroy(trt_device *d, void *exec) { rt_cuda_graph_destroy(cuda_of(d), exec); }

static bool cuda_capturing_elsewhere(trt_device *d) { return rt_cuda_legacy_blocked(cuda_of(d)); }

const rt_device_ops rt_cuda_device = {
    .kind = TRT_DEVICE_CUDA,
    .code = RT_CODE_CUBIN,
    .image_ext = "cubin",
    .print_fn = false,
    .open = cuda_open,
    .close = cuda_close,
    .name = cuda_name,
    .arch = cuda_arch,
    .sm_count = cuda_sm_count,
    .code_arch = cuda_code_arch,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .check_wrap = cuda_check_wrap,
    .write = cuda_write,
    .read = cuda_read,
    .stream_create = cuda_stream_create,
    .stream_sync = cuda_stream_sync,
    .stream_destroy = cuda_stream_destroy,
    .sync = cuda_sync,
    .load = cuda_load,
    .unload = cuda_unload,
    .launch = cuda_launch,
    .capture_begin = cuda_capture_begin,
    .capture_end = cuda_capture_end,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
    .capturing_elsewhere = cuda_capturing_elsewhere,
};
