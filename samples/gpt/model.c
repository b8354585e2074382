/* model.c - the GPT's parameters, activations, forward and backward passes
 * (gpt.h), each pass a sequence of stdlib calls on the model's device.
 *
 * Rows are token positions (rows = batch x seq), each a row of C =
 * n_embd values; weights are [in, out] matrices, row-major, so a layer is
 * y = x . W + b. The forward keeps what the backward reads: each block's
 * input (the residual stream), the LayerNorms' outputs and statistics,
 * qkv, the attention's output and log-sum-exp, the residual after the
 * attention, GELU's output. The MLP's first matmul fuses bias and GELU in
 * its epilogue; the backward recomputes its pre-activation (one more
 * matmul) rather than keeping a second rows x 4C tensor. The loss is the
 * fused softmax cross-entropy, whose backward writes dlogits over the
 * logits in the same pass. Gradients are overwritten, not accumulated,
 * but for the tied token embedding, whose head gradient the embedding's
 * backward adds to. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"

static const gpt_config configs[] = {
    {.name = "tiny", .n_layer = 2, .n_head = 2, .n_embd = 64, .seq = 64, .batch = 8},
    {.name = "small", .n_layer = 6, .n_head = 6, .n_embd = 384, .seq = 256, .batch = 64},
    {.name = "gpt2", .n_layer = 12, .n_head = 12, .n_embd = 768, .seq = 1024, .batch = 16},
};

const gpt_config *gpt_config_named(const char *name) {
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
        if (!strcmp(configs[i].name, name)) return &configs[i];
    return NULL;
}

const char *gpt_config_check(const gpt_config *c) {
    if (c->n_layer < 1 || c->n_layer > GPT_MAX_LAYERS) return "n_layer must be from 1 to 64";
    if (c->n_head < 1 || c->n_embd < 1 || c->n_embd % c->n_head) return "n_embd must be a multiple of n_head";
    int d = c->n_embd / c->n_head;
    if (d != 32 && d != 64 && d != 128 && d != 256)
        return "the head dim (n_embd / n_head) must be 32, 64, 128 or 256 (the stdlib attention's)";
    if (c->seq < 1 || c->seq > 65536) return "seq must be from 1 to 65536";
    if (c->batch < 1 || (int64_t)c->batch * c->seq > (1 << 24)) return "batch x seq must be from 1 to 2^24";
    return NULL;
}

/* ---- the parameter layout ------------------------------------------------------- */

static size_t take(size_t *at, size_t n) {
    size_t here = *at;
    *at += (n + 7) & ~(size_t)7; /* 16-byte aligned in f32, f16 and bf16 */
    return here;
}

void gpt_params_layout(const gpt_config *c, gpt_params *p) {
    size_t C = (size_t)c->n_embd, at = 0;
    memset(p, 0, sizeof *p);
    /* decayed: the matrices and the embeddings */
    p->wte = take(&at, GPT_VOCAB * C);
    p->wpe = take(&at, (size_t)c->seq * C);
    for (int l = 0; l < c->n_layer; l++) {
        gpt_layer_params *L = &p->layer[l];
        L->w_qkv = take(&at, C * 3 * C);
        L->w_proj = take(&at, C * C);
        L->w_fc = take(&at, C * 4 * C);
        L->w_fc2 = take(&at, 4 * C * C);
    }
    p->n_decay = at;
    p->lnf_w = take(&at, C);
    p->lnf_b = take(&at, C);
    for (int l = 0; l < c->n_layer; l++) {
        gpt_layer_params *L = &p->layer[l];
        L->ln1_w = take(&at, C);
        L->ln1_b = take(&at, C);
        L->b_qkv = take(&at, 3 * C);
        L->b_proj = take(&at, C);
        L->ln2_w = take(&at, C);
        L->ln2_b = take(&at, C);
        L->b_fc = take(&at, 4 * C);
        L->b_fc2 = take(&at, C);
    }
    p->n = at;
}

/* ---- creating a model ------------------------------------------------------------ */

/* splitmix64: the weights' generator (and data.c's), the same numbers on
 * every platform */
