/* jitlink.c - the in-process assembler: PTX to a cubin through the CUDA
 * toolkit's JIT-link library, libnvJitLink, loaded with dlopen.
 *
 * No CUDA header is needed to build this: the few functions and values
 * used are declared here from nvJitLink.h (CUDA 12 and 13 share them; the
 * exported names carry the API version, __nvJitLinkCreate_13_0 or _12_0,
 * which the header's inline wrappers hide). The library is looked up on
 * every call and kept nowhere: dlopen with RTLD_NODELETE, dlclose at the
 * end, so the first call maps it (5-6 ms from a warm page cache) and the
 * later ones find it mapped, with no state of ours between calls (the
 * project keeps no global mutable state) and the environment read afresh
 * each time.
 *
 * nvJitLink compiles the PTX with its built-in ptxas as relocatable code
 * (ptxas -c) and links that alone into the cubin: the SASS is that of
 * `ptxas -c` with the linker's addresses filled in, not whole-program
 * ptxas's (other scheduling, often more registers, setmaxnreg ignored),
 * and the cubin's .note.nv.tkinfo names nvJitLink; which is why
 * assemble.c takes ptxas first. docs/design.md, "PTX to a cubin", has the
 * comparison. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ptx/ptx.h"

enum { JL_PATH_MAX = 4096, JL_MSG_MAX = 4000 };

/* From nvJitLink.h: the results and the input kind used here. */
typedef struct jl_link *jl_handle;
enum { JL_SUCCESS = 0, JL_ERROR_PTX_COMPILE = 4, JL_INPUT_PTX = 2 };

static const char *const jl_result_names[] = {
    "NVJITLINK_SUCCESS",           "NVJITLINK_ERROR_UNRECOGNIZED_OPTION", "NVJITLINK_ERROR_MISSING_ARCH",
    "NVJITLINK_ERROR_INVALID_INPUT", "NVJITLINK_ERROR_PTX_COMPILE",      "NVJITLINK_ERROR_NVVM_COMPILE",
    "NVJITLINK_ERROR_INTERNAL",    "NVJITLINK_ERROR_THREADPOOL",          "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
    "NVJITLINK_ERROR_FINALIZE",    "NVJITLINK_ERROR_NULL_INPUT",          "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
    "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE", "NVJITLINK_ERROR_ARCH_MISMATCH", "NVJITLINK_ERROR_OUTDATED_LIBRARY",
    "NVJITLINK_ERROR_MISSING_FATBIN", "NVJITLINK_ERROR_UNRECOGNIZED_ARCH", "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
    "NVJITLINK_ERROR_LTO_NOT_ENABLED",
};

static const char *jl_result_name(int r) {
    return r >= 0 && (size_t)r < sizeof jl_result_names / sizeof jl_result_names[0] ? jl_result_names[r]
                                                                                   : "an unknown nvJitLink error";
}

/* The library, opened for one call. */
typedef struct jl_lib {
    void *dl;
    char path[JL_PATH_MAX]; /* as passed to dlopen */
    unsigned major, minor;  /* 0.0: the library does not say (before 12.3) */
    int (*create)(jl_handle *, uint32_t, const char *const *);
    int (*destroy)(jl_handle *);
    int (*add_data)(jl_handle, int, const void *, size_t, const char *);
    int (*complete)(jl_handle);
    int (*cubin_size)(jl_handle, size_t *);
    int (*cubin)(jl_handle, void *);
    int (*error_log_size)(jl_handle, size_t *);
    int (*error_log)(jl_handle, char *);
    int (*info_log_size)(jl_handle, size_t *);
    int (*info_log)(jl_handle, char *);
} jl_lib;

