/* vadd_cubin - load the vadd kernel that tilec compiled at build time.
 *
 *   usage: vadd_cubin MODULE [N] [cpu|cuda|auto]
 * MODULE is the vadd.cubin (or .ptx) the build made with
 *   tilec samples/vadd.tile -o vadd.cubin
 * next to its vadd.cubin.tir. This program links only the runtime, not
 * the compiler or LLVM. On the CPU device it runs the kernel's tile IR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec_rt.h"

#define CHECK(call)                                                                  \
    do {                                                                             \
        if ((call) != TRT_OK) {                                                      \
            fprintf(stderr, "%s failed:\n%s\n", #call, trt_last_error(dev));        \
            return 1;                                                                \
        }                                                                            \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODULE [N] [cpu|cuda|auto]\n", argv[0]);
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 1000003;
    const char *k = argc > 3 ? argv[3] : "auto";
    trt_device_kind kind = !strcmp(k, "cpu") ? TRT_DEVICE_CPU : !strcmp(k, "cuda") ? TRT_DEVICE_CUDA : TRT_DEVICE_AUTO;
    if (n < 1) {
        fprintf(stderr, "N must be at least 1\n");
        return 2;
    }
    char why[512];
    trt_device *dev;
    if (trt_open(kind, &dev, why, sizeof why) != TRT_OK) {
        fprintf(stderr, "cannot open a device: %s\n", why);
        return 1;
    }
    trt_module *mod;
    trt_kernel *vadd;
    CHECK(trt_load(dev, argv[1], &mod));
    CHECK(trt_get_kernel(mod, "vadd", &vadd));

    size_t bytes = sizeof(float) * (size_t)n;
    float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
    for (int i = 0; i < n; i++) x[i] = (float)(i % 977) * 1.5f, y[i] = (float)(rand() % 1000) - 500.0f;
    trt_buffer bx, by, bo;
    CHECK(trt_alloc(dev, bytes, &bx));
    CHECK(trt_alloc(dev, bytes, &by));
    CHECK(trt_alloc(dev, bytes, &bo));
    CHECK(trt_write(dev, bx, 0, x, bytes));
    CHECK(trt_write(dev, by, 0, y, bytes));
    for (int i = 0; i < n; i++) out[i] = -1.0f / 0.0f; /* poison: an element the kernel misses shows */
    CHECK(trt_write(dev, bo, 0, out, bytes));
    trt_arg args[] = {trt_buf(bx), trt_buf(by), trt_buf(bo), trt_int(n)};
    CHECK(trt_launch(vadd, (uint32_t)((n + 1023) / 1024), 1, 1, args, 4)); /* BLOCK = 1024 */
    CHECK(trt_sync(dev));
    CHECK(trt_read(dev, bo, 0, out, bytes));
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (out[i] != x[i] + y[i] && bad++ < 5) fprintf(stderr, "out[%d] = %g, want %g\n", i, out[i], x[i] + y[i]);
    printf("vadd of %d elements from %s on %s: %s\n", n, argv[1], trt_device_name(dev), bad ? "WRONG" : "ok");
    trt_free(dev, bx), trt_free(dev, by), trt_free(dev, bo);
    trt_module_free(mod);
    trt_close(dev);
    free(x), free(y), free(out);
    return bad ? 1 : 0;
}
