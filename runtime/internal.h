/* internal.h - private to runtime/: the objects behind include/tilec_rt.h,
 * shared by the runtime proper (runtime.c), the devices that implement
 * device.h (device_*.c) and the compile entry point (compile.c), which is
 * kept apart so that a program that only loads prebuilt cubins does not
 * link the compiler and LLVM. */
#ifndef TILEC_RUNTIME_INTERNAL_H
#define TILEC_RUNTIME_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/device.h"
#include "tilec_rt.h"
#include "tileir/tileir.h"

enum {
    RT_ERR_MAX = 8192,         /* bytes of the last error message kept */
    RT_ARCH_MAX = 16,          /* bytes of an arch name ("sm_90a") and its NUL */
    RT_MAX_BUFFERS = 1 << 20,  /* live buffers per device */
    RT_BUFFER_ALIGN = 64,      /* host allocations; the compiler assumes 16 */
    RT_PTR_ALIGN = 16,         /* what pointer arguments must be (LOWER_ASSUMED_PTR_ALIGN) */
    RT_MAX_GRID_X = 2147483647, /* program instances along x a CUDA launch takes (2^31 - 1) */
    RT_MAX_GRID_YZ = 65535     /* ... and along y and z */
};

typedef struct buf_slot {
    uint64_t addr; /* the device's address of it (on the host, the pointer) */
    size_t size;
    uint32_t gen; /* bumped on free: old handles no longer match */
    bool live;
    bool borrowed; /* trt_wrap: someone else's memory, never freed here */
} buf_slot;

typedef struct cache_entry {
    uint64_t key;
    char *tir;   /* tile IR text with locations */
    char *cubin; /* the device's code (rt_code): the cubin, the optimized LLVM IR text, or NULL */
    size_t cubin_size;
    struct cache_entry *next;
} cache_entry;

/* A module a library on the runtime (the stdlib entry points) compiled
 * and keeps loaded for the device's lifetime (rt_compile_kept). */
typedef struct kept_module {
    uint64_t key;
    trt_module *mod;
    struct kept_module *next;
} kept_module;

struct trt_device {
    const rt_device_ops *ops; /* chosen by trt_open */
    void *impl;               /* the device's own state (ops->open) */
    bool closed;
    int refs; /* the user's, plus one per module, stream and graph */
    char err[RT_ERR_MAX];
    buf_slot *bufs;
    uint32_t nbufs, capbufs;
    cache_entry *cache;
    kept_module *kept; /* freed by trt_close */
    trt_print_fn print; /* CPU and emulator devices: where print's lines go; NULL: stdout */
    void *print_user;
    double time_limit_s; /* launches stop past it (trt_set_time_limit); 0: none */
    uint32_t tag; /* in its buffers' handles (runtime.c): another device's are refused */
    uint32_t capturing; /* streams recording a graph (graph.c): the default stream, copies,
                           allocation and module loads are refused meanwhile */
    trt_stream *captures; /* those streams, which trt_close ends */
    trt_module *deferred; /* modules freed while capturing, unloaded when the last capture ends */
    char emu_arch[RT_ARCH_MAX]; /* the emulator device's target (trt_emu_set_arch); "": the default */
    trt_tuning *tuning; /* the caller's, consulted before the stdlib's tables (trt_use_tuning); NULL: none */
};

struct trt_kernel {
    trt_module *mod;
    const tir_func *func;
    void *fn; /* the device's handle of the loaded kernel (a CUfunction) */
    char **param_types;
};

struct trt_stream {
    trt_device *dev;
    void *handle;      /* the device's (a CUstream); NULL where it has none */
    trt_graph *capture; /* the graph its launches go into (trt_stream_begin_capture); NULL: none */
    trt_stream *next_capture; /* the device's list of capturing streams (trt_device.captures) */
};

/* One launch a graph holds: the kernel and the caller's arguments,
 * checked again at every replay (a buffer freed since is an error, not a
 * stale address). */
typedef struct rt_graph_node {
    trt_kernel *k;
    uint32_t grid[3];
    trt_arg args[RT_MAX_ARGS];
    uint32_t nargs;
} rt_graph_node;

/* A recorded sequence of launches (graph.c). On a device that captures
 * (rt_device_ops.capture_begin) exec is its executable graph and replay
 * launches it whole; elsewhere replay runs the nodes one by one. */
