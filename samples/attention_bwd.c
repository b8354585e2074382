/* attention_bwd - flash attention's backward through the stdlib's C entry
 * points: tls_attention_fwd for o and lse, then tls_attention_bwd for dq,
 * dk and dv given d_o (the loss's gradient with respect to o), through a
 * workspace the caller allocates (include/tilec_stdlib.h). Causal,
 * grouped-query (4 query heads over 2 key/value heads), bf16 tensors in
 * FlashAttention's (batch, row, head, d) layout, no copies.
 *
 *   usage: attention_bwd [cpu|cuda|auto]
 * Each gradient is checked against the float64 gradient of a float64
 * softmax of the same bf16 inputs, by its relative error in the 2-norm;
 * exit status 0 when all match. docs/stdlib.md shows this file whole
 * (tests/docs-examples.sh keeps the two the same). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec_stdlib.h"

enum { B = 2, N = 60, H = 4, HKV = 2, D = 64, NQ = B * N * H * D, NK = B * N * HKV * D };

static uint16_t to_bf16(float f) { /* round to nearest even */
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
static float from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static float uniform(void) { return (float)(rand() % 2001 - 1000) / 1000.0f; }

/* element d of row i of head h of batch b, in a tensor of `heads` heads */
static size_t at(int b, int i, int heads, int h, int d) { return (((size_t)b * N + i) * heads + h) * D + d; }

/* the 2-norm of got - want over that of want */
static double rel_error(const uint16_t *got, const double *want, size_t n) {
    double err = 0, norm = 0;
    for (size_t i = 0; i < n; i++) err += pow(from_bf16(got[i]) - want[i], 2), norm += want[i] * want[i];
    return sqrt(err / norm);
}