static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static const double GPT_PI = 3.14159265358979323846;

static double uniform(uint64_t *s) { return ((next_u64(s) >> 11) + 0.5) * 0x1p-53; }

static float normal(uint64_t *s, float std) {
    double u = uniform(s), v = uniform(s); /* Box-Muller */
    return (float)(std * sqrt(-2 * log(u)) * cos(2 * GPT_PI * v));
}

static void fill_normal(float *w, size_t at, size_t n, float std, uint64_t *s) {
    for (size_t i = 0; i < n; i++) w[at + i] = normal(s, std);
}

static void fill_value(float *w, size_t at, size_t n, float v) {
    for (size_t i = 0; i < n; i++) w[at + i] = v;
}

static trt_status alloc(gpt_model *m, trt_buffer *b, size_t bytes) {
    return trt_alloc(m->dev, bytes ? bytes : 16, b);
}

static tls_mem at(trt_buffer b, size_t elem, size_t esize) { return tls_mem_at(b, elem * esize); }

/* Per layer, the f32 statistics: ln1 mean and rstd, ln2 mean and rstd
 * (rows each), the attention's lse (B x H x T = rows x H), each a
 * multiple of 4 floats (16 bytes); then lnf's mean and rstd. */
static size_t rows4(const gpt_model *m) { return ((size_t)m->rows + 3) & ~(size_t)3; }
static size_t stats_per_layer(const gpt_model *m) { return 4 * rows4(m) + rows4(m) * (size_t)m->cfg.n_head; }
static size_t stat(const gpt_model *m, int layer, int which) { /* which: 0..3 the norms', 4 lse */
    return (size_t)layer * stats_per_layer(m) + (size_t)which * rows4(m);
}

