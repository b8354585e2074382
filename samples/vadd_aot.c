/* vadd_aot - the vadd kernel compiled into this program at build time
 * (tilec --emit=c through CMake's tilec_add_kernels, docs/aot.md): a typed
 * function per kernel, and only the runtime linked (libtilec_rt: no
 * compiler, no LLVM, no .tile file at run time).
 *
 *   usage: vadd_aot [N] [cpu|cuda|auto]
 *
 * samples/CMakeLists.txt:
 *   add_executable(vadd_aot vadd_aot.c)
 *   tilec_add_kernels(vadd_aot FILES vadd.tile ARCHS sm_80 sm_90) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vadd.h" /* generated: vadd_load, vadd_vadd */

#define CHECK(call)                                                                  \
    do {                                                                             \
        if ((call) != TRT_OK) {                                                      \
            fprintf(stderr, "%s failed:\n%s\n", #call, trt_last_error(dev));        \
            return 1;                                                                \
        }                                                                            \
    } while (0)

enum { BLOCK = 1024 }; /* vadd.tile's default, which the build keeps */

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000003;
    const char *k = argc > 2 ? argv[2] : "auto";
    trt_device_kind kind = !strcmp(k, "cpu") ? TRT_DEVICE_CPU : !strcmp(k, "cuda") ? TRT_DEVICE_CUDA : TRT_DEVICE_AUTO;
    if (n < 1) {
        fprintf(stderr, "N must be at least 1\n");
        return 2;
    }
    trt_device *dev;
    char why[512];
    if (trt_open(kind, &dev, why, sizeof why) != TRT_OK) {
        fprintf(stderr, "cannot open a device: %s\n", why);
        return 1;
    }
    size_t bytes = sizeof(float) * (size_t)n;
    float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
    if (!x || !y || !out) return 1;
    for (int i = 0; i < n; i++) x[i] = (float)i * 0.5f, y[i] = 1.0f / (float)(i + 1), out[i] = -1.0f;
    trt_module *m;
    trt_buffer bx, by, bo;
    CHECK(vadd_load(dev, &m));
    CHECK(trt_alloc(dev, bytes, &bx));
    CHECK(trt_alloc(dev, bytes, &by));
    CHECK(trt_alloc(dev, bytes, &bo));
    CHECK(trt_write(dev, bx, 0, x, bytes));
    CHECK(trt_write(dev, by, 0, y, bytes));
    CHECK(vadd_vadd(m, NULL, trt_grid_of((uint32_t)((n + BLOCK - 1) / BLOCK), 1, 1), trt_ptr_of(bx), trt_ptr_of(by),
                    trt_ptr_of(bo), n));
    CHECK(trt_read(dev, bo, 0, out, bytes));
    int bad = 0;
    for (int i = 0; i < n; i++) bad += out[i] != x[i] + y[i];
    printf("vadd_aot on %s: %d elements, %d wrong\n", trt_device_name(dev), n, bad);
    trt_module_free(m);
    trt_close(dev);
    free(x), free(y), free(out);
    return bad ? 1 : 0;
}
