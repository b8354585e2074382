/* tileir.h - the tile IR: SSA values of tile types, ops from ops.def,
 * single-block regions for loops, a builder, a printer whose output the
 * reader parses back, and a verifier that runs after every pass.
 *
 * Text form (what --emit=tir prints):
 *   kernel @vadd(%x: ptr<f32>, %n: i32) num_warps(4) {
 *     %pid = program_id 0 : i32
 *     %r = arange 0, 1024 : tile<1024xi32>
 *     %s = splat %pid : tile<1024xi32>
 *     %o = add %s, %r : tile<1024xi32>
 *     store %p, %v, %m
 *     return
 *   }
 * Every op with a result ends in `: result type`; operands' types come from
 * their definitions. Tile types may carry a layout after a comma:
 *   tile<1024xf32, #blocked<spt=[4], tpw=[32], wpc=[4], ord=[0]>>
 * A kernel may carry `num_stages(N)` after num_warps, and, once codegen
 * has run (the sidecar the runtime reads), `dynamic_smem(BYTES)`: the
 * dynamic shared memory each launch must provide.
 * A loop (`num_stages(N)` after the types when the source asked for a
 * software-pipelining depth):
 *   %a, %b = for %lo, %hi, %step, %a0, %b0 : tile<128xf32>, f32 {
 *   ^(%i: i32, %x: tile<128xf32>, %y: f32):
 *     ...
 *     yield %x2, %y2
 *   }
 * Branches and while loops (scalar i1 conditions):
 *   %r = if %c : f32 {
 *   ^():
 *     yield %a
 *   } else {
 *   ^():
 *     yield %b
 *   }
 *   %n = while %n0 : i32 {
 *   ^(%x: i32):
 *     %t = lt %x, %hi : i1
 *     yield %t
 *   } do {
 *   ^(%y: i32):
 *     ...
 *     yield %y2
 *   }
 * Software pipelining (lower/pipeline_loops.c) stages loads through
 * shared-memory ring buffers, smem<SLOTSxMxN...> (no layout):
 *   %buf = local_alloc : smem<3x64x32xf16>
 *   async_copy %buf, %slot, %ptrs, %mask
 *   async_commit
 *   async_wait 1
 *   barrier
 *   %x = local_load %buf, %slot : tile<64x32xf16, #blocked<...>>
 * and a part of a slot (prefetch_fragments reads a dot's operands along K
 * in pieces) names where it starts:
 *   %x = local_load [0, 16], %buf, %slot : tile<64x16xf16, #dot_op<...>>
 * The layouts of a dot (tensor cores, mma.sync m16n8kK; see "mma and
 * dot-operand layouts" below) print as
 *   tile<64x32xf32, #mma<wpc=[2, 2]>>
 *   tile<64x16xf16, #dot_op<idx=0, kw=2, parent=#mma<wpc=[2, 2]>>>
 *   tile<64xf32, #slice<dim=1, parent=#mma<wpc=[2, 2]>>>
 * (wpc: warps along M and N; idx 0 is a, 1 is b; kw: elements along K in
 * one 32-bit register).
 * Ops may end in `loc(LINE:COL)` (printed with TIR_PRINT_LOCS). A string
 * attribute is quoted, with \n \t \" \\ and \xHH escapes:
 *   print "x =", %x, %y
 *   assert "n fits", %ok
 *
 * All IR memory comes from the module's arena. */
#ifndef TILEC_TILEIR_H
#define TILEC_TILEIR_H

#include "support/support.h"
#include "tilec.h" /* the options' limits a kernel's IR keeps within (TILEC_MAX_NUM_STAGES) */

enum {
    TIR_MAX_RANK = 3,         /* tiles have rank 0 (scalar) to 3 */
    TIR_MAX_OPERANDS = 64,    /* operands of one op (loop-carried values) */
    TIR_MAX_TILE_ELEMS = 1 << 20, /* elements in one tile */
    TIR_MAX_THREAD_ELEMS = 1024,  /* elements of one tile per thread (numel / (32 * num_warps)):
                                     the largest tile over a full CTA. Codegen unrolls a thread's
                                     elements into straight-line code whose LLVM time grows faster
                                     than its length: a 2^20 tile at 4 warps (8192 a thread) took
                                     22 s at -O2 and 79 s at -O0 */
    TIR_MAX_DOT_WAIT = 7, /* dot_wait's largest count: wgmma.wait_group's */
    TIR_MAX_DYNAMIC_SMEM = 1 << 20, /* bytes of dynamic shared memory a kernel may say it needs
                                       (above every GPU's 227 KB; bounds what a sidecar may ask) */
    TIR_VARIADIC = -1
};

