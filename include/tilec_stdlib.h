/* tilec_stdlib.h - the tilec kernel library (the .tile files of stdlib/), one C call
 * per operation, on any trt_device (the GPU, or the CPU interpreter).
 *
 *   trt_device *dev;                       (trt_open, tilec_rt.h)
 *   trt_buffer x, y;                       (trt_alloc / trt_wrap)
 *   trt_status st = tls_softmax(dev, TLS_F16, tls_mem_of(x), tls_mem_of(y), rows, cols, cols, cols, NULL);
 *   if (st != TRT_OK) fprintf(stderr, "%s\n", trt_last_error(dev));
 *
 * Each call checks its arguments (sizes, row widths, strides, that every
 * buffer holds what the shape reaches, 16-byte aligned offsets), picks
 * the kernel's BLOCK, num_warps and grid for the shape, compiles the
 * stdlib source embedded in the library (once per device and
 * specialization: later calls reuse the loaded module), and launches.
 * Nothing is allocated: the backward passes of layernorm, rmsnorm and
 * attention take a workspace from the caller, whose size *_bwd_workspace says. Launches
 * are asynchronous on the GPU (like trt_launch): trt_sync, or a read on
 * the same stream, waits for them.
 *
 * The prefix is tls_ ("tilec stdlib"): these are library operations built
 * on the runtime, not runtime primitives, and keep out of its trt_
 * namespace; they take and return the runtime's types (trt_status,
 * trt_device, trt_buffer) and report errors through trt_last_error(dev).
 *
 * Shapes are in elements: `rows` rows of `cols` values, each row `stride`
 * elements after the one before (stride >= cols). Storage is f32, f16 or
 * bf16 (tls_dtype), the same for every tensor of a call except mean,
 * rstd and attention's lse, which are always f32; the math is f32. Matrix products
 * (tls_matmul) take M, N, K and a row and a column stride per matrix
 * instead; attention (tls_attention_fwd, tls_attention_bwd) a problem
 * struct and four-dim tensors. docs/stdlib.md has the details, the heuristics and an
 * example. */
#ifndef TILEC_STDLIB_H
#define TILEC_STDLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilec_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tls_dtype { TLS_F32, TLS_F16, TLS_BF16 } tls_dtype;

/* What the kernels support (a call beyond them is TRT_ERR_INVALID_ARGUMENT):
 * a row lives in one tile of BLOCK = the next power of two >= cols. Past
 * these widths the GPU kernels spill registers heavily (ptxas -v). */
#define TLS_SOFTMAX_MAX_COLS 32768
#define TLS_NORM_MAX_COLS 16384          /* layernorm, rmsnorm */
#define TLS_MAX_ROWS 2147483647          /* one program instance per row */
#define TLS_MAX_ELEMENTS 2147482624      /* gelu, dropout: 2^31 - 1024 (i32 offsets) */
#define TLS_MATMUL_MAX_DIM 2147483136    /* M, N, K: 2^31 - 512 (i32 indices of the last tile) */
#define TLS_MATMUL_MAX_BATCH 65535       /* the GPU's grid limit along axis 1 */

/* A tensor's memory: a buffer and a byte offset into it (a multiple of 16,
 * the alignment the compiler assumes for pointers). */
typedef struct tls_mem {
    trt_buffer buffer;
    size_t offset;
} tls_mem;

static inline tls_mem tls_mem_at(trt_buffer b, size_t offset) { tls_mem m = {b, offset}; return m; }
static inline tls_mem tls_mem_of(trt_buffer b) { tls_mem m = {b, 0}; return m; }

/* How tls_matmul multiplies f32 inputs: rounded to tf32 (10 mantissa
 * bits, the tensor cores' fast f32 path; PyTorch's allow_tf32, Triton's
 * default), or exactly (input_precision = "ieee" in the kernel). */
typedef enum tls_precision { TLS_TF32, TLS_IEEE } tls_precision;

