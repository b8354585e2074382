/* runtime.c - the runtime API of include/tilec_rt.h over three devices: the
 * CPU device (the tile IR interpreter), the CUDA device (runtime/cuda.c)
 * and the emulator device (emu/emu.h, whose modules trt_compile makes:
 * host buffers as on the CPU, launches run the module's LLVM IR).
 *
 * A device owns a table of buffers addressed by handles that carry a
 * generation count, so a freed buffer's stale handle is recognized instead
 * of touching freed memory. Modules hold their kernels' tile IR; compiling
 * goes through libtilec (tilec_compile to tile IR text, which the tileir
 * reader parses back), and the text is cached per device by a hash of the
 * source and options. A device is reference counted by its modules so that
 * a kernel of a closed device reports TRT_ERR_CLOSED. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"
#include "runtime/interp.h"

/* Formats into a temporary first: callers may pass d->err itself as an
 * argument, to wrap a lower layer's message in their own. */
trt_status rt_fail(trt_device *d, trt_status st, const char *fmt, ...) {
    if (!d) return st;
    char msg[RT_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(d->err, msg, sizeof msg);
    return st;
}

const char *trt_status_name(trt_status s) {
    static const char *const names[] = {"ok", "invalid argument", "invalid handle", "no device", "compile error",
                                        "not found", "bad launch arguments", "launch failed", "device closed",
                                        "out of memory", "wrong GPU architecture",
                                        "assertion failed"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown status";
}

/* The status of a failed CUDA call (d->err says which). After an assert
 * fails in a kernel the driver answers CUDA_ERROR_ASSERT to every call:
 * the context is lost, so the message says what the user must do. */
static trt_status cuda_failure(trt_device *d) {
    if (!rt_cuda_asserted(d->cuda)) return TRT_ERR_LAUNCH;
    return rt_fail(d, TRT_ERR_ASSERT,
                   "an assert failed in a kernel on the GPU (the kernel printed which, with its program and element, "
                   "on stdout): %s; the GPU context is lost: close this device (trt_close) and open it again "
                   "(if other code in this process uses the GPU too, the process must restart)",
                   d->err);
}

static void put_why(char *why, size_t n, const char *msg) {
    if (why && n) snprintf(why, n, "%s", msg);
}

trt_status trt_open(trt_device_kind kind, trt_device **out, char *why, size_t why_size) {
    if (!out) return TRT_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (kind != TRT_DEVICE_AUTO && kind != TRT_DEVICE_CPU && kind != TRT_DEVICE_CUDA && kind != TRT_DEVICE_EMU) {
        put_why(why, why_size, "unknown device kind");
        return TRT_ERR_INVALID_ARGUMENT;
    }
    rt_cuda *cuda = NULL;
    char cuda_why[512] = "";
    if (kind != TRT_DEVICE_CPU && kind != TRT_DEVICE_EMU && !rt_cuda_open(&cuda, cuda_why, sizeof cuda_why) &&
        kind == TRT_DEVICE_CUDA) {
        put_why(why, why_size, cuda_why);
        return TRT_ERR_NO_DEVICE;
    }
    trt_device *d = calloc(1, sizeof *d);
    if (!d) {
        rt_cuda_close(cuda);
        put_why(why, why_size, "out of memory");
        return TRT_ERR_OUT_OF_MEMORY;
    }
    d->kind = cuda ? TRT_DEVICE_CUDA : kind == TRT_DEVICE_EMU ? TRT_DEVICE_EMU : TRT_DEVICE_CPU; /* AUTO: the GPU when there is one */
    d->cuda = cuda;
    d->refs = 1;
    *out = d;
    put_why(why, why_size, "");
    return TRT_OK;
}

static void release(trt_device *d) {
    if (--d->refs > 0) return;
    for (cache_entry *e = d->cache, *next; e; e = next) {
        next = e->next;
        free(e->tir);
        free(e->cubin);
        free(e);
    }
    rt_cuda_close(d->cuda);
    free(d->bufs);
    free(d);
}

void trt_close(trt_device *d) {
    if (!d || d->closed) return;
    d->closed = true;
    for (uint32_t i = 0; i < d->nbufs; i++) {
        if (!d->bufs[i].live || d->bufs[i].borrowed) continue;
        if (d->cuda) rt_cuda_free(d->cuda, d->bufs[i].addr, NULL, 0);
        else free((void *)(uintptr_t)d->bufs[i].addr);
    }
    d->nbufs = 0;
    for (kept_module *k = d->kept, *next; k; k = next) { /* each holds a reference */
        next = k->next;
        trt_module_free(k->mod);
        free(k);
    }
    d->kept = NULL;
    release(d);
}

const char *trt_device_name(const trt_device *d) {
    return !d                           ? ""
           : d->cuda                    ? rt_cuda_name(d->cuda)
           : d->kind == TRT_DEVICE_EMU ? "emu (NVPTX LLVM IR emulator)"
                                        : "cpu (tile IR interpreter)";
}
const char *trt_device_arch(const trt_device *d) { return d && d->cuda ? rt_cuda_arch(d->cuda) : ""; }
const char *trt_last_error(const trt_device *d) { return d ? d->err : "no device"; }

/* ---- buffers ----------------------------------------------------------- */

static uint64_t make_handle(uint32_t index, uint32_t gen) { return ((uint64_t)gen << 32) | (index + 1u); }

static buf_slot *lookup(trt_device *d, trt_buffer b, uint32_t *index, trt_status *st) {
    uint32_t i = (uint32_t)(b.handle & 0xffffffffu), gen = (uint32_t)(b.handle >> 32);
    if (d->closed) {
        *st = rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
        return NULL;
    }
    if (i == 0 || i > d->nbufs || !d->bufs[i - 1].live || d->bufs[i - 1].gen != gen) {
        *st = rt_fail(d, TRT_ERR_INVALID_HANDLE, "buffer handle %#llx is not a live buffer of this device (freed?)",
                   (unsigned long long)b.handle);
        return NULL;
    }
    if (index) *index = i - 1;
    return &d->bufs[i - 1];
}

trt_status rt_buffer_size(trt_device *d, trt_buffer b, size_t *bytes) {
    trt_status st = TRT_OK;
    const buf_slot *s = lookup(d, b, NULL, &st);
    if (!s) return st;
    *bytes = s->size;
    return TRT_OK;
}

/* A free slot for a new buffer, growing the table; checks the device and
 * the size first. */
static trt_status new_slot(trt_device *d, size_t bytes, trt_buffer *out, uint32_t *index) {
    if (!d || !out) return TRT_ERR_INVALID_ARGUMENT;
    out->handle = 0;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (bytes == 0) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "a buffer cannot have 0 bytes");
    uint32_t i = 0;
    while (i < d->nbufs && d->bufs[i].live) i++; /* reuse a free slot */
    if (i == d->nbufs) {
        if (d->nbufs == RT_MAX_BUFFERS)
            return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "too many buffers (limit is %d)", RT_MAX_BUFFERS);
        if (d->nbufs == d->capbufs) {
            uint32_t cap = d->capbufs ? d->capbufs * 2 : 16;
            buf_slot *p = realloc(d->bufs, sizeof *p * cap);
            if (!p) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
            memset(p + d->capbufs, 0, sizeof *p * (cap - d->capbufs));
            d->bufs = p;
            d->capbufs = cap;
        }
        d->nbufs++;
    }
    *index = i;
    return TRT_OK;
}

