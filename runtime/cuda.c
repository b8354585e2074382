/* cuda.c - the CUDA driver API, loaded at run time with dlopen.
 *
 * Only the handful of entry points the runtime needs are looked up, by
 * their versioned names (cuMemAlloc_v2 ...), with types declared here so
 * that building needs no CUDA headers. Every failure becomes a message
 * naming the call and the driver's error name and text. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda.h"

typedef int CUresult; /* CUDA_SUCCESS is 0 */
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUgraph, *CUgraphExec;

enum { CU_ATTR_CC_MAJOR = 75, CU_ATTR_CC_MINOR = 76, CU_ATTR_SM_COUNT = 16, CU_ERROR_NO_DEVICE = 100, CU_ERROR_ASSERT = 710 };
/* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
enum { CU_ATTR_SMEM_OPTIN = 97, CU_FUNC_ATTR_MAX_DYNAMIC_SMEM = 8 };
enum { CU_STREAM_CAPTURE_MODE_RELAXED = 2, CU_ERROR_STREAM_CAPTURE_IMPLICIT = 906 };
#define CU_STREAM_LEGACY ((CUstream)0x1)
/* CUtensorMapDataType (the unsigned types by size: a copy moves bits), CUtensorMapInterleave,
 * CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill (NONE: zeros) */
enum { CU_TMAP_UINT8 = 0, CU_TMAP_UINT16 = 1, CU_TMAP_UINT32 = 2, CU_TMAP_UINT64 = 4 };
enum { CU_TMAP_INTERLEAVE_NONE = 0, CU_TMAP_SWIZZLE_NONE = 0, CU_TMAP_SWIZZLE_32B = 1, CU_TMAP_SWIZZLE_64B = 2,
       CU_TMAP_SWIZZLE_128B = 3, CU_TMAP_L2_PROMOTION_128B = 2, CU_TMAP_OOB_FILL_NONE = 0 };
enum { CU_TMAP_MAX_RANK = 5 };
enum { CU_PTR_CONTEXT = 1, CU_PTR_MEMORY_TYPE = 2, CU_PTR_RANGE_START = 11, CU_PTR_RANGE_SIZE = 12, CU_MEM_DEVICE = 2 };

typedef struct cuda_api {
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree_v2)(CUdeviceptr);
    CUresult (*cuPointerGetAttributes)(unsigned, int *, void **, CUdeviceptr);
    CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoH_v2)(void *, CUdeviceptr, size_t);
    CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*cuMemcpyDtoHAsync_v2)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuStreamDestroy_v2)(CUstream);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               CUstream, void **, void **);
    CUresult (*cuStreamBeginCapture_v2)(CUstream, int);
    CUresult (*cuStreamIsCapturing)(CUstream, int *);
    CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
    CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
    CUresult (*cuGraphExecDestroy)(CUgraphExec);
    CUresult (*cuGraphDestroy)(CUgraph);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuFuncLoad)(CUfunction); /* optional: CUDA 12.4 and later; NULL before */
    /* optional: needed only by kernels with tensor maps (sm_90a's bulk tensor copies) */
    CUresult (*cuTensorMapEncodeTiled)(void *, int, uint32_t, void *, const uint64_t *, const uint64_t *,
                                       const uint32_t *, const uint32_t *, int, int, int, int);
} cuda_api;

struct rt_cuda {
    void *lib;
    cuda_api api;
    CUdevice dev;
    CUcontext ctx;
    char name[160];
    char arch[32]; /* "sm_%d%d": room for any two ints */
    int sms;       /* multiprocessors; 0 if the driver would not say */
    int smem_optin; /* shared memory a block may opt in to; 0 if the driver would not say */
    bool asserted; /* a call answered CUDA_ERROR_ASSERT: the context is lost */
};

