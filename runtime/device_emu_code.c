/* device_emu_code.c - the emulator device's module code: loading the
 * NVPTX LLVM IR that trt_compile generated and running kernels in the
 * emulator of emu/ (emu/emu.h). Built into the compiler's library
 * (tilec_runtime_compile), not the runtime proper, because emu/ links
 * LLVM; trt_compile loads an emulator module's code with this table, and
 * the module runs on it from then on (device.h). Only the module
 * operations are set: the device's own are rt_emu_device's
 * (device_emu.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/emu.h"
#include "runtime/internal.h"

enum { EMU_REPORT_TOP = 5 }; /* conflicted instructions a bank report names */

/* The emulator device's launch. With TILEC_EMU_SMEM_STATS set (not empty,
 * not "0"), each launch also counts shared-memory bank conflicts
 * (emu/emu.h) and prints the report to stderr: the per-kind wavefronts
 * against the ideal and the worst instructions. */
static emu_result emu_run_counted(const emu_module *m, const emu_launch *l, char *err, size_t err_size) {
    const char *want = getenv("TILEC_EMU_SMEM_STATS");
    if (!want || !*want || !strcmp(want, "0") || l->smem_stats) return emu_run(m, l, err, err_size);
    emu_smem_stats st;
    memset(&st, 0, sizeof st);
    emu_launch counted = *l;
    counted.smem_stats = &st;
    emu_result res = emu_run(m, &counted, err, err_size);
    size_t n = emu_smem_report(&st, EMU_REPORT_TOP, NULL, 0);
    char *text = malloc(n + 1);
    if (text) {
        emu_smem_report(&st, EMU_REPORT_TOP, text, n + 1);
        fprintf(stderr, "tilec emu: kernel '%s', grid (%u, %u, %u): %s", l->kernel, l->grid[0], l->grid[1],
                l->grid[2], text);
        free(text);
    }
    emu_smem_stats_free(&st);
    return res;
}

/* The emulator's module from the LLVM IR text. */
static trt_status emu_code_load(trt_module *m, const void *image, size_t size) {
    trt_device *d = m->dev;
    m->code = emu_module_load(image, size, d->err, sizeof d->err);
    return m->code ? TRT_OK : TRT_ERR_COMPILE;
}

static void emu_code_unload(trt_module *m) {
    if (m->code) emu_module_free(m->code);
}

/* The kernel's tensor maps (internal.h, "tensor maps") in one more launch
 * buffer, host memory aligned as the emulator reads maps, which the
 * hidden parameters point into (one map each, after the user's); `bufs`
 * has room for it at index nbufs. False with the launch's error set. */
static trt_status emu_tensor_maps(trt_kernel *k, const rt_arg *args, emu_buffer *bufs, uint32_t nbufs, emu_arg *ea,
                                  uint32_t nargs, void **maps) {
    uint32_t n = k->func->ntmaps;
    *maps = NULL;
    if (!n) return TRT_OK;
    _Static_assert((int)RT_TMAP_BYTES == (int)EMU_TENSOR_MAP_BYTES && (int)RT_TMAP_ALIGN % (int)EMU_TENSOR_MAP_ALIGN == 0,
                   "the emulator's maps fit the runtime's hidden parameters");
    *maps = aligned_alloc(RT_TMAP_ALIGN, (size_t)n * RT_TMAP_BYTES);
    if (!*maps) return rt_fail(k->mod->dev, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        rt_tmap_desc t;
        trt_status st = rt_tmap_desc_make(k, i, args, &t);
        if (st != TRT_OK) return st;
        static const emu_swizzle swizzles[] = {[0] = EMU_SWIZZLE_NONE, [1] = EMU_SWIZZLE_32B, [2] = EMU_SWIZZLE_64B,
                                               [4] = EMU_SWIZZLE_128B};
        emu_tensor_map_desc e = {.global_address = emu_buffer_address(bufs, t.buffer, t.offset),
                                 .elem_bytes = t.elem_bytes, .rank = t.rank, .swizzle = swizzles[t.swizzle / 32]};
        for (uint32_t d = 0; d < t.rank; d++) {
            e.global_dim[d] = t.dim[d];
            if (d) e.global_stride[d - 1] = t.stride[d - 1];
            e.box_dim[d] = t.box[d];
            e.element_stride[d] = 1;
        }
        char why[RT_ERR_MAX / 2];
        if (!emu_tensor_map_encode((char *)*maps + (size_t)i * RT_TMAP_BYTES, &e, why, sizeof why))
            return rt_tmap_fail(k, i, why);
        ea[nargs + i] = (emu_arg){.is_ptr = true, .buffer = nbufs, .offset = (uint64_t)i * RT_TMAP_BYTES};
    }
    bufs[nbufs] = (emu_buffer){.data = *maps, .size = (size_t)n * RT_TMAP_BYTES};
    return TRT_OK;
}

