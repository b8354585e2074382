/* test_runtime_devices_attention_bwd.c - the device tests of
 * stdlib/attention_bwd.tile, flash attention's backward (issue 20): its
 * three kernels (delta = rowsum(dO o O), then dK and dV, then dQ) run in
 * order on random q, k, v and dO (q in [-4, 4], the others in [-1, 1]),
 * with O and lse from a float64 forward on the host (O rounded to the
 * storage type, lse to f32, as the forward writes them) or, in two cases,
 * from the forward kernel (what the backward reads is what the forward
 * writes, lse -inf included), the outputs poisoned (NaN) before the run,
 * and compared with the float64 gradient of the float64 reference;
 * elements outside the outputs' rows (padding, masked tails) must keep
 * their poison. Cases: N = 1, 17, 67 (a prime above the block), Nq !=
 * Nkv, head dims 32, 64 and 128, causal or not, sliding windows (one
 * leaving rows no key: lse -inf, zero gradients), grouped-query and
 * multi-query heads, batches padded to the longest and packed (varlen)
 * with sequences of length 0 and 1, f16 and bf16, padded rows with the
 * gradients and delta in layouts of their own, and each kernel at the
 * configuration for its head dim (bwd_config) and at others.
 *
 * Tolerance. Each gradient is a sum of products whose kernel's factors are
 * rounded to the storage type once or twice (p and dS before their dots;
 * O before delta = rowsum(dO o O); the result), so the error is bounded by
 * a few units u of the storage's roundoff (2^-11 for f16, 2^-8 for bf16)
 * times the sum of the terms' magnitudes, which the reference computes
 * beside each gradient (for dQ: scale sum_j p_ij (|dO_i|.|v_j| + |dO_i|.
 * sum_l p_il |v_l|) |k_jd|, the second term bounding delta's error from
 * O's, which is relative to the magnitude of O's terms when the forward
 * kernel computed it): |err| <= 8 u mag + n s, where n is the number
 * of terms (keys for dQ, rows of the grouped heads for dK and dV) and s =
 * 2^-22 for f16 (p and dS below 2^-14 round to f16's subnormals, spaced
 * 2^-24, times a factor up to 4 (q), with room) and 0 for bf16 (f32's
 * exponent range). delta, in f32 from the stored O: 2e-5 sum_d |dO o O|.
 *
 * The reference itself is checked first (test_reference_gradient): at a
 * tiny size its gradients against central differences of the float64 loss
 * sum(dO o O), with masks, a row that sees no key, and grouped heads. */
#include <math.h>

#include "device_harness.h"

/* Uniform in [-1, 1], as the forward's test (scores of a few units). */
static float unit_rand(void) { return (float)(rand() % 2001 - 1000) / 1000.0f; }

typedef struct attn_mask {
    bool causal, window;
    int left, right;
} attn_mask;

/* Whether query row i sees key j of a sequence of n_kv keys. */
static bool sees(const attn_mask *mk, int i, int j, int n_kv) {
    return j < n_kv && (!mk->causal || j <= i) && (!mk->window || (j >= i - mk->left && j <= i + mk->right));
}

/* One query head's attention in float64, forward and backward: q and dO
 * are lq x D, k and v lk x D, row-major. Writes o (lq x D), lse (lq),
 * delta (lq), dq (lq x D), and adds this head's part to dk and dv (lk x
 * D: grouped heads sum there); with mq non-NULL also the magnitudes of
 * the sums (mq as dq, mk and mv added to as dk and dv). */