trt_status gpt_create(gpt_model *m, trt_device *dev, const gpt_config *cfg, tls_dtype dt, uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->dev = dev;
    m->dt = dt;
    m->esize = dt == TLS_F32 ? 4 : 2;
    m->rows = cfg->batch * cfg->seq;
    gpt_params_layout(cfg, &m->p);
    size_t C = (size_t)cfg->n_embd, R = (size_t)m->rows, L = (size_t)cfg->n_layer, es = m->esize, n = m->p.n;
    trt_status st;
    /* every pass's launches on one stream of the model's, which a graph can capture */
    if ((st = trt_stream_create(dev, &m->stream))) return st;
    m->opt = (tls_options){.stream = m->stream};
    /* the weights, initialized on the host in f32 */
    float *w = malloc(n * sizeof *w);
    if (!w) {
        gpt_destroy(m);
        return TRT_ERR_OUT_OF_MEMORY;
    }
    memset(w, 0, n * sizeof *w);
    uint64_t s = seed;
    float std = 0.02f, proj_std = 0.02f / sqrtf(2.0f * (float)cfg->n_layer);
    fill_normal(w, m->p.wte, GPT_VOCAB * C, std, &s);
    fill_normal(w, m->p.wpe, (size_t)cfg->seq * C, std, &s);
    fill_value(w, m->p.lnf_w, C, 1.0f);
    for (int l = 0; l < cfg->n_layer; l++) {
        const gpt_layer_params *P = &m->p.layer[l];
        fill_value(w, P->ln1_w, C, 1.0f);
        fill_value(w, P->ln2_w, C, 1.0f);
        fill_normal(w, P->w_qkv, C * 3 * C, std, &s);
        fill_normal(w, P->w_proj, C * C, proj_std, &s);
        fill_normal(w, P->w_fc, C * 4 * C, std, &s);
        fill_normal(w, P->w_fc2, 4 * C * C, proj_std, &s);
    }
    size_t stats = L * stats_per_layer(m) + 2 * rows4(m);
    if ((st = alloc(m, &m->master, n * 4)) || (st = trt_write(dev, m->master, 0, w, n * 4)) ||
        (st = alloc(m, &m->m, n * 4)) || (st = alloc(m, &m->v, n * 4)) || (st = alloc(m, &m->grads, n * es)) ||
        (st = alloc(m, &m->tokens, R * 4)) || (st = alloc(m, &m->targets, R * 4)) ||
        (st = alloc(m, &m->resid, (L + 1) * R * C * es)) || (st = alloc(m, &m->ln1, L * R * C * es)) ||
        (st = alloc(m, &m->ln2, L * R * C * es)) || (st = alloc(m, &m->att, L * R * C * es)) ||
        (st = alloc(m, &m->mid, L * R * C * es)) || (st = alloc(m, &m->qkv, L * R * 3 * C * es)) ||
        (st = alloc(m, &m->fc, L * R * 4 * C * es)) || (st = alloc(m, &m->stats, stats * 4)) ||
        (st = alloc(m, &m->lnf, R * C * es)) || (st = alloc(m, &m->logits, R * GPT_VOCAB * es)) ||
        (st = alloc(m, &m->losses, R * 4)) || (st = alloc(m, &m->d_res, R * C * es)) ||
        (st = alloc(m, &m->d_tmp, R * C * es)) || (st = alloc(m, &m->d_ln, R * C * es)) ||
        (st = alloc(m, &m->d_qkv, R * 3 * C * es)) ||
        (st = alloc(m, &m->d_fc, R * 4 * C * es)) || (st = alloc(m, &m->d_fc2, R * 4 * C * es)) ||
        (st = alloc(m, &m->sumsq, 16)) || (st = alloc(m, &m->schedule, sizeof m->schedule_host))) {
        free(w);
        gpt_destroy(m);
        return st;
    }
    /* zero moments, and gradients (the gaps between tensors stay 0: the
     * global norm sums over them) */
    memset(w, 0, n * sizeof *w);
    if ((st = trt_write(dev, m->m, 0, w, n * 4)) || (st = trt_write(dev, m->v, 0, w, n * 4)) ||
        (st = trt_write(dev, m->grads, 0, w, n * es))) {
        free(w);
        gpt_destroy(m);
        return st;
    }
    free(w);
    /* the compute dtype's weights: the master itself in f32, else a rounded copy */
    if (dt == TLS_F32) {
        m->weights = m->master;
    } else if ((st = alloc(m, &m->weights, n * es)) ||
               (st = tls_convert(dev, TLS_F32, tls_mem_of(m->master), dt, tls_mem_of(m->weights), (int64_t)n, NULL))) {
        gpt_destroy(m);
        return st;
    }
    /* the workspace: the largest any backward call asks for */
    size_t ws = 0, b;
    tls_attention_problem p = {.batch = cfg->batch, .heads = cfg->n_head, .kv_heads = cfg->n_head, .n_q = cfg->seq,
                               .n_kv = cfg->seq, .head_dim = C / (size_t)cfg->n_head, .causal = true};
    if ((st = tls_layernorm_bwd_workspace(dev, (int64_t)R, (int64_t)C, &b))) goto fail;
    ws = b > ws ? b : ws;
    if ((st = tls_attention_bwd_workspace(dev, &p, &b))) goto fail;
    ws = b > ws ? b : ws;
    if ((st = tls_sum_squares_workspace(dev, (int64_t)n, &b))) goto fail;
    ws = b > ws ? b : ws;
    m->workspace_bytes = ws;
    if ((st = alloc(m, &m->workspace, ws))) goto fail;
    return TRT_OK;
fail:
    gpt_destroy(m);
    return st;
}

void gpt_destroy(gpt_model *m) {
    trt_buffer *all[] = {&m->master, &m->m,      &m->v,     &m->grads,  &m->tokens, &m->targets, &m->resid,
                         &m->ln1,    &m->ln2,    &m->att,   &m->mid,    &m->qkv,    &m->fc,      &m->stats,
                         &m->lnf,    &m->logits, &m->losses, &m->d_res, &m->d_tmp,  &m->d_ln,    &m->d_qkv,   &m->d_fc,
                         &m->d_fc2,  &m->workspace, &m->sumsq, &m->schedule};
    trt_graph_destroy(m->graph); /* before the buffers it launches with */
    m->graph = NULL;
    if (m->weights.handle && m->weights.handle != m->master.handle) trt_free(m->dev, m->weights);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->handle) trt_free(m->dev, *all[i]);
    trt_stream_destroy(m->stream);
    memset(m, 0, sizeof *m);
}

