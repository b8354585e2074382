/* fuzz_compile.c - an in-process mutation fuzzer for libtilec (include/tilec.h).
 *
 *   fuzz_compile [--seed N] [--iters N] [--seconds S] [--timeout S] [-o DIR]
 *                [--replay SEED:ITER] CORPUS_DIR...
 *
 * Each iteration picks a corpus file (.tile, .tir), applies 1 to 4 random
 * mutations (bytes, lines, splices from other files, and token-level swaps of
 * literals, identifiers, operators and type names) and compiles the result
 * with random options (emit tir/llvm/ptx, arch, num_warps, num_stages, -O,
 * -D values for const parameters). .tile inputs go through the .tile front
 * end; .tir inputs through the .tir reader and also, as text, through the
 * .tile parser. Everything is deterministic from (seed, iteration), so
 * `--replay SEED:ITER` redoes one iteration exactly and writes its input.
 *
 * A result is a BUG when
 *   - the process crashes or a sanitizer reports (build with TILEC_SANITIZE;
 *     the death callback below saves the input first); a leak is reported
 *     only at exit, for the whole run (bisect with --iters to find it),
 *   - a compile takes longer than --timeout seconds of CPU time (default 30:
 *     the slowest legal inputs, six kernels with 2^16-element tiles at 4
 *     warps, take 4 s in a Release build and about 17 s under ASan; SIGPROF:
 *     saved, exit). CPU time, not the wall clock: a fuzzer run at nice 19 on
 *     a busy machine waited minutes for its turn, and its 0.5 s compiles
 *     were reported as timeouts,
 *   - the status is TILEC_ERR_INTERNAL (a verifier or pass failure on IR the
 *     front end made) or TILEC_ERR_TOOL (no ptxas runs here, so that is LLVM
 *     rejecting our IR or failing on it),
 *   - a status other than OK comes with no "error:" diagnostic, or OK with
 *     no output,
 *   - emitted tile IR does not read back as .tir (no passes) to the same
 *     text (the printer/reader round trip docs/design.md promises),
 *   - from .tile source, an error is not `FILE:LINE:COL: error: ...` with the
 *     line inside the file (plain `tilec: error:` lines are allowed only for
 *     -D names no kernel has, "NAME (-D, or a define): ...", for a file
 *     with no kernel, and for the error limit).
 * The input of each bug goes to DIR/bug-SEED-ITER.{tile,tir} with a .txt
 * beside it (options, status, diagnostics). Exit status: 0 no bug, 1 bugs,
 * 2 usage. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tilec.h"

enum {
    MAX_CORPUS = 4096,
    MAX_FILE_BYTES = 1 << 20, /* corpus files larger than this are skipped */
    MAX_SPANS = 4096,         /* token occurrences considered per mutation */
    MAX_DEFINES = 4,
    MAX_SAVED_BUGS = 200,     /* files written per run, the rest only counted */
};

typedef struct buf {
    char *data;
    size_t len, cap;
} buf;

typedef struct corpus_file {
    char *path;
    char *text;
    size_t len;
    bool is_tir;
} corpus_file;

typedef struct corpus {
    corpus_file files[MAX_CORPUS];
    int n;
} corpus;

/* ---- PRNG: splitmix64, one state per iteration ------------------------ */
static uint64_t next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static size_t pick(uint64_t *s, size_t n) { return n ? (size_t)(next(s) % n) : 0; }
#define PICK(s, arr) ((arr)[pick((s), sizeof(arr) / sizeof((arr)[0]))])

/* ---- buffers ------------------------------------------------------------ */
static void buf_reserve(buf *b, size_t n) {
    if (n + 1 <= b->cap) return;
    b->cap = (n + 1) * 2;
    b->data = realloc(b->data, b->cap);
    if (!b->data) abort();
}
static void buf_replace(buf *b, size_t at, size_t del, const char *s, size_t n) {
    if (at > b->len) at = b->len;
    if (del > b->len - at) del = b->len - at;
    buf_reserve(b, b->len - del + n);
    memmove(b->data + at + n, b->data + at + del, b->len - at - del);
    memcpy(b->data + at, s, n);
    b->len = b->len - del + n;
    b->data[b->len] = 0;
}