static void ref_head(const attn_mask *mask, int lq, int lk, int D, double scale, const double *q, const double *k,
                     const double *v, const double *dout, double *o, double *lse, double *delta, double *dq, double *dk,
                     double *dv, double *mq, double *mk, double *mv) {
    double *p = calloc((size_t)lk + 1, sizeof(double)), *dp = calloc((size_t)lk + 1, sizeof(double));
    double *adp = calloc((size_t)lk + 1, sizeof(double));
    for (int i = 0; i < lq; i++) {
        const double *qi = q + (size_t)i * D, *gi = dout + (size_t)i * D;
        double m = -INFINITY, l = 0;
        for (int j = 0; j < lk; j++) {
            if (!sees(mask, i, j, lk)) continue;
            double s = 0;
            for (int d = 0; d < D; d++) s += qi[d] * k[(size_t)j * D + d];
            p[j] = s * scale;
            m = p[j] > m ? p[j] : m;
        }
        for (int j = 0; j < lk; j++)
            if (sees(mask, i, j, lk)) l += exp(p[j] - m);
        for (int j = 0; j < lk; j++) p[j] = sees(mask, i, j, lk) ? exp(p[j] - m) / l : 0;
        lse[i] = l > 0 ? m + log(l) : -INFINITY;
        /* adl bounds delta's error from an O rounded, or computed by the
         * forward kernel, with an error relative to its terms' magnitude */
        double dl = 0, adl = 0;
        for (int d = 0; d < D; d++) {
            double od = 0, aod = 0;
            for (int j = 0; j < lk; j++) od += p[j] * v[(size_t)j * D + d], aod += p[j] * fabs(v[(size_t)j * D + d]);
            o[(size_t)i * D + d] = od;
            dl += gi[d] * od, adl += fabs(gi[d]) * aod;
        }
        delta[i] = dl;
        for (int j = 0; j < lk; j++) {
            double s = 0, a = 0;
            for (int d = 0; d < D; d++) s += gi[d] * v[(size_t)j * D + d], a += fabs(gi[d] * v[(size_t)j * D + d]);
            dp[j] = s, adp[j] = a;
        }
        for (int d = 0; d < D; d++) dq[(size_t)i * D + d] = 0;
        if (mq)
            for (int d = 0; d < D; d++) mq[(size_t)i * D + d] = 0;
        for (int j = 0; j < lk; j++) {
            if (p[j] == 0) continue;
            double ds = p[j] * (dp[j] - dl), ads = p[j] * (adp[j] + adl);
            for (int d = 0; d < D; d++) {
                size_t id = (size_t)i * D + d, jd = (size_t)j * D + d;
                dq[id] += scale * ds * k[jd];
                dk[jd] += scale * ds * qi[d];
                dv[jd] += p[j] * gi[d];
                if (mq) {
                    mq[id] += scale * ads * fabs(k[jd]);
                    mk[jd] += scale * ads * fabs(qi[d]);
                    mv[jd] += p[j] * fabs(gi[d]);
                }
            }
        }
    }
    free(p), free(dp), free(adp);
}

/* ---- the reference against central differences ------------------------ */

/* 5 queries, 4 keys, 4 query heads on 2 key/value heads */
enum { CD_Q = 5, CD_K = 4, CD_D = 3, CD_HEADS = 4, CD_GROUP = 2 };

/* The loss sum(dO o O) over the heads, in float64. */
static double cd_loss(const attn_mask *mask, double scale, const double *q, const double *k, const double *v,
                      const double *dout) {
    double o[CD_Q * CD_D], lse[CD_Q], delta[CD_Q], dq[CD_Q * CD_D], dk[CD_K * CD_D], dv[CD_K * CD_D], loss = 0;
    for (int h = 0; h < CD_HEADS; h++) {
        const double *kh = k + (h / CD_GROUP) * CD_K * CD_D, *vh = v + (h / CD_GROUP) * CD_K * CD_D;
        ref_head(mask, CD_Q, CD_K, CD_D, scale, q + h * CD_Q * CD_D, kh, vh, dout + h * CD_Q * CD_D, o, lse, delta, dq,
                 dk, dv, NULL, NULL, NULL);
        for (int i = 0; i < CD_Q * CD_D; i++) loss += dout[h * CD_Q * CD_D + i] * o[i];
    }
    return loss;
}

/* The reference's gradients (dq; dk and dv summed over the grouped heads)
 * against central differences of its loss, at h = 1e-5: truncation
 * (h^2 times a third derivative of a few units) and cancellation (2^-53
 * |loss| / h) are both far under the 1e-7 allowed. */
