/* tilec_rt.h - the tilec runtime: compile kernels, move data, launch.
 *
 *   trt_device *dev;
 *   trt_open(TRT_DEVICE_AUTO, &dev, why, sizeof why);
 *   trt_module *mod;
 *   trt_compile(dev, "vadd.tile", src, len, NULL, &mod);
 *   trt_kernel *vadd;
 *   trt_get_kernel(mod, "vadd", &vadd);
 *   trt_buffer x; trt_alloc(dev, bytes, &x); trt_write(dev, x, 0, host, bytes);
 *   trt_arg args[] = {trt_buf(x), ..., trt_int(n)};
 *   trt_launch(vadd, grid_x, 1, 1, args, 4);
 *   trt_read(dev, out, 0, host_out, bytes);
 *
 * Every call returns a status; after an error trt_last_error(dev) says what
 * went wrong. Handles are checked: a freed buffer, a kernel of a closed
 * device or an argument of the wrong kind is an error, never a crash.
 * Devices: the CPU device runs kernels in the tile IR interpreter, checking
 * every memory access; the CUDA device loads libcuda at run time (dlopen),
 * so programs build and run where there is none; the emulator device
 * (TRT_DEVICE_EMU) runs the NVPTX LLVM IR the compiler generates for the
 * GPU on the host, one CTA at a time, checking every memory access: it is
 * for testing the compiler without a GPU, and slow. TRT_DEVICE_AUTO gives
 * the GPU when a driver and a device are there, else the CPU. Streams order
 * work on the GPU (trt_stream_*); graphs replay a recorded sequence of
 * launches (trt_graph_*). See docs/runtime.md. */
#ifndef TILEC_RT_H
#define TILEC_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum trt_status {
    TRT_OK = 0,
    TRT_ERR_INVALID_ARGUMENT, /* a NULL, a size or offset out of range */
    TRT_ERR_INVALID_HANDLE,   /* a freed or foreign buffer */
    TRT_ERR_NO_DEVICE,        /* the device kind cannot be opened here */
    TRT_ERR_COMPILE,          /* the source has errors: see trt_last_error */
    TRT_ERR_NOT_FOUND,        /* no kernel of that name */
    TRT_ERR_ARGUMENTS,        /* launch arguments do not match the kernel */
    TRT_ERR_LAUNCH,           /* the kernel failed while running */
    TRT_ERR_CLOSED,           /* the device was closed */
    TRT_ERR_OUT_OF_MEMORY,
    TRT_ERR_ARCH,             /* a module built for another GPU architecture */
    TRT_ERR_ASSERT            /* an assert in the kernel failed: see trt_last_error; on
                                 the GPU the device is unusable afterwards (close it) */
} trt_status;

typedef enum trt_device_kind {
    TRT_DEVICE_AUTO,
    TRT_DEVICE_CPU,
    TRT_DEVICE_CUDA,
    TRT_DEVICE_EMU /* runs the generated NVPTX LLVM IR on the host, one CTA at a time
                      (emu/emu.h); for testing the compiler without a GPU; slow. Needs
                      trt_compile (trt_load has no LLVM IR to run) */
} trt_device_kind;

typedef struct trt_device trt_device;
typedef struct trt_module trt_module;
typedef struct trt_kernel trt_kernel;
typedef struct trt_buffer {
    uint64_t handle; /* 0 is never a valid buffer */
} trt_buffer;

typedef enum trt_arg_kind { TRT_ARG_BUFFER, TRT_ARG_INT, TRT_ARG_FLOAT } trt_arg_kind;
typedef struct trt_arg {
    trt_arg_kind kind;
    trt_buffer buffer; /* TRT_ARG_BUFFER, pointing `offset` bytes in */
    size_t offset;
    int64_t i;         /* TRT_ARG_INT: any integer or i1 parameter */
    double f;          /* TRT_ARG_FLOAT: any float parameter */
} trt_arg;

