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
 * applies to such a module. With the SLP vectorizer always in, the PTX of
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
 * shows the pass running); naming the passes does. */
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
    "sroa<modify-cfg>,vector-combine,mldst-motion<no-split-footer-bb>,gvn<>,sccp,bdce," INSTCOMBINE ","
    "jump-threading,correlated-propagation,adce,memcpyopt,dse,loop-mssa(licm<allowspeculation>)," CFG_HOIST
    "," INSTCOMBINE "),"
    "cgscc(function-attrs),globalopt,globaldce";

/* O2's module optimization, without the loop vectorizer; the SLP
 * vectorizer only where ptx_wants_slp says it may find something. */
#define LATE_PIPELINE(slp)                                                                                           \
    "function(float2int,lower-constant-intrinsics,loop(" LOOP_ROTATE ",loop-deletion),infer-alignment," INSTCOMBINE \
    "," CFG_LATE "," slp "vector-combine," INSTCOMBINE ",loop-unroll<O2>,sroa<preserve-cfg>,infer-alignment,"        \
    INSTCOMBINE ",loop-mssa(licm<allowspeculation>),alignment-from-assumptions,loop-sink,instsimplify,div-rem-pairs,tailcallelim," \
    CFG_FINAL "),"                                                                                                 \
    "globaldce"
static const char late_pipeline_slp[] = LATE_PIPELINE("slp-vectorizer,");
static const char late_pipeline[] = LATE_PIPELINE("");

const char *ptx_llvm_pipeline(int opt_level, ptx_pipeline_part part, bool slp) {
    if (!opt_level) return part == PTX_PIPELINE_SIMPLIFY ? "default<O0>" : NULL;
    if (part == PTX_PIPELINE_SIMPLIFY) return simplify_pipeline;
    return slp ? late_pipeline_slp : late_pipeline;
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
