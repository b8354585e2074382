/* codegen_internal.h - private to lower/codegen*.c and lower/cg_*.c (and lower/smem_plan.c,
 * which sizes shared memory with codegen's own sizing functions): the code generation context
 * (cg), the types and limits the concern files share, and the functions one of them defines
 * and another calls. codegen.c holds the overview of the whole lowering. */
#ifndef TILEC_LOWER_CODEGEN_INTERNAL_H
#define TILEC_LOWER_CODEGEN_INTERNAL_H

#include <llvm-c/DebugInfo.h>

#include "lower/lower.h"

enum {
    CG_MAX_SPT = 64,
    CG_SMEM_SLOT_BYTES = 8, /* one reduction partial per warp, any element type */
    CG_MAX_LAYOUTS = 32,    /* layouts whose thread bases are kept (more are recomputed) */
    CG_MAX_STATIC_SMEM = 48 * 1024, /* static shared memory of one CTA on every target; a kernel
                                       needing more gets the dynamic array (smem_plan.c sizes it, gen_func
                                       declares it) */
    CG_MOVE_ROUND_BYTES = 16 * 1024, /* a larger tile changes layout through scratch in rounds of this
                                        size (a 128x128 f32 accumulator in 4), which leaves room
                                        for other shared memory */
    NVPTX_ADDRSPACE_GLOBAL = 1,
    NVPTX_ADDRSPACE_SHARED = 3
};

typedef struct cg {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMValueRef fn;
    tir_func *f;
    lower_axis_map *axis;
    tc_arena *arena;
    tc_diag *diag;
    const char *file;
    uint32_t dyn_smem_align; /* of the extern dynamic shared array: the module's kernels' largest */
    LLVMValueRef **regs; /* by value id */
    uint32_t *nregs;
    LLVMValueRef tid;
    LLVMBasicBlockRef entry;
    LLVMValueRef tid_times[CG_MAX_SPT + 1]; /* tid * spt, made once per spt */
    LLVMValueRef smem;                      /* the kernel's shared memory, or NULL */
    uint32_t smem_used;                     /* bytes handed out so far */
    uint32_t scratch;                       /* offset of the scratch area (layout changes) the
                                               op being generated uses (gen_block_ops) */
    uint32_t scratch_bytes;                 /* and its size */
    uint32_t buffers_at;                    /* where the local_alloc buffers start */
    uint32_t apart_next;                    /* with buffers->apart: where the next one goes */
    const struct smem_buffers *buffers;     /* their places (smem_plan.c) */
    struct base_cache {                     /* per blocked layout: each dim's thread base; per
                                               mma/dot_op layout: mma_thread_parts */
        tir_layout key;
        LLVMValueRef base[TIR_MAX_RANK];
    } bases[CG_MAX_LAYOUTS];
    uint32_t nbases;
    const char *arch;                       /* the target, for messages */
    bool exp2_ftz;                          /* exp2 as ex2.approx.ftz (tilec_options.exp2_ftz) */
    LLVMValueRef str_true, str_false;       /* print's i1 texts (module constants), made when first needed */
    const struct cg_dot_lowering *dot;      /* the target's tensor-core dot (cg_dot_lowering_for) */
    LLVMDIBuilderRef dib;                   /* tilec_options.line_info: the line tables' builder; NULL: none */
    LLVMMetadataRef di_file, di_sub;        /* the source file, and the kernel's subprogram */
    int role;                               /* CG_ROLE_*: which warps the code being made runs on */
    const uint8_t *held;                    /* producer role: the values it makes (tir_producer_values) */
    bool in_producer;                       /* inside a producer region */
    const lower_memo *memo;                 /* plans the passes kept (lower_options.memo), or NULL */
    bool *over_limit;                       /* lower_options.over_limit: set with an error that is the kernel's */
    bool ok;
} cg;

/* Warp roles after a warp_specialize (lower/warp_specialize.c): before it
 * every warp runs the code; after it the producer warps run the producer
 * regions with the scalars they need, the consumers (the kernel's
 * num_warps warps) everything else, their barriers among themselves. */
enum { CG_ROLE_ALL, CG_ROLE_PRODUCER, CG_ROLE_CONSUMER };
enum {
    CG_CONSUMER_BARRIER = 1,        /* the named barrier the consumers meet at (0 is every thread's) */
    CG_PRODUCER_REGS = 40,          /* setmaxnreg: what the producer keeps (scalars and addresses) */
    CG_REGISTER_FILE = 65536,       /* 32-bit registers of one SM, all a CTA may get */
    CG_SETMAXNREG_MIN_WARPS = 8,    /* below, the consumers' limit is already the largest (255) */
};
/* The first thread of the warp that issues bulk copies: warp 0, or the
 * producer's first warp in its role. */
uint32_t cg_issuer_tid(const cg *c);

/* A tile's layout seen as a blocked layout over `rank` view dims: the "layouts as registers"
 * comment in cg_regs.c says how registers map to elements. */