static inline trt_arg trt_buf(trt_buffer b) { trt_arg a = {TRT_ARG_BUFFER, b, 0, 0, 0}; return a; }
static inline trt_arg trt_buf_at(trt_buffer b, size_t offset) { trt_arg a = {TRT_ARG_BUFFER, b, offset, 0, 0}; return a; }
static inline trt_arg trt_int(int64_t v) { trt_arg a = {TRT_ARG_INT, {0}, 0, v, 0}; return a; }
static inline trt_arg trt_float(double v) { trt_arg a = {TRT_ARG_FLOAT, {0}, 0, 0, v}; return a; }

/* A pointer argument of the typed launchers tilec --emit=c writes:
 * `offset` bytes into a buffer. */
typedef struct trt_ptr {
    trt_buffer buffer;
    size_t offset;
} trt_ptr;
static inline trt_ptr trt_ptr_of(trt_buffer b) { trt_ptr p = {b, 0}; return p; }
static inline trt_ptr trt_ptr_at(trt_buffer b, size_t offset) { trt_ptr p = {b, offset}; return p; }
/* A launch's grid of program instances, for the typed launchers. */
typedef struct trt_grid {
    uint32_t x, y, z;
} trt_grid;
static inline trt_grid trt_grid_of(uint32_t x, uint32_t y, uint32_t z) { trt_grid g = {x, y, z}; return g; }

typedef struct trt_compile_options {
    const char *arch;            /* CUDA only; NULL: the device's */
    int num_warps;               /* 0: default */
    const tilec_define *defines; /* const parameter values */
    size_t ndefines;
    bool no_asserts;             /* check assert(...) but leave it out (default: in) */
    int num_stages;              /* software-pipelining depth, 1 to 8; 0: the compiler's */
    bool exp2_ftz;               /* tilec_options.exp2_ftz: exp2 flushes results below 2^-126
                                    to zero on the GPU (default: keeps them) */
    int warp_specialize;         /* tilec_options.warp_specialize (sm_90a): a producer
                                    warpgroup issues the bulk copies of loops that name
                                    no choice; TILEC_WARP_SPECIALIZE_AUTO (0), _ON, _OFF */
    const char *kernel;          /* NULL: every kernel of the file; else only this one, in
                                    a module of its own (tilec_options.kernel): what a call
                                    that launches one kernel of a file of many compiles */
} trt_compile_options;

/* Opens a device. On failure *out is NULL and `why` (if not NULL) gets a
 * message. */
TILEC_API trt_status trt_open(trt_device_kind kind, trt_device **out, char *why, size_t why_size);
/* Frees the device's buffers; modules stay valid to free, but launching
 * their kernels gives TRT_ERR_CLOSED. */
TILEC_API void trt_close(trt_device *dev);
TILEC_API const char *trt_device_name(const trt_device *dev); /* "cpu (tile IR interpreter)" */
/* The GPU's architecture ("sm_90"), what tilec --arch takes; "" on the CPU. */
TILEC_API const char *trt_device_arch(const trt_device *dev);
TILEC_API const char *trt_last_error(const trt_device *dev);   /* "" if none */
TILEC_API const char *trt_status_name(trt_status s);

/* Where the CPU and emulator devices write the lines kernels print: fn(user, text, len)
 * once per line (text ends in '\n'), during trt_launch. fn NULL: stdout
 * (the default). The GPU's printf always goes to the process's stdout,
 * written by the driver when the host next waits for the GPU (trt_sync,
 * trt_read); setting a function there is TRT_ERR_INVALID_ARGUMENT. */
typedef void (*trt_print_fn)(void *user, const char *text, size_t len);
TILEC_API trt_status trt_set_print(trt_device *dev, trt_print_fn fn, void *user);

/* On the CPU and emulator devices, a launch that runs longer than
 * `seconds` stops with TRT_ERR_LAUNCH and a message naming the loop it was
 * in (a kernel whose loop never ends would otherwise hang the program); 0
 * (the default): none. The GPU refuses a limit (TRT_ERR_INVALID_ARGUMENT). */