/* ---- corpus --------------------------------------------------------------- */
static bool has_ext(const char *name, const char *ext) {
    size_t n = strlen(name), m = strlen(ext);
    return n > m && strcmp(name + n - m, ext) == 0;
}

static void load_dir(corpus *c, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "fuzz_compile: cannot open %s\n", dir);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) && c->n < MAX_CORPUS) {
        if (e->d_name[0] == '.') continue;
        char *path = malloc(strlen(dir) + strlen(e->d_name) + 2);
        sprintf(path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            load_dir(c, path);
            free(path);
            continue;
        }
        bool tir = has_ext(path, ".tir");
        FILE *f = (tir || has_ext(path, ".tile")) && st.st_size < MAX_FILE_BYTES ? fopen(path, "rb") : NULL;
        if (!f) {
            free(path);
            continue;
        }
        corpus_file *cf = &c->files[c->n++];
        cf->path = path;
        cf->is_tir = tir;
        cf->text = malloc((size_t)st.st_size + 1);
        cf->len = fread(cf->text, 1, (size_t)st.st_size, f);
        cf->text[cf->len] = 0;
        fclose(f);
    }
    closedir(d);
}

static int by_path(const void *a, const void *b) {
    return strcmp(((const corpus_file *)a)->path, ((const corpus_file *)b)->path);
}

/* ---- tokens ----------------------------------------------------------------- */
typedef enum { TOK_INT, TOK_FLOAT, TOK_IDENT, TOK_OP, TOK_TYPE } tok_kind;
typedef struct span {
    size_t off, len;
} span;

static bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
static bool digit(char c) { return c >= '0' && c <= '9'; }

static const char *const type_names[] = {"i1", "i8", "i16", "i32", "i64", "u8", "f16", "bf16", "f32", "f64"};
static bool is_type_name(const char *s, size_t n) {
    for (size_t i = 0; i < sizeof type_names / sizeof *type_names; i++)
        if (strlen(type_names[i]) == n && memcmp(type_names[i], s, n) == 0) return true;
    return false;
}

static const char *const operators[] = {"+",  "-",  "*",  "/",  "%", "<<", ">>", "<", "<=", ">",
                                        ">=", "==", "!=", "&",  "|", "^",  "!",  "=", ",",  ":"};

/* The occurrences of one kind of token in b (a rough scan, good enough for
 * both .tile and .tir text: `128xf32` yields the type f32). */
static size_t find_tokens(const buf *b, tok_kind kind, span *out) {
    size_t n = 0;
    const char *s = b->data;
    for (size_t i = 0; i < b->len && n < MAX_SPANS;) {
        size_t j = i;
        if (ident_start(s[i])) {
            while (j < b->len && ident_char(s[j])) j++;
            bool type = is_type_name(s + i, j - i);
            if ((kind == TOK_IDENT && !type) || (kind == TOK_TYPE && type)) out[n++] = (span){i, j - i};
        } else if (digit(s[i]) || (s[i] == '.' && i + 1 < b->len && digit(s[i + 1]))) {
            bool is_float = false;
            while (j < b->len && (ident_char(s[j]) || s[j] == '.')) {
                if (s[j] == '.' || ((s[j] == 'e' || s[j] == 'E') && !(j > i + 1 && s[i + 1] == 'x'))) is_float = true;
                if (s[j] == 'x' && j > i && !(j == i + 1 && s[i] == '0')) break; /* 128xf32 */
                j++;
            }
            if ((kind == TOK_INT && !is_float) || (kind == TOK_FLOAT && is_float)) out[n++] = (span){i, j - i};
        } else {
            j = i + 1;
            if (kind == TOK_OP)
                for (size_t k = 0; k < sizeof operators / sizeof *operators; k++) {
                    size_t m = strlen(operators[k]);
                    if (i + m <= b->len && memcmp(s + i, operators[k], m) == 0 && m >= j - i) j = i + m;
                }
            if (kind == TOK_OP && strchr("+-*/%<>=!&|^,:", s[i])) out[n++] = (span){i, j - i};
        }
        i = j > i ? j : i + 1;
    }
    return n;
}