/* Optional per call; NULL for the defaults. */
typedef struct tls_options {
    int num_warps;      /* 0: the compiler's heuristic on the tile's bytes (docs/stdlib.md); else a
                           power of two from 1 to 32, for the op's main kernel */
    trt_stream *stream; /* NULL: the default stream (trt_launch); else trt_launch_on that stream */
    tls_precision precision; /* f32 matrix products: TLS_TF32 (0, the default) or TLS_IEEE; other
                                dtypes and calls take only the default */
    trt_tuning *search; /* not NULL: the call searches its op's candidate configurations (the
                           matrix products and attention; docs/tuning.md, "Searching from a
                           call"): each compiled, pruned or launched with this call's arguments and
                           measured by trt_tune (on the default stream), the winner recorded here and
                           run once more: the outputs are its. Other calls refuse it */
} tls_options;

/* ---- softmax over rows ---------------------------------------------------- */

/* y[r, :] = softmax(x[r, :]). x and y may have different strides; y may
 * be exactly x with the same stride (in place), and overlap it no other way. */
TILEC_API trt_status tls_softmax(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, int64_t rows, int64_t cols,
                                 int64_t x_stride, int64_t y_stride, const tls_options *opt);
/* dx = y * (dy - sum(dy * y)) per row: the gradient through y = softmax(x).
 * y, dy and dx share one stride; dx may be exactly dy or y (in place). */
TILEC_API trt_status tls_softmax_bwd(trt_device *dev, tls_dtype dt, tls_mem y, tls_mem dy, tls_mem dx, int64_t rows,
                                     int64_t cols, int64_t stride, const tls_options *opt);

/* ---- layernorm over rows ---------------------------------------------------- */

/* y = (x - mean) * rstd * w + b per row, rstd = 1 / sqrt(var + eps) (the
 * biased variance, as PyTorch). w and b hold cols values; mean and rstd
 * (f32, rows values each) are saved for the backward pass. x and y share
 * one stride. eps >= 0. */
TILEC_API trt_status tls_layernorm(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, tls_mem w, tls_mem b,
                                   tls_mem mean, tls_mem rstd, int64_t rows, int64_t cols, int64_t stride, float eps,
                                   const tls_options *opt);
/* The bytes of workspace tls_layernorm_bwd needs for this shape on this
 * device (f32 partial sums of dw and db, a group of rows each). */
TILEC_API trt_status tls_layernorm_bwd_workspace(trt_device *dev, int64_t rows, int64_t cols, size_t *bytes);
/* dx (rows x cols, the stride of x and dy), dw and db (cols values each)
 * from x, dy, w and the forward pass's mean and rstd. Two launches: dx and
 * per-group partial sums into `workspace`, then their column sums into dw
 * and db. The workspace must hold tls_layernorm_bwd_workspace bytes past
 * its offset; its contents before and after do not matter. */
TILEC_API trt_status tls_layernorm_bwd(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem dy, tls_mem dx, tls_mem w,
                                       tls_mem mean, tls_mem rstd, tls_mem dw, tls_mem db, int64_t rows, int64_t cols,
                                       int64_t stride, tls_mem workspace, const tls_options *opt);

/* ---- rmsnorm over rows ------------------------------------------------------ */

/* y = x * rstd * w per row, rstd = 1 / sqrt(mean(x^2) + eps); rstd (f32,
 * rows values) is saved for the backward pass. */
TILEC_API trt_status tls_rmsnorm(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, tls_mem w, tls_mem rstd,
                                 int64_t rows, int64_t cols, int64_t stride, float eps, const tls_options *opt);
TILEC_API trt_status tls_rmsnorm_bwd_workspace(trt_device *dev, int64_t rows, int64_t cols, size_t *bytes);
/* dx and dw from x, dy, w and the forward pass's rstd, through the
 * workspace as tls_layernorm_bwd. */
TILEC_API trt_status tls_rmsnorm_bwd(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem dy, tls_mem dx, tls_mem w,
                                     tls_mem rstd, tls_mem dw, int64_t rows, int64_t cols, int64_t stride,
                                     tls_mem workspace, const tls_options *opt);

