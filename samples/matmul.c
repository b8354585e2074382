/* matmul - a linear layer's product y = x . w^T through the stdlib's C
 * entry point (include/tilec_stdlib.h): no .tile file, no tiles, no grid.
 *
 *   usage: matmul [M N K] [cpu|cuda|auto]
 * x is M x K and w is N x K, both row-major f16, as a linear layer keeps
 * its weight; w^T is w read with its strides swapped, so nothing is
 * copied. y (M x N, f16) is checked against a double-precision sum of
 * the same f16 inputs. Exit status 0 when it matches. "auto" (the
 * default) takes the GPU when there is one, else the CPU interpreter,
 * which is slow: keep the sizes small there. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec_stdlib.h"

#define CHECK(call)                                                           \
    do {                                                                      \
        if ((call) != TRT_OK) {                                               \
            fprintf(stderr, "%s failed:\n%s\n", #call, trt_last_error(dev)); \
            return 1;                                                         \
        }                                                                     \
    } while (0)

/* f16 from and to float, round to nearest even (normal values only here) */
static uint16_t to_f16(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    uint32_t sign = (u >> 16) & 0x8000, mant = u & 0x7fffff;
    int e = (int)((u >> 23) & 0xff) - 127 + 15;
    if (e <= 0) return (uint16_t)sign; /* tiny: 0 */
    uint32_t r = (uint32_t)e << 10 | mant >> 13, rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (uint16_t)(sign | r);
}
static float from_f16(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e ? ldexpf((float)(1024 + m), e - 25) : ldexpf((float)m, -24);
    return (h & 0x8000) ? -v : v;
}

int main(int argc, char **argv) {
    int M = argc > 3 ? atoi(argv[1]) : 96, N = argc > 3 ? atoi(argv[2]) : 80, K = argc > 3 ? atoi(argv[3]) : 64;
    const char *kind_name = argc > 4 ? argv[4] : argc == 2 ? argv[1] : "auto";
    trt_device_kind kind = !strcmp(kind_name, "cpu")    ? TRT_DEVICE_CPU
                           : !strcmp(kind_name, "cuda") ? TRT_DEVICE_CUDA
                                                        : TRT_DEVICE_AUTO;
    char why[512];
    trt_device *dev;
    if (trt_open(kind, &dev, why, sizeof why) != TRT_OK) {
        fprintf(stderr, "cannot open a device: %s\n", why);
        return 1;
    }
    size_t nx = (size_t)M * K, nw = (size_t)N * K, ny = (size_t)M * N;
    uint16_t *x = malloc(nx * 2), *w = malloc(nw * 2), *y = malloc(ny * 2);
    for (size_t i = 0; i < nx; i++) x[i] = to_f16((float)(rand() % 2001 - 1000) / 1000.0f);
    for (size_t i = 0; i < nw; i++) w[i] = to_f16((float)(rand() % 2001 - 1000) / 1000.0f);

    trt_buffer bx, bw, by;
    CHECK(trt_alloc(dev, nx * 2, &bx));
    CHECK(trt_alloc(dev, nw * 2, &bw));
    CHECK(trt_alloc(dev, ny * 2, &by));
    CHECK(trt_write(dev, bx, 0, x, nx * 2));
    CHECK(trt_write(dev, bw, 0, w, nw * 2));

    /* y[i][j] = sum over k of x[i][k] w^T[k][j]: element (k, j) of w^T is
     * w[j][k], at j * K + k, so w^T's strides are 1 (along k) and K (along j) */
    CHECK(tls_matmul(dev, TLS_F16, tls_mem_of(bx), tls_mem_of(bw), tls_mem_of(by), M, N, K,
                     /* x */ K, 1, /* w^T */ 1, K, /* y */ N, 1, NULL));
    CHECK(trt_read(dev, by, 0, y, ny * 2)); /* waits for the kernel */

    /* the sum in f32 is off by at most about K * 2^-24 of the sum of
     * |products|; the result rounds once to f16 (2^-11 relative) */
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double p = (double)from_f16(x[(size_t)i * K + k]) * from_f16(w[(size_t)j * K + k]);
                want += p, mag += fabs(p);
            }
            double tol = mag * K * 0x1p-23 + fabs(want) * 0x1p-11 + 0x1p-24;
            worst = fmax(worst, fabs(from_f16(y[(size_t)i * N + j]) - want) / tol);
        }
    int ok = worst <= 1;
    printf("matmul f16 %dx%dx%d (x . w^T) on %s: worst error %.2g of the tolerance: %s\n", M, N, K,
           trt_device_name(dev), worst, ok ? "ok" : "WRONG");
    trt_free(dev, bx), trt_free(dev, bw), trt_free(dev, by);
    trt_close(dev);
    free(x), free(w), free(y);
    return ok ? 0 : 1;
}