/* ---- types ------------------------------------------------------------- */
typedef enum tir_elem {
    TIR_I1, TIR_I8, TIR_I16, TIR_I32, TIR_I64,
    TIR_F16, TIR_BF16, TIR_F32, TIR_F64,
    TIR_PTR, /* a global-memory pointer; pointee in tir_type.pointee */
    TIR_ELEM_COUNT
} tir_elem;

const char *tir_elem_name(tir_elem e);  /* "i32", "bf16", "ptr" */
bool tir_elem_from_name(const char *s, size_t n, tir_elem *out); /* not "ptr" */
unsigned tir_elem_bits(tir_elem e);     /* i1 -> 1, ptr -> 64 */
bool tir_elem_is_int(tir_elem e);       /* i1..i64 */
bool tir_elem_is_float(tir_elem e);     /* f16..f64 */
/* v wrapped to the range of integer type e, as the IR's arithmetic wraps. */
int64_t tir_wrap_int(int64_t v, tir_elem e);

typedef enum tir_layout_kind {
    TIR_LAYOUT_NONE,    /* not assigned yet (before the layout pass) */
    TIR_LAYOUT_BLOCKED, /* each thread owns spt contiguous elements per dim,
                           tpw threads of a warp and wpc warps tile the
                           rest; ord lists dims fastest-varying first; the
                           pattern repeats to cover larger tiles and wraps
                           (replicates) over smaller ones */
    TIR_LAYOUT_SLICE,   /* a blocked layout of rank+1 dims (the fields
                           below) with dim `slice_dim` removed: the tile
                           sits where a size-1 dim of the parent would be,
                           and threads that differ only along that dim hold
                           the same elements. What a reduction along
                           slice_dim gives, and what expand_dims takes. */
    TIR_LAYOUT_MMA,     /* a dot's accumulator in mma.sync's fragments
                           ("mma and dot-operand layouts" below); rank 2,
                           wpc[0] x wpc[1] warps; the other fields unused */
    TIR_LAYOUT_DOT_OP,  /* a dot's a (dot_idx 0) or b (1) in the fragments
                           mma.sync takes, for the MMA layout with the same
                           wpc; dot_kw elements along K per 32-bit register */
    TIR_LAYOUT_MMA_SLICE, /* an MMA layout with dim slice_dim removed: a
                           rank-1 tile of the rows (slice_dim 1) or columns
                           (0) of an accumulator, held by the threads that
                           hold those rows (columns) of it; what a
                           reduction of an MMA tile gives and what
                           expand_dims takes back to it (rank 2, wpc) */
    TIR_LAYOUT_SHARED,  /* where a shared-memory buffer's slot keeps each
                           element ("shared layouts" below); only on smem
                           types, over the slot's dims (rank = the type's - 1) */
    TIR_LAYOUT_DOT_SMEM /* a dot's a (dot_idx 0) or b (1) left in the slot a
                           local_load names, for the MMA layout with the same
                           wpc: the dot reads it there (sm_90a's wgmma, through
                           matrix descriptors), so it holds no registers. Only
                           a whole-slot local_load makes it and only a dot in
                           the same block takes it, with no op that writes
                           memory or waits between the two (the verifier) */
} tir_layout_kind;

typedef struct tir_layout {
    uint8_t kind; /* tir_layout_kind */
    uint8_t rank; /* of the blocked layout: the tile's, or its rank + 1 for a slice */
    uint16_t spt[TIR_MAX_RANK]; /* size per thread */
    uint16_t tpw[TIR_MAX_RANK]; /* threads per warp; product 32 */
    uint16_t wpc[TIR_MAX_RANK]; /* warps per CTA; product num_warps */
    uint8_t ord[TIR_MAX_RANK];
    uint8_t slice_dim; /* TIR_LAYOUT_SLICE, _MMA_SLICE: the parent's dim the tile lacks */
    uint8_t dot_idx;   /* TIR_LAYOUT_DOT_OP: 0 = a, 1 = b */
    uint8_t dot_kw;    /* TIR_LAYOUT_DOT_OP: 2 f16/bf16, 1 tf32, 4 i8 */
    uint8_t sw_vec, sw_per_phase, sw_max_phase; /* TIR_LAYOUT_SHARED: the swizzle */
    uint8_t sw_atom;   /* TIR_LAYOUT_SHARED: 0, or the elements of a row piece
                          ("shared layouts" below) */
} tir_layout;

/* Where a tile lives: registers (a value of the program), or a buffer in
 * the program instance's shared memory, spelled smem<...>, which only
 * local_alloc makes and only async_copy and local_load use. */
typedef enum tir_space { TIR_SPACE_REGS, TIR_SPACE_SHARED } tir_space;

