/* pipeline.c - the LLVM pass pipeline tilec optimizes a kernel's module with.
 *
 * LLVM's `default<O2>` is built for whole programs of many functions: an
 * inliner over the call graph, interprocedural propagation, the
 * coroutine, OpenMP and sanitizer passes, the loop vectorizer, global
 * merging. A tilec module is one kernel, with no calls but to intrinsics
 * (and vprintf), no allocas, no globals but shared memory and strings,
 * and vectors already as wide as the axis analysis proves. So the pipeline
 * below is O2's function simplification and module optimization as LLVM
 * 19 builds them (`opt -passes='default<O2>' -print-pipeline-passes` for
 * nvptx64), in the same order with the same parameters, less what never
 * applies to such a module (and four InstCombine runs, below). When it was
 * O2's whole, with the SLP vectorizer always in, the PTX of
 * every kernel `scripts/ptx-snapshot.sh` compiles (966 compilations at
 * sm_80 and sm_90) is the same byte for byte as with `default<O2>`, and
 * the optimized LLVM IR (`--emit=llvm-opt`, what the emulator runs)
 * differs only in the attributes of intrinsics' declarations.
 *
 * The pipeline runs in two parts so that the SLP vectorizer runs only
 * where the simplified module has 16- or 8-bit arithmetic (ptx_wants_slp).
 * It is most of LLVM's optimization time for a row kernel (18 of 22 ms for
 * layernorm_f16 at 4096 columns: it schedules the one long block of
 * unrolled per-thread code), and what it finds in our kernels that makes
 * shorter code is pairs of f16 or bf16 operations (add.rn.f16x2,
 * fma.rn.bf16x2), which f32 math whose results are only converted to f16
 * does not have. Without it, 20 of the 966 compilations change (the order
 * of conversions and shared loads it regrouped), with SASS as long but for
 * one variant no call launches (docs/design.md, "LLVM's pipeline").
 *
 * `LLVMPassBuilderOptionsSetSLPVectorization(po, 0)` does not take the SLP
 * vectorizer out of `default<O2>` through LLVM 19's C API (its debug log
 * shows the pass running); naming the passes does.
 *
 * Four of O2's nine InstCombine runs are left out: the simplification's
 * last two (after BDCE and after the hoisting simplifycfg) and the late
 * part's second and third (after vector-combine and after the late SROA).
 * Each costs some 10 M instructions executed on the 128x128x32 f16
 * matmul (437 to 397 M in all, a fresh process to PTX); over
 * scripts/ptx-snapshot.sh's compilations the SASS of every stdlib, sample
 * and bench kernel is as long without them, every loop body as long, and
 * 8 test kernels (loops with branches) one instruction longer outside
 * their loops. The first late InstCombine stays: without it the row
 * kernels' column sums spill (layernorm_dwdb, rmsnorm_dw).
 *
 * A kernel without loops (ptx_has_loop, below) takes a shorter pipeline
 * instead, straight_pipeline: for such code O2 is mostly fixed costs. */
#include <stdint.h>
#include <stdlib.h>

#include "backend/ptx/ptx.h"

/* The simplifycfg variants O2 uses, by where it runs them. */
#define SIMPLIFYCFG(opts) "simplifycfg<bonus-inst-threshold=1;" opts ">"
#define CFG_EARLY                                                                                                     \
    SIMPLIFYCFG("no-forward-switch-cond;no-switch-range-to-icmp;no-switch-to-lookup;keep-loops;no-hoist-common-insts;" \
                "no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables")
#define CFG                                                                                                        \
    SIMPLIFYCFG("no-forward-switch-cond;switch-range-to-icmp;no-switch-to-lookup;keep-loops;no-hoist-common-insts;" \
                "no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables")
#define CFG_HOIST                                                                                                \
    SIMPLIFYCFG("no-forward-switch-cond;switch-range-to-icmp;no-switch-to-lookup;keep-loops;hoist-common-insts;" \
                "sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables")
#define CFG_LATE                                                                                             \
    SIMPLIFYCFG("forward-switch-cond;switch-range-to-icmp;switch-to-lookup;no-keep-loops;hoist-common-insts;" \
                "sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-unpredictables")
#define CFG_FINAL                                                                                                  \
    SIMPLIFYCFG("no-forward-switch-cond;switch-range-to-icmp;no-switch-to-lookup;keep-loops;no-hoist-common-insts;" \
                "no-sink-common-insts;speculate-blocks;simplify-cond-branch;speculate-unpredictables")