static void take_slot(trt_device *d, uint32_t i, size_t bytes, bool borrowed, trt_buffer *out) {
    d->bufs[i].size = bytes; /* accesses are checked against what was asked for */
    d->bufs[i].live = true;
    d->bufs[i].borrowed = borrowed;
    out->handle = make_handle(i, d->bufs[i].gen);
}

trt_status trt_wrap(trt_device *d, uint64_t ptr, size_t bytes, trt_buffer *out) {
    uint32_t i = 0; /* set by new_slot when it succeeds */
    trt_status st = new_slot(d, bytes, out, &i);
    if (st != TRT_OK) return st;
    if (!ptr) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "cannot wrap a NULL pointer");
    if (d->cuda) {
        uint64_t base;
        size_t size;
        if (!rt_cuda_range(d->cuda, ptr, &base, &size, d->err, sizeof d->err))
            return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "cannot wrap %#llx: %s", (unsigned long long)ptr, d->err);
        if (bytes > size - (ptr - base))
            return rt_fail(d, TRT_ERR_INVALID_ARGUMENT,
                           "%zu bytes at %#llx run past the end of its %zu-byte allocation at %#llx", bytes,
                           (unsigned long long)ptr, size, (unsigned long long)base);
    }
    d->bufs[i].addr = ptr;
    take_slot(d, i, bytes, true, out);
    return TRT_OK;
}