/* ---- the passes --------------------------------------------------------------------- */

/* One pass's shape and where things are. */
typedef struct pass {
    gpt_model *m;
    int B, T, R, C, H;
    size_t es;
    trt_status st;
} pass;

/* A tensor of buffer b at element offset e (in the compute dtype). */
static tls_mem T_(const pass *ps, trt_buffer b, size_t e) { return at(b, e, ps->es); }
static tls_mem W_(const pass *ps, size_t e) { return at(ps->m->weights, e, ps->es); }
static tls_mem G_(const pass *ps, size_t e) { return at(ps->m->grads, e, ps->es); }
static tls_mem F_(trt_buffer b, size_t e) { return at(b, e, 4); } /* f32 */

/* the layer-l slice of a per-layer activation of `width` columns */
static size_t act(const pass *ps, int l, int width) { return (size_t)l * (size_t)ps->R * (size_t)width; }

/* The matrix products' options: f32 ones exact (TLS_IEEE) when the model
 * asks, else the stdlib's default (tf32 for f32; bf16 has one way). */
static const tls_options *mm_opt(gpt_model *m) {
    m->mm = m->opt;
    m->mm.precision = m->ieee && m->dt == TLS_F32 ? TLS_IEEE : TLS_TF32;
    return &m->mm;
}

/* y[R, n] = x[R, k] . w[k, n] (+ bias, act) */
static trt_status linear(pass *ps, tls_mem x, size_t w, size_t bias, tls_mem y, int k, int n, tls_activation a) {
    gpt_model *m = ps->m;
    return tls_matmul_epilogue(m->dev, m->dt, x, W_(ps, w), y, W_(ps, bias), a, ps->R, n, k, k, 1, n, 1, n, 1,
                               mm_opt(m));
}

/* The gradients of linear's weight and bias, at their places in the
 * gradients (the parameters' layout): dw[k, n] = x^T . dy, db[n] = the
 * column sums of dy; and dx[R, k] = dy . w^T. */
static trt_status linear_bwd(pass *ps, tls_mem x, size_t w, size_t b, tls_mem dy, tls_mem dx, int k, int n) {
    gpt_model *m = ps->m;
    trt_status st;
    if ((st = tls_matmul(m->dev, m->dt, x, dy, G_(ps, w), k, n, ps->R, 1, k, n, 1, n, 1, mm_opt(m)))) return st;
    if ((st = tls_sum_rows(m->dev, m->dt, dy, G_(ps, b), ps->R, n, n, false, &m->opt))) return st;
    return tls_matmul(m->dev, m->dt, dy, W_(ps, w), dx, ps->R, k, n, n, 1, 1, n, k, 1, mm_opt(m));
}

static tls_attention_problem attention_problem(const pass *ps) {
    return (tls_attention_problem){.batch = ps->B, .heads = ps->H, .kv_heads = ps->H, .n_q = ps->T, .n_kv = ps->T,
                                   .head_dim = ps->C / ps->H, .causal = true};
}

/* q, k and v as views of a [R, 3C] buffer (FlashAttention's packed qkv). */
static tls_attention_tensor qkv_part(const pass *ps, trt_buffer b, size_t base, int part) {
    size_t C = (size_t)ps->C;
    return (tls_attention_tensor){.mem = T_(ps, b, base + (size_t)part * C),
                                  .stride_batch = (int64_t)ps->T * 3 * ps->C,
                                  .stride_head = ps->C / ps->H,
                                  .stride_row = 3 * ps->C};
}

static tls_attention_tensor rows_of_c(const pass *ps, trt_buffer b, size_t base) {
    return (tls_attention_tensor){.mem = T_(ps, b, base), .stride_batch = (int64_t)ps->T * ps->C,
                                  .stride_head = ps->C / ps->H, .stride_row = ps->C};
}