/* ---- elementwise over n values ---------------------------------------------- */

/* y = gelu(x), the tanh form (torch.nn.functional.gelu(approximate='tanh')). */
TILEC_API trt_status tls_gelu(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, int64_t n, const tls_options *opt);
/* dx = dy * gelu'(x). */
TILEC_API trt_status tls_gelu_bwd(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem dy, tls_mem dx, int64_t n,
                                  const tls_options *opt);

/* y = x / (1 - p) where rand(seed, i) >= p, else 0, with 0 <= p <= 1 (the
 * mask is Philox4x32-10 of (seed, i), never stored; a new mask needs a new
 * seed). */
TILEC_API trt_status tls_dropout(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem y, int64_t n, float p, int64_t seed,
                                 const tls_options *opt);
/* dx = dy / (1 - p) where the forward pass with the same p and seed kept
 * x, else 0. */
TILEC_API trt_status tls_dropout_bwd(trt_device *dev, tls_dtype dt, tls_mem dy, tls_mem dx, int64_t n, float p,
                                     int64_t seed, const tls_options *opt);

/* ---- matrix products ------------------------------------------------------- */

/* c = a . b: a is M x K, b is K x N, c is M x N, element (i, j) of x at
 * i * stride_xm + j * stride_xn elements from its start. Any strides >= 0
 * (a transposed operand is the other strides; 0 repeats a row or column
 * of an input); c's must keep its elements apart. The sum is f32, c is
 * stored in the input type. f32 inputs round to tf32 unless
 * opt->precision is TLS_IEEE. c must not overlap a or b. */
TILEC_API trt_status tls_matmul(trt_device *dev, tls_dtype dt, tls_mem a, tls_mem b, tls_mem c, int64_t M, int64_t N,
                                int64_t K, int64_t stride_am, int64_t stride_ak, int64_t stride_bk, int64_t stride_bn,
                                int64_t stride_cm, int64_t stride_cn, const tls_options *opt);
/* What tls_matmul_epilogue applies to each element of the f32 sum (after
 * the bias): nothing, ReLU max(x, 0), or GELU's tanh form as tls_gelu. */
typedef enum tls_activation { TLS_ACT_NONE, TLS_ACT_RELU, TLS_ACT_GELU_TANH } tls_activation;
/* c = act(a . b + bias), fused into the product's kernel: tls_matmul's
 * arguments, plus bias (N values of the input type, contiguous, one per
 * column of c; bias.buffer.handle 0: no bias) added to the f32 sum, then
 * the activation, then c rounded to the input type. */
TILEC_API trt_status tls_matmul_epilogue(trt_device *dev, tls_dtype dt, tls_mem a, tls_mem b, tls_mem c, tls_mem bias,
                                         tls_activation act, int64_t M, int64_t N, int64_t K, int64_t stride_am,
                                         int64_t stride_ak, int64_t stride_bk, int64_t stride_bn, int64_t stride_cm,
                                         int64_t stride_cn, const tls_options *opt);
/* `batch` products c[i] = a[i] . b[i], matrix i of x starting i * stride_xb
 * elements after x's (stride_ab or stride_bb 0: one a or b for every
 * product; c's batches must not overlap). batch up to
 * TLS_MATMUL_MAX_BATCH. */
TILEC_API trt_status tls_matmul_batched(trt_device *dev, tls_dtype dt, tls_mem a, tls_mem b, tls_mem c, int64_t batch,
                                        int64_t M, int64_t N, int64_t K, int64_t stride_ab, int64_t stride_am,
                                        int64_t stride_ak, int64_t stride_bb, int64_t stride_bk, int64_t stride_bn,
                                        int64_t stride_cb, int64_t stride_cm, int64_t stride_cn,
                                        const tls_options *opt);

/* ---- flash attention ------------------------------------------------------ */

/* What the attention kernels take (stdlib/attention.tile; docs/stdlib.md,
 * "Flash attention"): query and key rows a sequence up to 2^30 - 128 (the
 * kernel's row indices are i32, and a window's bounds reach a block past
 * both); heads and batch on the grid's axes 1 and 2, whose limit is
 * 65535. */
