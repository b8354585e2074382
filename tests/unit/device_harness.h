/* device_harness.h - what the device tests (tests/unit/test_runtime_devices_*.c)
 * share: the device under test, OK(), compiling kernels from text or from
 * a .tile file, buffers in and out, launching, random inputs (never all
 * zero), poisoned outputs, exact comparison, element storage types, and
 * the C reference of the random numbers. Each test file is one cmocka
 * executable per concern; device_harness.c opens the device named on the
 * command line (cpu, cuda or emu) for all of them.
 *
 *   test_runtime_devices_CONCERN cpu|cuda|emu
 *
 * Every case compiles its kernel with trt_compile, runs it on random
 * inputs (never all zero) with poisoned outputs, and compares with a C
 * reference: exactly where the language defines the result bit for bit
 * (one rounding per f32 operation, wrapping integers, saturating casts),
 * and within a stated tolerance where the GPU may approximate
 * (transcendental functions). Misuse of the API is checked on the device
 * too. ctest runs each file once per device; without a GPU the cuda run
 * exits 77 after saying why, which ctest reports as skipped. With
 * TILEC_TEST_REQUIRE_CUDA=1 (set by scripts/gpu-check.sh) a missing GPU is
 * a failure instead. */
#ifndef TILEC_TESTS_DEVICE_HARNESS_H
#define TILEC_TESTS_DEVICE_HARNESS_H


#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <unistd.h>

#include "tilec_rt.h"
#include "half_float.h"

#ifndef TILEC_SOURCE_DIR
#error TILEC_SOURCE_DIR must name the source tree
#endif

/* The device under test, opened by harness_open. */
extern trt_device_kind kind;
extern trt_device *dev;

/* ---- helpers ----------------------------------------------------------- */

#define OK(call)                                                                     \
    do {                                                                             \
        trt_status st_ = (call);                                                     \
        if (st_ != TRT_OK) fail_msg("%s: %s: %s", #call, trt_status_name(st_), trt_last_error(dev)); \
    } while (0)

typedef struct prog {
    trt_module *mod;
    char *text;
} prog;

/* The kernel `name` of `src` compiled for this device (with name NULL,
 * only the module); num_warps 0 leaves it to the compiler. */
trt_kernel *compile_with(prog *p, const char *file, const char *src, const char *name,
                         const tilec_define *defs, size_t ndefs, int num_warps);
trt_kernel *compile_text(prog *p, const char *file, const char *src, const char *name,
                         const tilec_define *defs, size_t ndefs);
/* A kernel from a .tile file in the source tree (stdlib/, samples/,
 * tests/kernels/); with name NULL, only the module; num_warps 0 leaves it
 * to the compiler. */
trt_kernel *compile_file_with(prog *p, const char *rel, const char *name, const tilec_define *defs, size_t ndefs,
                              int num_warps);
trt_kernel *compile_file(prog *p, const char *rel, const char *name, const tilec_define *defs, size_t ndefs);
void drop(prog *p);
trt_buffer upload(const void *host, size_t bytes);
void download(trt_buffer b, void *host, size_t bytes);
void launch(trt_kernel *k, uint32_t gx, uint32_t gy, uint32_t gz, const trt_arg *args, size_t nargs);
uint32_t cdiv(int n, int b);

/* Random values with a fractional part, both signs, never all zero. */
float rand_f32(void);
float *rand_f32s(int n);
float *poison_f32s(int n);
int32_t rand_i32(void);

bool same_f32(float a, float b);
void expect_f32(const char *what, int n, const float *got, const float *want);

/* vadd over BLOCK-element blocks, masked at the tail. */
extern const char vadd_src[];
/* The same kernel, named vadd, but subtracting: where a module comes from
 * a cache, what it computes tells whose code ran. */
extern const char vsub_as_vadd_src[];
/* out[0] of module m's vadd on device d for x = 5, y = 3 (one element): 8
 * where it adds, 2 where it subtracts. */
float vadd_first(trt_device *d, trt_module *m);

/* Storage of one element type: bytes, to and from float. */
typedef struct dtype {
    const char *name;
    size_t size;
    void (*put)(void *p, size_t i, float v);
    float (*get)(const void *p, size_t i);
    double tol; /* relative to the largest value of a row: the storage's rounding */
} dtype;
extern const dtype dtypes[3]; /* f32, f16, bf16 */

/* The C reference of the language's random numbers (device_harness.c). */
void philox4x32_10(uint32_t ctr[4], uint32_t k0, uint32_t k1);
uint32_t randint_ref(int64_t seed, int32_t offset);
float rand_ref(int64_t seed, int32_t offset);

/* Opens the device argv[1] names (cpu by default) into `dev` and seeds
 * rand(); 0 when open, otherwise the exit status: 2 for a bad argument,
 * 77 (ctest's SKIP_RETURN_CODE) when the device is missing, 1 when it is
 * missing and TILEC_TEST_REQUIRE_CUDA says it must not be. *which: the
 * device's name, for the cmocka group. */
int harness_open(int argc, char **argv, const char **which);
/* A device test program's main: opens the device argv names (or exits as
 * harness_open says), runs `tests` as a group named for the device, closes
 * it; 1 if any test failed. */
int harness_main(int argc, char **argv, const struct CMUnitTest *tests, size_t ntests);
#define HARNESS_MAIN(...)                                                        \
    int main(int argc, char **argv) {                                            \
        const struct CMUnitTest tests[] = {__VA_ARGS__};                         \
        return harness_main(argc, argv, tests, sizeof tests / sizeof tests[0]); \
    }

#endif
