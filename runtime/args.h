/* args.h - private to runtime/: a launch's arguments and the buffers they
 * point into, as the runtime passes them to a device. A file of its own
 * because every device takes them, not only the interpreter (interp.h),
 * whose unit tests build them by hand. */
#ifndef TILEC_RUNTIME_ARGS_H
#define TILEC_RUNTIME_ARGS_H

#include <stddef.h>
#include <stdint.h>

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

#endif
