/* gpt.h - a GPT-2-style decoder trained on tilec kernels (samples/gpt/):
 * the model's configuration, its parameters and activations on a device,
 * and the forward and backward passes, each a sequence of stdlib calls
 * (include/tilec_stdlib.h). train.c and sample.c are the programs; this
 * header is what they share. docs/gpt.md describes the model, the
 * training loop and the checkpoint format.
 *
 * The model: byte-level tokens (vocab 256), token and position embeddings,
 * n_layer blocks of pre-LayerNorm causal multi-head attention (the
 * stdlib's flash attention) and a 4x MLP (a matmul with bias and GELU
 * fused in its epilogue), residual connections, a final LayerNorm, and a
 * language-model head tied to the token embedding, under a softmax
 * cross-entropy loss (fused forward and backward). */
#ifndef GPT_H
#define GPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilec_stdlib.h"

enum {
    GPT_SCHEDULE_REST = 4,     /* f32 from one AdamW schedule to the next: TLS_ADAMW_SCHEDULE, 16-byte aligned */
    GPT_VOCAB = 256,       /* byte-level tokens */
    GPT_MAX_LAYERS = 64,
    GPT_NAME_MAX = 32,
};
_Static_assert(GPT_SCHEDULE_REST >= TLS_ADAMW_SCHEDULE, "an AdamW schedule fits before the next");

typedef struct gpt_config {
    char name[GPT_NAME_MAX]; /* "tiny", "small", "gpt2" or "custom" */
    int n_layer, n_head, n_embd; /* n_embd / n_head is the head dim: 32, 64, 128 or 256 */
    int seq;                     /* T: the context length the model is built for */
    int batch;                   /* B: sequences a training step sees */
} gpt_config;

/* The named configurations (NULL: no such name). */
const gpt_config *gpt_config_named(const char *name);
/* NULL if c is usable, else why not (a static string). */
const char *gpt_config_check(const gpt_config *c);

/* Where each parameter tensor lies in the one flat parameter vector, in
 * elements: the tensors that take weight decay (the matrices and the
 * embeddings) first, then those that do not (biases, LayerNorm gains and
 * offsets), each 16-byte aligned in every dtype (element offsets multiples
 * of 8). The gradients and AdamW's moments have the same layout. */
typedef struct gpt_layer_params {
    size_t ln1_w, ln1_b, w_qkv, b_qkv, w_proj, b_proj, ln2_w, ln2_b, w_fc, b_fc, w_fc2, b_fc2;
} gpt_layer_params;
typedef struct gpt_params {
    size_t wte, wpe, lnf_w, lnf_b;
    gpt_layer_params layer[GPT_MAX_LAYERS];
    size_t n_decay;  /* the first n_decay elements take weight decay */
    size_t n;        /* all elements */
} gpt_params;
void gpt_params_layout(const gpt_config *c, gpt_params *p);

/* A model on a device: its weights in the compute dtype (bf16, or f32 in
 * the f32 mode), their f32 masters, the gradients (compute dtype), AdamW's
 * moments, and the activations a training step keeps for its backward. */
/* AdamW's hyperparameters (gpt_train_step). */
typedef struct gpt_optim {
    float lr, beta1, beta2, eps, weight_decay, max_norm;
} gpt_optim;

