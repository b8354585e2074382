/* tilec.h - the tilec compiler as a library (libtilec).
 *
 * One call compiles a `.tile` source to tile IR text, LLVM IR, PTX or a
 * cubin. The library keeps no global mutable state: calls on different
 * threads are independent. */
#ifndef TILEC_H
#define TILEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TILEC_VERSION "0.1.0"

/* Exported from libtilec.so (built with hidden visibility). */
#if defined(TILEC_BUILDING_LIBRARY)
#define TILEC_API __attribute__((visibility("default")))
#else
#define TILEC_API
#endif

typedef enum tilec_emit {
    TILEC_EMIT_TIR,   /* tile IR after the pass pipeline */
    TILEC_EMIT_LLVM,  /* LLVM IR (text) */
    TILEC_EMIT_PTX,   /* PTX (text) */
    TILEC_EMIT_CUBIN  /* cubin (binary), needs ptxas or libnvJitLink */
} tilec_emit;

/* What a compilation gives; also the tilec command's exit status (which
 * is 1 as well when the input cannot be read or the output written). */
typedef enum tilec_status {
    TILEC_OK = 0,
    TILEC_ERR_SOURCE = 1,  /* errors in the user's source: see diagnostics */
    TILEC_ERR_USAGE = 2,   /* bad options (unknown arch, pass name ...) */
    TILEC_ERR_TOOL = 3,    /* the assembler (ptxas, nvJitLink) missing or failed, LLVM target missing */
    TILEC_ERR_INTERNAL = 4 /* a compiler bug (verifier failure) */
} tilec_status;

/* The options' defaults and limits, each named once: the command line's
 * help, the checks and their messages are built from these. */
#define TILEC_DEFAULT_ARCH "sm_80"
enum {
    TILEC_MAX_NUM_WARPS = 32, /* warps of a program instance: a CTA holds 1024 threads */
    TILEC_MAX_NUM_STAGES = 8, /* software-pipelining depth a kernel or loop may ask for */
    TILEC_MAX_DEFINES = 256,  /* -D definitions in one compilation */
    TILEC_MAX_JOBS = 256      /* threads one compilation may use (-j) */
};

typedef struct tilec_define {
    const char *name;
    int64_t value;
} tilec_define;

typedef struct tilec_options {
    tilec_emit emit;
    const char *arch;            /* NULL: TILEC_DEFAULT_ARCH */
    int num_warps;               /* 0: from the bytes of the largest tile a kernel loads or
                                    stores: 1 below 1 KB, 2 below 2 KB, 4 below 8 KB, 8 below
                                    16 KB, 16 below 128 KB, else 32 */
    int opt_level;               /* 0 or 2 (default 2 when set by tilec_options_init) */
    const char *kernel;          /* NULL: every kernel in the file; else that one only
                                    (defines the file's other kernels take are accepted) */
    const tilec_define *defines; /* const parameter values */
    size_t ndefines;
    const char *passes;          /* with TILEC_EMIT_TIR only: comma-separated pass
                                    names to run instead of the pipeline, or "none"
                                    (tests one pass alone on a .tir file) */
    const char *dump_after;      /* pass name: IR after it goes to `dumps` */
    bool dump_all;
    bool print_locs;             /* loc(...) on --emit=tir */
    bool verbose;                /* the passes' notes and ptxas -v report into `info`
                                    (from nvJitLink's ptxas too, in the same form) */
    bool sidecar;                /* with LLVM, PTX or cubin: also return the kernels' tile
                                    IR (signatures, num_warps, source lines) in
                                    `sidecar`, which trt_load reads */
    bool no_asserts;             /* assert(...) is checked but not compiled in
                                    (default false: asserts are compiled in) */
    int num_stages;              /* software-pipelining depth of loops that name
                                    none (range(..., num_stages = N)), 1 to 8;
                                    0: the compiler's choice */
    bool llvm_optimized;         /* with TILEC_EMIT_LLVM: the module after the
                                    optimization the PTX backend runs (what ships),
                                    not the code generator's own output */
    bool exp2_ftz;               /* exp2 (and exp, sigmoid and tanh, built on it)
                                    flush f32 results below 2^-126 to zero on the
                                    GPU: PTX's ex2.approx.ftz.f32, as Triton's
                                    exp2; 3 instructions fewer each (default false:
                                    ex2.approx.f32, which keeps them) */
    bool line_info;              /* each op's .tile line and column in the LLVM IR
                                    (DILocation, line tables only), so .loc lines in
                                    the PTX (profilers' source view, as nvcc's
                                    -lineinfo) and the emulator device's errors name
                                    the line (default false) */
    int warp_specialize;         /* sm_90a, loops that name none (range(...,
                                    warp_specialize = B)): whether a producer
                                    warpgroup issues their bulk copies:
                                    TILEC_WARP_SPECIALIZE_AUTO (0, the compiler's
                                    choice: with 8 warps or more), _ON or _OFF */
    int jobs;                    /* threads that compile a file's kernels to PTX
                                    (one LLVM module a kernel) and, with several
                                    kernels, that ptxas assembles them on
                                    (--split-compile); 0 (default): one a CPU;
                                    1: this thread only. The output is the same
                                    whatever the count (but for the cubin's note
                                    of ptxas's command line) */
} tilec_options;

enum { TILEC_WARP_SPECIALIZE_AUTO = 0, TILEC_WARP_SPECIALIZE_ON = 1, TILEC_WARP_SPECIALIZE_OFF = 2 };

typedef struct tilec_output {
    tilec_status status;
    char *data;        /* the emitted artifact (text is NUL-terminated) */
    size_t size;
    char *diagnostics; /* clang-style messages, NUL-terminated, maybe empty */
    char *dumps;       /* IR dumps asked for, NUL-terminated, maybe empty */
    char *info;        /* ptxas -v output and notes */
    char *sidecar;     /* see tilec_options.sidecar; NULL otherwise */
    /* wall-clock phases in milliseconds */
    double ms_frontend; /* parse, check, build IR, passes */
    double ms_llvm;     /* codegen, LLVM optimization and PTX emission */
    double ms_ptxas;    /* PTX to cubin: the ptxas process or nvJitLink in-process */
} tilec_output;

TILEC_API void tilec_options_init(tilec_options *opt);
/* Compiles source text (len bytes; NUL bytes inside are errors) named
 * `filename` in messages. Always fills *out; free it with tilec_output_free. */
TILEC_API tilec_status tilec_compile(const char *filename, const char *source, size_t len,
                           const tilec_options *opt, tilec_output *out);
TILEC_API void tilec_output_free(tilec_output *out);
TILEC_API const char *tilec_status_name(tilec_status s);

#ifdef __cplusplus
}
#endif
#endif