/* ---- shared layouts -------------------------------------------------------
 * A slot of a smem buffer keeps its tile in rows along the slot dim ord[0]
 * (contiguous), one row per index of the other dim(s), row after row in
 * ord's order. Without a layout (or with max_phase 1) that is plain
 * row-major order when ord = [rank-1, ..., 0]. A 2-D slot may be swizzled,
 * spelled #shared<vec=V, per_phase=P, max_phase=M, ord=[c, r]>: row i
 * (index along dim r) keeps its chunk j of V elements (index along dim c
 * divided by V) at chunk j ^ ((i / P) % M). With V elements 16 bytes, P
 * rows in 128 bytes (the 32 banks) and P M = 8, one chunk from each of 8
 * consecutive rows (what ldmatrix reads) lands in 8 different 16-byte
 * bank groups: no bank conflicts (tir_shared_for_dot picks such values).
 *
 * With `atom=A` (spelled after ord; 2-D slots only) rows are cut into
 * pieces of A elements: the slot keeps the first piece of every row, row
 * after row, then the second piece of every row, and so on; the swizzle
 * applies inside a piece. That is the canonical layout wgmma's matrix
 * descriptors read when a row is longer than the 128-byte swizzle
 * (tir_shared_for_wgmma). */
tir_layout tir_layout_shared(unsigned rank, const uint8_t *ord, unsigned vec, unsigned per_phase, unsigned max_phase);
/* The swizzled layout for a 2-D slot of `shape` with dim `contig`
 * contiguous and `elem_bytes`-byte elements: 16-byte chunks, P rows per
 * 128 bytes, as many phases as make 8 rows conflict-free. */
tir_layout tir_shared_for_dot(const uint32_t *shape, unsigned contig, unsigned elem_bytes);
/* The same for an operand wgmma reads from shared memory: rows of 32, 64
 * or 128 bytes as tir_shared_for_dot swizzles them (the 32B, 64B and 128B
 * swizzle modes, when the slot starts on a 1024-byte boundary), longer
 * rows in 128-byte pieces (atom). Kind NONE where wgmma has no such
 * layout (rows under 32 bytes, or not a multiple of them). */
tir_layout tir_shared_for_wgmma(const uint32_t *shape, unsigned contig, unsigned elem_bytes);
/* The element offset, within a slot of `shape`, of the element at
 * `coord` under shared layout l (kind NONE: row-major). */
uint32_t tir_shared_offset(const tir_layout *l, unsigned rank, const uint32_t *shape, const uint32_t *coord);

/* A type by value. rank 0 is a scalar. */
typedef struct tir_type {
    uint8_t elem;    /* tir_elem */
    uint8_t pointee; /* tir_elem, when elem == TIR_PTR */
    uint8_t space;   /* tir_space; shared buffers have no layout */
    uint8_t rank;
    uint32_t shape[TIR_MAX_RANK];
    tir_layout layout; /* only on tiles (rank >= 1) */
} tir_type;

/* The element type of t, and of what its pointers point to: tir_type keeps
 * both in a byte each, so these say the enum once instead of a cast at
 * every use. */
static inline tir_elem tir_type_elem(tir_type t) { return (tir_elem)t.elem; }
static inline tir_elem tir_type_pointee(tir_type t) { return (tir_elem)t.pointee; }

tir_type tir_scalar(tir_elem e);
tir_type tir_ptr(tir_elem pointee);
tir_type tir_tile(tir_type element, unsigned rank, const uint32_t *shape);
tir_type tir_tile1(tir_type element, uint32_t n);
tir_type tir_smem(tir_type element, unsigned rank, const uint32_t *shape); /* smem<...> */
tir_type tir_element_of(tir_type t);          /* rank-0 version of t */
tir_type tir_with_elem(tir_type shape_of, tir_type element); /* t's shape, other element */
uint64_t tir_type_numel(tir_type t);          /* 1 for scalars */
bool tir_type_eq(tir_type a, tir_type b);      /* shape, element and layout */
bool tir_type_same_shape(tir_type a, tir_type b);
bool tir_layout_eq(const tir_layout *a, const tir_layout *b);
/* The slice of a blocked (or MMA) layout that drops dim `dim` (what a
 * reduction along it gives), and the layout a slice came from. */
tir_layout tir_layout_slice(const tir_layout *parent, unsigned dim);
tir_layout tir_layout_parent(const tir_layout *slice);
/* A blocked layout with its dims permuted as `permute` permutes a tile's
 * (result dim i is dim perm[i]): the same registers in every thread. */
tir_layout tir_layout_permute(const tir_layout *src, const uint8_t *perm);
void tir_print_type(tc_strbuf *out, tir_type t);

