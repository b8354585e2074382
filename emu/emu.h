/* emu.h - a host emulator of the NVPTX LLVM IR that tilec generates: it
 * runs a kernel's LLVM module (after the optimization the PTX backend runs,
 * which is what ships) on the CPU, so the GPU code generator can be
 * checked on machines without a GPU. The runtime's third device
 * (TRT_DEVICE_EMU) runs on it; it is slow and meant for testing.
 *
 * How it runs a launch: one CTA at a time, in grid order; each of the
 * CTA's threads (maxntidx of the kernel's nvvm.annotations) has its own
 * register file and runs, in thread order, until it reaches a collective
 * (bar.sync, a warp shuffle or vote, ldmatrix, mma) or exits. A collective
 * is performed when every thread of its scope (the warp; the CTA for a
 * barrier) waits at that very instruction; threads of one scope waiting at
 * different collectives, or some exited while others wait, is reported as
 * divergence. The order is fixed, so runs are deterministic.
 *
 * Memory: a pointer is a tagged 64-bit value, region << 40 | byte offset,
 * where the region is a launch buffer (global memory), the CTA's shared
 * memory (addrspace 3 globals, laid out with their alignment, then the
 * dynamic array of emu_launch.dynamic_smem bytes that external addrspace 3
 * globals name; poisoned with 0xff bytes before each CTA), the thread's allocas, or the module's
 * constant globals (printf formats). Every access is checked against its
 * region's bounds and its instruction's alignment; an access outside, to
 * an unmapped region, or a store to a constant is an error naming the
 * instruction: a code generation bug found. Shared memory also keeps, per
 * byte, who wrote and read it: a read of a byte no thread of the CTA wrote
 * (cp.async destinations count from the wait that covers them), and,
 * between two barriers, a read of another
 * thread's write, a write over another thread's read, or two threads
 * writing different values between barriers is reported as a race (a
 * missing barrier, which sequential execution would otherwise hide).
 *
 * What it checks: the IR's integer and floating-point semantics (PTX's
 * where LLVM leaves a result undefined: saturating float-to-int, shifts
 * by the width or more, division by zero gives all ones), NVVM intrinsics
 * (special registers, shuffles with PTX's clamp rules, votes, approximate
 * math, mma.sync m16n8k16/m16n8k8/m16n8k32 fragments, ldmatrix, cp.async
 * with its groups: a copy lands only at the wait that covers it, its
 * destination reads as poison before), the few inline-asm strings codegen
 * emits (matched exactly; any other asm is an error), vprintf (formatted
 * on the host) and __assertfail (ends the launch with EMU_ASSERT).
 * .approx operations return the correctly rounded result, which is
 * within PTX's error bounds but need not be the GPU's bits; mma
 * accumulates each output's k products exactly and rounds once.
 *
 * What it cannot check: memory ordering and races in global memory
 * (between CTAs, or threads of a CTA: threads run one after the other, so
 * every access is sequentially consistent), poison from nsw/nuw/exact or
 * `disjoint` flags (values are computed as if the flags were absent),
 * timing and occupancy, and what happens after LLVM: instruction
 * selection, ptxas, SASS (register limits, FMA contraction by ptxas,
 * spills). */
#ifndef TILEC_EMU_H
#define TILEC_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    EMU_WARP = 32,
    EMU_MAX_ARGS = 64,
    EMU_MAX_THREADS = 1024,
    EMU_MAX_DYNAMIC_SMEM = 1 << 20 /* bytes a launch may give the dynamic shared array */
};

typedef struct emu_module emu_module;

/* Parses LLVM IR text (len bytes, NUL-terminated) and translates every
 * kernel (a function with the "kernel" annotation) into the emulator's
 * compact form. NULL on failure, with a message in err (an instruction or
 * intrinsic it does not know, named). */
emu_module *emu_module_load(const char *llvm_ir, size_t len, char *err, size_t err_size);
void emu_module_free(emu_module *m);

/* A kernel's thread count per CTA (maxntidx); 0 if there is no such kernel. */
uint32_t emu_kernel_threads(const emu_module *m, const char *kernel);

typedef struct emu_buffer {
    void *data;  /* NULL: a freed buffer (any access is an error) */
    size_t size; /* bytes */
} emu_buffer;

/* One kernel argument: a pointer into a buffer (buffer index, byte offset),
 * or the bits of a scalar (little-endian; the low bytes are the value). */
typedef struct emu_arg {
    bool is_ptr;
    uint32_t buffer;
    uint64_t offset;
    uint64_t bits;
} emu_arg;

typedef struct emu_launch {
    const char *kernel;
    uint32_t grid[3];
    const emu_arg *args;
    uint32_t nargs;
    emu_buffer *buffers;
    uint32_t nbuffers;
    /* where printed lines go (text ends in '\n'); NULL: stdout */
    void (*print)(void *user, const char *text, size_t len);
    void *print_user;
    /* bytes of dynamic shared memory each CTA gets: what the module's
     * external addrspace(3) arrays (extern __shared__) address, after
     * its static shared memory */
    uint32_t dynamic_smem;
} emu_launch;

typedef enum emu_result { EMU_OK, EMU_ERROR, EMU_ASSERT } emu_result;

/* Runs the launch. On EMU_ERROR err says what went wrong, where (kernel,
 * CTA, thread, the LLVM instruction); on EMU_ASSERT it holds the line the
 * failing thread printed just before __assertfail (tilec's assert message)
 * or, without one, __assertfail's own arguments. */
emu_result emu_run(const emu_module *m, const emu_launch *l, char *err, size_t err_size);

#endif
