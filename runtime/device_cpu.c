/* device_cpu.c - the CPU device: host memory (device_host.c), and
 * launches that run the kernel's tile IR in the interpreter (interp.c)
 * over the whole grid before they return. It has no code to load beyond
 * the tile IR that every module holds. */
#include <stdlib.h>

#include "runtime/internal.h"
#include "runtime/interp.h"

static const char *cpu_name(const trt_device *d) { return "cpu (tile IR interpreter)"; }

static trt_status cpu_load(trt_module *m, const void *image, size_t size) { return TRT_OK; }

static void cpu_unload(trt_module *m) {}

/* Pointers as (buffer, offset) into the device's table of buffers, each
 * access checked; errors name the kernel's .tile line. */
static trt_status cpu_launch(trt_kernel *k, void *stream, const uint32_t grid[3], const rt_arg *args,
                             uint32_t nargs) {
    trt_device *d = k->mod->dev;
    /* the interpreter copies without maps, but refuses what the GPU would */
    trt_status checked = rt_tmaps_check(k, args);
    if (checked != TRT_OK) return checked;
    rt_buffer *bufs = rt_host_buffers(d);
    if (!bufs) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    rt_launch l = {.func = k->func, .file = k->mod->file, .buffers = bufs, .nbuffers = d->nbufs, .args = args,
                   .nargs = nargs, .grid = {grid[0], grid[1], grid[2]}, .time_limit_ms = d->time_limit_s * 1e3};
    tc_diag diag;
    tc_diag_init(&diag);
    rt_print_sink sink = {.fn = d->print, .user = d->print_user};
    rt_run_result run = rt_interp_launch(&l, &sink, &diag);
    free(bufs);
    trt_status st = run == RT_RUN_OK       ? TRT_OK
                    : run == RT_RUN_ASSERT ? rt_fail(d, TRT_ERR_ASSERT, "%s", diag.out.data)
                                           : rt_fail(d, TRT_ERR_LAUNCH, "%s", diag.out.data);
    tc_diag_free(&diag);
    return st;
}

const rt_device_ops rt_cpu_device = {
    .kind = TRT_DEVICE_CPU,
    .code = RT_CODE_TIR,
    .print_fn = true,
    .time_limit = true,
    .name = cpu_name,
    RT_HOST_MEMORY_OPS,
    .load = cpu_load,
    .unload = cpu_unload,
    .launch = cpu_launch,
    .tune_cost = rt_tune_standin, /* runtime/tune_cost.c: not a time */
};