trt_status trt_buffer_ptr(trt_device *d, trt_buffer b, uint64_t *ptr) {
    if (!d || !ptr) return TRT_ERR_INVALID_ARGUMENT;
    *ptr = 0;
    trt_status st = TRT_OK;
    buf_slot *s = lookup(d, b, NULL, &st);
    if (!s) return st;
    *ptr = s->addr;
    return TRT_OK;
}

trt_status trt_alloc(trt_device *d, size_t bytes, trt_buffer *out) {
    uint32_t i = 0; /* set by new_slot when it succeeds */
    trt_status st = new_slot(d, bytes, out, &i);
    if (st != TRT_OK) return st;
    if (d->cuda) {
        if (!rt_cuda_alloc(d->cuda, bytes, &d->bufs[i].addr, d->err, sizeof d->err)) return TRT_ERR_OUT_OF_MEMORY;
    } else {
        size_t rounded = (bytes + RT_BUFFER_ALIGN - 1) / RT_BUFFER_ALIGN * RT_BUFFER_ALIGN;
        void *p = rounded < bytes ? NULL : aligned_alloc(RT_BUFFER_ALIGN, rounded);
        if (!p) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
        d->bufs[i].addr = (uint64_t)(uintptr_t)p;
    }
    take_slot(d, i, bytes, false, out);
    return TRT_OK;
}

trt_status trt_free(trt_device *d, trt_buffer b) {
    if (!d) return TRT_ERR_INVALID_ARGUMENT;
    trt_status st = TRT_OK;
    buf_slot *s = lookup(d, b, NULL, &st);
    if (!s) return st;
    if (s->borrowed) { /* someone else's: only forgotten */
    } else if (d->cuda) {
        rt_cuda_free(d->cuda, s->addr, NULL, 0);
    } else {
        free((void *)(uintptr_t)s->addr);
    }
    s->addr = 0;
    s->size = 0;
    s->live = false;
    s->gen++;
    return TRT_OK;
}

static trt_status copy(trt_device *d, trt_buffer b, size_t offset, void *host, size_t bytes, bool to_device,
                       void *cu_stream) {
    if (!d) return TRT_ERR_INVALID_ARGUMENT;
    trt_status st = TRT_OK;
    buf_slot *s = lookup(d, b, NULL, &st);
    if (!s) return st;
    if (!host && bytes) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "host pointer is NULL");
    if (offset > s->size || bytes > s->size - offset)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "%zu bytes at offset %zu do not fit a %zu-byte buffer", bytes, offset,
                    s->size);
    if (d->cuda) {
        bool ok = to_device ? rt_cuda_write(d->cuda, s->addr + offset, host, bytes, cu_stream, d->err, sizeof d->err)
                            : rt_cuda_read(d->cuda, host, s->addr + offset, bytes, cu_stream, d->err, sizeof d->err);
        return ok ? TRT_OK : cuda_failure(d);
    }
    char *data = (char *)(uintptr_t)s->addr;
    if (to_device) memcpy(data + offset, host, bytes);
    else memcpy(host, data + offset, bytes);
    return TRT_OK;
}

trt_status trt_write(trt_device *d, trt_buffer dst, size_t offset, const void *src, size_t bytes) {
    return copy(d, dst, offset, (void *)src, bytes, true, NULL);
}

trt_status trt_read(trt_device *d, trt_buffer src, size_t offset, void *dst, size_t bytes) {
    return copy(d, src, offset, dst, bytes, false, NULL);
}

/* ---- streams ----------------------------------------------------------- */

