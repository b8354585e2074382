/* emit_c.c - `tilec --emit=c`: a module as C source a program compiles in.
 *
 * For each architecture asked, the kernels compiled to a cubin with their
 * sidecar; then the PTX of the newest architecture (not an sm_XYa one,
 * whose code runs on its GPU only), for GPUs newer than all of them, which
 * the driver compiles at load. PREFIX.c holds them as byte arrays (a
 * trt_image each, machine code first, as trt_load_images takes them) and
 * one typed launcher per kernel; PREFIX.h declares them. A launcher's
 * parameters are the kernel's runtime parameters in C types (a pointer is
 * a trt_ptr, a buffer and an offset; i1 is bool; f16, bf16 and f32 are
 * float); the const values are the ones of this compilation (-D, else the
 * source's defaults), named in the header. The program needs the runtime
 * only (trt_load_images; no compiler, no LLVM). Names come from the
 * kernels' tile IR (the first sidecar), read back with the tile IR reader.
 *
 * The images compile at once, a thread each (libtilec keeps no state
 * between calls); their messages are printed afterwards in arch order, up
 * to the first image that failed, as one after another would. */
#include "tools/emit_c.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/support.h"
#include "tileir/tileir.h"

enum {
    EMIT_C_BYTES_PER_LINE = 16, /* of an image's array in PREFIX.c */
    EMIT_C_MAX_IDENT = 128      /* a C name made from the prefix and a kernel's or parameter's name */
};

/* One image: the code, its sidecar, what it is, and what compiles it. */
typedef struct image {
    tilec_output out;
    const char *arch;
    bool ptx;
    const char *input, *text;
    size_t len;
    tilec_options opt;
    tilec_status st;
} image;

static void *compile_image(void *arg) {
    image *m = arg;
    m->st = tilec_compile(m->input, m->text, m->len, &m->opt, &m->out);
    return NULL;
}

/* C's keywords (C11), which a tile parameter may be named and a C one not. */
static bool c_keyword(const char *s) {
    static const char *const kw[] = {
        "auto",     "break",    "case",     "char",       "const",        "continue", "default",  "do",
        "double",   "else",     "enum",     "extern",     "float",        "for",      "goto",     "if",
        "inline",   "int",      "long",     "register",   "restrict",     "return",   "short",    "signed",
        "sizeof",   "static",   "struct",   "switch",     "typedef",      "union",    "unsigned", "void",
        "volatile", "while",    "_Alignas", "_Alignof",   "_Atomic",      "_Bool",    "_Complex", "_Generic",
        "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local", "bool", "true", "false"};
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (!strcmp(s, kw[i])) return true;
    return false;
}

/* The C identifier for the output prefix: its file name's letters, digits
 * and underscores, others as '_', a leading digit prefixed with '_'. */
static void prefix_ident(const char *path, char out[EMIT_C_MAX_IDENT]) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = 0;
    if (isdigit((unsigned char)*base)) out[n++] = '_';
    for (; *base && n + 1 < EMIT_C_MAX_IDENT; base++) out[n++] = isalnum((unsigned char)*base) ? *base : '_';
    out[n] = 0;
    if (!n) snprintf(out, EMIT_C_MAX_IDENT, "kernels");
}

/* The C type of a runtime parameter. */
static const char *c_type(tir_type t) {
    switch (tir_type_elem(t)) {
    case TIR_PTR: return "trt_ptr";
    case TIR_I1: return "bool";
    case TIR_I8: return "int8_t";
    case TIR_I16: return "int16_t";
    case TIR_I32: return "int32_t";
    case TIR_I64: return "int64_t";
    case TIR_F16: case TIR_BF16: case TIR_F32: return "float";
    case TIR_F64: return "double";
    default: return NULL;
    }
}

/* A parameter's name in C: its own, or p<i> for one the IR left unnamed,
 * '_' appended to a C keyword or a name starting with tilec_ (the
 * launcher's own). */