/* ---- mma and dot-operand layouts (tileir/mma_layout.c) ------------------
 * mma.sync m16n8kK (PTX ISA, "matrix fragments for mma.m16n8k*"): a warp
 * computes a 16x8 piece of the result. With lane l, g = l >> 2, q = l & 3:
 *  - accumulator (MMA): c0, c1 at row g, cols 2q, 2q+1; c2, c3 at row g+8;
 *  - a (DOT_OP idx 0, MxK): 32-bit register j holds kw elements along K at
 *    row g + 8 (j & 1), cols kw q + 4 kw (j >> 1) + e (e < kw);
 *  - b (DOT_OP idx 1, KxN): register j holds kw elements along K at
 *    rows kw q + 4 kw j + e, col g.
 * (kw = 2, instruction K 16: f16/bf16 m16n8k16; kw = 1, K 8: tf32
 * m16n8k8; kw = 4, K 32: s8 m16n8k32, or K 16 with only j < 2 for a and
 * j = 0 for b: m16n8k16.) Warp w sits at wm = w % wpc[0], wn = w / wpc[0];
 * the warps' pieces tile (16 wpc[0]) x (8 wpc[1]) and repeat over a larger
 * tile (RM x RN times); over a smaller one they wrap and replicate, as
 * blocked layouts do. a is replicated over wn, b over wm.
 * A thread's registers, in order (so one instruction's operands are
 * neighbours):
 *  - MMA: r = ((rm RN + rn) 4 + i): row rm 16 wpc[0] + 16 wm + g + 8 (i >> 1),
 *         col rn 8 wpc[1] + 8 wn + 2q + (i & 1);
 *  - a:   r = (((rm NKC + kc) 2 + h) kw + e): row rm 16 wpc[0] + 16 wm + g + 8h,
 *         col kc 4kw + kw q + e;
 *  - b:   r = ((kc RN + rn) kw + e): row kc 4kw + kw q + e,
 *         col rn 8 wpc[1] + 8 wn + g;
 * with NKC = K / (4 kw) chunks along K, each index taken mod the tile's
 * dim (powers of two). Each coordinate is a register part (constant per
 * r) plus a thread part, so codegen builds the thread part once.
 * An MMA_SLICE tile (rank 1) holds what the MMA layout's registers hold
 * along its one dim, once per row (column) instead of once per register:
 *  - slice_dim 1 (rows, a row reduction's result): r = rm 2 + h: row
 *    rm 16 wpc[0] + 16 wm + g + 8h, the same in every q and wn;
 *  - slice_dim 0 (columns): r = rn 2 + j: col rn 8 wpc[1] + 8 wn + 2q + j,
 *    the same in every g and wm.
 * For such a tile the functions below give the tile's one coordinate in
 * [0] and, from tir_mma_thread_coeffs, the dropped dim's thread part in
 * k[1] (threads where it is not 0 hold copies). */
enum { TIR_MMA_TILE_M = 16, TIR_MMA_TILE_N = 8, TIR_MMA_MIN_DIM = 16 };
tir_layout tir_layout_mma(unsigned wpc_m, unsigned wpc_n);
tir_layout tir_layout_dot_op(const tir_layout *mma, unsigned idx, unsigned kw);
tir_layout tir_layout_mma_parent(const tir_layout *dot_op);
/* A dot operand left in shared memory (TIR_LAYOUT_DOT_SMEM) for an mma
 * layout: operand idx (0 a, 1 b). */
tir_layout tir_layout_dot_smem(const tir_layout *mma, unsigned idx);
/* Triton's MMAv2 choice of warps for an MxN result (warpsPerTileV2). */
tir_layout tir_layout_mma_for(uint32_t m, uint32_t n, unsigned num_warps);
/* The FMA path of dot (dot_ieee): for a result in blocked layout `res`,
 * a (idx 0) takes it with spt[1] = K (each thread holds whole rows of a
 * for its rows of the result), b (idx 1) with spt[0] = K. */
tir_layout tir_layout_dot_fma(const tir_layout *res, uint32_t k, unsigned idx);
/* kw for a dot input type: 2 (f16, bf16), 1 (f32 as tf32), 4 (i8); 0 else. */
unsigned tir_dot_kw(tir_elem in);
/* Whether a layout is one of the three above (MMA, DOT_OP, MMA_SLICE). */
bool tir_layout_is_mma(const tir_layout *l);
/* Registers per thread of a tile in an MMA, DOT_OP or MMA_SLICE layout. */
uint32_t tir_mma_regs(const tir_layout *l, const uint32_t *shape);
/* Register r's part of the coordinates (row, col) of its element. */
void tir_mma_reg_offset(const tir_layout *l, const uint32_t *shape, uint32_t r, uint32_t off[2]);
/* The thread part: off[d] = k[d][0] wm + k[d][1] wn + k[d][2] g + k[d][3] q. */
void tir_mma_thread_coeffs(const tir_layout *l, uint32_t k[2][4]);
/* The element (row, col) that thread `tid` holds in register r (an
 * MMA_SLICE tile's index in coord[0]). */