trt_status trt_stream_create(trt_device *d, trt_stream **out) {
    if (!d || !out) return TRT_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    trt_stream *s = calloc(1, sizeof *s);
    if (!s) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    if (d->cuda && !rt_cuda_stream_create(d->cuda, &s->cu_stream, d->err, sizeof d->err)) {
        free(s);
        return cuda_failure(d);
    }
    s->dev = d;
    d->refs++;
    *out = s;
    return TRT_OK;
}

trt_status trt_stream_sync(trt_stream *s) {
    if (!s) return TRT_ERR_INVALID_ARGUMENT;
    trt_device *d = s->dev;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (d->cuda && !rt_cuda_stream_sync(d->cuda, s->cu_stream, d->err, sizeof d->err)) return cuda_failure(d);
    return TRT_OK;
}

void trt_stream_destroy(trt_stream *s) {
    if (!s) return;
    trt_device *d = s->dev;
    if (d->cuda) { /* the driver lets queued work finish first */
        rt_cuda_stream_sync(d->cuda, s->cu_stream, NULL, 0);
        rt_cuda_stream_destroy(d->cuda, s->cu_stream);
    }
    free(s);
    release(d);
}

trt_status trt_write_async(trt_stream *s, trt_buffer dst, size_t offset, const void *src, size_t bytes) {
    return s ? copy(s->dev, dst, offset, (void *)src, bytes, true, s->cu_stream) : TRT_ERR_INVALID_ARGUMENT;
}

trt_status trt_read_async(trt_stream *s, trt_buffer src, size_t offset, void *dst, size_t bytes) {
    return s ? copy(s->dev, src, offset, dst, bytes, false, s->cu_stream) : TRT_ERR_INVALID_ARGUMENT;
}

/* ---- modules ----------------------------------------------------------- */

/* A kernel with more than 48 KB of shared memory has it as the dynamic
 * array (lower/codegen.c), whose size its tile IR says (dynamic_smem):
 * checked against what the GPU allows a block, then opted in to once per
 * loaded function; every launch passes that size. False with the message
 * in d->err. */
static bool allow_dynamic_smem(trt_device *d, trt_kernel *k) {
    uint32_t need = k->func->dynamic_smem, most = rt_cuda_smem_optin(d->cuda);
    if (!need) return true;
    if (most && need > most) {
        snprintf(d->err, sizeof d->err,
                 "kernel '%s' needs %u bytes of shared memory per block, and this GPU (%s) allows at most %u; "
                 "compile it for this GPU's arch, with smaller tiles or fewer stages",
                 k->func->name, need, rt_cuda_arch(d->cuda), most);
        return false;
    }
    return rt_cuda_allow_dynamic_smem(d->cuda, k->cu_function, need, d->err, sizeof d->err);
}

trt_status rt_module_make(trt_device *d, const char *file, const char *tir_file, const char *tir, const void *image,
                          trt_module **out) {
    trt_status st = TRT_OK;
    trt_module *m = calloc(1, sizeof *m);
    if (!m) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    m->arena = tc_arena_new();
    m->file = tc_arena_strdup(m->arena, file);
    tc_diag diag;
    tc_diag_init(&diag);
    /* a reader error is at a line of the IR text; once read, the IR takes
     * the .tile name, which its loc(...) positions and runtime errors mean */
    tc_source s = {tir_file ? tir_file : m->file, tir, strlen(tir)};
    m->ir = tir_parse(m->arena, &s, &diag);
    if (m->ir) m->ir->source_name = m->file;
    /* a sidecar is a file on disk: check it as the compiler checks its IR,
     * since the interpreter relies on verified IR */
    if (!m->ir || !tir_verify(m->ir, NULL, &diag)) {
        st = rt_fail(d, TRT_ERR_COMPILE, "the kernels' tile IR is not valid:\n%s", diag.out.data);
        tc_diag_free(&diag);
        tc_arena_free(m->arena);
        free(m);
        return st;
    }
    tc_diag_free(&diag);
    m->nkernels = m->ir->nfuncs;
    m->kernels = TC_NEW_ARRAY(m->arena, trt_kernel, m->nkernels + 1);
    uint32_t i = 0;
    for (const tir_func *f = m->ir->funcs; f; f = f->next, i++) {
        trt_kernel *k = &m->kernels[i];
        k->mod = m;
        k->func = f;
        k->param_types = TC_NEW_ARRAY(m->arena, char *, f->nparams + 1);
        for (uint32_t p = 0; p < f->nparams; p++) {
            tir_type t = f->params[p]->type;
            k->param_types[p] = t.elem == TIR_PTR
                                    ? tc_arena_printf(m->arena, "*%s", tir_elem_name((tir_elem)t.pointee))
                                    : tc_arena_strdup(m->arena, tir_elem_name((tir_elem)t.elem));
        }
    }
    if (d->cuda) {
        bool ok = rt_cuda_load(d->cuda, image, &m->cu_module, d->err, sizeof d->err);
        for (uint32_t k = 0; ok && k < m->nkernels; k++)
            ok = rt_cuda_function(d->cuda, m->cu_module, m->kernels[k].func->name, &m->kernels[k].cu_function, d->err,
                                  sizeof d->err) &&
                 allow_dynamic_smem(d, &m->kernels[k]);
        if (!ok) {
            if (m->cu_module) rt_cuda_unload(d->cuda, m->cu_module);
            tc_arena_free(m->arena);
            free(m);
            return TRT_ERR_COMPILE;
        }
    }
    m->dev = d;
    d->refs++;
    *out = m;
    return TRT_OK;
}