static void param_ident(const tir_value *p, uint32_t i, char out[EMIT_C_MAX_IDENT]) {
    if (!p->name) snprintf(out, EMIT_C_MAX_IDENT, "p%u", i);
    else snprintf(out, EMIT_C_MAX_IDENT, "%s%s", p->name,
                  c_keyword(p->name) || !strncmp(p->name, "tilec_", 6) ? "_" : "");
}

static void signature(FILE *f, const char *prefix, const tir_func *fn) {
    fprintf(f, "trt_status %s_%s(trt_module *tilec_m, trt_stream *tilec_s, trt_grid tilec_grid", prefix, fn->name);
    for (uint32_t i = 0; i < fn->nparams; i++) {
        char name[EMIT_C_MAX_IDENT];
        param_ident(fn->params[i], i, name);
        fprintf(f, ", %s %s", c_type(fn->params[i]->type), name);
    }
    fprintf(f, ")");
}

static void tile_signature(FILE *f, const tir_func *fn) {
    fprintf(f, "%s(", fn->name);
    for (uint32_t i = 0; i < fn->nparams; i++) {
        tir_type t = fn->params[i]->type;
        fprintf(f, "%s%s: %s%s", i ? ", " : "", fn->params[i]->name ? fn->params[i]->name : "?",
                tir_type_elem(t) == TIR_PTR ? "*" : "",
                tir_elem_name(tir_type_elem(t) == TIR_PTR ? tir_type_pointee(t) : tir_type_elem(t)));
    }
    fprintf(f, ")");
}

static void write_bytes(FILE *f, const char *name, const void *data, size_t size, bool add_nul) {
    const unsigned char *b = data;
    fprintf(f, "static const unsigned char %s[%zu] = {", name, size + add_nul);
    for (size_t i = 0; i < size + add_nul; i++)
        fprintf(f, "%s0x%02x,", i % EMIT_C_BYTES_PER_LINE ? "" : "\n    ", i < size ? b[i] : 0);
    fprintf(f, "\n};\n");
}

