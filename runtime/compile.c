/* compile.c - trt_compile: .tile source to a module, through libtilec.
 *
 * Apart from runtime.c so that programs that only load prebuilt cubins
 * (trt_load) do not pull in the compiler and LLVM. libtilec turns the
 * source into tile IR text (with source locations, for runtime errors) and,
 * for the CUDA device, a cubin for the device's architecture; for the
 * emulator device, the LLVM IR the PTX backend would translate (after its
 * optimization, for sm_80 unless the options say), which emu/ loads.
 *
 * Both are cached per device in memory by a hash of the file name, source,
 * options, device kind and architecture. With TILEC_CACHE_DIR set they are
 * also kept on disk there, as KEY.tir and KEY.cubin (KEY.ll: the emulator
 * device's LLVM IR), where the key also
 * covers a hash of the compiler's own sources (TILEC_SOURCE_HASH, made at
 * build time), so a rebuilt compiler never picks up what an older one
 * made. Disk entries are written to a temporary name and renamed, so a
 * reader never sees half a file; a disk cache that cannot be read or
 * written is passed over silently, and an entry that does not load (a
 * damaged file) is deleted and compiled afresh.
 *
 * trt_compile_many (and the tuner and the stdlib through rt_batch) runs
 * libtilec for several requests on threads: libtilec keeps no state
 * between calls, so only the caches need the caller's thread, before and
 * after. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/internal.h"
#include "source_hash.h"
#include "tilec.h"

/* What libtilec emits for the code each device runs. */
static const tilec_emit emit_for[] = {
    [RT_CODE_TIR] = TILEC_EMIT_TIR,
    [RT_CODE_LLVM] = TILEC_EMIT_LLVM,
    [RT_CODE_CUBIN] = TILEC_EMIT_CUBIN,
};

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t hash_str(uint64_t h, const char *s) { return hash_bytes(h, s, strlen(s) + 1); }

/* The key of a compile: the compiler, the device kind, the source and the
 * options the caller chose (the rest of `o` follows from the device). */
static uint64_t cache_key(trt_device *d, const char *file, const char *src, size_t len, const tilec_options *o) {
    uint64_t h = 14695981039346656037ull;
    h = hash_str(h, TILEC_VERSION);
    h = hash_str(h, TILEC_SOURCE_HASH);
    h = hash_bytes(h, &d->ops->kind, sizeof d->ops->kind);
    h = hash_str(h, o->arch ? o->arch : "");
    h = hash_str(h, file);
    h = hash_bytes(h, &len, sizeof len);
    h = hash_bytes(h, src, len);
    h = hash_bytes(h, &o->num_warps, sizeof o->num_warps);
    h = hash_bytes(h, &o->no_asserts, sizeof o->no_asserts);
    h = hash_bytes(h, &o->num_stages, sizeof o->num_stages);
    h = hash_bytes(h, &o->exp2_ftz, sizeof o->exp2_ftz);
    h = hash_bytes(h, &o->line_info, sizeof o->line_info);
    h = hash_bytes(h, &o->warp_specialize, sizeof o->warp_specialize);
    h = hash_str(h, o->kernel ? o->kernel : "");
    for (size_t i = 0; i < o->ndefines; i++) {
        h = hash_str(h, o->defines[i].name);
        h = hash_bytes(h, &o->defines[i].value, sizeof o->defines[i].value);
    }
    return h;
}

/* ---- the disk cache ------------------------------------------------------ */

static char *disk_path(uint64_t key, const char *ext) {
    const char *dir = getenv("TILEC_CACHE_DIR");
    if (!dir || !*dir) return NULL;
    size_t n = strlen(dir) + 32;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%016llx.%s", dir, (unsigned long long)key, ext);
    return p;
}