static const char *const int_values[] = {"0",          "1",          "-1",         "3",
                                         "2147483647", "2147483648", "-2147483648", "4294967296",
                                         "9223372036854775807", "9223372036854775808", "1048576", "1073741824",
                                         "65537",      "48",         "100",        "5",
                                         "65536",      "0x7fffffff", "1<<20"};
static const char *const float_values[] = {"0.0", "-0.0", "1e308", "1e-320", "1e309", "(0.0 / 0.0)", "1e-45"};

static bool mutate_token(uint64_t *r, buf *b, tok_kind kind) {
    span *spans = malloc(sizeof(span) * MAX_SPANS);
    size_t n = find_tokens(b, kind, spans);
    bool done = n > 0;
    if (done) {
        span at = spans[pick(r, n)];
        char tmp[64];
        const char *with = tmp;
        if (kind == TOK_INT) with = PICK(r, int_values);
        else if (kind == TOK_FLOAT) with = PICK(r, float_values);
        else if (kind == TOK_OP) with = PICK(r, operators);
        else if (kind == TOK_TYPE) snprintf(tmp, sizeof tmp, "%s%s", pick(r, 4) ? "" : "*", PICK(r, type_names));
        else { /* another identifier from the same text */
            span other = spans[pick(r, n)];
            snprintf(tmp, sizeof tmp, "%.*s", (int)(other.len < 63 ? other.len : 63), b->data + other.off);
        }
        buf_replace(b, at.off, at.len, with, strlen(with));
    }
    free(spans);
    return done;
}

/* ---- lines ---------------------------------------------------------------- */
/* Offset of the start of line `k` (0-based) of text, or len past the end. */
static size_t line_start(const char *t, size_t len, size_t k) {
    size_t i = 0;
    while (k > 0 && i < len) {
        if (t[i++] == '\n') k--;
    }
    return i;
}
static size_t count_lines(const char *t, size_t len) {
    size_t n = 1;
    for (size_t i = 0; i < len; i++) n += t[i] == '\n';
    return n;
}

/* A copy of n bytes (NUL bytes included, unlike strndup). */
static char *dup_bytes(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (!p) abort();
    memcpy(p, s, n);
    return p;
}

static void mutate_lines(uint64_t *r, buf *b, const corpus *c) {
    size_t nl = count_lines(b->data, b->len);
    size_t a = pick(r, nl), a0 = line_start(b->data, b->len, a), a1 = line_start(b->data, b->len, a + 1);
    switch (pick(r, 4)) {
    case 0: buf_replace(b, a0, a1 - a0, "", 0); break; /* delete */
    case 1: {                                          /* duplicate */
        char *line = dup_bytes(b->data + a0, a1 - a0);
        buf_replace(b, a1, 0, line, a1 - a0);
        free(line);
        break;
    }
    case 2: { /* swap with another line: move line a after line z */
        size_t z = pick(r, nl), z1 = line_start(b->data, b->len, z + 1);
        if (z1 <= a1) break;
        char *line = dup_bytes(b->data + a0, a1 - a0);
        buf_replace(b, z1, 0, line, a1 - a0);
        buf_replace(b, a0, a1 - a0, "", 0);
        free(line);
        break;
    }
    default: { /* splice lines from another corpus file */
        const corpus_file *o = &c->files[pick(r, (size_t)c->n)];
        size_t on = count_lines(o->text, o->len), from = pick(r, on), cnt = 1 + pick(r, 10);
        size_t s0 = line_start(o->text, o->len, from), s1 = line_start(o->text, o->len, from + cnt);
        buf_replace(b, a0, 0, o->text + s0, s1 - s0);
        if (s1 == o->len) buf_replace(b, a0 + s1 - s0, 0, "\n", 1);
    }
    }
}

static void mutate_bytes(uint64_t *r, buf *b) {
    static const char interesting[] = "(){}[];,:+-*/<>=!&|^%.0123456789\"\n\t\\x_ ";
    size_t at = pick(r, b->len + 1);
    switch (pick(r, 3)) {
    case 0:
        if (at < b->len) b->data[at] ^= (char)(1u << pick(r, 8));
        break;
    case 1: {
        char c = pick(r, 4) ? interesting[pick(r, sizeof interesting - 1)] : (char)next(r);
        buf_replace(b, at, 0, &c, 1);
        break;
    }
    default: buf_replace(b, at, 1 + pick(r, 8), "", 0);
    }
}