/* The compile unit's emission kind for tilec_options.line_info: LLVM-C's
 * enum stops at LineTablesOnly, whose PTX gets `.target ..., debug` and
 * DWARF sections, which ptxas refuses at -O3 ("Optimized debugging not
 * supported"); DICompileUnit::DebugDirectivesOnly (llvm/IR/
 * DebugInfoMetadata.h), 3, gives the .file and .loc lines alone, as nvcc
 * -lineinfo does. tests/golden/cli/lineinfo.tile checks the PTX. */
enum { CG_DWARF_DIRECTIVES_ONLY = 3 };

typedef struct view {
    unsigned rank;
    int sliced; /* the view dim the tile lacks, or -1 */
    tir_layout l;
    uint32_t shape[TIR_MAX_RANK], nreg[TIR_MAX_RANK], cover[TIR_MAX_RANK];
} view;

/* How the target lowers `dot` on tensor cores: chosen once per compilation
 * (cg_dot_lowering_for), called by gen_dot for each dot it takes; a dot it
 * does not take and whose result is blocked runs on FMAs (cg_dot.c):
 * mma.sync (cg_dot_mma_sync.c) on sm_80 and sm_90, wgmma on sm_90a
 * (cg_dot_wgmma.c). */
typedef struct cg_dot_lowering {
    const char *name;                            /* for messages and tests */
    bool (*takes)(cg *c, const tir_op *op);      /* this dot is this lowering's */
    void (*emit)(cg *c, const tir_op *op);       /* its result's registers, or an error */
} cg_dot_lowering;

/* codegen.c */
void cg_error(cg *c, const tir_op *op, const char *what);
LLVMTypeRef elem_type(cg *c, tir_elem e);
LLVMTypeRef mem_type(cg *c, tir_elem e);
LLVMValueRef from_mem(cg *c, tir_elem e, LLVMValueRef v);
LLVMValueRef to_mem(cg *c, tir_elem e, LLVMValueRef v);
LLVMValueRef i32c(cg *c, int64_t v);
LLVMValueRef add_i32c(cg *c, LLVMValueRef x, int64_t k);
LLVMValueRef lshr_i32c(cg *c, LLVMValueRef x, uint32_t k);
LLVMValueRef shl_i32c(cg *c, LLVMValueRef x, uint32_t k);

/* cg_regs.c */
view view_of(const tir_type *t);
uint32_t view_regs(const view *v);
void reg_split(const view *v, uint32_t r, uint32_t *rd);
uint32_t reg_join(const view *v, const uint32_t *rd);
uint32_t broadcast_source_reg(const tir_type *xt, const tir_type *rt, uint32_t r);
unsigned view_dim(const view *v, unsigned td);
bool is_rank1_blocked(const tir_type *t);
bool is_mma_kind(const tir_layout *l);
uint32_t reg_count(const tir_type *t);
LLVMValueRef *new_regs(cg *c, const tir_value *v);
LLVMValueRef reg(cg *c, const tir_value *v, uint32_t r);
LLVMValueRef sreg(cg *c, const char *name);
LLVMValueRef elem_index(cg *c, const tir_type *t, uint32_t r);
uint32_t log2u(uint32_t x);
void position_at_entry(cg *c);
LLVMValueRef view_coord(cg *c, const view *v, uint32_t r, unsigned d);
LLVMValueRef tile_coord(cg *c, const tir_type *t, uint32_t r, unsigned td);
LLVMValueRef linear_index(cg *c, const tir_type *t, uint32_t r);
LLVMValueRef first_holder(cg *c, const tir_type *t);