int main(int argc, char **argv) {
    const char *kind = argc > 1 ? argv[1] : "auto";
    char why[512];
    trt_device *dev;
    if (trt_open(!strcmp(kind, "cpu") ? TRT_DEVICE_CPU : !strcmp(kind, "cuda") ? TRT_DEVICE_CUDA : TRT_DEVICE_AUTO,
                 &dev, why, sizeof why) != TRT_OK) {
        fprintf(stderr, "cannot open a device: %s\n", why);
        return 1;
    }
    static uint16_t q[NQ], k[NK], v[NK], d_o[NQ], dq[NQ], dk[NK], dv[NK];
    for (size_t i = 0; i < NQ; i++) q[i] = to_bf16(2 * uniform()), d_o[i] = to_bf16(uniform());
    for (size_t i = 0; i < NK; i++) k[i] = to_bf16(uniform()), v[i] = to_bf16(uniform());
    trt_buffer bq, bk, bv, bo, bdo, bl, bdq, bdk, bdv, bws;
    if (trt_alloc(dev, sizeof q, &bq) || trt_alloc(dev, sizeof k, &bk) || trt_alloc(dev, sizeof v, &bv) ||
        trt_alloc(dev, sizeof q, &bo) || trt_alloc(dev, sizeof d_o, &bdo) ||
        trt_alloc(dev, sizeof(float) * B * H * N, &bl) || trt_alloc(dev, sizeof dq, &bdq) ||
        trt_alloc(dev, sizeof dk, &bdk) || trt_alloc(dev, sizeof dv, &bdv) || trt_write(dev, bq, 0, q, sizeof q) ||
        trt_write(dev, bk, 0, k, sizeof k) || trt_write(dev, bv, 0, v, sizeof v) ||
        trt_write(dev, bdo, 0, d_o, sizeof d_o)) {
        fprintf(stderr, "%s\n", trt_last_error(dev));
        return 1;
    }

    tls_attention_problem p = {.batch = B, .heads = H, .kv_heads = HKV, .n_q = N, .n_kv = N, .head_dim = D,
                               .causal = true}; /* scale 0: 1 / sqrt(D) */
    /* strides in elements: batch, head, row; the gradients in their inputs' layouts */
    tls_attention_tensor tq = {tls_mem_of(bq), N * H * D, D, H * D}, to = {tls_mem_of(bo), N * H * D, D, H * D},
                         tdo = {tls_mem_of(bdo), N * H * D, D, H * D}, tdq = {tls_mem_of(bdq), N * H * D, D, H * D},
                         tk = {tls_mem_of(bk), N * HKV * D, D, HKV * D}, tv = {tls_mem_of(bv), N * HKV * D, D, HKV * D},
                         tdk = {tls_mem_of(bdk), N * HKV * D, D, HKV * D},
                         tdv = {tls_mem_of(bdv), N * HKV * D, D, HKV * D},
                         tl = {tls_mem_of(bl), H * N, N, 1}; /* lse: f32 [batch, heads, N] */
    size_t ws_bytes; /* the backward's workspace: one f32 a query row and head */
    if (tls_attention_fwd(dev, TLS_BF16, &p, tq, tk, tv, to, tl, NULL) ||
        tls_attention_bwd_workspace(dev, &p, &ws_bytes) || trt_alloc(dev, ws_bytes, &bws) ||
        tls_attention_bwd(dev, TLS_BF16, &p, tq, tk, tv, to, tdo, tl, tdq, tdk, tdv, tls_mem_of(bws), NULL) ||
        trt_read(dev, bdq, 0, dq, sizeof dq) || trt_read(dev, bdk, 0, dk, sizeof dk) ||
        trt_read(dev, bdv, 0, dv, sizeof dv)) { /* the reads wait for the kernels */
        fprintf(stderr, "%s\n", trt_last_error(dev));
        return 1;
    }

    /* the float64 gradients: with p = softmax(s), dp = d_o . v^T, delta = rowsum(d_o o o) and
     * ds = p (dp - delta): dq = scale ds . k, dk = scale ds^T . q, dv = p^T . d_o (dk and dv summed
     * over the query heads of a key/value head) */
    static double rdq[NQ], rdk[NK], rdv[NK];
    double scale = 1 / sqrt(D), pr[N], dp[N];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++) {
                int g = h / (H / HKV);
                double m = -INFINITY, l = 0, delta = 0;
                for (int j = 0; j <= i; j++) { /* causal: keys up to the row */
                    double s = 0, t = 0;
                    for (int d = 0; d < D; d++) {
                        s += (double)from_bf16(q[at(b, i, H, h, d)]) * from_bf16(k[at(b, j, HKV, g, d)]);
                        t += (double)from_bf16(d_o[at(b, i, H, h, d)]) * from_bf16(v[at(b, j, HKV, g, d)]);
                    }
                    pr[j] = s * scale, dp[j] = t, m = fmax(m, pr[j]);
                }
                for (int j = 0; j <= i; j++) l += exp(pr[j] - m);
                for (int j = 0; j <= i; j++) pr[j] = exp(pr[j] - m) / l, delta += pr[j] * dp[j]; /* = d_o . o */
                for (int j = 0; j <= i; j++)
                    for (int d = 0; d < D; d++) {
                        double ds = pr[j] * (dp[j] - delta);
                        rdq[at(b, i, H, h, d)] += scale * ds * from_bf16(k[at(b, j, HKV, g, d)]);
                        rdk[at(b, j, HKV, g, d)] += scale * ds * from_bf16(q[at(b, i, H, h, d)]);
                        rdv[at(b, j, HKV, g, d)] += pr[j] * from_bf16(d_o[at(b, i, H, h, d)]);
                    }
            }
    /* bf16 keeps 8 bits (2^-8 = 0.4%); p, ds, o and the results are each rounded to it once */
    double eq = rel_error(dq, rdq, NQ), ek = rel_error(dk, rdk, NK), ev = rel_error(dv, rdv, NK), tol = 0.01;
    bool ok = eq <= tol && ek <= tol && ev <= tol;
    printf("attention backward bf16 causal, %d x %d rows, %d heads over %d, d %d, on %s: relative errors dq %.2g, "
           "dk %.2g, dv %.2g (at most %g): %s\n",
           B, N, H, HKV, D, trt_device_name(dev), eq, ek, ev, tol, ok ? "ok" : "WRONG");
    trt_close(dev); /* frees the buffers and the stdlib's modules */
    return ok ? 0 : 1;
}
