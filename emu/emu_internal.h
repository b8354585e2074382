/* emu_internal.h - private to emu/: the types the emulator's files share
 * (tagged pointers, element kinds, the translated form emu_inst/emu_func/
 * emu_module, the translation and execution states) and the functions one
 * file of emu/ calls in another. emu.h stays the folder's public header. */
#ifndef TILEC_EMU_INTERNAL_H
#define TILEC_EMU_INTERNAL_H

#include "emu/emu.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>

/* ---- pointers ------------------------------------------------------------ */

enum {
    REGION_SHIFT = 40,
    REGION_SHARED = 0xfffff0,
    REGION_LOCAL = 0xfffff1,
    REGION_CONST = 0xfffff2,
    BUFFER_BIAS_MOD = 4096, /* a buffer's offsets start at its address mod this, so alignment is the host's */
    MAX_BITCAST_BYTES = 128,
    MAX_PRINTF_TEXT = 4096,
    CP_ASYNC_MAX_PENDING = 4096, /* a thread's copies in flight: a runaway guard, above what
                                    deep rings give (4 stages of 128x32 f32 tiles whose layout
                                    repeats each element: 160 copies a stage) */
    POISON_BYTE = 0xff,
    DYNAMIC_SMEM_ALIGN = 16,      /* where the dynamic shared array starts at least (codegen aligns it to 16) */
    DYNAMIC_SMEM_MAX_ALIGN = 1024 /* the most it may ask (wgmma's 128-byte swizzle repeats every 1024 bytes) */
};
#define OFFSET_MASK ((UINT64_C(1) << REGION_SHIFT) - 1)

static inline uint64_t make_ptr(uint32_t region, uint64_t off) { return (uint64_t)region << REGION_SHIFT | off; }

/* ---- element kinds --------------------------------------------------------- */

typedef enum ek { EK_I1, EK_I8, EK_I16, EK_I32, EK_I64, EK_F16, EK_BF16, EK_F32, EK_F64, EK_PTR, EK_NONE } ek;
static const int ek_bits[] = {1, 8, 16, 32, 64, 16, 16, 32, 64, 64, 0};
static const int ek_bytes[] = {1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 0};
static inline bool ek_is_float(ek e) { return e >= EK_F16 && e <= EK_F64; }

static inline uint64_t mask_bits(uint64_t v, int bits) { return bits >= 64 ? v : v & ((UINT64_C(1) << bits) - 1); }
static inline int64_t sx(uint64_t v, int bits) {
    if (bits >= 64) return (int64_t)v;
    uint64_t m = UINT64_C(1) << (bits - 1);
    v = mask_bits(v, bits);
    return (int64_t)((v ^ m) - m);
}