void tir_mma_coord(const tir_layout *l, const uint32_t *shape, uint32_t tid, uint32_t r, uint32_t coord[2]);
/* Whether thread tid is the first holder of its elements (elements held
 * by several threads are stored, printed, ... by the first only). */
bool tir_mma_owner(const tir_layout *l, const uint32_t *shape, uint32_t tid);
/* Whether a 2-D tile's change from mma or dot_op layout `from` to `to`
 * (same shape) only renames registers: every one of `threads` threads
 * holds in `from` each element it holds in `to`, at a register that is
 * the same for every thread; map[r] is then the `from` register of `to`'s
 * register r (an accumulator of 16-bit elements as the a operand of the
 * next dot, with the warps all along M). */
bool tir_mma_rename_map(const tir_type *from, const tir_type *to, uint32_t threads, uint32_t *map);
/* The register of an MMA_SLICE tile (slice) that register r of its
 * expand_dims, an MMA tile of shape `shape` with a dim of 1 where the
 * slice's slice_dim is, holds. */
uint32_t tir_mma_slice_source(const tir_layout *slice, const uint32_t *shape, uint32_t r);

/* ---- ops --------------------------------------------------------------- */
enum {
    TIR_F_PURE = 1 << 0,        /* no side effect: removable when unused */
    TIR_F_ELEMENTWISE = 1 << 1, /* acts per element on same-shaped tiles */
    TIR_F_COMMUTATIVE = 1 << 2,
    TIR_F_COMPARE = 1 << 3,     /* result is i1 */
    TIR_F_TERMINATOR = 1 << 4,  /* last op of a block */
    TIR_F_REGION = 1 << 5,      /* has a body block */
    TIR_F_READS = 1 << 6,       /* reads global memory */
    TIR_F_WRITES = 1 << 7,      /* writes global memory */
    TIR_F_EFFECT = 1 << 8       /* an effect outside memory (prints, stops the launch) */
};

typedef enum tir_attr_kind {
    TIR_ATTR_NONE, TIR_ATTR_AXIS, TIR_ATTR_RANGE, TIR_ATTR_VALUE, TIR_ATTR_PERM,
    TIR_ATTR_OFFSET, TIR_ATTR_STRING
} tir_attr_kind;

typedef enum tir_opcode {
#define OP(name, text, nmin, nmax, nres, flags, attr) TIR_OP_##name,
#include "tileir/ops.def"
#undef OP
    TIR_OP_COUNT
} tir_opcode;

typedef struct tir_opinfo {
    const char *name;
    int min_operands, max_operands;
    int results; /* 0, 1 or TIR_VARIADIC */
    unsigned flags;
    tir_attr_kind attr;
} tir_opinfo;

extern const tir_opinfo tir_ops[TIR_OP_COUNT]; /* constant table */
bool tir_opcode_from_name(const char *s, size_t n, tir_opcode *out);
/* Atomics (ops.def): whether an atomic op works on element type e, and
 * the types it takes, for messages ("i32, i64, f32 and f64"). One table
 * for the front end, the verifier and codegen. */
bool tir_atomic_supports(tir_opcode code, tir_elem e);
const char *tir_atomic_types(tir_opcode code);
/* dot (ops.def): the accumulator type for input type `in` (f16, bf16, f32
 * -> f32; i8 -> i32), or TIR_ELEM_COUNT where dot does not take `in`. */
tir_elem tir_dot_acc_elem(tir_elem in);
enum { TIR_DOT_MIN_DIM = 16 }; /* each of M, N, K: the smallest mma tile's */
enum { TIR_MULTIPLE_OF_MAX = 1 << 30 }; /* multiple_of's largest divisor: what an i32 can be a multiple of */

