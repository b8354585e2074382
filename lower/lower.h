/* lower.h - passes on the tile IR and code generation to LLVM IR.
 *
 * The pipeline (lower/pipeline.c) is a plain list of passes; the verifier
 * runs after each one, and the IR can be dumped after any of them. Each pass
 * is one file with one entry point `bool lower_<name>(tir_module *, const
 * lower_options *, tc_diag *)`. Codegen then turns the laid-out IR into an
 * LLVM module for the NVPTX target through the LLVM C API. */
#ifndef TILEC_LOWER_H
#define TILEC_LOWER_H

#include <llvm-c/Core.h>

#include "support/support.h"
#include "tileir/tileir.h"

enum {
    LOWER_DEFAULT_NUM_WARPS = 4,
    LOWER_WARP_SIZE = 32,
    LOWER_WARPGROUP_WARPS = 4,    /* warps of one wgmma (sm_90a) */
    LOWER_WGMMA_SMEM_ALIGN = 1024, /* where a buffer wgmma reads starts: its swizzle follows
                                      the address bits, repeating every 8 rows of 128 bytes */
    LOWER_ASSUMED_PTR_ALIGN = 16, /* bytes; pointer parameters are assumed this
                                    aligned (docs/language.md; the runtime checks) */
    LOWER_DEFAULT_NUM_STAGES = 3, /* software pipelining of loops that name no depth (Triton's default) */
    LOWER_PIPELINE_SMEM_RESERVE = 24 * 1024, /* shared memory kept out of a kernel's buffers (rings,
                                                staged operands) for what codegen puts beside
                                                them: a layout conversion's 16 KB round plus a
                                                spare slot per thread (up to 8 KB), reductions'
                                                partials */
    LOWER_MAX_ACCESS_BYTES = 16,   /* the widest access of one thread: ld/st.v4.b32 and
                                      cp.async; layouts give threads runs of this size */
    LOWER_CP_ASYNC_MIN_BYTES = 4,  /* cp.async copies 4, 8 or 16 bytes */
    LOWER_MAX_MASK_DEPTH = 16,     /* ops codegen looks through to prove a mask run a prefix */
    LOWER_MAX_PIPELINED_LOOPS = 256, /* loops of one kernel the pass looks at */
    LOWER_MAX_STAGED_OPERANDS = 256, /* dot operands of one kernel stage_operands looks at */
    LOWER_MAX_SMEM_OVERLAP = 32,  /* buffers of one kernel smem_plan places by their live ranges;
                                     past it each has bytes of its own */
    LOWER_MAX_MOVE_STEPS = 8192   /* rounds x registers a thread of one move through shared memory
                                     (move_scratch): its code grows as the square of the tile, and a
                                     2^20-element reshape (256 rounds x 2048) took LLVM minutes, a
                                     dot_ieee operand of 64x1024 (16 x (64 + 1024)) 52 s: GVN asks
                                     alias analysis about each of its 8,000 shared loads. The
                                     largest move of a stdlib, sample, bench or test kernel takes
                                     1025 */,
    LOWER_MAX_KERNEL_INSTRS = 131072 /* LLVM instructions of one kernel before optimization: tiles
                                        unrolled over a thread's registers (up to 1024 elements each)
                                        times the ops on them. LLVM's time grows faster than the code
                                        (one long block): a Philox and erf kernel at 1024 elements a
                                        thread, 388,036 instructions, took 89 s; at 194,116, 14 s; at
                                        97,156, 3.8 s. The largest stdlib, sample, bench or test kernel
                                        has 17,132 */
};

/* Plans a pass made that codegen would otherwise make again: the scratch
 * layout of each move through shared memory (lower/cg_xthread.c), which
 * smem_plan makes to size the scratch area and codegen to emit the move,
 * the most time a move takes to compile. Written by the passes, which run
 * on one thread; only read by codegen, whose kernels run on several. One
 * per compilation, in its arena. */