/* The rest of the sidecar's header line "// NAME: ...", or fallback
 * (NULL allowed); NULL when out of memory or absent without a fallback. */
static char *sidecar_field(const char *tir, const char *name, const char *fallback) {
    char key[32];
    snprintf(key, sizeof key, "\n// %s: ", name);
    const char *p = strstr(tir, key);
    if (!p) return fallback ? strdup(fallback) : NULL;
    p += strlen(key);
    return strndup(p, strcspn(p, "\n"));
}

/* sm_XY[a] as the number XY (major X, the last digit the minor: sm_120 is
 * 12.0), and whether it ends in 'a'; -1 if not that form. */
static int sm_number(const char *arch, bool *specific) {
    *specific = false;
    if (strncmp(arch, "sm_", 3)) return -1;
    size_t digits = strspn(arch + 3, "0123456789");
    const char *rest = arch + 3 + digits;
    *specific = *rest == 'a';
    if (digits < 2 || digits > 3 || rest[*specific ? 1 : 0]) return -1;
    return atoi(arch + 3);
}

bool rt_arch_compatible(bool ptx, const char *built, const char *device) {
    bool built_a, device_a;
    int b = sm_number(built, &built_a), d = sm_number(device, &device_a);
    if (b < 0 || d < 0) return false;
    if (ptx) return d >= b && !built_a;                 /* the driver compiles PTX for newer GPUs */
    if (built_a) return b == d;                         /* sm_90a code runs on sm_90 only */
    return b / 10 == d / 10 && d % 10 >= b % 10;        /* machine code: same major, minor up */
}

/* A sidecar's "// target: cubin sm_80" against the GPU: a clear error
 * before the driver's CUDA_ERROR_NO_BINARY_FOR_GPU. Sidecars without the
 * line (older tilec) are left to the driver. */
static trt_status check_target(trt_device *d, const char *path, const char *tir) {
    char *target = sidecar_field(tir, "target", NULL);
    if (!target || !d->cuda) {
        free(target);
        return TRT_OK;
    }
    char kind[16] = "", arch[16] = "";
    trt_status st = TRT_OK;
    if (sscanf(target, "%15s %15s", kind, arch) != 2 || (strcmp(kind, "ptx") && strcmp(kind, "cubin")))
        st = rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "%s: the sidecar's target line '%s' is not 'cubin|ptx sm_XY'", path,
                     target);
    else if (!rt_arch_compatible(!strcmp(kind, "ptx"), arch, rt_cuda_arch(d->cuda)))
        st = rt_fail(d, TRT_ERR_ARCH,
                     "%s holds %s for %s, which cannot run on this GPU (%s): build it with tilec --arch=%s, or load "
                     "PTX built for an older architecture",
                     path, strcmp(kind, "ptx") ? "machine code" : "PTX", arch, rt_cuda_arch(d->cuda),
                     rt_cuda_arch(d->cuda));
    free(target);
    return st;
}

