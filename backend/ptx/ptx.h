/* ptx.h - the PTX backend: LLVM's NVPTX target turns an LLVM module into
 * PTX text, and NVIDIA's assembler turns PTX into a cubin: the ptxas
 * program, or where there is none (or when asked) the CUDA toolkit's
 * JIT-link library (libnvJitLink) in this process. */
#ifndef TILEC_PTX_H
#define TILEC_PTX_H

#include <llvm-c/Core.h>

#include "support/support.h"

/* The i-th architecture tilec targets ("sm_80", ...), NULL past the last. */
const char *ptx_arch_name(size_t i);
/* Accepts the architectures ptx_arch_name lists; false otherwise. */
bool ptx_arch_valid(const char *arch);

/* Optimizes (opt_level 0 or 2) and emits PTX for `arch` into out. The module
 * is consumed only in the sense that it is optimized in place. */
bool ptx_emit(LLVMModuleRef m, const char *arch, int opt_level, tc_strbuf *out, tc_diag *diag);

/* The LLVM IR text of m after the optimization ptx_emit runs (the module
 * that becomes PTX; for the emulator, emu/emu.h). m is consumed: it has
 * been through PTX emission afterwards (see ptx.c for why). */
bool ptx_optimized_ir(LLVMModuleRef m, const char *arch, int opt_level, tc_strbuf *out, tc_diag *diag);

/* The LLVM pass pipeline ptx_emit optimizes with (LLVMRunPasses text,
 * pipeline.c). A module with a loop (ptx_has_loop) gets O2's passes in two
 * parts: the simplification, then the late optimization, with the SLP
 * vectorizer where ptx_wants_slp says the simplified module has something
 * for it. A module without one gets the straight-line pipeline, then its
 * SLP step only where ptx_wants_slp says so (NULL otherwise). At opt_level
 * 0 the first part is O0's and there is no second (NULL). */
typedef enum {
    PTX_PIPELINE_SIMPLIFY,
    PTX_PIPELINE_LATE,
    PTX_PIPELINE_STRAIGHT,
    PTX_PIPELINE_STRAIGHT_LATE
} ptx_pipeline_part;
const char *ptx_llvm_pipeline(int opt_level, ptx_pipeline_part part, bool slp);
bool ptx_has_loop(LLVMModuleRef m);
bool ptx_wants_slp(LLVMModuleRef m);

/* Appends to out one PTX module holding the n modules parts[i] (lens[i]
 * bytes each) for one target, built apart (merge.c): the first's header,
 * then every part's functions in order, a declaration or directive the
 * parts repeat word for word taken once. One part is copied as it is.
 * False (an internal error in diag) when the headers differ or a part
 * leaves a statement open. */
bool ptx_merge(const char *const *parts, const size_t *lens, size_t n, tc_strbuf *out, tc_diag *diag);

/* Finds ptxas: $TILEC_PTXAS if set (that file or none), else
 * $CUDA_HOME/bin/ptxas, then PATH, then /usr/local/cuda/bin.
 * Writes the path into buf and returns true when found. */
bool ptx_find_ptxas(char *buf, size_t bufsize);

/* How PTX becomes a cubin: what every assembler is told. */
typedef struct ptx_asm_options {
    const char *arch;
    int opt_level; /* 0: -O0; else -O3 */
    bool verbose;  /* ptxas -v's report into `info` */
    int threads;   /* functions assembled at once (ptxas --split-compile N): 1 one at a
                      time; 0 one a CPU, as ptxas counts them (the same command line on
                      every machine); nvJitLink assembles one at a time */
} ptx_asm_options;

/* Turns PTX text into a cubin (malloc'd, in *cubin) with the assembler
 * TILEC_ASSEMBLER names: "ptxas" (the process, ptx_ptxas_assemble),
 * "nvjitlink" (in-process, ptx_jitlink_assemble), or "auto" (the
 * default): ptxas when TILEC_PTXAS is set or ptxas is found, else
 * nvJitLink when it loads, else ptxas's "not found". Warnings, and with
 * verbose ptxas -v's report, are appended to `info` (may be NULL). A
 * failure to assemble reads "ptxas failed (WHO): ..." from either. */
bool ptx_assemble(const char *ptx, size_t len, const ptx_asm_options *o, char **cubin, size_t *cubin_size,
                  tc_strbuf *info, tc_diag *diag);

typedef enum ptx_assembler { PTX_ASM_PTXAS, PTX_ASM_NVJITLINK, PTX_ASM_UNKNOWN } ptx_assembler;

/* ptx_assemble's choice (assemble.c), apart for tests: choice is
 * TILEC_ASSEMBLER (NULL: auto), ptxas_named whether TILEC_PTXAS is set;
 * the finders are asked only when the answer depends on them.
 * PTX_ASM_UNKNOWN: a choice other than auto, nvjitlink or ptxas. */
ptx_assembler ptx_pick_assembler(const char *choice, bool ptxas_named, bool (*ptxas_found)(void),
                                 bool (*jitlink_found)(void));

/* Says which assembler ptx_assemble would run now ("in-process:
 * libnvJitLink 13.0, PATH" or "a process: PATH"); false, with why, when
 * that one is missing or TILEC_ASSEMBLER is unknown. */
bool ptx_assembler_describe(char *buf, size_t bufsize);

/* Runs the ptxas program (ptxas.c) on the PTX text: -arch, -O3 (-O0 at
 * opt_level 0), -v with verbose, --split-compile unless threads is 1; its
 * output goes to `info`. */
bool ptx_ptxas_assemble(const char *ptx, size_t len, const ptx_asm_options *o, char **cubin, size_t *cubin_size,
                        tc_strbuf *info, tc_diag *diag);

/* Finds libnvJitLink (jitlink.c): $TILEC_NVJITLINK if set (that file or
 * none; empty: none), else libnvJitLink.so.13 or .so in $CUDA_HOME/lib64,
 * /usr/local/cuda/lib64, then the loader's search. True when it loads,
 * with "libnvJitLink MAJOR.MINOR, PATH" in buf; false with why in buf. */
bool ptx_jitlink_find(char *buf, size_t bufsize);

/* Assembles in-process with libnvJitLink (jitlink.c), the options as
 * ptxas gets them (-arch, -O3 or -O0, -verbose); an error when the
 * library does not load. The cubin is not byte for byte ptxas's:
 * nvJitLink compiles relocatable code and links it (docs/design.md). */
bool ptx_jitlink_assemble(const char *ptx, size_t len, const ptx_asm_options *o, char **cubin, size_t *cubin_size,
                          tc_strbuf *info, tc_diag *diag);

#endif
