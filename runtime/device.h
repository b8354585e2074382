/* device.h - private to runtime/: the interface every device implements,
 * one table of operations per device, chosen once when trt_open opens it,
 * so that the API of runtime.c calls through the table instead of asking
 * which device it is on.
 *
 * Three tables, each in a file of its own: the CPU device (device_cpu.c,
 * the tile IR interpreter of interp.c), the CUDA device (device_cuda.c,
 * over cuda.c) and the emulator device (device_emu.c). The CPU and the
 * emulator devices share host memory (device_host.c).
 *
 * The emulator runs the LLVM IR that trt_compile makes, with emu/, which
 * links LLVM; the runtime proper (tilec_runtime) links neither. So the
 * emulator device's own table loads no code, and trt_compile, in the
 * compiler's library, loads a module's code with rt_emu_code
 * (device_emu_code.c), a table of the same type of which only the module
 * operations are set: the module keeps the table that loaded its code
 * (trt_module.ops) and runs its kernels through it.
 *
 * The runtime checks what it can before it calls an operation (a live
 * buffer, a range inside it, the launch's arguments against the kernel's
 * signature); an operation that fails sets the device's last error (d->err)
 * and returns its status. */
#ifndef TILEC_RUNTIME_DEVICE_H
#define TILEC_RUNTIME_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/args.h"
#include "tilec_rt.h"

/* The code a device runs, which trt_compile makes for it. */
typedef enum rt_code {
    RT_CODE_TIR,   /* tile IR with source lines (the interpreter) */
    RT_CODE_LLVM,  /* the NVPTX LLVM IR, optimized (the emulator) */
    RT_CODE_CUBIN  /* a cubin for the GPU */
} rt_code;

/* One configuration's measure for the tuner (tune.c, docs/tuning.md): its
 * compiled kernel, the launch, how often, and the L2 flush between timed
 * runs (which the search compiles and allocates at its first call). */
typedef struct rt_tune_trial {
    trt_kernel *k;
    uint32_t grid[3];
    const trt_arg *args;
    size_t nargs;
    int num_warps, num_stages; /* the configuration's (0: the compiler's) */
    int warmup, reps;
    trt_status (*flush_l2)(void *ctx);
    void *flush_ctx;
} rt_tune_trial;