static bool write_header(const char *path, const char *prefix, const char *input, const tilec_options *o,
                         const image *im, size_t nim, const tir_module *mod) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "tilec: error: cannot write '%s': %s\n", path, strerror(errno));
        return false;
    }
    fprintf(f, "/* %s.h - generated by tilec %s from %s (tilec --emit=c); do not edit.\n *\n * Code for:", prefix,
            TILEC_VERSION, input);
    for (size_t i = 0; i < nim; i++) fprintf(f, "%s %s %s", i ? "," : "", im[i].ptx ? "PTX" : "cubin", im[i].arch);
    fprintf(f, ".\n * Const values: %s", o->ndefines ? "" : "the source's defaults");
    for (size_t i = 0; i < o->ndefines; i++)
        fprintf(f, "%s%s = %lld", i ? ", " : "", o->defines[i].name, (long long)o->defines[i].value);
    if (o->ndefines) fprintf(f, " (the rest: the source's defaults)");
    fprintf(f, "; num_warps %d.\n *\n"
               " * trt_module *m;\n * %s_load(dev, &m);   (the image for the device's GPU, or the tile IR on the CPU)\n"
               " * %s_KERNEL(m, stream or NULL, trt_grid_of(x, y, z), arguments...);\n"
               " * trt_module_free(m);\n *\n * Needs the tilec runtime only (include/tilec_rt.h). */\n",
            o->num_warps ? o->num_warps : 4, prefix, prefix);
    fprintf(f, "#ifndef TILEC_GENERATED_%s_H\n#define TILEC_GENERATED_%s_H\n\n", prefix, prefix);
    fprintf(f, "#include <stdbool.h>\n#include <stdint.h>\n\n#include \"tilec_rt.h\"\n\n");
    fprintf(f, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    fprintf(f, "/* The module's images (trt_load_images), machine code first. */\nextern const trt_image %s_images[%zu];\n",
            prefix, nim);
    fprintf(f, "/* Loads the module on dev (trt_load_images). */\ntrt_status %s_load(trt_device *dev, trt_module **out);\n",
            prefix);
    for (const tir_func *fn = mod->funcs; fn; fn = fn->next) {
        fprintf(f, "\n/* kernel ");
        tile_signature(f, fn);
        fprintf(f, ", num_warps %u: launched on tilec_s (NULL: the default stream, trt_launch) */\n",
                fn->num_warps ? fn->num_warps : 4);
        signature(f, prefix, fn);
        fprintf(f, ";\n");
    }
    fprintf(f, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
    bool ok = fclose(f) == 0;
    if (!ok) fprintf(stderr, "tilec: error: cannot write '%s'\n", path);
    return ok;
}

static bool write_source(const char *path, const char *header, const char *prefix, const image *im, size_t nim,
                         const tir_module *mod) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "tilec: error: cannot write '%s': %s\n", path, strerror(errno));
        return false;
    }
    const char *hbase = strrchr(header, '/');
    fprintf(f, "/* %s.c - generated by tilec %s (tilec --emit=c); do not edit. */\n#include \"%s\"\n\n", prefix,
            TILEC_VERSION, hbase ? hbase + 1 : header);
    for (size_t i = 0; i < nim; i++) {
        char name[EMIT_C_MAX_IDENT + 32];
        snprintf(name, sizeof name, "%s_code%zu", prefix, i);
        write_bytes(f, name, im[i].out.data, im[i].out.size, im[i].ptx); /* PTX: the driver reads to its NUL */
        snprintf(name, sizeof name, "%s_tir%zu", prefix, i);
        write_bytes(f, name, im[i].out.sidecar, strlen(im[i].out.sidecar), true);
    }
    fprintf(f, "\nconst trt_image %s_images[%zu] = {\n", prefix, nim);
    for (size_t i = 0; i < nim; i++)
        fprintf(f, "    {%s_code%zu, sizeof %s_code%zu, (const char *)%s_tir%zu},\n", prefix, i, prefix, i, prefix, i);
    fprintf(f, "};\n\ntrt_status %s_load(trt_device *dev, trt_module **out) {\n"
               "    return trt_load_images(dev, %s_images, %zu, out);\n}\n",
            prefix, prefix, nim);
    for (const tir_func *fn = mod->funcs; fn; fn = fn->next) {
        fprintf(f, "\n");
        signature(f, prefix, fn);
        fprintf(f, " {\n    trt_kernel *tilec_k;\n    trt_status tilec_st = trt_get_kernel(tilec_m, \"%s\", &tilec_k);\n"
                   "    if (tilec_st != TRT_OK) return tilec_st;\n",
                fn->name);
        if (fn->nparams) {
            fprintf(f, "    trt_arg tilec_a[%u] = {", fn->nparams);
            for (uint32_t i = 0; i < fn->nparams; i++) {
                char name[EMIT_C_MAX_IDENT];
                param_ident(fn->params[i], i, name);
                tir_elem e = tir_type_elem(fn->params[i]->type);
                if (e == TIR_PTR) fprintf(f, "%strt_buf_at(%s.buffer, %s.offset)", i ? ", " : "", name, name);
                else fprintf(f, "%s%s(%s)", i ? ", " : "", tir_elem_is_float(e) ? "trt_float" : "trt_int", name);
            }
            fprintf(f, "};\n");
        } else {
            fprintf(f, "    trt_arg *tilec_a = NULL;\n");
        }
        fprintf(f, "    return tilec_s ? trt_launch_on(tilec_s, tilec_k, tilec_grid.x, tilec_grid.y, tilec_grid.z, "
                   "tilec_a, %u)\n                   : trt_launch(tilec_k, tilec_grid.x, tilec_grid.y, tilec_grid.z, "
                   "tilec_a, %u);\n}\n",
                fn->nparams, fn->nparams);
    }
    bool ok = fclose(f) == 0;
    if (!ok) fprintf(stderr, "tilec: error: cannot write '%s'\n", path);
    return ok;
}