static void say(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t n, const char *fmt, ...) {
    if (!buf || !n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

static bool check(rt_cuda *c, CUresult r, const char *call, char *err, size_t n) {
    if (r == 0) return true;
    if (r == CU_ERROR_ASSERT) c->asserted = true;
    const char *name = "?", *text = "?";
    if (c->api.cuGetErrorName) c->api.cuGetErrorName(r, &name);
    if (c->api.cuGetErrorString) c->api.cuGetErrorString(r, &text);
    say(err, n, "%s failed: %s (%s)", call, name ? name : "?", text ? text : "?");
    return false;
}

/* The context is per thread in the driver: make ours current first. */
static bool enter(rt_cuda *c, char *err, size_t n) {
    return check(c, c->api.cuCtxSetCurrent(c->ctx), "cuCtxSetCurrent", err, n);
}

bool rt_cuda_open(rt_cuda **out, char *why, size_t n) {
    *out = NULL;
    rt_cuda *c = calloc(1, sizeof *c);
    if (!c) {
        say(why, n, "out of memory");
        return false;
    }
    c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!c->lib) {
        say(why, n, "no CUDA driver: cannot load libcuda.so.1 (%s)", dlerror());
        free(c);
        return false;
    }
    struct { const char *name; void **slot; } syms[] = {
#define SYM(f) {#f, (void **)&c->api.f}
        SYM(cuInit), SYM(cuDriverGetVersion), SYM(cuDeviceGetCount), SYM(cuDeviceGet), SYM(cuDeviceGetName),
        SYM(cuDeviceGetAttribute), SYM(cuDevicePrimaryCtxRetain), SYM(cuDevicePrimaryCtxRelease_v2),
        SYM(cuCtxSetCurrent), SYM(cuCtxSynchronize), SYM(cuMemAlloc_v2), SYM(cuMemFree_v2), SYM(cuPointerGetAttributes), SYM(cuMemcpyHtoD_v2),
        SYM(cuMemcpyDtoH_v2), SYM(cuMemcpyHtoDAsync_v2), SYM(cuMemcpyDtoHAsync_v2), SYM(cuStreamCreate),
        SYM(cuStreamSynchronize), SYM(cuStreamDestroy_v2), SYM(cuModuleLoadData), SYM(cuModuleUnload), SYM(cuModuleGetFunction),
        SYM(cuFuncSetAttribute),
        SYM(cuLaunchKernel), SYM(cuStreamBeginCapture_v2), SYM(cuStreamIsCapturing), SYM(cuStreamEndCapture), SYM(cuGraphInstantiateWithFlags),
        SYM(cuGraphLaunch), SYM(cuGraphExecDestroy), SYM(cuGraphDestroy), SYM(cuGetErrorName), SYM(cuGetErrorString),
#undef SYM
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(c->lib, syms[i].name);
        if (!*syms[i].slot) {
            say(why, n, "the CUDA driver is too old: libcuda.so.1 has no %s", syms[i].name);
            dlclose(c->lib);
            free(c);
            return false;
        }
    }
    *(void **)&c->api.cuFuncLoad = dlsym(c->lib, "cuFuncLoad"); /* optional */
    *(void **)&c->api.cuTensorMapEncodeTiled = dlsym(c->lib, "cuTensorMapEncodeTiled"); /* optional */
    int version = 0, count = 0, major = 0, minor = 0;
    char msg[256];
    CUresult r = c->api.cuInit(0);
    if (r == CU_ERROR_NO_DEVICE || (r == 0 && c->api.cuDeviceGetCount(&count) == 0 && count == 0)) {
        say(why, n, "the CUDA driver sees no GPU");
        goto fail;
    }
    if (!check(c, r, "cuInit", msg, sizeof msg) || !check(c, c->api.cuDriverGetVersion(&version), "cuDriverGetVersion", msg, sizeof msg) ||
        !check(c, c->api.cuDeviceGet(&c->dev, 0), "cuDeviceGet", msg, sizeof msg) ||
        !check(c, c->api.cuDeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, c->dev), "cuDeviceGetAttribute", msg, sizeof msg) ||
        !check(c, c->api.cuDeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, c->dev), "cuDeviceGetAttribute", msg, sizeof msg)) {
        say(why, n, "%s", msg);
        goto fail;
    }
    if (version < RT_CUDA_MIN_DRIVER) {
        snprintf(msg, sizeof msg, "the CUDA driver is too old (CUDA %d.%d; tilec needs %d.%d)", version / 1000,
                 version % 1000 / 10, RT_CUDA_MIN_DRIVER / 1000, RT_CUDA_MIN_DRIVER % 1000 / 10);
        say(why, n, "%s", msg);
        goto fail;
    }
    if (major * 10 + minor < RT_CUDA_MIN_SM) {
        snprintf(msg, sizeof msg, "GPU 0 is sm_%d%d; tilec needs sm_80 or newer", major, minor);
        say(why, n, "%s", msg);
        goto fail;
    }
    snprintf(c->arch, sizeof c->arch, "sm_%d%d", major, minor);
    if (c->api.cuDeviceGetAttribute(&c->sms, CU_ATTR_SM_COUNT, c->dev) != 0) c->sms = 0; /* only a tuning hint */
    /* checked at load against what kernels need; unknown: the opt-in call says */
    if (c->api.cuDeviceGetAttribute(&c->smem_optin, CU_ATTR_SMEM_OPTIN, c->dev) != 0 || c->smem_optin < 0)
        c->smem_optin = 0;
    char devname[100] = "?";
    c->api.cuDeviceGetName(devname, sizeof devname, c->dev);
    snprintf(c->name, sizeof c->name, "cuda: %s (%s)", devname, c->arch);
    if (!check(c, c->api.cuDevicePrimaryCtxRetain(&c->ctx, c->dev), "cuDevicePrimaryCtxRetain", msg, sizeof msg)) {
        say(why, n, "%s", msg);
        goto fail;
    }
    *out = c;
    return true;
