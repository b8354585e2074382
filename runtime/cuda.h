/* cuda.h (runtime/) - the CUDA device: libcuda through dlopen. Private to
 * runtime/. Nothing here links against libcuda, so tilec builds and runs
 * where there is no driver; opening the device then fails with a message. */
#ifndef TILEC_RUNTIME_CUDA_H
#define TILEC_RUNTIME_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rt_cuda rt_cuda;

enum { RT_CUDA_MIN_DRIVER = 12000, RT_CUDA_MIN_SM = 80 };

/* Loads libcuda, initializes it, takes device 0's primary context. */
bool rt_cuda_open(rt_cuda **out, char *why, size_t why_size);
void rt_cuda_close(rt_cuda *c);
const char *rt_cuda_name(const rt_cuda *c); /* "cuda: NVIDIA H100 80GB HBM3 (sm_90)" */
const char *rt_cuda_arch(const rt_cuda *c); /* "sm_90" */
int rt_cuda_sm_count(const rt_cuda *c);     /* 132 on an H100 SXM; 0 if unknown */
/* The most shared memory one block may have with the dynamic opt-in
 * (232448 bytes on an H100); 0 if the driver would not say. */
uint32_t rt_cuda_smem_optin(const rt_cuda *c);
/* Whether a call failed with CUDA_ERROR_ASSERT (a kernel's assert fired):
 * from then on the context refuses everything. */
bool rt_cuda_asserted(const rt_cuda *c);

/* Each returns false with a message naming the failing call in err. */
bool rt_cuda_alloc(rt_cuda *c, size_t bytes, uint64_t *dptr, char *err, size_t n);
bool rt_cuda_free(rt_cuda *c, uint64_t dptr, char *err, size_t n);
/* The allocation holding dptr: its start and size. */
bool rt_cuda_range(rt_cuda *c, uint64_t dptr, uint64_t *base, size_t *size, char *err, size_t n);
/* Copies: on `stream` when not NULL (queued), else synchronous. */
bool rt_cuda_write(rt_cuda *c, uint64_t dst, const void *src, size_t bytes, void *stream, char *err, size_t n);
bool rt_cuda_read(rt_cuda *c, void *dst, uint64_t src, size_t bytes, void *stream, char *err, size_t n);
bool rt_cuda_load(rt_cuda *c, const void *image, void **module, char *err, size_t n);
void rt_cuda_unload(rt_cuda *c, void *module);
bool rt_cuda_function(rt_cuda *c, void *module, const char *name, void **fn, char *err, size_t n);
/* Lets launches of fn give it up to `bytes` of dynamic shared memory (over
 * the 48 KB a kernel gets without asking). */
bool rt_cuda_allow_dynamic_smem(rt_cuda *c, void *fn, uint32_t bytes, char *err, size_t n);
/* stream NULL: the legacy default stream, which waits for the others;
 * dynamic_smem: bytes of dynamic shared memory each block gets */
bool rt_cuda_launch(rt_cuda *c, void *fn, const uint32_t grid[3], uint32_t block_x, uint32_t dynamic_smem,
                    void **params, void *stream, char *err, size_t n);
bool rt_cuda_sync(rt_cuda *c, char *err, size_t n);
/* cuTensorMapEncodeTiled into map (128 bytes, 64-byte aligned host
 * memory): a tensor of `rank` dims (0 innermost) of elem_bytes-byte
 * elements at device address addr, dims[d] elements, strides[d - 1] bytes
 * between steps of dim d >= 1, a box of box[d] elements, element strides
 * 1, no interleave, a swizzle of `swizzle` bytes (0: none), out-of-bounds
 * elements read as zeros. False with the driver's message, or where the
 * driver has no cuTensorMapEncodeTiled (before CUDA 12.0). */
bool rt_cuda_tensor_map(rt_cuda *c, void *map, uint32_t elem_bytes, uint32_t rank, uint64_t addr,
                        const uint64_t *dims, const uint64_t *strides, const uint32_t *box, uint32_t swizzle,
                        char *err, size_t n);
bool rt_cuda_stream_create(rt_cuda *c, void **stream, char *err, size_t n);
bool rt_cuda_stream_sync(rt_cuda *c, void *stream, char *err, size_t n);
void rt_cuda_stream_destroy(rt_cuda *c, void *stream);
/* Stream capture in the relaxed mode (the runtime itself refuses what a
 * capture cannot hold); the end instantiates the captured graph into
 * *exec, or with exec NULL only discards it. */
bool rt_cuda_capture_begin(rt_cuda *c, void *stream, char *err, size_t n);
bool rt_cuda_capture_end(rt_cuda *c, void *stream, void **exec, char *err, size_t n);
bool rt_cuda_graph_launch(rt_cuda *c, void *exec, void *stream, char *err, size_t n);
void rt_cuda_graph_destroy(rt_cuda *c, void *exec);
/* Whether some stream of the context is capturing, which makes the legacy
 * default stream (and what waits for the device) unusable until it ends. */
bool rt_cuda_legacy_blocked(rt_cuda *c);

#endif