typedef struct lower_memo lower_memo;
lower_memo *lower_memo_new(tc_arena *a);
size_t lower_memo_moves(const lower_memo *m); /* the move plans kept */

typedef struct lower_options {
    /* The compilation's options, as the driver was given them. The passes
     * read num_warps and num_stages (0: each kernel's own, else the
     * compiler's choice), arch (NULL: TILEC_DEFAULT_ARCH), passes (comma-
     * separated pass names to run, "none", or NULL for the whole pipeline:
     * testing one pass alone on a .tir file), dump_after and dump_all. */
    tilec_options compile;
    tc_strbuf *dump_out;    /* where dumps go; NULL: nowhere */
    tc_strbuf *notes;       /* where passes explain what they chose
                               ("file:line:col: note: ..." lines; tilec
                               --verbose); NULL: nowhere */
    bool *over_limit;       /* set when a kernel needs more shared memory
                               than the target has, or more code than LLVM
                               compiles in reasonable time (codegen,
                               LOWER_MAX_KERNEL_INSTRS): its error, not the
                               compiler's; NULL: not asked */
    lower_memo *memo;       /* plans kept for codegen; NULL: each made where
                               it is needed */
} lower_options;

typedef bool (*lower_pass_fn)(tir_module *m, const lower_options *opt, tc_diag *diag);
typedef struct lower_pass {
    const char *name;
    lower_pass_fn run;
} lower_pass;

/* The pass list, in order, ending with {NULL, NULL}. */
extern const lower_pass lower_passes[];
bool lower_is_pass_name(const char *name);
/* Whether a --passes list ("none", or pass names and commas) names only
 * passes; false with an error naming the first that is not. */
bool lower_passes_valid(const char *passes, tc_diag *diag);

/* Passes (one file each). */
bool lower_simplify(tir_module *m, const lower_options *opt, tc_diag *diag); /* fold, dce */
bool lower_remat_tiles(tir_module *m, const lower_options *opt, tc_diag *diag); /* tiles recomputed after loops */
bool lower_layout(tir_module *m, const lower_options *opt, tc_diag *diag);   /* blocked layouts */
bool lower_remat_converts(tir_module *m, const lower_options *opt, tc_diag *diag); /* index tiles rebuilt, not moved */
bool lower_pipeline_loops(tir_module *m, const lower_options *opt, tc_diag *diag); /* loads ahead via cp.async */
bool lower_stage_operands(tir_module *m, const lower_options *opt, tc_diag *diag); /* dot operands via swizzled smem */
bool lower_prefetch_fragments(tir_module *m, const lower_options *opt, tc_diag *diag); /* next trip's first K piece */
bool lower_sink_pure(tir_module *m, const lower_options *opt, tc_diag *diag);  /* pure ops down to their first use */
bool lower_async_dots(tir_module *m, const lower_options *opt, tc_diag *diag); /* sm_90a: a loop's wgmma waited a trip later */
bool lower_tma_copies(tir_module *m, const lower_options *opt, tc_diag *diag); /* sm_90a: rings filled by bulk tensor copies */
bool lower_warp_specialize(tir_module *m, const lower_options *opt, tc_diag *diag); /* sm_90a: a producer warpgroup issues them */
bool lower_smem_plan(tir_module *m, const lower_options *opt, tc_diag *diag);     /* shared memory sized and checked */
/* The bytes of a kernel's shared-memory area as smem_plan recorded it. */
uint32_t lower_smem_bytes(const tir_func *f);

/* The most shared memory (bytes) one CTA may use on `arch` ("sm_80",
 * "sm_90a"; NULL or unknown: sm_80's), with the dynamic opt-in
 * (cuFuncSetAttribute); lower/target.c. Codegen gives a kernel that needs
 * at most 48 KB a static array, and one that needs more the dynamic
 * (extern) array, whose size the launch passes (tir_func.dynamic_smem). */