#define INSTCOMBINE "instcombine<max-iterations=1;no-use-loop-info;no-verify-fixpoint>"
#define LOOP_ROTATE "loop-rotate<header-duplication;no-prepare-for-lto>"
#define UNSWITCH "simple-loop-unswitch<no-nontrivial;trivial>"

/* O2's early function cleanup and the function simplification pipeline
 * the inliner would run on each function (here there is one function and
 * nothing to inline). NVVM reflection and intrinsic ranges are the NVPTX
 * target's additions. */
static const char simplify_pipeline[] =
    "function(nvvm-reflect,nvvm-intr-range," CFG_EARLY ",sroa<modify-cfg>,early-cse<>),"
    "ipsccp,"
    "function(" INSTCOMBINE "," CFG ","
    "sroa<modify-cfg>,early-cse<memssa>,speculative-execution<only-if-divergent-target>,jump-threading,"
    "correlated-propagation," CFG "," INSTCOMBINE ",aggressive-instcombine,tailcallelim," CFG ",reassociate,"
    "constraint-elimination,"
    "loop-mssa(loop-instsimplify,loop-simplifycfg,licm<no-allowspeculation>," LOOP_ROTATE
    ",licm<allowspeculation>," UNSWITCH "),"
    CFG "," INSTCOMBINE ","
    "loop(loop-idiom,indvars," UNSWITCH ",loop-deletion,loop-unroll-full),"
    "sroa<modify-cfg>,vector-combine,mldst-motion<no-split-footer-bb>,gvn<>,sccp,bdce,"
    "jump-threading,correlated-propagation,adce,memcpyopt,dse,loop-mssa(licm<allowspeculation>)," CFG_HOIST "),"
    "cgscc(function-attrs),globalopt,globaldce";

/* O2's module optimization, without the loop vectorizer; the SLP
 * vectorizer only where ptx_wants_slp says it may find something. */
#define LATE_PIPELINE(slp)                                                                                           \
    "function(float2int,lower-constant-intrinsics,loop(" LOOP_ROTATE ",loop-deletion),infer-alignment," INSTCOMBINE \
    "," CFG_LATE "," slp "vector-combine,loop-unroll<O2>,sroa<preserve-cfg>,infer-alignment,"                         \
    "loop-mssa(licm<allowspeculation>),alignment-from-assumptions,loop-sink,instsimplify,div-rem-pairs,tailcallelim," \
    CFG_FINAL "),"                                                                                                 \
    "globaldce"
static const char late_pipeline_slp[] = LATE_PIPELINE("slp-vectorizer,");
static const char late_pipeline[] = LATE_PIPELINE("");

/* For a kernel without loops: what of O2 changes the SASS of such code.
 * O2 spends most of its time there on fixed costs: nine InstCombine runs
 * (each some 0.6 M instructions executed on vadd's 300 lines of IR), GVN
 * (2 M), the loop passes' analyses, SROA on a module with no allocas. The
 * passes below are the ones found to matter (docs/design.md, "A kernel
 * without loops"): InstCombine thrice; reassociation, so that a thread's
 * constant offsets end up last where ptxas folds them into addresses
 * (without it vadd with multiple_of(n, 16) is 48 SASS instructions, not
 * 39); alignment inference for shared-memory vectors; value ranges and
 * constraint elimination for masks; EarlyCSE again after the last
 * reassociated ors appear; vector-combine for extracts of vectors;
 * globalopt to drop shared memory that is stored but never read;
 * function-attrs, cheap, for what --emit=llvm-opt shows of the pointers
 * (readonly, nocapture), as after O2. Over scripts/ptx-snapshot.sh's
 * compilations no stdlib, sample or bench kernel's SASS is longer (ptxas
 * -O3, cuobjdump) and none uses more registers. */
static const char straight_pipeline[] =
    "function(nvvm-reflect,nvvm-intr-range," CFG ",early-cse<>,infer-alignment," INSTCOMBINE ","
    "correlated-propagation,reassociate,constraint-elimination," INSTCOMBINE ",vector-combine,bdce,adce,"
    "infer-alignment,early-cse<>," INSTCOMBINE "," CFG "),"
    "cgscc(function-attrs),globalopt,globaldce";
/* ... and where it leaves 16- or 8-bit arithmetic, the late pipeline's
 * SLP step (ptx_wants_slp). */
static const char straight_slp[] = "function(slp-vectorizer,vector-combine," INSTCOMBINE ")";