#define TLS_ATTENTION_MAX_SEQ 1073741696
#define TLS_ATTENTION_MAX_HEADS 65535
#define TLS_ATTENTION_MAX_BATCH 65535

/* The problem tls_attention_fwd computes (and the backward, with the same
 * struct, differentiates): softmax(scale * q . k^T + mask) . v per batch
 * and head, f32 sums, the storage f16, bf16 or f32 (f32 at head dims 32,
 * 64 and 128; its products are tf32, as tls_matmul's default, on the GPU's
 * tensor cores and on the CPU and emulator devices alike, so its results
 * are about as precise as f16's; TLS_IEEE is refused). Zero-initialize it
 * and set what applies: the zeros are no mask, the default scale, equal
 * lengths. */
typedef struct tls_attention_problem {
    int64_t batch;            /* sequences, 1 to TLS_ATTENTION_MAX_BATCH */
    int64_t heads, kv_heads;  /* query heads, 1 to TLS_ATTENTION_MAX_HEADS, a multiple of kv_heads: query head h
                                 reads key/value head h / (heads / kv_heads) (grouped-query; kv_heads 1:
                                 multi-query; = heads: multi-head) */
    int64_t n_q, n_kv;        /* query and key rows of each sequence (with cu_q: the longest's), >= 1 */
    int64_t head_dim;         /* 32, 64, 128 or 256, f32 not 256 (else pad q, k and v with zero columns to the next) */
    float scale;              /* the scores' factor; 0: 1 / sqrt(head_dim) */
    bool causal;              /* query row i sees key j only if j <= i (both counted from the sequence's start) */
    bool window;              /* a sliding window: query row i sees keys i - window_left to i + window_right */
    int64_t window_left, window_right; /* with window: >= 0, or -1 for no bound on that side; without: 0 or -1 */
    /* Variable-length batches: cu_q and cu_k hold batch + 1 i32 row offsets each (cumulative lengths,
     * nondecreasing, from >= 0), sequence b being rows cu_q[b] to cu_q[b + 1] - 1 of q and o, cu_k[b] to
     * cu_k[b + 1] - 1 of k and v, all sequences packed along the rows (the tensors' stride_batch 0).
     * Both buffer handles 0: no varlen. total_q and total_kv: the rows of the packed tensors (cu_q[batch],
     * cu_k[batch] or more; 0 without varlen). */
    tls_mem cu_q, cu_k;
    int64_t total_q, total_kv;
} tls_attention_problem;

/* A tensor of the call: element (b, h, i, d) (batch, head, row, head-dim
 * column) at b * stride_batch + h * stride_head + i * stride_row + d
 * elements past mem, the head dim contiguous; strides >= 0. lse is f32
 * with stride_row 1. */
typedef struct tls_attention_tensor {
    tls_mem mem;
    int64_t stride_batch, stride_head, stride_row;
} tls_attention_tensor;

/* o = softmax(scale * q . k^T, masked) . v and lse, each row's natural
 * log-sum-exp of its scaled, masked scores (for the backward): q and o
 * [batch, heads, n_q, head_dim], k and v [batch, kv_heads, n_kv, head_dim],
 * lse [batch, heads, n_q]; with cu_q and cu_k, q and o [total_q, heads,
 * head_dim], k and v [total_kv, kv_heads, head_dim] and lse [heads,
 * total_q] (the batch dims gone, their strides 0). A row that sees no key
 * gets o 0 and lse -inf. o and lse must not overlap each other or an
 * input (q, k and v may: FlashAttention's packed [rows, 3, heads,
 * head_dim] qkv is three tensors 1 x heads x head_dim apart in one
 * buffer, stride_row 3 x heads x head_dim). On the GPU the values of cu_q and cu_k are not checked (reading
 * them would wait for the GPU); on the CPU and the emulator they are. */
