/* args.h - private to runtime/: a launch's arguments and the buffers they
 * point into, as the runtime passes them to a device. A file of its own
 * because every device takes them, not only the interpreter (interp.h),
 * whose unit tests build them by hand.
 *
 * One argument carries both forms a device may want: the interpreter and
 * the emulator address a pointer as (buffer index, byte offset) into the
 * launch's buffer table, which is checked on every access; the GPU (and
 * the emulator's scalars) take the bits a kernel parameter holds. */
#ifndef TILEC_RUNTIME_ARGS_H
#define TILEC_RUNTIME_ARGS_H

#include <stddef.h>
#include <stdint.h>

enum { RT_MAX_ARGS = 64 }; /* arguments of one launch */

/* A buffer as a launch on the host sees it (CPU and emulator devices): a
 * table of them, indexed by rt_arg.buffer; a freed one is NULL, 0 bytes. */
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
    /* the parameter as the GPU takes it (little endian: a narrow value in
     * the low bytes): a pointer's device address (the buffer's plus
     * offset), a scalar's bits in the kernel's type */
    uint64_t bits;
} rt_arg;

#endif
