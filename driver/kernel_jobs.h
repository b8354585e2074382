/* kernel_jobs.h - private to driver/: a module's kernels to PTX, one LLVM
 * module a kernel, on several threads (kernel_jobs.c). */
#ifndef TILEC_DRIVER_KERNEL_JOBS_H
#define TILEC_DRIVER_KERNEL_JOBS_H

#include "lower/lower.h"

typedef enum kernel_jobs_result {
    KERNEL_JOBS_OK,
    KERNEL_JOBS_CODEGEN, /* lower_codegen failed on a kernel */
    KERNEL_JOBS_LIMIT,   /* a kernel over a limit of code generation (its error, not the compiler's) */
    KERNEL_JOBS_PTX      /* LLVM's PTX emission, or merging the modules, failed */
} kernel_jobs_result;

/* The threads `jobs` (tilec_options.jobs) asks for: 0 is one a CPU; at
 * most TILEC_MAX_JOBS. */
int kernel_jobs_threads(int jobs);

/* Appends the PTX of m's kernels (all through the pass pipeline) to ptx:
 * each kernel's LLVM module built and emitted on its own, on up to
 * kernel_jobs_threads(opt->compile.jobs) threads, then merged in the
 * kernels' order (ptx_merge). The diagnostics reach diag in the same
 * order, up to the first kernel that fails, whatever the threads' timing. */
kernel_jobs_result kernel_jobs_ptx(tir_module *m, const lower_options *opt, const char *arch, tc_strbuf *ptx,
                                   tc_diag *diag);

#endif