static tls_attention_tensor lse_of(const pass *ps, int l) {
    return (tls_attention_tensor){.mem = F_(ps->m->stats, stat(ps->m, l, 4)),
                                  .stride_batch = (int64_t)ps->H * ps->T, .stride_head = ps->T, .stride_row = 1};
}

static const float LN_EPS = 1e-5f;

static trt_status forward(pass *ps) {
    gpt_model *m = ps->m;
    trt_device *d = m->dev;
    tls_dtype dt = m->dt;
    int R = ps->R, C = ps->C;
    size_t RC = (size_t)R * (size_t)C;
    trt_status st;
    /* x0 = wte[tokens] + wpe[position] */
    if ((st = tls_embedding(d, dt, tls_mem_of(m->tokens), W_(ps, m->p.wte), W_(ps, m->p.wpe), T_(ps, m->resid, 0), R,
                            ps->T, GPT_VOCAB, C, &m->opt)))
        return st;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const gpt_layer_params *P = &m->p.layer[l];
        tls_mem x = T_(ps, m->resid, (size_t)l * RC), ln1 = T_(ps, m->ln1, act(ps, l, C));
        tls_mem att = T_(ps, m->att, act(ps, l, C)), mid = T_(ps, m->mid, act(ps, l, C));
        tls_mem ln2 = T_(ps, m->ln2, act(ps, l, C)), fc = T_(ps, m->fc, act(ps, l, 4 * C));
        tls_mem out = T_(ps, m->resid, (size_t)(l + 1) * RC);
        size_t qkv = act(ps, l, 3 * C);
        tls_attention_problem p = attention_problem(ps);
        if ((st = tls_layernorm(d, dt, x, ln1, W_(ps, P->ln1_w), W_(ps, P->ln1_b), F_(m->stats, stat(m, l, 0)),
                                F_(m->stats, stat(m, l, 1)), R, C, C, LN_EPS, &m->opt)) ||
            (st = linear(ps, ln1, P->w_qkv, P->b_qkv, T_(ps, m->qkv, qkv), C, 3 * C, TLS_ACT_NONE)) ||
            (st = tls_attention_fwd(d, dt, &p, qkv_part(ps, m->qkv, qkv, 0), qkv_part(ps, m->qkv, qkv, 1),
                                    qkv_part(ps, m->qkv, qkv, 2), rows_of_c(ps, m->att, act(ps, l, C)),
                                    lse_of(ps, l), &m->opt)) ||
            (st = linear(ps, att, P->w_proj, P->b_proj, mid, C, C, TLS_ACT_NONE)) ||
            (st = tls_add(d, dt, mid, x, mid, (int64_t)RC, &m->opt)) ||
            (st = tls_layernorm(d, dt, mid, ln2, W_(ps, P->ln2_w), W_(ps, P->ln2_b), F_(m->stats, stat(m, l, 2)),
                                F_(m->stats, stat(m, l, 3)), R, C, C, LN_EPS, &m->opt)) ||
            (st = linear(ps, ln2, P->w_fc, P->b_fc, fc, C, 4 * C, TLS_ACT_GELU_TANH)) ||
            (st = linear(ps, fc, P->w_fc2, P->b_fc2, out, 4 * C, C, TLS_ACT_NONE)) ||
            (st = tls_add(d, dt, out, mid, out, (int64_t)RC, &m->opt)))
            return st;
    }
    size_t L = (size_t)m->cfg.n_layer;
    size_t lnf_stats = L * stats_per_layer(m);
    if ((st = tls_layernorm(d, dt, T_(ps, m->resid, L * RC), T_(ps, m->lnf, 0), W_(ps, m->p.lnf_w),
                            W_(ps, m->p.lnf_b), F_(m->stats, lnf_stats), F_(m->stats, lnf_stats + rows4(m)), R, C, C,
                            LN_EPS, &m->opt)))
        return st;
    /* logits = lnf . wte^T: wte is [V, C], read as its transpose */
    return tls_matmul(d, dt, T_(ps, m->lnf, 0), W_(ps, m->p.wte), T_(ps, m->logits, 0), R, GPT_VOCAB, C, C, 1, 1, C,
                      GPT_VOCAB, 1, mm_opt(m));
}

