/* emu.h - a host emulator of the NVPTX LLVM IR that tilec generates: it
 * runs a kernel's LLVM module (after the optimization the PTX backend runs,
 * which is what ships) on the CPU, so the GPU code generator can be
 * checked on machines without a GPU. The runtime's third device
 * (TRT_DEVICE_EMU) runs on it; it is slow and meant for testing.
 *
 * How it runs a launch: one CTA at a time, in grid order; each of the
 * CTA's threads (maxntidx of the kernel's nvvm.annotations) has its own
 * register file and runs, in thread order, until it reaches a collective
 * (bar.sync, a warp shuffle or vote, ldmatrix, mma, wgmma) or exits. A
 * collective is performed when every thread of its scope (the warp; the
 * CTA for a barrier; the warpgroup of 4 warps for wgmma) waits at that very
 * instruction; threads of one scope waiting at
 * different collectives, or some exited while others wait, is reported as
 * divergence. Barriers with an id and a thread count (bar.sync a, b:
 * llvm.nvvm.barrier, barrier.sync.cnt) complete when b threads' warps
 * arrived, whatever the others do, and order only their participants
 * (exec.c states the rules and reports their misuse and deadlocks). The
 * order is fixed, so runs are deterministic.
 *
 * Memory: a pointer is a tagged 64-bit value, region << 40 | byte offset,
 * where the region is a launch buffer (global memory), the CTA's shared
 * memory (addrspace 3 globals, laid out with their alignment, then the
 * dynamic array of emu_launch.dynamic_smem bytes that external addrspace 3
 * globals name; poisoned with 0xff bytes before each CTA), the thread's allocas, or the module's
 * constant globals (printf formats). Every access is checked against its
 * region's bounds and its instruction's alignment; an access outside, to
 * an unmapped region, or a store to a constant is an error naming the
 * instruction (and a launch buffer by the kernel parameter that points
 * into it): a code generation bug found. Shared memory also keeps, per
 * byte, who wrote and read it: a read of a byte no thread of the CTA wrote
 * (cp.async destinations count from the wait that covers them), and,
 * with no barrier ordering the two (one both threads' warps took part in,
 * or a chain of them), a read of another
 * thread's write, a write over another thread's read, or two threads
 * writing different values between barriers is reported as a race (a
 * missing barrier, which sequential execution would otherwise hide). A
 * cp.async is checked at its issue against reads of its destination since
 * the last barrier (a refill whose barrier is missing or comes after it:
 * the copy may land before those reads on the GPU), and when it lands
 * against another thread's write of a different value in the same
 * interval (two copies of one value, as replicating layouts make, are
 * fine); until it lands its bytes refuse reads and writes ("a cp.async is
 * still writing"), also where an earlier write left a value there.
 *
 * Hopper's asynchronous copies (emu/async.c; the inline asm in
 * lower/ptx_async.h): mbarrier objects (8 bytes, 8-aligned, in shared
 * memory; their state is kept beside it and pictured in their bytes:
 * pending arrivals in bytes 0-3, the tx-count's low 21 bits in 4-6, the
 * phase parity in bit 63) with init/inval, arrive, arrive.expect_tx,
 * expect_tx, try_wait/test_wait.parity; a wait that fails parks the
 * thread (test_wait: when it asks again with nothing changed) until its
 * mbarrier changes, and when no thread can run but some are parked the
 * launch fails with a deadlock report (a hang on the GPU). cp.async.bulk
 * and cp.async.bulk.tensor (1-5D, tile mode, out-of-bounds elements
 * zero, swizzles as emu_swizzle says) read their source at issue and
 * land, with their complete_tx, when a thread waits on their mbarrier and
 * the phase needs them; until then the destination is poison and reading
 * or writing it, or a second copy over it, is an error, as is refilling
 * bytes a thread read and released by no arrival or barrier since. Bulk
 * tensor stores (commit_group, wait_group.read) read shared memory at
 * issue through the async proxy: bytes threads wrote need the writer's
 * fence.proxy.async.shared::cta and a barrier; the source may not be
 * written until wait_group.read covers it, nor the CTA end before. Misuse
 * is reported: an uninitialized or misaligned mbarrier, init of a live
 * one, stores to one, more arrivals than expected in a phase, tx-count
 * beyond +-(2^20-1), copies in flight at the CTA's end. setmaxnreg: its
 * count (24..256, a multiple of 8), that every thread of the warpgroup
 * executes the same ones, that the kernel has a "maxnreg" annotation (the
 * count each thread starts with), and the registers it moves: .dec (not
 * above the current count) gives the warpgroup's surplus to the CTA's
 * pool, empty at launch; .inc (not below it) takes from the pool, its
 * threads parked until the pool holds enough (a deadlock if it never
 * will). The race check
 * orders bulk-copy data by its mbarrier, but not threads' own shared
 * accesses: those still need a barrier between threads.
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
 * Warpgroup MMA (sm_90a; wgmma.c, PTX ISA 9.7.15): the inline asm of
 * lower/ptx_wgmma.h, exactly (other forms are refused by name), run as
 * collectives of a warpgroup (all 128 threads of warps 4k..4k+3).
 * wgmma.mma_async reads A (or takes it from registers) and B through
 * matrix descriptors in the ISA's canonical layouts, K- or MN-major, every
 * swizzle mode with its base offset, and checks the descriptor's rules,
 * bounds, poison, and races with threads' writes since the last barrier.
 * Its D registers stay pending until the wgmma.wait_group that completes
 * their group: moves of them are free, a wgmma of the same shape may
 * accumulate on them, any other read is an error, and so is a write to
 * shared bytes a pending wgmma reads (a race). wgmma.fence must come
 * before the first wgmma of a warpgroup and between ordinary writes of A
 * registers or accumulators and the wgmma reading them (a value-based
 * check: a register rewritten with the value it had is not seen).
 * ptrtoint of an addrspace(3) pointer is its byte offset in the CTA's
 * shared window, as on the GPU; inttoptr to addrspace(3) tags it back.
 *
 * Shared-memory bank accounting (opt-in: emu_launch.smem_stats; off, it
 * costs a NULL test per shared access). It counts, for every warp-level
 * shared-memory access, the wavefronts (shared-memory transactions) the
 * hardware needs and the ideal minimum, by NVIDIA's rules for sm_70 and
 * later (32 banks of 4-byte words; what Nsight Compute's
 * l1tex__data_bank_conflicts_pipe_lsu_mem_shared counts as the excess):
 *   - A warp-level instance is the k-th execution, by each lane of a warp,
 *     of one static instruction, k counted from the warp's last
 *     synchronization (a barrier, or a warp collective: shuffle, vote,
 *     bar.warp.sync, mma, ldmatrix). Threads run one after another, so the
 *     lanes' addresses are collected per (warp, instruction, k); an
 *     instance is complete when every thread of the warp has reported, or
 *     at the warp's next synchronization or the CTA's end (lanes that did
 *     not execute it, masked off or exited, do not take part).
 *   - Plain loads and stores to shared memory, the shared side of cp.async
 *     (at its issue) and shared atomics, of w bytes a lane: the lanes are
 *     split into groups that move at most 128 bytes: w <= 4, the warp;
 *     w = 8, half-warps; w = 16, quarter-warps (w > 16, which the backend
 *     splits into 16-byte accesses, counts as w/16 such accesses). In a
 *     group, wavefronts = the largest number, over the 32 banks (bank =
 *     byte address / 4 % 32), of DISTINCT 4-byte words of that bank the
 *     group touches (lanes on one word are a broadcast, counted once; a
 *     w-byte access touches the words its bytes cover). Ideal: 1 per
 *     group with an active lane.
 *   - ldmatrix .x1/.x2/.x4 (.trans or not): matrix i's 8 row addresses
 *     (lanes 8i..8i+7, 16 bytes each) are one group, counted by the same
 *     rule; ideal: 1 per matrix.
 * The model leaves out what it cannot see: sm_7x's faster uniform-address
 * pairs for 16-byte loads, same-address atomics serializing (they count
 * as one word here), and anything ptxas changes (it may merge or split
 * accesses). Totals go per kind and per static instruction (with its LLVM
 * text), so a report (emu_smem_report) can name the worst instructions.
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

/* Shared-memory bank accounting (see the header comment). */
typedef enum emu_smem_kind {
    EMU_SMEM_LOAD,
    EMU_SMEM_STORE,
    EMU_SMEM_CP_ASYNC, /* the shared write of a cp.async */
    EMU_SMEM_LDMATRIX,
    EMU_SMEM_ATOMIC,
    EMU_SMEM_KINDS
} emu_smem_kind;