/* A tensor map (Hopper's bulk tensor copies: lower/tma_copies.c makes
 * them, `tma_load` reads them): the description the runtime turns, at
 * each launch, into the 128-byte object the copy engine reads (the
 * driver's cuTensorMapEncodeTiled on a GPU, emu_tensor_map_encode on the
 * emulator), from the kernel's own arguments: the tensor starts at pointer
 * parameter `base` (its pointee is the element type), dimension d (0 the
 * innermost, as the driver and PTX count) has dim[d] elements, stride[d]
 * elements between its steps (stride[0] is 1: the innermost dim is
 * contiguous) and a box (what one copy moves) of box[d] elements. A size
 * or stride is `scale` times parameter `param`'s value at launch (an
 * integer parameter), or `scale` itself when param is TIR_TMAP_CONST; a
 * dim no mask bounds is TIR_TMAP_UNBOUNDED elements (coordinates are i32:
 * no copy reaches past it). The kernel gets each map as a hidden pointer
 * parameter after its own, in this order (docs/design.md, "Tensor maps").
 * Printed after the signature:
 *     tensor_map(%a, dims=[%K, *], strides=[1, %sa], box=[64, 128], swizzle=128) */
enum {
    TIR_TMAP_MAX_RANK = 5,  /* the copy engine's */
    TIR_MAX_TMAPS = 16,     /* tensor maps of one kernel */
    TIR_TMAP_CONST = -1,    /* tir_tmap_term.param: no parameter */
    TIR_TMAP_MAX_BOX = 256, /* elements of a box along one dim (the driver's limit) */
    TIR_MBAR_MAX_ARRIVALS = (1 << 20) - 1, /* an mbarrier's expected arrivals (PTX ISA, "mbarrier": 2^20 - 1) */
};
/* Warp specialization (ops.def: warp_specialize, producer): the producer
 * is one warpgroup, since setmaxnreg acts on whole warpgroups */
enum { TIR_WS_AUTO = 0, TIR_WS_ON = 1, TIR_WS_OFF = 2, TIR_WS_PRODUCER_WARPS = 4 };
#define TIR_TMAP_UNBOUNDED ((int64_t)1 << 31)
typedef struct tir_tmap_term {
    int64_t scale;
    int32_t param; /* an integer parameter's index, or TIR_TMAP_CONST */
} tir_tmap_term;
typedef struct tir_tmap {
    uint32_t base;  /* the pointer parameter's index */
    uint8_t rank;   /* 1 to TIR_TMAP_MAX_RANK */
    uint8_t swizzle; /* bytes: 0 (none), 32, 64 or 128: where the box's 16-byte chunks land */
    tir_tmap_term dim[TIR_TMAP_MAX_RANK], stride[TIR_TMAP_MAX_RANK];
    uint32_t box[TIR_TMAP_MAX_RANK];
} tir_tmap;
/* A term's value for a launch whose integer parameters are `ints` (by
 * parameter index). */
int64_t tir_tmap_term_value(tir_tmap_term t, const int64_t *ints);
/* Whether a bulk tensor copy into a 2-D slot of buffer `buf` (smem<S x R x
 * C>), in boxes of box0 elements along map dim 0 (the slot dim its layout
 * keeps contiguous, ord[0]) side by side, with a swizzle of `swizzle`
 * bytes (0, 32, 64, 128), puts every element where buf's layout says it
 * is; if not, `at` gets the first element (slot coordinates) it misplaces. */
bool tir_tma_places(const tir_type *buf, uint32_t box0, unsigned swizzle, uint32_t *at);

typedef struct tir_op tir_op;
typedef struct tir_block tir_block;
typedef struct tir_func tir_func;

typedef struct tir_value {
    uint32_t id;         /* unique within its function, in creation order */
    tir_type type;
    tir_op *def;         /* defining op; NULL for block arguments */
    tir_block *block;    /* for block arguments: their block */
    uint32_t index;      /* result index in def, or argument index */
    const char *name;    /* source name hint for printing, or NULL */
} tir_value;

struct tir_block {
    tir_value **args;
    uint32_t nargs;
    tir_op *first, *last;
    tir_op *parent;      /* the op whose region this is; NULL: function body */
    tir_func *func;
};

struct tir_op {
    tir_opcode code;
    tir_value **operands;
    uint32_t noperands;
    tir_value **results;
    uint32_t nresults;
    tir_block *body;     /* TIR_F_REGION ops: for's body, if's then block, while's test */
    tir_block *body2;    /* if's else block, while's body; NULL for others */
    union {              /* by tir_ops[code].attr */
        int64_t axis;                   /* AXIS */
        struct { int64_t lo, hi; } range; /* RANGE */
        int64_t ival;                   /* VALUE with an integer/i1 result */
        double fval;                    /* VALUE with a float result */
        uint8_t perm[TIR_MAX_RANK];     /* PERM: result dim i is operand dim perm[i] */
        uint32_t offset[TIR_MAX_RANK];  /* OFFSET: the part's first index in each dim */
        const char *text;               /* STRING: NUL-terminated, in the module's arena */
    } attr;
    int num_stages;      /* for: the software-pipelining depth asked for
                            (range(..., num_stages = N)); 0: the kernel's */
    int warp_specialize; /* for: TIR_WS_AUTO (the compiler's choice), or
                            range(..., warp_specialize = true/false):
                            TIR_WS_ON, TIR_WS_OFF; printed
                            warp_specialize(true|false) after num_stages */
    tc_loc loc;          /* source position, line 0 if none */
    tir_op *prev, *next;
    tir_block *parent;
};