TILEC_API trt_status trt_set_time_limit(trt_device *dev, double seconds);

/* The emulator device runs the code the compiler makes for GPU `arch`
 * ("sm_80", the default, to "sm_90a": Hopper's wgmma): trt_compile builds
 * for it unless its options name another, and the stdlib chooses its
 * kernels' configurations for it. Set it before compiling; other devices
 * refuse (TRT_ERR_INVALID_ARGUMENT: the GPU's is the GPU's). */
TILEC_API trt_status trt_emu_set_arch(trt_device *dev, const char *arch);

/* Compiles `.tile` source for the device. Compiled modules are cached in
 * memory by (source, options): compiling the same thing again is free. */
TILEC_API trt_status trt_compile(trt_device *dev, const char *filename, const char *source, size_t len,
                                 const trt_compile_options *opt, trt_module **out);
/* What one trt_compile call takes, for trt_compile_many. */
typedef struct trt_compile_request {
    const char *filename;               /* NULL: "<source>" */
    const char *source;
    size_t len;
    const trt_compile_options *options; /* NULL: the defaults */
} trt_compile_request;
/* Compiles several modules at once, the compiles on threads (up to one a
 * CPU): a program's kernels or the specializations it will launch, ahead
 * of their first use. out[i] is what trt_compile would give for
 * requests[i], a module or NULL, and status[i] (where status is not NULL)
 * its status; what the caches hold already is not compiled again. Returns
 * TRT_OK when every request compiled, else the first failure's status,
 * with its message in trt_last_error ("request I: ..."). */
TILEC_API trt_status trt_compile_many(trt_device *dev, const trt_compile_request *requests, size_t n,
                                      trt_module **out, trt_status *status);
/* Loads a module tilec built ahead of time: `path` is its .cubin (or .ptx)
 * and `path`.tir the sidecar tilec writes beside it, with the kernels'
 * signatures and tile IR (the CPU device runs that IR; the CUDA device
 * loads the cubin and checks launches against the signatures). Needs no
 * compiler: a program that only loads modules does not link LLVM. */
TILEC_API trt_status trt_load(trt_device *dev, const char *path, trt_module **out);
/* A module's code as a program carries it (tilec --emit=c writes the
 * arrays): the GPU code for one architecture, a cubin or PTX text ending
 * in a NUL byte, and the sidecar tilec writes beside it (NUL-terminated
 * tile IR text, whose "// target:" line says what the code is). */
typedef struct trt_image {
    const void *data;
    size_t size;
    const char *tir;
} trt_image;
/* Loads a module from images in memory, with no file and no compiler: on
 * a GPU the first image whose code runs there (order them machine code
 * first, then PTX for newer GPUs; none: TRT_ERR_ARCH naming what there
 * is), on the CPU device the first image's tile IR. The emulator device
 * cannot (it runs LLVM IR from trt_compile). */
TILEC_API trt_status trt_load_images(trt_device *dev, const trt_image *images, size_t n, trt_module **out);
TILEC_API void trt_module_free(trt_module *mod);
TILEC_API trt_status trt_get_kernel(trt_module *mod, const char *name, trt_kernel **out);
/* The module's kernels in file order: count, the i-th (NULL past the end),
 * and a kernel's name. */
TILEC_API size_t trt_module_num_kernels(const trt_module *mod);
TILEC_API trt_kernel *trt_module_kernel(trt_module *mod, size_t i);
TILEC_API const char *trt_kernel_name(const trt_kernel *k);
/* The kernel's runtime parameters, for callers that build arguments
 * generically: count, and each one's name and type ("*f32", "i32"). */
TILEC_API size_t trt_kernel_num_params(const trt_kernel *k);
TILEC_API const char *trt_kernel_param(const trt_kernel *k, size_t i, const char **type);