fail:
    dlclose(c->lib);
    free(c);
    return false;
}

void rt_cuda_close(rt_cuda *c) {
    if (!c) return;
    c->api.cuDevicePrimaryCtxRelease_v2(c->dev);
    dlclose(c->lib);
    free(c);
}

const char *rt_cuda_name(const rt_cuda *c) { return c->name; }
const char *rt_cuda_arch(const rt_cuda *c) { return c->arch; }
int rt_cuda_sm_count(const rt_cuda *c) { return c->sms; }
uint32_t rt_cuda_smem_optin(const rt_cuda *c) { return (uint32_t)c->smem_optin; }
bool rt_cuda_asserted(const rt_cuda *c) { return c && c->asserted; }

bool rt_cuda_alloc(rt_cuda *c, size_t bytes, uint64_t *dptr, char *err, size_t n) {
    return enter(c, err, n) && check(c, c->api.cuMemAlloc_v2(dptr, bytes), "cuMemAlloc", err, n);
}

bool rt_cuda_free(rt_cuda *c, uint64_t dptr, char *err, size_t n) {
    return enter(c, err, n) && check(c, c->api.cuMemFree_v2(dptr), "cuMemFree", err, n);
}

/* cuPointerGetAttributes, unlike the other queries, answers "not a CUDA
 * pointer" with NULL attributes instead of an error, so probing a host
 * pointer leaves no failed call for compute-sanitizer to report. */
bool rt_cuda_range(rt_cuda *c, uint64_t dptr, uint64_t *base, size_t *size, char *err, size_t n) {
    CUcontext ctx = NULL;
    unsigned memtype = 0;
    CUdeviceptr start = 0;
    size_t bytes = 0;
    int attrs[4] = {CU_PTR_CONTEXT, CU_PTR_MEMORY_TYPE, CU_PTR_RANGE_START, CU_PTR_RANGE_SIZE};
    void *vals[4] = {&ctx, &memtype, &start, &bytes};
    if (!enter(c, err, n) ||
        !check(c, c->api.cuPointerGetAttributes(4, attrs, vals, dptr), "cuPointerGetAttributes", err, n))
        return false;
    if (memtype != CU_MEM_DEVICE || ctx != c->ctx || bytes == 0) {
        say(err, n, "not device memory, or not of this device's primary context");
        return false;
    }
    *base = start;
    *size = bytes;
    return true;
}

