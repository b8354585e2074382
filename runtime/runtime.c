/* runtime.c - the runtime API of include/tilec_rt.h over three devices: the
 * CPU device (the tile IR interpreter), the CUDA device (runtime/cuda.c)
 * and the emulator device (emu/emu.h, whose modules trt_compile makes:
 * host buffers as on the CPU, launches run the module's LLVM IR). Each is
 * a table of operations (runtime/device.h) that trt_open chooses; what
 * this file does is the same on every device: handles, checks, messages.
 *
 * A device owns a table of buffers addressed by handles that carry a
 * generation count, so a freed buffer's stale handle is recognized instead
 * of touching freed memory. Modules hold their kernels' tile IR; compiling
 * goes through libtilec (tilec_compile to tile IR text, which the tileir
 * reader parses back), and the text is cached per device by a hash of the
 * source and options. A device is reference counted by its modules so that
 * a kernel of a closed device reports TRT_ERR_CLOSED. */
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"
#include "runtime/interp.h"

/* A handle: the slot's index + 1 (bits 0 to 20), its generation (21 to
 * 43: a freed buffer's old handles stop matching) and the device's tag
 * (44 to 63), so that a buffer of one device given to another is an error,
 * not that device's buffer of the same number. */
enum { HANDLE_INDEX_BITS = 21, HANDLE_GEN_BITS = 23, HANDLE_TAG_BITS = 20 };
_Static_assert(RT_MAX_BUFFERS < (1 << HANDLE_INDEX_BITS), "every slot's index + 1 fits its bits");
_Static_assert(HANDLE_INDEX_BITS + HANDLE_GEN_BITS + HANDLE_TAG_BITS == 64, "a handle is 64 bits");
#define HANDLE_MASK(bits) ((UINT64_C(1) << (bits)) - 1)

/* What each kind opens; AUTO: the GPU, else the CPU device. */
static const rt_device_ops *const devices[] = {
    [TRT_DEVICE_AUTO] = &rt_cuda_device,
    [TRT_DEVICE_CPU] = &rt_cpu_device,
    [TRT_DEVICE_CUDA] = &rt_cuda_device,
    [TRT_DEVICE_EMU] = &rt_emu_device,
};

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
    const rt_device_ops *ops = devices[kind];
    void *impl = NULL;
    char open_why[512] = "";
    if (ops->open && !ops->open(&impl, open_why, sizeof open_why)) {
        if (kind != TRT_DEVICE_AUTO) {
            put_why(why, why_size, open_why);
            return TRT_ERR_NO_DEVICE;
        }
        ops = &rt_cpu_device; /* AUTO: the GPU when there is one */
        impl = NULL;
    }
    trt_device *d = calloc(1, sizeof *d);
    if (!d) {
        if (ops->close) ops->close(impl);
        put_why(why, why_size, "out of memory");
        return TRT_ERR_OUT_OF_MEMORY;
    }
    d->ops = ops;
    d->impl = impl;
    d->refs = 1;
    /* the one process-wide value the runtime keeps: a serial number, so
     * that two devices open at once never tag their handles alike */
    static _Atomic uint32_t serial;
    d->tag = (uint32_t)(atomic_fetch_add(&serial, 1) % HANDLE_MASK(HANDLE_TAG_BITS)) + 1;
    *out = d;
    put_why(why, why_size, "");
    return TRT_OK;
}

void rt_release(trt_device *d) {
    if (--d->refs > 0) return;
    for (cache_entry *e = d->cache, *next; e; e = next) {
        next = e->next;
        free(e->tir);
        free(e->cubin);
        free(e);
    }
    if (d->ops->close) d->ops->close(d->impl);
    free(d->bufs);
    free(d);
}

void trt_close(trt_device *d) {
    if (!d || d->closed) return;
    rt_end_captures(d); /* before freeing what they use */
    d->closed = true;
    for (uint32_t i = 0; i < d->nbufs; i++) {
        if (!d->bufs[i].live || d->bufs[i].borrowed) continue;
        d->ops->free(d, d->bufs[i].addr);
    }
    d->nbufs = 0;
    for (kept_module *k = d->kept, *next; k; k = next) { /* each holds a reference */
        next = k->next;
        trt_module_free(k->mod);
        free(k);
    }
    d->kept = NULL;
    rt_release(d);
}