typedef struct rt_device_ops {
    trt_device_kind kind; /* never AUTO */
    rt_code code;
    /* the disk cache's file extension for the code beside the tile IR
     * (compile.c); NULL: the tile IR is the code */
    const char *image_ext;
    /* whether print's lines can go to a function (trt_set_print); the
     * GPU's printf writes to the process's stdout */
    bool print_fn;
    /* whether a launch stops at the device's time limit (trt_set_time_limit) */
    bool time_limit;

    /* The device's own state into *impl (device_cuda.c: the rt_cuda);
     * false with a message in why. NULL: nothing to open or close. */
    bool (*open)(void **impl, char *why, size_t why_size);
    void (*close)(void *impl);
    const char *(*name)(const trt_device *d);
    /* The GPU's arch ("sm_90"); NULL: not a GPU. */
    const char *(*arch)(const trt_device *d);
    /* Its multiprocessors, 0 if unknown; NULL: not a GPU. */
    int (*sm_count)(const trt_device *d);
    /* The arch trt_compile builds for unless its options say; NULL: the
     * code has none (tile IR). */
    const char *(*code_arch)(const trt_device *d);

    /* Memory: a buffer is its device address (on the host, the pointer). */
    trt_status (*alloc)(trt_device *d, size_t bytes, uint64_t *addr);
    void (*free)(trt_device *d, uint64_t addr);
    /* Whether bytes at ptr are memory of the device that trt_wrap may take. */
    trt_status (*check_wrap)(trt_device *d, uint64_t ptr, size_t bytes);
    /* Copies: on `stream` when not NULL (queued), else synchronous. */
    trt_status (*write)(trt_device *d, uint64_t dst, const void *src, size_t bytes, void *stream);
    trt_status (*read)(trt_device *d, void *dst, uint64_t src, size_t bytes, void *stream);

    /* Streams (*stream NULL where the device has none) and waiting. */
    trt_status (*stream_create)(trt_device *d, void **stream);
    trt_status (*stream_sync)(trt_device *d, void *stream);
    void (*stream_destroy)(trt_device *d, void *stream); /* after its queued work */
    trt_status (*sync)(trt_device *d);

    /* Why trt_load cannot load the module at path built by tilec; NULL:
     * it can. */
    trt_status (*check_prebuilt)(trt_device *d, const char *path);
    /* Loads the module's code from image (size bytes; NUL-terminated
     * text where the code is text) and looks up its kernels (into
     * trt_kernel.fn), after rt_module_make has read their tile IR; on
     * failure it leaves nothing loaded. */
    trt_status (*load)(trt_module *m, const void *image, size_t size);
    void (*unload)(trt_module *m);
    /* Runs kernel k on grid with its checked arguments (one per
     * parameter), on stream when not NULL. */
    trt_status (*launch)(trt_kernel *k, void *stream, const uint32_t grid[3], const rt_arg *args, uint32_t nargs);

    /* Graphs (graph.c): a device that captures launches itself starts
     * recording the stream's launches, ends into an executable graph
     * (*exec; with exec NULL it only ends and discards), replays one on a
     * stream (NULL: the default one), and frees one. NULL entries: the
     * device does not capture, and the runtime replays its own record of
     * the launches one by one (the host devices). */
    trt_status (*capture_begin)(trt_device *d, void *stream);
    trt_status (*capture_end)(trt_device *d, void *stream, void **exec);
    trt_status (*graph_launch)(trt_device *d, void *exec, void *stream);
    void (*graph_destroy)(trt_device *d, void *exec);
    /* Whether a capture this device did not start (another trt_device on
     * the same GPU context, other code in the process) blocks the default
     * stream now; NULL: none can. */
    bool (*capturing_elsewhere)(trt_device *d);
    /* The tuner's cost of one configuration, lower is better, and whether
     * it is a time (*timed): NULL, the median microseconds of timed
     * launches with the L2 flushed before each (rt_tune_time, tune_time.c:
     * the GPU); the host devices' rt_tune_standin (tune_cost.c) launches
     * once and returns a deterministic stand-in, not a time. */
    trt_status (*tune_cost)(trt_device *d, const rt_tune_trial *t, double *cost, bool *timed);
} rt_device_ops;

extern const rt_device_ops rt_cpu_device, rt_cuda_device, rt_emu_device;
/* In the compiler's library (tilec_runtime_compile): only load, unload
 * and launch. */
extern const rt_device_ops rt_emu_code;

/* Host memory, for the CPU and emulator devices' tables (device_host.c). */
trt_status rt_host_alloc(trt_device *d, size_t bytes, uint64_t *addr);
void rt_host_free(trt_device *d, uint64_t addr);
trt_status rt_host_check_wrap(trt_device *d, uint64_t ptr, size_t bytes);
trt_status rt_host_write(trt_device *d, uint64_t dst, const void *src, size_t bytes, void *stream);
trt_status rt_host_read(trt_device *d, void *dst, uint64_t src, size_t bytes, void *stream);
trt_status rt_host_stream_create(trt_device *d, void **stream);
trt_status rt_host_stream_sync(trt_device *d, void *stream);
void rt_host_stream_destroy(trt_device *d, void *stream);
trt_status rt_host_sync(trt_device *d);
/* The memory, stream and sync entries of a device on host memory, for its
 * table's designated initializer. */
#define RT_HOST_MEMORY_OPS                                                                               \
    .alloc = rt_host_alloc, .free = rt_host_free, .check_wrap = rt_host_check_wrap, .write = rt_host_write,  \
    .read = rt_host_read, .stream_create = rt_host_stream_create, .stream_sync = rt_host_stream_sync,       \
    .stream_destroy = rt_host_stream_destroy, .sync = rt_host_sync
/* The device's buffers as a launch's table, d->nbufs of them (+1, so never
 * an empty allocation), freed by the caller; NULL when out of memory. */
rt_buffer *rt_host_buffers(const trt_device *d);

/* The tuner's measures (rt_device_ops.tune_cost). */
trt_status rt_tune_time(trt_device *d, const rt_tune_trial *t, double *cost, bool *timed);
trt_status rt_tune_standin(trt_device *d, const rt_tune_trial *t, double *cost, bool *timed);

#endif