static void test_reference_gradient(void **state) {
    (void)state;
    /* plain; causal; a window (left 0, right 1) under which row 4 sees no key */
    const attn_mask masks[] = {{0}, {.causal = true}, {.window = true, .left = 0, .right = 1}};
    enum { NQ = CD_HEADS * CD_Q * CD_D, NK = CD_HEADS / CD_GROUP * CD_K * CD_D };
    for (size_t t = 0; t < sizeof masks / sizeof masks[0]; t++) {
        const attn_mask *mask = &masks[t];
        double q[NQ], k[NK], v[NK], g[NQ], dq[NQ], dk[NK] = {0}, dv[NK] = {0};
        double o[CD_Q * CD_D], lse[CD_Q], delta[CD_Q], scale = 0.7;
        for (int i = 0; i < NQ; i++) q[i] = 2 * unit_rand(), g[i] = unit_rand();
        for (int i = 0; i < NK; i++) k[i] = unit_rand(), v[i] = unit_rand();
        for (int h = 0; h < CD_HEADS; h++) {
            int kvh = h / CD_GROUP;
            ref_head(mask, CD_Q, CD_K, CD_D, scale, q + h * CD_Q * CD_D, k + kvh * CD_K * CD_D, v + kvh * CD_K * CD_D,
                     g + h * CD_Q * CD_D, o, lse, delta, dq + h * CD_Q * CD_D, dk + kvh * CD_K * CD_D,
                     dv + kvh * CD_K * CD_D, NULL, NULL, NULL);
            if (mask->window && lse[CD_Q - 1] != -INFINITY) fail_msg("reference: the last row should see no key");
        }
        const double eps = 1e-5;
        struct {
            const char *name;
            double *x, *grad;
            int n;
        } wrt[] = {{"q", q, dq, NQ}, {"k", k, dk, NK}, {"v", v, dv, NK}};
        for (size_t w = 0; w < 3; w++)
            for (int i = 0; i < wrt[w].n; i++) {
                double x = wrt[w].x[i];
                wrt[w].x[i] = x + eps;
                double up = cd_loss(mask, scale, q, k, v, g);
                wrt[w].x[i] = x - eps;
                double down = cd_loss(mask, scale, q, k, v, g);
                wrt[w].x[i] = x;
                double num = (up - down) / (2 * eps), got = wrt[w].grad[i];
                if (!(isfinite(got) && fabs(num - got) <= 1e-7 * (1 + fabs(num))))
                    fail_msg("reference gradient d%s[%d] = %.12g, central differences %.12g (mask %zu)", wrt[w].name, i,
                             got, num, t);
            }
    }
}

/* ---- the device cases ------------------------------------------------- */

typedef struct bwd_case {
    const dtype *dt;
    int heads, q_per_kv, n_q, n_kv;
    attn_mask mask;
    int batch;         /* 0: one batch; else batches of lengths lens_q, lens_kv */
    bool varlen;       /* the batches packed along the rows (cu_q, cu_k) */
    int lens_q[3], lens_kv[3];
    int d;             /* head dim (0: 64) */
    int block_m, block_n, warps; /* for dK/dV and dQ; 0: bwd_config's */
    int pad;           /* elements after each row's D; with pad, the gradients (batch, head, row, d) */
    bool forward;      /* O and lse from the forward kernel (stdlib/attention.tile), not the host */
    bool aligned;      /* ALIGNED: every stride promised a multiple of 8 elements (true of the cases given it) */
} bwd_case;

/* The configurations the backward runs at by head dim (BLOCK_M, BLOCK_N,
 * num_warps per kernel: the pre-pass, dK/dV, dQ): the largest blocks at
 * which ptxas spills nothing, or a few dozen bytes, on sm_80 and sm_90
 * (the report of the commit that set them). The C entry point's table
 * (runtime/stdlib_attention.c's attention_bwd_configs) takes these but
 * for dK/dV at head dim 128 on sm_80, the CPU and the emulator, 16 x 64
 * (32 x 64 spills 8 bytes there), and for sm_86 and sm_89 2 stages where
 * 3 do not fit; test_stdlib_attention.c runs its rows. */
typedef struct bwd_cfg {
    int block_m, block_n, warps;
} bwd_cfg;

static bwd_cfg bwd_config(int pass, int D) {
    static const bwd_cfg pre = {64, 64, 4}, dkdv[4] = {{64, 64, 8}, {64, 64, 8}, {32, 64, 8}, {16, 16, 8}},
                         dq[4] = {{64, 64, 4}, {64, 64, 4}, {64, 32, 8}, {32, 16, 8}};
    int i = D <= 32 ? 0 : D <= 64 ? 1 : D <= 128 ? 2 : 3;
    return pass == 0 ? pre : pass == 1 ? dkdv[i] : dq[i];
}

/* Where a tensor's (batch, head, row) lies: FlashAttention's (batch, row,
 * head, d) layout, or (batch, head, row, d) with bhrd; rows of D + pad
 * elements; with varlen one batch of all the packed rows. */
typedef struct layout {
    int64_t sb, sh, sm;
    size_t n;
} layout;

static layout make_layout(bool bhrd, int nb, int rows, int heads, int D, int pad) {
    layout l;
    if (bhrd) l.sm = D + pad, l.sh = (int64_t)rows * l.sm, l.sb = heads * l.sh;
    else l.sh = D + pad, l.sm = (int64_t)heads * l.sh, l.sb = rows * l.sm;
    l.n = (size_t)nb * (size_t)l.sb;
    return l;
}