const char *trt_device_name(const trt_device *d) { return d ? d->ops->name(d) : ""; }
const char *trt_device_arch(const trt_device *d) { return d && d->ops->arch ? d->ops->arch(d) : ""; }
const char *trt_last_error(const trt_device *d) { return d ? d->err : "no device"; }

/* ---- buffers ----------------------------------------------------------- */


static uint64_t make_handle(const trt_device *d, uint32_t index, uint32_t gen) {
    return (uint64_t)d->tag << (HANDLE_INDEX_BITS + HANDLE_GEN_BITS) |
           (gen & HANDLE_MASK(HANDLE_GEN_BITS)) << HANDLE_INDEX_BITS | (index + 1u);
}

static buf_slot *lookup(trt_device *d, trt_buffer b, uint32_t *index, trt_status *st) {
    uint32_t i = (uint32_t)(b.handle & HANDLE_MASK(HANDLE_INDEX_BITS));
    uint32_t gen = (uint32_t)(b.handle >> HANDLE_INDEX_BITS & HANDLE_MASK(HANDLE_GEN_BITS));
    uint32_t tag = (uint32_t)(b.handle >> (HANDLE_INDEX_BITS + HANDLE_GEN_BITS));
    if (d->closed) {
        *st = rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
        return NULL;
    }
    if (tag != d->tag) {
        *st = rt_fail(d, TRT_ERR_INVALID_HANDLE, "buffer handle %#llx is not a buffer of this device (%s)",
                      (unsigned long long)b.handle, b.handle ? "another device's?" : "none");
        return NULL;
    }
    if (i == 0 || i > d->nbufs || !d->bufs[i - 1].live || (d->bufs[i - 1].gen & HANDLE_MASK(HANDLE_GEN_BITS)) != gen) {
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
    out->handle = make_handle(d, i, d->bufs[i].gen);
}

trt_status trt_wrap(trt_device *d, uint64_t ptr, size_t bytes, trt_buffer *out) {
    uint32_t i = 0; /* set by new_slot when it succeeds */
    trt_status st = new_slot(d, bytes, out, &i);
    if (st != TRT_OK) return st;
    if (!ptr) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "cannot wrap a NULL pointer");
    if ((st = d->ops->check_wrap(d, ptr, bytes)) != TRT_OK) return st;
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
    if (st != TRT_OK || (st = rt_refuse_capturing(d, "allocate a buffer")) != TRT_OK) return st;
    if ((st = d->ops->alloc(d, bytes, &d->bufs[i].addr)) != TRT_OK) return st;
    take_slot(d, i, bytes, false, out);
    return TRT_OK;
}

trt_status trt_free(trt_device *d, trt_buffer b) {
    if (!d) return TRT_ERR_INVALID_ARGUMENT;
    trt_status st = TRT_OK;
    buf_slot *s = lookup(d, b, NULL, &st);
    if (!s) return st;
    /* a captured launch may use it, and on the GPU freeing waits for the device */
    if ((st = rt_refuse_capturing(d, "free a buffer")) != TRT_OK) return st;
    if (!s->borrowed) d->ops->free(d, s->addr); /* someone else's is only forgotten */
    s->addr = 0;
    s->size = 0;
    s->live = false;
    s->gen++;
    return TRT_OK;
}

/* A copy on stream s (NULL: the default stream, synchronous). */
static trt_status copy(trt_device *d, trt_buffer b, size_t offset, void *host, size_t bytes, bool to_device,
                       trt_stream *stream) {
    if (!d) return TRT_ERR_INVALID_ARGUMENT;
    trt_status st = TRT_OK;
    buf_slot *s = lookup(d, b, NULL, &st);
    if (!s) return st;
    if (stream && stream->capture)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT,
                       "a copy on a stream that is capturing a graph: a graph holds launches only; queue the copy "
                       "on the stream before trt_graph_launch, or after it");
    if (!stream && (st = rt_refuse_capturing(d, to_device ? "write a buffer (trt_write)" : "read a buffer (trt_read)")))
        return st;
    if (!host && bytes) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "host pointer is NULL");
    if (offset > s->size || bytes > s->size - offset)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "%zu bytes at offset %zu do not fit a %zu-byte buffer", bytes, offset,
                    s->size);
    void *h = stream ? stream->handle : NULL;
    return to_device ? d->ops->write(d, s->addr + offset, host, bytes, h) : d->ops->read(d, host, s->addr + offset, bytes, h);
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
    trt_status st = d->ops->stream_create(d, &s->handle);
    if (st != TRT_OK) {
        free(s);
        return st;
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
    if (s->capture)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT,
                       "waiting for a stream that is capturing a graph: its launches are recorded, not run; "
                       "end the capture first (trt_stream_end_capture)");
    return d->ops->stream_sync(d, s->handle);
}