struct trt_graph {
    trt_device *dev;    /* holds a reference */
    void *exec;         /* the device's executable graph (a CUgraphExec); NULL: replayed node by node */
    rt_graph_node *nodes;
    uint32_t nnodes, capnodes;
    trt_module **mods;  /* the modules of its kernels, one reference each, so that they stay loaded */
    uint32_t nmods, capmods;
    bool broken;        /* the device refused a launch while capturing: ending the capture fails */
    char why[RT_ERR_MAX]; /* that refusal's message */
};

struct trt_module {
    trt_device *dev;
    int refs; /* the owner's (trt_module_free drops it), plus one per graph that launches its kernels */
    trt_module *next_deferred; /* trt_device.deferred */
    /* the table that loaded the code and runs the kernels: the device's,
     * but rt_emu_code for the emulator's modules (device.h) */
    const rt_device_ops *ops;
    void *code; /* the device's handle of the loaded code (a CUmodule, an emu_module) */
    tc_arena *arena;
    tir_module *ir;
    char *file;
    trt_kernel *kernels;
    uint32_t nkernels;
    void *tmaps; /* the device's copies of its kernels' tensor maps (device_cuda.c), freed by unload; NULL: none */
};

/* Whether code tilec built for `built` ("sm_80", "sm_90a") runs on a GPU
 * of arch `device`: PTX on the same or newer, machine code on the same
 * major version with the same or newer minor, sm_XYa code only on sm_XY. */
bool rt_arch_compatible(bool ptx, const char *built, const char *device);

/* ---- several compiles at once (compile.c) ----------------------------
 * A batch is trt_compile's work for several requests split in three: the
 * caller's thread finds what the caches hold already (rt_batch_begin),
 * any threads run libtilec on the rest (rt_batch_work, which touches no
 * device state), and the caller's thread puts the results into the
 * device's memory cache (rt_batch_end), where trt_compile then finds
 * them. A request that failed keeps its diagnostics (rt_batch_error). */
enum { RT_MAX_COMPILE_THREADS = 64 }; /* threads a batch runs on: past the CPUs they only wait */
typedef struct rt_batch rt_batch;
/* NULL when out of memory (then nothing was compiled). */
rt_batch *rt_batch_begin(trt_device *d, const trt_compile_request *reqs, size_t n);
void rt_batch_work(rt_batch *b, size_t i);
void rt_batch_end(rt_batch *b);
/* Request i's diagnostics if libtilec failed on it, else NULL. */
const char *rt_batch_error(const rt_batch *b, size_t i);
void rt_batch_free(rt_batch *b);
/* fn(ctx, i) for each i below n, on up to min(n, CPUs,
 * RT_MAX_COMPILE_THREADS) threads, this one among them; returns when all
 * are done. */
void rt_parallel_for(size_t n, void (*fn)(void *ctx, size_t i), void *ctx);
/* The whole batch on threads, into the memory cache; failures are left
 * for the trt_compile that follows to report. */
void rt_compile_prefetch(trt_device *d, const trt_compile_request *reqs, size_t n);

/* Ends every capture of the device, discarding them (trt_close), and
 * unloads the modules freed meanwhile. */
void rt_end_captures(trt_device *d);
/* Unloads and frees a module no one holds any more. */
void rt_module_unload(trt_module *m);
/* Drops a reference to the device (the user's, a module's, a stream's or
 * a graph's); the last frees it. */
void rt_release(trt_device *d);

/* Sets the device's last error (the arguments may include the old one);
 * returns st. */