trt_status trt_load(trt_device *d, const char *path, trt_module **out) {
    if (!d || !path || !out) return TRT_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (d->kind == TRT_DEVICE_EMU)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT,
                       "%s: the emulator device runs the LLVM IR of modules compiled with trt_compile; a prebuilt "
                       "module has none",
                       path);
    size_t n = strlen(path);
    char *side_path = malloc(n + 5);
    if (!side_path) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(side_path, path, n);
    strcpy(side_path + n, ".tir");
    char *image = NULL, *tir = NULL;
    size_t image_len = 0, tir_len = 0;
    const char *err;
    trt_status st = TRT_OK;
    if (!tc_read_file(path, &image, &image_len, &err)) {
        st = rt_fail(d, TRT_ERR_NOT_FOUND, "cannot read %s: %s", path, err);
    } else if (!tc_read_file(side_path, &tir, &tir_len, &err)) {
        st = rt_fail(d, TRT_ERR_NOT_FOUND,
                     "cannot read %s (%s): the kernel signatures tilec writes next to %s are needed to load it",
                     side_path, err, path);
    } else {
        /* both texts must end in NUL: PTX for the driver, the IR for us */
        char *t = realloc(tir, tir_len + 1), *im = realloc(image, image_len + 1);
        if (t) tir = t;
        if (im) image = im;
        if (!t || !im) {
            st = rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
        } else {
            tir[tir_len] = 0;
            image[image_len] = 0;
            if (strlen(tir) != tir_len) {
                st = rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "%s is not a tilec sidecar (it holds NUL bytes)", side_path);
            } else {
                char *source = sidecar_field(tir, "source", path);
                if (!source) st = rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
                else if ((st = check_target(d, path, tir)) == TRT_OK) st = rt_module_make(d, source, side_path, tir, image, out);
                free(source);
            }
        }
    }
    free(image);
    free(tir);
    free(side_path);
    return st;
}

void trt_module_free(trt_module *m) {
    if (!m) return;
    trt_device *d = m->dev;
    if (m->cu_module) rt_cuda_unload(d->cuda, m->cu_module); /* the context lives until the last release */
    if (m->emu) m->emu_ops->free(m->emu);
    tc_arena_free(m->arena);
    free(m);
    release(d);
}

trt_status trt_get_kernel(trt_module *m, const char *name, trt_kernel **out) {
    if (!m || !name || !out) return TRT_ERR_INVALID_ARGUMENT;
    *out = NULL;
    for (uint32_t i = 0; i < m->nkernels; i++)
        if (!strcmp(m->kernels[i].func->name, name)) {
            *out = &m->kernels[i];
            return TRT_OK;
        }
    return rt_fail(m->dev, TRT_ERR_NOT_FOUND, "no kernel named '%s' in %s", name, m->file);
}

size_t trt_module_num_kernels(const trt_module *m) { return m ? m->nkernels : 0; }
trt_kernel *trt_module_kernel(trt_module *m, size_t i) { return m && i < m->nkernels ? &m->kernels[i] : NULL; }
const char *trt_kernel_name(const trt_kernel *k) { return k ? k->func->name : ""; }

size_t trt_kernel_num_params(const trt_kernel *k) { return k ? k->func->nparams : 0; }

const char *trt_kernel_param(const trt_kernel *k, size_t i, const char **type) {
    if (!k || i >= k->func->nparams) return NULL;
    if (type) *type = k->param_types[i];
    const char *name = k->func->params[i]->name;
    return name ? name : "";
}

/* ---- launches ---------------------------------------------------------- */

static trt_status launch(trt_kernel *k, void *cu_stream, uint32_t gx, uint32_t gy, uint32_t gz, const trt_arg *args,
                         size_t nargs);

static const char *param_name(const trt_kernel *k, uint32_t i) {
    const char *n = k->func->params[i]->name;
    return n ? n : "?";
}

trt_status trt_launch(trt_kernel *k, uint32_t gx, uint32_t gy, uint32_t gz, const trt_arg *args, size_t nargs) {
    return k ? launch(k, NULL, gx, gy, gz, args, nargs) : TRT_ERR_INVALID_ARGUMENT;
}