TILEC_API trt_status trt_alloc(trt_device *dev, size_t bytes, trt_buffer *out);
TILEC_API trt_status trt_free(trt_device *dev, trt_buffer buf);
TILEC_API trt_status trt_write(trt_device *dev, trt_buffer dst, size_t offset, const void *src, size_t bytes);
/* Memory allocated elsewhere as a buffer: on the GPU a device pointer of
 * the device's (primary) context, from cudaMalloc, cuMemAlloc or a PyTorch
 * tensor's data_ptr(), which must lie within one allocation; on the CPU a
 * host pointer. tilec never frees it (trt_free only forgets it), and the
 * caller keeps it alive while kernels use it. */
TILEC_API trt_status trt_wrap(trt_device *dev, uint64_t ptr, size_t bytes, trt_buffer *out);
/* The address of a buffer (a device pointer on the GPU), to hand to other
 * libraries. */
TILEC_API trt_status trt_buffer_ptr(trt_device *dev, trt_buffer buf, uint64_t *ptr);
TILEC_API trt_status trt_read(trt_device *dev, trt_buffer src, size_t offset, void *dst, size_t bytes);

/* Runs grid_x * grid_y * grid_z program instances. Arguments are checked
 * against the kernel: count, kind, integer range, and the 16-byte alignment
 * the compiler assumed for pointers. */
TILEC_API trt_status trt_launch(trt_kernel *k, uint32_t grid_x, uint32_t grid_y, uint32_t grid_z, const trt_arg *args,
                                size_t nargs);
/* Waits for launched work on every stream (the CPU device runs launches
 * synchronously). */
TILEC_API trt_status trt_sync(trt_device *dev);

/* Streams. Work queued on one stream runs in order; work on different
 * streams may overlap on the GPU. trt_launch, trt_read and trt_write use
 * the default stream, which waits for the others (and they for it), so
 * mixing both styles stays ordered. The host memory of an async copy must
 * stay valid until the stream is synchronized. On the CPU device a stream
 * only orders calls, and every call completes before it returns. A stream
 * keeps its device's resources alive until it is destroyed; after
 * trt_close it refuses work with TRT_ERR_CLOSED. */
typedef struct trt_stream trt_stream;
TILEC_API trt_status trt_stream_create(trt_device *dev, trt_stream **out);
/* Waits for the stream's work, then frees it. */
TILEC_API void trt_stream_destroy(trt_stream *s);
TILEC_API trt_status trt_stream_sync(trt_stream *s);
TILEC_API trt_status trt_launch_on(trt_stream *s, trt_kernel *k, uint32_t grid_x, uint32_t grid_y, uint32_t grid_z,
                                   const trt_arg *args, size_t nargs);
TILEC_API trt_status trt_write_async(trt_stream *s, trt_buffer dst, size_t offset, const void *src, size_t bytes);
TILEC_API trt_status trt_read_async(trt_stream *s, trt_buffer src, size_t offset, void *dst, size_t bytes);

/* Graphs: a sequence of launches recorded once and replayed with one call
 * (a CUDA graph on the GPU, where a replay costs one launch instead of
 * one per kernel). Between trt_stream_begin_capture and
 * trt_stream_end_capture the stream's launches (trt_launch_on, and the
 * stdlib's calls given the stream) are checked and recorded, not run.
 * A replay runs them again with the arguments they had, in order, on the
 * stream it is given: what changes between replays is the contents of
 * buffers, which copies queued on the stream before the replay write
 * (and after it read). While any stream of the device captures, the
 * device refuses, with TRT_ERR_INVALID_ARGUMENT and a message, what the
 * capture could not hold or would wait for on the GPU: the default
 * stream (trt_launch, trt_read, trt_write, trt_sync), copies on the
 * capturing stream, waiting for it, allocating and freeing buffers, and
 * compiling or loading modules (so run the work once before capturing
 * it: the stdlib compiles its kernels at a call's first use). A graph
 * keeps its kernels' modules loaded until it is destroyed; each replay
 * checks its buffers again (a freed one is TRT_ERR_INVALID_HANDLE, and
 * nothing runs). */
typedef struct trt_graph trt_graph;
TILEC_API trt_status trt_stream_begin_capture(trt_stream *s);
/* Ends the capture into *out (the graph of no launches, if none came);
 * with out NULL, discards it, leaving trt_last_error as it was. */