bool rt_cuda_write(rt_cuda *c, uint64_t dst, const void *src, size_t bytes, void *stream, char *err, size_t n) {
    if (!enter(c, err, n)) return false;
    return stream ? check(c, c->api.cuMemcpyHtoDAsync_v2(dst, src, bytes, stream), "cuMemcpyHtoDAsync", err, n)
                  : check(c, c->api.cuMemcpyHtoD_v2(dst, src, bytes), "cuMemcpyHtoD", err, n);
}

bool rt_cuda_read(rt_cuda *c, void *dst, uint64_t src, size_t bytes, void *stream, char *err, size_t n) {
    if (!enter(c, err, n)) return false;
    return stream ? check(c, c->api.cuMemcpyDtoHAsync_v2(dst, src, bytes, stream), "cuMemcpyDtoHAsync", err, n)
                  : check(c, c->api.cuMemcpyDtoH_v2(dst, src, bytes), "cuMemcpyDtoH", err, n);
}

bool rt_cuda_load(rt_cuda *c, const void *image, void **module, char *err, size_t n) {
    return enter(c, err, n) && check(c, c->api.cuModuleLoadData((CUmodule *)module, image), "cuModuleLoadData", err, n);
}

void rt_cuda_unload(rt_cuda *c, void *module) {
    if (c->api.cuCtxSetCurrent(c->ctx) == 0) c->api.cuModuleUnload(module);
}

/* With lazy loading (the driver's default from CUDA 12.2) a function is
 * loaded at its first launch; loading it here instead keeps that out of
 * a graph's capture, where a launch is only recorded. */
bool rt_cuda_function(rt_cuda *c, void *module, const char *name, void **fn, char *err, size_t n) {
    return enter(c, err, n) &&
           check(c, c->api.cuModuleGetFunction((CUfunction *)fn, module, name), "cuModuleGetFunction", err, n) &&
           (!c->api.cuFuncLoad || check(c, c->api.cuFuncLoad(*fn), "cuFuncLoad", err, n));
}

bool rt_cuda_allow_dynamic_smem(rt_cuda *c, void *fn, uint32_t bytes, char *err, size_t n) {
    return enter(c, err, n) && check(c, c->api.cuFuncSetAttribute(fn, CU_FUNC_ATTR_MAX_DYNAMIC_SMEM, (int)bytes),
                                     "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", err, n);
}

bool rt_cuda_launch(rt_cuda *c, void *fn, const uint32_t grid[3], uint32_t block_x, uint32_t dynamic_smem,
                    void **params, void *stream, char *err, size_t n) {
    return enter(c, err, n) && check(c, c->api.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block_x, 1, 1, dynamic_smem,
                                                              stream, params, NULL),
                                     "cuLaunchKernel", err, n);
}

bool rt_cuda_tensor_map(rt_cuda *c, void *map, uint32_t elem_bytes, uint32_t rank, uint64_t addr,
                        const uint64_t *dims, const uint64_t *strides, const uint32_t *box, uint32_t swizzle,
                        char *err, size_t n) {
    if (!c->api.cuTensorMapEncodeTiled) {
        say(err, n, "the CUDA driver has no cuTensorMapEncodeTiled (CUDA 12.0 and later have it)");
        return false;
    }
    if (rank < 1 || rank > CU_TMAP_MAX_RANK) {
        say(err, n, "a tensor map of rank %u (1 to %d)", rank, CU_TMAP_MAX_RANK);
        return false;
    }
    int type = elem_bytes == 1 ? CU_TMAP_UINT8 : elem_bytes == 2 ? CU_TMAP_UINT16 : elem_bytes == 4 ? CU_TMAP_UINT32
                                                                                               : CU_TMAP_UINT64;
    int sw = swizzle == 32    ? CU_TMAP_SWIZZLE_32B
             : swizzle == 64  ? CU_TMAP_SWIZZLE_64B
             : swizzle == 128 ? CU_TMAP_SWIZZLE_128B
                              : CU_TMAP_SWIZZLE_NONE;
    const uint32_t ones[CU_TMAP_MAX_RANK] = {1, 1, 1, 1, 1}; /* element strides */
    /* L2 promotion of 128 bytes: what CUTLASS and Triton ask for their operand tiles */
    return check(c,
                 c->api.cuTensorMapEncodeTiled(map, type, rank, (void *)(uintptr_t)addr, dims, strides, box, ones,
                                               CU_TMAP_INTERLEAVE_NONE, sw, CU_TMAP_L2_PROMOTION_128B,
                                               CU_TMAP_OOB_FILL_NONE),
                 "cuTensorMapEncodeTiled", err, n);
}