void trt_stream_destroy(trt_stream *s) {
    if (!s) return;
    trt_device *d = s->dev;
    if (s->capture) trt_stream_end_capture(s, NULL); /* the capture ends, discarded */
    d->ops->stream_destroy(d, s->handle);
    free(s);
    rt_release(d);
}

trt_status trt_write_async(trt_stream *s, trt_buffer dst, size_t offset, const void *src, size_t bytes) {
    return s ? copy(s->dev, dst, offset, (void *)src, bytes, true, s) : TRT_ERR_INVALID_ARGUMENT;
}

trt_status trt_read_async(trt_stream *s, trt_buffer src, size_t offset, void *dst, size_t bytes) {
    return s ? copy(s->dev, src, offset, dst, bytes, false, s) : TRT_ERR_INVALID_ARGUMENT;
}

/* ---- modules ----------------------------------------------------------- */

/* What a module load while capturing is refused as (rt_refuse_capturing). */
static const char LOAD_WHILE_CAPTURING[] =
    "load a module (run the work once before capturing it, so that its kernels are compiled and loaded)";

trt_status rt_module_make(trt_device *d, const char *file, const char *tir_file, const char *tir, const void *image,
                          size_t image_size, trt_module **out) {
    trt_status st = rt_refuse_capturing(d, LOAD_WHILE_CAPTURING);
    if (st != TRT_OK) return st;
    trt_module *m = calloc(1, sizeof *m);
    if (!m) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    m->arena = tc_arena_new();
    m->file = tc_arena_strdup(m->arena, file);
    tc_diag diag;
    tc_diag_init(&diag);
    /* a reader error is at a line of the IR text; once read, the IR takes
     * the .tile name, which its loc(...) positions and runtime errors mean */
    tc_source s = {.name = tir_file ? tir_file : m->file, .text = tir, .len = strlen(tir)};
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
                                    ? tc_arena_printf(m->arena, "*%s", tir_elem_name(tir_type_pointee(t)))
                                    : tc_arena_strdup(m->arena, tir_elem_name(tir_type_elem(t)));
        }
    }
    m->dev = d;
    m->ops = d->ops;
    if ((st = m->ops->load(m, image, image_size)) != TRT_OK) {
        tc_arena_free(m->arena);
        free(m);
        return st;
    }
    d->refs++;
    m->refs = 1;
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
    if (!target || !d->ops->arch) { /* not a GPU */
        free(target);
        return TRT_OK;
    }
    char kind[16] = "", arch[16] = "";
    trt_status st = TRT_OK;
    if (sscanf(target, "%15s %15s", kind, arch) != 2 || (strcmp(kind, "ptx") && strcmp(kind, "cubin")))
        st = rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "%s: the sidecar's target line '%s' is not 'cubin|ptx sm_XY'", path,
                     target);
    else if (!rt_arch_compatible(!strcmp(kind, "ptx"), arch, d->ops->arch(d)))
        st = rt_fail(d, TRT_ERR_ARCH,
                     "%s holds %s for %s, which cannot run on this GPU (%s): build it with tilec --arch=%s, or load "
                     "PTX built for an older architecture",
                     path, strcmp(kind, "ptx") ? "machine code" : "PTX", arch, d->ops->arch(d),
                     d->ops->arch(d));
    free(target);
    return st;
}

trt_status trt_load(trt_device *d, const char *path, trt_module **out) {
    if (!d || !path || !out) return TRT_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    trt_status refused = rt_refuse_capturing(d, LOAD_WHILE_CAPTURING);
    if (refused != TRT_OK) return refused;
    if (d->ops->check_prebuilt) return d->ops->check_prebuilt(d, path);
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
                else if ((st = check_target(d, path, tir)) == TRT_OK)
                    st = rt_module_make(d, source, side_path, tir, image, image_len, out);
                free(source);
            }
        }
    }
    free(image);
    free(tir);
    free(side_path);
    return st;
}