/* cg_math.c */
void gen_const(cg *c, const tir_op *op);
LLVMValueRef gen_binary(cg *c, tir_opcode code, tir_elem e, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef gen_cast(cg *c, LLVMValueRef v, tir_elem from, tir_elem to);
LLVMValueRef call_intrinsic(cg *c, const char *name, LLVMValueRef *args, unsigned n);
LLVMValueRef intrinsic(cg *c, const char *name, LLVMTypeRef ty, LLVMValueRef *args, unsigned n);
void gen_math(cg *c, const tir_op *op);
void gen_approx(cg *c, const tir_op *op);
void gen_erf(cg *c, const tir_op *op);
void gen_randint(cg *c, const tir_op *op);

/* cg_memory.c */
/* An inline asm call with side effects (kept in program order). */
LLVMValueRef inline_asm(cg *c, LLVMTypeRef ret, const char *text, const char *cons, LLVMValueRef *args, unsigned nargs);
uint32_t floor_pow2(int64_t v);
uint32_t vec_width(cg *c, const tir_value *ptrs, bool *check_align);
uint32_t equal_run(cg *c, const tir_value *v);
LLVMValueRef groups_aligned(cg *c, const tir_value *ptrs, uint32_t n, uint32_t vec);
LLVMBasicBlockRef new_block(cg *c, const char *name);
void guard_begin(cg *c, LLVMValueRef pred, const char *name, const char *join_name, LLVMBasicBlockRef *join);
void guard_end(cg *c, LLVMBasicBlockRef join);
LLVMValueRef predicated_load(cg *c, tir_elem e, LLVMValueRef p, LLVMValueRef m, LLVMValueRef other);
LLVMValueRef lane_ptr(cg *c, const tir_value *ptrs, uint32_t r, uint32_t vec);
void split_on(cg *c, LLVMValueRef all, LLVMBasicBlockRef *fast, LLVMBasicBlockRef *slow,
              LLVMBasicBlockRef *join);
LLVMValueRef *mask_lanes(cg *c, const tir_value *mask, uint32_t n, uint32_t vec, LLVMValueRef *count);
void gen_load(cg *c, const tir_op *op);
LLVMValueRef element_owner(cg *c, const tir_type *t);
void gen_store(cg *c, const tir_op *op);
bool is_atomic(tir_opcode code);
uint32_t atomic_scratch(const tir_func *f, const tir_op *op);
void gen_atomic(cg *c, const tir_op *op);

/* smem_plan.c: where a kernel's local_alloc buffers lie and when they are
 * live, as smem_plan sizes them and codegen places them. Ranges count the
 * ops of `home`, the block that holds every local_alloc (else the
 * kernel's body), each op standing for its regions: a buffer is live from
 * the first op that reads or writes it to `to`, the first op after its
 * last at which no async copy is in flight. Buffers whose ranges do not
 * meet may share bytes. */
typedef struct smem_buffer {
    const tir_op *alloc;
    uint32_t offset, bytes; /* from the buffers' start, 16-byte aligned */
    uint32_t align;          /* where it may start (smem_buffer_align) */
    uint32_t from, last, to; /* positions in home: first use, last use, end of range (exclusive) */
    bool used;               /* some op of home touches it (else an empty range: from = to = 0) */
} smem_buffer;
typedef struct smem_buffers {
    const tir_func *f;
    const tir_block *home;       /* NULL: no buffers */
    const tir_op *first, *end;   /* in home: the union of the ranges, [first, end) (end NULL: home's end) */
    uint32_t n, extent;          /* buffers; the bytes they span */
    smem_buffer b[LOWER_MAX_SMEM_OVERLAP];
    bool apart;                  /* more buffers than b holds: each has bytes of its own, in order */
} smem_buffers;
void smem_buffers_of(const tir_func *f, smem_buffers *s);
/* the offset of the buffer that alloc makes (s from smem_buffers_of);
 * UINT32_MAX with `apart`: each after the ones before it in program order */
uint32_t smem_buffer_offset(const smem_buffers *s, const tir_op *alloc);
/* Where buffer `alloc` may start (16, or LOWER_WGMMA_SMEM_ALIGN where wgmma
 * reads it); with alloc NULL, the most any of f's buffers needs. Where
 * the buffers start in the kernel's area: after the slots, so aligned. */
uint32_t smem_buffer_align(const tir_func *f, const tir_op *alloc);
uint32_t smem_buffers_base(const tir_func *f);

/* cg_smem.c */
uint32_t buffer_bytes(const tir_type *t);
void gen_local_alloc(cg *c, const tir_op *op);
void gen_async_copy(cg *c, const tir_op *op);
void gen_local_load(cg *c, const tir_op *op);
void gen_local_store(cg *c, const tir_op *op);

/* cg_reduce.c */
void gen_reduce(cg *c, const tir_op *op);
uint32_t reduce_scratch(const tir_op *op);
uint32_t scan_scratch(const tir_op *op);
void gen_scan(cg *c, const tir_op *op);

/* cg_xthread.c */
void barrier(cg *c);
LLVMValueRef smem_at(cg *c, LLVMValueRef offset);
unsigned scratch_elem_bytes(tir_elem e);
bool move_needs_scratch(const tir_op *op);
uint32_t move_scratch(const tir_op *op, lower_memo *memo, uint64_t *steps);
void gen_move_scratch(cg *c, const tir_op *op);
void gen_rename(cg *c, const tir_op *op);
void gen_broadcast(cg *c, const tir_op *op);

/* cg_print.c */
void gen_print(cg *c, const tir_op *op);
void gen_assert(cg *c, const tir_op *op);


/* cg_dot_mma_sync.c */
extern const cg_dot_lowering cg_dot_mma_sync;

/* cg_dot_wgmma.c: sm_90a's (wgmma, else mma.sync); fence_async */
extern const cg_dot_lowering cg_dot_wgmma;
void gen_fence_async(cg *c, const tir_op *op);
void gen_dot_async(cg *c, const tir_op *op);
void gen_dot_wait(cg *c, const tir_op *op);

/* cg_tma.c: bulk tensor copies and their mbarriers (sm_90 and later) */
void gen_mbar_init(cg *c, const tir_op *op);
void gen_mbar_wait(cg *c, const tir_op *op);
void gen_mbar_inval(cg *c, const tir_op *op);
void gen_tma_load(cg *c, const tir_op *op);
void gen_mbar_arrive(cg *c, const tir_op *op);

/* cg_dot.c */
const cg_dot_lowering *cg_dot_lowering_for(const char *arch);
void gen_dot(cg *c, const tir_op *op);

#endif