/* The offset of (batch b, head h, row r) in layout l (with varlen, rows
 * from row0 = cu[b] on). */
static size_t at(const layout *l, bool varlen, int b, int row0, int h, int r) {
    return varlen ? (size_t)h * (size_t)l->sh + (size_t)(row0 + r) * (size_t)l->sm
                  : (size_t)b * (size_t)l->sb + (size_t)h * (size_t)l->sh + (size_t)r * (size_t)l->sm;
}

static void *alloc_poison(size_t bytes) {
    void *p = malloc(bytes);
    memset(p, 0xff, bytes); /* NaN in f16, bf16 and f32 */
    return p;
}

static bool is_poison(const void *p, size_t i, size_t es) {
    const unsigned char *c = (const unsigned char *)p + i * es;
    for (size_t b = 0; b < es; b++)
        if (c[b] != 0xff) return false;
    return true;
}

static void run_backward(const bwd_case *t) {
    const dtype *dt = t->dt;
    const int D = t->d ? t->d : 64;
    const int kv_heads = t->heads / t->q_per_kv, nb = t->batch ? t->batch : 1, lnb = t->varlen ? 1 : nb;
    int cu_q[4] = {0}, cu_k[4] = {0}, max_q = 0, max_kv = 0;
    for (int b = 0; b < nb; b++) {
        int lq = t->batch ? t->lens_q[b] : t->n_q, lk = t->batch ? t->lens_kv[b] : t->n_kv;
        cu_q[b + 1] = cu_q[b] + lq, cu_k[b + 1] = cu_k[b] + lk;
        max_q = lq > max_q ? lq : max_q, max_kv = lk > max_kv ? lk : max_kv;
    }
    int rows_q = t->varlen ? cu_q[nb] : max_q, rows_kv = t->varlen ? cu_k[nb] : max_kv;
    /* q, dO and O; k and v; dq; dk and dv */
    layout lq_ = make_layout(false, lnb, rows_q, t->heads, D, t->pad);
    layout lk_ = make_layout(false, lnb, rows_kv, kv_heads, D, t->pad);
    layout lgq = make_layout(t->pad, lnb, rows_q, t->heads, D, t->pad);
    layout lgk = make_layout(t->pad, lnb, rows_kv, kv_heads, D, t->pad);
    /* lse [batch, heads, rows]; delta the same with a gap after each head's rows when padded */
    int64_t slh = rows_q, slb = (int64_t)t->heads * slh, sdh = rows_q + t->pad, sdb = (int64_t)t->heads * sdh;
    size_t nl = (size_t)lnb * (size_t)slb, nd = (size_t)lnb * (size_t)sdb, es = dt->size;
    void *hq = alloc_poison(es * lq_.n), *hk = alloc_poison(es * lk_.n), *hv = alloc_poison(es * lk_.n);
    void *hdo = alloc_poison(es * lq_.n), *ho = alloc_poison(es * lq_.n), *hdq = alloc_poison(es * lgq.n);
    void *hdk = alloc_poison(es * lgk.n), *hdv = alloc_poison(es * lgk.n);
    float *lse = poison_f32s((int)nl), *delta = alloc_poison(sizeof(float) * nd);
    for (int b = 0; b < nb; b++) {
        int lq = cu_q[b + 1] - cu_q[b], lk = cu_k[b + 1] - cu_k[b];
        if (!t->varlen) lq = max_q, lk = max_kv; /* padded batches: all rows are data */
        for (int h = 0; h < t->heads; h++)
            for (int i = 0; i < lq; i++) {
                size_t e = at(&lq_, t->varlen, b, cu_q[b], h, i);
                for (int d = 0; d < D; d++) dt->put(hq, e + d, 4 * unit_rand()), dt->put(hdo, e + d, unit_rand());
            }
        for (int h = 0; h < kv_heads; h++)
            for (int j = 0; j < lk; j++) {
                size_t e = at(&lk_, t->varlen, b, cu_k[b], h, j);
                for (int d = 0; d < D; d++) dt->put(hk, e + d, unit_rand()), dt->put(hv, e + d, unit_rand());
            }
    }
    /* the reference, per (batch, head): O and lse go to the kernels */
    size_t nref = (size_t)nb * t->heads * max_q * D, nrefk = (size_t)nb * kv_heads * max_kv * D;
    double *rdq = calloc(nref + 1, sizeof(double)), *rmq = calloc(nref + 1, sizeof(double));
    double *rdk = calloc(nrefk + 1, sizeof(double)), *rmk = calloc(nrefk + 1, sizeof(double));
    double *rdv = calloc(nrefk + 1, sizeof(double)), *rmv = calloc(nrefk + 1, sizeof(double));
    double *ro = malloc(sizeof(double) * ((size_t)max_q * D + 1)), *rlse = malloc(sizeof(double) * (max_q + 1));
    double *rdelta = malloc(sizeof(double) * (max_q + 1));
    size_t xqn = (size_t)max_q * D + 1, xkn = (size_t)max_kv * D + 1;
    double *xq = malloc(sizeof(double) * xqn), *xg = malloc(sizeof(double) * xqn);
    double *xk = malloc(sizeof(double) * xkn), *xv = malloc(sizeof(double) * xkn);
    double scale = 1 / sqrt((double)D);
    for (int b = 0; b < nb; b++) {
        int lq = t->varlen ? cu_q[b + 1] - cu_q[b] : max_q, lk = t->varlen ? cu_k[b + 1] - cu_k[b] : max_kv;
        for (int h = 0; h < t->heads; h++) {
            int kvh = h / t->q_per_kv;
            for (int i = 0; i < lq; i++) {
                size_t e = at(&lq_, t->varlen, b, cu_q[b], h, i);
                for (int d = 0; d < D; d++) xq[i * D + d] = dt->get(hq, e + d), xg[i * D + d] = dt->get(hdo, e + d);
            }
            for (int j = 0; j < lk; j++) {
                size_t e = at(&lk_, t->varlen, b, cu_k[b], kvh, j);
                for (int d = 0; d < D; d++) xk[j * D + d] = dt->get(hk, e + d), xv[j * D + d] = dt->get(hv, e + d);
            }
            size_t qb = ((size_t)b * t->heads + h) * max_q * D, kb = ((size_t)b * kv_heads + kvh) * max_kv * D;
            ref_head(&t->mask, lq, lk, D, scale, xq, xk, xv, xg, ro, rlse, rdelta, rdq + qb, rdk + kb, rdv + kb,
                     rmq + qb, rmk + kb, rmv + kb);
            for (int i = 0; i < lq; i++) {
                size_t e = at(&lq_, t->varlen, b, cu_q[b], h, i);
                for (int d = 0; d < D; d++) dt->put(ho, e + d, (float)ro[i * D + d]);
                size_t li = t->varlen ? (size_t)h * slh + (size_t)cu_q[b] + i : (size_t)b * slb + (size_t)h * slh + i;
                lse[li] = (float)rlse[i];
            }
        }
    }
    if (t->forward) {
        /* the forward kernel's O and lse, as a caller of both passes has them */
        void *fo = alloc_poison(es * lq_.n);
        float *fl = alloc_poison(sizeof(float) * nl);
        trt_buffer fq = upload(hq, es * lq_.n), fk = upload(hk, es * lk_.n), fv = upload(hv, es * lk_.n),
                   fob = upload(fo, es * lq_.n), flb = upload(fl, sizeof(float) * nl), fcq = upload(cu_q, sizeof cu_q),
                   fck = upload(cu_k, sizeof cu_k);
        trt_arg fargs[] = {trt_buf(fq), trt_buf(fk), trt_buf(fv), trt_buf(fob), trt_buf(flb), trt_buf(fcq), trt_buf(fck),
                           trt_int(max_q), trt_int(max_kv), trt_int(t->q_per_kv),
                           trt_int(lq_.sb), trt_int(lq_.sh), trt_int(lq_.sm), trt_int(lk_.sb), trt_int(lk_.sh),
                           trt_int(lk_.sm), trt_int(lk_.sb), trt_int(lk_.sh), trt_int(lk_.sm), trt_int(lq_.sb),
                           trt_int(lq_.sh), trt_int(lq_.sm), trt_int(slb), trt_int(slh), trt_float(scale),
                           trt_int(t->mask.left), trt_int(t->mask.right)};
        tilec_define fdefs[] = {{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"CAUSAL", t->mask.causal},
                                {"WINDOW", t->mask.window}, {"VARLEN", t->varlen}, {"HEAD_DIM", D}};
        char name[64];
        snprintf(name, sizeof name, "attention_fwd_%s", dt->name);
        prog p;
        trt_kernel *kern = compile_file_with(&p, "stdlib/attention.tile", name, fdefs, sizeof fdefs / sizeof fdefs[0],
                                             D > 64 ? 8 : 4); /* as its test: 4 warps spill at 128 */
        launch(kern, cdiv(max_q, 64), (uint32_t)t->heads, (uint32_t)nb, fargs, sizeof fargs / sizeof fargs[0]);
        drop(&p);
        download(fob, ho, es * lq_.n);
        download(flb, lse, sizeof(float) * nl);
        trt_buffer fbufs[] = {fq, fk, fv, fcq, fck};
        for (size_t i = 0; i < sizeof fbufs / sizeof fbufs[0]; i++) OK(trt_free(dev, fbufs[i]));
        free(fo), free(fl);
    }
    trt_buffer bq = upload(hq, es * lq_.n), bk = upload(hk, es * lk_.n), bv = upload(hv, es * lk_.n),
               bo = upload(ho, es * lq_.n), bdo = upload(hdo, es * lq_.n), bl = upload(lse, sizeof(float) * nl),
               be = upload(delta, sizeof(float) * nd), bdq = upload(hdq, es * lgq.n), bdk = upload(hdk, es * lgk.n),
               bdv = upload(hdv, es * lgk.n), bcq = upload(cu_q, sizeof cu_q), bck = upload(cu_k, sizeof cu_k);
#define STRIDES(l) trt_int((l).sb), trt_int((l).sh), trt_int((l).sm)
    trt_arg args[] = {trt_buf(bq), trt_buf(bk), trt_buf(bv), trt_buf(bo), trt_buf(bdo), trt_buf(bl), trt_buf(be),
                      trt_buf(bdq), trt_buf(bdk), trt_buf(bdv), trt_buf(bcq), trt_buf(bck),
                      trt_int(max_q), trt_int(max_kv), trt_int(t->q_per_kv),
                      /* q, k, v, O, dO, dq, dk, dv */
                      STRIDES(lq_), STRIDES(lk_), STRIDES(lk_), STRIDES(lq_), STRIDES(lq_), STRIDES(lgq), STRIDES(lgk),
                      STRIDES(lgk), trt_int(slb), trt_int(slh), trt_int(sdb), trt_int(sdh),
                      trt_float(scale), trt_int(t->mask.left), trt_int(t->mask.right)};
#undef STRIDES
    const char *pass[3] = {"pre", "dkdv", "dq"};
    for (int k = 0; k < 3; k++) {
        bwd_cfg c = bwd_config(k, D);
        if (k > 0 && t->block_m) c.block_m = t->block_m;
        if (k > 0 && t->block_n) c.block_n = t->block_n;
        if (k > 0 && t->warps) c.warps = t->warps;
        tilec_define defs[] = {{"BLOCK_M", c.block_m}, {"BLOCK_N", c.block_n}, {"CAUSAL", t->mask.causal},
                               {"WINDOW", t->mask.window}, {"VARLEN", t->varlen}, {"HEAD_DIM", D},
                               {"ALIGNED", t->aligned}};
        char name[64];
        snprintf(name, sizeof name, "attention_bwd_%s_%s", pass[k], dt->name);
        prog p;
        trt_kernel *kern = compile_file_with(&p, "stdlib/attention_bwd.tile", name, defs, sizeof defs / sizeof defs[0],
                                             c.warps);
        size_t nargs = sizeof args / sizeof args[0];
        if (k == 1) launch(kern, cdiv(max_kv, c.block_n), (uint32_t)kv_heads, (uint32_t)nb, args, nargs); /* keys */
        else launch(kern, cdiv(max_q, c.block_m), (uint32_t)t->heads, (uint32_t)nb, args, nargs);        /* queries */
        drop(&p);
    }
    download(be, delta, sizeof(float) * nd);
    download(bdq, hdq, es * lgq.n);
    download(bdk, hdk, es * lgk.n);
    download(bdv, hdv, es * lgk.n);
    trt_buffer bufs[] = {bq, bk, bv, bo, bdo, bl, bcq, bck}; /* download freed the others */
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) OK(trt_free(dev, bufs[i]));

    bool bf = !strcmp(dt->name, "bf16");
    double tol = 8 * (bf ? 0x1p-8 : 0x1p-11), sub = bf ? 0 : 0x1p-22;
    char what[160];
    snprintf(what, sizeof what,
             "attention bwd %s%s%s%s d=%d n_q=%d n_kv=%d heads=%d/%d batches=%d pad=%d blocks %dx%d w%d (0: table)",
             dt->name, t->mask.causal ? " causal" : "", t->mask.window ? " window" : "", t->varlen ? " varlen" : "", D,
             max_q, max_kv, t->heads, kv_heads, nb, t->pad, t->block_m, t->block_n, t->warps);
    /* what the kernels wrote must be where the rows are, nothing else */
    bool *wq = calloc(lgq.n + 1, 1), *wk = calloc(lgk.n + 1, 1), *we = calloc(nd + 1, 1);
    for (int b = 0; b < nb; b++) {
        int lq = t->varlen ? cu_q[b + 1] - cu_q[b] : max_q, lk = t->varlen ? cu_k[b + 1] - cu_k[b] : max_kv;
        for (int h = 0; h < t->heads; h++)
            for (int i = 0; i < lq; i++) {
                double abs_q = lk * sub; /* see the tolerance above */
                size_t ei = t->varlen ? (size_t)h * sdh + (size_t)cu_q[b] + i : (size_t)b * sdb + (size_t)h * sdh + i;
                size_t r = ((size_t)b * t->heads + h) * max_q + i;
                double dl = 0, adl = 0; /* delta against the stored O, which the kernel reads */
                for (int d = 0; d < D; d++) {
                    size_t e = at(&lq_, t->varlen, b, cu_q[b], h, i) + d;
                    double x = (double)dt->get(hdo, e) * dt->get(ho, e);
                    dl += x, adl += fabs(x);
                }
                we[ei] = true;
                if (!(fabs(delta[ei] - dl) <= 2e-5 * adl + 1e-30))
                    fail_msg("%s: delta[%d][%d][%d] = %g, want %g on %s", what, b, h, i, (double)delta[ei], dl,
                             trt_device_name(dev));
                for (int d = 0; d < D; d++) {
                    size_t e = at(&lgq, t->varlen, b, cu_q[b], h, i) + d;
                    double got = dt->get(hdq, e), want = rdq[r * D + d], mag = rmq[r * D + d];
                    wq[e] = true;
                    if (!(fabs(got - want) <= tol * mag + abs_q))
                        fail_msg("%s: dq[%d][%d][%d][%d] = %g, want %g (terms' magnitude %g) on %s", what, b, h,
                                 i, d, got, want, mag, trt_device_name(dev));
                }
            }
        double abs_k = (double)lq * t->q_per_kv * sub;
        for (int h = 0; h < kv_heads; h++)
            for (int j = 0; j < lk; j++)
                for (int d = 0; d < D; d++) {
                    size_t e = at(&lgk, t->varlen, b, cu_k[b], h, j) + d;
                    size_t r = (((size_t)b * kv_heads + h) * max_kv + j) * D + d;
                    wk[e] = true;
                    double gk = dt->get(hdk, e), gv = dt->get(hdv, e);
                    if (!(fabs(gk - rdk[r]) <= tol * rmk[r] + abs_k))
                        fail_msg("%s: dk[%d][%d][%d][%d] = %g, want %g (terms' magnitude %g) on %s", what, b, h,
                                 j, d, gk, rdk[r], rmk[r], trt_device_name(dev));
                    if (!(fabs(gv - rdv[r]) <= tol * rmv[r] + abs_k))
                        fail_msg("%s: dv[%d][%d][%d][%d] = %g, want %g (terms' magnitude %g) on %s", what, b, h,
                                 j, d, gv, rdv[r], rmv[r], trt_device_name(dev));
                }
    }
    for (size_t i = 0; i < lgq.n; i++)
        if (!wq[i] && !is_poison(hdq, i, es)) fail_msg("%s: dq element %zu, outside the rows, was written", what, i);
    for (size_t i = 0; i < lgk.n; i++)
        if (!wk[i] && !(is_poison(hdk, i, es) && is_poison(hdv, i, es)))
            fail_msg("%s: dk or dv element %zu, outside the rows, was written", what, i);
    for (size_t i = 0; i < nd; i++)
        if (!we[i] && !is_poison(delta, i, sizeof(float)))
            fail_msg("%s: delta element %zu, outside the rows, was written", what, i);
    free(wq), free(wk), free(we);
    free(rdq), free(rmq), free(rdk), free(rmk), free(rdv), free(rmv), free(ro), free(rlse), free(rdelta);
    free(xq), free(xg), free(xk), free(xv);
    free(hq), free(hk), free(hv), free(hdo), free(ho), free(hdq), free(hdk), free(hdv), free(lse), free(delta);
}