static void mutate(uint64_t *r, buf *b, const corpus *c) {
    switch (pick(r, 8)) {
    case 0: mutate_bytes(r, b); break;
    case 1:
    case 2: mutate_lines(r, b, c); break;
    default: {
        static const tok_kind kinds[] = {TOK_INT, TOK_INT, TOK_FLOAT, TOK_IDENT, TOK_OP, TOK_TYPE};
        tok_kind k = PICK(r, kinds);
        if (!mutate_token(r, b, k)) mutate_bytes(r, b);
    }
    }
}

/* ---- one iteration ------------------------------------------------------------- */
typedef struct iteration {
    uint64_t seed, iter;
    const corpus_file *base;
    const char *name; /* the name compiled under: its extension picks the front end */
    buf input;
    tilec_options opt;
    tilec_define defines[MAX_DEFINES];
    char define_names[MAX_DEFINES][64];
} iteration;

/* const parameters of the mutated text ("const NAME:"), given random values */
static void pick_defines(uint64_t *r, iteration *it) {
    /* not 1 << 20: a legal tile that large with few warps takes LLVM minutes */
    static const int64_t values[] = {1, 2, 3, 16, 48, 128, 1024, 0, -1, 1 << 16, INT32_MAX, (int64_t)1 << 40};
    const char *s = it->input.data, *p = s;
    while ((p = strstr(p, "const ")) && it->opt.ndefines < MAX_DEFINES) {
        p += 6;
        size_t n = 0;
        while (ident_char(p[n])) n++;
        if (n == 0 || n >= 64 || pick(r, 3)) continue;
        bool seen = false; /* a name given twice is an option error, which the harness means to avoid */
        for (size_t k = 0; k < it->opt.ndefines && !seen; k++)
            seen = strlen(it->define_names[k]) == n && !strncmp(it->define_names[k], p, n);
        if (seen) continue;
        size_t k = it->opt.ndefines++;
        snprintf(it->define_names[k], 64, "%.*s", (int)n, p);
        it->defines[k] = (tilec_define){it->define_names[k], pick(r, 2) ? values[pick(r, 4) + 3] : PICK(r, values)};
    }
    it->opt.defines = it->defines;
}

static void make_iteration(const corpus *c, uint64_t seed, uint64_t iter, iteration *it) {
    memset(it, 0, sizeof *it);
    it->seed = seed;
    it->iter = iter;
    uint64_t r = seed * 0x2545f4914f6cdd1dull ^ (iter + 1) * 0x9e3779b97f4a7c15ull;
    /* inputs that already fail (errors/, bad/) make fewer interesting mutants */
    it->base = &c->files[pick(&r, (size_t)c->n)];
    for (int k = 0; k < 2 && (strstr(it->base->path, "/errors/") || strstr(it->base->path, "/bad/")); k++)
        it->base = &c->files[pick(&r, (size_t)c->n)];
    it->name = it->base->is_tir && pick(&r, 4) ? "fuzz.tir" : "fuzz.tile";
    buf_replace(&it->input, 0, 0, it->base->text, it->base->len);
    for (size_t i = 0, n = 1 + pick(&r, 4); i < n; i++) mutate(&r, &it->input, c);

    static const tilec_emit emits[] = {TILEC_EMIT_TIR, TILEC_EMIT_TIR, TILEC_EMIT_LLVM, TILEC_EMIT_PTX};
    static const int warps[] = {0, 1, 4, 8, 32}, stages[] = {0, 1, 4};
    tilec_options_init(&it->opt);
    it->opt.emit = PICK(&r, emits);
    it->opt.arch = pick(&r, 2) ? "sm_80" : "sm_90";
    it->opt.num_warps = PICK(&r, warps);
    it->opt.num_stages = PICK(&r, stages);
    it->opt.opt_level = pick(&r, 4) ? 2 : 0;
    it->opt.no_asserts = pick(&r, 8) == 0;
    it->opt.llvm_optimized = it->opt.emit == TILEC_EMIT_LLVM && pick(&r, 4) == 0;
    it->opt.sidecar = it->opt.emit != TILEC_EMIT_TIR && pick(&r, 4) == 0;
    it->opt.print_locs = it->opt.emit == TILEC_EMIT_TIR && pick(&r, 4) == 0;
    if (!has_ext(it->name, ".tir")) pick_defines(&r, it);
    /* drawn last, so earlier campaigns' iterations replay as they were:
     * half the sm_90 compiles are sm_90a's (dot on wgmma, async_dots) */
    if (!strcmp(it->opt.arch, "sm_90") && pick(&r, 2)) it->opt.arch = "sm_90a";
    it->opt.line_info = pick(&r, 8) == 0; /* DILocations (tilec --lineinfo) */
}