/* A block's LayerNorm backward, its input's gradient added to the
 * residual stream's (m->d_res): x the norm's input, dy the gradient of its
 * output, w and b its parameters, stats where its mean (then rstd) lie. */
static trt_status norm_bwd_into_res(pass *ps, tls_mem x, tls_mem dy, size_t w, size_t b, size_t stats) {
    gpt_model *m = ps->m;
    size_t RC = (size_t)ps->R * (size_t)ps->C;
    tls_mem dres = T_(ps, m->d_res, 0), dln = T_(ps, m->d_ln, 0);
    trt_status st = tls_layernorm_bwd(m->dev, m->dt, x, dy, dln, W_(ps, w), F_(m->stats, stats),
                                      F_(m->stats, stats + rows4(m)), G_(ps, w), G_(ps, b), ps->R, ps->C, ps->C,
                                      tls_mem_of(m->workspace), &m->opt);
    return st ? st : tls_add(m->dev, m->dt, dres, dln, dres, (int64_t)RC, &m->opt);
}

static trt_status backward(pass *ps) {
    gpt_model *m = ps->m;
    trt_device *d = m->dev;
    tls_dtype dt = m->dt;
    int R = ps->R, C = ps->C, V = GPT_VOCAB;
    size_t RC = (size_t)R * (size_t)C, L = (size_t)m->cfg.n_layer;
    tls_mem ws = tls_mem_of(m->workspace), dres = T_(ps, m->d_res, 0), dtmp = T_(ps, m->d_tmp, 0);
    tls_mem dlogits = T_(ps, m->logits, 0);
    trt_status st;
    /* the head: dwte = dlogits^T . lnf (the embedding's backward adds its
     * part below), d lnf = dlogits . wte */
    const tls_options *o = mm_opt(m);
    if ((st = tls_matmul(d, dt, dlogits, T_(ps, m->lnf, 0), G_(ps, m->p.wte), V, C, R, 1, V, C, 1, C, 1, o)) ||
        (st = tls_matmul(d, dt, dlogits, W_(ps, m->p.wte), dtmp, R, C, V, V, 1, C, 1, C, 1, o)))
        return st;
    size_t lnf_stats = L * stats_per_layer(m);
    if ((st = tls_layernorm_bwd(d, dt, T_(ps, m->resid, L * RC), dtmp, dres, W_(ps, m->p.lnf_w),
                                F_(m->stats, lnf_stats), F_(m->stats, lnf_stats + rows4(m)), G_(ps, m->p.lnf_w),
                                G_(ps, m->p.lnf_b), R, C, C, ws, &m->opt)))
        return st;
    /* dres: the gradient of the loss with respect to the residual stream */
    for (int l = (int)L - 1; l >= 0; l--) {
        const gpt_layer_params *P = &m->p.layer[l];
        tls_mem x = T_(ps, m->resid, (size_t)l * RC), ln1 = T_(ps, m->ln1, act(ps, l, C));
        tls_mem att = T_(ps, m->att, act(ps, l, C)), mid = T_(ps, m->mid, act(ps, l, C));
        tls_mem ln2 = T_(ps, m->ln2, act(ps, l, C)), fc = T_(ps, m->fc, act(ps, l, 4 * C));
        size_t qkv = act(ps, l, 3 * C);
        tls_mem dfc = T_(ps, m->d_fc, 0), dpre = T_(ps, m->d_fc2, 0), dqkv = T_(ps, m->d_qkv, 0);
        tls_attention_problem p = attention_problem(ps);
        /* the MLP: out = mid + gelu(ln2 . Wfc + bfc) . Wfc2 + bfc2 */
        if ((st = linear_bwd(ps, fc, P->w_fc2, P->b_fc2, dres, dfc, 4 * C, C)) ||
            /* GELU's input, recomputed into the scratch dpre's place first */
            (st = linear(ps, ln2, P->w_fc, P->b_fc, dpre, C, 4 * C, TLS_ACT_NONE)) ||
            (st = tls_gelu_bwd(d, dt, dpre, dfc, dpre, (int64_t)R * 4 * C, &m->opt)) ||
            (st = linear_bwd(ps, ln2, P->w_fc, P->b_fc, dpre, dtmp, C, 4 * C)) ||
            (st = norm_bwd_into_res(ps, mid, dtmp, P->ln2_w, P->ln2_b, stat(m, l, 2))))
            return st;
        /* attention: mid = x + attention(ln1 . Wqkv + bqkv) . Wproj + bproj */
        if ((st = linear_bwd(ps, att, P->w_proj, P->b_proj, dres, dtmp, C, C)) ||
            (st = tls_attention_bwd(d, dt, &p, qkv_part(ps, m->qkv, qkv, 0), qkv_part(ps, m->qkv, qkv, 1),
                                    qkv_part(ps, m->qkv, qkv, 2), rows_of_c(ps, m->att, act(ps, l, C)),
                                    rows_of_c(ps, m->d_tmp, 0), lse_of(ps, l), qkv_part(ps, m->d_qkv, 0, 0),
                                    qkv_part(ps, m->d_qkv, 0, 1), qkv_part(ps, m->d_qkv, 0, 2), ws, &m->opt)) ||
            (st = linear_bwd(ps, ln1, P->w_qkv, P->b_qkv, dqkv, dtmp, C, 3 * C)) ||
            (st = norm_bwd_into_res(ps, x, dtmp, P->ln1_w, P->ln1_b, stat(m, l, 0))))
            return st;
    }
    /* the embeddings: dwpe from zero (a kernel, not a copy: a graph holds it), dwte on top of the head's */
    if ((st = tls_fill(d, dt, G_(ps, m->p.wpe), (int64_t)m->cfg.seq * C, 0.0f, &m->opt))) return st;
    return tls_embedding_bwd(d, dt, tls_mem_of(m->tokens), dres, G_(ps, m->p.wte), G_(ps, m->p.wpe), R, ps->T, V, C,
                             &m->opt);
}