static void test_backward(void **state) {
    (void)state;
    const dtype *f16 = &dtypes[1], *bf16 = &dtypes[2];
    const attn_mask causal = {.causal = true};
    const bwd_case cases[] = {
        /* N = 1; 17; a prime above the block */
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 1, .n_kv = 1},
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 17, .n_kv = 17, .mask = causal},
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 67, .n_kv = 67},
        /* Nq != Nkv, both ways, causal too */
        {.dt = f16, .heads = 3, .q_per_kv = 1, .n_q = 100, .n_kv = 77},
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 45, .n_kv = 131, .mask = causal},
        {.dt = bf16, .heads = 2, .q_per_kv = 1, .n_q = 67, .n_kv = 100},
        {.dt = bf16, .heads = 2, .q_per_kv = 1, .n_q = 100, .n_kv = 67, .mask = causal},
        /* grouped-query (2 query heads a kv head) and multi-query heads */
        {.dt = f16, .heads = 4, .q_per_kv = 2, .n_q = 70, .n_kv = 90},
        {.dt = f16, .heads = 4, .q_per_kv = 4, .n_q = 70, .n_kv = 90, .mask = causal},
        /* sliding windows; one past the keys: rows from 60 on see none */
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 100, .n_kv = 90,
         .mask = {.window = true, .left = 40, .right = 9}},
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 100, .n_kv = 40,
         .mask = {.window = true, .left = 20, .right = 5}},
        {.dt = bf16, .heads = 4, .q_per_kv = 2, .n_q = 100, .n_kv = 90,
         .mask = {.causal = true, .window = true, .left = 30}},
        /* batches padded to the longest; packed ones with sequences of length 0 and 1: queries without keys
         * (dq 0), keys without queries (dk, dv 0) */
        {.dt = f16, .heads = 2, .q_per_kv = 1, .batch = 2, .lens_q = {70, 33}, .lens_kv = {40, 65}},
        {.dt = f16, .heads = 2, .q_per_kv = 1, .batch = 2, .mask = causal, .lens_q = {70, 33}, .lens_kv = {40, 65},
         .pad = 8, .aligned = true},
        {.dt = f16, .heads = 4, .q_per_kv = 2, .batch = 3, .varlen = true, .lens_q = {1, 0, 70}, .lens_kv = {1, 0, 45}},
        {.dt = bf16, .heads = 2, .q_per_kv = 1, .batch = 3, .varlen = true, .mask = causal, .lens_q = {20, 5, 0},
         .lens_kv = {70, 0, 30}},
        /* head dims 32, 128 and 256 */
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 67, .n_kv = 50, .mask = causal, .d = 32},
        {.dt = bf16, .heads = 2, .q_per_kv = 1, .n_q = 67, .n_kv = 50, .d = 128},
        {.dt = f16, .heads = 4, .q_per_kv = 2, .n_q = 100, .n_kv = 67, .mask = causal, .d = 128},
        {.dt = bf16, .heads = 2, .q_per_kv = 2, .n_q = 37, .n_kv = 50, .mask = causal, .d = 256},
        /* blocks and warps of their own (the query walk of a causal dK/dV starts mid query block), 4 warps */
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 100, .n_kv = 100, .mask = causal, .block_m = 32, .block_n = 64},
        {.dt = f16, .heads = 2, .q_per_kv = 1, .n_q = 100, .n_kv = 100, .mask = causal, .block_m = 64, .block_n = 32,
         .warps = 4},
        {.dt = bf16, .heads = 2, .q_per_kv = 1, .n_q = 67, .n_kv = 90,
         .mask = {.window = true, .left = 10, .right = 20}, .warps = 4},
        /* O and lse from the forward kernel: what the backward reads is what the forward writes (rows 90 on
         * of the first batch see no key: lse -inf) */
        {.dt = f16, .heads = 4, .q_per_kv = 2, .batch = 2, .varlen = true, .lens_q = {100, 30}, .lens_kv = {70, 40},
         .mask = {.window = true, .left = 20, .right = 3}, .forward = true},
        {.dt = bf16, .heads = 2, .q_per_kv = 1, .n_q = 67, .n_kv = 100, .mask = causal, .d = 128, .pad = 8,
         .forward = true},
        /* padded rows; the gradients and delta in layouts of their own */
        {.dt = f16, .heads = 4, .q_per_kv = 2, .n_q = 67, .n_kv = 50, .mask = causal, .pad = 8, .aligned = true},
        {.dt = bf16, .heads = 2, .q_per_kv = 1, .batch = 2, .varlen = true, .lens_q = {30, 17}, .lens_kv = {17, 40},
         .pad = 24, .aligned = true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_backward(&cases[i]);
}

HARNESS_MAIN(cmocka_unit_test(test_reference_gradient), cmocka_unit_test(test_backward))