static void describe(FILE *f, const iteration *it) {
    static const char *const emit_names[] = {"tir", "llvm", "ptx", "cubin"};
    fprintf(f, "seed:iter %llu:%llu from %s as %s: tilec --emit=%s%s --arch=%s", (unsigned long long)it->seed,
            (unsigned long long)it->iter, it->base->path, it->name, emit_names[it->opt.emit],
            it->opt.llvm_optimized ? "-opt" : "", it->opt.arch);
    if (it->opt.num_warps) fprintf(f, " --num-warps=%d", it->opt.num_warps);
    if (it->opt.num_stages) fprintf(f, " --num-stages=%d", it->opt.num_stages);
    if (it->opt.opt_level == 0) fprintf(f, " -O0");
    if (it->opt.no_asserts) fprintf(f, " --no-asserts");
    if (it->opt.print_locs) fprintf(f, " --print-locs");
    if (it->opt.line_info) fprintf(f, " --lineinfo");
    if (it->opt.sidecar) fprintf(f, " (and the sidecar: -o FILE)");
    for (size_t i = 0; i < it->opt.ndefines; i++)
        fprintf(f, " -D %s=%lld", it->defines[i].name, (long long)it->defines[i].value);
    fputc('\n', f);
}

/* ---- saving inputs, also from the sanitizer's death callback and SIGPROF --------
 * Those callbacks take no argument, so the input being compiled is reachable
 * through this one static pointer (the harness is single-threaded). */
static struct crash_context {
    const iteration *it;
    const char *out_dir;
} crash_ctx;

/* Only async-signal-safe calls: it runs from a signal handler. */
static void save_input_raw(const iteration *it, const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/bug-%llu-%llu%s", dir, (unsigned long long)it->seed,
             (unsigned long long)it->iter, has_ext(it->name, ".tir") ? ".tir" : ".tile");
    mkdir(dir, 0777);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return;
    ssize_t w = write(fd, it->input.data, it->input.len);
    (void)w;
    close(fd);
}

static void report_death(const char *why) {
    if (!crash_ctx.it) return;
    save_input_raw(crash_ctx.it, crash_ctx.out_dir);
    fprintf(stderr, "BUG %s (input saved in %s): ", why, crash_ctx.out_dir);
    describe(stderr, crash_ctx.it);
}

static void on_death(void) { report_death("crash or sanitizer report"); }

/* SIGTERM or SIGINT: finish the iteration under way, then print the
 * summary (a campaign stopped early still says what it did) */
static volatile sig_atomic_t stop_asked;
static void on_stop(int sig) {
    (void)sig;
    stop_asked = 1;
}

static void on_alarm(int sig) {
    (void)sig;
    report_death("compile timed out");
    _exit(1);
}

void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

/* ---- checking a result ----------------------------------------------------------- */
/* NULL when the diagnostics are well-formed for a .tile source, else why not. */
static const char *bad_diagnostic_form(const iteration *it, const char *d) {
    size_t nlines = count_lines(it->input.data, it->input.len);
    size_t nlen = strlen(it->name);
    bool located = false;
    for (const char *l = d; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        if (strncmp(l, "tilec: error: ", 14) == 0) {
            const char *eol = strchr(l, '\n'), *at = strstr(l, " (-D, or a define): ");
            bool define = at && (!eol || at < eol);
            const char *none = strstr(l, ": no kernel to compile (the file defines none)"); /* about the whole file */
            define = define || (none && (!eol || none < eol));
            if (!define && strncmp(l + 14, "too many errors", 15) != 0)
                return "an error without a location";
            continue;
        }
        if (strncmp(l, it->name, nlen) != 0 || l[nlen] != ':') continue; /* echoed line or caret */
        unsigned long line = 0, col = 0;
        int used = 0;
        if (sscanf(l + nlen, ":%lu:%lu: %n", &line, &col, &used) != 2 || used == 0)
            return "an error without line:col";
        if (line == 0 || col == 0 || line > nlines) return "an error at a line outside the file";
        if (strncmp(l + nlen + used, "error: ", 7) == 0) located = true;
    }
    return located || strstr(d, "tilec: error: ") ? NULL : "no error line";
}

