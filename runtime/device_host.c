/* device_host.c - host memory, the part of a device the CPU device and the
 * emulator device share: their buffers are aligned host allocations,
 * copies are memcpy, and there are no streams (every operation is done
 * when it returns). A file of its own so that neither device's table holds
 * the other's code. */
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"

trt_status rt_host_alloc(trt_device *d, size_t bytes, uint64_t *addr) {
    size_t rounded = (bytes + RT_BUFFER_ALIGN - 1) / RT_BUFFER_ALIGN * RT_BUFFER_ALIGN;
    void *p = rounded < bytes ? NULL : aligned_alloc(RT_BUFFER_ALIGN, rounded);
    if (!p) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
    *addr = (uint64_t)(uintptr_t)p;
    return TRT_OK;
}

void rt_host_free(trt_device *d, uint64_t addr) { free((void *)(uintptr_t)addr); }

/* Any host memory may be wrapped: nothing here knows its extent. */
trt_status rt_host_check_wrap(trt_device *d, uint64_t ptr, size_t bytes) { return TRT_OK; }

trt_status rt_host_write(trt_device *d, uint64_t dst, const void *src, size_t bytes, void *stream) {
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return TRT_OK;
}

trt_status rt_host_read(trt_device *d, void *dst, uint64_t src, size_t bytes, void *stream) {
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return TRT_OK;
}

trt_status rt_host_stream_create(trt_device *d, void **stream) {
    *stream = NULL;
    return TRT_OK;
}

trt_status rt_host_stream_sync(trt_device *d, void *stream) { return TRT_OK; }

void rt_host_stream_destroy(trt_device *d, void *stream) {}

trt_status rt_host_sync(trt_device *d) { return TRT_OK; }

rt_buffer *rt_host_buffers(const trt_device *d) {
    rt_buffer *bufs = calloc(d->nbufs + 1, sizeof *bufs);
    if (!bufs) return NULL;
    for (uint32_t i = 0; i < d->nbufs; i++) {
        const buf_slot *s = &d->bufs[i];
        bufs[i] = (rt_buffer){.data = s->live ? (void *)(uintptr_t)s->addr : NULL, .size = s->live ? s->size : 0};
    }
    return bufs;
}