/* An image's "// target: KIND ARCH" as is_ptx and arch; false if absent or
 * of another form. */
static bool image_target(const char *tir, bool *is_ptx, char arch[16]) {
    char *target = sidecar_field(tir, "target", NULL), kind[16] = "";
    bool ok = target && sscanf(target, "%15s %15s", kind, arch) == 2 && (!strcmp(kind, "ptx") || !strcmp(kind, "cubin"));
    *is_ptx = ok && !strcmp(kind, "ptx");
    free(target);
    return ok;
}

trt_status trt_load_images(trt_device *d, const trt_image *images, size_t n, trt_module **out) {
    if (!d || !out) return TRT_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (!images || !n) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "no images to load");
    trt_status st = rt_refuse_capturing(d, LOAD_WHILE_CAPTURING);
    if (st != TRT_OK) return st;
    for (size_t i = 0; i < n; i++)
        if (!images[i].tir || !images[i].data || !images[i].size)
            return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "image %zu has no %s", i, images[i].tir ? "code" : "sidecar");
    if (d->ops->check_prebuilt) return d->ops->check_prebuilt(d, "an embedded module");
    size_t pick = 0;
    if (d->ops->arch) { /* a GPU: the first image that runs on it */
        char have[512] = "";
        size_t used = 0;
        for (pick = 0; pick < n; pick++) {
            bool ptx;
            char arch[16];
            if (!image_target(images[pick].tir, &ptx, arch))
                return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "image %zu's sidecar has no 'target: cubin|ptx sm_XY' line",
                               pick);
            if (ptx && ((const char *)images[pick].data)[images[pick].size - 1])
                return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "image %zu is PTX without its ending NUL byte", pick);
            if (rt_arch_compatible(ptx, arch, d->ops->arch(d))) break;
            if (used < sizeof have)
                used += (size_t)snprintf(have + used, sizeof have - used, "%s%s %s", pick ? ", " : "",
                                         ptx ? "PTX" : "machine code", arch);
        }
        if (pick == n)
            return rt_fail(d, TRT_ERR_ARCH,
                           "none of the module's images runs on this GPU (%s): it has %s; build it with tilec "
                           "--emit=c --arch=%s",
                           d->ops->arch(d), have, d->ops->arch(d));
    }
    char *source = sidecar_field(images[pick].tir, "source", "<embedded module>");
    if (!source) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    st = rt_module_make(d, source, NULL, images[pick].tir, images[pick].data, images[pick].size, out);
    free(source);
    return st;
}

void trt_module_free(trt_module *m) {
    if (!m || --m->refs > 0) return; /* a graph still launches its kernels */
    trt_device *d = m->dev;
    if (d->capturing) { /* unloading may wait for the GPU, which a capture forbids: after it */
        m->next_deferred = d->deferred;
        d->deferred = m;
        return;
    }
    rt_module_unload(m);
}

