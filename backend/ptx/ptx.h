/* ptx.h - the PTX backend: LLVM's NVPTX target turns an LLVM module into
 * PTX text, and NVIDIA's ptxas turns PTX into a cubin. */
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

/* Finds ptxas: $TILEC_PTXAS if set (that file or none), else
 * $CUDA_HOME/bin/ptxas, then PATH, then /usr/local/cuda/bin.
 * Writes the path into buf and returns true when found. */
bool ptx_find_ptxas(char *buf, size_t bufsize);

/* Runs ptxas on the PTX text; the cubin lands in *cubin (malloc'd). With
 * verbose, ptxas -v's report is appended to `info` (may be NULL). */
bool ptx_assemble(const char *ptx, size_t len, const char *arch, int opt_level, bool verbose,
                  char **cubin, size_t *cubin_size, tc_strbuf *info, tc_diag *diag);

#endif