TILEC_API trt_status tls_attention_fwd(trt_device *dev, tls_dtype dt, const tls_attention_problem *p,
                                       tls_attention_tensor q, tls_attention_tensor k, tls_attention_tensor v,
                                       tls_attention_tensor o, tls_attention_tensor lse, const tls_options *opt);

/* The bytes of workspace tls_attention_bwd needs for this problem: delta
 * = rowsum(dO o O), one f32 a query row and head (4 * batch * heads * n_q;
 * with cu_q and cu_k, 4 * heads * total_q). The problem is checked as
 * tls_attention_bwd checks it (its dtype and tensors aside). */
TILEC_API trt_status tls_attention_bwd_workspace(trt_device *dev, const tls_attention_problem *p, size_t *bytes);
/* The gradients of tls_attention_fwd's o with respect to q, k and v: dq,
 * dk and dv (in q's and k's dims, any strides as the forward's tensors)
 * from the forward's inputs, its o and lse, and d_o, the gradient of the
 * loss with respect to o (in o's dims). The same problem, dtype and
 * conventions as the forward; dk and dv sum over the query heads that
 * share a key/value head. Three launches on the call's stream: delta =
 * rowsum(d_o o o) into the workspace (tls_attention_bwd_workspace bytes
 * past its offset, 16-byte aligned; its contents before and after do not
 * matter), then dk and dv by key block, then dq by query block, each
 * without atomics (the same bits every run). A key that no row sees gets
 * dk and dv 0, a row that sees no key dq 0. dq, dk, dv and the workspace
 * must not overlap each other or an input; checked as the forward's
 * (dq, dk and dv may interleave in one packed buffer as q, k and v do:
 * their columns apart, docs/stdlib.md). */
TILEC_API trt_status tls_attention_bwd(trt_device *dev, tls_dtype dt, const tls_attention_problem *p,
                                       tls_attention_tensor q, tls_attention_tensor k, tls_attention_tensor v,
                                       tls_attention_tensor o, tls_attention_tensor d_o, tls_attention_tensor lse,
                                       tls_attention_tensor dq, tls_attention_tensor dk, tls_attention_tensor dv,
                                       tls_mem workspace, const tls_options *opt);

/* ---- embeddings -------------------------------------------------------------- */

/* What tls_embedding and tls_embedding_bwd take: positions and tokens are
 * i32 in the kernels (rows up to 2^31 - 2048, room for the last block of
 * positions), vocab and seq up to 2^31 - 1; dim up to 65535 blocks of 256
 * columns (the grid's axis 1). */
#define TLS_EMBEDDING_MAX_ROWS 2147481600
#define TLS_EMBEDDING_MAX_VOCAB 2147483647
#define TLS_EMBEDDING_MAX_SEQ 2147483647
#define TLS_EMBEDDING_MAX_DIM 16776960

/* out[i, :] = wte[tokens[i], :] + wpe[i % seq, :] for the rows = batch
 * x seq token positions i (tokens: rows i32, contiguous); wte holds
 * vocab rows and wpe seq rows (at least), out rows rows, each of dim
 * values, contiguous. A token outside [0, vocab) adds a row of zeros
 * (the GPU cannot check without waiting; the CPU and emulator calls
 * check and refuse). rows need not be a multiple of seq (the last
 * sequence may be partial). out must not overlap an input. */
TILEC_API trt_status tls_embedding(trt_device *dev, tls_dtype dt, tls_mem tokens, tls_mem wte, tls_mem wpe,
                                   tls_mem out, int64_t rows, int64_t seq, int64_t vocab, int64_t dim,
                                   const tls_options *opt);
/* Their gradients, added into dwte and dwpe (which hold what the caller
 * put there: zeros, or the tied language-model head's gradient of wte):
 * dwte[v, :] += the sum of dout[i, :] over the positions i with
 * tokens[i] == v, dwpe[t, :] += the sum of dout[i, :] over the i with
 * i % seq == t; each sum in f32 in order of i, then added to the
 * stored value (the same bits every run: no atomics). Out-of-range
 * tokens are skipped (checked as the forward's). dwte and dwpe must
 * not overlap each other or an input. Two launches on the call's
 * stream: dwte's, then dwpe's (of its first min(seq, rows) rows; the
 * others have no position and are not written). */