const char *ptx_llvm_pipeline(int opt_level, ptx_pipeline_part part, bool slp) {
    if (!opt_level) return part == PTX_PIPELINE_SIMPLIFY || part == PTX_PIPELINE_STRAIGHT ? "default<O0>" : NULL;
    switch (part) {
    case PTX_PIPELINE_SIMPLIFY: return simplify_pipeline;
    case PTX_PIPELINE_LATE: return slp ? late_pipeline_slp : late_pipeline;
    case PTX_PIPELINE_STRAIGHT: return straight_pipeline;
    case PTX_PIPELINE_STRAIGHT_LATE: return slp ? straight_slp : NULL;
    }
    return NULL;
}

/* The slot of block b in an open-addressing table of cap (a power of
 * two) entries, claimed for b if it was not there. */
static size_t block_slot(LLVMBasicBlockRef *key, size_t cap, LLVMBasicBlockRef b) {
    size_t h = (size_t)(((uintptr_t)b >> 4) * 0x9E3779B97F4A7C15u) & (cap - 1);
    while (key[h] && key[h] != b) h = (h + 1) & (cap - 1);
    key[h] = b;
    return h;
}

/* Whether a function's control flow has a cycle: an iterative depth-first
 * walk from the entry, in which an edge to a block still on the walk's
 * path closes one. Blocks are found in a table by address (LLVM's C API
 * numbers nothing), twice as many slots as blocks. */
static bool function_has_cycle(LLVMValueRef f) {
    size_t n = LLVMCountBasicBlocks(f), cap = 4;
    if (!n) return false; /* a declaration */
    while (cap < 2 * n) cap *= 2;
    LLVMBasicBlockRef *key = calloc(cap, sizeof *key), *path = malloc(n * sizeof *path);
    unsigned char *state = calloc(cap, 1); /* 0 unseen, 1 on the path, 2 done */
    unsigned *next = malloc(n * sizeof *next); /* the successor each path block tries next */
    bool cycle = !key || !path || !state || !next; /* out of memory: say "loop", the pipeline that needs no answer */
    size_t depth = 0;
    if (!cycle) {
        path[0] = LLVMGetEntryBasicBlock(f);
        next[0] = 0;
        state[block_slot(key, cap, path[0])] = 1;
        depth = 1;
    }
    while (depth && !cycle) {
        LLVMBasicBlockRef b = path[depth - 1];
        LLVMValueRef t = LLVMGetBasicBlockTerminator(b);
        unsigned ns = t ? LLVMGetNumSuccessors(t) : 0;
        if (next[depth - 1] == ns) {
            state[block_slot(key, cap, b)] = 2;
            depth--;
            continue;
        }
        LLVMBasicBlockRef s = LLVMGetSuccessor(t, next[depth - 1]++);
        size_t h = block_slot(key, cap, s);
        if (state[h] == 1) {
            cycle = true;
        } else if (!state[h]) {
            state[h] = 1;
            path[depth] = s;
            next[depth] = 0;
            depth++;
        }
    }
    free(key);
    free(path);
    free(state);
    free(next);
    return cycle;
}

bool ptx_has_loop(LLVMModuleRef m) {
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        if (function_has_cycle(f)) return true;
    return false;
}

/* Whether inst is arithmetic on a 16- or 8-bit scalar: what the SLP
 * vectorizer turns into NVPTX's packed instructions (add.rn.f16x2,
 * fma.rn.bf16x2 and the like). Conversions alone do not count: NVPTX
 * makes one cvt an element of a vector fptrunc too. */
static bool slp_candidate(LLVMValueRef inst) {
    LLVMTypeRef t = LLVMTypeOf(inst);
    LLVMTypeKind k = LLVMGetTypeKind(t);
    bool narrow = k == LLVMHalfTypeKind || k == LLVMBFloatTypeKind ||
                  (k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) > 1 && LLVMGetIntTypeWidth(t) <= 16);
    if (!narrow) return false;
    switch (LLVMGetInstructionOpcode(inst)) {
    case LLVMAdd: case LLVMFAdd: case LLVMSub: case LLVMFSub: case LLVMMul: case LLVMFMul:
    case LLVMUDiv: case LLVMSDiv: case LLVMFDiv: case LLVMURem: case LLVMSRem: case LLVMFRem:
    case LLVMShl: case LLVMLShr: case LLVMAShr: case LLVMAnd: case LLVMOr: case LLVMXor:
    case LLVMFNeg: case LLVMSelect: case LLVMCall:
        return true;
    default:
        return false;
    }
}

bool ptx_wants_slp(LLVMModuleRef m) {
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
            for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
                if (slp_candidate(i)) return true;
    return false;
}
