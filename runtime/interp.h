/* interp.h - the CPU device's core: runs a kernel's tile IR, whole tiles
 * per op, over every program instance of a grid. Private to runtime/: the
 * CPU device (device_cpu.c) runs kernels with it.
 *
 * Memory is a table of buffers; a pointer is a buffer index and a byte
 * offset, and every load and store is checked against its buffer: an
 * out-of-bounds access stops the launch with an error naming the kernel's
 * .tile file and line. A failed assert stops it the same way, with a
 * message of its own (rt_interp_launch tells the two apart). print's
 * lines go to the launch's print callback, or to stdout. */
#ifndef TILEC_RUNTIME_INTERP_H
#define TILEC_RUNTIME_INTERP_H

#include "runtime/args.h"
#include "support/support.h"
#include "tileir/tileir.h"

typedef struct rt_launch {
    const tir_func *func;
    const char *file;        /* for messages: the kernel's source */
    rt_buffer *buffers;
    uint32_t nbuffers;
    const rt_arg *args;      /* one per func parameter */
    uint32_t nargs;
    uint32_t grid[3];
    double time_limit_ms; /* > 0: the launch stops with an error once it has run this long */
} rt_launch;

/* Where print's lines go: fn is called once per line (text ends in '\n'
 * and len counts it). */
typedef struct rt_print_sink {
    void (*fn)(void *user, const char *text, size_t len);
    void *user;
} rt_print_sink;

/* The 16 bits of x rounded to f16 or bf16 (e), to nearest even. */
uint16_t rt_half_bits(double x, tir_elem e);

/* Runs every program instance in order. Errors (bad arguments, out of
 * bounds, integer division by zero, a failed assert) go to diag; false on
 * the first. print writes to stdout. */
bool rt_interp_run(const rt_launch *launch, tc_diag *diag);

typedef enum rt_run_result { RT_RUN_OK, RT_RUN_ERROR, RT_RUN_ASSERT } rt_run_result;
/* rt_interp_run with print's lines going to `print` (NULL: stdout),
 * telling a failed assert (RT_RUN_ASSERT; diag holds "file:line:col:
 * assertion failed: message (kernel ..., program ..., idx ...)") from the
 * other errors. */
rt_run_result rt_interp_launch(const rt_launch *launch, const rt_print_sink *print, tc_diag *diag);

#endif