struct tir_func {
    const char *name;
    tir_value **params;  /* runtime parameters, in order (const ones are gone) */
    uint32_t nparams;
    tir_block *body;
    int num_warps;       /* 0: not chosen yet */
    int num_stages;      /* software-pipelining depth of its loops that
                            name none; 0: the compiler's choice */
    int producer_warps;  /* 0, or TIR_WS_PRODUCER_WARPS: the warps after
                            num_warps a launch adds for the producer of a
                            warp_specialize op (ops.def); printed
                            producer_warps(4) after num_stages */
    /* The kernel's shared-memory area as the smem_plan pass sizes it
     * (lower/smem_plan.c), which codegen lays out: `slots` bytes of the
     * rank-1 reductions' slots, then (from a 16-byte boundary) `buffers`
     * bytes of local_alloc buffers (those whose live ranges do not meet
     * share bytes), then `live_scratch` bytes of scratch
     * for the layout moves, reductions and scans inside the buffers' live
     * range; the others' `scratch` bytes start where the buffers do, on
     * their bytes (outside the range they are dead). All 0 before the
     * pass. Printed smem(slots=S, buffers=B, scratch=X, live_scratch=L);
     * read with live_scratch optional (0). */
    struct { uint32_t slots, buffers, scratch, live_scratch; } smem;
    tir_tmap *tmaps; /* its tensor maps (NULL: none), in hidden-parameter order */
    uint32_t ntmaps;
    uint32_t dynamic_smem; /* bytes of dynamic shared memory a launch must give
                              it: set by the smem_plan pass for kernels over
                              48 KB of shared memory, 0 otherwise */
    tc_loc loc;
    uint32_t next_value_id;
    tir_func *next;
    struct tir_module *module;
};

typedef struct tir_module {
    tc_arena *arena;
    const char *source_name; /* the .tile file, for runtime messages; may be NULL */
    tir_func *funcs, *last_func;
    uint32_t nfuncs;
} tir_module;

/* ---- building ---------------------------------------------------------- */
tir_module *tir_module_new(tc_arena *arena, const char *source_name);
tir_func *tir_func_new(tir_module *m, const char *name, tc_loc loc);
tir_value *tir_func_add_param(tir_func *f, tir_type t, const char *name);
/* Map m's index in f's tensor maps, added unless an equal one is there;
 * -1 past TIR_MAX_TMAPS. */
int tir_func_add_tmap(tir_func *f, const tir_tmap *m);
tir_value *tir_block_add_arg(tir_block *b, tir_type t, const char *name);
tir_func *tir_module_find(const tir_module *m, const char *name);

/* Where new ops go: at the end of blk, or before `before` when it is set. */
typedef struct tir_builder {
    tir_module *module;
    tir_func *func;
    tir_block *block;
    tir_op *before;
    tc_loc loc;          /* stamped on every op built */
} tir_builder;

void tir_builder_at_end(tir_builder *b, tir_block *blk);
void tir_builder_before(tir_builder *b, tir_op *op);

/* Creates an op with `nresults` results of the given types (types may be
 * NULL when nresults is 0) and inserts it. Checks nothing: the verifier does. */
tir_op *tir_build_op(tir_builder *b, tir_opcode code, uint32_t noperands, tir_value *const *operands,
                     uint32_t nresults, const tir_type *result_types);
/* Shorthands for the common one-result case; return the result. */
tir_value *tir_build1(tir_builder *b, tir_opcode code, tir_type result, uint32_t noperands,
                      tir_value *const *operands);
tir_value *tir_build_const_int(tir_builder *b, tir_type t, int64_t v);
tir_value *tir_build_const_float(tir_builder *b, tir_type t, double v);
tir_value *tir_build_axis(tir_builder *b, tir_opcode code, int64_t axis); /* program_id, num_programs */
tir_value *tir_build_arange(tir_builder *b, int64_t lo, int64_t hi);
tir_value *tir_build_unary(tir_builder *b, tir_opcode code, tir_value *a);  /* result type of a */
tir_value *tir_build_binary(tir_builder *b, tir_opcode code, tir_value *a, tir_value *c); /* i1 for compares */
tir_value *tir_build_cast(tir_builder *b, tir_value *a, tir_elem to);
tir_value *tir_build_splat(tir_builder *b, tir_value *scalar, tir_type shape_of);
/* Shape ops (ops.def): a new dim of size 1 before dim `axis`; dims of
 * size 1 repeated to `shape_of`'s; the same elements in another shape;
 * dims permuted (result dim i = a's dim perm[i]). */