/* Pointers as (buffer, offset), scalars as the bits the GPU would get;
 * the tensor maps after them. */
static trt_status emu_code_launch(trt_kernel *k, void *stream, const uint32_t grid[3], const rt_arg *args,
                                  uint32_t nargs) {
    trt_module *m = k->mod;
    trt_device *d = m->dev;
    emu_arg ea[RT_TMAP_MAX_ARGS];
    for (uint32_t i = 0; i < nargs; i++)
        ea[i] = (emu_arg){.is_ptr = args[i].kind == RT_ARG_PTR, .buffer = args[i].buffer,
                          .offset = (uint64_t)args[i].offset, .bits = args[i].bits};
    rt_buffer *host = rt_host_buffers(d);
    /* +1 for the tensor maps, +1 so never an empty allocation */
    emu_buffer *bufs = host ? calloc(d->nbufs + 2, sizeof *bufs) : NULL;
    if (!bufs) {
        free(host);
        return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t i = 0; i < d->nbufs; i++) bufs[i] = (emu_buffer){.data = host[i].data, .size = host[i].size};
    free(host);
    void *maps;
    trt_status st = emu_tensor_maps(k, args, bufs, d->nbufs, ea, nargs, &maps);
    if (st != TRT_OK) {
        free(maps), free(bufs);
        return st;
    }
    uint32_t nmaps = k->func->ntmaps;
    emu_launch l = {.kernel = k->func->name, .grid = {grid[0], grid[1], grid[2]}, .args = ea, .nargs = nargs + nmaps,
                    .buffers = bufs, .nbuffers = d->nbufs + (nmaps ? 1 : 0), .print = d->print,
                    .print_user = d->print_user, .dynamic_smem = k->func->dynamic_smem,
                    .time_limit_ms = d->time_limit_s * 1e3};
    emu_result res = emu_run_counted(m->code, &l, d->err, sizeof d->err);
    free(maps), free(bufs);
    /* the one trap tilec emits: a bulk tensor copy starting before its
     * tensor (lower/cg_tma.c); say what it means */
    size_t used = strlen(d->err);
    if (res == EMU_ERROR && k->func->ntmaps && strstr(d->err, "trap:") && used + 1 < sizeof d->err)
        snprintf(d->err + used, sizeof d->err - used,
                 "\n(a bulk tensor copy's coordinate below 0: a loop's load starts before its tensor, which sm_90a's "
                 "copies cannot read; compile for sm_90 to read before a pointer argument)");
    return res == EMU_OK ? TRT_OK : res == EMU_ASSERT ? TRT_ERR_ASSERT : TRT_ERR_LAUNCH;
}

const rt_device_ops rt_emu_code = {
    .kind = TRT_DEVICE_EMU,
    .code = RT_CODE_LLVM,
    .load = emu_code_load,
    .unload = emu_code_unload,
    .launch = emu_code_launch,
};