typedef struct emu_smem_count {
    uint64_t instances;  /* warp-level accesses */
    uint64_t wavefronts; /* shared-memory transactions they need */
    uint64_t ideal;      /* the fewest their bytes could take */
} emu_smem_count;

/* One static instruction that accessed shared memory. */
typedef struct emu_smem_site {
    char *kernel;
    uint32_t pc; /* its index in the emulator's translation of the kernel */
    emu_smem_kind kind;
    uint32_t bytes; /* per lane (ldmatrix: 16, a row) */
    emu_smem_count count;
    char *text; /* the LLVM instruction */
} emu_smem_site;

/* What emu_run adds up when emu_launch.smem_stats points here: zero it
 * before the first launch (launches add to it), free its sites with
 * emu_smem_stats_free. */
typedef struct emu_smem_stats {
    emu_smem_count total[EMU_SMEM_KINDS];
    emu_smem_site *sites;
    uint32_t nsites, capsites;
} emu_smem_stats;

void emu_smem_stats_free(emu_smem_stats *s);
const char *emu_smem_kind_name(emu_smem_kind k);
/* Formats the per-kind totals and the `top` sites with the most excess
 * wavefronts (wavefronts - ideal; none without excess) into buf, as lines;
 * returns the length it needed (as snprintf). */