/* The arch of archs whose PTX goes in for newer GPUs: the newest that is
 * not sm_XYa; NULL if all are. */
static const char *ptx_arch(const char *const *archs, size_t n) {
    const char *best = NULL;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(archs[i]);
        if (len && archs[i][len - 1] == 'a') continue;
        if (!best || atoi(archs[i] + 3) > atoi(best + 3)) best = archs[i];
    }
    return best;
}

int tilec_emit_c(const char *input, const char *text, size_t len, const char *out_prefix, const tilec_options *base,
                 const char *const *archs, size_t narchs, bool ptx_only) {
    image im[EMIT_C_MAX_ARCHS + 1];
    size_t nim = 0;
    int rc = 0;
    const char *ptx = ptx_arch(archs, narchs);
    if (ptx_only && !ptx) {
        fprintf(stderr, "tilec: error: --ptx-only: every --arch is an sm_XYa one, whose code is not PTX for newer "
                        "GPUs\n");
        return 2;
    }
    for (size_t i = ptx_only ? narchs : 0; i <= narchs; i++) {
        if (i == narchs && !ptx) break;
        image *m = &im[nim++];
        *m = (image){.arch = i < narchs ? archs[i] : ptx, .ptx = i == narchs, .input = input, .text = text,
                     .len = len, .opt = *base};
        m->opt.arch = m->arch;
        m->opt.emit = m->ptx ? TILEC_EMIT_PTX : TILEC_EMIT_CUBIN;
        m->opt.sidecar = true;
    }
    pthread_t tids[EMIT_C_MAX_ARCHS + 1];
    bool started[EMIT_C_MAX_ARCHS + 1] = {false};
    for (size_t i = 1; i < nim; i++) started[i] = !pthread_create(&tids[i], NULL, compile_image, &im[i]);
    for (size_t i = 0; i < nim; i++) {
        if (i && started[i]) pthread_join(tids[i], NULL);
        else compile_image(&im[i]); /* the first here, and any whose thread did not start */
    }
    for (size_t i = 0; i < nim && rc == 0; i++) {
        fputs(im[i].out.diagnostics, stderr);
        if (im[i].opt.verbose) fputs(im[i].out.info, stderr);
        if (im[i].st != TILEC_OK) rc = (int)im[i].st;
    }
    tc_arena *arena = tc_arena_new();
    tc_diag diag;
    tc_diag_init(&diag);
    tir_module *mod = NULL;
    if (rc == 0) {
        tc_source src = {.name = input, .text = im[0].out.sidecar, .len = strlen(im[0].out.sidecar)};
        mod = tir_parse(arena, &src, &diag);
        if (!mod) {
            fprintf(stderr, "tilec: internal error: the sidecar does not read back:\n%s", diag.out.data);
            rc = TILEC_ERR_INTERNAL;
        }
    }
    for (const tir_func *fn = mod ? mod->funcs : NULL; fn && rc == 0; fn = fn->next)
        for (uint32_t i = 0; i < fn->nparams && rc == 0; i++)
            if (!c_type(fn->params[i]->type)) {
                fprintf(stderr, "tilec: error: kernel '%s': parameter %u has a type C has no launcher type for\n",
                        fn->name, i);
                rc = 1;
            }
    if (rc == 0) {
        char prefix[EMIT_C_MAX_IDENT];
        prefix_ident(out_prefix, prefix);
        size_t n = strlen(out_prefix);
        char *h = malloc(n + 3), *c = malloc(n + 3);
        if (!h || !c) abort();
        snprintf(h, n + 3, "%s.h", out_prefix);
        snprintf(c, n + 3, "%s.c", out_prefix);
        if (!write_header(h, prefix, input, base, im, nim, mod) || !write_source(c, h, prefix, im, nim, mod)) rc = 1;
        free(h), free(c);
    }
    tc_diag_free(&diag);
    tc_arena_free(arena);
    for (size_t i = 0; i < nim; i++) tilec_output_free(&im[i].out);
    return rc;
}
