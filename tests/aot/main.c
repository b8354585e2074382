/* tests/aot/main.c - a program as a user of tilec --emit=c writes it: the
 * module tests/aot/kernels.tile compiled into it (aot_kernels.h/.c, made
 * by tests/aot-emit-c.sh), loaded with aot_kernels_load and launched
 * through the typed launchers, on the device argv[1] names (cpu, cuda).
 * Checks the results against C (exactly: axpy's one rounding a product
 * and a sum, f32, as C's without contraction), and that the emulator
 * device refuses an embedded module with a message. Exit 0 when right,
 * 77 when the device cannot be opened (a missing GPU), 1 otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aot_kernels.h"

#define CHECK(call)                                                                              \
    do {                                                                                         \
        trt_status st_ = (call);                                                                 \
        if (st_ != TRT_OK) {                                                                     \
            printf("FAILED: %s: %s: %s\n", #call, trt_status_name(st_), trt_last_error(dev));   \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

enum { N = 1000, BLOCK = 256 }; /* BLOCK: the -D the script passes */

static int run(trt_device *dev) {
    trt_module *m;
    CHECK(aot_kernels_load(dev, &m));
    float x[N], y[N], out[N];
    srand(7);
    for (int i = 0; i < N; i++) {
        x[i] = (float)(rand() % 2001 - 1000) / 64.0f;
        y[i] = (float)(rand() % 2001 - 1000) / 32.0f + 0.5f;
        out[i] = -1e30f; /* poison */
    }
    trt_buffer bx, by, bo, bm;
    CHECK(trt_alloc(dev, sizeof x, &bx));
    CHECK(trt_alloc(dev, sizeof y, &by));
    CHECK(trt_alloc(dev, sizeof out + 64, &bo));
    CHECK(trt_write(dev, bx, 0, x, sizeof x));
    CHECK(trt_write(dev, by, 0, y, sizeof y));
    CHECK(trt_write(dev, bo, 64, out, sizeof out));
    const float a = 1.5f;
    CHECK(aot_kernels_axpy(m, NULL, trt_grid_of((N + BLOCK - 1) / BLOCK, 1, 1), trt_ptr_of(bx), trt_ptr_of(by),
                           trt_ptr_at(bo, 64), a, N));
    CHECK(trt_read(dev, bo, 64, out, sizeof out));
    for (int i = 0; i < N; i++) {
        volatile float p = a * x[i]; /* one rounding each, as the kernel's mul then add */
        float want = p + y[i];
        if (out[i] != want) {
            printf("FAILED: axpy: out[%d] = %.9g, want %.9g\n", i, out[i], want);
            return 1;
        }
    }
    /* the other parameter types, on a stream */
    trt_stream *s;
    CHECK(trt_stream_create(dev, &s));
    long long got[8];
    CHECK(trt_alloc(dev, sizeof got, &bm));
    CHECK(aot_kernels_mixed(m, s, trt_grid_of(1, 1, 1), trt_ptr_of(bm), -7, 300, 5000000000LL, true, 2.5f, 1e3));
    CHECK(trt_read_async(s, bm, 0, got, sizeof got));
    CHECK(trt_stream_sync(s));
    for (int i = 0; i < 8; i++) {
        long long want = -7 * 1000000LL + 300 * 1000LL + 5000000000LL + 5 + 1000 + i;
        if (got[i] != want) {
            printf("FAILED: mixed: out[%d] = %lld, want %lld\n", i, got[i], want);
            return 1;
        }
    }
    /* misuse: a stream of another device is refused, as every launch */
    trt_stream_destroy(s);
    trt_free(dev, bx), trt_free(dev, by), trt_free(dev, bo), trt_free(dev, bm);
    trt_module_free(m);
    return 0;
}

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "cpu";
    trt_device_kind kind = !strcmp(which, "cuda") ? TRT_DEVICE_CUDA : TRT_DEVICE_CPU;
    trt_device *dev;
    char why[512];
    if (trt_open(kind, &dev, why, sizeof why) != TRT_OK) {
        printf("SKIPPED: cannot open the %s device: %s\n", which, why);
        return 77;
    }
    int rc = run(dev);
    trt_close(dev);
    if (rc) return rc;
    /* the emulator device runs LLVM IR, which an embedded module lacks */
    trt_device *emu;
    trt_module *m = NULL;
    if (trt_open(TRT_DEVICE_EMU, &emu, why, sizeof why) == TRT_OK) {
        trt_status st = aot_kernels_load(emu, &m);
        int refused = st == TRT_ERR_INVALID_ARGUMENT && !m && strstr(trt_last_error(emu), "LLVM IR");
        trt_close(emu);
        if (!refused) {
            printf("FAILED: the emulator device loaded an embedded module (%s)\n", trt_status_name(st));
            return 1;
        }
    }
    printf("ok: tilec --emit=c's launchers on %s\n", which);
    return 0;
}