void rt_module_unload(trt_module *m) {
    trt_device *d = m->dev;
    m->ops->unload(m);
    tc_arena_free(m->arena);
    free(m);
    rt_release(d);
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

static trt_status launch(trt_kernel *k, trt_stream *s, uint32_t gx, uint32_t gy, uint32_t gz, const trt_arg *args,
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
    return launch(k, s, gx, gy, gz, args, nargs);
}

/* Checks the arguments and hands them over, each in both forms of rt_arg,
 * to the table that runs the module, or to the graph its stream records. */
static trt_status launch(trt_kernel *k, trt_stream *s, uint32_t gx, uint32_t gy, uint32_t gz, const trt_arg *args,
                         size_t nargs) {
    trt_device *d = k->mod->dev;
    rt_arg ra[RT_MAX_ARGS];
    uint32_t grid[3] = {gx, gy, gz};
    trt_status st = rt_check_launch(k, grid, args, nargs, ra);
    if (st != TRT_OK) return st;
    if (s && s->capture) return rt_graph_record(s, k, grid, args, (uint32_t)nargs, ra);
    if (!s && (st = rt_refuse_capturing(d, "launch on the default stream (trt_launch)")) != TRT_OK) return st;
    return k->mod->ops->launch(k, s ? s->handle : NULL, grid, ra, (uint32_t)nargs);
}

trt_status rt_check_launch(trt_kernel *k, const uint32_t grid[3], const trt_arg *args, size_t nargs, rt_arg *ra) {
    trt_device *d = k->mod->dev;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    const tir_func *f = k->func;
    if (nargs != f->nparams)
        return rt_fail(d, TRT_ERR_ARGUMENTS, "kernel '%s' takes %u arguments, %zu given", f->name, f->nparams, nargs);
    if (nargs && !args) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "arguments are NULL");
    if (!grid[0] || !grid[1] || !grid[2]) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "grid dimensions must be at least 1");
    /* the GPU's limits on every device, so that what runs on the CPU launches on the GPU */
    if (grid[0] > RT_MAX_GRID_X || grid[1] > RT_MAX_GRID_YZ || grid[2] > RT_MAX_GRID_YZ)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT,
                       "grid (%u, %u, %u) of '%s' is larger than a GPU launches (limits are %u, %u, %u)", grid[0],
                       grid[1], grid[2], f->name, (unsigned)RT_MAX_GRID_X, (unsigned)RT_MAX_GRID_YZ,
                       (unsigned)RT_MAX_GRID_YZ);
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
        } else if (tir_elem_is_float(tir_type_elem(t))) {
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
                uint16_t h = rt_half_bits(a->f, tir_type_elem(t));
                memcpy(&bits, &h, 2);
            }
            ra[i] = (rt_arg){.kind = RT_ARG_FLOAT, .f = a->f, .bits = bits};
        } else {
            if (a->kind != TRT_ARG_INT)
                return rt_fail(d, TRT_ERR_ARGUMENTS, "argument %u ('%s') of '%s' must be an integer (%s)", i,
                            param_name(k, i), f->name, k->param_types[i]);
            if (tir_wrap_int(a->i, tir_type_elem(t)) != a->i)
                return rt_fail(d, TRT_ERR_ARGUMENTS, "argument %u ('%s'): %lld does not fit in %s", i, param_name(k, i),
                            (long long)a->i, k->param_types[i]);
            /* little endian: the low bytes are the narrow value */
            ra[i] = (rt_arg){.kind = RT_ARG_INT, .i = a->i, .bits = (uint64_t)a->i};
        }
    }
    return TRT_OK;
}

trt_status trt_sync(trt_device *d) {
    if (!d) return TRT_ERR_INVALID_ARGUMENT;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    trt_status st = rt_refuse_capturing(d, "wait for the device (trt_sync)");
    return st != TRT_OK ? st : d->ops->sync(d);
}

trt_status trt_set_time_limit(trt_device *d, double seconds) {
    if (!d) return TRT_ERR_INVALID_ARGUMENT;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (!(seconds >= 0) || isinf(seconds))
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "a time limit is a finite number of seconds >= 0 (0: none), not %g",
                       seconds);
    if (!d->ops->time_limit && seconds > 0)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "%s has no time limit for launches; the CPU device has",
                       d->ops->name(d));
    d->time_limit_s = seconds;
    return TRT_OK;
}

trt_status trt_emu_set_arch(trt_device *d, const char *arch) {
    if (!d) return TRT_ERR_INVALID_ARGUMENT;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (d->ops->kind != TRT_DEVICE_EMU)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "only the emulator device takes an arch; %s has its own",
                       d->ops->name(d));
    /* sm_ and two digits, perhaps an `a`: the compiler says whether it knows it */
    size_t n = arch ? strlen(arch) : 0;
    if (n < 5 || n >= RT_ARCH_MAX || strncmp(arch, "sm_", 3) != 0 || strspn(arch + 3, "0123456789") < 2 ||
        strspn(arch + 3, "0123456789") + 3 + (arch[n - 1] == 'a') != n)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "'%s' is not a GPU arch such as sm_80 or sm_90a", arch ? arch : "(null)");
    memcpy(d->emu_arch, arch, n + 1);
    return TRT_OK;
}

trt_status trt_set_print(trt_device *d, trt_print_fn fn, void *user) {
    if (!d) return TRT_ERR_INVALID_ARGUMENT;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (!d->ops->print_fn && fn)
        return rt_fail(d, TRT_ERR_INVALID_ARGUMENT,
                       "the GPU's printf writes to the process's stdout; a print function is for the CPU device only");
    d->print = fn;
    d->print_user = user;
    return TRT_OK;
}