/* The printer's output parses back (docs/design.md): tile IR the pipeline
 * emitted, read as .tir with no passes, prints the same. NULL if so. */
static const char *bad_round_trip(const iteration *it, const tilec_output *out, tilec_output *again) {
    tilec_options opt;
    tilec_options_init(&opt);
    opt.emit = TILEC_EMIT_TIR;
    opt.passes = "none";
    opt.print_locs = it->opt.print_locs;
    if (tilec_compile("roundtrip.tir", out->data, out->size, &opt, again) != TILEC_OK)
        return "the emitted tile IR does not read back";
    if (again->size != out->size || memcmp(again->data, out->data, out->size) != 0)
        return "the emitted tile IR reads back but prints differently";
    return NULL;
}

/* NULL when the compile's result is acceptable, else what is wrong (with
 * a round trip's diagnostics in *again). */
static const char *judge(const iteration *it, const tilec_output *out, tilec_output *again) {
    const char *d = out->diagnostics ? out->diagnostics : "";
    switch (out->status) {
    case TILEC_OK: /* a file with no kernels is empty tile IR */
        if (it->opt.emit == TILEC_EMIT_TIR) return out->size ? bad_round_trip(it, out, again) : NULL;
        return out->data && out->size ? NULL : "status OK with no output";
    case TILEC_ERR_INTERNAL: return "internal compiler error";
    case TILEC_ERR_TOOL: return "tool error (LLVM failed on our IR; no ptxas is run)";
    case TILEC_ERR_USAGE: return "usage error from options the harness believes valid";
    case TILEC_ERR_SOURCE: break;
    }
    if (!strstr(d, "error:")) return "error status without an error diagnostic";
    return has_ext(it->name, ".tile") ? bad_diagnostic_form(it, d) : NULL;
}

static void save_bug(const iteration *it, const char *dir, const char *why, const tilec_output *out) {
    save_input_raw(it, dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/bug-%llu-%llu.txt", dir, (unsigned long long)it->seed,
             (unsigned long long)it->iter);
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "%s\n", why);
    describe(f, it);
    fprintf(f, "status: %s\n%s", tilec_status_name(out->status), out->diagnostics ? out->diagnostics : "");
    fclose(f);
}

static double now_s(void);

/* The process's CPU seconds so far (user and system). */
static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* SIGPROF after `seconds` more of this process's CPU time; 0: none. */
static void cpu_limit(unsigned seconds) {
    struct itimerval v = {.it_value = {.tv_sec = seconds}};
    setitimer(ITIMER_PROF, &v, NULL);
}

/* Runs one iteration; returns true when it found a bug. *slowest keeps the
 * longest compile's seconds and iteration. */