size_t emu_smem_report(const emu_smem_stats *s, unsigned top, char *buf, size_t size);

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
    /* NULL: no bank accounting; else where it adds its counts */
    emu_smem_stats *smem_stats;
    /* > 0: the launch fails once it has run this many milliseconds (a loop
     * that never ends stops with an error instead of hanging) */
    double time_limit_ms;
} emu_launch;

/* Tensor maps (the operand of cp.async.bulk.tensor). On the GPU
 * cuTensorMapEncodeTiled makes an opaque 128-byte object; the emulator has
 * its own 128-byte format (64-byte aligned, in a launch buffer the kernel
 * gets a pointer to), made by emu_tensor_map_encode from what the runtime
 * would give the driver. Tile mode only, interleave none, out-of-bounds
 * elements filled with zeros. Dimension 0 is the innermost (contiguous). */
enum { EMU_TENSOR_MAP_BYTES = 128, EMU_TENSOR_MAP_ALIGN = 64, EMU_TENSOR_MAX_RANK = 5 };

/* Where a tensor copy puts the box's 16-byte chunks in shared memory (the
 * driver's CUtensorMapSwizzle; PTX ISA "Tensors", swizzling modes): with
 * a span of S = 32, 64 or 128 bytes, the chunk at shared address a (the
 * address the box element would have unswizzled: rows of the box packed
 * one after another from the destination) goes to
 *     a ^ (((a >> 7) & (S/16 - 1)) << 4)
 * i.e. bits 4.. of the address (the chunk within the span) are XORed with
 * bits 7.. (the 128-byte line within a 256/512/1024-byte repeat). For S =
 * 128: line i of each 1024-byte block has its chunk j at j ^ (i % 8). The
 * pattern follows the shared address itself, so a buffer aligned to the
 * repeat (S * 8 bytes) starts at its first line. */
typedef enum emu_swizzle { EMU_SWIZZLE_NONE, EMU_SWIZZLE_32B, EMU_SWIZZLE_64B, EMU_SWIZZLE_128B } emu_swizzle;

typedef struct emu_tensor_map_desc {
    uint64_t global_address; /* a tagged pointer into a launch buffer: emu_buffer_address */
    uint32_t elem_bytes;     /* 1, 2, 4 or 8 */
    uint32_t rank;           /* 1 to EMU_TENSOR_MAX_RANK */
    uint64_t global_dim[EMU_TENSOR_MAX_RANK];
    uint64_t global_stride[EMU_TENSOR_MAX_RANK - 1]; /* bytes between steps of dimensions 1..rank-1 */
    uint32_t box_dim[EMU_TENSOR_MAX_RANK];           /* elements of the box copied, per dimension */
    uint32_t element_stride[EMU_TENSOR_MAX_RANK];    /* 0 or 1 (other strides are not emulated) */
    emu_swizzle swizzle;
} emu_tensor_map_desc;

/* The tagged address the emulator gives byte `offset` of launch buffer
 * `index` (what a pointer argument {true, index, offset} holds). */
uint64_t emu_buffer_address(const emu_buffer *buffers, uint32_t index, uint64_t offset);

/* Writes the tensor map for d into map (EMU_TENSOR_MAP_BYTES bytes,
 * EMU_TENSOR_MAP_ALIGN-aligned), checking what cuTensorMapEncodeTiled's
 * documentation requires: the map 64-byte aligned; rank 1..5; the global
 * address 16-byte aligned; each global dimension in 1..2^32; each stride a
 * multiple of 16 below 2^40; each box dimension in 1..256, the inner one
 * a multiple of 16 bytes and, with a swizzle, at most the swizzle span;
 * element strides in 1..8. The emulator adds: element strides of 1 only,
 * and with a swizzle an inner box of exactly the span. false, with a
 * message in err, otherwise. */
bool emu_tensor_map_encode(void *map, const emu_tensor_map_desc *d, char *err, size_t err_size);

typedef enum emu_result { EMU_OK, EMU_ERROR, EMU_ASSERT } emu_result;

/* Runs the launch. On EMU_ERROR err says what went wrong, where (kernel,
 * CTA, thread, the LLVM instruction); on EMU_ASSERT it holds the line the
 * failing thread printed just before __assertfail (tilec's assert message)
 * or, without one, __assertfail's own arguments. */
emu_result emu_run(const emu_module *m, const emu_launch *l, char *err, size_t err_size);

#endif