typedef struct gpt_model {
    gpt_config cfg;
    gpt_params p;
    trt_device *dev;
    tls_dtype dt;            /* TLS_BF16 or TLS_F32 */
    bool ieee;               /* f32: matrix products in exact f32, not tf32 (the gradient check's) */
    size_t esize;            /* bytes of a dt element */
    trt_buffer weights;      /* p.n values in dt (the same buffer as master in the f32 mode) */
    trt_buffer master, m, v; /* p.n f32 values each */
    trt_buffer grads;        /* p.n values in dt */
    /* activations, rows = batch * seq (the largest a call may use) */
    trt_buffer tokens, targets;                 /* rows i32 each */
    trt_buffer resid; /* (n_layer + 1) x rows x C: each block's input, then the last's output */
    trt_buffer ln1, ln2, att, mid;              /* n_layer x rows x C each */
    trt_buffer qkv;                             /* n_layer x rows x 3C */
    trt_buffer fc;                              /* n_layer x rows x 4C: GELU's output */
    trt_buffer stats;                           /* f32: per layer ln1 mean, rstd, ln2 mean, rstd (rows each), lse
                                                   (rows x n_head... B x H x T), then lnf mean, rstd */
    trt_buffer lnf, logits;                     /* rows x C, rows x V (the backward's dlogits in place) */
    trt_buffer losses;                          /* rows f32 */
    /* the backward's scratch */
    trt_buffer d_res, d_tmp, d_ln;               /* rows x C each */
    trt_buffer d_qkv, d_fc, d_fc2;               /* rows x 3C, rows x 4C, rows x 4C */
    trt_buffer workspace;                        /* the largest workspace a call asks (norm, attention, sums) */
    size_t workspace_bytes;
    trt_buffer sumsq;                            /* one f32: the gradients' sum of squares */
    trt_buffer schedule;                         /* AdamW's constants of the step: the decayed tensors', the
                                                    rest's at GPT_SCHEDULE_REST (tls_adamw_params.schedule) */
    float schedule_host[2 * GPT_SCHEDULE_REST];      /* what the step wrote there */
    int rows;                                    /* batch * seq */
    /* where the passes run: one stream, and the options that name it
     * (mm: the matrix products', with the precision of `ieee`) */
    trt_stream *stream;
    tls_options opt, mm;
    /* the training step as a graph (gpt_train_step), captured with
     * graph_optim's constants; warm once a step ran (compiling its kernels) */
    trt_graph *graph;
    gpt_optim graph_optim;
    bool warm;
} gpt_model;

/* Allocates a model for cfg on dev in dtype dt (TLS_BF16 or TLS_F32) and
 * initializes its weights from seed as GPT-2 does (normal, std 0.02; the
 * residual projections' 0.02 / sqrt(2 n_layer); biases 0, LayerNorm gains
 * 1). On failure returns a status with trt_last_error's message. */
trt_status gpt_create(gpt_model *m, trt_device *dev, const gpt_config *cfg, tls_dtype dt, uint64_t seed);
void gpt_destroy(gpt_model *m);

/* The forward pass over `batch` sequences of `seq` tokens (seq <= cfg.seq,
 * batch * seq <= cfg.batch * cfg.seq) in m->tokens. With targets (in
 * m->targets), the losses per position into m->losses and, when
 * `backward`, the gradient of their mean into every parameter's gradient
 * (m->grads, overwritten). Without targets, only m->logits. */
trt_status gpt_forward(gpt_model *m, int batch, int seq, bool targets, bool backward);

/* One training step on the full batch (cfg.batch sequences of cfg.seq
 * tokens in m->tokens and m->targets): the forward pass and its losses,
 * the backward pass, the gradients' global norm into m->sumsq, and an
 * AdamW step with lr (weight decay on the decayed tensors only), the
 * gradients clipped to max_norm (0: none). With `graph`, the launches of
 * a step are captured into a graph (trt_stream_begin_capture) at the
 * second step, the first having compiled every kernel, and replayed from
 * then on; the step's lr and bias corrections go to m->schedule by a copy
 * before, which the graph's AdamW reads. The same bits either way. */
trt_status gpt_train_step(gpt_model *m, const gpt_optim *o, int64_t step, bool graph);

/* The mean of the last forward's losses (rows of them), summed on the host
 * in order (the same value on every run), and the gradient norm of the
 * last update (sqrt of m->sumsq). */
trt_status gpt_mean_loss(gpt_model *m, int rows, double *loss);
trt_status gpt_grad_norm(gpt_model *m, double *norm);

/* Checkpoints (docs/gpt.md has the format): the configuration, the step,
 * the data sampler's state, the f32 master weights and AdamW's moments. */
typedef struct gpt_checkpoint_state {
    int64_t step;
    uint64_t data_rng;
} gpt_checkpoint_state;
/* NULL on success, else a message in why. */
const char *gpt_save(gpt_model *m, const char *path, const gpt_checkpoint_state *s, char *why, size_t n);
/* Reads a checkpoint's configuration (and its dtype) without a device. */
const char *gpt_peek(const char *path, gpt_config *cfg, tls_dtype *dt, char *why, size_t n);
/* Loads into m (made with the checkpoint's configuration: a checkpoint of
 * another shape is an error). */
const char *gpt_load(gpt_model *m, const char *path, gpt_checkpoint_state *s, char *why, size_t n);

#endif
