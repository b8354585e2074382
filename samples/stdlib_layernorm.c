/* stdlib_layernorm - layer normalization through the stdlib's C entry
 * points (include/tilec_stdlib.h): no .tile file, no BLOCK, no grid.
 *
 *   usage: stdlib_layernorm [ROWS COLS] [cpu|cuda|auto]
 * Normalizes ROWS x COLS f32 values on the chosen device, runs the
 * backward pass with a workspace of the size the library asks for, and
 * checks y and db (the column sums of dy) against C. Exit status 0 when
 * they match. */
#include <math.h>
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

int main(int argc, char **argv) {
    int rows = argc > 2 ? atoi(argv[1]) : 512, cols = argc > 2 ? atoi(argv[2]) : 768;
    const char *kind_name = argc > 3 ? argv[3] : argc == 2 ? argv[1] : "auto";
    trt_device_kind kind = !strcmp(kind_name, "cpu")    ? TRT_DEVICE_CPU
                           : !strcmp(kind_name, "cuda") ? TRT_DEVICE_CUDA
                                                        : TRT_DEVICE_AUTO;
    char why[512];
    trt_device *dev;
    if (trt_open(kind, &dev, why, sizeof why) != TRT_OK) {
        fprintf(stderr, "cannot open a device: %s\n", why);
        return 1;
    }
    size_t n = (size_t)rows * (size_t)cols;
    float *x = malloc(n * 4), *y = malloc(n * 4), *w = malloc((size_t)cols * 4), *b = malloc((size_t)cols * 4);
    float *db = malloc((size_t)cols * 4);
    for (size_t i = 0; i < n; i++) x[i] = (float)(rand() % 2001 - 1000) / 100.0f;
    for (int i = 0; i < cols; i++) w[i] = 1.0f + (float)i / (float)cols, b[i] = 0.5f;

    trt_buffer bx, by, bw, bb, bmean, brstd, bdx, bdw, bdb, bws;
    size_t ws_bytes;
    CHECK(tls_layernorm_bwd_workspace(dev, rows, cols, &ws_bytes));
    CHECK(trt_alloc(dev, n * 4, &bx));
    CHECK(trt_alloc(dev, n * 4, &by));
    CHECK(trt_alloc(dev, n * 4, &bdx));
    CHECK(trt_alloc(dev, (size_t)cols * 4, &bw));
    CHECK(trt_alloc(dev, (size_t)cols * 4, &bb));
    CHECK(trt_alloc(dev, (size_t)cols * 4, &bdw));
    CHECK(trt_alloc(dev, (size_t)cols * 4, &bdb));
    CHECK(trt_alloc(dev, (size_t)rows * 4, &bmean));
    CHECK(trt_alloc(dev, (size_t)rows * 4, &brstd));
    CHECK(trt_alloc(dev, ws_bytes, &bws));
    CHECK(trt_write(dev, bx, 0, x, n * 4));
    CHECK(trt_write(dev, bw, 0, w, (size_t)cols * 4));
    CHECK(trt_write(dev, bb, 0, b, (size_t)cols * 4));

    /* forward, saving mean and rstd; then the backward pass with dy = y */
    CHECK(tls_layernorm(dev, TLS_F32, tls_mem_of(bx), tls_mem_of(by), tls_mem_of(bw), tls_mem_of(bb), tls_mem_of(bmean),
                        tls_mem_of(brstd), rows, cols, cols, 1e-5f, NULL));
    CHECK(tls_layernorm_bwd(dev, TLS_F32, tls_mem_of(bx), tls_mem_of(by), tls_mem_of(bdx), tls_mem_of(bw),
                            tls_mem_of(bmean), tls_mem_of(brstd), tls_mem_of(bdw), tls_mem_of(bdb), rows, cols, cols,
                            tls_mem_of(bws), NULL));
    CHECK(trt_read(dev, by, 0, y, n * 4)); /* waits for the launches */
    CHECK(trt_read(dev, bdb, 0, db, (size_t)cols * 4));

    double worst_y = 0, worst_db = 0;
    for (int r = 0; r < rows; r++) {
        double mu = 0, var = 0;
        for (int i = 0; i < cols; i++) mu += x[(size_t)r * cols + i];
        mu /= cols;
        for (int i = 0; i < cols; i++) var += pow(x[(size_t)r * cols + i] - mu, 2);
        double rs = 1 / sqrt(var / cols + 1e-5);
        for (int i = 0; i < cols; i++) {
            double want = (x[(size_t)r * cols + i] - mu) * rs * w[i] + b[i];
            worst_y = fmax(worst_y, fabs(y[(size_t)r * cols + i] - want) / (fabs(want) + 1));
        }
    }
    for (int i = 0; i < cols; i++) {
        double sum = 0, mag = 0; /* db = the column sums of dy, here y as stored */
        for (int r = 0; r < rows; r++) sum += y[(size_t)r * cols + i], mag += fabs(y[(size_t)r * cols + i]);
        worst_db = fmax(worst_db, fabs(db[i] - sum) / (mag + 1));
    }
    int ok = worst_y <= 1e-5 && worst_db <= 1e-5; /* f32 rounding, relative */
    printf("layernorm %dx%d on %s: worst relative error y %.2g, db %.2g: %s\n", rows, cols, trt_device_name(dev),
           worst_y, worst_db, ok ? "ok" : "WRONG");
    trt_free(dev, bx), trt_free(dev, by), trt_free(dev, bdx), trt_free(dev, bw), trt_free(dev, bb);
    trt_free(dev, bdw), trt_free(dev, bdb), trt_free(dev, bmean), trt_free(dev, brstd), trt_free(dev, bws);
    trt_close(dev);
    free(x), free(y), free(w), free(b), free(db);
    return ok ? 0 : 1;
}