static char *read_all(const char *path, size_t *size) {
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) return NULL;
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
        if (fread(buf, 1, (size_t)n, f) == (size_t)n) {
            buf[n] = 0;
            *size = (size_t)n;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

static void write_all(const char *path, const void *data, size_t size) {
    if (!path) return;
    char *dir = strdup(path);
    if (!dir) return;
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0, mkdir(dir, 0777); /* the cache folder itself; an error shows at fopen */
    free(dir);
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp) return;
    snprintf(tmp, n, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(data, 1, size, f) == size;
    if (f && fclose(f) != 0) ok = false;
    if (!ok || rename(tmp, path) != 0) remove(tmp);
    free(tmp);
}

/* An entry from disk, or NULL. */
static cache_entry *disk_load(uint64_t key, const char *ext) {
    bool want_cubin = ext != NULL;
    char *tp = disk_path(key, "tir"), *cp = want_cubin ? disk_path(key, ext) : NULL;
    size_t tn = 0, cn = 0;
    char *tir = read_all(tp, &tn), *cubin = want_cubin ? read_all(cp, &cn) : NULL;
    free(tp), free(cp);
    cache_entry *e = NULL;
    if (tir && (cubin || !want_cubin) && strlen(tir) == tn && (e = calloc(1, sizeof *e))) {
        e->tir = tir;
        e->cubin = cubin;
        e->cubin_size = cn;
        return e;
    }
    free(tir), free(cubin);
    return NULL;
}

static void disk_forget(uint64_t key, const char *ext) {
    char *tp = disk_path(key, "tir"), *cp = ext ? disk_path(key, ext) : NULL;
    if (tp) remove(tp);
    if (cp) remove(cp);
    free(tp), free(cp);
}

static void disk_store(uint64_t key, const cache_entry *e, const char *ext) {
    char *tp = disk_path(key, "tir");
    if (!tp) return;
    if (e->cubin) { /* the cubin first: a .tir without its cubin is never read */
        char *cp = disk_path(key, ext);
        write_all(cp, e->cubin, e->cubin_size);
        free(cp);
    }
    write_all(tp, e->tir, strlen(e->tir));
    free(tp);
}

/* ---- compiling ------------------------------------------------------------ */

/* The arch to compile for: the options', else the device's (the GPU's, the
 * emulator's default); NULL where the device runs tile IR. */
static const char *compile_arch(const trt_device *d, const trt_compile_options *o) {
    if (!d->ops->code_arch) return NULL;
    return o && o->arch ? o->arch : d->ops->code_arch(d);
}

/* The options libtilec compiles with for this device: the caller's, and
 * what the device runs. Made once per compile, for its cache key and for
 * libtilec alike. (trt_compile_options is the public subset of
 * tilec_options a caller may choose.) */
static tilec_options compile_options(const trt_device *d, const trt_compile_options *o) {
    bool gpu_code = d->ops->code != RT_CODE_TIR; /* a cubin, or LLVM IR for the emulator */
    tilec_options opt;
    tilec_options_init(&opt);
    /* the interpreter needs the tile IR with source lines, after
     * simplify (no layouts); the GPU a cubin, and the laid-out IR
     * (signatures, num_warps), which comes with it as the sidecar */
    opt.emit = emit_for[d->ops->code];
    opt.llvm_optimized = true;
    opt.passes = gpu_code ? NULL : "simplify";
    opt.print_locs = true;
    opt.sidecar = gpu_code;
    opt.line_info = d->ops->code == RT_CODE_LLVM; /* the emulator's errors name the .tile line */
    opt.arch = compile_arch(d, o);
    if (o) {
        opt.num_warps = o->num_warps;
        opt.defines = o->defines;
        opt.ndefines = o->ndefines;
        opt.no_asserts = o->no_asserts;
        opt.num_stages = o->num_stages;
        opt.exp2_ftz = o->exp2_ftz;
        opt.warp_specialize = o->warp_specialize;
        opt.kernel = o->kernel;
    }
    return opt;
}

/* A cache entry holding what libtilec gave (its data and sidecar taken
 * from out), or NULL when out of memory. */
static cache_entry *entry_from(bool gpu_code, tilec_output *out) {
    cache_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->tir = gpu_code ? out->sidecar : out->data;
    e->cubin = gpu_code ? out->data : NULL;
    e->cubin_size = gpu_code ? out->size : 0;
    if (gpu_code) out->sidecar = out->data = NULL;
    else out->data = NULL;
    return e;
}

static cache_entry *memory_find(const trt_device *d, uint64_t key) {
    for (cache_entry *e = d->cache; e; e = e->next)
        if (e->key == key) return e;
    return NULL;
}

/* Tile IR text (and, for the GPU, a cubin) for source and options: from
 * memory, from disk (unless use_disk is false; *from_disk says), or from
 * libtilec. */
static cache_entry *compile_cached(trt_device *d, const char *file, const char *src, size_t len,
                                   const trt_compile_options *o, bool use_disk, bool *from_disk, trt_status *st) {
    bool gpu_code = d->ops->code != RT_CODE_TIR; /* a cubin, or LLVM IR for the emulator */
    tilec_options opt = compile_options(d, o);
    uint64_t key = cache_key(d, file, src, len, &opt);
    *from_disk = false;
    cache_entry *e = memory_find(d, key);
    if (e) return e;
    e = use_disk ? disk_load(key, d->ops->image_ext) : NULL;
    *from_disk = e != NULL;
    if (!e) {
        tilec_output out;
        if (tilec_compile(file, src, len, &opt, &out) != TILEC_OK) {
            *st = rt_fail(d, TRT_ERR_COMPILE, "%s", out.diagnostics);
            tilec_output_free(&out);
            return NULL;
        }
        e = entry_from(gpu_code, &out);
        if (e) disk_store(key, e, d->ops->image_ext);
        tilec_output_free(&out);
        if (!e) {
            *st = rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
            return NULL;
        }
    }
    e->key = key;
    e->next = d->cache;
    d->cache = e;
    return e;
}

/* The emulator's module from the entry's LLVM IR, into m: the emulator
 * device's own table loads no code, since the runtime proper does not
 * link emu/ and LLVM; this library does, and the module runs on
 * rt_emu_code from here on (runtime/device.h). */
static trt_status attach_emu(trt_device *d, cache_entry *ce, trt_module *m) {
    if (d->ops->code != RT_CODE_LLVM) return TRT_OK;
    m->ops = &rt_emu_code;
    return m->ops->load(m, ce->cubin, ce->cubin_size);
}

trt_status trt_compile(trt_device *d, const char *file, const char *src, size_t len, const trt_compile_options *o,
                       trt_module **out) {
    if (!d || !out) return TRT_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    if (!src) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "source is NULL");
    if (!file) file = "<source>";
    trt_status st = rt_refuse_capturing(d, "compile a module (run the work once before capturing it, so that its "
                                           "kernels are compiled and loaded)");
    if (st != TRT_OK) return st;
    bool from_disk;
    cache_entry *ce = compile_cached(d, file, src, len, o, true, &from_disk, &st);
    if (!ce) return st;
    st = rt_module_make(d, file, NULL, ce->tir, ce->cubin, ce->cubin_size, out);
    if (st != TRT_OK && from_disk) { /* a damaged disk entry: drop it, compile */
        d->cache = ce->next;     /* it went in first */
        disk_forget(ce->key, d->ops->image_ext);
        free(ce->tir), free(ce->cubin), free(ce);
        ce = compile_cached(d, file, src, len, o, false, &from_disk, &st);
        if (!ce) return st;
        st = rt_module_make(d, file, NULL, ce->tir, ce->cubin, ce->cubin_size, out);
    }
    if (st == TRT_OK && (st = attach_emu(d, ce, *out)) != TRT_OK) {
        trt_module_free(*out);
        *out = NULL;
    }
    return st;
}