TILEC_API trt_status tls_embedding_bwd(trt_device *dev, tls_dtype dt, tls_mem tokens, tls_mem dout,
                                       tls_mem dwte, tls_mem dwpe, int64_t rows, int64_t seq,
                                       int64_t vocab, int64_t dim, const tls_options *opt);

/* ---- training ---------------------------------------------------------------- */

/* What a training step needs besides the model's layers (stdlib/optim.tile;
 * docs/stdlib.md, "Training"). n, rows and cols from 1 to TLS_MAX_ELEMENTS;
 * tensors contiguous unless a stride says otherwise. No atomics: each sum
 * runs in an order fixed by the shape (not by the device's size), so a run
 * gives the bits of the one before. An output must not share memory with
 * another tensor of the call, except where a call says it may be an input. */

/* The bytes of workspace tls_sum_squares needs for n values. */
TILEC_API trt_status tls_sum_squares_workspace(trt_device *dev, int64_t n, size_t *bytes);
/* out (one f32) = the sum of x[i]^2 over n values (contiguous), or with
 * accumulate out += it (several tensors' squares into one global norm);
 * f32 partial sums in a fixed order (the same bits every run) through
 * the workspace (tls_sum_squares_workspace bytes: 4 per 8192 values
 * rounded up to 16, so one allocation of the largest tensor's serves every
 * call; written only past 8192 values; its contents before and after do
 * not matter). */
TILEC_API trt_status tls_sum_squares(trt_device *dev, tls_dtype dt, tls_mem x, int64_t n, tls_mem out,
                                     bool accumulate, tls_mem workspace, const tls_options *opt);
/* AdamW's hyperparameters for one step. */
typedef struct tls_adamw_params {
    float lr, beta1, beta2, eps, weight_decay; /* lr, weight_decay finite >= 0; betas in [0, 1); eps finite > 0 */
    int64_t step;     /* 1 for the first update: bias corrections 1 - beta1^step, 1 - beta2^step */
    float grad_scale; /* multiplies every gradient first (1: none; 1 / k for k accumulated batches); finite > 0 */
    float max_norm;   /* > 0: clip: gradients (after grad_scale) scaled by min(1, max_norm / norm), norm =
                         grad_scale * sqrt(*grad_sumsq): grad_sumsq is the sum of squares of the gradients
                         as stored (tls_sum_squares over g), grad_scale's square NOT folded in by the
                         caller; finite >= 0; 0: no clipping, grad_sumsq not read */
    tls_mem schedule; /* buffer handle 0: none. Else TLS_ADAMW_SCHEDULE f32 on the device that the
                         kernel reads in place of the values that change from step to step (those of
                         lr, weight_decay and step; tls_adamw_schedule computes them), so that a graph
                         that captured the call (trt_stream_begin_capture) replays each step with its
                         own: write them before each replay. The fields here are still checked */
} tls_adamw_params;
/* The f32 values of a step's tls_adamw_params.schedule: 1 - lr
 * weight_decay, lr / (1 - beta1^step), 1 / sqrt(1 - beta2^step), each
 * computed in double and rounded once (what tls_adamw passes as
 * arguments without a schedule). */
#define TLS_ADAMW_SCHEDULE 3
TILEC_API trt_status tls_adamw_schedule(trt_device *dev, const tls_adamw_params *h,
                                        float out[TLS_ADAMW_SCHEDULE]);
/* One AdamW step (decoupled weight decay, as torch.optim.AdamW) over n
 * parameters: p (f32 master weights), g (gradients, in dt), m and v
 * (f32 moments), all contiguous: g' = g * grad_scale * clip; m = b1 m +
 * (1 - b1) g'; v = b2 v + (1 - b2) g'^2; p = p - lr * (wd * p + m_hat /
 * (sqrt(v_hat) + eps)) with the bias-corrected m_hat and v_hat; with
 * p_copy (buffer handle 0: none) also p rounded to dt into p_copy (the
 * bf16 weights the model computes with). grad_sumsq: one f32 on the
 * device (tls_sum_squares), read when max_norm > 0. */