tir_value *tir_build_expand_dims(tir_builder *b, tir_value *a, unsigned axis);
tir_value *tir_build_broadcast(tir_builder *b, tir_value *a, tir_type shape_of);
tir_value *tir_build_reshape(tir_builder *b, tir_value *a, tir_type shape_of);
tir_value *tir_build_permute(tir_builder *b, tir_value *a, const unsigned *perm);
/* print "msg", vals... and assert "msg", cond; msg is copied. The values
 * must already share one shape (verifier). */
tir_op *tir_build_print(tir_builder *b, const char *msg, uint32_t nvals, tir_value *const *vals);
tir_op *tir_build_assert(tir_builder *b, const char *msg, tir_value *cond);
/* A `for` op with its body block (args: iv, then one per init); the caller
 * fills the body, ending it with yield. */
tir_op *tir_build_for(tir_builder *b, tir_value *lo, tir_value *hi, tir_value *step, uint32_t ninits,
                      tir_value *const *inits);

/* Adds a value carried by `for` loop `loop` (whose body ends in its
 * yield), starting at `init`: a new operand, body argument (returned) and
 * result. The yield carries the argument itself, unchanged, until the
 * caller replaces that last yield operand with the next trip's value. */
tir_value *tir_for_add_carried(tir_op *loop, tir_value *init);

/* An `if` with empty then and else blocks (the caller fills both, ending
 * each with a yield of `nresults` values of the given types). */
tir_op *tir_build_if(tir_builder *b, tir_value *cond, uint32_t nresults, const tir_type *types);
/* A `while` carrying `inits`: its test block and body each take one
 * argument per init; the caller fills both (the test ends in yield of an
 * i1 scalar, the body in yield of the next carried values). */
tir_op *tir_build_while(tir_builder *b, uint32_t ninits, tir_value *const *inits);
/* A `producer` region, empty (the caller fills it, ending it with yield). */
tir_op *tir_build_producer(tir_builder *b);

/* Warp roles (warp_roles.c). The kernel's warp_specialize op, or NULL. */
tir_op *tir_ws_split(const tir_func *f);
/* Which values the producer warps hold (by value id, f->next_value_id
 * entries; NULL when f has no split): scalars and buffers every thread
 * made before the split, the kernel's parameters, and after it the
 * scalar and buffer results of pure ops over such values, loops' indices
 * and carried scalars whose bounds, inits and next values are such values
 * (the producer runs those loops with their scalars only), and whatever
 * a producer region defines. Codegen's producer role makes exactly
 * these; the verifier checks producer regions use nothing else. */
uint8_t *tir_producer_values(const tir_func *f, tc_arena *arena);
bool tir_block_has_producer(const tir_block *blk); /* a producer op in blk, or in its fors and ifs */

/* ---- editing ----------------------------------------------------------- */
void tir_op_remove(tir_op *op);               /* unlinks; its results must be unused */
void tir_op_move_before(tir_op *op, tir_op *before); /* moves op (in before's block or another) before `before` */
void tir_replace_all_uses(tir_func *f, tir_value *from, tir_value *to);
bool tir_value_has_uses(const tir_func *f, const tir_value *v);
/* Walks every op of f in order, descending into regions (pre-order; body
 * before body2). */
typedef void (*tir_walk_fn)(tir_op *op, void *ctx);
void tir_walk(tir_func *f, tir_walk_fn fn, void *ctx);
/* An op coded a or b in blk or in any block nested in it. */
bool tir_block_has_op(const tir_block *blk, tir_opcode a, tir_opcode b);

/* ---- printing, reading, verifying -------------------------------------- */
enum { TIR_PRINT_LOCS = 1 };
void tir_print_module(tc_strbuf *out, const tir_module *m, unsigned flags);
void tir_print_func(tc_strbuf *out, const tir_func *f, unsigned flags);
void tir_print_op(tc_strbuf *out, const tir_op *op); /* one line, for messages */

/* Parses the text form; errors go to diag with file:line:col. NULL on error. */
tir_module *tir_parse(tc_arena *arena, const tc_source *src, tc_diag *diag);

/* Checks structure and types; each problem is reported as
 * "<source>:line:col: error: verifier: <what>" naming the op. after_pass
 * names the pass that just ran, for the message; may be NULL. */
bool tir_verify(const tir_module *m, const char *after_pass, tc_diag *diag);

#endif