trt_status rt_compile_kept(trt_device *d, const char *file, const char *src, size_t len, const trt_compile_options *o,
                           trt_module **out) {
    if (!d || !out || !file || !src) return TRT_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    tilec_options opt = compile_options(d, o);
    uint64_t key = cache_key(d, file, src, len, &opt);
    for (kept_module *k = d->kept; k; k = k->next)
        if (k->key == key) {
            *out = k->mod;
            return TRT_OK;
        }
    kept_module *k = malloc(sizeof *k);
    if (!k) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    trt_status st = trt_compile(d, file, src, len, o, &k->mod);
    if (st != TRT_OK) {
        free(k);
        return st;
    }
    k->key = key;
    k->next = d->kept;
    d->kept = k;
    *out = k->mod;
    return TRT_OK;
}

/* ---- several compiles at once ---------------------------------------------- */

typedef struct par_queue {
    atomic_size_t next;
    size_t n;
    void (*fn)(void *ctx, size_t i);
    void *ctx;
} par_queue;

static void *par_worker(void *arg) {
    par_queue *q = arg;
    for (size_t i; (i = atomic_fetch_add(&q->next, 1)) < q->n;) q->fn(q->ctx, i);
    return NULL;
}

void rt_parallel_for(size_t n, void (*fn)(void *ctx, size_t i), void *ctx) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t threads = cpus > 0 ? (size_t)cpus : 1;
    if (threads > n) threads = n;
    if (threads > RT_MAX_COMPILE_THREADS) threads = RT_MAX_COMPILE_THREADS;
    par_queue q = {.n = n, .fn = fn, .ctx = ctx};
    atomic_init(&q.next, 0);
    pthread_t tids[RT_MAX_COMPILE_THREADS];
    size_t started = 0;
    /* a thread that cannot be started leaves its share to the others: this
     * thread runs the queue too, so everything is done whatever starts */
    while (started + 1 < threads && !pthread_create(&tids[started], NULL, par_worker, &q)) started++;
    par_worker(&q);
    for (size_t i = 0; i < started; i++) pthread_join(tids[i], NULL);
}