__attribute__((format(printf, 3, 4))) static void say(char *why, size_t n, const char *fmt, ...) {
    if (!why || !n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
}

/* Resolves the functions in l->dl under the API version the library
 * exports (13.0, else 12.0); false with why when one is missing. */
static bool bind(jl_lib *l, char *why, size_t n) {
    static const char *const apis[] = {"13_0", "12_0"};
    struct {
        const char *name;
        void **slot;
    } syms[] = {
#define SYM(f, name) {name, (void **)&l->f}
        SYM(create, "Create"),
        SYM(destroy, "Destroy"),
        SYM(add_data, "AddData"),
        SYM(complete, "Complete"),
        SYM(cubin_size, "GetLinkedCubinSize"),
        SYM(cubin, "GetLinkedCubin"),
        SYM(error_log_size, "GetErrorLogSize"),
        SYM(error_log, "GetErrorLog"),
        SYM(info_log_size, "GetInfoLogSize"),
        SYM(info_log, "GetInfoLog"),
#undef SYM
    };
    for (size_t a = 0; a < sizeof apis / sizeof apis[0]; a++) {
        size_t found = 0;
        for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
            char name[64];
            snprintf(name, sizeof name, "__nvJitLink%s_%s", syms[i].name, apis[a]);
            *syms[i].slot = dlsym(l->dl, name);
            found += *syms[i].slot != NULL;
        }
        if (found == sizeof syms / sizeof syms[0]) {
            int (*version)(unsigned *, unsigned *);
            *(void **)&version = dlsym(l->dl, "nvJitLinkVersion");
            if (!version || version(&l->major, &l->minor) != JL_SUCCESS) l->major = l->minor = 0;
            return true;
        }
    }
    say(why, n, "%s: not a usable libnvJitLink (no __nvJitLinkCreate_13_0 or _12_0 API)", l->path);
    return false;
}

/* dlopens path into l; false with dlerror's words in why. */
static bool open_one(jl_lib *l, const char *path, char *why, size_t n) {
    snprintf(l->path, sizeof l->path, "%s", path);
    l->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!l->dl) {
        const char *e = dlerror();
        say(why, n, "cannot load %s: %s", path, e ? e : "?");
        return false;
    }
    if (bind(l, why, n)) return true;
    dlclose(l->dl);
    l->dl = NULL;
    return false;
}

/* Finds and opens the library: $TILEC_NVJITLINK if set (that file or
 * none), else libnvJitLink.so.13 or .so in $CUDA_HOME/lib64, then
 * /usr/local/cuda/lib64, then wherever the loader finds those names. */
static bool jl_open(jl_lib *l, char *why, size_t n) {
    memset(l, 0, sizeof *l);
    const char *forced = getenv("TILEC_NVJITLINK");
    if (forced) {
        if (!*forced) {
            say(why, n, "TILEC_NVJITLINK is empty: nvJitLink not used");
            return false;
        }
        return open_one(l, forced, why, n);
    }
    static const char *const names[] = {"libnvJitLink.so.13", "libnvJitLink.so"};
    const char *home = getenv("CUDA_HOME");
    const char *dirs[] = {home && *home ? home : NULL, "/usr/local/cuda"};
    char path[JL_PATH_MAX];
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++)
        for (size_t i = 0; dirs[d] && i < sizeof names / sizeof names[0]; i++) {
            snprintf(path, sizeof path, "%s/lib64/%s", dirs[d], names[i]);
            if (open_one(l, path, NULL, 0)) return true;
        }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (open_one(l, names[i], NULL, 0)) return true;
    say(why, n, "libnvJitLink not found: set CUDA_HOME or TILEC_NVJITLINK");
    return false;
}

static void jl_close(jl_lib *l) {
    if (l->dl) dlclose(l->dl); /* RTLD_NODELETE: it stays mapped for the next call */
    l->dl = NULL;
}

static void describe(const jl_lib *l, char *buf, size_t n) {
    if (l->major) snprintf(buf, n, "libnvJitLink %u.%u, %s", l->major, l->minor, l->path);
    else snprintf(buf, n, "libnvJitLink, %s", l->path);
}

bool ptx_jitlink_find(char *buf, size_t bufsize) {
    jl_lib l;
    char why[JL_PATH_MAX + 128];
    if (!jl_open(&l, why, sizeof why)) {
        snprintf(buf, bufsize, "%s", why);
        return false;
    }
    describe(&l, buf, bufsize);
    jl_close(&l);
    return true;
}

/* A log of the link (error or info), malloc'd and NUL-terminated, or NULL. */
static char *get_log(jl_handle h, int (*size_of)(jl_handle, size_t *), int (*get)(jl_handle, char *)) {
    size_t size = 0;
    if (size_of(h, &size) != JL_SUCCESS || size <= 1) return NULL;
    char *s = malloc(size + 1);
    if (!s) return NULL;
    if (get(h, s) != JL_SUCCESS) {
        free(s);
        return NULL;
    }
    s[size] = 0;
    return s;
}