TILEC_API trt_status trt_stream_end_capture(trt_stream *s, trt_graph **out);
/* Replays g on stream s (NULL: the default stream), queued like a launch. */
TILEC_API trt_status trt_graph_launch(trt_graph *g, trt_stream *s);
/* How many launches g holds. */
TILEC_API size_t trt_graph_num_launches(const trt_graph *g);
TILEC_API void trt_graph_destroy(trt_graph *g);

/* ---- autotuning (docs/tuning.md) -------------------------------------------
 *
 * trt_tune compiles a kernel once per configuration (const values,
 * num_warps, num_stages) for the device's target, prunes those the compiler
 * rejects (each with its reason), measures the rest and records the
 * winner in a trt_tuning under a key: (kernel, hash of its source, the
 * arch the device's code is built for, the device's name, a shape bucket
 * the caller gives, e.g. from trt_tune_bucket). On the GPU the measure is
 * the median of timed launches with the L2 flushed before each; on the CPU
 * and emulator devices the same search runs each configuration once and
 * ranks it by a deterministic stand-in cost that is NOT a time (the
 * formula is in docs/tuning.md). A trt_tuning is saved to and loaded from
 * a plain-text tuning file that can be committed and shipped; a device
 * given one (trt_use_tuning) lets the stdlib (tls_matmul*, attention, the
 * row kernels) take its entries before the built-in tables. No global state: a trt_tuning is
 * the caller's, and one may serve several devices. */
enum {
    TRT_TUNE_MAX_CONFIGS = 64,   /* configurations one search may try */
    TRT_TUNE_MAX_DEFINES = 16,   /* const values of one configuration */
    TRT_TUNE_MAX_NAME = 64,      /* bytes of a kernel or const name, with its NUL */
    TRT_TUNE_MAX_BUCKET = 128,   /* bytes of a shape bucket, with its NUL */
    TRT_TUNE_MAX_REASON = 512,   /* bytes of a pruned configuration's reason */
    TRT_TUNE_DEFAULT_WARMUP = 3, /* untimed launches before the timed ones (GPU) */
    TRT_TUNE_DEFAULT_REPS = 10   /* timed launches whose median is the cost (GPU) */
};

/* One configuration: const values (names as the kernel spells them),
 * num_warps and num_stages (0: the compiler's). */
typedef struct trt_tune_config {
    const tilec_define *defines;
    size_t ndefines;
    int num_warps, num_stages;
} trt_tune_config;

/* The launch grid for a configuration (the tile sizes decide it). */
typedef void (*trt_tune_grid_fn)(void *user, const trt_tune_config *cfg, uint32_t grid[3]);

/* What to tune: the kernel `kernel` of `source` (len bytes, named `file`
 * in messages), its configurations, the shape bucket of the key (no
 * spaces, e.g. "M=4096,N=4096,K=4096"), and how to launch it: grid(user,
 * cfg, grid) gives the grid, and every launch takes the same arguments
 * (their buffers are written by every run: give scratch outputs). */
typedef struct trt_tune_space {
    const char *file;
    const char *source;
    size_t len;
    const char *kernel;
    const trt_tune_config *configs;
    size_t nconfigs; /* 1 to TRT_TUNE_MAX_CONFIGS */
    const char *bucket;
    trt_tune_grid_fn grid;
    void *user;
    const trt_arg *args;
    size_t nargs;
    int warmup, reps; /* on the GPU; 0: TRT_TUNE_DEFAULT_WARMUP, TRT_TUNE_DEFAULT_REPS */
    bool exp2_ftz;    /* every configuration compiled with trt_compile_options.exp2_ftz */
} trt_tune_space;