/* One request of a batch. */
typedef struct batch_item {
    const trt_compile_request *req;
    tilec_options opt;
    uint64_t key;
    bool todo;          /* libtilec runs on it: in no cache, and the first of its key in the batch */
    cache_entry *entry; /* what it gave, until rt_batch_end takes it */
    char *diagnostics;  /* libtilec's messages when it failed; else NULL */
} batch_item;

struct rt_batch {
    trt_device *d;
    bool gpu_code;
    const char *image_ext; /* the device's disk cache files */
    size_t n;
    batch_item items[];
};

rt_batch *rt_batch_begin(trt_device *d, const trt_compile_request *reqs, size_t n) {
    rt_batch *b = calloc(1, sizeof *b + n * sizeof b->items[0]);
    if (!b) return NULL;
    *b = (rt_batch){.d = d, .gpu_code = d->ops->code != RT_CODE_TIR, .image_ext = d->ops->image_ext, .n = n};
    for (size_t i = 0; i < n; i++) {
        batch_item *it = &b->items[i];
        it->req = &reqs[i];
        it->opt = compile_options(d, reqs[i].options);
        if (!reqs[i].source) continue; /* left for trt_compile to refuse */
        it->key = cache_key(d, reqs[i].filename ? reqs[i].filename : "<source>", reqs[i].source, reqs[i].len, &it->opt);
        it->todo = !memory_find(d, it->key);
        for (size_t j = 0; j < i && it->todo; j++) it->todo = b->items[j].key != it->key;
    }
    return b;
}