/* ptxas's own report, as `ptxas -v` prints it: nvJitLink marks ptxas's
 * continuation lines "ptxas         ." where ptxas indents them, and adds
 * the linker's summary ("info    : ..."), which says again what ptxas said
 * per function and is left out, so that the report reads (and parses,
 * tests/stdlib-no-spills.sh) the same from either assembler. */
static void put_report(tc_strbuf *info, const char *log) {
    static const char cont[] = "ptxas         .";
    for (const char *line = log; *line;) {
        size_t len = strcspn(line, "\n");
        const char *next = line + len + (line[len] == '\n');
        if (!strncmp(line, cont, sizeof cont - 1)) {
            size_t skip = sizeof cont - (line[sizeof cont - 1] == ' ' ? 0 : 1); /* and one of its spaces */
            tc_strbuf_putn(info, line + skip, (size_t)(next - line) - skip);
        } else if (strncmp(line, "info    :", 9) && len) {
            tc_strbuf_putn(info, line, (size_t)(next - line));
        }
        line = next;
    }
    if (info->len && info->data[info->len - 1] != '\n') tc_strbuf_puts(info, "\n");
}

bool ptx_jitlink_assemble(const char *ptx, size_t len, const ptx_asm_options *o, char **cubin, size_t *cubin_size,
                          tc_strbuf *info, tc_diag *diag) {
    *cubin = NULL;
    *cubin_size = 0;
    if (!ptx_arch_valid(o->arch)) { /* nvJitLink 13.0 exits (or crashes) on an arch it does not know */
        tc_error_plain(diag, "nvJitLink: unknown arch '%s'", o->arch ? o->arch : "(none)");
        return false;
    }
    jl_lib l;
    char why[JL_PATH_MAX + 128];
    if (!jl_open(&l, why, sizeof why)) {
        tc_error_plain(diag, "nvJitLink not available: %s", why);
        return false;
    }
    char archflag[64], optflag[8], who[JL_PATH_MAX + 64];
    snprintf(archflag, sizeof archflag, "-arch=%s", o->arch);
    snprintf(optflag, sizeof optflag, "-O%d", o->opt_level ? 3 : 0);
    describe(&l, who, sizeof who);
    const char *opts[3] = {archflag, optflag, "-verbose"};
    jl_handle h = NULL;
    int r = l.create(&h, o->verbose ? 3 : 2, opts);
    bool ok = false;
    char *err = NULL, *log = NULL;
    if (r != JL_SUCCESS) {
        tc_error_plain(diag, "nvJitLink failed (%s): %s for %s %s", who, jl_result_name(r), archflag, optflag);
        goto done;
    }
    r = l.add_data(h, JL_INPUT_PTX, ptx, len, "in.ptx");
    if (r == JL_SUCCESS) r = l.complete(h);
    err = get_log(h, l.error_log_size, l.error_log);
    log = get_log(h, l.info_log_size, l.info_log);
    if (r != JL_SUCCESS) {
        /* the PTX did not assemble: the same words as the ptxas process's
         * failure, with nvJitLink's log (ptxas's messages among them) */
        size_t n = err ? strlen(err) : 0;
        if (n > JL_MSG_MAX) n = JL_MSG_MAX;
        while (n && (err[n - 1] == '\n' || err[n - 1] == ' ')) n--; /* the diag ends the line */
        if (n) tc_error_plain(diag, "ptxas failed (%s): %.*s", who, (int)n, err);
        else tc_error_plain(diag, "ptxas failed (%s): %s", who, jl_result_name(r));
        goto done;
    }
    size_t size = 0;
    if (l.cubin_size(h, &size) != JL_SUCCESS || size == 0) {
        tc_error_plain(diag, "nvJitLink produced no cubin (%s)", who);
        goto done;
    }
    char *bin = malloc(size);
    if (!bin || l.cubin(h, bin) != JL_SUCCESS) {
        free(bin);
        tc_error_plain(diag, "nvJitLink produced no cubin (%s)", who);
        goto done;
    }
    *cubin = bin;
    *cubin_size = size;
    if (info && log) put_report(info, log);
    ok = true;
done:
    free(err);
    free(log);
    if (h) l.destroy(&h);
    jl_close(&l);
    return ok;
}
