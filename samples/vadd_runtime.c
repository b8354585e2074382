/* vadd_runtime - compile samples/vadd.tile at run time and add two vectors.
 *
 *   usage: vadd_runtime [N] [cpu|cuda|auto]
 * Reads vadd.tile from the folder given by TILEC_SAMPLES (default: the
 * source tree's samples/), runs it on the chosen device and checks every
 * element against C. Exit status 0 when all match. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec_rt.h"

#ifndef SAMPLES_DIR
#define SAMPLES_DIR "samples"
#endif

static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p) p[n] = 0, *len = (size_t)n;
    return p;
}

#define CHECK(call)                                                                  \
    do {                                                                             \
        if ((call) != TRT_OK) {                                                      \
            fprintf(stderr, "%s failed:\n%s\n", #call, trt_last_error(dev));        \
            return 1;                                                                \
        }                                                                            \
    } while (0)

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000003;
    const char *kind_name = argc > 2 ? argv[2] : "auto";
    if (n < 1) {
        fprintf(stderr, "usage: %s [N >= 1] [cpu|cuda|auto]\n", argv[0]);
        return 2;
    }
    trt_device_kind kind = !strcmp(kind_name, "cpu")    ? TRT_DEVICE_CPU
                           : !strcmp(kind_name, "cuda") ? TRT_DEVICE_CUDA
                                                        : TRT_DEVICE_AUTO;

    char path[4096];
    const char *dir = getenv("TILEC_SAMPLES");
    snprintf(path, sizeof path, "%s/vadd.tile", dir ? dir : SAMPLES_DIR);
    size_t len;
    char *src = read_text(path, &len);
    if (!src) {
        fprintf(stderr, "cannot read %s\n", path);
        return 1;
    }

    char why[512];
    trt_device *dev;
    if (trt_open(kind, &dev, why, sizeof why) != TRT_OK) {
        fprintf(stderr, "cannot open a device: %s\n", why);
        return 1;
    }
    trt_module *mod;
    trt_kernel *vadd;
    CHECK(trt_compile(dev, path, src, len, NULL, &mod));
    CHECK(trt_get_kernel(mod, "vadd", &vadd));

    size_t bytes = sizeof(float) * (size_t)n;
    float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
    for (int i = 0; i < n; i++) x[i] = (float)(i % 1024) * 0.25f, y[i] = (float)(rand() % 4096) - 2048.0f;
    trt_buffer bx, by, bo;
    CHECK(trt_alloc(dev, bytes, &bx));
    CHECK(trt_alloc(dev, bytes, &by));
    CHECK(trt_alloc(dev, bytes, &bo));
    CHECK(trt_write(dev, bx, 0, x, bytes));
    CHECK(trt_write(dev, by, 0, y, bytes));
    for (int i = 0; i < n; i++) out[i] = -1.0f / 0.0f; /* poison: an element the kernel misses shows */
    CHECK(trt_write(dev, bo, 0, out, bytes));

    const int block = 1024; /* vadd.tile's default BLOCK */
    trt_arg args[] = {trt_buf(bx), trt_buf(by), trt_buf(bo), trt_int(n)};
    CHECK(trt_launch(vadd, (uint32_t)((n + block - 1) / block), 1, 1, args, 4));
    CHECK(trt_sync(dev));
    CHECK(trt_read(dev, bo, 0, out, bytes));

    int bad = 0;
    for (int i = 0; i < n; i++)
        if (out[i] != x[i] + y[i] && bad++ < 5) fprintf(stderr, "out[%d] = %g, want %g\n", i, out[i], x[i] + y[i]);
    printf("vadd of %d elements on %s: %s\n", n, trt_device_name(dev), bad ? "WRONG" : "ok");

    trt_free(dev, bx), trt_free(dev, by), trt_free(dev, bo);
    trt_module_free(mod);
    trt_close(dev);
    free(x), free(y), free(out), free(src);
    return bad ? 1 : 0;
}
