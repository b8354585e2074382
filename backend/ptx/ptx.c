/* ptx.c - LLVM's NVPTX target: optimize an LLVM module and print PTX. */
#include <pthread.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "backend/ptx/ptx.h"

/* PTX ISA 8.0 covers sm_90a and is accepted by ptxas from CUDA 12.0 on. */
static const char ptx_features[] = "+ptx80";
static const char *const known_arches[] = {"sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a"};

const char *ptx_arch_name(size_t i) { return i < sizeof known_arches / sizeof known_arches[0] ? known_arches[i] : NULL; }

bool ptx_arch_valid(const char *arch) {
    for (size_t i = 0; ptx_arch_name(i); i++)
        if (arch && !strcmp(arch, ptx_arch_name(i))) return true;
    return false;
}

/* LLVM's target registry is process-wide; registering once is LLVM's own
 * requirement, not state of ours. */
static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;
static void init_nvptx(void) {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
}

/* The NVPTX target machine for arch, or NULL with an error. */
static LLVMTargetMachineRef target_machine(const char *arch, int opt_level, tc_diag *diag) {
    pthread_once(&nvptx_once, init_nvptx);
    char *err = NULL;
    LLVMTargetRef target;
    const char *triple = "nvptx64-nvidia-cuda";
    if (LLVMGetTargetFromTriple(triple, &target, &err)) {
        tc_error_plain(diag, "LLVM has no NVPTX target: %s", err ? err : "?");
        LLVMDisposeMessage(err);
        return NULL;
    }
    /* Default, not Aggressive: at Aggressive NVPTX's code generator runs
     * GVN twice more (its straight-line scalar passes and its IR cleanup)
     * where Default runs EarlyCSE. After the O2 pipeline's own GVN those
     * two found nothing in any stdlib kernel (the same PTX) and where a
     * test kernel's PTX changed its SASS was as short or shorter, yet
     * they cost time that grows as the square of a kernel's memory
     * accesses: 6.9 of a 15.5 s compile for a large unrolled tile
     * (docs/design.md, "A file's kernels on several threads"). */
    return LLVMCreateTargetMachine(target, triple, arch, ptx_features,
                                   opt_level ? LLVMCodeGenLevelDefault : LLVMCodeGenLevelNone, LLVMRelocDefault,
                                   LLVMCodeModelDefault);
}

/* Verifies m and runs the optimization pipeline on it. */
static bool optimize(LLVMModuleRef m, LLVMTargetMachineRef tm, int opt_level, tc_diag *diag) {
    char *err = NULL;
    bool ok = true;
    if (LLVMVerifyModule(m, LLVMReturnStatusAction, &err)) {
        tc_error_plain(diag, "internal error: invalid LLVM IR: %s", err);
        ok = false;
    }
    LLVMDisposeMessage(err);
    err = NULL;
    if (ok) {
        /* A kernel without loops takes the straight-line pipeline (most of
         * O2's time is fixed costs such code does not repay). Two runs:
         * whether the SLP vectorizer is worth its time shows only in the
         * simplified module (instcombine narrows f32 arithmetic on f16
         * values to f16). */
        bool straight = !ptx_has_loop(m);
        LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
        LLVMErrorRef e = LLVMRunPasses(
            m, ptx_llvm_pipeline(opt_level, straight ? PTX_PIPELINE_STRAIGHT : PTX_PIPELINE_SIMPLIFY, false), tm, po);
        const char *late =
            e ? NULL
              : ptx_llvm_pipeline(opt_level, straight ? PTX_PIPELINE_STRAIGHT_LATE : PTX_PIPELINE_LATE, ptx_wants_slp(m));
        if (late) e = LLVMRunPasses(m, late, tm, po);
        LLVMDisposePassBuilderOptions(po);
        if (e) {
            char *msg = LLVMGetErrorMessage(e);
            tc_error_plain(diag, "LLVM optimization failed: %s", msg);
            LLVMDisposeErrorMessage(msg);
            ok = false;
        }
    }
    return ok;
}

bool ptx_optimized_ir(LLVMModuleRef m, const char *arch, int opt_level, tc_strbuf *out, tc_diag *diag) {
    LLVMTargetMachineRef tm = target_machine(arch, opt_level, diag);
    if (!tm) return false;
    bool ok = optimize(m, tm, opt_level, diag);
    if (ok) {
        char *s = LLVMPrintModuleToString(m);
        tc_strbuf_puts(out, s);
        LLVMDisposeMessage(s);
        /* LLVM 19 caches each module's nvvm.annotations (maxntidx ...) in a
         * process-wide table keyed by the Module's address, which only the
         * NVPTX asm printer's finalization clears; a later module at the
         * same address would be optimized with this one's thread counts
         * (wrong ranges on tid.x, wrong code). So the module is emitted,
         * and the PTX dropped. */
        char *err = NULL;
        LLVMMemoryBufferRef buf = NULL;
        if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMAssemblyFile, &err, &buf)) {
            tc_error_plain(diag, "PTX emission failed: %s", err ? err : "?");
            LLVMDisposeMessage(err);
            ok = false;
        } else {
            LLVMDisposeMemoryBuffer(buf);
        }
    }
    LLVMDisposeTargetMachine(tm);
    return ok;
}

/* Appends LLVM's PTX to out without the comments "// callseq N" on call
 * sequences' braces: LLVM numbers them across the process (every module,
 * every thread), so they would make the PTX of one kernel differ between
 * compilations, and with the order in which threads reach them. */
static void put_ptx(tc_strbuf *out, const char *p, size_t n) {
    static const char mark[] = " // callseq ";
    const size_t mlen = sizeof mark - 1;
    for (size_t at = 0; at < n;) {
        const char *nl = memchr(p + at, '\n', n - at);
        size_t len = nl ? (size_t)(nl - (p + at)) + 1 : n - at, keep = len;
        for (size_t i = 0; i + mlen <= len; i++)
            if (!memcmp(p + at + i, mark, mlen)) {
                keep = i;
                break;
            }
        tc_strbuf_putn(out, p + at, keep);
        if (keep < len && nl) tc_strbuf_putc(out, '\n');
        at += len;
    }
}

bool ptx_emit(LLVMModuleRef m, const char *arch, int opt_level, tc_strbuf *out, tc_diag *diag) {
    LLVMTargetMachineRef tm = target_machine(arch, opt_level, diag);
    if (!tm) return false;
    char *err = NULL;
    bool ok = optimize(m, tm, opt_level, diag);
    LLVMMemoryBufferRef buf = NULL;
    if (ok && LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMAssemblyFile, &err, &buf)) {
        tc_error_plain(diag, "PTX emission failed: %s", err ? err : "?");
        LLVMDisposeMessage(err);
        ok = false;
    }
    if (ok) {
        put_ptx(out, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
        LLVMDisposeMemoryBuffer(buf);
    }
    LLVMDisposeTargetMachine(tm);
    return ok;
}