trt_status rt_fail(trt_device *d, trt_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A module from tile IR text (kernels, signatures) and, for the CUDA
 * device, a cubin or PTX image (image_size bytes), which the device's
 * table loads. `file` names the .tile source, which the IR's locations
 * and runtime errors refer to; `tir_file` names the IR text itself for
 * errors in reading it (a sidecar on disk), NULL: `file`. */
trt_status rt_module_make(trt_device *d, const char *file, const char *tir_file, const char *tir, const void *image,
                          size_t image_size, trt_module **out);

/* trt_compile, but the module stays with the device, which frees it at
 * trt_close: a second call with the same source and options returns the
 * same module without compiling or loading anything. The caller must not
 * free it. */
trt_status rt_compile_kept(trt_device *d, const char *file, const char *src, size_t len, const trt_compile_options *o,
                           trt_module **out);
/* Whether the device is capturing a graph on some stream: then an error
 * naming `what` (the work the default stream or the host would wait for,
 * which a capture cannot hold); TRT_OK otherwise. */
trt_status rt_refuse_capturing(trt_device *d, const char *what);
/* Checks a launch against the kernel's parameters (count, kinds, ranges,
 * live buffers, alignment) into ra, the form the devices take (runtime.c). */
trt_status rt_check_launch(trt_kernel *k, const uint32_t grid[3], const trt_arg *args, size_t nargs, rt_arg *ra);
/* A checked launch on stream s while it captures: into its graph, and on
 * a device that captures, through the device too (graph.c). */
trt_status rt_graph_record(trt_stream *s, trt_kernel *k, const uint32_t grid[3], const trt_arg *args, uint32_t nargs,
                           const rt_arg *ra);
/* The size of a live buffer of the device (an error, with a message, for a
 * freed or foreign handle or a closed device). */
trt_status rt_buffer_size(trt_device *d, trt_buffer b, size_t *bytes);

/* ---- tensor maps (tensor_maps.c; docs/design.md, "Tensor maps") ----------
 * A kernel's tensor maps (tir_func.tmaps: Hopper's bulk tensor copies) are
 * made at each launch from its own arguments, on the devices that run
 * generated code, and passed as hidden pointer parameters after the
 * user's, one a map, each at RT_TMAP_BYTES bytes of global memory aligned
 * to RT_TMAP_ALIGN. What the copy engine requires of the arguments is
 * checked here once for every device, so that a launch the GPU's driver
 * would refuse fails the same way, with a message naming the argument, on
 * the emulator and the CPU too. */
enum {
    RT_TMAP_BYTES = 128,        /* a CUtensorMap; the emulator's maps too (EMU_TENSOR_MAP_BYTES) */
    RT_TMAP_ALIGN = 64,         /* where a map must lie */
    RT_TMAP_ADDR_ALIGN = 16,    /* the tensor's global address */
    RT_TMAP_STRIDE_ALIGN = 16,  /* each stride in bytes is a multiple of it */
    RT_TMAP_MAX_ARGS = RT_MAX_ARGS + TIR_MAX_TMAPS /* a launch's parameters with the hidden ones */
};
#define RT_TMAP_MAX_DIM ((int64_t)1 << 32)    /* elements of a global dim: 1 to this */
#define RT_TMAP_MAX_STRIDE ((int64_t)1 << 40) /* bytes of a stride: below this */

/* One map as the encoders (cuTensorMapEncodeTiled, emu_tensor_map_encode)
 * take it: dim 0 innermost, strides in bytes for dims 1.. (stride[d - 1]). */
typedef struct rt_tmap_desc {
    uint64_t address;     /* the base argument's bits: its device address */
    uint32_t buffer;      /* ... and as (buffer, offset), for the host devices */
    uint64_t offset;
    uint32_t elem_bytes;  /* 1, 2, 4 or 8: the base pointer's pointee */
    uint32_t rank;
    uint32_t swizzle;     /* bytes: 0, 32, 64 or 128 */
    uint64_t dim[TIR_TMAP_MAX_RANK];
    uint64_t stride[TIR_TMAP_MAX_RANK - 1];
    uint32_t box[TIR_TMAP_MAX_RANK];
} rt_tmap_desc;

/* Map i of kernel k for a launch with these checked arguments (one per
 * parameter) into *out; TRT_ERR_ARGUMENTS, with the device's last error
 * naming the kernel, the argument and what is wrong, where the copy engine
 * could not take it (a dim outside 1..2^32, a stride not a multiple of 16
 * bytes or past 2^40, a base address not 16-byte aligned). */
trt_status rt_tmap_desc_make(trt_kernel *k, uint32_t i, const rt_arg *args, rt_tmap_desc *out);
/* Every map of k checked as above (the CPU device, which copies with the
 * interpreter and needs no maps, refuses what the GPU would). */
trt_status rt_tmaps_check(trt_kernel *k, const rt_arg *args);
/* The launch's error for map i that a device's encoder refused: `why`
 * after the kernel and argument, as rt_tmap_desc_make words them. */
trt_status rt_tmap_fail(trt_kernel *k, uint32_t i, const char *why);

#endif