static inline float f32_of(uint64_t w) {
    uint32_t u = (uint32_t)w;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint64_t bits_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline double f64_of(uint64_t w) {
    double d;
    memcpy(&d, &w, 8);
    return d;
}
static inline uint64_t bits_f64(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* ---- the translated form ----------------------------------------------------- */

typedef enum eop {
    EOP_BR, EOP_CONDBR, EOP_SWITCH, EOP_RET, EOP_UNREACHABLE, EOP_TRAP,
    EOP_BIN, EOP_FNEG, EOP_ICMP, EOP_FCMP, EOP_SELECT, EOP_CAST, EOP_BITCAST, EOP_COPY, EOP_ASCAST,
    EOP_GEP, EOP_LOAD, EOP_STORE, EOP_ALLOCA,
    EOP_EXTRACTELT, EOP_INSERTELT, EOP_SHUFFLE, EOP_EXTRACTVALUE, EOP_INSERTVALUE,
    EOP_ATOMICRMW, EOP_CMPXCHG,
    EOP_SREG, EOP_MATH, EOP_ASM_LD, EOP_ASM_ST, EOP_NOP, EOP_VPRINTF, EOP_ASSERTFAIL,
    EOP_CPASYNC, EOP_CPCOMMIT, EOP_CPWAIT, EOP_F2TF32,
    /* llvm.vector.reduce.*: the lanes of a folded left to right, by an integer
     * binop (sub: LLVMAdd, LLVMMul, LLVMAnd, LLVMOr, LLVMXor) or a min/max
     * math function (sub: M_SMIN ... M_MAXIMUM) */
    EOP_VREDUCE_BIN, EOP_VREDUCE_MATH,
    EOP_ASYNC, /* async.c: sub is a ptx_async_asm (operand slots in aux) or ASYNC_SETMAXNREG_* (a) */
    /* collectives: every op from here on waits for its scope */
    EOP_BARRIER, EOP_SHFL, EOP_VOTE, EOP_WARPSYNC, EOP_MMA, EOP_LDMATRIX, EOP_ELECT,
    /* warpgroup collectives (wgmma.c): all 128 threads of a warpgroup */
    EOP_WGMMA, EOP_WGFENCE, EOP_WGCOMMIT, EOP_WGWAIT
} eop;
static inline bool eop_is_warpgroup(uint16_t op) { return op >= EOP_WGMMA && op <= EOP_WGWAIT; }

enum { SREG_TID_X, SREG_TID_Y, SREG_TID_Z, SREG_NTID_X, SREG_NTID_Y, SREG_NTID_Z, SREG_CTAID_X, SREG_CTAID_Y,
       SREG_CTAID_Z, SREG_NCTAID_X, SREG_NCTAID_Y, SREG_NCTAID_Z, SREG_LANEID, SREG_WARPID, SREG_WARPSIZE };

typedef enum mathfn {
    M_FABS, M_COPYSIGN, M_FMA, M_FMULADD, M_SQRT, M_FLOOR, M_CEIL, M_TRUNC, M_ROUND, M_RINT, M_MINNUM, M_MAXNUM,
    M_MINIMUM, M_MAXIMUM, M_SMIN, M_SMAX, M_UMIN, M_UMAX, M_ABS, M_FPTOSI_SAT, M_FPTOUI_SAT, M_CTPOP, M_CTLZ, M_CTTZ,
    M_EX2_APPROX, M_LG2_APPROX, M_SIN_APPROX, M_COS_APPROX, M_RSQRT_APPROX, M_RCP_APPROX, M_MULHI_U, M_MULHI_S,
    M_EXP2, M_LOG2, M_EXP, M_LOG, M_SIN, M_COS
} mathfn;

typedef enum shfl_mode { SHFL_UP, SHFL_DOWN, SHFL_BFLY, SHFL_IDX } shfl_mode;
typedef enum vote_mode { VOTE_ALL, VOTE_ANY, VOTE_UNI, VOTE_BALLOT } vote_mode;

typedef struct emu_inst {
    uint16_t op;
    uint8_t ek, ek2;  /* operand / result element kinds */
    uint16_t lanes;   /* vector lanes, or words of an aggregate */
    uint16_t sub;     /* predicate, binop, cast opcode, intrinsic ... */
    uint32_t dst, a, b, c;
    uint32_t aux, naux; /* into the function's aux array */
    int64_t imm;
    LLVMValueRef src; /* for messages */
} emu_inst;

typedef struct emu_func {
    char *name;
    uint32_t threads;
    uint32_t maxnreg; /* the "maxnreg" annotation (registers a thread at launch); 0: none */
    emu_inst *code;
    uint32_t ncode, capcode;
    uint32_t *aux;
    uint32_t naux, capaux;
    uint64_t *init; /* the frame's initial image: constants in their slots */
    uint32_t nwords, capwords;
    uint32_t nparams;
    uint32_t param_slot[EMU_MAX_ARGS];
    char *param_name[EMU_MAX_ARGS]; /* the LLVM parameters' names (codegen gives the kernel's); NULL: none */
    uint8_t param_ek[EMU_MAX_ARGS];
    uint64_t local_size;
    struct emu_func *next;
} emu_func;

struct emu_module {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMTargetDataRef td;
    uint8_t *consts; /* constant globals */
    uint64_t consts_size;
    uint64_t shared_size;  /* static shared memory; the dynamic array starts here */
    LLVMValueRef *globals; /* every global variable, and its tagged address */
    uint64_t *global_addr;
    uint32_t nglobals;
    emu_func *funcs;
};

/* ---- translation -------------------------------------------------------------- */

typedef struct map_entry {
    LLVMValueRef key;
    uint32_t val;
} map_entry;

typedef struct xlate {
    emu_module *m;
    emu_func *f;
    map_entry *map; /* value -> slot; blocks -> pc */
    uint32_t mapcap, mapn;
    char *err;
    size_t err_size;
    bool failed;
} xlate;

/* ---- execution ---------------------------------------------------------------- */

typedef enum tstate { T_RUN, T_WAIT, T_DONE, T_PARK /* async.c: at a failed mbarrier wait */ } tstate;

typedef struct cp_pending {
    uint64_t dst;
    uint32_t size, group;
    uint8_t data[16];
} cp_pending;

typedef struct thread {
    uint64_t *r; /* the frame */
    uint8_t *local;
    uint32_t pc, tid;
    tstate state;
    cp_pending *cp;
    uint32_t ncp, capcp;
    uint32_t committed; /* cp.async groups committed so far; the open group's number */
    bool wg_live;       /* its warpgroup has wgmma.mma_async results pending (wgmma.c) */
} thread;

/* Who last wrote and read a byte of shared memory, and in which epoch
 * (the stamp of the accessing warp's barrier interval, see "happens-before"
 * in exec.c; 0: never), for the race check. wt/rt are thread ids
 * (< EMU_MAX_THREADS) or RACE_MANY; a writer that is not a thread uses
 * another value >= EMU_MAX_THREADS (ASYNC_WRITER: a bulk copy;
 * CP_IN_FLIGHT: a cp.async not landed yet): a wgmma read counts only
 * threads' writes since the last barrier as races, and asks async.c
 * (emu_async_proxy_read) whether the writers fenced them for the async
 * proxy it reads through. */
typedef struct shadow {
    uint32_t wep, rep;
    uint16_t wt, rt; /* rt RACE_MANY: read by several threads */
    uint32_t wmask, rmask; /* the warps whose accesses wep/rep stamp (0: a writer not a thread) */
} shadow;
/* shadow.wt of bytes a cp.async will write when a wait covers it (exec.c):
 * reading or writing them before is an error */
enum { RACE_MANY = 0xffff, CP_IN_FLIGHT = 0xfffd };

typedef enum access { ACC_READ, ACC_WRITE, ACC_ATOMIC } access;

/* EOP_BARRIER's sub: which operands the form has (a: the barrier id's
 * slot, b: the thread count's); none: barrier0 (bar.sync 0) */
enum { BAR_HAS_ID = 1, BAR_HAS_COUNT = 2, BAR_IDS = 16, EMU_MAX_WARPS = EMU_MAX_THREADS / EMU_WARP };

/* One of the CTA's sixteen barriers, in its current phase (exec.c). */
typedef struct cta_barrier {
    uint32_t arrived; /* warps arrived in this phase (0: none yet) */
    uint32_t count;   /* threads the phase waits for: its first arrival's b, or the CTA's warps x 32 */
    uint32_t pc;      /* the first arrival's instruction */
    bool all;         /* the first arrival had no count: every thread of the CTA takes part */
} cta_barrier;

typedef struct run {
    const emu_module *m;
    const emu_func *f;
    const emu_launch *l;
    double deadline; /* tc_now_ms() past which the launch fails (emu_launch.time_limit_ms); 0: none */
    uint32_t ticks;  /* branches taken since the clock was last read */
    thread *th;
    uint32_t nth;
    uint8_t *shared;
    uint64_t shared_size; /* the module's static shared memory and the launch's dynamic */
    shadow *sh;     /* one per shared byte */
    uint32_t epoch; /* grows at every barrier completion and CTA: the stamps' clock */
    uint32_t cta_epoch; /* the epoch the CTA began in */
    uint32_t nwarps;
    /* vc[w][u]: the stamp of the latest barrier interval of warp u that
     * warp w is ordered after (vc[w][w]: w's current interval's stamp) */
    uint32_t vc[EMU_MAX_WARPS][EMU_MAX_WARPS];
    uint32_t full; /* the stamp of the last barrier every warp of the CTA took part in (the CTA's start) */
    cta_barrier bars[BAR_IDS];
    int8_t warp_bar[EMU_MAX_WARPS]; /* the barrier id the warp arrived at and waits on; -1: none */
    uint32_t ctaid[3];
    char *err;
    size_t err_size;
    emu_result result;
    char line[MAX_PRINTF_TEXT]; /* printed text not yet ending in a newline */
    size_t linelen;
    char last[MAX_PRINTF_TEXT]; /* what the last vprintf printed, and who */
    int64_t last_tid;
    struct smem_acct *acct; /* bank accounting; NULL: off */
    struct emu_async *async; /* mbarriers and bulk copies; NULL: the kernel has none */
    struct emu_wgmma *wgmma; /* warpgroup MMA state (wgmma.c); NULL until the first wgmma op */
} run;

typedef struct smem_acct smem_acct;

/* arith.c */
double emu_fget(uint64_t w, ek e);
uint64_t emu_fput(double x, ek e);
uint64_t emu_int_bin(uint16_t op, uint64_t a, uint64_t b, int bits);
uint64_t emu_float_bin(uint16_t op, uint64_t a, uint64_t b, ek e);
bool emu_icmp(int pred, uint64_t a, uint64_t b, int bits);
bool emu_fcmp(int pred, double x, double y);
uint64_t emu_cast(uint16_t op, uint64_t a, ek from, ek to);
double emu_fmin_ieee(double x, double y, bool propagate_nan, bool want_max);
uint64_t emu_math(const emu_inst *in, uint64_t a, uint64_t b, uint64_t c);

/* translate.c */
void *emu_grow(void *p, uint32_t *cap, uint32_t need, size_t elem);
bool emu_place_globals(xlate *x);
uint32_t emu_func_threads(LLVMModuleRef mod, LLVMValueRef fn, bool *is_kernel, uint32_t *maxnreg);
emu_func *emu_xlate_func(xlate *x, LLVMValueRef fn, uint32_t threads);

/* banks.c */
void emu_smem_sync_warp(smem_acct *a, uint32_t w, uint32_t first_thread, uint32_t nthreads);
void emu_smem_record(run *r, const thread *t, uint32_t pc, uint64_t off);
void emu_smem_sync_all(run *r);
void emu_smem_ldmatrix(run *r, uint32_t pc, const uint64_t *addr, unsigned matrices);
void emu_smem_acct_free(smem_acct *a);
smem_acct *emu_smem_acct_new(const emu_func *f, uint32_t nth, emu_smem_stats *out);
void emu_smem_acct_publish(const smem_acct *a, const emu_func *f);

/* Happens-before for the race check (exec.c): whether the accesses of
 * warps `mask`, stamped `stamp`, are ordered before thread t's next one
 * (every warp u of mask passed, after them, a barrier that t's warp is
 * ordered after). mask 0 (not a thread's access): true. */
static inline bool emu_ordered(const run *r, const thread *t, uint32_t stamp, uint32_t mask) {
    if (stamp < r->full) return true; /* before a barrier of all warps */
    const uint32_t *v = r->vc[t->tid / EMU_WARP];
    for (; mask; mask &= mask - 1)
        if (v[__builtin_ctz(mask)] <= stamp) return false;
    return true;
}
/* The stamp of thread t's accesses now, and its warp's bit. */
static inline uint32_t emu_stamp(const run *r, const thread *t) {
    return r->vc[t->tid / EMU_WARP][t->tid / EMU_WARP];
}
static inline uint32_t emu_warp_bit(const thread *t) { return UINT32_C(1) << (t->tid / EMU_WARP); }

/* exec.c, for the other files of emu/ */
bool emu_fail(run *r, const thread *t, const emu_inst *in, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
uint8_t *emu_mem(run *r, thread *t, const emu_inst *in, uint64_t p, uint64_t size, uint64_t align, access acc);
/* Appends, for each barrier with arrivals in its phase, its id and the threads waiting at it. */
void emu_describe_barriers(const run *r, char *msg, size_t size);

/* async.c: mbarriers, bulk (tensor) copies, proxy fences, setmaxnreg */
enum { ASYNC_SETMAXNREG_INC = 0x100, ASYNC_SETMAXNREG_DEC, ASYNC_WRITER = 0xfffe /* shadow.wt of bytes a bulk copy wrote */ };
int emu_async_asm_kind(const char *text, size_t tl, const char *cons, size_t cl, unsigned *noperands);
struct emu_async *emu_async_new(const run *r); /* NULL when the kernel has no EOP_ASYNC */
void emu_async_free(struct emu_async *a);
void emu_async_cta_begin(run *r);
bool emu_async_cta_end(run *r);
/* 1: done (pc advances); 0: the thread parks at this instruction; -1: error */
int emu_async_exec(run *r, thread *t, const emu_inst *in);
/* A thread's checked access to shared bytes [off, off + size) (race_check) */
bool emu_async_access(run *r, thread *t, const emu_inst *in, uint64_t off, uint64_t size, access acc);
/* Wakes parked threads whose mbarrier changed; true if any woke. */
bool emu_async_wake(run *r);
/* No thread can run and some are parked: reports the deadlock (false). */
bool emu_async_deadlock(run *r);
/* A read of shared bytes by the async proxy (a bulk store, wgmma): bytes
 * threads wrote need a fence.proxy.async by the writer, and a barrier. */
bool emu_async_proxy_read(run *r, const thread *t, const emu_inst *in, uint64_t off, uint64_t size);

/* translate.c, for the files that translate their own calls */
emu_inst *emu_xemit(xlate *x, eop op, LLVMValueRef src);
uint32_t emu_xslot(xlate *x, LLVMValueRef v);
uint32_t emu_xaux(xlate *x, uint32_t v);
void emu_xfail(xlate *x, LLVMValueRef at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* wgmma.c: warpgroup MMA (PTX ISA 9.7.15) and shared pointers as integers.
 *   emu_wgmma_xlate_asm: an inline asm whose text starts "wgmma." (true:
 *     it emitted it or failed naming why; false: not a wgmma asm).
 *   emu_wgmma_ready: 1 when all 128 threads of the warpgroup of warp w0
 *     wait at `at`, 0 when some are still on their way (at another warp
 *     collective), -1 on an error (exited, a barrier, another wgmma op, a
 *     partial warpgroup).
 *   emu_wgmma_collective: performs `at` for the warpgroup starting at g0.
 *   emu_wgmma_check_reads: run_thread calls it for each instruction of a
 *     thread whose warpgroup has results pending (thread.wg_live): reading
 *     a pending accumulator is an error; moves (extractvalue, phis...) are not.
 *   emu_wgmma_check_write: a write to shared bytes a pending wgmma reads is
 *     a race; every shared-memory writer calls it (mem() does through
 *     race_check; a writer that bypasses mem(), such as a bulk copy landing,
 *     must call it itself).
 *   emu_shared_cast: ptrtoint/inttoptr of an addrspace(3) pointer: the
 *     integer is the byte offset in the CTA's shared window, as on the GPU. */
bool emu_wgmma_xlate_asm(xlate *x, LLVMValueRef call, const char *text, size_t tl, const char *cons, size_t cl,
                         uint32_t dst);
int emu_wgmma_ready(run *r, uint32_t w0, const emu_inst *at);
bool emu_wgmma_collective(run *r, uint32_t g0, const emu_inst *at);
bool emu_wgmma_check_reads(run *r, thread *t, const emu_inst *in);
bool emu_wgmma_check_write(run *r, const thread *t, const emu_inst *in, uint64_t off, uint64_t size);
void emu_wgmma_cta_begin(run *r);
void emu_wgmma_free(run *r);
uint64_t emu_shared_cast(uint16_t op, uint64_t v, ek to);

/* emu.c */
const emu_func *emu_find_func(const emu_module *m, const char *name);

#endif