uint32_t lower_smem_limit(const char *arch);
/* What a kernel's buffers (local_alloc) may take on `arch`, all together:
 * lower_smem_limit less LOWER_PIPELINE_SMEM_RESERVE; what one buffer of
 * type t takes (16-byte aligned, as codegen lays buffers out); what f's
 * buffers take now. */
uint64_t lower_buffer_budget(const char *arch);
uint64_t lower_buffer_bytes(tir_type t);
uint64_t lower_func_buffer_bytes(tir_func *f);

/* Hopper's warpgroup MMA (lower/target.c). wgmma needs the arch-specific
 * target: only "sm_90a" has it. A dot of inputs `in` and shape mnk (M, N,
 * K) fits the wgmma lowering with num_warps warps when they make whole
 * warpgroups (LOWER_WARPGROUP_WARPS) whose 64-row pieces tile M (the
 * accumulator is the MMA layout with the warps all along M, which is
 * wgmma's), K is a multiple of the instruction's (32 bytes of a row) and
 * N of one wgmma N allows. lower_wgmma_dot_ok: the same for a laid-out
 * dot, whose result must have that layout. */
bool lower_has_wgmma(const char *arch);
bool lower_wgmma_shape_ok(tir_elem in, const uint32_t *mnk, unsigned num_warps);
bool lower_wgmma_dot_ok(const tir_op *dot, unsigned num_warps);

/* Runs every pass with verification after each. */
bool lower_run_pipeline(tir_module *m, const lower_options *opt, tc_diag *diag);

/* Builds the LLVM module (one kernel function per tir_func, or only `only`
 * when it is not NULL; NVPTX triple and data layout, nvvm annotations).
 * The IR must have been through the whole pipeline (laid out, its shared
 * memory planned); codegen only reads it, so calls for different kernels
 * of one module may run on different threads, each with its own context
 * and diag. NULL on error. */
LLVMModuleRef lower_codegen(tir_module *m, const tir_func *only, LLVMContextRef ctx, const lower_options *opt,
                            tc_diag *diag);

/* ---- analyses shared by passes and codegen ---------------------------- */
/* What is known about the integer (or pointer) values of a 1-D tile along
 * its axis: runs of `contiguity` consecutive elements increase by one;
 * runs of `constancy` elements are equal; the first element of each such
 * run is a multiple of `divisibility` (in bytes for pointers). */
typedef struct lower_axis_info {
    int64_t contiguity;
    int64_t constancy;
    int64_t divisibility;
} lower_axis_info;

typedef struct lower_axis_map lower_axis_map;
lower_axis_map *lower_axis_analyze(tir_func *f, tc_arena *arena);
lower_axis_info lower_axis_get(const lower_axis_map *map, const tir_value *v);

/* Loop facts (lower/axisinfo.c), shared by the axis analysis and
 * pipeline_loops. A value is invariant in a `for` body when it is defined
 * outside the body, or by a pure op of the body (no region, not
 * local_alloc) on invariant values only: the same on every trip. */
bool lower_loop_invariant(const tir_block *body, const tir_value *v);
/* The kernel's `for` loops (and `while` loops with whiles), outer before
 * inner, in program order: at most LOWER_MAX_PIPELINED_LOOPS (the passes
 * that rewrite loops look at no more), as an array from arena a; *n says
 * how many. */
tir_op **lower_loops(tir_func *f, bool whiles, tc_arena *a, uint32_t *n);
/* Body argument `arg` (1 .. nargs-1; 0 is the induction variable) of `for`
 * op `loop` is a carried induction value when the value its body yields
 * for it is `addptr v, d`, or `add v, d` or `add d, v` on integers, with
 * d invariant: every trip advances it by the same d, so k trips after a
 * trip where it is v it is v + k*d (float additions round, so k of them
 * are not one of k*d). Returns d, or NULL when the argument is not such a
 * value. */
tir_value *lower_carried_step(const tir_op *loop, uint32_t arg);

#endif