trt_status gpt_forward(gpt_model *m, int batch, int seq, bool targets, bool backward_too) {
    if (batch < 1 || seq < 1 || seq > m->cfg.seq || (int64_t)batch * seq > m->rows) return TRT_ERR_INVALID_ARGUMENT;
    pass ps = {.m = m, .B = batch, .T = seq, .R = batch * seq, .C = m->cfg.n_embd, .H = m->cfg.n_head,
               .es = m->esize};
    trt_status st = forward(&ps);
    if (st || !targets) return st;
    tls_mem dl = backward_too ? T_(&ps, m->logits, 0) : tls_mem_of((trt_buffer){0});
    if ((st = tls_cross_entropy(m->dev, m->dt, T_(&ps, m->logits, 0), tls_mem_of(m->targets), tls_mem_of(m->losses),
                                dl, ps.R, GPT_VOCAB, GPT_VOCAB, GPT_VOCAB, 1.0f / (float)ps.R, &m->opt)))
        return st;
    return backward_too ? backward(&ps) : TRT_OK;
}

/* The gradients' global norm into m->sumsq, then AdamW over the decayed
 * tensors and the rest, the step's constants read from m->schedule (the
 * decayed tensors' at 0, the rest's at GPT_SCHEDULE_REST: written by the
 * step, outside the graph); o's lr and step are only checked here. */