/* What became of one configuration. */
typedef struct trt_tune_outcome {
    bool pruned;  /* not measured: `reason` says why (a compile error, spills, a failed launch) */
    bool spills_checked; /* ptxas -v was asked whether its code spills (GPU code, the emulator's
                            included, where ptxas is found); false: not checked */
    bool timed;   /* cost is microseconds measured on the GPU; false: the stand-in cost, not a time */
    double cost;  /* lower is better */
    char reason[TRT_TUNE_MAX_REASON];
} trt_tune_outcome;

typedef struct trt_tuning trt_tuning;

/* The tuning file's entries and the stdlib's use of them; *out NULL when
 * out of memory. */
TILEC_API trt_status trt_tuning_create(trt_tuning **out);
TILEC_API void trt_tuning_free(trt_tuning *t);
/* The last error of a trt_tuning call ("" if none): for a file,
 * "FILE:LINE: error: ...". */
TILEC_API const char *trt_tuning_error(const trt_tuning *t);
/* Reads a tuning file into t, strictly: a malformed line, a duplicate key
 * or an unknown version is TRT_ERR_INVALID_ARGUMENT naming file:line, and
 * t is left as it was. Its entries replace t's of the same key. */
TILEC_API trt_status trt_tuning_load(trt_tuning *t, const char *path);
/* Writes t's entries, sorted by key, to path (replacing it). */
TILEC_API trt_status trt_tuning_save(const trt_tuning *t, const char *path);
TILEC_API size_t trt_tuning_num_entries(const trt_tuning *t);
/* t's entry for a kernel of this source on this device and bucket, into
 * *cfg (its defines stay valid until t changes or is freed);
 * TRT_ERR_NOT_FOUND if none. */
TILEC_API trt_status trt_tuning_find(const trt_tuning *t, const trt_device *dev, const char *source, size_t len,
                                     const char *kernel, const char *bucket, trt_tune_config *cfg);
/* Adds (or replaces) t's entry for a kernel of this source on this
 * device and bucket: what trt_tune records, for a configuration chosen
 * otherwise. TRT_ERR_INVALID_ARGUMENT (trt_tuning_error says why) for a
 * name a tuning file cannot hold or settings out of range. */
TILEC_API trt_status trt_tuning_put(trt_tuning *t, const trt_device *dev, const char *source, size_t len,
                                    const char *kernel, const char *bucket, const trt_tune_config *cfg);
/* The source hash of keys (64-bit FNV-1a of the source's bytes), as the
 * tuning file writes it in hex. */
TILEC_API uint64_t trt_tune_source_hash(const char *source, size_t len);
/* The device consults t (borrowed: keep it alive while the device uses
 * it; NULL: none) before the stdlib's built-in tables. */
TILEC_API trt_status trt_use_tuning(trt_device *dev, trt_tuning *t);
/* The entry, as its tuning file line, that the stdlib last took from t
 * ("" if none yet); and the last entry it passed over, with why (an entry
 * whose configuration does not compile falls back to the built-in table:
 * a note, not an error; "" if none). */
TILEC_API const char *trt_tuning_last_used(const trt_tuning *t);
TILEC_API const char *trt_tuning_last_note(const trt_tuning *t);

/* The shape bucket of n named sizes: each rounded up to a power of two,
 * "M=4096,N=4096,K=512"; TRT_ERR_INVALID_ARGUMENT if it does not fit
 * (size bytes) or a size is < 1. */
TILEC_API trt_status trt_tune_bucket(char *buf, size_t size, const char *const *names, const int64_t *sizes, size_t n);

/* Searches the space on the device: compiles every configuration (once:
 * the modules stay cached), prunes those the compiler rejects, measures
 * the others and, when tuning is not NULL, records the winner (the lowest
 * cost; the first such on a tie) under the key. outcomes (NULL: not
 * wanted) gets space->nconfigs entries, *best (NULL: not wanted) the
 * winner's index. TRT_ERR_COMPILE when every configuration was pruned
 * (trt_last_error names each reason). */
TILEC_API trt_status trt_tune(trt_device *dev, const trt_tune_space *space, trt_tuning *tuning,
                              trt_tune_outcome *outcomes, size_t *best);

#ifdef __cplusplus
}
#endif
#endif