trt_status trt_launch_on(trt_stream *s, trt_kernel *k, uint32_t gx, uint32_t gy, uint32_t gz, const trt_arg *args,
                         size_t nargs) {
    if (!s || !k) return TRT_ERR_INVALID_ARGUMENT;
    if (s->dev != k->mod->dev)
        return rt_fail(k->mod->dev, TRT_ERR_INVALID_ARGUMENT, "the stream belongs to another device than kernel '%s'",
                       k->func->name);
    return launch(k, s->cu_stream, gx, gy, gz, args, nargs);
}

/* The emulator device: pointers as (buffer, offset), scalars as the bits
 * the GPU would get. */
static trt_status emu_launch_on(trt_device *d, trt_kernel *k, uint32_t gx, uint32_t gy, uint32_t gz, const rt_arg *ra,
                                uint32_t nargs) {
    trt_module *m = k->mod;
    if (!m->emu) return rt_fail(d, TRT_ERR_LAUNCH, "module has no emulator code");
    emu_arg ea[RT_MAX_ARGS];
    for (uint32_t i = 0; i < nargs; i++)
        ea[i] = (emu_arg){ra[i].kind == RT_ARG_PTR, ra[i].buffer, (uint64_t)ra[i].offset, ra[i].bits};
    emu_buffer *bufs = calloc(d->nbufs + 1, sizeof *bufs);
    if (!bufs) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < d->nbufs; i++)
        bufs[i] = (emu_buffer){d->bufs[i].live ? (void *)(uintptr_t)d->bufs[i].addr : NULL,
                               d->bufs[i].live ? d->bufs[i].size : 0};
    emu_launch l = {k->func->name, {gx, gy, gz}, ea, nargs, bufs, d->nbufs, d->print, d->print_user,
                    k->func->dynamic_smem, NULL};
    emu_result res = m->emu_ops->run(m->emu, &l, d->err, sizeof d->err);
    free(bufs);
    return res == EMU_OK ? TRT_OK : res == EMU_ASSERT ? TRT_ERR_ASSERT : TRT_ERR_LAUNCH;
}