static trt_status update(gpt_model *m, const gpt_optim *o, int64_t step) {
    trt_status st;
    tls_mem ws = tls_mem_of(m->workspace), sumsq = tls_mem_of(m->sumsq);
    if ((st = tls_sum_squares(m->dev, m->dt, tls_mem_of(m->grads), (int64_t)m->p.n, sumsq, false, ws, &m->opt)))
        return st;
    tls_adamw_params h = {.lr = o->lr, .beta1 = o->beta1, .beta2 = o->beta2, .eps = o->eps,
                          .weight_decay = o->weight_decay, .step = step, .grad_scale = 1.0f, .max_norm = o->max_norm,
                          .schedule = F_(m->schedule, 0)};
    tls_mem copy_decay = m->dt == TLS_F32 ? tls_mem_of((trt_buffer){0}) : tls_mem_of(m->weights);
    size_t nd = m->p.n_decay, es = m->esize;
    if ((st = tls_adamw(m->dev, m->dt, F_(m->master, 0), tls_mem_of(m->grads), F_(m->m, 0), F_(m->v, 0), copy_decay,
                        sumsq, (int64_t)nd, &h, &m->opt)))
        return st;
    h.weight_decay = 0;
    h.schedule = F_(m->schedule, GPT_SCHEDULE_REST);
    tls_mem copy_rest = m->dt == TLS_F32 ? tls_mem_of((trt_buffer){0}) : at(m->weights, nd, es);
    return tls_adamw(m->dev, m->dt, F_(m->master, nd), at(m->grads, nd, es), F_(m->m, nd), F_(m->v, nd), copy_rest,
                     sumsq, (int64_t)(m->p.n - nd), &h, &m->opt);
}

/* The launches of a step on the full batch: forward, loss, backward,
 * update. */
static trt_status step_launches(gpt_model *m, const gpt_optim *o, int64_t step) {
    trt_status st = gpt_forward(m, m->cfg.batch, m->cfg.seq, true, true);
    return st ? st : update(m, o, step);
}

/* Whether a graph captured with o still does what o says: all but lr,
 * which the schedule carries. */
static bool same_constants(const gpt_optim *a, const gpt_optim *b) {
    return a->beta1 == b->beta1 && a->beta2 == b->beta2 && a->eps == b->eps && a->weight_decay == b->weight_decay &&
           a->max_norm == b->max_norm;
}

trt_status gpt_train_step(gpt_model *m, const gpt_optim *o, int64_t step, bool graph) {
    tls_adamw_params h = {.lr = o->lr, .beta1 = o->beta1, .beta2 = o->beta2, .eps = o->eps,
                          .weight_decay = o->weight_decay, .step = step, .grad_scale = 1.0f, .max_norm = o->max_norm};
    trt_status st;
    /* a plain copy: the default stream waits for the last step's update,
     * which reads the schedule, and the step's launches wait for it */
    if ((st = tls_adamw_schedule(m->dev, &h, m->schedule_host)) ||
        (h.weight_decay = 0, st = tls_adamw_schedule(m->dev, &h, m->schedule_host + GPT_SCHEDULE_REST)) ||
        (st = trt_write(m->dev, m->schedule, 0, m->schedule_host, sizeof m->schedule_host)))
        return st;
    if (m->graph && !same_constants(&m->graph_optim, o)) {
        trt_graph_destroy(m->graph);
        m->graph = NULL;
    }
    /* the first step runs directly: it compiles every kernel, which a
     * capture refuses; the second is captured, and replayed from then on */
    if (!graph || !m->warm) {
        st = step_launches(m, o, step);
        m->warm = st == TRT_OK;
        return st;
    }
    if (!m->graph) {
        if ((st = trt_stream_begin_capture(m->stream))) return st;
        st = step_launches(m, o, step);
        trt_graph *g = NULL;
        trt_status end = trt_stream_end_capture(m->stream, st ? NULL : &g);
        if (st || (st = end)) return st;
        m->graph = g;
        m->graph_optim = *o;
    }
    return trt_graph_launch(m->graph, m->stream);
}

trt_status gpt_mean_loss(gpt_model *m, int rows, double *loss) {
    float *l = malloc((size_t)rows * sizeof *l);
    if (!l) return TRT_ERR_OUT_OF_MEMORY;
    trt_status st = trt_read(m->dev, m->losses, 0, l, (size_t)rows * sizeof *l);
    double s = 0;
    for (int i = 0; i < rows && !st; i++) s += l[i];
    free(l);
    *loss = s / rows;
    return st;
}

trt_status gpt_grad_norm(gpt_model *m, double *norm) {
    float s;
    trt_status st = trt_read(m->dev, m->sumsq, 0, &s, sizeof s);
    *norm = sqrt((double)s);
    return st;
}
