/* interp.h - the CPU device's core: runs a kernel's tile IR, whole tiles
 * per op, over every program instance of a grid. Private to runtime/ until
 * the runtime API (include/) is built on it.
 *
 * Memory is a table of buffers; a pointer is a buffer index and a byte
 * offset, and every load and store is checked against its buffer: an
 * out-of-bounds access stops the launch with an error naming the kernel's
 * .tile file and line. */
#ifndef TILEC_RUNTIME_INTERP_H
#define TILEC_RUNTIME_INTERP_H

#include "support/support.h"
#include "tileir/tileir.h"

enum { RT_INTERP_MAX_ARGS = 64 };

typedef struct rt_buffer {
    void *data;
    size_t size; /* bytes */
} rt_buffer;

typedef enum rt_arg_kind { RT_ARG_PTR, RT_ARG_INT, RT_ARG_FLOAT } rt_arg_kind;

typedef struct rt_arg {
    rt_arg_kind kind;
    uint32_t buffer; /* RT_ARG_PTR: index into the buffer table */
    int64_t offset;  /* RT_ARG_PTR: bytes from the buffer's start */
    int64_t i;       /* RT_ARG_INT */
    double f;        /* RT_ARG_FLOAT */
} rt_arg;

typedef struct rt_launch {
    const tir_func *func;
    const char *file;        /* for messages: the kernel's source */
    rt_buffer *buffers;
    uint32_t nbuffers;
    const rt_arg *args;      /* one per func parameter */
    uint32_t nargs;
    uint32_t grid[3];
} rt_launch;

/* The 16 bits of x rounded to f16 or bf16 (e), to nearest even. */
uint16_t rt_half_bits(double x, tir_elem e);

/* Runs every program instance in order. Errors (bad arguments, out of
 * bounds, integer division by zero) go to diag; false on the first. */
bool rt_interp_run(const rt_launch *launch, tc_diag *diag);

#endif