static bool run_one(const corpus *c, uint64_t seed, uint64_t iter, const char *dir, unsigned timeout,
                    bool verbose, int *saved, double slowest[2], uint64_t *compiled) {
    iteration it;
    make_iteration(c, seed, iter, &it);
    if (verbose) describe(stderr, &it);
    crash_ctx.it = &it;
    cpu_limit(timeout);
    tilec_output out;
    double t0 = cpu_s();
    tilec_compile(it.name, it.input.data, it.input.len, &it.opt, &out);
    double dt = cpu_s() - t0;
    cpu_limit(0);
    if (dt > slowest[0]) slowest[0] = dt, slowest[1] = (double)iter;
    tilec_output again = {0};
    const char *why = judge(&it, &out, &again);
    *compiled += out.status == TILEC_OK;
    if (verbose) fprintf(stderr, "  -> %s\n%s", tilec_status_name(out.status), out.diagnostics);
    if (why) {
        fprintf(stderr, "BUG %s: ", why);
        describe(stderr, &it);
        const char *nl = out.diagnostics ? strchr(out.diagnostics, '\n') : NULL;
        if (nl) fprintf(stderr, "  %.*s\n", (int)(nl - out.diagnostics), out.diagnostics);
        if (again.diagnostics && *again.diagnostics) fprintf(stderr, "  round trip: %s", again.diagnostics);
        if ((*saved)++ < MAX_SAVED_BUGS) save_bug(&it, dir, why, &out);
    }
    tilec_output_free(&again);
    tilec_output_free(&out);
    crash_ctx.it = NULL;
    free(it.input.data);
    return why != NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int usage(void) {
    fputs("usage: fuzz_compile [--seed N] [--iters N] [--seconds S] [--timeout S] [-o DIR] [-v]\n"
          "                    [--replay SEED:ITER] CORPUS_DIR...\n",
          stderr);
    return 2;
}

int main(int argc, char **argv) {
    uint64_t seed = 1, iters = 1000, replay_iter = 0;
    double seconds = 0;
    unsigned timeout = 30;
    const char *dir = "fuzz-bugs";
    bool replay = false, verbose = false, iters_given = false;
    static corpus c;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-v") == 0) verbose = true;
        else if (!v && a[0] == '-') return usage();
        else if (strcmp(a, "--seed") == 0) seed = strtoull(argv[++i], NULL, 0);
        else if (strcmp(a, "--iters") == 0) iters = strtoull(argv[++i], NULL, 0), iters_given = true;
        else if (strcmp(a, "--seconds") == 0) seconds = atof(argv[++i]);
        else if (strcmp(a, "--timeout") == 0) timeout = (unsigned)atoi(argv[++i]);
        else if (strcmp(a, "-o") == 0) dir = argv[++i];
        else if (strcmp(a, "--replay") == 0) {
            unsigned long long s, it;
            if (sscanf(argv[++i], "%llu:%llu", &s, &it) != 2) return usage();
            seed = s, replay_iter = it, replay = true;
        } else if (a[0] == '-') return usage();
        else load_dir(&c, a);
    }
    if (c.n == 0) return usage();
    if (seconds > 0 && !iters_given) iters = UINT64_MAX; /* the time budget alone bounds the run */
    qsort(c.files, (size_t)c.n, sizeof *c.files, by_path); /* same corpus order, same iterations */

    crash_ctx.out_dir = dir;
    if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_death);
    signal(SIGPROF, on_alarm);
    signal(SIGTERM, on_stop);
    signal(SIGINT, on_stop);

    int saved = 0, bugs = 0;
    double slowest[2] = {0, 0}; /* seconds, iteration */
    uint64_t done = 0, compiled = 0;
    double t0 = now_s();
    if (replay) {
        iteration it;
        make_iteration(&c, seed, replay_iter, &it);
        save_input_raw(&it, dir);
        fprintf(stderr, "replaying (input written to %s): ", dir);
        describe(stderr, &it);
        free(it.input.data);
        bugs = run_one(&c, seed, replay_iter, dir, timeout, true, &saved, slowest, &compiled);
        done = 1;
    } else {
        for (; done < iters && (seconds <= 0 || now_s() - t0 < seconds) && !stop_asked; done++)
            bugs += run_one(&c, seed, done, dir, timeout, verbose, &saved, slowest, &compiled);
    }
    fprintf(stderr,
            "fuzz_compile: %llu iterations (seed %llu, %llu compiled without error) over %d corpus files in "
            "%.1f s (%.1f CPU s: what campaigns count), %d bug%s; slowest compile %.2f CPU s (iteration %.0f)\n",
            (unsigned long long)done, (unsigned long long)seed, (unsigned long long)compiled, c.n, now_s() - t0,
            cpu_s(), bugs, bugs == 1 ? "" : "s", slowest[0], slowest[1]);
    for (int i = 0; i < c.n; i++) {
        free(c.files[i].path);
        free(c.files[i].text);
    }
    return bugs ? 1 : 0;
}