void rt_batch_work(rt_batch *b, size_t i) {
    batch_item *it = &b->items[i];
    if (!it->todo) return;
    /* an entry on disk is trt_compile's to load (and to drop if damaged) */
    cache_entry *on_disk = disk_load(it->key, b->image_ext);
    if (on_disk) {
        free(on_disk->tir), free(on_disk->cubin), free(on_disk);
        it->todo = false;
        return;
    }
    const trt_compile_request *r = it->req;
    tilec_output out;
    if (tilec_compile(r->filename ? r->filename : "<source>", r->source, r->len, &it->opt, &out) == TILEC_OK)
        it->entry = entry_from(b->gpu_code, &out);
    else
        it->diagnostics = out.diagnostics, out.diagnostics = NULL;
    tilec_output_free(&out);
}

void rt_batch_end(rt_batch *b) {
    for (size_t i = 0; i < b->n; i++) {
        batch_item *it = &b->items[i];
        cache_entry *e = it->entry;
        if (!e) continue;
        it->entry = NULL;
        disk_store(it->key, e, b->image_ext);
        e->key = it->key;
        e->next = b->d->cache;
        b->d->cache = e;
    }
}

const char *rt_batch_error(const rt_batch *b, size_t i) { return b->items[i].diagnostics; }

void rt_batch_free(rt_batch *b) {
    if (!b) return;
    for (size_t i = 0; i < b->n; i++) {
        cache_entry *e = b->items[i].entry;
        if (e) free(e->tir), free(e->cubin), free(e);
        free(b->items[i].diagnostics);
    }
    free(b);
}

static void batch_job(void *ctx, size_t i) { rt_batch_work(ctx, i); }

void rt_compile_prefetch(trt_device *d, const trt_compile_request *reqs, size_t n) {
    rt_batch *b = rt_batch_begin(d, reqs, n);
    if (!b) return; /* out of memory: trt_compile compiles each, one at a time */
    rt_parallel_for(n, batch_job, b);
    rt_batch_end(b);
    rt_batch_free(b);
}

trt_status trt_compile_many(trt_device *d, const trt_compile_request *reqs, size_t n, trt_module **out,
                            trt_status *status) {
    if (!d || (n && (!reqs || !out))) return TRT_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; i++) {
        out[i] = NULL;
        if (status) status[i] = TRT_ERR_INVALID_ARGUMENT;
    }
    if (d->closed) return rt_fail(d, TRT_ERR_CLOSED, "the device was closed");
    for (size_t i = 0; i < n; i++)
        if (!reqs[i].source) return rt_fail(d, TRT_ERR_INVALID_ARGUMENT, "trt_compile_many: request %zu: source is NULL", i);
    trt_status st = rt_refuse_capturing(d, "compile modules (run the work once before capturing it, so that its "
                                           "kernels are compiled and loaded)");
    if (st != TRT_OK) return st;
    rt_batch *b = rt_batch_begin(d, reqs, n);
    if (!b) return rt_fail(d, TRT_ERR_OUT_OF_MEMORY, "out of memory");
    rt_parallel_for(n, batch_job, b);
    rt_batch_end(b);
    /* each module as trt_compile gives it, now from the caches; the first
     * failure's message is made last, since each call sets the last error */
    size_t first = n;
    trt_status first_st = TRT_OK;
    char *first_msg = NULL;
    for (size_t i = 0; i < n; i++) {
        const trt_compile_request *r = &reqs[i];
        const char *diag = rt_batch_error(b, i);
        trt_status s = diag ? rt_fail(d, TRT_ERR_COMPILE, "%s", diag)
                            : trt_compile(d, r->filename, r->source, r->len, r->options, &out[i]);
        if (status) status[i] = s;
        if (s != TRT_OK && first == n) {
            first = i, first_st = s;
            first_msg = strdup(d->err);
        }
    }
    rt_batch_free(b);
    if (first == n) return TRT_OK;
    st = rt_fail(d, first_st, "request %zu: %s", first, first_msg ? first_msg : "out of memory");
    free(first_msg);
    return st;
}
