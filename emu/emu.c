/* emu.c - the NVPTX LLVM IR emulator of emu.h.
 *
 * Two halves. Translation (emu_module_load) walks each kernel once with
 * the LLVM C API and turns it into an array of emu_inst: every SSA value
 * gets a slot of 64-bit words in a per-thread frame (one word per scalar,
 * vector lane or struct field), constants are evaluated into the frame's
 * initial image, phis become copy lists on the branches into their block,
 * and calls are resolved to one operation each (intrinsics by name, inline
 * asm by its exact text). Execution (emu_run) then never calls LLVM: each
 * thread interprets the array over its own frame, and a small scheduler
 * (see emu.h) performs the collectives.
 *
 * The files: emu.c (this one) loads and frees a module and finds its
 * kernels; translate.c is translation; exec.c is execution; banks.c
 * counts shared-memory wavefronts for emu_smem_stats; arith.c holds the
 * arithmetic both use; mma.c the mma.sync and ldmatrix fragments.
 * emu_internal.h, private to emu/, is what they share. */
#include "emu/emu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Target.h>

static void func_free(emu_func *f) {
    free(f->name);
    for (uint32_t i = 0; i < f->nparams; i++) free(f->param_name[i]);
    free(f->code);
    free(f->aux);
    free(f->init);
    free(f);
}

void emu_module_free(emu_module *m) {
    if (!m) return;
    for (emu_func *f = m->funcs, *next; f; f = next) {
        next = f->next;
        func_free(f);
    }
    free(m->consts);
    free(m->globals);
    free(m->global_addr);
    if (m->td) LLVMDisposeTargetData(m->td);
    if (m->mod) LLVMDisposeModule(m->mod);
    if (m->ctx) LLVMContextDispose(m->ctx);
    free(m);
}

emu_module *emu_module_load(const char *ir, size_t len, char *err, size_t err_size) {
    emu_module *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->ctx = LLVMContextCreate();
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, len, "emu");
    char *msg = NULL;
    if (LLVMParseIRInContext(m->ctx, buf, &m->mod, &msg)) { /* takes the buffer */
        snprintf(err, err_size, "emulator: the LLVM IR does not parse: %s", msg ? msg : "?");
        LLVMDisposeMessage(msg);
        m->mod = NULL;
        emu_module_free(m);
        return NULL;
    }
    m->td = LLVMCreateTargetData(LLVMGetDataLayoutStr(m->mod));
    xlate x = {.m = m, .err = err, .err_size = err_size};
    emu_place_globals(&x);
    emu_func **tail = &m->funcs;
    for (LLVMValueRef fn = LLVMGetFirstFunction(m->mod); fn && !x.failed; fn = LLVMGetNextFunction(fn)) {
        bool is_kernel;
        uint32_t maxnreg;
        uint32_t threads = emu_func_threads(m->mod, fn, &is_kernel, &maxnreg);
        if (LLVMIsDeclaration(fn) || !is_kernel) continue;
        if (threads == 0 || threads > EMU_MAX_THREADS) {
            snprintf(err, err_size, "emulator: kernel has no usable maxntidx annotation (%u)", threads);
            x.failed = true;
            break;
        }
        emu_func *f = emu_xlate_func(&x, fn, threads);
        f->maxnreg = maxnreg;
        *tail = f;
        tail = &f->next;
    }
    free(x.map);
    if (x.failed) {
        emu_module_free(m);
        return NULL;
    }
    return m;
}

const emu_func *emu_find_func(const emu_module *m, const char *name) {
    for (const emu_func *f = m ? m->funcs : NULL; f; f = f->next)
        if (!strcmp(f->name, name)) return f;
    return NULL;
}

uint32_t emu_kernel_threads(const emu_module *m, const char *kernel) {
    const emu_func *f = emu_find_func(m, kernel);
    return f ? f->threads : 0;
}