TILEC_API trt_status tls_adamw(trt_device *dev, tls_dtype dt, tls_mem p, tls_mem g, tls_mem m, tls_mem v,
                               tls_mem p_copy, tls_mem grad_sumsq, int64_t n, const tls_adamw_params *h,
                               const tls_options *opt);
/* y[i] = value (rounded to dt) over n values: zeros where a kernel adds
 * into a tensor, without a copy from the host (which a graph cannot
 * hold). */
TILEC_API trt_status tls_fill(trt_device *dev, tls_dtype dt, tls_mem y, int64_t n, float value,
                              const tls_options *opt);
/* y = a + b over n values (y may be exactly a or b: in place). */
TILEC_API trt_status tls_add(trt_device *dev, tls_dtype dt, tls_mem a, tls_mem b, tls_mem y, int64_t n,
                             const tls_options *opt);
/* out[j] = the sum over rows i of x[i, j] (row i at i * stride, stride >=
 * cols), in f32 in a fixed order (64 sums of every 64th row, each in row
 * order, then their sum), stored in dt; with accumulate out[j] += it,
 * rounded once (a bias's gradient, summed over a batch's rows). */
TILEC_API trt_status tls_sum_rows(trt_device *dev, tls_dtype dt, tls_mem x, tls_mem out, int64_t rows,
                                  int64_t cols, int64_t stride, bool accumulate, const tls_options *opt);
/* y = x converted from dtype `from` to dtype `to` (n values, round to
 * nearest even; from == to copies; y may be exactly x when both types
 * have one size). */
TILEC_API trt_status tls_convert(trt_device *dev, tls_dtype from, tls_mem x, tls_dtype to, tls_mem y,
                                 int64_t n, const tls_options *opt);

/* ---- losses ------------------------------------------------------------------ */

/* The widest row tls_cross_entropy takes: 2^31 - 4096, so that the
 * kernel's i32 column offsets do not wrap in the last chunk of 4096
 * columns (stdlib/cross_entropy.tile); rows are longer than a tile from
 * 4097 columns on, and any length up to this one works. */
#define TLS_CROSS_ENTROPY_MAX_COLS 2147479552

/* Fused softmax cross-entropy of `rows` rows of `cols` logits (row i at
 * i * stride elements of logits) against targets (rows i32 class
 * indices, contiguous; a negative target ignores its row: loss 0 and a
 * dlogits row of 0; a target >= cols is an error the GPU cannot see:
 * the kernel treats it as ignored, the CPU and emulator calls check and refuse):
 * losses[i] = logsumexp(logits[i, :]) - logits[i, targets[i]] (f32,
 * contiguous, natural log); with dlogits (its buffer handle 0: the
 * forward only) also, in the same pass, dlogits[i, :] =
 * (softmax(logits[i, :]) - onehot(targets[i])) * dloss, in the logits'
 * dtype, row i at i * dlogits_stride elements. dloss is the gradient of
 * the loss with respect to each row's loss (1 / rows for a mean over
 * the rows). dlogits may be exactly logits with the same stride (in
 * place); no other overlap between outputs and inputs. */
TILEC_API trt_status tls_cross_entropy(trt_device *dev, tls_dtype dt, tls_mem logits, tls_mem targets,
                                       tls_mem losses, tls_mem dlogits, int64_t rows, int64_t cols,
                                       int64_t stride, int64_t dlogits_stride, float dloss,
                                       const tls_options *opt);

/* How many stdlib modules the device holds: one per stdlib kernel (a
 * dtype's) and specialization (BLOCK, num_warps) used so far, kept until
 * trt_close. A call whose specialization is already there compiles
 * nothing. */
TILEC_API size_t tls_num_modules(const trt_device *dev);

#ifdef __cplusplus
}
#endif
#endif