/* Flags 0: a blocking stream, ordered with the legacy default stream that
 * trt_launch and the synchronous copies use, so mixing the two is safe. */
bool rt_cuda_stream_create(rt_cuda *c, void **stream, char *err, size_t n) {
    return enter(c, err, n) && check(c, c->api.cuStreamCreate((CUstream *)stream, 0), "cuStreamCreate", err, n);
}

bool rt_cuda_stream_sync(rt_cuda *c, void *stream, char *err, size_t n) {
    return enter(c, err, n) && check(c, c->api.cuStreamSynchronize(stream), "cuStreamSynchronize", err, n);
}

void rt_cuda_stream_destroy(rt_cuda *c, void *stream) {
    if (c->api.cuCtxSetCurrent(c->ctx) == 0) c->api.cuStreamDestroy_v2(stream);
}

bool rt_cuda_sync(rt_cuda *c, char *err, size_t n) {
    return enter(c, err, n) && check(c, c->api.cuCtxSynchronize(), "cuCtxSynchronize", err, n);
}

/* Relaxed: the runtime refuses the calls a capture cannot hold itself
 * (runtime/graph.c), on every device alike, and the driver's stricter
 * modes would also forbid what is harmless, such as a query of a pointer. */
bool rt_cuda_capture_begin(rt_cuda *c, void *stream, char *err, size_t n) {
    return enter(c, err, n) && check(c, c->api.cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_RELAXED),
                                     "cuStreamBeginCapture", err, n);
}

bool rt_cuda_capture_end(rt_cuda *c, void *stream, void **exec, char *err, size_t n) {
    CUgraph g = NULL;
    if (exec) *exec = NULL;
    if (!enter(c, err, n) || !check(c, c->api.cuStreamEndCapture(stream, &g), "cuStreamEndCapture", err, n))
        return false;
    bool ok = !exec || check(c, c->api.cuGraphInstantiateWithFlags((CUgraphExec *)exec, g, 0),
                             "cuGraphInstantiateWithFlags", err, n);
    if (!ok) *exec = NULL; /* what the driver left there is not a graph */
    c->api.cuGraphDestroy(g); /* the executable graph is a copy */
    return ok;
}

bool rt_cuda_graph_launch(rt_cuda *c, void *exec, void *stream, char *err, size_t n) {
    return enter(c, err, n) && check(c, c->api.cuGraphLaunch(exec, stream), "cuGraphLaunch", err, n);
}

void rt_cuda_graph_destroy(rt_cuda *c, void *exec) {
    if (c->api.cuCtxSetCurrent(c->ctx) == 0) c->api.cuGraphExecDestroy(exec);
}

/* The driver answers a query of the legacy stream with
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT while any blocking stream of the
 * context captures, whichever trt_device (or other code) started it: the
 * context is the process's primary one, shared. */
bool rt_cuda_legacy_blocked(rt_cuda *c) {
    int status = 0;
    return c->api.cuCtxSetCurrent(c->ctx) == 0 &&
           c->api.cuStreamIsCapturing(CU_STREAM_LEGACY, &status) == CU_ERROR_STREAM_CAPTURE_IMPLICIT;
}