static trt_status launch(trt_kernel *k, void *cu_stream, uint32_t gx, uint32_t gy, uint32_t gz, const trt_arg *args,
                         size_t nargs) {
    trt_device *d = k->mod->dev;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    const tir_func *f = k->func;
    if (nargs != f->nparams)
        return rt_fail(d, TRT_ERR_ARGUMENTS, "kernel '%s' takes %u arguments, %zu given", f->name, f->nparams, nargs);
    if (nargs && !args) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "arguments are NULL");
    if (!gx || !gy || !gz) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "grid dimensions must be at least 1");
    rt_arg ra[RT_MAX_ARGS];
    if (nargs > RT_MAX_ARGS) return rt_fail(d, TRT_ERR_ARGUMENTS, "too many arguments (limit is %d)", RT_MAX_ARGS);
    for (uint32_t i = 0; i < nargs; i++) {
        tir_type t = f->params[i]->type;
        const trt_arg *a = &args[i];
        if (t.elem == TIR_PTR) {
            if (a->kind != TRT_ARG_BUFFER)
                return rt_fail(d, TRT_ERR_ARGUMENTS, "argument %u ('%s') of '%s' must be a buffer (%s)", i, param_name(k, i),
                            f->name, k->param_types[i]);
            uint32_t index;
            trt_status st = TRT_OK;
            buf_slot *s = lookup(d, a->buffer, &index, &st);
            if (!s) return rt_fail(d, st, "argument %u ('%s') of '%s': %s", i, param_name(k, i), f->name, d->err);
            if (a->offset > s->size)
                return rt_fail(d, TRT_ERR_ARGUMENTS, "argument %u ('%s'): offset %zu is past the buffer's %zu bytes", i,
                            param_name(k, i), a->offset, s->size);
            if ((s->addr + a->offset) % RT_PTR_ALIGN)
                return rt_fail(d, TRT_ERR_ARGUMENTS,
                            "argument %u ('%s') must be %d-byte aligned (the compiler assumed it), but its offset is %zu",
                            i, param_name(k, i), RT_PTR_ALIGN, a->offset);
            ra[i] = (rt_arg){.kind = RT_ARG_PTR, .buffer = index, .offset = (int64_t)a->offset,
                             .bits = s->addr + a->offset};
        } else if (tir_elem_is_float((tir_elem)t.elem)) {
            if (a->kind != TRT_ARG_FLOAT)
                return rt_fail(d, TRT_ERR_ARGUMENTS, "argument %u ('%s') of '%s' must be a float (%s)", i, param_name(k, i),
                            f->name, k->param_types[i]);
            uint64_t bits = 0; /* the driver reads the parameter's size from the start */
            if (t.elem == TIR_F64) {
                memcpy(&bits, &a->f, 8);
            } else if (t.elem == TIR_F32) {
                float f32 = (float)a->f;
                memcpy(&bits, &f32, 4);
            } else {
                uint16_t h = rt_half_bits(a->f, (tir_elem)t.elem);
                memcpy(&bits, &h, 2);
            }
            ra[i] = (rt_arg){.kind = RT_ARG_FLOAT, .f = a->f, .bits = bits};
        } else {
            if (a->kind != TRT_ARG_INT)
                return rt_fail(d, TRT_ERR_ARGUMENTS, "argument %u ('%s') of '%s' must be an integer (%s)", i,
                            param_name(k, i), f->name, k->param_types[i]);
            if (tir_wrap_int(a->i, (tir_elem)t.elem) != a->i)
                return rt_fail(d, TRT_ERR_ARGUMENTS, "argument %u ('%s'): %lld does not fit in %s", i, param_name(k, i),
                            (long long)a->i, k->param_types[i]);
            /* little endian: the low bytes are the narrow value */
            ra[i] = (rt_arg){.kind = RT_ARG_INT, .i = a->i, .bits = (uint64_t)a->i};
        }
    }
    if (d->cuda) { /* one 8-byte cell per parameter */
        uint64_t cells[RT_MAX_ARGS];
        void *params[RT_MAX_ARGS];
        for (uint32_t i = 0; i < nargs; i++) {
            cells[i] = ra[i].bits;
            params[i] = &cells[i];
        }
        uint32_t grid[3] = {gx, gy, gz};
        if (!rt_cuda_launch(d->cuda, k->cu_function, grid, 32u * (uint32_t)(f->num_warps ? f->num_warps : 4),
                            f->dynamic_smem, params, cu_stream, d->err, sizeof d->err))
            return cuda_failure(d);
        return TRT_OK;
    }
    if (d->kind == TRT_DEVICE_EMU) return emu_launch_on(d, k, gx, gy, gz, ra, (uint32_t)nargs);
    rt_buffer *bufs = calloc(d->nbufs + 1, sizeof *bufs);
    if (!bufs) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < d->nbufs; i++)
        bufs[i] = (rt_buffer){d->bufs[i].live ? (void *)(uintptr_t)d->bufs[i].addr : NULL,
                              d->bufs[i].live ? d->bufs[i].size : 0};
    rt_launch l = {f, k->mod->file, bufs, d->nbufs, ra, (uint32_t)nargs, {gx, gy, gz}};
    tc_diag diag;
    tc_diag_init(&diag);
    rt_print_sink sink = {d->print, d->print_user};
    rt_run_result run = rt_interp_launch(&l, &sink, &diag);
    free(bufs);
    trt_status st = run == RT_RUN_OK       ? TRT_OK
                    : run == RT_RUN_ASSERT ? rt_fail(d, TRT_ERR_ASSERT, "%s", diag.out.data)
                                           : rt_fail(d, TRT_ERR_LAUNCH, "%s", diag.out.data);
    tc_diag_free(&diag);
    return st;
}

trt_status trt_sync(trt_device *d) {
    if (!d) return TRT_ERR_INVALID_ARGUMENT;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (d->cuda && !rt_cuda_sync(d->cuda, d->err, sizeof d->err)) return cuda_failure(d);
    return TRT_OK;
}

trt_status trt_set_print(trt_device *d, trt_print_fn fn, void *user) {
    if (!d) return TRT_ERR_INVALID_ARGUMENT;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (d->cuda && fn)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT,
                       "the GPU's printf writes to the process's stdout; a print function is for the CPU device only");
    d->print = fn;
    d->print_user = user;
    return TRT_OK;
}
