/* attention - flash attention's forward through the stdlib's C entry point
 * (tls_attention_fwd, include/tilec_stdlib.h): causal, grouped-query (8
 * query heads over 2 key/value heads), bf16 tensors in FlashAttention's
 * (batch, row, head, d) layout, no copies.
 *
 *   usage: attention [cpu|cuda|auto]
 * o is checked against a double-precision softmax of the same bf16
 * inputs; exit status 0 when it matches. docs/stdlib.md shows this file
 * whole (tests/docs-examples.sh keeps the two the same). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec_stdlib.h"

enum { B = 2, N = 100, H = 8, HKV = 2, D = 64 };

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

int main(int argc, char **argv) {
    const char *kind = argc > 1 ? argv[1] : "auto";
    char why[512];
    trt_device *dev;
    if (trt_open(!strcmp(kind, "cpu") ? TRT_DEVICE_CPU : !strcmp(kind, "cuda") ? TRT_DEVICE_CUDA : TRT_DEVICE_AUTO,
                 &dev, why, sizeof why) != TRT_OK) {
        fprintf(stderr, "cannot open a device: %s\n", why);
        return 1;
    }
    /* row i of head h of batch b at ((b * N + i) * heads + h) * D elements */
    static uint16_t q[B * N * H * D], k[B * N * HKV * D], v[B * N * HKV * D], o[B * N * H * D];
    for (size_t i = 0; i < B * N * H * D; i++) q[i] = to_bf16(2 * uniform());
    for (size_t i = 0; i < B * N * HKV * D; i++) k[i] = to_bf16(uniform()), v[i] = to_bf16(uniform());
    trt_buffer bq, bk, bv, bo, bl;
    if (trt_alloc(dev, sizeof q, &bq) || trt_alloc(dev, sizeof k, &bk) || trt_alloc(dev, sizeof v, &bv) ||
        trt_alloc(dev, sizeof o, &bo) || trt_alloc(dev, sizeof(float) * B * H * N, &bl) ||
        trt_write(dev, bq, 0, q, sizeof q) || trt_write(dev, bk, 0, k, sizeof k) || trt_write(dev, bv, 0, v, sizeof v)) {
        fprintf(stderr, "%s\n", trt_last_error(dev));
        return 1;
    }

    tls_attention_problem p = {.batch = B, .heads = H, .kv_heads = HKV, .n_q = N, .n_kv = N, .head_dim = D,
                               .causal = true}; /* scale 0: 1 / sqrt(D) */
    /* strides in elements: batch, head, row */
    tls_attention_tensor tq = {tls_mem_of(bq), N * H * D, D, H * D}, to = {tls_mem_of(bo), N * H * D, D, H * D},
                         tk = {tls_mem_of(bk), N * HKV * D, D, HKV * D}, tv = {tls_mem_of(bv), N * HKV * D, D, HKV * D},
                         tl = {tls_mem_of(bl), H * N, N, 1}; /* lse: f32 [batch, heads, N], for the backward */
    if (tls_attention_fwd(dev, TLS_BF16, &p, tq, tk, tv, to, tl, NULL) != TRT_OK ||
        trt_read(dev, bo, 0, o, sizeof o) != TRT_OK) { /* the read waits for the kernel */
        fprintf(stderr, "%s\n", trt_last_error(dev));
        return 1;
    }

    /* o within 8 bf16 roundings (2^-8 each: p before the second product, o) of the double softmax */
    double worst = 0, s[N];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++) {
                int kvh = h / (H / HKV);
                double m = -INFINITY, l = 0;
                for (int j = 0; j <= i; j++) { /* causal: keys up to the row */
                    double dot = 0;
                    for (int d = 0; d < D; d++)
                        dot += (double)from_bf16(q[((b * N + i) * H + h) * D + d]) *
                               from_bf16(k[((b * N + j) * HKV + kvh) * D + d]);
                    s[j] = dot / sqrt(D), m = fmax(m, s[j]);
                }
                for (int j = 0; j <= i; j++) l += exp(s[j] - m);
                for (int d = 0; d < D; d++) {
                    double want = 0;
                    for (int j = 0; j <= i; j++) want += exp(s[j] - m) / l * from_bf16(v[((b * N + j) * HKV + kvh) * D + d]);
                    double got = from_bf16(o[((b * N + i) * H + h) * D + d]);
                    worst = fmax(worst, fabs(got - want) / (8 * 0x1p-8 * (1 + fabs(want))));
                }
            }
    printf("attention bf16 causal, %d x %d rows, %d heads over %d, d %d, on %s: worst error %.2g of the tolerance: %s\n",
           B, N, H, HKV, D, trt_device_name(dev), worst, worst <= 1 ? "ok" : "WRONG");
    trt_close(dev); /* frees the buffers and the stdlib's modules */
    return worst <= 1 ? 0 : 1;
}
